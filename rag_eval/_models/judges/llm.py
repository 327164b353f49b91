"""``llm``: grade passages with any OpenAI-compatible chat endpoint (a hosted model, vLLM, Ollama, llama.cpp's server).

JUDGE.yaml::

    adapter: llm
    params:
      base_url: http://127.0.0.1:8080/v1   # the endpoint's base; POST {base_url}/chat/completions
      model: SmolLM2-135M-Instruct         # sent as "model"; the sheet's source is llm:<model>
      api_key_env: null        # the NAME of an environment variable holding the key (never the key itself)
      timeout: 60              # seconds one request may take
      retries: 3               # tries again after a connection error, 429 or 5xx (exponential back-off)
      backoff: 0.5             # seconds before the first retry, doubled for each next
      concurrency: 4           # requests in flight at once
      max_tokens: 64           # the answer's length cap
      prompt_version: graded-0-3-v1   # the prompt (rag_eval._models.judges.prompt); part of the cache key
      cache: true              # keep every answer; a rerun asks nothing it has asked before
      cache_dir: null          # default $RAG_EVAL_CACHE_DIR, else ~/.cache/rag_eval

One request per (query, passage), at temperature 0, with the prompt of
:mod:`rag_eval._models.judges.prompt`; the answer is read strictly (``##final score: N``), asked
once more with a reminder when it cannot be read, and reported as failed (grade None, never 0)
when it still cannot. Every graded answer is kept in :mod:`rag_eval._models.judges.cache` under
sha256(model, prompt version, query text, passage text) before the next is read, so an
interrupted run loses nothing it was told; an answer with no grade is not kept (nor used when an
older cache holds one), so a rerun asks it again. A cached answer is used only when
:func:`prompt.parse_grade` (the parser of a fresh answer) reads its grade in its text and it
records the model and prompt version of its key; any other is asked again. Tokens come from each response's ``usage``; seconds
are measured around the requests alone.

Failures: the endpoint down, a 401/403/404, 429 or 5xx after the retries, a timeout, or a reply
that is not a chat completion stop the whole judging (one JudgeError line naming the URL: bad
input); the endpoint refusing one question (400, 413, 422: too long for its context) fails that
question only, as an unreadable answer does.
"""

from __future__ import annotations

import json
import os
import re
import threading
import urllib.parse
import urllib.request
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from rag_eval._core.http_requests import Reply, RequestFailed, send, snippet
from rag_eval._core.masking import shown_url
from rag_eval._models.judges import prompt
from rag_eval._models.judges.base import JudgeError, JudgeGrade, JudgeParams, check_params
from rag_eval._models.judges.cache import AnswerCache, CachedAnswer, GradeParser, answer_key

ADAPTER = "llm"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Statuses that refuse one question (too long, unprocessable), not the judge: that question fails alone.
_QUESTION_REFUSED = frozenset({400, 413, 422})
#: Characters of the model's answer kept as the sheet's note.
EXPLANATION_CHARS = 300


class LlmParams(JudgeParams):
    """Parameters of ``adapter: llm`` (see the module docstring)."""

    base_url: str = Field(..., min_length=1, description="http(s) base URL of the endpoint, e.g. http://127.0.0.1:8080/v1")
    model: str = Field(..., min_length=1, description="the model name sent to the endpoint; provenance llm:<model>")
    api_key_env: str | None = Field(None, description="name of the environment variable holding the API key")
    timeout: float = Field(60.0, gt=0, le=3600, description="seconds one request may take")
    retries: int = Field(3, ge=0, le=10, description="tries again after a connection error, 429 or 5xx")
    backoff: float = Field(0.5, ge=0, le=60, description="seconds before the first retry, doubled for each next")
    concurrency: int = Field(4, ge=1, le=256, description="requests in flight at once")
    max_tokens: int = Field(64, ge=1, le=32768, description="the answer's length cap (tokens)")
    prompt_version: Literal["graded-0-3-v1"] = Field("graded-0-3-v1", description="the prompt asked (prompt.PROMPT_VERSION)")
    cache: bool = Field(True, description="keep every answer; a rerun asks nothing it asked before")
    cache_dir: str | Path | None = Field(None, description="the cache's folder (default $RAG_EVAL_CACHE_DIR or ~/.cache/rag_eval)")

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        parts = urllib.parse.urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// URL with a host")  # the value follows, without userinfo
        if parts.username is not None or parts.password is not None:
            raise ValueError("must not hold a user or password; put the key in an environment variable named by api_key_env")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.fullmatch(value):
            raise ValueError("must be the NAME of an environment variable (e.g. OPENAI_API_KEY), never the key itself")
        return value


@dataclass(frozen=True)
class _Asked:
    """What asking one question gave: the answer (grade None: unreadable or refused) and its cost."""

    answer: CachedAnswer
    requests: int
    error: str = ""


