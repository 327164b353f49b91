"""``adapter: http`` against a real HTTP server on 127.0.0.1 (http.server, started by the test).

The server runs a word-overlap search over five passages (a hit's score is the number of distinct
query words the passage holds), so every expected ranking below is counted by hand. It also
answers batches, fails on purpose (503/429 then success, 400, 500), sleeps past the timeout,
answers garbage, checks a header, records how many requests were in flight at once, and serves
chunks of a small documents dataset with doc_id/start/end metadata (one of them stale).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
import yaml
from llm_server import QuietHTTPServer

from rag_eval._core.errors import RetrieverError
from rag_eval._retrievers import registry
from rag_eval.cli import main

PASSAGES = {
    "p1": "The Pacific Ocean is the largest ocean.",
    "p2": "The Atlantic Ocean separates Europe and America.",
    "p3": "The Sahara is the largest hot desert.",
    "p4": "Coral reefs grow in warm shallow water.",
    "p5": "The Arctic Ocean is the smallest ocean.",
}
QUERIES = {"q1": "largest ocean", "q2": "warm water coral", "q3": "the arctic ocean"}
# Overlap counted by hand (distinct query words in the passage); ties ranked by id descending (trec_eval's rule):
#   q1 {largest, ocean}:      p1 2, p2 1, p3 1, p5 1         -> p1, p5, p3, p2
#   q2 {warm, water, coral}:  p4 3                           -> p4
#   q3 {the, arctic, ocean}:  p5 3, p1 2, p2 2, p3 1         -> p5, p2, p1, p3
EXPECTED = {
    "q1": [("p1", 2.0), ("p5", 1.0), ("p3", 1.0), ("p2", 1.0)],
    "q2": [("p4", 3.0)],
    "q3": [("p5", 3.0), ("p2", 2.0), ("p1", 2.0), ("p3", 1.0)],
}
DOCUMENTS = {
    "a.md": "The Pacific Ocean is the largest ocean. The Mariana Trench is the deepest place.",
    "b.md": "Coral reefs grow in warm water. Whales are large mammals.",
}
DOC_QUERIES = {
    "qa": ("largest ocean", "a.md", "The Pacific Ocean is the largest ocean."),
    "qb": ("deepest trench", "a.md", "The Mariana Trench is the deepest place."),
    "qc": ("warm water coral", "b.md", "Coral reefs grow in warm water."),
}
# The service's copy of b.md's last sentence was edited after it indexed it: a stale chunk.
STALE = ("Whales are large mammals.", "Whales are huge mammals.")


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def overlap_search(query: str, k: int) -> list[dict[str, Any]]:
    scored = [(len(words(query) & words(text)), pid, text) for pid, text in PASSAGES.items()]
    ranked = sorted((item for item in scored if item[0] > 0), key=lambda item: (-item[0], item[1]))[:k]
    return [{"id": pid, "score": score, "text": text} for score, pid, text in ranked]


def sentence_chunks() -> list[dict[str, Any]]:
    chunks = []
    for doc, text in DOCUMENTS.items():
        for match in re.finditer(r"[^.]+\.", text):
            start = match.start() + len(match.group(0)) - len(match.group(0).lstrip())
            sentence = text[start : match.end()]
            shown = STALE[1] if sentence == STALE[0] else sentence
            chunks.append({"text": shown, "meta": {"doc_id": doc, "start": start, "end": match.end()}})
    return chunks


class State:
    """What the server was asked, and how it should misbehave."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.requests: dict[str, int] = {}
        self.bodies: list[Any] = []
        self.headers: list[dict[str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.delay = 0.0
        self.fail_first = 0
        self.fail_status = 503


class Handler(BaseHTTPRequestHandler):
    state: State

    def log_message(self, *args: Any) -> None:  # quiet
        return None

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        state = self.state
        parts = urllib.parse.urlsplit(self.path)
        route = parts.path
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        with state.lock:
            state.requests[route] = state.requests.get(route, 0) + 1
            count = state.requests[route]
            state.bodies.append(body)
            state.headers.append(dict(self.headers))
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
        try:
            time.sleep(state.delay)
        finally:
            # Counted out before the answer is written: once the client has its answer it may send the next
            # request, which must not overlap this one's count (under load the write can lag behind).
            with state.lock:
                state.in_flight -= 1
        self._answer(route, body, urllib.parse.parse_qs(parts.query), count)

    def _answer(self, route: str, body: Any, query: dict[str, list[str]], count: int) -> None:
        if route == "/search" and self.command == "GET":
            return self._json(200, {"hits": overlap_search(query["q"][0], int(query["k"][0]))})
        if route == "/search":
            return self._json(200, {"hits": overlap_search(body["query"], body["top_k"])})
        if route == "/nested":
            hits = overlap_search(body["q"], body["size"])
            return self._json(200, {"data": {"results": [{"doc": {"pid": h["id"]}, "relevance": h["score"]} for h in hits]}})
        if route == "/batch":
            lists = [overlap_search(text, body["top_k"]) for text in body["queries"]]
            return self._json(200, {"results": [{"hits": hits} for hits in lists]})
        if route == "/batch-lists":
            return self._json(200, {"results": [overlap_search(text, body["top_k"]) for text in body["queries"]]})
        if route == "/flaky":
            if count <= self.state.fail_first:
                return self._send(self.state.fail_status, b"busy, try later", "text/plain")
            return self._json(200, {"hits": overlap_search(body["query"], body["top_k"])})
        if route == "/shuffled":  # every hit, the best one moved last: not best first, and more than top_k
            hits = overlap_search(body["query"], 10)
            return self._json(200, {"hits": hits[1:] + hits[:1]})
        if route == "/distance":  # best first, lower is better
            hits = overlap_search(body["query"], body["top_k"])
            return self._json(200, {"hits": [dict(hit, score=10 - hit["score"]) for hit in hits]})
        if route == "/ascending":  # similarities, worst first
            return self._json(200, {"hits": overlap_search(body["query"], body["top_k"])[::-1]})
        if route == "/empty":
            return self._json(200, {"hits": []})
        if route == "/bad":
            return self._json(400, {"error": "unknown field 'query'"})
        if route == "/slow":
            time.sleep(1.5)
            return self._json(200, {"hits": []})
        if route == "/garbage":
            return self._send(200, b"<html>not json</html>", "text/html")
        if route == "/noid":
            return self._json(200, {"hits": [{"score": 1.0, "text": "x"}]})
        if route == "/auth":
            if self.headers.get("X-Api-Key") != os.environ.get("RAG_EVAL_TEST_KEY"):
                return self._json(401, {"error": "bad key"})
            return self._json(200, {"hits": overlap_search(body["query"], body["top_k"])})
        if route == "/docs":
            scored = [(len(words(body["query"]) & words(c["text"])), c) for c in sentence_chunks()]
            scored.sort(key=lambda item: -item[0])
            return self._json(200, {"hits": [{"score": s, "text": c["text"], "metadata": c["meta"]} for s, c in scored]})
        return self._json(404, {"error": f"no route {route}"})

    def _json(self, status: int, payload: Any) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json")

    def _send(self, status: int, data: bytes, kind: str) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout): nothing to answer
            pass


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, State]]:
    """A real HTTP server on 127.0.0.1 (a free port), in a thread of this process."""
    state = State()
    handler = type("BoundHandler", (Handler,), {"state": state})
    httpd = QuietHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", state
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def service(server: tuple[str, State]) -> tuple[str, State]:
    server[1].reset()
    return server


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("http-data")
    passages = {
        "name": "overlap",
        "corpus": [{"id": pid, "text": text} for pid, text in PASSAGES.items()],
        "queries": [
            {"id": "q1", "text": QUERIES["q1"], "judgements": {"p1": 2, "p5": 0}},
            {"id": "q2", "text": QUERIES["q2"], "judgements": {"p4": 1}},
            {"id": "q3", "text": QUERIES["q3"], "judgements": {"p5": 1}},
        ],
    }
    documents = {
        "name": "overlap-docs",
        "documents": [{"id": doc, "text": text} for doc, text in DOCUMENTS.items()],
        "queries": [{"id": qid, "text": text, "evidence": [{"doc": doc, "quote": quote}]}
                    for qid, (text, doc, quote) in DOC_QUERIES.items()],
    }
    (folder / "passages.yaml").write_text(yaml.safe_dump(passages, sort_keys=False))
    (folder / "documents.yaml").write_text(yaml.safe_dump(documents, sort_keys=False))
    return {"passages": folder / "passages.yaml", "documents": folder / "documents.yaml"}


