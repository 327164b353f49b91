"""The holes of a retriever's run, computed while it is evaluated: shares of the top k and bounds, per metric.

Called by both sides of a run (rag_eval/_run/passages.py, rag_eval/_run/documents.py) with the
ranking they just scored; gives the :class:`~rag_eval._run.holes_section.HolesRecord` that the
results file, the report and ``rag-eval compare`` read. The bounds are those of
rag_eval._scoring.holes (``high``: every hole of the metric's top k judged at the query's highest
grade; a hole below the cutoff is not the metric's), computed for all of a run's metrics over one join:
low (the results' own values), high on the filled judgements (one pass per distinct k), condensed with
``judged_only``.

What a hole is, on each kind of dataset (docs/semantics.md, "Documents, chunks and evidence"):

- passages: a retrieved passage with no judgement for the query;
- chunk-level metrics (``ndcg@10`` on documents): a retrieved chunk of a document not judged for the
  query, the chunks the evaluator leaves unjudged. The judgements are the chunk grades of every chunk
  of the chunking in the query's judged documents, as the evaluator builds its ideal ranking from;
- document metrics (``doc_ndcg@10``): a document of the MaxP-collapsed ranking with no document grade;
- evidence metrics: a chunk of a document not judged for the query, counted in the top k, with no
  bounds (they read characters, not grades: filling a hole with a grade changes no evidence).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from rag_eval._core.ranking import ranked
from rag_eval._core.spans import chunk_id
from rag_eval._run.holes_section import HolesRecord, MetricHoles
from rag_eval._scoring.engine import JoinedRun
from rag_eval._scoring.evaluate import EvaluationOptions, join_inputs, score
from rag_eval._scoring.evidence import collapse_to_documents, span_grades
from rag_eval._scoring.holes import filled
from rag_eval._scoring.metrics.measures import Metric
from rag_eval._scoring.results import Results

# The evaluation options rag_eval.evaluate takes (a config's document options add min_evidence_fraction).
_OPTION_NAMES = ("gain", "aggregation", "no_relevant", "relevance_threshold", "judged_only")

ScoredSpan = tuple[str, int, int, float]


def evaluation_options(options: Mapping[str, Any]) -> EvaluationOptions:
    """The :class:`EvaluationOptions` of a config's ``passage_options()`` or ``document_options()``."""
    return EvaluationOptions(**{name: options[name] for name in _OPTION_NAMES if name in options})


def passage_holes(
    judgements: Mapping[str, Mapping[str, float]],
    ranking: Mapping[str, Mapping[str, float]],
    results: Results,
    top_k: int,
    options: EvaluationOptions,
) -> HolesRecord:
    """Every metric of ``results`` (a passage run's evaluation of ``ranking``): its holes and bounds."""
    joined = join_inputs(judgements, ranking, keep_unjudged=True)
    return HolesRecord(_ranking_holes(joined, results.metrics, results, top_k, options, "passage"))


def document_holes(
    judgements: Mapping[str, Mapping[str, float]],
    evidence: Mapping[str, Sequence[Any]],
    document_judgements: Mapping[str, Mapping[str, float]],
    ranking: Mapping[str, Mapping[str, float]],
    spans: Mapping[str, Sequence[ScoredSpan]],
    chunks: Sequence[Any] | None,
    results: Results,
    top_k: int,
    options: EvaluationOptions,
    min_evidence_fraction: float,
) -> HolesRecord:
    """Every metric of ``results`` (a document run's evaluation of ``spans``): its holes, by the metric's unit.

    ``judgements``: the document grades of the dataset (``Dataset.judgements``); ``ranking``: the spans by
    chunk id; ``chunks``: every chunk of the chunking (None: the retriever's own spans, which have no
    chunk-level metrics).
    """
    metrics = results.metrics
    entries: dict[str, MetricHoles] = {}
    documents = [m for m in metrics if m.is_document_level]
    if documents:
        answered = {q: list(items) for q, items in spans.items() if items}
        collapsed = collapse_to_documents(answered) if answered else {}
        joined = join_inputs(judgements, collapsed, keep_unjudged=True)
        entries.update(_ranking_holes(joined, tuple(documents), results, top_k, options, "document"))
    chunk_level = [m for m in metrics if not (m.is_document_level or m.is_evidence)]
    if chunk_level and chunks is not None:
        graded = chunk_judgements(judgements, evidence, document_judgements, chunks, min_evidence_fraction)
        joined = join_inputs(graded, ranking, keep_unjudged=True)
        entries.update(_ranking_holes(joined, tuple(chunk_level), results, top_k, options, "chunk"))
    for metric in metrics:
        if metric.is_evidence:
            entries[str(metric)] = _evidence_holes(metric, judgements, ranking, spans, results, top_k)
    return HolesRecord({str(m): entries[str(m)] for m in metrics if str(m) in entries})


