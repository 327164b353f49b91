"""End to end through the real command line, in subprocesses:

1. a baseline: BM25 on the ocean-facts set (tests/regression_fixtures/bm25_baseline.yaml);
2. a deliberately worse candidate (weak_retriever:ReversedBM25, BM25 with each ranking
   reversed) run with a regression section gating ndcg@10 against that baseline: exit 1,
   and both the output and comparison.md name the queries that regressed;
3. the same candidate with its own results as the baseline: exit 0;
4. a baseline made on another (tiny) dataset: exit 2, "different datasets".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "regression_fixtures"


def rag_eval(*args: object, cwd: Path) -> subprocess.CompletedProcess:
    """`python -m rag_eval.cli ARGS` with the fixtures folder on PYTHONPATH (for weak_retriever)."""
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(FIXTURES), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "rag_eval.cli", *map(str, args)],
        check=False, cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )


def candidate_config(tmp_path: Path, baseline: Path, name: str) -> Path:
    """weak_candidate.yaml, copied with its dataset path made absolute and regression.baseline set."""
    config = yaml.safe_load((FIXTURES / "weak_candidate.yaml").read_text())
    config["dataset"]["path"] = str(REPO / "datasets" / "ocean_facts.yaml")
    config["regression"]["baseline"] = str(baseline)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def ndcg10(path: Path) -> dict[str, float]:
    return {q: row["ndcg@10"] for q, row in json.loads(path.read_text())["results"]["per_query"].items()}


@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("baseline")
    done = rag_eval("run", FIXTURES / "bm25_baseline.yaml", "--output", out, "--no-progress", cwd=out.parent)
    assert done.returncode == 0, done.stderr
    assert "verdict:" not in done.stdout  # no regression section: no verdict
    return out / "bm25.json"


@pytest.fixture(scope="module")
def failed_candidate(tmp_path_factory, baseline):
    tmp = tmp_path_factory.mktemp("candidate")
    done = rag_eval("run", candidate_config(tmp, baseline, "weak"), "--output", tmp / "out", "--no-progress", cwd=tmp)
    return done, tmp / "out"


def test_weaker_candidate_fails_with_exit_1_naming_the_regressed_queries(failed_candidate, baseline):
    done, out = failed_candidate
    assert done.returncode == 1, done.stdout + done.stderr
    base, cand = ndcg10(baseline), ndcg10(out / "bm25.json")
    regressed = sorted((q for q in base if cand[q] < base[q] - 1e-12), key=lambda q: (cand[q] - base[q], q))
    assert regressed, "the reversed ranking must hurt some query"
    drop = sum(base[q] - cand[q] for q in base) / len(base)
    assert drop > 0.01
    lines = done.stdout.splitlines()
    gate = next(line for line in lines if line.startswith(("PASS\t", "FAIL\t")))
    assert gate.startswith("FAIL\tndcg@10\t") and gate.endswith(f"dropped {drop:.4f} > max_drop 0.01")
    listed = next(line for line in lines if line.startswith("  regressed queries"))
    assert listed == f"  regressed queries ({len(regressed)}): " + ", ".join(
        f"{q} ({cand[q] - base[q]:+.4f})" for q in regressed[:10]
    ) + (f", and {len(regressed) - 10} more" if len(regressed) > 10 else "")
    assert "verdict: FAIL (1 of 1 gates failed)" in lines
    # comparison.md beside the report lists every regressed query (there are at most 10 here) with its text.
    assert f"comparison: {out / 'comparison.md'}" in lines
    report = (out / "comparison.md").read_text()
    texts = json.loads(baseline.read_text())["query_texts"]
    section = report.split("**Regressed**")[1].split("**Improved**")[0]
    rows = [line for line in section.splitlines() if line.startswith("| q")]
    assert [row.split(" | ")[0].lstrip("| ") for row in rows] == regressed
    for q, row in zip(regressed, rows):
        assert f" {texts[q]} |" in row
    assert report.startswith("# Regression check: ❌ FAIL")
    assert "worst regressions side by side (top 10)" in report and "(lost)" not in report.split("### ")[0]


def test_reversed_ranking_really_is_bm25_reversed(failed_candidate, baseline):
    """The candidate's run file holds bm25's documents for each query, in reverse order."""
    _, out = failed_candidate
    base_rankings = json.loads(baseline.read_text())["rankings"]
    cand_rankings = json.loads((out / "bm25.json").read_text())["rankings"]
    for q, ranked in base_rankings.items():
        assert [doc for doc, _, _ in cand_rankings[q]] == [doc for doc, _, _ in ranked][::-1]


def test_candidate_against_itself_passes_with_exit_0(failed_candidate, tmp_path):
    _, out = failed_candidate
    own = tmp_path / "own-baseline.json"
    own.write_text((out / "bm25.json").read_text())
    done = rag_eval("run", candidate_config(tmp_path, own, "self"), "--output", tmp_path / "out", "--no-progress",
                    cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS\tndcg@10\t" in done.stdout and "verdict: PASS (0 of 1 gates failed)" in done.stdout
    # The same comparison through `rag-eval compare`.
    again = rag_eval("compare", own, tmp_path / "out" / "bm25.json", "--gate", "ndcg@10:max_drop=0", cwd=tmp_path)
    assert again.returncode == 0 and "delta +0.0000 [+0.0000, +0.0000]" in again.stdout


TINY_DATASET = """\
name: tiny-seas
corpus:
  - id: s1
    text: The Sargasso Sea has no coastline.
  - id: s2
    text: The Dead Sea is very salty.
