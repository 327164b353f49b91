"""Tests for rag_eval._scoring.stats against independently derived numbers.

Reference values come from scipy (ttest_rel / ttest_1samp, permutation_test,
bootstrap), closed forms (Student t with 1 and 2 degrees of freedom, binomial
bootstrap distributions), exact rational brute force (fractions.Fraction) and
an exact integer dynamic programme for the sign-flip null distribution.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import subprocess
import sys
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from rag_eval._scoring import stats
from rag_eval._scoring.stats import (
    PairedComparison,
    bootstrap_ci,
    compare_paired,
    holm,
    paired_deltas,
    paired_t_test,
    permutation_test,
    win_tie_loss,
)

# ---------------------------------------------------------------------------
# Independent oracles
# ---------------------------------------------------------------------------


def brute_force_sign_flip_p(values: list[Fraction]) -> Fraction:
    """Exact two-sided sign-flip p-value by enumerating all 2**n patterns in rationals."""
    observed = abs(sum(values))
    hits = 0
    for signs in itertools.product((1, -1), repeat=len(values)):
        if abs(sum(s * v for s, v in zip(signs, values))) >= observed:
            hits += 1
    return Fraction(hits, 2 ** len(values))


def dp_sign_flip_p(ints: list[int]) -> Fraction:
    """Exact sign-flip p-value for integer deltas via the distribution of sum(s_i * k_i).

    Dynamic programme over the attainable sums (counts of sign patterns), so
    n = 20-30 is instant; exact in integers, no floating point anywhere.
    """
    counts = Counter({0: 1})
    for k in ints:
        nxt: Counter = Counter()
        for total, c in counts.items():
            nxt[total + k] += c
            nxt[total - k] += c
        counts = nxt
    observed = abs(sum(ints))
    hits = sum(c for total, c in counts.items() if abs(total) >= observed)
    return Fraction(hits, 2 ** len(ints))


def manual_holm(p: list[float]) -> list[float]:
    """Holm adjustment written as the textbook loop (no numpy)."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):  # rank is 0-based, multiplier m - rank
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def scipy_perm_p(baseline: np.ndarray, candidate: np.ndarray) -> float:
    """scipy's exact paired permutation test (mean of differences, two-sided)."""

    def mean_diff(x, y, axis):
        return np.mean(x - y, axis=axis)

    res = sps.permutation_test(
        (candidate, baseline),
        mean_diff,
        permutation_type="samples",
        alternative="two-sided",
        vectorized=True,
        n_resamples=np.inf,  # exact: all 2**n pairings
    )
    return float(res.pvalue)


@pytest.fixture(autouse=True)
def _fresh_bootstrap_memo():
    """Each test draws its intervals itself: one remembered from another test would hide what it checks."""
    stats._BOOTSTRAP_MEMO.clear()


# ---------------------------------------------------------------------------
# paired_deltas
# ---------------------------------------------------------------------------


def test_paired_deltas_is_candidate_minus_baseline_float64():
    out = paired_deltas([0.5, 0.25, 1], np.array([0.75, 0.25, 0], dtype=np.float32))
    assert out.dtype == np.float64
    assert out.tolist() == [0.25, 0.0, -1.0]


@pytest.mark.parametrize(
    "baseline, candidate",
    [
        ([0.1, 0.2], [0.1, 0.2, 0.3]),
        (np.zeros((2, 2)), np.zeros((2, 2))),  # per-query values are 1-D
        ([0.1, float("nan")], [0.1, 0.2]),
        ([0.1, 0.2], [float("nan"), 0.2]),
        ([0.1, float("inf")], [0.1, 0.2]),
    ],
)
def test_paired_deltas_rejects_bad_input(baseline, candidate):
    with pytest.raises(ValueError):
        paired_deltas(baseline, candidate)


# ---------------------------------------------------------------------------
# paired t-test
# ---------------------------------------------------------------------------

_rng = np.random.default_rng(20240611)
T_CASES = [
    (np.array([0.2, 0.5, 0.7, 0.1]), np.array([0.3, 0.55, 0.65, 0.4])),
    (np.array([1.0, 2.0, 3.0]), np.array([1.5, 2.0, 3.9])),
    (_rng.uniform(0, 1, 10), _rng.uniform(0, 1, 10)),
    (_rng.uniform(0, 1, 57), _rng.uniform(0, 1, 57) + 0.1),
    (_rng.normal(0.4, 0.1, 500), _rng.normal(0.41, 0.1, 500)),
    (np.linspace(0, 1, 30), np.linspace(0, 1, 30) ** 2 + 1e-3),
]


