"""Paired values and gates -> one decision per gate, with its paired statistics (pure: no I/O).

A gate fails when the candidate's drop (in the metric's own direction, never the user's)
exceeds ``max_drop`` and, if the gate has ``alpha``, that drop is also significant: the paired
permutation test's p-value, Holm-corrected over the gates that ask for significance, is
strictly below ``alpha`` (p == alpha is not significant, as the report and the gate's
description say).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rag_eval._compare.gates import Gate
from rag_eval._compare.paired import PairedValues
from rag_eval._data.config.regression import check_resampling
from rag_eval._scoring import stats
from rag_eval._scoring.metrics.measures import parse_metric
from rag_eval._scoring.stats import UNCHANGED_WITHIN, PairedComparison

# How compare() and decide() name their resampling arguments in an error (the config's limits, checked alike).
RESAMPLING_ARGUMENTS = {"resamples": "n_resamples"}


def higher_is_better(metric: str) -> bool:
    """Whether a larger value of ``metric`` is better (its record says; a gate reads drops in that direction)."""
    return parse_metric(metric).higher_is_better


@dataclass(frozen=True)
class GateResult:
    """One gated metric: its paired statistics and the decision.

    ``baseline`` / ``candidate`` are the dataset values the results report;
    ``comparison`` holds the paired statistics (n, mean Δ, CI, p-values, counts).
    ``wins`` / ``ties`` / ``losses`` count queries improved / unchanged / regressed
    in the metric's own direction (for a lower-is-better metric a drop is a win).
    """

    gate: Gate
    comparison: PairedComparison
    baseline: float
    candidate: float
    p_adjusted: float | None
    passed: bool
    reason: str

    @property
    def mean_delta(self) -> float:
        return self.comparison.mean_delta

    @property
    def ci_low(self) -> float:
        return self.comparison.ci_low

    @property
    def ci_high(self) -> float:
        return self.comparison.ci_high

    @property
    def p_permutation(self) -> float:
        return self.comparison.p_permutation

    @property
    def p_t_test(self) -> float:
        return self.comparison.p_t_test

    @property
    def n(self) -> int:
        return self.comparison.n

    @property
    def wins(self) -> int:
        c = self.comparison
        return c.wins if higher_is_better(self.gate.metric) else c.losses

    @property
    def ties(self) -> int:
        return self.comparison.ties

    @property
    def losses(self) -> int:
        c = self.comparison
        return c.losses if higher_is_better(self.gate.metric) else c.wins


def decide(
    gates: Sequence[Gate],
    paired: Sequence[PairedValues],
    *,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> list[GateResult]:
    """Paired values + gates -> one :class:`GateResult` per gate (pure: no I/O).

    ``paired[i]`` holds the values of ``gates[i].metric``. The gates are decided
    together because the p-values of those with ``alpha`` are Holm-corrected as one
    family. A gate fails when the drop (in the metric's own direction) exceeds
    ``max_drop`` and, if it has ``alpha``, the adjusted p-value is below alpha
    (strictly: p == alpha is not significant).
    """
    check_resampling(confidence, n_resamples, seed, names=RESAMPLING_ARGUMENTS)
    if len(gates) != len(paired) or any(g.metric != p.metric for g, p in zip(gates, paired)):
        raise ValueError("decide: paired[i] must hold the values of gates[i].metric")
    comparisons = [
        stats.compare_paired(p.baseline, p.candidate, confidence=confidence, n_resamples=n_resamples, seed=seed)
        for p in paired
    ]
    with_alpha = [i for i, gate in enumerate(gates) if gate.alpha is not None]
    adjusted = dict(zip(with_alpha, stats.holm([comparisons[i].p_permutation for i in with_alpha])))
    return [
        _decide_gate(gate, values, comparison, adjusted.get(i))
        for i, (gate, values, comparison) in enumerate(zip(gates, paired, comparisons))
    ]


def _decide_gate(gate: Gate, values: PairedValues, comparison: PairedComparison, p_adj: float | None) -> GateResult:
    sign = 1.0 if higher_is_better(gate.metric) else -1.0
    drop = -sign * comparison.mean_delta  # > 0 means the candidate is worse
    too_large = drop > gate.max_drop + UNCHANGED_WITHIN  # float noise must not fail an exact-limit drop
    significant = gate.alpha is None or (p_adj is not None and p_adj < gate.alpha)
    if not too_large:
        reason = f"drop {max(drop, 0.0) + 0.0:.4f} within max_drop {gate.max_drop:g}"
    elif not significant:
        reason = (
            f"drop {drop:.4f} exceeds max_drop {gate.max_drop:g} but is not significant "
            f"(p={p_adj:.4f} ≥ alpha {gate.alpha:g})"
        )
    else:
        reason = f"dropped {drop:.4f} > max_drop {gate.max_drop:g}" + (
            f", significant (p={p_adj:.4f} < alpha {gate.alpha:g})" if gate.alpha is not None else ""
        )
    return GateResult(
        gate=gate,
        comparison=comparison,
        baseline=values.baseline_value,
        candidate=values.candidate_value,
        p_adjusted=p_adj,
        passed=not (too_large and significant),
        reason=reason,
    )
