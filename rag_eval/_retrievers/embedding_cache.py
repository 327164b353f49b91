"""Where embeddings are cached, and the warning a damaged or unwritable cache raises.

The cache itself is the per-passage store, :mod:`rag_eval._models.embeddings.store` (one embedding
per model, encoding options and exact text). It replaced a cache keyed by the whole corpus,
whose files (``<cache_dir>/embeddings/*.npy``) are no longer read and may be deleted.
This module keeps the names other modules import from here.

Importing this module needs numpy only.
"""

from __future__ import annotations

import os
from pathlib import Path

from rag_eval._models.embeddings.store import EmbeddingCacheWarning

__all__ = ["EmbeddingCacheWarning", "default_cache_dir"]


def default_cache_dir() -> Path:
    """``$RAG_EVAL_CACHE_DIR``, else ``$XDG_CACHE_HOME/rag_eval``, else ``~/.cache/rag_eval``."""
    if os.environ.get("RAG_EVAL_CACHE_DIR"):
        return Path(os.environ["RAG_EVAL_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rag_eval"
