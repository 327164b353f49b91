"""Results -> text (trec_eval style), JSON or a markdown table, for the terminal."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from rag_eval.results import Results


def format_results(results: Results, fmt: str, per_query: bool = False, decimals: int = 4) -> str:
    """Render ``results`` as ``text``, ``json`` or ``markdown``.

    text: ``metric<TAB>qid<TAB>value`` lines, per-query rows first and ``all`` last,
    values to ``decimals`` places as trec_eval prints them; json keeps full precision.
    """
    if fmt == "json":
        data: dict[str, Any] = {"aggregate": {k: _json_value(v) for k, v in results.aggregate.items()}}
        if per_query:
            data["per_query"] = {
                qid: {name: _json_value(results.values[name][i]) for name in results.metric_names}
                for i, qid in enumerate(results.query_ids)
            }
        return json.dumps(data, indent=2, allow_nan=False) + "\n"
    if fmt == "markdown":
        return _markdown(results, per_query, decimals)
    if fmt == "text":
        return _text(results, per_query, decimals)
    raise ValueError(f"unknown format {fmt!r}")


def _text(results: Results, per_query: bool, decimals: int) -> str:
    lines = []
    if per_query:
        for i, qid in enumerate(results.query_ids):
            for name in results.metric_names:
                value = results.values[name][i]
                if not math.isnan(value):
                    lines.append(f"{name}\t{qid}\t{value:.{decimals}f}")
    for name in results.metric_names:
        lines.append(f"{name}\tall\t{_fmt(results.aggregate[name], decimals)}")
    return "\n".join(lines) + "\n"


def _markdown(results: Results, per_query: bool, decimals: int) -> str:
    names = results.metric_names
    out = ["| metric | value |", "|---|---:|"]
    out += [f"| {name} | {_fmt(results.aggregate[name], decimals)} |" for name in names]
    if per_query:
        out += ["", "| query | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
        for i, qid in enumerate(results.query_ids):
            cells = [_fmt(results.values[name][i], decimals) for name in names]
            out.append(f"| {escape_cell(qid)} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def mean_notes(results: Results, metric: str, judgements: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Why ``metric``'s mean is what it is, where that is not obvious: one short phrase per reason.

    Judged queries the retriever answered with nothing (scored 0, kept in the mean) and
    judged queries without a relevant passage, which the ``no_relevant`` choice leaves
    out (skip) or scores 0 (zero): the same ranking then gives another mean than
    trec_eval's (skip) or than the default's (zero).
    """
    from rag_eval.metrics.measures import parse_metric

    parsed = parse_metric(metric)
    left_out = set(results.left_out.get(metric, ()))
    in_mean = [q for q in results.query_ids if q not in left_out]
    notes = []
    unanswered = [q for q in results.unanswered_queries if q not in left_out]
    if unanswered:
        notes.append(f"{len(unanswered)} of {_queries(len(in_mean), 'judged')} unanswered, scored 0")
    if left_out:
        notes.append(
            f"{_queries(len(left_out), 'judged')} with no relevant passage left out of the mean "
            "(no_relevant: skip; trec_eval scores them 0)"
        )
    elif results.options.get("no_relevant") == "zero" and parsed.uses_relevance:
        threshold = float(results.options.get("relevance_threshold", 1.0))
        # The metric's own notion of relevant: any grade > 0 gains for nDCG, binary metrics need the threshold.
        relevant = (lambda g: g > 0) if parsed.is_graded else (lambda g: g >= threshold)
        none = [q for q in results.query_ids if not any(relevant(g) for g in judgements.get(q, {}).values())]
        if none:
            notes.append(f"{_queries(len(none), 'judged')} with no relevant passage scored 0 (no_relevant: zero)")
    return notes


def _queries(n: int, adjective: str) -> str:
    return f"{n} {adjective} quer{'y' if n == 1 else 'ies'}"


def _fmt(value: float, decimals: int) -> str:
    return "n/a" if math.isnan(value) else f"{value:.{decimals}f}"


def _json_value(value: float) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def escape_cell(text: str) -> str:
    """Make any text safe inside a GitHub markdown table cell."""
    text = str(text).replace("\\", "\\\\").replace("|", "\\|")
    text = " ".join(text.split())  # newlines and tabs would end the row
    for ch in "*_`[]<>#~":
        text = text.replace(ch, "\\" + ch)
    return text
