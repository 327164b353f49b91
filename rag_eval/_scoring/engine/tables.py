"""Runs and judgements as flat columns, built from dicts, DataFrames or files.

Evaluation works on columns (query code, doc id, value) rather than nested dicts,
so that sorting and joining happen in numpy for all queries at once. Building the
columns is also where input is checked: a NaN score, a non-numeric grade or the
same document twice in one query is an error naming the query and the document.

Doc ids are held either as Python strings (``docs``, from dicts and DataFrames)
or, for tables read from files, as :class:`~rag_eval._scoring.engine.packed_ids.PackedIds`
(``packed_docs``: the UTF-8 bytes of each id in uint64 words, ids of any length).
Rows are matched on a 64-bit hash of (query, doc id) and every match is then
confirmed on the ids themselves, so a hash collision can cost time but never
change a result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from collections.abc import Mapping as AbcMapping
from dataclasses import dataclass
from itertools import chain, repeat
from numbers import Real
from operator import contains, methodcaller
from typing import Any, NoReturn

import numpy as np

from rag_eval._core.errors import InputFormatError
from rag_eval._core.ids import any_control_characters, id_problem, shown_id
from rag_eval._core.ranking import id_rank
from rag_eval._scoring.engine.packed_ids import PackedIds

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_VALUES = methodcaller("values")
_ID_RULE = "ids must be non-empty and may not hold control characters"
_SCRATCH_ROWS = 1 << 16  # rows per step where a whole-length temporary would add to the peak memory
_LOOKUP_BLOCK_ROWS = 1 << 20  # judgements looked up at once (sorted within a block for locality)
_FIXED_WIDTH_CHARS = 1 << 22  # byte_order_keys copies str ids to one fixed width up to this many characters


class FlatTable:
    """Rows of (query, doc id, value); ``query_codes`` index into ``query_keys``.

    For a run the value is the retrieval score, for judgements the grade. Doc ids
    are ``docs`` (object array of str) or ``packed_docs`` (packed UTF-8, see the
    module docstring); ``docs`` is decoded from the packed ids on first use.
    ``locate_error``, when given, re-reads the source and raises an error naming
    the exact place of a problem found later (a duplicate pair).
    """

    __slots__ = ("_cache", "_doc_source", "_docs", "locate_error", "packed_docs", "query_codes", "query_keys", "values")

    def __init__(
        self,
        query_keys: list[str],
        query_codes: np.ndarray,
        docs: np.ndarray | None = None,
        values: np.ndarray | None = None,
        *,
        packed_docs: PackedIds | None = None,
        doc_hashes: np.ndarray | None = None,
        doc_source: Callable[[], np.ndarray] | None = None,
        locate_error: Callable[[], None] | None = None,
        all_keys_have_rows: bool = False,
    ) -> None:
        if docs is None and packed_docs is None and doc_source is None:
            raise ValueError("FlatTable needs docs, packed_docs or doc_source")
        self.query_keys = query_keys
        self.query_codes = query_codes
        self.values = values if values is not None else np.empty(0)
        self.packed_docs = packed_docs
        self._docs = docs
        self._doc_source = doc_source
        self.locate_error = locate_error
        self._cache: dict = {}
        if doc_hashes is not None:  # packed_docs.hashes(), computed while the words were at hand
            self._cache[("hash", "packed")] = doc_hashes
        if all_keys_have_rows:  # every query key has a row (the keys came from the rows)
            self._cache["all_keys_have_rows"] = True

    @property
    def docs(self) -> np.ndarray:
        """Doc ids as an object array of str."""
        if self._docs is None:
            if self.packed_docs is not None:
                self._docs = self.packed_docs.decode()
            elif self._doc_source is not None:
                self._docs = self._doc_source()
            else:  # pragma: no cover - the constructor requires one of the three
                raise ValueError("FlatTable has no doc ids")
        return self._docs

    def __len__(self) -> int:
        return int(self.values.size)

    def __repr__(self) -> str:
        return f"FlatTable({len(self)} rows, {len(self.query_keys)} queries)"


def from_nested(data: Mapping[Any, Mapping[Any, Any]], what: str) -> FlatTable:
    """Flatten ``{qid: {doc_id: value}}`` without a Python loop per row.

    ``what`` is "run" or "judgements"; it appears in error messages and chooses the checks.
    Ids are str (or int, taken as their digits). Checked here, each error naming the query and the id:

    - every query id, and every doc id of judgements: the id rule of rag_eval._core.ids (non-empty, no
      control character), and UTF-8 text (a Python str may hold a lone surrogate, a file cannot);
    - the doc ids of a run are not checked here. One that has a judgement equals a checked id, and
      one that has none cannot change a number: it only takes a rank, and ties between ids are
      broken by comparing them exactly. Checking them would cost a scan of every retrieved
      document. The one id that could be taken for another, one holding a NUL character where the
      engine compares ids as packed bytes (padded with zeros: a run against judgements read from
      a file), is refused there (:func:`packed_doc_ids`). Files are always checked in full.

    Values must be numbers: a grade given as a str or a bool (``"1"``, ``True``) is refused, and so
    is a NaN or infinite grade or score (:func:`check_values`).
    """
    if not isinstance(data, AbcMapping):
        raise InputFormatError(f"{what}: expected a mapping {{query_id: {{doc_id: value}}}}, got {type(data).__name__}")
    inner = list(data.values())
    for kind in set(map(type, inner)):  # one look per type, not per query
        if not issubclass(kind, AbcMapping):
            qid = next(q for q, d in zip(data, inner) if type(d) is kind)
            raise InputFormatError(f"{what}: query {qid!r}: expected a mapping {{doc_id: value}}, got {kind.__name__}")
    query_keys = list(data)
    if not all(type(q) is str for q in query_keys):
        query_keys = [_as_id(q) for q in query_keys]
    lengths = np.fromiter(map(len, inner), dtype=np.int64, count=len(inner))
    total = int(lengths.sum())
    full = what != "run"  # the doc ids of judgements are checked in full, a run's are not (see above)
    # One scan of the ids joined, in C calls of 64 queries each. TypeError: some doc id is not a
    # str; those are converted below.
    try:
        batches = (chain.from_iterable(inner[i : i + 64]) for i in range(0, len(inner), 64))
        clean = not full or _valid_ids(map("".join, batches))
        as_given = True
    except TypeError:
        as_given = False
    if as_given:
        empty = "" in query_keys or (full and any(map(contains, inner, repeat(""))))
        if empty or not (clean and _valid_ids(query_keys)):
            _raise_first_bad_id(query_keys, inner, what)

        # Doc ids are only needed for a few rows (matches, ties, messages): build them on demand.
        def docs_of_dicts() -> np.ndarray:
            return np.fromiter(chain.from_iterable(inner), dtype=object, count=total)

        docs, source = None, docs_of_dicts
    else:
        docs, source = np.array([_as_id(d) for d in chain.from_iterable(inner)], dtype=object), None
        clean = not full or (_valid_ids(docs) and all(map(len, docs)))
        if not (clean and _valid_ids(query_keys)) or "" in query_keys:
            _raise_first_bad_id(query_keys, inner, what)
    values_given: Iterable[Any] = chain.from_iterable(map(_VALUES, inner))
    if what == "judgements":  # a grade must be a number (np.fromiter would read "1" and True as 1.0)
        values_given = list(values_given)  # (a list and two scans of it cost what two walks of the dicts do)
        if not _all_numbers(values_given):
            _raise_first_non_numeric(data, what)
    try:
        values = np.fromiter(values_given, dtype=np.float64, count=total)
    except (TypeError, ValueError):
        values = None
    del values_given
    codes = np.repeat(np.arange(len(query_keys), dtype=np.int32 if total < 2**31 else np.int64), lengths)
    table = FlatTable(query_keys, codes, docs, values if values is not None else np.empty(0), doc_source=source)
    table._cache["all_keys_have_rows"] = bool(lengths.all())
    table._cache["lengths"] = lengths
    if as_given:
        table._cache["dicts"] = inner  # the inner dicts, as given, in the order of query_keys
    if values is None:
        _raise_first_non_numeric(data, what)
    check_values(table, what)
    return table


def _valid_ids(ids: Iterable[str]) -> bool:
    """Whether the ids (or ids joined) are UTF-8 text without control characters (empty ids are not seen)."""
    text = "".join(ids)
    if text.isascii():  # (a flag of the str, free) the usual case: two reductions, no temporary array
        data = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
        return not data.size or (int(data.min()) >= 0x20 and int(data.max()) < 0x7F)
    try:
        text.encode("utf-8")  # only non-ASCII text can hold a lone surrogate
    except UnicodeEncodeError:
        return False
    return not any_control_characters((text,))


def _id_problem(value: str) -> str | None:
    """rag_eval._core.ids.id_problem, and a lone surrogate (a Python str may hold one; UTF-8 text cannot)."""
    problem = id_problem(value)
    if problem is None:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as failure:
            return (
                f"holds a lone surrogate U+{ord(value[failure.start]):04X} at position {failure.start + 1}, "
                "which is not UTF-8 text"
            )
    return problem


def _raise_first_bad_id(query_keys: list[str], inner: list[Mapping[Any, Any]], what: str) -> NoReturn:
    """Raise for the first id, in the order given, that breaks the checks of :func:`from_nested`."""
    full = what != "run"
    for qid, per_query in zip(query_keys, inner):
        problem = _id_problem(qid)
        if problem is not None:
            raise InputFormatError(f"{what}: query id {shown_id(qid)} {problem}; {_ID_RULE}")
        for doc in per_query if full else ():
            doc = _as_id(doc)
            problem = _id_problem(doc)
            if problem is not None:
                raise InputFormatError(f"{what}: query {shown_id(qid)}: doc id {shown_id(doc)} {problem}; {_ID_RULE}")
    raise RuntimeError("no id breaks the rule")  # pragma: no cover - called only when one does


def from_dataframe(frame: Any, value_column: str, what: str) -> FlatTable:
    """Columns ``qid``, ``doc_id`` and ``value_column`` of a pandas DataFrame."""
    import pandas as pd

    missing = [c for c in ("qid", "doc_id", value_column) if c not in frame.columns]
    if missing:
        raise InputFormatError(
            f"{what}: DataFrame lacks column(s) {', '.join(missing)}; expected qid, doc_id, {value_column}"
        )
    codes, uniques = pd.factorize(frame["qid"].astype(str), sort=False)
    docs = frame["doc_id"].astype(str).to_numpy(dtype=object)
    column = frame[value_column]
    if what == "judgements" and column.dtype.kind not in "iuf":  # bool, or objects that may be str
        kinds = column.map(type).to_numpy(dtype=object)
        bad = [row for row, kind in enumerate(kinds) if not _is_number_type(kind)]
        if bad:
            raise InputFormatError(
                f"{what}: row {bad[0]}: {value_column} {_short(column.iloc[[bad[0]]].tolist()[0])} is not a number; "
                f"give each {value_column} as an int or a float"
            )
    try:
        values = pd.to_numeric(column, errors="raise").to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        bad = pd.to_numeric(column, errors="coerce").isna() & column.notna()
        row = int(np.flatnonzero(bad.to_numpy())[0])
        shown = _short(column.iloc[row])
        raise InputFormatError(f"{what}: row {row}: {value_column} {shown} is not a number") from None
    query_keys = [str(u) for u in uniques]
    # A DataFrame is checked in full, run or judgements (pandas has made an object per id already).
    if not (_valid_ids(query_keys) and _valid_ids(docs)) or "" in query_keys or not all(map(len, docs)):
        for row, (code, doc) in enumerate(zip(codes.tolist(), docs.tolist())):
            for kind, value in (("query id", query_keys[code]), ("doc id", doc)):
                problem = _id_problem(value)
                if problem is not None:
                    raise InputFormatError(f"{what}: row {row}: {kind} {shown_id(value)} {problem}; {_ID_RULE}")
    table = FlatTable(query_keys, codes.astype(np.int64), docs, values)
    check_values(table, what)
    check_unique_pairs(table, what)
    return table


def to_nested(table: FlatTable) -> dict[str, dict[str, float]]:
    """``FlatTable`` back to ``{qid: {doc_id: value}}`` (for small data: a Python object per row)."""
    out: dict[str, dict[str, float]] = {}
    for code, doc, value in zip(table.query_codes.tolist(), table.docs.tolist(), table.values.tolist()):
        out.setdefault(table.query_keys[code], {})[doc] = value
    return out


def check_values(table: FlatTable, what: str) -> None:
    """Reject NaN and infinite grades and scores, naming the query and document.

    trec_eval cannot rank by an infinite score or sum an infinite gain, and results files are
    strict JSON, which has no Infinity: every value must be a finite number.
    """
    bad = ~np.isfinite(table.values)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        label = "grade" if what == "judgements" else "score"
        raise InputFormatError(
            f"{what}: query {shown_id(table.query_keys[table.query_codes[row]])}, doc {shown_id(table.docs[row])}: "
            f"{label} is {float(table.values[row])!r}; every {label} must be a finite number"
        )


def check_unique_pairs(table: FlatTable, what: str) -> None:
    """Reject the same document twice for one query (trec_eval refuses it too)."""
    pair_index(table, "packed" if table.packed_docs is not None else "str", what)


# ---- hashing and matching (query, doc) pairs -------------------------------------------


def doc_hashes(table: FlatTable, kind: str, rows: np.ndarray | None = None) -> np.ndarray:
    """64-bit hash of each row's doc id (``kind`` "packed" or "str")."""
    cached = table._cache.get(("hash", kind))
    if cached is not None:
        return cached if rows is None else cached[rows]
    if kind == "packed":
        return _packed(table).hashes(rows)
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
    docs = table.docs[rows].tolist() if index.kind == "str" else _packed(table).to_bytes(rows)
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
    return _packed(a).equal(rows_a, _packed(b), rows_b)


