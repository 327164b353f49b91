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

The work is split in two: :func:`pair_by_query` lines the two runs' per-query values
up by query id (never by position, and in sorted id order, so the order in which a
file lists its queries changes nothing), and :func:`decide` turns paired values and
gates into :class:`GateResult` objects without touching any file.
:func:`compare` is the two in sequence, after :func:`check_comparable`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from rag_eval._core.errors import ComparisonError, ConfigError
from rag_eval._data.config.schema import check_resampling, repeated_gate
from rag_eval._run.documents import chunking_text
from rag_eval._run.plan import results_name
from rag_eval._run.results_file import ResultsFile, load_results_file, results_document
from rag_eval._scoring import stats
from rag_eval._scoring.metrics.measures import parse_metric
from rag_eval._scoring.stats import UNCHANGED_WITHIN, PairedComparison

if TYPE_CHECKING:
    from rag_eval._run.outcome import RetrieverOutcome, RunOutcome
    from rag_eval._scoring.results import Results

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

SEMANTIC_OPTIONS = ("gain", "aggregation", "no_relevant", "relevance_threshold")
# How compare() and decide() name their resampling arguments in an error (the config's limits, checked alike).
_RESAMPLING_ARGUMENTS = {"resamples": "n_resamples"}
# Options of document datasets that change only some metrics: compared only when a gated metric reads them.
# min_evidence_fraction makes chunk grades (chunk-level metrics); budget_tokens counts token budgets.
METRIC_OPTIONS = {
    "min_evidence_fraction": lambda m: not (m.is_document_level or m.is_evidence),
    "budget_tokens": lambda m: m.budget_unit == "tokens",
}


@dataclass(frozen=True)
class Gate:
    """A pass/fail rule on one metric."""

    metric: str
    max_drop: float = 0.0
    alpha: float | None = None

    def describe(self) -> str:
        text = f"drop ≤ {self.max_drop:g}"
        return text + (f", unless p ≥ {self.alpha:g}" if self.alpha is not None else "")


@dataclass(frozen=True)
class PairedValues:
    """One metric's per-query values of the two runs, paired by query id.

    ``baseline[i]`` and ``candidate[i]`` are the values of ``query_ids[i]``; queries
    left out of the mean (NaN: no relevant document) are not paired. ``baseline_value``
    and ``candidate_value`` are the dataset values the results report (their aggregate),
    which differ from the means of the arrays under micro aggregation.
    """

    metric: str
    query_ids: tuple[str, ...]
    baseline: np.ndarray
    candidate: np.ndarray
    baseline_value: float
    candidate_value: float

    def deltas(self) -> dict[str, float]:
        """``{query_id: candidate - baseline}``, in pairing order."""
        return {q: float(c - b) for q, b, c in zip(self.query_ids, self.baseline, self.candidate)}


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
        return c.wins if _higher_is_better(self.gate.metric) else c.losses

    @property
    def ties(self) -> int:
        return self.comparison.ties

    @property
    def losses(self) -> int:
        c = self.comparison
        return c.losses if _higher_is_better(self.gate.metric) else c.wins


def _higher_is_better(metric: str) -> bool:
    return parse_metric(metric).higher_is_better


@dataclass
class Verdict:
    """The outcome of a comparison: every gate, and the per-query deltas behind it."""

    baseline: ResultsFile
    candidate: ResultsFile
    gates: list[GateResult]
    confidence: float
    deltas: dict[str, dict[str, float]] = field(default_factory=dict)  # metric -> {qid: delta}

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
        sign = 1.0 if _higher_is_better(metric) else -1.0
        moves = [(q, sign * d) for q, d in self.deltas.get(metric, {}).items() if abs(d) > UNCHANGED_WITHIN]
        return sorted(moves, key=lambda item: (item[1], item[0]))

    def regressed_queries(self, metric: str) -> list[tuple[str, float]]:
        """``(query, candidate - baseline)`` of every query that got worse in ``metric``, worst first."""
        sign = 1.0 if _higher_is_better(metric) else -1.0
        return [(q, sign * change) for q, change in self.moved_queries(metric) if change < 0]


# ---- gates ---------------------------------------------------------------------------------


