"""Rank the retrieved spans of every query at once, by the one rule of rag_eval._core.ranking.

Score descending; equal scores by chunk id (``<doc>#<start>-<end>``, rag_eval._core.spans.chunk_id)
descending in bytes, exactly as passages and documents are ranked (docs/semantics.md). The
order of the input lists does not matter. Retrievers hand back their spans best first,
so the usual case costs one pass to confirm it; otherwise each query's spans are sorted
among themselves (rag_eval._scoring.evidence.blocks). Spans whose score
ties with a neighbour's are ordered by their chunk ids' byte order as integers
(rag_eval._scoring.evidence.chunk_order); the ids themselves are built only where a doc id
begins with another's and '#'. So the cost grows with the spans times the logarithm of one
query's spans, not of all spans: linear in the number of queries.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rag_eval._core.ranking import id_rank
from rag_eval._core.spans import chunk_id
from rag_eval._scoring.evidence.blocks import order_within_blocks
from rag_eval._scoring.evidence.chunk_order import chunk_order
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
        order = _by_score_within_blocks(score, sizes, stable=False)  # ties: by chunk id, next
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
    doc, start, end = spans.doc[source], spans.start[source], spans.end[source]
    key = chunk_order(doc, start, end, doc_keys)  # the ids' byte order, as integers
    if key is None:  # a doc id begins with another's and '#': compare the ids themselves
        key = id_rank([chunk_id(doc_keys[d], s, e) for d, s, e in zip(doc.tolist(), start.tolist(), end.tolist())])
    order = _descending_within_runs(group[rows], key)
    out = perm.copy()
    out[rows] = source[order]  # the tied rows of a run occupy consecutive places: reorder them among themselves
    return out


def _descending_within_runs(run: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Order of rows by ``run`` (ascending, consecutive) then ``key`` (>= 0) descending.

    Runs are short (the spans of one query with one score). With the run in the high part of one
    int64 key, a stable sort (timsort) takes the runs as they come and sorts each among its own
    rows; runs go in batches small enough for that key (one batch unless the keys are large).
    """
    change = np.flatnonzero(run[1:] != run[:-1]) + 1
    bounds = np.concatenate(([0], change, [run.size]))
    n_runs = bounds.size - 1
    scale = int(key.max(initial=0)) + 1
    per_sort = 2**62 // scale  # runs whose (run, key) pairs fit in one int64 together
    if per_sort == 0 or n_runs > 256 * per_sort:  # keys too large for that: each run sorted as a block
        return order_within_blocks(-key, np.diff(bounds))
    local = np.repeat(np.arange(n_runs, dtype=np.int64), np.diff(bounds))
    order = np.empty(run.size, dtype=np.int64)
    for first in range(0, n_runs, per_sort):
        a, b = int(bounds[first]), int(bounds[min(first + per_sort, n_runs)])
        order[a:b] = np.argsort((local[a:b] - first) * scale + (scale - 1 - key[a:b]), kind="stable") + a
    return order


def _by_score_within_blocks(score: np.ndarray, sizes: np.ndarray, stable: bool = True) -> np.ndarray:
    """Order of rows by score descending within consecutive blocks of ``sizes`` rows (stable unless told not).

    Each block is sorted among its own rows (rag_eval._scoring.evidence.blocks), never all rows at once.
    ``stable=False`` leaves equal scores in any order, for a caller that orders them next (rank_spans:
    by chunk id); numpy's default sort is then two to four times faster (vectorised quicksort).
    """
    return order_within_blocks(-score, sizes, stable)  # ascending -score is descending score
