"""An example plug-in that chunks documents itself and returns spans: a team's own pipeline, scored as it is.

docs/examples/paragraph_spans.yaml names it ``adapter: paragraph_spans:ParagraphRetriever``
with no ``chunker``: rag_eval then hands ``index()`` the whole documents,
``{doc_id: {"text": document}}``, and this retriever cuts them into paragraphs (runs
of text between blank lines) on its own. ``search()`` answers with spans,
``{query_id: [(doc_id, start, end, score), ...]}``: offsets into the document as
given (Python string indices, end exclusive). rag_eval checks every span against
the document and scores it against the dataset's evidence, exactly as it scores its
own chunkings (docs/documents.md). It imports nothing from rag_eval.

Score of a paragraph: the number of distinct query words (2 letters or more) it contains,
plus a small bonus for shorter paragraphs (a tie-breaker: the same words in less text).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

WORD = re.compile(r"\w{2,}")
PARAGRAPH = re.compile(r"\S(?:.*?\S)?(?=\n\s*\n|\s*\Z)", re.DOTALL)


class ParagraphRetriever:
    """Paragraphs of each document, scored by the query words they share."""

    def __init__(self, max_paragraph_chars: int = 2000) -> None:
        if not isinstance(max_paragraph_chars, int) or max_paragraph_chars < 1:
            raise ValueError(f"max_paragraph_chars must be an integer >= 1, got {max_paragraph_chars!r}")
        self.max_paragraph_chars = max_paragraph_chars
        self.paragraphs: list[tuple[str, int, int, frozenset[str]]] = []

    def index(self, corpus: Mapping[str, Mapping[str, str]]) -> None:
        """Cut every document into paragraphs, long ones into pieces of at most max_paragraph_chars."""
        self.paragraphs = []
        for doc_id, document in corpus.items():
            text = document.get("text") or ""
            for match in PARAGRAPH.finditer(text):
                for start in range(match.start(), match.end(), self.max_paragraph_chars):
                    end = min(start + self.max_paragraph_chars, match.end())
                    words = frozenset(w.lower() for w in WORD.findall(text[start:end]))
                    self.paragraphs.append((doc_id, start, end, words))

    def search(self, queries: Mapping[str, str], top_k: int) -> dict[str, list[tuple[str, int, int, float]]]:
        """``{query_id: [(doc_id, start, end, score), ...]}``, best first, at most ``top_k`` each."""
        results: dict[str, list[tuple[str, int, int, float]]] = {}
        for query_id, text in queries.items():
            words = {w.lower() for w in WORD.findall(text)}
            scored = [
                (doc_id, start, end, len(words & paragraph_words) + 1 / (1 + end - start))
                for doc_id, start, end, paragraph_words in self.paragraphs
                if words & paragraph_words
            ]
            scored.sort(key=lambda item: item[3], reverse=True)
            results[query_id] = scored[:top_k]
        return results