@pytest.mark.parametrize("baseline, candidate", T_CASES)
def test_paired_t_test_matches_scipy(baseline, candidate):
    d = paired_deltas(baseline, candidate)
    p = paired_t_test(d)
    assert isinstance(p, float)
    assert p == pytest.approx(sps.ttest_rel(candidate, baseline).pvalue, rel=1e-12, abs=1e-12)
    assert p == pytest.approx(sps.ttest_1samp(d, 0.0).pvalue, rel=1e-12, abs=1e-12)
    # two-sided: swapping the roles changes nothing
    assert paired_t_test(-d) == pytest.approx(p, rel=1e-12, abs=1e-12)


def test_paired_t_test_where_the_beta_function_switches_sides():
    """These 18 deltas put t at 1.638..., where x and 1 - x, rounded, once sent the incomplete beta function
    from one side to the other until RecursionError (found by a review)."""
    d = np.array([0.266, 0.294, 0.107, 0.565, -0.149, 0.328, -0.023, -0.1, 0.242, -0.059, 0.31, -0.197, 0.104,
                  -0.116, 0.036, 0.002, -0.187, 0.05383563568361793])
    assert paired_t_test(d) == pytest.approx(sps.ttest_1samp(d, 0.0).pvalue, rel=1e-12)


def test_paired_t_test_closed_forms():
    # n = 2 -> 1 degree of freedom (Cauchy): P(|T| >= t) = 1 - (2/pi) atan(t).
    # deltas [1, 3]: mean 2, sd sqrt(2), t = 2 / (sqrt(2)/sqrt(2)) = 2.
    assert paired_t_test(np.array([1.0, 3.0])) == pytest.approx(1 - 2 / math.pi * math.atan(2.0), rel=1e-12)
    # n = 3 -> 2 degrees of freedom: P(|T| >= t) = 1 - t / sqrt(t^2 + 2).
    # deltas [1, 2, 3]: mean 2, sd 1, t = 2 * sqrt(3).
    t = 2 * math.sqrt(3)
    assert paired_t_test(np.array([1.0, 2.0, 3.0])) == pytest.approx(1 - t / math.sqrt(t * t + 2), rel=1e-12)


def test_paired_t_test_is_scale_invariant_at_extreme_scales():
    # t is scale-invariant; naive variance would underflow/overflow here (scipy
    # itself returns 0.0 and 1.0 for the two extreme cases).
    deltas = np.array([1.0, 2.0, 1.0])
    p = paired_t_test(deltas)
    assert p == pytest.approx(sps.ttest_1samp(deltas, 0.0).pvalue, rel=1e-12)
    for scale in (1e-170, 1e170, 2.0**-1000):
        assert paired_t_test(deltas * scale) == pytest.approx(p, rel=1e-12)
    # deltas [0, smallest subnormal]: t = 1 with 1 degree of freedom -> p = 1/2
    assert paired_t_test(np.array([0.0, 5e-324])) == pytest.approx(0.5, rel=1e-12)


def test_paired_t_test_degenerate_cases():
    assert paired_t_test(np.array([])) == 1.0
    assert paired_t_test(np.array([0.7])) == 1.0  # n < 2
    assert paired_t_test(np.zeros(12)) == 1.0  # all zero
    assert paired_t_test(np.full(5, 0.1)) == 0.0  # zero variance, non-zero mean
    assert paired_t_test(np.full(5, -0.1)) == 0.0
    with pytest.raises(ValueError):
        paired_t_test(np.array([0.1, np.nan]))


# ---------------------------------------------------------------------------
# permutation test
# ---------------------------------------------------------------------------

