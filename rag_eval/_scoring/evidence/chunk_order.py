"""The byte order of chunk ids as integer keys, without building the ids: the tie-break of span rankings.

A chunk id is ``<doc>#<start>-<end>`` (rag_eval._core.spans.chunk_id). Two of them compare, byte
by byte (UTF-8 keeps the order of code points, so exactly as Python compares the str):

- by their ``<doc>#`` parts, when neither part is a prefix of the other: the first difference
  lies inside them. The parts are equal for one document; one is a proper prefix of the other
  only when a doc id begins with another doc id and '#' ('a' and 'a#1'): then the offsets of
  one id meet the middle of the other, no key by parts exists, and :func:`chunk_order` says so
  (None) for the caller to compare the ids themselves.
- for one document, by ``<start>-<end>``: '-' sorts before every digit, so this is the order
  of the decimal strings of the starts, then of the ends, a string before any longer one it begins.
- the decimal strings of numbers below 10**19 sort as (the number left-aligned to 19 digits,
  its number of digits): "1" < "10" < "100" < "11" < "2".

Each step is a few numpy passes over the rows plus one Python sort of the distinct doc ids.
"""

from __future__ import annotations

import numpy as np

_WIDTH = 19  # digits of the largest offset, 2**63 - 1
_POWERS = 10 ** np.arange(_WIDTH + 1, dtype=np.uint64)  # 1, 10, ..., 10**19: all below 2**64


def chunk_order(doc: np.ndarray, start: np.ndarray, end: np.ndarray, doc_keys: list[str]) -> np.ndarray | None:
    """An int64 key per row, ordered as the rows' chunk ids in bytes; None where no such key exists.

    None when a doc id of the rows begins with another's id and '#', or when the key would not fit
    in an int64 (hundreds of millions of distinct offsets); the caller then compares the ids.
    """
    docs = _doc_rank(doc_keys, doc)
    if docs is None:
        return None
    offsets, n_offsets = decimal_rank(np.concatenate((start, end)))
    n_docs = int(docs.max(initial=0)) + 1
    if n_docs * n_offsets * n_offsets >= 2**62:  # pragma: no cover - beyond any real ranking
        return None
    return (docs[doc] * n_offsets + offsets[: start.size]) * n_offsets + offsets[start.size :]


def decimal_rank(values: np.ndarray) -> tuple[np.ndarray, int]:
    """(rank of each value's decimal string among the distinct values' strings, number of distinct values).

    ``values`` are int64 >= 0.
    """
    if values.size == 0:
        return np.zeros(0, dtype=np.int64), 0
    top = int(values.max())
    dense = top <= 4 * values.size + 65_536  # a table no larger than a few times the values: linear
    if dense:
        seen = np.zeros(top + 1, dtype=bool)
        seen[values] = True
        distinct = np.flatnonzero(seen)
    else:
        distinct = np.unique(values)
    digits = np.maximum(np.searchsorted(_POWERS, distinct.astype(np.uint64), side="right"), 1)
    left = distinct.astype(np.uint64) * _POWERS[_WIDTH - digits]  # below 10**19 < 2**64
    rank = np.empty(distinct.size, dtype=np.int64)
    rank[np.lexsort((digits, left))] = np.arange(distinct.size, dtype=np.int64)
    if not dense:
        return rank[np.searchsorted(distinct, values)], int(distinct.size)
    table = np.empty(top + 1, dtype=np.int64)
    table[distinct] = rank
    return table[values], int(distinct.size)


def _doc_rank(doc_keys: list[str], doc: np.ndarray) -> np.ndarray | None:
    """Rank of each used doc's ``<doc>#`` in byte order, indexed by doc code; None if one begins another."""
    used = np.zeros(len(doc_keys), dtype=bool)
    used[doc] = True
    codes = np.flatnonzero(used).tolist()
    parts = sorted(zip([doc_keys[c] + "#" for c in codes], codes))
    heads = [part for part, _ in parts]
    # Sorted, a part that begins others is followed by one of them: neighbours are enough to look at.
    if any(map(str.startswith, heads[1:], heads[:-1])):
        return None
    rank = np.zeros(len(doc_keys), dtype=np.int64)
    rank[[code for _, code in parts]] = np.arange(len(parts), dtype=np.int64)
    return rank
