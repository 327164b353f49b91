"""TREC qrels and run files: fast reading, exact error locations, atomic writing.

qrels: ``qid iter doc_id grade``; run: ``qid Q0 doc_id rank score tag``, fields
separated by any whitespace. Files are parsed by pandas' C reader; when that
fails or a check fails, the file is scanned again line by line so that the error
names the exact line and what is wrong with it.
"""

from __future__ import annotations

import csv
import math
import warnings
from pathlib import Path
from typing import Mapping

import numpy as np

from rag_eval.errors import InputFormatError
from rag_eval.tables import FlatTable, check_unique_pairs, check_values

QRELS_COLUMNS = ("qid", "iter", "doc_id", "grade")
RUN_COLUMNS = ("qid", "q0", "doc_id", "rank", "score", "tag")


def read_qrels(path: str | Path) -> FlatTable:
    """Read a TREC qrels file into judgement columns."""
    return _read(Path(path), QRELS_COLUMNS, value_index=3, what="judgements")


def read_run(path: str | Path) -> FlatTable:
    """Read a TREC run file into run columns (the rank column is ignored)."""
    return _read(Path(path), RUN_COLUMNS, value_index=4, what="run")


def _read(path: Path, columns: tuple[str, ...], value_index: int, what: str) -> FlatTable:
    import pandas as pd

    if not path.is_file():
        raise InputFormatError(f"{path}: no such file")
    value_name = columns[value_index]
    is_run = what == "run"
    try:
        with warnings.catch_warnings():
            # index_col=False drops fields after a run's tag (trec_eval ignores them) with a warning.
            warnings.simplefilter("ignore", pd.errors.ParserWarning)
            frame = pd.read_csv(
                path,
                sep=r"\s+",
                header=None,
                names=list(columns),
                # A run reads its tag too, so that a line without one is caught (trec_eval refuses it);
                # qrels read every column, so that a line with a fifth field fails to parse.
                usecols=[0, 2, value_index, len(columns) - 1] if is_run else None,
                index_col=False if is_run else None,
                dtype={"qid": str, "doc_id": str, "tag": "category"},
                quoting=csv.QUOTE_NONE,
                engine="c",
                na_filter=False,
                on_bad_lines="error",
                encoding="utf-8",
            )
    except pd.errors.EmptyDataError:
        frame = None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError):
        _scan_for_error(path, columns, value_index, what)
        raise InputFormatError(f"{path}: cannot be read as a TREC {what} file") from None
    if frame is not None and (
        (is_run and "" in frame["tag"].cat.categories) or not isinstance(frame.index, pd.RangeIndex)
    ):
        # A run line without a tag, or a qrels file whose first line has extra fields (pandas
        # then takes the first column as an index).
        _scan_for_error(path, columns, value_index, what)
        raise InputFormatError(f"{path}: cannot be read as a TREC {what} file")
    if frame is None or len(frame) == 0:
        if what == "judgements":
            raise InputFormatError(f"{path}: holds no judgements; expected lines 'qid iter doc_id grade'")
        return FlatTable([], np.empty(0, np.int64), np.empty(0, object), np.empty(0))
    values = frame[value_name]
    if values.dtype.kind != "f" and values.dtype.kind != "i":
        _scan_for_error(path, columns, value_index, what)
    codes, uniques = pd.factorize(frame["qid"], sort=False)
    table = FlatTable(
        [str(u) for u in uniques],
        codes.astype(np.int64),
        frame["doc_id"].to_numpy(dtype=object),
        values.to_numpy(dtype=np.float64),
    )
    try:
        check_values(table, what)
        check_unique_pairs(table, what)
    except InputFormatError as error:
        _scan_for_error(path, columns, value_index, what)
        raise InputFormatError(f"{path}: {error}") from None
    return table


