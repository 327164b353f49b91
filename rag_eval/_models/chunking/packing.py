"""The recursive splitter: chunks as large as fit, ending at the highest boundary level that allows it.

This is semantic-text-splitter's algorithm (0.33), measured with one tokenization of the text
(rag_eval._models.chunking.measure) instead of a tokenizer call per candidate chunk. From the
chunk's start, for each chunk:

1. **level**: the structural levels (line-break runs, markdown structure), lowest first, are
   tried in turn: a level fits when its first section (the text up to its first boundary)
   fits in ``size``; the highest level that fits before the first one that does not is taken.
   When none fits, the fallback levels are tried the same way: code points, grapheme
   clusters, words, sentences. The chunk never crosses the end of the first section of the
   level that did not fit, as that end is past what fits (a chunk of sentences stays in its line);
2. **end**: the last boundary of that level at which the chunk still fits (at least one section);
3. **overlap**: the next chunk starts at the earliest boundary of that level, after this chunk's
   start, from which the rest of this chunk holds at most ``overlap`` (the chunk's end if none).
   So overlap is whole sections of the level the chunk was cut at: trailing sentences, words,
   ..., or whole paragraphs when the chunk kept paragraphs whole;

and chunks are trimmed of whitespace; an empty one, or one that ends where an earlier one did
(or before), is skipped. Each step looks at the text up to the chunk's own end only, never to
the end of a line or of the text: the time is linear in the text's length, also on one line
of 50 MB without a line break (semantic-text-splitter's was quadratic there).

A chunk whose size is not exact from the text's tokenization (a model tokenizer, an edge inside
one of its words) is counted again on its own; if it is over, its end moves back to the last
boundary where it fits, down through the lower levels (:func:`_shrink`), so no chunk is ever
over ``size`` unless one code point alone is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rag_eval._models.chunking.levels import Level
from rag_eval._models.chunking.measure import Measure

Spans = list[tuple[int, int]]
Advance = Callable[[int], None]  # told how many characters were chunked (a progress bar's update)

#: Characters between two progress reports on a long text.
PROGRESS_STEP = 1 << 16


def pack(
    text: str,
    lo: int,
    hi: int,
    structural: Sequence[Level],
    fallback: Sequence[Level],
    measure: Measure,
    advance: Advance | None = None,
) -> Spans:
    """The trimmed chunks ``[(start, end), ...]`` of ``text[lo:hi]`` (offsets of ``text``), in order.

    ``structural`` and ``fallback`` levels come lowest first; ``fallback`` starts with code points.
    ``advance`` hears the characters done now and then (the sum is ``hi - lo``).
    """
    spans: Spans = []
    cursor = lo
    last_end = lo
    reported = lo
    while cursor < hi:
        limit = measure.fit_end(cursor, hi)
        level = _level(text, cursor, hi, limit, structural, fallback)
        end = level.before(text, limit, cursor, hi)
        if end <= cursor:
            end = level.after(text, cursor, cursor, hi)  # one section, even if it does not fit
        start, stop = _trimmed(text, cursor, end)
        if start < stop and not measure.fits(start, stop):
            end = _shrink(text, cursor, end, level, fallback, measure)
            start, stop = _trimmed(text, cursor, end)
        if start < stop and stop > last_end:
            spans.append((start, stop))
            last_end = stop
        cursor = _next_start(text, cursor, end, hi, level, measure)
        if advance is not None and cursor - reported >= PROGRESS_STEP:
            advance(cursor - reported)
            reported = cursor
    if advance is not None and hi > reported:
        advance(hi - reported)
    return spans


def _level(text: str, cursor: int, hi: int, limit: int, structural: Sequence[Level], fallback: Sequence[Level]) -> Level:
    """The level to cut the next chunk at (see the module's doc, step 1).

    A level fits when its first boundary is at most ``limit``; each level is asked only up to
    ``limit + 1``, so a long word or sentence is never read past the chunk's reach. (The first
    section of the level that did not fit ends past ``limit``: the chunk, which ends at or before
    ``limit``, never crosses it.)
    """
    reach = min(hi, limit + 1)
    chosen: Level | None = None
    for level in structural:
        if level.after(text, cursor, cursor, reach) > limit:
            break
        chosen = level
    if chosen is not None:
        return chosen
    for level in fallback:
        if level.after(text, cursor, cursor, reach) > limit:
            break
        chosen = level
    return fallback[0] if chosen is None else chosen  # code points: one alone is over size, it is a chunk alone


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    """``text[start:end]`` without its leading and trailing whitespace, as offsets."""
    piece = text[start:end]
    stripped = piece.strip()
    if not stripped:
        return start, start
    lead = start + len(piece) - len(piece.lstrip())
    return lead, lead + len(stripped)


def _next_start(text: str, cursor: int, end: int, hi: int, level: Level, measure: Measure) -> int:
    """Where the chunk after ``[cursor, end)`` starts: ``end``, or earlier by the overlap (step 3)."""
    if measure.overlap == 0 or end >= hi:
        return end
    earliest = max(measure.overlap_start(end, cursor), cursor + 1)
    if earliest >= end:
        return end
    # the first boundary of the level at or after `earliest` (read no further than the chunk's end)
    before = level.before(text, earliest, cursor, end)
    start = before if before == earliest else level.after(text, before, cursor, end)
    return start if cursor < start < end else end


def _shrink(text: str, cursor: int, end: int, level: Level, fallback: Sequence[Level], measure: Measure) -> int:
    """The last end before ``end``, of ``level`` or else of the lower fallback levels, whose trimmed chunk fits.

    Only chunks whose size was estimated get here (see the module's doc). Each level's boundaries in
    ``(cursor, end)`` are searched by bisection with the exact count; ``cursor + 1`` if nothing fits.
    """
    levels = [level, *[lower for lower in reversed(fallback) if lower is not level]]
    for candidate in levels:
        ends = _boundaries(text, cursor, end, candidate)
        good = None
        low, high = 0, len(ends) - 1
        while low <= high:  # the count grows with the end: bisect for the last that fits
            middle = (low + high) // 2
            start, stop = _trimmed(text, cursor, ends[middle])
            if start == stop or measure.fits(start, stop):
                good = ends[middle]
                low = middle + 1
            else:
                high = middle - 1
        if good is not None:
            return good
    return cursor + 1


def _boundaries(text: str, cursor: int, end: int, level: Level) -> list[int]:
    """The boundaries of ``level`` in ``(cursor, end)``, in order (only to shrink a chunk that was over)."""
    found = []
    offset = level.after(text, cursor, cursor, end)
    while offset < end:
        found.append(offset)
        offset = level.after(text, offset, cursor, end)
    return found
