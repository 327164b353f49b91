"""Sorting the rows of each block (one block per query, or per run of tied spans) among themselves.

Rows come grouped in consecutive blocks. One sort of all rows with the block as first key costs
the rows times the logarithm of all of them, on arrays far larger than the CPU's caches. Here the
blocks are grouped by width (a block's length rounded up to the next of eight steps per doubling:
..., 64, 72, 80, ..., 128, 144, ...) and each group is laid out as the rows of matrices that wide,
half a megabyte each (at most an eighth of a matrix is padding, and it stays in cache); numpy sorts
a matrix row by row, with its vectorised quicksort (or a stable sort). The cost grows with the rows
times the logarithm of one block's length, whatever the mix of lengths.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

_CELLS = 1 << 16  # cells of one matrix: 512 KB of int64 or float64


def order_within_blocks(key: np.ndarray, sizes: np.ndarray, stable: bool = False) -> np.ndarray:
    """Row order that sorts each block's keys ascending, the blocks kept in place.

    Block ``i`` is the next ``sizes[i]`` rows. ``stable``: equal keys keep their order (else any).
    Keys must sort below the padding: finite floats, or ints below the int64 maximum.
    """
    order = np.arange(key.size, dtype=np.int64)
    for rows, first, cells, matrix in _matrices(key, sizes):
        within = np.argsort(matrix, axis=1, kind="stable" if stable else None)  # padding sorts last
        order[rows] = (first[:, None] + within)[cells]
    return order


def sort_within_blocks(key: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Each block's keys sorted ascending, the blocks kept in place (a sort of values: faster than the order)."""
    out = key.copy()
    for rows, _, cells, matrix in _matrices(key, sizes):
        matrix.sort(axis=1)
        out[rows] = matrix[cells]
    return out


def _matrices(key: np.ndarray, sizes: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """(rows, their blocks' first rows, the cells holding them, the matrix) of each matrix, blocks of two rows or more."""
    starts = np.cumsum(sizes) - sizes
    longer = np.flatnonzero(sizes > 1)  # a block of one row is in order
    if longer.size == 0:
        return
    pad = np.inf if key.dtype.kind == "f" else np.iinfo(key.dtype).max
    octave = np.frexp((sizes[longer] - 1).astype(np.float64))[1]  # 2**octave >= size > 2**(octave - 1)
    unit = 1 << np.maximum(octave - 3, 0)  # eight widths per doubling
    widths = -(-sizes[longer] // unit) * unit
    for width in np.unique(widths).tolist():
        chosen = longer[widths == width]
        step = max(_CELLS // width, 1)
        for low in range(0, chosen.size, step):
            blocks = chosen[low : low + step]
            first = starts[blocks]
            cells = np.arange(width) < sizes[blocks][:, None]  # the first `size` cells of each matrix row
            rows = (first[:, None] + np.arange(width))[cells]  # block by block, as laid out
            matrix = np.full((blocks.size, width), pad, dtype=key.dtype)
            matrix[cells] = key[rows]
            yield rows, first, cells, matrix
