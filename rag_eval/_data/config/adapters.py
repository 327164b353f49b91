"""The names a config may give as a retriever's ``adapter``: built-ins, plug-ins and import strings.

Checking a name imports nothing: built-in names map to lazy ``"module:Class"`` strings, and
an import string is checked for its form only. :mod:`rag_eval._retrievers.registry` resolves
and builds them.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

from rag_eval._core.errors import RetrieverError
from rag_eval._core.messages import did_you_mean

ENTRY_POINT_GROUP = "rag_eval.retrievers"


BUILTIN: dict[str, str] = {
    "static": "rag_eval._retrievers.static:StaticRetriever",
    "bm25": "rag_eval._retrievers.bm25:BM25Retriever",
    "dense": "rag_eval._retrievers.dense:DenseRetriever",
    "cross_encoder": "rag_eval._retrievers.cross_encoder:CrossEncoderReranker",
    "hybrid": "rag_eval._retrievers.hybrid:HybridRetriever",
    # the team's own index or retriever (docs/integrations.md); each needs its extra installed
    "pgvector": "rag_eval._retrievers.external.pgvector:PgvectorRetriever",
    "qdrant": "rag_eval._retrievers.external.qdrant:QdrantRetriever",
    "chroma": "rag_eval._retrievers.external.chroma:ChromaRetriever",
    "lancedb": "rag_eval._retrievers.external.lancedb:LanceDBRetriever",
    "langchain": "rag_eval._retrievers.external.langchain:LangChainRetriever",
    "llamaindex": "rag_eval._retrievers.external.llamaindex:LlamaIndexRetriever",
    "haystack": "rag_eval._retrievers.external.haystack:HaystackRetriever",
    "http": "rag_eval._retrievers.external.http:HttpRetriever",
}


def plugin_names() -> dict[str, Any]:
    """Entry points of installed plug-ins, by name (read afresh on every call)."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def known_names() -> list[str]:
    """Every name a config may use as an adapter (built-ins and plug-ins)."""
    return sorted(set(BUILTIN) | set(plugin_names()))


def is_import_string(name: str) -> bool:
    """``package.module:Class`` form."""
    return ":" in name


def check_adapter_name(name: str) -> None:
    """Raise a RetrieverError with a hint when ``name`` is not a known adapter.

    Import strings are not imported here (loading a config stays cheap and safe);
    they are resolved when the retriever is checked or built.
    """
    if is_import_string(name):
        module, _, attr = name.partition(":")
        if not module or not attr:
            raise RetrieverError(f"adapter {name!r} is not of the form 'package.module:Class'")
        return
    if name in BUILTIN or name in plugin_names():
        return
    known = known_names()
    raise RetrieverError(
        f"unknown adapter {name!r}; {did_you_mean(name, known)}known: {', '.join(known)}, or an import string 'package.module:Class'"
    )
