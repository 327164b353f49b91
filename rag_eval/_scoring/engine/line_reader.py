"""The line-by-line TREC reader: every check made line by line, the first problem named with its line.

Used to name the line of a problem the fast reader (``fast_reader``) or the table checks found,
and for a file the fast reader does not take at all. Slower, but it follows the same rules.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import BinaryIO

import numpy as np

from rag_eval._core.errors import InputFormatError
from rag_eval._core.files import BOM
from rag_eval._core.ids import id_problem, shown_id
from rag_eval._scoring.engine.fast_numbers import is_overflow, number_or_none
from rag_eval._scoring.engine.file_stamp import changed_error, file_stamp
from rag_eval._scoring.engine.flat_table import FlatTable
from rag_eval._scoring.engine.layout import Layout
from rag_eval._scoring.engine.packed_ids import PackedIds


def read_lines(path: Path, layout: Layout) -> FlatTable:
    """Read ``path`` line by line, checking everything; the first problem raises a located error.

    Used to name the line of a problem the fast reader found (and for a file it does not take).
    """
    expected = len(layout.columns)
    described = f"{expected} fields '{' '.join(layout.columns)}'"
    label = layout.value_label
    keys: dict[str, int] = {}
    codes: list[int] = []
    docs: list[bytes] = []
    values: list[float] = []
    seen: dict[tuple[int, bytes], int] = {}
    header = bool(layout.header)
    try:
        handle = path.open("rb")
    except OSError as failure:
        raise InputFormatError(f"{path}: cannot be read ({failure.strerror or failure})") from None
    with handle:
        stamp = file_stamp(handle.fileno())
        number = 0
        while line := handle.readline(_LINE_PIECE):
            number += 1
            where = f"{path}:{number}"
            if len(line) == _LINE_PIECE and not line.endswith(b"\n"):
                # A line of a megabyte or more: its start is checked before the rest is read, so that a binary
                # file (one endless line of NUL bytes) is refused at once, not after reading gigabytes of it.
                _check_line_start(line.removeprefix(BOM) if number == 1 else line, where, layout)
                line = _rest_of_line(handle, line)
            if number == 1 and line.startswith(BOM):
                line = line[len(BOM) :]
            line = line[:-2] if line.endswith(b"\r\n") else line.rstrip(b"\n")
            if b"\r" in line:
                raise InputFormatError(
                    f"{where}: a carriage return (\\r) inside a line; the file seems to have CR-only (old Mac) "
                    "line endings, which trec_eval reads as one line: save it with \\n line endings"
                )
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as failure:
                raise InputFormatError(
                    f"{where}: not UTF-8 text (byte 0x{line[failure.start]:02x} at column {failure.start + 1}: "
                    f"{failure.reason}); save the file as UTF-8"
                ) from None
            fields = line.split()  # ASCII whitespace only, as trec_eval
            if not fields:
                continue
            if header:
                header = False
                if tuple(fields) != layout.header:
                    raise InputFormatError(
                        f"{where}: expected the {layout.name} header '{' '.join(layout.columns)}', "
                        f"found {line.decode()[:80]!r}"
                    )
                continue
            qid = fields[0].decode()
            _check_id(qid, "query id", where)  # first: a line of binary garbage is named for what it holds
            if len(fields) < expected or (len(fields) > expected and not layout.extra_fields):
                raise InputFormatError(f"{where}: expected {described}, found {len(fields)}")
            doc = fields[layout.doc_index].decode()
            _check_id(doc, "doc id", where)
            for index in layout.number_fields:
                if number_or_none(fields[index]) is None:
                    if is_overflow(fields[index]):
                        raise InputFormatError(f"{where}: the {layout.columns[index]} field {fields[index].decode()!r} "
                                               "is too large for a float64 (at most about 1.8e308)")
                    raise InputFormatError(
                        f"{where}: the {layout.columns[index]} field {fields[index].decode()!r} is not a number; "
                        f"a {layout.name} line is '{' '.join(layout.columns)}', so a doc id cannot hold a space"
                    )
            token = fields[layout.value_index]
            value = number_or_none(token)
            if value is None:
                if is_overflow(token):
                    raise InputFormatError(
                        f"{where}: {label} {token.decode()!r} is too large for a float64 (at most about 1.8e308)"
                    )
                raise InputFormatError(f"{where}: {label} {token.decode()!r} is not a number")
            if not math.isfinite(value):  # trec_eval cannot rank by inf; strict JSON has no Infinity
                raise InputFormatError(f"{where}: {label} is {token.decode()}; it must be a finite number")
            code = keys.setdefault(qid, len(keys))
            key = (code, fields[layout.doc_index])
            if key in seen:
                raise InputFormatError(
                    f"{where}: query {shown_id(qid)} lists doc {shown_id(doc)} again (first on line {seen[key]}); "
                    "each document may appear once per query"
                )
            seen[key] = number
            codes.append(code)
            docs.append(fields[layout.doc_index])
            values.append(value)
        if file_stamp(handle.fileno()) != stamp:
            raise changed_error(path, stamp[0])
    return FlatTable(
        list(keys),
        np.array(codes, dtype=np.int32),
        values=np.array(values, dtype=np.float64),
        packed_docs=PackedIds.from_bytes(docs),
        all_keys_have_rows=True,
    )


# Lines are read in pieces of this size; a longer line's start is checked before the rest is read.
_LINE_PIECE = 1 << 20
_FIELD = re.compile(rb"[^ \t\n\v\f\r]+")  # a field: a run of anything but ASCII white space
_CONTROL_BYTE = re.compile(rb"[\x00-\x1f\x7f]")


def _check_line_start(piece: bytes, where: str, layout: Layout) -> None:
    """The checks of a line (CR, UTF-8, query and doc ids) on the first piece of a long line.

    Raises the error the whole line would give when the piece already shows it; a field cut at the
    piece's end is named with its length so far (``more than N characters``).
    """
    if b"\r" in piece[:-1]:
        raise InputFormatError(
            f"{where}: a carriage return (\\r) inside a line; the file seems to have CR-only (old Mac) "
            "line endings, which trec_eval reads as one line: save it with \\n line endings"
        )
    try:
        piece.decode("utf-8")
    except UnicodeDecodeError as failure:
        if not (failure.end == len(piece) and "end of data" in failure.reason):  # not a character cut at the end
            raise InputFormatError(
                f"{where}: not UTF-8 text (byte 0x{piece[failure.start]:02x} at column {failure.start + 1}: "
                f"{failure.reason}); save the file as UTF-8"
            ) from None
    for index, field in enumerate(_FIELD.finditer(piece)):
        if index > layout.doc_index:
            return
        if index not in (0, layout.doc_index):
            continue
        kind = "query id" if index == 0 else "doc id"
        bad = _CONTROL_BYTE.search(field.group())
        if bad is None:
            continue
        if field.end() < len(piece):  # the whole field is in the piece: the usual message
            _check_id(field.group().decode("utf-8", "replace"), kind, where)
        value = field.group().decode("utf-8", "ignore")
        raise InputFormatError(
            f"{where}: {kind} {value[:60]!r}... (more than {len(value):,} characters) holds the control character "
            f"U+{bad.group()[0]:04X} at position {bad.start() + 1}; ids may not hold control characters"
        )


def _rest_of_line(handle: BinaryIO, piece: bytes) -> bytes:
    """``piece`` (the start of a line) and the rest of its line, newline included."""
    parts = [piece]
    while not parts[-1].endswith(b"\n"):
        more = handle.readline(_LINE_PIECE)
        if not more:
            break
        parts.append(more)
    return b"".join(parts)


def _check_id(value: str, kind: str, where: str) -> None:
    problem = id_problem(value)
    if problem is not None:
        raise InputFormatError(f"{where}: {kind} {shown_id(value)} {problem}; ids may not hold control characters")
