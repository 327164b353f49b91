"""Results vs baseline -> a verdict: deltas, paired statistics, gates.

Two results files are compared only when they measure the same thing: the same
dataset fingerprint, the same metric semantics (gain, aggregation, no_relevant,
relevance threshold, cutoffs, and for a gated metric the same effective depth:
min(k, top_k)) and the same judged queries. Otherwise the delta
would mislead, and :class:`ComparisonError` says what differs.

A gate ``ndcg@10: {max_drop: 0.01}`` fails when the candidate is worse than the
baseline by more than 0.01; with ``alpha`` it fails only if that drop is also
significant (paired permutation test, Holm-corrected over the gates that ask for
significance). "Worse" follows the metric's own direction, never the user's.
A drop is significant when the (Holm-adjusted) p-value is strictly below ``alpha``:
p == alpha is not significant, as the report and the gate's description say.

The work is split in steps, a module each: the gates (:mod:`rag_eval._compare.gates`),
whether two results compare (:func:`check_comparable`, :mod:`rag_eval._compare.comparable`),
:func:`pair_by_query` lining the two runs' per-query values up by query id
(:mod:`rag_eval._compare.paired`), and :func:`decide` turning paired values and gates into
:class:`GateResult` objects without touching any file (:mod:`rag_eval._compare.gate_results`).
This module is their sequence: :func:`compare` gives a :class:`Verdict`, and
:func:`verdict_for_run` the verdict of a run with a ``regression:`` section. Its ``__all__``
names the steps' pieces too, so that a caller imports the comparison from one place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from rag_eval._compare.comparable import check_comparable
from rag_eval._compare.gate_results import RESAMPLING_ARGUMENTS, GateResult, decide, higher_is_better
from rag_eval._compare.gates import (
    Gate,
    default_gates,
    gates_from_config,
    make_gate,
    parse_gate,
    parse_gates,
    refuse_repeated_metrics,
)
from rag_eval._compare.hole_flips import ON_HOLES, GateHoles, apply_on_holes, gate_holes
from rag_eval._compare.paired import PairedValues, pair_by_query
from rag_eval._core.errors import ConfigError
from rag_eval._data.config.regression import check_resampling
from rag_eval._run.plan import results_name
from rag_eval._run.results_file import ResultsFile, load_results_file, results_document
from rag_eval._scoring.stats import UNCHANGED_WITHIN

if TYPE_CHECKING:
    from rag_eval._data.config.schema import LoadedConfig
    from rag_eval._run.outcome import RunOutcome

__all__ = [
    "Gate",
    "GateResult",
    "PairedValues",
    "ResultsFile",
    "Verdict",
    "check_comparable",
    "compare",
    "decide",
    "default_gates",
    "gates_from_config",
    "load_results_file",
    "make_gate",
    "pair_by_query",
    "parse_gate",
    "parse_gates",
    "verdict_for_run",
]


@dataclass
class Verdict:
    """The outcome of a comparison: every gate, and the per-query deltas behind it."""

    baseline: ResultsFile
    candidate: ResultsFile
    gates: list[GateResult]
    confidence: float
    deltas: dict[str, dict[str, float]] = field(default_factory=dict)  # metric -> {qid: delta}
    # Per gate (aligned with ``gates``), the candidate's holes and the gate at its high bound; None: not recorded.
    holes: list[GateHoles | None] = field(default_factory=list)
    on_holes: str = "warn"

    def gate_holes(self, metric: str) -> GateHoles | None:
        """The holes of the gate on ``metric``, or None (not recorded, or no such gate)."""
        for result, holes in zip(self.gates, self.holes):
            if result.gate.metric == metric:
                return holes
        return None

    def could_flip(self) -> list[tuple[GateResult, GateHoles]]:
        """The gates whose pass/fail differs between the candidate's two bounds (rag_eval._compare.hole_flips)."""
        return [(result, holes) for result, holes in zip(self.gates, self.holes) if holes is not None and holes.could_flip]

    @property
    def passed(self) -> bool:
        return all(g.passed for g in self.gates)

    @property
    def failed(self) -> list[GateResult]:
        return [g for g in self.gates if not g.passed]

    def failure_lines(self) -> list[str]:
        """One readable line per failed gate."""
        return [f"{g.gate.metric}: {g.reason}" for g in self.failed]

    def moved_queries(self, metric: str) -> list[tuple[str, float]]:
        """``(query, change)`` of every query whose ``metric`` changed, worst first; the change is in the
        metric's own direction (> 0: better), so a lower-is-better metric's drop counts as a gain.

        A change within :data:`rag_eval._scoring.stats.UNCHANGED_WITHIN` is float noise, as the win/tie/loss
        counts have it.
        """
        sign = 1.0 if higher_is_better(metric) else -1.0
        moves = [(q, sign * d) for q, d in self.deltas.get(metric, {}).items() if abs(d) > UNCHANGED_WITHIN]
        return sorted(moves, key=lambda item: (item[1], item[0]))

    def regressed_queries(self, metric: str) -> list[tuple[str, float]]:
        """``(query, candidate - baseline)`` of every query that got worse in ``metric``, worst first."""
        sign = 1.0 if higher_is_better(metric) else -1.0
        return [(q, sign * change) for q, change in self.moved_queries(metric) if change < 0]


