"""`rag-eval compare` (and `run` with a regression section) through the CLI entry point:
exit codes, messages, --report, --summary / $GITHUB_STEP_SUMMARY, and docs/ci.md.

Expected numbers are read straight from the results JSON files with the json module
(per-query values), not from rag_eval's own Results objects.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from regression_fixtures import helpers

from rag_eval.cli import main

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "regression_fixtures"
RESAMPLES = "2000"
# The wording of the resampling limit, shared by --resamples and regression.resamples.
RESAMPLES_RULE = "must be from 100 to 1,000,000 (more does not change the printed digits, and costs memory)"




@pytest.fixture(autouse=True)
def _no_job_summary(monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """bm25.json and seed-ranking.json of the ocean-facts example, in a temporary folder."""
    out = tmp_path_factory.mktemp("ocean")
    assert main(["run", str(REPO / "configs" / "ocean_facts.yaml"), "--output", str(out), "--no-progress"]) == 0
    return out


def per_query(path: Path, metric: str) -> dict[str, float | None]:
    document = json.loads(path.read_text())
    return {q: row[metric] for q, row in document["results"]["per_query"].items()}


def compare_cli(capsys, *args):
    code = main(["compare", *map(str, args), "--resamples", RESAMPLES])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ---- exit codes -----------------------------------------------------------------------------


def test_same_file_passes_with_exit_0_and_default_gate(runs, capsys):
    code, out, err = compare_cli(capsys, runs / "bm25.json", runs / "bm25.json")
    assert code == 0 and err == ""
    value = json.loads((runs / "bm25.json").read_text())["results"]["aggregate"]["ndcg@10"]
    first, verdict = out.splitlines()
    # Default gate: ndcg@10 with max_drop 0; identical files: Δ 0, CI [0, 0], p 1.
    assert first.split("\t") == [
        "PASS", "ndcg@10", f"baseline {value:.4f}", f"candidate {value:.4f}", "delta +0.0000 [+0.0000, +0.0000]",
        "p 1.0000", "drop 0.0000 within max_drop 0",
    ]
    assert verdict == "verdict: PASS (0 of 1 gates failed)"


def test_regression_fails_with_exit_1_and_names_the_regressed_queries(runs, capsys):
    base = per_query(runs / "bm25.json", "ndcg@4")
    cand = per_query(runs / "seed-ranking.json", "ndcg@4")
    code, out, err = compare_cli(
        capsys, runs / "bm25.json", runs / "seed-ranking.json", "--gate", "ndcg@4:max_drop=0.01"
    )
    assert code == 1 and err == ""
    lines = out.splitlines()
    drop = np.mean([base[q] - cand[q] for q in base])
    assert lines[0].startswith("FAIL\tndcg@4\t") and lines[0].endswith(f"dropped {drop:.4f} > max_drop 0.01")
    # The seed ranking only answers q-largest-ocean: every other query regressed, worst first.
    regressed = sorted((q for q in base if cand[q] < base[q]), key=lambda q: (cand[q] - base[q], q))
    assert len(regressed) == 9 and "q-largest-ocean" not in regressed
    expected = ", ".join(f"{q} ({cand[q] - base[q]:+.4f})" for q in regressed)
    assert lines[1] == f"  regressed queries (9): {expected}"
    assert lines[-1] == "verdict: FAIL (1 of 1 gates failed)"


def test_alpha_gate_on_the_command_line(runs, capsys):
    """Two alpha gates: the printed Holm p is the hand-computed Holm of the printed raw p's."""
    code, out, _ = compare_cli(
        capsys, runs / "bm25.json", runs / "seed-ranking.json",
        "--gate", "ndcg@4:max_drop=0.01,alpha=0.05", "--gate", "recall@10:max_drop=0.01,alpha=0.001",
    )
    assert code == 1
    found = re.findall(r"\tp (\d\.\d{4}) \(Holm (\d\.\d{4})\)", out)
    assert len(found) == 2
    raw = [float(p) for p, _ in found]
    # n = 10: exact permutation p-values are multiples of 1/1024; the printed values are rounded.
    expected = helpers.holm_by_hand([round(p * 1024) / 1024 for p in raw])
    assert [float(adj) for _, adj in found] == pytest.approx(expected, abs=5e-5)
    lines = out.splitlines()
    assert lines[0].startswith("FAIL\tndcg@4") and "significant" in lines[0]
    recall = next(line for line in lines if line.split("\t")[1:2] == ["recall@10"])
    assert recall.startswith("PASS") and "not significant" in recall  # Holm p >= 0.001


