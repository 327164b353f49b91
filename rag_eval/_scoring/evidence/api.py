"""``evaluate_evidence``: retrieved spans of documents scored against evidence spans and document grades.

One call computes any mix of evidence metrics (``evidence_recall@10``, ``evidence_iou@2000chars``),
document metrics by MaxP collapse (``doc_ndcg@10``) and, given the chunking, chunk-level
metrics (``ndcg@10``), and returns the same :class:`~rag_eval._scoring.results.Results` as evaluate().
Definitions: docs/semantics.md, "Documents, chunks and evidence".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np

from rag_eval._core.errors import InputFormatError, MetricError
from rag_eval._core.ids import shown_id
from rag_eval._core.spans import chunk_id
from rag_eval._core.tokens import count_words
from rag_eval._scoring.evaluate import EvaluationOptions, apply_no_relevant, score
from rag_eval._scoring.evidence.inputs import Inputs, read_inputs
from rag_eval._scoring.evidence.maxp import chunk_grades, chunk_run, collapse, document_run, lookup
from rag_eval._scoring.evidence.metrics import EvidenceMetrics
from rag_eval._scoring.evidence.ranks import rank_spans
from rag_eval._scoring.evidence.tables import DocIndex, check_offsets, check_unique_spans, read_spans
from rag_eval._scoring.metrics.aggregation import dataset_value
from rag_eval._scoring.metrics.measures import Metric, parse_metrics
from rag_eval._scoring.results import Results


def evaluate_evidence(
    evidence: Mapping[str, Iterable[Any]],
    spans: Mapping[str, Iterable[Any]],
    metrics: Iterable[str | Metric] | str,
    *,
    document_judgements: Mapping[str, Mapping[str, float]] | None = None,
    chunks: Iterable[Any] | None = None,
    documents: Mapping[str, str] | None = None,
    count_tokens: Callable[[str], int] | None = None,
    min_evidence_fraction: float = 0.0,
    gain: str = "linear",
    aggregation: str = "macro",
    no_relevant: str = "skip",
    relevance_threshold: float = 1,
    judged_only: bool = False,
) -> Results:
    """Score retrieved spans of documents against evidence, per query and overall.

    ``evidence`` is ``{qid: [(doc_id, start, end, grade), ...]}`` (grade > 0, default 1;
    :class:`~rag_eval._core.spans.EvidenceSpan` items too) and ``spans`` is
    ``{qid: [(doc_id, start, end, score), ...]}`` in any order: each query's spans are ranked
    by score descending, ties by chunk id (``<doc>#<start>-<end>``) descending in bytes.
    An item may also be a dict: ``{doc, start, end, grade?}`` (evidence), ``{doc, start, end,
    score}`` (spans; other keys ignored). Offsets are code points, ``[start, end)``. ``document_judgements`` ``{qid: {doc_id: grade}}``
    are explicit document grades (an explicit 0 on a document holding evidence is an error).

    Metrics: evidence metrics by cutoff or budget (``evidence_recall@10``,
    ``evidence_precision@2000chars``, ``evidence_iou@512tokens``: token budgets need
    ``documents`` and count with ``count_tokens``, default rag_eval._core.tokens.count_words),
    document metrics by MaxP (``doc_ndcg@10``, any ranking metric with ``doc_``), and
    chunk-level metrics (``ndcg@10``) when ``chunks`` (every chunk of the chunking, as
    ``(doc_id, start, end)`` or Chunk) is given, with chunk grades from evidence overlap of
    at least ``min_evidence_fraction`` of the evidence span's length. Evidence metrics use
    the macro mean whatever ``aggregation`` says (micro is defined for nDCG only). ``judged_only``
    (trec_eval -J) removes the unjudged chunks or documents from each ranking before the chunk and
    document metrics; evidence metrics, which read characters, not grades, are unchanged by it.

    A query without evidence has no evidence metric (``no_relevant`` decides: skip, zero,
    error); a judged query without spans scores 0 and is listed as unanswered; a query of
    ``spans`` without evidence or document judgements is listed as unjudged. ``documents``
    ``{doc_id: text}``, when given, bounds every offset. Every problem is one
    :class:`~rag_eval._core.errors.RagEvalError` line naming the input, query, item and document.
    """
    options = EvaluationOptions(gain, aggregation, no_relevant, relevance_threshold, judged_only)
    parsed = parse_metrics([metrics] if isinstance(metrics, str) else metrics)
    fraction = _fraction(min_evidence_fraction)
    evidence_metrics = [m for m in parsed if m.is_evidence]
    document_metrics = [m for m in parsed if m.is_document_level]
    chunk_metrics = [m for m in parsed if not (m.is_evidence or m.is_document_level)]
    if chunk_metrics and chunks is None:
        m = chunk_metrics[0]
        raise MetricError(
            f"metric {m}: chunk-level metrics need the chunking (its grades and ideal ranking come from every chunk): "
            f"pass chunks=[(doc_id, start, end), ...], or use doc_{m} or evidence metrics, which do not depend on it"
        )
    by_tokens = [m for m in evidence_metrics if m.unit == "tokens"]
    if by_tokens and documents is None:
        raise MetricError(
            f"metric {by_tokens[0]}: a token budget counts the tokens of each retrieved span's text; "
            "pass documents={doc_id: text}, or use a budget in chars"
        )
    if count_tokens is not None and not callable(count_tokens):
        raise InputFormatError(f"count_tokens must be a function of a str, got {type(count_tokens).__name__}")

    inputs = read_inputs(evidence, spans, document_judgements, chunks, documents)
    query_ids = inputs.query_ids
    values: dict[str, np.ndarray] = {}
    aggregate: dict[str, float] = {}
    left_out: dict[str, tuple[str, ...]] = {}
    if evidence_metrics:
        tokens = _token_lengths(inputs, count_tokens or count_words) if by_tokens else None
        engine = _engine(inputs, tokens)
        for metric in evidence_metrics:
            per_query, defined = engine.values(metric)
            values[str(metric)], missing = apply_no_relevant(
                metric, per_query, defined, options, query_ids, "no evidence", "give each evidence"
            )
            if missing:
                left_out[str(metric)] = missing
            # Evidence families have no micro rule: their dataset value is the macro mean under either aggregation.
            aggregate[str(metric)] = dataset_value(metric, values[str(metric)], options.aggregation, _no_parts)
    if document_metrics:
        joined = document_run(inputs.ranked, inputs.grade_keys, inputs.grades, inputs.n_docs, query_ids,
                              inputs.unjudged, inputs.unanswered)
        _merge(score(joined, tuple(document_metrics), options), values, aggregate, left_out)
    if chunk_metrics:
        _merge(score(_chunk_joined(inputs, fraction), tuple(chunk_metrics), options), values, aggregate, left_out)
    return Results(
        metrics=parsed,
        query_ids=tuple(query_ids),
        values={str(m): values[str(m)] for m in parsed},
        aggregate={str(m): aggregate[str(m)] for m in parsed},
        options={**options.to_dict(), **_evidence_options(fraction)},
        left_out={str(m): left_out[str(m)] for m in parsed if str(m) in left_out},
        unjudged_queries=tuple(inputs.unjudged),
        unanswered_queries=tuple(inputs.unanswered),
    )


def collapse_to_documents(spans: Mapping[str, Iterable[Any]]) -> dict[str, dict[str, float]]:
    """``{qid: {doc_id: score}}``: each query's span ranking collapsed to documents (MaxP).

    Each document sits at the rank of its best-ranked span (ranked as evaluate_evidence ranks
    them); scores are rank-derived (n, n-1, ..., 1 for n documents), so that any tool ranking by
    score, trec_eval included, sees exactly this order with no tie. Spans are checked as there.
    """
    columns = read_spans(spans, "spans")
    docs = DocIndex.build([columns])
    columns.doc = docs.code(columns.docs)
    check_offsets(columns, None)
    check_unique_spans(columns, len(docs))
    n = len(columns.query_keys)
    ranked = rank_spans(columns, np.arange(n, dtype=np.int64), n, docs.keys)
    kept, pos = collapse(ranked, len(docs))
    query = ranked.query[kept]
    size = np.bincount(query, minlength=n)
    out: dict[str, dict[str, float]] = {q: {} for q in columns.query_keys}
    doc_ids = [docs.keys[d] for d in ranked.doc[kept].tolist()]
    for q, doc, value in zip(query.tolist(), doc_ids, (size[query] - pos).astype(np.float64).tolist()):
        out[columns.query_keys[q]][doc] = value
    return out


def span_grades(
    evidence: Mapping[str, Iterable[Any]],
    spans: Mapping[str, Iterable[Any]],
    *,
    document_judgements: Mapping[str, Mapping[str, float]] | None = None,
    min_evidence_fraction: float = 0.0,
) -> dict[str, list[tuple[str, float, float | None]]]:
    """Each judged query's spans in rank order as ``(chunk_id, score, grade)``, for results files and reports.

    The grade is the chunk grade of chunk-level metrics (the highest grade of the evidence the
    span overlaps by at least ``min_evidence_fraction`` of the evidence's length), 0 for a span of a
    judged document that overlaps none, None for a span of a document not judged for the query.
    """
    fraction = _fraction(min_evidence_fraction)
    inputs = read_inputs(evidence, spans, document_judgements, None, None)
    ranked, found = inputs.ranked, inputs.evidence
    assert found.doc is not None
    order = np.lexsort((ranked.end, ranked.start, ranked.doc))
    doc, start, end = ranked.doc[order], ranked.start[order], ranked.end[order]
    width = int(max(end.max(initial=0), found.end.max(initial=0))) + 1
    keys, grades = chunk_grades(
        doc, start, end, (inputs.evidence_query, found.doc, found.start, found.end, found.value), fraction, width
    )
    position = np.empty(order.size, dtype=np.int64)
    position[order] = np.arange(order.size, dtype=np.int64)  # each ranked row's place among the sorted chunks
    overlap = lookup(keys, grades, ranked.query * max(order.size, 1) + position, np.nan)
    judged = lookup(inputs.grade_keys, inputs.grades, ranked.query * inputs.n_docs + ranked.doc, np.nan)
    grade = np.where(np.isnan(overlap), np.where(np.isnan(judged), np.nan, 0.0), overlap)
    scores = inputs.spans.value
    out: dict[str, list[tuple[str, float, float | None]]] = {q: [] for q in inputs.query_ids}
    keys_of_docs = inputs.docs.keys
    for q, d, s, e, row, g in zip(
        ranked.query.tolist(), ranked.doc.tolist(), ranked.start.tolist(), ranked.end.tolist(), ranked.row.tolist(),
        grade.tolist(),
    ):
        out[inputs.query_ids[q]].append((chunk_id(keys_of_docs[d], s, e), float(scores[row]), None if g != g else g))
    return out


@dataclass(frozen=True)
class EvidenceCoverage:
    """One query's evidence, split into what the spans it reads cover and what they miss.

    Each entry is ``(doc_id, start, end)``, pieces of the union of the query's evidence, sorted.
    """

    covered: tuple[tuple[str, int, int], ...]
    missed: tuple[tuple[str, int, int], ...]


def covered_evidence(
    evidence: Mapping[str, Iterable[Any]],
    spans: Mapping[str, Iterable[Any]],
    k: int,
    *,
    unit: str | None = None,
    documents: Mapping[str, str] | None = None,
    count_tokens: Callable[[str], int] | None = None,
) -> dict[str, EvidenceCoverage]:
    """Per query with evidence, the evidence its top ``k`` spans cover and miss (for reports).

    With ``unit`` "chars" or "tokens", ``k`` is a budget instead, as in ``evidence_recall@2000chars``.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise MetricError(f"k must be a positive int, got {k!r}")
    if unit not in (None, "chars", "tokens"):
        raise MetricError(f"unit must be None, 'chars' or 'tokens', got {unit!r}")
    if unit == "tokens" and documents is None:
        raise MetricError("a token budget counts the tokens of each span's text: pass documents={doc_id: text}")
    inputs = read_inputs(evidence, spans, None, None, documents)
    tokens = _token_lengths(inputs, count_tokens or count_words) if unit == "tokens" else None
    engine = _engine(inputs, tokens)
    covered, missed = engine.coverage(engine.context(k, unit))
    out: dict[str, dict[str, list[tuple[str, int, int]]]] = {
        q: {"covered": [], "missed": []} for q, n in zip(inputs.query_ids, engine.evidence_chars.tolist()) if n > 0
    }
    for name, pieces in (("covered", covered), ("missed", missed)):
        query, doc, start, end = (a.tolist() for a in pieces)
        for q, d, s, e in zip(query, doc, start, end):
            out[inputs.query_ids[q]][name].append((inputs.docs.keys[d], s, e))
    return {q: EvidenceCoverage(tuple(v["covered"]), tuple(v["missed"])) for q, v in out.items()}


# ---- helpers -------------------------------------------------------------------------------


def _engine(inputs: Inputs, tokens: np.ndarray | None) -> EvidenceMetrics:
    evidence = inputs.evidence
    assert evidence.doc is not None
    return EvidenceMetrics(
        inputs.ranked, inputs.evidence_query, evidence.doc, evidence.start, evidence.end, inputs.n_docs, tokens
    )


def _no_parts(part: Metric) -> np.ndarray:
    raise ValueError(f"{part}: evidence metrics have no micro rule")  # pragma: no cover - measures lists none


def _merge(results: Results, values: dict, aggregate: dict, left_out: dict) -> None:
    values.update(results.values)
    aggregate.update(results.aggregate)
    left_out.update(results.left_out)


def _fraction(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not 0.0 <= float(value) <= 1.0:
        raise InputFormatError(
            f"min_evidence_fraction must be a number from 0 to 1 (share of an evidence span's length a chunk must "
            f"overlap; 0: one character), got {value!r}"
        )
    return float(value)


def _evidence_options(fraction: float) -> dict[str, Any]:
    return {
        "ties": "score descending, then chunk id <doc>#<start>-<end> descending in bytes (trec_eval's rule)",
        "min_evidence_fraction": fraction,
        "evidence": "characters (code points) of the union of each query's evidence spans; grades ignored",
        "documents": "MaxP: each document at the rank of its best chunk",
    }


def _token_lengths(inputs: Inputs, count_tokens: Callable[[str], int]) -> np.ndarray:
    """Tokens in each ranked span's text, counted once per distinct span."""
    ranked, documents = inputs.ranked, inputs.documents
    assert documents is not None
    if ranked.query.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((ranked.end, ranked.start, ranked.doc))
    doc, start, end = ranked.doc[order], ranked.start[order], ranked.end[order]
    new = np.ones(order.size, dtype=bool)
    new[1:] = (doc[1:] != doc[:-1]) | (start[1:] != start[:-1]) | (end[1:] != end[:-1])
    keys = inputs.docs.keys
    counts = []
    for d, s, e in zip(doc[new].tolist(), start[new].tolist(), end[new].tolist()):  # one call per distinct span
        n = count_tokens(documents[keys[d]][s:e])
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise InputFormatError(
                f"count_tokens returned {n!r} for span {shown_id(chunk_id(keys[d], s, e))}; it must return an int >= 0"
            )
        counts.append(int(n))
    per_distinct = np.array(counts, dtype=np.int64)
    out = np.empty(order.size, dtype=np.int64)
    out[order] = per_distinct[np.cumsum(new) - 1]
    return out


def _chunk_joined(inputs: Inputs, fraction: float):
    chunks, ranked = inputs.chunks, inputs.ranked
    assert chunks is not None and chunks.doc is not None
    evidence = inputs.evidence
    assert evidence.doc is not None
    order = np.lexsort((chunks.end, chunks.start, chunks.doc))
    doc, start, end = chunks.doc[order], chunks.start[order], chunks.end[order]
    width = int(max(end.max(initial=0), ranked.end.max(initial=0), evidence.end.max(initial=0))) + 1
    # Each retrieved span must be a chunk: found by (doc, start) rank then end, two exact searches.
    line = doc * width + start
    distinct = np.unique(line)
    chunk_key = np.searchsorted(distinct, line) * width + end
    span_line = ranked.doc * width + ranked.start
    where = np.minimum(np.searchsorted(distinct, span_line), max(distinct.size - 1, 0))
    found = distinct[where] == span_line if distinct.size else np.zeros(span_line.size, dtype=bool)
    span_key = where * width + ranked.end
    chunk_of_row = np.minimum(np.searchsorted(chunk_key, span_key), max(chunk_key.size - 1, 0))
    if chunk_key.size:
        found &= chunk_key[chunk_of_row] == span_key
    if not found.all():
        i = int(np.flatnonzero(~found)[0])
        span = chunk_id(inputs.docs.keys[ranked.doc[i]], int(ranked.start[i]), int(ranked.end[i]))
        inputs.spans.fail(
            int(ranked.row[i]),
            f"span {shown_id(span)} is not one of the chunks given; chunk-level metrics need every retrieved span "
            "to be a chunk of the chunking (or use doc_ and evidence metrics)",
        )
    overlap_keys, overlap_grades = chunk_grades(
        doc, start, end,
        (inputs.evidence_query, evidence.doc, evidence.start, evidence.end, evidence.value),
        fraction, width,
    )
    return chunk_run(ranked, chunk_of_row, doc, overlap_keys, overlap_grades, inputs.grade_keys, inputs.n_docs,
                     inputs.query_ids, inputs.unjudged, inputs.unanswered)

