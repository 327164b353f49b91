"""Evidence in bold: a retrieved chunk's text as one line of markdown, its evidence emphasised (pure, no I/O).

The detailed queries of a document dataset's report (rag_eval._report.documents) show each
retrieved chunk with the query's evidence inside it in bold. This module does that one job:

- :func:`cut_window`: the part of a chunk longer than the report's limit to show, cut around
  its evidence at word boundaries;
- :func:`marked_text`: that part as table-safe markdown with the evidence in ``**bold**``
  (or ``<b>…</b>`` where CommonMark's flanking rules would not open or close ``**``);
- the marks themselves: the evidence of a query per document as disjoint intervals
  (:func:`evidence_by_doc`), clipped to a chunk (:func:`clip`).
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

from rag_eval._report.format import escape_cell

Interval = tuple[int, int]
# A cut moves to the nearest space within this many characters, so that words stay whole.
WORD_SLACK = 20
_WHITESPACE = re.compile(r"\s+")

__all__ = ["WORD_SLACK", "Interval", "clip", "cut_window", "evidence_by_doc", "marked_text", "total_length", "union"]


def cut_window(text: str, start: int, end: int, marks: Sequence[Interval], limit: int) -> Interval:
    """The part of ``text[start:end]`` to show: all of it within ``limit`` characters, else a cut around the marks.

    The cut keeps the marked span (the evidence, sorted, inside [start, end)) in the middle of
    ``limit`` characters; evidence longer than ``limit`` is shown from its beginning. Each cut
    moves inward to a space within WORD_SLACK characters (a quarter of ``limit`` at most), never
    into the evidence, so that words stay whole.
    """
    if end - start <= limit:
        return start, end
    a, b = (marks[0][0], marks[-1][1]) if marks else (start, start)
    if b - a >= limit:
        s, e = a, a + limit
    else:
        room = limit - (b - a)
        before = min(room // 2, a - start)
        after = min(room - before, end - b)
        before = min(room - after, a - start)
        s, e = a - before, b + after
    slack = min(WORD_SLACK, limit // 4)
    if s > start:
        stop = min(s + slack, a) if marks else s + slack
        space = _WHITESPACE.search(text, s, max(stop, s))
        if space is not None and space.end() < e:
            s = space.end()
    if e < end:
        low = max(e - slack, s + 1) if b > e else max(e - slack, b, s + 1)
        spaces = list(_WHITESPACE.finditer(text, low, e))
        if spaces:
            e = spaces[-1].start()
    return s, e


def marked_text(
    text: str, start: int, end: int, marks: Sequence[Interval], cut_before: bool = False, cut_after: bool = False
) -> str:
    """``text[start:end]`` as one line of markdown (table-safe) with the ``marks`` in bold, … at each cut.

    Whitespace runs become one space, and a mark's outer spaces move outside its bold (GFM
    ignores ``** x**``). Emphasis opens and closes by CommonMark's flanking rules: where
    ``**`` could not (a mark that starts with punctuation right after a letter, for
    instance), the mark is written ``<b>…</b>`` instead, which renders the same.
    """
    pieces: list[tuple[str, bool]] = []
    position = start
    for a, b in marks:
        a, b = max(a, start), min(b, end)
        if a >= b:
            continue
        if position < a:
            pieces.append((text[position:a], False))
        pieces.append((text[a:b], True))
        position = b
    if position < end:
        pieces.append((text[position:end], False))
    tokens = _normalised(pieces)
    escaped = [(escape_cell(t) if bold else _escape_spaced(t), bold) for t, bold in tokens]
    out = "…" if cut_before else ""
    for i, (piece, bold) in enumerate(escaped):
        if not bold:
            out += piece
            continue
        before = out[-1] if out else None
        after = escaped[i + 1][0][0] if i + 1 < len(escaped) else ("…" if cut_after else None)
        if _can_open(before, piece[0]) and _can_close(piece[-1], after):
            out += f"**{piece}**"
        else:
            out += f"<b>{piece}</b>"
    return out + ("…" if cut_after else "")


def _normalised(pieces: Sequence[tuple[str, bool]]) -> list[tuple[str, bool]]:
    """Pieces with whitespace runs as one space, marks without outer spaces, no space at either end."""
    tokens: list[tuple[str, bool]] = []

    def plain(value: str) -> None:
        if tokens and not tokens[-1][1]:
            value = tokens.pop()[0] + value
        value = _WHITESPACE.sub(" ", value)
        if value:
            tokens.append((value, False))

    for piece, bold in pieces:
        piece = _WHITESPACE.sub(" ", piece)
        if not bold:
            plain(piece)
            continue
        core = piece.strip(" ")
        if not core:  # evidence of spaces only: nothing to show in bold
            plain(piece)
            continue
        if piece.startswith(" "):
            plain(" ")
        tokens.append((core, True))
        if piece.endswith(" "):
            plain(" ")
    if tokens and not tokens[0][1]:
        tokens[0] = (tokens[0][0].lstrip(" "), False)
    if tokens and not tokens[-1][1]:
        tokens[-1] = (tokens[-1][0].rstrip(" "), False)
    return [token for token in tokens if token[0]]


def _escape_spaced(value: str) -> str:
    """escape_cell, keeping one leading and one trailing space (escape_cell strips them)."""
    core = value.strip(" ")
    if not core:
        return " " if value else ""
    return (" " if value[0] == " " else "") + escape_cell(core) + (" " if value[-1] == " " else "")


def _punctuation(ch: str, symbols: bool) -> bool:
    """CommonMark's punctuation: ASCII punctuation and Unicode P* (0.29, GitHub); 0.31 adds S* (symbols)."""
    if ch in string.punctuation:
        return True
    category = unicodedata.category(ch)
    return category.startswith("P") or (symbols and category.startswith("S"))


def _can_open(before: str | None, first: str) -> bool:
    """Whether ``**`` between ``before`` (None: line start) and ``first`` is left-flanking under 0.29 and 0.31."""
    if not _punctuation(first, symbols=True):
        return True
    return before is None or before.isspace() or _punctuation(before, symbols=False)


def _can_close(last: str, after: str | None) -> bool:
    """Whether ``**`` between ``last`` and ``after`` (None: line end) is right-flanking under 0.29 and 0.31."""
    if not _punctuation(last, symbols=True):
        return True
    return after is None or after.isspace() or _punctuation(after, symbols=False)


# ---- the marks: intervals, a handful per chunk (plain Python is clearer than numpy here) ---------


def union(intervals: Iterable[Interval]) -> list[Interval]:
    """Sorted, disjoint intervals covering the same characters; touching ones are merged."""
    merged: list[list[int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged]


def total_length(intervals: Iterable[Interval]) -> int:
    """Characters covered by disjoint ``intervals``."""
    return sum(end - start for start, end in intervals)


def clip(intervals: Sequence[Interval], start: int, end: int) -> list[Interval]:
    """The parts of ``intervals`` inside ``[start, end)``: the marks of a chunk."""
    return [(max(a, start), min(b, end)) for a, b in intervals if a < end and b > start]


def evidence_by_doc(spans: Iterable[Any]) -> dict[str, list[Interval]]:
    """``{doc: union of the spans' intervals}`` for evidence spans or ``(doc, start, end, ...)`` tuples."""
    by_doc: dict[str, list[Interval]] = {}
    for span in spans:
        doc, start, end = (span.doc, span.start, span.end) if hasattr(span, "doc") else span[:3]
        by_doc.setdefault(doc, []).append((start, end))
    return {doc: union(pieces) for doc, pieces in sorted(by_doc.items())}
