"""``http``: the team's search service, asked over HTTP(S) by query text, its JSON hits mapped to the dataset.

YAML::

    adapter: http
    params:
      url: http://127.0.0.1:8123/search       # http or https; may hold {query} / {top_k} (URL-encoded) and ${ENV}
      method: POST                            # POST (default) | GET (no body: put {query} in url)
      headers: {Authorization: "Bearer ${SEARCH_TOKEN}"}   # ${ENV} read at connect time, never written
      body: {q: "{query}", k: "{top_k}"}      # JSON template ("{queries}": the list, for batch_size > 1)
      hits: data.hits                         # where the hit list is in a response (batch: the list of lists)
      fields: {id: id, score: score, text: text, metadata: metadata}   # dotted paths inside one hit
      map: {doc_id: doc_id, start: start, end: end}                    # how a hit becomes a span or passage
      timeout: 30          # seconds per request
      retries: 2           # on connection errors, 429 and 5xx (exponential back-off); never on another 4xx
      concurrency: 4       # requests in flight at once

Only the standard library is used (``urllib.request`` and a thread pool). Each request's time is
measured around the request alone (the successful try; retries are counted apart); building the
body, decoding JSON and mapping the hits are the harness's overhead.
"""

from __future__ import annotations

import base64
import http.client
import json
import math
import os
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ClassVar

from rag_eval._core.errors import RetrieverError
from rag_eval._core.http_requests import RequestFailed, send, snippet
from rag_eval._core.masking import shown_url
from rag_eval._core.ranking import check_top_k
from rag_eval._retrievers.base import Queries, Ranking
from rag_eval._retrievers.external.by_text import ScoreOrder, TextHitsParams, TextHitsRetriever
from rag_eval._retrievers.external.hits import Hit
from rag_eval._retrievers.external.http_params import QUERIES, QUERY, TOP_K, HttpParams
from rag_eval._retrievers.external.json_path import MISSING, compile_path

_PLACEHOLDER = re.compile(r"\{(query|top_k)\}")
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class _Answer:
    """One request's decoded JSON, the seconds of its successful try, its tries and the harness's own seconds."""

    payload: Any
    seconds: float
    tries: int
    own_s: float


