"""Exact top-k of score arrays under the ranking rule (score descending, ties by id descending).

``np.argpartition`` is the fast way to take the best k of many scores, but among
scores tied at the k-th place it keeps an arbitrary subset. The ranking rule
(rag_eval._core.ranking) says which: the documents with the greater ids. Rows where the
partition split a tie are redone exactly; in the common case (no tie at the
cut-off) the cost is two comparisons per cell.
"""

from __future__ import annotations

import numpy as np

from rag_eval._core.ranking import check_top_k, order_rows
from rag_eval._core.scores import inner_products

# Upper bound on score cells computed at once (query rows x passage columns).
# With float32 scores plus argpartition's int64 indices and the tie checks this is ~250 MB.
MAX_CELLS = 1 << 24


def select_top_k(scores: np.ndarray, ranks: np.ndarray, k: int, ordered: bool = True) -> np.ndarray:
    """Column positions of the best ``k`` cells of each row of ``scores``.

    ``ranks`` (same shape, or one row shared by all rows) orders ids: a greater
    rank wins a tie, as a greater doc id does (see :func:`rag_eval._core.ranking.id_rank`).
    The result has shape ``(rows, min(k, columns))``; with ``ordered`` each row is
    best first, otherwise in no particular order (the same set either way).
    """
    scores = np.asarray(scores)
    if scores.ndim != 2:
        raise ValueError(f"scores must be 2-D, got shape {scores.shape}")
    n_rows, width = scores.shape
    ranks = np.broadcast_to(np.asarray(ranks), scores.shape)
    k = min(k, width)
    if k <= 0:
        return np.empty((n_rows, 0), dtype=np.int64)
    if k < width:
        positions = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        kept = np.take_along_axis(scores, positions, axis=1)
        cut = kept.min(axis=1)  # the k-th best score of each row
        tied_everywhere = np.count_nonzero(scores == cut[:, None], axis=1)
        tied_kept = np.count_nonzero(kept == cut[:, None], axis=1)
        for row in np.flatnonzero(tied_everywhere != tied_kept):
            positions[row] = _exact_row(scores[row], ranks[row], k, cut[row])
    else:
        positions = np.tile(np.arange(width, dtype=np.int64), (n_rows, 1))
    if not ordered:
        return positions
    order = order_rows(np.take_along_axis(scores, positions, axis=1), np.take_along_axis(ranks, positions, axis=1))
    return np.take_along_axis(positions, order, axis=1)


def _exact_row(scores: np.ndarray, ranks: np.ndarray, k: int, cut: float) -> np.ndarray:
    """Every cell above the cut-off score, then the tied cells with the greatest ranks."""
    above = np.flatnonzero(scores > cut)
    tied = np.flatnonzero(scores == cut)
    need = k - above.size
    greatest = tied[np.argsort(ranks[tied], kind="stable")[tied.size - need :]]
    return np.concatenate([above, greatest])


def top_k_blockwise(
    queries: np.ndarray, passages: np.ndarray, k: int, block_size: int = 65536
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-``k`` inner products of each query row against all passage rows.

    Returns ``(indices, scores)``, both of shape ``(n_queries, min(k, n_passages))``,
    each row sorted by score descending, then passage index DESCENDING: the
    ranking rule (rag_eval._core.ranking) with the index as the id, which is exact for
    :class:`DenseRetriever`, whose passages are sorted by doc id. Passages are
    scored ``block_size`` at a time; each block's best ``k`` are merged with the
    running best ``k``. Ties at the cut-off keep the greater indices, exactly as a
    full sort would (see :func:`rag_eval._core.topk.select_top_k`).
    """
    check_top_k(k, name="k")
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    n_queries, n_passages = queries.shape[0], passages.shape[0]
    k = min(k, n_passages)
    indices = np.empty((n_queries, k), dtype=np.int64)
    scores = np.empty((n_queries, k), dtype=np.float32)
    if k == 0 or n_queries == 0:
        return indices, scores
    block_size = min(block_size, n_passages)
    query_block = max(1, MAX_CELLS // block_size)
    for q_start in range(0, n_queries, query_block):
        q = queries[q_start : q_start + query_block]
        best_s = np.empty((q.shape[0], 0), dtype=np.float32)
        best_i = np.empty((q.shape[0], 0), dtype=np.int64)
        for p_start in range(0, n_passages, block_size):
            # Not q @ p.T in float32: BLAS rounds a cell differently for other shapes and thread counts;
            # inner_products gives the same bits however passages are split (sharded search relies on it).
            block_scores = inner_products(q, passages[p_start : p_start + block_size])
            block_ids = np.arange(p_start, p_start + block_scores.shape[1], dtype=np.int64)
            keep = select_top_k(block_scores, block_ids, k, ordered=False)
            cand_s = np.concatenate([best_s, np.take_along_axis(block_scores, keep, axis=1)], axis=1)
            cand_i = np.concatenate([best_i, keep + p_start], axis=1)
            keep = select_top_k(cand_s, cand_i, k, ordered=False)
            best_s = np.take_along_axis(cand_s, keep, axis=1)
            best_i = np.take_along_axis(cand_i, keep, axis=1)
        order = order_rows(best_s, best_i)
        scores[q_start : q_start + q.shape[0]] = np.take_along_axis(best_s, order, axis=1)
        indices[q_start : q_start + q.shape[0]] = np.take_along_axis(best_i, order, axis=1)
    return indices, scores
