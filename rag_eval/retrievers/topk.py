"""Exact top-k of score arrays under the ranking rule (score descending, ties by id descending).

``np.argpartition`` is the fast way to take the best k of many scores, but among
scores tied at the k-th place it keeps an arbitrary subset. The ranking rule
(rag_eval.ranking) says which: the documents with the greater ids. Rows where the
partition split a tie are redone exactly; in the common case (no tie at the
cut-off) the cost is two comparisons per cell.
"""

from __future__ import annotations

import numpy as np

from rag_eval.ranking import order_rows


def select_top_k(scores: np.ndarray, ranks: np.ndarray, k: int, ordered: bool = True) -> np.ndarray:
    """Column positions of the best ``k`` cells of each row of ``scores``.

    ``ranks`` (same shape, or one row shared by all rows) orders ids: a greater
    rank wins a tie, as a greater doc id does (see :func:`rag_eval.ranking.id_rank`).
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
