"""The run report's sections for a dataset of documents (pure, no I/O).

A document dataset is judged by document grades and evidence spans, and each
retriever reads its own chunking (docs/semantics.md, "Documents, chunks and evidence").
The report then says, in place of the passage sections of rag_eval._report.markdown:

- the counts of documents, characters and evidence, and each retriever's chunking
  (method, size, overlap, chunks, mean length, and how many chunks the encoder cuts);
- the document and evidence metrics in one table (comparable across chunkings), the
  chunk-level metrics apart (each chunking builds its own ideal ranking, so they are not);
- for the detailed queries, each retrieved chunk in rank order with its document, its
  offsets and the query's evidence inside it in bold, the evidence no chunk covered, and
  the query's evidence recall, precision and IoU at those chunks, worked out in characters.

The per-query evidence numbers are recomputed here from the spans shown (a handful of
intervals per query), as the passage report recomputes nDCG term by term: the reader
sees the arithmetic, and tests check it against rag_eval._scoring.evidence.
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rag_eval._core.ranking import ranked
from rag_eval._core.spans import chunk_id, parse_chunk_id
from rag_eval._models.embeddings.truncation import truncation_warning
from rag_eval._report.format import (
    code_span,
    count_queries,
    detail_intro,
    escape_cell,
    escape_inline,
    fmt,
    fmt_grade,
    means_sentence,
    select_detailed_queries,
    semantics_phrases,
)
from rag_eval._scoring.evidence import EvidenceCoverage, covered_evidence
from rag_eval._scoring.metrics.measures import parse_metric

if TYPE_CHECKING:  # annotations only
    from rag_eval._data.datasets import Dataset
    from rag_eval._run.outcome import RetrieverOutcome, RunOutcome
    from rag_eval._scoring.evidence import EvidenceCoverage

Interval = tuple[int, int]
MISSING = "–"  # a metric not computed for a retriever (said under the table)
# A cut moves to the nearest space within this many characters, so that words stay whole.
WORD_SLACK = 20
_WHITESPACE = re.compile(r"\s+")
_OWN_REASON = "it returns its own spans, and chunk-level metrics need a chunking to build the ideal ranking from"


# ---- header ------------------------------------------------------------------------------------


def counts_line(dataset: Dataset) -> str:
    """The header's line of counts: queries, documents and their characters, evidence spans."""
    counts = dataset.summary()
    return (
        f"- **Queries:** {len(dataset.queries)} ({len(dataset.judged_query_ids)} with judgements, "
        f"{counts['queries_with_evidence']} with evidence), **documents:** {counts['documents']:,} "
        f"({counts['document_characters']:,} characters), **evidence spans:** {counts['evidence_spans']:,}, "
        f"**document grades:** {counts['judgements']:,}"
    )


def semantics_lines(options: Mapping[str, Any], min_evidence_fraction: float) -> list[str]:
    """What the numbers of a document dataset mean: offsets, ranking of chunks, the three levels of metrics."""

    gain_text, policy, aggregation = semantics_phrases(options, "left out of that metric's mean and listed")
    fraction = (
        "one shared character is enough"
        if min_evidence_fraction == 0
        else f"at least {min_evidence_fraction:g} of the span's characters"
    )
    return [
        "- Offsets are characters (code points) of a document, `[start, end)`, end excluded.",
        (
            "- Chunks are ranked like passages: score descending, ties by chunk id "
            "(`<document>#<start>-<end>`) descending."
        ),
        (
            "- Document metrics (`doc_`): the chunk ranking collapsed to documents, each at the rank of its "
            "best chunk (MaxP); a document's grade is its explicit judgement, else the highest grade of the "
            "query's evidence in it."
        ),
        (
            "- Evidence metrics: recall = characters of evidence inside the top k chunks / characters of evidence; "
            "precision = the same characters / characters of the top k chunks (a chunk counted each time it is "
            "retrieved); IoU = covered / (characters of the chunks + evidence not covered). Grades play no part; "
            "a budget (`@2000chars`, `@512tokens`) takes the best chunks that fit it instead of k."
        ),
        (
            "- Chunk-level metrics (no prefix): a chunk's grade is the highest grade of the evidence it overlaps "
            f"({fraction}); the ideal ranking is built from the chunking's own chunks."
        ),
        f"- nDCG: {gain_text}; discount 1 / log₂(rank + 1).",
        (
            "- Binary metrics (precision, recall, MRR, MAP, hit rate): "
            f"relevant = grade ≥ {options.get('relevance_threshold', 1):g}."
        ),
        (
            "- A judged query with nothing relevant (no evidence span for evidence metrics, no relevant document "
            f"for `doc_` metrics): {policy}. A judged query with nothing retrieved scores 0."
        ),
        f"- Dataset value: {aggregation}.",
    ]


