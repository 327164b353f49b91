"""Power of the paired t-test: minimum detectable difference and queries needed.

References: published sample sizes of the paired two-sided t-test (Cohen's table, R's
pwr.t.test(type="paired") and G*Power agree: dz 0.2 -> 199, 0.5 -> 34, 0.8 -> 15 at alpha 0.05,
power 0.8), the normal approximation for large n, and a seeded simulation of the test itself.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import optimize, special
from scipy import stats as sps

from rag_eval._compare.power import Power, minimum_detectable_difference, queries_needed, t_test_power
from rag_eval._report.format import fmt_mde
from rag_eval._scoring import stats

Z = sps.norm.ppf(0.975) + sps.norm.ppf(0.8)  # 2.8016: the normal-approximation multiplier


def _deltas(n: int, sd: float, seed: int = 1) -> np.ndarray:
    """n differences whose sample sd is exactly ``sd`` (standardised draws)."""
    x = np.random.default_rng(seed).normal(size=n)
    return (x - x.mean()) / x.std(ddof=1) * sd


def _detection_rate(n: int, sd: float, effect: float, reps: int = 20_000, seed: int = 7) -> float:
    """Share of ``reps`` simulated query sets where the paired t-test (alpha 0.05) finds a difference."""
    draws = np.random.default_rng(seed).normal(effect, sd, size=(reps, n))
    p = sps.ttest_1samp(draws, 0.0, axis=1).pvalue
    return float(np.mean(p < 0.05))


@pytest.mark.parametrize(("dz", "n"), [(0.2, 199), (0.5, 34), (0.8, 15)])
def test_queries_needed_matches_published_sample_sizes(dz, n):
    assert queries_needed(1.0, dz) == n
    assert queries_needed(0.1, dz / 10) == n  # only the ratio difference / sd matters


def test_power_at_the_published_case():
    # G*Power, paired t-test dz = 0.5, n = 34: actual power 0.8077775; n = 33 falls short of 0.8.
    assert t_test_power(0.5, 1.0, 34) == pytest.approx(0.8077775, abs=1e-6)
    assert t_test_power(0.5, 1.0, 33) < 0.8
    assert t_test_power(-0.5, 1.0, 34) == t_test_power(0.5, 1.0, 34)  # two-sided


def test_power_of_a_zero_difference_is_alpha():
    assert t_test_power(0.0, 1.0, 10) == pytest.approx(0.05, abs=1e-12)


@pytest.mark.parametrize(("n", "sd"), [(8, 0.2), (20, 0.15), (60, 0.05)])
def test_detection_rate_at_the_reported_mde_is_the_power(n, sd):
    mde = minimum_detectable_difference(_deltas(n, sd))
    assert t_test_power(mde, sd, n) == pytest.approx(0.8, abs=1e-9)
    assert _detection_rate(n, sd, mde) == pytest.approx(0.8, abs=0.03)


def test_the_t_correction_matters_for_few_queries():
    """At n = 8 the normal approximation promises power it does not have: the simulation catches it."""
    n, sd = 8, 0.2
    normal = Z * sd / math.sqrt(n)
    mde = minimum_detectable_difference(_deltas(n, sd))
    assert mde > normal * 1.1
    assert _detection_rate(n, sd, normal) < 0.75


def test_simulation_uses_the_same_test_as_rag_eval():
    draws = np.random.default_rng(3).normal(0.05, 0.2, size=(5, 12))
    vectorised = sps.ttest_1samp(draws, 0.0, axis=1).pvalue
    assert [stats.paired_t_test(row) for row in draws] == pytest.approx(list(vectorised), rel=1e-12)


def test_mde_approaches_the_normal_approximation_for_many_queries():
    n, sd = 10_000, 0.3
    assert minimum_detectable_difference(_deltas(n, sd)) == pytest.approx(Z * sd / math.sqrt(n), rel=5e-4)


def test_mde_and_queries_needed_are_inverse():
    n, sd = 50, 0.12
    mde = minimum_detectable_difference(_deltas(n, sd))
    assert queries_needed(sd, mde * (1 + 1e-9)) == n
    assert queries_needed(sd, mde * 0.99) == n + 1  # 1% smaller: about 2% more queries


def test_mde_uses_the_sample_sd_and_ignores_the_mean():
    d = _deltas(30, 0.1)
    assert minimum_detectable_difference(d + 0.5) == pytest.approx(minimum_detectable_difference(d), rel=1e-12)
    assert minimum_detectable_difference(2 * d) == pytest.approx(2 * minimum_detectable_difference(d), rel=1e-9)


def test_stricter_alpha_or_higher_power_needs_a_larger_difference():
    d = _deltas(40, 0.1)
    base = minimum_detectable_difference(d)
    assert minimum_detectable_difference(d, alpha=0.01) > base
    assert minimum_detectable_difference(d, power=0.9) > base


def test_degenerate_inputs():
    assert math.isnan(minimum_detectable_difference([0.1]))
    assert minimum_detectable_difference([0.1, 0.1, 0.1]) == 0.0
    assert queries_needed(0.0, 0.01) == 2
    with pytest.raises(ValueError, match="difference must be"):
        queries_needed(0.1, 0.0)
    with pytest.raises(ValueError, match="power must be"):
        minimum_detectable_difference([0.1, 0.2], power=0.01)
    with pytest.raises(ValueError, match="alpha must be"):
        queries_needed(0.1, 0.05, alpha=1.5)
    with pytest.raises(ValueError, match="finite"):
        minimum_detectable_difference([0.1, float("nan")])


def test_queries_needed_for_tiny_differences_ends_and_is_exact():
    """Stepping one query at a time never ended for a difference of 1e-6 sd (7.8e12 queries): now doubling steps
    and bisection, and beyond 10^7 queries the two-sided z-test's count plus Guenther's z^2/2 for the t.

    Exact values: the power by quadrature of the noncentral t's definition over the chi-square (mpmath), at the
    critical value scipy gives. At 7.8e8 queries the power crosses 0.8 between 784,886,052 and 784,886,053 (the
    one-tailed normal formula n_z would say 784,887,972: the opposite tail is worth 1,919 queries)."""
    assert queries_needed(1.0, 1e-4) == 784_886_053
    # Just below 10^7 the search answers; the power there by quadrature: 0.80000003 at 9,908,929, and the count
    # below falls short (checked the same way: 0.79999999).
    assert queries_needed(1.0, 8.9e-4) == 9_908_929
    # At 10^12 queries, the formula worked out with scipy: both tails of the z-test, then the t's correction.
    z = sps.norm.ppf(0.975)
    nc = optimize.brentq(lambda x: sps.norm.cdf(x - z) + sps.norm.cdf(-x - z) - 0.8, 0.0, 4.0, xtol=1e-15)
    assert queries_needed(1.0, 1e-6) == math.ceil((nc / 1e-6) ** 2 + z**2 / 2)
    with pytest.raises(ValueError, match="too small next to sd"):
        queries_needed(1.0, 1e-160)


def test_two_queries_have_a_minimum_detectable_difference():
    """scipy's noncentral t gave NaN on this way (so did every 2-query MDE); the series here sums it, and scipy's
    power at each MDE is the power asked for (checked: within 1e-12)."""
    d = np.array([0.1, 0.3])
    sd = float(np.std(d, ddof=1))
    critical = float(special.stdtrit(1, 0.975))
    for power in (0.8, 0.9, 0.99, 0.999, 0.9999):
        mde = minimum_detectable_difference(d, power=power)
        nc = mde * math.sqrt(2) / sd
        assert 1 - special.nctdtr(1, nc, critical) + special.nctdtr(1, nc, -critical) == pytest.approx(power, abs=1e-9)


@pytest.mark.parametrize("sd", [1e-20, 1e-6, 1e-4, 4.04e-4, 4.05e-4])
def test_a_difference_far_above_the_noise_needs_two_queries(sd):
    """A review found 400,002 here: the power at 2 queries was NaN (noncentrality above 38), so the search doubled
    until the normal approximation took over. scipy's power at 2 queries is above 0.8 (and the old code said 2)."""
    nc = 0.01 * math.sqrt(2) / sd
    critical = float(special.stdtrit(1, 0.975))
    if nc < 1e6:  # (scipy's nctdtr is NaN further out)
        assert 1 - special.nctdtr(1, nc, critical) > 0.8
    assert queries_needed(sd, 0.01) == 2


