"""The digest of exactly what a retriever receives: the key of shared children and of the ranking cache."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any


def corpus_digest(corpus: Mapping[str, Mapping[str, Any]], queries: Mapping[str, str]) -> str:
    """sha256 of exactly what a retriever receives: every passage (id and fields) and every query, in order."""
    digest = hashlib.sha256()
    for doc_id, passage in corpus.items():
        digest.update(json.dumps([doc_id, dict(passage)], ensure_ascii=False, sort_keys=True).encode("utf-8", "surrogatepass"))
        digest.update(b"\n")
    digest.update(b"\0queries\n")
    for qid, text in queries.items():
        digest.update(json.dumps([qid, text], ensure_ascii=False).encode("utf-8", "surrogatepass"))
        digest.update(b"\n")
    return digest.hexdigest()