def chunking_lines(run: RunOutcome) -> list[str]:
    """The "Chunking" table: what each retriever indexed, and a warning per retriever whose encoder cuts chunks."""
    outcomes = run.outcomes
    if not outcomes:
        return []
    truncation = any(o.description.get("truncation") for o in outcomes)
    lines = [
        "**Chunking**",
        "",
        "| Retriever | Chunking | Method | Size | Overlap | Unit | Chunks | Mean length |"
        + (" Truncated by the encoder |" if truncation else ""),
        "|---|---|---|---:|---:|---|---:|---|" + ("---:|" if truncation else ""),
    ]
    warnings = []
    for outcome in outcomes:
        record = outcome.chunking
        description: Mapping[str, Any] = record.description if record else {}
        summary: Mapping[str, Any] = record.summary if record else {}
        cells = [
            escape_cell(outcome.label),
            escape_cell(record.title) if record else MISSING,
            escape_cell(_method(description)),
            _number(description.get("size")),
            _number(description.get("overlap")),
            escape_cell(_unit(description)),
            _chunk_count(summary),
            escape_cell(_mean_length(summary)),
        ]
        if truncation:
            cells.append(_truncated_cell(outcome.description.get("truncation")))
        lines.append("| " + " | ".join(cells) + " |")
        warning = truncation_note(outcome)
        if warning:
            warnings.append(warning)
    lines.append("")
    for warning in warnings:
        lines += [f"⚠️ {escape_inline(warning)}", ""]
    return lines


def truncation_note(outcome: RetrieverOutcome) -> str | None:
    """The runner's truncation warning of ``outcome`` (None when the encoder cuts nothing or was not asked)."""

    record = outcome.chunking
    what = "documents" if record is not None and record.kind == "documents" else "chunks"
    return truncation_warning(outcome.label, outcome.description.get("truncation"), what)


def _method(description: Mapping[str, Any]) -> str:
    method = str(description.get("method") or MISSING)
    library = description.get("library")
    return f"{method} ({library})" if library else method


def _unit(description: Mapping[str, Any]) -> str:
    unit, tokenizer = description.get("unit"), description.get("tokenizer")
    if unit and tokenizer and unit not in ("chars", "characters"):  # a tokenizer says what a token is
        return f"{unit} ({tokenizer})"
    return str(unit or tokenizer or MISSING)


def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return MISSING if value in (None, "") else escape_cell(str(value))
    return f"{value:,}" if isinstance(value, int) else f"{value:,g}"


def _chunk_count(summary: Mapping[str, Any]) -> str:
    if "chunks" not in summary:
        return MISSING
    text = f"{summary['chunks']:,}"
    if summary.get("counted"):
        text += f" ({escape_cell(summary['counted'])})"
    return text


def _mean_length(summary: Mapping[str, Any]) -> str:
    if summary.get("mean_chars") is None:  # no chunks: nothing to average
        return MISSING
    text = f"{summary['mean_chars']:,.1f} chars"
    if summary.get("min_chars") is not None and summary.get("max_chars") is not None:
        text += f" ({summary['min_chars']:,}–{summary['max_chars']:,})"
    if summary.get("mean_tokens") is not None:
        text += f", {summary['mean_tokens']:,.1f} tokens"
        if summary.get("max_tokens") is not None:
            text += f" (max {summary['max_tokens']:,})"
    return text


def _truncated_cell(report: Mapping[str, Any] | None) -> str:
    if not report:
        return MISSING
    return (
        f"{report['share']:.1%} ({report['truncated']:,} of {report['passages']:,} over "
        f"{report['max_seq_length']} tokens)"
    )


# ---- summary -----------------------------------------------------------------------------------


def _comparable(name: str) -> bool:
    metric = parse_metric(name)
    return metric.is_document_level or metric.is_evidence


