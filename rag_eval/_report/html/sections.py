"""report.html's static sections, written as HTML here: the header, the holes, the plots, the table's controls.

They need no script: a reader without JavaScript still gets the header, the decision, the holes
and the plots. Every text from the run goes through :func:`rag_eval._report.html.encode.text`.
Plots are embedded as ``data:`` URIs of their SVG (an ``<img>``: an SVG shown so runs no script),
each up to :data:`PLOT_EMBED_BYTES`; a larger one is linked, as the file beside the page, with its
text equivalent.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rag_eval._report.holes import holes_lines
from rag_eval._report.html.encode import attribute, text
from rag_eval._report.html.markdown_html import markdown_html
from rag_eval._report.plots import plot_lines

if TYPE_CHECKING:
    from rag_eval._report.plots import PlotSet
    from rag_eval._run.outcome import RunOutcome

__all__ = ["PLOT_EMBED_BYTES", "about_html", "controls_html", "header_html", "holes_html", "plots_html"]

# A plot's SVG larger than this is linked, not embedded (a plot drawn point by point grows with queries x variants).
PLOT_EMBED_BYTES = 1_000_000


def header_html(run: RunOutcome, title: str, data: Mapping[str, Any]) -> str:
    """The page's header: title, what was evaluated, how to read the numbers, links to the sections."""
    dataset = run.dataset
    config = run.config.model
    options = run.outcomes[0].results.options if run.outcomes else {}
    scored = len(data["qids"])
    units = (f"{len(dataset.documents):,} documents" if dataset.has_documents else f"{len(dataset.corpus):,} passages")
    facts = [
        f"<strong>Dataset:</strong> {text(dataset.name)} (<code>{text(dataset.source)}</code>), fingerprint "
        f"<code>{text(dataset.fingerprint)}</code>",
        f"<strong>Queries:</strong> {len(dataset.queries):,} ({scored:,} scored), {units}",
        f"<strong>Retrievers:</strong> {len(run.outcomes)}; retrieved per query (top_k): {config.top_k}",
        f"<strong>Main metric:</strong> <code>{text(config.primary_metric)}</code>; gain "
        f"{text(options.get('gain', 'linear'))}, no_relevant {text(options.get('no_relevant', 'skip'))}, "
        f"relevant = grade ≥ {float(options.get('relevance_threshold', 1)):g}",
    ]
    if data["base"] is not None:
        facts.append(f"<strong>Δ columns:</strong> each retriever minus <code>{text(data['labels'][data['base']])}</code> "
                     "(the declared baseline, else the best mean, as in the plots)")
    unjudged = dataset.unjudged_query_ids
    if unjudged:
        shown = ", ".join(unjudged[:20]) + (f" and {len(unjudged) - 20:,} more" if len(unjudged) > 20 else "")
        facts.append(f"<strong>Queries without judgements (not scored):</strong> {text(shown)}")
    items = "".join(f"<li>{fact}</li>" for fact in facts)
    return (
        '<header class="page"><a class="skip" href="#queries">Skip to the queries</a>'
        f"<h1>{text(title)}</h1>"
        '<p class="muted">The run\'s interactive report: the same numbers as report.md beside it, every query '
        "sortable and filterable, each ranking with its grades and derivation. One file: it needs no network.</p>"
        f'<ul class="facts">{items}</ul>'
        '<nav class="toc" aria-label="Sections"><a href="#decision">Decision</a><a href="#holes">Holes</a>'
        '<a href="#plots">Plots</a><a href="#queries">Queries</a><a href="#about">About this page</a></nav>'
        "</header>"
    )


def holes_html(run: RunOutcome) -> str:
    """The holes table of report.md's summary (rag_eval._report.holes), as HTML; empty without holes recorded."""
    lines = holes_lines(run, run.config.model.primary_metric)
    if not lines:
        return ""
    return f'<section id="holes" aria-labelledby="holes-h"><h2 id="holes-h">Holes</h2>{markdown_html(lines)}</section>'


def plots_html(plots: PlotSet | None) -> str:
    """Each plot embedded (or, past the size limit, linked) with its text equivalent; empty without plots."""
    if plots is None or not plots.files:
        return ""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False})
    figures = []
    for name, svg in plots.files.items():
        line = plot_lines([name], plots.texts)[0]
        caption = md.renderInline(line[2:])  # "- [title](file): text" without its bullet
        equivalent = plots.texts.get(name, name)
        size = len(svg.encode("utf-8"))
        if size <= PLOT_EMBED_BYTES:
            source = "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")
            body = f'<img src="{source}" alt="{attribute(equivalent)}">'
        else:
            body = (f'<p class="note">This plot is {size / 2**20:.1f} MiB, too large to embed (the limit is '
                    f'{PLOT_EMBED_BYTES / 2**20:.1f} MiB): <a href="{attribute(name)}">{text(name)}</a> is the file '
                    "beside this page.</p>")
        figures.append(f'<figure class="plot" data-plot="{attribute(name)}">{body}<figcaption>{caption}</figcaption>'
                       "</figure>")
    return '<section id="plots" aria-labelledby="plots-h"><h2 id="plots-h">Plots</h2>' + "".join(figures) + "</section>"


