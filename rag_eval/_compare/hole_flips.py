"""Could a verdict flip if the holes were judged? Gates and decisions evaluated at the candidate's bounds.

A results file records, per metric, the candidate's value with its unjudged units as misses (``low``,
the value every gate reads) and with each hole of the metric's top k judged at its query's highest grade (``high``; a
hole below the cutoff is not filled, so a top k without holes cannot flip;
rag_eval._run.holes_section). The rule here:

- **A gate could flip** when its pass/fail differs between the candidate at its low bound and the
  candidate at its high bound, **the baseline as is** (its recorded values). The baseline is what
  the team measured and shipped; the question is whether the candidate's own unjudged results could
  change the verdict. Both decisions use the same statistics: the high one pairs the candidate's
  per-query high values with the baseline's, and the gates with ``alpha`` are Holm-corrected as one
  family there too. A gate whose candidate has no recorded holes (a file written before they were
  kept, or an evidence metric, which has no bounds) cannot be said to flip.
- **A decision could flip** (a run with several retrievers) when a variant other than the best, at its
  high bound, has a mean above the best's mean as measured: filling that variant's holes could make it
  the best. The best is taken as is, as the baseline of a gate is.

Only the two ends are evaluated: a judging between them could flip a gate whose two ends agree when
the metric is not monotone in the filled grades (nDCG, whose ideal ranking grows as holes are filled).
``on_holes: fail`` (config ``regression.on_holes``, ``rag-eval compare --on-holes``) makes a gate that
could flip fail, saying why; ``warn`` (the default) keeps the verdict and says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from rag_eval._compare.gate_results import GateResult, decide
from rag_eval._compare.gates import Gate
from rag_eval._compare.paired import PairedValues, pair_by_query
from rag_eval._scoring.metrics.measures import parse_metric
from rag_eval._scoring.stats import UNCHANGED_WITHIN

if TYPE_CHECKING:
    from rag_eval._compare.decision import Decision
    from rag_eval._run.holes_section import HolesRecord, MetricHoles
    from rag_eval._run.results_file import ResultsFile
    from rag_eval._scoring.results import Results

ON_HOLES = ("warn", "fail")


def percent(share: float) -> str:
    """A share as people read it: ``14%``, ``33.3%``, ``0%``; ``<0.1%`` for a hole too small to round to 0.1%."""
    if 0 < share < 0.0005:
        return "<0.1%"
    text = f"{share * 100:.1f}"
    return (text[:-2] if text.endswith(".0") else text) + "%"


# ---- gates ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GateHoles:
    """One gate's metric with the candidate's holes: its shares, its bounds, and the gate decided at each.

    ``passed_low`` is the gate as decided (the candidate's values as recorded); ``passed_high`` with the
    candidate's per-query high values. ``baseline_unjudged`` is the baseline's unjudged share of its top k
    (None when its file has no holes), shown beside the candidate's.
    """

    metric: str
    unit: str
    k: int
    unjudged: float
    judged: float
    low: float
    high: float
    condensed: float
    passed_low: bool
    passed_high: bool
    baseline_unjudged: float | None = None

    @property
    def could_flip(self) -> bool:
        """Whether the gate's pass/fail differs between the candidate's two bounds."""
        return self.passed_low != self.passed_high

    def flip_text(self) -> str:
        """``could flip: 14% of the candidate's top 10 is unjudged``: why the gate is in doubt."""
        return f"could flip: {percent(self.unjudged)} of the candidate's top {self.k} is unjudged"

    def flip_detail(self) -> str:
        """How: the gate at the candidate's two bounds, with the candidate's value at each."""
        return (
            f"the gate {_verb(self.passed_low)} with the holes as misses ({self.metric} {self.low:.4f}) and "
            f"{_verb(self.passed_high)} with them at the highest grade ({self.high:.4f})"
        )


def _verb(passed: bool) -> str:
    return "passes" if passed else "fails"


def gate_holes(
    gates: Sequence[Gate],
    paired: Sequence[PairedValues],
    results: Sequence[GateResult],
    baseline: ResultsFile,
    candidate: ResultsFile,
    *,
    confidence: float,
    n_resamples: int,
    seed: int,
) -> list[GateHoles | None]:
    """Per gate, the candidate's holes and the gate decided at its high bound (None: no holes recorded).

    ``paired`` and ``results``: the comparison as decided (candidate at its low bound). The high decision
    replaces, for each gate with recorded bounds, the candidate's per-query values by its high values;
    the others keep theirs, so the Holm family of the gates with ``alpha`` is the same at both bounds.
    """
    holes = candidate.holes
    if holes is None:
        return [None] * len(gates)
    base_holes = baseline.holes
    entries = [holes.get(gate.metric) for gate in gates]
    bounded = [entry is not None and entry.bounded for entry in entries]
    if not any(bounded):
        return [None] * len(gates)
    moved = [ok and entry is not None and not _same(entry.high, entry.low) for entry, ok in zip(entries, bounded)]
    if any(moved):
        high_paired = [
            pair_by_query(gate.metric, baseline.results, at_high(candidate.results, entry)) if move and entry else pair
            for gate, pair, entry, move in zip(gates, paired, entries, moved)
        ]
        at_high_results = decide(gates, high_paired, confidence=confidence, n_resamples=n_resamples, seed=seed)
    else:  # no hole moves any value (none in reach, or none at all): the same decisions, no resampling again
        at_high_results = list(results)
    out: list[GateHoles | None] = []
    for gate, entry, ok, low, high in zip(gates, entries, bounded, results, at_high_results):
        if not ok or entry is None:
            out.append(None)
            continue
        base_entry = None if base_holes is None else base_holes.get(gate.metric)
        out.append(GateHoles(
            metric=gate.metric, unit=entry.unit, k=entry.k, unjudged=entry.unjudged_share,
            judged=entry.judged_share, low=low.candidate, high=entry.dataset_high, condensed=entry.dataset_condensed,
            passed_low=low.passed, passed_high=high.passed,
            baseline_unjudged=None if base_entry is None else base_entry.unjudged_share,
        ))
    return out


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.array_equal(a, b, equal_nan=True))


