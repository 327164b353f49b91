"""The retriever seam: ``index(corpus)`` then ``search(queries, top_k)``.

A user's class needs no import from rag_eval to plug in: any object with these
two methods works. Data crosses the seam in the plain shapes that BEIR, ranx and
the trec_eval bindings share:

- corpus: ``{doc_id: {"text": str, "title": str}}``
- queries: ``{query_id: text}``
- result: ``{query_id: {doc_id: score}}``, higher score = better.

An optional ``describe()`` returns a JSON-ready dict (model, parameters, cache
use) recorded in results files and reports.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol, runtime_checkable

Corpus = Mapping[str, Mapping[str, str]]
Queries = Mapping[str, str]
Ranking = dict[str, dict[str, float]]


@runtime_checkable
class Retriever(Protocol):
    """What rag_eval calls. ``describe`` is optional and not part of the check."""

    def index(self, corpus: Corpus) -> None:
        """Prepare to search ``corpus`` (build an index, encode passages, ...)."""

    def search(self, queries: Queries, top_k: int) -> Ranking:
        """Return up to ``top_k`` scored documents for each query."""


def describe(retriever: Any) -> dict[str, Any]:
    """The retriever's own description, or its class path when it has none."""
    cls = type(retriever)
    base = {"class": f"{cls.__module__}:{cls.__qualname__}"}
    method = getattr(retriever, "describe", None)
    if callable(method):
        extra = method()
        if isinstance(extra, Mapping):
            base.update(extra)
    return base


def passage_text(passage: Mapping[str, str]) -> str:
    """Title and text joined the way BEIR feeds passages to a retriever."""
    title = (passage.get("title") or "").strip()
    text = passage.get("text") or ""
    return f"{title} {text}" if title else text
