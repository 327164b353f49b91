"""``adapter: langchain``: a team's LangChain vector store or retriever, built by their own factory.

YAML::

    adapter: langchain
    params:
      factory: "my_rag.store:build_store"   # returns a VectorStore or a BaseRetriever
      factory_params: {path: ./index}       # its keyword arguments
      map: {passage_id: source_id}          # how a hit becomes a passage (docs/integrations.md)

A ``VectorStore`` is asked ``similarity_search_with_score(query, k=top_k)``; its score is taken
as given (``scores: similarity``, higher = better: ``InMemoryVectorStore`` gives the cosine) or
negated (``scores: distance``, for stores that return a distance). A ``BaseRetriever`` is asked
``invoke(query)`` (a ``VectorStoreRetriever`` with ``k=top_k``) and gives no scores: its order is
the ranking, and the description says so. A hit's id is the document's ``id``, its text the
``page_content``, its metadata the document's ``metadata``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field

from rag_eval._retrievers.base import Queries, Ranking
from rag_eval._retrievers.external.by_text import SCORES_HELP, Scores, metadata_of
from rag_eval._retrievers.external.factories import FactoryParams, FactoryRetriever
from rag_eval._retrievers.external.hits import Hit


class LangChainParams(FactoryParams):
    """Parameters of ``adapter: langchain`` (see the module docstring)."""

    scores: Scores = Field("similarity", description=f"a vector store's score: {SCORES_HELP}")


class LangChainRetriever(FactoryRetriever):
    """Asks what the factory returned: a LangChain ``VectorStore`` (scored) or ``BaseRetriever`` (rank order)."""

    Params = LangChainParams
    ADAPTER = "langchain"
    DISTRIBUTION = "langchain-core"

    def adopt(self, built: Any) -> None:
        """Keep a ``VectorStore`` or a ``BaseRetriever``; anything else is refused."""
        from langchain_core.retrievers import BaseRetriever
        from langchain_core.vectorstores import VectorStore, VectorStoreRetriever

        if isinstance(built, VectorStore):
            self.kind = "vector_store"
        elif isinstance(built, BaseRetriever):
            # a VectorStoreRetriever takes k per call; any other retriever answers with its own k
            self.kind = "vector_store_retriever" if isinstance(built, VectorStoreRetriever) else "retriever"
        else:
            raise self.refuse(built, "a LangChain VectorStore or BaseRetriever")
        self.target = built

    def scores_note(self) -> str:
        """Scores as given, negated distances, or rank order (a retriever gives none)."""
        if self.kind not in ("", "vector_store"):
            return "rank order (a LangChain retriever returns documents without scores)"
        if self.settings.scores == "distance":
            return "similarity_search_with_score's distance, negated (higher = better)"
        return "similarity_search_with_score's score, as given (higher = better)"

    def ask(self, text: str, k: int) -> list[Hit]:
        """One query's hits, best first."""
        if self.kind == "vector_store":
            # the score as the store gave it: settled (negated for scores: distance, checked) by TextHitsRetriever.search
            pairs = self.target.similarity_search_with_score(text, k=k)
            return [_hit(document, score) for document, score in pairs]
        extra = {"k": k} if self.kind == "vector_store_retriever" else {}
        return [_hit(document, None) for document in self.target.invoke(text, **extra)]

    def search(self, queries: Queries, top_k: int) -> Ranking:
        """As :meth:`FactoryRetriever.search`; a store whose every answer's scores rise returns distances: refused."""
        ranking = super().search(queries, top_k)
        if self.kind == "vector_store":
            error = self.order.distances_error(
                self.ADAPTER, f"the store built by {self.settings.factory!r} ({self.target_class})", self.settings
            )
            if error is not None:
                raise error
        return ranking

    def answer_many(self, texts: Sequence[str], k: int) -> list[list[Hit]]:
        """A retriever answers a batch with LangChain's ``batch``; a vector store one query at a time."""
        if self.kind == "vector_store" or len(texts) == 1:
            return [self.ask(text, k) for text in texts]
        extra = {"k": k} if self.kind == "vector_store_retriever" else {}
        return [[_hit(document, None) for document in documents] for documents in self.target.batch(list(texts), **extra)]


def _hit(document: Any, score: Any) -> Hit:
    """A LangChain ``Document`` as a hit (its id may be None: such a hit maps by metadata or text)."""
    identifier = getattr(document, "id", None)
    return Hit(
        id=str(identifier) if identifier is not None else None,
        score=score,
        text=getattr(document, "page_content", None),
        metadata=metadata_of(getattr(document, "metadata", None)),
    )