def _edited_copy(source: Path, tmp_path: Path, edit) -> Path:
    document = json.loads(source.read_text())
    edit(document)
    target = tmp_path / f"edited-{source.name}"
    target.write_text(json.dumps(document))
    return target


def _drop_metric(metric):
    def edit(document):
        results = document["results"]
        results["metrics"].remove(metric)
        del results["aggregate"][metric]
        for row in results["per_query"].values():
            del row[metric]

    return edit


def _set_option(key, value):
    def edit(document):
        document["results"]["options"][key] = value

    return edit


def _drop_query(qid):
    def edit(document):
        results = document["results"]
        del results["per_query"][qid]
        results["num_queries"] -= 1
        for metric in results["metrics"]:  # the means follow, or loading refuses the file as edited
            values = [row[metric] for row in results["per_query"].values() if row[metric] is not None]
            results["aggregate"][metric] = sum(values) / len(values)

    return edit


def _set_top_k(value):
    def edit(document):
        document["top_k"] = value

    return edit


def _set_micro(document):
    results = document["results"]
    results["options"]["aggregation"] = "micro"
    # Micro nDCG@4 is sum DCG@4 / sum IDCG@4, which loading checks against the file's dcg@4 and idcg@4.
    rows = [row for row in results["per_query"].values() if row["ndcg@4"] is not None]
    results["aggregate"]["ndcg@4"] = sum(r["dcg@4"] for r in rows) / sum(r["idcg@4"] for r in rows)


def _set_fingerprint(document):
    document["dataset"]["fingerprint"] = "0000000000000000"
    document["dataset"]["name"] = "another-dataset"


@pytest.mark.parametrize(
    "edit, gate, message",
    [
        (_set_fingerprint, "ndcg@4", (r"incomparable results: different datasets \(baseline .*bm25\.json: ocean-facts "
         r"fingerprint [0-9a-f]{16}; candidate .*seed-ranking\.json: another-dataset fingerprint 0000000000000000\)")),
        (_set_option("gain", "exponential"), "ndcg@4",
         "different metric semantics: gain is 'linear' in the baseline .* and 'exponential' in the candidate"),
        (_set_micro, "ndcg@4", "different metric semantics: aggregation is 'macro'"),
        (_set_option("no_relevant", "zero"), "ndcg@4", "different metric semantics: no_relevant is 'skip'"),
        (_set_option("relevance_threshold", 2.0), "ndcg@4",
         "different metric semantics: relevance_threshold is 1.0 in the baseline .* and 2.0 in the candidate"),
        (_set_option("judged_only", True), "ndcg@4",
         "different metric semantics: judged_only is False in the baseline .* and True in the candidate"),
        (_drop_metric("ndcg@4"), "ndcg@4", r"incomparable results: .*seed-ranking\.json has no ndcg@4 \(it has ndcg@1,"),
        (lambda document: None, "ndcg@7", r"incomparable results: .*bm25\.json has no ndcg@7"),
        (_drop_query("q-warmest-ocean"), "ndcg@4",
         (r"incomparable results: different query sets \(1 only in the baseline, e.g. \['q-warmest-ocean'\]; "
         r"0 only in the candidate")),
        (_set_top_k(5), "ndcg@10",
         (r"different metric semantics: ndcg@10 looks at the top 10 but the baseline .* retrieved top_k=10 and the "
         r"candidate .* top_k=5")),
    ],
    ids=["dataset", "gain", "aggregation", "no_relevant", "relevance_threshold", "judged_only", "metric-missing", "cutoff", "queries",
         "depth"],
)
def test_incomparable_results_exit_2_naming_the_difference(runs, tmp_path, capsys, edit, gate, message):
    candidate = _edited_copy(runs / "seed-ranking.json", tmp_path, edit)
    code, out, err = compare_cli(capsys, runs / "bm25.json", candidate, "--gate", gate)
    assert code == 2 and out == ""
    assert err.startswith("rag-eval: error: incomparable results: ") and err.count("\n") == 1
    assert re.search(message, err), err


