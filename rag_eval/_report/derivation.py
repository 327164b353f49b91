"""How nDCG@k was computed: the derivation of each detailed query's nDCG, term by term (pure, no I/O).

Shaped like the ocean-facts seed: for each detailed query and retriever, the retrieved
passages with their grades, the DCG table (gain, log₂(rank + 1), each term), the ideal
order with its IDCG table, the quotient, and a one-line interpretation. The gain and the
discount are the kernels' own (rag_eval._scoring.metrics.kernels), so the reader sees the
arithmetic of the number in the tables; the cutoff is the main metric's (:func:`derivation_cutoff`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from rag_eval._core.ranking import ranked_ids
from rag_eval._report.format import (
    code_span,
    detail_intro,
    detailed_outcomes,
    detailed_outcomes_note,
    escape_cell,
    escape_inline,
    fmt,
    fmt_grade,
    one_line,
    select_detailed_queries,
    shorten,
)
from rag_eval._scoring.metrics.kernels import gain_values, log2_rank
from rag_eval._scoring.metrics.measures import parse_metric

if TYPE_CHECKING:  # annotations only: rendering needs no runner
    from rag_eval._run.outcome import RunOutcome

__all__ = ["DERIVED", "derivation", "derivation_cutoff", "derivation_lines", "interpretation", "passage_cell"]

DERIVED = "ndcg"  # the family whose value the section works out term by term


def derivation_cutoff(main: str, top_k: int) -> int | None:
    """The cutoff of the derivation: the main metric's rank cutoff (even past top_k: the ideal is cut there).

    Without one: None when the main metric is plain ``ndcg`` itself (trec_eval's ``ndcg`` has no
    cutoff: DCG over the whole ranking, IDCG over every judged relevant passage; cutting its ideal
    at top_k would print another number), else nDCG at ``top_k``.
    """
    metric = parse_metric(main)
    if metric.rank_cutoff is not None or metric.name == DERIVED:
        return metric.rank_cutoff
    return top_k


def _at(k: int | None) -> str:
    return "" if k is None else f"@{k}"


def derivation_lines(run: RunOutcome, main: str) -> list[str]:
    """The section "How nDCG@k was computed": each detailed query's derivation, per retriever."""
    config = run.config.model
    k = derivation_cutoff(main, config.top_k)
    chosen, worst = select_detailed_queries(run, main, config.report.detailed_queries)
    if not chosen:
        return []
    options = run.outcomes[0].results.options
    gain = options.get("gain", "linear")
    heading = f"## 🧮 How nDCG{_at(k)} was computed"
    lines = [heading, "", detail_intro(run, main, chosen, worst), ""]
    outcomes = detailed_outcomes(run, main)
    lines += detailed_outcomes_note(run, main, outcomes, "the derivations")
    for qid in chosen:
        query = run.dataset.queries.get(qid)
        lines += [f"### {escape_inline(qid)}: “{escape_inline(query.text if query else '')}”", ""]
        for outcome in outcomes:
            lines += derivation(
                outcome.label,
                outcome.ranking.get(qid, {}),
                run.dataset.judgements.get(qid, {}),
                run.dataset.corpus,
                k,
                gain,
                config.report.passage_chars,
                multiple=len(run.outcomes) > 1,
                no_relevant=options.get("no_relevant", "skip"),
            )
    return lines




def derivation(
    label: str,
    scores: Mapping[str, float],
    judgements: Mapping[str, float],
    corpus: Mapping[str, Mapping[str, str]],
    k: int | None,
    gain: str,
    passage_chars: int,
    multiple: bool = True,
    no_relevant: str = "skip",
) -> list[str]:
    """The ocean-facts derivation of one query's nDCG@k (``k`` None: plain nDCG) for one retriever.

    A query without any relevant passage is worded after the ``no_relevant``
    policy: undefined and left out (skip) or scored 0 (zero), as in the tables.
    """
    at = _at(k)
    ranked = ranked_ids(scores)[:k]
    lines = [f"#### {escape_inline(label)}", ""] if multiple else []
    if not ranked:
        relevant = sum(1 for g in judgements.values() if g > 0)
        if relevant or no_relevant == "zero":
            value = "0.0000" if relevant else "0.0000 (no passage is judged relevant; scored 0)"
        else:
            value = "undefined (no passage is judged relevant)"
        return lines + [f"Nothing was retrieved for this query: DCG{at} = 0, nDCG{at} = {value}.", ""]
    lines += ["| Rank | Passage | Grade |", "|---:|---|---:|"]
    for rank, doc in enumerate(ranked, start=1):
        grade = judgements.get(doc)
        grade_text = "unjudged" if grade is None else fmt_grade(grade)
        lines.append(f"| {rank} | {passage_cell(doc, corpus, passage_chars)} | {grade_text} |")
    lines.append("")

    grades = [judgements.get(doc) for doc in ranked]
    dcg, dcg_lines = _dcg_table(grades, gain, "DCG", k)
    ideal_grades = sorted((g for g in judgements.values() if g > 0), reverse=True)[:k]  # k None: all
    idcg, idcg_lines = _dcg_table(ideal_grades, gain, "IDCG", k)
    lines += dcg_lines
    ideal_text = ", ".join(fmt_grade(g) for g in ideal_grades) or "nothing: no passage is judged relevant"
    cut = f"cut at {k}" if k is not None else "not cut"
    lines += [f"Ideal order (all judged passages with grade > 0, best first, {cut}): [{ideal_text}]", ""]
    lines += idcg_lines
    if idcg > 0:
        ndcg = dcg / idcg
        lines.append(f"**nDCG{at}** = DCG{at} / IDCG{at} = {fmt(dcg)} / {fmt(idcg)} = **{fmt(ndcg)}**")
    elif no_relevant == "zero":
        ndcg = math.nan
        lines.append(
            f"**nDCG{at}** = **0.0000**: IDCG{at} = 0 because no passage is judged relevant, "
            "and such a query scores 0 (no_relevant: zero)."
        )
    else:
        ndcg = math.nan
        lines.append(
            f"**nDCG{at}** is undefined: IDCG{at} = 0 because no passage is judged relevant (left out of the mean)."
        )
    lines += ["", f"*{interpretation(ndcg, grades, judgements, k)}*", ""]
    missed = [
        doc
        for doc, g in sorted(judgements.items(), key=lambda item: (-item[1], item[0]))
        if g > 0 and doc not in ranked
    ]
    if missed:
        passages = "Relevant passage" if len(missed) == 1 else "Relevant passages"
        lines += [f"{passages} not in the top {k}:" if k is not None else f"{passages} not retrieved:", ""]
        lines += [
            f"- {passage_cell(doc, corpus, passage_chars, in_table=False)} (grade {fmt_grade(judgements[doc])})"
            for doc in missed
        ]
        lines.append("")
    return lines