def pack_doc_ids(table: FlatTable, what: str) -> PackedIds:
    """The table's doc ids as :class:`PackedIds`, packing str ids (dicts, DataFrames) on first use.

    Packed ids are UTF-8 padded with zero bytes, so an id holding a NUL character would equal the
    id without it, and a lone surrogate has no UTF-8 form: such an id is refused here, naming its
    query (the doc ids of a run given as dicts are not checked before, see :func:`from_nested`).
    """
    if table.packed_docs is None:
        docs = table.docs
        try:
            table.packed_docs = PackedIds.from_strings(docs)
        except ValueError:  # a NUL, or a lone surrogate (UnicodeEncodeError)
            for row, doc in enumerate(docs.tolist()):
                problem = _unpackable(doc)
                if problem is not None:
                    qid = table.query_keys[table.query_codes[row]]
                    raise InputFormatError(
                        f"{what}: query {shown_id(qid)}: doc id {shown_id(doc)} {problem}; {_ID_RULE}"
                    ) from None
            raise
    return table.packed_docs


def _unpackable(doc: str) -> str | None:
    if "\x00" in doc:
        return f"holds the control character U+0000 at position {doc.index(chr(0)) + 1}"
    try:
        doc.encode("utf-8")
    except UnicodeEncodeError:
        return _id_problem(doc)
    return None