class HttpRetriever(TextHitsRetriever):
    """Asks an HTTP search service (see the module docstring)."""

    Params: ClassVar[type[TextHitsParams]] = HttpParams
    ADAPTER: ClassVar[str] = "http"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        settings: HttpParams = self.settings
        self.hits_path = compile_path(settings.hits)
        self.field_paths = {
            name: compile_path(path) for name, path in settings.fields.model_dump().items() if path is not None
        }
        self.required_fields = {"id", "score"} | set(settings.fields.model_fields_set)
        self.shown = shown_url(settings.url)
        self._url = ""
        self._headers: dict[str, str] = {}
        self._opener: urllib.request.OpenerDirector | None = None
        self.requests = 0
        self.retried = 0
        self.wall_s = 0.0
        # Set when a request fails for good: requests not yet sent are not sent (the search has failed).
        self._failed = threading.Event()
        self.order = ScoreOrder()

    # ------------------------------------------------------------------ TextHitsRetriever

    def connect(self) -> None:
        """Read ``${ENV}`` values of url and headers, and check the URL; nothing is sent until search."""
        settings: HttpParams = self.settings
        url = _expand(settings.url, "params.url")
        parts = urllib.parse.urlsplit(url)
        headers = {"Accept": "application/json", "User-Agent": "rag-eval"}
        if settings.template() is not None:
            headers["Content-Type"] = "application/json"
        if parts.username is not None:
            # Credentials in the URL become Basic auth, and leave the URL (urllib would send them as a host).
            user = urllib.parse.unquote(parts.username)
            password = urllib.parse.unquote(parts.password or "")
            headers["Authorization"] = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
            netloc = parts.hostname or ""
            netloc = f"[{netloc}]" if ":" in netloc else netloc
            netloc += f":{parts.port}" if parts.port is not None else ""
            url = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
        for name, value in settings.headers.items():
            headers[name] = _expand(value, f"params.headers.{name}")
        self._url, self._headers = url, headers
        self._opener = _deadline_opener()
        self._failed.clear()
        self.requests = self.retried = 0
        self.wall_s = 0.0

    def ask(self, text: str, k: int) -> list[Hit]:
        """One query's hits (one request)."""
        return self.ask_many([text], k)[0]

    def ask_many(self, texts: Sequence[str], k: int) -> list[list[Hit]]:
        """Hits of ``texts``, one request each, or one per batch when the body holds ``{queries}``."""
        labels = [f"#{number}" for number in range(1, len(texts) + 1)]  # no query ids here: named by position
        self._failed.clear()
        size = self._per_request()
        answers: list[list[Hit]] = []
        for first in range(0, len(texts), size):
            batch = labels[first : first + size]
            answer = self._request(batch, list(texts[first : first + size]), k)
            self.requests += answer.tries
            answers.extend(self._hits(batch, answer.payload))
        return answers

    def close(self) -> None:
        """Drop the opener (urllib keeps no connection open between requests)."""
        self._opener = None

    def target_info(self) -> dict[str, Any]:
        """The endpoint (no credentials, no header values), the request shape, and what was sent."""
        settings: HttpParams = self.settings
        return {
            "endpoint": self.shown,
            "method": settings.method,
            "header_names": sorted(settings.headers),
            "hits": settings.hits,
            "batch_size": settings.batch_size,
            "concurrency": settings.concurrency,
            "scores": "distance, negated (higher = better)" if settings.scores == "distance" else "as given (higher = better)",
            "unsorted_answers": self.order.unsorted,
            "timeout_s": settings.timeout,
            "retries": settings.retries,
            "requests": self.requests,
            "retried_requests": self.retried,
        }

    # ------------------------------------------------------------------ search, concurrent

    def search(self, queries: Queries, top_k: int) -> Ranking:
        """Every query's hits, ``concurrency`` requests in flight; mapped in query order."""
        check_top_k(top_k, where=self.ADAPTER, error=RetrieverError)
        if self.mapper is None or self._opener is None:
            raise RetrieverError(f"{self.ADAPTER}: search() called before index(corpus)")
        query_ids = list(queries)
        started = time.perf_counter()
        self.order = ScoreOrder()
        batches = self._batches(query_ids)
        ranking: Ranking = {}
        self._failed.clear()
        pool = ThreadPoolExecutor(max_workers=self.settings.concurrency, thread_name_prefix="rag-eval-http")
        try:
            futures: list[Future[_Answer]] = [
                pool.submit(self._request, batch, [queries[qid] for qid in batch], top_k) for batch in batches
            ]
            for batch, future in zip(batches, futures):
                answer = future.result()  # the first failed request, in query order, stops the search
                mapping_started = time.perf_counter()
                per_query = answer.seconds / len(batch)
                self.latency.per_query.extend([per_query] * len(batch))
                self.latency.backend_s += answer.seconds
                self.requests += answer.tries
                self.retried += answer.tries > 1
                for qid, hits in zip(batch, self._hits(batch, answer.payload)):
                    self.order.observe(hits)
                    # every hit returned is counted; the top_k best by score are ranked, whatever the order returned
                    ranking[qid] = self.mapper.rank_top(qid, hits, top_k)
                self.latency.overhead_s += answer.own_s + time.perf_counter() - mapping_started
        except BaseException:  # a failed request, hits that do not read, Ctrl-C: nothing more is sent
            self._failed.set()
            raise
        finally:
            # Requests not started are dropped; one in flight ends within its timeout, and is not retried.
            pool.shutdown(wait=False, cancel_futures=True)
        self.wall_s = time.perf_counter() - started
        self.mapper.check_mapped()
        error = self.order.distances_error(self.ADAPTER, f"the service at {self.shown}", self.settings)
        if error is not None:
            raise error
        return ranking

    def describe(self) -> dict[str, Any]:
        """The base description, with the wall-clock rate of the concurrent search."""
        info = super().describe()
        latency = info.get("latency")
        if latency is not None and self.wall_s > 0:
            latency["wall_s"] = round(self.wall_s, 4)
            latency["wall_qps"] = round(latency["queries"] / self.wall_s, 1)
            latency["concurrency"] = self.settings.concurrency
        return info

    def _per_request(self) -> int:
        return int(self.settings.batch_size) if self.settings.batched() else 1

    def _batches(self, query_ids: list[str]) -> list[list[str]]:
        size = self._per_request()
        return [query_ids[first : first + size] for first in range(0, len(query_ids), size)]

    # ------------------------------------------------------------------ one request

    def _request(self, batch: Sequence[str], texts: Sequence[str], k: int) -> _Answer:
        """One request's answer (:meth:`_send`); once one has failed, requests not yet sent are not sent."""
        if self._failed.is_set():
            raise RetrieverError(f"http: {_who(batch)}: not asked, an earlier request failed")
        try:
            return self._send(batch, texts, k)
        except BaseException:
            self._failed.set()
            raise

    def _send(self, batch: Sequence[str], texts: Sequence[str], k: int) -> _Answer:
        """Send one request (retrying where allowed) and decode its JSON; any failure is one RetrieverError line."""
        own_started = time.perf_counter()
        settings: HttpParams = self.settings
        who = _who(batch)
        url = _fill_url(self._url, texts[0] if not settings.batched() else "", k)
        template = settings.template()
        data = None
        if template is not None:
            filled = _fill(template, texts[0] if not settings.batched() else None, list(texts), k)
            data = json.dumps(filled, ensure_ascii=False).encode("utf-8")
        request = urllib.request.Request(url, data=data, headers=self._headers, method=settings.method)
        where = f"{settings.method} {self.shown}"
        own_s = time.perf_counter() - own_started
        opener = self._opener
        assert opener is not None
        try:
            reply = send(opener, request, timeout=settings.timeout, retries=settings.retries, backoff=settings.backoff,
                         stop=self._failed)
        except RequestFailed as failure:
            raise self._failure(failure, who, where) from None
        raw, status, seconds, tries = reply.body, reply.status, reply.seconds, reply.tries
        decode_started = time.perf_counter()
        try:
            payload = json.loads(raw)
        except ValueError:
            raise RetrieverError(
                f"http: {who}: {where} answered {status} with no JSON ({snippet(raw)}); point params.url at the "
                "search endpoint, which must answer JSON"
            ) from None
        own_s += time.perf_counter() - decode_started
        return _Answer(payload, seconds, tries, own_s)

    def _failure(self, failure: RequestFailed, who: str, where: str) -> RetrieverError:
        """A request that failed for good, worded as one line naming the parameter to fix."""
        settings: HttpParams = self.settings
        if failure.kind == "stopped":
            return RetrieverError(f"http: {who}: not asked, an earlier request failed")
        if failure.kind == "timeout":
            return RetrieverError(
                f"http: {who}: {where} did not answer within {settings.timeout:g} s (params.timeout); "
                "raise params.timeout, or check the service"
            )
        if failure.kind == "unreachable":
            return RetrieverError(
                f"http: {who}: {where} could not be reached after {failure.tries} tries ({failure.reason}); "
                "check params.url and that the service runs"
            )
        after = f" after {failure.tries} tries" if failure.tries > 1 else ""
        fix = "check the service" if failure.retried else _fix_for(failure.status or 0)
        return RetrieverError(f"http: {who}: {where} answered {failure.status}{after}: {failure.body}; {fix}")

    # ------------------------------------------------------------------ reading hits

    def _hits(self, batch: Sequence[str], payload: Any) -> list[list[Hit]]:
        """Each query's hits read from one response (a batch response holds one list per query)."""
        path = self.hits_path
        found = path.find(payload)
        who = _who(batch)
        if found is MISSING:
            raise RetrieverError(
                f"http: {who}: the response has no hits at {path.text!r} ({path.miss(payload)}); set params.hits to "
                f"the path of the hit list, e.g. 'results' or 'data.hits' ('$': the response is the list)"
            )
        lists = found if self.settings.batched() else [found]
        if not isinstance(lists, list) or len(lists) != len(batch) or not all(isinstance(x, list) for x in lists):
            expected = f"a list of {len(batch)} lists (one per query)" if self.settings.batched() else "a list"
            raise RetrieverError(
                f"http: {who}: params.hits {path.text!r} finds {_describe(found)}, not {expected}; set params.hits "
                "to the path of the hit list" + (" (a batch: 'results' for a list of lists, or 'results.*.hits')"
                                                  if self.settings.batched() else "")
            )
        return [[self._hit(qid, hit) for hit in hits] for qid, hits in zip(batch, lists)]

    def _hit(self, qid: str, raw: Any) -> Hit:
        values: dict[str, Any] = {}
        for name, path in self.field_paths.items():
            value = path.find(raw)
            if value is MISSING or (value is None and name in ("id", "score")):
                if name in self.required_fields:
                    raise RetrieverError(
                        f"http: query {qid!r}: a hit has no {name} at params.fields.{name} {path.text!r} "
                        f"({path.miss(raw, 'the hit') if value is MISSING else 'it is null'}); set fields.{name} to the path "
                        f"of the hit's {name} inside one hit, or null if hits carry none"
                    )
                value = None
            values[name] = value
        identifier, score, text, metadata = (values.get(name) for name in ("id", "score", "text", "metadata"))
        if identifier is not None and (isinstance(identifier, bool) or not isinstance(identifier, (str, int))):
            raise self._bad_field(qid, "id", identifier, "a string or an integer")
        if score is not None and (
            isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(float(score))
        ):
            raise self._bad_field(qid, "score", score, "a finite number")
        if text is not None and not isinstance(text, str):
            raise self._bad_field(qid, "text", text, "a string")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise self._bad_field(qid, "metadata", metadata, "an object")
        sign = -1.0 if self.settings.scores == "distance" else 1.0  # a distance: lower is better, negated
        return Hit(
            id=None if identifier is None else str(identifier),
            score=None if score is None else sign * float(score),
            text=text,
            metadata=metadata or {},
        )

    def _bad_field(self, qid: str, name: str, value: Any, wanted: str) -> RetrieverError:
        path = self.field_paths[name].text
        return RetrieverError(
            f"http: query {qid!r}: params.fields.{name} {path!r} finds {_describe(value)} in a hit, not {wanted}; "
            f"set fields.{name} to the right path inside one hit, or null"
        )


