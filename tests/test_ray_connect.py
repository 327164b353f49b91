"""Joining a Ray cluster: an address where no Ray server answers fails in one line within seconds, and a run is quiet.

Before (issue 20): an address that was not a Ray server made ``ray.init`` retry for minutes, printing a
C++ warning every few seconds; a normal Ray run printed about 15 of Ray's INFO and WARNING lines.
The address tests run the connection in a child process, so that a hang fails the test (and never
starts Ray in the test process).
"""

from __future__ import annotations

import csv
import importlib.util
import json
import re
import socket
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import _models
import pytest
import yaml
from conftest import skip_module_without

skip_module_without("ray", "Ray is not installed (pip install '.[ray]')")
# Each test starts Ray, or a run that would start it: beside the shared cluster's tests, never in parallel with them.
pytestmark = pytest.mark.ray_state

from rag_eval._execution.ray_cluster import probe  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

CONNECT = """
import json, sys, time
from rag_eval._data.config.execution import ExecutionSpec
from rag_eval._execution.ray_cluster import connect
import ray  # noqa: F401 (its import, seconds on a busy machine, is not the wait the tests bound)
started = time.monotonic()
try:
    connect(ExecutionSpec(engine="ray", address=sys.argv[1]))
    print(json.dumps({"error": None}))
except Exception as error:
    print(json.dumps({"error": f"{type(error).__name__}: {error}", "seconds": time.monotonic() - started}))
"""


def connect_in_child(address: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", CONNECT, address], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    return {**json.loads(result.stdout.splitlines()[-1]), "stderr": result.stderr}


class _NotRay(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.recv(1024)
        self.request.sendall(b"HTTP/1.0 400 Bad Request\r\nContent-Length: 0\r\n\r\n")


@pytest.fixture
def web_server() -> Iterator[int]:
    """A server that answers like a web server (not gRPC) on every interface; its port."""
    server = socketserver.ThreadingTCPServer(("0.0.0.0", 0), _NotRay)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("scheme", ["", "ray://"])
def test_an_address_that_is_not_a_ray_server_fails_in_one_line_within_seconds(web_server, scheme):
    done = connect_in_child(f"{scheme}127.0.0.1:{web_server}")
    assert done["error"].startswith(f"RetrieverError: execution.address '{scheme}127.0.0.1:{web_server}': cannot reach")
    assert f":{web_server} answered, but not as a Ray server does (gRPC)" in done["error"]
    assert "\n" not in done["error"] and done["seconds"] < 10
    assert done["stderr"] == ""  # not a line of Ray's log


def test_a_closed_port_fails_at_once():
    with socket.socket() as placeholder:
        placeholder.bind(("0.0.0.0", 0))
        port = placeholder.getsockname()[1]
    done = connect_in_child(f"127.0.0.1:{port}")
    assert "cannot reach a Ray cluster" in done["error"] and "Connection refused" in done["error"]
    assert done["seconds"] < 10 and done["stderr"] == ""


def test_a_ray_run_prints_its_result_lines_and_none_of_rays_log(tmp_path):
    """A local cluster started for the run: Ray's INFO and WARNING lines, its workers' output and Ray Data's
    progress stay out of the terminal (they are in Ray's session logs). The passages of a YAML query set
    go to the workers from the driver, are encoded there, and give the numbers of a local run."""
    settings = {
        "name": "quiet", "dataset": {"path": str(REPO / "datasets" / "ocean_facts.yaml")},
        "retrievers": [{"label": "dense", "adapter": "dense", "params": {
            "model": str(_models.tiny_bi_encoder()), "device": "cpu", "show_progress": False}}],
        "metrics": ["ndcg@4"], "reuse_rankings": False, "cache_dir": str(tmp_path / "cache"), "output": "out",
        "execution": {"engine": "ray", "address": "local", "actors": 1},
    }
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump(settings))
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "rag_eval", "run", str(config), "--no-progress"],
        capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert [line.split("\t")[0] for line in result.stdout.splitlines()] == ["dense", f"report: {tmp_path / 'out' / 'report.md'}"]
    # Ray's Python log lines ("<time>\tINFO <file>:<line> -- ..."), its C++ ones below error ("[<time> I <pid> ...]"),
    # and what workers print, relayed with their name ("(MapWorker(...) pid=...)").
    ray_log = re.compile(r"\s(DEBUG|INFO|WARNING)\s+\S+\.py:\d+ -- |^\[\S+ \S+ [DIW] \d+ \d+\]|\(\w+.* pid=\d+\)")
    noisy = [line for line in result.stderr.splitlines() if ray_log.search(line)]
    assert noisy == [], f"{len(noisy)} lines of Ray's log in {time.monotonic() - started:.0f} s:\n" + "\n".join(noisy)

    from rag_eval._core.trec import format_run
    from rag_eval._data.config import load_config
    from rag_eval._run.execute import execute

    local_config = tmp_path / "local" / "run.yaml"
    local_config.parent.mkdir()
    local_config.write_text(yaml.safe_dump({**settings, "execution": {"engine": "local"}, "cache_dir": str(tmp_path / "local")}))
    (local,) = execute(load_config(local_config), progress=False).outcomes
    with open(tmp_path / "out" / "per-query.csv", newline="", encoding="utf-8") as table:
        on_ray = {row["qid"]: float(row["ndcg@4"]) for row in csv.DictReader(table)}
    assert on_ray == {qid: values["ndcg@4"] for qid, values in local.results.per_query.items()}
    assert len(on_ray) >= 10
    # Same documents, same order, same float32 score bits as the local run.
    assert (tmp_path / "out" / "dense.run").read_text(encoding="utf-8") == format_run(local.ranking, "dense")


