"""The judgement sheet: what ``rag-eval pool`` writes, a judge or a person grades, and ``judgements merge`` reads.

One row per (query, unit) to judge. A unit is a passage (``doc`` is its id, no offsets), a whole
document, or a span of a document (``doc``, ``start``, ``end``). Columns, in this order:

``query_id, query_text, doc, start, end, text, grade, source, annotator, time, priority, note``

- ``grade``: empty (not graded yet) or a number (the dataset's graded scale, e.g. 0-3);
- ``source``: the provenance of the grade: ``human``, ``llm:<model>``, ``llm+verified`` (a model's grade a
  person confirmed), or a plug-in judge's own ``<kind>:<name>``; empty while ungraded;
- ``annotator``, ``time`` (ISO 8601): who graded it and when; ``priority``: the pool's order (1 first);
  ``note``: why the row was pooled, or the judge's explanation.

Written as CSV (a header row, UTF-8, RFC 4180 quoting) or JSON Lines (one object per row), chosen by the
file's extension. Reading is strict: a missing column, a grade that is not a number, offsets that are not
integers, a row given twice: one error naming the file, the line and the fix.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from rag_eval._core.atomic import atomic_write_text
from rag_eval._core.errors import InputFormatError
from rag_eval._core.files import check_input_file, describe_kind
from rag_eval._core.messages import shown
from rag_eval._core.spans import chunk_id

COLUMNS = ("query_id", "query_text", "doc", "start", "end", "text", "grade", "source", "annotator", "time",
           "priority", "note")
REQUIRED = ("query_id", "doc", "grade")
FORMATS = (".csv", ".jsonl")
HUMAN = "human"
VERIFIED = "llm+verified"


@dataclass(frozen=True)
class SheetRow:
    """One (query, unit) to judge, with its grade once given (see the module docstring)."""

    query_id: str
    doc: str
    query_text: str = ""
    start: int | None = None
    end: int | None = None
    text: str = ""
    grade: float | None = None
    source: str = ""
    annotator: str = ""
    time: str = ""
    priority: int | None = None
    note: str = ""

    @property
    def unit(self) -> str:
        """The unit's id as rag_eval ranks it: the passage or document id, or ``<doc>#<start>-<end>``."""
        return self.doc if self.start is None or self.end is None else chunk_id(self.doc, self.start, self.end)

    @property
    def key(self) -> tuple[str, str]:
        """``(query_id, unit)``: a sheet holds each at most once."""
        return self.query_id, self.unit

    def graded(self, grade: float, source: str, annotator: str = "", time: str = "", note: str | None = None) -> SheetRow:
        """This row with a grade and its provenance."""
        return replace(self, grade=grade, source=source, annotator=annotator, time=time,
                       note=self.note if note is None else note)