def test_power_of_differences_near_the_float_limit():
    """A stranger's attack: dcg@10 values near 1e200 made the sample sd overflow to inf (squares beyond 1e308),
    and `rag-eval compare` exited 3 from queries_needed. The sd is taken on the differences scaled by a power of
    two: the same figures as for the scaled differences, times the scale."""
    unit = np.array([0.3, -0.1, 0.25, 0.05, -0.2, 0.4])
    scale = 2.0**660  # about 4.8e198
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy overflow warning either
        small, huge = Power.of("a", "b", unit), Power.of("a", "b", unit * scale)
    assert huge.sd == small.sd * scale
    assert huge.mde == pytest.approx(small.mde * scale, rel=1e-12)
    assert huge.mean_difference == small.mean_difference * scale
    assert huge.queries_for(0.01 * scale) == small.queries_for(0.01)
    assert huge.queries_for(0.01) is None  # 0.01 next to an sd of 1e198: no count of queries is a number


def test_a_detectable_difference_below_the_printed_digits_is_not_shown_as_zero():
    assert fmt_mde(2.1e-5) == "< 0.0001"
    assert fmt_mde(0.0) == "0.0000"  # no noise at all: a figure of its own (the report words it apart)
    assert fmt_mde(0.00005) == "0.0001" and fmt_mde(0.0347) == "0.0347"
    assert fmt_mde(math.nan) == "n/a"
