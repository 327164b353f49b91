"""What a retriever answered, checked: the shape of a ranking and its scores, in one place.

The run checks every top-level retriever's answer here (:mod:`rag_eval._run.checks`), and a
retriever that asks others (``hybrid``'s children) checks each child's answer with the same
function: a rule written once holds for both. It sits with the retrievers, below the run,
so that an adapter may use it (layers import only downward).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from rag_eval._core.errors import RetrieverError
from rag_eval._core.ranking import top_k as best_of


class RetrieverRunError(RetrieverError):
    """A retriever failed in ``index()`` or ``search()``, or returned an invalid answer; the message names it."""


# What a retriever may give as a score: Python and numpy numbers, never a bool (an int to Python) or a str.
_SCORE_TYPES = (int, float, np.integer, np.floating)
_NOT_SCORES = (bool, np.bool_)


def is_score(value: Any) -> bool:
    """Whether ``value`` is of a type a score may have: an int or a float (Python's or numpy's), not a bool or a str.

    Only the type: a NaN or an infinite float is a float (:func:`check_answer` refuses those by value).
    """
    return isinstance(value, _SCORE_TYPES) and not isinstance(value, _NOT_SCORES)


class NotAScore(ValueError):
    """Why a value is not a score (the caller says whose and where)."""


def as_score(value: Any) -> float:
    """``value`` as a float score; :class:`NotAScore` saying why not.

    The one rule for a score: an int or a float (Python's or numpy's), never a bool or a str (even where
    ``float()`` would take it), within float64's range, neither NaN nor infinite (results files are strict
    JSON, which has no Infinity; a ranking needs no infinite score).
    """
    if not is_score(value):
        raise NotAScore(f"score {short_repr(value)} ({type(value).__name__}) is not a number; return an int or a float")
    try:
        number = float(value)
    except OverflowError:  # an int past float64's range
        raise NotAScore(
            f"score {short_repr(value)} is too large for a float64; return scores a float can hold"
        ) from None
    if math.isnan(number):
        raise NotAScore("score is NaN")
    if math.isinf(number):
        raise NotAScore(f"score is {number}; scores must be finite numbers")
    return number


def check_answer(
    who: str, raw: Any, queries: Mapping[str, str], corpus: Mapping[str, Any], top_k: int
) -> dict[str, dict[str, float]]:
    """Check one retriever's answer and cut each query's list to ``top_k``; every query asked gets a list.

    A doc id not in the corpus, a score that is not an int or a float (a str, a bool), a NaN or infinite
    score, or a query id that was not asked raises :class:`RetrieverRunError`, one line that starts with
    ``who`` (``retriever 'bm25'``; ``hybrid: retrievers[0] (plugs:Mine)`` for a child) and names the query
    and the document.
    """

    if not isinstance(raw, Mapping):
        if inspect.iscoroutine(raw):  # an `async def search`: closed, or Python warns "never awaited" after the line
            raw.close()
        raise RetrieverRunError(f"{who}: search() returned {type(raw).__name__}, expected {{qid: {{doc_id: score}}}}")
    ranking: dict[str, dict[str, float]] = {}
    for qid, scored in raw.items():
        if qid not in queries:
            raise RetrieverRunError(f"{who}: search() answered query {qid!r}, which was not asked")
        if not isinstance(scored, Mapping):
            raise RetrieverRunError(f"{who}: query {qid!r}: expected {{doc_id: score}}, got {type(scored).__name__}")
        clean: dict[str, float] = {}
        for doc, score in scored.items():
            if doc not in corpus:
                raise RetrieverRunError(f"{who}: query {qid!r}: returned doc {doc!r}, which is not in the corpus")
            try:
                value = as_score(score)
            except NotAScore as problem:
                raise RetrieverRunError(f"{who}: query {qid!r}, doc {doc!r}: {problem}") from None
            clean[doc] = value
        if len(clean) > top_k:
            clean = best_of(clean, top_k)
        ranking[qid] = clean
    for qid in queries:
        ranking.setdefault(qid, {})
    return ranking


def short_repr(value: Any, limit: int = 40) -> str:
    """``repr(value)``, cut to ``limit`` characters (a message stays one readable line)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