def summary_lines(run: RunOutcome) -> list[str]:
    """Document and evidence metrics per retriever, chunk-level metrics apart, what was left out, notes."""
    outcomes = run.outcomes
    lines = ["## 📊 Summary", ""]
    if not outcomes:
        return lines + ["No retriever was run.", ""]
    metrics = run.config.model.metrics
    comparable = [m for m in metrics if _comparable(m)]
    chunk_level = [m for m in metrics if not _comparable(m)]
    if comparable:
        lines += [
            "**Documents and evidence**: every retriever is scored against the same judgements, whatever its chunking.",
            "",
        ]
        lines += _metric_table(outcomes, comparable, mark_best=True) + [""]
    if chunk_level:
        lines += [
            "**Chunk level**: not comparable across chunkings, because each chunking's ideal ranking is built "
            "from its own chunks (docs/semantics.md); compare these only between retrievers that read the same chunking.",
            "",
        ]
        lines += _metric_table(outcomes, chunk_level, mark_best=False) + [""]
    marked = len(outcomes) > 1 and bool(comparable)
    bold = "; **bold** = best in its column" + (" (documents and evidence only)" if chunk_level else "")
    text = [means_sentence(outcomes[0].results) + (bold if marked else "") + "."]
    text += _missing_sentences(outcomes, metrics)
    text += _scored_sentences(run, metrics)
    lines += [text[0], " ".join(text[1:])] if len(text) > 1 else text
    notes = [(o, note) for o in outcomes for note in o.notes if note != truncation_note(o)]
    if notes:
        lines += ["", "**Notes**", ""]
        lines += [f"- {escape_inline(note)}" for _, note in notes]
    return lines + [""]


def _metric_table(outcomes: Sequence[RetrieverOutcome], metrics: Sequence[str], mark_best: bool) -> list[str]:
    best: dict[str, str | None] = {}
    for name in metrics:
        values = [
            o.results.aggregate[name]
            for o in outcomes
            if name in o.results.aggregate and not math.isnan(o.results.aggregate[name])
        ]
        best[name] = fmt(max(values)) if values else None
    lines = [
        "| Retriever | Chunking | " + " | ".join(metrics) + " |",
        "|---|---|" + "---:|" * len(metrics),
    ]
    for outcome in outcomes:
        cells = []
        for name in metrics:
            if name not in outcome.results.aggregate:
                cells.append(MISSING)
                continue
            text = fmt(outcome.results.aggregate[name])
            # As in the passage summary: compare printed values, and only quality metrics have a best.
            if mark_best and len(outcomes) > 1 and parse_metric(name).uses_relevance and text == best[name]:
                text = f"**{text}**"
            cells.append(text)
        title = outcome.chunking.title if outcome.chunking else MISSING
        lines.append(f"| {escape_cell(outcome.label)} | {escape_cell(title)} | " + " | ".join(cells) + " |")
    return lines


def _missing_sentences(outcomes: Sequence[RetrieverOutcome], metrics: Sequence[str]) -> list[str]:
    """Why a cell shows "–": one sentence per retriever that lacks some of the config's metrics."""
    sentences = []
    for outcome in outcomes:
        missing = [m for m in metrics if m not in outcome.results.aggregate]
        if not missing:
            continue
        own = outcome.chunking is not None and outcome.chunking.kind == "own"
        reason = _OWN_REASON if own and not any(_comparable(m) for m in missing) else "they are not in its results"
        sentences.append(
            f"{MISSING} = not computed for {escape_inline(outcome.label)} ({', '.join(missing)}): {reason}."
        )
    return sentences


def _nothing(name: str) -> str:
    metric = parse_metric(name)
    if metric.is_evidence:
        return "no evidence span"
    return "no relevant document" if metric.is_document_level else "no relevant chunk"


def _scored_sentences(run: RunOutcome, metrics: Sequence[str]) -> list[str]:
    outcomes = run.outcomes
    unjudged = run.dataset.unjudged_query_ids
    sentences = [f"Queries scored: {len(outcomes[0].results.query_ids)}."]
    if unjudged:
        sentences.append(
            f"Not scored: {count_queries(len(unjudged))} without judgements ({escape_inline(', '.join(unjudged))})."
        )
    # Which queries a metric leaves out depends on the judgements alone, except for chunk-level metrics
    # with min_evidence_fraction > 0 (a chunking may have no chunk that covers enough): then per retriever.
    groups: dict[tuple[tuple[str, ...], str, str], list[str]] = {}
    for name in metrics:
        per = [(o.label, tuple(o.results.left_out.get(name, ()))) for o in outcomes if name in o.results.aggregate]
        distinct = {ids for _, ids in per}
        for label, ids in per if len(distinct) > 1 else per[:1]:
            if ids:
                groups.setdefault((ids, _nothing(name), label if len(distinct) > 1 else ""), []).append(name)
    for (ids, nothing, label), names in groups.items():
        who = f" for {escape_inline(label)}" if label else ""
        sentences.append(
            f"Left out of {', '.join(names)}{who}: {count_queries(len(ids))} with {nothing} ({escape_inline(', '.join(ids))})."
        )
    for outcome in outcomes:
        unanswered = outcome.results.unanswered_queries
        if unanswered:
            one = len(unanswered) == 1
            sentences.append(
                f"{escape_inline(outcome.label)} retrieved nothing for {count_queries(len(unanswered), 'judged')}; "
                + ("it scores 0 in every mean it enters." if one else "they score 0 in every mean they enter.")
            )
    return sentences