def parse_gate(text: str) -> Gate:
    """``ndcg@10:max_drop=0.01,alpha=0.05`` -> Gate (also ``ndcg@10`` alone: any drop fails)."""
    metric_text, _, options = text.partition(":")
    try:
        metric = str(parse_metric(metric_text))
    except ValueError as error:
        raise ConfigError(f"gate {text!r}: {error}") from None
    values: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in options.split(","))):
        key, eq, value = (part.strip() for part in item.partition("="))
        if not eq or key not in ("max_drop", "alpha"):
            raise ConfigError(f"gate {text!r}: expected METRIC:max_drop=0.01[,alpha=0.05], got {item!r}")
        if key in values:  # keeping the last one silently would hide a typo in a CI command line
            raise ConfigError(f"gate {text!r}: {key} is given twice; give each option once")
        try:
            values[key] = float(value)
        except ValueError:
            raise ConfigError(f"gate {text!r}: {key} must be a number, got {value!r}") from None
    return make_gate(metric, values.get("max_drop", 0.0), values.get("alpha"), where=f"gate {text!r}")


def parse_gates(texts: Sequence[str]) -> list[Gate]:
    """Several ``--gate`` texts; two gates on one metric (under any two spellings) are refused, naming both."""
    gates = [parse_gate(text) for text in texts]
    _refuse_repeated_metrics([(repr(text), gate) for text, gate in zip(texts, gates)], "--gate")
    return gates


def _refuse_repeated_metrics(named: Sequence[tuple[str, Gate]], where: str) -> None:
    """One gate per metric (the rule of the config's regression.gates too)."""
    problem = repeated_gate([(name, gate.metric) for name, gate in named])
    if problem:
        raise ConfigError(f"{where}: {problem}")


def default_gates(baseline: ResultsFile) -> list[Gate]:
    """The gate of a comparison given none: ndcg@10 with max_drop 0, or doc_ndcg@10 on a document dataset
    (a gate that holds across chunkings); ConfigError when the results have no such metric."""
    if baseline.chunking is not None:
        if "doc_ndcg@10" in baseline.results.values:
            return [make_gate("doc_ndcg@10")]
        raise ConfigError(
            "no --gate given and the results have no doc_ndcg@10; e.g. --gate evidence_recall@5:max_drop=0.01 "
            "(document and evidence metrics compare any two chunkings)"
        )
    if "ndcg@10" in baseline.results.values:
        return [make_gate("ndcg@10")]
    raise ConfigError("no --gate given and the results have no ndcg@10; e.g. --gate ndcg@5:max_drop=0.01")


def make_gate(metric: str, max_drop: float = 0.0, alpha: float | None = None, where: str = "gate") -> Gate:
    """Validate the parts of a gate."""
    if not math.isfinite(max_drop) or max_drop < 0:
        raise ConfigError(f"{where}: max_drop must be a number >= 0, got {max_drop}")
    if alpha is not None and not 0 < alpha < 1:
        raise ConfigError(f"{where}: alpha must be between 0 and 1, got {alpha}")
    return Gate(str(parse_metric(metric)), float(max_drop), alpha)


# ---- comparability -------------------------------------------------------------------------


