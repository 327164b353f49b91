"""The fast TREC reader: a file in the usual layout parsed in chunks of whole lines with numpy.

:func:`read_fast` returns the table of a file in the usual layout (one space or tab between
fields, one newline after each line) or raises :class:`Irregular`: anything else, or a problem
whose line must be named, is read again by the line-by-line reader (``line_reader``), which
follows the same rules. How it reads is told below.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag_eval._core.files import BOM
from rag_eval._scoring.engine.fast_numbers import NotANumber, parse_numbers
from rag_eval._scoring.engine.file_stamp import changed_error, file_stamp
from rag_eval._scoring.engine.flat_table import FlatTable
from rag_eval._scoring.engine.layout import Layout
from rag_eval._scoring.engine.packed_ids import PackedIds

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


class Irregular(Exception):
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
        self.stamp = file_stamp(fd)
        self.size = self.stamp[0]

    def read(self, start: int, stop: int) -> bytes:
        """The bytes [start, stop) of the file."""
        data = os.pread(self.fd, stop - start, start)
        if len(data) != stop - start:
            raise changed_error(self.path, self.size)
        return data

    def read_into(self, buffer: np.ndarray, start: int) -> None:
        """Fill ``buffer`` (a contiguous uint8 view) with the file's bytes from ``start``."""
        view = buffer.data  # (a memoryview of the array: preadv writes into it)
        done = 0
        while done < len(view):  # preadv may return less than asked only at the end of the file
            n = os.preadv(self.fd, [view[done:]], start + done)
            if n <= 0:
                raise changed_error(self.path, self.size)
            done += n

    def scan(self, block: tuple[int, int]) -> tuple[int, int, bool]:
        """(newlines, offset of the last newline or -1, whether it ends with a newline) of the bytes [a, b)."""
        data = self.read(*block)
        last = data.rfind(b"\n")
        newlines = int(np.count_nonzero(np.frombuffer(data, dtype=np.uint8) == 10))
        return newlines, (block[0] + last if last >= 0 else -1), data.endswith(b"\n")

    def check_unchanged(self) -> None:
        """Raise when the file's size or modification time is not what it was when opened."""
        if file_stamp(self.fd) != self.stamp:
            raise changed_error(self.path, self.size)


def read_fast(path: Path, layout: Layout) -> FlatTable:
    """The table of a file in the usual layout, or :class:`Irregular`."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # a file that cannot be opened: the line reader says why
        raise Irregular from None
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
        raise Irregular  # a value to refuse (NaN, inf): the line reader names its line
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
            raise Irregular  # a first line of 64 KiB is no header: the line reader names what it holds
        end = len(head) if end < 0 else end + 1
        if tuple(head[start:end].split()) != layout.header:
            raise Irregular  # the line reader names what the first line holds
        start = end
    return start


def _chunk_bounds(source: _Source, start: int) -> tuple[list[tuple[int, int]], list[int]]:
    """[a, b) byte ranges of whole lines covering the file from ``start``, and the lines in each (pass one).

    The file is scanned in blocks, two threads at a time, eight blocks a batch: each block gives its
    newlines and its last one, and a chunk ends at the last newline of a block, so a chunk holds the
    newlines of exactly its blocks. A block without a newline (a line longer than a block) joins the next;
    a line longer than :data:`_LONGEST_LINE` is :class:`Irregular`, found within a batch of reading.
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
                raise Irregular  # (a binary file is one endless line) the line reader reads it in pieces
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
    except Irregular:
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
        raise Irregular  # leading whitespace, a blank line or several characters between fields
    seps = np.flatnonzero(sep)
    n = seps.size // ncols
    if n == 0 or seps.size != n * ncols or n != values.size:
        raise Irregular
    fields = seps.reshape(n, ncols)
    if not (text[fields[:, -1]] == 10).all():
        raise Irregular  # a line with another number of fields
    controls = int(np.count_nonzero(text < 32))
    if controls != n and controls != n + int(np.count_nonzero(text == 9)):
        raise Irregular  # \r, \v, \f or other control bytes
    if int(text.max()) >= 127:
        if (text == 127).any():
            raise Irregular  # DEL, a control character
        try:
            text.tobytes().decode("utf-8")
        except UnicodeDecodeError:
            raise Irregular from None
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
        raise Irregular from None
    hashes[:] = docs.hashes()
    if docs.narrow:
        words[:] = docs.words
    return _Chunk(starts, group_codes, groups.take(first), n, None if docs.narrow else docs)