PERM_SMALL = [
    # deltas [0.1, 0, -0.2, 0.5]: by hand 12 of 16 patterns reach |sum| >= 0.4 (see compare test)
    (np.array([0.5, 0.2, 0.9, 0.4]), np.array([0.6, 0.2, 0.7, 0.9])),
    # deltas 0.1, 0.2, -0.3, 0.5: flipping the first three is an exact tie with
    # the observed sum that float arithmetic misses by ~5e-17 without tolerance
    (np.zeros(4), np.array([0.1, 0.2, -0.3, 0.5])),
    (np.array([0.3, 0.1, 0.6, 0.0, 0.2]), np.array([0.4, 0.3, 0.3, 0.5, 0.2])),
    (_rng.uniform(0, 1, 7), _rng.uniform(0, 1, 7)),
    (_rng.uniform(0, 1, 10), _rng.uniform(0, 1, 10) + 0.15),
    # P@10-like values: many exact ties among sign patterns
    (np.array([3, 5, 2, 7, 1, 4, 6, 2, 0, 9]) / 10, np.array([4, 5, 4, 6, 3, 4, 8, 1, 2, 9]) / 10),
]


@pytest.mark.parametrize("baseline, candidate", PERM_SMALL)
def test_permutation_exact_matches_scipy(baseline, candidate):
    d = paired_deltas(baseline, candidate)
    p = permutation_test(d)
    assert p == scipy_perm_p(baseline, candidate)
    # and the exact rational enumeration of the decimal values
    # and the exact rational enumeration of the intended (shortest decimal) values,
    # where ties such as 0.1 + 0.2 == 0.3 are genuine
    intended = [Fraction(repr(float(c))) - Fraction(repr(float(b))) for b, c in zip(baseline, candidate)]
    assert p == float(brute_force_sign_flip_p(intended))


def test_permutation_tolerance_catches_decimal_ties():
    # Intended deltas 0.1, 0.2, -0.3, 0.5 (e.g. P@10 differences). With
    # a = +-0.1 +-0.2 +-0.3 taking the values 0 (twice), +-0.2, +-0.4, +-0.6,
    # |a +- 0.5| >= 0.5 holds for both signs when a = 0 (4 patterns) and for one
    # sign otherwise (6 patterns): p = 10/16.
    exact = brute_force_sign_flip_p([Fraction(s) for s in ("0.1", "0.2", "-0.3", "0.5")])
    assert exact == Fraction(10, 16)
    deltas = np.array([0.1, 0.2, -0.3, 0.5])
    assert permutation_test(deltas) == 0.625
    # Summed left to right in floating point, two of the tied patterns come out
    # as 0.49999999999999994, so a comparison without tolerance would give 8/16
    # (and the answer would depend on the summation order the BLAS picks); the
    # tolerance is what makes the result right and order-independent.
    values = deltas.tolist()
    observed = abs(sum(values))
    naive = sum(
        abs(sum(s * v for s, v in zip(signs, values))) >= observed
        for signs in itertools.product((1.0, -1.0), repeat=4)
    )
    assert naive == 8


def test_permutation_exact_n12_brute_force():
    # Metric-like deltas (multiples of 1/20, not exact in binary) with ties.
    steps = [3, -1, 4, 1, -5, 9, 2, -6, 5, 3, -5, 8]
    deltas = np.array(steps) / 20
    exact = brute_force_sign_flip_p([Fraction(s, 20) for s in steps])
    assert permutation_test(deltas) == float(exact)
    # exact mode ignores seed and n_resamples
    assert permutation_test(deltas, seed=7, n_resamples=3) == float(exact)


def test_permutation_exact_n16_boundary_and_dp_oracle_agree():
    steps = [2, -3, 7, 1, 0, 4, -2, 5, -1, 3, 6, -4, 2, 1, -5, 3]
    assert len(steps) == stats._EXACT_MAX_N
    exact = dp_sign_flip_p(steps)
    p = permutation_test(np.array(steps) * 0.01)
    assert p == float(exact)
    assert (p * 2**16) == int(p * 2**16)  # a multiple of 1/2**16: enumerated, not sampled
    # the two oracles agree with each other
    assert dp_sign_flip_p(steps[:12]) == brute_force_sign_flip_p([Fraction(s) for s in steps[:12]])


def test_permutation_hand_cases():
    assert permutation_test(np.array([0.3])) == 1.0  # +-0.3 both as extreme
    assert permutation_test(np.array([1.0, 3.0])) == 0.5  # sums 4, 2, -2, -4
    assert permutation_test(np.ones(5)) == 2 / 32  # only all-plus and all-minus
    assert permutation_test(np.array([1.0, -1.0, 2.0, -2.0])) == 1.0  # observed mean 0
    assert permutation_test(np.zeros(8)) == 1.0
    assert permutation_test(np.zeros(40)) == 1.0
    assert permutation_test(np.array([])) == 1.0