queries:
  - id: q1
    text: Which sea has no coastline?
    judgements: {s1: 1, s2: 0}
"""


def test_baseline_from_another_dataset_exits_2(tmp_path, baseline):
    (tmp_path / "tiny.yaml").write_text(TINY_DATASET)
    config = yaml.safe_load((FIXTURES / "bm25_baseline.yaml").read_text())
    config["dataset"]["path"] = "tiny.yaml"
    (tmp_path / "tiny-config.yaml").write_text(yaml.safe_dump(config))
    made = rag_eval("run", tmp_path / "tiny-config.yaml", "--output", tmp_path / "tiny-out", "--no-progress",
                    cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    other = tmp_path / "tiny-out" / "bm25.json"
    done = rag_eval("run", candidate_config(tmp_path, other, "mismatch"), "--output", tmp_path / "out",
                    "--no-progress", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    (message,) = done.stderr.splitlines()
    assert message.startswith("rag-eval: error: incomparable results: different datasets (baseline ")
    assert "tiny-seas" in message and "ocean-facts" in message
    # The candidate is this run's retriever, whose results file is not written: it was named by that file's path.
    assert "candidate (this run's 'bm25', not written): ocean-facts fingerprint " in message
    assert not (tmp_path / "out").exists()
    assert "Traceback" not in done.stderr and "verdict" not in done.stdout


def test_a_config_naming_no_candidate_is_refused_by_validate_and_before_any_retrieval(tmp_path, baseline):
    """Two retrievers, neither labelled like the baseline (bm25), no regression.retriever: validate said OK, and
    run found out only after retrieving with both (now when it reads the baseline). Empty gates: validate said OK."""
    config = yaml.safe_load(candidate_config(tmp_path, baseline, "two").read_text())
    config["retrievers"][0]["label"] = "reversed"
    config["retrievers"].append({"label": "stored", "adapter": "static", "params": {"rankings": {"q-largest-ocean": []}}})
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    expected = (f"{path}: regression: several retrievers (reversed, stored) and none is labelled 'bm25' like the "
                "baseline; name one in regression.retriever")
    checked = rag_eval("validate", path, cwd=tmp_path)
    assert (checked.returncode, checked.stderr.splitlines()) == (2, [expected, "rag-eval: 1 problem found"])
    done = rag_eval("run", path, "--output", tmp_path / "out", "--no-progress", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"rag-eval: error: {expected}\n")
    assert not (tmp_path / "out").exists()
    config["regression"]["gates"] = {}
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    checked = rag_eval("validate", path, cwd=tmp_path)
    assert checked.returncode == 2
    assert (f"{path}: regression.gates: no gates given; name at least one metric, e.g. gates: {{ndcg@10: "
            "{max_drop: 0.01}}") in checked.stderr.splitlines()


def test_validate_refuses_a_baseline_made_on_another_dataset(tmp_path, baseline):
    """validate read both fingerprints and said OK; run retrieved with every retriever, then said "incomparable"."""
    (tmp_path / "tiny.yaml").write_text(TINY_DATASET)
    config = yaml.safe_load(candidate_config(tmp_path, baseline, "other").read_text())
    config["dataset"]["path"] = "tiny.yaml"
    path = tmp_path / "other.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    checked = rag_eval("validate", path, cwd=tmp_path)
    assert checked.returncode == 2
    (problem, count) = checked.stderr.splitlines()
    assert problem.startswith(f"{path}: regression.baseline: {baseline} was made on another dataset (ocean-facts "
                              "fingerprint ") and "this config's: tiny-seas fingerprint " in problem
    assert count == "rag-eval: 1 problem found"