def controls_html(data: Mapping[str, Any]) -> str:
    """The per-query table's controls, its container and its pager (the script fills the table)."""
    metrics = "".join(
        f'<option value="{i}"{" selected" if i == data["main"] else ""}>{text(name)}</option>'
        for i, name in enumerate(data["metrics"])
    )
    view = ""
    if data["base"] is not None:
        view = ('<label>Columns <select id="view"><option value="both" selected>values and Δ to the baseline</option>'
                '<option value="values">values</option><option value="deltas">Δ to the baseline</option>'
                "</select></label>")
    tags = _tag_options(data["tags"], data["qtags"])
    tag = f'<label>Tag <select id="tag"><option value="-1">all queries</option>{tags}</select></label>' if tags else ""
    sizes = "".join(f'<option value="{n}"{" selected" if n == 100 else ""}>{n}</option>' for n in (25, 50, 100, 250, 500))
    return (
        '<section id="queries" aria-labelledby="queries-h"><h2 id="queries-h">Queries</h2>'
        '<div class="controls">'
        f'<label>Metric <select id="metric">{metrics}</select></label>{view}'
        '<label>Search (id or text) <input id="search" type="search" autocomplete="off" spellcheck="false"></label>'
        f"{tag}"
        f'<label class="check"><input id="holes-only" type="checkbox"> only queries with an unjudged unit in a top '
        f'{data["depth"]}</label>'
        f'<label>Rows per page <select id="page-size">{sizes}</select></label>'
        "</div>"
        '<p class="hint" id="table-hint">Sort with the column buttons. Rows: Tab to the table, arrow keys, Home / End '
        "and Page Up / Page Down to move, Enter to open a query (its rankings, grades and derivation), Esc to close. "
        "Deltas are differences of the values shown; ▲ above the baseline, ▼ below.</p>"
        '<p id="link-note" class="note" role="alert" hidden></p>'
        '<p id="status" role="status" aria-live="polite"></p>'
        '<div class="table-box"><table id="queries-table" class="grid" aria-describedby="table-hint">'
        "<caption class=\"muted\">One row per scored query; the values of the chosen metric per retriever</caption>"
        "</table></div>"
        '<nav class="pager" aria-label="Pages of the table">'
        '<button type="button" id="page-first">« First</button><button type="button" id="page-prev">‹ Previous</button>'
        '<span id="page-of"></span>'
        '<button type="button" id="page-next">Next ›</button><button type="button" id="page-last">Last »</button>'
        "</nav>"
        "<noscript><p>The per-query table and the drill-down need JavaScript; per-query.csv beside this page has every "
        "value.</p></noscript></section>"
    )


def _tag_options(tags: Sequence[Sequence[str]], qtags: Sequence[Sequence[int]]) -> str:
    """``<optgroup>`` per tag key, an option per value with its number of queries."""
    counts = [0] * len(tags)
    for numbers in qtags:
        for n in numbers:
            counts[n] += 1
    groups: dict[str, list[str]] = {}
    for n, (key, value) in enumerate(tags):
        groups.setdefault(key, []).append(f'<option value="{n}">{text(value)} ({counts[n]:,})</option>')
    return "".join(f'<optgroup label="{attribute(key)}">{"".join(options)}</optgroup>' for key, options in groups.items())


def about_html(data: Mapping[str, Any]) -> str:
    """How the page was built and what it leaves out: the depth of the rankings, the text budget."""
    left = data.get("textsLeftOut", 0)
    texts = (f"{left:,} texts were left out to keep the page small (they show their id only)" if left
             else "every text of the units shown is included")
    return (
        '<section id="about" aria-labelledby="about-h"><h2 id="about-h">About this page</h2><ul>'
        f"<li>Each ranking holds its top {data['depth']} units (a retriever returns at most top_k = {data['topk']} "
        "per query; each ranking says how many it holds of those it retrieved), with their grades; a passage "
        "dataset also holds every relevant passage of each query, for the ideal order.</li>"
        f"<li>Texts are cut to {data['chars']:,} characters (report.passage_chars) and given, rank by rank over all "
        f"queries, within {data['budget']:,} characters in all: {texts}.</li>"
        "<li>Values have 4 decimals, as in report.md; ties in a sorted column keep the queries' order. Full precision: "
        "per-query.csv and the results files (&lt;label&gt;.json).</li>"
        "<li>The page holds no time and loads nothing: it works from a file, offline, as a CI artifact.</li>"
        "</ul></section>"
    )
