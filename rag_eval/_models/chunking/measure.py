"""How much of a text fits in a chunk, from ONE tokenization of the whole text.

semantic-text-splitter measured each candidate chunk by tokenizing it again: many calls, most
of the time of ``recursive`` (18.6 s for the 1.4 MB chroma corpus with all-MiniLM-L6-v2 tokens,
against 1 s to tokenize it once). A measure here tokenizes the text once and answers with
binary searches over the token offsets:

- :meth:`Measure.fit_end`: the furthest end a chunk starting at ``start`` may have and hold at
  most ``size`` tokens: every chunk ending at or before it fits, none after it does;
- :meth:`Measure.overlap_start`: the earliest start of a chunk ending at ``end`` that holds at
  most ``overlap`` tokens;
- :meth:`Measure.fits`: whether a chunk (trimmed) holds at most ``size`` tokens counted on its own
  text, as a retriever will count it.

The count of ``text[a:b]`` is the number of the text's tokens that overlap ``[a, b)``:

- word tokens (``\\w+|[^\\w\\s]``) and code points: exactly what ``text[a:b]`` counts alone
  (a word cut at an edge is still one token), so :meth:`fits` never has to tokenize again;
- a Hugging Face tokenizer: exact when neither edge falls inside a word of the tokenizer's
  pre-tokenizer, for a tokenizer whose normalizer and pre-tokenizer look at one word at a time
  (BERT's, WordPiece models such as all-MiniLM-L6-v2: :func:`word_local`). A chunk with an edge
  inside such a word (a chunk cut at grapheme clusters, or ``a👍`` that BERT reads as one word),
  and every chunk of any other tokenizer (byte-level BPE, SentencePiece), is tokenized again on
  its own, and cut shorter if it is over (rag_eval._models.chunking.packing).
"""

from __future__ import annotations

import bisect
import itertools
import json
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

_LEADING_SPACE = re.compile(r"\s*")
_LAST_NON_SPACE = re.compile(r".*\S", re.DOTALL)

# Normalizers and pre-tokenizers that read one word at a time: a text cut between two words of
# theirs is tokenized as the words on each side were in the whole text. One of the pre-tokenizers
# must split at whitespace (the text is tokenized in pieces cut after whitespace).
_LOCAL_NORMALIZERS = frozenset({"BertNormalizer", "Lowercase", "NFC", "NFD", "NFKC", "NFKD", "StripAccents", "Strip"})
_WHITESPACE_PRE_TOKENIZERS = frozenset({"BertPreTokenizer", "Whitespace", "WhitespaceSplit"})
_LOCAL_PRE_TOKENIZERS = _WHITESPACE_PRE_TOKENIZERS | {"Punctuation", "Digits", "UnicodeScripts"}


#: Characters of a piece of text tokenized in one batch (:class:`ModelTokens`).
PIECE_CHARS = 1 << 13
_LAST_LINE_BREAK = re.compile(r".*[\n\r]", re.DOTALL)
_LAST_SPACE = re.compile(r".*\s", re.DOTALL)
_SPACE = re.compile(r"\s")


