"""The run report: Results in, GitHub-flavoured markdown out (pure, no I/O).

Shaped like the ocean-facts seed: what was evaluated and with which semantics,
a summary table, a per-query table, then for each query the derivation of its
nDCG@k: retrieved passages with grades, the term-by-term DCG table, the ideal
order with its IDCG table, the quotient, and a one-line interpretation.
A dataset of documents gets its own counts, chunking, summary and detailed
queries from rag_eval._report.documents (loaded only for such a dataset).
Rounding happens here and only here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from rag_eval._core.ranking import ranked_ids
from rag_eval._report import documents
from rag_eval._report.decision import decision_lines
from rag_eval._report.documents import chunking_lines, counts_line, semantics_lines
from rag_eval._report.format import (
    code_span,
    count_queries,
    detail_intro,
    escape_cell,
    escape_inline,
    fmt,
    fmt_grade,
    mean_notes,
    means_sentence,
    select_detailed_queries,
    semantics_phrases,
)
from rag_eval._report.plots import plot_lines
from rag_eval._scoring.metrics.kernels import gain_values
from rag_eval._scoring.metrics.measures import parse_metric

if TYPE_CHECKING:  # imported for annotations only: rendering needs no runner
    from rag_eval._report.plots import PlotSet
    from rag_eval._run.outcome import RetrieverOutcome, RunOutcome

NOT_COMPUTED = "–"  # a metric some retriever of the run has no value for (said where it is shown)


def render_run_report(run: RunOutcome, plots: PlotSet | None = None) -> str:
    """The whole report.md of a run; ``plots`` (written beside it) are linked with their numbers in text."""
    config = run.config.model
    main = config.primary_metric
    k = _derivation_cutoff(main, config.top_k)
    options = run.outcomes[0].results.options if run.outcomes else {}
    out: list[str] = []
    title = config.report.title or f"RAG Evaluation: {run.config.name}"
    out += [f"# {escape_inline(title)}", ""]
    out += _header(run, options)
    if len(run.outcomes) >= 2:  # which retriever wins, by how much, and is it real (rag_eval._compare.decision)

        regression = config.regression
        out += decision_lines(
            run, main, getattr(run.config, "baseline_label", None),
            n_resamples=regression.resamples if regression else 10_000, seed=regression.seed if regression else 0,
        )
    if plots is not None and plots.files:

        out += ["**Plots** (SVG beside this report; each line gives the same numbers in text)", ""]
        out += [*plot_lines(list(plots.files), plots.texts), ""]
    if run.dataset.has_documents:

        out += documents.summary_lines(run)
        out += _per_query_table(run, main, documents.per_query_missing_note(main))
        out += documents.detailed_lines(run, main)
    else:
        out += _summary(run, main)
        out += _per_query_table(run, main)
        out += _derivations(run, main, k)
    return "\n".join(out).rstrip() + "\n"


# ---- header ----------------------------------------------------------------------------


def _header(run: RunOutcome, options: Mapping[str, Any]) -> list[str]:
    dataset = run.dataset
    config = run.config.model
    judged = len(dataset.judged_query_ids)
    counts = (
        f"- **Queries:** {len(dataset.queries)} ({judged} with judgements), **passages:** {len(dataset.corpus)}, "
        f"**judgements:** {sum(len(j) for j in dataset.judgements.values())}"
    )
    if dataset.has_documents:

        counts = counts_line(dataset)
    lines = [
        "## 📚 What was evaluated",
        "",
        (
            f"- **Dataset:** {escape_inline(dataset.name)} ({code_span(dataset.source)}), "
            f"fingerprint `{dataset.fingerprint}`"
        ),
        counts,
        f"- **Retrieved per query (top_k):** {config.top_k}",
        f"- **Run at:** {run.created}",
    ]
    for note in dataset.notes:
        lines.append(f"- **Note:** {escape_inline(note)}")
    unjudged = dataset.unjudged_query_ids
    if unjudged:
        lines.append(f"- **Queries without judgements (not scored):** {escape_inline(', '.join(unjudged))}")
    lines += [
        "",
        "**Retrievers**",
        "",
        "| Retriever | Adapter | Parameters | Index (s) | Search (s) | Notes |",
        "|---|---|---|---:|---:|---|",
    ]
    for outcome in run.outcomes:
        params = (
            json.dumps(outcome.spec.params, sort_keys=True, ensure_ascii=False, default=str)
            if outcome.spec.params
            else "defaults"
        )
        notes = _description_notes(outcome.description)
        index_s, search_s = (outcome.timings.get(key, float("nan")) for key in ("index_s", "search_s"))
        lines.append(
            f"| {escape_cell(outcome.label)} | {escape_cell(outcome.spec.adapter)} | "
            f"{escape_cell(_shorten(params, 200))} | {index_s:.3f} | {search_s:.3f} | {escape_cell(notes)} |"
        )
    if dataset.has_documents:

        lines += ["", *chunking_lines(run), "**Semantics** (what the numbers mean)", ""]
        return lines + semantics_lines(options, config.evaluation.min_evidence_fraction) + [""]
    gain_text, policy, aggregation = semantics_phrases(options, "left out of the mean and listed")
    lines += [
        "",
        "**Semantics** (what the numbers mean)",
        "",
        (
            f"- nDCG: {gain_text}; discount 1 / log₂(rank + 1); "
            "ideal ranking built from all judged passages with grade > 0, retrieved or not."
        ),
        "- Ties: equal scores are ordered by passage id, descending (trec_eval's rule).",
        (
            "- Binary metrics (precision, recall, MRR, MAP, hit rate): "
            f"relevant = grade ≥ {options.get('relevance_threshold', 1):g}."
        ),
        f"- A judged query with no relevant passage: {policy}. A judged query with nothing retrieved scores 0.",
        f"- Dataset value: {aggregation}.",
        "",
    ]
    return lines




def _description_notes(description: Mapping[str, Any]) -> str:
    keys = ("model", "library", "cache", "source", "method", "ranking_cache")
    parts = [f"{k}: {_note_value(k, description)}" for k in keys if k in description and description[k] not in (None, "")]
    parts += [note for note in (_encoding_note(description), _index_note(description)) if note]
    if description.get("execution") == "ray":
        streamed = str(description.get("corpus", "")).startswith("streamed")
        where = "; the workers read the corpus from its file" if streamed else ""
        parts.append(f"execution: ray (encoded and searched on the cluster{where})")
    cost = approximation_note(description.get("approximation"))
    if cost:
        parts.append(cost)
    return "; ".join(parts)


def _encoding_note(description: Mapping[str, Any]) -> str | None:
    """How a dense model encoded, when not the default torch fp32 on one device (also on a cache hit)."""
    params = description.get("parameters")
    if not isinstance(params, Mapping) or "backend" not in params:
        return None
    backend, quantize, precision = params.get("backend"), params.get("quantize"), params.get("precision")
    devices = params.get("devices")
    if backend == "torch" and precision == "fp32" and not devices:
        return None
    text = f"encoding: {backend}" + (" int8" if quantize == "int8" else "") + (f" {precision}" if precision != "fp32" else "")
    if devices:
        text += f" on {', '.join(map(str, devices))}"
    encoder = description.get("encoder") or description.get("scorer")
    if isinstance(encoder, Mapping) and encoder.get("export") in ("built", "rebuilt"):
        text += " (model exported by this run)"
    return text


def _index_note(description: Mapping[str, Any]) -> str | None:
    """An approximate index with the settings it was built and searched with (defaults filled in)."""
    index = description.get("index")
    if not isinstance(index, Mapping) or not index.get("kind"):
        return None
    names = ("m", "ef_construction", "ef_search", "nlist", "nprobe", "pq_m", "pq_bits", "refine")
    settings = ", ".join(f"{name} {index[name]}" for name in names if index.get(name) is not None)
    return f"index: {index['kind']}" + (f" ({settings})" if settings else "")


def approximation_note(cost: Any) -> str | None:
    """What an approximate index cost, in words (see rag_eval._commands.runner.approximation_of); None without a measure."""
    if not isinstance(cost, Mapping) or not isinstance(cost.get("overlap_mean"), (int, float)):
        return None
    text = (
        f"approximate index: overlap@{cost.get('k')} with exact search {cost['overlap_mean']:.4f} "
        f"(min {cost.get('overlap_min', float('nan')):.4f}) on {cost.get('queries')} queries"
    )
    if isinstance(cost.get("metric_difference"), (int, float)):
        text += (
            f"; {cost.get('metric')} {cost['metric_approx']:.4f} against {cost['metric_exact']:.4f} exact "
            f"({cost['metric_difference']:+.4f}, on {cost.get('metric_queries')} judged)"
        )
    return text


def _note_value(key: str, description: Mapping[str, Any]) -> Any:
    """A description field as the notes show it; the embedding cache says how many passages it encoded and reused."""
    value = description[key]
    encoded, reused = description.get("passages_encoded"), description.get("passages_reused")
    if key == "cache" and value in ("hit", "partial", "miss") and isinstance(encoded, int) and isinstance(reused, int):
        return f"{value} ({encoded:,} passages encoded, {reused:,} reused)"
    if key == "ranking_cache" and value == "hit":  # the ranking was reused: nothing above happened in this run
        return "hit (times and notes from the run that stored the ranking)"
    return value


# ---- summary and per-query tables ------------------------------------------------------------


def _summary(run: RunOutcome, main: str) -> list[str]:
    """The table of dataset values, one row per retriever, then what was scored and left out.

    Where the main metric's mean needs a reason to be read right (a retriever that
    answered few queries, queries left out by ``no_relevant``), the reason stands in a
    last column beside the number: the same phrases the terminal prints
    (:func:`rag_eval._report.format.mean_notes`).
    """
    outcomes = run.outcomes
    metrics = run.config.model.metrics
    lines = ["## 📊 Summary", ""]
    if not outcomes:
        return lines + ["No retriever was run.", ""]
    notes = {o.label: mean_notes(o.results, main, run.dataset.judgements, run.dataset.evidence) for o in outcomes}
    why = any(notes.values())
    best = {}
    for name in metrics:
        values = [o.results.aggregate[name] for o in outcomes if not math.isnan(o.results.aggregate[name])]
        best[name] = max(values) if values else None
    lines.append("| Retriever | " + " | ".join(metrics) + " |" + (f" Note on {main} |" if why else ""))
    lines.append("|---|" + "---:|" * len(metrics) + ("---|" if why else ""))
    for outcome in outcomes:
        cells = []
        for name in metrics:
            value = outcome.results.aggregate[name]
            text = fmt(value)
            # Compare the printed values: a tie at 4 decimals is a tie for the reader.
            # Only quality metrics (those needing a relevant document) have a "best"; not dcg or judged.
            if parse_metric(name).uses_relevance and (
                best[name] is not None and len(outcomes) > 1 and text == fmt(best[name])
            ):
                text = f"**{text}**"
            cells.append(text)
        if why:
            cells.append(escape_cell("; ".join(notes[outcome.label])))
        lines.append(f"| {escape_cell(outcome.label)} | " + " | ".join(cells) + " |")
    bold = "; **bold** = best in its column" if len(outcomes) > 1 else ""
    lines += ["", f"{means_sentence(outcomes[0].results)}{bold}."]
    left = _left_out_lines(outcomes, metrics, run.dataset.unjudged_query_ids)
    lines += left + [""]
    return lines




def _left_out_lines(outcomes: Sequence[RetrieverOutcome], metrics: Sequence[str], unjudged: Sequence[str]) -> list[str]:
    results = outcomes[0].results
    scored = len(results.query_ids)
    lines = [f"Queries scored: {scored}."]
    if unjudged:
        lines.append(
            f"Not scored: {count_queries(len(unjudged))} without judgements ({escape_inline(', '.join(unjudged))})."
        )
    by_reason: dict[tuple[str, ...], list[str]] = {}
    for name in metrics:
        missing = results.left_out.get(name, ())
        if missing:
            by_reason.setdefault(tuple(missing), []).append(name)
    for missing, names in by_reason.items():
        lines.append(
            f"Left out of {', '.join(names)}: {count_queries(len(missing))} "
            f"with no relevant passage ({escape_inline(', '.join(missing))})."
        )
    for outcome in outcomes:
        unanswered = outcome.results.unanswered_queries
        if not unanswered:
            continue
        one = len(unanswered) == 1
        # A query with no relevant passage is left out of some means (said above) even when unanswered.
        left_out = set().union(*outcome.results.left_out.values())
        if left_out.intersection(unanswered):
            effect = "it scores 0 in every mean it enters" if one else "they score 0 in every mean they enter"
        else:
            effect = "it scores 0 and stays in the mean" if one else "they score 0 and stay in the mean"
        lines.append(
            f"{escape_inline(outcome.label)} retrieved nothing for {count_queries(len(unanswered), 'judged')}; {effect}."
        )
    return [" ".join(lines)]






def _per_query_table(
    run: RunOutcome, main: str, not_applicable: str = "n/a = no relevant passage judged for the query (left out of the mean)."
) -> list[str]:
    """One row per judged query, one column of ``main`` per retriever ("–" where a retriever has no ``main``)."""
    outcomes = run.outcomes
    if not outcomes:
        return []
    query_ids = outcomes[0].results.query_ids
    lines = [
        f"## 🔎 Per query: {main}",
        "",
        "| Query | Text | " + " | ".join(escape_cell(o.label) for o in outcomes) + " |",
    ]
    lines.append("|---|---|" + "---:|" * len(outcomes))
    any_missing = False
    columns = [o.results.values.get(main) for o in outcomes]  # None: not computed for that retriever
    for i, qid in enumerate(query_ids):
        text = run.dataset.queries[qid].text if qid in run.dataset.queries else ""
        cells = [NOT_COMPUTED if column is None else fmt(column[i]) for column in columns]
        any_missing = any_missing or "n/a" in cells
        lines.append(f"| {escape_cell(qid)} | {escape_cell(_shorten(text, 100))} | " + " | ".join(cells) + " |")
    note = ["", not_applicable] if any_missing else []
    if any(column is None for column in columns):
        note += ["", f"{NOT_COMPUTED} = {main} not computed for this retriever (see the summary)."]
    return lines + note + [""]


# ---- derivations ---------------------------------------------------------------------------


def _derivation_cutoff(main: str, top_k: int) -> int | None:
    """The cutoff of the derivation: the main metric's k; None for plain ``ndcg``.

    trec_eval's ``ndcg`` has no cutoff: DCG over the whole ranking, IDCG over every
    judged relevant passage. Cutting its ideal at top_k would print another number.
    """
    metric = parse_metric(main)
    if metric.k is not None:
        return metric.k
    return None if metric.name == "ndcg" else top_k


def _at(k: int | None) -> str:
    return "" if k is None else f"@{k}"




def _derivations(run: RunOutcome, main: str, k: int | None) -> list[str]:
    config = run.config.model
    chosen, worst = select_detailed_queries(run, main, config.report.detailed_queries)
    if not chosen:
        return []
    options = run.outcomes[0].results.options
    gain = options.get("gain", "linear")
    heading = f"## 🧮 How nDCG{_at(k)} was computed"
    lines = [heading, "", detail_intro(run, main, chosen, worst), ""]
    for qid in chosen:
        query = run.dataset.queries.get(qid)
        lines += [f"### {escape_inline(qid)}: “{escape_inline(query.text if query else '')}”", ""]
        for outcome in run.outcomes:
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

    values = np.array([np.nan if g is None else g for g in grades], dtype=np.float64)
    gains = gain_values(values, gain) if values.size else values
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
    for i, (grade, g) in enumerate(zip(grades, gains.tolist()), start=1):
        discount = math.log2(i + 1)
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


# ---- formatting helpers --------------------------------------------------------------------






def passage_cell(doc: str, corpus: Mapping[str, Mapping[str, str]], limit: int, in_table: bool = True) -> str:
    """``text`` (id), the text cut to ``limit`` characters, the id shown exactly (see :func:`code_span`)."""
    passage = corpus.get(doc, {})
    text = _shorten(" ".join(str(passage.get("text", "")).split()), limit)
    shown = code_span(doc, in_table)
    return f"{escape_cell(text)} ({shown})" if text else shown


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


