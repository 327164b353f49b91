"""rag_eval's own embeddings, handed to a framework: a team's store filled with them gives ``dense``'s numbers.

:class:`EmbeddingBridge` encodes texts exactly as ``adapter: dense`` does, with the same
parameters (model, prefixes, normalisation, backend...) and through the same per-passage store
(:mod:`rag_eval._models.embeddings.store`): a passage or query that ``dense`` encoded already is
read back bit for bit, and one the bridge encodes is there for ``dense``. It is wrapped for each
framework:

- :meth:`EmbeddingBridge.langchain`: a LangChain ``Embeddings`` (``embed_documents`` / ``embed_query``);
- :meth:`EmbeddingBridge.llamaindex`: a LlamaIndex ``BaseEmbedding`` (texts are passages, queries are queries);
- :meth:`EmbeddingBridge.haystack_text_embedder` and :meth:`EmbeddingBridge.haystack_document_embedder`:
  Haystack 2 components (``text -> embedding``, ``documents -> documents`` with their embeddings).

``dense`` embeds a passage as its title and text (:func:`rag_eval._data.datasets.model.passage_text`,
``"<title> <text>"``): a store whose vectors must equal ``dense``'s embeds that same string. Each
wrapper's docstring says how its framework does it. The frameworks are imported only when a
wrapper is asked for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from pydantic import PrivateAttr

from rag_eval._data.datasets.model import passage_text
from rag_eval._retrievers.dense import DenseRetriever

# Each framework's wrapper class, made once (its base class is imported when first asked for).
_CLASSES: dict[str, Any] = {}


class EmbeddingBridge:
    """Embeds passages and queries as ``adapter: dense`` with the same parameters (see the module docstring).

    ``params`` are ``dense``'s (``model``, ``cache_dir``, ``query_prefix``, ``passage_prefix``,
    ``normalize``, ``backend``...; not ``index``, which is about search). ``show_progress`` is
    off unless given: a factory runs inside a run, whose own lines must stay readable.
    """

    def __init__(self, **params: Any) -> None:
        if "index" in params:
            raise ValueError("EmbeddingBridge: index is about search, not embeddings; remove it")
        params.setdefault("show_progress", False)
        self._dense = DenseRetriever(**params)
        self.counts = {"passages": 0, "passages_encoded": 0, "queries": 0, "queries_encoded": 0}

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """float32 rows, one per passage text (the text ``dense`` encodes: title and text, see :meth:`passage`)."""
        return self._embed(texts, "passage", self._dense.passage_prefix)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """float32 rows, one per query text (``query_prefix`` added, as ``dense`` adds it)."""
        return self._embed(texts, "query", self._dense.query_prefix)

    @staticmethod
    def passage(passage: Mapping[str, str]) -> str:
        """The text ``dense`` embeds for a passage ``{"title": ..., "text": ...}``: ``"<title> <text>"``."""
        return passage_text(passage)

    def _embed(self, texts: Sequence[str], kind: str, prefix: str) -> np.ndarray:
        texts = [str(text) for text in texts]
        if not texts:
            return np.empty((0, 0), dtype=np.float32)
        # dense's own path (same layer): same namespace, same store, same encoder, hence the same numbers
        vectors, _status, counts, _info = self._dense._encode_cached([prefix + text for text in texts], kind)
        plural = {"passage": "passages", "query": "queries"}[kind]
        self.counts[plural] += len(texts)
        self.counts[f"{plural}_encoded"] += counts["encoded"]
        return vectors

    def describe(self) -> dict[str, Any]:
        """The model, its parameters and what was embedded (and encoded rather than read from the store)."""
        info = self._dense.describe()
        return {
            "model": info.get("model") or info["parameters"]["model"],
            "model_identity": info.get("model_identity"),
            "parameters": {key: value for key, value in info["parameters"].items() if key != "index"},
            **self.counts,
        }

    # ------------------------------------------------------------------ the frameworks' wrappers

    def langchain(self) -> Any:
        """A LangChain ``Embeddings``: ``embed_documents`` embeds passages, ``embed_query`` queries.

        LangChain embeds a document's ``page_content`` as it is: for ``dense``'s numbers, make it
        :meth:`passage` (title and text).
        """
        return _langchain_class()(self)

    def llamaindex(self) -> Any:
        """A LlamaIndex ``BaseEmbedding``: node texts are embedded as passages, queries as queries.

        LlamaIndex embeds ``node.get_content(MetadataMode.EMBED)``: for ``dense``'s numbers, either
        make that :meth:`passage` (metadata ``{"title": ...}`` with ``metadata_template="{value}"``,
        ``text_template="{metadata_str} {content}"``, other keys in ``excluded_embed_metadata_keys``),
        or put the node's text alone and its title nowhere.
        """
        return _llamaindex_class()(self)

    def haystack_text_embedder(self) -> Any:
        """A Haystack component ``run(text: str) -> {"embedding": list[float]}`` (a query)."""
        return _haystack_classes()[0](self)

    def haystack_document_embedder(
        self, meta_fields_to_embed: Sequence[str] = ("title",), embedding_separator: str = " "
    ) -> Any:
        """A Haystack component ``run(documents) -> {"documents": ...}`` giving each document its embedding.

        As Haystack's own document embedders do, the values of ``meta_fields_to_embed`` come before
        the content, joined by ``embedding_separator``; a value that is absent, None or blank is left
        out (so ``meta: {"title": ...}`` and ``content: text`` embed :meth:`passage`).
        """
        return _haystack_classes()[1](self, list(meta_fields_to_embed), embedding_separator)


def document_text(content: str | None, meta: Mapping[str, Any], fields: Sequence[str], separator: str) -> str:
    """The text a Haystack document is embedded as: its named meta values (stripped, blank ones left out), then content."""
    values = [str(meta[field]).strip() for field in fields if meta.get(field) is not None]
    return separator.join([*[value for value in values if value], content or ""])


def _langchain_class() -> Any:
    if "langchain" not in _CLASSES:
        from langchain_core.embeddings import Embeddings

        class BridgeEmbeddings(Embeddings):
            """rag_eval's embeddings as a LangChain ``Embeddings`` (:meth:`EmbeddingBridge.langchain`)."""

            def __init__(self, bridge: EmbeddingBridge) -> None:
                self.bridge = bridge

            def embed_documents(self, texts: list[str]) -> list[list[float]]:
                """Passages' embeddings, as ``dense`` computes them."""
                return self.bridge.embed_passages(texts).tolist()

            def embed_query(self, text: str) -> list[float]:
                """A query's embedding, as ``dense`` computes it."""
                return self.bridge.embed_queries([text])[0].tolist()

        _CLASSES["langchain"] = BridgeEmbeddings
    return _CLASSES["langchain"]