def at_high(results: Results, entry: MetricHoles) -> Results:
    """``results`` with ``entry``'s metric at its high bound: per-query high values and the dataset high."""
    index = dict(zip(entry.query_ids, entry.high.tolist()))
    values = np.array([index.get(qid, math.nan) for qid in results.query_ids], dtype=np.float64)
    return replace(
        results,
        values={**results.values, entry.metric: values},
        aggregate={**results.aggregate, entry.metric: entry.dataset_high},
    )


def apply_on_holes(result: GateResult, holes: GateHoles | None, on_holes: str) -> GateResult:
    """``result`` failed with the reason when it could flip and ``on_holes`` is ``fail``; as it is otherwise."""
    if on_holes not in ON_HOLES:
        raise ValueError(f"on_holes must be one of {', '.join(ON_HOLES)}, got {on_holes!r}")
    if holes is None or not holes.could_flip or on_holes != "fail":
        return result
    reason = f"{result.reason}; {holes.flip_text()} ({holes.flip_detail()}; on_holes: fail)"
    return replace(result, passed=False, reason=reason)


# ---- a run's decision ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class DecisionFlip:
    """A variant that could become the best were its holes judged: its share, and the two means."""

    label: str
    k: int
    unjudged: float
    high_mean: float
    best: str
    best_mean: float

    def text(self) -> str:
        """``could flip: 14% of bm25's top 10 is unjudged; ...``, plain text (the report escapes it)."""
        return f"could flip: {self.detail()}"

    def detail(self) -> str:
        """``14% of bm25's top 10 is unjudged; with its holes at the highest grade its mean would be ...``."""
        return (
            f"{percent(self.unjudged)} of {self.label}'s top {self.k} is unjudged; with its holes at the highest "
            f"grade its mean would be {self.high_mean:.4f}, better than the best's ({self.best}, {self.best_mean:.4f})"
        )


def decision_flips(decision: Decision, holes: Mapping[str, HolesRecord | None]) -> list[DecisionFlip]:
    """The variants whose high mean of the decision's metric beats the best's mean as measured, in rank order.

    The mean is over the queries the variant scored (its per-query high values that are not NaN), as the
    decision's means are.
    """
    metric = parse_metric(decision.metric)
    best = decision.variant(decision.best)
    out = []
    for variant in decision.variants:
        record = holes.get(variant.label)
        entry = None if record is None else record.get(decision.metric)
        if variant.label == decision.best or entry is None or not entry.bounded:
            continue
        values = entry.high[~np.isnan(entry.high)]
        if not values.size:
            continue
        high_mean = float(values.mean())
        sign = 1.0 if metric.higher_is_better else -1.0
        if sign * (high_mean - best.mean) > UNCHANGED_WITHIN:
            out.append(DecisionFlip(variant.label, entry.k, entry.unjudged_share, high_mean, decision.best, best.mean))
    return out


def unjudged_by_label(holes: Mapping[str, HolesRecord | None], metric: str) -> dict[str, MetricHoles]:
    """``{label: the metric's holes}`` of the variants that have them."""
    out = {}
    for label, record in holes.items():
        entry = None if record is None else record.get(metric)
        if entry is not None:
            out[label] = entry
    return out
