"""Evidence spans of a dataset with documents: the checks of one span, quotes, document grades.

Every loader of evidence (the YAML query set, the Chroma layout) turns its items
into :class:`rag_eval._core.spans.EvidenceSpan` through these functions, so that a span
is refused with the same words wherever it comes from. Each check returns the
problems as text (no place); the loader prefixes the place (file, query, item).

Offsets are code points of the document *as loaded* (a leading byte-order mark
removed, line endings kept as they are in the file), ``[start, end)``, end exclusive.

A quote is matched exactly, code point for code point: case, spaces, line breaks,
punctuation and the Unicode form (a precomposed "é" is not "e" + combining accent)
must be those of the document. Nothing is normalised, because any normalisation
would move the offsets the quote resolves to. A quote must occur exactly once;
overlapping occurrences count (``"aa"`` occurs twice in ``"aaa"``). Finding where a
quote is takes at most two searches: unique or ambiguous is all a span needs (the
count a message shows is one more pass, in C).

Opt-in, ``match: whitespace``: each run of white space in the quote matches any run of
white space in the document (a line break and indentation where the quote has one
space, as text copied from a PDF has), and white space at the quote's ends is not
part of it. The span is still exact offsets into the document, from the first to the
last character matched. Everything else is matched exactly.

A quote found nowhere is reported with the nearest passage of the document: the one
that shares the longest start or end with the quote, and where the two part.

Evidence given by offsets may record what they held when it was judged, so that an edit of
the document can be noticed: ``text`` (the span's text) or ``sha256`` (the SHA-256 of its
UTF-8). Only their form is checked here (:func:`stored_check_problem`); whether the document
still holds them is staleness, not a problem of the file: the evidence loads at its offsets,
and rag_eval._data.judging.anchor says which spans are stale (``rag-eval judgements check``
lists and re-anchors them).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence

from rag_eval._core.messages import close_match, shown
from rag_eval._core.spans import EvidenceSpan, span_problem
from rag_eval._data.judging.anchor import span_sha256

QUOTE_MATCHES = ("exact", "whitespace")
# Occurrences a whitespace-tolerant quote's message counts at the most (each one a step of Python).
_COUNTED = 10_000
_EXACT_FIX = (
    "quotes match exactly (same characters, case, spaces and line breaks, no normalisation): copy it from the document"
)


def occurrences(text: str, quote: str) -> tuple[int, list[int]]:
    """How many times ``quote`` occurs in ``text`` (overlapping ones count) and the offsets of the first two.

    Two searches find the first two; only when there are two is the rest counted, by one
    ``str.count`` (in C). That count is exact for a quote that cannot overlap itself; for one
    that can (``"aa"``, ``"abab"``) it is a lower bound (see :func:`_can_overlap`).
    """
    first = text.find(quote)
    if first < 0:
        return 0, []
    second = text.find(quote, first + 1)
    if second < 0:
        return 1, [first]
    return max(2, text.count(quote)), [first, second]


def resolve_quote(text: str, quote: str, doc: str, match: str = "exact") -> tuple[int, int]:
    """``(start, end)`` of the one place ``quote`` occurs in document ``doc``; ValueError otherwise.

    ``match``: ``"exact"`` (code point for code point) or ``"whitespace"`` (runs of white space in
    the quote match runs of white space in the document; see the module's docstring).
    """
    empty = not quote.strip() if match == "whitespace" else not quote  # loose: its ends' white space is no part
    if empty:
        raise ValueError("quote is empty; copy the evidence text from the document, or give start and end")
    if match == "whitespace":
        return _resolve_loose(text, quote, doc)
    count, first = occurrences(text, quote)
    if count == 1:
        return first[0], first[0] + len(quote)
    if count == 0:
        raise ValueError(f"quote {shown(quote)} occurs 0 times in document {doc!r}; {_EXACT_FIX}{_near(text, quote)}")
    places = " and ".join(f"[{start}, {start + len(quote)})" for start in first)
    raise ValueError(
        f"quote {shown(quote)} occurs {_times(count, not _can_overlap(quote))} in document {doc!r} (first at {places}); "
        "lengthen the quote until it occurs once, or give start and end"
    )


def _resolve_loose(text: str, quote: str, doc: str) -> tuple[int, int]:
    """:func:`resolve_quote` with ``match: whitespace``."""
    pattern = _loose_pattern(quote)
    found = pattern.search(text)
    if found is None:
        raise ValueError(
            f"quote {shown(quote)} occurs 0 times in document {doc!r}, even with runs of white space matching any "
            f"run of white space (match: whitespace); copy it from the document{_near(text, quote, loose=True)}"
        )
    again = pattern.search(text, found.start() + 1)
    if again is None:
        return found.start(), found.end()
    count = 0
    for count, _ in enumerate(pattern.finditer(text), start=1):  # non-overlapping: a lower bound when they can overlap
        if count >= _COUNTED:
            break
    exact = count < _COUNTED and not _can_overlap(" ".join(quote.split()))
    places = f"[{found.start()}, {found.end()}) and [{again.start()}, {again.end()})"
    raise ValueError(
        f"quote {shown(quote)} occurs {_times(max(2, count), exact)} in document {doc!r} with runs of white space "
        f"matching any run of white space (first at {places}); lengthen the quote until it occurs once, or give "
        "start and end"
    )


def _loose_pattern(quote: str) -> re.Pattern[str]:
    """``quote`` as a pattern whose runs of white space match any run of white space (its ends stripped)."""
    return re.compile(r"\s+".join(re.escape(part) for part in quote.split()))


def _times(count: int, exact: bool) -> str:
    return f"{count:,} times" if exact else f"at least {count:,} times"


def _can_overlap(quote: str) -> bool:
    """Whether two occurrences of ``quote`` can overlap: it has a border (a proper prefix that is also a suffix).

    Then ``str.count``, which counts occurrences that do not overlap, may count fewer than there are.
    The longest border is the prefix function (Knuth-Morris-Pratt) of the last character.
    """
    border = [0] * len(quote)
    k = 0
    for i in range(1, len(quote)):
        while k and quote[i] != quote[k]:
            k = border[k - 1]
        if quote[i] == quote[k]:
            k += 1
        border[i] = k
    return bool(quote) and border[-1] > 0


# How many characters of the quote and of the document a not-found message shows where the two part.
_PART_SHOWN = 12


def _near(text: str, quote: str, loose: bool = False) -> str:
    """``; nearest passage: ...`` for a quote found nowhere, or ``""`` when no passage is near.

    The nearest passage shares the longest start (or, if longer, end) with the quote: found by a
    binary search on the length of the quote's prefix (suffix) that occurs in the document, each
    step one search (a prefix that occurs makes every shorter one occur). With ``loose``, runs of
    white space match any run. Without ``loose``, a quote that occurs once when white space is
    loose says so first: that is the usual cause (a line break where the quote has a space).
    """
    if not loose:
        pattern = _loose_pattern(quote) if quote.strip() else None
        found = pattern.search(text) if pattern is not None else None
        if found is not None and pattern is not None and pattern.search(text, found.start() + 1) is None:
            return (
                f"; with runs of white space matching any run it occurs once, at [{found.start()}, {found.end()}) "
                f"{shown(text[found.start():found.end()])}: give this evidence item match: whitespace, or copy the "
                "document's spaces and line breaks"
            )
    body = " ".join(quote.split()) if loose else quote
    find = _loose_find(text) if loose else _exact_find(text)
    head, at_head = _longest(len(body), lambda n: find(body[:n]))
    tail, at_tail = _longest(len(body), lambda n: find(body[len(body) - n :]))
    if max(head, tail) < max(1, min(len(body) // 4, 10)):
        return "; no passage of the document starts or ends as the quote does"
    if head >= tail:
        matched_start, matched_end = at_head
        start, end = matched_start, min(len(text), matched_end + len(body) - head)
        where = (
            f"which matches the quote's first {head:,} characters; then the quote has {shown(body[head:head + _PART_SHOWN])}"
            f" and the document {shown(text[matched_end:matched_end + _PART_SHOWN])}"
        )
    else:
        matched_start, matched_end = at_tail
        start, end = max(0, matched_start - (len(body) - tail)), matched_end
        where = (
            f"which matches the quote's last {tail:,} characters; before them the quote has "
            f"{shown(body[max(0, len(body) - tail - _PART_SHOWN):len(body) - tail])} and the document "
            f"{shown(text[max(0, matched_start - _PART_SHOWN):matched_start])}"
        )
    return f"; nearest passage: [{start}, {end}) {shown(text[start:end])}, {where}"


def _longest(length: int, place: Callable[[int], tuple[int, int] | None]) -> tuple[int, tuple[int, int]]:
    """The largest ``n <= length`` whose ``place(n)`` is not None, and that place (0 and (0, 0) when none is)."""
    low, high, at = 0, length, (0, 0)
    while low < high:
        middle = (low + high + 1) // 2
        found = place(middle)
        if found is not None:
            low, at = middle, found
        else:
            high = middle - 1
    return low, at


def _exact_find(text: str) -> Callable[[str], tuple[int, int] | None]:
    """Where a piece of a quote first occurs in ``text``, exactly: ``(start, end)``, or None."""

    def find(piece: str) -> tuple[int, int] | None:
        start = text.find(piece)
        return None if start < 0 else (start, start + len(piece))

    return find


def _loose_find(text: str) -> Callable[[str], tuple[int, int] | None]:
    """:func:`_exact_find`, runs of white space in the piece (its ends too) matching any run of white space."""

    def find(piece: str) -> tuple[int, int] | None:
        if not piece.strip():
            return None
        pattern = r"\s+".join(re.escape(part) for part in piece.split())
        pattern = (r"\s+" if piece[0].isspace() else "") + pattern + (r"\s+" if piece[-1].isspace() else "")
        found = re.search(pattern, text)
        return None if found is None else (found.start(), found.end())

    return find


def unknown_document(doc: str, documents: Collection[str], where: str) -> str:
    """``document 'x' is not in the documents WHERE; did you mean 'y'?`` (the guess when there is one)."""
    guess = close_match(doc, documents)
    hint = f"; did you mean {guess!r}?" if guess else "; evidence and document judgements name documents by id"
    return f"document {doc!r} is not in the documents {where}{hint}"


def evidence_span(
    doc: str,
    documents: Mapping[str, str],
    where: str,
    *,
    start: object = None,
    end: object = None,
    quote: str | None = None,
    grade: float = 1.0,
    match: str = "exact",
    stored_text: str | None = None,
    sha256: str | None = None,
) -> tuple[EvidenceSpan | None, list[str]]:
    """One evidence item checked: the span (None when it has a problem) and its problems, without a place.

    ``where`` names the documents in a message (``(folder docs/)``). ``match``: how a quote
    is matched (:func:`resolve_quote`). ``stored_text`` and ``sha256``: what offsets held when
    judged (the item's ``text`` and ``sha256`` keys; only their form is checked, see the
    module's docstring). The problems: grade <= 0, both a quote and offsets, neither, one
    offset only, an unknown document, offsets that are not a span of the document, a quote
    found 0 or several times, a stored text or hash that is malformed or given with a quote.
    """
    problems = []
    if grade <= 0:
        problems.append(
            f"grade {grade:g}: evidence grades are > 0 (default 1); to say that a document does not answer the "
            "query, give it a document judgement of 0 instead"
        )
    has_offsets = start is not None or end is not None
    if quote is not None and has_offsets:
        problems.append("give either a quote or start and end, not both")
        return None, problems
    if quote is None and not has_offsets:
        problems.append("give start and end (code-point offsets into the document) or a quote")
        return None, problems
    if quote is None and (start is None or end is None):
        missing = "end" if end is None else "start"
        problems.append(f"{missing} is missing; a span needs both start and end (end exclusive)")
        return None, problems
    stored = stored_check_problem(stored_text, sha256, by_quote=quote is not None)
    if stored is not None:
        problems.append(stored)
        return None, problems
    text = documents.get(doc)
    if text is None:
        problems.append(unknown_document(doc, documents, where))
        return None, problems
    if quote is not None:
        try:
            start, end = resolve_quote(text, quote, doc, match)
        except ValueError as failure:
            problems.append(str(failure))
            return None, problems
    problem = span_problem(start, end, len(text))
    if problem is not None:
        problems.append(f"document {doc!r}: {problem}{_span_fix(problem)}")
        return None, problems
    if problems:
        return None, problems
    assert isinstance(start, int) and isinstance(end, int)  # span_problem checked both
    return EvidenceSpan(doc, start, end, float(grade)), problems


_HEX64 = re.compile(r"[0-9a-fA-F]{64}")


def stored_check_problem(stored_text: object, sha256: object, *, by_quote: bool) -> str | None:
    """Why an evidence item's ``text`` / ``sha256`` (what its offsets held) is malformed, or None.

    ``by_quote``: the item gives a quote, which is checked by finding it and records nothing.
    """
    if stored_text is None and sha256 is None:
        return None
    if by_quote:
        return ("text and sha256 record what start and end held; a quote is found in the document each time it is "
                "read: remove them, or give start and end instead of the quote")
    if stored_text is not None and (not isinstance(stored_text, str) or not stored_text):
        return f"text {shown(stored_text)} is not the span's text; give the text of [start, end), or remove it"
    if sha256 is not None and (not isinstance(sha256, str) or _HEX64.fullmatch(sha256) is None):
        return (f"sha256 {shown(sha256)} is not 64 hexadecimal digits; give the SHA-256 of the span's text as UTF-8 "
                "(hashlib.sha256(text.encode()).hexdigest()), or remove it")
    if isinstance(stored_text, str) and isinstance(sha256, str) and span_sha256(stored_text) != sha256.lower():
        return "sha256 is not the SHA-256 of text; keep one of the two, or correct the other"
    return None


def _span_fix(problem: str) -> str:
    """The fix for a span problem whose own words do not already say it."""
    if "not an integer" in problem:
        return "; write offsets as whole numbers (code points from the start of the document)"
    if "past the end" in problem:
        return "; offsets count code points of the document as loaded, end exclusive"
    return ""


def document_grades(
    evidence: Mapping[str, Sequence[EvidenceSpan]], explicit: Mapping[str, Mapping[str, float]]
) -> tuple[dict[str, dict[str, float]], list[tuple[str, str, float]]]:
    """The document grade of every (query, document): explicit, else the highest evidence grade there.

    Returns the grades and the conflicts ``(qid, doc, explicit grade)``: an explicit grade
    <= 0 (not relevant, or excluded) for a document that holds evidence for the query.
    A conflict keeps its explicit grade in the result; the loader reports it.
    """
    grades: dict[str, dict[str, float]] = {qid: dict(docs) for qid, docs in explicit.items()}
    conflicts: list[tuple[str, str, float]] = []
    for qid, spans in evidence.items():
        given = explicit.get(qid, {})
        derived: dict[str, float] = {}
        for span in spans:
            derived[span.doc] = max(derived.get(span.doc, span.grade), span.grade)
        per_query = grades.setdefault(qid, {})
        for doc, grade in derived.items():
            if doc not in given:
                per_query[doc] = grade
            elif given[doc] <= 0:
                conflicts.append((qid, doc, given[doc]))
        if not per_query:
            del grades[qid]
    return grades, conflicts


def conflict_message(doc: str, grade: float, positions: Sequence[int]) -> str:
    """Why an explicit grade <= 0 of a document that holds evidence is refused (``positions``: evidence items)."""
    items = ", ".join(f"evidence[{n}]" for n in positions)
    meaning = "not relevant" if grade == 0 else "excluded"
    return (
        f"document {doc!r} is judged {grade:g} ({meaning}) but holds evidence for this query ({items}); "
        "remove the judgement or the evidence"
    )
