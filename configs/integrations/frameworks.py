"""Example factories, as a team would write them: a store (or pipeline) filled from a dataset's passages.

A config names one as ``factory: "frameworks:build_langchain_store"`` (this file's folder is the
config's folder, searched first). Each embeds with rag_eval's own encoder and embedding cache
(:class:`EmbeddingBridge`), so its vectors are exactly ``adapter: dense``'s and its ranking is
dense's ranking (docs/integrations.md). A real team's factory would open their existing store
instead; these build one in memory on every call.

Each passage is embedded as dense embeds it, "<title> <text>", and stored with its id in the
metadata (``passage_id``) and as the framework's own document id:

- LangChain embeds ``page_content`` as it is: it holds "<title> <text>";
- LlamaIndex and Haystack embed the title from the metadata before the content, which holds the
  passage's text alone (so a hit maps by ``map: {text: true}`` as well).

``dataset``: a rag_eval query-set YAML file (its ``corpus:`` list) or a run config (its dataset); a
relative path is taken from this file's folder. ``cache_dir``: rag_eval's embedding cache (default:
the one dense uses; a relative path is taken from this file's folder too).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from rag_eval.extend import EmbeddingBridge, config_corpus

HERE = Path(__file__).resolve().parent


def read_passages(dataset: str) -> list[dict[str, str]]:
    """``[{"id", "title", "text"}, ...]``: the ``corpus:`` list of a query-set YAML file, or the passages of the
    dataset a rag_eval run config names (a file with a ``dataset:`` section: Cranfield, BEIR, ...)."""
    path = Path(dataset).expanduser()
    path = path if path.is_absolute() else HERE / path
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if isinstance(data, dict) and "dataset" in data and "corpus" not in data:
        return [{"id": unit, **passage} for unit, passage in config_corpus(path).items()]
    corpus = data.get("corpus") or []
    return [{"id": str(p["id"]), "title": str(p.get("title") or ""), "text": str(p.get("text") or "")} for p in corpus]


def _bridge(model: str, cache_dir: str | None) -> EmbeddingBridge:
    if not cache_dir:
        return EmbeddingBridge(model=model)
    folder = Path(cache_dir).expanduser()
    return EmbeddingBridge(model=model, cache_dir=str(folder if folder.is_absolute() else HERE / folder))


def build_langchain_store(
    dataset: str, model: str = "all-MiniLM-L6-v2", cache_dir: str | None = None, as_retriever: bool = False,
    k: int = 10,
) -> Any:
    """A LangChain ``InMemoryVectorStore`` of the passages (or, ``as_retriever``, its retriever of ``k``)."""
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore

    passages = read_passages(dataset)
    store = InMemoryVectorStore(embedding=_bridge(model, cache_dir).langchain())
    store.add_documents([
        Document(
            id=p["id"],
            page_content=EmbeddingBridge.passage(p),
            metadata={"passage_id": p["id"], "title": p["title"]},
        )
        for p in passages
    ])
    return store.as_retriever(search_kwargs={"k": k}) if as_retriever else store


def build_llamaindex_index(
    dataset: str, model: str = "all-MiniLM-L6-v2", cache_dir: str | None = None, as_retriever: bool = False,
    k: int = 10,
) -> Any:
    """A LlamaIndex ``VectorStoreIndex`` (in-memory ``SimpleVectorStore``) of the passages, or its retriever of ``k``."""
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode

    nodes = []
    for p in read_passages(dataset):
        metadata = {"passage_id": p["id"]}
        if p["title"].strip():
            metadata["title"] = p["title"].strip()
        nodes.append(TextNode(
            id_=p["id"],
            text=p["text"],
            metadata=metadata,
            # embedded as "<title> <text>", dense's text; the id is not embedded, and nothing goes to an LLM
            excluded_embed_metadata_keys=["passage_id"],
            excluded_llm_metadata_keys=["passage_id"],
            metadata_template="{value}",
            text_template="{metadata_str} {content}",
        ))
    # embed_model given: LlamaIndex's global Settings (whose default is OpenAI) are never consulted
    index = VectorStoreIndex(nodes, embed_model=_bridge(model, cache_dir).llamaindex())
    return index.as_retriever(similarity_top_k=k) if as_retriever else index


def build_haystack_pipeline(dataset: str, model: str = "all-MiniLM-L6-v2", cache_dir: str | None = None) -> Any:
    """A Haystack 2 query pipeline: the bridge's text embedder -> ``InMemoryEmbeddingRetriever``.

    The ``InMemoryDocumentStore`` is filled by the bridge's document embedder (title from the meta,
    then the content); scores are dot products of unit vectors, i.e. dense's cosines.
    """
    from haystack import Document, Pipeline
    from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    bridge = _bridge(model, cache_dir)
    documents = [
        Document(id=p["id"], content=p["text"], meta={"passage_id": p["id"], **({"title": p["title"]} if p["title"] else {})})
        for p in read_passages(dataset)
    ]
    embedded = bridge.haystack_document_embedder(meta_fields_to_embed=["title"]).run(documents=documents)["documents"]
    store = InMemoryDocumentStore(embedding_similarity_function="dot_product")
    store.write_documents(embedded)
    pipeline = Pipeline()
    pipeline.add_component("embedder", bridge.haystack_text_embedder())
    pipeline.add_component("retriever", InMemoryEmbeddingRetriever(document_store=store))
    pipeline.connect("embedder.embedding", "retriever.query_embedding")
    return pipeline
