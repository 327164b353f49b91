"""Streaming the line formats (JSON Lines, TSV, CSV, qrels, SMART), gzip or not.

A line format has no size limit: it is read line by line. Every failure of the
reading itself becomes one DatasetError naming the file (and the line where it
can): not a regular file, unreadable, a ``.gz`` that is not gzip, text that is
not UTF-8, a CSV field the csv module refuses. Lines end at ``\\n``, ``\\r\\n`` or
a lone ``\\r`` (files from old Mac tools), so line numbers are those an editor
shows; a leading byte-order mark is removed.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import gzip
import io
import re
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from rag_eval._core.errors import DatasetError
from rag_eval._core.files import NUL_RUN, binary_content, check_input_file

GZIP_MAGIC = b"\x1f\x8b"
BOM = b"\xef\xbb\xbf"
_CHUNK = 1 << 20
# trec_eval separates fields by ASCII whitespace only: a non-breaking space belongs to its id.
_ASCII_SPACE = " \t\n\r\f\v"
_FIELD_SEPARATOR = re.compile(f"[{re.escape(_ASCII_SPACE)}]+")
# csv refuses fields over 128 KiB by default; a passage may be longer. The C long limit.
_CSV_FIELD_LIMIT = 2**31 - 1


def text_lines(path: Path, what: str) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of a UTF-8 text file (gunzipped when it ends in ``.gz``), endings kept.

    A run of 64 KiB of NUL bytes is refused where it is met (:class:`_NulGuard`): a binary or sparse
    file is one endless "line" that would otherwise be read whole before any check could see it.
    """
    check_input_file(path, what, None, DatasetError)
    try:
        with _open_binary(path) as raw, io.TextIOWrapper(
            io.BufferedReader(_NulGuard(raw, path, what), _CHUNK), encoding="utf-8-sig", newline=""
        ) as handle:
            yield from enumerate(handle, start=1)
    except UnicodeDecodeError:
        raise DatasetError(f"{path}: {_bad_utf8(path)}") from None
    except (gzip.BadGzipFile, EOFError, zlib.error) as failure:
        raise DatasetError(f"{path}: not a valid gzip file ({_reason(failure)}); a .gz name needs gzip content") from None
    except OSError as failure:
        raise DatasetError(f"{path}: cannot be read ({failure.strerror or type(failure).__name__})") from None


class _NulGuard(io.RawIOBase):
    """A binary stream passed through, refusing a run of :data:`~rag_eval._core.files.NUL_RUN` NUL bytes.

    One reduction per read (its minimum byte) when the text holds no NUL, the usual case.
    """

    def __init__(self, raw: IO[bytes], path: Path, what: str) -> None:
        self._raw, self._path, self._what = raw, path, what
        self._offset = 0  # bytes read so far
        self._run = 0  # NUL bytes at the end of what was read so far

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = self._raw.readinto(buffer)  # type: ignore[attr-defined]
        if n:
            data = np.frombuffer(buffer, dtype=np.uint8, count=n)
            if data.min() == 0:
                self._check(data)
            else:
                self._run = 0
            self._offset += n
        return n

    def _check(self, data: np.ndarray) -> None:
        """Raise at a run of NUL_RUN NUL bytes in ``data`` (read at ``self._offset``), counting the run before it."""
        filled = np.flatnonzero(data)
        if filled.size == 0:
            self._run += data.size
            if self._run >= NUL_RUN:
                raise DatasetError(binary_content(self._path, self._offset + data.size - self._run, self._what))
            return
        if self._run + int(filled[0]) >= NUL_RUN:
            raise DatasetError(binary_content(self._path, self._offset - self._run, self._what))
        gaps = np.diff(filled) - 1
        if gaps.size and int(gaps.max()) >= NUL_RUN:
            raise DatasetError(binary_content(self._path, self._offset + int(filled[np.argmax(gaps)]) + 1, self._what))
        self._run = data.size - 1 - int(filled[-1])


def split_fields(line: str) -> list[str]:
    """The whitespace-separated fields of a qrels or run line (ASCII whitespace, as trec_eval)."""
    stripped = line.strip(_ASCII_SPACE)
    return _FIELD_SEPARATOR.split(stripped) if stripped else []


def strip_ending(line: str) -> str:
    """``line`` without its line ending."""
    return line.rstrip("\r\n")


