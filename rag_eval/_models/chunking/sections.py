"""Markdown heading sections with exact offsets, found by a CommonMark parser (markdown-it-py).

A section runs from the first line of a heading (ATX ``# Title`` or setext ``Title`` over
``===``) to the line before the next heading of the chosen levels; text before the first
heading is a section of its own. A ``#`` line inside a fenced code block is not a heading:
that is why a parser is used rather than a regular expression. Sections are trimmed of
surrounding whitespace and whitespace-only ones are dropped.

markdown-it numbers lines after turning ``\\r\\n`` and ``\\r`` into ``\\n``; the line starts
below are taken with the same rule, so line numbers map back to offsets of the original text.
"""

from __future__ import annotations

import itertools
import re
from functools import lru_cache
from typing import Any

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@lru_cache(maxsize=1)
def _parser() -> Any:
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark")
    # only block structure is needed: inline parsing would triple the time for nothing
    parser.disable(["inline", "text_join"], ignoreInvalid=True)
    return parser


def heading_lines(text: str, max_level: int = 6) -> list[int]:
    """0-based numbers of the lines where a heading of level <= ``max_level`` starts."""
    lines = []
    for token in _parser().parse(text):
        if token.type == "heading_open" and token.map and int(token.tag[1:]) <= max_level:
            lines.append(token.map[0])
    return lines


def line_starts(text: str) -> list[int]:
    """Offset of the first character of every line (markdown-it's line numbering)."""
    return [0] + [match.end() for match in _LINE_BREAK.finditer(text)]


def sections(text: str, max_level: int = 6) -> list[tuple[int, int]]:
    """``[(start, end), ...]`` of the heading sections of ``text``, trimmed, in order."""
    starts = line_starts(text)
    bounds = sorted({starts[line] for line in heading_lines(text, max_level) if line < len(starts)} | {0})
    bounds.append(len(text))
    spans = []
    for start, end in itertools.pairwise(bounds):
        piece = text[start:end]
        stripped = piece.strip()
        if stripped:
            lead = len(piece) - len(piece.lstrip())
            spans.append((start + lead, start + lead + len(stripped)))
    return spans