def sheet_format(path: str | Path) -> str:
    """``.csv`` or ``.jsonl`` (from the file name); anything else is an error naming the file and the fix."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise InputFormatError(f"{path}: a judgement sheet is .csv or .jsonl, not {suffix or 'a file without extension'}; "
                               "rename it or pick one of those")
    return suffix


def write_sheet(path: str | Path, rows: Iterable[SheetRow]) -> int:
    """Write ``rows`` atomically (the old file stays whole until the new one is complete); returns the count."""
    kind = sheet_format(path)
    rows = list(rows)
    if kind == ".csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\r\n")  # RFC 4180; a cell holding "\r" or "\n" is quoted
        writer.writerow(COLUMNS)
        for row in rows:
            values = asdict(row)
            writer.writerow(["" if values[name] is None else _cell(values[name]) for name in COLUMNS])
        text = buffer.getvalue()
    else:
        text = "".join(json.dumps({name: asdict(row)[name] for name in COLUMNS}, ensure_ascii=False) + "\n" for row in rows)
    atomic_write_text(path, text)
    return len(rows)


def read_sheet(path: str | Path) -> list[SheetRow]:
    """The rows of a sheet, checked (see the module docstring); a problem is one error naming file and line.

    A folder, a FIFO or a device is refused before it is opened (a FIFO would block forever)."""
    sheet_format(path)
    if not Path(path).exists():
        raise InputFormatError(f"{path}: no such judgement sheet; write one with rag-eval pool")
    check_input_file(path, "judgement sheet")
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputFormatError(f"{path}: no such judgement sheet; write one with rag-eval pool") from None
    except OSError as error:
        raise InputFormatError(f"{path}: cannot be read: {error.strerror or error}") from None
    return parse_sheet(path, data)


def parse_sheet(path: str | Path, data: bytes) -> list[SheetRow]:
    """The rows of a sheet's bytes ``data`` (``path``: its name, for the format and the messages), checked."""
    kind = sheet_format(path)
    try:
        text = data.decode("utf-8-sig")  # no newline translation: a cell may hold "\r"
    except UnicodeDecodeError as error:
        raise InputFormatError(f"{path}: not UTF-8 (byte {error.start}); save the sheet as UTF-8") from None
    records = _csv_records(path, text) if kind == ".csv" else _jsonl_records(path, text)
    rows: list[SheetRow] = []
    seen: dict[tuple[str, str], int] = {}
    for line, record in records:
        row = _row(path, line, record)
        if row.key in seen:
            raise InputFormatError(
                f"{path}:{line}: query {shown(row.query_id)} and unit {shown(row.unit)} are listed again (first on line "
                f"{seen[row.key]}); keep one row per query and unit"
            )
        seen[row.key] = line
        rows.append(row)
    return rows


@dataclass(frozen=True)
class ExistingSheet:
    """A judgement sheet already at an output path, as read before the command worked: its bytes and rows."""

    path: Path
    flag: str
    data: bytes
    rows: list[SheetRow]

    def graded(self) -> list[SheetRow]:
        """Its rows that hold a grade."""
        return [row for row in self.rows if row.grade is not None]

    def check_unchanged(self) -> None:
        """Refuse (exit 2) when the file changed on disk since it was read: someone saved it meanwhile."""
        try:
            now = self.path.read_bytes()
        except FileNotFoundError:
            now = None
        except OSError as error:
            raise InputFormatError(f"{self.flag} {self.path}: cannot be read again: {error.strerror or error}") from None
        if now != self.data:
            raise InputFormatError(f"{self.flag} {self.path}: the file changed while rag-eval worked on it; nothing "
                                   "written: run the command again")


def existing_sheet(path: str | Path, flag: str) -> ExistingSheet | None:
    """What an output path holds before rag-eval replaces it: None (nothing there, or an empty file), the
    sheet there, or an error (exit 2) for anything else, which rag-eval never replaces: a folder, a FIFO,
    a device, or a file that is not a judgement sheet (another program's file, a typo in the name)."""
    target = Path(path)
    try:
        info = os.stat(target)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        raise InputFormatError(f"{flag} {path}: cannot be checked ({error.strerror or error})") from None
    kind = describe_kind(info.st_mode)
    if kind is not None:
        raise InputFormatError(f"{flag} {path}: is {kind}; give the path of a judgement sheet to write")
    try:
        data = target.read_bytes()
    except OSError as error:
        raise InputFormatError(f"{flag} {path}: cannot be read ({error.strerror or error}); rag-eval replaces only "
                               "a judgement sheet it can read: give another file name") from None
    if not data.strip():
        return ExistingSheet(target, flag, data, [])
    try:
        rows = parse_sheet(target, data)
    except InputFormatError as error:
        reason = str(error).removeprefix(f"{target}").lstrip(":0123456789 ").split("; ")[0]
        raise InputFormatError(
            f"{flag} {path}: the file there is not a judgement sheet ({reason}); nothing written: rag-eval replaces "
            "only a sheet it can read, so give another file name, or move that file away"
        ) from None
    return ExistingSheet(target, flag, data, rows)


def graded_by_a_person(row: SheetRow) -> bool:
    """Whether a graded row's grade is a person's: source ``human``, ``llm+verified``, or none (typed into a sheet)."""
    return row.grade is not None and row.source in ("", HUMAN, VERIFIED)


