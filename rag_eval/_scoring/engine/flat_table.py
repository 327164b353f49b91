"""The columns every table of the engine is: rows of (query, doc id, value), doc ids as str or packed.

Evaluation works on columns (query code, doc id, value) rather than nested dicts, so that
sorting and joining happen in numpy for all queries at once. Doc ids are held either as
Python strings (``docs``, from dicts and DataFrames) or, for tables read from files, as
:class:`~rag_eval._scoring.engine.packed_ids.PackedIds` (``packed_docs``: the UTF-8 bytes of
each id in uint64 words, ids of any length). Building and checking tables is
rag_eval._scoring.engine.tables; matching their (query, doc) pairs, rag_eval._scoring.engine.pairs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rag_eval._scoring.engine.packed_ids import PackedIds


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


def packed(table: FlatTable) -> PackedIds:
    """The table's packed doc ids (the join packs both sides before it compares them packed)."""
    if table.packed_docs is None:  # pragma: no cover - a caller's mistake, not the user's
        raise ValueError("this table's doc ids are not packed")
    return table.packed_docs
