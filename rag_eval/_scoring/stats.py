"""Paired statistics for a regression check between two retrievers.

Both retrievers are evaluated on the same queries, so each query gives one
value for the baseline and one for the candidate, and the quantity of interest
is the per-query difference ``delta = candidate - baseline`` (higher metric
values are better, so a positive delta is a win for the candidate). Everything
here works on those paired deltas:

* :func:`bootstrap_ci`: percentile bootstrap confidence interval of the mean delta
  (``scipy.stats.bootstrap``'s ``method='percentile'`` written out in numpy, draw for draw; not BCa);
* :func:`permutation_test`: paired randomisation (sign-flip) test, exact for small n
  (written here: enumerating 2**n sign patterns as one matrix product is much faster
  than ``scipy.stats.permutation_test`` for the n <= 16 exact case);
* :func:`paired_t_test`: the classical paired t-test (``scipy.stats.ttest_1samp``'s arithmetic on the deltas,
  with the t distribution of :mod:`rag_eval._scoring.distributions`);
* :func:`holm`: Holm-Bonferroni adjustment when several metrics are checked at once;
* :func:`win_tie_loss`: per-query counts;
* :func:`compare_paired`: all of the above in one :class:`PairedComparison`;
* :func:`confidence_problem`, :func:`resamples_problem` and :func:`seed_problem`: the limits of a
  comparison's resampling, in the words every caller shows (the config's ``regression`` section,
  ``rag-eval compare``'s flags and ``compare()``'s arguments, through the config schema's types).

The module is pure (no I/O, no global random state): every random procedure
takes a ``seed`` and builds its own :class:`numpy.random.Generator`, so a report
is reproducible bit for bit. All arithmetic is float64 and nothing is rounded;
rounding is the renderer's job.

scipy is not imported (``scipy.stats`` takes 0.5-0.7 s to import, ``scipy.special`` about 0.2 s): the
t distribution is :mod:`rag_eval._scoring.distributions`, the rest numpy. The config schema and the
CLI parser read :data:`MIN_RESAMPLES`, :data:`MAX_RESAMPLES` and the checks of the resampling from here.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rag_eval._scoring.distributions import t_tail

__all__ = [
    "MAX_RESAMPLES",
    "MIN_RESAMPLES",
    "UNCHANGED_WITHIN",
    "PairedComparison",
    "bootstrap_ci",
    "compare_paired",
    "confidence_problem",
    "holm",
    "paired_deltas",
    "paired_t_test",
    "permutation_test",
    "resamples_problem",
    "rescaled",
    "sample_sd",
    "seed_problem",
    "win_tie_loss",
]


# Resampling limits shared by the CLI (--resamples), the config (regression.resamples) and
# the functions below: past a million resamples the p-value and CI no longer move in their
# printed digits, while memory and time grow linearly (10**12 resamples would need TiBs).
# A comparison asks for at least MIN_RESAMPLES; the functions below take any positive count
# (the exact permutation test ignores it, and a quick check may want few).
MIN_RESAMPLES = 100
MAX_RESAMPLES = 1_000_000

# A per-query difference at most this large is float noise: the query is unchanged. It is a tie of
# win_tie_loss, an unchanged query of a verdict (rag_eval._compare.regression.Verdict.moved_queries)
# and the slack of a drop exactly at a gate's limit. Metric values equal in exact arithmetic but
# computed along different paths differ by a few ulps (~1e-16); a real difference is far larger.
UNCHANGED_WITHIN = 1e-12

# Upper bound on the number of elements in one block of resampled indices or
# signs (1 Mi elements = 8 MiB as int64/float64). Resampling is vectorised, but
# doing all 10,000 resamples of 100,000 queries at once would need 8 GB.
_CHUNK_ELEMENTS = 1 << 20

# Largest n for which the permutation test enumerates all 2**n sign patterns
# (2**16 x 16 float64 signs = 8 MiB) instead of sampling them.
_EXACT_MAX_N = 16

# Relative tolerance (of sum |delta|) under which two sign-flipped sums count as
# equal in the permutation test; see _tie_tolerance.
_TIE_RTOL = 1e-9


def _as_deltas(deltas: np.ndarray, name: str = "deltas") -> np.ndarray:
    """``deltas`` as a 1-D float64 array of finite values, or ValueError."""
    array = np.asarray(deltas, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional (one value per query), got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        bad = np.flatnonzero(~np.isfinite(array))
        raise ValueError(f"{name} contains NaN or infinite values at positions {bad[:10].tolist()}")
    return array


def confidence_problem(confidence: float) -> str | None:
    """What is wrong with ``confidence`` as the level of a bootstrap interval, or None when it lies in (0, 1)."""
    if 0.0 < confidence < 1.0:  # written this way to refuse NaN too
        return None
    return "must be between 0 and 1 (exclusive)"


def resamples_problem(n_resamples: int, fewest: int = MIN_RESAMPLES) -> str | None:
    """What is wrong with ``n_resamples`` resamples, or None when it is from ``fewest`` to :data:`MAX_RESAMPLES`.

    ``fewest``: :data:`MIN_RESAMPLES` for a comparison (config, ``rag-eval compare``, ``compare()``);
    the functions of this module pass 1.
    """
    if fewest <= n_resamples <= MAX_RESAMPLES:
        return None
    return f"must be from {fewest:,} to {MAX_RESAMPLES:,} (more does not change the printed digits, and costs memory)"


def seed_problem(seed: int) -> str | None:
    """What is wrong with ``seed`` as the seed of a resampling, or None when numpy takes it (>= 0)."""
    if seed >= 0:
        return None
    return "must be >= 0 (numpy refuses negative seeds)"


def _check_n_resamples(n_resamples: int) -> int:
    # bool is an int subclass; True resamples is surely a mistake.
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)):
        raise ValueError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    problem = resamples_problem(n_resamples, fewest=1)
    if problem:
        raise ValueError(f"n_resamples {problem}, got {n_resamples:,}")
    return int(n_resamples)


def rescaled(deltas: np.ndarray) -> tuple[np.ndarray, int]:
    """``(deltas / 2**e, e)`` with the largest ``|delta|`` in [0.5, 1) (exact: a power of two), so that squares
    neither underflow (deltas ~1e-170) nor overflow (~1e170, beyond 1e154 already); ``e`` 0 for all zeros."""
    top = float(np.abs(deltas).max()) if deltas.size else 0.0
    if top == 0.0:
        return deltas, 0
    _, exponent = math.frexp(top)
    return np.ldexp(deltas, -exponent), exponent


def sample_sd(deltas: np.ndarray) -> float:
    """The sample standard deviation (ddof=1) of 2 or more finite deltas, without overflow or underflow."""
    scaled, exponent = rescaled(np.asarray(deltas, dtype=np.float64))
    return math.ldexp(float(np.std(scaled, ddof=1)), exponent)


def _is_constant(deltas: np.ndarray) -> bool:
    """True when every delta is exactly equal (zero sample variance).

    Checked with ``==`` rather than ``np.var(...) == 0``: the mean of n equal
    values such as 0.1 is not always exactly 0.1 in floating point, so the
    computed variance of a constant sample can be a tiny positive number.
    """
    return bool(deltas.size == 0 or np.all(deltas == deltas[0]))


def paired_deltas(baseline: np.ndarray, candidate: np.ndarray) -> np.ndarray:
    """Per-query differences ``candidate - baseline`` as a float64 array.

    Both inputs must be one-dimensional, of the same length, aligned on the same
    queries, and finite. A NaN usually means a query that one of the runs left
    out of its mean; silently dropping it would make the pairs disagree on which
    queries they cover, so it is an error here and the caller must decide.

    Raises:
        ValueError: on a shape mismatch, a non-1-D input, or a NaN/infinite value.
    """
    base = np.asarray(baseline, dtype=np.float64)
    cand = np.asarray(candidate, dtype=np.float64)
    if base.shape != cand.shape:
        raise ValueError(f"baseline and candidate must have the same shape, got {base.shape} and {cand.shape}")
    base = _as_deltas(base, "baseline")
    cand = _as_deltas(cand, "candidate")
    return cand - base


# A run asks for the same interval more than once (the decision's table and the means plot both show each
# variant's interval; ~20 ms each at 300 queries): it is drawn once per process. The result depends only on
# the key (the deltas' bytes and every argument), so a remembered interval is the one a new draw would give.
_BOOTSTRAP_MEMO: dict[tuple[bytes, float, int, int], tuple[float, float]] = {}
_BOOTSTRAP_MEMO_SIZE = 256
_BOOTSTRAP_MEMO_LOCK = threading.Lock()


def bootstrap_ci(
    deltas: np.ndarray,
    *,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean delta.

    Computed by ``scipy.stats.bootstrap(..., method='percentile')``: draw
    ``n_resamples`` resamples of the n deltas with replacement (queries are
    resampled as units, which keeps the pairing), compute the mean of each, and
    return the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of
    those means (linear interpolation between order statistics, numpy's default).
    It is the percentile interval, not scipy's default BCa: no bias correction or
    acceleration, which is what the comparison report says it shows.

    The generator is ``numpy.random.default_rng(seed)`` and resamples are drawn in
    batches of at most ~1 Mi indices, so memory stays bounded for large n and the
    result depends only on (deltas, confidence, n_resamples, seed).

    When all deltas are equal (including a single query, which scipy refuses)
    every resample mean is that value, so the interval is returned as exactly
    ``(d, d)`` rather than computed (the computed mean of equal values can be
    off by an ulp).

    Raises:
        ValueError: on empty or non-finite deltas, ``confidence`` outside (0, 1),
            or ``n_resamples`` outside 1 .. :data:`MAX_RESAMPLES`.
    """
    d = _as_deltas(deltas)
    problem = confidence_problem(confidence)
    if problem:
        raise ValueError(f"confidence {problem}, got {confidence!r}")
    n_resamples = _check_n_resamples(n_resamples)
    n = d.size
    if n == 0:
        raise ValueError("bootstrap_ci needs at least one delta")
    if _is_constant(d):
        value = float(d[0])
        return value, value
    key = (d.tobytes(), confidence, n_resamples, seed)
    known = _BOOTSTRAP_MEMO.get(key)
    if known is not None:
        return known

    # scipy.stats.bootstrap(method="percentile", vectorized, batched) written out in numpy, draw for draw: the
    # same generator calls (a block of resampled indices at a time) and the linear quantiles of the means,
    # without importing scipy.stats (~0.5-0.7 s of a warm rerun). tests/test_stats.py compares it with scipy.
    rng = np.random.default_rng(seed)
    batch = max(1, _CHUNK_ELEMENTS // n)  # resamples per block: a bounded block of indices
    means = np.empty(n_resamples, dtype=np.float64)
    for k in range(0, n_resamples, batch):
        size = min(batch, n_resamples - k)
        means[k : k + size] = d[rng.integers(0, n, (size, n))].mean(axis=-1)
    alpha = (1.0 - confidence) / 2.0
    means.sort()
    interval = _linear_quantile(means, alpha), _linear_quantile(means, 1.0 - alpha)
    with _BOOTSTRAP_MEMO_LOCK:  # callers of the public API may draw from several threads
        while len(_BOOTSTRAP_MEMO) >= _BOOTSTRAP_MEMO_SIZE:
            _BOOTSTRAP_MEMO.pop(next(iter(_BOOTSTRAP_MEMO)))  # the oldest: a long sweep keeps the memo bounded
        _BOOTSTRAP_MEMO[key] = interval
    return interval


def _linear_quantile(ordered: np.ndarray, p: float) -> float:
    """The linear (Hyndman & Fan type 7) quantile of sorted values, in scipy.stats.quantile's arithmetic
    (``jg = p n + 1 - p``; ``(1 - g) y[j] + g y[j + 1]``), so that intervals equal scipy's to the last bit."""
    n = ordered.size
    jg = p * n + (1.0 - p)
    j = math.floor(jg) - 1
    g = 0.0 if j < 0 else jg % 1.0
    below, above = min(max(j, 0), n - 1), min(max(j + 1, 0), n - 1)
    return float((1.0 - g) * ordered[below] + g * ordered[above])


def _tie_tolerance(d: np.ndarray) -> float:
    """Absolute tolerance for ``|sum*| >= |sum_obs|`` in the permutation test.

    Sign patterns whose sums are equal in exact arithmetic (the identity and its
    mirror image always, plus others whenever some deltas cancel, e.g. 0.1 + 0.2
    and 0.3 for metrics with small denominators such as P@10) come out a few
    ulps apart in floating point: the observed and flipped sums are accumulated
    in different orders, and the deltas themselves carry rounding from
    ``candidate - baseline``. Without a tolerance such ties would be counted or
    not at random and the p-value would be too small by a multiple of 1/2**n.

    The tolerance is relative to ``sum |delta|``, the largest possible ``|sum*|``.
    1e-9 of it is far above the rounding carried by metric-sized deltas (a few
    ulps of values in [0, 1], unless deltas are below ~1e-6) and far below any
    difference that could matter for a metric. Summation rounding is at most
    about ``n * eps * sum |delta|``; the second term keeps that covered for any n
    (it only takes over beyond a million queries).
    """
    scale = float(np.abs(d).sum())
    return max(_TIE_RTOL, 4.0 * d.size * np.finfo(np.float64).eps) * scale


def permutation_test(deltas: np.ndarray, *, n_resamples: int = 10_000, seed: int = 0) -> float:
    """Two-sided p-value of the paired randomisation (sign-flip) test.

    Under the null hypothesis that baseline and candidate are exchangeable for
    every query, each delta is equally likely to have either sign. The statistic
    is ``|mean(s * deltas)|`` for sign vectors ``s`` in {-1, +1}^n, compared with
    the observed ``|mean(deltas)|`` (sums are compared, which is the same test).

    * n <= 16: all 2**n sign patterns are enumerated and
      ``p = count(|mean*| >= |mean_obs|) / 2**n`` exactly (the identity pattern
      is among them, so p >= 2 / 2**n when any delta is non-zero).
      ``n_resamples`` and ``seed`` are ignored.
    * n > 16: ``n_resamples`` random sign patterns are drawn from
      ``numpy.random.default_rng(seed)`` and
      ``p = (count(|mean*| >= |mean_obs|) + 1) / (n_resamples + 1)``; the +1
      counts the observed pattern, which keeps the test valid (p is never 0).

    The ``>=`` comparison allows a tolerance for floating-point noise (see
    :func:`_tie_tolerance`): patterns whose means are equal in exact arithmetic
    must count as "at least as extreme". When all deltas are zero (or there are
    none) there is no evidence of a difference and p = 1.0.

    This matches ``scipy.stats.permutation_test(..., permutation_type='samples',
    alternative='two-sided')`` with the mean difference as statistic: the
    sign-flip null is symmetric, so scipy's ``2 * min(p_less, p_greater)`` is
    the same as counting ``|mean*| >= |mean_obs|``.

    Raises:
        ValueError: on non-finite deltas or ``n_resamples`` outside 1 .. :data:`MAX_RESAMPLES`.
    """
    d = _as_deltas(deltas)
    n_resamples = _check_n_resamples(n_resamples)
    n = d.size
    if n == 0 or not np.any(d):
        return 1.0

    observed = abs(float(d.sum()))
    threshold = observed - _tie_tolerance(d)

    if n <= _EXACT_MAX_N:
        # Row k holds the signs encoded by the bits of k (bit set -> flipped);
        # row 0 is the observed pattern.
        bits = (np.arange(1 << n, dtype=np.int64)[:, None] >> np.arange(n, dtype=np.int64)) & 1
        signs = 1.0 - 2.0 * bits.astype(np.float64)
        count = int(np.count_nonzero(np.abs(signs @ d) >= threshold))
        return count / float(1 << n)

    rng = np.random.default_rng(seed)
    count = 0
    rows = max(1, _CHUNK_ELEMENTS // n)
    for start in range(0, n_resamples, rows):
        size = min(rows, n_resamples - start)
        signs = 1.0 - 2.0 * rng.integers(0, 2, size=(size, n), dtype=np.int8).astype(np.float64)
        count += int(np.count_nonzero(np.abs(signs @ d) >= threshold))
    return (count + 1) / (n_resamples + 1)


def paired_t_test(deltas: np.ndarray) -> float:
    """Two-sided p-value of the paired t-test (one-sample t-test of the deltas against 0).

    ``scipy.stats.ttest_1samp(deltas, 0)``, which equals ``scipy.stats.ttest_rel`` on
    the baseline and candidate values: ``t = mean / (sd / sqrt(n))`` with the sample
    standard deviation (ddof=1), ``p = 2 * P(T_{n-1} >= |t|)``.

    Degenerate cases, where the t statistic is undefined (scipy returns NaN),
    get a definite answer so that a regression gate never sees NaN:

    * n < 2 (no variance estimate): 1.0, no evidence either way.
    * all deltas equal (zero variance): 1.0 if they are all 0 (the runs agree on
      every query), else 0.0 (every query moved by the same non-zero amount,
      the limit of t -> infinity).

    Raises:
        ValueError: on non-finite deltas.
    """
    d = _as_deltas(deltas)
    n = d.size
    if n < 2:
        return 1.0
    if _is_constant(d):
        return 1.0 if d[0] == 0.0 else 0.0
    # t is scale-invariant; rescaling by a power of two (exact) so that the largest
    # |delta| is in [0.5, 1) keeps the squares in the variance from underflowing
    # (deltas ~1e-170) or overflowing (~1e170), where scipy alone gives p = 0 or 1.
    d, _ = rescaled(d)
    # scipy.stats.ttest_1samp's arithmetic: t = mean / sqrt(var / n), p = 2 P(T_{n-1} >= |t|).
    # Deltas equal but for rounding give a tiny variance, t huge and p ~ 0: the limit of equal deltas above.
    mean = float(d.mean())
    variance = float(np.var(d, ddof=1))
    t = mean / math.sqrt(variance / n) if variance > 0 else math.copysign(math.inf, mean)
    p = 2.0 * t_tail(abs(t), n - 1)
    if math.isnan(p):  # cannot happen after rescaling (sd > 0); never hand NaN to a gate regardless
        return 1.0 if float(d.mean()) == 0.0 else 0.0
    return p


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the order given.

    Step-down procedure: with the m p-values sorted ascending,
    ``adj_(i) = max_{j <= i} min(1, (m - j + 1) * p_(j))`` (1-based). The
    running maximum keeps the adjusted values in the same order as the raw ones,
    so comparing ``adj`` with alpha is exactly Holm's procedure at family-wise
    error rate alpha (the regression gates count ``adj < alpha`` as significant,
    so ``adj == alpha`` is not). Tied p-values get the same adjusted value
    whatever their order.

    Raises:
        ValueError: on a NaN or a value outside [0, 1].
    """
    p = np.asarray(list(p_values), dtype=np.float64)
    if p.ndim != 1:
        raise ValueError(f"p_values must be a flat sequence, got shape {p.shape}")
    if p.size == 0:
        return []
    if not np.all((p >= 0.0) & (p <= 1.0)):  # also rejects NaN
        raise ValueError(f"p-values must lie in [0, 1], got {p.tolist()}")
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = (m - np.arange(m, dtype=np.float64)) * p[order]
    adjusted_sorted = np.minimum(np.maximum.accumulate(scaled), 1.0)
    adjusted = np.empty(m, dtype=np.float64)
    adjusted[order] = adjusted_sorted
    return [float(x) for x in adjusted]


def win_tie_loss(deltas: np.ndarray, tolerance: float = UNCHANGED_WITHIN) -> tuple[int, int, int]:
    """Counts of queries where the candidate wins, ties and loses.

    A win is ``delta > tolerance``, a loss ``delta < -tolerance``, anything else
    a tie. The default tolerance, :data:`UNCHANGED_WITHIN`, absorbs rounding in
    metric values that are equal in exact arithmetic (e.g. the same P@10 computed
    along different paths) without hiding any real difference.

    Raises:
        ValueError: on non-finite deltas or a negative/NaN tolerance.
    """
    d = _as_deltas(deltas)
    if not tolerance >= 0.0:  # written this way to reject NaN too
        raise ValueError(f"tolerance must be >= 0, got {tolerance!r}")
    wins = int(np.count_nonzero(d > tolerance))
    losses = int(np.count_nonzero(d < -tolerance))
    return wins, d.size - wins - losses, losses


@dataclass(frozen=True)
class PairedComparison:
    """Summary of a paired baseline-vs-candidate comparison on one metric.

    ``mean_delta`` is the mean of the per-query deltas; it equals
    ``candidate_mean - baseline_mean`` up to float rounding. ``ci_low`` and
    ``ci_high`` bound ``mean_delta`` (percentile bootstrap; NaN from one query, which gives no interval,
    not a zero-width one: the decision report says so too), ``p_permutation``
    and ``p_t_test`` are two-sided p-values, and wins/ties/losses count queries
    from the candidate's point of view.
    """

    n: int
    baseline_mean: float
    candidate_mean: float
    mean_delta: float
    ci_low: float
    ci_high: float
    p_permutation: float
    p_t_test: float
    wins: int
    ties: int
    losses: int


def compare_paired(
    baseline: np.ndarray,
    candidate: np.ndarray,
    *,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> PairedComparison:
    """Compare per-query values of a baseline and a candidate on the same queries.

    Runs :func:`paired_deltas`, :func:`bootstrap_ci`, :func:`permutation_test`,
    :func:`paired_t_test` and :func:`win_tie_loss` (default tolerance). The
    bootstrap and the permutation test use the same ``seed`` and
    ``n_resamples``; each builds its own generator, so either is reproducible on
    its own.

    Raises:
        ValueError: on mismatched shapes, NaN/infinite values, no queries, or
            invalid ``confidence`` / ``n_resamples``.
    """
    deltas = paired_deltas(baseline, candidate)
    if deltas.size == 0:
        raise ValueError("compare_paired needs at least one query")
    base = np.asarray(baseline, dtype=np.float64)
    cand = np.asarray(candidate, dtype=np.float64)
    if deltas.size < 2:  # every resample is the one value: an interval of width 0 would claim certainty
        ci_low = ci_high = math.nan
    else:
        ci_low, ci_high = bootstrap_ci(deltas, confidence=confidence, n_resamples=n_resamples, seed=seed)
    wins, ties, losses = win_tie_loss(deltas)
    return PairedComparison(
        n=int(deltas.size),
        baseline_mean=float(base.mean()),
        candidate_mean=float(cand.mean()),
        mean_delta=float(deltas.mean()),
        ci_low=ci_low,
        ci_high=ci_high,
        p_permutation=permutation_test(deltas, n_resamples=n_resamples, seed=seed),
        p_t_test=paired_t_test(deltas),
        wins=wins,
        ties=ties,
        losses=losses,
    )
