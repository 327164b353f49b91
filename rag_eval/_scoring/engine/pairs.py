"""Matching (query, doc id) pairs of two tables: a 64-bit hash of each pair, every match confirmed on the ids.

Rows are matched on a 64-bit hash of (query, doc id) and every match is then confirmed on
the ids themselves, so a hash collision can cost time but never change a result. The same
index refuses a table that lists one document twice for a query (trec_eval refuses it too).
Everything here works in place and a block at a time where it can: it runs on millions of
judgements, and its temporaries set the peak memory of reading a large run.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from itertools import chain

import numpy as np

from rag_eval._core.errors import InputFormatError
from rag_eval._scoring.engine.flat_table import FlatTable, packed
from rag_eval._scoring.engine.packed_ids import mix

_SCRATCH_ROWS = 1 << 16  # rows per step where a whole-length temporary would add to the peak memory
_LOOKUP_BLOCK_ROWS = 1 << 20  # keys of the shorter index looked up at once (sorted within a block for locality)
_SPLIT_SORT_ROWS = 1 << 18  # arrays at least this long are sorted as two halves on two threads, then merged


def sort_in_place(keys: np.ndarray) -> None:
    """``keys.sort()``, as two halves sorted on two threads (numpy releases the GIL) and then merged:
    numpy's stable sort (timsort) merges two sorted runs in one pass, a tenth of a sort's time."""
    if keys.size < _SPLIT_SORT_ROWS:
        keys.sort()
        return
    half = keys.size // 2
    failure: list[BaseException] = []

    def sort_first_half() -> None:
        try:
            keys[:half].sort()
        except BaseException as error:  # pragma: no cover - (MemoryError) raised below, in the caller
            failure.append(error)

    helper = threading.Thread(target=sort_first_half, daemon=True)
    helper.start()
    keys[half:].sort()
    helper.join()
    if failure:  # pragma: no cover
        raise failure[0]
    keys.sort(kind="stable")


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


def query_parts(table: FlatTable) -> np.ndarray:
    """The query's part of each (query, doc) pair hash, by query code: a hash of the query id itself.

    A pair's hash is its doc hash XOR this (doc hashes are well mixed already). It depends on the
    query id only, not on the table's numbering of its queries: the same pair has the same hash in
    a run and in its judgements, so their sorted indexes are joined without hashing either again.
    """
    cached = table._cache.get("query_parts")
    if cached is None:
        keys = table.query_keys
        cached = mix(np.fromiter(map(hash, keys), dtype=np.int64, count=len(keys)).view(np.uint64))
        table._cache["query_parts"] = cached
    return cached


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
    parts = query_parts(table)
    for lo in range(0, n, _SCRATCH_ROWS):
        hi = min(lo + _SCRATCH_ROWS, n)
        part = keys[lo:hi]
        part ^= parts[table.query_codes[lo:hi]]
        part >>= step
        part <<= step
        part |= np.arange(lo, hi, dtype=np.uint64)
    sort_in_place(keys)
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
    run: FlatTable, run_index: PairIndex, judgements: FlatTable, judged_index: PairIndex, query_run_code: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The (query, doc) pairs of ``judgements`` that ``run`` holds too: (judgement rows, run rows), in no order.

    Both indexes are sorted by pair hash, and a pair has the same hash in both tables
    (:func:`query_parts`): each key of the shorter index is looked for in the longer one's keys
    (sorted needles: a quick search; trec_eval's test qrels repeated hold 1.47M judgements for a
    run of 600k lines) and every match is confirmed on the query (``query_run_code``: each of the
    judgements' query keys as a run code, -1 if the run has none; taken at the matched rows only) and
    the doc ids. A block at a time, so that the lookup's temporaries stay small next to the tables.
    """
    if run_index.kind != judged_index.kind:  # pragma: no cover - the caller packs both or neither
        raise ValueError("the indexes compare doc ids differently")
    run_side = _Side(run, run_index, None)
    judged_side = _Side(judgements, judged_index, query_run_code)
    needles, haystack = (
        (judged_side, run_side) if judged_index.keys.size <= run_index.keys.size else (run_side, judged_side)
    )
    found_needles, found_haystack = [], []
    for lo in range(0, needles.index.keys.size, _LOOKUP_BLOCK_ROWS):
        mine, theirs = _find_pairs_block(needles, haystack, lo)
        found_needles.append(mine)
        found_haystack.append(theirs)
    none = np.empty(0, dtype=np.int64)
    needle_rows, haystack_rows = np.concatenate([none, *found_needles]), np.concatenate([none, *found_haystack])
    return (needle_rows, haystack_rows) if needles is judged_side else (haystack_rows, needle_rows)


