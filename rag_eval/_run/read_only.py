"""Read-only views of the corpus and the queries, as retrievers receive them.

A retriever (built-in or a plug-in) gets the dataset's own corpus, not a copy: a copy of
millions of passages would double the memory of a run. What it gets is a view that
cannot change it, so that the numbers, the report and the dataset fingerprint always
describe the dataset that was loaded:

- the corpus is a :class:`types.MappingProxyType`; ``corpus["new"] = {...}`` raises
  TypeError, and so does ``corpus[doc_id]["text"] = ...``, since each passage is a
  MappingProxyType too, made when it is looked up (no second dict of all passages);
- the queries are a MappingProxyType of ``{query_id: text}``.

Every read a Mapping offers works as on a dict: ``corpus[doc]``, ``get``, ``in``,
``len``, iteration, ``keys()``, ``values()``, ``items()``, ``dict(corpus)`` and
``corpus.copy()`` (a new dict of passage views, which the caller may change freely).
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping, ValuesView
from types import MappingProxyType
from typing import Any

from rag_eval._data.datasets.file_corpus import FileCorpus

__all__ = ["read_only_corpus", "read_only_queries"]


def read_only_corpus(corpus: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Mapping[str, Any]]:
    """``corpus`` seen through read-only views (the corpus and each passage); nothing is copied.

    A corpus read from disk (:class:`~rag_eval._data.datasets.file_corpus.FileCorpus`) is read-only
    already, and is handed out as itself: the dense adapter on the Ray engine recognises it
    and lets the workers read the file.
    """

    if isinstance(corpus, FileCorpus):
        return corpus
    return MappingProxyType(_PassageViews(corpus))


def read_only_queries(queries: Mapping[str, str]) -> Mapping[str, str]:
    """``queries`` (``{query_id: text}``; texts are immutable str) as a read-only view."""
    return MappingProxyType(queries)


class _PassageViews(Mapping):
    """The corpus with each passage handed out as a MappingProxyType (the mapping under the corpus's proxy)."""

    __slots__ = ("_corpus",)

    def __init__(self, corpus: Mapping[str, Mapping[str, Any]]) -> None:
        self._corpus = corpus

    def __getitem__(self, doc_id: str) -> Mapping[str, Any]:
        return MappingProxyType(self._corpus[doc_id])

    def __iter__(self) -> Iterator[str]:
        return iter(self._corpus)

    def __len__(self) -> int:
        return len(self._corpus)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._corpus  # (Mapping's own would build a view to throw away)

    # values() and items() in C-level loops: indexing walks every passage once.
    def values(self) -> ValuesView:
        return _Values(self)

    def items(self) -> ItemsView:
        return _Items(self)

    def copy(self) -> dict[str, Mapping[str, Any]]:
        """A new dict of the passages' views (what ``MappingProxyType.copy`` returns for a dict)."""
        return dict(zip(self._corpus, map(MappingProxyType, self._corpus.values())))


class _Values(ValuesView):
    _mapping: _PassageViews

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        return map(MappingProxyType, self._mapping._corpus.values())


class _Items(ItemsView):
    _mapping: _PassageViews

    def __iter__(self) -> Iterator[tuple[str, Mapping[str, Any]]]:
        corpus = self._mapping._corpus
        return zip(corpus, map(MappingProxyType, corpus.values()))
