"""Embeddings: the per-passage store (:mod:`.store`) and the encoders that fill it.

An encoder is loaded by :mod:`.loading` on the backend its options name (:mod:`.options`):
torch (:mod:`.torch_backend`), or an export (:mod:`.export`) run by ONNX Runtime or OpenVINO
(:mod:`.graph_backend`, :mod:`.graph_session`). Texts are tokenised by the model's Rust
tokenizer where it is checked to give transformers' tokens (:mod:`.fast_tokens`), in batches
formed by length on threads ahead of the model (:mod:`.token_feed`), copied to a GPU from
pinned memory on streams of their own (:mod:`.device_copy`). Importing this package needs
numpy only; a backend loads torch / tokenizers / onnxruntime / openvino when it is first used.
"""

from __future__ import annotations

from rag_eval._models.embeddings.incremental import encode_missing
from rag_eval._models.embeddings.shard_file import FORMAT_VERSION
from rag_eval._models.embeddings.store import EmbeddingCacheWarning, EmbeddingStore, namespace_key, text_key

__all__ = [
    "FORMAT_VERSION",
    "EmbeddingCacheWarning",
    "EmbeddingStore",
    "encode_missing",
    "namespace_key",
    "text_key",
]
