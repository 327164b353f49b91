"""The run report's sections for a dataset of documents (pure, no I/O).

A document dataset is judged by document grades and evidence spans, and each
retriever reads its own chunking (docs/semantics.md, "Documents, chunks and evidence").
The report then says, in place of the passage sections of rag_eval._report.markdown:

- the counts of documents, characters and evidence, and each retriever's chunking
  (method, size, overlap, chunks, mean length, and how many chunks the encoder cuts);
- what text each retriever indexed (title + chunk text, text alone, or its own index's),
  with a warning when the retrievers compared do not read the same titles;
- the document and evidence metrics in one table (comparable across chunkings), the
  chunk-level metrics apart (each chunking builds its own ideal ranking, so they are not);
- for the detailed queries, each retrieved chunk with its evidence in bold
  (rag_eval._report.retrieved_chunks).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rag_eval._models.embeddings.truncation import truncation_warning
from rag_eval._report.format import (
    count_queries,
    escape_cell,
    escape_inline,
    fmt,
    means_sentence,
    semantics_phrases,
)
from rag_eval._report.indexed_text import indexed_text_lines
from rag_eval._scoring.metrics.measures import parse_metric

if TYPE_CHECKING:  # annotations only
    from rag_eval._data.datasets import Dataset
    from rag_eval._run.outcome import RetrieverOutcome, RunOutcome

MISSING = "–"  # a metric not computed for a retriever (said under the table)
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
    """The "Chunking" table: what each retriever indexed, and a warning per retriever whose encoder cuts chunks;
    then the text each retriever indexed (:func:`indexed_text_lines`)."""
    outcomes = run.outcomes
    if not outcomes:
        return []
    truncation = any(o.description.get("truncation") for o in outcomes)
    lines = [
        "**Chunking**",
        "",
        # Two token counts, two tokenizers: each header says whose tokens (the chunker's count text only,
        # the encoder's include the special tokens its max_seq_length counts).
        "| Retriever | Chunking | Method | Size | Overlap | Unit | Chunks | Mean length (tokens: the chunker's "
        "tokenizer, no special tokens) |"
        + (" Truncated by the encoder (the model's tokens, with its special tokens) |" if truncation else ""),
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
    return lines + indexed_text_lines(run)


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
        best[name] = fmt(parse_metric(name).best(values)) if values else None  # in the metric's direction
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


__all__ = [
    "chunking_lines",
    "counts_line",
    "per_query_missing_note",
    "semantics_lines",
    "summary_lines",
    "truncation_note",
]
