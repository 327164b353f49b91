"""Power of the paired two-sided t-test: what a query set can detect, and how many queries a difference needs.

Pure (no I/O, no global random state).

* :func:`t_test_power`: the power of the test, exact under normal differences (noncentral t).
* :func:`minimum_detectable_difference` and :func:`queries_needed`: the two ways round of it.
* :class:`Power`: what the observed per-query differences of two variants can detect; a sweep's
  decision (rag_eval._compare.decision) and a regression verdict's power line both state it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from rag_eval._scoring.distributions import noncentral_t_cdf, normal_cdf, normal_quantile, t_tail_inverse
from rag_eval._scoring.stats import UNCHANGED_WITHIN, rescaled, sample_sd

__all__ = [
    "ALPHA",
    "POWER",
    "Power",
    "minimum_detectable_difference",
    "queries_needed",
    "t_test_power",
]

ALPHA = 0.05
POWER = 0.8
_Z_TEST_FROM = 1e7  # queries: from here the count comes from the z-test with Guenther's correction for the t


# ---- power of the paired t-test -------------------------------------------------------------


def t_test_power(difference: float, sd: float, n: int, alpha: float = ALPHA) -> float:
    """Power of the two-sided paired t-test of n differences with true mean ``difference`` and sd ``sd``.

    With normal differences, ``T = mean / (s / sqrt(n))`` follows a noncentral t distribution with
    ``df = n - 1`` and noncentrality ``nc = difference * sqrt(n) / sd``; the test rejects when
    ``|T| > c`` with ``c = t_{1 - alpha/2, n-1}``, so
    ``power = 1 - F_nct(c; df, nc) + F_nct(-c; df, nc)``. Exact, not the normal approximation.
    """
    if n < 2:
        raise ValueError(f"the paired t-test needs at least 2 queries, got {n}")
    if not sd > 0:
        raise ValueError(f"sd must be > 0, got {sd!r}")
    df = n - 1
    nc = abs(difference) * math.sqrt(n) / sd
    critical = t_tail_inverse(alpha / 2.0, df)
    return (1.0 - noncentral_t_cdf(critical, df, nc)) + noncentral_t_cdf(-critical, df, nc)


def _check_levels(alpha: float, power: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if not alpha < power < 1.0:  # a power at or below alpha is reached by a zero difference
        raise ValueError(f"power must be in (alpha, 1), got {power!r}")


def minimum_detectable_difference(deltas: Sequence[float] | np.ndarray, alpha: float = ALPHA,
                                  power: float = POWER) -> float:
    """Smallest true mean difference the paired two-sided t-test detects with probability ``power``.

    ``sd`` is the sample standard deviation (ddof=1) of the observed per-query differences and
    ``n`` their number; the answer is the ``d`` solving ``t_test_power(d, sd, n, alpha) = power``
    (root found by bisection to 1e-14 of the bracket; the power grows with ``d``). For large n it approaches the
    normal approximation ``(z_{1-alpha/2} + z_power) * sd / sqrt(n)``. Returns 0.0 when every
    difference is equal (no observed noise), NaN for fewer than 2 differences, and NaN when the power needs a
    noncentrality beyond what :func:`~rag_eval._scoring.distributions.noncentral_t_cdf` can sum (a critical
    value above 60 with a noncentrality above 600: not at alpha 0.05).
    """
    _check_levels(alpha, power)
    d = np.asarray(deltas, dtype=np.float64)
    if d.ndim != 1 or not np.all(np.isfinite(d)):
        raise ValueError("deltas must be a flat sequence of finite numbers")
    n = int(d.size)
    if n < 2:
        return math.nan
    sd = sample_sd(d)
    if sd == 0.0 or float(np.ptp(d)) <= UNCHANGED_WITHIN:
        # equal differences (within rounding: 0.1 computed as 0.09999999999999998 on one query): no variance to
        # estimate from, whatever a few ulps say
        return 0.0
    low, high = 0.0, 3.0 * sd / math.sqrt(n)
    while (reached := t_test_power(high, sd, n, alpha)) < power:  # widen the bracket (only for very small n)
        low, high = high, high * 2.0
    if math.isnan(reached):  # doubled past what the noncentral t can sum: the bracket's top is sought below
        high = _highest_reaching(lambda x: t_test_power(x, sd, n, alpha), power, low, high)
        if math.isnan(high):  # the power is out of reach (2 queries, a high power): no estimate, not a crash
            return math.nan
    return _bisect(lambda x: t_test_power(x, sd, n, alpha) - power, 0.0, high, 1e-14 * high)


def _highest_reaching(power_at: Callable[[float], float], power: float, low: float, high: float) -> float:
    """A difference in (low, high) whose power is a number >= ``power`` (power_at(low) < power; power_at(high)
    is NaN), found by halving; NaN when every difference that reaches the power is beyond the computable."""
    for _ in range(60):
        middle = (low + high) / 2.0
        reached = power_at(middle)
        if reached >= power:
            return middle
        if math.isnan(reached):
            high = middle
        else:
            low = middle
    return math.nan


def _bisect(f: Callable[[float], float], low: float, high: float, xtol: float) -> float:
    """The root of increasing ``f`` in [low, high] (f(low) < 0 <= f(high)) to within ``xtol``: plain bisection
    (about 50 halvings), so that scipy.optimize need not be imported for one root."""
    while high - low > xtol:
        middle = (low + high) / 2.0
        if middle in (low, high):  # the interval is one ulp wide
            break
        if f(middle) < 0.0:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0


def queries_needed(sd: float, difference: float, alpha: float = ALPHA, power: float = POWER) -> int:
    """Smallest number of queries n (>= 2) at which the paired t-test detects ``difference`` with ``power``.

    Starts from the normal approximation ``n_z = ((z_{1-alpha/2} + z_power) * sd / difference) ** 2`` and
    searches (doubling steps, then bisection) for the n where ``t_test_power(difference, sd, n, alpha) >= power``
    holds and not at n - 1. Beyond 10^7 queries (where the t tail's own rounding passes 1e-10), the z-test's
    count with both its tails plus Guenther's ``z_{1-alpha/2}^2 / 2`` for the t: equal to the search's count at
    10^7 and to exact values at 7.8e8 (the opposite tail alone is worth 1,900 queries there). ``sd`` 0 (no
    noise): 2, the fewest a t-test takes. ValueError when ``n_z`` is not a finite number (a difference ~1e-150
    times sd).
    """
    _check_levels(alpha, power)
    if not difference != 0 or not math.isfinite(difference):
        raise ValueError(f"difference must be a finite non-zero number, got {difference!r}")
    if not sd >= 0 or not math.isfinite(sd):
        raise ValueError(f"sd must be a finite number >= 0, got {sd!r}")
    if sd == 0.0:
        return 2
    z_alpha = normal_quantile(1.0 - alpha / 2.0)
    ratio = (z_alpha + normal_quantile(power)) * sd / abs(difference)
    normal_n = ratio * ratio
    if not math.isfinite(normal_n):
        raise ValueError(f"difference {difference!r} is too small next to sd {sd!r}: no count of queries detects it")
    if normal_n > _Z_TEST_FROM:
        nc = _two_sided_normal_noncentrality(z_alpha, power)
        return math.ceil((nc * sd / abs(difference)) ** 2 + z_alpha * z_alpha / 2.0)

    def reaches(n: int) -> bool:
        return t_test_power(difference, sd, n, alpha) >= power

    n = max(2, math.ceil(normal_n))
    if reaches(n):  # look below: the largest count that falls short, by doubling steps
        if n == 2:
            return 2
        high, step = n, 1
        while True:
            low = max(2, high - step)
            if not reaches(low):
                break
            if low == 2:
                return 2
            high, step = low, step * 2
    else:  # look above: the first count that reaches the power, by doubling steps
        low, step = n, 1
        while not reaches(high := low + step):
            low, step = high, step * 2
    while high - low > 1:  # reaches(high), not reaches(low)
        middle = (low + high) // 2
        if reaches(middle):
            high = middle
        else:
            low = middle
    return high


def _two_sided_normal_noncentrality(z_alpha: float, power: float) -> float:
    """The mean shift at which the two-sided z-test at critical value ``z_alpha`` reaches ``power``:
    ``Phi(nc - z) + Phi(-nc - z) = power``, by bisection (the left side grows with nc)."""

    def reached(nc: float) -> float:
        return normal_cdf(nc - z_alpha) + normal_cdf(-nc - z_alpha)

    return _bisect(lambda nc: reached(nc) - power, 0.0, z_alpha + normal_quantile(power), 1e-15)


@dataclass(frozen=True)
class Power:
    """What the query set can detect, from the differences between ``baseline`` and ``other``."""

    baseline: str
    other: str
    n: int
    sd: float
    mde: float  # minimum detectable difference (NaN: fewer than 2 paired queries)
    alpha: float = ALPHA
    power: float = POWER
    mean_difference: float = math.nan  # the observed mean of ``other - baseline``

    @classmethod
    def of(cls, baseline: str, other: str, deltas: Sequence[float] | np.ndarray, alpha: float = ALPHA) -> Power:
        """What the paired differences ``deltas`` (``other - baseline``, one per query) can detect: their
        sample sd (ddof=1) and :func:`minimum_detectable_difference`, both NaN under 2 differences.

        The one constructor: a sweep's decision and a regression verdict's power line both state it.
        """
        d = np.asarray(deltas, dtype=np.float64)
        scaled, exponent = rescaled(d)
        mean = math.ldexp(float(scaled.mean()), exponent) if d.size else math.nan
        if d.size < 2:
            return cls(baseline, other, int(d.size), math.nan, math.nan, alpha, mean_difference=mean)
        sd = sample_sd(d)
        return cls(baseline, other, int(d.size), sd, minimum_detectable_difference(d, alpha, POWER), alpha,
                   mean_difference=mean)

    def queries_for(self, difference: float) -> int | None:
        """Queries needed to detect ``difference`` with this sd (None when sd is 0 or undefined, or so large
        next to ``difference`` that no count of queries is a number)."""
        if not (self.sd > 0 and math.isfinite(self.sd)):
            return None
        try:
            return queries_needed(self.sd, difference, self.alpha, self.power)
        except ValueError:  # the normal approximation's count overflows: sd ~1e300 times the difference
            return None
