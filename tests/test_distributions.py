"""The t distributions rag_eval computes itself, against exact values and scipy.special.

References: mpmath at 40 digits (the regularised incomplete beta function for Student's t; the
noncentral t by quadrature of its definition, ``P(T <= t) = E[Phi(t sqrt(U / df) - nc)]`` over a
chi-square U), closed forms for 1 and 2 degrees of freedom, and scipy.special (stdtr, stdtrit,
nctdtr) where it is finite.
"""

from __future__ import annotations

import itertools
import math
import subprocess
import sys

import mpmath
import numpy as np
import pytest
from scipy import special

from rag_eval._scoring.distributions import noncentral_t_cdf, normal_quantile, t_tail, t_tail_inverse

mpmath.mp.dps = 40

_T_GRID = [0.0, 1e-9, 1e-4, 0.3, 1.0, 1.5, 1.7, 1.7316368470127737, 1.96, 2.0, 2.0147514775147073, 2.5, 4.0, 8.0,
           20.0, 60.0, 1e5, 1e50, 1e150, 1e200]


def _exact_tail(t: float, df: float) -> float:
    with mpmath.workdps(60):
        x = mpmath.mpf(df) / (df + mpmath.mpf(t) ** 2)
        return float(mpmath.betainc(mpmath.mpf(df) / 2, mpmath.mpf(1) / 2, 0, x, regularized=True) / 2)


@pytest.mark.parametrize(("degrees", "bound"), [
    ([1, 2, 3, 4, 5, 9, 10, 11, 29, 1.5, 12.3], 1e-13),
    ([49, 150, 299, 499, 999, 1000], 2.5e-13),
    # The continued fraction near the distribution's middle (|t| 1.5-2.3) loses digits with df.
    ([4_999, 49_999, 99_998, 99_999], 5e-12),
    ([1_000_000], 6e-11),
])
def test_t_tail_is_exact_to_the_stated_bound(degrees, bound):
    worst = 0.0
    for df in degrees:
        for t in _T_GRID:
            exact = _exact_tail(t, df)
            if exact > 1e-300:
                worst = max(worst, abs(t_tail(t, df) - exact) / exact)
    assert worst < bound


def test_t_tail_closed_forms_and_symmetry():
    for t in (1e-8, 0.5, 2.0, 30.0):
        assert t_tail(t, 1) == pytest.approx(0.5 - math.atan(t) / math.pi, rel=1e-14)  # Cauchy
        assert t_tail(t, 2) == pytest.approx(0.5 - t / (2 * math.sqrt(t * t + 2)), rel=1e-13)
        assert t_tail(-t, 7) == pytest.approx(1.0 - t_tail(t, 7), rel=1e-15)
    assert t_tail(0.0, 5) == 0.5
    assert t_tail(math.inf, 5) == 0.0 and t_tail(-math.inf, 5) == 1.0
    assert math.isnan(t_tail(math.nan, 5))


def test_t_tail_never_recurses_at_the_switch_of_sides():
    """x and 1 - x, rounded, put both I_x(a, b) and I_y(b, a) above their means for some t near the middle: the
    side is chosen once (a review found RecursionError at t 1.638 with 17 degrees of freedom, about 8% of dfs)."""
    t = 1.6383560438182505
    assert t_tail(t, 17) == pytest.approx(float(special.stdtr(17, -t)), rel=1e-13)
    assert noncentral_t_cdf(t, 17, 1.0) == pytest.approx(float(special.nctdtr(17, 1.0, t)), abs=1e-13)
    # A fine scan around the switch (x at the mean): no error, and no rise beyond the accuracy stated above
    # (the two sides' values differ by their rounding: up to 8e-12 of the tail at 1,000,000 degrees of freedom).
    for df, bound in ((17, 1e-15), (1_000, 1e-13), (99_999, 5e-12), (1e6, 6e-11)):
        a = df / 2
        mean = (a + 1) / (a + 2.5)
        middle = math.sqrt(df * (1 - mean) / mean)
        values = [t_tail(middle * (1 + k * 1e-14), df) for k in range(-300, 300)]
        assert all(later <= earlier * (1 + bound) for earlier, later in itertools.pairwise(values))


def test_t_tail_agrees_with_scipy_where_scipy_is_exact():
    """scipy.special.stdtr is off by 3e-9 at 1 degree of freedom near t = 0 (t 1e-8), so from t = 0.01."""
    for df in (1, 2, 5, 17, 60, 299, 1000):
        for t in (0.01, 0.7, 1.96, 3.3, 9.0):
            assert t_tail(t, df) == pytest.approx(float(special.stdtr(df, -t)), rel=1e-12)