def _scan_for_error(path: Path, columns: tuple[str, ...], value_index: int, what: str) -> None:
    """Find the first bad line and raise an error naming it (slow, only on failure)."""
    expected = len(columns)
    layout = " ".join(columns)
    value_name = columns[value_index]
    seen: dict[tuple[str, str], int] = {}
    try:
        handle = path.open(encoding="utf-8")
        with handle:
            for number, line in enumerate(handle, start=1):
                fields = line.split()
                if not fields:
                    continue
                where = f"{path}:{number}"
                # trec_eval ignores any field after a run's tag; a qrels line has exactly four.
                if len(fields) < expected or (len(fields) > expected and what != "run"):
                    raise InputFormatError(
                        f"{where}: expected {expected} fields '{layout}', found {len(fields)}"
                    )
                try:
                    value = float(fields[value_index])
                except ValueError:
                    raise InputFormatError(
                        f"{where}: {value_name} {fields[value_index]!r} is not a number"
                    ) from None
                if math.isnan(value) or (what == "judgements" and math.isinf(value)):
                    raise InputFormatError(f"{where}: {value_name} is {fields[value_index]}; it must be a finite number")
                key = (fields[0], fields[2])
                if key in seen:
                    raise InputFormatError(
                        f"{where}: query {fields[0]!r} lists doc {fields[2]!r} again (first on line {seen[key]}); "
                        "each document may appear once per query"
                    )
                seen[key] = number
    except UnicodeDecodeError as error:
        raise InputFormatError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None


def format_run(run: Mapping[str, Mapping[str, float]], tag: str = "rag_eval") -> str:
    """``{qid: {doc_id: score}}`` as TREC run text, ranked in trec_eval order."""
    lines = []
    for qid in sorted(run):
        for rank, doc in enumerate(ranked_doc_ids(run[qid]), start=1):
            lines.append(f"{qid}\tQ0\t{doc}\t{rank}\t{float(run[qid][doc])!r}\t{tag}\n")
    return "".join(lines)


def write_run(run: Mapping[str, Mapping[str, float]], path: str | Path, tag: str = "rag_eval") -> None:
    """Write a TREC run file atomically (a reader never sees half a file)."""
    from rag_eval.atomic import atomic_write_text

    atomic_write_text(path, format_run(run, tag))


def write_qrels(judgements: Mapping[str, Mapping[str, float]], path: str | Path) -> None:
    """Write ``{qid: {doc_id: grade}}`` as a TREC qrels file (atomically)."""
    from rag_eval.atomic import atomic_write_text

    lines = [
        f"{qid} 0 {doc} {_grade_text(grade)}\n" for qid in sorted(judgements) for doc, grade in judgements[qid].items()
    ]
    atomic_write_text(path, "".join(lines))


def ranked_doc_ids(scores: Mapping[str, float]) -> list[str]:
    """Doc ids of one query in trec_eval order (score desc, doc id desc)."""
    return [doc for doc, _ in sorted(scores.items(), key=lambda item: (-item[1], _neg_bytes(item[0])))]


def table_to_nested(table: FlatTable) -> dict[str, dict[str, float]]:
    """``FlatTable`` back to ``{qid: {doc_id: value}}`` (for small data)."""
    out: dict[str, dict[str, float]] = {}
    for code, doc, value in zip(table.query_codes.tolist(), table.docs.tolist(), table.values.tolist()):
        out.setdefault(table.query_keys[code], {})[doc] = value
    return out


class _Desc:
    """Wraps bytes so that sorting ascending orders them descending."""

    __slots__ = ("value",)

    def __init__(self, value: bytes) -> None:
        self.value = value

    def __lt__(self, other: "_Desc") -> bool:
        return self.value > other.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Desc) and self.value == other.value


def _neg_bytes(doc: str) -> _Desc:
    return _Desc(doc.encode("utf-8"))


def _grade_text(grade: float) -> str:
    return str(int(grade)) if float(grade).is_integer() else repr(float(grade))