def test_incomparable_results_still_write_the_report_and_the_summary(runs, tmp_path, capsys, monkeypatch):
    """A CI job summary must not stay empty: both files say why no gate was evaluated."""
    candidate = _edited_copy(runs / "seed-ranking.json", tmp_path, _set_fingerprint)
    report, summary = tmp_path / "comparison.md", tmp_path / "summary.md"
    summary.write_text("## Tests\n\nall green\n")
    code, out, err = compare_cli(capsys, runs / "bm25.json", candidate, "--report", report, "--summary", summary)
    assert code == 2 and out == "" and err.count("\n") == 1
    reason = err.removeprefix("rag-eval: error: incomparable results: ").strip()
    assert reason.startswith("different datasets")
    text = report.read_text()
    assert text.startswith("# Regression check: ⚠️ INCOMPARABLE\n")
    assert f"Baseline `bm25` (`{runs / 'bm25.json'}`) vs candidate `seed-ranking` (`{candidate}`)" in text
    assert "no gate was evaluated (exit code 2)" in text
    why = next(line for line in text.splitlines() if line.startswith("**Why:** "))
    assert why.startswith("**Why:** different datasets (baseline ") and "another-dataset" in why
    appended = summary.read_text()
    assert appended.startswith("## Tests\n\nall green\n### rag-eval regression check: ⚠️ INCOMPARABLE\n")
    assert why in appended
    # The same through $GITHUB_STEP_SUMMARY.
    job = tmp_path / "job.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(job))
    assert compare_cli(capsys, runs / "bm25.json", candidate)[0] == 2
    assert job.read_text().startswith("### rag-eval regression check: ⚠️ INCOMPARABLE\n")


def test_run_with_an_incomparable_baseline_writes_the_job_summary_only(runs, tmp_path, capsys, monkeypatch):
    baseline = _edited_copy(runs / "bm25.json", tmp_path, _set_fingerprint)
    config = yaml.safe_load((FIXTURES / "bm25_baseline.yaml").read_text())
    config["dataset"]["path"] = str(REPO / "datasets" / "ocean_facts.yaml")
    config["regression"] = {"baseline": baseline.name, "gates": {"ndcg@10": {"max_drop": 0.01}}, "resamples": 200}
    path = tmp_path / "candidate.yaml"
    path.write_text(yaml.safe_dump(config))
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code = main(["run", str(path), "--output", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("rag-eval: error: incomparable results: different datasets")
    assert not (tmp_path / "out").exists()  # incomparable: no outputs
    text = summary.read_text()
    assert text.startswith("### rag-eval regression check: ⚠️ INCOMPARABLE\n")
    assert f"Baseline `bm25` (`{baseline}`) vs candidate of this run" in text


def test_run_refuses_a_summary_that_is_its_baseline(runs, tmp_path, capsys):
    baseline = _edited_copy(runs / "bm25.json", tmp_path, lambda document: None)
    before = baseline.read_bytes()
    config = yaml.safe_load((FIXTURES / "bm25_baseline.yaml").read_text())
    config["dataset"]["path"] = str(REPO / "datasets" / "ocean_facts.yaml")
    config["regression"] = {"baseline": baseline.name, "gates": {"ndcg@10": {"max_drop": 0.01}}, "resamples": 200}
    path = tmp_path / "candidate.yaml"
    path.write_text(yaml.safe_dump(config))
    code = main(["run", str(path), "--output", str(tmp_path / "out"), "--no-progress", "--summary", str(baseline)])
    err = capsys.readouterr().err
    assert code == 2 and f"--summary {baseline}: is the baseline file" in err
    assert baseline.read_bytes() == before and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--gate", "ndcg@4:maxdrop=0.1"], "expected METRIC:max_drop=0.01"),
        (["--gate", "ndgc@4"], "gate 'ndgc@4'"),
        (["--gate", "ndcg@4:alpha=2"], "alpha must be between 0 and 1"),
        (["--confidence", "1.5"], "--confidence: must be between 0 and 1 (exclusive) (got 1.5)"),
        (["--resamples", "0"], f"--resamples: {RESAMPLES_RULE} (got 0)"),
    ],
)
def test_bad_options_exit_2(runs, capsys, extra, message):
    code = main(["compare", str(runs / "bm25.json"), str(runs / "seed-ranking.json"), *extra])
    err = capsys.readouterr().err
    assert code == 2 and message in err