def compare(
    baseline: ResultsFile,
    candidate: ResultsFile,
    gates: Sequence[Gate],
    *,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
    on_holes: str = "warn",
) -> Verdict:
    """Compare ``candidate`` with ``baseline`` on every gate's metric.

    :func:`check_comparable`, then :func:`pair_by_query` per gate, then :func:`decide`; then each gate
    decided again at the candidate's high bound (:func:`rag_eval._compare.hole_flips.gate_holes`). With
    ``on_holes`` ``fail`` a gate that could flip fails, its reason saying why; with ``warn`` it stands.
    """
    if not gates:
        raise ConfigError("no gates given; e.g. --gate ndcg@10:max_drop=0.01")
    if on_holes not in ON_HOLES:
        raise ConfigError(f"on_holes: expected one of {', '.join(ON_HOLES)}, got {on_holes!r}")
    # parse_gates and gates_from_config name the two spellings; here they are parsed, and named by their limits.
    refuse_repeated_metrics([(f"{g.metric} ({g.describe()})", g) for g in gates], "gates")
    check_resampling(confidence, n_resamples, seed, names=RESAMPLING_ARGUMENTS)
    check_comparable(baseline, candidate, [g.metric for g in gates])
    paired = [pair_by_query(gate.metric, baseline.results, candidate.results) for gate in gates]
    results = decide(gates, paired, confidence=confidence, n_resamples=n_resamples, seed=seed)
    holes = gate_holes(
        gates, paired, results, baseline, candidate, confidence=confidence, n_resamples=n_resamples, seed=seed
    )
    results = [apply_on_holes(result, hole, on_holes) for result, hole in zip(results, holes)]
    deltas = {p.metric: p.deltas() for p in paired}
    return Verdict(baseline, candidate, results, confidence, deltas, holes, on_holes)


# ---- the regression section of a run config ----------------------------------------------------------


def verdict_for_run(run: RunOutcome, baseline: ResultsFile | None = None) -> Verdict:
    """Compare the run's retriever named by ``regression.retriever`` with the baseline.

    Without a name: the only retriever, or the one whose label matches the baseline's.
    ``baseline``: the config's baseline when the caller loaded it already (``rag-eval run``
    loads it before retrieving, to fail early); read from the config otherwise.
    The candidate is the results document the run writes, built once and shared.
    """
    spec = run.config.model.regression
    if spec is None:
        raise ConfigError(f"{run.config.path}: no regression section")
    if baseline is None:
        baseline = load_results_file(run.config.resolve(spec.baseline))
    outcome = {o.label: o for o in run.outcomes}[candidate_label(run.config, baseline.label)]
    candidate = replace(ResultsFile.from_document(
        run.config.output_dir / results_name(outcome.label), results_document(run, outcome), results=outcome.results
    ), shown=f"(this run's {outcome.label!r}, not written)")
    verdict = compare(
        baseline,
        candidate,
        gates_from_config(spec.gates),
        confidence=spec.confidence,
        n_resamples=spec.resamples,
        seed=spec.seed,
        on_holes=spec.on_holes,
    )
    stale = run.dataset.stale_evidence
    if stale and spec.on_stale_evidence == "fail":
        why = (f"{len(stale):,} evidence span(s) of the dataset are stale (their documents changed under them): the "
               "metrics score text that is not what was judged; rag-eval judgements check --fix re-anchors the moved "
               "ones, or set regression.on_stale_evidence: allow")
        verdict.gates = [replace(result, passed=False, reason=f"{result.reason}; {why}") for result in verdict.gates]
    return verdict


def candidate_label(config: LoadedConfig, baseline_label: str) -> str:
    """The label of the retriever compared with the baseline: ``regression.retriever``, else the only retriever,
    else the one labelled like the baseline. Known from the config alone (a sweep's variants included), so that
    ``run`` and ``validate`` refuse a config without one, or without a gate, before any retrieval."""
    spec = config.model.regression
    assert spec is not None
    if not spec.gates:  # a verdict with no gate would pass whatever the candidate does
        raise ConfigError(f"{config.path}: regression.gates: no gates given; name at least one metric, e.g. gates: "
                          "{ndcg@10: {max_drop: 0.01}}")
    labels = [r.label for r in config.model.retrievers]
    if spec.retriever:
        if spec.retriever not in labels:
            raise ConfigError(
                f"{config.path}: regression.retriever {spec.retriever!r} is not a retriever of this run "
                f"({', '.join(labels)})"
            )
        return spec.retriever
    if len(labels) == 1:
        return labels[0]
    if baseline_label in labels:
        return baseline_label
    raise ConfigError(
        f"{config.path}: regression: several retrievers ({', '.join(labels)}) and none is labelled "
        f"{baseline_label!r} like the baseline; name one in regression.retriever"
    )
