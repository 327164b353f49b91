"""Sections of report.md shown in report.html as they are: the decision and the holes, markdown rendered as HTML.

The decision section (verdict table, ties, power, tag tables, sensitivity) is taken from the text
of report.md itself (rag_eval._report.decision wrote it), so both files show the same numbers and
the bootstrap and permutation tests run once. markdown-it-py renders it with raw HTML off: every
``<`` of a label or a tag value reaches the page escaped, and no link but a plain one can be made
(report.md escapes ``[``, so it holds none). Two changes to what it renders:

- the timing columns (``Index (s)``, ``Search (s)``) are dropped: report.html holds nothing that
  changes between two runs of the same config (report.md and the results files have the times);
- alignment becomes a class (``num``) instead of a ``style`` attribute, which the page's
  Content-Security-Policy would refuse.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["DROPPED_COLUMNS", "markdown_html", "report_section"]

DROPPED_COLUMNS = frozenset({"Index (s)", "Search (s)"})


def report_section(report: str, heading: str) -> list[str]:
    """The lines of ``report``'s section whose ``## `` heading starts with ``heading``, up to the next ``## ``."""
    lines = report.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("## ") and line[3:].startswith(heading)), None)
    if start is None:
        return []
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


def markdown_html(lines: Sequence[str], shift: int = 0) -> str:
    """``lines`` of report.md as HTML: tables wrapped to scroll, timing columns dropped, headings ``shift`` deeper."""
    if not lines:
        return ""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = md.parse("\n".join(lines))
    tokens = list(_without_columns(tokens, DROPPED_COLUMNS))
    for token in tokens:
        style = token.attrs.pop("style", None) if token.attrs else None
        if style is not None and "right" in str(style):
            token.attrSet("class", "num")
        if shift and token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(6, int(token.tag[1]) + shift)}"
    for i, token in enumerate(tokens[:-1]):
        if token.type == "heading_open":  # report.md's headings start with an emoji; fonts without one show a box
            _strip_symbols(tokens[i + 1])
    html = md.renderer.render(tokens, md.options, {})
    return html.replace("<table>", '<div class="scroll"><table class="static">').replace("</table>", "</table></div>")


def _strip_symbols(inline: Any) -> None:
    """Drop the symbols (emoji) and spaces that start a heading's text (``inline``: the heading's inline token)."""
    content = inline.content
    rest = content.lstrip()
    while rest and unicodedata.category(rest[0]) in ("So", "Sk", "Mn", "Cf"):  # emoji, their modifiers and joiners
        rest = rest[1:].lstrip()
    prefix = content[: len(content) - len(rest)]
    if not prefix or not rest:
        return
    inline.content = rest
    first = next((child for child in inline.children or [] if child.type == "text"), None)
    if first is not None and first.content.startswith(prefix):
        first.content = first.content[len(prefix):]


def _without_columns(tokens: Sequence[Any], names: Iterable[str]) -> Iterable[Any]:
    """``tokens`` with the columns of every table whose head cell's text is one of ``names`` removed."""
    drop = set(names)
    dropped: set[int] = set()
    column = -1
    skipping = False
    for i, token in enumerate(tokens):
        if token.type == "table_open":
            dropped = set()
        elif token.type == "thead_open":
            dropped = _head_columns(tokens, i, drop)
        elif token.type == "tr_open":
            column = -1
        if token.type in ("th_open", "td_open"):
            column += 1
            skipping = column in dropped
        if not skipping:
            yield token
        if token.type in ("th_close", "td_close"):
            skipping = False


def _head_columns(tokens: Sequence[Any], start: int, drop: set[str]) -> set[int]:
    """The numbers of the head cells, from ``tokens[start]`` (a thead_open), whose text is in ``drop``."""
    out: set[int] = set()
    column = -1
    for token in tokens[start:]:
        if token.type == "thead_close":
            break
        if token.type == "th_open":
            column += 1
        elif token.type == "inline" and token.content in drop:
            out.add(column)
    return out
