"""The loaded dataset (queries, graded judgements, corpus, documents, evidence) and the problem collector of every loader."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from rag_eval._core.errors import DatasetError
from rag_eval._core.messages import VALIDATE_LISTS_ALL, first_and_more
from rag_eval._core.spans import EvidenceSpan
from rag_eval._data.judging.anchor import Finding
from rag_eval._data.judging.sheet import HUMAN, VERIFIED

# A loader keeps this many problems to list; past it, it counts the rest (a corpus of a
# million malformed lines must not print a million lines, nor hold them in memory).
MAX_LISTED_PROBLEMS = 1000


@dataclass(frozen=True)
class Query:
    """One question of a query set."""

    id: str
    text: str
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Dataset:
    """Queries, their graded judgements and the corpus they judge.

    A dataset with documents (long texts, judged by document and by evidence spans
    that any chunking can be scored against) also holds ``documents`` (doc id ->
    text), ``evidence`` (qid -> spans, quotes already resolved to offsets) and the
    explicit ``document_judgements``. Its ``judgements`` are then the document grades
    (explicit, else the highest grade of the query's evidence in the document) and
    its ``corpus`` is ``{doc: {"text", "title"}}``, so that every path that reads
    whole passages (a retriever without a chunker, judged_query_ids) works on it.
    Passage datasets leave the three fields empty.

    Provenance (who gave each grade: ``human``, ``llm+verified``, a judge's ``<kind>:<name>``,
    rag_eval._data.judging.grades) is kept beside the grades, never in them, and no part of the
    fingerprint: ``judgement_sources`` ``{qid: {unit: source}}`` for the judgements that record one
    (passage judgements, or a dataset of documents' explicit ``document_judgements``), and
    ``evidence_sources`` ``{qid: (source, ...)}`` aligned with ``evidence[qid]`` (``""`` for a span
    without one). Both are empty when the file records no provenance (every format but rag_eval's
    YAML query set, and query sets written by hand); a grade without a recorded source is the query
    set's own.
    """

    name: str
    queries: dict[str, Query]
    judgements: dict[str, dict[str, float]]
    corpus: Mapping[str, Mapping[str, Any]]
    source: str = ""
    notes: tuple[str, ...] = ()
    description: str = ""
    documents: dict[str, str] = field(default_factory=dict)
    evidence: dict[str, tuple[EvidenceSpan, ...]] = field(default_factory=dict)
    document_judgements: dict[str, dict[str, float]] = field(default_factory=dict)
    # (query id, finding) of each evidence span whose recorded text or hash its document no longer holds at
    # its offsets (rag_eval._data.judging.anchor): a run reports them and does not gate on them unless told.
    stale_evidence: tuple[tuple[str, Finding], ...] = ()
    judgement_sources: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    evidence_sources: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def has_model_labels(self) -> bool:
        """Whether some grade of the dataset was given by a model (a judge's ``<kind>:<name>`` source)."""
        return any(is_model_source(source) for source in self.recorded_sources())

    def recorded_sources(self) -> Iterator[str]:
        """Every recorded source, one per judgement or evidence span that records one."""
        for sources in self.judgement_sources.values():
            yield from sources.values()
        for spans in self.evidence_sources.values():
            yield from (source for source in spans if source)

    @property
    def has_documents(self) -> bool:
        """Whether the dataset holds documents (and may hold evidence spans): chunkers can read it."""
        return bool(self.documents)

    @cached_property
    def fingerprint(self) -> str:
        """sha256 of queries, judgements, corpus (ids, titles, texts), documents and evidence in a canonical form
        (first 16 hex).

        The titles are hashed with the corpus: a dataset read with ``titles: none`` (or titles from another
        source) has another fingerprint, so nothing keyed on it mixes titled and untitled units.

        Never of a chunking: runs of two chunkings of the same documents and judgements
        share the fingerprint, so that they can be compared. A passage dataset hashes
        exactly what it always did (results files and baselines keep their fingerprint).
        """
        digest = hashlib.sha256()
        for chunk in _canonical_chunks(self):
            digest.update(chunk)
        return digest.hexdigest()[:16]

    @property
    def judged_query_ids(self) -> list[str]:
        """Queries that have judgements (the ones that can be scored)."""
        return [q for q in self.queries if self.judgements.get(q)]

    @property
    def unjudged_query_ids(self) -> list[str]:
        """Queries without any judgement: listed in reports, never scored."""
        return [q for q in self.queries if not self.judgements.get(q)]

    def query_texts(self) -> dict[str, str]:
        """``{qid: text}`` for every query, as retrievers receive them."""
        return {q.id: q.text for q in self.queries.values()}

    def summary(self) -> dict[str, Any]:
        """Counts for reports and results files (with documents and evidence for a dataset with documents)."""
        counts: dict[str, Any] = {
            "name": self.name,
            "source": self.source,
            "fingerprint": self.fingerprint,
            "queries": len(self.queries),
            "judged_queries": len(self.judged_query_ids),
            "passages": len(self.corpus),
            "judgements": sum(len(j) for j in self.judgements.values()),
        }
        if self.has_documents:
            counts["documents"] = len(self.documents)
            counts["document_characters"] = sum(len(text) for text in self.documents.values())
            counts["evidence_spans"] = sum(len(spans) for spans in self.evidence.values())
            counts["queries_with_evidence"] = sum(1 for spans in self.evidence.values() if spans)
        counts["notes"] = list(self.notes)
        return counts


def is_model_source(source: str) -> bool:
    """Whether a grade's ``source`` names a model (a judge's ``<kind>:<name>``, e.g. ``llm:qwen2.5``).

    ``human`` and ``llm+verified`` (a model's grade a person confirmed) are a person's; ``""`` (no
    recorded source) is the query set's own grade, counted with the people's.
    """
    return bool(source) and source not in (HUMAN, VERIFIED) and ":" in source


def _canonical_chunks(dataset: Dataset) -> Iterator[bytes]:
    # surrogatepass: a lone surrogate (valid escaped in JSON) in an id or text hashes, where it used to crash;
    # every other string gives the bytes it always did.
    yield b"queries\0"
    for qid in sorted(dataset.queries):
        yield f"{qid}\0{dataset.queries[qid].text}\0".encode("utf-8", "surrogatepass")
    yield b"judgements\0"
    for qid in sorted(dataset.judgements):
        for doc in sorted(dataset.judgements[qid]):
            yield f"{qid}\0{doc}\0{float(dataset.judgements[qid][doc])!r}\0".encode("utf-8", "surrogatepass")
    yield b"corpus\0"
    for doc in sorted(dataset.corpus):
        passage = dataset.corpus[doc]
        yield f"{doc}\0{passage.get('title', '')}\0{passage.get('text', '')}\0".encode("utf-8", "surrogatepass")
    if not dataset.has_documents:
        return  # a passage dataset: the bytes above, as they always were
    yield b"documents\0"
    for doc in sorted(dataset.documents):
        yield f"{doc}\0{dataset.documents[doc]}\0".encode("utf-8", "surrogatepass")
    # The order of a query's spans means nothing: they are hashed sorted.
    yield b"evidence\0"
    for qid in sorted(dataset.evidence):
        for span in sorted(dataset.evidence[qid], key=lambda s: (s.doc, s.start, s.end, s.grade)):
            yield f"{qid}\0{span.doc}\0{span.start}\0{span.end}\0{float(span.grade)!r}\0".encode("utf-8", "surrogatepass")


@dataclass
class Problems:
    """Collects every problem found while loading; raises them together.

    ``key`` orders problems in the file's order when they are found out of order
    (schema problems first, cross-checks later); equal keys keep their order.
    """

    items: list[tuple[tuple[int, ...], str]] = field(default_factory=list)
    count: int = 0

    def add(self, message: str, key: tuple[int, ...] = ()) -> None:
        """Record one problem (one line)."""
        self.count += 1
        if len(self.items) < MAX_LISTED_PROBLEMS:
            self.items.append((key, message))

    def extend(self, messages: list[str], key: tuple[int, ...] = ()) -> None:
        """Record several problems under one ordering key."""
        for message in messages:
            self.add(message, key)

    def merge(self, other: Problems, key: tuple[int, ...] = ()) -> None:
        """Take over the problems of ``other`` (a loader of a file this one refers to)."""
        for _, message in sorted(other.items, key=lambda item: item[0]):
            self.add(message, key)
        self.count += other.count - len(other.items)

    @property
    def messages(self) -> list[str]:
        """The problems in file order, with a last line counting those not listed."""
        listed = [message for _, message in sorted(self.items, key=lambda item: item[0])]
        if self.count > len(listed):
            listed.append(f"... and {self.count - len(listed):,} more problems not listed")
        return listed

    def raise_if_any(self) -> None:
        """Raise one DatasetError naming the first problem and counting the rest."""
        if self.count:
            raise DatasetError(first_and_more(self.messages, self.count, hint=VALIDATE_LISTS_ALL), problems=self.messages)


def passage_text(passage: Mapping[str, str]) -> str:
    """Title and text joined the way BEIR feeds passages to a retriever."""
    title = (passage.get("title") or "").strip()
    text = passage.get("text") or ""
    return f"{title} {text}" if title else text
