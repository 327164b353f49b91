"""The detailed queries of a document dataset's report: each retrieved chunk with its evidence in bold.

For each detailed query (rag_eval._report.format.select_detailed_queries) and each retriever:
the top chunks in rank order with their document, offsets, score and the query's evidence inside
them in bold (rag_eval._report.emphasis), the evidence no chunk covered, and the query's evidence
recall, precision and IoU at those chunks, worked out in characters. What the chunks cover comes
from rag_eval._scoring.evidence (the metrics' own rule), each value from its family's kernel, and
how many chunks are shown from the main metric's record (:meth:`Metric.ranks_shown`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rag_eval._compare.context_size import chunks_read
from rag_eval._compare.context_size import ranked_spans as ranked_chunk_spans
from rag_eval._core.spans import parse_chunk_id
from rag_eval._report.emphasis import Interval, clip, cut_window, evidence_by_doc, marked_text, total_length, union
from rag_eval._report.format import (
    code_span,
    detail_intro,
    detailed_outcomes,
    detailed_outcomes_note,
    escape_inline,
    fmt,
    fmt_grade,
    select_detailed_queries,
)
from rag_eval._scoring.evidence import EvidenceCoverage, covered_evidence
from rag_eval._scoring.metrics.evidence_kernels import EvidenceCounts
from rag_eval._scoring.metrics.measures import FAMILIES, parse_metric

if TYPE_CHECKING:  # annotations only
    from rag_eval._run.outcome import RetrieverOutcome, RunOutcome

__all__ = [
    "MAX_LISTED",
    "ChunksRead",
    "Reading",
    "chunks_and_evidence",
    "detailed_lines",
    "query_chunks",
    "ranked_spans",
    "reading",
    "shown_cutoff",
]

Span = tuple[str, int, int, float]


# At most this many chunks of one retriever for one query are listed (a budget of 100,000 tokens could
# read hundreds); the numbers line still counts every chunk read, and report.html lists them all.
MAX_LISTED = 20


@dataclass(frozen=True)
class Reading:
    """What the detailed queries show of each ranking: the top ``k`` chunks, or those that fit a budget of ``k``."""

    k: int
    unit: str | None = None

    @property
    def chunks(self) -> str:
        """"the top 5 chunks" or "the chunks that fit 1,000 tokens"."""
        return f"the top {self.k} chunks" if self.unit is None else f"the chunks that fit {self.k:,} {self.unit}"

    @property
    def heading(self) -> str:
        """"top 5" or "within 1,000 tokens"."""
        return f"top {self.k}" if self.unit is None else f"within {self.k:,} {self.unit}"


@dataclass(frozen=True)
class ChunksRead:
    """One query's chunks as the main metric reads them (best first) and what they cover of its evidence."""

    chunks: list[Span]
    coverage: EvidenceCoverage

    @property
    def covered(self) -> int:
        """Characters of evidence inside the chunks read."""
        return sum(end - start for _, start, end in self.coverage.covered)

    @property
    def evidence(self) -> int:
        """Characters of evidence in all (covered and missed); 0: the query has no evidence span."""
        return self.covered + sum(end - start for _, start, end in self.coverage.missed)

    @property
    def context(self) -> int:
        """Characters of the chunks read (a chunk counted each time it is read)."""
        return sum(end - start for _, start, end, _ in self.chunks)


def chunks_and_evidence(
    outcome: RetrieverOutcome,
    qids: Sequence[str],
    documents: Mapping[str, str],
    evidence_of: Mapping[str, Sequence[Any]],
    read: Reading,
    token_cache: dict[tuple[str, int, int], int] | None = None,
) -> dict[str, ChunksRead]:
    """Per query of ``qids``: the chunks of ``outcome`` that ``read`` takes (its top k, or those that fit its
    budget: :func:`rag_eval._compare.context_size.chunks_read`) and the evidence they cover and miss, by the
    evidence metrics' own rule (:func:`rag_eval._scoring.evidence.covered_evidence`).

    The one home of what report.md's detailed queries and report.html's drill-down work out.
    """
    cache: dict[tuple[str, int, int], int] = {} if token_cache is None else token_cache
    shown = {q: chunks_read(ranked_spans(outcome, q), documents, read.k, read.unit, cache) for q in qids}
    with_evidence = {q: list(evidence_of.get(q, ())) for q in qids if evidence_of.get(q)}
    found: dict[str, EvidenceCoverage] = {}
    if with_evidence:
        deepest = max((len(shown[q]) for q in with_evidence), default=0)
        # Each query's chunks are cut already: a k of the longest list cuts nothing more.
        found = covered_evidence(with_evidence, {q: shown[q] for q in with_evidence}, max(deepest, 1))
    out = {}
    for q in qids:
        coverage = found.get(q)
        if coverage is None and q in with_evidence:  # no piece reported: every piece of the evidence is missed
            pieces = evidence_by_doc(with_evidence[q])
            coverage = EvidenceCoverage((), tuple((doc, s, e) for doc, spans in pieces.items() for s, e in spans))
        out[q] = ChunksRead(shown[q], coverage if coverage is not None else EvidenceCoverage((), ()))
    return out


