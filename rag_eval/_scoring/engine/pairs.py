"""Matching (query, doc id) pairs of two tables: a 64-bit hash of each pair, every match confirmed on the ids.

Rows are matched on a 64-bit hash of (query, doc id) and every match is then confirmed on
the ids themselves, so a hash collision can cost time but never change a result. The same
index refuses a table that lists one document twice for a query (trec_eval refuses it too).
Everything here works in place and a block at a time where it can: it runs on millions of
judgements, and its temporaries set the peak memory of reading a large run.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np

from rag_eval._core.errors import InputFormatError
from rag_eval._scoring.engine.flat_table import FlatTable, packed

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_SCRATCH_ROWS = 1 << 16  # rows per step where a whole-length temporary would add to the peak memory
_LOOKUP_BLOCK_ROWS = 1 << 20  # judgements looked up at once (sorted within a block for locality)


def doc_hashes(table: FlatTable, kind: str, rows: np.ndarray | None = None) -> np.ndarray:
    """64-bit hash of each row's doc id (``kind`` "packed" or "str")."""
    cached = table._cache.get(("hash", kind))
    if cached is not None:
        return cached if rows is None else cached[rows]
    if kind == "packed":
        return packed(table).hashes(rows)
    dicts = table._cache.get("dicts")
    if rows is None and dicts is not None and table._docs is None:
        # str caches its hash; walking the dicts is faster than walking an object array.
        return np.fromiter(map(hash, chain.from_iterable(dicts)), dtype=np.int64, count=len(table)).view(np.uint64)
    docs = table.docs if rows is None else table.docs[rows]
    return np.fromiter(map(hash, docs), dtype=np.int64, count=len(docs)).view(np.uint64)


def query_mix(query_codes: np.ndarray) -> np.ndarray:
    """The query's part of a (query, doc) pair hash, which is this XOR the doc hash (doc
    hashes are well mixed already); a new array: code + 1 times the golden ratio."""
    h = query_codes.astype(np.uint64)
    h += np.uint64(1)
    h *= _GOLDEN
    return h


@dataclass(frozen=True)
class PairIndex:
    """Sorted (pair hash, row) keys of a table: high bits hash, low ``shift`` bits row."""

    kind: str
    shift: int
    keys: np.ndarray  # uint64, sorted


def pair_index(table: FlatTable, kind: str, what: str = "run") -> PairIndex:
    """The table's :class:`PairIndex` (cached); raises if a (query, doc) pair repeats."""
    cached = table._cache.get(("pairs", kind))
    if cached is not None:
        return cached
    n = len(table)
    shift = max(1, (n - 1).bit_length())
    # The keys are built in the doc hashes' own memory (the cache lets go of them: the index
    # holds what matters), a block at a time, so that no second array of the table's length
    # exists at once: this is the peak of reading a large run.
    keys = doc_hashes(table, kind)
    table._cache.pop(("hash", kind), None)
    step = np.uint64(shift)
    for lo in range(0, n, _SCRATCH_ROWS):
        hi = min(lo + _SCRATCH_ROWS, n)
        part = keys[lo:hi]
        part ^= query_mix(table.query_codes[lo:hi])
        part >>= step
        part <<= step
        part |= np.arange(lo, hi, dtype=np.uint64)
    keys.sort()
    index = PairIndex(kind, shift, keys)
    _check_repeats(table, index, what)
    table._cache[("pairs", kind)] = index
    return index


def _check_repeats(table: FlatTable, index: PairIndex, what: str) -> None:
    if index.keys.size < 2:
        return
    high = index.keys >> np.uint64(index.shift)
    same = np.flatnonzero(high[1:] == high[:-1])
    if not same.size:
        return
    # Equal hashes: a repeated pair or a collision. Compare the ids themselves.
    mask = np.uint64((1 << index.shift) - 1)
    rows = np.unique(np.concatenate((index.keys[same], index.keys[same + 1])) & mask).astype(np.int64)
    codes = table.query_codes[rows].tolist()
    docs = table.docs[rows].tolist() if index.kind == "str" else packed(table).to_bytes(rows)
    seen: dict[tuple, int] = {}
    repeated = []
    for row, code, doc in zip(rows.tolist(), codes, docs):
        if (code, doc) in seen:
            repeated.append(row)
        else:
            seen[(code, doc)] = row
    if repeated:
        if table.locate_error is not None:
            table.locate_error()
        row = min(repeated)
        raise InputFormatError(
            f"{what}: query {table.query_keys[table.query_codes[row]]!r} lists doc {table.docs[row]!r} twice; "
            "each document may appear once per query"
        )