def per_query_missing_note(main: str) -> str:
    """What "n/a" means in the per-query table of a document dataset."""
    return f"n/a = {_nothing(main)} for the query (left out of the mean)."


# ---- detailed queries ----------------------------------------------------------------------------


def shown_cutoff(main: str, top_k: int) -> int:
    """How many chunks the detailed queries show: the main metric's k when it counts chunks, else top_k."""
    metric = parse_metric(main)
    if metric.k is not None and metric.budget_unit is None:
        return min(metric.k, top_k)
    return top_k


def detailed_lines(run: RunOutcome, main: str) -> list[str]:
    """For each detailed query and retriever: the chunks with their evidence in bold, what was missed, the numbers."""
    config = run.config.model
    chosen, worst = select_detailed_queries(run, main, config.report.detailed_queries)
    if not chosen:
        return []
    k = shown_cutoff(main, config.top_k)
    limit = config.report.passage_chars
    lines = [
        f"## 🧩 Retrieved chunks and their evidence (top {k})",
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
    for qid in chosen:
        query = run.dataset.queries.get(qid)
        evidence = run.dataset.evidence.get(qid, ())
        lines += [f"### {escape_inline(qid)}: “{escape_inline(query.text if query else '')}”", ""]
        lines += [_evidence_line(evidence), ""]
        for outcome in run.outcomes:
            lines += query_chunks(
                outcome, qid, run.dataset.documents, evidence, k, limit, len(run.outcomes) > 1, no_relevant
            )
    return lines


def _evidence_line(evidence: Sequence[Any]) -> str:
    if not evidence:
        return "Evidence: none (the query is judged by document only)."
    by_doc: dict[str, list[Any]] = {}
    for span in sorted(evidence, key=lambda s: (s.doc, s.start, s.end)):
        by_doc.setdefault(span.doc, []).append(span)
    chars = sum(_length(_union((s.start, s.end) for s in spans)) for spans in by_doc.values())
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
    by_id = {chunk_id(doc, start, end): (doc, start, end, float(score)) for doc, start, end, score in items}
    return [by_id[key] for key, _ in ranked({key: span[3] for key, span in by_id.items()})]


def query_chunks(
    outcome: RetrieverOutcome,
    qid: str,
    documents: Mapping[str, str],
    evidence: Sequence[Any],
    k: int,
    limit: int,
    multiple: bool = True,
    no_relevant: str = "skip",
) -> list[str]:
    """One retriever's top ``k`` chunks for one query, the evidence they missed and its evidence numbers."""
    title = outcome.chunking.title if outcome.chunking else None
    lines = (
        [f"#### {escape_inline(outcome.label)}" + (f" ({escape_inline(title)})" if title else ""), ""]
        if multiple
        else []
    )
    shown = ranked_spans(outcome, qid)[:k]
    wanted = _evidence_by_doc(evidence)
    if not shown:
        lines += ["Nothing was retrieved for this query.", ""]
    else:
        lines += ["| Rank | Document | Offsets | Score | Evidence | Text |", "|---:|---|---|---:|---:|---|"]
        for rank, (doc, start, end, score) in enumerate(shown, start=1):
            text = documents.get(doc, "")
            marks = _clip(wanted.get(doc, []), start, end)
            window = cut_window(text, start, end, marks, limit)
            offsets = f"[{start}, {end})"
            if window != (start, end):
                offsets += f", shown [{window[0]}, {window[1]})"
            cell = marked_text(
                text, window[0], window[1], marks, cut_before=window[0] > start, cut_after=window[1] < end
            )
            lines.append(
                f"| {rank} | {code_span(doc, in_table=True)} | {offsets} | {_score(score)} | "
                f"{_length(marks):,} | {cell} |"
            )
        lines.append("")
    coverage = _coverage(evidence, shown)
    if wanted:
        lines += _missed_lines(wanted, coverage.missed, documents, limit, k)
    lines += [_numbers_line(coverage, shown, no_relevant), ""]
    return lines


def _coverage(evidence: Sequence[Any], shown: Sequence[tuple[str, int, int, float]]) -> EvidenceCoverage:
    """What the shown chunks cover of the evidence, by the evidence metrics' own rule (rag_eval._scoring.evidence)."""

    if not evidence:
        return EvidenceCoverage((), ())
    found = covered_evidence({"q": list(evidence)}, {"q": list(shown)}, max(len(shown), 1))
    return found.get("q", EvidenceCoverage((), ()))


def _missed_lines(
    wanted: Mapping[str, list[Interval]],
    missed_pieces: Sequence[tuple[str, int, int]],
    documents: Mapping[str, str],
    limit: int,
    k: int,
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
        return [f"Every character of the evidence lies inside the top {k} chunks.", ""]
    return [f"Evidence not inside the top {k} chunks:", "", *missed, ""]


def _numbers_line(coverage: EvidenceCoverage, shown: Sequence[tuple[str, int, int, float]], no_relevant: str) -> str:
    """The query's evidence recall, precision and IoU at the chunks shown, worked out in characters."""
    covered = sum(end - start for _, start, end in coverage.covered)
    total = covered + sum(end - start for _, start, end in coverage.missed)
    at = f"At the {len(shown)} chunk{'' if len(shown) == 1 else 's'} shown"
    if total == 0:
        effect = "scored 0 (no_relevant: zero)" if no_relevant == "zero" else "left out of the means"
        return f"{at}: no evidence span for this query, so its evidence metrics are {effect}."
    context = sum(end - start for _, start, end, _ in shown)
    recall = f"evidence recall = {covered:,} / {total:,} = **{fmt(covered / total)}**"
    precision = (
        f"precision = {covered:,} / {context:,} = **{fmt(covered / context)}**"
        if context
        else "precision = **0.0000** (nothing retrieved)"
    )
    union = context + total - covered
    iou = f"IoU = {covered:,} / ({context:,} + {total - covered:,}) = **{fmt(covered / union)}**"
    return f"{at}: {recall}; {precision}; {iou}."


def _score(score: float) -> str:
    return f"{score:.4f}" if math.isfinite(score) else str(score)


# ---- marking evidence in a chunk's text ----------------------------------------------------------


def cut_window(text: str, start: int, end: int, marks: Sequence[Interval], limit: int) -> Interval:
    """The part of ``text[start:end]`` to show: all of it within ``limit`` characters, else a cut around the marks.

    The cut keeps the marked span (the evidence, sorted, inside [start, end)) in the middle of
    ``limit`` characters; evidence longer than ``limit`` is shown from its beginning. Each cut
    moves inward to a space within WORD_SLACK characters (a quarter of ``limit`` at most), never
    into the evidence, so that words stay whole.
    """
    if end - start <= limit:
        return start, end
    a, b = (marks[0][0], marks[-1][1]) if marks else (start, start)
    if b - a >= limit:
        s, e = a, a + limit
    else:
        room = limit - (b - a)
        before = min(room // 2, a - start)
        after = min(room - before, end - b)
        before = min(room - after, a - start)
        s, e = a - before, b + after
    slack = min(WORD_SLACK, limit // 4)
    if s > start:
        stop = min(s + slack, a) if marks else s + slack
        space = _WHITESPACE.search(text, s, max(stop, s))
        if space is not None and space.end() < e:
            s = space.end()
    if e < end:
        low = max(e - slack, s + 1) if b > e else max(e - slack, b, s + 1)
        spaces = list(_WHITESPACE.finditer(text, low, e))
        if spaces:
            e = spaces[-1].start()
    return s, e


def marked_text(
    text: str, start: int, end: int, marks: Sequence[Interval], cut_before: bool = False, cut_after: bool = False
) -> str:
    """``text[start:end]`` as one line of markdown (table-safe) with the ``marks`` in bold, … at each cut.

    Whitespace runs become one space, and a mark's outer spaces move outside its bold (GFM
    ignores ``** x**``). Emphasis opens and closes by CommonMark's flanking rules: where
    ``**`` could not (a mark that starts with punctuation right after a letter, for
    instance), the mark is written ``<b>…</b>`` instead, which renders the same.
    """
    pieces: list[tuple[str, bool]] = []
    position = start
    for a, b in marks:
        a, b = max(a, start), min(b, end)
        if a >= b:
            continue
        if position < a:
            pieces.append((text[position:a], False))
        pieces.append((text[a:b], True))
        position = b
    if position < end:
        pieces.append((text[position:end], False))
    tokens = _normalised(pieces)
    escaped = [(escape_cell(t) if bold else _escape_spaced(t), bold) for t, bold in tokens]
    out = "…" if cut_before else ""
    for i, (piece, bold) in enumerate(escaped):
        if not bold:
            out += piece
            continue
        before = out[-1] if out else None
        after = escaped[i + 1][0][0] if i + 1 < len(escaped) else ("…" if cut_after else None)
        if _can_open(before, piece[0]) and _can_close(piece[-1], after):
            out += f"**{piece}**"
        else:
            out += f"<b>{piece}</b>"
    return out + ("…" if cut_after else "")


def _normalised(pieces: Sequence[tuple[str, bool]]) -> list[tuple[str, bool]]:
    """Pieces with whitespace runs as one space, marks without outer spaces, no space at either end."""
    tokens: list[tuple[str, bool]] = []

    def plain(value: str) -> None:
        if tokens and not tokens[-1][1]:
            value = tokens.pop()[0] + value
        value = _WHITESPACE.sub(" ", value)
        if value:
            tokens.append((value, False))

    for piece, bold in pieces:
        piece = _WHITESPACE.sub(" ", piece)
        if not bold:
            plain(piece)
            continue
        core = piece.strip(" ")
        if not core:  # evidence of spaces only: nothing to show in bold
            plain(piece)
            continue
        if piece.startswith(" "):
            plain(" ")
        tokens.append((core, True))
        if piece.endswith(" "):
            plain(" ")
    if tokens and not tokens[0][1]:
        tokens[0] = (tokens[0][0].lstrip(" "), False)
    if tokens and not tokens[-1][1]:
        tokens[-1] = (tokens[-1][0].rstrip(" "), False)
    return [token for token in tokens if token[0]]


def _escape_spaced(value: str) -> str:
    """escape_cell, keeping one leading and one trailing space (escape_cell strips them)."""
    core = value.strip(" ")
    if not core:
        return " " if value else ""
    return (" " if value[0] == " " else "") + escape_cell(core) + (" " if value[-1] == " " else "")


def _punctuation(ch: str, symbols: bool) -> bool:
    """CommonMark's punctuation: ASCII punctuation and Unicode P* (0.29, GitHub); 0.31 adds S* (symbols)."""
    if ch in string.punctuation:
        return True
    category = unicodedata.category(ch)
    return category.startswith("P") or (symbols and category.startswith("S"))


def _can_open(before: str | None, first: str) -> bool:
    """Whether ``**`` between ``before`` (None: line start) and ``first`` is left-flanking under 0.29 and 0.31."""
    if not _punctuation(first, symbols=True):
        return True
    return before is None or before.isspace() or _punctuation(before, symbols=False)


def _can_close(last: str, after: str | None) -> bool:
    """Whether ``**`` between ``last`` and ``after`` (None: line end) is right-flanking under 0.29 and 0.31."""
    if not _punctuation(last, symbols=True):
        return True
    return after is None or after.isspace() or _punctuation(after, symbols=False)


# ---- intervals (a handful per query: plain Python is clearer than numpy here) ----------------


def _union(intervals: Iterable[Interval]) -> list[Interval]:
    """Sorted, disjoint intervals covering the same characters; touching ones are merged."""
    merged: list[list[int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged]


def _length(intervals: Iterable[Interval]) -> int:
    return sum(end - start for start, end in intervals)


def _clip(intervals: Sequence[Interval], start: int, end: int) -> list[Interval]:
    return [(max(a, start), min(b, end)) for a, b in intervals if a < end and b > start]


def _evidence_by_doc(spans: Iterable[Any]) -> dict[str, list[Interval]]:
    """``{doc: union of the spans' intervals}`` for evidence spans or ``(doc, start, end, ...)`` tuples."""
    by_doc: dict[str, list[Interval]] = {}
    for span in spans:
        doc, start, end = (span.doc, span.start, span.end) if hasattr(span, "doc") else span[:3]
        by_doc.setdefault(doc, []).append((start, end))
    return {doc: _union(pieces) for doc, pieces in sorted(by_doc.items())}


__all__ = [
    "chunking_lines",
    "counts_line",
    "cut_window",
    "detailed_lines",
    "marked_text",
    "per_query_missing_note",
    "query_chunks",
    "ranked_spans",
    "semantics_lines",
    "shown_cutoff",
    "summary_lines",
    "truncation_note",
]
