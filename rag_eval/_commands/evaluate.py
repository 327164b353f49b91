"""``rag-eval evaluate``: score a TREC run file against TREC or BEIR qrels, as trec_eval does.

This command is benchmarked against pytrec_eval on small files: it imports only the metric
engine and the text formats, never the config schema, pydantic or YAML.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from rag_eval._core import allocator
from rag_eval._core.errors import InputFormatError
from rag_eval._core.messages import shown
from rag_eval._report.format import exclusion_notes, format_results
from rag_eval._scoring.engine import BEIR_QRELS, prepare, read_judgements, read_run
from rag_eval._scoring.evaluate import EvaluationOptions, passage_metrics, score
from rag_eval._scoring.metrics.measures import parse_metrics

# What `evaluate` cannot score, and what to do instead (a passage run has no documents or evidence).
NO_DOCUMENTS = (
    "evaluate scores a TREC run as it is: run a config with a dataset of documents (rag-eval run), or score "
    "the document run <label>.docs.trec that rag-eval run writes against documents.qrels with the plain metric"
)


@dataclass(frozen=True)
class Evaluation:
    """What the command prints: ``text`` on stdout, ``notes`` on stderr (which file was read how, queries left out)."""

    text: str
    notes: list[str]


def evaluate_files(
    qrels: str,
    run: str,
    metrics: list[str],
    *,
    semantics: Mapping[str, Any],
    output_format: Literal["text", "json", "markdown"] = "text",
    per_query: bool = False,
) -> Evaluation:
    """Score ``run`` against ``qrels`` on ``metrics``; the text to print, in ``output_format``.

    ``semantics``: the keyword arguments of :class:`EvaluationOptions` (gain, aggregation, no_relevant,
    relevance_threshold, judged_only), checked after the metrics.
    """
    # This process is ours and its work is numpy on large arrays: reuse freed memory instead of
    # taking a page fault on every fresh temporary (rag_eval._core.allocator). Only here: other
    # commands load models and libraries whose allocation pattern this would not suit.
    allocator.keep_freed_memory()
    parsed = passage_metrics(parse_metrics(metrics), NO_DOCUMENTS)
    options = EvaluationOptions(**semantics)
    judgements, layout = read_judgements(qrels)
    # Once joined, the tables are freed (del), before the metrics need memory.
    joined = prepare(judgements, read_run(run))
    del judgements
    if joined.unjudged and len(joined.unanswered) == len(joined.query_ids):
        # Not one query in common: files of two datasets, where every judged query would score 0 and exit 0.
        raise InputFormatError(
            f"{run}: none of its {len(joined.unjudged):,} queries is judged in {qrels} ({len(joined.query_ids):,} "
            f"judged queries; e.g. run query {shown(joined.unjudged[0])}, judged query {shown(joined.query_ids[0])}): "
            "the files share no query id; check that they come from the same dataset"
        )
    results = score(joined, parsed, options)
    text = format_results(results, output_format, per_query=per_query)
    # Said once everything has been read (an error stays the only line on stderr), never on stdout.
    detail = " (TSV with header query-id corpus-id score)" if layout is BEIR_QRELS else ""
    notes = [f"read {qrels} as {layout.name}{detail}"]
    if output_format != "json":  # json lists them in the document; text keeps stdout as trec_eval prints it
        notes += exclusion_notes(results)
    return Evaluation(text, notes)