@pytest.mark.parametrize("df", [1, 2, 3, 9, 29, 299, 4_999])
@pytest.mark.parametrize("p", [0.5, 0.25, 0.05, 0.025, 0.005, 1e-6, 1e-12])
def test_t_tail_inverse_is_the_root_of_the_tail(df, p):
    t = t_tail_inverse(p, df)
    assert t_tail(t, df) == pytest.approx(p, rel=1e-12)
    assert t == pytest.approx(-float(special.stdtrit(df, p)), rel=1e-11)


@pytest.mark.parametrize(("p", "df"), [(1e-300, 2), (1e-300, 10), (1e-300, 999), (1e-300, 1e4), (1e-200, 1.5),
                                      (5e-324, 50), (1e-250, 1)])
def test_t_tail_inverse_in_the_far_tail(p, df):
    """Newton on the log of the tail: no division by an underflowed density, no creeping out of steps."""
    t = t_tail_inverse(p, df)
    assert t_tail(t, df) == pytest.approx(p, rel=1e-12)


def test_t_tail_inverse_takes_numpy_scalars_as_floats():
    assert type(t_tail_inverse(np.float32(0.025), 10)) is float
    assert t_tail_inverse(np.float64(0.025), np.int64(10)) == t_tail_inverse(0.025, 10)


def test_t_tail_inverse_refuses_a_p_outside_its_range():
    for p in (0.0, 0.6, -0.1):
        with pytest.raises(ValueError, match="p must be in"):
            t_tail_inverse(p, 5)


def _exact_noncentral(t: float, df: int, nc: float) -> float:
    """P(T <= t) by quadrature: T = (Z + nc) / sqrt(U / df), so P = E[Phi(t sqrt(U / df) - nc)]."""
    mp = mpmath
    t_, df_, nc_ = mp.mpf(t), mp.mpf(df), mp.mpf(nc)
    k = df_ / 2

    def density(u):
        return mp.exp((k - 1) * mp.log(u) - u / 2 - k * mp.log(2) - mp.loggamma(k))

    return float(mp.quad(lambda u: mp.ncdf(t_ * mp.sqrt(u / df_) - nc_) * density(u), [0, df_ / 4, df_, 4 * df_, mp.inf]))


@pytest.mark.parametrize(("t", "df", "nc"), [
    (12.706204736174694, 1, 15.0),  # scipy.special.nctdtr gives NaN here (the MDE of 2 queries)
    (12.706204736174694, 1, 25.0),  # and here
    (2.0, 10, 3.0),
    (-2.0, 10, 3.0),
    (1.97, 299, 2.8),  # a power analysis of 300 queries
    (-1.5, 5, -1.0),
])
def test_noncentral_t_against_its_definition(t, df, nc):
    assert noncentral_t_cdf(t, df, nc) == pytest.approx(_exact_noncentral(t, df, nc), abs=2e-13)


def test_noncentral_t_agrees_with_scipy_where_scipy_is_finite():
    worst, compared = 0.0, 0
    for df in (1, 2, 3, 7, 19, 60, 299, 999, 9_999, 99_999):
        for nc in (0.0, 0.1, 0.5, 1.0, 2.0, 2.8, 5.0, 10.0, 20.0, 30.0):
            for t in (-20.0, -5.0, -2.0, -1.0, -0.1, 0.0, 0.1, 1.0, 1.96, 3.0, 5.0, 20.0, 50.0):
                reference = float(special.nctdtr(df, nc, t))
                if math.isnan(reference):
                    continue
                worst = max(worst, abs(noncentral_t_cdf(t, df, nc) - reference))
                compared += 1
    assert compared > 1000
    assert worst < 2e-11


def test_noncentral_t_with_no_noncentrality_is_students_t():
    for df in (1, 4, 40, 400):
        for t in (-3.0, -0.5, 0.0, 0.5, 3.0):
            assert noncentral_t_cdf(t, df, 0.0) == pytest.approx(1.0 - t_tail(t, df), abs=1e-14)


