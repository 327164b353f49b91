"""Chunk-id judgements of another tool turned into evidence spans: each chunk found in its document.

Judgements that name chunk ids (a LlamaIndex node id, a LangChain chunk's uuid, a qrels file of
chunk ids) die with the chunking that made them. Given each chunk's text, a chunk is located in
the documents it was cut from, and its grade becomes the grade of an evidence span there, which
any chunking can then be scored against (docs/documents.md).

A chunk is located, in this order:

1. by its id, when the id is rag_eval's own ``<document>#<start>-<end>`` and the document holds
   the chunk's text exactly there;
2. exactly (code point for code point) in every document: found once in one document, it is there;
3. failing that, tolerantly (runs of white space match any run, case ignored; many splitters
   re-join a chunk's sentences with other spaces), the same way.

Found in several documents (or, in one, more than once), a chunk is located only where its
id names a document (the longest document id the chunk id starts with, followed by a character
that is not a letter or digit: ``guide.md#chunk-3``, ``guide.md_7``) or where its texts record
names one (``doc`` or LlamaIndex's ``ref_doc_id``), and that document holds it once; otherwise
it is listed as ambiguous. A chunk found nowhere, or with no text, is listed as unlocatable:
every judged chunk is either located or listed, never dropped. Each chunk costs one search per
document (in C): the time grows with chunks times document characters (2,000 chunks of 500
characters in 200 documents of 20,000 take about 4 s here, a quarter of them found tolerantly).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rag_eval._core.errors import DatasetError
from rag_eval._core.messages import shown, some_of
from rag_eval._core.spans import parse_chunk_id
from rag_eval._data.datasets.corpus import json_lines
from rag_eval._data.judging.anchor import Found, NotFound, find_exact, find_tolerant, tolerant_pattern

# The keys a chunk-text record may give its id and its document in (LlamaIndex writes id_ and ref_doc_id).
ID_KEYS = ("id", "_id", "id_", "node_id")
DOC_KEYS = ("doc", "ref_doc_id")
BY_ID, EXACT, TOLERANT = "by its id", "exact", "tolerant"
_NAMED_LISTED = 5
# Words of a chunk a document must hold (case ignored) to be searched tolerantly: its longest ASCII ones.
_FILTER_WORDS = 3


@dataclass(frozen=True)
class ChunkText:
    """A chunk's text and, when its record names one, the document it was cut from."""

    text: str
    doc: str | None = None


@dataclass(frozen=True)
class Located:
    """Where a chunk is: ``[start, end)`` of ``doc``, and how it was found (:data:`BY_ID`, exact, tolerant)."""

    doc: str
    start: int
    end: int
    how: str


@dataclass(frozen=True)
class Unlocatable:
    """A chunk that is in no one place, and why."""

    why: str


@dataclass
class Conversion:
    """The evidence of converted chunk judgements, and what could not be converted.

    ``evidence``: ``{query: [(doc, start, end, grade), ...]}`` sorted by place, one span per place
    (the highest grade where two chunks of a query locate to the same span). ``located``: chunks
    per way found. ``unlocatable``: ``(query, chunk, why)``. ``not_relevant``: chunks graded <= 0,
    which are no evidence. ``conflicts``: ``(query, chunk, doc)`` located in a document the
    query set judges <= 0 for that query (an explicit contradiction; not written).
    """

    evidence: dict[str, list[tuple[str, int, int, float]]] = field(default_factory=dict)
    located: dict[str, int] = field(default_factory=dict)
    unlocatable: list[tuple[str, str, str]] = field(default_factory=list)
    not_relevant: int = 0
    conflicts: list[tuple[str, str, str]] = field(default_factory=list)


def read_chunk_texts(path: Path) -> dict[str, ChunkText]:
    """``{chunk id: ChunkText}`` from a JSON Lines file of ``{"id", "text", "doc"?}``; DatasetError naming the line."""
    texts: dict[str, ChunkText] = {}
    first: dict[str, int] = {}
    for n, record in json_lines(path, "chunk-text file"):
        where = f"{path}:{n}"
        if not isinstance(record, dict):
            raise DatasetError(f"{where}: expected a chunk {{\"id\", \"text\"}}, got {shown(record)}")
        key = next((key for key in ID_KEYS if key in record), None)
        chunk, text = record.get(key) if key else None, record.get("text")
        if not isinstance(chunk, str) or not chunk:
            raise DatasetError(f"{where}: the chunk's id is missing or not text; give each line {{\"id\", \"text\"}}")
        if not isinstance(text, str):
            raise DatasetError(f"{where}: chunk {chunk!r}: 'text' is missing or not text; give each line "
                               "{\"id\", \"text\"}")
        if chunk in first:
            raise DatasetError(f"{where}: chunk {chunk!r} is given twice (first on line {first[chunk]}); give each "
                               "chunk once")
        doc = next((record[key] for key in DOC_KEYS if isinstance(record.get(key), str)), None)
        first[chunk] = n
        texts[chunk] = ChunkText(text, doc)
    return texts