class _Refused(Exception):
    """The endpoint refused one question (not the judge): that question fails alone."""

    def __init__(self, reason: str, tries: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.tries = tries


class _NotAsked(JudgeError):
    """A question dropped because another request had failed for good (that failure is the one reported)."""


class LlmJudge:
    """Grades (query, passage) pairs through an OpenAI-compatible chat endpoint (see the module docstring)."""

    Params = LlmParams

    def __init__(self, **params: Any) -> None:
        settings: LlmParams = check_params(LlmParams, params, ADAPTER)
        self.settings = settings
        base = settings.base_url.rstrip("/")
        self.endpoint = base if base.endswith("/chat/completions") else base + "/chat/completions"
        self.shown = shown_url(self.endpoint)
        self.source = f"llm:{settings.model}"
        self.description = f"rag_eval llm judge, prompt {settings.prompt_version}, {self.shown}"
        self._headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "rag-eval"}
        if settings.api_key_env is not None:
            key = os.environ.get(settings.api_key_env)
            if not key:
                raise JudgeError(f"params.api_key_env: the environment variable {settings.api_key_env} is not set; export "
                                 "it before judging (it is read, never written anywhere)")
            self._headers["Authorization"] = f"Bearer {key}"
        self._opener = urllib.request.build_opener()
        folder = settings.cache_dir
        # A cached grade is used only when the judge's own parser reads it in the cached answer (see cache.py).
        parsers: dict[str, GradeParser] = {settings.prompt_version: prompt.parse_grade}
        self.cache = AnswerCache(folder, parsers=parsers) if settings.cache and folder is not None else None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.requests = 0  # sent by this judge, retries and reminders included

    # ------------------------------------------------------------------ the seam

    def judge(self, query: str, passages: list[str]) -> list[JudgeGrade]:
        """One grade per passage of ``query`` (see the module docstring)."""
        return self.judge_batches([(query, passages)])[0]

    def judge_batches(self, batches: Sequence[tuple[str, Sequence[str]]]) -> list[list[JudgeGrade]]:
        """Every batch's grades; the questions not in the cache are asked ``concurrency`` at a time."""
        version, model = self.settings.prompt_version, self.settings.model
        keys = [[answer_key(model, version, query, passage) for passage in passages] for query, passages in batches]
        known: dict[str, JudgeGrade] = {}
        questions: dict[str, tuple[str, str]] = {}
        for (query, passages), batch_keys in zip(batches, keys):
            for passage, key in zip(passages, batch_keys):
                cached = self.cache.get(key, model=model, prompt_version=version) if self.cache is not None else None
                if cached is not None and cached.grade is not None:  # an answer without a grade is asked again
                    known[key] = _grade(cached, requests=0, cached=True)
                elif key not in questions:
                    questions[key] = (query, passage)
        known.update(self._ask_all(questions))
        if self.cache is not None:
            self.cache.compact()  # damaged lines dropped now, even when every answer was cached
        answers: list[list[JudgeGrade]] = []
        given: set[str] = set()
        for batch_keys in keys:
            grades = []
            for key in batch_keys:
                grades.append(_shared(known[key]) if key in given else known[key])
                given.add(key)
            answers.append(grades)
        return answers

    # ------------------------------------------------------------------ asking

    def _ask_all(self, questions: dict[str, tuple[str, str]]) -> dict[str, JudgeGrade]:
        """Each question's grade; the first request that fails for good stops the rest (JudgeError)."""
        if not questions:
            return {}
        self._stop.clear()
        results: dict[str, JudgeGrade] = {}
        pool = ThreadPoolExecutor(max_workers=self.settings.concurrency, thread_name_prefix="rag-eval-judge")
        try:
            futures: dict[Future[_Asked], str] = {
                pool.submit(self._ask_or_stop, query, passage, key): key for key, (query, passage) in questions.items()
            }
            wait(futures, return_when=FIRST_EXCEPTION)
            failed = [future for future in futures if future.done() and future.exception() is not None]
            if failed:
                self._stop.set()
                raise _first(failed)
            for future, key in futures.items():
                asked = future.result()
                results[key] = _grade(asked.answer, requests=asked.requests, error=asked.error)
        except BaseException:
            self._stop.set()
            raise
        finally:
            # Questions not started are dropped; one in flight ends within its timeout, and is not retried.
            pool.shutdown(wait=False, cancel_futures=True)
        return results

    def _ask_or_stop(self, query: str, passage: str, key: str) -> _Asked:
        """:meth:`_ask`; a failure stops the other questions at once, in this worker, before it takes the next one."""
        try:
            return self._ask(query, passage, key)
        except BaseException:
            self._stop.set()
            raise

    def _ask(self, query: str, passage: str, key: str) -> _Asked:
        """Ask one question (and once more with the reminder when the answer cannot be read); keep the answer."""
        try:
            text, tokens_in, tokens_out, seconds, requests = self._complete(prompt.messages(query, passage))
        except _Refused as refused:
            return _Asked(CachedAnswer("", None, 0, 0, 0.0), refused.tries, refused.reason)
        grade = prompt.parse_grade(text)
        answer = text
        if grade is None:
            try:
                answer, more_in, more_out, more_s, more_requests = self._complete(prompt.reminder(query, passage))
            except _Refused as refused:
                return _Asked(CachedAnswer(text, None, tokens_in, tokens_out, seconds), requests + refused.tries,
                              refused.reason)
            grade = prompt.parse_grade(answer)
            tokens_in, tokens_out, seconds = tokens_in + more_in, tokens_out + more_out, seconds + more_s
            requests += more_requests
            if grade is None:
                answer = f"{text}\n---\n{answer}"  # both answers: the note says what the model said
        kept = CachedAnswer(answer, grade, tokens_in, tokens_out, round(seconds, 6))
        # Only a graded answer is kept: an unreadable one may be cut by max_tokens, or the model's mood that day;
        # a rerun (with a larger params.max_tokens, another endpoint) asks it again.
        if self.cache is not None and grade is not None:
            self.cache.put(key, kept, model=self.settings.model, prompt_version=self.settings.prompt_version)
        error = "" if grade is not None else f"no grade in the answer {snippet(answer.encode('utf-8'))} (asked twice)"
        return _Asked(kept, requests, error)

    def _complete(self, messages: list[dict[str, str]]) -> tuple[str, int, int, float, int]:
        """One chat completion: ``(text, prompt tokens, completion tokens, seconds, requests)``.

        A question the endpoint refuses (400, 413, 422) raises :class:`_Refused`; any other failure a JudgeError.
        """
        body = {
            "model": self.settings.model,
            "messages": messages,
            "temperature": 0,
            "max_tokens": self.settings.max_tokens,
        }
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        request = urllib.request.Request(self.endpoint, data=data, headers=self._headers, method="POST")
        settings = self.settings
        try:
            reply = send(self._opener, request, timeout=settings.timeout, retries=settings.retries,
                         backoff=settings.backoff, stop=self._stop)
        except RequestFailed as failure:
            with self._lock:
                self.requests += failure.tries
            if failure.kind == "status" and failure.status in _QUESTION_REFUSED:
                raise _Refused(f"the endpoint refused the question: {failure.status} {failure.body}", failure.tries) from None
            raise self._failure(failure) from None
        with self._lock:
            self.requests += reply.tries
        return (*self._read(reply), reply.seconds, reply.tries)

    def _read(self, reply: Reply) -> tuple[str, int, int]:
        """The answer's text and token counts; a reply that is not a chat completion is one JudgeError line."""
        try:
            payload = json.loads(reply.body)
            choice = payload["choices"][0]
            content = choice["message"].get("content")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise JudgeError(
                f"llm judge: POST {self.shown} answered {reply.status} with no chat completion "
                f"({snippet(reply.body)}); point params.base_url at an OpenAI-compatible endpoint (.../v1)"
            ) from None
        text = content if isinstance(content, str) else ""  # null content (a refusal, a cut): no grade, asked again
        usage = payload.get("usage") if isinstance(payload, dict) else None
        usage = usage if isinstance(usage, dict) else {}
        return text, _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))

    def _failure(self, failure: RequestFailed) -> JudgeError:
        where = f"llm judge: POST {self.shown}"
        after = f" after {failure.tries} tries" if failure.tries > 1 else ""
        if failure.kind == "stopped":
            return _NotAsked(f"{where}: not asked, an earlier request failed")
        if failure.kind == "timeout":
            return JudgeError(f"{where} did not answer within {self.settings.timeout:g} s (params.timeout); raise "
                              "params.timeout, lower params.concurrency, or check the server")
        if failure.kind == "unreachable":
            return JudgeError(f"{where} could not be reached{after} ({failure.reason}); check params.base_url and that "
                              "the server runs")
        status = failure.status or 0
        if status in (401, 403):
            fix = "check params.api_key_env (the endpoint refused the key)"
        elif status in (404, 405):
            fix = "check params.base_url (it should end in /v1) and params.model"
        elif failure.retried:
            fix = "check the server, or raise params.retries"
        else:
            fix = "check params.base_url and params.model against the endpoint's API"
        return JudgeError(f"{where} answered {status}{after}: {failure.body}; {fix}")


def _grade(answer: CachedAnswer, *, requests: int, cached: bool = False, error: str = "") -> JudgeGrade:
    if answer.grade is None and not error:
        error = f"no grade in the answer {snippet(answer.answer.encode('utf-8'))} (asked twice)"
    return JudgeGrade(
        grade=None if answer.grade is None else float(answer.grade),
        explanation=" ".join(answer.answer.split())[:EXPLANATION_CHARS],
        prompt_tokens=answer.prompt_tokens,
        completion_tokens=answer.completion_tokens,
        seconds=answer.seconds,
        cached=cached,
        requests=requests,
        error=error,
    )


def _shared(grade: JudgeGrade) -> JudgeGrade:
    """The same question asked twice in one run: the same answer, its cost counted once."""
    return JudgeGrade(grade.grade, grade.explanation, 0, 0, 0.0, cached=grade.cached, requests=0, error=grade.error)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _first(failed: list[Future[_Asked]]) -> BaseException:
    """The error to report: a real failure before a 'not asked' one."""
    errors = [error for future in failed if (error := future.exception()) is not None]
    return next((error for error in errors if not isinstance(error, _NotAsked)), errors[0])
