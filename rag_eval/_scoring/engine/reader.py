"""Reading TREC qrels and run files (and BEIR qrels) into columns: fast, with exact error locations.

qrels: ``qid iter doc_id grade``; run: ``qid Q0 doc_id rank score tag``; BEIR
qrels: a header ``query-id corpus-id score``, then ``qid doc_id grade``. As in
trec_eval, fields are separated by ASCII whitespace only (space, tab, \\v, \\f): a
non-breaking space or any other character is part of an id; fields after a run's
tag are ignored. Ids may be of any length and hold any UTF-8 text except control
characters (rag_eval._core.ids). Lines end with \\n or \\r\\n; a carriage return anywhere
else is an error, because trec_eval reads a file with CR-only line endings as one
line. A leading UTF-8 byte-order mark is not part of the content.

Files are parsed with numpy (see the fast reader below); a file the fast reader
cannot take, or in which it finds a problem, is read line by line, and that reader
names the exact line and what is wrong with it.
"""

from __future__ import annotations

import math
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from rag_eval._core.errors import InputFormatError
from rag_eval._core.files import BOM, check_input_file
from rag_eval._core.ids import id_problem, shown_id
from rag_eval._scoring.engine.fast_numbers import NotANumber, is_overflow, number_or_none, parse_numbers
from rag_eval._scoring.engine.flat_table import FlatTable
from rag_eval._scoring.engine.packed_ids import PackedIds
from rag_eval._scoring.engine.pairs import check_unique_pairs
from rag_eval._scoring.engine.tables import check_values


@dataclass(frozen=True)
class Layout:
    """One line format: its columns, where the doc id and the value are, what it holds."""

    name: str  # "TREC qrels", "TREC run", "BEIR qrels"
    what: str  # "judgements" or "run" (the checks of engine.tables)
    columns: tuple[str, ...]
    doc_index: int
    value_index: int
    header: tuple[bytes, ...] = ()  # a first line that must be exactly these fields
    extra_fields: bool = False  # fields after the last column are ignored (a run's tag)

    @property
    def value_label(self) -> str:
        return "grade" if self.what == "judgements" else "score"


TREC_QRELS = Layout("TREC qrels", "judgements", ("qid", "iter", "doc_id", "grade"), 2, 3)
TREC_RUN = Layout("TREC run", "run", ("qid", "Q0", "doc_id", "rank", "score", "tag"), 2, 4, extra_fields=True)
BEIR_QRELS = Layout(
    "BEIR qrels", "judgements", ("query-id", "corpus-id", "score"), 1, 2, header=(b"query-id", b"corpus-id", b"score")
)


def read_qrels(path: str | Path) -> FlatTable:
    """Read a TREC qrels file into judgement columns."""
    return read_table(path, TREC_QRELS)


def read_run(path: str | Path) -> FlatTable:
    """Read a TREC run file into run columns (the rank column is ignored)."""
    return read_table(path, TREC_RUN)


def qrels_layout(path: str | Path) -> Layout:
    """BEIR_QRELS when the file's first line is the BEIR header ``query-id corpus-id score``, else TREC_QRELS."""
    path = check_input_file(path, "qrels file")
    fields: list[bytes] = []
    try:
        with path.open("rb") as handle:
            for _ in range(100):  # the first line that is not blank
                fields = handle.readline(4096).removeprefix(BOM).split()
                if fields or handle.peek(1) == b"":
                    break
    except OSError as failure:
        raise InputFormatError(f"{path}: cannot be read ({failure.strerror or failure})") from None
    return BEIR_QRELS if fields[:1] == [b"query-id"] else TREC_QRELS


def read_judgements(path: str | Path) -> tuple[FlatTable, Layout]:
    """Read TREC or BEIR qrels, whichever the content is (see :func:`qrels_layout`)."""
    layout = qrels_layout(path)
    return read_table(path, layout), layout


