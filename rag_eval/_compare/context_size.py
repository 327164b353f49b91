"""Context size: the mean size (characters and word tokens) of the top k chunks a run with spans returns.

Pure (no I/O); a cost column of the decision section (rag_eval._report.decision).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rag_eval._core.ranking import ranked
from rag_eval._core.spans import chunk_id
from rag_eval._core.tokens import count_words

__all__ = ["ContextSize", "mean_context_size"]


# ---- cost: context size ---------------------------------------------------------------------


@dataclass(frozen=True)
class ContextSize:
    """Mean size over queries of the text of the top ``k`` chunks (characters and word tokens)."""

    k: int
    chars: float
    tokens: float


def mean_context_size(
    spans: Mapping[str, Sequence[tuple[str, int, int, float]]],
    documents: Mapping[str, str],
    query_ids: Sequence[str],
    k: int,
    token_cache: dict[tuple[str, int, int], int] | None = None,
) -> ContextSize:
    """Mean over ``query_ids`` of the summed length of the top ``k`` spans (a query without spans: 0).

    Spans are ordered by the ranking rule (score desc, chunk id desc) before the cut. Tokens are
    :func:`rag_eval._core.tokens.count_words` of ``document[start:end]``; ``token_cache`` (keyed by span)
    lets variants that share a chunking count each chunk once.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if not query_ids:
        return ContextSize(k, math.nan, math.nan)
    cache = {} if token_cache is None else token_cache
    chars = tokens = 0
    for qid in query_ids:
        items = spans.get(qid, ())
        by_id = {chunk_id(doc, start, end): (doc, start, end) for doc, start, end, _ in items}
        top = ranked({chunk_id(doc, start, end): score for doc, start, end, score in items})[:k]
        for cid, _ in top:
            doc, start, end = by_id[cid]
            chars += end - start
            key = (doc, start, end)
            if key not in cache:
                cache[key] = count_words(documents[doc][start:end])
            tokens += cache[key]
    return ContextSize(k, chars / len(query_ids), tokens / len(query_ids))
