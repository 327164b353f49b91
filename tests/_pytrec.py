"""pytrec_eval (trec_eval compiled) as a reference, each evaluation in a fresh Python process.

trec_eval keeps global state between evaluator objects and was seen to hang (tests/test_differential.py),
so every call runs in its own process with a time limit. ``judged_only`` is trec_eval's ``-J``.
Used by tests/test_bpref.py, tests/test_judged_only.py and tests/test_holes.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

_SCRIPT = r"""
import json, sys
import pytrec_eval
job = json.load(sys.stdin)
evaluator = pytrec_eval.RelevanceEvaluator(
    job["qrels"], job["measures"], relevance_level=job["level"], judged_docs_only_flag=job["judged_only"]
)
json.dump(evaluator.evaluate(job["run"]), sys.stdout)
"""


def pytrec_values(
    qrels: dict, run: dict, measures: list[str], level: int = 1, judged_only: bool = False
) -> dict[str, dict[str, float]]:
    """pytrec_eval's per-query values ``{qid: {measure: value}}`` (queries of the run that have judgements)."""
    pytest.importorskip("pytrec_eval")
    job = json.dumps({"qrels": qrels, "run": run, "measures": measures, "level": level, "judged_only": judged_only})
    try:
        done = subprocess.run(
            [sys.executable, "-c", _SCRIPT], input=job, capture_output=True, text=True, timeout=60, check=False
        )
    except subprocess.TimeoutExpired:  # pragma: no cover - the hang this isolation guards against
        pytest.fail("pytrec_eval did not answer within 60 s")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def read_trec_qrels(path: Path) -> dict[str, dict[str, int]]:
    """A TREC qrels file as ``{qid: {doc: grade}}`` (pytrec_eval's input)."""
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        qid, _, doc, grade = line.split()
        qrels.setdefault(qid, {})[doc] = int(grade)
    return qrels


def read_trec_run(path: Path) -> dict[str, dict[str, float]]:
    """A TREC run file as ``{qid: {doc: score}}`` (the rank column dropped, as trec_eval drops it)."""
    run: dict[str, dict[str, float]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        fields = line.split()  # trec_eval ignores anything after the tag
        run.setdefault(fields[0], {})[fields[2]] = float(fields[4])
    return run