def test_cli_and_config_share_the_resampling_limits(runs, capsys):
    """--resamples and regression.resamples accept exactly the limits of rag_eval._scoring.stats, and both say so."""
    from rag_eval._data.config.regression import RegressionSpec
    from rag_eval._scoring.stats import MAX_RESAMPLES, MIN_RESAMPLES

    field = RegressionSpec.model_json_schema()["properties"]["resamples"]
    assert (field["minimum"], field["maximum"]) == (MIN_RESAMPLES, MAX_RESAMPLES) == (100, 1_000_000)
    assert main(["compare", "--help"]) == 0
    assert "resamples, from 100 to 1,000,000 (default 10,000)" in " ".join(capsys.readouterr().out.split())
    pair = [str(runs / "bm25.json"), str(runs / "seed-ranking.json"), "--gate", "ndcg@10:max_drop=1"]
    for value, expected in [(MIN_RESAMPLES - 1, 2), (MIN_RESAMPLES, 0), (MAX_RESAMPLES + 1, 2)]:
        assert main(["compare", *pair, "--resamples", str(value)]) == expected
        err = capsys.readouterr().err
        assert (f"--resamples: {RESAMPLES_RULE} (got {value})" in err) == (expected == 2)


def test_bad_files_exit_2(runs, tmp_path, capsys):
    (tmp_path / "report.md").write_text("# not json\n")
    for baseline, message in [
        (tmp_path / "missing.json", "missing.json: no such file"),
        (tmp_path / "report.md", "report.md: line 1, column 1: not valid JSON"),
        (tmp_path, "is a folder, expected a results file"),
    ]:
        code, out, err = compare_cli(capsys, baseline, runs / "bm25.json")
        assert code == 2 and message in err and out == ""


def test_no_gate_and_no_ndcg10_exit_2(tmp_path, capsys):
    doc = helpers.results_document({"q1": {"mrr@10": 1.0}, "q2": {"mrr@10": 0.5}})
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    code, _, err = compare_cli(capsys, path, path)
    # The example names a metric the results have (it suggested ndcg@5, which they lack too).
    assert code == 2 and err == ("rag-eval: error: no --gate given and the results have no ndcg@10; name one of "
                                 "theirs, e.g. --gate mrr@10:max_drop=0.01\n")
    code, out, _ = compare_cli(capsys, path, path, "--gate", "mrr@10")
    assert code == 0 and "verdict: PASS" in out


def test_output_is_reproducible_and_depends_on_the_seed(runs, capsys):
    args = (runs / "bm25.json", runs / "seed-ranking.json", "--gate", "ndcg@10:max_drop=0.5")
    first = compare_cli(capsys, *args)
    second = compare_cli(capsys, *args)
    other = compare_cli(capsys, *args, "--seed", "1")
    assert first == second
    ci = re.compile(r"\[([-+]\d\.\d{4}), ([-+]\d\.\d{4})\]")
    assert ci.search(first[1]).groups() != ci.search(other[1]).groups()


# ---- --report -------------------------------------------------------------------------------


