"""pytrec_eval (trec_eval compiled) as a reference, each evaluation in a fresh process.

trec_eval keeps global state between evaluator objects and was seen to hang (tests/test_differential.py),
so no two evaluations share a process, and each has a time limit. Starting Python and importing
pytrec_eval for each of the suite's ~200 evaluations cost about 0.1 s of CPU each; so one helper
process per test process imports pytrec_eval once and forks a child for each evaluation. The child
starts from the state right after the import, never touched by an evaluation: the same isolation as
a new interpreter. ``judged_only`` is trec_eval's ``-J``. The one home of pytrec_eval in the tests.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
from pathlib import Path

import pytest

TIME_LIMIT_S = 60

# Reads one job (a JSON line) at a time from stdin; answers each with one JSON line, computed in a fork.
_SERVER = r"""
import json, os, sys
import pytrec_eval

def evaluate(line):
    job = json.loads(line)
    evaluator = pytrec_eval.RelevanceEvaluator(
        job["qrels"], job["measures"], relevance_level=job["level"], judged_docs_only_flag=job["judged_only"]
    )
    return {"values": evaluator.evaluate(job["run"])}

for line in sys.stdin.buffer:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: evaluate, answer through the pipe, leave without running any clean-up
        os.close(read_end)
        try:
            answer = json.dumps(evaluate(line))
        except BaseException as error:  # noqa: BLE001 - reported to the test, which fails with it
            answer = json.dumps({"error": f"{type(error).__name__}: {error}"})
        with os.fdopen(write_end, "w") as pipe:
            pipe.write(answer)
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        answer = pipe.read()
    _, status = os.waitpid(pid, 0)
    sys.stdout.write((answer or json.dumps({"error": f"the evaluating process ended with status {status}"})) + "\n")
    sys.stdout.flush()
"""

_server: subprocess.Popen | None = None
_lock = threading.Lock()


def _started() -> subprocess.Popen:
    global _server
    if _server is None or _server.poll() is not None:
        _server = subprocess.Popen(
            [sys.executable, "-c", _SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
            start_new_session=True,  # its own process group: a hung evaluation is stopped with it
        )
    return _server


def _stop() -> None:
    global _server
    if _server is not None:
        try:
            os.killpg(_server.pid, 9)
        except ProcessLookupError:
            pass
        _server.wait()
        _server = None


def pytrec_values(
    qrels: dict, run: dict, measures: list[str], level: int = 1, judged_only: bool = False
) -> dict[str, dict[str, float]]:
    """pytrec_eval's per-query values ``{qid: {measure: value}}`` (queries of the run that have judgements)."""
    pytest.importorskip("pytrec_eval")
    job = json.dumps({"qrels": qrels, "run": run, "measures": list(measures), "level": level, "judged_only": judged_only})
    with _lock:
        server = _started()
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(job + "\n")
        server.stdin.flush()
        ready, _, _ = select.select([server.stdout], [], [], TIME_LIMIT_S)
        if not ready:  # pragma: no cover - the hang this isolation guards against
            _stop()
            pytest.fail(f"pytrec_eval did not answer within {TIME_LIMIT_S} s")
        line = server.stdout.readline()
    if not line:  # pragma: no cover - the helper itself died
        _stop()
        pytest.fail("the pytrec_eval helper process ended without answering")
    answer = json.loads(line)
    assert "error" not in answer, answer["error"]
    return answer["values"]


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


if hasattr(os, "register_at_fork"):  # a test process forked from this one must start its own helper
    os.register_at_fork(after_in_child=lambda: globals().update(_server=None))
