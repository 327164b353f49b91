"""The holes in a run's judgements, as the run report shows them (pure: a RunOutcome in, markdown lines out).

One row per retriever for the main metric: the share of its top k that is unjudged and judged, and
the metric with the holes as misses (the number every other table shows), with every hole judged at
its query's highest grade, and judged only (the condensed list). The numbers are the run's
(rag_eval._run.holes_record); rounding happens here only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag_eval._compare.hole_flips import percent
from rag_eval._report.format import escape_cell, escape_inline, fmt

if TYPE_CHECKING:
    from rag_eval._run.holes_section import MetricHoles
    from rag_eval._run.outcome import RunOutcome

__all__ = ["holes_lines", "percent"]

UNIT_WORDS = {
    "passage": "a retrieved passage nobody judged for the query",
    "chunk": "a retrieved chunk of a document nobody judged for the query",
    "document": "a retrieved document with no grade for the query",
}


def holes_lines(run: RunOutcome, main: str) -> list[str]:
    """The holes table of the summary: a row per retriever (empty when no retriever has holes recorded)."""
    entries: dict[str, MetricHoles | None] = {}
    for outcome in run.outcomes:
        record = getattr(outcome, "holes", None)  # outcomes built by hand may have none
        entries[outcome.label] = None if record is None else record.get(main)
    known = [entry for entry in entries.values() if entry is not None]
    if not known:
        return []
    first = known[0]
    k = first.k
    lines = [
        f"**Holes** ({escape_inline(main)} over each retriever's top {k}; a hole is {UNIT_WORDS[first.unit]}, "
        "scored as not relevant):",
        "",
        f"| Retriever | Unjudged top {k} | Judged top {k} | {escape_cell(main)}, holes as misses | "
        "at the highest grade | judged only |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, entry in entries.items():
        if entry is None:
            lines.append(f"| {escape_cell(label)} | – | – | – | – | – |")
            continue
        bounds = (
            f"{fmt(entry.dataset_low)} | {fmt(entry.dataset_high)} | {fmt(entry.dataset_condensed)}"
            if entry.bounded else f"{fmt(entry.dataset_low)} | – | –"
        )
        lines.append(
            f"| {escape_cell(label)} | {percent(entry.unjudged_share)} | {percent(entry.judged_share)} | {bounds} |"
        )
    note = (
        "Mean share of each query's top k over the judged queries (judged and unjudged add up to the share "
        "retrieved). The highest grade is each query's own; filling holes also grows what recall, MAP and nDCG "
        "divide by, so that value can be the lower one."
    )
    if any(not entry.bounded for entry in known):
        note += f" {escape_inline(main)} reads characters of evidence, not grades: it has no bounds (–)."
    return lines + ["", note, ""]
