"""Rank the retrieved spans of every query at once, by the one rule of rag_eval._core.ranking.

Score descending; equal scores by chunk id (``<doc>#<start>-<end>``, rag_eval._core.spans.chunk_id)
descending in bytes, exactly as passages and documents are ranked (docs/semantics.md). The
order of the input lists does not matter. Retrievers hand back their spans best first,
so the usual case costs one pass to confirm it; chunk ids are built only for the spans
whose score ties with a neighbour's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rag_eval._core.ranking import id_rank, order_in_groups
from rag_eval._core.spans import chunk_id
from rag_eval._scoring.evidence.tables import SpanColumns


@dataclass(frozen=True)
class RankedSpans:
    """Retrieved spans of the judged queries, grouped by query (ascending), each query best first."""

    n_queries: int
    query: np.ndarray  # int64, index into the judged query ids
    doc: np.ndarray  # int64 doc codes
    start: np.ndarray  # int64
    end: np.ndarray  # int64
    pos: np.ndarray  # int64, 0-based rank within the query
    row: np.ndarray  # int64, the span's row in the SpanColumns it came from
    counts: np.ndarray  # int64, spans per query
    first: np.ndarray  # int64, first ranked row of each query

    @property
    def length(self) -> np.ndarray:
        """Characters in each span."""
        return self.end - self.start


def rank_spans(spans: SpanColumns, key_query: np.ndarray, n_queries: int, doc_keys: list[str]) -> RankedSpans:
    """Rank the spans of the queries that ``key_query`` maps to 0..n_queries-1 (others, -1, are dropped).

    ``key_query[i]`` is the judged query index of ``spans.query_keys[i]``.
    """
    assert spans.doc is not None
    lengths = spans.lengths
    block_first = np.cumsum(lengths) - lengths
    kept = np.flatnonzero((key_query >= 0) & (lengths > 0))
    blocks = kept[np.argsort(key_query[kept], kind="stable")]  # each query's list, in query order
    sizes = lengths[blocks]
    total = int(sizes.sum())
    perm = np.repeat(block_first[blocks] - (np.cumsum(sizes) - sizes), sizes) + np.arange(total, dtype=np.int64)
    query = np.repeat(key_query[blocks], sizes)
    score = spans.value[perm]
    if total > 1 and not bool(np.all((query[1:] != query[:-1]) | (score[1:] <= score[:-1]))):
        order = _by_score_within_blocks(score, sizes)
        perm, score = perm[order], score[order]  # (query is sorted already and stays so)
    if total > 1:
        same = (query[1:] == query[:-1]) & (score[1:] == score[:-1])  # -0.0 ties with 0.0, as when sorting
        if same.any():
            perm = _break_ties(spans, perm, score, same, doc_keys)
    first = np.searchsorted(query, np.arange(n_queries), side="left")
    counts = np.bincount(query, minlength=n_queries).astype(np.int64)
    pos = np.arange(total, dtype=np.int64) - first[query]
    return RankedSpans(
        n_queries=n_queries,
        query=query,
        doc=spans.doc[perm],
        start=spans.start[perm],
        end=spans.end[perm],
        pos=pos,
        row=perm,
        counts=counts,
        first=first.astype(np.int64),
    )


def _break_ties(spans: SpanColumns, perm: np.ndarray, score: np.ndarray, same: np.ndarray, doc_keys: list[str]):
    """Order each run of equal scores (within a query) by chunk id descending, rag_eval._core.ranking's rule."""
    assert spans.doc is not None
    tied = np.zeros(perm.size, dtype=bool)
    tied[1:] |= same
    tied[:-1] |= same
    group = np.cumsum(np.concatenate(([True], ~same)))  # one number per run of equal (query, score)
    rows = np.flatnonzero(tied)
    source = perm[rows]
    ids = [
        chunk_id(doc_keys[d], s, e)
        for d, s, e in zip(spans.doc[source].tolist(), spans.start[source].tolist(), spans.end[source].tolist())
    ]
    order = order_in_groups(group[rows], score[rows], id_rank(ids))
    out = perm.copy()
    out[rows] = source[order]  # the tied rows of a run occupy consecutive places: reorder them among themselves
    return out


def _by_score_within_blocks(score: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Order of rows by score descending within consecutive blocks of ``sizes`` rows (stable).

    Queries hold a few hundred spans at most, so the blocks are laid out as the rows of a
    matrix (padded with -inf) and sorted row by row, much faster than one sort of all rows
    with the block as first key; a few very long blocks fall back to that sort.
    """
    widest = int(sizes.max())
    if widest * sizes.size > 2 * score.size + 1024:
        query = np.repeat(np.arange(sizes.size), sizes)
        return np.lexsort((-score, query))
    starts = np.cumsum(sizes) - sizes
    column = np.arange(score.size, dtype=np.int64) - np.repeat(starts, sizes)
    block = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    matrix = np.full((sizes.size, widest), np.inf)
    matrix[block, column] = -score  # ascending -score is descending score; padding (inf) sorts last
    columns = np.argsort(matrix, axis=1, kind="stable")
    order = columns + starts[:, None]
    return order[np.arange(widest) < sizes[:, None]]  # the first `size` places of each row are its spans
