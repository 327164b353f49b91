"""The run report: Results in, GitHub-flavoured markdown out (pure, no I/O).

Shaped like the ocean-facts seed: what was evaluated and with which semantics,
a summary table, a per-query table, then for each detailed query the derivation
of its nDCG@k (rag_eval._report.derivation). A dataset of documents gets its own
counts, chunking and summary from rag_eval._report.documents and its detailed
queries from rag_eval._report.retrieved_chunks. Rounding happens in the report
modules and only there.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rag_eval._report import documents, retrieved_chunks
from rag_eval._report.decision import decision_lines
from rag_eval._report.derivation import derivation_lines
from rag_eval._report.documents import chunking_lines, counts_line, semantics_lines
from rag_eval._report.external import external_lines
from rag_eval._report.format import (
    code_span,
    count_queries,
    detail_intro,
    escape_cell,
    escape_inline,
    fmt,
    mean_notes,
    means_sentence,
    select_detailed_queries,
    semantics_phrases,
    shorten,
)
from rag_eval._report.holes import holes_lines
from rag_eval._report.label_sources import label_sources_lines
from rag_eval._report.origins import origin_lines
from rag_eval._report.plots import plot_lines
from rag_eval._run.plan import REPORT_HTML
from rag_eval._run.results_file import recorded_params
from rag_eval._scoring.metrics.measures import parse_metric

if TYPE_CHECKING:  # imported for annotations only: rendering needs no runner
    from rag_eval._report.plots import PlotSet
    from rag_eval._run.outcome import RetrieverOutcome, RunOutcome

NOT_COMPUTED = "–"  # a metric some retriever of the run has no value for (said where it is shown)


# report.md is the summary a code host and a CI job summary show: at most this many bytes for any run.
# The per-query table keeps its worst rows and the detailed queries are left to report.html past it.
MAX_REPORT_BYTES = 200_000
# Rows of the per-query table at most: beyond that the worst queries (report.html and per-query.csv hold all).
PER_QUERY_ROWS = 100


def render_run_report(run: RunOutcome, plots: PlotSet | None = None) -> str:
    """The whole report.md of a run; ``plots`` (written beside it) are linked with their numbers in text.

    Bounded by :data:`MAX_REPORT_BYTES`: a report that would be larger is rendered again without its
    detailed queries, then with a shorter per-query table, each time saying where the rest is.
    """
    for rows, details in ((PER_QUERY_ROWS, True), (PER_QUERY_ROWS, False), (20, False), (0, False)):
        text = _render(run, plots, rows, details)
        if len(text.encode("utf-8")) <= MAX_REPORT_BYTES:
            return text
    return text  # only the header, decision and summary remain: nothing smaller says the run's result


def _render(run: RunOutcome, plots: PlotSet | None, rows: int, details: bool) -> str:
    config = run.config.model
    main = config.primary_metric
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
    out += label_sources_lines(run, main, getattr(run.config, "baseline_label", None))  # empty without model grades
    if plots is not None and plots.files:

        out += ["**Plots** (SVG beside this report; each line gives the same numbers in text)", ""]
        out += [*plot_lines(list(plots.files), plots.texts), ""]
    if run.dataset.has_documents:

        out += documents.summary_lines(run)
        out += origin_lines(run)
        out += holes_lines(run, main)
        out += external_lines(run)
        out += _per_query_table(run, main, rows, documents.per_query_missing_note(main))
        out += retrieved_chunks.detailed_lines(run, main) if details else _details_left_out(run, main)
    else:
        out += _summary(run, main)
        out += origin_lines(run)
        out += holes_lines(run, main)
        out += external_lines(run)
        out += _per_query_table(run, main, rows)
        out += derivation_lines(run, main) if details else _details_left_out(run, main)
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
        f"- **Explore:** [{REPORT_HTML}]({REPORT_HTML}), every query sortable and filterable, each ranking with its grades and derivation (open it in a browser)",
    ]
    for note in dataset.notes:
        lines.append(f"- **Note:** {escape_inline(note)}")
    lines += _stale_lines(dataset.stale_evidence)
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
            json.dumps(recorded_params(outcome.spec.params), sort_keys=True, ensure_ascii=False, default=str)
            if outcome.spec.params
            else "defaults"
        )
        notes = _description_notes(outcome.description)
        index_s, search_s = (outcome.timings.get(key, float("nan")) for key in ("index_s", "search_s"))
        lines.append(
            f"| {escape_cell(outcome.label)} | {escape_cell(outcome.spec.adapter)} | "
            f"{escape_cell(shorten(params, 200))} | {index_s:.3f} | {search_s:.3f} | {escape_cell(notes)} |"
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




# Stale evidence spans the report lists one by one at the most (the rest are counted; the check lists all).
_STALE_LISTED = 20


def _stale_lines(stale: Sequence[tuple[str, Any]]) -> list[str]:
    """``- **Stale evidence:** ...`` and one line per stale span: query, document, old span, status, new span."""
    if not stale:
        return []
    spans = f"{len(stale):,} span{'s' if len(stale) != 1 else ''}"
    lines = [f"- **Stale evidence ({spans}):** the documents changed under these judgements, so the metrics score text "
             "that is not what was judged; regression gates fail on them unless `regression.on_stale_evidence: allow` "
             "(`rag-eval judgements check --fix` re-anchors the moved ones)"]
    for qid, finding in stale[:_STALE_LISTED]:
        item = finding.item
        moved = f" to [{finding.new[0]}, {finding.new[1]})" if finding.status == "moved" and finding.new else ""
        lines.append(f"  - {escape_inline(qid)}: {escape_inline(item.doc)} [{item.start}, {item.end}) "
                     f"{finding.status}{moved}")
    if len(stale) > _STALE_LISTED:
        lines.append(f"  - ... and {len(stale) - _STALE_LISTED:,} more")
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
    """What an approximate index cost, in words (see rag_eval._run.passages.approximation_of); None without a measure."""
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
        best[name] = parse_metric(name).best(values) if values else None  # in the metric's direction
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






def _details_left_out(run: RunOutcome, main: str) -> list[str]:
    """In place of the detailed queries of a report past its size: where they are."""
    if run.config.model.report.detailed_queries < 1:
        return []
    return ["## 🧩 Detailed queries", "",
            f"Left out of report.md to keep it under {MAX_REPORT_BYTES // 1000} KB: report.html shows every query "
            f"in detail, each retriever's ranking with its grades and the {escape_inline(main)} derivation.", ""]


def _per_query_table(
    run: RunOutcome, main: str, rows: int = PER_QUERY_ROWS,
    not_applicable: str = "n/a = no relevant passage judged for the query (left out of the mean).",
) -> list[str]:
    """One row per judged query, one column of ``main`` per retriever ("–" where a retriever has no ``main``);
    past ``rows`` queries, the ``rows`` worst (mean of ``main`` over the retrievers), worst first."""
    outcomes = run.outcomes
    if not outcomes:
        return []
    query_ids = list(outcomes[0].results.query_ids)
    shown = list(range(len(query_ids)))
    heading = f"## 🔎 Per query: {main}"
    if rows == 0:
        return [heading, "", f"Left out to keep report.md under {MAX_REPORT_BYTES // 1000} KB: every query is in "
                "report.html and per-query.csv.", ""]
    if len(query_ids) > rows:
        chosen, _ = select_detailed_queries(run, main, rows)
        position = {qid: i for i, qid in enumerate(query_ids)}
        shown = [position[qid] for qid in chosen]
        heading += f" (the {len(shown)} worst of {len(query_ids):,} queries)"
    lines = [heading, ""]
    if len(shown) < len(query_ids):
        lines += [f"{detail_intro(run, main, [query_ids[i] for i in shown], True)} Every query: report.html and "
                  "per-query.csv.", ""]
    if not shown:
        return lines
    lines.append("| Query | Text | " + " | ".join(escape_cell(o.label) for o in outcomes) + " |")
    lines.append("|---|---|" + "---:|" * len(outcomes))
    any_missing = False
    columns = [o.results.values.get(main) for o in outcomes]  # None: not computed for that retriever
    for i in shown:
        qid = query_ids[i]
        text = run.dataset.queries[qid].text if qid in run.dataset.queries else ""
        cells = [NOT_COMPUTED if column is None else fmt(column[i]) for column in columns]
        any_missing = any_missing or "n/a" in cells
        lines.append(f"| {escape_cell(qid)} | {escape_cell(shorten(text, 100))} | " + " | ".join(cells) + " |")
    note = ["", not_applicable] if any_missing else []
    if any(column is None for column in columns):
        note += ["", f"{NOT_COMPUTED} = {main} not computed for this retriever (see the summary)."]
    return lines + note + [""]
