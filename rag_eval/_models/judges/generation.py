"""Synthetic questions about documents, through the LLM judge's endpoint, each with a quote checked to occur once.

:class:`QuestionGenerator` asks an OpenAI-compatible chat endpoint (the one a JUDGE.yaml with
``adapter: llm`` names) for N questions per document with the prompt of
:mod:`rag_eval._models.judges.questions` (``question-quote-v1``), at temperature 0, through the
judge's own transport: the same retries and back-off (:mod:`rag_eval._core.http_requests`), the
same one-line errors, the same API key handling. Every answer is kept in the judge's answer cache
(:mod:`rag_eval._models.judges.cache`, the same file) under
``answer_key(model, "question-quote-v1", document text, "<N> questions, max_tokens <M>")``, so a
rerun asks nothing it asked before; an answer that never came (a refusal, a failure) is not kept.

Each entry of an answer gets one status, the first that applies:

- ``over``: past the N asked for (the model wrote more);
- ``unparseable``: a question without a quote, or a quote without a question;
- ``quote twice``: the quote occurs more than once in the document (no span without a guess);
- ``quote not found``: the quote occurs nowhere in the document;
- ``repeated``: the same question (case and spaces aside) as an earlier one, or as an existing query;
- ``kept``: its evidence span is where the quote occurs once.

A quote is looked for exactly, code point for code point, then (only when it is found nowhere)
with runs of white space matching any run and case ignored (:func:`rag_eval._data.judging.anchor.anchor`,
the rule that re-anchors edited evidence); a quote the model wrapped in quotation marks is tried as
written, then without them. A kept span's quote is the document's own text at the span, which
occurs exactly once, so that the loader finds it exactly.

The answer's length cap is the judge's ``max_tokens`` or :data:`TOKENS_PER_QUESTION` per question,
whichever is larger (the judge's 64 would cut a list of questions short).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from rag_eval._data.judging.anchor import Found, anchor
from rag_eval._models.judges import questions
from rag_eval._models.judges.cache import CachedAnswer, answer_key
from rag_eval._models.judges.llm import LlmJudge, _Refused

#: Tokens the answer may take per question asked (a question and its quote, with their labels).
TOKENS_PER_QUESTION = 128
#: The largest answer cap the judge's parameters allow.
MAX_TOKENS = 32768

KEPT = "kept"
OVER = "over"
UNPARSEABLE = "unparseable"
TWICE = "quote twice"
NOT_FOUND = "quote not found"
REPEATED = "repeated"
ROUND_TRIP = "round trip"  # set by the round trip (rag_eval._commands.generate), never here
#: Every reason a question is dropped, in the order the summary line lists them.
DROPPED = (NOT_FOUND, TWICE, ROUND_TRIP, UNPARSEABLE, REPEATED, OVER)


@dataclass(frozen=True)
class Question:
    """One entry of a document's answer: the question, the quote as written, its status and (kept) its span."""

    doc: str
    number: int  # its position in the document's answer, 1 first
    question: str
    quote: str
    status: str
    span: tuple[int, int] | None = None  # [start, end) of the quote in the document, when found once
    how: str = ""  # "exact" or "tolerant" (white space and case ignored), when found once
    why: str = ""  # for a dropped one: what was found


@dataclass
class Generated:
    """Every question of every document, in the documents' order, and what asking cost."""

    source: str  # llm:<model>
    per_document: int
    documents: int = 0
    questions: list[Question] = field(default_factory=list)
    silent: list[str] = field(default_factory=list)  # documents whose answer held no question at all
    refused: list[tuple[str, str]] = field(default_factory=list)  # (doc, why): the endpoint refused the question
    cache_hits: int = 0
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    def count(self, status: str) -> int:
        """How many questions have ``status``."""
        return sum(question.status == status for question in self.questions)


@dataclass(frozen=True)
class _Answer:
    """One document's answer, from the endpoint or the cache (``refused``: the endpoint refused the question)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    requests: int = 0
    cached: bool = False
    refused: str = ""


class _Asker(LlmJudge):
    """The LLM judge's endpoint, transport, retries, cache and error wording, asked for questions instead of grades."""

    def ask(self, messages: list[dict[str, str]]) -> _Answer:
        """One answer, or ``refused`` (400, 413, 422: a document too long for the model); any other failure raises."""
        try:
            text, prompt_tokens, completion_tokens, seconds, requests = self._complete(messages)
        except _Refused as refused:
            return _Answer("", requests=refused.tries, refused=refused.reason)
        return _Answer(text, prompt_tokens, completion_tokens, seconds, requests)

    def stop(self) -> None:
        """Send nothing more (a request failed for good): requests not yet sent fail as 'not asked'."""
        self._stop.set()


def question_key(model: str, document: str, per_document: int, max_tokens: int) -> str:
    """The cache key of one document's answer: the judge's key with the prompt version, the text, N and the cap."""
    return answer_key(model, questions.PROMPT_VERSION, document, f"{per_document} questions, max_tokens {max_tokens}")


