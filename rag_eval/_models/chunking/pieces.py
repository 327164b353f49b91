"""Bounded pieces of long lines: how ``recursive``, ``sentences`` and ``markdown`` stay near-linear.

semantic-text-splitter looks, for each chunk, at the text up to the next boundary of a level
above the one it cuts at. In text without line breaks and without sentence ends (extracted PDF
and HTML text, a log line) the next such boundary is the end of the line, so every chunk costs
the rest of the line and a line costs the square of its length: 2 MB took 8.9 s and 50 MB never
finished (issue 20, item 7; benchmarks/bench_chunking_long_lines.py).

So a line longer than :func:`piece_limit` is cut first, and the library chunks each piece:

- only lines (runs without ``\\n`` or ``\\r``) longer than the limit are cut, so a document whose
  lines are all shorter is chunked exactly as before, as one text;
- a cut falls in the second half of each stretch of ``limit`` characters, at the best boundary
  there: the last sentence end (``.``, ``!``, ``?``, ``。``, ``！``, ``？`` and closing quotes or
  brackets, then whitespace), else the last whitespace, else a code point that does not split a
  grapheme cluster (combining marks, joiners, variation selectors, Hangul jamo and flag pairs
  stay with their base), else the end of the stretch;
- the limit is ``MAX_PIECE_CHUNKS`` chunks of ``size`` (a token counted as up to
  ``CHARS_PER_TOKEN`` characters), at least ``MIN_PIECE_CHARS``: about 32 chunks a piece, so
  one chunk in 32 may end early at a cut, and no overlap crosses a cut;
- offsets stay exact: each piece's spans are shifted by the piece's start, and the pieces
  together are the text, so the chunks still cover every non-whitespace character.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from itertools import pairwise

#: Chunks of ``size`` a piece may hold (None: never cut; benchmarks/bench_chunking_long_lines.py --whole-text).
MAX_PIECE_CHUNKS: int | None = 32
#: Characters a token may take, to size pieces for ``unit: tokens`` (prose averages 4 to 6).
CHARS_PER_TOKEN = 8
#: The smallest limit: tiny sizes must not make millions of library calls.
MIN_PIECE_CHARS = 8192

Advance = Callable[[int], None]  # told how many characters were chunked (a progress bar's update)

_LINE = re.compile(r"[^\n\r]+")
_SENTENCE_END = re.compile(r"[.!?\u3002\uff01\uff1f][\"')\]}\u201d\u2019\u00bb]*\s+")
_SPACE = re.compile(r"\s+")
# Code points that belong to the cluster of the one before them (never start a piece).
_EXTENDING = frozenset({"Mn", "Mc", "Me"})


def piece_limit(size: int, unit: str) -> int | None:
    """The longest line chunked whole, in characters, for chunks of ``size`` ``unit``; None: no limit."""
    if MAX_PIECE_CHUNKS is None:
        return None
    per_unit = 1 if unit == "characters" else CHARS_PER_TOKEN
    return max(MIN_PIECE_CHARS, MAX_PIECE_CHUNKS * size * per_unit)


def pieces(text: str, limit: int | None) -> list[tuple[int, int]]:
    """``[(start, end), ...]``: ``text`` in order, cut only inside lines longer than ``limit``."""
    if limit is None or len(text) <= limit:
        return [(0, len(text))]
    cuts = []
    # every line, not a pattern of limit + 1 characters: that one would rescan each shorter line from
    # each of its positions (quadratic in the length of lines just under the limit)
    for line in _LINE.finditer(text):
        start, end = line.span()
        while end - start > limit:
            cut = _boundary(text, start + limit // 2, start + limit)
            cuts.append(cut)
            start = cut
    return list(pairwise([0, *cuts, len(text)]))


def chunk_pieces(
    chunk: Callable[[str], list[tuple[int, int]]],
    text: str,
    limit: int | None,
    advance: Advance | None = None,
    lines_of: str | None = None,
) -> list[tuple[int, int]]:
    """``chunk`` run on each piece of ``text``, its spans shifted to offsets of ``text``.

    ``lines_of``: the text whose lines decide the cuts when ``text`` is a stand-in of the same
    length (``sentences`` chunks a copy whose line breaks were replaced).
    """
    out: list[tuple[int, int]] = []
    for start, end in pieces(lines_of if lines_of is not None else text, limit):
        out.extend((start + a, start + b) for a, b in chunk(text[start:end]))
        if advance is not None:
            advance(end - start)
    return out


def _boundary(text: str, low: int, high: int) -> int:
    """The best cut in ``(low, high]``: after the last sentence end, else the last whitespace, else a safe code point."""
    window = text[low:high]
    for pattern in (_SENTENCE_END, _SPACE):
        ends = [match.end() for match in pattern.finditer(window)]
        if ends:
            return low + ends[-1]  # a match holds a character: the cut is after low
    for cut in range(high, low, -1):
        if _splits_no_cluster(text, cut):
            return cut
    return high  # one cluster longer than half a piece: cut inside it, as the library itself would


def _splits_no_cluster(text: str, cut: int) -> bool:
    """Whether a cut before ``text[cut]`` keeps grapheme clusters whole (a cheap test of UAX #29's common rules)."""
    before, after = ord(text[cut - 1]), ord(text[cut])
    if unicodedata.category(text[cut]) in _EXTENDING:
        return False  # a combining mark stays with its base
    if after == 0x200D or before == 0x200D:
        return False  # a zero-width joiner glues emoji sequences
    if 0xFE00 <= after <= 0xFE0F or 0xE0100 <= after <= 0xE01EF or 0xE0020 <= after <= 0xE007F:
        return False  # variation selectors and emoji tag characters
    if 0x1F3FB <= after <= 0x1F3FF:
        return False  # skin-tone modifiers
    if 0x1F1E6 <= before <= 0x1F1FF and 0x1F1E6 <= after <= 0x1F1FF:
        return False  # the two halves of a flag
    if 0x1100 <= before <= 0x115F or 0xA960 <= before <= 0xA97F:
        return False  # a leading Hangul jamo joins what follows
    return not (0x1160 <= after <= 0x11FF or 0xD7B0 <= after <= 0xD7FF)  # vowel and trailing jamo join before