def csv_records(path: Path, what: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, row as a dict)`` of a CSV file with a header row."""
    lines = (line for _, line in text_lines(path, what))
    with _csv_field_limit(_CSV_FIELD_LIMIT):
        reader = csv.DictReader(lines)
        try:
            for row in reader:
                yield reader.line_num, row
        except csv.Error as failure:
            raise DatasetError(f"{path}:{reader.line_num}: invalid CSV ({failure})") from None


def csv_header(path: Path, what: str) -> list[str]:
    """The header row of a CSV file (empty for an empty file)."""
    with _csv_field_limit(_CSV_FIELD_LIMIT):
        try:
            return next(csv.reader(line for _, line in text_lines(path, what)), [])
        except csv.Error as failure:
            raise DatasetError(f"{path}:1: invalid CSV ({failure})") from None


@contextlib.contextmanager
def _csv_field_limit(limit: int) -> Iterator[None]:
    # csv's limit is process-wide: raised while this file is read, then put back.
    previous = csv.field_size_limit(limit)
    try:
        yield
    finally:
        csv.field_size_limit(previous)


def _open_binary(path: Path) -> IO[bytes]:
    if path.suffix == ".gz":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return path.open("rb")


def _bad_utf8(path: Path) -> str:
    """``line L, column C: not UTF-8 text ...`` for the first bad byte (a second, binary pass)."""
    with _open_binary(path) as raw:
        offset, bad, reason = _first_bad_byte(iter(lambda: raw.read(_CHUNK), b""))
    if offset is None:
        return "not UTF-8 text; save the file as UTF-8"
    with _open_binary(path) as raw:
        line, line_start = _line_at(iter(lambda: raw.read(_CHUNK), b""), offset)
    hint = ""
    if offset == 1 and bad == GZIP_MAGIC[1] and path.suffix != ".gz":
        hint = " (the file is gzip-compressed: name it .gz)"
    return (
        f"line {line}, column {offset - line_start + 1}: not UTF-8 text (byte 0x{bad:02x}: {reason}){hint}; "
        "save the file as UTF-8"
    )


def _first_bad_byte(chunks: Iterable[bytes]) -> tuple[int | None, int, str]:
    decoder = codecs.getincrementaldecoder("utf-8")()
    consumed = 0
    for chunk in chunks:
        pending = len(decoder.getstate()[0])
        try:
            decoder.decode(chunk)
        except UnicodeDecodeError as failure:
            data = failure.object
            return consumed - pending + failure.start, data[failure.start], failure.reason
        consumed += len(chunk)
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError as failure:  # the file ends inside a character
        return consumed - len(failure.object) + failure.start, failure.object[failure.start], failure.reason
    return None, 0, ""


def _line_at(chunks: Iterable[bytes], offset: int) -> tuple[int, int]:
    """(line number, offset of its first byte) of byte ``offset``; CR, LF and CRLF end lines."""
    line, line_start, position, after_cr = 1, 0, 0, False
    for chunk in chunks:
        chunk = chunk[: max(0, offset - position)]
        for match in re.finditer(rb"\r\n|\r|\n", chunk):
            if after_cr and match.start() == 0 and match.group() in (b"\n", b"\r\n"):
                # The CR ending the previous chunk and this LF are one line ending.
                line_start = position + match.end()
                if match.group() == b"\r\n":
                    line += 1
                after_cr = False
                continue
            line += 1
            line_start = position + match.end()
            after_cr = False
        after_cr = chunk.endswith(b"\r")
        position += len(chunk)
        if position >= offset:
            break
    return line, line_start


def _reason(failure: BaseException) -> str:
    return " ".join(str(failure).split()) or type(failure).__name__


def byte_lines(path: Path, start: int, stop: int) -> Iterator[tuple[int, bytes]]:
    """``(byte offset, line)`` of the lines beginning in ``[start, stop)`` (all lines of a ``.gz`` file), endings kept.

    Lines end at ``\\n``. A range owns every line whose first byte lies in it, so ranges cut
    anywhere read every line once (the Ray workers' reading of a corpus). A leading byte-order
    mark is removed from the first line, whose offset stays 0.
    """
    gz = path.name.endswith(".gz")
    try:
        with _open_bytes(path, gz) as handle:
            offset = 0
            if start > 0 and not gz:
                handle.seek(start - 1)
                offset = start - 1 + len(handle.readline())  # the line holding byte start-1 is the previous range's
            while offset < stop or gz:
                line = handle.readline(NUL_RUN)
                if not line:
                    return
                if len(line) == NUL_RUN and not line.endswith(b"\n"):  # a long line: refused if it is all NUL
                    if not line.strip(b"\0"):
                        raise DatasetError(binary_content(path, offset, "JSON Lines file"))
                    line += handle.readline()
                if offset == 0 and line.startswith(BOM):
                    line = line[len(BOM) :]
                    yield 0, line
                    offset = len(line) + len(BOM)
                    continue
                yield offset, line
                offset += len(line)
    except (gzip.BadGzipFile, EOFError, zlib.error) as failure:
        raise DatasetError(f"{path}: not a valid gzip file ({failure}); a .gz name needs gzip content") from None
    except OSError as failure:
        raise DatasetError(f"{path}: cannot be read ({failure.strerror or type(failure).__name__})") from None


def _open_bytes(path: Path, gz: bool) -> gzip.GzipFile | io.BufferedReader:
    return gzip.open(path, "rb") if gz else open(path, "rb")  # noqa: SIM115 (closed by the caller's with)