def test_noncentral_t_far_out_in_t():
    """(1 - x)^(df/2) underflows for t above ~38 at large df: the series's factors are kept in logs (a review
    found 0.99999999999992 against the exact 0.93244 here)."""
    assert noncentral_t_cdf(39.0, 99_999, 37.5) == pytest.approx(float(special.nctdtr(99_999, 37.5, 39.0)), abs=1e-11)
    assert noncentral_t_cdf(-39.0, 99_999, -37.5) == pytest.approx(float(special.nctdtr(99_999, -37.5, -39.0)), abs=1e-11)
    # t^2 underflowing or overflowing: the limits, not a math domain error
    assert noncentral_t_cdf(1e-200, 10, 1.0) == pytest.approx(0.5 * math.erfc(1.0 / math.sqrt(2.0)), rel=1e-15)
    assert noncentral_t_cdf(1e200, 10, 1.0) == 1.0
    assert noncentral_t_cdf(1e200, 1e6, 2.8) == 1.0  # the normal approximation's branch
    assert noncentral_t_cdf(-1e200, 10, 1.0) == 0.0
    grid = [noncentral_t_cdf(t, 399_999, 20.0) for t in np.linspace(0.0, 60.0, 2001)]
    assert min(grid) >= 0.0 and max(grid) <= 1.0


@pytest.mark.parametrize(("t", "df", "nc"), [(12.706204736174694, 1, 38.0), (12.706204736174694, 1, 40.0),
                                         (12.706204736174694, 1, 60.0), (60.0, 30, 37.9), (20.0, 5, 100.0)])
def test_noncentral_t_beyond_a_noncentrality_of_38(t, df, nc):
    """The Poisson weights e^(-nc^2/2) ... underflow from about 38: kept in logs. A review found the power
    analysis NaN there, and queries_needed then doubling to 400,002 queries where 2 do (sd 1e-4, difference 0.01)."""
    assert noncentral_t_cdf(t, df, nc) == pytest.approx(float(special.nctdtr(df, nc, t)), abs=1e-12)


def test_noncentral_t_far_beyond_t_is_zero_and_nan_only_past_the_series_limit():
    # nc >= 10 t + 10: below 3e-23 (scipy: 1.9e-28 and 4.7e-134)
    assert noncentral_t_cdf(12.706204736174694, 1, 141.0) == 0.0
    assert noncentral_t_cdf(2.0, 10, 30.0) == 0.0
    assert float(special.nctdtr(1, 141.0, 12.706204736174694)) < 3e-23
    assert math.isnan(noncentral_t_cdf(100.0, 3, 800.0))  # 320,000 terms to the Poisson mode: more than 200,000
    assert math.isnan(noncentral_t_cdf(math.nan, 3, 1.0))


def test_normal_quantile_to_double_precision():
    """Acklam's approximation and one Halley step: within 4e-16 of the exact quantile (found by mpmath's root
    finder on its own normal CDF) from 1e-300 to 1 - 1e-16, near 1/2 too (scipy's ndtri: 6e-16)."""
    rng = np.random.default_rng(1)
    ps = np.concatenate([rng.uniform(0, 1, 300), 10 ** rng.uniform(-300, -1, 150), 1 - 10 ** rng.uniform(-16, -1, 100),
                         0.5 + 10 ** rng.uniform(-16, -1, 50), [1e-300, 0.02425, 0.025, 0.8, 0.975, 0.97575]])
    worst = 0.0
    for p in ps.tolist():
        exact = float(mpmath.findroot(lambda x, p=p: mpmath.ncdf(x) - mpmath.mpf(p), float(special.ndtri(p))))
        worst = max(worst, abs(normal_quantile(p) - exact) / abs(exact))
    assert worst < 1e-15
    assert normal_quantile(0.5) == 0.0
    assert normal_quantile(5e-324) == pytest.approx(float(special.ndtri(5e-324)), rel=1e-8)  # Acklam's alone there
    for p in (0.0, 1.0, -0.5, math.nan):
        with pytest.raises(ValueError, match="p must be in"):
            normal_quantile(p)


def test_a_report_s_statistics_import_no_scipy():
    """The t-test, the power analysis and the bootstrap of a warm rerun: scipy.special alone took ~0.2 s to import."""
    code = (
        "import sys, numpy as np\n"
        "from rag_eval._scoring.stats import compare_paired\n"
        "from rag_eval._compare.power import Power\n"
        "rng = np.random.default_rng(0)\n"
        "a, b = rng.uniform(size=300), rng.uniform(size=300)\n"
        "compare_paired(a, b, seed=1)\n"
        "Power.of('a', 'b', b - a).queries_for(0.01)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_grid_values_are_plain_floats():
    assert type(t_tail(np.float64(2.0), 10)) is float
    assert type(noncentral_t_cdf(1.0, 10, 1.0)) is float
