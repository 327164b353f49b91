"""Interval arithmetic on half-open integer intervals ``[start, end)``, vectorised.

Intervals of many groups (one group per query and document) are laid on one line
by offsetting each group by ``group * width``, where ``width`` exceeds every end:
intervals of different groups can then never touch, and a union, an intersection
or a measure is computed for every group at once with a sort and a running
maximum, never a Python loop per interval.
"""

from __future__ import annotations

import numpy as np


def on_one_line(group: np.ndarray, start: np.ndarray, end: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) offset by ``group * width`` (int64; the caller keeps group * width below 2**62)."""
    base = group.astype(np.int64) * width
    return base + start, base + end


def union(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Union of intervals sorted by start: (index of the first interval of each piece, starts, ends).

    The pieces are disjoint and sorted; intervals that overlap or touch form one piece.
    """
    n = start.size
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    reach = np.maximum.accumulate(end)
    begins = np.empty(n, dtype=bool)
    begins[0] = True
    np.greater(start[1:], reach[:-1], out=begins[1:])
    first = np.flatnonzero(begins)
    last = np.empty_like(first)
    last[:-1] = first[1:] - 1
    last[-1] = n - 1
    return first, start[first], reach[last]


class Measure:
    """How much of a union of disjoint sorted intervals lies in any interval ``[a, b)``: ``F(b) - F(a)``.

    ``F(x)`` = measure of the union below ``x``, found by binary search and a prefix sum.
    """

    def __init__(self, start: np.ndarray, end: np.ndarray) -> None:
        self.start = start
        self.length = end - start
        self.before = np.cumsum(self.length) - self.length  # measure of the pieces before each piece

    def below(self, x: np.ndarray) -> np.ndarray:
        """Measure of the union in ``(-inf, x)``."""
        if self.start.size == 0:
            return np.zeros(x.shape, dtype=np.int64)
        piece = np.searchsorted(self.start, x, side="right") - 1  # the last piece starting at or before x
        safe = np.maximum(piece, 0)
        inside = np.minimum(x - self.start[safe], self.length[safe])
        return np.where(piece >= 0, self.before[safe] + inside, 0)

    def within(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Measure of the union inside each ``[a, b)``."""
        return self.below(b) - self.below(a)


def intersect(
    a_start: np.ndarray, a_end: np.ndarray, b_start: np.ndarray, b_end: np.ndarray, keep_b_only: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Pieces of A ∩ B (or of B \\ A with ``keep_b_only``), for A and B each disjoint and sorted.

    A sweep over all endpoints: where both counts are 1 (or B's is 1 and A's is 0), a piece.
    """
    points = np.concatenate((a_start, a_end, b_start, b_end))
    if points.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    na, nb = a_start.size, b_start.size
    in_a = np.concatenate((np.ones(na, np.int64), -np.ones(na, np.int64), np.zeros(2 * nb, np.int64)))
    in_b = np.concatenate((np.zeros(2 * na, np.int64), np.ones(nb, np.int64), -np.ones(nb, np.int64)))
    order = np.argsort(points, kind="stable")
    points = points[order]
    count_a, count_b = np.cumsum(in_a[order]), np.cumsum(in_b[order])
    # After the last event at a point, the counts hold on [point, next point).
    last_at_point = np.ones(points.size, dtype=bool)
    np.not_equal(points[1:], points[:-1], out=last_at_point[:-1])
    where = np.flatnonzero(last_at_point)
    left = points[where]
    right = np.append(left[1:], left[-1])
    inside = (count_b[where] == 1) & ((count_a[where] == 0) if keep_b_only else (count_a[where] == 1))
    inside &= right > left
    piece_start, piece_end = left[inside], right[inside]
    # Join pieces that touch (one piece of B may be cut by A's endpoints into several).
    if piece_start.size:
        _, piece_start, piece_end = union(piece_start, piece_end)
    return piece_start, piece_end