class QuestionGenerator:
    """Asks ``judge``'s endpoint for ``per_document`` questions per document (see the module docstring)."""

    def __init__(self, judge: LlmJudge, per_document: int) -> None:
        settings = judge.settings
        self.per_document = per_document
        self.max_tokens = min(MAX_TOKENS, max(settings.max_tokens, TOKENS_PER_QUESTION * per_document))
        params: dict[str, Any] = {**settings.model_dump(), "max_tokens": self.max_tokens}
        self.asker = _Asker(**params)
        self.model = settings.model
        self.source = judge.source
        self.description = f"rag_eval generate, prompt {questions.PROMPT_VERSION}, {judge.shown}"
        self._lock = threading.Lock()

    def generate(
        self,
        documents: Mapping[str, str],
        *,
        known_questions: Iterable[str] = (),
        progress: Callable[[int], None] | None = None,
    ) -> Generated:
        """The questions about ``documents`` (``{doc id: text}``, in order), each with its status.

        ``known_questions``: the texts of existing queries; a synthetic question equal to one is ``repeated``.
        A failure of the endpoint (down, 401/403/404, 429 or 5xx after the retries, a timeout, no chat
        completion) raises the judge's one-line JudgeError; nothing is returned then.
        """
        started = time.perf_counter()
        result = Generated(self.source, self.per_document, documents=len(documents))
        keys = {doc: question_key(self.model, text, self.per_document, self.max_tokens) for doc, text in documents.items()}
        sharing = Counter(keys.values())  # documents with one text: asked once
        answers: dict[str, _Answer] = {}
        todo: dict[str, str] = {}
        cache = self.asker.cache
        for doc, key in keys.items():
            cached = (cache.get(key, model=self.model, prompt_version=questions.PROMPT_VERSION)
                      if cache is not None else None)
            if cached is not None:
                answers[key] = _Answer(cached.answer, cached.prompt_tokens, cached.completion_tokens, cached.seconds,
                                       cached=True)
                if progress is not None:
                    progress(1)
            elif key not in todo:
                todo[key] = documents[doc]
        done = None if progress is None else (lambda key: progress(sharing[key]))
        answers.update(self._ask_all(todo, done))
        if cache is not None:
            cache.compact()  # damaged lines dropped now, even when every answer was cached
        seen = {_normal(text) for text in known_questions}
        counted: set[str] = set()
        for doc, text in documents.items():
            key = keys[doc]
            answer = answers[key]
            if key not in counted:  # two documents with one text: asked once, paid once
                counted.add(key)
                result.cache_hits += answer.cached
                result.requests += answer.requests
                if not answer.cached:
                    result.prompt_tokens += answer.prompt_tokens
                    result.completion_tokens += answer.completion_tokens
            if answer.refused:
                result.refused.append((doc, answer.refused))
                continue
            found = judge_answer(doc, text, answer.text, self.per_document, seen)
            if not found:
                result.silent.append(doc)
            result.questions += found
        result.seconds = time.perf_counter() - started
        return result

    def _ask_all(self, todo: Mapping[str, str], done: Callable[[str], None] | None) -> dict[str, _Answer]:
        """Each document's answer, ``concurrency`` at a time, kept in the cache as it comes; the first failure stops all."""
        if not todo:
            return {}
        answers: dict[str, _Answer] = {}
        pool = ThreadPoolExecutor(max_workers=self.asker.settings.concurrency, thread_name_prefix="rag-eval-generate")
        try:
            futures: dict[Future[_Answer], str] = {
                pool.submit(self._ask, key, text): key for key, text in todo.items()
            }
            for future in as_completed(futures):
                error = future.exception()
                if error is not None:
                    self.asker.stop()
                    raise error
                answers[futures[future]] = future.result()
                if done is not None:
                    done(futures[future])
        except BaseException:
            self.asker.stop()
            raise
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        return answers

    def _ask(self, key: str, document: str) -> _Answer:
        answer = self.asker.ask(questions.messages(document, self.per_document))
        cache = self.asker.cache
        if cache is not None and not answer.refused:
            entry = CachedAnswer(answer.text, None, answer.prompt_tokens, answer.completion_tokens,
                                 round(answer.seconds, 6))
            cache.put(key, entry, model=self.model, prompt_version=questions.PROMPT_VERSION)
        return answer


def judge_answer(doc: str, document: str, answer: str, per_document: int, seen: set[str]) -> list[Question]:
    """The entries of one document's ``answer``, each with its status; ``seen`` (normalised question texts) grows.

    Pure but for ``seen``: the statuses of the module docstring, in order.
    """
    out = []
    for number, entry in enumerate(questions.parse_questions(answer), start=1):
        base = Question(doc, number, entry.question, entry.quote, KEPT)
        if number > per_document:
            out.append(_with(base, OVER, why=f"only {per_document} asked for"))
            continue
        if not entry.readable:
            missing = "quote" if entry.question else "question"
            out.append(_with(base, UNPARSEABLE, why=f"no {missing}"))
            continue
        located = locate(document, entry.quote)
        if not isinstance(located, Found):
            out.append(_with(base, TWICE if located else NOT_FOUND, why=_places(located)))
            continue
        normal = _normal(entry.question)
        if normal in seen:
            out.append(_with(base, REPEATED, why="the same question is asked already"))
            continue
        seen.add(normal)
        out.append(_with(base, KEPT, span=(located.start, located.end), how=located.how))
    return out


def locate(document: str, quote: str) -> Found | tuple[tuple[int, int], ...]:
    """Where ``quote`` occurs once in ``document`` (see the module docstring); else the first two places (or none)."""
    for form in questions.quote_forms(quote):
        found = anchor(document, form)
        if isinstance(found, Found):
            return found
        if found.ambiguous:
            return found.places
    return ()


def _places(places: tuple[tuple[int, int], ...]) -> str:
    if not places:
        return "not in the document"
    return "at " + " and ".join(f"[{start}, {end})" for start, end in places)


def _with(base: Question, status: str, **changes: Any) -> Question:
    return Question(**{**base.__dict__, "status": status, **changes})


def _normal(text: str) -> str:
    """A question as compared for repeats: case folded, white space collapsed, a final question mark aside."""
    return " ".join(text.casefold().split()).rstrip("?").rstrip()
