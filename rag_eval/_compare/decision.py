"""Decision statistics for a run with several retrievers (a sweep): which wins, by how much, and is it real.

Pure (no I/O, no global random state); the markdown lives in :mod:`rag_eval._report.decision`.

* :func:`decide_run`: per variant the mean of the main metric with a percentile bootstrap CI,
  the paired difference to the baseline (declared, else the best mean) with a permutation
  p-value Holm-corrected over all variants compared, wins/ties/losses, and whether the
  variant is statistically indistinguishable from the best (paired permutation test against
  the best, Holm over those comparisons, adjusted p >= alpha). Pairing is
  :func:`rag_eval._compare.regression.pair_by_query`: by query id, queries left out (NaN) on either
  side are not paired. Its power line is a :class:`rag_eval._compare.power.Power`.
* the pieces the verdict and the plots share (rag_eval._compare.variants): :func:`mean_row` (a
  variant's mean of its defined values with its bootstrap CI), :func:`paired_differences` and
  :func:`wins_ties_losses`.

Power analysis lives in :mod:`rag_eval._compare.power`, segments by query tag in
:mod:`rag_eval._compare.segments` and context sizes in :mod:`rag_eval._compare.context_size`.

"Best" and wins follow the metric's own direction, read from its record (a lower-is-better
metric's best is the lowest).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from rag_eval._compare.paired import pair_by_query
from rag_eval._compare.power import ALPHA, Power
from rag_eval._core.errors import ComparisonError
from rag_eval._scoring import stats
from rag_eval._scoring.metrics.measures import parse_metric

if TYPE_CHECKING:
    from rag_eval._scoring.results import Results

__all__ = [
    "Decision",
    "MeanRow",
    "VariantDecision",
    "decide_run",
    "defined_values",
    "mean_row",
    "paired_differences",
    "wins_ties_losses",
]


# ---- what the verdict and the plots share ------------------------------------------------------


@dataclass(frozen=True)
class MeanRow:
    """One variant's mean of its per-query values (queries left out excluded) and its percentile bootstrap CI."""

    label: str
    mean: float
    low: float
    high: float
    n: int


def defined_values(results: Results, metric: str) -> np.ndarray:
    """The per-query values of ``metric`` that are not NaN (a NaN: a query left out of its mean)."""
    values = np.asarray(results.values[metric], dtype=np.float64)
    return values[~np.isnan(values)]


def mean_row(label: str, results: Results, metric: str, *, confidence: float = 0.95, n_resamples: int = 10_000,
             seed: int = 0) -> MeanRow | None:
    """``label``'s mean of ``metric`` with its bootstrap CI (seeded: the same numbers each run; NaN bounds for
    a single query); None without values."""
    values = defined_values(results, metric)
    if values.size == 0:
        return None
    if values.size == 1:  # one query: nothing to resample, so no interval (printed n/a, not [v, v])
        return MeanRow(label, float(values[0]), math.nan, math.nan, 1)
    low, high = stats.bootstrap_ci(values, confidence=confidence, n_resamples=n_resamples, seed=seed)
    return MeanRow(label, float(values.mean()), low, high, int(values.size))


def paired_differences(metric: str, base: Results, other: Results) -> np.ndarray | None:
    """Per-query ``other - base`` over the queries both scored (rag_eval._compare.regression.pair_by_query,
    sorted by query id); None when no query has a value on both sides."""
    try:
        values = pair_by_query(metric, base, other)
    except ComparisonError:  # no query has a value on both sides: nothing to compare
        return None
    return stats.paired_deltas(values.baseline, values.candidate)


def wins_ties_losses(deltas: np.ndarray, metric: str) -> tuple[int, int, int]:
    """Queries better / equal / worse than the baseline, in the metric's direction (``deltas``: variant - baseline)."""
    wins, ties, losses = stats.win_tie_loss(deltas) if deltas.size else (0, 0, 0)
    return (wins, ties, losses) if parse_metric(metric).higher_is_better else (losses, ties, wins)


# ---- the verdict over variants --------------------------------------------------------------


@dataclass(frozen=True)
class VariantDecision:
    """One variant's line of the verdict.

    ``mean`` is the mean of the variant's per-query values (queries left out excluded) and
    ``ci_low``/``ci_high`` its percentile bootstrap interval. ``delta`` is the mean paired
    difference ``variant - baseline`` over ``n_paired`` queries, ``p_holm`` its Holm-adjusted
    permutation p-value, wins/ties/losses count queries better/equal/worse than the baseline in
    the metric's direction (all None for the baseline itself). ``p_vs_best_holm`` is the
    adjusted p of the paired test against the best (None for the best).
    """

    label: str
    rank: int
    n: int
    mean: float
    ci_low: float
    ci_high: float
    delta: float | None = None
    n_paired: int | None = None
    p_raw: float | None = None
    p_holm: float | None = None
    wins: int | None = None
    ties: int | None = None
    losses: int | None = None
    p_vs_best_holm: float | None = None
    indistinguishable_from_best: bool = False
    # What this variant's own comparisons can detect: from its per-query differences to the baseline
    # and to the best (None for the variant itself or without paired queries). Each sentence about
    # power or indistinguishability speaks of a pair, so it takes that pair's figure, never another's.
    power_vs_baseline: Power | None = None
    power_vs_best: Power | None = None


