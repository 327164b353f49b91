"""The numbers drawn about a run's variants: computed here, so that rag_eval._report.plots only draws.

- :func:`mean_rows`: each variant's mean of the main metric with a 95% bootstrap CI, best first;
- :func:`choose_baseline`: the declared baseline, else the variant with the best mean;
- :func:`sorted_deltas`: each variant's per-query differences to the baseline, worst first;
- :func:`at_k_curves`: the main metric's family at the cutoffs of :func:`at_k_cutoffs`, each
  variant's stored ranking scored again with the run's options;
- :func:`sweep_points`: a sweep's means against each varied parameter (also the report's
  sensitivity tables, rag_eval._report.decision).

Means, CIs, pairing and wins are those of the verdict (rag_eval._compare.decision), and "best",
"worst" and "better" follow the metric's direction, read from its record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rag_eval._compare.decision import MeanRow, defined_values, mean_row, paired_differences
from rag_eval._core.spans import parse_chunk_id
from rag_eval._data.config.sweep import value_text  # a value as its variant's label says it: one rule
from rag_eval._scoring.evaluate import evaluate
from rag_eval._scoring.evidence import evaluate_evidence
from rag_eval._scoring.metrics.measures import Metric, parse_metric

if TYPE_CHECKING:
    from rag_eval._run.outcome import RetrieverOutcome, RunOutcome
    from rag_eval._scoring.results import Results

__all__ = [
    "SweepPoint",
    "at_k_curves",
    "at_k_cutoffs",
    "choose_baseline",
    "mean_rows",
    "mean_values",
    "sorted_deltas",
    "sweep_points",
    "value_text",
]

CONFIDENCE = 0.95
RESAMPLES = 10_000
SEED = 0
# The cutoffs of the metric@k curves: these, then top_k itself (one evaluation per variant for all of them).
_CUTOFFS = (1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000)


@dataclass(frozen=True)
class SweepPoint:
    """One variant in a sensitivity plot: its value of the parameter, its series (the other varied values)."""

    label: str
    value: Any
    series: str
    mean: float


def mean_rows(results_by_label: Mapping[str, Results], metric: str) -> list[MeanRow]:
    """Each variant's mean of per-query ``metric`` (queries left out excluded) with a 95% percentile bootstrap CI.

    Ordered best first in the metric's direction (ties: the run's order). A variant with no defined value is left out.
    """
    rows = [mean_row(label, results, metric, confidence=CONFIDENCE, n_resamples=RESAMPLES, seed=SEED)
            for label, results in results_by_label.items()]
    parsed = parse_metric(metric)
    return sorted((row for row in rows if row is not None), key=lambda row: parsed.best_first_key(row.mean))


def mean_values(results_by_label: Mapping[str, Results], metric: str) -> dict[str, float]:
    """``{label: mean of defined per-query values}`` without CIs (cheap), for variants with any value."""
    means = {}
    for label, results in results_by_label.items():
        values = defined_values(results, metric)
        if values.size:
            means[label] = float(values.mean())
    return means


def choose_baseline(results_by_label: Mapping[str, Results], metric: str, declared: str | None) -> str | None:
    """The declared baseline when it is a label of the run, else the variant with the best mean (None if none).

    Best in the metric's direction; of equal means, the first in the run's order.
    """
    if declared is not None and declared in results_by_label:
        return declared
    means = mean_values(results_by_label, metric)
    parsed = parse_metric(metric)
    return min(means, key=lambda label: parsed.best_first_key(means[label])) if means else None


def sorted_deltas(results_by_label: Mapping[str, Results], metric: str, baseline: str) -> dict[str, np.ndarray]:
    """Per-query ``variant - baseline`` of ``metric`` for every other variant, worst first (left: losses).

    Worst in the metric's direction: ascending for a higher-is-better metric, descending otherwise.
    Paired as the verdict pairs (rag_eval._compare.decision.paired_differences: queries left out on
    either side are not paired); a variant with no paired query is left out.
    """
    base = results_by_label[baseline]
    higher = parse_metric(metric).higher_is_better
    out = {}
    for label, results in results_by_label.items():
        if label == baseline:
            continue
        deltas = paired_differences(metric, base, results)
        if deltas is not None:
            ascending = np.sort(deltas)
            out[label] = ascending if higher else ascending[::-1]
    return out


def at_k_cutoffs(top_k: int) -> list[int]:
    """The cutoffs of the metric@k curves: 1, 2, 3, 5, 10, 20, 50, ... below ``top_k``, and ``top_k``."""
    return sorted({k for k in _CUTOFFS if k < top_k} | {top_k})


def at_k_curves(run: RunOutcome, metric: str) -> tuple[str, dict[str, dict[int, float]]] | None:
    """``(family, {label: {k: value}})``: the main metric's family at each cutoff of :func:`at_k_cutoffs`.

    Each variant's stored ranking is scored again at every cutoff with the run's options
    (rag_eval._scoring.evaluate for passages, rag_eval.evaluate_evidence for spans of documents); a
    budget metric (``evidence_recall@2000chars``) is drawn by number of chunks. None when the
    family takes no cutoff (``r_precision``). A variant whose answer cannot give the family
    (own spans for a chunk-level metric) is left out.
    """
    main = parse_metric(metric)
    if main.family.cutoff == "none":
        return None
    metrics = [Metric(main.name, k, main.doc) for k in at_k_cutoffs(run.config.model.top_k)]
    family = str(Metric(main.name, None, main.doc)) + "@k"
    curves = {}
    for outcome in run.outcomes:
        results = _score_at(run, outcome, metrics)
        if results is not None:
            curves[outcome.label] = {m.k: float(results.aggregate[str(m)]) for m in metrics if m.k is not None}
    return family, curves


def _score_at(run: RunOutcome, outcome: RetrieverOutcome, metrics: list[Metric]) -> Results | None:
    evaluation = run.config.model.evaluation
    if outcome.spans is None:  # a passage run
        return evaluate(run.dataset.judgements, outcome.ranking, metrics, **evaluation.passage_options())
    chunks = None
    if not (metrics[0].doc or metrics[0].is_evidence):  # chunk level: the ideal ranking needs the whole chunking
        chunks = _chunking(run, outcome)
        if chunks is None:
            return None
    return evaluate_evidence(
        dict(run.dataset.evidence),
        outcome.spans,
        metrics,
        document_judgements=run.dataset.document_judgements,
        chunks=chunks,
        documents=run.dataset.documents,
        **evaluation.document_options(),
    )


def _chunking(run: RunOutcome, outcome: RetrieverOutcome) -> list[tuple[str, int, int]] | None:
    """Every chunk the retriever indexed (its corpus ids name them), None for its own spans."""
    record = outcome.chunking
    if record is None or record.kind == "own":
        return None
    if record.kind == "documents":
        return [(doc, 0, len(text)) for doc, text in run.dataset.documents.items()]
    parsed = [parse_chunk_id(key) for key in (outcome.corpus or {})]
    return None if not parsed or any(p is None for p in parsed) else parsed  # type: ignore[return-value]


def sweep_points(
    results_by_label: Mapping[str, Results],
    metric: str,
    variants: Mapping[str, Mapping[str, Any]],
    templates: Mapping[str, str] | None = None,
) -> dict[str, list[SweepPoint]]:
    """``{parameter: points}`` for each varied parameter: each variant's mean against its value.

    A point's series names the variant's other varied values (``b=0.4``), so a line joins
    variants that differ in this parameter only. When the variants vary more than one
    retriever (``templates``: label -> retriever), the series starts with the retriever
    (``dense: overlap=0``): two grids over the same parameters are two lines, not one.
    """
    means = mean_values(results_by_label, metric)
    params: list[str] = []
    for varied in variants.values():
        params.extend(p for p in varied if p not in params)
    templates = templates or {}
    several_retrievers = len({templates.get(label) for label in variants}) > 1
    out: dict[str, list[SweepPoint]] = {}
    for param in params:
        points = []
        for label, varied in variants.items():
            if param not in varied or label not in means:
                continue
            series = ", ".join(f"{p}={value_text(v)}" for p, v in varied.items() if p != param)
            if several_retrievers:
                series = f"{templates[label]}: {series}" if series else templates[label]
            series = series or "all"
            points.append(SweepPoint(label, varied[param], series, means[label]))
        if points:
            out[param] = points
    return out

