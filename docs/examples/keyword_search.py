"""An example retriever plug-in for rag_eval: passages scored by the query words they contain.

docs/examples/keyword_search.yaml names it ``adapter: keyword_search:KeywordRetriever``;
rag_eval finds this file because it sits in the config's folder. It imports nothing
from rag_eval: a retriever is any class with ``index(corpus)`` and ``search(queries, top_k)``.
docs/plugins.md describes exactly what the two methods receive and must return.

Score of a passage for a query: the sum, over the distinct query words it contains, of
``idf(word) * tf / (tf + 1)``, where ``tf`` counts the word in the text (a title word
counts ``title_weight`` times) and ``idf(word) = ln((N + 1) / (df + 0.5))``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

WORD = re.compile(r"\w+")


class KeywordRetriever:
    """Keyword overlap with idf weighting (a small cousin of BM25)."""

    def __init__(self, min_word_length: int = 2, title_weight: float = 1.0) -> None:
        # Raise on bad values: rag_eval reports the message on one line, naming the retriever.
        if not isinstance(min_word_length, int) or min_word_length < 1:
            raise ValueError(f"min_word_length must be an integer >= 1, got {min_word_length!r}")
        if not isinstance(title_weight, (int, float)) or title_weight < 0:
            raise ValueError(f"title_weight must be a number >= 0, got {title_weight!r}")
        self.min_word_length = min_word_length
        self.title_weight = float(title_weight)
        self.counts: dict[str, Counter[str]] = {}
        self.idf: dict[str, float] = {}

    def _words(self, text: str) -> list[str]:
        return [w for w in WORD.findall(text.lower()) if len(w) >= self.min_word_length]

    def index(self, corpus: Mapping[str, Mapping[str, str]]) -> None:
        """``corpus`` is ``{doc_id: {"text": str, "title": str}}``; the return value is ignored."""
        document_frequency: Counter[str] = Counter()
        for doc_id, passage in corpus.items():
            counts: Counter[str] = Counter(self._words(passage.get("text") or ""))
            for word in self._words(passage.get("title") or ""):
                counts[word] += self.title_weight
            self.counts[doc_id] = counts
            document_frequency.update(counts.keys())
        n = len(corpus)
        self.idf = {word: math.log((n + 1) / (df + 0.5)) for word, df in document_frequency.items()}

    def search(self, queries: Mapping[str, str], top_k: int) -> dict[str, dict[str, float]]:
        """``queries`` is ``{query_id: text}``; returns ``{query_id: {doc_id: score}}``, at most top_k each."""
        results: dict[str, dict[str, float]] = {}
        for query_id, text in queries.items():
            words = set(self._words(text))
            scores = {}
            for doc_id, counts in self.counts.items():
                score = sum(self.idf[w] * counts[w] / (counts[w] + 1) for w in words if counts[w] > 0)
                if score > 0:  # a passage sharing no word is not returned
                    scores[doc_id] = score
            # The best top_k by rag_eval's rule: score descending, ties by doc id descending.
            best = sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)[:top_k]
            results[query_id] = dict(best)
        return results

    def describe(self) -> dict[str, Any]:
        """Recorded in the results file and the report (must be JSON-ready)."""
        return {"method": "keyword overlap, idf-weighted", "min_word_length": self.min_word_length,
                "title_weight": self.title_weight, "vocabulary": len(self.idf)}
