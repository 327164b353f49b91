"""The comparison report: a Verdict in, markdown out (pure).

Verdict first (one row per gate), then wins / ties / losses, the queries that
moved most, and for the worst regressions the two rankings side by side with
grades, marking relevant passages the candidate lost from or gained in the top k.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rag_eval._compare.hole_flips import GateHoles, percent
from rag_eval._compare.regression import GateResult, Verdict
from rag_eval._report.format import (
    code_span,
    escape_cell,
    escape_inline,
    fmt,
    fmt_grade,
    fmt_p,
    one_line,
    shorten,
    signed,
)
from rag_eval._run.documents import chunking_text
from rag_eval._scoring.metrics.measures import parse_metric

# What a micro dataset value is next to the paired statistics: said in comparison.md and in compare's lines.
MICRO_VALUES = ("baseline and candidate are the dataset values (total DCG / total IDCG); delta, its interval and the "
                "test are the mean per-query difference, so delta need not be their difference, nor have its sign")

MOVERS = 10
SIDE_BY_SIDE = 3


def render_verdict_summary(verdict: Verdict) -> str:
    """The verdict table alone: for a CI job summary."""
    status = "✅ PASS" if verdict.passed else "❌ FAIL"
    lines = [
        f"### rag-eval regression check: {status}",
        "",
        (
            f"Baseline {code_span(verdict.baseline.label)} ({code_span(verdict.baseline.path)}) vs candidate "
            f"{code_span(verdict.candidate.label)} ({code_span(verdict.candidate.path)})."
        ),
        "",
    ]
    if verdict.baseline.chunking is not None or verdict.candidate.chunking is not None:
        lines += [
            f"Chunking: baseline {escape_inline(chunking_text(verdict.baseline.chunking))}; "
            f"candidate {escape_inline(chunking_text(verdict.candidate.chunking))}.",
            "",
        ]
    lines += _verdict_table(verdict.gates, verdict.confidence, verdict.holes)
    flips = verdict.could_flip()
    if flips:
        effect = "the gate fails" if verdict.on_holes == "fail" else "the verdict stands"
        lines += ["", f"Gates that could flip (on_holes: {verdict.on_holes}: {effect}):", ""] + [
            f"- {escape_inline(result.gate.metric)} {escape_inline(holes.flip_text())}: "
            f"{escape_inline(holes.flip_detail())}."
            for result, holes in flips
        ]
    if verdict.failed:
        lines += ["", "Failed gates:", ""] + [f"- {escape_cell(line)}" for line in verdict.failure_lines()]
    return "\n".join(lines) + "\n"


def render_comparison(verdict: Verdict, passages: Mapping[str, Mapping[str, str]] | None = None) -> str:
    """The full comparison report (``passages``: optional corpus for passage texts)."""
    lines = [f"# Regression check: {'✅ PASS' if verdict.passed else '❌ FAIL'}", ""]
    lines += render_verdict_summary(verdict).splitlines()[2:]
    lines += ["", _stats_note(verdict.confidence), ""]
    if verdict.baseline.results.options.get("aggregation") == "micro":
        lines += [
            f"Aggregation is micro: {MICRO_VALUES} (the gates are decided on the per-query values).",
            "",
        ]
    lines += _win_tie_loss(verdict)
    for result in verdict.gates:
        lines += _movers(verdict, result)
        lines += _side_by_side(verdict, result, passages or {})
    lines += _holes_table(verdict)
    return "\n".join(lines).rstrip() + "\n"


def _verdict_table(
    gates: Sequence[GateResult], confidence: float, holes: Sequence[GateHoles | None] = ()
) -> list[str]:
    level = f"{confidence * 100:g}% CI"
    with_holes = any(h is not None for h in holes)  # a column only when the candidate's file records its holes
    # Beside the candidate's value, so that Result stays the last column.
    unjudged_header, unjudged_rule = (" Candidate unjudged |", "---|") if with_holes else ("", "")
    lines = [
        f"| Metric | Baseline | Candidate |{unjudged_header} Δ (mean) | {level} | p (permutation) | p (t-test) | Gate | "
        "Result |",
        f"|---|---:|---:|{unjudged_rule}---:|---|---:|---:|---|---|",
    ]
    for i, g in enumerate(gates):
        p_perm = fmt_p(g.p_permutation)
        if g.p_adjusted is not None:
            p_perm += f" (Holm {fmt_p(g.p_adjusted)})"
        unjudged = f" {_unjudged_cell(holes[i] if i < len(holes) else None)} |" if with_holes else ""
        lines.append(
            f"| {g.gate.metric} | {fmt(g.baseline)} | {fmt(g.candidate)} |{unjudged} {signed(g.mean_delta)} | "
            f"[{signed(g.ci_low)}, {signed(g.ci_high)}] | {p_perm} | {fmt_p(g.p_t_test)} | "
            f"{escape_cell(g.gate.describe())} | {'✅ pass' if g.passed else '❌ fail'} |"
        )
    return lines


def _unjudged_cell(holes: GateHoles | None) -> str:
    if holes is None:
        return "–"
    text = f"{percent(holes.unjudged)} of top {holes.k}"
    return text + (", ⚠️ could flip" if holes.could_flip else "")


def _holes_table(verdict: Verdict) -> list[str]:
    """Each gate's metric with the candidate's holes: shares, its value at both bounds and judged only."""
    rows = [(result, holes) for result, holes in zip(verdict.gates, verdict.holes) if holes is not None]
    if not rows:
        return []
    lines = [
        "## Holes in the judgements",
        "",
        "| Metric | Candidate unjudged | Baseline unjudged | Candidate, holes as misses | at the highest grade | "
        "judged only | Gate, holes as misses | at the highest grade |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for result, holes in rows:
        base = "–" if holes.baseline_unjudged is None else percent(holes.baseline_unjudged)
        lines.append(
            f"| {result.gate.metric} | {percent(holes.unjudged)} of top {holes.k} | {base} | {fmt(holes.low)} | "
            f"{fmt(holes.high)} | {fmt(holes.condensed)} | {_verb(holes.passed_low)} | {_verb(holes.passed_high)} |"
        )
    return lines + [
        "",
        (
            "A hole is a retrieved unit nobody judged for the query; it counts as not relevant. The candidate's "
            "value with its holes at the highest grade of each query's judgements, the baseline as recorded, "
            "decides each gate again: a gate whose result differs between the two could flip once the holes are "
            "judged (`rag-eval pool` lists them)."
        ),
        "",
    ]


def _verb(passed: bool) -> str:
    return "pass" if passed else "fail"


def _stats_note(confidence: float) -> str:
    return (
        f"Δ = candidate − baseline, over queries paired by id. {confidence * 100:g}% CI: percentile bootstrap of the "
        "mean Δ (seeded; the plain percentile interval, not BCa). p (permutation): paired randomisation test, "
        "two-sided, exact up to 16 queries; Holm-corrected when several gates ask for significance. A gate with "
        "alpha counts a drop as significant only when p < alpha (p = alpha is not). "
        "p (t-test): paired t-test, for reference."
    )


def _win_tie_loss(verdict: Verdict) -> list[str]:
    lines = [
        "## Wins, ties and losses per query",
        "",
        "| Metric | Queries | Improved | Unchanged | Regressed |",
        "|---|---:|---:|---:|---:|",
    ]
    for g in verdict.gates:
        lines.append(f"| {g.gate.metric} | {g.n} | {g.wins} | {g.ties} | {g.losses} |")
    return lines + [""]


def _movers(verdict: Verdict, result: GateResult) -> list[str]:
    metric = result.gate.metric
    moves = verdict.moved_queries(metric)
    texts = verdict.candidate.query_texts or verdict.baseline.query_texts
    all_regressed = [m for m in moves if m[1] < 0]
    all_improved = [m for m in reversed(moves) if m[1] > 0]
    totals = {"Regressed": len(all_regressed), "Improved": len(all_improved)}
    regressed, improved = all_regressed[:MOVERS], all_improved[:MOVERS]
    b_index = {q: i for i, q in enumerate(verdict.baseline.results.query_ids)}
    c_index = {q: i for i, q in enumerate(verdict.candidate.results.query_ids)}
    lines = [f"## {metric}: queries that moved most", ""]
    for title, rows in (("Regressed", regressed), ("Improved", improved)):
        shown = f"{len(rows)} of {totals[title]} shown" if totals[title] > len(rows) else f"{len(rows)} shown"
        lines += [f"**{title}** ({shown})", ""]
        if not rows:
            lines += ["None.", ""]
            continue
        lines += ["| Query | Text | Baseline | Candidate | Δ |", "|---|---|---:|---:|---:|"]
        for qid, _ in rows:
            b = verdict.baseline.results.values[metric][b_index[qid]]
            c = verdict.candidate.results.values[metric][c_index[qid]]
            text = escape_cell(shorten(one_line(texts.get(qid, "")), 90))
            lines.append(f"| {escape_cell(qid)} | {text} | {fmt(b)} | {fmt(c)} | {signed(c - b)} |")
        lines.append("")
    return lines


def _side_by_side(verdict: Verdict, result: GateResult, passages: Mapping[str, Mapping[str, str]]) -> list[str]:
    metric = result.gate.metric
    # The ranks the metric reads; 10 when it reads the whole ranking or a budget of characters or tokens.
    k = parse_metric(metric).rank_cutoff or 10
    worst = [m for m in verdict.moved_queries(metric) if m[1] < 0][:SIDE_BY_SIDE]
    if not worst:
        return []
    base_rankings, cand_rankings = verdict.baseline.rankings, verdict.candidate.rankings
    texts = verdict.candidate.query_texts or verdict.baseline.query_texts
    lines = [f"## {metric}: worst regressions side by side (top {k})", ""]
    if not base_rankings or not cand_rankings:
        return lines + ["The results files hold no rankings; rerun with `rag-eval run` to see them.", ""]
    is_relevant = _relevance_rule(metric, verdict.baseline.results.options)
    for qid, _ in worst:
        base = base_rankings.get(qid, [])[:k]
        cand = cand_rankings.get(qid, [])[:k]
        base_relevant = {doc for doc, _, grade in base if is_relevant(grade)}
        cand_relevant = {doc for doc, _, grade in cand if is_relevant(grade)}
        lines += [
            f"### {escape_cell(qid)}: “{escape_cell(texts.get(qid, ''))}”",
            "",
            "| Rank | Baseline | Grade | Candidate | Grade |",
            "|---:|---|---:|---|---:|",
        ]
        for rank in range(max(len(base), len(cand))):
            left = _cell(base[rank] if rank < len(base) else None, cand_relevant, "lost", passages, is_relevant)
            right = _cell(cand[rank] if rank < len(cand) else None, base_relevant, "gained", passages, is_relevant)
            lines.append(f"| {rank + 1} | {left} |{right} |")
        lost = sorted(base_relevant - cand_relevant)
        gained = sorted(cand_relevant - base_relevant)
        if _different_chunkings(verdict):  # chunk ids of two chunkings never match: "lost" would mean nothing
            lines += ["", "The two sides read different chunkings: their chunks are not matched one to one.", ""]
            continue
        lines += [
            "",
            (
                f"Relevant passages lost from the top {k}: {', '.join(code_span(d) for d in lost) or 'none'}. "
                f"Gained: {', '.join(code_span(d) for d in gained) or 'none'}."
            ),
            "",
        ]
    return lines


def _different_chunkings(verdict: Verdict) -> bool:
    base, cand = verdict.baseline.chunking, verdict.candidate.chunking
    if base is None and cand is None:
        return False
    return base is None or cand is None or base.get("fingerprint") is None or base.get("fingerprint") != cand.get(
        "fingerprint"
    )


def _relevance_rule(metric: str, options: Mapping[str, Any]) -> Callable[[float | None], bool]:
    """What "relevant" means for ``metric``, as its kernel counts it.

    Graded metrics (nDCG, DCG) gain from every grade > 0; binary metrics (recall,
    precision, MRR, ...) count grades at or above the relevance threshold.
    """
    parsed, threshold = parse_metric(metric), float(options.get("relevance_threshold", 1.0))
    return lambda grade: parsed.is_relevant(grade, threshold)


def _cell(
    entry: Sequence[Any] | None,
    other_relevant: set[str],
    change: str,
    passages: Mapping[str, Mapping[str, str]],
    is_relevant=lambda grade: grade is not None and grade > 0,
) -> str:
    if entry is None:
        return " | "
    doc, _, grade = entry
    text = passages.get(doc, {}).get("text", "")
    label = code_span(doc, in_table=True) + (f" {escape_cell(shorten(one_line(text), 60))}" if text else "")
    if is_relevant(grade) and doc not in other_relevant:
        label = f"**{label}** ({change})"
    grade_text = "unjudged" if grade is None else fmt_grade(grade)
    return f" {label} | {grade_text} "
