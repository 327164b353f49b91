"""A JSON Lines corpus kept on disk: ids and byte offsets in memory, each passage read when it is asked for.

On the Ray engine (``execution: {engine: ray}``) a corpus need not fit in the driver's
memory: the loader indexes a ``.jsonl`` corpus in one pass (every record checked by the
same rule as a corpus held in memory, :func:`rag_eval._data.datasets.corpus.passage_from_record`)
and keeps only each passage's id and where its line begins, about 70 bytes a passage
beside the id itself. Encoding workers read the file themselves in byte ranges
(:mod:`rag_eval._execution.corpus_stream`); what the driver still reads (the passages a
report shows, the dataset fingerprint) is read line by line from the file.

A :class:`FileCorpus` is a read-only Mapping that reads as the dict a corpus in memory
is: ``corpus[doc]`` is ``{"text", "title"[, "metadata"]}`` (a read-only view), iteration
is in file order, ``in`` and ``len`` are answered from memory. If the file changes after
it was indexed, any read says so instead of handing out another passage.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from array import array
from bisect import bisect_left
from collections.abc import ItemsView, Iterator, Mapping, ValuesView
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from rag_eval._core.errors import DatasetError
from rag_eval._core.files import check_input_file, parse_json
from rag_eval._data.datasets.corpus import passage_from_record
from rag_eval._data.datasets.lines import BOM, byte_lines
from rag_eval._data.datasets.model import Problems


def streamable(path: Path) -> bool:
    """Whether a corpus file can be read at random from disk: JSON Lines (``.jsonl``), not compressed."""
    return path.suffix == ".jsonl"


class FileCorpus(Mapping[str, Mapping[str, Any]]):
    """The passages of a JSON Lines file, read from disk when looked up; build it with :meth:`index`."""

    def __init__(self, path: Path, ids: list[str], offsets: np.ndarray, stamp: tuple[int, int]) -> None:
        self.path = path
        self._ids = ids  # file order
        self._offsets = offsets  # int64, the first byte of each passage's line, file order
        self._stamp = stamp  # (size, mtime_ns) when indexed
        order = sorted(range(len(ids)), key=ids.__getitem__)
        self._sorted_ids = [ids[row] for row in order]
        self._sorted_rows = np.asarray(order, dtype=np.int64)
        self._handle: int | None = None
        self._opening = threading.Lock()  # two threads looking passages up must not both open the file

    # ------------------------------------------------------------------ building

    @classmethod
    def index(cls, path: Path, problems: Problems, what: str = "corpus file") -> FileCorpus:
        """Index ``path`` in one pass, checking every record; problems go to ``problems`` with their line."""

        check_input_file(path, what, None, DatasetError)
        stamp = _stamp(path)
        ids: list[str] = []
        offsets = array("q")  # 8 bytes a passage (a list of ints holds 36)
        never: dict[str, Any] = {}  # duplicates are found after sorting: a set of every id would double the memory
        for number, offset, record in _records(path, problems):
            found = passage_from_record(record, f"{path}:{number}", never, problems)
            if found is not None:
                ids.append(found[0])
                offsets.append(offset)
        corpus = cls(path, ids, np.frombuffer(offsets, dtype=np.int64), stamp)
        corpus._check_unique(problems)
        return corpus

    def _check_unique(self, problems: Problems) -> None:
        """A problem for each later line repeating an id (as the loader in memory says it)."""
        repeats = [
            int(self._sorted_rows[position])
            for position, (previous, current) in enumerate(itertools.pairwise(self._sorted_ids), start=1)
            if previous == current
        ]
        if not repeats:
            return
        numbers = _line_numbers(self.path, {int(self._offsets[row]) for row in repeats})
        for row in sorted(repeats):
            number = numbers[int(self._offsets[row])]
            problems.add(f"{self.path}:{number}: duplicate passage id {self._ids[row]!r}")

    # ------------------------------------------------------------------ the Mapping

    def __getitem__(self, doc_id: str) -> Mapping[str, Any]:
        row = self._row(doc_id)
        if row is None:
            raise KeyError(doc_id)
        return MappingProxyType(self._read(row))

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, str) and self._row(doc_id) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def values(self) -> ValuesView[Mapping[str, Any]]:
        """The passages in file order, read through the file once."""
        return _Values(self)

    def items(self) -> ItemsView[str, Mapping[str, Any]]:
        """``(doc_id, passage)`` in file order, read through the file once."""
        return _Items(self)

    def copy(self) -> dict[str, Mapping[str, Any]]:
        """A new dict of every passage's read-only view, in file order (the whole corpus in memory, as asked)."""
        return dict(self.items())

    def sorted_ids(self) -> list[str]:
        """The ids in sorted order (a new list; the strings are shared)."""
        return list(self._sorted_ids)

    def __repr__(self) -> str:
        return f"FileCorpus({str(self.path)!r}, {len(self):,} passages)"

    # ------------------------------------------------------------------ reading

    def _row(self, doc_id: str) -> int | None:
        position = bisect_left(self._sorted_ids, doc_id)
        if position < len(self._sorted_ids) and self._sorted_ids[position] == doc_id:
            return int(self._sorted_rows[position])
        return None

    def _read(self, row: int) -> dict[str, Any]:
        start = int(self._offsets[row])
        stop = int(self._offsets[row + 1]) if row + 1 < len(self._offsets) else self._stamp[0]
        raw = os.pread(self._open(), stop - start, start).partition(b"\n")[0]  # (blank lines may follow it)
        if start == 0:
            raw = raw.removeprefix(BOM)
        record = json.loads(raw.decode("utf-8"))  # checked when indexed; the stamp says unchanged
        found = passage_from_record(record, str(self.path), {}, Problems())
        if found is None or found[0] != self._ids[row]:
            raise self._changed()
        return found[1]

    def _open(self) -> int:
        """The file's descriptor (opened once; lookups read with pread), after checking the file is unchanged."""
        if _stamp(self.path) != self._stamp:
            raise self._changed()
        with self._opening:
            if self._handle is None:
                self._handle = os.open(self.path, os.O_RDONLY)
            return self._handle

    def _passages(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every passage in file order, read sequentially."""

        self._open()
        problems = Problems()
        rows = iter(self._ids)
        for _, _, record in _records(self.path, problems):
            found = passage_from_record(record, str(self.path), {}, problems)
            if found is None:
                continue
            if found[0] != next(rows, None):
                raise self._changed()
            yield found
        if problems.count or next(rows, None) is not None or _stamp(self.path) != self._stamp:
            raise self._changed()

    def _changed(self) -> DatasetError:
        return DatasetError(
            f"{self.path}: the corpus file changed after it was read at the start of the run; "
            "leave it unchanged while a run reads it, then run again"
        )

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_handle": None, "_opening": None}  # an open file and a lock do not travel

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _opening=threading.Lock())

    def __del__(self) -> None:
        handle = getattr(self, "_handle", None)
        if handle is not None:
            os.close(handle)


class _Values(ValuesView):
    _mapping: FileCorpus

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        return (MappingProxyType(passage) for _, passage in self._mapping._passages())


class _Items(ItemsView):
    _mapping: FileCorpus

    def __iter__(self) -> Iterator[tuple[str, Mapping[str, Any]]]:
        return ((doc, MappingProxyType(passage)) for doc, passage in self._mapping._passages())


def _records(path: Path, problems: Problems) -> Iterator[tuple[int, int, Any]]:
    """``(line number, byte offset, JSON value)`` of each non-blank line; a line's problems go to ``problems``.

    Lines end at ``\\n`` (``\\r\\n`` too), as the encoding workers split them. A carriage return
    that ends a line by itself (old Mac files), which the loader in memory reads as a line end,
    is refused: workers would read two records as one. A line blank in Unicode's sense (a
    no-break space, say) is skipped, as the loader in memory skips it.
    """

    for number, (start, raw) in enumerate(byte_lines(path, 0, _stamp(path)[0]), start=1):
        # One line ending only: any other carriage return is one the loader in memory would end a line at.
        ending = 2 if raw.endswith(b"\r\n") else 1 if raw.endswith((b"\n", b"\r")) else 0
        line = raw[: len(raw) - ending]
        if not line.strip():
            continue
        if b"\r" in line:
            problems.add(
                f"{path}:{number}: a carriage return ends a line inside this one (old Mac line endings); "
                "end lines with \\n (e.g. tr '\\r' '\\n')"
            )
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as failure:
            raise DatasetError(
                f"{path}:{number}: not UTF-8 text (column {failure.start + 1}); save the file as UTF-8"
            ) from None
        if not text.strip():
            continue
        yield number, start, parse_json(text, path, DatasetError, line=number)


def _line_numbers(path: Path, offsets: set[int]) -> dict[int, int]:
    """The line number of each line beginning at one of ``offsets``."""
    lines = enumerate(byte_lines(path, 0, _stamp(path)[0]), start=1)
    return {start: number for number, (start, _) in lines if start in offsets}


def _stamp(path: Path) -> tuple[int, int]:
    try:
        info = os.stat(path)
    except OSError as failure:
        raise DatasetError(f"{path}: cannot be read ({failure.strerror or type(failure).__name__})") from None
    return info.st_size, info.st_mtime_ns
