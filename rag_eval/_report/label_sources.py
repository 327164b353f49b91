"""The run report's section on grades a model gave (pure: a RunOutcome in, markdown lines out).

Shown only when the dataset holds a model-labelled grade (a judge's ``<kind>:<name>`` source): how many
grades a model gave, each retriever's main metric under all grades and without the model's, the share of
each decision's difference that rests on model labels, and a warning for a retriever that ranks with the
model that judged it. The numbers come from rag_eval._compare.label_sources; rounding happens here only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag_eval._compare.hole_flips import percent
from rag_eval._compare.label_sources import (
    ModelShare,
    decision_shares,
    label_counts,
    reference_label,
    run_without_model_labels,
    same_model_warnings,
)
from rag_eval._report.format import code_span, escape_cell, escape_inline, fmt, signed

if TYPE_CHECKING:
    from rag_eval._run.outcome import RunOutcome

__all__ = ["label_sources_lines"]

DIRECTIONS = {
    "holds": "holds without them",
    "vanishes": "rests on model labels only",
    "reverses": "reverses without them",
    "none": "no difference",
}


def label_sources_lines(run: RunOutcome, main: str, baseline: str | None = None) -> list[str]:
    """The section (empty when no grade of the dataset is a model's, or no retriever has ``main``)."""
    dataset = run.dataset
    if not dataset.has_model_labels:
        return []
    outcomes = [o for o in run.outcomes if main in o.results.values]
    if not outcomes:
        return []
    counts = label_counts(dataset)
    without = run_without_model_labels(run, [main])
    sources = ", ".join(f"{code_span(source)}: {n:,}" for source, n in counts.by_source.items())
    lines = [
        "## 🏷️ Grades from models",
        "",
        f"{counts.model:,} of the dataset's {counts.total:,} grades come from a model ({sources}); the others are "
        "people's (`human`, `llm+verified`) or the query set's own. *Without model labels* removes the model's "
        "grades: what they graded is unjudged again, scored as not relevant.",
    ]
    if counts.model_only_queries:
        only = counts.model_only_queries
        lines[-1] += (f" {len(only):,} quer{'ies are' if len(only) != 1 else 'y is'} graded by models only, not scored "
                      f"without them ({escape_inline(', '.join(only[:10]))}{', ...' if len(only) > 10 else ''}).")
    lines += [
        "",
        f"| Retriever | {escape_cell(main)}, all grades | without model labels | change without them | queries scored |",
        "|---|---:|---:|---:|---:|",
    ]
    for outcome in outcomes:
        every = outcome.results
        human = without.get(outcome.label)
        value = every.aggregate[main]
        other = human.aggregate[main] if human is not None and main in human.aggregate else float("nan")
        scored = f"{len(every.query_ids):,} / {len(human.query_ids) if human is not None else 0:,}"
        lines.append(f"| {escape_cell(outcome.label)} | {fmt(value)} | {fmt(other)} | {signed(other - value)} | "
                     f"{scored} |")
    lines += ["", "Queries scored: with all grades / without model labels.", ""]
    all_labels = {o.label: o.results for o in outcomes}
    if len(outcomes) >= 2:
        lines += _decision_lines(main, decision_shares(main, all_labels, without, baseline),
                                 reference_label(all_labels, main, baseline), baseline)
    warnings = same_model_warnings({o.label: o.description for o in outcomes}, counts.by_source.items())
    for found in warnings:
        lines += [
            f"**Warning:** retriever {escape_inline(found.retriever)} ranks with {code_span(found.model)}, the model "
            f"behind {code_span(found.source)}, which gave {found.grades:,} of the grades it is scored on: it is "
            "judged by its own taste. Judge its results with another model, or with people.",
            "",
        ]
    return lines


def _decision_lines(main: str, shares: list[ModelShare], reference: str | None, baseline: str | None) -> list[str]:
    if not shares or reference is None:
        return []
    why = "the declared baseline" if baseline == reference else f"the best mean of {escape_inline(main)}"
    lines = [
        f"**How much of each difference rests on model labels** (against {escape_inline(reference)}, {why}):",
        "",
        "| Variant | Δ, all grades | from people's grades (H) | from model grades (M) | share on model labels "
        "| direction | queries |",
        "|---|---:|---:|---:|---:|---|---:|",
    ]
    for share in shares:
        unseen = f" ({share.unseen:,} unseen without them)" if share.unseen else ""
        part = "–" if share.share is None else percent(share.share)
        lines.append(
            f"| {escape_cell(share.variant)} | {signed(share.delta)} | {signed(share.human)} | {signed(share.model)} | "
            f"{part} | {DIRECTIONS[share.direction]} | {share.n:,}{unseen} |"
        )
    lines += [
        "",
        "Δ = H + M, the mean per-query difference (variant − reference) over the queries both score with all grades. "
        "H: the same mean with the model's grades removed (0 for a query a side cannot score without them: "
        "unseen); M: what the model's grades add. Share on model labels = |M| / (|H| + |M|): when H and M point the "
        "same way, the part of Δ that goes away without the model's grades. A difference that vanishes or reverses "
        "without them is one for people to judge (docs/judging.md).",
        "",
    ]
    return lines
