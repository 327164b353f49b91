"""Evidence in an edited document: found again (re-anchored), or said to be stale. Pure functions on text.

A document changes under its judgements: a paragraph is inserted above the evidence, a word
of it is corrected, a section is deleted. Each evidence judgement then is one of:

- **valid**: it is where it says. A quote occurs exactly once, as the loader matches it
  (exactly, or with ``match: whitespace``); offsets still hold the text or hash they recorded.
- **moved**: its text is found once elsewhere (new offsets), either exactly or, failing that,
  with runs of white space matching any run of white space and case ignored (a quote re-typed
  with another case, a line re-wrapped). A quote given without offsets moves only by the
  tolerant match: an exact quote is found again wherever it went each time it is read.
- **changed**: the document is there, but the text is not as judged: found nowhere (though a
  passage still holds at least half of it, as its start, its end or both: the nearest passage is
  shown as a hint, never written), found more than once (no place can be chosen without a guess), or
  offsets whose ``sha256`` no longer matches (a hash cannot be searched for).
- **gone**: the document is no longer in the documents, offsets without a recorded text run past
  its end, or less than half of the text is left (its start and end together).

Offsets given with neither ``text`` nor ``sha256`` record nothing to check against: they are
**unchecked** unless they run past the document's end (then gone). Offsets are code points of
the document as loaded, ``[start, end)`` (docs/semantics.md). Case is ignored with Python's
simple case folding (``re.IGNORECASE``), which never changes a text's length, so a tolerant
match is still exact offsets into the document, from the first to the last character matched.

:func:`stale_evidence` is the check a run calls: the items that are moved, changed or gone. This
module imports nothing of rag_eval._data.datasets, so that its loaders (and the dataset model)
can call it: that package's ``__init__`` imports every loader.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from rag_eval._core.messages import shown

VALID, MOVED, CHANGED, GONE, UNCHECKED = "valid", "moved", "changed", "gone", "unchecked"
STATUSES = (VALID, MOVED, CHANGED, GONE, UNCHECKED)
STALE = (MOVED, CHANGED, GONE)
# How a text was found: as the item matches it (exactly, or its own match: whitespace), or tolerantly.
EXACT, TOLERANT = "exact", "tolerant"


@dataclass(frozen=True)
class Found:
    """A text found exactly once: ``[start, end)`` and how (:data:`EXACT` or :data:`TOLERANT`)."""

    start: int
    end: int
    how: str


@dataclass(frozen=True)
class NotFound:
    """A text found nowhere (``places`` empty) or more than once (``places``: the first two)."""

    places: tuple[tuple[int, int], ...] = ()

    @property
    def ambiguous(self) -> bool:
        """Found more than once: no one place without a guess."""
        return bool(self.places)


def span_sha256(text: str) -> str:
    """The SHA-256 of ``text`` as UTF-8, 64 lower-case hexadecimal digits: what an item's ``sha256`` records."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def tolerant_pattern(text: str) -> re.Pattern[str] | None:
    """``text`` as a pattern: runs of white space match any run, case ignored, its ends' white space no part of it.

    None for a text that is only white space (it would match anywhere).
    """
    parts = text.split()
    if not parts:
        return None
    return re.compile(r"\s+".join(re.escape(part) for part in parts), re.IGNORECASE)


def whitespace_pattern(text: str) -> re.Pattern[str] | None:
    """:func:`tolerant_pattern` with case kept: how a quote with ``match: whitespace`` is matched."""
    parts = text.split()
    return re.compile(r"\s+".join(re.escape(part) for part in parts)) if parts else None


def anchor(document: str, text: str, match: str = "exact") -> Found | NotFound:
    """Where ``text`` occurs once in ``document``: by ``match`` (the item's own rule), else tolerantly.

    ``match``: ``"exact"`` (code point for code point) or ``"whitespace"`` (runs of white space
    match any run). A text found more than once by its own rule is ambiguous, and a tolerant
    search would find it as often: it is not tried then.
    """
    own = _search(document, whitespace_pattern(text)) if match == "whitespace" else find_exact(document, text)
    if isinstance(own, Found) or own.ambiguous:
        return own
    return find_tolerant(document, tolerant_pattern(text))