def _dcg_table(grades: Sequence[float | None], gain: str, name: str, k: int | None) -> tuple[float, list[str]]:
    """The term-by-term table of a DCG, with the kernels' own gain and discount (rag_eval._scoring.metrics.kernels)."""
    values = np.array([np.nan if g is None else g for g in grades], dtype=np.float64)
    gains = gain_values(values, gain) if values.size else values
    discounts = log2_rank(np.arange(1, values.size + 1)).tolist()
    exponential = gain == "exponential"
    head = (
        "| Position (i) | Grade | "
        + ("Gain 2^grade − 1 | " if exponential else "")
        + "log₂(i+1) | "
        + ("gain / log₂(i+1) |" if exponential else "grade / log₂(i+1) |")
    )
    lines = [f"**{name}{_at(k)}**", "", head, "|---:|---:|" + ("---:|" if exponential else "") + "---:|---:|"]
    total = 0.0
    terms = []
    for i, (grade, g, discount) in enumerate(zip(grades, gains.tolist(), discounts), start=1):
        term = g / discount
        total += term
        terms.append(fmt(term))
        grade_text = "unjudged (0)" if grade is None else fmt_grade(grade)
        gain_cell = f"{fmt(g)} | " if exponential else ""
        lines.append(f"| {i} | {grade_text} | {gain_cell}{fmt(discount)} | {fmt(term)} |")
    if not terms:
        lines = [f"**{name}{_at(k)}** = 0 (no terms)", ""]
        return 0.0, lines
    lines += ["", f"{name}{_at(k)} = " + " + ".join(terms) + f" = **{fmt(total)}**", ""]
    return total, lines


def interpretation(ndcg: float, grades: Sequence[float | None], judgements: Mapping[str, float], k: int | None) -> str:
    """One plain sentence on what the nDCG value says about this ranking."""
    if math.isnan(ndcg):
        return "No passage is judged relevant for this query, so nDCG cannot tell good from bad rankings here."
    relevant_total = sum(1 for g in judgements.values() if g > 0)
    found = sum(1 for g in grades if g is not None and g > 0)
    first = next((i for i, g in enumerate(grades, start=1) if g is not None and g > 0), None)
    unjudged = sum(1 for g in grades if g is None)
    where = f"in the top {k}" if k is not None else "retrieved"
    facts = f"{found} of {relevant_total} relevant passage{'' if relevant_total == 1 else 's'} {where}"
    if first is not None:
        facts += f", the first at rank {first}"
    if unjudged:
        facts += f"; {unjudged} unjudged passage{'s' if unjudged > 1 else ''} counted as not relevant"
    if ndcg >= 0.95:
        verdict = "Excellent: nearly the ideal order"
    elif ndcg >= 0.8:
        verdict = "Good: the best passages are near the top, with some misordering"
    elif ndcg >= 0.5:
        verdict = "Fair: relevant passages are found but ranked low, or some are missed"
    elif ndcg > 0:
        verdict = "Poor: most of the relevant material is missing or ranked low"
    else:
        verdict = "Failed: no relevant passage was found"  # the facts say where it was looked for
    return f"{verdict} ({facts})."


def passage_cell(doc: str, corpus: Mapping[str, Mapping[str, str]], limit: int, in_table: bool = True) -> str:
    """``text`` (id), the text cut to ``limit`` characters, the id shown exactly (see :func:`code_span`)."""
    passage = corpus.get(doc, {})
    text = shorten(one_line(passage.get("text", "")), limit)
    shown = code_span(doc, in_table)
    return f"{escape_cell(text)} ({shown})" if text else shown