def test_report_file(runs, tmp_path, capsys):
    report_path = tmp_path / "sub" / "comparison.md"
    code, out, _ = compare_cli(
        capsys, runs / "bm25.json", runs / "seed-ranking.json",
        "--gate", "ndcg@4:max_drop=0.01", "--gate", "recall@10:max_drop=1", "--report", report_path,
    )
    assert code == 1 and f"report: {report_path}" in out
    report = report_path.read_text()
    tables = helpers.assert_tables_well_formed(report)
    assert tables[0][0][0] == "Metric" and [row[-1] for row in tables[0][1:]] == ["❌ fail", "✅ pass"]
    # Wins / ties / losses, counted from the JSON files.
    wtl = tables[1]
    assert wtl[0] == ["Metric", "Queries", "Improved", "Unchanged", "Regressed"]
    for row, metric in zip(wtl[1:], ["ndcg@4", "recall@10"]):
        base = per_query(runs / "bm25.json", metric)
        cand = per_query(runs / "seed-ranking.json", metric)
        d = np.array([cand[q] - base[q] for q in base])
        assert row == [metric, "10", str(int((d > 1e-12).sum())), str(int((abs(d) <= 1e-12).sum())),
                       str(int((d < -1e-12).sum()))]
    # The improved query, with its text.
    texts = json.loads((runs / "bm25.json").read_text())["query_texts"]
    improved = report.split("## ndcg@4: queries that moved most")[1].split("**Improved**")[1]
    assert f"| q-largest-ocean | {texts['q-largest-ocean']} |" in improved
    # Side by side for the worst regression: its relevant passages in bm25's top 4, from the baseline's rankings.
    baseline_rankings = json.loads((runs / "bm25.json").read_text())["rankings"]
    base = per_query(runs / "bm25.json", "ndcg@4")
    cand = per_query(runs / "seed-ranking.json", "ndcg@4")
    worst = min(base, key=lambda q: (cand[q] - base[q], q))
    lost = sorted(doc for doc, _, grade in baseline_rankings[worst][:4] if grade is not None and grade > 0)
    assert lost  # the seed ranking returns nothing for this query: all are lost
    section = report.split(f"### {worst}: ")[1].split("###")[0]
    assert f"Relevant passages lost from the top 4: {', '.join(f'`{d}`' for d in lost)}. Gained: none." in section
    # Each lost passage with its text, read from the dataset (the results files keep the first 60 characters).
    corpus = {p["id"]: p["text"] for p in yaml.safe_load((REPO / "datasets" / "ocean_facts.yaml").read_text())["corpus"]}
    for doc in lost:
        text = corpus[doc] if len(corpus[doc]) <= 60 else corpus[doc][:59].rstrip() + "…"
        assert f"**`{doc}` {_md(text)}** (lost)" in section


def _md(text: str) -> str:
    """Markdown-escaped as a table cell (the characters the ocean-facts texts hold)."""
    for ch in "*_`[]<>#~":
        text = text.replace(ch, "\\" + ch)
    return text


# ---- --summary and $GITHUB_STEP_SUMMARY -----------------------------------------------------


def test_summary_path(runs, tmp_path, capsys):
    summary = tmp_path / "verdict.md"
    code, out, _ = compare_cli(capsys, runs / "bm25.json", runs / "seed-ranking.json",
                               "--gate", "ndcg@4:max_drop=0.01", "--summary", summary)
    assert code == 1 and f"summary: {summary}" in out
    text = summary.read_text()
    assert text.startswith("### rag-eval regression check: ❌ FAIL\n")
    (table,) = helpers.assert_tables_well_formed(text)
    assert table[1][0] == "ndcg@4" and table[1][-1] == "❌ fail"
    assert "Failed gates:" in text


