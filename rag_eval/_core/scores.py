"""Inner products that do not depend on how the work is split: the same bits on any shard, batch or thread count.

A float32 matrix product from BLAS is not reproducible across shapes: OpenBLAS picks
different kernels (and a different split between threads) for a (256, 384) @ (384, 65536)
product than for a (256, 384) @ (384, 1000) one, and the same cell can come out one
float32 ulp apart. Measured here: 20% of the cells of a 64 x 1024 product change between
1 and 2 threads, and slicing the passages changes cells too. Exact sharded search must
write the same run file as local search (same scores, same ties), so the score of a
(query, passage) pair is defined without reference to any split:

    score = float32(math.fsum(q[j] * p[j] for j))     (then -0.0 made +0.0)

the float32 rounding of the correctly rounded float64 sum of the exact products (a
product of two float32 values is exact in float64). It is computed fast: one float64
matrix product, whose error is at most ``gamma(d) * |q| * |p|`` whatever the order of
summation (Higham, Accuracy and Stability, 3.1; Cauchy-Schwarz bounds the sum of
|products|). Whenever the whole error interval rounds to one float32 value, that value
IS the definition's (rounding is monotonic); the rare cells whose interval straddles a
float32 rounding boundary (about 1 in 10^5 for unit vectors) are recomputed with
``math.fsum``. Cost: a float64 product instead of a float32 one (about 2x the time of
the multiplication; the top-k selection around it is unchanged).
"""

from __future__ import annotations

import math

import numpy as np

# Float64 cells handled at once: bounds the temporaries (about 25 bytes per cell) near 50 MB.
_CHUNK_CELLS = 1 << 21
_UNIT_ROUNDOFF = 2.0**-53


def inner_products(queries: np.ndarray, passages: np.ndarray) -> np.ndarray:
    """``float32`` scores ``(n_queries, n_passages)``: each cell ``float32(fsum(q * p))``, independent of the split.

    Inputs are taken as float32 (the embeddings' type; float64 input is rounded to float32
    first, so that every product is exact). The result of a cell does not depend on the
    other rows or columns given, the BLAS library, its kernels or its thread count.
    """
    q = np.asarray(np.asarray(queries, dtype=np.float32), dtype=np.float64)
    p32 = np.asarray(passages, dtype=np.float32)
    if q.ndim != 2 or p32.ndim != 2 or q.shape[1] != p32.shape[1]:
        raise ValueError(f"queries {q.shape} and passages {p32.shape} must be 2-D with the same width")
    n_queries, dim = q.shape
    out = np.empty((n_queries, p32.shape[0]), dtype=np.float32)
    if out.size == 0:
        return out
    # Any summation order of `dim` exact products errs by at most gamma(dim) * sum|products|
    # <= gamma(dim) * |q| * |p| (Cauchy-Schwarz); the 2**-50 term (|s| <= |q| * |p|) covers the
    # rounding of the norms and of s -/+ bound, so the interval always holds the exact sum and fsum's.
    terms = dim + 1
    widen = terms * _UNIT_ROUNDOFF / (1.0 - terms * _UNIT_ROUNDOFF) * (1.0 + 2.0**-20) + 2.0**-50
    inputs_finite = bool(np.isfinite(q).all())
    q_scaled = np.sqrt(np.einsum("ij,ij->i", q, q)) * widen
    width = max(1, min(p32.shape[0], _CHUNK_CELLS // n_queries))
    with np.errstate(invalid="ignore", over="ignore"):  # NaN / infinity inputs: handled below, no warning
        _fill(out, q, p32, q_scaled, width, inputs_finite)
    out += np.float32(0.0)  # -0.0 + 0.0 is +0.0: the sign of a zero must not depend on the summation order
    return out


def _fill(
    out: np.ndarray, q: np.ndarray, p32: np.ndarray, q_scaled: np.ndarray, width: int, inputs_finite: bool
) -> None:
    """Fill ``out`` chunk by chunk of ``width`` passages (see :func:`inner_products`)."""
    n_queries = q.shape[0]
    # Buffers reused chunk after chunk: fresh 30 MB arrays cost more in page faults than the arithmetic.
    sums = np.empty((n_queries, width), dtype=np.float64)
    bound = np.empty_like(sums)
    low = np.empty((n_queries, width), dtype=np.float32)
    high = np.empty_like(low)
    unsure = np.empty((n_queries, width), dtype=bool)
    for start in range(0, p32.shape[0], width):
        p = np.asarray(p32[start : start + width], dtype=np.float64)
        n = p.shape[0]
        s, b, lo, hi, bad = sums[:, :n], bound[:, :n], low[:, :n], high[:, :n], unsure[:, :n]
        np.matmul(q, p.T, out=s)
        np.multiply.outer(q_scaled, np.sqrt(np.einsum("ij,ij->i", p, p)), out=b)
        np.subtract(s, b, out=lo, casting="same_kind")
        np.add(s, b, out=hi, casting="same_kind")
        np.not_equal(lo, hi, out=bad)
        # Finite float32 inputs give finite sums (|s| < 1e80), so the per-cell check is needed only
        # when an input holds NaN or infinity: such cells have no interval (NaN != NaN) and keep float32(s).
        if not inputs_finite or not np.isfinite(p).all():
            finite = np.isfinite(s)
            bad &= finite
            lo[~finite] = s[~finite]
        for cell in np.flatnonzero(bad).tolist():  # flatnonzero: np.nonzero of a 2-D mask is 20x slower
            row, col = divmod(cell, n)
            lo[row, col] = np.float32(math.fsum((q[row] * p[col]).tolist()))
        out[:, start : start + n] = lo
