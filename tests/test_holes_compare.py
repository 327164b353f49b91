"""`rag-eval compare` (and `run` with a regression section) with the holes: "could flip" and on_holes.

The hand-built set of tests/test_holes_outputs.py (two queries, top_k 3, L = 1/log2(3)):

- base:     no hole; ndcg@3 per query (1, L), mean 0.8155;
- surfacer: one hole in each top 3 (33.3%); ndcg@3 (0.6697, L) = 0.6503 with the holes as misses and
  (1, (L + 1/2) / (1 + L)) = 0.8467 with them at the highest grade;
- tail:     one hole in q-é1's top 3 (16.7%); ndcg@3 (1, L) = 0.8155 as misses and
  ((3 + L) / (2.5 + 2L), L) = 0.7981 at the highest grade: filling the hole raises q-é1's ideal.

The rule (rag_eval._compare.hole_flips): a gate could flip when it passes at one of the candidate's
bounds and fails at the other, the baseline as recorded.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from regression_fixtures import helpers

from rag_eval._commands.compare import compare_results
from rag_eval._compare import regression
from rag_eval._compare.gates import make_gate
from rag_eval._compare.hole_flips import percent
from rag_eval._core.errors import ConfigError
from rag_eval._run.results_file import ResultsFile, load_results_file
from rag_eval.cli import main

L = 1 / math.log2(3)
BASE = (1 + L) / 2
SURFACER_LOW, SURFACER_HIGH = ((2 * L + 0.5) / (2 + L) + L) / 2, (1 + (L + 0.5) / (1 + L)) / 2
TAIL_LOW, TAIL_HIGH = (1 + L) / 2, ((3 + L) / (2.5 + 2 * L) + L) / 2
Q1, Q2 = "q-é1", "q2"
X = "x·new"
DATASET = {
    "name": "holes-by-hand",
    "corpus": [{"id": doc, "text": f"passage {doc}"} for doc in ("a", "b", "c", "d", "e", X, "y")],
    "queries": [
        {"id": Q1, "text": "first question", "judgements": {"a": 2, "b": 1, "c": 0}},
        {"id": Q2, "text": "second question", "judgements": {"d": 1, "e": 0}},
    ],
}
RANKINGS = {
    "base": {Q1: ["a", "b", "c"], Q2: ["e", "d"]},
    "surfacer": {Q1: [X, "a", "b"], Q2: ["e", "d", "y"]},
    "tail": {Q1: ["a", "b", X], Q2: ["e", "d"]},
}
RESAMPLES = "200"


def config(labels, **extra) -> dict:
    return {
        "name": "holes-by-hand",
        "dataset": {"path": "holes.yaml"},
        "retrievers": [{"label": label, "adapter": "static", "params": {"rankings": RANKINGS[label]}} for label in labels],
        "top_k": 3,
        "metrics": ["ndcg@3", "precision@3"],
        "main_metric": "ndcg@3",
        "report": {"plots": False},
        **extra,
    }


@pytest.fixture(autouse=True)
def _no_job_summary(monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("holes_compare")
    (folder / "holes.yaml").write_text(yaml.safe_dump(DATASET, allow_unicode=True), encoding="utf-8")
    path = folder / "all.yaml"
    path.write_text(yaml.safe_dump(config(list(RANKINGS)), allow_unicode=True), encoding="utf-8")
    assert main(["run", str(path), "--output", str(folder / "out"), "--no-progress"]) == 0
    return folder


def compare(capsys, project, candidate, *args, baseline="base"):
    out = project / "out"
    code = main(["compare", str(out / f"{baseline}.json"), str(out / f"{candidate}.json"), *map(str, args),
                 "--resamples", RESAMPLES])
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err


def test_percent_as_people_read_it():
    assert [percent(v) for v in (0.0, 1 / 3, 1 / 6, 0.14, 1.0, 0.0004, 0.001)] == [
        "0%", "33.3%", "16.7%", "14%", "100%", "<0.1%", "0.1%"
    ]


def test_a_failing_gate_that_could_pass_says_so(project, capsys):
    """surfacer, max_drop 0: fails as measured (drop 0.1652), passes with its holes at the highest grade."""
    code, lines, err = compare(capsys, project, "surfacer", "--gate", "ndcg@3")
    assert code == 1 and err == ""
    assert lines[0].startswith("FAIL\tndcg@3\t") and lines[0].endswith(f"dropped {BASE - SURFACER_LOW:.4f} > max_drop 0")
    assert lines[1].startswith("  regressed queries (1): q-é1")
    assert lines[2] == (
        "holes\tndcg@3\tcould flip: 33.3% of the candidate's top 3 is unjudged: the gate fails with the holes as "
        f"misses (ndcg@3 {SURFACER_LOW:.4f}) and passes with them at the highest grade ({SURFACER_HIGH:.4f}) "
        "(on_holes: warn: the verdict stands)"
    )
    assert f"{SURFACER_LOW:.4f} {SURFACER_HIGH:.4f}" == "0.6503 0.8467"
    assert lines[-1] == "verdict: FAIL (1 of 1 gates failed)"


def test_a_passing_gate_that_could_fail_warns_and_exits_0(project, capsys):
    """tail, max_drop 0.01: Δ 0 as measured; at the high bound Δ = (0.9652 - 1) / 2 = -0.0174, past 0.01."""
    code, lines, _ = compare(capsys, project, "tail", "--gate", "ndcg@3:max_drop=0.01")
    assert code == 0
    assert lines[0].split("\t")[0] == "PASS" and lines[0].endswith("drop 0.0000 within max_drop 0.01")
    drop_at_high = BASE - TAIL_HIGH
    assert drop_at_high == pytest.approx(0.0174022652, abs=1e-9)
    assert lines[1] == (
        "holes\tndcg@3\tcould flip: 16.7% of the candidate's top 3 is unjudged: the gate passes with the holes as "
        "misses (ndcg@3 0.8155) and fails with them at the highest grade (0.7981) (on_holes: warn: the verdict stands)"
    )
    assert lines[-1] == "verdict: PASS (0 of 1 gates failed)"


def test_on_holes_fail_fails_the_gate_saying_why(project, capsys):
    code, lines, _ = compare(capsys, project, "tail", "--gate", "ndcg@3:max_drop=0.01", "--on-holes", "fail")
    assert code == 1
    fields = lines[0].split("\t")
    assert fields[:2] == ["FAIL", "ndcg@3"]
    assert fields[-1] == (
        "drop 0.0000 within max_drop 0.01; could flip: 16.7% of the candidate's top 3 is unjudged (the gate passes "
        "with the holes as misses (ndcg@3 0.8155) and fails with them at the highest grade (0.7981); on_holes: fail)"
    )
    assert lines[1] == "  regressed queries (0): none"  # it failed on the holes, not on a query that got worse
    assert lines[2].startswith("holes\tndcg@3\tcould flip: 16.7% of the candidate's top 3 is unjudged")
    assert lines[2].endswith("(on_holes: fail: the gate fails)")
    assert lines[-1] == "verdict: FAIL (1 of 1 gates failed)"


def test_gates_that_cannot_flip_print_nothing_more(project, capsys):
    """precision@3 of tail: 0.5 as measured, (1 + 1/3) / 2 = 0.6667 at the high bound: passes at both.
    ndcg@3 of surfacer with max_drop 0.2: drop 0.1652, and -0.0312 at the high bound: passes at both."""
    code, lines, _ = compare(capsys, project, "tail", "--gate", "precision@3", "--on-holes", "fail")
    assert code == 0 and not any(line.startswith("holes\t") for line in lines)
    code, lines, _ = compare(capsys, project, "surfacer", "--gate", "ndcg@3:max_drop=0.2", "--on-holes", "fail")
    assert code == 0 and not any(line.startswith("holes\t") for line in lines)
    # The baseline against itself: no hole, nothing to say.
    code, lines, _ = compare(capsys, project, "base", "--gate", "ndcg@3", "--on-holes", "fail")
    assert code == 0 and len(lines) == 2


def test_the_report_and_summary_show_the_holes(project, tmp_path, capsys):
    report, summary = tmp_path / "comparison.md", tmp_path / "summary.md"
    code, _, _ = compare(
        capsys, project, "tail", "--gate", "ndcg@3:max_drop=0.01", "--gate", "precision@3",
        "--report", report, "--summary", summary,
    )
    assert code == 0
    for text in (report.read_text(encoding="utf-8"), summary.read_text(encoding="utf-8")):
        verdict = helpers.assert_tables_well_formed(text)[0]
        assert verdict[0][:4] == ["Metric", "Baseline", "Candidate", "Candidate unjudged"]
        assert verdict[0][-1] == "Result"
        assert [row[3] for row in verdict[1:]] == ["16.7% of top 3, ⚠️ could flip", "16.7% of top 3"]
        assert "Gates that could flip (on_holes: warn: the verdict stands):" in text
        assert (
            "- ndcg@3 could flip: 16.7% of the candidate's top 3 is unjudged: the gate passes with the holes as "
            "misses (ndcg@3 0.8155) and fails with them at the highest grade (0.7981)." in text
        )
    text = report.read_text(encoding="utf-8")
    holes = next(t for t in helpers.assert_tables_well_formed(text) if t[0][1] == "Candidate unjudged")
    assert holes[1:] == [
        ["ndcg@3", "16.7% of top 3", "0%", "0.8155", "0.7981", "0.8155", "pass", "fail"],
        ["precision@3", "16.7% of top 3", "0%", "0.5000", "0.6667", "0.5000", "pass", "pass"],
    ]


def strip_holes(source: Path, target: Path) -> Path:
    document = json.loads(source.read_text(encoding="utf-8"))
    del document["holes"]
    target.write_text(json.dumps(document), encoding="utf-8")
    return target


def test_old_results_files_without_holes_still_compare(project, tmp_path, capsys):
    base = strip_holes(project / "out" / "base.json", tmp_path / "base.json")
    tail = strip_holes(project / "out" / "tail.json", tmp_path / "tail.json")
    code = main(["compare", str(base), str(tail), "--gate", "ndcg@3:max_drop=0.01", "--resamples", RESAMPLES,
                 "--report", str(tmp_path / "r.md")])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0 and lines[0].startswith("PASS\tndcg@3") and not any(line.startswith("holes") for line in lines)
    assert "Candidate unjudged" not in (tmp_path / "r.md").read_text(encoding="utf-8")
    # With on_holes fail nothing can be checked: said once, and the verdict is the gates'.
    code = main(["compare", str(base), str(tail), "--gate", "ndcg@3:max_drop=0.01", "--resamples", RESAMPLES,
                 "--on-holes", "fail"])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    assert lines[1] == (
        "holes\t-\tthe candidate's results file records no usable holes (none, or not matching its results), so "
        "no gate "
        "can be checked against them; rerun `rag-eval run` to record them"
    )
    # A new candidate against an old baseline: the candidate's holes are what count.
    code, lines, _ = compare(capsys, project, "tail", "--gate", "ndcg@3:max_drop=0.01", "--on-holes", "fail",
                             baseline="base")
    code_old = main(["compare", str(base), str(project / "out" / "tail.json"), "--gate", "ndcg@3:max_drop=0.01",
                     "--resamples", RESAMPLES, "--on-holes", "fail"])
    old_lines = capsys.readouterr().out.splitlines()
    assert code == code_old == 1 and old_lines[0] == lines[0]


def run_with_regression(project: Path, name: str, **regression) -> tuple[int, list[str]]:
    path = project / f"{name}.yaml"
    section = {"baseline": "out/base.json", "gates": {"ndcg@3": {"max_drop": 0.01}}, "resamples": 200, **regression}
    path.write_text(yaml.safe_dump(config(["tail"], regression=section), allow_unicode=True), encoding="utf-8")
    return main(["run", str(path), "--output", str(project / f"out-{name}"), "--no-progress"])


def test_run_with_a_regression_section_warns_by_default(project, capsys):
    code = run_with_regression(project, "warn")
    out = capsys.readouterr().out
    assert code == 0
    assert "holes\tndcg@3\tcould flip: 16.7% of the candidate's top 3 is unjudged" in out
    assert "verdict: PASS (0 of 1 gates failed)" in out


def test_run_with_on_holes_fail_exits_1_with_the_reason(project, capsys):
    code = run_with_regression(project, "fail", on_holes="fail")
    out = capsys.readouterr().out
    assert code == 1
    gate = next(line for line in out.splitlines() if line.startswith("FAIL\tndcg@3"))
    assert gate.endswith("could flip: 16.7% of the candidate's top 3 is unjudged (the gate passes with the holes as "
                         "misses (ndcg@3 0.8155) and fails with them at the highest grade (0.7981); on_holes: fail)")
    comparison = (project / "out-fail" / "comparison.md").read_text(encoding="utf-8")
    assert "# Regression check: ❌ FAIL" in comparison and "on_holes: fail: the gate fails" in comparison


def test_bad_on_holes_values_are_refused(project, capsys):
    code = run_with_regression(project, "bad", on_holes="maybe")
    err = capsys.readouterr().err
    assert code == 2 and "regression.on_holes" in err and "Traceback" not in err
    assert main(["compare", "a.json", "b.json", "--on-holes", "maybe"]) == 2
    assert "argument --on-holes: invalid choice: 'maybe' (choose from 'warn', 'fail')" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="--on-holes: expected one of warn, fail, got 'maybe'"):
        compare_results("a.json", "b.json", say=print, on_holes="maybe")


def hand_file(tmp_path: Path, label: str, values: dict, high: dict | None) -> ResultsFile:
    """A results file of 6 queries (helpers.results_document) with a holes section written by hand."""
    per_query = {f"q{i}": {m: v for m, v in values.items()} for i in range(6)}
    document = helpers.results_document(per_query, label=label)
    if high is not None:
        document["holes"] = {"metrics": {
            metric: {
                "unit": "passage", "k": 3, "judged": 0.5, "unjudged": 0.5, "low": document["results"]["aggregate"][metric],
                "high": high[metric], "condensed": high[metric],
                "per_query": {q: {"judged": 0.5, "unjudged": 0.5, "high": high[metric], "condensed": high[metric]}
                              for q in per_query},
            }
            for metric in values
        }}
    path = tmp_path / f"{label}.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return load_results_file(path)


def test_alpha_gates_keep_one_holm_family_at_both_bounds(tmp_path):
    """6 queries, every one 0.5 below the baseline on both metrics: each exact permutation p is 2/64 = 0.03125,
    Holm over the two gates doubles it to 0.0625 >= alpha 0.05, so both pass as measured. At the high bound
    ndcg@3's drop is 0 (p 1); precision@3's holes move nothing, so its p stays 0.03125 and, Holm-corrected in
    the same family of two, 0.0625: it passes again and cannot flip. Decided alone it would fail (p < 0.05)."""
    base = hand_file(tmp_path, "base", {"ndcg@3": 1.0, "precision@3": 1.0}, None)
    cand = hand_file(tmp_path, "cand", {"ndcg@3": 0.5, "precision@3": 0.5}, {"ndcg@3": 1.0, "precision@3": 0.5})
    gates = [make_gate("ndcg@3", 0.1, alpha=0.05), make_gate("precision@3", 0.1, alpha=0.05)]
    verdict = regression.compare(base, cand, gates, n_resamples=1000, on_holes="fail")
    ndcg, precision = verdict.gates
    assert ndcg.p_permutation == pytest.approx(2 / 64) and ndcg.p_adjusted == pytest.approx(4 / 64)
    assert precision.passed and "not significant" in precision.reason
    assert [h.passed_low for h in verdict.holes] == [True, True]
    assert [h.passed_high for h in verdict.holes] == [True, True]
    assert verdict.could_flip() == [] and verdict.passed
    # The gate alone: significant as measured (p 0.03125 < 0.05), fails; at its high bound it passes: could flip.
    alone = regression.compare(base, cand, gates[:1], n_resamples=1000, on_holes="fail")
    (result,) = alone.gates
    assert not result.passed and [h.metric for _, h in alone.could_flip()] == ["ndcg@3"]
    assert result.reason.startswith("dropped 0.5000 > max_drop 0.1, significant (p=0.0312 < alpha 0.05); could flip: 50%")


def test_a_hole_below_the_gates_cutoff_cannot_flip_it(tmp_path, capsys):
    """The attack: deep ranks q-é1 [a, b, c, x] (top_k 4), x unjudged at rank 4, below ndcg@3's cutoff.

    By hand its top 3 is base's: ndcg@3 (1, L), mean 0.8155, and no hole in it. Judging x could only raise
    q-é1's ideal DCG@3 (to 2 + 2L + 1/2), never its DCG@3: high is the measured value, the gate cannot
    flip, and on_holes fail has nothing to fail.
    """
    (tmp_path / "holes.yaml").write_text(yaml.safe_dump(DATASET, allow_unicode=True), encoding="utf-8")
    rankings = {"base": RANKINGS["base"], "deep": {Q1: ["a", "b", "c", X], Q2: ["e", "d"]}}
    cfg = {**config([]), "retrievers": [{"label": label, "adapter": "static", "params": {"rankings": ranking}}
                                        for label, ranking in rankings.items()], "top_k": 4,
           "metrics": ["ndcg@3", "recall@3", "ndcg@4"]}
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    assert main(["run", str(tmp_path / "run.yaml"), "--output", str(tmp_path / "out"), "--no-progress"]) == 0
    capsys.readouterr()
    section = json.loads((tmp_path / "out" / "deep.json").read_text(encoding="utf-8"))["holes"]["metrics"]
    assert section["ndcg@3"]["unjudged"] == 0
    assert section["ndcg@3"]["low"] == section["ndcg@3"]["high"] == pytest.approx(BASE)
    assert section["recall@3"]["low"] == section["recall@3"]["high"] == 1.0  # R: a, b (q-é1), d (q2): all found
    # ndcg@4 holds x: with x at grade 2, q-é1's DCG@4 = 2 + L + 2/log2(5), IDCG@4 = 2 + 2L + 1/2.
    assert section["ndcg@4"]["unjudged"] == pytest.approx(1 / 8)
    assert section["ndcg@4"]["high"] == pytest.approx(((2 + L + 2 / math.log2(5)) / (2.5 + 2 * L) + L) / 2)
    code = main(["compare", str(tmp_path / "out" / "base.json"), str(tmp_path / "out" / "deep.json"),
                 "--gate", "ndcg@3:max_drop=0.01", "--gate", "recall@3:max_drop=0.01", "--on-holes", "fail",
                 "--resamples", RESAMPLES])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0 and not any(line.startswith("holes") for line in lines)
    assert lines[-1] == "verdict: PASS (0 of 2 gates failed)"


def test_a_holes_section_edited_after_the_run_is_not_used_and_said(project, tmp_path, capsys):
    """The candidate's ndcg@3 holes entry edited (its low no longer the results' value): the section is not used,
    and with on_holes fail that is said, as for a file without holes, instead of silently passing."""
    document = json.loads((project / "out" / "tail.json").read_text(encoding="utf-8"))
    document["holes"]["metrics"]["ndcg@3"]["low"] = 0.9
    path = tmp_path / "tail.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert load_results_file(path).holes is None
    code = main(["compare", str(project / "out" / "base.json"), str(path), "--gate", "ndcg@3:max_drop=0.01",
                 "--resamples", RESAMPLES, "--on-holes", "fail"])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0 and lines[1].startswith("holes\t-\tthe candidate's results file records no usable holes")
