"""A deliberately worse retriever for the regression end-to-end tests.

``weak_retriever:ReversedBM25`` runs rag_eval's BM25 and then reverses each
query's ranking (the best passage comes last), so nDCG@10 drops on every query
whose BM25 top results differ in grade. Load it with the import string
``weak_retriever:ReversedBM25`` and this folder on PYTHONPATH.
"""

from __future__ import annotations

from typing import Any, Mapping

from rag_eval._retrievers.bm25 import BM25Retriever


class ReversedBM25:
    """BM25, then each query's ranked list in reverse order."""

    def __init__(self, **params: Any) -> None:
        self._inner = BM25Retriever(**params)

    def index(self, corpus: Mapping[str, Mapping[str, str]]) -> None:
        self._inner.index(corpus)

    def search(self, queries: Mapping[str, str], top_k: int) -> dict[str, dict[str, float]]:
        ranked = self._inner.search(queries, top_k)
        out: dict[str, dict[str, float]] = {}
        for qid, scores in ranked.items():
            # Rank as trec_eval does (score descending, ties by doc id descending), then give
            # rank r (0 = best) the score r + 1 so that the order flips exactly.
            order = sorted(scores, key=lambda doc: (scores[doc], doc), reverse=True)
            out[qid] = {doc: float(rank + 1) for rank, doc in enumerate(order)}
        return out

    def describe(self) -> dict[str, Any]:
        return {"wraps": "bm25", "order": "reversed", **self._inner.describe()}
