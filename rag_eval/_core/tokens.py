"""The word tokenizer: what "tokens" means when no model tokenizer is named.

A token is a run of word characters or one other non-space character
(``\\w+|[^\\w\\s]``, Unicode-aware): "don't" is 3 tokens, "日本語" is 1, an emoji is 1.
Chunk sizes and context budgets in tokens count these unless a model's own
tokenizer is configured (rag_eval._models.chunking). No data is downloaded.
"""

from __future__ import annotations

import re

WORD_TOKEN = re.compile(r"\w+|[^\w\s]")


def word_spans(text: str) -> list[tuple[int, int]]:
    """``[(start, end), ...]`` of the word tokens of ``text`` (code-point offsets)."""
    return [match.span() for match in WORD_TOKEN.finditer(text)]


def count_words(text: str) -> int:
    """Number of word tokens in ``text``."""
    return sum(1 for _ in WORD_TOKEN.finditer(text))
