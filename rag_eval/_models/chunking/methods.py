"""The built-in chunking methods: each turns one text into ``[(start, end), ...]`` code-point spans.

- ``recursive``: semantic-text-splitter's TextSplitter: the largest boundary that fits, from
  runs of blank lines down through lines, Unicode sentences (UAX #29), words and grapheme
  clusters; overlap as the library does it (the most trailing units that fit in ``overlap``).
- ``sentences``: the same splitter, with the line breaks it would rank above sentences
  replaced, for the split only, by U+2029 PARAGRAPH SEPARATOR. UAX #29 already ends a
  sentence at every line break, so sentence boundaries are unchanged, but the only level
  left above sentences is gone: whole sentences are packed up to ``size`` across lines
  and paragraphs. The replacement keeps every offset (one code point for one).
- ``markdown``: heading sections (rag_eval._models.chunking.sections); with ``size``, a longer
  section is split by semantic-text-splitter's MarkdownSplitter (CommonMark structure).
- ``fixed``: windows of ``size`` tokens every ``size - overlap`` tokens, cut at the
  tokenizer's own offsets (or at code points for ``unit: characters``). No library does
  this exactly: chonkie's TokenChunker rebuilds offsets from decoded text, which is wrong
  for any tokenizer that lower-cases, strips accents or emits [UNK] (every chunk of the
  chroma corpus off with all-MiniLM-L6-v2's tokenizer).

The three library methods chunk a line longer than a bound (about 32 chunks) in pieces
(rag_eval._models.chunking.pieces): the library's cost grows with the square of a line without
line breaks or sentence ends, and extracted PDF or HTML text is such a line.

Every method trims whitespace from chunk edges; together the chunks of a text cover every
non-whitespace character of it. semantic-text-splitter never returns a chunk over ``size``
unless one code point alone is over it (a character costing several tokens of a Hugging
Face tokenizer with ``size`` below that cost); a fixed window holds exactly ``size`` tokens
of the text's own tokenization (the last may hold fewer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rag_eval._models.chunking.params import FixedParams, MarkdownParams, RecursiveParams, SentencesParams
from rag_eval._models.chunking.pieces import Advance, chunk_pieces, piece_limit
from rag_eval._models.chunking.sections import sections
from rag_eval._models.chunking.tokenizers import HuggingFaceTokenizer, Tokenizer, WordTokenizer

Spans = list[tuple[int, int]]
# (text, advance): advance, when given, is told how many characters are done (a progress bar on long documents)
SpanFunction = Callable[[str, Advance | None], Spans]

# Line breaks semantic-text-splitter ranks above sentences, and what `sentences` splits on instead.
_PARAGRAPH_SEPARATOR = "\u2029"
_NO_LINE_LEVELS = str.maketrans({"\n": _PARAGRAPH_SEPARATOR, "\r": _PARAGRAPH_SEPARATOR})
_LINE_LEVELS_BACK = str.maketrans({_PARAGRAPH_SEPARATOR: "\n"})


class LibraryOffsetError(Exception):
    """The library returned an offset whose text is not the chunk it returned (a library bug)."""

    def __init__(self, start: int, end: int) -> None:
        super().__init__(f"semantic-text-splitter returned offsets [{start}, {end}) that do not hold its chunk text")
        self.start, self.end = start, end


def _splitter(kind: str, size: int, overlap: int, unit: str, tokenizer: Tokenizer, *, remap: bool = False) -> Any:
    """A semantic-text-splitter TextSplitter or MarkdownSplitter sized in characters or tokens."""
    from semantic_text_splitter import MarkdownSplitter, TextSplitter

    cls: Any = MarkdownSplitter if kind == "markdown" else TextSplitter
    if unit == "characters":
        return cls(size, overlap=overlap, trim=True)  # counts code points, as offsets do
    if isinstance(tokenizer, HuggingFaceTokenizer) and not remap:
        # counted in Rust, without special tokens as tokenizer.count does: a third faster than a callback
        return cls.from_huggingface_tokenizer(tokenizer.backend, size, overlap=overlap, trim=True)
    count = tokenizer.count
    if remap and not isinstance(tokenizer, WordTokenizer):
        # a model tokenizer may treat U+2029 unlike "\n"; the word tokenizer sees both as space
        def count(text: str) -> int:
            return tokenizer.count(text.translate(_LINE_LEVELS_BACK))

    return cls.from_callback(count, size, overlap=overlap, trim=True)


def _library_spans(splitter: Any, text: str) -> Spans:
    """``chunk_indices`` as spans, each checked against the text the library returned with it.

    The library trims Unicode White_Space; Python's ``str.strip`` also trims the separators
    U+001C..U+001F, so chunks are trimmed again (one rule for every method), and a chunk
    left empty or equal to the one before is dropped.
    """
    spans: Spans = []
    for start, chunk in splitter.chunk_indices(text):
        end = start + len(chunk)
        if text[start:end] != chunk:
            raise LibraryOffsetError(start, end)
        stripped = chunk.strip()
        if not stripped:
            continue
        start += len(chunk) - len(chunk.lstrip())
        span = (start, start + len(stripped))
        if not spans or span != spans[-1]:
            spans.append(span)
    return spans


def recursive(params: RecursiveParams, tokenizer: Tokenizer) -> SpanFunction:
    """Spans of the ``recursive`` method (a line longer than the piece limit is chunked in pieces)."""
    splitter = _splitter("text", params.size, params.overlap, params.unit, tokenizer)
    limit = piece_limit(params.size, params.unit)

    def spans(text: str, advance: Advance | None = None) -> Spans:
        return chunk_pieces(lambda piece: _library_spans(splitter, piece), text, limit, advance)

    return spans


def sentences(params: SentencesParams, tokenizer: Tokenizer) -> SpanFunction:
    """Spans of the ``sentences`` method (whole sentences packed up to size; long lines in pieces)."""
    splitter = _splitter("text", params.size, params.overlap, params.unit, tokenizer, remap=True)
    limit = piece_limit(params.size, params.unit)

    def spans(text: str, advance: Advance | None = None) -> Spans:
        # the pieces follow the document's own lines: the stand-in has none left
        stand_in = text.translate(_NO_LINE_LEVELS)
        return chunk_pieces(lambda piece: _library_spans(splitter, piece), stand_in, limit, advance, lines_of=text)

    return spans


def markdown(params: MarkdownParams, tokenizer: Tokenizer) -> SpanFunction:
    """Spans of the ``markdown`` method: heading sections, split to size when one is set (long lines in pieces)."""
    size = params.size
    if size is None:

        def whole_sections(text: str, advance: Advance | None = None) -> Spans:
            found = sections(text, params.heading_level)
            if advance is not None:
                advance(len(text))
            return found

        return whole_sections
    splitter = _splitter("markdown", size, params.overlap, params.unit, tokenizer)
    limit = piece_limit(size, params.unit)

    def spans(text: str, advance: Advance | None = None) -> Spans:
        out: Spans = []
        done = 0
        for start, end in sections(text, params.heading_level):
            found = chunk_pieces(lambda piece: _library_spans(splitter, piece), text[start:end], limit, advance)
            out.extend((start + a, start + b) for a, b in found)
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