def _packed(table: FlatTable) -> PackedIds:
    """The table's packed doc ids (the join packs both sides before it compares them packed)."""
    if table.packed_docs is None:  # pragma: no cover - a caller's mistake, not the user's
        raise ValueError("this table's doc ids are not packed")
    return table.packed_docs


def byte_order_keys(table: FlatTable, rows: np.ndarray) -> np.ndarray:
    """Rank of each row's doc id in ascending byte order (UTF-8, as C's strcmp) among ``rows``.

    This is the tie-break of rag_eval._core.ranking (equal scores: id descending), done on
    many rows at once; tests/test_kernels.py checks it against ``ranking.ranked_ids``.
    """
    if table.packed_docs is not None:
        return table.packed_docs.byte_rank(rows)
    # Comparing str by code point is the same as comparing their UTF-8 bytes.
    ids = table.docs[rows]
    if ids.size and ids.size * max(map(len, ids)) > _FIXED_WIDTH_CHARS:
        return id_rank(ids)  # long ids: no fixed-width copy of them all at the longest's width
    if ids.size and "\x00" in "".join(ids):
        # A fixed-width numpy str drops trailing NULs ('d\x00' would tie with 'd'): compare exactly.
        # (A run's doc ids given as dicts are not checked for NULs; these rows are the ones ranked.)
        return id_rank(ids)
    _, rank = np.unique(ids.astype(str), return_inverse=True)
    return rank.ravel().astype(np.int64)


