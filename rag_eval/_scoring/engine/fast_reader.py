"""The fast TREC reader: a file parsed in chunks of whole lines with numpy.

:func:`read_fast` returns the table of a file in any layout trec_eval reads (fields separated by
runs of blanks, blank lines, fields after a run's tag, Windows line ends) or raises
:class:`Irregular`: a problem whose line must be named (a bad number, a control character, a
line with too few fields, ...) is read again by the line-by-line reader (``line_reader``), which
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
from rag_eval._scoring.engine.packed_ids import PackedIds, group_tokens

# ---- the fast reader ----------------------------------------------------------------------
#
# The file is read in chunks of whole lines, each parsed with a few numpy passes. In the
# usual layout (one blank between fields, a newline right after the last) the positions of
# the blanks alone give every field's start and end (_single_separators); any other layout
# takes one more pass, which finds where fields start and end and where lines end among them
# (_any_blanks: runs of blanks, blanks before or after the fields, blank lines, fields after a
# run's tag). Ids are packed into uint64 words (engine.packed_ids: an id takes as many words
# as it needs) and numbers are parsed a word at a time (engine.fast_numbers), exactly as
# strtod and Python's float() read them, 17-digit reprs included. A problem (a control
# character, a bad number, a value to refuse, a line with too few fields, a line longer than
# _LONGEST_LINE) is handed to the line-by-line reader, which names its line.
#
# The chunks are read with pread into buffers of their own, not mapped: a mapped file cut
# short while it is read (a run file rewritten by another process) kills the process with
# SIGBUS, where a read simply returns fewer bytes, which is reported as one line. Two passes
# read the file: the first finds the chunks' line counts (so that every chunk writes its
# values straight into the table's columns; blank lines leave rows over, dropped at the end),
# the second parses them; the second read comes from the page cache. Memory holds the columns
# and a chunk or two, never the whole file.

_CHUNK_BYTES = 1 << 21  # the largest chunk
_BATCH = 8  # blocks scanned at a time in pass one
_LONGEST_LINE = 1 << 24  # a line longer than this (an id of megabytes, a binary file) goes to the line reader
_FRONT = 32  # readable bytes before a chunk (numbers are read as the words that end them: fast_numbers.FRONT_BYTES)
_PAD = 32  # readable bytes after a chunk: a word read at a token's last byte stays inside


class Irregular(Exception):
    """The file is not in the layout the fast reader handles (or holds a problem to locate)."""


@dataclass
class _Chunk:
    """What one chunk of lines gives: its query groups and (when wide) its doc ids."""

    group_starts: np.ndarray  # first line of each run of lines with the same query id
    group_codes: np.ndarray  # code of each group's query among ``queries``
    queries: PackedIds  # the chunk's distinct query ids, in order of first appearance
    query_hashes: np.ndarray  # their PackedIds.hashes()
    rows: int


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
        chunks, values, hashes, docs = _parse_file(source, start, layout)
        source.check_unchanged()
    finally:
        os.close(fd)
    if not np.isfinite(values).all():
        raise Irregular  # a value to refuse (NaN, inf): the line reader names its line
    keys, codes = _query_codes(chunks)
    return FlatTable(keys, codes, values=values, packed_docs=docs, doc_hashes=hashes, all_keys_have_rows=True)


def _parse_file(source: _Source, start: int, layout: Layout) -> tuple:
    """(chunks, values, doc hashes, doc ids) of the file's bytes from ``start``, parsed in chunks."""
    bounds, counts = _chunk_bounds(source, start)
    offsets = np.cumsum([0, *counts]).tolist()
    values = np.empty(offsets[-1], dtype=np.float64)
    hashes = np.empty(offsets[-1], dtype=np.uint64)
    doc_words = _DocWords(len(bounds), offsets[-1], source.size - start)
    tasks = [(i, a, b, offsets[i], offsets[i + 1]) for i, (a, b) in enumerate(bounds)]

    def parse(task: tuple[int, int, int, int, int]) -> _Chunk:
        i, a, b, lo, hi = task
        try:
            return _parse_chunk(source, a, b, layout, values[lo:hi], hashes[lo:hi], doc_words.chunk(i, lo))
        except BaseException:
            doc_words.fail()  # (a chunk waiting for this one's place gives up too)
            raise

    chunks = _map_chunks(parse, tasks)
    kept = [slice(lo, lo + c.rows) for c, (_, _, _, lo, _) in zip(chunks, tasks)]
    if any(c.rows < hi - lo for c, (_, _, _, lo, hi) in zip(chunks, tasks)):
        # Blank lines: each chunk filled the start of its rows; the rest go.
        values, hashes = (np.concatenate([column[k] for k in kept]) for column in (values, hashes))
    return chunks, values, hashes, doc_words.ids(kept)