def _llamaindex_class() -> Any:
    if "llamaindex" not in _CLASSES:
        from llama_index.core.base.embeddings.base import BaseEmbedding

        class BridgeEmbedding(BaseEmbedding):
            """rag_eval's embeddings as a LlamaIndex ``BaseEmbedding`` (:meth:`EmbeddingBridge.llamaindex`)."""

            _bridge: Any = PrivateAttr()

            def __init__(self, bridge: EmbeddingBridge) -> None:
                # 2048, LlamaIndex's largest batch: a corpus reaches rag_eval's store in few calls
                super().__init__(model_name=str(bridge.describe()["model"]), embed_batch_size=2048)
                self._bridge = bridge

            @classmethod
            def class_name(cls) -> str:
                """LlamaIndex's name of this embedding class."""
                return "RagEvalBridgeEmbedding"

            def _get_query_embedding(self, query: str) -> list[float]:
                return self._bridge.embed_queries([query])[0].tolist()

            async def _aget_query_embedding(self, query: str) -> list[float]:
                return self._get_query_embedding(query)

            def _get_text_embedding(self, text: str) -> list[float]:
                return self._bridge.embed_passages([text])[0].tolist()

            def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
                return self._bridge.embed_passages(texts).tolist()

        _CLASSES["llamaindex"] = BridgeEmbedding
    return _CLASSES["llamaindex"]


def _haystack_classes() -> tuple[Any, Any]:
    if "haystack" not in _CLASSES:
        from haystack import Document, component

        @component
        class BridgeTextEmbedder:
            """rag_eval's query embedding as a Haystack text embedder (:meth:`EmbeddingBridge.haystack_text_embedder`)."""

            def __init__(self, bridge: EmbeddingBridge) -> None:
                self.bridge = bridge

            @component.output_types(embedding=list[float])
            def run(self, text: str) -> dict[str, Any]:
                """``{"embedding": ...}`` of one query text."""
                return {"embedding": self.bridge.embed_queries([text])[0].tolist()}

        @component
        class BridgeDocumentEmbedder:
            """rag_eval's passage embeddings as a Haystack document embedder (see the bridge's method)."""

            def __init__(self, bridge: EmbeddingBridge, meta_fields_to_embed: list[str], embedding_separator: str) -> None:
                self.bridge = bridge
                self.meta_fields_to_embed = meta_fields_to_embed
                self.embedding_separator = embedding_separator

            @component.output_types(documents=list[Document])
            def run(self, documents: list[Document]) -> dict[str, Any]:
                """The documents, each with its embedding (new objects: the inputs are left as they are)."""
                texts = [
                    document_text(doc.content, doc.meta, self.meta_fields_to_embed, self.embedding_separator)
                    for doc in documents
                ]
                vectors = self.bridge.embed_passages(texts)
                return {"documents": [replace(doc, embedding=row.tolist()) for doc, row in zip(documents, vectors)]}

        _CLASSES["haystack"] = (BridgeTextEmbedder, BridgeDocumentEmbedder)
    return _CLASSES["haystack"]

