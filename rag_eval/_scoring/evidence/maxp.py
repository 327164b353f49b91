"""Document and chunk grades, and the ranked, judged input of the metric kernels at those levels.

- Document grade of (query, document): the explicit document judgement, else the highest
  grade of the query's evidence in the document, else unjudged (an explicit 0 on a
  document holding evidence is refused by the caller, rag_eval._scoring.evidence.inputs).
- Document level (MaxP): each query's chunk ranking collapsed to documents, each at the
  rank of its best-ranked chunk (its later chunks removed); the ranks are given to the
  kernels directly, so no tie rule can reorder the collapsed list.
- Chunk level: a chunk's grade is the highest grade of the evidence spans it overlaps by
  at least ``min_evidence_fraction`` of the evidence span's length (one character when
  0), else 0; chunks of documents not judged for the query are unjudged. The ideal
  ranking is built from every chunk of the chunking in the query's judged documents.

Both produce a :class:`~rag_eval._scoring.engine.JoinedRun` for rag_eval._scoring.evaluate.score, the
engine that computes every passage metric: the numbers follow from one implementation.
"""

from __future__ import annotations

import numpy as np

from rag_eval._scoring.engine import JoinedRun
from rag_eval._scoring.evidence.ranks import RankedSpans
from rag_eval._scoring.metrics.kernels import RankedJudgedRun


def best_per_key(key: np.ndarray, grade: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct keys sorted, the highest grade of each)."""
    if key.size == 0:
        return key.astype(np.int64), grade.astype(np.float64)
    order = np.lexsort((grade, key))
    key, grade = key[order], grade[order]
    last = np.ones(key.size, dtype=bool)
    np.not_equal(key[1:], key[:-1], out=last[:-1])
    return key[last], grade[last]


def lookup(keys: np.ndarray, values: np.ndarray, wanted: np.ndarray, missing: float) -> np.ndarray:
    """``values`` of ``wanted`` in the sorted ``keys``; ``missing`` where absent."""
    if keys.size == 0:
        return np.full(wanted.shape, missing, dtype=np.float64)
    where = np.minimum(np.searchsorted(keys, wanted), keys.size - 1)
    return np.where(keys[where] == wanted, values[where], missing)


def collapse(ranked: RankedSpans, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows of ``ranked`` kept, their document rank): each document at the rank of its best chunk."""
    key = ranked.query * n_docs + ranked.doc
    _, first = np.unique(key, return_index=True)  # a stable sort: the first row of a key is its best rank
    kept = np.sort(first)
    query = ranked.query[kept]
    starts = np.searchsorted(query, np.arange(ranked.n_queries), side="left")
    return kept, np.arange(kept.size, dtype=np.int64) - starts[query]


def document_run(
    ranked: RankedSpans,
    grade_keys: np.ndarray,
    grades: np.ndarray,
    n_docs: int,
    query_ids: list[str],
    unjudged: list[str],
    unanswered: list[str],
) -> JoinedRun:
    """The collapsed ranking joined with document grades (``grade_keys`` = query * n_docs + doc, sorted)."""
    kept, pos = collapse(ranked, n_docs)
    query = ranked.query[kept]
    grade = lookup(grade_keys, grades, query * n_docs + ranked.doc[kept], np.nan)
    judged = ~np.isnan(grade)
    data = RankedJudgedRun(
        n_queries=ranked.n_queries,
        row_query=query[judged],
        row_pos=pos[judged],
        row_grade=grade[judged],
        judgement_query=grade_keys // n_docs,
        judgement_grade=grades,
    )
    return JoinedRun(data, query_ids, unjudged, unanswered)


def chunk_grades(
    chunk_doc: np.ndarray,
    chunk_start: np.ndarray,
    chunk_end: np.ndarray,
    evidence: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    min_fraction: float,
    width: int,
) -> tuple[np.ndarray, np.ndarray]:
    """(query * n_chunks + chunk, grade) of every chunk that overlaps evidence enough, keys sorted.

    Chunks are sorted by (doc, start). Only the chunks that start before an evidence span ends
    and after (its start - the longest chunk) can overlap it: each span looks at that range.
    """
    query, doc, start, end, grade = evidence
    n_chunks = chunk_doc.size
    if n_chunks == 0 or query.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    line = chunk_doc * width + chunk_start
    longest = int((chunk_end - chunk_start).max())
    low = np.searchsorted(line, doc * width + np.maximum(start - longest + 1, 0), side="left")
    high = np.searchsorted(line, doc * width + end, side="left")
    count = np.maximum(high - low, 0)
    total = int(count.sum())
    span = np.repeat(np.arange(query.size), count)
    chunk = np.repeat(low - (np.cumsum(count) - count), count) + np.arange(total, dtype=np.int64)
    overlap = np.minimum(chunk_end[chunk], end[span]) - np.maximum(chunk_start[chunk], start[span])
    enough = (overlap > 0) & (overlap >= min_fraction * (end[span] - start[span]))
    span, chunk = span[enough], chunk[enough]
    return best_per_key(query[span] * n_chunks + chunk, grade[span])


def chunk_run(
    ranked: RankedSpans,
    chunk_of_row: np.ndarray,
    chunk_doc: np.ndarray,
    overlap_keys: np.ndarray,
    overlap_grades: np.ndarray,
    grade_keys: np.ndarray,
    n_docs: int,
    query_ids: list[str],
    unjudged: list[str],
    unanswered: list[str],
) -> JoinedRun:
    """The chunk ranking joined with chunk grades; every chunk of a judged document is a judgement."""
    n_chunks = chunk_doc.size
    judged_query, judged_doc = grade_keys // n_docs, grade_keys % n_docs
    first = np.searchsorted(chunk_doc, np.arange(n_docs), side="left")
    last = np.searchsorted(chunk_doc, np.arange(n_docs), side="right")
    count = (last - first)[judged_doc]
    total = int(count.sum())
    query = np.repeat(judged_query, count)
    chunk = np.repeat(first[judged_doc] - (np.cumsum(count) - count), count) + np.arange(total, dtype=np.int64)
    keys = query * n_chunks + chunk  # sorted: judged (query, doc) keys are sorted, chunks by doc
    order = np.argsort(keys, kind="stable")
    keys, query = keys[order], query[order]
    grades = lookup(overlap_keys, overlap_grades, keys, 0.0)
    row_grade = lookup(keys, grades, ranked.query * n_chunks + chunk_of_row, np.nan)
    judged = ~np.isnan(row_grade)
    data = RankedJudgedRun(
        n_queries=ranked.n_queries,
        row_query=ranked.query[judged],
        row_pos=ranked.pos[judged],
        row_grade=row_grade[judged],
        judgement_query=query,
        judgement_grade=grades,
    )
    return JoinedRun(data, query_ids, unjudged, unanswered)
