"""Exact top-k over passages split into shards: each shard's top k, merged by the ranking rule.

Rows are the passages in doc-id order (the dense retriever sorts its corpus), so "doc id
descending" is "row descending" and one shard's best k, with global row numbers, holds every
row of that shard that can enter the global best k: a row beaten by k rows of its own shard
is beaten by them globally too, and among rows tied at a shard's cut-off the shard keeps the
greater rows, as the global rule does. Merging the shards' lists with the same rule therefore
gives exactly the rows of local exact search, in the same order.

Scores are the same bits too: both sides score a (query, passage) pair with
:func:`rag_eval._core.scores.inner_products`, which does not depend on how passages or
queries are split, nor on the BLAS thread count (a float32 BLAS product does).

numpy only: usable without Ray (the Ray engine runs :func:`search_shard` on workers and
:func:`merge_top_k` on the driver).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rag_eval._core.ranking import check_top_k
from rag_eval._core.topk import select_top_k, top_k_blockwise


def search_shard(
    queries: np.ndarray, passages: np.ndarray, first_row: int, k: int, block_size: int = 65536
) -> tuple[np.ndarray, np.ndarray]:
    """Top ``k`` rows of one shard for every query: ``(global rows int64, scores float32)``.

    ``passages`` are rows ``first_row .. first_row + len(passages) - 1`` of the whole matrix.
    Each result row is sorted by the ranking rule (score descending, row descending) and
    holds ``min(k, len(passages))`` entries. The search itself is local exact search
    (:func:`rag_eval._retrievers.dense.top_k_blockwise`); rows are shifted to global numbers,
    which keeps their order because the shift is the same for all of them.
    """

    if isinstance(first_row, bool) or not isinstance(first_row, (int, np.integer)) or first_row < 0:
        raise ValueError(f"first_row must be an integer >= 0, got {first_row!r}")
    queries = np.asarray(queries)
    if len(passages) == 0:
        n = queries.shape[0]
        return np.empty((n, 0), dtype=np.int64), np.empty((n, 0), dtype=np.float32)
    indices, scores = top_k_blockwise(queries, passages, k, block_size)
    return indices + np.int64(first_row), scores


def merge_top_k(parts: Sequence[tuple[np.ndarray, np.ndarray]], k: int) -> tuple[np.ndarray, np.ndarray]:
    """Merge shards' ``(global rows, scores)`` into the best ``k`` per query, sorted by the ranking rule.

    Every part has one row per query (the same queries, in the same order); parts may have
    different widths (a shard smaller than k). The result has ``min(k, total width)``
    columns: global rows (int64) and scores (float32), score descending, then row
    descending, identical to local exact search when each part came from
    :func:`search_shard` over disjoint shards covering all rows.
    """
    check_top_k(k, name="k")
    if not parts:
        raise ValueError("merge_top_k needs at least one shard's results")
    rows = [np.asarray(part[0], dtype=np.int64) for part in parts]
    scores = [np.asarray(part[1]) for part in parts]
    n_queries = rows[0].shape[0]
    for r, s in zip(rows, scores):
        if r.ndim != 2 or r.shape != s.shape or r.shape[0] != n_queries:
            raise ValueError(
                f"each shard's rows and scores must be 2-D with {n_queries} query rows, got {r.shape} and {s.shape}"
            )
    all_rows = np.concatenate(rows, axis=1)
    all_scores = np.concatenate(scores, axis=1)
    # select_top_k breaks ties by the greater "rank"; the global row is that rank (row order = doc-id order).
    keep = select_top_k(all_scores, all_rows, int(k), ordered=True)
    return np.take_along_axis(all_rows, keep, axis=1), np.take_along_axis(all_scores, keep, axis=1)


def shard_bounds(n_rows: int, shards: int) -> list[tuple[int, int]]:
    """``[(start, stop), ...]``: ``n_rows`` rows cut into ``min(shards, n_rows)`` contiguous near-equal shards."""
    if n_rows < 0 or shards < 1:
        raise ValueError(f"need n_rows >= 0 and shards >= 1, got {n_rows} and {shards}")
    count = max(1, min(shards, n_rows))
    edges = [n_rows * i // count for i in range(count + 1)]
    return [(edges[i], edges[i + 1]) for i in range(count)]