class _DocWords:
    """The doc ids of a whole file, packed (engine.packed_ids) straight into one array by the chunks.

    A chunk's ids take as many words as they need, known once its fields are found: each chunk says
    how many (:meth:`_ChunkWords.place`) and gets its place after the chunks before it, waiting (on
    the other thread) for the ones still finding theirs. No copy of the ids is made afterwards. The
    array is reserved at a bound of the words any file of this size needs (a doc id of n bytes takes
    at most n / 8 + 1 words); only the words written are ever touched (taken from the system).
    """

    def __init__(self, chunks: int, rows: int, size: int) -> None:
        self.words = np.empty(size // 8 + rows + 1, dtype=np.uint64)
        self.starts = np.empty(rows + 1, dtype=np.int64)  # each row's first word (written for wide chunks)
        self.counts: list[int | None] = [None] * chunks
        self.wide = [False] * chunks  # some id of the chunk takes more than one word
        self.failed = False
        self.condition = threading.Condition()

    def chunk(self, index: int, row: int) -> _ChunkWords:
        return _ChunkWords(self, index, row)

    def place(self, index: int, count: int) -> int:
        """Say chunk ``index`` needs ``count`` words; its first word, once the chunks before it have theirs."""
        with self.condition:
            if self.counts[index] not in (None, count):
                raise Irregular  # (a chunk read again, its ids not the same: cannot happen)
            self.counts[index] = count
            self.condition.notify_all()
            while any(c is None for c in self.counts[:index]):
                if self.failed:
                    raise Irregular  # another chunk failed: the file goes to the line reader anyway
                self.condition.wait()
            return sum(c or 0 for c in self.counts[:index])

    def fail(self) -> None:
        with self.condition:
            self.failed = True
            self.condition.notify_all()

    def ids(self, rows: list[slice]) -> PackedIds:
        """The file's doc ids; ``rows``: each chunk's rows (the lines that are not blank)."""
        counts = [c or 0 for c in self.counts]
        total = sum(counts)
        words = self.words[:total]
        if not any(self.wide):  # one word per row: no starts needed
            return PackedIds(words)
        at = 0
        for wide, count, kept in zip(self.wide, counts, rows):
            if not wide:  # a chunk of one-word ids: its rows' words follow each other
                self.starts[kept] = np.arange(at, at + count)
            at += count
        starts = np.concatenate([self.starts[k] for k in rows] + [np.array([total])])
        return PackedIds(words, starts)


@dataclass
class _ChunkWords:
    """One chunk's part of :class:`_DocWords`: its index and first row."""

    shared: _DocWords
    index: int
    row: int

    def pack(self, u64: np.ndarray, start: np.ndarray, length: np.ndarray) -> PackedIds:
        """Pack the chunk's doc ids (tokens of its text) into their place; the chunk's ids as PackedIds."""
        counts = np.maximum(1, (length + 7) >> 3)
        wide = bool(length.size) and int(length.max()) > 8
        total = int(counts.sum()) if wide else length.size
        at = self.shared.place(self.index, total)
        out = self.shared.words[at : at + total]
        ids = PackedIds.from_text(u64, start, length, out=out)
        if wide:
            self.shared.wide[self.index] = True
            assert ids.starts is not None
            np.add(ids.starts[:-1], at, out=self.shared.starts[self.row : self.row + length.size])
        return ids


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
    # distinct ids are numbered once more over the whole file, by their hashes, and every
    # chunk's ids are then compared with the id of their number (in both threads).
    offsets = np.cumsum([0] + [len(c.queries) for c in chunks]).tolist()
    codes_of_distinct, first = PackedIds(np.concatenate([c.query_hashes for c in chunks])).factorize()
    owner = np.searchsorted(offsets, first, side="right") - 1  # the chunk of each code's first id
    starts = np.searchsorted(owner, np.arange(len(chunks) + 1))
    keys_ids = PackedIds.concat([
        chunks[i].queries.take(first[starts[i] : starts[i + 1]] - offsets[i]) for i in range(len(chunks))
    ])

    def confirm(i: int) -> bool:
        ids = chunks[i].queries
        return bool(ids.equal(np.arange(len(ids)), keys_ids, codes_of_distinct[offsets[i] : offsets[i + 1]]).all())

    if not all(_map_chunks(confirm, list(range(len(chunks))))):  # two ids shared a hash: astronomically rare
        distinct = PackedIds.concat([c.queries for c in chunks])
        codes_of_distinct, first = distinct.factorize()
        keys_ids = distinct.take(first)
    keys = keys_ids.decode().tolist()
    codes = np.empty(sum(c.rows for c in chunks), dtype=np.int32 if len(keys) < 2**31 else np.int64)
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


def _parse_chunk(
    source: _Source, a: int, b: int, layout: Layout, values: np.ndarray, hashes: np.ndarray, docs: _ChunkWords
) -> _Chunk:
    """The lines of the file's bytes [a, b): fills values and hashes, packs the doc ids into ``docs``."""
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
        return _parse_text(base, length, layout, values, hashes, docs)
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
    return _parse_text(base, stripped.size, layout, values, hashes, docs)


def _parse_text(
    base: np.ndarray, length: int, layout: Layout, values: np.ndarray, hashes: np.ndarray, doc_words: _ChunkWords
) -> _Chunk:
    """:func:`_parse_chunk` on base[_FRONT:_FRONT + length] (whole lines, readable padding around).

    Fills the first ``rows`` entries of values and hashes, ``rows`` being the chunk's lines that are
    not blank (all of them, unless some are).
    """
    text = base[_FRONT : _FRONT + length]
    tokens = _single_separators(text, layout)
    if tokens is None:
        tokens = _any_blanks(base, length, layout)
    # where each line's query id, doc id and value (then the layout's number_fields) start and end, offsets into base
    first, stop = tokens
    n = first[0].size
    if n > values.size:
        raise Irregular  # (more lines than newlines: cannot happen)
    if int(text.max()) >= 127:
        if (text == 127).any():
            raise Irregular  # DEL, a control character
        try:
            str(text.data, "utf-8")  # (checked, not kept)
        except UnicodeDecodeError:
            raise Irregular from None
    u64 = np.ndarray((base.size - 7,), dtype="<u8", buffer=base, offset=0, strides=(1,))
    docs = doc_words.pack(u64, first[1], stop[1] - first[1])  # first: a later chunk may wait for its place
    # Query ids: runs of lines with the same id form groups; the groups' ids are numbered
    # here (in this thread) and once more over the whole file.
    starts, group_codes, queries, query_hashes = group_tokens(u64, first[0], stop[0] - first[0])
    try:
        values[:n] = parse_numbers(u64, base, first[2], stop[2])
        for a, b in zip(first[3:], stop[3:]):  # a run's rank: a number, by the rule of the values (not kept)
            parse_numbers(u64, base, a, b)
    except NotANumber:
        raise Irregular from None  # the line reader names the line
    hashes[:n] = docs.hashes()
    return _Chunk(starts, group_codes, queries, query_hashes, n)


def _single_separators(text: np.ndarray, layout: Layout) -> tuple[list, list] | None:
    """(starts, ends) of the query id, doc id and value of every line in the usual layout, else None.

    The usual layout: one blank (space, tab, \\v or \\f) between fields, none before the first, a
    newline right after the last (no blank line, no field after a run's tag). Then the blanks alone,
    in order, are every field's end: the checks look at them only. Offsets are into the chunk's
    buffer (``base``); columns: query id, doc id, value.
    """
    ncols = len(layout.columns)
    seps = np.flatnonzero(text <= 32)
    n = seps.size // ncols
    if n == 0 or seps.size != n * ncols or seps[0] == 0:
        return None  # another number of fields, or blanks before the first
    if bool((seps[1:] - seps[:-1] == 1).any()):
        return None  # two blanks in a row, or a blank line
    fields = seps.reshape(n, ncols)
    if not bool((text[fields[:, -1]] == 10).all()):
        return None  # a line with another number of fields (or fields after the tag)
    controls = int(np.count_nonzero(text < 32))
    if controls != n and controls != n + int(np.count_nonzero(text == 9)):
        # \\v or \\f (blanks too), a newline inside a line, or a control character: that one is for
        # _any_blanks (it raises), as is \\r (Windows line ends, stripped by the caller)
        kinds = text[fields[:, :-1]]
        if not bool(((kinds == 32) | (kinds == 9) | (kinds == 11) | (kinds == 12)).all()):
            return None
    fields += _FRONT  # offsets into base
    line_start = np.empty(n, dtype=np.int64)
    line_start[0] = _FRONT
    line_start[1:] = fields[:-1, -1] + 1
    columns = (0, layout.doc_index, layout.value_index, *layout.number_fields)
    first = [fields[:, j - 1] + 1 if j else line_start for j in columns]
    return first, [fields[:, j] for j in columns]


def _any_blanks(base: np.ndarray, length: int, layout: Layout) -> tuple[list, list]:
    """:func:`_single_separators` for every line that is not blank, whatever the blanks between fields.

    As trec_eval (and bytes.split()): fields are separated by runs of ASCII white space (space, tab,
    \\v, \\f), before the first field and after the last there may be some, blank lines are skipped and
    a run's fields after its tag are ignored. Raises :class:`Irregular` for a line with too few (or,
    in judgements, too many) fields or a control character: the line reader names the line.
    """
    text = base[_FRONT : _FRONT + length]
    if int(np.count_nonzero(text < 32)) != int(np.count_nonzero(text - np.uint8(9) < 4)):  # (9..12)
        raise Irregular  # \\r inside a line or another control character
    blank = text <= 32
    before = base[_FRONT - 1 : _FRONT + length - 1] <= 32  # (the byte before the text is padding: blank)
    # Events: where a field starts, where one ends (the blank after it) and newlines, in order.
    events = np.flatnonzero((blank != before) | (text == 10))
    kinds = text[events]
    starting = np.flatnonzero(kinds > 32)  # the events where fields start
    if not starting.size:
        raise Irregular  # nothing but blank lines: the line reader reads them (an empty table)
    # A line ends after a field when the event after it (its end) is a newline, or when more events
    # (newlines: blank lines, blanks at a line's end) come before the next field.
    ends_line = np.empty(starting.size, dtype=bool)
    ends_line[-1] = True
    np.greater(starting[1:] - starting[:-1], 2, out=ends_line[:-1])
    ends_line |= kinds[starting + 1] == 10
    ncols = len(layout.columns)
    lines = int(np.count_nonzero(ends_line))
    if lines * ncols == starting.size and bool(ends_line.reshape(lines, ncols)[:, -1].all()):
        fields = starting.reshape(lines, ncols)  # every line has its fields, no more
    else:
        line_first = np.flatnonzero(np.concatenate(([True], ends_line[:-1])))
        counts = np.diff(line_first, append=starting.size)
        if not layout.extra_fields or int(counts.min()) < ncols:
            raise Irregular  # a line with another number of fields
        fields = starting[line_first[:, None] + np.arange(ncols)]
    first, stop = [], []
    for column in (0, layout.doc_index, layout.value_index, *layout.number_fields):
        at = fields[:, column]
        first.append(events[at] + _FRONT)
        stop.append(events[at + 1] + _FRONT)  # a field's next event is its end (the text ends with a newline)
    return first, stop