def named_document(chunk: str, documents: Mapping[str, str]) -> str | None:
    """The longest document id ``chunk`` starts with, followed by the end or a character not a letter or digit."""
    for size in range(len(chunk), 0, -1):
        if chunk[:size] in documents and (size == len(chunk) or not chunk[size].isalnum()):
            return chunk[:size]
    return None


def folded(documents: Mapping[str, str]) -> dict[str, str]:
    """Each document case-folded, for :func:`locate`'s quick test of which documents may match tolerantly.

    ``re.IGNORECASE`` also matches four non-ASCII letters to ASCII ones (U+0130 and U+0131 to i,
    U+017F to s, U+212A to k) that case folding maps elsewhere: they are mapped first, so that no
    document that can match is skipped.
    """
    return {doc: text.translate(_TO_ASCII).casefold() for doc, text in documents.items()}


_TO_ASCII = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def locate(
    chunk: str, text: ChunkText, documents: Mapping[str, str], folded_documents: Mapping[str, str] | None = None
) -> Located | Unlocatable:
    """Where chunk ``chunk`` with ``text`` is in ``documents`` (``{doc id: text}``): see the module's docstring.

    ``folded_documents``: :func:`folded` of ``documents``, computed once for many chunks; a
    tolerant search then skips the documents that lack one of the chunk's longest ASCII words (case
    ignored), which cannot match: an ignore-case pattern is some fifty times slower than a find.
    """
    if not text.text.strip():
        return Unlocatable("its text is empty")
    own = parse_chunk_id(chunk)
    if own is not None and documents.get(own[0], "")[own[1] : own[2]] == text.text:
        return Located(own[0], own[1], own[2], BY_ID)
    named = {doc for doc in (text.doc, named_document(chunk, documents)) if doc is not None}
    exact = {doc: find_exact(document, text.text) for doc, document in documents.items()}
    found = _one_place(exact, named, EXACT)
    if found is not None:
        return found
    pattern = tolerant_pattern(text.text)
    words = sorted({w.casefold() for w in text.text.split() if w.isascii()}, key=len)[-_FILTER_WORDS:]
    loose = {doc: find_tolerant(document, pattern) for doc, document in documents.items()
             if folded_documents is None or all(word in folded_documents[doc] for word in words)}
    found = _one_place(loose, named, TOLERANT)
    if found is not None:
        return found
    return Unlocatable("found in no document, not even with white space and case ignored")


def _one_place(hits: Mapping[str, Found | NotFound], named: set[str], how: str) -> Located | Unlocatable | None:
    """The one place among ``hits`` (per document), the named document's if several; None when found nowhere."""
    places = {doc: hit for doc, hit in hits.items() if isinstance(hit, Found) or hit.ambiguous}
    if not places:
        return None
    manner = "exactly" if how == EXACT else "with white space and case ignored"
    chosen = [doc for doc in places if doc in named] if len(places) > 1 else list(places)
    if not chosen or len(chosen) > 1:
        listed = some_of(sorted(repr(doc) for doc in places), _NAMED_LISTED)
        names = "its id names none of them" if not chosen else "its id and its record name two of them"
        return Unlocatable(f"found in {len(places):,} documents ({manner}): {listed}; {names}")
    hit = places[chosen[0]]
    if isinstance(hit, NotFound):
        return Unlocatable(f"found more than once in document {chosen[0]!r} ({manner})")
    return Located(chosen[0], hit.start, hit.end, how)


def convert(
    judgements: Mapping[str, Mapping[str, float]],
    texts: Mapping[str, ChunkText],
    documents: Mapping[str, str],
    explicit: Mapping[str, Mapping[str, float]],
    order: Iterable[str],
) -> Conversion:
    """Chunk judgements ``{query: {chunk: grade}}`` as evidence spans (see :class:`Conversion`).

    ``explicit``: the query set's document judgements (a span in a document judged <= 0 is a
    conflict); ``order``: the query set's query ids, the order of the result's lists.
    """
    result = Conversion()
    places: dict[str, Located | Unlocatable] = {}  # a chunk judged for several queries is located once
    folded_documents = folded(documents)
    rank = {qid: n for n, qid in enumerate(order)}
    for qid in sorted(judgements, key=lambda q: (rank.get(q, len(rank)), q)):
        spans: dict[tuple[str, int, int], float] = {}
        for chunk, grade in sorted(judgements[qid].items()):
            if grade <= 0:
                result.not_relevant += 1
                continue
            text = texts.get(chunk)
            if text is None:
                result.unlocatable.append((qid, chunk, "no text for this chunk id in the chunk-text file"))
                continue
            if chunk not in places:
                places[chunk] = locate(chunk, text, documents, folded_documents)
            where = places[chunk]
            if isinstance(where, Unlocatable):
                result.unlocatable.append((qid, chunk, where.why))
                continue
            if explicit.get(qid, {}).get(where.doc, 1) <= 0:
                result.conflicts.append((qid, chunk, where.doc))
                continue
            result.located[where.how] = result.located.get(where.how, 0) + 1
            key = (where.doc, where.start, where.end)
            spans[key] = max(spans.get(key, grade), grade)
        if spans:
            result.evidence[qid] = [(doc, start, end, grade) for (doc, start, end), grade in sorted(spans.items())]
    return result
