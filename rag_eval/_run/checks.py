"""What a retriever answered, checked: the shape of a ranking, before anything is evaluated.

A retriever that fails while the run calls it, or answers something invalid, raises
:class:`RetrieverRunError`: the error names the retriever, and ``rag-eval run`` adds the
config that holds it. A retriever that cannot be built is a plain RetrieverError naming the
config already. The check itself lives with the retrievers
(:mod:`rag_eval._retrievers.answer_check`), where ``hybrid`` checks each child's answer with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rag_eval._retrievers.answer_check import RetrieverRunError, check_answer

__all__ = ["RetrieverRunError", "ScoredSpan", "Span", "check_ranking"]

# A span of a document, (doc, start, end), and a retrieved one with its score.
Span = tuple[str, int, int]
ScoredSpan = tuple[str, int, int, float]


def check_ranking(
    label: str, raw: Any, queries: Mapping[str, str], corpus: Mapping[str, Any], top_k: int
) -> dict[str, dict[str, float]]:
    """Check a retriever's answer and cut each query's list to ``top_k``.

    A doc id not in the corpus, a score that is not an int or a float (a str, a
    bool), a NaN or infinite score, or a query id that was not asked stops the run
    with an error naming the retriever, the query and the document
    (:func:`rag_eval._retrievers.answer_check.check_answer`).
    """
    return check_answer(f"retriever {label!r}", raw, queries, corpus, top_k)