def shown_cutoff(main: str, top_k: int) -> int:
    """How many chunks the detailed queries show: the main metric's k when it counts chunks, else top_k."""
    return parse_metric(main).ranks_shown(top_k)


def reading(main: str, top_k: int) -> Reading:
    """The chunks the main metric reads, which the detailed queries show: its budget, or its cutoff."""
    metric = parse_metric(main)
    if metric.budget_unit is not None and metric.k is not None:
        return Reading(metric.k, metric.budget_unit)
    return Reading(shown_cutoff(main, top_k))


def detailed_lines(run: RunOutcome, main: str) -> list[str]:
    """For each detailed query and retriever: the chunks with their evidence in bold, what was missed, the numbers."""
    config = run.config.model
    chosen, worst = select_detailed_queries(run, main, config.report.detailed_queries)
    if not chosen:
        return []
    read = reading(main, config.top_k)
    limit = config.report.passage_chars
    lines = [
        f"## 🧩 Retrieved chunks and their evidence ({read.heading})",
        "",
        detail_intro(run, main, chosen, worst),
        "",
        (
            "Each query's top chunks in rank order, with their document and offsets; the query's evidence inside "
            f"a chunk is in **bold**, and the Evidence column counts its characters. A chunk longer than {limit} "
            "characters is cut around its evidence (… marks a cut; the Offsets cell says which characters are shown)."
        ),
        "",
    ]
    no_relevant = run.outcomes[0].results.options.get("no_relevant", "skip")
    outcomes = detailed_outcomes(run, main)
    lines += detailed_outcomes_note(run, main, outcomes, "the chunks")
    for qid in chosen:
        query = run.dataset.queries.get(qid)
        evidence = run.dataset.evidence.get(qid, ())
        lines += [f"### {escape_inline(qid)}: “{escape_inline(query.text if query else '')}”", ""]
        lines += [_evidence_line(evidence), ""]
        for outcome in outcomes:
            lines += query_chunks(
                outcome, qid, run.dataset.documents, evidence, read, limit, len(run.outcomes) > 1, no_relevant
            )
    return lines




def _evidence_line(evidence: Sequence[Any]) -> str:
    if not evidence:
        return "Evidence: none (the query is judged by document only)."
    by_doc: dict[str, list[Any]] = {}
    for span in sorted(evidence, key=lambda s: (s.doc, s.start, s.end)):
        by_doc.setdefault(span.doc, []).append(span)
    chars = sum(total_length(union((s.start, s.end) for s in spans)) for spans in by_doc.values())
    parts = []
    for doc, spans in by_doc.items():
        where = ", ".join(
            f"[{s.start}, {s.end})" + ("" if s.grade == 1 else f" grade {fmt_grade(s.grade)}") for s in spans
        )
        parts.append(f"{code_span(doc)} {where}")
    count = f"{len(evidence)} span{'' if len(evidence) == 1 else 's'}"
    return f"Evidence ({count}, {chars:,} characters): " + "; ".join(parts) + "."


def ranked_spans(outcome: RetrieverOutcome, qid: str) -> list[tuple[str, int, int, float]]:
    """The spans ``outcome`` retrieved for ``qid``, best first by the one ranking rule (score desc, chunk id desc)."""
    if outcome.spans is not None:
        items = outcome.spans.get(qid, [])
    else:  # a record without spans: its ranking is keyed by chunk id
        items = []
        for key, score in outcome.ranking.get(qid, {}).items():
            span = parse_chunk_id(key)
            if span is not None:
                items.append((*span, score))
    return ranked_chunk_spans(items)


