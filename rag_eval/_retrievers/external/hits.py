"""A hit as an external retriever returns it, before rag_eval maps it to its own units; its score, settled once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rag_eval._core.errors import RetrieverError
from rag_eval._retrievers.answer_check import NotAScore, as_score


@dataclass(frozen=True)
class Hit:
    """One ranked result of a database, a framework or a service.

    ``id``: the backend's own id of the hit (a point id, a row key, a node id), or None.
    ``score``: higher is better (an adapter turns a distance into a similarity before it builds
    the hit), or None when the backend gives no score (rank order is used, and the report says so).
    A framework adapter builds its hits with the score as the framework gave it, and
    :func:`settled` makes it a float (or refuses it) before anything reads it.
    ``text``: the chunk's text as stored, or None. ``metadata``: the payload stored with it.
    """

    id: str | None
    score: float | None
    text: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


def settled(adapter: str, query_id: str, hits: Sequence[Hit], sign: float = 1.0) -> list[Hit]:
    """One answer's hits with their scores as rag_eval ranks them: a float times ``sign``, or None.

    The one place where a framework's score becomes a number. None stays None (no score: the hit is
    ranked by its place in the answer, :meth:`rag_eval._retrievers.external.mapping.HitMapper.rank`);
    a number passes the rule every score meets (:func:`rag_eval._retrievers.answer_check.as_score`);
    anything else (a str such as ``"0.53"``, a bool, a NaN) is refused in one line naming the adapter,
    the query and the hit. ``sign`` -1 turns a distance (lower = better) into a similarity.
    """
    out: list[Hit] = []
    for position, hit in enumerate(hits, start=1):
        if hit.score is None:
            out.append(hit)
            continue
        try:
            number = as_score(hit.score)
        except NotAScore as problem:
            name = f"id {hit.id!r}" if hit.id is not None else "no id"
            raise RetrieverError(f"{adapter}: query {query_id!r}: hit {position} ({name}): {problem}") from None
        out.append(replace(hit, score=sign * number))
    return out