def test_permutation_sampled_formula_hand_cases():
    n_resamples = 999
    # n = 30 equal positive deltas: only the all-plus / all-minus patterns (chance 2**-29)
    # reach the observed |sum|, so count = 0 and p = 1 / (N + 1).
    assert permutation_test(np.full(30, 0.2), n_resamples=n_resamples) == 1 / 1000
    # observed mean 0: every pattern counts, p = (N + 1) / (N + 1)
    assert permutation_test(np.array([0.1, -0.1] * 10), n_resamples=n_resamples) == 1.0


# Integer steps for the sampled mode (n > 16): exact p known by the DP oracle.
SAMPLED_STEPS = [3, -2, 5, 1, -4, 2, 6, -1, 0, 3, -3, 4, 2, -5, 1, 2, -2, 3, 1, -1, 4, -3, 2, 1]


def test_permutation_sampled_close_to_exact():
    exact = float(dp_sign_flip_p(SAMPLED_STEPS))
    assert 0.02 < exact < 0.5, exact  # a non-trivial p, so the check has teeth
    deltas = np.array(SAMPLED_STEPS) * 0.05
    n_resamples = 20_000
    for seed in (0, 1):
        p = permutation_test(deltas, n_resamples=n_resamples, seed=seed)
        se = math.sqrt(exact * (1 - exact) / n_resamples)
        assert abs(p - exact) < 5 * se + 1 / n_resamples, (p, exact, se)
        # p = (count + 1) / (N + 1) with an integer count
        count = p * (n_resamples + 1) - 1
        assert abs(count - round(count)) < 1e-6


def test_permutation_sampled_n17_just_past_exact_limit():
    steps = SAMPLED_STEPS[:17]
    exact = float(dp_sign_flip_p(steps))
    p = permutation_test(np.array(steps) * 0.05, n_resamples=20_000, seed=3)
    assert abs(p - exact) < 5 * math.sqrt(exact * (1 - exact) / 20_000) + 1 / 20_000
    assert p != exact  # sampled (p has denominator 20001), not enumerated


def test_permutation_sampled_reproducible_with_seed():
    deltas = np.array(SAMPLED_STEPS) * 0.05
    a = permutation_test(deltas, n_resamples=5_000, seed=42)
    b = permutation_test(deltas, n_resamples=5_000, seed=42)
    c = permutation_test(deltas, n_resamples=5_000, seed=43)
    assert a == b
    assert a != c  # different seed, different draw (fixed inputs: deterministic)


def test_permutation_sampled_chunking(monkeypatch):
    # Tiny blocks force many chunks; the estimate must still be right.
    monkeypatch.setattr(stats, "_CHUNK_ELEMENTS", 100)
    exact = float(dp_sign_flip_p(SAMPLED_STEPS))
    p = permutation_test(np.array(SAMPLED_STEPS) * 0.05, n_resamples=10_000, seed=5)
    assert abs(p - exact) < 5 * math.sqrt(exact * (1 - exact) / 10_000) + 1e-4


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-20, 20), min_size=1, max_size=10))
def test_permutation_exact_properties(steps):
    deltas = np.array(steps) / 100
    p = permutation_test(deltas)
    assert p == float(dp_sign_flip_p(steps))
    assert permutation_test(-deltas) == p  # two-sided
    assert permutation_test(deltas[::-1]) == p  # order of queries is irrelevant


def test_permutation_rejects_bad_input():
    with pytest.raises(ValueError):
        permutation_test(np.array([0.1, np.nan]))
    with pytest.raises(ValueError):
        permutation_test(np.ones(20), n_resamples=0)


# ---------------------------------------------------------------------------
# bootstrap CI
# ---------------------------------------------------------------------------

BOOT_CASES = [
    _rng.normal(0.02, 0.1, 40),
    _rng.exponential(0.1, 25) - 0.05,  # skewed
    np.clip(_rng.normal(0.6, 0.2, 200), 0, 1) - np.clip(_rng.normal(0.55, 0.2, 200), 0, 1),
]


