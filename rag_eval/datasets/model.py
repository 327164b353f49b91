"""The loaded dataset (queries, graded judgements, corpus) and the problem collector of every loader."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from rag_eval.errors import DatasetError

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
    """Queries, their graded judgements and the corpus they judge."""

    name: str
    queries: dict[str, Query]
    judgements: dict[str, dict[str, float]]
    corpus: dict[str, dict[str, Any]]
    source: str = ""
    notes: tuple[str, ...] = ()
    description: str = ""

    @cached_property
    def fingerprint(self) -> str:
        """sha256 of queries, judgements and corpus in a canonical form (first 16 hex)."""
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
        """Counts for reports and results files."""
        return {
            "name": self.name,
            "source": self.source,
            "fingerprint": self.fingerprint,
            "queries": len(self.queries),
            "judged_queries": len(self.judged_query_ids),
            "passages": len(self.corpus),
            "judgements": sum(len(j) for j in self.judgements.values()),
            "notes": list(self.notes),
        }


def _canonical_chunks(dataset: Dataset) -> Iterator[bytes]:
    yield b"queries\0"
    for qid in sorted(dataset.queries):
        yield f"{qid}\0{dataset.queries[qid].text}\0".encode()
    yield b"judgements\0"
    for qid in sorted(dataset.judgements):
        for doc in sorted(dataset.judgements[qid]):
            yield f"{qid}\0{doc}\0{float(dataset.judgements[qid][doc])!r}\0".encode()
    yield b"corpus\0"
    for doc in sorted(dataset.corpus):
        passage = dataset.corpus[doc]
        yield f"{doc}\0{passage.get('title', '')}\0{passage.get('text', '')}\0".encode()


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
            raise DatasetError(summarise(self.messages, self.count), problems=self.messages)


def summarise(items: list[str], count: int | None = None) -> str:
    """The first problem and how many more there are."""
    total = len(items) if count is None else count
    if total == 1:
        return items[0]
    more = total - 1
    return f"{items[0]} (and {more:,} more problem{'s' if more > 1 else ''}; `rag-eval validate` lists all)"
