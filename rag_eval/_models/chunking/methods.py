"""The built-in chunking methods: each turns one text into ``[(start, end), ...]`` code-point spans.

- ``recursive``: the largest boundary that fits, from runs of blank lines down through lines,
  Unicode sentences (UAX #29), words, grapheme clusters and code points; overlap is the most
  trailing units of the level the chunk was cut at that fit in ``overlap``
  (rag_eval._models.chunking.packing).
- ``sentences``: the same splitter without the line levels: whole sentences packed up to
  ``size`` across lines and paragraphs (a line break ends a sentence, UAX #29), a sentence
  longer than ``size`` cut at words.
- ``markdown``: heading sections (rag_eval._models.chunking.sections); with ``size``, a longer
  section is split at its structure: headings, thematic breaks, blocks, lines, then sentences,
  words, ...
- ``fixed``: windows of ``size`` tokens every ``size - overlap`` tokens, cut at the
  tokenizer's own offsets (or at code points for ``unit: characters``). No library does
  this exactly: chonkie's TokenChunker rebuilds offsets from decoded text, which is wrong
  for any tokenizer that lower-cases, strips accents or emits [UNK] (every chunk of the
  chroma corpus off with all-MiniLM-L6-v2's tokenizer).

Each text is tokenized once (rag_eval._models.chunking.measure); sizes of candidate chunks come
from its token offsets. Every method trims whitespace from chunk edges; together the chunks of
a text cover every non-whitespace character of it. ``recursive``, ``sentences`` and split
markdown sections never return a chunk over ``size`` (counted on the chunk's own text) unless
one code point alone is over it (a character costing several tokens of a Hugging Face
tokenizer with ``size`` below that cost); a fixed window holds exactly ``size`` tokens of the
text's own tokenization (the last may hold fewer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rag_eval._models.chunking.levels import fallback_levels, line_break_levels, nested_levels
from rag_eval._models.chunking.measure import Characters, Measure, model_measure, word_measure
from rag_eval._models.chunking.packing import Advance, pack
from rag_eval._models.chunking.params import FixedParams, MarkdownParams, RecursiveParams, SentencesParams
from rag_eval._models.chunking.sections import sections, structure
from rag_eval._models.chunking.tokenizers import HuggingFaceTokenizer, Tokenizer, WordTokenizer

Spans = list[tuple[int, int]]
# (text, advance): advance, when given, is told how many characters are done (a progress bar on long documents)
SpanFunction = Callable[[str, Advance | None], Spans]


def measure_of(text: str, size: int, overlap: int, unit: str, tokenizer: Tokenizer) -> Measure:
    """How chunks of ``text`` are sized: code points, or one tokenization of the whole text."""
    if unit == "characters":
        return Characters(text, size, overlap)
    if isinstance(tokenizer, HuggingFaceTokenizer):
        return model_measure(text, size, overlap, tokenizer.backend, tokenizer.path)
    if isinstance(tokenizer, WordTokenizer):
        return word_measure(text, size, overlap)
    raise TypeError(f"no measure for the tokenizer {tokenizer!r}")  # every loadable tokenizer is one of the two


def recursive(params: RecursiveParams, tokenizer: Tokenizer) -> SpanFunction:
    """Spans of the ``recursive`` method."""

    def spans(text: str, advance: Advance | None = None) -> Spans:
        measure = measure_of(text, params.size, params.overlap, params.unit, tokenizer)
        return pack(text, 0, len(text), line_break_levels(text), fallback_levels(text), measure, advance)

    return spans


def sentences(params: SentencesParams, tokenizer: Tokenizer) -> SpanFunction:
    """Spans of the ``sentences`` method (whole sentences packed up to size, across lines)."""

    def spans(text: str, advance: Advance | None = None) -> Spans:
        measure = measure_of(text, params.size, params.overlap, params.unit, tokenizer)
        return pack(text, 0, len(text), [], fallback_levels(text), measure, advance)

    return spans


def markdown(params: MarkdownParams, tokenizer: Tokenizer) -> SpanFunction:
    """Spans of the ``markdown`` method: heading sections, split to size when one is set."""
    size = params.size
    if size is None:

        def whole_sections(text: str, advance: Advance | None = None) -> Spans:
            found = sections(text, params.heading_level)
            if advance is not None:
                advance(len(text))
            return found

        return whole_sections

    def spans(text: str, advance: Advance | None = None) -> Spans:
        found, edges = structure(text, params.heading_level)
        levels = nested_levels("markdown", edges)
        fallback = fallback_levels(text)
        measure = measure_of(text, size, params.overlap, params.unit, tokenizer)
        out: Spans = []
        done = 0
        for start, end in found:
            out.extend(pack(text, start, end, levels, fallback, measure, advance))
            done += end - start
        if advance is not None:
            advance(len(text) - done)  # the whitespace between sections
        return out

    return spans


def fixed(params: FixedParams, tokenizer: Tokenizer) -> SpanFunction:
    """Spans of the ``fixed`` method: token (or character) windows with overlap (linear: no pieces needed)."""
    step = params.size - params.overlap

    def spans(text: str, advance: Advance | None = None) -> Spans:
        if params.unit == "characters":
            found = _character_windows(text, params.size, step)
        else:
            found = _token_windows(_units(text, tokenizer), params.size, step)
        if advance is not None:
            advance(len(text))
        return found

    return spans


def _character_windows(text: str, size: int, step: int) -> Spans:
    """Windows of ``size`` code points every ``step``, over the text without its outer whitespace."""
    first = len(text) - len(text.lstrip())
    last = len(text.rstrip())
    spans: Spans = []
    for start in range(first, last, step):
        end = min(start + size, last)
        piece = text[start:end]
        stripped = piece.strip()
        if stripped:
            lead = len(piece) - len(piece.lstrip())
            span = (start + lead, start + lead + len(stripped))
            if not spans or span != spans[-1]:  # trimmed windows around a space may coincide
                spans.append(span)
        if end == last:
            break
    return spans


def _units(text: str, tokenizer: Tokenizer) -> Spans:
    """Token spans that together hold every non-whitespace character of ``text``.

    A model tokenizer may drop characters (combining marks, control characters): those
    are joined to the token before them (or the first token), so no text is left unchunked.
    """
    tokens = sorted(tokenizer.spans(text))
    if isinstance(tokenizer, WordTokenizer):
        return tokens  # \w+|[^\w\s]: every non-space character is in a token already
    if not tokens:
        stripped = text.strip()
        if not stripped:
            return []
        lead = len(text) - len(text.lstrip())
        return [(lead, lead + len(stripped))]
    units = []
    head = text[: tokens[0][0]]
    first_start = len(head) - len(head.lstrip()) if head.strip() else tokens[0][0]
    for i, (start, end) in enumerate(tokens):
        if i == 0:
            start = first_start
        following = tokens[i + 1][0] if i + 1 < len(tokens) else len(text)
        if following > end:
            gap = text[end:following]
            if not gap.isspace():
                end += len(gap.rstrip())
        units.append((start, end))
    return units


def _token_windows(units: Spans, size: int, step: int) -> Spans:
    """``[units[i].start, max end of units[i : i + size])`` for i = 0, step, 2 step, ... until the last unit."""
    if not units:
        return []
    ends = []
    reach = 0
    for _, end in units:  # several tokens may share one character's span: keep ends non-decreasing
        reach = max(reach, end)
        ends.append(reach)
    spans: Spans = []
    count = len(units)
    for first in range(0, count, step):
        last = min(first + size, count) - 1
        span = (units[first][0], ends[last])
        if not spans or span != spans[-1]:  # windows inside one multi-token character coincide
            spans.append(span)
        if last == count - 1:
            break
    return spans


BUILDERS: dict[str, Callable[[Any, Tokenizer], SpanFunction]] = {
    "fixed": fixed,
    "recursive": recursive,
    "sentences": sentences,
    "markdown": markdown,
}
