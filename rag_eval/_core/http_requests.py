"""One HTTP request with retries, on the standard library only; the caller words the error.

:func:`send` opens one ``urllib.request.Request`` and tries again, after an exponential back-off
(``backoff`` seconds, doubled per try, at least what ``Retry-After`` asks, at most
:data:`MAX_WAIT_S`), when the connection fails or the server answers 429 or 5xx; any other status,
a timeout (the server is slow, not gone: asking again would only double its load) or the last
failed try raises :class:`RequestFailed`, which says what happened and leaves the wording of the
one-line error (which parameter to fix) to the caller. Nothing here knows what is sent.

Shared by the ``http`` retriever (``rag_eval._retrievers.external.http``) and the LLM judge
(``rag_eval._models.judges.llm``); it imports nothing of rag_eval.
"""

from __future__ import annotations

import http.client
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

#: The longest wait between two tries, whatever Retry-After asks (seconds).
MAX_WAIT_S = 60.0
#: Characters of a response body quoted in an error.
BODY_SHOWN = 200
_TOO_MANY = 429


@dataclass(frozen=True)
class Reply:
    """A successful answer: its body and status, the seconds of the successful try, and the tries it took."""

    body: bytes
    status: int
    seconds: float
    tries: int


class RequestFailed(Exception):
    """A request that failed for good.

    ``kind``: ``status`` (the server answered ``status`` with ``body``, a snippet), ``timeout`` (no
    answer within the timeout), ``unreachable`` (refused, reset, unknown host: ``reason``) or
    ``stopped`` (not sent: another request of the same batch had failed).
    """

    def __init__(self, kind: str, tries: int, *, status: int | None = None, body: str = "", reason: str = "") -> None:
        super().__init__(f"{kind} after {tries} tries: {status or ''} {body or reason}".strip())
        self.kind = kind
        self.tries = tries
        self.status = status
        self.body = body
        self.reason = reason

    @property
    def retried(self) -> bool:
        """Whether the server's failure is one that was tried again (429, 5xx, the connection)."""
        return self.kind == "unreachable" or (self.status is not None and retried_status(self.status))


def retried_status(status: int) -> bool:
    """429 (too many requests) and 5xx are worth another try; any other status is the request's fault."""
    return status == _TOO_MANY or status >= 500


def send(
    opener: urllib.request.OpenerDirector,
    request: urllib.request.Request,
    *,
    timeout: float,
    retries: int,
    backoff: float,
    stop: threading.Event | None = None,
) -> Reply:
    """Send ``request``, trying again up to ``retries`` times (see the module docstring); :class:`RequestFailed` otherwise.

    When ``stop`` is set (another request failed for good) the request is not sent (``stopped``), and a
    failed try is not tried again: its own failure is raised.
    """
    if stop is not None and stop.is_set():
        raise RequestFailed("stopped", 0)
    tries = 0
    while True:
        tries += 1
        started = time.perf_counter()
        try:
            with opener.open(request, timeout=timeout) as response:
                body = response.read()
                return Reply(body, response.status, time.perf_counter() - started, tries)
        except urllib.error.HTTPError as error:
            status, text, retry_after = error.code, body_of(error), error.headers.get("Retry-After")
            if retried_status(status) and tries <= retries and not (stop is not None and stop.is_set()):
                time.sleep(wait_s(backoff, tries, retry_after))
                continue
            raise RequestFailed("status", tries, status=status, body=text) from None
        except (OSError, http.client.HTTPException) as error:  # refused, reset, timed out, cut short
            cause = error.reason if isinstance(error, urllib.error.URLError) else error
            if isinstance(cause, TimeoutError) or isinstance(error, TimeoutError):
                raise RequestFailed("timeout", tries, reason=reason_text(cause)) from None
            if tries <= retries and not (stop is not None and stop.is_set()):
                time.sleep(wait_s(backoff, tries, None))
                continue
            raise RequestFailed("unreachable", tries, reason=reason_text(cause)) from None


def wait_s(backoff: float, tries: int, retry_after: str | None) -> float:
    """Exponential back-off (``backoff``, doubled per try), at least what Retry-After asks, at most a minute."""
    wait = backoff * 2 ** (tries - 1)
    if retry_after is not None and retry_after.strip().isdigit():
        wait = max(wait, float(retry_after.strip()))
    return min(wait, MAX_WAIT_S)


def body_of(error: urllib.error.HTTPError) -> str:
    """The start of an error response's body, quoted (or ``(no body)``)."""
    try:
        return snippet(error.read())
    except (OSError, http.client.HTTPException):
        return "(no body)"


def snippet(raw: bytes) -> str:
    """The start of ``raw`` on one line, quoted, for an error message."""
    text = " ".join(raw[: BODY_SHOWN * 4].decode("utf-8", "replace").split())
    if not text:
        return "an empty body"
    return repr(text[:BODY_SHOWN] + ("..." if len(text) > BODY_SHOWN else ""))


def reason_text(reason: Any) -> str:
    """``Type: message`` of a connection failure."""
    if isinstance(reason, BaseException):
        return f"{type(reason).__name__}: {reason}" if str(reason) else type(reason).__name__
    return str(reason)


