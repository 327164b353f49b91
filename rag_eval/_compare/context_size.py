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

__all__ = ["ContextSize", "chunks_read", "mean_context_size"]

Span = tuple[str, int, int, float]


# ---- cost: context size ---------------------------------------------------------------------


@dataclass(frozen=True)
class ContextSize:
    """Mean size over queries of the text of the chunks a metric reads (characters and word tokens).

    ``k``: the number of top chunks read, or the budget when ``unit`` ("chars" or "tokens") is set.
    """

    k: int
    chars: float
    tokens: float
    unit: str | None = None

    @property
    def what(self) -> str:
        """"top 5" or "within 1,000 tokens": what the column measures."""
        return f"top {self.k}" if self.unit is None else f"within {self.k:,} {self.unit}"

    @property
    def chunks(self) -> str:
        """"the top 5 chunks" or "the chunks that fit 1,000 tokens"."""
        return f"the top {self.k} chunks" if self.unit is None else f"the chunks that fit {self.k:,} {self.unit}"


def chunks_read(
    ranked: Sequence[Span],
    documents: Mapping[str, str],
    k: int,
    unit: str | None = None,
    token_cache: dict[tuple[str, int, int], int] | None = None,
) -> list[Span]:
    """The chunks of ``ranked`` (best first) that a metric reads: the top ``k``, or with a budget
    (``unit`` "chars" or "tokens") the longest prefix whose lengths together fit ``k``.

    The budget rule of docs/semantics.md: the first chunk that would overflow the budget and every later
    one are left out (a first chunk longer than the budget: nothing is read). Tokens are
    :func:`rag_eval._core.tokens.count_words` of the chunk's text, as the evidence metrics count them.
    """
    if unit is None:
        return list(ranked[:k])
    cache = {} if token_cache is None else token_cache
    used = 0
    read: list[Span] = []
    for span in ranked:
        doc, start, end, _ = span
        if unit == "chars":
            size = end - start
        else:
            key = (doc, start, end)
            if key not in cache:
                cache[key] = count_words(documents[doc][start:end])
            size = cache[key]
        if used + size > k:
            break
        used += size
        read.append(span)
    return read


def mean_context_size(
    spans: Mapping[str, Sequence[tuple[str, int, int, float]]],
    documents: Mapping[str, str],
    query_ids: Sequence[str],
    k: int,
    token_cache: dict[tuple[str, int, int], int] | None = None,
    unit: str | None = None,
) -> ContextSize:
    """Mean over ``query_ids`` of the summed length of the spans a metric reads (a query without spans: 0):
    the top ``k``, or with ``unit`` the ones that fit a budget of ``k`` (:func:`chunks_read`).

    Spans are ordered by the ranking rule (score desc, chunk id desc) before the cut. Tokens are
    :func:`rag_eval._core.tokens.count_words` of ``document[start:end]``; ``token_cache`` (keyed by span)
    lets variants that share a chunking count each chunk once.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if not query_ids:
        return ContextSize(k, math.nan, math.nan, unit)
    cache = {} if token_cache is None else token_cache
    chars = tokens = 0
    for qid in query_ids:
        for doc, start, end, _ in chunks_read(ranked_spans(spans.get(qid, ())), documents, k, unit, cache):
            chars += end - start
            key = (doc, start, end)
            if key not in cache:
                cache[key] = count_words(documents[doc][start:end])
            tokens += cache[key]
    return ContextSize(k, chars / len(query_ids), tokens / len(query_ids), unit)


def ranked_spans(items: Sequence[Span]) -> list[Span]:
    """``items`` best first by the one ranking rule (score desc, chunk id desc), a chunk listed twice once."""
    by_id = {chunk_id(doc, start, end): (doc, start, end, float(score)) for doc, start, end, score in items}
    return [by_id[key] for key, _ in ranked({key: span[3] for key, span in by_id.items()})]