def check_comparable(baseline: ResultsFile, candidate: ResultsFile, metrics: Sequence[str]) -> None:
    """Raise ComparisonError naming what differs, if anything does."""
    b, c = baseline, candidate
    if b.fingerprint != c.fingerprint:
        b_name, c_name = b.dataset_name, c.dataset_name
        raise ComparisonError(
            f"incomparable results: different datasets (baseline {b.path}: {b_name} fingerprint {b.fingerprint}; "
            f"candidate {c.path}: {c_name} fingerprint {c.fingerprint}); rerun the baseline on the same dataset"
        )
    for option in SEMANTIC_OPTIONS:
        bv, cv = b.results.options.get(option), c.results.options.get(option)
        if bv != cv:
            raise ComparisonError(
                f"incomparable results: different metric semantics: {option} is {bv!r} in the baseline {b.path} "
                f"and {cv!r} in the candidate {c.path}"
            )
    for option, reads in METRIC_OPTIONS.items():
        bv, cv = b.results.options.get(option), c.results.options.get(option)
        gated = [m for m in metrics if reads(parse_metric(m))]
        if bv != cv and gated:
            raise ComparisonError(
                f"incomparable results: different metric semantics: {option} is {bv!r} in the baseline {b.path} "
                f"and {cv!r} in the candidate {c.path}, and {gated[0]} depends on it"
            )
    for metric in metrics:
        for side in (b, c):
            if metric not in side.results.values:
                have = ", ".join(side.results.metric_names)
                raise ComparisonError(
                    f"incomparable results: {side.path} has no {metric} (it has {have}); "
                    "gate only metrics both runs computed, with the same cutoffs"
                )
    _check_same_chunking(b, c, metrics)
    b_depth, c_depth = b.top_k, c.top_k
    if b_depth is not None and c_depth is not None and b_depth != c_depth:
        # A metric that looks deeper than one of the runs retrieved measures different things on each side.
        for metric in metrics:
            parsed = parse_metric(metric)
            k = parsed.k
            if (b_depth if k is None else min(k, b_depth)) != (c_depth if k is None else min(k, c_depth)):
                reach = min(b_depth, c_depth)
                fix = (
                    f"gate a cutoff both runs reach (e.g. {parsed.name}@{reach})"
                    if parsed.family.cutoff != "none"
                    else "rerun both with the same top_k"
                )
                raise ComparisonError(
                    f"incomparable results: different metric semantics: {metric} looks at "
                    f"{f'the top {k}' if k else 'the whole ranking'} but the baseline {b.path} retrieved "
                    f"top_k={b_depth} and the candidate {c.path} top_k={c_depth}; {fix}"
                )
    _check_same_queries(b.results, c.results)


def _check_same_chunking(baseline: ResultsFile, candidate: ResultsFile, metrics: Sequence[str]) -> None:
    """Refuse chunk-level metrics across two chunkings: each builds its ideal ranking from its own chunks.

    Document (``doc_``) and evidence metrics are judged on the documents and the evidence, which do
    not change with the chunking: those compare chunkings like for like (docs/semantics.md).
    """
    b, c = baseline.chunking, candidate.chunking
    if b is None and c is None:
        return
    if b is not None and c is not None and b.get("fingerprint") is not None and b.get("fingerprint") == c.get("fingerprint"):
        return
    for metric in metrics:
        parsed = parse_metric(metric)
        if parsed.is_document_level or parsed.is_evidence:
            continue
        raise ComparisonError(
            f"incomparable results: chunk-level {metric} compares different chunkings (baseline {baseline.path}: "
            f"{_chunking_title(b)}; candidate {candidate.path}: {_chunking_title(c)}), and each builds its ideal "
            f"ranking from its own chunks; gate doc_{metric} or evidence metrics (evidence_recall@k), which judge "
            "every chunking by the same documents and evidence"
        )


def _chunking_title(record: Mapping[str, Any] | None) -> str:

    fingerprint = (record or {}).get("fingerprint")
    return chunking_text(record) + (f", fingerprint {fingerprint}" if fingerprint else "")


def _check_same_queries(baseline: Results, candidate: Results) -> None:
    """Refuse query sets that differ, or a query listed twice (pairing by id would be ambiguous)."""
    for side, results in (("baseline", baseline), ("candidate", candidate)):
        if len(set(results.query_ids)) != len(results.query_ids):
            twice = sorted(q for q, count in Counter(results.query_ids).items() if count > 1)
            raise ComparisonError(f"incomparable results: the {side} lists query {twice[0]!r} more than once")
    b_ids, c_ids = set(baseline.query_ids), set(candidate.query_ids)
    if b_ids != c_ids:
        only_b, only_c = sorted(b_ids - c_ids), sorted(c_ids - b_ids)
        raise ComparisonError(
            f"incomparable results: different query sets ({len(only_b)} only in the baseline, e.g. {only_b[:3]}; "
            f"{len(only_c)} only in the candidate, e.g. {only_c[:3]})"
        )


# ---- the comparison ------------------------------------------------------------------------