def chunk_judgements(
    judgements: Mapping[str, Mapping[str, float]],
    evidence: Mapping[str, Sequence[Any]],
    document_judgements: Mapping[str, Mapping[str, float]],
    chunks: Sequence[Any],
    min_evidence_fraction: float,
) -> dict[str, dict[str, float]]:
    """``{qid: {chunk_id: grade}}``: every chunk of the query's judged documents with its chunk grade.

    The judgements chunk-level metrics are scored against (rag_eval._scoring.evidence.maxp.chunk_run):
    the highest grade of the evidence a chunk overlaps enough, else 0.
    """
    by_doc: dict[str, list[tuple[int, int]]] = {}
    for chunk in chunks:
        doc, start, end = (chunk[0], chunk[1], chunk[2]) if isinstance(chunk, tuple) else (
            chunk.doc, chunk.start, chunk.end)
        by_doc.setdefault(doc, []).append((int(start), int(end)))
    spans = {
        qid: [(doc, start, end, 0.0) for doc in docs for start, end in by_doc.get(doc, ())]
        for qid, docs in judgements.items()
    }
    spans = {qid: items for qid, items in spans.items() if items}
    if not spans:
        return {}
    graded = span_grades(
        evidence, spans, document_judgements=document_judgements, min_evidence_fraction=min_evidence_fraction
    )
    return {qid: {key: grade for key, _, grade in rows if grade is not None} for qid, rows in graded.items() if rows}


def _ranking_holes(
    joined: JoinedRun, metrics: tuple[Metric, ...], results: Results, top_k: int, options: EvaluationOptions, unit: str
) -> dict[str, MetricHoles]:
    """The holes of ``metrics`` on ``joined`` (made with ``keep_unjudged``); low is the results' own values."""
    # Each metric's high fills the holes of its own top k (the holes its unjudged share counts), never those
    # ranked below its cutoff: one scoring pass per distinct k.
    by_k: dict[int, list[Metric]] = {}
    for metric in metrics:
        by_k.setdefault(metric.ranks_shown(top_k), []).append(metric)
    high_values: dict[str, np.ndarray] = {}
    high_aggregate: dict[str, float] = {}
    for k, group in by_k.items():
        high = score(filled(joined, k), tuple(group), options)
        for metric in group:
            high_values[str(metric)] = np.asarray(high.values[str(metric)], dtype=np.float64)
            high_aggregate[str(metric)] = float(high.aggregate[str(metric)])
    condensed = score(joined, metrics, replace(options, judged_only=True))
    index = {qid: i for i, qid in enumerate(joined.query_ids)}
    # A scored query these judgements do not hold (a judged document the chunking cut into no chunk) has
    # nothing to fill: its shares are 0 and both bounds its value. The last row stands for it.
    order = np.array([index.get(qid, len(index)) for qid in results.query_ids], dtype=np.int64)
    shares: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    out = {}
    for metric in metrics:
        name = str(metric)
        k = metric.ranks_shown(top_k)
        if k not in shares:
            shares[k] = _shares(joined, k)
        judged, unjudged = shares[k]
        low = np.asarray(results.values[name], dtype=np.float64)
        out[name] = MetricHoles(
            metric=name,
            unit=unit,
            k=k,
            query_ids=tuple(results.query_ids),
            judged=_aligned(judged, order, np.zeros_like(low)),
            unjudged=_aligned(unjudged, order, np.zeros_like(low)),
            low=low,
            high=_aligned(high_values[name], order, low),
            condensed=_aligned(np.asarray(condensed.values[name], dtype=np.float64), order, low),
            dataset_low=float(results.aggregate[name]),
            dataset_high=high_aggregate[name],
            dataset_condensed=float(condensed.aggregate[name]),
        )
    return out


def _aligned(values: np.ndarray, order: np.ndarray, missing: np.ndarray) -> np.ndarray:
    """``values`` (joined order) in the results' order; ``missing``'s value where a query is not joined."""
    padded = np.append(values, np.nan)[order]
    absent = order == values.size
    return np.where(absent, missing, padded)


def _shares(joined: JoinedRun, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per judged query (joined order): judged and unjudged units among the first ``k`` of the ranking, / k.

    As rag_eval._scoring.holes.unjudged_share and the ``judged@k`` kernel count them: divided by k even
    when fewer were retrieved, on the ranking as retrieved (``judged_only`` plays no part).
    """
    data = joined.ranked
    within = data.row_pos < k
    holes = np.isnan(data.row_grade)
    n = data.n_queries
    judged = np.bincount(data.row_query[within & ~holes], minlength=n).astype(np.float64) / k
    unjudged = np.bincount(data.row_query[within & holes], minlength=n).astype(np.float64) / k
    return judged, unjudged


def _evidence_holes(
    metric: Metric,
    judgements: Mapping[str, Mapping[str, float]],
    ranking: Mapping[str, Mapping[str, float]],
    spans: Mapping[str, Sequence[ScoredSpan]],
    results: Results,
    top_k: int,
) -> MetricHoles:
    """An evidence metric's shares: chunks of documents not judged for the query, in its top k; no bounds."""
    k = metric.ranks_shown(top_k)
    judged, unjudged = [], []
    for qid in results.query_ids:
        doc_of = {chunk_id(doc, start, end): doc for doc, start, end, _ in spans.get(qid, ())}
        grades = judgements.get(qid, {})
        top = [doc_of[key] for key, _ in ranked(ranking.get(qid, {}))[:k] if key in doc_of]
        holes = sum(1 for doc in top if doc not in grades)
        judged.append((len(top) - holes) / k)
        unjudged.append(holes / k)
    missing = np.full(len(results.query_ids), np.nan)
    name = str(metric)
    return MetricHoles(
        metric=name, unit="chunk", k=k, query_ids=tuple(results.query_ids),
        judged=np.array(judged, dtype=np.float64), unjudged=np.array(unjudged, dtype=np.float64),
        low=np.asarray(results.values[name], dtype=np.float64), high=missing, condensed=missing.copy(),
        dataset_low=float(results.aggregate[name]), dataset_high=math.nan, dataset_condensed=math.nan, bounded=False,
    )
