"""The t distributions a comparison needs, in plain Python: no scipy import on a report's path.

``scipy.special`` cost about 0.2 s of every warm rerun and every ``rag-eval compare`` (its import
clones numpy's namespace, which loads numpy.f2py, numpy.testing and more) for four numbers per
comparison. These are the same functions, written from their published algorithms and tested against
scipy.special over grids of arguments (tests/test_distributions.py):

* :func:`t_tail`: ``P(T >= t)`` of Student's t, ``scipy.special.stdtr(df, -t)``, through the regularised
  incomplete beta function (continued fraction, modified Lentz; Numerical Recipes 6.4), with the log
  of the beta function kept exact to the last digits for many degrees of freedom;
* :func:`t_tail_inverse`: the ``t`` whose tail is ``p``, ``scipy.special.stdtrit(df, 1 - p)``;
* :func:`noncentral_t_cdf`: ``P(T <= t)`` of the noncentral t, ``scipy.special.nctdtr(df, nc, t)``
  (Lenth's algorithm AS 243, 1989: a Poisson-weighted series of incomplete beta functions);
* :func:`normal_quantile`: ``scipy.special.ndtri`` (Acklam's approximation refined by one Halley step).

Degrees of freedom are those of a paired test (n - 1 for n queries), so at least 1. Measured against
mpmath at 40-60 digits (tests/test_distributions.py): the t tail within 1e-13 of the exact value
(relative) up to 1,000 degrees of freedom and for any t down to tails of 1e-300, 4e-12 up to 100,000 and
5e-11 at 1,000,000 (the continued fraction near the distribution's middle loses digits with the degrees
of freedom; scipy.special.stdtr is off by 3e-9 at 1 degree of freedom near t = 0); the noncentral t
within 2e-13 (absolute) in a power analysis's range, within 2e-11 of scipy.special.nctdtr wherever that
is not NaN, within 1e-9 in the normal approximation above 400,000 degrees of freedom.
"""

from __future__ import annotations

import math
from functools import lru_cache

__all__ = ["noncentral_t_cdf", "normal_cdf", "normal_quantile", "t_tail", "t_tail_inverse"]

_EPSILON = 2.0**-53  # half an ulp of 1.0: where the continued fraction has converged
_TINY = 1e-300  # keeps the Lentz recurrence off zero
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
# Stirling's series for log Gamma: the Bernoulli terms B_2k / (2k (2k - 1)), k = 1..8.
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156, -3617 / 122400)
_HUGE_T = 1e100  # beyond it t^2 is near overflow and df / (df + t^2) below the continued fraction's use
_STIRLING_FROM = 10.0  # at and above this, the series's first 8 terms are exact to double precision
# Acklam's coefficients for the normal quantile (central region |p - 1/2| <= 1/2 - 0.02425, and the tails).
_ACKLAM_A = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02, 1.383577518672690e02,
             -3.066479806614716e01, 2.506628277459239e00)
_ACKLAM_B = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02, 6.680131188771972e01,
             -1.328068155288572e01)
_ACKLAM_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00, -2.549732539343734e00,
             4.374664141464968e00, 2.938163982698783e00)
_ACKLAM_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)
_ACKLAM_LOW = 0.02425