@dataclass(frozen=True)
class _Side:
    """A table in :func:`find_pairs`, with its pair index and its query keys as run codes (None: the run)."""

    table: FlatTable
    index: PairIndex
    key_run_codes: np.ndarray | None

    def run_codes(self, rows: np.ndarray) -> np.ndarray:
        """The query of each of ``rows`` as a run code (-1: a query the run does not have)."""
        codes = self.table.query_codes[rows]
        return codes if self.key_run_codes is None else self.key_run_codes[codes]


def _find_pairs_block(needles: _Side, haystack: _Side, lo: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`find_pairs` for the needles' keys [lo, lo + _LOOKUP_BLOCK_ROWS): (needle rows, haystack rows)."""
    none = np.empty(0, dtype=np.int64)
    keys = haystack.index.keys
    if keys.size == 0:
        return none, none
    # The hashes are compared above both indexes' row bits: a match of fewer bits than a hash has
    # is only a candidate (confirmed below).
    shift = max(needles.index.shift, haystack.index.shift)
    high = ~np.uint64((1 << shift) - 1)
    sought = needles.index.keys[lo : lo + _LOOKUP_BLOCK_ROWS] & high  # sorted, as the keys are
    at = np.searchsorted(keys, sought)
    inside = at < keys.size
    np.minimum(at, keys.size - 1, out=at)
    for start in range(0, at.size, _SCRATCH_ROWS):
        candidate = keys[at[start : start + _SCRATCH_ROWS]]
        candidate &= high
        inside[start : start + _SCRATCH_ROWS] &= candidate == sought[start : start + _SCRATCH_ROWS]
    hit_at = np.flatnonzero(inside)
    del inside, sought
    if not hit_at.size:
        return none, none
    needle_mask = np.uint64((1 << needles.index.shift) - 1)
    haystack_mask = np.uint64((1 << haystack.index.shift) - 1)
    mine = (needles.index.keys[lo + hit_at] & needle_mask).view(np.int64)
    at = at[hit_at]
    theirs = (keys[at] & haystack_mask).view(np.int64)
    same = _same_pairs(needles, mine, haystack, theirs)
    if same.all():
        return mine, theirs
    # A hash shared by different pairs (a collision): look through all haystack rows with that hash.
    extra_mine, extra_theirs = [], []
    for k in np.flatnonzero(~same).tolist():
        j = int(at[k])
        needle = keys[j] & high
        needle_row = mine[k : k + 1]
        while j < keys.size and (keys[j] & high) == needle:
            row = np.array([int(keys[j] & haystack_mask)])
            if _same_pairs(needles, needle_row, haystack, row)[0]:
                extra_mine.append(int(needle_row[0]))
                extra_theirs.append(int(row[0]))
                break
            j += 1
    return (
        np.concatenate((mine[same], np.array(extra_mine, dtype=np.int64))),
        np.concatenate((theirs[same], np.array(extra_theirs, dtype=np.int64))),
    )


def _same_pairs(a: _Side, rows_a: np.ndarray, b: _Side, rows_b: np.ndarray) -> np.ndarray:
    """Whether pair ``a[rows_a]`` equals pair ``b[rows_b]``, elementwise: the same run query, the same doc id."""
    same = a.run_codes(rows_a) == b.run_codes(rows_b)
    same &= same_ids(a.table, rows_a, b.table, rows_b, a.index.kind)
    return same


def same_ids(a: FlatTable, rows_a: np.ndarray, b: FlatTable, rows_b: np.ndarray, kind: str) -> np.ndarray:
    """Whether doc ``a[rows_a]`` equals doc ``b[rows_b]``, elementwise."""
    if kind == "str":
        return np.asarray(a.docs[rows_a] == b.docs[rows_b], dtype=bool)
    return packed(a).equal(rows_a, packed(b), rows_b)


def check_unique_pairs(table: FlatTable, what: str) -> None:
    """Reject the same document twice for one query (trec_eval refuses it too)."""
    pair_index(table, "packed" if table.packed_docs is not None else "str", what)
