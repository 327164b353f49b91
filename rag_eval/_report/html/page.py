"""report.html assembled: one self-contained page, its style, data and script inlined (pure, no I/O).

The page loads nothing: its Content-Security-Policy (``default-src 'none'``) allows only images from
``data:`` URIs (the plots), and the one inline style sheet and script by their hashes, so that even a
text that slipped past the escaping could run no script and fetch nothing. The same run gives the
same bytes: nothing in the page depends on the time or the machine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag_eval._report.html.assets_css import CSS
from rag_eval._report.html.data import RunData, build_data
from rag_eval._report.html.documents_data import document_details
from rag_eval._report.html.encode import csp_hash, script_json, text
from rag_eval._report.html.markdown_html import markdown_html, report_section
from rag_eval._report.html.script_detail import DETAIL_JS
from rag_eval._report.html.script_table import TABLE_JS
from rag_eval._report.html.sections import about_html, controls_html, header_html, holes_html, plots_html
from rag_eval._report.html.units_data import add_entries, encode_units, passage_texts, ranked_units, text_order
from rag_eval._scoring.metrics.measures import parse_metric

if TYPE_CHECKING:
    from rag_eval._report.plots import PlotSet
    from rag_eval._run.outcome import RunOutcome

__all__ = ["SCRIPT", "render_html_report", "run_data"]

SCRIPT = TABLE_JS + DETAIL_JS
# The heading of report.md's decision section (rag_eval._report.decision.render_decision), without its emoji.
DECISION_HEADING = "🏁 Decision"


def run_data(run: RunOutcome) -> RunData:
    """Everything the page embeds about ``run`` (rag_eval._report.html.data, .documents_data)."""
    built = build_data(run)
    data = built.data
    data["higher"] = [1 if parse_metric(name).higher_is_better else 0 for name in data["metrics"]]
    entry_units, rankings = add_entries(built, ranked_units(run))
    order = text_order(entry_units, rankings)
    if data["kind"] == "documents":
        document_details(built, entry_units, order)
        encode_units(built, entry_units)
    else:
        encode_units(built, entry_units, passage_texts(built, entry_units, order))
    return built


def render_html_report(run: RunOutcome, plots: PlotSet | None = None, report: str = "") -> str:
    """The whole report.html of ``run``.

    ``plots``: the run's plots (embedded); ``report``: the text of its report.md, whose decision section
    the page shows (rendered, without the timing columns); empty: no decision section.
    """
    config = run.config.model
    title = config.report.title or f"RAG Evaluation: {run.config.name}"
    data = run_data(run).data
    decision = markdown_html(report_section(report, DECISION_HEADING))
    if decision:
        decision = decision.replace("<h2>", '<h2 id="decision-h">', 1)
        decision = f'<section id="decision" aria-labelledby="decision-h">{decision}</section>'
    policy = (
        f"default-src 'none'; img-src data:; style-src {csp_hash(CSS)}; script-src {csp_hash(SCRIPT)}; "
        "base-uri 'none'; form-action 'none'"
    )
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="generator" content="rag_eval">',
        f"<title>{text(title)}</title>",
        '<link rel="icon" href="data:,">',
        f"<style>{CSS}</style>",
        "</head>",
        "<body>",
        header_html(run, title, data),
        "<main>",
        decision,
        holes_html(run),
        plots_html(plots),
        controls_html(data),
        about_html(data),
        "</main>",
        _dialog(),
        f'<script type="application/json" id="report-data">{script_json(data)}</script>',
        f"<script>{SCRIPT}</script>",
        "</body>",
        "</html>",
        "",
    ])


def _dialog() -> str:
    """The drill-down's frame; the script fills its body for the query opened."""
    return (
        '<dialog id="detail" aria-labelledby="detail-h">'
        '<div class="detail-head"><h2 id="detail-h">Query <code id="detail-qid"></code></h2>'
        '<div><button type="button" id="detail-prev">‹ Previous query</button> '
        '<button type="button" id="detail-next">Next query ›</button> '
        '<button type="button" id="detail-close">Close (Esc)</button></div></div>'
        '<div class="detail-body" id="detail-body"></div></dialog>'
    )