def _pieces(text: str, size: int) -> list[tuple[int, int]]:
    """``text`` cut into pieces of at most about ``size`` characters, each cut after a line break or else a space.

    A cut falls in the second half of each stretch; a stretch without any whitespace is not cut.
    """
    bounds = []
    start = 0
    while len(text) - start > size:
        for pattern in (_LAST_LINE_BREAK, _LAST_SPACE):
            found = pattern.match(text, start + size // 2, start + size)
            if found is not None:
                break
        cut = found.end() if found is not None else None
        if cut is None:  # one long run without whitespace: the piece grows to the next whitespace
            following = _SPACE.search(text, start + size)
            cut = following.end() if following is not None else len(text)
        bounds.append((start, cut))
        start = cut
    if start < len(text) or not bounds:
        bounds.append((start, len(text)))
    return bounds


class Measure:
    """Chunk sizes within one text (see the module's doc); ``size`` and ``overlap`` in its unit."""

    def __init__(self, text: str, size: int, overlap: int) -> None:
        self.text = text
        self.size = size
        self.overlap = overlap

    def fit_end(self, start: int, hi: int) -> int:
        """The furthest end (at most ``hi``) of a chunk starting at ``start`` with at most ``size`` units."""
        raise NotImplementedError

    def overlap_start(self, end: int, lo: int) -> int:
        """The earliest start (at least ``lo``) of a chunk ending at ``end`` with at most ``overlap`` units."""
        raise NotImplementedError

    def fits(self, start: int, end: int) -> bool:
        """Whether ``text[start:end]`` (trimmed) holds at most ``size`` units counted on its own."""
        return True


class Characters(Measure):
    """Code points of the trimmed chunk (``unit: characters``)."""

    def fit_end(self, start: int, hi: int) -> int:
        first = _LEADING_SPACE.match(self.text, start, hi).end()  # type: ignore[union-attr]  # \s* always matches
        end = first + self.size
        if end >= hi:
            return hi
        return _LEADING_SPACE.match(self.text, end, hi).end()  # type: ignore[union-attr]  # trailing spaces are trimmed

    def overlap_start(self, end: int, lo: int) -> int:
        last = _LAST_NON_SPACE.match(self.text, lo, end)
        return lo if last is None else max(lo, last.end() - self.overlap)


class Tokens(Measure):
    """Tokens of one tokenization of the text: ``starts`` sorted, ``reach[i]`` the furthest end of tokens 0..i.

    ``ends_sorted``: the tokens do not overlap, so their ends are ``reach`` already.
    """

    def __init__(
        self, text: str, size: int, overlap: int, starts: Sequence[int], ends: Sequence[int], ends_sorted: bool = False
    ) -> None:
        super().__init__(text, size, overlap)
        self.starts = starts
        self.reach = ends if ends_sorted else list(itertools.accumulate(ends, max))

    def fit_end(self, start: int, hi: int) -> int:
        # tokens wholly before start are the first `done`; the chunk may reach up to the start of token done + size
        done = bisect.bisect_right(self.reach, start)
        limit = done + self.size
        return min(self.starts[limit], hi) if limit < len(self.starts) else hi

    def overlap_start(self, end: int, lo: int) -> int:
        # tokens starting before end, less those wholly before the start, must be at most `overlap`
        begun = bisect.bisect_left(self.starts, end)
        keep = begun - self.overlap - 1
        return max(lo, self.reach[keep]) if keep >= 0 else lo


def word_measure(text: str, size: int, overlap: int) -> Tokens:
    """rag_eval's word tokens (exact on any cut: a word cut at an edge is still one token)."""
    starts, ends = word_token_bounds(text)
    return Tokens(text, size, overlap, starts, ends, ends_sorted=True)


def word_token_bounds(text: str) -> tuple[list[int], list[int]]:
    """Starts and ends of the matches of ``\\w+|[^\\w\\s]`` (rag_eval._core.tokens), found with numpy.

    The same as ``WORD_TOKEN.finditer`` (tests/test_chunking_packing.py compares them), five times
    faster: ``\\w`` is ``str.isalnum()`` or ``_`` and ``\\s`` is ``str.isspace()`` in ``re``, so
    each code point is looked up in a table of the Basic Multilingual Plane (others one by one).
    """
    if not text:
        return [], []
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    word_table, space_table = _tables(0x80 if text.isascii() else 0x10000)
    bmp = np.minimum(codes, 0xFFFF)
    word, space = word_table[bmp], space_table[bmp]
    for i in np.flatnonzero(codes > 0xFFFF).tolist():  # astral code points: emoji, rare scripts
        word[i], space[i] = text[i].isalnum(), text[i].isspace()
    other = ~(word | space)
    word_start = word.copy()
    word_start[1:] &= ~word[:-1]
    word_end = word.copy()
    word_end[:-1] &= ~word[1:]
    starts = np.flatnonzero(other | word_start)
    ends = np.flatnonzero(other | word_end) + 1
    return starts.tolist(), ends.tolist()


@lru_cache(maxsize=2)
def _tables(size: int) -> tuple[np.ndarray, np.ndarray]:
    """``(is \\w, is \\s)`` for the first ``size`` code points (ASCII, or the Basic Multilingual Plane), as ``re`` decides.

    Filled from ``re``'s own runs of ``\\w`` and ``\\s`` over the plane's characters (12 ms once
    for the plane, where asking each character took 25; nothing for ASCII text).
    """
    plane = "".join(map(chr, range(size)))
    tables = []
    for pattern in (r"\w+", r"\s+"):
        table = np.zeros(size, dtype=bool)
        for match in re.finditer(pattern, plane):
            table[match.start() : match.end()] = True
        tables.append(table)
    return tables[0], tables[1]


class ModelTokens(Measure):
    """A Hugging Face tokenizer's tokens; :meth:`fits` tokenizes a chunk again unless its edges are clean.

    The text is tokenized in pieces of about :data:`PIECE_CHARS`, cut after a line break (else a
    space), in one ``encode_batch`` call: the tokenizers library runs the pieces on every core. A
    tokenizer that reads one word at a time gives the pieces the tokens it gives the whole text;
    for any other, the counts are estimates, and every chunk is counted again (:meth:`fits`).

    The tokens' offsets are never copied out of the tokenizer's encodings (a tenth of the time of
    the tokenization itself): each question is a binary search over one piece's tokens, asking the
    encoding for the offsets of a token (``token_to_chars``) or its word (``token_to_word``).
    Tokens come in order, so their starts, and their ends, never decrease.
    """

    def __init__(self, text: str, size: int, overlap: int, backend: Any, local: bool) -> None:
        super().__init__(text, size, overlap)
        bounds = _pieces(text, PIECE_CHARS)
        self._shifts = [a for a, _ in bounds]
        self._encodings = backend.encode_batch([text[a:b] for a, b in bounds], add_special_tokens=False)
        # the number of the first token of each piece, and of all tokens at the end
        self._firsts = [0, *itertools.accumulate(len(encoding) for encoding in self._encodings)]
        self._count: Callable[[str], int] = lambda chunk: len(backend.encode(chunk, add_special_tokens=False).ids)
        self._local = local

    def fit_end(self, start: int, hi: int) -> int:
        limit = self._before(start, edge=1) + self.size  # the tokens wholly before start, then size more
        return min(self._span(limit)[0], hi) if limit < self._firsts[-1] else hi

    def overlap_start(self, end: int, lo: int) -> int:
        keep = self._before(end, edge=0) - self.overlap - 1  # the tokens begun before end, less the overlap
        return max(lo, self._span(keep)[1]) if keep >= 0 else lo

    def fits(self, start: int, end: int) -> bool:
        if self._local and self._clean(start) and self._clean(end):
            return True  # counted exactly already: fit_end kept it within size
        return self._count(self.text[start:end]) <= self.size

    def _span(self, token: int) -> tuple[int, int]:
        """The offsets of ``token`` (numbered over the whole text) in the text."""
        piece = bisect.bisect_right(self._firsts, token) - 1
        start, end = self._encodings[piece].token_to_chars(token - self._firsts[piece])
        return start + self._shifts[piece], end + self._shifts[piece]

    def _before(self, offset: int, edge: int) -> int:
        """How many tokens end (``edge=1``), or start (``edge=0``), at or before ``offset`` (starts: before it)."""
        piece = max(0, bisect.bisect_right(self._shifts, offset) - 1)  # no token spans two pieces
        encoding, local = self._encodings[piece], offset - self._shifts[piece]
        if edge:
            inside = bisect.bisect_right(range(len(encoding)), local, key=lambda k: encoding.token_to_chars(k)[1])
        else:
            inside = bisect.bisect_left(range(len(encoding)), local, key=lambda k: encoding.token_to_chars(k)[0])
        return self._firsts[piece] + inside

    def _clean(self, offset: int) -> bool:
        """Whether ``offset`` falls between two words of the pre-tokenizer (no token or word spans it)."""
        after = self._before(offset, edge=0)  # the first token starting at or after offset
        if after == 0:
            return True
        if self._span(after - 1)[1] > offset:
            return False  # a token spans the offset
        if after == self._firsts[-1]:
            return True
        piece = bisect.bisect_right(self._firsts, after) - 1
        if self._firsts[piece] == after:
            return True  # the first token of a piece: pieces are cut between words
        encoding, local = self._encodings[piece], after - self._firsts[piece]
        word = encoding.token_to_word(local)
        return word is None or word != encoding.token_to_word(local - 1)


def model_measure(text: str, size: int, overlap: int, backend: Any, path: Path) -> ModelTokens:
    """The tokens of a ``tokenizers.Tokenizer`` read from ``path`` (its tokenizer.json)."""
    return ModelTokens(text, size, overlap, backend, word_local(path))


@lru_cache(maxsize=16)
def word_local(path: Path) -> bool:
    """Whether the tokenizer at ``path`` normalizes and pre-tokenizes one word at a time (see the module's doc)."""
    try:
        config = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    pre_tokenizer = config.get("pre_tokenizer")
    return (
        _all_of(config.get("normalizer"), _LOCAL_NORMALIZERS, "normalizers")
        and _all_of(pre_tokenizer, _LOCAL_PRE_TOKENIZERS, "pretokenizers")
        and _types(pre_tokenizer, "pretokenizers") & _WHITESPACE_PRE_TOKENIZERS != set()
    )


def _types(step: Any, nested: str) -> set[str]:
    """The types of a normalizer or pre-tokenizer and, for a Sequence, of its steps."""
    if not isinstance(step, dict):
        return set()
    if step.get("type") == "Sequence":
        return set().union(*(_types(inner, nested) for inner in step.get(nested, [])))
    return {str(step.get("type"))}


def _all_of(step: Any, allowed: frozenset[str], nested: str) -> bool:
    """Whether a normalizer or pre-tokenizer (None: none) is one of ``allowed``, or a Sequence of them."""
    if step is None:
        return True
    if not isinstance(step, dict):
        return False
    if step.get("type") == "Sequence":
        return all(_all_of(inner, allowed, nested) for inner in step.get(nested, []))
    return step.get("type") in allowed
