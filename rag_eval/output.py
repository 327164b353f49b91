"""Results -> text (trec_eval style), JSON or a markdown table, for the terminal."""

from __future__ import annotations

import json
import math

from rag_eval.results import Results


def format_results(results: Results, fmt: str, per_query: bool = False, decimals: int = 4) -> str:
    """Render ``results`` as ``text``, ``json`` or ``markdown``.

    text: ``metric<TAB>qid<TAB>value`` lines, per-query rows first and ``all`` last,
    values to ``decimals`` places as trec_eval prints them; json keeps full precision.
    """
    if fmt == "json":
        data = {"aggregate": {k: _json_value(v) for k, v in results.aggregate.items()}}
        if per_query:
            data["per_query"] = {
                qid: {name: _json_value(results.values[name][i]) for name in results.metric_names}
                for i, qid in enumerate(results.query_ids)
            }
        return json.dumps(data, indent=2) + "\n"
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