def normal_quantile(p: float) -> float:
    """The standard normal quantile: ``z`` with ``P(Z <= z) = p``, for ``0 < p < 1``.

    Acklam's rational approximation (relative error below 1.2e-9), then one step of Halley's method on
    ``erfc``, which brings it to double precision (for p above 1e-304); the upper half by symmetry
    (``1 - p`` is exact there).
    The standard library's ``statistics.NormalDist`` would do too, but importing it (with ``fractions`` and
    ``decimal``) took 4 ms of every ``rag-eval`` command.
    """
    p = float(p)
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p!r}")
    if p > 0.5:
        return -normal_quantile(1.0 - p)
    if p < _ACKLAM_LOW:
        q = math.sqrt(-2.0 * math.log(p))
        c, d = _ACKLAM_C, _ACKLAM_D
        x = ((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]
        x /= (((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0
    else:
        q = p - 0.5
        r = q * q
        a, b = _ACKLAM_A, _ACKLAM_B
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q
        x /= ((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0
    if 0.5 * x * x > 700.0:  # p below about 1e-304: exp would overflow; Acklam's 1.2e-9 stands
        return x
    if p > 0.25:  # Phi(x) - p near the middle by erf, with p - 1/2 exact: no cancellation for x near 0
        error = 0.5 * math.erf(x / math.sqrt(2.0)) - (p - 0.5)
    else:
        error = normal_cdf(x) - p
    u = error * math.sqrt(2.0 * math.pi) * math.exp(0.5 * x * x)
    return x - u / (1.0 + 0.5 * x * u)


def t_tail(t: float, df: float) -> float:
    """``P(T >= t)`` for Student's t with ``df`` degrees of freedom (``df >= 1``; any real ``t``).

    The upper tail is computed directly (not as 1 minus the CDF), so p-values far below 1e-12 keep
    their relative precision, down to the smallest positive float.
    """
    t, df = float(t), float(df)
    if math.isnan(t):
        return math.nan
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    if t < 0:
        return 1.0 - t_tail(-t, df)
    a = 0.5 * df
    if t > _HUGE_T:
        # x = df / (df + t^2) below ~1e-185: I_x(a, 1/2) is its first term, x^a / (a B(a, 1/2)), taken in
        # logs (t^2 would overflow, x^a underflow).
        log_x = math.log(df) - 2.0 * math.log(t) - math.log1p(df / t / t)
        return 0.5 * math.exp(a * log_x - _log_beta(a, 0.5)) / a
    square = t * t
    # x = df / (df + t^2) and 1 - x, each without cancellation: P(T >= t) = I_x(df/2, 1/2) / 2.
    x, y = df / (df + square), square / (df + square)
    return 0.5 * regularized_beta(x, y, a, 0.5)


@lru_cache(maxsize=256)
def t_tail_inverse(p: float, df: float) -> float:
    """The ``t >= 0`` with ``P(T >= t) = p`` (``0 < p <= 1/2``): the critical value of a test at level 2p.

    Newton's method on the log of the tail (quadratic in the far tail too), kept inside a shrinking
    bracket (bisection when a step leaves it), to the last bit; cached, as a power analysis asks for
    the same critical value many times. ``inf`` for a ``p`` below the tail of the largest float.
    """
    p, df = float(p), float(df)
    if not 0.0 < p <= 0.5:
        raise ValueError(f"p must be in (0, 1/2], got {p!r}")
    if p == 0.5:
        return 0.0
    low, high = 0.0, 1.0
    while t_tail(high, df) > p:  # bracket the root: the tail falls as t grows
        low, high = high, high * 2.0
        if math.isinf(high):
            return math.inf
    target = math.log(p)
    t = min(max(-normal_quantile(p), low), high)
    for _ in range(400):
        tail = t_tail(t, df)
        if tail == p:
            return t
        if tail > p:
            low = t
        else:
            high = t
        density = _t_density(t, df)
        # d log(tail) / dt = -density / tail: a step of Newton on log(tail) - log(p).
        candidate = t + (math.log(tail) - target) * tail / density if tail > 0.0 and density > 0.0 else math.nan
        if not low < candidate < high:
            candidate = (low + high) / 2.0
        if candidate == t or high - low <= 2.0 * math.ulp(high):
            return candidate
        t = candidate
    return t  # pragma: no cover - each step at least halves the bracket once Newton stalls


def noncentral_t_cdf(t: float, df: float, nc: float) -> float:
    """``P(T <= t)`` for the noncentral t with ``df`` degrees of freedom and noncentrality ``nc``.

    AS 243 (Lenth, 1989): for ``t >= 0``, ``P(T <= t) = Phi(-nc) + sum_j (p_j I_x(j + 1/2, df/2) +
    q_j I_x(j + 1, df/2))`` with ``x = t^2 / (t^2 + df)`` and Poisson weights of ``nc^2 / 2``; a
    negative ``t`` by ``P(T <= t; nc) = 1 - P(T <= -t; -nc)``. The series stops once its remainder
    is below 1e-13; the Poisson weights and the factors that step I_x from term to term are kept in logs,
    as they start far below the smallest float for a large noncentrality (the weights, beyond about 38)
    or large ``t`` and ``df`` (the factors). 0 where ``nc >= 10 t + 10`` (below 3e-23). Above 400,000
    degrees of freedom, the normal approximation AS 243 uses. NaN where the series would need more than
    200,000 terms (a noncentrality beyond about 600 with ``t`` beyond 60).
    """
    t, df, nc = float(t), float(df), float(nc)
    if math.isnan(t) or math.isnan(nc):
        return math.nan
    if t < 0:
        return 1.0 - noncentral_t_cdf(-t, df, -nc)
    if math.isinf(t):
        return 1.0
    if df > 4e5:  # the normal approximation AS 243 uses for huge df
        s = 1.0 / (4.0 * df)
        return normal_cdf((t * (1.0 - s) - nc) / math.hypot(1.0, t * math.sqrt(2.0 * s)))  # hypot: t^2 may overflow
    total = 0.0
    square = t * t
    if math.isinf(square):
        return 1.0  # x = 1: every I_x is 1 and the weights sum to 1 - Phi(-nc)
    x, y = square / (square + df), df / (square + df)
    if nc >= 10.0 * t + 10.0:
        # T <= t needs t S >= Z + nc (S = sqrt(chi2_df / df)): S >= 10 or Z <= -10, together below 3e-23.
        return 0.0
    if x > 0.0:  # (t so small that x is 0 leaves Phi(-nc) alone: the series starts at x^(1/2))
        lam = nc * nc
        # The Poisson weights p_j = e^(-lam/2) (lam/2)^j / j! / 2 (and q_j) in logs: for a noncentrality above
        # ~38 the first ones underflow, and the sum's mass lies around j = lam / 2.
        log_lam = math.log(lam) if lam > 0.0 else -math.inf
        log_p = math.log(0.5) - 0.5 * lam
        log_q = 0.5 * math.log(2.0 / math.pi) + log_p + (math.log(abs(nc)) if nc else -math.inf)
        sign = 1.0 if nc >= 0.0 else -1.0
        p, q = math.exp(log_p), sign * math.exp(log_q)
        s = 0.5 - p
        if s < 1e-7:
            s = -0.5 * math.expm1(-0.5 * lam)
        a, b = 0.5, 0.5 * df
        log_x, log_y = _log(x, y), _log(y, x)
        log_rxb = b * log_y  # log (1 - x)^(df/2)
        x_odd = regularized_beta(x, y, a, b)
        log_g_odd = math.log(2.0) + log_rxb + a * log_x - _log_beta(a, b)
        x_even = -math.expm1(log_rxb) if b * x >= _EPSILON else b * x  # I_x(1, b) = 1 - (1 - x)^b
        log_g_even = math.log(b * x) + log_rxb
        total = p * x_odd + q * x_even
        for j in range(1, _series_terms(lam)):
            a += 1.0
            x_odd -= math.exp(log_g_odd)
            x_even -= math.exp(log_g_even)
            log_g_odd += math.log(x * (a + b - 1.0) / a)
            log_g_even += math.log(x * (a + b - 0.5) / (a + 0.5))
            log_p += log_lam - math.log(2 * j)
            log_q += log_lam - math.log(2 * j + 1)
            p, q = math.exp(log_p), sign * math.exp(log_q)
            total += p * x_odd + q * x_even
            s -= p
            if s < -1e-10:  # the weights lost precision (large noncentrality): no trustworthy answer
                return math.nan
            if s <= 0 and j > 1:
                break
            if abs(2.0 * s * (x_odd - math.exp(log_g_odd))) < 1e-13:
                break
        else:
            return math.nan
    total += normal_cdf(-nc)
    return min(max(total, 0.0), 1.0)


def _series_terms(lam: float) -> int:
    """Terms AS 243 may take: past the Poisson mode lam / 2 by 40 standard deviations, at most 200,000."""
    half = 0.5 * lam
    return min(2001 + int(half + 40.0 * math.sqrt(half)), 200_000)


def regularized_beta(x: float, y: float, a: float, b: float) -> float:
    """``I_x(a, b)``, the regularised incomplete beta function, given ``x`` and ``y = 1 - x`` (each exact).

    The continued fraction converges fast below the mean ``(a + 1) / (a + b + 2)``; above it the
    symmetry ``I_x(a, b) = 1 - I_y(b, a)`` is used. The side is chosen once: x + y is 1 only up to
    rounding, so testing again after the swap could swap back forever.
    """
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    if x > (a + 1.0) / (a + b + 2.0):
        return 1.0 - _beta_below_mean(y, x, b, a)
    return _beta_below_mean(x, y, a, b)


def _beta_below_mean(x: float, y: float, a: float, b: float) -> float:
    front = math.exp(a * _log(x, y) + b * _log(y, x) - _log_beta(a, b))
    return front * _beta_fraction(x, y, a, b) / a


def _log(x: float, y: float) -> float:
    """``log x`` given ``y = 1 - x``: near 1, ``log1p(-y)`` keeps the digits ``log x`` would lose to x's rounding
    (multiplied by df / 2 in the exponent, that loss was 3e-12 of the tail at 50,000 degrees of freedom)."""
    return math.log1p(-y) if x > 0.5 else math.log(x)


def _beta_fraction(x: float, y: float, a: float, b: float) -> float:
    """The continued fraction of ``I_x(a, b)`` (modified Lentz) until a step changes it by under half an ulp."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    # 1 - (a + b) x / (a + 1): for x near 1, written with y, which holds the digits x lost to rounding.
    d = 1.0 - qab * x / qap if x < 0.5 else (1.0 - b + qab * y) / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    limit = 1000 + int(20.0 * math.sqrt(max(a, b)))
    for m in range(1, limit):
        m2 = 2 * m
        for numerator in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) <= _EPSILON:
            return h
    return h  # pragma: no cover - converges within O(sqrt(max(a, b))) steps


def _log_beta(a: float, b: float) -> float:
    """``log B(a, b)``. For large arguments the difference ``lgamma(a) - lgamma(a + b)`` loses digits to
    the size of each term (0.5e6 for a = 5e4), so Stirling's series gives it as a difference of small terms."""
    small, large = min(a, b), max(a, b)
    if large < _STIRLING_FROM:
        return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    if small < _STIRLING_FROM:  # log Gamma(large) - log Gamma(large + small), term by term
        ratio = (
            -(large - 0.5) * math.log1p(small / large) - small * math.log(large + small) + small
            + _stirling_tail(large) - _stirling_tail(large + small)
        )
        return math.lgamma(small) + ratio
    # Both large: (a - 1/2) log a + (b - 1/2) log b - (a + b - 1/2) log(a + b) regrouped as logs of ratios.
    total = a + b
    return (
        _LOG_SQRT_2PI + (a - 0.5) * math.log(a / total) + (b - 0.5) * math.log(b / total) - 0.5 * math.log(total)
        + _stirling_tail(a) + _stirling_tail(b) - _stirling_tail(total)
    )


def _stirling_tail(z: float) -> float:
    """``log Gamma(z) - ((z - 1/2) log z - z + log sqrt(2 pi))`` for ``z >= 10``."""
    inverse, square = 1.0 / z, 1.0 / (z * z)
    total, power = 0.0, inverse
    for coefficient in _STIRLING:
        total += coefficient * power
        power *= square
    return total


def _t_density(t: float, df: float) -> float:
    log_density = (
        -_log_beta(0.5, 0.5 * df) - 0.5 * math.log(df) - 0.5 * (df + 1.0) * math.log1p(t * t / df)
    )
    return math.exp(log_density)


def normal_cdf(z: float) -> float:
    """``P(Z <= z)`` for the standard normal (by ``erfc``: the lower tail keeps its relative precision)."""
    return 0.5 * math.erfc(-z / math.sqrt(2.0))
