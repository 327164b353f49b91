"""A retriever that chunks the documents itself: its answer as spans, checked against the documents.

Such a retriever has no ``chunker`` and answers ``{qid: [(doc, start, end, score), ...]}`` (or dicts
with those keys, or, replayed from an earlier run, ``{qid: {chunk_id: score}}``). Every span is
checked against the document it names; its id is :func:`rag_eval._core.spans.chunk_id`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rag_eval._core.messages import close_match
from rag_eval._core.spans import chunk_id, parse_chunk_id, span_problem
from rag_eval._retrievers.answer_check import NotAScore, as_score
from rag_eval._run.checks import RetrieverRunError, Span


def returns_own_spans(raw: Any, documents: Mapping[str, str]) -> bool:
    """Whether a search() answer holds spans of its own rather than ``{qid: {doc_id: score}}`` of whole documents.

    Spans are lists ``[(doc_id, start, end, score), ...]``, or mappings keyed by chunk ids
    ``<doc>#<start>-<end>`` (a stored ranking of an earlier run, replayed by ``static``).
    """
    if not isinstance(raw, Mapping):
        return False
    for items in raw.values():
        if isinstance(items, (list, tuple)):
            return True
        if isinstance(items, Mapping):
            # Every key is looked at: an answer may mix whole documents and chunk ids in any order (a set).
            for key in items:
                if isinstance(key, str) and key not in documents:
                    parsed = parse_chunk_id(key)
                    if parsed is not None and parsed[0] in documents:
                        return True
    return False


def as_span_lists(label: str, raw: Mapping[str, Any], documents: Mapping[str, str]) -> dict[str, Any]:
    """An own-spans answer with every query as a list: ``{chunk_id or doc_id: score}`` turned into spans.

    A document id stands for the whole document ``[0, len)``; anything else must be a chunk id of
    a document of the dataset.
    """
    out: dict[str, Any] = {}
    for qid, items in raw.items():
        if not isinstance(items, Mapping):
            out[qid] = items
            continue
        spans = []
        for key, score in items.items():
            if isinstance(key, str) and key in documents:
                spans.append((key, 0, len(documents[key]), score))
                continue
            parsed = parse_chunk_id(key) if isinstance(key, str) else None
            if parsed is None or parsed[0] not in documents:
                raise RetrieverRunError(
                    f"retriever {label!r}: query {qid!r}: {key!r} is neither a document of the dataset nor a chunk "
                    "id <document>#<start>-<end> of one; return document ids, chunk ids or (doc_id, start, end, "
                    "score) spans"
                )
            spans.append((*parsed, score))
        out[qid] = spans
    return out


def checked_own_spans(
    label: str, raw: Any, queries: Mapping[str, str], documents: Mapping[str, str]
) -> tuple[dict[str, dict[str, float]], dict[str, Span]]:
    """``(ranking by chunk id, chunk id -> span)`` of an own-spans answer; RetrieverRunError naming the first problem."""
    if not isinstance(raw, Mapping):
        raise RetrieverRunError(
            f"retriever {label!r}: search() returned {type(raw).__name__}, expected "
            "{qid: [(doc_id, start, end, score), ...]}"
        )
    ranking: dict[str, dict[str, float]] = {}
    span_of: dict[str, Span] = {}
    for qid, items in raw.items():
        if qid not in queries:
            raise RetrieverRunError(f"retriever {label!r}: search() answered query {qid!r}, which was not asked")
        if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
            raise RetrieverRunError(
                f"retriever {label!r}: query {qid!r}: expected a list of (doc_id, start, end, score), "
                f"got {type(items).__name__}; a retriever returns ids for every query or spans for every query"
            )
        scored: dict[str, float] = {}
        for position, item in enumerate(items):
            doc, start, end, score = _span_item(label, qid, position, item)
            where = f"retriever {label!r}: query {qid!r}, span {position} ({doc!r}, {start!r}, {end!r})"
            if not isinstance(doc, str):
                raise RetrieverRunError(f"{where}: the document id is {type(doc).__name__}; give the id as a string")
            if doc not in documents:
                raise RetrieverRunError(f"{where}: document {doc!r} is not in the dataset{_guess(doc, documents)}")
            problem = span_problem(start, end, len(documents[doc]))
            if problem:
                raise RetrieverRunError(f"{where}: {problem}")
            start, end = int(start), int(end)  # a numpy integer is kept as Python's (chunk ids, JSON)
            key = chunk_id(doc, start, end)
            if key in scored:
                raise RetrieverRunError(f"{where}: the same span is returned twice for this query; return each span once")
            scored[key] = _score(where, score)
            span_of[key] = (doc, start, end)
        ranking[qid] = scored
    for qid in queries:
        ranking.setdefault(qid, {})
    return ranking, span_of


def _span_item(label: str, qid: str, position: int, item: Any) -> tuple[Any, Any, Any, Any]:
    if isinstance(item, Mapping):
        missing = [key for key in ("doc", "start", "end", "score") if key not in item]
        if not missing:
            return item["doc"], _offset(item["start"]), _offset(item["end"]), item["score"]
        problem = f"misses {', '.join(missing)}"
    elif isinstance(item, (tuple, list)) and len(item) == 4:
        return item[0], _offset(item[1]), _offset(item[2]), item[3]
    else:
        problem = f"is {type(item).__name__}" + (f" of {len(item)}" if isinstance(item, (tuple, list)) else "")
    raise RetrieverRunError(
        f"retriever {label!r}: query {qid!r}, span {position}: {problem}; "
        "give (doc_id, start, end, score) or {doc, start, end, score}"
    )


def _offset(value: Any) -> Any:
    """A numpy integer offset as the int it is (pipelines built on numpy return np.int64); anything else as given."""
    if isinstance(value, np.integer) and not isinstance(value, np.bool_):
        return int(value)
    return value


def _guess(doc: Any, documents: Mapping[str, str]) -> str:
    """``; did you mean 'x'?`` for an unknown document id, when one is close."""
    guess = close_match(doc, documents) if isinstance(doc, str) else None
    return f"; did you mean {guess!r}?" if guess else ""


def _score(where: str, score: Any) -> float:
    try:
        return as_score(score)  # the one rule for a score (rag_eval._retrievers.answer_check)
    except NotAScore as problem:
        raise RetrieverRunError(f"{where}: {problem}") from None
