"""`rag-eval compare` against bad input, table-driven.

Every case must end with exit code 2, exactly one line on stderr, no traceback, and a
message naming the file (or option) and the place: the field path inside a results
file, the option, or what the path is. Inputs are never modified.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from regression_fixtures import helpers

from rag_eval.cli import main

CORRUPTED = "this file was edited or corrupted: regenerate it with rag-eval run"
# The wording of the resampling limit, shared by --resamples and regression.resamples.
RESAMPLES_RULE = "must be from 100 to 1,000,000 (more does not change the printed digits, and costs memory)"



PER_QUERY = {
    "q1": {"ndcg@10": 1.0, "recall@10": 1.0},
    "q2": {"ndcg@10": 0.5, "recall@10": 0.5},
    "q3": {"ndcg@10": 0.25, "recall@10": 0.0},
}
RANKINGS = {"q1": [["d1", 2.0, 1], ["d2", 1.0, None]], "q2": [["d3", 1.0, 0]], "q3": []}


@pytest.fixture(autouse=True)
def _no_job_summary(monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def good_document() -> dict[str, Any]:
    return helpers.results_document(PER_QUERY, label="bm25", rankings=RANKINGS)


def write(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document))
    return path


def edited(edit: Callable[[dict[str, Any]], None]) -> Callable[[Path], str]:
    """A case whose candidate is the good document changed by ``edit``."""

    def make(tmp: Path) -> str:
        document = copy.deepcopy(good_document())
        edit(document)
        write(tmp / "cand.json", document)
        return "cand.json"

    return make


def text(content: str | bytes) -> Callable[[Path], str]:
    def make(tmp: Path) -> str:
        target = tmp / "cand.json"
        target.write_bytes(content if isinstance(content, bytes) else content.encode())
        return "cand.json"

    return make


def setitem(*path_and_value: Any) -> Callable[[dict[str, Any]], None]:
    *path, value = path_and_value

    def edit(document: dict[str, Any]) -> None:
        node = document
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return edit


def fifo(tmp: Path) -> str:
    os.mkfifo(tmp / "cand.json")
    return "cand.json"


def folder(tmp: Path) -> str:
    (tmp / "cand.json").mkdir()
    return "cand.json"


def huge(tmp: Path) -> str:
    with open(tmp / "cand.json", "wb") as handle:  # sparse: 600 MiB on paper, nothing on disk
        handle.truncate(600 << 20)
    return "cand.json"


def symlink_loop(tmp: Path) -> str:
    os.symlink(tmp / "cand.json", tmp / "cand.json")
    return "cand.json"


def missing(tmp: Path) -> str:
    return "cand.json"


def _drop_aggregate(metric: str) -> Callable[[dict[str, Any]], None]:
    def edit(document: dict[str, Any]) -> None:
        del document["results"]["aggregate"][metric]

    return edit


def _nan_literal(tmp: Path) -> str:
    raw = json.dumps(good_document()).replace('"aggregate": {"ndcg@10": 0.5833333333333334', '"aggregate": {"ndcg@10": NaN')
    assert "NaN" in raw
    (tmp / "cand.json").write_text(raw)
    return "cand.json"


def _infinity_literal(tmp: Path) -> str:
    raw = json.dumps(good_document()).replace('["d1", 2.0, 1]', '["d1", Infinity, 1]')
    assert "Infinity" in raw
    (tmp / "cand.json").write_text(raw)
    return "cand.json"


# (id, how the candidate is made, extra arguments, what stderr must contain)
FILE_CASES = [
    ("malformed-json", text('{"kind": "rag_eval.results",\n  "schema_version": 1,\n  oops}'), [],
     "cand.json: line 3, column 3: not valid JSON"),
    ("empty-file", text(""), [], "cand.json: line 1, column 1: not valid JSON"),
    ("top-level-array", text("[1, 2]"), [], "cand.json: not a rag_eval results file: the top level is an array"),
    ("kind-wrong", edited(setitem("kind", "rag_eval.report")), [],
     "cand.json: not a rag_eval results file (kind is 'rag_eval.report'"),
    ("schema-version-99", edited(setitem("schema_version", 99)), [],
     "cand.json: schema_version: 99 is not supported (this rag_eval reads schema_version 1)"),
    ("schema-version-text", edited(setitem("schema_version", "1")), [], "cand.json: schema_version: '1' is not supported"),
    ("per-query-entry-list", edited(setitem("results", "per_query", "q2", [0.5, 0.5])), [],
     "cand.json: results.per_query.q2: expected an object, got an array"),
    ("per-query-value-text", edited(setitem("results", "per_query", "q2", "ndcg@10", "0.5")), [],
     "cand.json: results.per_query.q2.ndcg@10: expected a number, got the string '0.5'"),
    ("aggregate-list", edited(setitem("results", "aggregate", [0.5, 0.5])), [],
     "cand.json: results.aggregate: expected an object, got an array"),
    ("aggregate-missing-metric", edited(_drop_aggregate("recall@10")), [],
     "cand.json: results.aggregate: no value for recall@10"),
    ("dataset-list", edited(setitem("dataset", ["hand-made"])), [], "cand.json: dataset: expected an object, got an array"),
    ("rankings-of-ints", edited(setitem("rankings", "q1", [[1, 2.0, 1]])), [],
     "cand.json: rankings.q1[0][0]: expected a string, got the number 1"),
    ("ranking-entry-short", edited(setitem("rankings", "q1", [["d1", 2.0]])), [],
     "cand.json: rankings.q1[0]: too short; expected [doc_id, score, grade or null]"),
    ("retriever-string", edited(setitem("retriever", "bm25")), [],
     "cand.json: retriever: expected an object, got the string 'bm25'"),
    ("metrics-not-canonical", edited(setitem("results", "metrics", ["ndcg_cut_10", "recall@10"])), [],
     "cand.json: results.metrics[0]: 'ndcg_cut_10' is not a canonical metric name; results files hold 'ndcg@10'"),
    ("odd-query-id-path", edited(setitem("results", "per_query", "q 2.x", None)), [],
     'cand.json: results.per_query["q 2.x"]: expected an object, got null'),
    ("nan-literal", _nan_literal, [], "cand.json: results.aggregate.ndcg@10: NaN is not JSON"),
    ("infinity-literal", _infinity_literal, [], "cand.json: rankings.q1[0][1]: Infinity is not JSON"),
    ("not-utf8", text(b'{"kind": "\xff"}'), [], "cand.json: line 1, column 11: not UTF-8 text"),
    ("deep-nesting", text("[" * 100_000 + "]" * 100_000), [], "cand.json: arrays or objects nested too deeply"),
    # Numbers that do not hold together: compare would trust an edited file (finding: PASS with a
    # per-query nDCG of 5.0, or with the aggregate set to 0, or with a query silently nulled out).
    ("per-query-above-1", edited(setitem("results", "per_query", "q2", "ndcg@10", 5.0)), [],
     f"cand.json: results.per_query.q2.ndcg@10: 5.0 is impossible: every ndcg@10 lies in [0, 1]; {CORRUPTED}"),
    ("per-query-negative", edited(setitem("results", "per_query", "q3", "recall@10", -0.5)), [],
     f"cand.json: results.per_query.q3.recall@10: -0.5 is impossible: every recall@10 lies in [0, 1]; {CORRUPTED}"),
    ("aggregate-not-the-mean", edited(setitem("results", "aggregate", "ndcg@10", 0.0)), [],
     "cand.json: results.aggregate.ndcg@10: 0.0 is not the mean of the per-query values, 0.5833333333333334; "
     + CORRUPTED),
    ("aggregate-above-1", edited(setitem("results", "aggregate", "recall@10", 1.5)), [],
     f"cand.json: results.aggregate.recall@10: 1.5 is impossible: every recall@10 lies in [0, 1]; {CORRUPTED}"),
    ("aggregate-null", edited(setitem("results", "aggregate", "recall@10", None)), [],
     f"cand.json: results.aggregate.recall@10: null is not the mean of the per-query values, 0.5; {CORRUPTED}"),
    ("null-not-left-out", edited(setitem("results", "per_query", "q2", "ndcg@10", None)), [],
     "cand.json: results.per_query.q2.ndcg@10: is null but the query is not listed in results.left_out.ndcg@10; "
     f"only a query left out of the mean has no value; {CORRUPTED}"),
    ("left-out-with-a-value", edited(setitem("results", "left_out", "ndcg@10", ["q1"])), [],
     f"cand.json: results.left_out.ndcg@10[0]: 'q1' is listed as left out of the mean but its ndcg@10 is 1.0, not "
     f"null; {CORRUPTED}"),
    ("left-out-unknown-query", edited(setitem("results", "left_out", "recall@10", ["q9"])), [],
     f"cand.json: results.left_out.recall@10[0]: 'q9' is not a query of results.per_query; {CORRUPTED}"),
    ("left-out-unknown-metric", edited(setitem("results", "left_out", "mrr@10", [])), [],
     f"cand.json: results.left_out.mrr@10: mrr@10 is not among results.metrics; {CORRUPTED}"),
    ("aggregation-unknown", edited(setitem("results", "options", "aggregation", "median")), [],
     f"cand.json: results.options.aggregation: 'median' is neither 'macro' nor 'micro'; {CORRUPTED}"),
    ("missing-file", missing, [], "cand.json: no such file; expected a results file"),
    ("folder", folder, [], "cand.json: is a folder, expected a results file"),
    ("fifo", fifo, [], "cand.json: is a FIFO (named pipe), expected a results file"),
    ("huge", huge, [], "cand.json: is 600.0 MiB, over the 512.0 MiB limit for a results file"),
    ("symlink-loop", symlink_loop, [], "cand.json: cannot be opened (a symbolic link loop)"),
]

def GOOD(tmp: Path) -> str:
    write(tmp / "cand.json", good_document())
    return "cand.json"

OPTION_CASES = [
    ("report-is-candidate", GOOD, ["--report", "cand.json"],
     "--report cand.json: is the candidate file cand.json, which would be replaced by the output"),
    ("summary-is-baseline", GOOD, ["--summary", "base.json"],
     "--summary base.json: is the baseline file base.json, which would be appended to"),
    ("report-is-candidate-other-spelling", GOOD, ["--report", "./sub/../cand.json"], "is the candidate file cand.json"),
    ("report-is-folder", GOOD, ["--report", "."], "--report .: is a folder; give the path of a file to write"),
    ("report-under-a-file", GOOD, ["--report", "base.json/report.md"], "--report base.json/report.md: base.json is not a folder"),
    ("report-unwritable", GOOD, ["--report", "/proc/rag-eval-report.md"],
     "--report /proc/rag-eval-report.md: cannot write there"),
    ("summary-fifo", lambda tmp: (os.mkfifo(tmp / "summary.md"), GOOD(tmp))[1], ["--summary", "summary.md"],
     "--summary summary.md: is a FIFO (named pipe)"),
    ("summary-full-device", GOOD, ["--summary", "/dev/full"], "/dev/full: cannot write the summary (No space left on device)"),
    ("gate-bad-option", GOOD, ["--gate", "ndcg@10:maxdrop=0.1"],
     "gate 'ndcg@10:maxdrop=0.1': expected METRIC:max_drop=0.01[,alpha=0.05], got 'maxdrop=0.1'"),
    ("gate-unknown-metric", GOOD, ["--gate", "ndgc@10"], "gate 'ndgc@10': "),
    ("gate-alpha", GOOD, ["--gate", "ndcg@10:alpha=2"], "gate 'ndcg@10:alpha=2': alpha must be between 0 and 1"),
    ("gate-negative-drop", GOOD, ["--gate", "ndcg@10:max_drop=-1"], "gate 'ndcg@10:max_drop=-1': max_drop must be a number >= 0"),
    ("gate-drop-not-number", GOOD, ["--gate", "ndcg@10:max_drop=lots"], "gate 'ndcg@10:max_drop=lots': max_drop must be a number"),
    ("gate-metric-absent", GOOD, ["--gate", "mrr@10"], "incomparable results: base.json has no mrr@10"),
    ("resamples-huge", GOOD, ["--resamples", str(10**12)],
     f"--resamples: {RESAMPLES_RULE} (got 1000000000000)"),
    ("resamples-few", GOOD, ["--resamples", "5"], f"--resamples: {RESAMPLES_RULE} (got 5)"),
    ("resamples-text", GOOD, ["--resamples", "many"], "argument --resamples: expected a whole number, got 'many'"),
    ("seed-negative", GOOD, ["--seed", "-1"], "--seed: must be >= 0 (numpy refuses negative seeds) (got -1)"),
    ("confidence-above-1", GOOD, ["--confidence", "1.5"], "--confidence: must be between 0 and 1 (exclusive) (got 1.5)"),
    ("confidence-zero", GOOD, ["--confidence", "0"], "--confidence: must be between 0 and 1 (exclusive) (got 0.0)"),
    ("confidence-nan", GOOD, ["--confidence", "nan"], "--confidence: must be between 0 and 1 (exclusive) (got nan)"),
    ("unknown-option", GOOD, ["--gates", "ndcg@10"], "unrecognized arguments: --gates"),
]


@pytest.mark.parametrize("make, extra, message", [c[1:] for c in FILE_CASES + OPTION_CASES],
                         ids=[c[0] for c in FILE_CASES + OPTION_CASES])
def test_bad_input_exits_2_with_one_line(tmp_path, monkeypatch, capsys, make, extra, message):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "base.json", good_document())
    (tmp_path / "sub").mkdir()
    candidate = make(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file() and not p.is_fifo()}
    code = main(["compare", "base.json", candidate, "--resamples", "200", *extra])
    captured = capsys.readouterr()
    assert code == 2, captured
    assert len(captured.err.splitlines()) == 1, captured.err
    assert "Traceback" not in captured.err
    assert message in captured.err, captured.err
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file() and not p.is_fifo()}
    assert {name: after.get(name) for name in before} == before  # no input was touched


def test_table_is_wide_enough():
    assert len(FILE_CASES) + len(OPTION_CASES) >= 40
    assert len({c[0] for c in FILE_CASES + OPTION_CASES}) == len(FILE_CASES) + len(OPTION_CASES)


@pytest.mark.parametrize("target", ["/dev/full"])
def test_unwritable_stdout_is_one_line_and_exit_2(tmp_path, target):
    write(tmp_path / "base.json", good_document())
    with open(target, "w") as stdout:
        done = subprocess.run(
            [sys.executable, "-m", "rag_eval.cli", "compare", "base.json", "base.json", "--resamples", "200"],
            cwd=tmp_path, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120, check=False,
            env={k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"},
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == ["rag-eval: error: cannot write to standard output (No space left on device)"]


def test_a_summary_from_the_environment_is_named_as_such(tmp_path, monkeypatch, capsys):
    """The job summary given by $GITHUB_STEP_SUMMARY (no --summary flag) was named "--summary" in the message."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "base.json", good_document())
    GOOD(tmp_path)
    (tmp_path / "sub").mkdir()
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", "sub")
    assert main(["compare", "base.json", "cand.json", "--resamples", "200"]) == 2
    assert capsys.readouterr().err == (
        "rag-eval: error: $GITHUB_STEP_SUMMARY sub: is a folder; give the path of a file to write\n")
