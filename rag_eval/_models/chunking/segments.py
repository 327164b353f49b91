"""Unicode segmentation for chunking: sentence ends (UAX #29), word and grapheme-cluster boundaries.

Pure Python on the standard library (``re`` and ``unicodedata``), each rule a local test:

- **sentences**: :func:`sentence_ends` applies UAX #29's sentence rules SB1-SB11: a sentence
  ends after a paragraph separator (``\\n``, ``\\r``, ``\\r\\n``, U+0085, U+2028, U+2029), and
  after a terminator (``.``, ``!``, ``?``, ``。``, ... the Sentence_Terminal and ATerm
  characters) with its closing punctuation and spaces, unless the rules keep the sentence
  going: ``3.14`` (SB6), ``U.S.A`` (SB7), ``etc. and`` (a lower-case word follows, SB8),
  ``Hi!, said`` (a comma, colon, ... follows, SB8a). Extend and Format characters belong to
  the character before them (SB5), as a zero-width space after a full stop.
- **grapheme clusters**: :func:`cluster_boundary` is the common part of UAX #29's
  grapheme rules: ``\\r\\n``, combining marks, joiners, variation selectors, emoji
  modifiers and ZWJ sequences, regional-indicator pairs (flags) and Hangul syllables stay
  whole. Extended_Pictographic is approximated by the emoji and symbol blocks.
- **words**: :func:`word_boundary` follows UAX #29's word rules on Python's word characters
  (``\\w``, as rag_eval's word tokenizer): a run of letters and digits is one word, also
  across ``'`` ``’`` ``.`` ``:`` ``·`` between two of them (``can't``, ``e.g``, ``3.14``)
  and ``,`` ``;`` between digits (``1,000``); a run of spaces is one; every other grapheme
  cluster is a word of its own. Chinese or Thai text without spaces is one word per run
  (no dictionary): it is cut at grapheme clusters when a run does not fit.

Every function takes ``lo``: the text before it is not looked at, as if the text began there
(the splitter segments the text from its cursor on, as semantic-text-splitter did).
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from functools import lru_cache

import numpy as np

# UAX #29 sentence classes (Unicode 17), as the inside of a regular expression's [...] (escapes for re).
# Sentence_Terminal (STerm):
_STERM = (
    r"\u0021\u003f\u0589\u061d-\u061f\u06d4\u0700-\u0702\u07f9\u0837\u0839\u083d-\u083e\u0964-\u0965"
    r"\u104a-\u104b\u1362\u1367-\u1368\u166e\u1735-\u1736\u17d4-\u17d5\u1803\u1809\u1944-\u1945"
    r"\u1aa8-\u1aab\u1b4e-\u1b4f\u1b5a-\u1b5b\u1b5e-\u1b5f\u1b7d-\u1b7f\u1c3b-\u1c3c\u1c7e-\u1c7f"
    r"\u203c-\u203d\u2047-\u2049\u2cf9-\u2cfb\u2e2e\u2e3c\u2e53-\u2e54\u2e60-\u2e61\u3002\ua4ff"
    r"\ua60e-\ua60f\ua6f3\ua6f7\ua876-\ua877\ua8ce-\ua8cf\ua92f\ua9c8-\ua9c9\uaa5d-\uaa5f\uaaf0-\uaaf1"
    r"\uabeb\ufe12\ufe15-\ufe16\ufe56-\ufe57\uff01\uff1f\uff61\U00010a56-\U00010a57\U00010f55-\U00010f59"
    r"\U00010f86-\U00010f89\U00011047-\U00011048\U000110be-\U000110c1\U00011141-\U00011143"
    r"\U000111c5-\U000111c6\U000111cd\U000111de-\U000111df\U00011238-\U00011239\U0001123b-\U0001123c"
    r"\U000112a9\U000113d4-\U000113d5\U0001144b-\U0001144c\U000115c2-\U000115c3\U000115c9-\U000115d7"
    r"\U00011641-\U00011642\U0001173c-\U0001173e\U00011944\U00011946\U00011a42-\U00011a43"
    r"\U00011a9b-\U00011a9c\U00011c41-\U00011c42\U00011ef7-\U00011ef8\U00011f43-\U00011f44"
    r"\U00016a6e-\U00016a6f\U00016af5\U00016b37-\U00016b38\U00016b44\U00016d6e-\U00016d6f\U00016e98"
    r"\U0001bc9f\U0001da88"
)
_ATERM = r"\u002e\u2024\ufe52\uff0e"  # full stops: SB6-SB8 apply to these only
_CLOSE = (
    r"\u0022\u0027-\u0029\u005b\u005d\u007b\u007d\u00ab\u00bb\u0f3a-\u0f3d\u169b-\u169c\u2018-\u201f"
    r"\u2039-\u203a\u2045-\u2046\u207d-\u207e\u208d-\u208e\u2308-\u230b\u2329-\u232a\u275b-\u2760"
    r"\u2768-\u2775\u27c5-\u27c6\u27e6-\u27ef\u2983-\u2998\u29d8-\u29db\u29fc-\u29fd\u2e00-\u2e0d"
    r"\u2e1c-\u2e1d\u2e20-\u2e29\u2e42\u2e55-\u2e5c\u2e62-\u2e63\u3008-\u3011\u3014-\u301b\u301d-\u301f"
    r"\ufd3e-\ufd3f\ufe17-\ufe18\ufe35-\ufe44\ufe47-\ufe48\ufe59-\ufe5e\uff08-\uff09\uff3b\uff3d\uff5b"
    r"\uff5d\uff5f-\uff60\uff62-\uff63\U0001f676-\U0001f678"
)
_SCONTINUE = frozenset(
    "\u002c\u002d\u003a\u003b\u037e\u055d\u060c\u060d\u07f8\u1802\u1808\u2013\u2014\u3001\ufe10\ufe11"
    "\ufe13\ufe14\ufe31\ufe32\ufe50\ufe51\ufe54\ufe55\ufe58\ufe63\uff0c\uff0d\uff1a\uff1b\uff64"
)
# Sep, CR and LF: a paragraph separator ends a sentence (SB4)
_PARA = r"\n\r\u0085\u2028\u2029"
PARAGRAPH_SEPARATORS = frozenset("\n\r\u0085\u2028\u2029")


def _expand(ranges: str) -> frozenset[str]:
    """The characters of the inside of a ``[...]`` class written as ``\\uXXXX`` / ``\\UXXXXXXXX`` escapes and ranges."""
    chars: set[str] = set()
    for match in re.finditer(r"\\[uU]([0-9a-fA-F]+)(?:-\\[uU]([0-9a-fA-F]+))?", ranges):
        first = int(match.group(1), 16)
        last = int(match.group(2), 16) if match.group(2) else first
        chars.update(map(chr, range(first, last + 1)))
    return frozenset(chars)


_TERMINATORS = _expand(_STERM + _ATERM)
_ATERMS = _expand(_ATERM)
_ASTRAL_TERMS = sorted(ch for ch in _TERMINATORS if ord(ch) > 0xFFFF)
# The regular expression scans for terminators with the BMP ones and ONE range spanning the astral
# ones (a class of many astral ranges is 10 times slower in re); a match is checked against the set.
_TERM_CLASS = "".join(re.findall(r"\\u[0-9a-f]{4}(?:-\\u[0-9a-f]{4})?", _STERM + _ATERM)) + (
    f"\\U{ord(_ASTRAL_TERMS[0]):08x}-\\U{ord(_ASTRAL_TERMS[-1]):08x}"
)


@lru_cache(maxsize=2)
def _terminated(ascii_only: bool) -> re.Pattern[str]:
    """A terminator run, its closing punctuation, its spaces and one paragraph separator (SB9-SB11).

    Extend and Format characters after any of them belong to them (SB5): their class is read from
    ``unicodedata`` (general categories Mn, Me, Mc, Cf) the first time sentences of a text that is
    not ASCII are asked for (20 ms, with the pattern's compilation); ASCII text has none.
    """
    ignored = "" if ascii_only else _class_of(_MARKS | {"Cf"}) + r"\U0001f3fb-\U0001f3ff\U000e0000-\U000e0fff"
    x = f"[{ignored}]*" if ignored else ""
    return re.compile(
        # it starts with the terminator class itself, not a group: re then scans for that class alone, 5 times faster
        rf"[{_TERM_CLASS}](?P<terms>{x}(?:[{_TERM_CLASS}]{x})*)(?:[{_CLOSE}]{x})*(?:[^\S{_PARA}]{x})*"
        rf"(?P<separator>\r\n|[{_PARA}])?"
    )


def _class_of(categories: frozenset[str]) -> str:
    """The inside of a ``[...]`` class of the Basic Multilingual Plane's code points in ``categories``."""
    plane = map(chr, range(0x10000))
    codes = [code for code, name in enumerate(map(unicodedata.category, plane)) if name in categories]
    ranges = []
    for _, run in itertools.groupby(enumerate(codes), key=lambda pair: pair[1] - pair[0]):
        block = [code for _, code in run]
        ranges.append(f"\\u{block[0]:04x}" + (f"-\\u{block[-1]:04x}" if len(block) > 1 else ""))
    return "".join(ranges)


_RUN_READ_AHEAD = 1024  # how far past a block a terminator run is read (runs are a few characters)
# SB8: after a full stop, what may stand before a lower-case letter that keeps the sentence going:
# anything but a letter, a paragraph separator or a terminator
_SB8_SKIP = re.compile(rf"(?:(?![{_PARA}{_TERM_CLASS}])[\W\d_])*")

# UAX #29 word and grapheme classes (as Python reads them; see word_boundary and cluster_boundary)
_ZWJ = "\u200d"
_MARKS = frozenset({"Mn", "Me", "Mc"})
_WORD_RUN = re.compile(r"\w+")
_LAST_NON_WORD = re.compile(r".*\W", re.DOTALL)  # matched from lo to i: ends after the last non-word character
_SPACE_RUN = re.compile(r"[ \u1680\u2000-\u2006\u2008-\u200a\u205f\u3000]+")  # WSegSpace: stays one word
_WORD_SPACE = frozenset(" \u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2008\u2009\u200a\u205f\u3000")
_MID_LETTER = frozenset("'.:\u00b7\u2018\u2019\u2024\ufe13\ufe52\ufe55\uff07\uff0e\uff1a")  # WB6/WB7, WB11/WB12
_MID_NUMBER = frozenset(",;\u037e\u0589\u060c\u060d\u066c\u07f8\u2044\ufe10\ufe14\ufe50\ufe54\uff0c\uff1b")


def sentence_ends(text: str, start: int = 0, stop: int | None = None) -> list[int]:
    """Offsets where a sentence of ``text`` ends (UAX #29), sorted; ``len(text)`` is not included.

    With ``start`` and ``stop``: the ends made by a paragraph separator or a terminator run that
    begins in ``[start, stop)`` (a run is read up to 1,024 characters past ``stop``), so that the
    text can be segmented a block at a time; a run that straddles ``start`` may be found twice.
    """
    size = len(text)
    stop = size if stop is None else min(stop, size)
    ends = _after_separators(text, start, stop)
    terminated = _terminated(text[start : stop + _RUN_READ_AHEAD].isascii())
    for match in terminated.finditer(text, start, min(size, stop + _RUN_READ_AHEAD)):
        if match.start() >= stop:
            break
        terms = text[match.start() : match.end("terms")]
        strays = [] if terms.isascii() else [i for i, ch in enumerate(terms) if ch > "\uffff" and _stray(ch)]
        if strays:
            # an astral character of the scanning range that is no terminator: read on after it
            found = terminated.match(text, match.start() + strays[-1] + 1)
            if found is None:
                continue
            match = found
        end = match.end()
        if end >= size or match.group("separator") or _sentence_goes_on(text, match):
            continue  # a run that ends in a separator ends where the separator does
        while end < size and text[end] > "\x7f" and not cluster_boundary(text, end, match.start()):
            end += 1  # a mark on the last space stays with it
        ends.add(end)
    ends.discard(size)
    return sorted(ends)


def _stray(ch: str) -> bool:
    """Whether an astral character matched as a terminator is neither one nor an Extend or Format character."""
    return ch not in _TERMINATORS and not _is_extend(ch) and unicodedata.category(ch) != "Cf"


def _after_separators(text: str, start: int, stop: int) -> set[int]:
    """The offset after every paragraph separator in ``text[start:stop]`` (SB4), \r\n being one (SB3).

    With numpy over the code points: a match object per line break cost more than the rest.
    """
    piece = text[start : stop + 1]  # and the character after: is a \r at stop - 1 followed by \n?
    codes = np.frombuffer(piece.encode("utf-32-le"), dtype=np.uint32)
    inside = codes[: stop - start]
    separator = (inside == 0x0A) | (inside == 0x0D) | (inside == 0x85) | (inside == 0x2028) | (inside == 0x2029)
    following = codes[1 : stop - start + 1]
    separator[: len(following)] &= ~((inside[: len(following)] == 13) & (following == 10))  # \r of \r\n
    return set((np.flatnonzero(separator) + (start + 1)).tolist())


def _sentence_goes_on(text: str, match: re.Match[str]) -> bool:
    """Whether the rules SB6-SB8a keep the sentence going after the terminator run ``match`` (no separator)."""
    end = match.end()
    following = text[end]
    if following in _SCONTINUE or following in _TERMINATORS:
        return True  # SB8a: "Hi!, she said", "Wait. . . no"
    last_term = match.end("terms") - 1
    while text[last_term] not in _TERMINATORS:
        last_term -= 1  # an Extend or Format character after it (SB5)
    if text[last_term] not in _ATERMS:
        return False
    if match.end("terms") == end:  # nothing after the full stop but Extend and Format: no closing mark, no space
        if unicodedata.category(following) == "Nd":
            return True  # SB6: 3.14
        before = _base_before(text, last_term, match.start() - 1) if last_term else ""
        if _is_upper(following) and before.isalpha() and (before.islower() or _is_upper(before)):
            return True  # SB7: U.S.A
    after = _SB8_SKIP.match(text, end).end()  # type: ignore[union-attr]  # a * pattern always matches
    return after < len(text) and text[after].islower()  # SB8: "etc. and", "e.g. (see"


def _is_upper(ch: str) -> bool:
    return ch.isupper() or ch.istitle()


def _is_extend(ch: str) -> bool:
    """Grapheme_Extend or SpacingMark (approximately): never starts a cluster."""
    if unicodedata.category(ch) in _MARKS:
        return True
    code = ord(ch)
    return (
        code in (0x200C, 0x200D)  # ZWNJ, ZWJ
        or 0x1F3FB <= code <= 0x1F3FF  # emoji skin tones
        or 0xE0020 <= code <= 0xE007F  # emoji tag characters
        or 0xFE00 <= code <= 0xFE0F
        or 0xE0100 <= code <= 0xE01EF  # variation selectors (Mn already, kept explicit)
    )


def _is_pictographic(ch: str) -> bool:
    """Extended_Pictographic, approximated by the emoji and symbol blocks (what ZWJ sequences join)."""
    code = ord(ch)
    if code >= 0x1F000:
        return code <= 0x1FFFD and not (0x1F1E6 <= code <= 0x1F1FF or 0x1F3FB <= code <= 0x1F3FF)
    return (
        code in (0xA9, 0xAE, 0x203C, 0x2049, 0x2122, 0x2139, 0x24C2, 0x3030, 0x303D, 0x3297, 0x3299)
        or 0x2194 <= code <= 0x21AA
        or 0x231A <= code <= 0x23FA
        or 0x25AA <= code <= 0x25FE
        or 0x2600 <= code <= 0x27BF
        or 0x2934 <= code <= 0x2935
        or 0x2B05 <= code <= 0x2B55
    )


def _is_regional(ch: str) -> bool:
    return 0x1F1E6 <= ord(ch) <= 0x1F1FF


def _hangul(ch: str) -> str:
    """Hangul_Syllable_Type: L, V, T, LV, LVT or '' (not Hangul)."""
    code = ord(ch)
    if 0x1100 <= code <= 0x115F or 0xA960 <= code <= 0xA97C:
        return "L"
    if 0x1160 <= code <= 0x11A7 or 0xD7B0 <= code <= 0xD7C6:
        return "V"
    if 0x11A8 <= code <= 0x11FF or 0xD7CB <= code <= 0xD7FB:
        return "T"
    if 0xAC00 <= code <= 0xD7A3:
        return "LV" if (code - 0xAC00) % 28 == 0 else "LVT"
    return ""


_HANGUL_JOINS = {"L": {"L", "V", "LV", "LVT"}, "LV": {"V", "T"}, "V": {"V", "T"}, "LVT": {"T"}, "T": {"T"}}


def cluster_boundary(text: str, i: int, lo: int = 0) -> bool:
    """Whether a grapheme cluster may end before ``text[i]`` (the text read from ``lo`` on)."""
    if i <= lo or i >= len(text):
        return True
    before, after = text[i - 1], text[i]
    if after < "\x80":  # no rule keeps an ASCII character with what precedes it, but \r\n
        return not (before == "\r" and after == "\n")  # GB3
    if before == "\r" and after == "\n":
        return False  # GB3
    if before in PARAGRAPH_SEPARATORS or after in PARAGRAPH_SEPARATORS:
        return True  # GB4, GB5
    if unicodedata.category(before) == "Cc" or unicodedata.category(after) == "Cc":
        return True
    joins = _HANGUL_JOINS.get(_hangul(before))
    if joins and _hangul(after) in joins:
        return False  # GB6-GB8
    if _is_extend(after):
        return False  # GB9, GB9a
    if before == _ZWJ and _is_pictographic(after):
        j = i - 2  # GB11: pictograph, extends, ZWJ x pictograph
        while j >= lo and _is_extend(text[j]):
            j -= 1
        return not (j >= lo and _is_pictographic(text[j]))
    if _is_regional(before) and _is_regional(after):
        j = i - 1  # GB12, GB13: flags are pairs of regional indicators
        while j >= lo and _is_regional(text[j]):
            j -= 1
        return (i - 1 - j) % 2 == 0
    return True


def _base_before(text: str, i: int, lo: int) -> str:
    """The character before ``i`` that a word rule looks at: marks and joiners skipped (WB4)."""
    j = i - 1
    while j > lo and _is_extend(text[j]):
        j -= 1
    return text[j]


def _wordish(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def word_boundary(text: str, i: int, lo: int = 0) -> bool:
    """Whether a word may end before ``text[i]`` (the text read from ``lo`` on; see the module's doc)."""
    if i <= lo or i >= len(text):
        return True
    if not cluster_boundary(text, i, lo):
        return False
    after = text[i]
    before = _base_before(text, i, lo)
    if _wordish(before):
        if _wordish(after):
            return False  # WB5, WB8-WB10, WB13a/b (letters, digits and _)
        following = text[i + 1] if i + 1 < len(text) else ""
        if _wordish(following) and (
            after in _MID_LETTER or (after in _MID_NUMBER and before.isdigit() and following.isdigit())
        ):
            return False  # WB6, WB12: can|'t, 1|,000
    elif _wordish(after) and i - 1 > lo:
        previous = _base_before(text, i - 1, lo)
        if _wordish(previous) and (
            before in _MID_LETTER or (before in _MID_NUMBER and previous.isdigit() and after.isdigit())
        ):
            return False  # WB7, WB11: can'|t, 1,|000
    return not (before in _WORD_SPACE and after in _WORD_SPACE)  # WB3d


def next_word_boundary(text: str, i: int, lo: int, hi: int) -> int:
    """The first word boundary after ``i`` (``hi`` when there is none before it)."""
    j = i + 1
    while j < hi:
        if word_boundary(text, j, lo):
            return j
        # no boundary inside a run of word characters or of spaces: jump over the rest of it, in C
        run = _WORD_RUN.match(text, j, hi) or _SPACE_RUN.match(text, j, hi)
        j = run.end() if run is not None else j + 1
    return hi


def previous_word_boundary(text: str, i: int, lo: int) -> int:
    """The last word boundary at or before ``i`` and after ``lo`` (``lo`` when there is none)."""
    j = i
    while j > lo:
        if word_boundary(text, j, lo):
            return j
        if _wordish(text[j - 1]):
            # no boundary inside a run of word characters: jump to its start, in C
            last = _LAST_NON_WORD.match(text, lo, j)
            start = last.end() if last is not None else lo
            j = start if start < j - 1 else j - 1
        else:
            j -= 1
    return lo


def next_cluster_boundary(text: str, i: int, lo: int, hi: int) -> int:
    """The first grapheme-cluster boundary after ``i`` (at most ``hi``)."""
    j = i + 1
    while j < hi and not cluster_boundary(text, j, lo):
        j += 1
    return min(j, hi)


def previous_cluster_boundary(text: str, i: int, lo: int) -> int:
    """The last grapheme-cluster boundary at or before ``i`` and after ``lo`` (``lo`` when there is none)."""
    j = i
    while j > lo and not cluster_boundary(text, j, lo):
        j -= 1
    return j