def pair_by_query(metric: str, baseline: Results, candidate: Results) -> PairedValues:
    """Pair the two runs' values of ``metric`` by query id, in sorted id order.

    Never by position: the files may list their queries in any order. Sorting makes
    the resampling statistics (whose random draws index positions) independent of
    that order too. Queries left out of the mean (NaN) on either side are not paired.

    Raises:
        ComparisonError: when the query sets differ, a query is listed twice, or no
            query has a value on both sides.
    """
    _check_same_queries(baseline, candidate)
    order = sorted(baseline.query_ids)
    b_index = {q: i for i, q in enumerate(baseline.query_ids)}
    c_index = {q: i for i, q in enumerate(candidate.query_ids)}
    b_values = np.asarray(baseline.values[metric], dtype=np.float64)[[b_index[q] for q in order]]
    c_values = np.asarray(candidate.values[metric], dtype=np.float64)[[c_index[q] for q in order]]
    both = ~np.isnan(b_values) & ~np.isnan(c_values)
    if not both.any():
        raise ComparisonError(
            f"{metric}: no query has a value in both results (every query was left out of the mean); "
            "nothing to compare"
        )
    return PairedValues(
        metric=metric,
        query_ids=tuple(q for q, keep in zip(order, both.tolist()) if keep),
        baseline=b_values[both],
        candidate=c_values[both],
        baseline_value=baseline.aggregate[metric],
        candidate_value=candidate.aggregate[metric],
    )


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

    check_resampling(confidence, n_resamples, seed, names=_RESAMPLING_ARGUMENTS)
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
    sign = 1.0 if _higher_is_better(gate.metric) else -1.0
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


def compare(
    baseline: ResultsFile,
    candidate: ResultsFile,
    gates: Sequence[Gate],
    *,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> Verdict:
    """Compare ``candidate`` with ``baseline`` on every gate's metric.

    :func:`check_comparable`, then :func:`pair_by_query` per gate, then :func:`decide`.
    """
    if not gates:
        raise ConfigError("no gates given; e.g. --gate ndcg@10:max_drop=0.01")
    # parse_gates and gates_from_config name the two spellings; here they are parsed, and named by their limits.
    _refuse_repeated_metrics([(f"{g.metric} ({g.describe()})", g) for g in gates], "gates")
    check_resampling(confidence, n_resamples, seed, names=_RESAMPLING_ARGUMENTS)
    check_comparable(baseline, candidate, [g.metric for g in gates])
    paired = [pair_by_query(gate.metric, baseline.results, candidate.results) for gate in gates]
    results = decide(gates, paired, confidence=confidence, n_resamples=n_resamples, seed=seed)
    deltas = {p.metric: p.deltas() for p in paired}
    return Verdict(baseline, candidate, results, confidence, deltas)


def gates_from_config(gates: Mapping[str, Any]) -> list[Gate]:
    """Gates from a config's ``regression.gates`` mapping (validated GateSpec objects or dicts)."""
    out = []
    for metric, spec in gates.items():
        data = spec.model_dump() if hasattr(spec, "model_dump") else dict(spec or {})
        out.append(make_gate(metric, data.get("max_drop", 0.0), data.get("alpha"), where=f"regression.gates.{metric}"))
    _refuse_repeated_metrics([(repr(metric), gate) for metric, gate in zip(gates, out)], "regression.gates")
    return out


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
    outcome = _pick(run, spec.retriever, baseline.label)
    candidate = ResultsFile.from_document(
        run.config.output_dir / results_name(outcome.label), results_document(run, outcome), results=outcome.results
    )
    return compare(
        baseline,
        candidate,
        gates_from_config(spec.gates),
        confidence=spec.confidence,
        n_resamples=spec.resamples,
        seed=spec.seed,
    )


def _pick(run: RunOutcome, label: str | None, baseline_label: str) -> RetrieverOutcome:
    by_label = {o.label: o for o in run.outcomes}
    if label:
        if label not in by_label:
            raise ConfigError(
                f"{run.config.path}: regression.retriever {label!r} is not a retriever of this run "
                f"({', '.join(by_label)})"
            )
        return by_label[label]
    if len(run.outcomes) == 1:
        return run.outcomes[0]
    if baseline_label in by_label:
        return by_label[baseline_label]
    raise ConfigError(
        f"{run.config.path}: regression: several retrievers ({', '.join(by_label)}) and none is labelled "
        f"{baseline_label!r} like the baseline; name one in regression.retriever"
    )
