"""Embeddings: the per-passage store (:mod:`.store`) and the encoding backends (:mod:`.backends`).

Importing this package needs numpy only; a backend loads torch / onnxruntime / openvino
when it is first used.
"""

from __future__ import annotations

from rag_eval._models.embeddings.store import (
    FORMAT_VERSION,
    EmbeddingCacheWarning,
    EmbeddingStore,
    encode_missing,
    namespace_key,
    text_key,
)

__all__ = [
    "FORMAT_VERSION",
    "EmbeddingCacheWarning",
    "EmbeddingStore",
    "encode_missing",
    "namespace_key",
    "text_key",
]
