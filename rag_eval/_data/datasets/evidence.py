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
overlapping occurrences count (``"aa"`` occurs twice in ``"aaa"``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from rag_eval._core.messages import close_match, shown
from rag_eval._core.spans import EvidenceSpan, span_problem


def occurrences(text: str, quote: str) -> tuple[int, list[int]]:
    """How many times ``quote`` occurs in ``text`` (overlapping ones count) and the offsets of the first two."""
    count = 0
    first: list[int] = []
    position = text.find(quote)
    while position >= 0:
        count += 1
        if len(first) < 2:
            first.append(position)
        position = text.find(quote, position + 1)
    return count, first


def resolve_quote(text: str, quote: str, doc: str) -> tuple[int, int]:
    """``(start, end)`` of the one place ``quote`` occurs in document ``doc``; ValueError otherwise."""
    if not quote:
        raise ValueError("quote is empty; copy the evidence text from the document, or give start and end")
    count, first = occurrences(text, quote)
    if count == 1:
        return first[0], first[0] + len(quote)
    if count == 0:
        raise ValueError(
            f"quote {shown(quote)} occurs 0 times in document {doc!r}; quotes match exactly (same characters, case, "
            "spaces and line breaks, no normalisation): copy it from the document"
        )
    places = " and ".join(f"[{start}, {start + len(quote)})" for start in first)
    raise ValueError(
        f"quote {shown(quote)} occurs {count:,} times in document {doc!r} (first at {places}); "
        "lengthen the quote until it occurs once, or give start and end"
    )


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
) -> tuple[EvidenceSpan | None, list[str]]:
    """One evidence item checked: the span (None when it has a problem) and its problems, without a place.

    ``where`` names the documents in a message (``(folder docs/)``). The problems:
    grade <= 0, both a quote and offsets, neither, one offset only, an unknown
    document, offsets that are not a span of the document, a quote found 0 or
    several times.
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
    text = documents.get(doc)
    if text is None:
        problems.append(unknown_document(doc, documents, where))
        return None, problems
    if quote is not None:
        try:
            start, end = resolve_quote(text, quote, doc)
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