def read_table(path: str | Path, layout: Layout) -> FlatTable:
    """Read a file of ``layout`` into a checked :class:`FlatTable`.

    Every problem is an :class:`InputFormatError` of one line naming the file and,
    where there is one, the line.
    """
    path = check_input_file(path, f"{layout.name} file")
    try:
        table = _read_fast(path, layout)
    except _Irregular:
        table = _read_lines(path, layout)  # raises a located error, or reads the irregular layout
    if not len(table):
        if layout.what == "judgements":
            raise InputFormatError(
                f"{path}: holds no judgements; expected lines '{' '.join(layout.columns)}'"
                + (" after the header" if layout.header else "")
            )
        return table
    try:
        check_values(table, layout.what)
        check_unique_pairs(table, layout.what)
    except InputFormatError as error:
        _read_lines(path, layout)  # names the line
        raise InputFormatError(f"{path}: {error}") from None

    # A problem found later (a repeated pair, when the run is hashed another way) is named too.
    def locate_error() -> None:
        _read_lines(path, layout)

    table.locate_error = locate_error
    return table


# ---- the fast reader ----------------------------------------------------------------------
#
# The file is read in chunks of whole lines. A chunk in the usual layout (one space or
# tab between fields, one newline after each line) is parsed with a few numpy passes:
# the positions of all separators give every field's start and end; ids are packed
# into uint64 words (engine.packed_ids: an id takes as many words as it needs) and
# numbers are parsed eight characters at a time (engine.fast_numbers) exactly as strtod
# would. Anything else (blank lines, runs of spaces, control characters, extra fields, a
# bad number, a value to refuse, a line longer than _LONGEST_LINE) is handed to the
# line-by-line reader, which is slower but follows the same rules and names the line of
# a problem.
#
# The chunks are read with pread into buffers of their own, not mapped: a mapped file cut
# short while it is read (a run file rewritten by another process) kills the process with
# SIGBUS, where a read simply returns fewer bytes, which is reported as one line. Two passes
# read the file: the first finds the chunks' line counts (so that every chunk writes its
# values straight into the table's columns), the second parses them; the second read comes
# from the page cache. Memory holds the columns and a chunk or two, never the whole file.

_CHUNK_BYTES = 1 << 21  # the largest chunk
_BATCH = 8  # blocks scanned at a time in pass one
_LONGEST_LINE = 1 << 24  # a line longer than this (an id of megabytes, a binary file) goes to the line reader
_FRONT = 16  # readable bytes before a chunk (numbers are read as the 8 bytes that end them)
_PAD = 32  # readable bytes after a chunk: a word read at a token's last byte stays inside


class _Irregular(Exception):
    """The file is not in the layout the fast reader handles (or holds a problem to locate)."""


@dataclass
class _Chunk:
    """What one chunk of lines gives: its query groups and (when wide) its doc ids."""

    group_starts: np.ndarray  # first line of each run of lines with the same query id
    group_codes: np.ndarray  # code of each group's query among ``queries``
    queries: PackedIds  # the chunk's distinct query ids, in order of first appearance
    rows: int
    docs: PackedIds | None  # None: every doc id fits one word (written to the shared array)


class _Source:
    """An open file read at offsets (pread); a read cut short, or a file whose size or time changed, is an error."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self.fd = fd
        self.stamp = _stamp(fd)
        self.size = self.stamp[0]

    def read(self, start: int, stop: int) -> bytes:
        """The bytes [start, stop) of the file."""
        data = os.pread(self.fd, stop - start, start)
        if len(data) != stop - start:
            raise _changed(self.path, self.size)
        return data

    def read_into(self, buffer: np.ndarray, start: int) -> None:
        """Fill ``buffer`` (a contiguous uint8 view) with the file's bytes from ``start``."""
        view = buffer.data  # (a memoryview of the array: preadv writes into it)
        done = 0
        while done < len(view):  # preadv may return less than asked only at the end of the file
            n = os.preadv(self.fd, [view[done:]], start + done)
            if n <= 0:
                raise _changed(self.path, self.size)
            done += n

    def scan(self, block: tuple[int, int]) -> tuple[int, int, bool]:
        """(newlines, offset of the last newline or -1, whether it ends with a newline) of the bytes [a, b)."""
        data = self.read(*block)
        last = data.rfind(b"\n")
        newlines = int(np.count_nonzero(np.frombuffer(data, dtype=np.uint8) == 10))
        return newlines, (block[0] + last if last >= 0 else -1), data.endswith(b"\n")

    def check_unchanged(self) -> None:
        """Raise when the file's size or modification time is not what it was when opened."""
        if _stamp(self.fd) != self.stamp:
            raise _changed(self.path, self.size)