def test_the_probe_takes_a_ray_server_for_one(ray_cluster):
    host, _, port = ray_cluster.get_runtime_context().gcs_address.rpartition(":")
    assert probe(host, int(port)) is None


def test_without_ray_installed_validate_and_run_both_refuse_engine_ray(tmp_path, monkeypatch, capsys):
    """Issue 20, item 17: `validate` said OK for `engine: ray` where Ray was not installed, while `run` failed."""
    from rag_eval.cli import main

    real_find_spec = importlib.util.find_spec

    def no_ray(name, *args, **kwargs):
        return None if name == "ray" or name.startswith("ray.") else real_find_spec(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", no_ray)
    (tmp_path / "set.yaml").write_text(yaml.safe_dump({
        "corpus": [{"id": "d1", "text": "the pacific ocean"}],
        "queries": [{"id": "q1", "text": "ocean", "judgements": {"d1": 1}}],
    }))
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({
        "dataset": {"path": "set.yaml"}, "metrics": ["ndcg@10"], "execution": {"engine": "ray"},
        "retrievers": [{"label": "s", "adapter": "static", "params": {"rankings": {"q1": ["d1"]}}}],
        "output": str(tmp_path / "out"),
    }))
    fix = 'execution.engine: ray needs Ray, which is not installed; pip install ".[ray]" in your rag_eval checkout, or use engine: local'
    assert main(["validate", str(config)]) == 2
    assert f"{config}: {fix}" in capsys.readouterr().err
    assert main(["run", str(config), "--no-progress"]) == 2  # run refuses it too, before anything runs
    assert capsys.readouterr().err.strip() == f"rag-eval: error: {config}: {fix}"
    assert not (tmp_path / "out").exists()
    import pytest

    from rag_eval._core.errors import RetrieverError
    from rag_eval._data.config.execution import ExecutionSpec
    from rag_eval._execution.ray_cluster import connect

    with pytest.raises(RetrieverError, match="engine: ray needs Ray, which is not installed"):
        connect(ExecutionSpec(engine="ray"))