def query_chunks(
    outcome: RetrieverOutcome,
    qid: str,
    documents: Mapping[str, str],
    evidence: Sequence[Any],
    read: Reading | int,
    limit: int,
    multiple: bool = True,
    no_relevant: str = "skip",
) -> list[str]:
    """One retriever's chunks for one query as the main metric reads them (``read``: its top k or its budget;
    an int: the top k), the evidence they missed and its evidence numbers; at most :data:`MAX_LISTED` rows."""
    read = Reading(read) if isinstance(read, int) else read
    title = outcome.chunking.title if outcome.chunking else None
    lines = (
        [f"#### {escape_inline(outcome.label)}" + (f" ({escape_inline(title)})" if title else ""), ""]
        if multiple
        else []
    )
    retrieved = ranked_spans(outcome, qid)
    found = chunks_and_evidence(outcome, [qid], documents, {qid: evidence}, read)[qid]
    shown = found.chunks
    wanted = evidence_by_doc(evidence)
    if not shown and retrieved:  # a budget smaller than the first chunk (docs/semantics.md: nothing is read)
        lines += [f"Nothing is read: the first chunk alone is larger than {read.k:,} {read.unit}.", ""]
    elif not shown:
        lines += ["Nothing was retrieved for this query.", ""]
    else:
        lines += ["| Rank | Document | Offsets | Score | Evidence | Text |", "|---:|---|---|---:|---:|---|"]
        for rank, (doc, start, end, score) in enumerate(shown[:MAX_LISTED], start=1):
            text = documents.get(doc, "")
            marks = clip(wanted.get(doc, []), start, end)
            window = cut_window(text, start, end, marks, limit)
            offsets = f"[{start}, {end})"
            if window != (start, end):
                offsets += f", shown [{window[0]}, {window[1]})"
            cell = marked_text(
                text, window[0], window[1], marks, cut_before=window[0] > start, cut_after=window[1] < end
            )
            lines.append(
                f"| {rank} | {code_span(doc, in_table=True)} | {offsets} | {_score(score)} | "
                f"{total_length(marks):,} | {cell} |"
            )
        if len(shown) > MAX_LISTED:
            lines.append(f"| … | {len(shown) - MAX_LISTED:,} more chunks, counted below (report.html lists them) "
                         "| | | | |")
        lines.append("")
    if wanted:
        lines += _missed_lines(wanted, found.coverage.missed, documents, limit, read.chunks)
    lines += [_numbers_line(found, no_relevant), ""]
    return lines


def _missed_lines(
    wanted: Mapping[str, list[Interval]],
    missed_pieces: Sequence[tuple[str, int, int]],
    documents: Mapping[str, str],
    limit: int,
    chunks: str,
) -> list[str]:
    missed = []
    for doc, start, end in missed_pieces:
        piece = next((p for p in wanted.get(doc, []) if p[0] <= start and end <= p[1]), (start, end))
        text = documents.get(doc, "")
        window = cut_window(text, start, end, [], limit)
        quoted = marked_text(text, window[0], window[1], [], cut_before=False, cut_after=window[1] < end)
        part = "" if (start, end) == piece else f", part of the evidence [{piece[0]}, {piece[1]})"
        missed.append(f"- {code_span(doc)} [{start}, {end}){part}: “{quoted}”")
    if not missed:
        return [f"Every character of the evidence lies inside {chunks}.", ""]
    return [f"Evidence not inside {chunks}:", "", *missed, ""]


def _numbers_line(found: ChunksRead, no_relevant: str) -> str:
    """The query's evidence recall, precision and IoU at the chunks shown, worked out in characters.

    The values are the evidence families' own kernels (their records) applied to the counts shown.
    """
    covered, total, context = found.covered, found.evidence, found.context
    shown = found.chunks
    at = f"At the {len(shown)} chunk{'' if len(shown) == 1 else 's'} shown"
    if total == 0:
        effect = "scored 0 (no_relevant: zero)" if no_relevant == "zero" else "left out of the means"
        return f"{at}: no evidence span for this query, so its evidence metrics are {effect}."
    counts = EvidenceCounts(*(np.array([float(n)]) for n in (covered, total, context)))
    value = {name: float(FAMILIES[name].kernel(counts)[0]) for name in ("evidence_recall", "evidence_precision",
                                                                        "evidence_iou")}
    recall = f"evidence recall = {covered:,} / {total:,} = **{fmt(value['evidence_recall'])}**"
    precision = (
        f"precision = {covered:,} / {context:,} = **{fmt(value['evidence_precision'])}**"
        if context
        else "precision = **0.0000** (nothing retrieved)"
    )
    iou = f"IoU = {covered:,} / ({context:,} + {total - covered:,}) = **{fmt(value['evidence_iou'])}**"
    return f"{at}: {recall}; {precision}; {iou}."


def _score(score: float) -> str:
    return f"{score:.4f}" if math.isfinite(score) else str(score)