def find_exact(document: str, text: str) -> Found | NotFound:
    """Where ``text`` occurs once in ``document``, code point for code point (overlapping occurrences count)."""
    if not text:
        return NotFound()
    first = document.find(text)
    if first < 0:
        return NotFound()
    second = document.find(text, first + 1)  # overlapping occurrences count, as the loader counts them
    if second < 0:
        return Found(first, first + len(text), EXACT)
    return NotFound(((first, first + len(text)), (second, second + len(text))))


def find_tolerant(document: str, pattern: re.Pattern[str] | None) -> Found | NotFound:
    """Where ``pattern`` (a text's :func:`tolerant_pattern`, compiled once for many documents) matches once."""
    found = _search(document, pattern)
    return Found(found.start, found.end, TOLERANT) if isinstance(found, Found) else found


def _search(document: str, pattern: re.Pattern[str] | None) -> Found | NotFound:
    if pattern is None:
        return NotFound()
    first = pattern.search(document)
    if first is None:
        return NotFound()
    second = pattern.search(document, first.start() + 1)
    if second is None:
        return Found(first.start(), first.end(), EXACT)
    return NotFound(((first.start(), first.end()), (second.start(), second.end())))


def nearest(document: str, text: str) -> tuple[int, int] | None:
    """The passage of ``document`` that still holds at least half of ``text``: its start, its end, or both.

    The longest start of ``text`` that occurs (its first occurrence), then the longest end that
    occurs after it: when the two make up half of ``text`` and lie within twice its length, the
    passage runs from the one to the other (a word edited in the middle). Else a shared start or a
    shared end of at least half, and the passage of ``text``'s length from (or up to) it. Each
    longest part is a binary search on its length, each step one search: a part that occurs
    makes every shorter one occur. None when less than half of ``text`` is left.
    """
    if not text:
        return None
    size = len(text)
    head, at_head = _longest(size, lambda n: document.find(text[:n]))
    if head:
        after = at_head + head
        tail, at_tail = _longest(size - head, lambda n: document.find(text[size - n :], after))
        end = at_tail + tail
        if tail and 2 * (head + tail) >= size and end - at_head <= 2 * size:
            return at_head, end
    if 2 * head >= size:
        return at_head, min(len(document), at_head + size)
    tail, at_tail = _longest(size, lambda n: document.find(text[size - n :]))
    if 2 * tail < size:
        return None
    end = at_tail + tail
    return max(0, end - size), end


def _longest(size: int, place: Callable[[int], int]) -> tuple[int, int]:
    """The largest ``n <= size`` whose ``place(n)`` is not -1, and that place (0 and 0 when none is)."""
    low, high, at = 0, size, 0
    while low < high:
        middle = (low + high + 1) // 2
        found = place(middle)
        if found >= 0:
            low, at = middle, found
        else:
            high = middle - 1
    return low, at


@dataclass(frozen=True)
class EvidenceItem:
    """One evidence judgement as written: a ``quote`` (with its ``match``), or offsets with what they held.

    ``text`` and ``sha256``: what ``[start, end)`` held when judged (either, both or neither).
    """

    doc: str
    start: int | None = None
    end: int | None = None
    quote: str | None = None
    match: str = "exact"
    text: str | None = None
    sha256: str | None = None

    @property
    def old(self) -> tuple[int, int] | None:
        """The offsets as written (None for a quote)."""
        return None if self.start is None or self.end is None else (self.start, self.end)


@dataclass(frozen=True)
class Finding:
    """What :func:`check_item` found for one item: its ``status`` (one of :data:`STATUSES`) and why.

    ``new``: for valid and moved, the span the evidence covers now; for changed, the nearest
    passage (a hint for whoever judges it again, never written); None otherwise. ``new_text``: the
    document's text at ``new`` for a moved item (what a fix records as its quote or text).
    """

    item: EvidenceItem
    status: str
    new: tuple[int, int] | None = None
    new_text: str | None = None
    why: str = ""


