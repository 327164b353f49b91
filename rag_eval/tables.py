"""Runs and judgements as flat columns, built from dicts, DataFrames or files.

Evaluation works on columns (query code, doc id, value) rather than nested dicts,
so that sorting and joining happen in numpy for all queries at once. Building the
columns is also where input is checked: a NaN score, a non-numeric grade or the
same document twice in one query is an error naming the query and the document.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import Any, Mapping

import numpy as np

from rag_eval.errors import InputFormatError


@dataclass(frozen=True)
class FlatTable:
    """Rows of (query, doc id, value); ``query_codes`` index into ``query_keys``.

    For a run the value is the retrieval score, for judgements the grade.
    """

    query_keys: list[str]
    query_codes: np.ndarray  # int64, one per row
    docs: np.ndarray  # object array of str, one per row
    values: np.ndarray  # float64, one per row

    def __len__(self) -> int:
        return int(self.values.size)


def from_nested(data: Mapping[Any, Mapping[Any, Any]], what: str) -> FlatTable:
    """Flatten ``{qid: {doc_id: value}}`` without a Python loop per row.

    ``what`` is "run" or "judgements" and appears in error messages.
    """
    if not isinstance(data, Mapping):
        raise InputFormatError(f"{what}: expected a mapping {{query_id: {{doc_id: value}}}}, got {type(data).__name__}")
    inner = list(data.values())
    for qid, docs in zip(data, inner):
        if not isinstance(docs, Mapping):
            raise InputFormatError(
                f"{what}: query {qid!r}: expected a mapping {{doc_id: value}}, got {type(docs).__name__}"
            )
    query_keys = [_as_id(q) for q in data]
    lengths = np.fromiter((len(d) for d in inner), dtype=np.int64, count=len(inner))
    total = int(lengths.sum())
    docs = np.fromiter(chain.from_iterable(inner), dtype=object, count=total)
    if total and not all(type(d) is str for d in docs[: min(total, 64)]):
        docs = np.array([_as_id(d) for d in docs], dtype=object) if total else docs
    try:
        values = np.fromiter(chain.from_iterable(d.values() for d in inner), dtype=np.float64, count=total)
    except (TypeError, ValueError):
        values = None
    codes = np.repeat(np.arange(len(query_keys), dtype=np.int64), lengths)
    table = FlatTable(query_keys, codes, docs, values if values is not None else np.empty(0))
    if values is None:
        _raise_first_non_numeric(data, what)
    check_values(table, what)
    return table


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
    try:
        values = pd.to_numeric(frame[value_column], errors="raise").to_numpy(dtype=np.float64)
    except (TypeError, ValueError):
        bad = pd.to_numeric(frame[value_column], errors="coerce").isna() & frame[value_column].notna()
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise InputFormatError(
            f"{what}: row {row}: {value_column} {frame[value_column].iloc[row]!r} is not a number"
        ) from None
    table = FlatTable([str(u) for u in uniques], codes.astype(np.int64), docs, values)
    check_values(table, what)
    check_unique_pairs(table, what)
    return table


def check_values(table: FlatTable, what: str) -> None:
    """Reject NaN (and infinite grades), naming the query and document."""
    bad = np.isnan(table.values)
    if what == "judgements":
        bad |= np.isinf(table.values)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        label = "grade" if what == "judgements" else "score"
        raise InputFormatError(
            f"{what}: query {table.query_keys[table.query_codes[row]]!r}, doc {table.docs[row]!r}: "
            f"{label} is {table.values[row]!r}; every {label} must be a finite number"
        )


def check_unique_pairs(table: FlatTable, what: str) -> None:
    """Reject the same document twice for one query (trec_eval refuses it too)."""
    import pandas as pd

    if len(table) == 0:
        return
    doc_codes, _ = pd.factorize(table.docs)
    keys = table.query_codes * (int(doc_codes.max()) + 1) + doc_codes
    duplicated = pd.Series(keys).duplicated().to_numpy()
    if duplicated.any():
        row = int(np.flatnonzero(duplicated)[0])
        raise InputFormatError(
            f"{what}: query {table.query_keys[table.query_codes[row]]!r} lists doc {table.docs[row]!r} twice; "
            "each document may appear once per query"
        )


def _as_id(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return str(value)
    raise InputFormatError(f"ids must be strings (or integers), got {value!r}")


def _raise_first_non_numeric(data: Mapping, what: str) -> None:
    label = "grade" if what == "judgements" else "score"
    for qid, docs in data.items():
        for doc, value in docs.items():
            try:
                float(value)
                if isinstance(value, (str, bytes, bool)) or value is None:
                    raise TypeError
            except (TypeError, ValueError):
                raise InputFormatError(
                    f"{what}: query {qid!r}, doc {doc!r}: {label} {value!r} is not a number"
                ) from None
    raise InputFormatError(f"{what}: a {label} is not a number")  # pragma: no cover - defensive
