"""Boundary levels: where a chunk may end, from code points up to blank-line runs or markdown headings.

A level answers two questions about the text between ``lo`` and ``hi`` (``hi`` is a boundary of
every level): the first boundary after an offset, and the last one at or before it. Listed levels
hold sorted offsets (line breaks, sentences, markdown blocks); words, grapheme clusters and code
points are found where they are asked for (rag_eval._models.chunking.segments), reading the text
from the chunk's start on, so that no level ever costs more than the text it looks at.

The levels of a method, lowest first (rag_eval._models.chunking.packing picks among them):

- always, as a fallback: code points, grapheme clusters, words, sentences;
- ``recursive``: each length of a run of line breaks (``\\r\\n`` counts one) is a level; a
  boundary of level *n* is either edge of a run of *n* or more line breaks;
- ``markdown``: lines, blocks (paragraphs, list items, code blocks, quotes, tables, HTML),
  thematic breaks, then headings from level 6 up to level 1 (rag_eval._models.chunking.sections).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

import numpy as np

from rag_eval._models.chunking import segments


class Level:
    """Where a chunk may end (see the module's doc); ``lo`` is the chunk's start, ``hi`` the text's end."""

    name = "level"

    def after(self, text: str, i: int, lo: int, hi: int) -> int:
        """The first boundary after ``i`` (``hi`` when there is none before it)."""
        raise NotImplementedError

    def before(self, text: str, i: int, lo: int, hi: int) -> int:
        """The last boundary at or before ``i`` and after ``lo`` (``lo`` when there is none)."""
        raise NotImplementedError


class CodePoints(Level):
    """Every code point: the last resort, when one grapheme cluster costs more than a chunk."""

    name = "code points"

    def after(self, text: str, i: int, lo: int, hi: int) -> int:
        return min(i + 1, hi)

    def before(self, text: str, i: int, lo: int, hi: int) -> int:
        return max(lo, min(i, hi))


class Clusters(Level):
    """Grapheme clusters (segments.cluster_boundary)."""

    name = "grapheme clusters"

    def after(self, text: str, i: int, lo: int, hi: int) -> int:
        return segments.next_cluster_boundary(text, i, lo, hi)

    def before(self, text: str, i: int, lo: int, hi: int) -> int:
        return segments.previous_cluster_boundary(text, min(i, hi), lo)


class Words(Level):
    """Words (segments.word_boundary)."""

    name = "words"

    def after(self, text: str, i: int, lo: int, hi: int) -> int:
        return segments.next_word_boundary(text, i, lo, hi)

    def before(self, text: str, i: int, lo: int, hi: int) -> int:
        return segments.previous_word_boundary(text, min(i, hi), lo)


class Listed(Level):
    """A level whose boundaries are listed, sorted; ``hi`` counts as one too."""

    def __init__(self, name: str, offsets: list[int]) -> None:
        self.name = name
        self.offsets = offsets

    def __repr__(self) -> str:
        return f"Listed({self.name!r}, {len(self.offsets)} offsets)"

    def after(self, text: str, i: int, lo: int, hi: int) -> int:
        k = bisect.bisect_right(self.offsets, i)
        return min(self.offsets[k], hi) if k < len(self.offsets) else hi

    def before(self, text: str, i: int, lo: int, hi: int) -> int:
        if i >= hi:
            return hi
        k = bisect.bisect_right(self.offsets, i)
        return max(lo, self.offsets[k - 1]) if k else lo


class Sentences(Level):
    """Sentence ends (segments.sentence_ends), found a block of the text at a time, when first asked for.

    ``recursive`` and ``markdown`` need them only inside a line longer than a chunk. The last
    answer of :meth:`after` is remembered: the chunk's start only moves forward, so a text without
    any sentence end is still scanned once, not once per chunk.
    """

    name = "sentences"
    BLOCK = 1 << 12

    def __init__(self, text: str) -> None:
        self._text = text
        self._blocks: dict[int, list[int]] = {}
        # the last answer of after(): (i, boundary), or (i, hi) with found False: no boundary in (i, hi)
        self._last: tuple[int, int, bool] = (-1, -1, False)

    def _block(self, k: int) -> list[int]:
        found = self._blocks.get(k)
        if found is None:
            found = self._blocks[k] = segments.sentence_ends(self._text, k * self.BLOCK, (k + 1) * self.BLOCK)
        return found

    def after(self, text: str, i: int, lo: int, hi: int) -> int:
        asked, answer, found = self._last
        if asked <= i < answer and (found or hi <= answer):
            return min(answer, hi)  # nothing between: the same answer
        k = i // self.BLOCK
        while k * self.BLOCK < hi:
            ends = self._block(k)
            j = bisect.bisect_right(ends, i)
            if j < len(ends):
                self._last = (i, ends[j], True)
                return min(ends[j], hi)
            k += 1
        self._last = (i, hi, False)
        return hi

    def before(self, text: str, i: int, lo: int, hi: int) -> int:
        if i >= hi:
            return hi
        k = i // self.BLOCK
        while k >= 0 and (k + 1) * self.BLOCK > lo:
            ends = self._block(k)
            j = bisect.bisect_right(ends, i)
            if j:
                return max(lo, ends[j - 1])
            k -= 1
        return lo


def fallback_levels(text: str) -> list[Level]:
    """Code points, grapheme clusters, words and sentences of ``text``, lowest first."""
    return [CodePoints(), Clusters(), Words(), Sentences(text)]


def line_break_levels(text: str) -> list[Level]:
    """One level per length of a run of line breaks in ``text``, shortest first (``recursive``).

    Found with numpy over the text's code points: a regular expression's match objects, one per
    run, took as long as the rest of the splitting.
    """
    if "\n" not in text and "\r" not in text:
        return []  # one line (str.find is much faster than a scan for a class)
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    breaks = np.zeros(len(codes) + 2, dtype=bool)
    breaks[1:-1] = (codes == 10) | (codes == 13)
    edges = np.flatnonzero(breaks[1:] != breaks[:-1])
    starts, ends = edges[0::2], edges[1::2]  # runs [start, end) of \r and \n
    pairs = np.flatnonzero((codes[:-1] == 13) & (codes[1:] == 10))  # where a \r\n starts
    inside = np.searchsorted(pairs, ends - 1) - np.searchsorted(pairs, starts)
    lengths = (ends - starts) - inside  # \r\n is one line break, as one grapheme cluster
    runs: dict[int, list[int]] = {}
    for length in np.unique(lengths).tolist():
        chosen = lengths == length
        runs[length] = np.concatenate((starts[chosen], ends[chosen])).tolist()
    return nested_levels("line breaks", runs)


def nested_levels(name: str, edges: dict[int, list[int]]) -> list[Level]:
    """Levels from ``{rank: offsets}``, lowest rank first: a level holds its rank's offsets and every higher one's."""
    if not edges:
        return []
    offsets = np.concatenate([np.asarray(found, dtype=np.int64) for found in edges.values()])
    ranks = np.concatenate([np.full(len(found), rank, dtype=np.int64) for rank, found in edges.items()])
    order = np.argsort(offsets, kind="stable")
    offsets, ranks = offsets[order], ranks[order]
    levels: list[Level] = []
    for rank in sorted(edges):
        kept = np.unique(offsets[ranks >= rank])  # sorted, each offset once
        levels.append(Listed(f"{name} {rank}", kept.tolist()))
    return levels


def listed(name: str, offsets: Iterable[int]) -> Listed:
    """A listed level of ``offsets`` (sorted and made unique here)."""
    return Listed(name, sorted(set(offsets)))