@pytest.mark.parametrize("deltas", BOOT_CASES)
@pytest.mark.parametrize("confidence", [0.95, 0.9])
def test_bootstrap_matches_scipy_percentile(deltas, confidence):
    low, high = bootstrap_ci(deltas, confidence=confidence, n_resamples=10_000, seed=0)
    ref = sps.bootstrap(
        (deltas,),
        np.mean,
        method="percentile",
        confidence_level=confidence,
        n_resamples=40_000,
        rng=np.random.default_rng(123),
    ).confidence_interval
    # Monte Carlo error of a 2.5% quantile from 10,000 resamples is about
    # 0.03 standard errors of the mean; allow ~6 sigma of the difference.
    se = deltas.std(ddof=1) / math.sqrt(deltas.size)
    assert abs(low - ref.low) < 0.2 * se, (low, ref.low, se)
    assert abs(high - ref.high) < 0.2 * se, (high, ref.high, se)
    assert low < deltas.mean() < high


def test_bootstrap_chunked_matches_scipy(monkeypatch):
    monkeypatch.setattr(stats, "_CHUNK_ELEMENTS", 1000)  # 25 resamples per block
    deltas = BOOT_CASES[0]
    low, high = bootstrap_ci(deltas, n_resamples=10_000, seed=9)
    ref = sps.bootstrap(
        (deltas,), np.mean, method="percentile", n_resamples=40_000, rng=np.random.default_rng(5)
    ).confidence_interval
    se = deltas.std(ddof=1) / math.sqrt(deltas.size)
    assert abs(low - ref.low) < 0.2 * se
    assert abs(high - ref.high) < 0.2 * se


@pytest.mark.parametrize("deltas", BOOT_CASES)
@pytest.mark.parametrize("seed", [0, 17])
def test_bootstrap_is_scipy_percentile_draw_for_draw(deltas, seed):
    """Same generator seed -> the same resamples: scipy's own call (no batches) gives the same interval."""
    low, high = bootstrap_ci(deltas, confidence=0.9, n_resamples=3_000, seed=seed)
    ref = sps.bootstrap(
        (deltas,), np.mean, method="percentile", confidence_level=0.9, n_resamples=3_000,
        rng=np.random.default_rng(seed),
    ).confidence_interval
    assert (low, high) == (float(ref.low), float(ref.high))


def test_bootstrap_by_hand_in_numpy():
    """The percentile interval written out: resample indices, means, the 2.5% / 97.5% quantiles (linear)."""
    deltas = BOOT_CASES[1]
    n, n_resamples = deltas.size, 4_000
    indices = np.random.default_rng(21).integers(0, n, size=(n_resamples, n))
    means = np.sort(deltas[indices].mean(axis=1))

    def quantile(q):  # linear interpolation between order statistics (Hyndman & Fan type 7)
        position = q * (n_resamples - 1)
        below = math.floor(position)
        return means[below] + (position - below) * (means[below + 1] - means[below])

    low, high = bootstrap_ci(deltas, n_resamples=n_resamples, seed=21)
    assert low == pytest.approx(quantile(0.025), rel=1e-12)
    assert high == pytest.approx(quantile(0.975), rel=1e-12)


def test_bootstrap_is_the_percentile_interval_not_bca():
    """The report says "percentile bootstrap": on skewed deltas scipy's default (BCa) differs, ours does not."""
    deltas = BOOT_CASES[1]  # exponential: skewed, so the bias correction moves the interval
    common = {"n_resamples": 5_000, "confidence_level": 0.95}
    bca = sps.bootstrap((deltas,), np.mean, method="BCa", rng=np.random.default_rng(2), **common)
    pct = sps.bootstrap((deltas,), np.mean, method="percentile", rng=np.random.default_rng(2), **common)
    ours = bootstrap_ci(deltas, n_resamples=5_000, seed=2)
    assert ours == (float(pct.confidence_interval.low), float(pct.confidence_interval.high))
    se = deltas.std(ddof=1) / math.sqrt(deltas.size)
    assert abs(ours[0] - bca.confidence_interval.low) > 0.05 * se  # same draws, a visibly different interval


