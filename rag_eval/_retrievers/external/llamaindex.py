"""``adapter: llamaindex``: a team's LlamaIndex retriever or index, built by their own factory.

YAML::

    adapter: llamaindex
    params:
      factory: "my_rag.index:build_index"   # returns a BaseRetriever, or an index
      factory_params: {persist_dir: ./storage}
      map: {passage_id: passage_id}         # how a hit becomes a passage (docs/integrations.md)

A retriever is asked ``retrieve(query)`` (with its own ``similarity_top_k``); an index is asked
through ``index.as_retriever(similarity_top_k=top_k)``. Each ``NodeWithScore`` is a hit: its
``score`` (None: rank order), ``node.get_content()`` (the text, no metadata), ``node.metadata``
and ``node.node_id``. Retrieval embeds the query with the index's own embedding model and calls
no LLM; rag_eval never sets LlamaIndex's global ``Settings`` (give the index its ``embed_model``,
e.g. :meth:`rag_eval._retrievers.external.embedding_bridge.EmbeddingBridge.llamaindex`).
"""

from __future__ import annotations

from typing import Any

from rag_eval._core.errors import RetrieverError
from rag_eval._core.plugins import error_cause
from rag_eval._retrievers.external.by_text import metadata_of
from rag_eval._retrievers.external.factories import FactoryParams, FactoryRetriever
from rag_eval._retrievers.external.hits import Hit


class LlamaIndexRetriever(FactoryRetriever):
    """Asks what the factory returned: a LlamaIndex ``BaseRetriever``, or an index made a retriever of ``top_k``."""

    Params = FactoryParams
    ADAPTER = "llamaindex"
    DISTRIBUTION = "llama-index-core"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._retrievers: dict[int, Any] = {}  # an index's retriever per k, made once

    def adopt(self, built: Any) -> None:
        """Keep a ``BaseRetriever`` or an index; anything else is refused."""
        from llama_index.core.base.base_retriever import BaseRetriever
        from llama_index.core.indices.base import BaseIndex

        if isinstance(built, BaseRetriever):
            self.kind = "retriever"
        elif isinstance(built, BaseIndex):
            self.kind = "index"
        else:
            raise self.refuse(built, "a LlamaIndex BaseRetriever or index (VectorStoreIndex...)")
        self.target = built
        self._retrievers = {}

    def scores_note(self) -> str:
        """Node scores as given; None scores are ranked by order (counted as scoreless hits)."""
        return "NodeWithScore.score, as given (higher = better; a node without a score: rank order)"

    def ask(self, text: str, k: int) -> list[Hit]:
        """One query's hits, best first."""
        return [_hit(found) for found in self._retriever(k).retrieve(text)]

    def _retriever(self, k: int) -> Any:
        if self.kind == "retriever":
            return self.target
        if k not in self._retrievers:
            try:
                self._retrievers[k] = self.target.as_retriever(similarity_top_k=k)
            except Exception as error:  # an index kind without similarity_top_k
                raise RetrieverError(
                    f"{self.ADAPTER}: params.factory {self.settings.factory!r} returned {self.target_class}, whose "
                    f"as_retriever(similarity_top_k={k}) raised {error_cause(error)}; return a retriever instead"
                ) from error
        return self._retrievers[k]

    def close(self) -> None:
        """Let go of the index and its retrievers; safe to call twice."""
        super().close()
        self._retrievers = {}


def _hit(found: Any) -> Hit:
    """A ``NodeWithScore`` as a hit."""
    node = found.node
    return Hit(
        id=str(node.node_id) if node.node_id is not None else None,
        score=found.score,  # as given: settled (checked, made a float) by TextHitsRetriever.search
        text=node.get_content(),
        metadata=metadata_of(node.metadata),
    )