def write_config(folder: Path, dataset: Path, params: dict[str, Any], top_k: int = 5,
                 metrics: tuple[str, ...] = ("ndcg@3", "recall@5")) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "name": "http-test",
        "dataset": {"path": str(dataset)},
        "retrievers": [{"label": "service", "adapter": "http", "params": params}],
        "top_k": top_k,
        "metrics": list(metrics),
        "output": "out",
    }
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def run_ok(folder: Path, dataset: Path, params: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    assert main(["run", str(write_config(folder, dataset, params, **kwargs)), "--no-progress"]) == 0
    return json.loads((folder / "out" / "service.json").read_text())


def ranked(document: dict[str, Any]) -> dict[str, list[tuple[str, float]]]:
    return {qid: [(row[0], row[1]) for row in rows] for qid, rows in document["rankings"].items()}


def run_fails(folder: Path, dataset: Path, params: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> str:
    """Exit 2, exactly one line on stderr, no traceback, no output folder; the line."""
    config = write_config(folder, dataset, params)
    capsys.readouterr()
    assert main(["run", str(config), "--no-progress"]) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert captured.out == "" and len(lines) == 1 and "Traceback" not in captured.err, captured.err
    assert not (folder / "out").exists()
    return lines[0]


PASSAGE_MAP = {"map": {"passage_id": "@id"}}


# --------------------------------------------------------------------------- rankings


def test_single_requests_rank_as_counted_by_hand(tmp_path, service, datasets):
    url, state = service
    document = run_ok(tmp_path, datasets["passages"], {"url": f"{url}/search", **PASSAGE_MAP})
    assert ranked(document) == EXPECTED
    assert state.requests == {"/search": 3}
    assert sorted(state.bodies, key=lambda b: b["query"]) == sorted(
        [{"query": text, "top_k": 5} for text in QUERIES.values()], key=lambda b: b["query"]
    )
    # recall@5: every judged relevant passage is found (q1's p1, q2's p4, q3's p5); ndcg@3 of q1 = 1 (p1 first).
    per_query = document["results"]["per_query"]
    assert {q: per_query[q]["recall@5"] for q in per_query} == {"q1": 1.0, "q2": 1.0, "q3": 1.0}
    description = document["retriever"]["description"]
    assert description["endpoint"] == f"{url}/search" and description["requests"] == 3
    assert description["mapping"]["mapped"] == 9 and description["latency"]["queries"] == 3


def test_get_with_url_template_and_nested_paths(tmp_path, service, datasets):
    url, state = service
    got = run_ok(tmp_path / "get", datasets["passages"], {"url": url + "/search?q={query}&k={top_k}", "method": "GET",
                                                          **PASSAGE_MAP})
    assert ranked(got) == EXPECTED and state.bodies == [None, None, None]
    nested = run_ok(tmp_path / "nested", datasets["passages"], {
        "url": f"{url}/nested", "body": {"q": "{query}", "size": "{top_k}"}, "hits": "data.results",
        "fields": {"id": "doc.pid", "score": "relevance", "text": None, "metadata": None}, **PASSAGE_MAP,
    })
    assert ranked(nested) == EXPECTED


@pytest.mark.parametrize(("route", "hits"), [("/batch", "results.*.hits"), ("/batch-lists", "results")])
def test_batched_requests(tmp_path, service, datasets, route, hits):
    url, state = service
    params = {"url": url + route, "batch_size": 2, "hits": hits, **PASSAGE_MAP}
    document = run_ok(tmp_path, datasets["passages"], params)
    assert ranked(document) == EXPECTED
    # 3 queries in batches of 2: two requests, carrying 2 and 1 queries (the default body {queries, top_k}).
    assert state.requests == {route: 2}
    assert sorted(len(body["queries"]) for body in state.bodies) == [1, 2]
    latency = document["retriever"]["description"]["latency"]
    assert latency["queries"] == 3


def test_documents_map_to_evidence_spans_and_a_stale_chunk_is_counted(tmp_path, service, datasets):
    url, _ = service
    params = {"url": f"{url}/docs", "fields": {"id": None}, "map": {"doc_id": "doc_id", "start": "start", "end": "end"}}
    document = run_ok(tmp_path, datasets["documents"], params, top_k=4,
                      metrics=("evidence_recall@1", "doc_ndcg@1"))
    rankings = ranked(document)
    for qid, (_, doc, quote) in DOC_QUERIES.items():
        start = DOCUMENTS[doc].index(quote)
        assert rankings[qid][0] == (f"{doc}#{start}-{start + len(quote)}", 2.0 if qid != "qc" else 3.0), qid
    mapping = document["retriever"]["description"]["mapping"]
    # 4 chunks per query (all of them); b.md's edited sentence is stale every time: 3 hits mapped to nothing.
    assert mapping["hits"] == 12 and mapping["stale"] == 3 and mapping["mapped"] == 9
    per_query = document["results"]["per_query"]
    assert {q: per_query[q]["evidence_recall@1"] for q in per_query} == {"qa": 1.0, "qb": 1.0, "qc": 1.0}


# --------------------------------------------------------------------------- retries, concurrency, headers


@pytest.mark.parametrize("status", [503, 429])
def test_retried_after_two_failures_then_success(tmp_path, service, datasets, status):
    url, state = service
    state.fail_first, state.fail_status = 2, status
    params = {"url": f"{url}/flaky", "retries": 2, "backoff": 0.01, "concurrency": 1, **PASSAGE_MAP}
    document = run_ok(tmp_path, datasets["passages"], params)
    assert ranked(document) == EXPECTED
    assert state.requests == {"/flaky": 5}  # q1: 503, 503, 200; q2 and q3: 200
    description = document["retriever"]["description"]
    assert description["requests"] == 5 and description["retried_requests"] == 1


def test_retries_run_out_and_4xx_is_never_retried(tmp_path, service, datasets, capsys):
    url, state = service
    state.fail_first = 10
    params = {"url": f"{url}/flaky", "retries": 2, "backoff": 0.01, "concurrency": 1, **PASSAGE_MAP}
    line = run_fails(tmp_path / "a", datasets["passages"], params, capsys)
    assert line.endswith(
        f"http: query 'q1': POST {url}/flaky answered 503 after 3 tries: 'busy, try later'; check the service"
    ), line
    assert state.requests == {"/flaky": 3}
    state.reset()
    line = run_fails(tmp_path / "b", datasets["passages"], {"url": f"{url}/bad", "concurrency": 1, **PASSAGE_MAP}, capsys)
    assert line.endswith(
        f"http: query 'q1': POST {url}/bad answered 400: '{{\"error\": \"unknown field \\'query\\'\"}}'; check "
        "params.body, params.headers and params.url against the service's API"
    ), line
    assert state.requests == {"/bad": 1}  # a 400 is not retried


def test_concurrency_is_honoured_and_latency_measured(service):
    url, state = service
    state.delay = 0.1
    queries = {f"q{n:02d}": "largest ocean" for n in range(12)}
    corpus = {pid: {"text": text, "title": ""} for pid, text in PASSAGES.items()}
    seen = {}
    for concurrency in (1, 3):
        state.max_in_flight = 0
        retriever = registry.build("http", {"url": f"{url}/search", "concurrency": concurrency, **PASSAGE_MAP})
        retriever.index(corpus)
        started = time.perf_counter()
        ranking = retriever.search(queries, 5)
        wall = time.perf_counter() - started
        retriever.close()
        latency = retriever.describe()["latency"]
        seen[concurrency] = (state.max_in_flight, wall, latency)
        assert all(ranking[q] == dict(EXPECTED["q1"]) for q in queries)
        assert latency["queries"] == 12 and latency["p50_ms"] >= 100.0  # each request waited 0.1 s at the server
        assert latency["concurrency"] == concurrency
    assert seen[1][0] == 1 and seen[3][0] == 3
    assert seen[3][1] < seen[1][1] * 0.8  # 12 x 0.1 s: about 1.2 s one at a time, 0.4 s three at a time


def test_header_from_the_environment_is_sent_and_never_written(tmp_path, service, datasets, monkeypatch, capsys):
    url, state = service
    secret = "s3cret-token-9f27"
    monkeypatch.setenv("RAG_EVAL_TEST_KEY", secret)
    params = {"url": f"{url}/auth", "headers": {"X-Api-Key": "${RAG_EVAL_TEST_KEY}"}, **PASSAGE_MAP}
    document = run_ok(tmp_path / "ok", datasets["passages"], params)
    assert ranked(document) == EXPECTED
    assert [headers["X-Api-Key"] for headers in state.headers] == [secret] * 3
    written = "".join(p.read_text(errors="replace") for p in (tmp_path / "ok" / "out").rglob("*") if p.is_file())
    assert secret not in written and "${RAG_EVAL_TEST_KEY}" in written
    assert document["retriever"]["description"]["header_names"] == ["X-Api-Key"]
    monkeypatch.delenv("RAG_EVAL_TEST_KEY")
    line = run_fails(tmp_path / "missing", datasets["passages"], params, capsys)
    assert "http: params.headers.X-Api-Key reads the environment variable RAG_EVAL_TEST_KEY, which is not set" in line


# --------------------------------------------------------------------------- bad answers and bad params


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def bad_cases(url: str) -> dict[str, tuple[dict[str, Any], str]]:
    port = free_port()
    return {
        "timeout": ({"url": f"{url}/slow", "timeout": 0.3},
                    f"http: query 'q1': POST {url}/slow did not answer within 0.3 s (params.timeout); raise "
                    "params.timeout, or check the service"),
        "garbage": ({"url": f"{url}/garbage"},
                    f"http: query 'q1': POST {url}/garbage answered 200 with no JSON ('<html>not json</html>'); "
                    "point params.url at the search endpoint, which must answer JSON"),
        "hits_path": ({"url": f"{url}/search", "hits": "data.hits"},
                      "http: query 'q1': the response has no hits at 'data.hits' ('data' is absent (the response has "
                      "keys 'hits')); set params.hits to the path of the hit list"),
        "no_id": ({"url": f"{url}/noid"},
                  "http: query 'q1': a hit has no id at params.fields.id 'id' (the hit's 'id' is absent (the hit has "
                  "keys 'score', 'text')); set fields.id to the path of the hit's id inside one hit, or null"),
        "refused": ({"url": f"http://user:pw@127.0.0.1:{port}/search", "retries": 1, "backoff": 0.01},
                    f"http: query 'q1': POST http://127.0.0.1:{port}/search could not be reached after 2 tries"),
        "no_route": ({"url": f"{url}/nowhere"},
                     f"http: query 'q1': POST {url}/nowhere answered 404: "),
        "batch_without_queries": ({"url": f"{url}/search", "body": {"query": "{query}"}, "batch_size": 4},
                                  "batch_size 4 sends several queries per request: put \"{queries}\" in body"),
        "not_http": ({"url": "ftp://example.org/search"}, "params.url: must be an http:// or https:// URL"),
    }


@pytest.mark.parametrize("case", ["timeout", "garbage", "hits_path", "no_id", "refused", "no_route",
                                  "batch_without_queries", "not_http"])
def test_bad_answers_exit_2_with_one_line_and_nothing_written(tmp_path, service, datasets, capsys, case):
    url, _ = service
    params, expected = bad_cases(url)[case]
    started = time.perf_counter()
    line = run_fails(tmp_path, datasets["passages"], {**params, "concurrency": 1, **PASSAGE_MAP}, capsys)
    assert expected in line, line
    assert "pw@" not in line  # credentials of the URL are never shown
    if case == "timeout":
        assert time.perf_counter() - started < 10


def test_a_timeout_through_the_console_script(tmp_path, service, datasets):
    url, _ = service
    executable = Path(sys.executable).parent / "rag-eval"
    command = str(executable) if executable.is_file() else shutil.which("rag-eval")
    if command is None:
        pytest.skip("the rag-eval console script is not installed")
    config = write_config(tmp_path, datasets["passages"], {"url": f"{url}/slow", "timeout": 0.3, **PASSAGE_MAP})
    done = subprocess.run([command, "run", str(config), "--no-progress"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "did not answer within 0.3 s (params.timeout)" in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


def test_params_are_checked_without_a_request():
    for params, expected in [
        ({"url": "http://x/s", "method": "GET", "body": {"q": "{query}"}, **PASSAGE_MAP}, "method GET sends no body"),
        ({"url": "http://x/s", "body": {"q": "a {queries}"}, **PASSAGE_MAP}, "must be a whole string value"),
        ({"url": "http://x/s", "body": {"q": "fixed"}, **PASSAGE_MAP}, 'neither url nor body holds "{query}"'),
        ({"url": "http://x/s", "hits": "a..b", **PASSAGE_MAP}, "has an empty step"),
        ({"url": "http://x/s"}, "set map"),
        ({"url": "http://x/s", "retries": -1, **PASSAGE_MAP}, "params.retries"),
    ]:
        with pytest.raises(RetrieverError) as caught:
            registry.build("http", params)
        assert expected in str(caught.value), str(caught.value)


# --------------------------------------------------------------------------- order, distances, nothing found, deadline


def test_more_hits_than_top_k_out_of_order_are_cut_on_their_scores(tmp_path, service, datasets):
    """The service answers every hit, its best one last: the top 2 by score (ties by id descending) are ranked."""
    url, _ = service
    document = run_ok(tmp_path, datasets["passages"], {"url": f"{url}/shuffled", **PASSAGE_MAP}, top_k=2,
                      metrics=("ndcg@2",))
    # by hand: q1 p1 2, then p5/p3/p2 tied at 1 -> p5; q2 p4 alone; q3 p5 3, then p2/p1 tied at 2 -> p2
    assert ranked(document) == {"q1": [("p1", 2.0), ("p5", 1.0)], "q2": [("p4", 3.0)], "q3": [("p5", 3.0), ("p2", 2.0)]}
    mapping = document["retriever"]["description"]["mapping"]
    # returned: q1 4 hits, q2 1, q3 4 = 9; ranked (the top 2 of each): 5; the 4 others are counted, not scored
    assert (mapping["returned"], mapping["hits"], mapping["beyond_top_k"], mapping["mapped"]) == (9, 5, 4, 5)
    assert mapping["unmapped"] == 0


def test_distances_are_refused_unless_said_and_then_negated(tmp_path, service, datasets, capsys):
    url, _ = service
    line = run_fails(tmp_path / "refused", datasets["passages"], {"url": f"{url}/distance", **PASSAGE_MAP}, capsys)
    assert line.endswith(
        f"http: the service at {url}/distance returns its best hit first with the lowest score, in every answer: its "
        "scores are distances (lower = better); set params.scores: distance (or params.scores: similarity if it "
        "returns its worst hit first: rag_eval ranks by score)"
    ), line
    negated = run_ok(tmp_path / "distance", datasets["passages"],
                     {"url": f"{url}/distance", "scores": "distance", **PASSAGE_MAP})
    # -(10 - overlap) = overlap - 10: the hand-counted order, every score less 10
    assert ranked(negated) == {q: [(pid, score - 10) for pid, score in rows] for q, rows in EXPECTED.items()}
    # similarities returned worst first: refused by default (indistinguishable), ranked by score when said so
    run_fails(tmp_path / "ascending", datasets["passages"], {"url": f"{url}/ascending", **PASSAGE_MAP}, capsys)
    ascending = run_ok(tmp_path / "similarity", datasets["passages"],
                       {"url": f"{url}/ascending", "scores": "similarity", **PASSAGE_MAP})
    assert ranked(ascending) == EXPECTED


def test_a_service_that_finds_nothing_is_refused(tmp_path, service, datasets, capsys):
    url, state = service
    line = run_fails(tmp_path, datasets["passages"], {"url": f"{url}/empty", **PASSAGE_MAP}, capsys)
    assert line.endswith("http: none of the 3 queries got a hit, so every metric would read 0; check that the "
                         "collection (or the service's index) holds the dataset's passages and is the one named "
                         "(params.collection, params.url)"), line
    assert state.requests == {"/empty": 3}


@pytest.fixture
def trickling() -> Iterator[str]:
    """A real server that sends its headers at once, then its body one byte every 0.2 s (40 bytes: 8 s)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stop = threading.Event()

    def answer(connection: socket.socket) -> None:
        with connection:
            try:
                connection.recv(65536)
                body = b'{"hits": []}' + b" " * 28
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                                   % len(body))
                for byte in body:
                    if stop.is_set():
                        return
                    connection.sendall(bytes([byte]))
                    time.sleep(0.2)
            except OSError:
                return

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=answer, args=(connection,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/search"
    finally:
        stop.set()
        listener.close()


def test_timeout_bounds_the_whole_request_not_each_read(tmp_path, datasets, trickling, capsys):
    started = time.perf_counter()
    line = run_fails(tmp_path, datasets["passages"], {"url": trickling, "timeout": 1, "concurrency": 1, **PASSAGE_MAP},
                     capsys)
    elapsed = time.perf_counter() - started
    assert line.endswith(f"http: query 'q1': POST {trickling} did not answer within 1 s (params.timeout); raise "
                         "params.timeout, or check the service"), line
    assert elapsed < 5, elapsed  # each byte came within 0.2 s: a per-read timeout would have waited 8 s


# --------------------------------------------------------------------------- secrets


def test_credentials_in_url_and_headers_are_never_written(tmp_path, service, datasets, monkeypatch, capsys):
    url, state = service
    monkeypatch.setenv("RAG_EVAL_TEST_TOKEN", "env-token-7c1d")
    host = url.removeprefix("http://")
    params = {"url": f"http://bob:pw-5e9a@{host}/search?api_key=zz-key-3f81&lang=en",
              "headers": {"Authorization": "Bearer ${RAG_EVAL_TEST_TOKEN}", "X-Key": "literal-key-81aa"},
              **PASSAGE_MAP}
    document = run_ok(tmp_path, datasets["passages"], params)
    assert ranked(document) == EXPECTED
    assert state.headers[0]["X-Key"] == "literal-key-81aa"  # sent, as written
    written = (tmp_path / "out" / "service.json").read_text()
    for secret in ("pw-5e9a", "zz-key-3f81", "literal-key-81aa", "env-token-7c1d", "bob"):
        assert secret not in written, secret
    recorded = document["retriever"]["params"]
    assert recorded["url"] == f"{url}/search?api_key=...&lang=..."
    assert recorded["headers"] == {"Authorization": "Bearer ${RAG_EVAL_TEST_TOKEN}", "X-Key": "***"}
    assert document["config"]["resolved"]["retrievers"][0]["params"]["url"] == recorded["url"]
    # validate's message for a bad URL shows it once, masked
    line = run_fails(tmp_path / "bad", datasets["passages"],
                     {"url": "htp://bob:pw-5e9a@127.0.0.1/s?key=zz-key-3f81", **PASSAGE_MAP}, capsys)
    assert "pw-5e9a" not in line and "zz-key-3f81" not in line and line.count("got ") == 1, line


def test_the_report_shows_params_masked(tmp_path, service, datasets):
    url, _ = service
    params = {"url": f"{url}/search", "headers": {"X-Key": "literal-key-81aa"}, **PASSAGE_MAP}
    run_ok(tmp_path, datasets["passages"], params)
    assert "literal-key-81aa" not in (tmp_path / "out" / "report.md").read_text()