def test_bootstrap_batches_do_not_change_the_draws(monkeypatch):
    deltas = BOOT_CASES[0]
    whole = bootstrap_ci(deltas, n_resamples=2_000, seed=9)
    stats._BOOTSTRAP_MEMO.clear()  # drawn again, in batches, not remembered
    monkeypatch.setattr(stats, "_CHUNK_ELEMENTS", 7 * deltas.size)  # 7 resamples per batch, a ragged last one
    assert bootstrap_ci(deltas, n_resamples=2_000, seed=9) == whole


def test_an_interval_asked_for_again_is_not_drawn_again(monkeypatch):
    """The decision and the means plot ask for each variant's interval: the second ask draws nothing and
    gives the first answer; any other argument (or other deltas) is drawn anew."""
    deltas = BOOT_CASES[1]
    draws = []
    real = np.random.default_rng
    monkeypatch.setattr(stats.np.random, "default_rng", lambda seed: draws.append(seed) or real(seed))
    first = bootstrap_ci(deltas, n_resamples=2_000, seed=4)
    assert bootstrap_ci(deltas.copy(), n_resamples=2_000, seed=4) == first and draws == [4]
    assert bootstrap_ci(deltas, n_resamples=2_000, seed=5) != first and draws == [4, 5]
    bootstrap_ci(deltas, n_resamples=2_001, seed=4)
    bootstrap_ci(deltas, confidence=0.9, n_resamples=2_000, seed=4)
    bootstrap_ci(deltas[::-1].copy(), n_resamples=2_000, seed=4)  # the same values in another order: other draws
    assert draws == [4, 5, 4, 4, 4]
    stats._BOOTSTRAP_MEMO.clear()
    assert bootstrap_ci(deltas, n_resamples=2_000, seed=4) == first  # drawn again: the same interval
    monkeypatch.setattr(stats, "_BOOTSTRAP_MEMO_SIZE", 2)
    for seed in range(10, 15):
        bootstrap_ci(deltas, n_resamples=200, seed=seed)
    assert len(stats._BOOTSTRAP_MEMO) == 2  # bounded: the oldest are let go


def test_importing_stats_does_not_load_scipy():
    """The limits are read by the config schema and the CLI parser: importing them must stay cheap."""
    code = (
        "import sys; from rag_eval._scoring.stats import MAX_RESAMPLES, MIN_RESAMPLES; import rag_eval._compare.regression; "
        "print(MIN_RESAMPLES, MAX_RESAMPLES, 'scipy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["100", "1000000", "False"]


def test_bootstrap_hand_cases_binomial():
    # deltas {0, 1}: resample mean is 0, 0.5, 1 w.p. 1/4, 1/2, 1/4, so the
    # 2.5% and 97.5% quantiles are 0 and 1 (with overwhelming probability).
    assert bootstrap_ci(np.array([0.0, 1.0])) == (0.0, 1.0)
    # deltas {0, 0, 0, 1}: mean* = K/4, K ~ Binomial(4, 1/4);
    # P(K <= 0) = 0.316 > 0.025 and P(K <= 2) = 0.949 < 0.975 < P(K <= 3) = 0.996.
    assert bootstrap_ci(np.array([0.0, 0.0, 0.0, 1.0])) == (0.0, 0.75)


def test_bootstrap_constant_collapses():
    assert bootstrap_ci(np.full(7, 0.1)) == (0.1, 0.1)
    assert bootstrap_ci(np.zeros(3)) == (0.0, 0.0)
    assert bootstrap_ci(np.array([-0.3])) == (-0.3, -0.3)


def test_bootstrap_reproducible_and_seed_dependent():
    deltas = BOOT_CASES[1]
    a = bootstrap_ci(deltas, n_resamples=2_000, seed=11)
    assert a == bootstrap_ci(deltas, n_resamples=2_000, seed=11)
    assert a != bootstrap_ci(deltas, n_resamples=2_000, seed=12)
    assert all(isinstance(x, float) for x in a)


def test_bootstrap_is_translation_and_scale_equivariant():
    # Same seed -> same resample indices, so shifting/scaling the data moves the CI exactly
    # (up to float rounding).
    deltas = BOOT_CASES[0]
    low, high = bootstrap_ci(deltas, n_resamples=2_000, seed=3)
    s_low, s_high = bootstrap_ci(deltas + 0.25, n_resamples=2_000, seed=3)
    assert s_low == pytest.approx(low + 0.25, abs=1e-12)
    assert s_high == pytest.approx(high + 0.25, abs=1e-12)
    m_low, m_high = bootstrap_ci(-2 * deltas, n_resamples=2_000, seed=3)
    assert m_low == pytest.approx(-2 * high, abs=1e-12)
    assert m_high == pytest.approx(-2 * low, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-1, 1, allow_nan=False), min_size=1, max_size=30))
