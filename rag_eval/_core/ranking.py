"""The ranking rule, in one place: score descending, ties by id descending (bytes).

trec_eval orders a query's documents by score descending and breaks ties by doc id
descending, comparing bytes. Every component that ranks (the TREC writer, the
evaluator, static replay, dense top-k, hybrid fusion, re-ranking, reports) uses
the functions here, so that a tie at a cut-off keeps the same document everywhere.
How deep a search may go (``top_k`` >= 1) is checked here too (:func:`check_top_k`).

Python compares ``str`` by code point, and UTF-8 preserves code-point order, so
comparing the strings is comparing their UTF-8 bytes.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def _key(item: tuple[str, float]) -> tuple[float, str]:
    return (item[1], item[0])


def outranks(doc: str, score: float, other: str, other_score: float) -> bool:
    """Whether ``doc`` with ``score`` comes before ``other`` with ``other_score`` (the rule above)."""
    return _key((doc, score)) > _key((other, other_score))


def ranked(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """``[(id, score), ...]`` of one query, best first (score desc, id desc)."""
    return sorted(((doc, float(score)) for doc, score in scores.items()), key=_key, reverse=True)


def ranked_ids(scores: Mapping[str, float]) -> list[str]:
    """The ids of one query, best first (score desc, id desc)."""
    return [doc for doc, _ in ranked(scores)]


# The fewest results a search may be asked for: a config's and a results file's ``top_k``
# (declared with pydantic's ``ge``) and every search (:func:`check_top_k`).
TOP_K_MIN = 1


def check_top_k(
    k: object, *, name: str = "top_k", where: str | None = None, error: type[Exception] = ValueError
) -> None:
    """Raise ``error`` unless ``k`` is a search depth: an integer (Python's or numpy's, never a bool) >= ``TOP_K_MIN``.

    The message is ``"{where}: {name} must be an integer >= 1, got {k!r}"``; a retriever names
    itself in ``where`` and raises RetrieverError, an array search calls its depth ``k``.
    """
    # bool is an int subclass: top_k=True is a mistake, not a depth of 1.
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < TOP_K_MIN:
        prefix = f"{where}: " if where else ""
        raise error(f"{prefix}{name} must be an integer >= {TOP_K_MIN}, got {k!r}")


def top_k(scores: Mapping[str, float], k: int) -> dict[str, float]:
    """The best ``k`` of one query as ``{id: score}`` in rank order."""
    return dict(ranked(scores)[:k])


def id_rank(ids: np.ndarray | list[str]) -> np.ndarray:
    """Each id's position in ascending byte order (int64), for vectorised tie-breaking.

    ``lexsort((-id_rank[cols], -scores))`` then orders columns by the rule above.
    """
    ids = np.asarray(ids, dtype=object)
    order = np.array(sorted(range(len(ids)), key=ids.__getitem__), dtype=np.int64)
    rank = np.empty(len(ids), dtype=np.int64)
    rank[order] = np.arange(len(ids), dtype=np.int64)
    return rank


def order_in_groups(groups: np.ndarray, scores: np.ndarray, rank_of_ids: np.ndarray) -> np.ndarray:
    """Order of 1-d rows by group ascending, then within each group by the rule (score desc, id desc).

    ``rank_of_ids`` holds each row's id position in ascending byte order (:func:`id_rank`
    or the engine's packed equivalent).
    """
    return np.lexsort((-rank_of_ids, -scores, groups))


def order_rows(scores: np.ndarray, rank_of_ids: np.ndarray) -> np.ndarray:
    """Column order of each row of ``scores`` by the rule (score desc, id desc).

    ``rank_of_ids`` has the same shape as ``scores`` and holds each cell's id
    position from :func:`id_rank`.
    """
    return np.lexsort((-rank_of_ids, -scores), axis=-1)