def find_pairs(
    index: PairIndex, table: FlatTable, query_codes: np.ndarray, other: FlatTable, other_rows: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """The (query, doc) pairs of ``other`` that ``table`` holds too.

    ``other_rows`` selects rows of ``other`` (None: all) and ``query_codes`` gives
    their queries as codes of ``table``. Returns (positions in ``other_rows``, rows of
    ``table``) of the matches, in no particular order. Built to stay lean on memory:
    millions of judgements are looked up a block at a time, so that the lookup's
    temporaries stay small next to the tables.
    """
    m = other.values.size if other_rows is None else other_rows.size
    if m <= _LOOKUP_BLOCK_ROWS:
        return _find_pairs_block(index, table, query_codes, other, other_rows)
    found_where, found_mine = [], []
    for lo in range(0, m, _LOOKUP_BLOCK_ROWS):
        hi = min(lo + _LOOKUP_BLOCK_ROWS, m)
        rows = np.arange(lo, hi, dtype=np.int64) if other_rows is None else other_rows[lo:hi]
        where, mine = _find_pairs_block(index, table, query_codes[lo:hi], other, rows)
        found_where.append(where + lo)
        found_mine.append(mine)
    return np.concatenate(found_where), np.concatenate(found_mine)


def _find_pairs_block(
    index: PairIndex, table: FlatTable, query_codes: np.ndarray, other: FlatTable, other_rows: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`find_pairs` for one block of rows."""
    m = other.values.size if other_rows is None else other_rows.size
    none = np.empty(0, dtype=np.int64)
    if m == 0 or index.keys.size == 0:
        return none, none
    low = np.uint64((1 << index.shift) - 1)
    hashes = doc_hashes(other, index.kind, other_rows)
    needles = hashes.copy() if other_rows is None else hashes
    del hashes
    for lo in range(0, m, _SCRATCH_ROWS):  # the pair hashes, in place
        needles[lo : lo + _SCRATCH_ROWS] ^= query_mix(query_codes[lo : lo + _SCRATCH_ROWS])
    high = ~low
    needles &= high  # the pair hash's high bits, where the index keys hold them
    # (Every step below works in place where it can: this runs on millions of judgements.)
    if m <= 1 << index.shift:
        # Sort (hash, position) keys rather than argsort the hashes: a plain sort is much faster.
        for lo in range(0, m, _SCRATCH_ROWS):
            needles[lo : lo + _SCRATCH_ROWS] |= np.arange(lo, min(lo + _SCRATCH_ROWS, m), dtype=np.uint64)
        needles.sort()
        order = (needles & low).view(np.int64)
        needles &= high
    else:
        order = np.argsort(needles)
        needles = needles[order]
    at = np.searchsorted(index.keys, needles)
    inside = at < index.keys.size
    np.minimum(at, index.keys.size - 1, out=at)
    for lo in range(0, m, _SCRATCH_ROWS):
        candidate = index.keys[at[lo : lo + _SCRATCH_ROWS]]
        candidate &= high
        inside[lo : lo + _SCRATCH_ROWS] &= candidate == needles[lo : lo + _SCRATCH_ROWS]
    hit_at = np.flatnonzero(inside)
    del inside, candidate, needles
    if not hit_at.size:
        return none, none
    at = at[hit_at]  # from here on only the hits are kept
    where = order[hit_at]
    del order, hit_at
    mine = (index.keys[at] & low).view(np.int64)
    theirs = where if other_rows is None else other_rows[where]
    same = table.query_codes[mine] == query_codes[where]
    same &= same_ids(table, mine, other, theirs, index.kind)
    if same.all():
        return where, mine
    # A hash shared by different pairs (a collision): look through all rows with that hash.
    extra_where, extra_mine = [], []
    for k in np.flatnonzero(~same).tolist():
        j = int(at[k])
        needle = index.keys[j] & high
        position = int(where[k])
        theirs_row = np.array([position if other_rows is None else int(other_rows[position])])
        while j < index.keys.size and (index.keys[j] & high) == needle:
            row = np.array([int(index.keys[j] & low)])
            same_query = table.query_codes[row[0]] == query_codes[position]
            if same_query and same_ids(table, row, other, theirs_row, index.kind)[0]:
                extra_where.append(position)
                extra_mine.append(int(row[0]))
                break
            j += 1
    return (
        np.concatenate((where[same], np.array(extra_where, dtype=np.int64))),
        np.concatenate((mine[same], np.array(extra_mine, dtype=np.int64))),
    )


def same_ids(a: FlatTable, rows_a: np.ndarray, b: FlatTable, rows_b: np.ndarray, kind: str) -> np.ndarray:
    """Whether doc ``a[rows_a]`` equals doc ``b[rows_b]``, elementwise."""
    if kind == "str":
        return np.asarray(a.docs[rows_a] == b.docs[rows_b], dtype=bool)
    return packed(a).equal(rows_a, packed(b), rows_b)


def check_unique_pairs(table: FlatTable, what: str) -> None:
    """Reject the same document twice for one query (trec_eval refuses it too)."""
    pair_index(table, "packed" if table.packed_docs is not None else "str", what)