def test_bootstrap_interval_is_ordered_and_within_range(values):
    deltas = np.array(values)
    low, high = bootstrap_ci(deltas, n_resamples=200, seed=0)
    assert low <= high
    # a mean of values can exceed the extremes only by rounding
    assert deltas.min() - 1e-12 <= low and high <= deltas.max() + 1e-12


@pytest.mark.parametrize(
    "kwargs", [{"confidence": 0.0}, {"confidence": 1.0}, {"confidence": 95}, {"n_resamples": 0}, {"n_resamples": 2.5}]
)
def test_bootstrap_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        bootstrap_ci(np.array([0.1, 0.2]), **kwargs)


def test_bootstrap_rejects_empty_and_nan():
    with pytest.raises(ValueError):
        bootstrap_ci(np.array([]))
    with pytest.raises(ValueError):
        bootstrap_ci(np.array([0.1, np.nan]))


# ---------------------------------------------------------------------------
# Holm
# ---------------------------------------------------------------------------


def test_holm_hand_example():
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, max(0.06, 0.04*1) = 0.06
    adjusted = holm([0.01, 0.04, 0.03, 0.005])
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02], rel=1e-14)
    assert all(isinstance(x, float) for x in adjusted)


@pytest.mark.parametrize(
    "p, expected",
    [
        ([], []),
        ([0.5], [0.5]),
        ([0.2, 0.6], [0.4, 0.6]),
        ([0.6, 0.2], [0.6, 0.4]),
        ([0.3, 0.4, 0.9], [0.9, 0.9, 0.9]),  # 0.9, max(0.9, 0.8), max(0.9, 0.9)
        ([0.5, 0.6], [1.0, 1.0]),  # capped at 1
        ([0.01, 0.01, 0.5], [0.03, 0.03, 0.5]),  # ties share a value
        ([0.0, 1.0], [0.0, 1.0]),
    ],
)
def test_holm_more_hand_cases(p, expected):
    assert holm(p) == pytest.approx(expected, rel=1e-14)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 1, allow_nan=False), max_size=25))
def test_holm_properties(p):
    adjusted = holm(p)
    m = len(p)
    assert adjusted == manual_holm(p)
    assert len(adjusted) == m
    for raw, adj in zip(p, adjusted):
        assert raw <= adj <= 1.0
        assert adj <= min(1.0, m * raw)  # never more conservative than Bonferroni
    # monotone: the order of the adjusted values follows the order of the raw ones
    for i in range(m):
        for j in range(m):
            if p[i] <= p[j]:
                assert adjusted[i] <= adjusted[j]


@pytest.mark.parametrize("p", [[0.1, float("nan")], [1.5], [-0.01, 0.2]])
def test_holm_rejects_invalid(p):
    with pytest.raises(ValueError):
        holm(p)


# ---------------------------------------------------------------------------
# win / tie / loss
# ---------------------------------------------------------------------------


def test_win_tie_loss_by_hand():
    rounding = 0.3 - 0.1 - 0.2  # -2.8e-17: a tie in exact arithmetic
    assert rounding < 0
    deltas = np.array([0.1, 0.0, -0.2, 1e-13, -1e-13, rounding, 0.5])
    assert win_tie_loss(deltas) == (2, 4, 1)
    assert win_tie_loss(deltas, tolerance=0.0) == (3, 1, 3)
    assert win_tie_loss(deltas, tolerance=0.15) == (1, 5, 1)
    assert win_tie_loss(np.array([])) == (0, 0, 0)
    with pytest.raises(ValueError):
        win_tie_loss(deltas, tolerance=-1.0)
    # The default is the one noise tolerance a verdict's unchanged queries use too.
    assert win_tie_loss(np.array([stats.UNCHANGED_WITHIN, -stats.UNCHANGED_WITHIN])) == (0, 2, 0)