def check_item(documents: Mapping[str, str], item: EvidenceItem) -> Finding:
    """Whether ``item`` still holds in ``documents`` (``{doc id: text}``): valid, moved, changed, gone or unchecked."""
    document = documents.get(item.doc)
    if document is None:
        return Finding(item, GONE, why=f"document {item.doc!r} is no longer in the documents")
    if item.quote is not None:
        return _check_quote(document, item, item.quote)
    return _check_offsets(document, item)


def stale_evidence(documents: Mapping[str, str], items: Iterable[EvidenceItem]) -> list[Finding]:
    """The findings of ``items`` that are stale (moved, changed or gone), in their order: what a run reports.

    A run that scores stale evidence scores text that is not what was judged; it says so and
    does not gate on it unless told (docs/judging.md).
    """
    found = (check_item(documents, item) for item in items)
    return [finding for finding in found if finding.status in STALE]


def _check_quote(document: str, item: EvidenceItem, quote: str) -> Finding:
    found = anchor(document, quote, item.match)
    if isinstance(found, NotFound):
        return _lost(document, item, quote, found)
    span = (found.start, found.end)
    if found.how == EXACT:
        return Finding(item, VALID, span)
    return Finding(item, MOVED, span, document[found.start : found.end],
                   "found once with white space and case ignored")


def _check_offsets(document: str, item: EvidenceItem) -> Finding:
    start, end = item.start, item.end
    assert start is not None and end is not None  # an item without a quote has offsets (the reader checks it)
    inside = 0 <= start < end <= len(document)
    held = document[start:end] if inside else None
    past = f"[{start}, {end}) runs past the end of the document ({len(document):,} characters)"
    if item.text is None and item.sha256 is None:
        return Finding(item, UNCHECKED, (start, end)) if inside else Finding(item, GONE, why=past)
    if held is not None and _holds(held, item):
        return Finding(item, VALID, (start, end))
    if item.text is None:
        why = ("the text at its offsets is not what its sha256 records (a hash cannot be searched for; record "
               "text as well to let the span be re-anchored)") if inside else past
        return Finding(item, CHANGED if inside else GONE, why=why)
    found = anchor(document, item.text)
    if isinstance(found, NotFound):
        return _lost(document, item, item.text, found)
    how = "the same text, found once" if found.how == EXACT else "found once with white space and case ignored"
    return Finding(item, MOVED, (found.start, found.end), document[found.start : found.end], how)


def _holds(held: str, item: EvidenceItem) -> bool:
    """Whether ``held`` (the text at the item's offsets) is what the item recorded."""
    if item.text is not None and held != item.text:
        return False
    return item.sha256 is None or span_sha256(held) == item.sha256.lower()


def _lost(document: str, item: EvidenceItem, text: str, found: NotFound) -> Finding:
    """Changed or gone: ``text`` found more than once, or nowhere (with or without a passage near it)."""
    if found.ambiguous:
        places = " and ".join(f"[{start}, {end})" for start, end in found.places)
        return Finding(item, CHANGED, why=f"its text occurs more than once now (at {places}); no place is chosen "
                       "without a guess")
    near = nearest(document, text)
    if near is None:
        return Finding(item, GONE, why="less than half of its text is left in the document (its start and end)")
    start, end = near
    return Finding(item, CHANGED, near, why=f"its text is not in the document; nearest passage [{start}, {end}) "
                   f"{shown(document[start:end])}")


def finding_record(qid: str, finding: Finding) -> dict[str, object]:
    """One stale finding as JSON (a results file's ``stale_evidence``): query, document, old span, status, new span."""
    item = finding.item
    return {
        "query": qid,
        "doc": item.doc,
        "old": None if item.old is None else list(item.old),
        "quote": item.quote,
        "status": finding.status,
        "new": None if finding.new is None or finding.status != MOVED else list(finding.new),
        "why": finding.why,
    }
