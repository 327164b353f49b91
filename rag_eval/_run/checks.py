"""What a retriever answered, checked: the shape of a ranking, before anything is evaluated.

A retriever that fails while the run calls it, or answers something invalid, raises
:class:`RetrieverRunError`: the error names the retriever, and ``rag-eval run`` adds the
config that holds it. A retriever that cannot be built is a plain RetrieverError naming the
config already.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from rag_eval._core.errors import RetrieverError
from rag_eval._core.ranking import top_k as best_of

# A span of a document, (doc, start, end), and a retrieved one with its score.
Span = tuple[str, int, int]
ScoredSpan = tuple[str, int, int, float]


class RetrieverRunError(RetrieverError):
    """A retriever failed in ``index()`` or ``search()``, or returned an invalid answer; the message names it."""


def check_ranking(
    label: str, raw: Any, queries: Mapping[str, str], corpus: Mapping[str, Any], top_k: int
) -> dict[str, dict[str, float]]:
    """Check a retriever's answer and cut each query's list to ``top_k``.

    A doc id not in the corpus, a score that is not an int or a float (a str, a
    bool), a NaN or infinite score, or a query id that was not asked stops the run
    with an error naming the retriever, the query and the document.
    """

    if not isinstance(raw, Mapping):
        raise RetrieverRunError(f"retriever {label!r}: search() returned {type(raw).__name__}, expected {{qid: {{doc_id: score}}}}")
    ranking: dict[str, dict[str, float]] = {}
    for qid, scored in raw.items():
        if qid not in queries:
            raise RetrieverRunError(f"retriever {label!r}: search() answered query {qid!r}, which was not asked")
        if not isinstance(scored, Mapping):
            raise RetrieverRunError(f"retriever {label!r}: query {qid!r}: expected {{doc_id: score}}, got {type(scored).__name__}")
        clean: dict[str, float] = {}
        for doc, score in scored.items():
            if doc not in corpus:
                raise RetrieverRunError(f"retriever {label!r}: query {qid!r}: returned doc {doc!r}, which is not in the corpus")
            if not isinstance(score, _SCORE_TYPES) or isinstance(score, _NOT_SCORES):
                # A str ("1.0") or a bool is not a score, even where float() would take it.
                raise RetrieverRunError(
                    f"retriever {label!r}: query {qid!r}, doc {doc!r}: score {_short_repr(score)} "
                    f"({type(score).__name__}) is not a number; return an int or a float"
                )
            try:
                value = float(score)
            except (TypeError, ValueError):
                raise RetrieverRunError(f"retriever {label!r}: query {qid!r}, doc {doc!r}: score {score!r} is not a number") from None
            except OverflowError:  # an int past float64's range
                raise RetrieverRunError(
                    f"retriever {label!r}: query {qid!r}, doc {doc!r}: score {_short_repr(score)} is too large for a "
                    "float64; return scores a float can hold"
                ) from None
            if math.isnan(value):
                raise RetrieverRunError(f"retriever {label!r}: query {qid!r}, doc {doc!r}: score is NaN")
            if math.isinf(value):
                # Results files are strict JSON, which has no Infinity; a ranking needs no infinite score.
                raise RetrieverRunError(
                    f"retriever {label!r}: query {qid!r}, doc {doc!r}: score is {value}; scores must be finite numbers"
                )
            clean[doc] = value
        if len(clean) > top_k:
            clean = best_of(clean, top_k)
        ranking[qid] = clean
    for qid in queries:
        ranking.setdefault(qid, {})
    return ranking


# What a retriever may give as a score: Python and numpy numbers, never a bool (an int to Python) or a str.
_SCORE_TYPES = (int, float, np.integer, np.floating)


_NOT_SCORES = (bool, np.bool_)


def _short_repr(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