# ---------------------------------------------------------------------- a whole-request deadline

# urllib's timeout bounds each socket operation, so a service that trickles its answer a byte at a time
# keeps a request alive far beyond it. Each request here gets a timer: when params.timeout has passed
# since it started, the timer shuts the request's sockets down, and the read that was waiting fails as
# a timeout (which rag_eval's request loop reports as one, and does not retry).

_current = threading.local()  # the watch of the request this thread is sending


class _Watch:
    """The deadline of one request: its sockets, shut down when ``seconds`` have passed."""

    def __init__(self, seconds: float) -> None:
        self.fired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self.fire)
        self._timer.daemon = True
        self._timer.start()

    def add(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.fired:
                _shut(sock)

    def fire(self) -> None:
        with self._lock:
            self.fired = True
            for sock in self._sockets:
                _shut(sock)

    def cancel(self) -> None:
        self._timer.cancel()


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # closed already
        pass


def _watched_connection(address: tuple[str, int], *args: Any, **kwargs: Any) -> socket.socket:
    sock = socket.create_connection(address, *args, **kwargs)
    watch = getattr(_current, "watch", None)
    if watch is not None:
        watch.add(sock)
    return sock


class _HTTPConnection(http.client.HTTPConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _watched_connection


class _HTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _watched_connection


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_HTTPConnection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        extra: dict[str, Any] = {"context": getattr(self, "_context", None)}
        if hasattr(self, "_check_hostname"):  # Python < 3.12
            extra["check_hostname"] = self._check_hostname
        return self.do_open(_HTTPSConnection, req, **extra)


class _DeadlineOpener(urllib.request.OpenerDirector):
    """``open(request, timeout=t)``: the whole request, from connecting to its body's last byte, within ``t``."""

    def open(self, fullurl: Any, data: Any = None, timeout: Any = None) -> Any:
        seconds = float(timeout) if isinstance(timeout, (int, float)) else 30.0
        watch = _Watch(seconds)
        _current.watch = watch
        try:
            response = super().open(fullurl, data, timeout=seconds)
        except urllib.error.HTTPError:
            if watch.fired:
                watch.cancel()
                raise TimeoutError(f"no whole answer within {seconds:g} s") from None
            raise  # its body is read next, still within the watch (its timer ends by itself)
        except BaseException:
            watch.cancel()
            if watch.fired:
                raise TimeoutError(f"no whole answer within {seconds:g} s") from None
            raise
        finally:
            _current.watch = None
        return _DeadlineResponse(response, watch, seconds)


class _DeadlineResponse:
    """A response whose reads fail as a timeout once its request's deadline has passed (even a read cut short)."""

    def __init__(self, response: Any, watch: _Watch, seconds: float) -> None:
        self._response = response
        self._watch = watch
        self._seconds = seconds
        self.status = response.status
        self.headers = response.headers

    def read(self, *args: Any) -> bytes:
        try:
            data = self._response.read(*args)
        except (OSError, http.client.HTTPException):
            if self._watch.fired:
                raise TimeoutError(f"no whole answer within {self._seconds:g} s") from None
            raise
        if self._watch.fired:  # a body without a length ends where the socket was shut: not a whole answer
            raise TimeoutError(f"no whole answer within {self._seconds:g} s")
        return bytes(data)

    def close(self) -> None:
        self._watch.cancel()
        self._response.close()

    def __enter__(self) -> _DeadlineResponse:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _deadline_opener() -> urllib.request.OpenerDirector:
    """urllib's default opener (proxies, redirects, errors...), with every request held to a whole-request deadline."""
    opener = _DeadlineOpener()
    for handler in getattr(urllib.request.build_opener(_HTTPHandler, _HTTPSHandler), "handlers", []):
        opener.add_handler(handler)
    return opener


# ---------------------------------------------------------------------- helpers


def _expand(text: str, where: str) -> str:
    """``${NAME}`` replaced by the environment's value; a name not set is one error line naming ``where``."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise RetrieverError(
                f"http: {where} reads the environment variable {name}, which is not set; export {name} before "
                "the run (it is read when the run starts, never written to the results)"
            )
        return os.environ[name]

    return _ENV.sub(value, text)


def _fill(template: Any, query: str | None, queries: list[str], k: int) -> Any:
    """The body: ``"{query}"``, ``"{queries}"``, ``"{top_k}"`` as whole values become the text, the list, the number;
    inside a longer string ``{query}`` and ``{top_k}`` become text (each replaced once, never inside a query's text)."""
    if isinstance(template, str):
        if template == QUERY:
            return query
        if template == QUERIES:
            return list(queries)
        if template == TOP_K:
            return k
        return _PLACEHOLDER.sub(lambda match: (query or "") if match.group(1) == "query" else str(k), template)
    if isinstance(template, Mapping):
        return {key: _fill(value, query, queries, k) for key, value in template.items()}
    if isinstance(template, list):
        return [_fill(value, query, queries, k) for value in template]
    return template


def _fill_url(url: str, query: str, k: int) -> str:
    return _PLACEHOLDER.sub(
        lambda match: urllib.parse.quote(query, safe="") if match.group(1) == "query" else str(k), url
    )


def _who(batch: Sequence[str]) -> str:
    if len(batch) == 1:
        return f"query {batch[0]!r}"
    return f"queries {batch[0]!r} to {batch[-1]!r} (a batch of {len(batch)})"


def _fix_for(status: int) -> str:
    if status in (401, 403):
        return "check params.headers (the service refused the credentials)"
    if status in (404, 405):
        return "check params.url and params.method"
    return "check params.body, params.headers and params.url against the service's API"


def _describe(value: Any) -> str:
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, Mapping):
        return "an object"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:40] + "..."
