"""Markdown heading sections with exact offsets, found by a CommonMark parser (markdown-it-py).

A section runs from the first line of a heading (ATX ``# Title`` or setext ``Title`` over
``===``) to the line before the next heading of the chosen levels; text before the first
heading is a section of its own. A ``#`` line inside a fenced code block is not a heading:
that is why a parser is used rather than a regular expression. Sections are trimmed of
surrounding whitespace and whitespace-only ones are dropped.

The same parse gives the structure a section longer than ``size`` is split at (:func:`structure`):
the edges of blocks (paragraphs, list items, code blocks, quotes, tables and their rows, HTML
blocks), of thematic breaks, and the first line of each heading, each on the line starts the
parser reports.

markdown-it numbers lines after turning ``\\r\\n`` and ``\\r`` into ``\\n``; the line starts
below are taken with the same rule, so line numbers map back to offsets of the original text.
"""

from __future__ import annotations

import itertools
import re
from functools import lru_cache
from typing import Any

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_LINE_BREAK_RUN = re.compile(r"[\r\n]+")


@lru_cache(maxsize=1)
def _parser() -> Any:
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark").enable("table")  # GitHub tables: a row is a block
    # only block structure is needed: inline parsing would triple the time for nothing
    parser.disable(["inline", "text_join"], ignoreInvalid=True)
    return parser


# Block tokens whose lines are edges of the `markdown` method's block level.
_BLOCKS = frozenset({
    "paragraph_open", "fence", "code_block", "html_block", "bullet_list_open", "ordered_list_open",
    "list_item_open", "blockquote_open", "table_open", "thead_open", "tbody_open", "tr_open",
})
# Ranks of the structure, lowest first: lines, blocks, thematic breaks, then headings 6 (rank 4) up to 1 (rank 9).
LINE_RANK, BLOCK_RANK, RULE_RANK = 1, 2, 3


def heading_rank(level: int) -> int:
    """The rank of a heading of ``level`` (1-6) among the structure's ranks: level 1 is the highest."""
    return RULE_RANK + 7 - level


def heading_lines(text: str, max_level: int = 6) -> list[int]:
    """0-based numbers of the lines where a heading of level <= ``max_level`` starts."""
    return [line for line, level in _headings(_parser().parse(text)) if level <= max_level]


def _headings(tokens: list[Any]) -> list[tuple[int, int]]:
    return [(token.map[0], int(token.tag[1:])) for token in tokens if token.type == "heading_open" and token.map]


def structure(text: str, max_level: int = 6) -> tuple[list[tuple[int, int]], dict[int, list[int]]]:
    """The heading sections of ``text`` (as :func:`sections`) and its edges by rank (see the module's doc).

    Edges are offsets of ``text``: ``{rank: [offset, ...]}`` with the ranks above; the lines rank
    holds both edges of every run of line breaks.
    """
    tokens = _parser().parse(text)
    starts = line_starts(text)

    def offset(line: int) -> int:
        return starts[line] if line < len(starts) else len(text)

    edges: dict[int, list[int]] = {LINE_RANK: [], BLOCK_RANK: [], RULE_RANK: []}
    for match in _LINE_BREAK_RUN.finditer(text):
        edges[LINE_RANK].extend(match.span())
    for token in tokens:
        if not token.map:
            continue
        first, last = offset(token.map[0]), offset(token.map[1])
        if token.type in _BLOCKS:
            edges[BLOCK_RANK] += [first, last]
        elif token.type == "hr":
            edges[RULE_RANK] += [first, last]
        elif token.type == "heading_open":
            edges.setdefault(heading_rank(int(token.tag[1:])), []).append(first)
            edges[BLOCK_RANK].append(last)  # the heading's line is a section of the block level
    bounds = [offset(line) for line, level in _headings(tokens) if level <= max_level]
    return _sections(text, bounds), edges


def line_starts(text: str) -> list[int]:
    """Offset of the first character of every line (markdown-it's line numbering)."""
    return [0] + [match.end() for match in _LINE_BREAK.finditer(text)]


def sections(text: str, max_level: int = 6) -> list[tuple[int, int]]:
    """``[(start, end), ...]`` of the heading sections of ``text``, trimmed, in order."""
    starts = line_starts(text)
    return _sections(text, [starts[line] for line in heading_lines(text, max_level) if line < len(starts)])


def _sections(text: str, heading_starts: list[int]) -> list[tuple[int, int]]:
    """The trimmed, non-empty spans between consecutive heading starts (and the text's ends)."""
    bounds = sorted(set(heading_starts) | {0})
    bounds.append(len(text))
    spans = []
    for start, end in itertools.pairwise(bounds):
        piece = text[start:end]
        stripped = piece.strip()
        if stripped:
            lead = len(piece) - len(piece.lstrip())
            spans.append((start + lead, start + lead + len(stripped)))
    return spans