def test_the_limits_of_a_comparison_and_of_these_functions_are_one_check():
    rule = "must be from 100 to 1,000,000 (more does not change the printed digits, and costs memory)"
    assert [stats.resamples_problem(n) for n in (99, 100, 1_000_000, 1_000_001)] == [rule, None, None, rule]
    assert stats.resamples_problem(1, fewest=1) is None
    assert [stats.confidence_problem(c) for c in (0.0, 0.5, 1.0, float("nan"))] == [
        "must be between 0 and 1 (exclusive)", None, "must be between 0 and 1 (exclusive)",
        "must be between 0 and 1 (exclusive)",
    ]
    assert (stats.seed_problem(0), stats.seed_problem(-1)) == (None, "must be >= 0 (numpy refuses negative seeds)")
    # The functions take any positive count up to the same maximum, in the same words.
    with pytest.raises(ValueError, match=r"n_resamples must be from 1 to 1,000,000 \(more .*\), got 1,000,001"):
        permutation_test(np.ones(20), n_resamples=1_000_001)
    with pytest.raises(ValueError, match=r"confidence must be between 0 and 1 \(exclusive\), got 1.5"):
        bootstrap_ci(np.array([0.1, 0.2]), confidence=1.5)


# ---------------------------------------------------------------------------
# compare_paired
# ---------------------------------------------------------------------------


def test_compare_paired_hand_case():
    baseline = np.array([0.5, 0.2, 0.9, 0.4])
    candidate = np.array([0.6, 0.2, 0.7, 0.9])
    result = compare_paired(baseline, candidate, n_resamples=2_000, seed=4)
    assert isinstance(result, PairedComparison)
    assert result.n == 4
    assert result.baseline_mean == pytest.approx(0.5, abs=1e-15)
    assert result.candidate_mean == pytest.approx(0.6, abs=1e-15)
    assert result.mean_delta == pytest.approx(0.1, abs=1e-15)
    # deltas (x10) 1, 0, -2, 5 with sum 4; over the signs of 1, 2, 5 the sums are
    # +-8, +-4, +-6, +-2, so 6 of 8 reach |4| (times 2 for the zero delta): p = 0.75
    assert result.p_permutation == 0.75
    assert result.p_t_test == pytest.approx(sps.ttest_rel(candidate, baseline).pvalue, abs=1e-12)
    assert (result.wins, result.ties, result.losses) == (2, 1, 1)
    assert (result.ci_low, result.ci_high) == bootstrap_ci(candidate - baseline, n_resamples=2_000, seed=4)
    assert result.ci_low <= result.mean_delta <= result.ci_high
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.n = 5  # type: ignore[misc]


def test_compare_paired_identical_runs():
    values = np.array([0.1, 0.4, 0.4, 0.9, 0.0])
    result = compare_paired(values, values.copy())
    assert result.mean_delta == 0.0
    assert (result.ci_low, result.ci_high) == (0.0, 0.0)
    assert result.p_permutation == 1.0
    assert result.p_t_test == 1.0
    assert (result.wins, result.ties, result.losses) == (0, 5, 0)


def test_compare_paired_rejects_bad_input():
    with pytest.raises(ValueError):
        compare_paired(np.array([0.1, 0.2]), np.array([0.1]))
    with pytest.raises(ValueError):
        compare_paired(np.array([0.1, np.nan]), np.array([0.1, 0.2]))
    with pytest.raises(ValueError):
        compare_paired(np.array([]), np.array([]))


def test_the_statistics_of_a_report_never_import_scipy_stats():
    """A warm rerun writes a decision (bootstrap, permutation, t-test, power): scipy.stats would add 0.5-0.7 s."""
    import subprocess
    import sys

    code = (
        "import sys, numpy as np\n"
        "from rag_eval._scoring import stats\n"
        "from rag_eval._compare.power import Power, queries_needed\n"
        "d = np.random.default_rng(1).normal(0.02, 0.1, 50)\n"
        "stats.bootstrap_ci(d); stats.permutation_test(d); stats.paired_t_test(d)\n"
        "power = Power.of('a', 'b', d); queries_needed(power.sd, 0.01)\n"
        "print(sorted(m for m in sys.modules if m.startswith(('scipy.stats', 'scipy.optimize'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
