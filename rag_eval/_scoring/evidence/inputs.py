"""Everything evaluate_evidence is given, read, checked and coded once: the columns the metrics use.

Queries: a query with evidence or a document judgement is judged (scored, in the order of
its id's bytes, as trec_eval orders topics); a query of ``spans`` with neither is listed as
unjudged; a judged query with no retrieved span is listed as unanswered and scores 0 (docs/semantics.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import compress, repeat
from typing import Any

import numpy as np

from rag_eval._core.errors import InputFormatError
from rag_eval._core.ids import shown_id
from rag_eval._core.spans import chunk_id
from rag_eval._scoring.engine import from_nested
from rag_eval._scoring.evidence.maxp import best_per_key, lookup
from rag_eval._scoring.evidence.ranks import RankedSpans, rank_spans
from rag_eval._scoring.evidence.tables import (
    DocIndex,
    SpanColumns,
    check_offsets,
    check_unique_spans,
    read_chunks,
    read_spans,
)


@dataclass
class Inputs:
    """The checked inputs: judged queries, ranked spans, evidence and document grades as columns."""

    query_ids: list[str]
    unjudged: list[str]
    unanswered: list[str]
    docs: DocIndex
    spans: SpanColumns
    ranked: RankedSpans
    evidence_query: np.ndarray  # judged query index of each evidence span
    evidence: SpanColumns
    grade_keys: np.ndarray  # query * n_docs + doc of every judged (query, document), sorted
    grades: np.ndarray  # their document grades
    chunks: SpanColumns | None
    documents: Mapping[str, str] | None

    @property
    def n_docs(self) -> int:
        """Number of distinct doc ids over all inputs."""
        return len(self.docs)


def read_inputs(
    evidence: Any,
    spans: Any,
    document_judgements: Any = None,
    chunks: Iterable[Any] | None = None,
    documents: Mapping[str, str] | None = None,
) -> Inputs:
    """Read and check every input (one-line errors naming the input, query, item and document)."""
    evidence_columns = read_spans(evidence, "evidence")
    span_columns = read_spans(spans, "spans")
    chunk_columns = read_chunks(chunks) if chunks is not None else None
    judgements = _read_judgements(document_judgements)
    columns = [c for c in (evidence_columns, span_columns, chunk_columns) if c is not None]
    judged_docs = list(judgements.docs) if judgements is not None else []
    docs = DocIndex.build(columns, ("document_judgements", judged_docs))
    for column in columns:
        column.doc = docs.code(column.docs)
    lengths = _document_lengths(documents, docs)
    for column in columns:
        check_offsets(column, lengths)
        if column.what != "evidence":
            check_unique_spans(column, len(docs))

    # Judged queries: those with evidence or a document judgement, in byte order of their ids.
    judged_keys = list(compress(evidence_columns.query_keys, (evidence_columns.lengths > 0).tolist()))
    judgement_query = np.zeros(0, dtype=np.int64)
    judgement_doc = np.zeros(0, dtype=np.int64)
    if judgements is not None and len(judgements):
        present = np.bincount(judgements.query_codes, minlength=len(judgements.query_keys)) > 0
        judged_keys += compress(judgements.query_keys, present.tolist())
    query_ids = sorted(set(judged_keys))
    if not query_ids:
        raise InputFormatError(
            "evidence: no query has evidence or a document judgement, so there is nothing to score; "
            "give {query_id: [(doc_id, start, end, grade), ...]} with at least one span"
        )
    index = dict(zip(query_ids, range(len(query_ids))))
    evidence_key_query = _positions(evidence_columns.query_keys, index)
    evidence_query = evidence_key_query[evidence_columns.query]
    if judgements is not None and len(judgements):
        judgement_query = _positions(judgements.query_keys, index)[judgements.query_codes]
        judgement_doc = docs.code(judged_docs)
        if lengths is not None and bool((lengths[judgement_doc] < 0).any()):
            row = int(np.flatnonzero(lengths[judgement_doc] < 0)[0])
            raise InputFormatError(
                f"document_judgements: query {shown_id(query_ids[judgement_query[row]])}: doc "
                f"{shown_id(judged_docs[row])} is not among the documents given; check the doc id or add the document"
            )

    span_key_query = _positions(span_columns.query_keys, index)
    answered = span_columns.lengths > 0
    unjudged = sorted(compress(span_columns.query_keys, (answered & (span_key_query < 0)).tolist()))
    answered_judged = np.bincount(span_key_query[answered & (span_key_query >= 0)], minlength=len(query_ids)) > 0
    unanswered = list(compress(query_ids, (~answered_judged).tolist()))
    ranked = rank_spans(span_columns, span_key_query, len(query_ids), docs.keys)

    grade_keys, grades = _document_grades(
        evidence_columns, evidence_query, judgement_query, judgement_doc,
        judgements.values if judgements is not None else np.zeros(0), len(docs), query_ids, docs,
    )
    return Inputs(
        query_ids=query_ids,
        unjudged=unjudged,
        unanswered=unanswered,
        docs=docs,
        spans=span_columns,
        ranked=ranked,
        evidence_query=evidence_query,
        evidence=evidence_columns,
        grade_keys=grade_keys,
        grades=grades,
        chunks=chunk_columns,
        documents=documents,
    )


def _read_judgements(data: Any):
    """``{qid: {doc_id: grade}}`` read by the engine's reader (ids, numbers and finite grades checked)."""
    if data is None:
        return None
    try:
        return from_nested(data, "judgements")
    except InputFormatError as error:  # the engine says "judgements"; here they are the document judgements
        text = str(error)
        raise InputFormatError("document_" + text if text.startswith("judgements") else text) from None