# --------------------------------------------------------------------------- internals


def _cell(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _csv_records(path: str | Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise InputFormatError(f"{path}: the sheet is empty; it needs a header row ({', '.join(COLUMNS)})") from None
    except csv.Error as error:
        raise InputFormatError(f"{path}:1: not CSV ({error})") from None
    missing = [name for name in REQUIRED if name not in header]
    if missing:
        raise InputFormatError(f"{path}:1: the header has no column {', '.join(missing)}; its columns must include "
                               f"{', '.join(REQUIRED)} (all: {', '.join(COLUMNS)})")
    records = []
    try:
        for values in reader:
            line = reader.line_num
            if not any(value.strip() for value in values):
                continue
            if len(values) != len(header):
                raise InputFormatError(f"{path}:{line}: {len(values)} cells where the header has {len(header)}; "
                                       "quote cells that hold commas")
            records.append((line, dict(zip(header, values))))
    except csv.Error as error:
        raise InputFormatError(f"{path}:{reader.line_num}: not CSV ({error})") from None
    return records


def _jsonl_records(path: str | Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    records = []
    for line, raw in enumerate(text.split("\n"), start=1):  # not splitlines(): "\u2028" may stand inside a string
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except ValueError as error:
            raise InputFormatError(f"{path}:{line}: not JSON ({error.args[0] if error.args else error}); "
                                   "one JSON object per line") from None
        if not isinstance(record, dict):
            raise InputFormatError(f"{path}:{line}: a {type(record).__name__}, not a JSON object; one object per line")
        missing = [name for name in REQUIRED if name not in record]
        if missing:
            raise InputFormatError(f"{path}:{line}: no {', '.join(missing)}; each row needs {', '.join(REQUIRED)}")
        records.append((line, record))
    return records


def _row(path: str | Path, line: int, record: dict[str, Any]) -> SheetRow:
    where = f"{path}:{line}"
    unknown = sorted(set(record) - set(COLUMNS))
    if unknown:
        raise InputFormatError(f"{where}: unknown column {shown(unknown[0])}; the columns are {', '.join(COLUMNS)}")
    values: dict[str, Any] = {}
    for name in ("query_id", "doc"):
        value = record.get(name)
        if value is None or (isinstance(value, str) and not value):
            raise InputFormatError(f"{where}: {name} is empty; every row names its query and its document or passage")
        values[name] = str(value)
    for name in ("query_text", "text", "source", "annotator", "time", "note"):
        value = record.get(name)
        values[name] = "" if value is None else str(value)
    for name in ("start", "end", "priority"):
        values[name] = _whole(where, name, record.get(name))
    if (values["start"] is None) != (values["end"] is None):
        raise InputFormatError(f"{where}: start and end go together (a span) or are both empty (a whole passage)")
    if values["start"] is not None and not 0 <= values["start"] < values["end"]:
        raise InputFormatError(f"{where}: span [{values['start']}, {values['end']}) is empty or negative; "
                               "use 0 <= start < end")
    values["grade"] = _grade(where, record.get("grade"))
    if values["grade"] is not None and not values["source"]:
        values["source"] = HUMAN  # a grade typed into a sheet by hand
    return SheetRow(**values)


def _whole(where: str, name: str, value: Any) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise InputFormatError(f"{where}: {name} {value!r} is not a whole number")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    raise InputFormatError(f"{where}: {name} {shown(str(value))} is not a whole number")


def _grade(where: str, value: Any) -> float | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        raise InputFormatError(f"{where}: grade {value!r} is not a number; write the grade (e.g. 0, 1, 2, 3)")
    try:
        grade = float(value)
    except (TypeError, ValueError):
        raise InputFormatError(f"{where}: grade {shown(str(value))} is not a number; write the grade (e.g. 0, 1, 2, 3) "
                               "or leave it empty") from None
    if not math.isfinite(grade):
        raise InputFormatError(f"{where}: grade {value!r} is not a finite number")
    return grade