def test_github_step_summary_is_appended(runs, tmp_path, capsys, monkeypatch):
    summary = tmp_path / "step_summary.md"
    summary.write_text("## Tests\n\nall green\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert compare_cli(capsys, runs / "bm25.json", runs / "bm25.json")[0] == 0
    assert compare_cli(capsys, runs / "bm25.json", runs / "seed-ranking.json", "--gate", "ndcg@4")[0] == 1
    text = summary.read_text()
    assert text.startswith("## Tests\n\nall green\n")
    headings = re.findall(r"^### rag-eval regression check: (.*)$", text, flags=re.MULTILINE)
    assert headings == ["✅ PASS", "❌ FAIL"]
    helpers.assert_tables_well_formed(text)
    # An explicit --summary goes there instead.
    other = tmp_path / "other.md"
    before = summary.read_text()
    compare_cli(capsys, runs / "bm25.json", runs / "bm25.json", "--summary", other)
    assert summary.read_text() == before and "✅ PASS" in other.read_text()


def test_unwritable_summary_exits_2(runs, tmp_path, capsys):
    code, _, err = compare_cli(capsys, runs / "bm25.json", runs / "bm25.json", "--summary", tmp_path / "no" / "s.md")
    assert code == 2 and "cannot write the summary" in err


# ---- docs/ci.md -----------------------------------------------------------------------------


def _code_blocks(markdown: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", markdown, flags=re.MULTILINE | re.DOTALL)


def test_ci_doc_workflow_is_a_pull_request_job():
    doc = (REPO / "docs" / "ci.md").read_text()
    workflow = next(yaml.safe_load(b) for b in _code_blocks(doc, "yaml") if "jobs:" in b)
    assert "pull_request" in workflow[True]  # YAML 1.1 reads the key `on` as True
    (job,) = workflow["jobs"].values()
    steps = job["steps"]
    uses = [s.get("uses", "") for s in steps]
    runs_ = [s.get("run", "") for s in steps]
    assert uses[0].startswith("actions/checkout@") and uses[1].startswith("actions/setup-python@")
    assert "bash scripts/setup.sh" in runs_
    (check,) = [r for r in runs_ if "rag-eval run" in r]
    assert check == ".venv/bin/rag-eval run configs/ocean_facts_ci.yaml --no-progress"
    assert not any("continue-on-error" in s for s in steps)  # exit 1 fails the job
    assert "[docs/ci.md](docs/ci.md)" in (REPO / "README.md").read_text()


def test_ci_doc_config_runs_against_a_baseline_made_as_documented(tmp_path, capsys, monkeypatch):
    """Lay out a repository as docs/ci.md says, then run the documented job's command there."""
    doc = (REPO / "docs" / "ci.md").read_text()
    config_text = next(b for b in _code_blocks(doc, "yaml") if "regression:" in b)
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "ocean_facts_ci.yaml").write_text(config_text)
    (tmp_path / "datasets").mkdir()
    shutil.copy(REPO / "datasets" / "ocean_facts.yaml", tmp_path / "datasets" / "ocean_facts.yaml")
    # Step 1 of the doc: the baseline from configs/ocean_facts.yaml, copied into reports/baselines/.
    bash = _code_blocks(doc, "bash")[0]
    assert "rag-eval run configs/ocean_facts.yaml --output /tmp/ocean-baseline" in bash
    assert "cp /tmp/ocean-baseline/bm25.json reports/baselines/ocean-facts-bm25.json" in bash
    made = tmp_path / "ocean-baseline"
    assert main(["run", str(REPO / "configs" / "ocean_facts.yaml"), "--output", str(made), "--no-progress"]) == 0
    (tmp_path / "reports" / "baselines").mkdir(parents=True)
    shutil.copy(made / "bm25.json", tmp_path / "reports" / "baselines" / "ocean-facts-bm25.json")
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    capsys.readouterr()
    code = main(["run", str(tmp_path / "configs" / "ocean_facts_ci.yaml"), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "verdict: PASS (0 of 2 gates failed)" in out
    assert (tmp_path / "reports" / "ocean-facts-ci" / "comparison.md").is_file()
    assert summary.read_text().startswith("### rag-eval regression check: ✅ PASS")


def test_run_exit_1_with_a_worse_baseline_summary(runs, tmp_path, capsys, monkeypatch):
    """`rag-eval run` with a regression section exits 1 when its retriever is worse than the baseline.

    The baseline here is a copy of bm25.json whose DCG@4 values are raised by hand by 0.05 on
    every query (aggregate too): the same run then shows a drop of exactly 0.05 > max_drop 0.01.
    (DCG, not nDCG: two queries score nDCG 1, and a value above 1 is refused as an edited file.)
    """
    def raise_values(document):
        results = document["results"]
        for row in results["per_query"].values():
            row["dcg@4"] += 0.05
        results["aggregate"]["dcg@4"] += 0.05

    baseline = _edited_copy(runs / "bm25.json", tmp_path, raise_values)
    config = yaml.safe_load((FIXTURES / "bm25_baseline.yaml").read_text())
    config["dataset"]["path"] = str(REPO / "datasets" / "ocean_facts.yaml")
    config["metrics"] = [*config["metrics"], "dcg@4"]
    config["regression"] = {"baseline": baseline.name, "gates": {"dcg@4": {"max_drop": 0.01}}, "resamples": 500}
    path = tmp_path / "candidate.yaml"
    path.write_text(yaml.safe_dump(config))
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code = main(["run", str(path), "--output", str(tmp_path / "out"), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1
    assert "dropped 0.0500 > max_drop 0.01" in out and "regressed queries (10):" in out
    assert "❌ FAIL" in summary.read_text()
    gate_line = next(line for line in out.splitlines() if line.startswith("FAIL\tdcg@4"))
    # Every delta is -0.05 (up to float rounding): only the two all-same-sign patterns of the
    # 2**10 sign flips are as extreme, so the exact permutation p is 2/1024 = 0.0020.
    assert "\tp 0.0020\t" in gate_line


def test_the_power_line_says_the_mde_is_found_80_percent_of_the_time_not_a_floor(tmp_path, capsys):
    # The attack: "the smallest detectable difference is X" read as a floor, beside a significant difference below X.
    from scipy import stats as sps
    from scipy.optimize import brentq

    base = {f"q{i}": {"mrr@10": v} for i, v in enumerate([0.5, 1.0, 0.25, 0.5, 1.0, 0.2])}
    cand = {f"q{i}": {"mrr@10": v} for i, v in enumerate([1.0, 1.0, 0.5, 0.5, 1.0, 1.0])}
    paths = []
    for name, rows in (("base", base), ("cand", cand)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(helpers.results_document(rows)))
    code, out, _ = compare_cli(capsys, *paths, "--gate", "mrr@10")
    deltas = np.array([cand[q]["mrr@10"] - base[q]["mrr@10"] for q in base])
    sd, n = deltas.std(ddof=1), deltas.size
    # The MDE by scipy's noncentral t directly: power 0.8 of the two-sided paired t-test at alpha 0.05.
    crit = sps.t.ppf(0.975, n - 1)
    mde = brentq(
        lambda d: sps.nct.sf(crit, n - 1, d / sd * n**0.5) + sps.nct.cdf(-crit, n - 1, d / sd * n**0.5) - 0.8, 1e-9, 10)
    (line,) = [line for line in out.splitlines() if line.startswith("power\t")]
    assert line.startswith(f"power\tmrr@10\twith 6 queries a difference of {mde:.4f} is found 80% of the time, "
                           "smaller ones less often (paired t-test, alpha 0.05); finding 0.01 as often would need ")
    assert code == 0


def test_an_mde_beyond_the_metrics_range_is_not_printed_as_a_difference(tmp_path, capsys):
    # The first-day attack: "with 2 queries a difference of 2.6978 is found 80% of the time" for an nDCG.
    base = {"q1": {"mrr@10": 1.0}, "q2": {"mrr@10": 0.5}}
    cand = {"q1": {"mrr@10": 0.5}, "q2": {"mrr@10": 1.0}}
    paths = []
    for name, rows in (("base", base), ("cand", cand)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(helpers.results_document(rows)))
    code, out, _ = compare_cli(capsys, *paths, "--gate", "mrr@10:max_drop=1")
    from rag_eval._compare.power import minimum_detectable_difference

    assert minimum_detectable_difference(np.array([-0.5, 0.5])) > 1  # sd 0.71 over 2 queries: far past 1
    (line,) = [line for line in out.splitlines() if line.startswith("power\t")]
    assert line.startswith("power\tmrr@10\twith 2 queries even the largest difference mrr@10 can show (1) is found "
                           "less than 80% of the time (paired t-test, alpha 0.05); finding 0.01 80% of the time would "
                           "need ")
    assert code == 0