def _stamp(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_size, info.st_mtime_ns


def _changed(path: Path, size: int) -> InputFormatError:
    return InputFormatError(
        f"{path}: the file changed while it was read (it had {size:,} bytes); read it again once it is complete "
        "(a file still being written, or rewritten by another process, gives no number)"
    )


def _read_fast(path: Path, layout: Layout) -> FlatTable:
    """The table of a file in the usual layout, or :class:`_Irregular`."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # a file that cannot be opened: the line reader says why
        raise _Irregular from None
    try:
        source = _Source(path, fd)
        if source.size == 0:
            return _empty_table()
        start = _content_start(source, layout)
        if start >= source.size:
            return _empty_table()
        chunks, values, hashes, words = _parse_file(source, start, layout)
        source.check_unchanged()
    finally:
        os.close(fd)
    if not np.isfinite(values).all():
        raise _Irregular  # a value to refuse (NaN, inf): the line reader names its line
    keys, codes = _query_codes(chunks)
    docs = _doc_ids(chunks, words)
    return FlatTable(keys, codes, values=values, packed_docs=docs, doc_hashes=hashes, all_keys_have_rows=True)


def _parse_file(source: _Source, start: int, layout: Layout) -> tuple:
    """(chunks, values, doc hashes, one-word doc ids) of the file's bytes from ``start``, parsed in chunks."""
    bounds, counts = _chunk_bounds(source, start)
    offsets = np.cumsum([0, *counts]).tolist()
    values = np.empty(offsets[-1], dtype=np.float64)
    hashes = np.empty(offsets[-1], dtype=np.uint64)
    words = np.empty(offsets[-1], dtype=np.uint64)  # doc ids of up to 8 bytes go straight here
    tasks = [(a, b, offsets[i], offsets[i + 1]) for i, (a, b) in enumerate(bounds)]

    def parse(task: tuple[int, int, int, int]) -> _Chunk:
        a, b, lo, hi = task
        return _parse_chunk(source, a, b, layout, values[lo:hi], hashes[lo:hi], words[lo:hi])

    return _map_chunks(parse, tasks), values, hashes, words


def _empty_table() -> FlatTable:
    return FlatTable([], np.empty(0, np.int32), values=np.empty(0), packed_docs=PackedIds(np.empty(0, np.uint64)))


def _content_start(source: _Source, layout: Layout) -> int:
    """Offset of the first line to parse: after a BOM and after the header, if the layout has one."""
    head = source.read(0, min(source.size, 1 << 16))
    start = len(BOM) if head.startswith(BOM) else 0
    if layout.header:
        end = head.find(b"\n", start)
        if end < 0 and len(head) < source.size:
            raise _Irregular  # a first line of 64 KiB is no header: the line reader names what it holds
        end = len(head) if end < 0 else end + 1
        if tuple(head[start:end].split()) != layout.header:
            raise _Irregular  # the line reader names what the first line holds
        start = end
    return start


def _chunk_bounds(source: _Source, start: int) -> tuple[list[tuple[int, int]], list[int]]:
    """[a, b) byte ranges of whole lines covering the file from ``start``, and the lines in each (pass one).

    The file is scanned in blocks, two threads at a time, eight blocks a batch: each block gives its
    newlines and its last one, and a chunk ends at the last newline of a block, so a chunk holds the
    newlines of exactly its blocks. A block without a newline (a line longer than a block) joins the next;
    a line longer than :data:`_LONGEST_LINE` is :class:`_Irregular`, found within a batch of reading.
    """
    size = source.size
    # Chunks of about 1/32 of the file (within limits): their temporary arrays then
    # stay small next to the columns, however large or small the file is.
    step = min(max((size - start) // 32, _CHUNK_BYTES // 8), _CHUNK_BYTES)
    blocks = [(a, min(a + step, size)) for a in range(start, size, step)]
    bounds: list[tuple[int, int]] = []
    counts: list[int] = []
    chunk_start, lines, scanned = start, 0, (0, -1, True)
    for first in range(0, len(blocks), _BATCH):
        batch = blocks[first : first + _BATCH]
        for (_, b), scanned in zip(batch, _map_chunks(source.scan, batch)):
            newlines, last, _ = scanned
            lines += newlines
            if last >= 0 and b < size:
                bounds.append((chunk_start, last + 1))
                counts.append(lines)
                chunk_start, lines = last + 1, 0
            elif b - chunk_start > _LONGEST_LINE:
                raise _Irregular  # (a binary file is one endless line) the line reader reads it in pieces
    if chunk_start < size:
        bounds.append((chunk_start, size))
        counts.append(lines + int(not scanned[2]))  # a last line without its newline is a line too
    return bounds, counts


def _map_chunks(parse: Callable, bounds: list) -> list:
    """``parse`` over the chunks, on two threads when there are several (numpy and pread release the GIL)."""
    if len(bounds) < 4:
        return [parse(ab) for ab in bounds]

    results: list = [None] * len(bounds)
    failure: list = []
    lock = threading.Lock()
    next_index = [0]

    def work() -> None:
        while True:
            with lock:
                i = next_index[0]
                next_index[0] += 1
            if i >= len(bounds) or failure:
                return
            try:
                results[i] = parse(bounds[i])
            except BaseException as error:
                failure.append(error)
                return

    helper = threading.Thread(target=work, daemon=True)
    helper.start()
    work()
    helper.join()
    if failure:
        raise failure[0]
    return results


def _query_codes(chunks: list[_Chunk]) -> tuple[list[str], np.ndarray]:
    """Query keys (in order of first appearance) and each row's query code."""
    # A query's lines may continue in the next chunk (or come back later): the chunks'
    # distinct ids are numbered once more over the whole file.
    distinct = PackedIds.concat([c.queries for c in chunks])
    codes_of_distinct, first = distinct.factorize()
    keys = distinct.decode(first).tolist()
    codes = np.empty(sum(c.rows for c in chunks), dtype=np.int32 if len(keys) < 2**31 else np.int64)
    offsets = np.cumsum([0] + [len(c.queries) for c in chunks]).tolist()
    rows = np.cumsum([0] + [c.rows for c in chunks]).tolist()

    def fill(i: int) -> None:
        c = chunks[i]
        group_codes = codes_of_distinct[offsets[i] + c.group_codes]
        if c.group_starts.size == c.rows:  # every line a group of its own (queries interleaved)
            codes[rows[i] : rows[i + 1]] = group_codes
        else:
            codes[rows[i] : rows[i + 1]] = np.repeat(group_codes, np.diff(c.group_starts, append=c.rows))

    _map_chunks(fill, list(range(len(chunks))))
    return keys, codes


def _doc_ids(chunks: list[_Chunk], words: np.ndarray) -> PackedIds:
    """The doc ids of the whole file: ``words`` when every id fits one word, else packed anew."""
    if all(c.docs is None for c in chunks):
        return PackedIds(words)
    parts = []
    row = 0
    for c in chunks:
        parts.append(PackedIds(words[row : row + c.rows]) if c.docs is None else c.docs)
        row += c.rows
    return PackedIds.concat(parts)


def _parse_chunk(
    source: _Source, a: int, b: int, layout: Layout, values: np.ndarray, hashes: np.ndarray, words: np.ndarray
) -> _Chunk:
    """The lines of the file's bytes [a, b): fills values, hashes and (ids of one word) words."""
    # Read into a buffer of its own with readable padding around (and room for a final newline).
    length = b - a
    base = np.empty(_FRONT + length + 1 + _PAD, dtype=np.uint8)
    base[:_FRONT] = 0
    source.read_into(base[_FRONT : _FRONT + length], a)
    if base[_FRONT + length - 1] != 10:  # the file's last line, without its newline
        base[_FRONT + length] = 10
        length += 1
    base[_FRONT + length :] = 0
    try:
        return _parse_text(base, length, layout, values, hashes, words)
    except _Irregular:
        text = base[_FRONT : _FRONT + length]
        crlf = np.flatnonzero((text[:-1] == 13) & (text[1:] == 10))
        if not crlf.size:
            raise
    # Windows line ends: drop each \r before a \n and try again.
    keep = np.ones(length, dtype=bool)
    keep[crlf] = False
    stripped = text[keep]
    base = np.zeros(_FRONT + stripped.size + _PAD, dtype=np.uint8)
    base[_FRONT : _FRONT + stripped.size] = stripped
    return _parse_text(base, stripped.size, layout, values, hashes, words)


def _parse_text(
    base: np.ndarray, length: int, layout: Layout, values: np.ndarray, hashes: np.ndarray, words: np.ndarray
) -> _Chunk:
    """:func:`_parse_chunk` on base[_FRONT:_FRONT + length] (whole lines, readable padding around)."""
    ncols = len(layout.columns)
    text = base[_FRONT : _FRONT + length]
    sep = text <= 32
    if sep[0] or (sep[1:] & sep[:-1]).any():
        raise _Irregular  # leading whitespace, a blank line or several characters between fields
    seps = np.flatnonzero(sep)
    n = seps.size // ncols
    if n == 0 or seps.size != n * ncols or n != values.size:
        raise _Irregular
    fields = seps.reshape(n, ncols)
    if not (text[fields[:, -1]] == 10).all():
        raise _Irregular  # a line with another number of fields
    controls = int(np.count_nonzero(text < 32))
    if controls != n and controls != n + int(np.count_nonzero(text == 9)):
        raise _Irregular  # \r, \v, \f or other control bytes
    if int(text.max()) >= 127:
        if (text == 127).any():
            raise _Irregular  # DEL, a control character
        try:
            text.tobytes().decode("utf-8")
        except UnicodeDecodeError:
            raise _Irregular from None
    fields += _FRONT  # offsets into base
    u64 = np.ndarray((base.size - 7,), dtype="<u8", buffer=base, offset=0, strides=(1,))
    line_start = np.empty(n, dtype=np.int64)
    line_start[0] = _FRONT
    line_start[1:] = fields[:-1, -1] + 1
    # Query ids: runs of lines with the same id form groups; the groups' ids are numbered
    # here (in this thread) and once more over the whole file.
    query = PackedIds.from_text(u64, line_start, fields[:, 0] - line_start)
    change = np.flatnonzero(~query.same_as_previous()) + 1
    starts = np.concatenate(([0], change))
    groups = query if starts.size == n else query.take(starts)  # queries interleaved: a group per line
    del query
    group_codes, first = groups.factorize()
    doc_start = fields[:, layout.doc_index - 1] + 1
    docs = PackedIds.from_text(u64, doc_start, fields[:, layout.doc_index] - doc_start)
    value_start = fields[:, layout.value_index - 1] + 1
    try:
        values[:] = parse_numbers(u64, base, value_start, fields[:, layout.value_index])
    except NotANumber:
        raise _Irregular from None
    hashes[:] = docs.hashes()
    if docs.narrow:
        words[:] = docs.words
    return _Chunk(starts, group_codes, groups.take(first), n, None if docs.narrow else docs)


# ---- the line-by-line reader --------------------------------------------------------------


def _read_lines(path: Path, layout: Layout) -> FlatTable:
    """Read ``path`` line by line, checking everything; the first problem raises a located error.

    Used for layouts the fast reader does not take (runs of blanks, blank lines, extra
    fields after a run's tag) and to name the line of a problem the fast reader found.
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
        stamp = _stamp(handle.fileno())
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
        if _stamp(handle.fileno()) != stamp:
            raise _changed(path, stamp[0])
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