@dataclass(frozen=True)
class Decision:
    """The verdict of a run: variants ranked best first on ``metric``."""

    metric: str
    baseline: str
    baseline_declared: bool
    best: str
    variants: list[VariantDecision]
    power: Power | None
    alpha: float = ALPHA
    confidence: float = 0.95

    def variant(self, label: str) -> VariantDecision:
        """The line of ``label``."""
        return next(v for v in self.variants if v.label == label)

    @property
    def indistinguishable(self) -> list[str]:
        """Labels other than the best that the data cannot separate from it, in rank order."""
        return [v.label for v in self.variants if v.label != self.best and v.indistinguishable_from_best]


@dataclass(frozen=True)
class _Paired:
    deltas: np.ndarray  # variant - baseline, per paired query
    p: float


def _paired(metric: str, base: Results, other: Results, n_resamples: int, seed: int) -> _Paired | None:
    deltas = paired_differences(metric, base, other)
    if deltas is None:
        return None
    return _Paired(deltas, stats.permutation_test(deltas, n_resamples=n_resamples, seed=seed))


def decide_run(
    results: Mapping[str, Results],
    metric: str,
    baseline: str | None = None,
    *,
    alpha: float = ALPHA,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> Decision:
    """Rank the variants of a run on ``metric`` and test each against the baseline and the best.

    ``results`` maps labels to Results in config order (the order breaks ties in the mean).
    ``baseline``: a declared label, else the best mean. The power line uses the baseline's
    differences to the best-ranked other variant whose differences vary (see :func:`_power`).

    Raises:
        ValueError: with fewer than 2 variants, an unknown baseline, or no variant with a value.
    """
    if len(results) < 2:
        raise ValueError(f"a decision needs at least 2 variants, got {len(results)}")
    if baseline is not None and baseline not in results:
        raise ValueError(f"baseline {baseline!r} is not one of the variants: {', '.join(results)}")
    parsed = parse_metric(metric)
    name = str(parsed)

    summary: dict[str, tuple[int, float, float, float]] = {}
    for label, res in results.items():
        row = mean_row(label, res, name, confidence=confidence, n_resamples=n_resamples, seed=seed)
        summary[label] = (0, math.nan, math.nan, math.nan) if row is None else (row.n, row.mean, row.low, row.high)

    # Best first; a variant without any value goes last; of equal means the declared baseline comes first (a
    # variant that only ties what is shipped today is no reason to change), the others keep config order (the
    # sort is stable): the same numbers give the same verdict whatever order the config lists them in.
    def rank_key(label: str) -> tuple[bool, float, bool]:
        mean = summary[label][1]
        # Means equal in exact arithmetic differ by a few ulps when summed in another order (0.2 and
        # 0.19999999999999998): compared rounded to 12 decimals, the scale of stats.UNCHANGED_WITHIN (1e-12).
        return (True, 0.0, True) if math.isnan(mean) else (False, parsed.best_first_key(round(mean, 12)),
                                                          label != baseline)

    order = sorted(results, key=rank_key)
    best = order[0]
    if math.isnan(summary[best][1]):
        raise ValueError(f"no variant has a value of {name} for any query")
    base = baseline if baseline is not None else best

    vs_base = {lab: _paired(name, results[base], results[lab], n_resamples, seed) for lab in order if lab != base}
    vs_best = {lab: vs_base[lab] if base == best else _paired(name, results[best], results[lab], n_resamples, seed)
               for lab in order if lab != best}
    holm_base = _holm({lab: p.p for lab, p in vs_base.items() if p is not None})
    holm_best = _holm({lab: p.p for lab, p in vs_best.items() if p is not None})

    variants = []
    for rank, lab in enumerate(order, start=1):
        n, mean, low, high = summary[lab]
        line = VariantDecision(label=lab, rank=rank, n=n, mean=mean, ci_low=low, ci_high=high,
                               indistinguishable_from_best=lab == best)
        pair = vs_base.get(lab)
        if pair is not None:
            wins, ties, losses = wins_ties_losses(pair.deltas, name)
            line = replace(line, delta=float(pair.deltas.mean()), n_paired=int(pair.deltas.size), p_raw=pair.p,
                            p_holm=holm_base[lab], wins=wins, ties=ties, losses=losses,
                            power_vs_baseline=Power.of(base, lab, pair.deltas, alpha))
        if lab in holm_best:
            best_pair = vs_best[lab]
            line = replace(line, p_vs_best_holm=holm_best[lab], indistinguishable_from_best=holm_best[lab] >= alpha,
                           power_vs_best=line.power_vs_baseline if base == best
                           else None if best_pair is None else Power.of(best, lab, best_pair.deltas, alpha))
        variants.append(line)

    return Decision(name, base, baseline is not None, best, variants, _power(base, order, vs_base, alpha), alpha,
                    confidence)


def _power(base: str, order: Sequence[str], vs_base: Mapping[str, _Paired | None], alpha: float) -> Power | None:
    """Power from the baseline's differences to the strongest other variant whose differences vary.

    The strongest challenger is the one a team would ship instead; a variant equal to the baseline on
    every query (sd 0, e.g. the same ranking under another label) says nothing about the noise, so the
    next one is used. None when no variant was paired with the baseline.
    """
    candidates = [(lab, pair.deltas) for lab in order if (pair := vs_base.get(lab)) is not None]
    if not candidates:
        return None
    varied = [(lab, d) for lab, d in candidates if d.size >= 2 and not bool(np.all(d == d[0]))]
    other, deltas = (varied or candidates)[0]
    return Power.of(base, other, deltas, alpha)


def _holm(p_by_label: Mapping[str, float]) -> dict[str, float]:
    return dict(zip(p_by_label, stats.holm(list(p_by_label.values()))))
