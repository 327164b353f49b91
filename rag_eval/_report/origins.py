"""Synthetic queries reported apart from the real ones (pure: a RunOutcome in, markdown lines out).

``rag-eval generate`` tags each question it writes ``origin: synthetic``. A model's questions are
not a user's: they tend to reuse the document's words, so a lexical retriever finds them more
easily, and they are as many as the model was asked for, not as frequent as users' needs. A mean
over real and synthetic queries together answers neither "how good is it for our users" nor "how
good is it on the generated set", so the report never gives that mix without saying so: when the
scored queries include synthetic ones, :func:`origin_lines` states how many of each the summary's
means hold, and gives every retriever's mean of every metric over the real queries and over the
synthetic ones, side by side. A query is synthetic when it carries the tag ``origin: synthetic``
(``tags: {origin: synthetic}``, or ``origin:synthetic`` in a list of tags); every other query is real.

The means are macro means over each origin's scored queries, a query with no value (no relevant
unit, under ``no_relevant: skip``) left out, as in the segment tables
(:func:`rag_eval._compare.segments.segment_table`, which computes them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rag_eval._compare.segments import query_tags, segment_table
from rag_eval._report.format import count_queries, escape_cell, fmt

if TYPE_CHECKING:
    from rag_eval._data.datasets import Dataset
    from rag_eval._run.outcome import RunOutcome

__all__ = ["ORIGIN", "SYNTHETIC", "origin_lines", "synthetic_query_ids"]

ORIGIN, SYNTHETIC, REAL = "origin", "synthetic", "real"


def synthetic_query_ids(dataset: Dataset) -> set[str]:
    """The queries tagged ``origin: synthetic``."""
    return {qid for qid, query in dataset.queries.items() if SYNTHETIC in query_tags(query.tags).get(ORIGIN, ())}


def origin_lines(run: RunOutcome, metrics: Sequence[str] | None = None) -> list[str]:
    """The section "Real and synthetic queries apart"; empty when no scored query is synthetic.

    ``metrics``: the columns (default: the config's metrics that every retriever computed).
    """
    synthetic = synthetic_query_ids(run.dataset)
    outcomes = run.outcomes
    if not outcomes or not synthetic:
        return []
    scored = outcomes[0].results.query_ids
    made = sum(qid in synthetic for qid in scored)
    if not made:
        return []
    names = [m for m in (metrics or run.config.model.metrics) if all(m in o.results.values for o in outcomes)]
    origins = {qid: {ORIGIN: SYNTHETIC if qid in synthetic else REAL} for qid in scored}
    results = {o.label: o.results for o in outcomes}
    by_metric = {name: {s.value: s for s in segment_table(results, name, origins)[0].segments} for name in names}
    real = len(scored) - made
    lines = [
        "### Real and synthetic queries apart",
        "",
        f"The means above are over {count_queries(len(scored), 'scored')}: {real} real and {made} synthetic "
        "(tagged `origin: synthetic`, written by a model with `rag-eval generate`). Apart, as macro means over each "
        "origin's queries:",
        "",
        "| Retriever | Origin | Queries | " + " | ".join(names) + " |",  # as the summary table names them
        "|---|---|---:|" + "---:|" * len(names),
    ]
    for outcome in outcomes:
        for origin, count in ((REAL, real), (SYNTHETIC, made)):
            if not count:
                continue
            cells = " | ".join(fmt(by_metric[name][origin].means[outcome.label]) for name in names)
            lines.append(f"| {escape_cell(outcome.label)} | {origin} | {count} | {cells} |")
    return [*lines, ""]