def _as_id(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return str(value)
    raise InputFormatError(f"ids must be strings (or integers), got {value!r}")


def _all_numbers(values: list[Any]) -> bool:
    """Whether every value is a number (:func:`_is_number_type`), in C-level passes for the usual cases."""
    kinds = list(map(type, values))
    # Counting by identity is cheaper than a set of the types (no hashing): grades are usually all int.
    common = kinds.count(int)
    if common < len(kinds):
        common += kinds.count(float)
    return common == len(kinds) or all(map(_is_number_type, set(kinds)))


def _is_number_type(kind: type) -> bool:
    """Whether values of ``kind`` are numbers: int, float, numpy numbers (any real number), never a bool or a str."""
    return issubclass(kind, Real) and not issubclass(kind, (bool, np.bool_))


def _raise_first_non_numeric(data: Mapping, what: str) -> NoReturn:
    label = "grade" if what == "judgements" else "score"
    for qid, docs in data.items():
        for doc, value in docs.items():
            if not _is_number_type(type(value)) and (what == "judgements" or not _converts(value)):
                raise InputFormatError(
                    f"{what}: query {qid!r}, doc {doc!r}: {label} {_short(value)} is not a number; "
                    f"give each {label} as an int or a float"
                )
    raise InputFormatError(f"{what}: a {label} is not a number")  # pragma: no cover - defensive


def _converts(value: Any) -> bool:
    """Whether a run score of another type still converts to float64 (a numeric str does: scores are not typed)."""
    try:
        np.float64(value)
    except (TypeError, ValueError):
        return False
    return not isinstance(value, (bytes, bool)) and value is not None


def _short(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
