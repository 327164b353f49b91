"""Runs and judgements as flat columns (:class:`FlatTable`), built from dicts and DataFrames, and checked.

Building the columns is where input is checked: a NaN score, a non-numeric grade, an id that
breaks the rule of rag_eval._core.ids or the same document twice in one query is an error naming
the query and the document. Tables read from files are built by rag_eval._scoring.engine.reader
and checked with the same functions; pairs are matched by rag_eval._scoring.engine.pairs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from collections.abc import Mapping as AbcMapping
from itertools import chain, repeat
from numbers import Real
from operator import contains, methodcaller
from typing import Any, NoReturn

import numpy as np

from rag_eval._core.errors import InputFormatError
from rag_eval._core.ids import any_control_characters, id_problem, shown_id
from rag_eval._scoring.engine.flat_table import FlatTable
from rag_eval._scoring.engine.packed_ids import PackedIds
from rag_eval._scoring.engine.pairs import check_unique_pairs

__all__ = ["FlatTable", "check_unique_pairs", "check_values", "from_dataframe", "from_nested", "pack_doc_ids", "to_nested"]

_VALUES = methodcaller("values")
_ID_RULE = "ids must be non-empty and may not hold control characters"


def from_nested(data: Mapping[Any, Mapping[Any, Any]], what: str) -> FlatTable:
    """Flatten ``{qid: {doc_id: value}}`` without a Python loop per row.

    ``what`` is "run" or "judgements"; it appears in error messages and chooses the checks.
    Ids are str (or int, taken as their digits). Checked here, each error naming the query and the id:

    - every query id, and every doc id of judgements: the id rule of rag_eval._core.ids (non-empty, no
      control character), and UTF-8 text (a Python str may hold a lone surrogate, a file cannot);
    - the doc ids of a run are not checked here. One that has a judgement equals a checked id, and
      one that has none cannot change a number: it only takes a rank, and ties between ids are
      broken by comparing them exactly. Checking them would cost a scan of every retrieved
      document; only each query's first and last ids are looked at, to convert a run of int ids. The one id that could be taken for another, one holding a NUL character where the
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
    # str; those are converted below. A run's ids are not scanned (a tenth of the time of evaluate()): the
    # first and last id of each query tell whether they are str (int ids, as 5 for "5", must be converted, or no
    # judged "5" would match); docs/semantics.md says so.
    try:
        batches = (chain.from_iterable(inner[i : i + 64]) for i in range(0, len(inner), 64))
        clean = not full or _valid_ids(map("".join, batches))
        answered = list(filter(None, inner))
        ends = chain(map(next, map(iter, answered)), map(next, map(reversed, answered)))
        as_given = full or set(map(type, ends)) <= {str}
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
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int past the largest float64
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


def _raise_first_bad_id(query_keys: list[str], inner: list[Mapping[Any, Any]], what: str) -> NoReturn:
    """Raise for the first id, in the order given, that breaks the checks of :func:`from_nested`."""
    full = what != "run"
    for qid, per_query in zip(query_keys, inner):
        problem = id_problem(qid)
        if problem is not None:
            raise InputFormatError(f"{what}: query id {shown_id(qid)} {problem}; {_ID_RULE}")
        for doc in per_query if full else ():
            doc = _as_id(doc)
            problem = id_problem(doc)
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
    for column_name, kind in (("qid", "query id"), ("doc_id", "doc id")):
        missing_ids = frame[column_name].isna().to_numpy()
        if missing_ids.any():  # astype(str) would make a null the id "None" or "nan", or fail
            raise InputFormatError(f"{what}: row {int(np.flatnonzero(missing_ids)[0])}: the {kind} is missing "
                                   f"(null); give every row a {column_name}")
        ids = frame[column_name]
        if ids.dtype.kind == "f" or (ids.dtype.kind == "O" and float in set(map(type, ids.tolist()))):
            row = next(i for i, value in enumerate(ids.tolist()) if isinstance(value, float))
            # astype(str) would make 5.0 the id "5.0", which no judged 5 matches (dicts refuse a float id too)
            raise InputFormatError(f"{what}: row {row}: the {kind} {float(ids.iloc[row])!r} is a float; give ids as text "
                                   "or integers")
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
    except OverflowError:  # an int past the largest float64
        row = next(i for i, value in enumerate(column.tolist()) if not _converts(value))
        raise InputFormatError(f"{what}: row {row}: {value_column} {_short(column.iloc[row])} is too large for a "
                               "float64 (at most about 1.8e308)") from None
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
                problem = id_problem(value)
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
        return id_problem(doc)
    return None


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
            if isinstance(value, int) and not _converts(value):
                raise InputFormatError(
                    f"{what}: query {qid!r}, doc {doc!r}: {label} {_short(value)} is too large for a float64 "
                    "(at most about 1.8e308)"
                )
    raise InputFormatError(f"{what}: a {label} is not a number")  # pragma: no cover - defensive


def _converts(value: Any) -> bool:
    """Whether a run score of another type still converts to float64 (a numeric str does: scores are not typed)."""
    try:
        np.float64(value)
    except (TypeError, ValueError, OverflowError):
        return False
    return not isinstance(value, (bytes, bool)) and value is not None


def _short(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