def _positions(keys: list[str], index: dict[str, int]) -> np.ndarray:
    return np.fromiter(map(index.get, keys, repeat(-1)), dtype=np.int64, count=len(keys))


def _document_lengths(documents: Mapping[str, str] | None, docs: DocIndex) -> np.ndarray | None:
    """Length of each indexed document (-1: not among ``documents``); None without documents."""
    if documents is None:
        return None
    if not isinstance(documents, Mapping):
        raise InputFormatError(f"documents: expected a mapping {{doc_id: text}}, got {type(documents).__name__}")
    lengths = np.full(len(docs), -1, dtype=np.int64)
    for code, doc in enumerate(docs.keys):  # one step per document (not per span)
        text = documents.get(doc)
        if text is None:
            continue
        if not isinstance(text, str):
            raise InputFormatError(
                f"documents: doc {shown_id(doc)}: expected its text as a str, got {type(text).__name__}"
            )
        lengths[code] = len(text)
    return lengths


def _document_grades(
    evidence: SpanColumns,
    evidence_query: np.ndarray,
    judgement_query: np.ndarray,
    judgement_doc: np.ndarray,
    judgement_grade: np.ndarray,
    n_docs: int,
    query_ids: list[str],
    docs: DocIndex,
) -> tuple[np.ndarray, np.ndarray]:
    """Document grades: explicit, else the highest evidence grade in the document; keys sorted."""
    assert evidence.doc is not None
    evidence_keys, evidence_grades = best_per_key(evidence_query * n_docs + evidence.doc, evidence.value)
    explicit = judgement_query * n_docs + judgement_doc
    held = lookup(evidence_keys, evidence_grades, explicit, 0.0) > 0  # the document holds evidence
    bad = held & (judgement_grade == 0)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        query, doc = query_ids[judgement_query[row]], docs.keys[judgement_doc[row]]
        span = int(np.flatnonzero((evidence_query == judgement_query[row]) & (evidence.doc == judgement_doc[row]))[0])
        shown = chunk_id(doc, int(evidence.start[span]), int(evidence.end[span]))
        raise InputFormatError(
            f"document_judgements: query {shown_id(query)}, doc {shown_id(doc)}: grade 0, but the document holds "
            f"evidence for the query ({evidence.place(span, with_doc=False)}: {shown_id(shown)}); "
            "a document with evidence is relevant: remove the grade 0 or the evidence"
        )
    only_evidence = ~np.isin(evidence_keys, explicit)
    keys = np.concatenate((explicit, evidence_keys[only_evidence]))
    grades = np.concatenate((judgement_grade.astype(np.float64), evidence_grades[only_evidence]))
    order = np.argsort(keys, kind="stable")
    return keys[order], grades[order]
