"""TREC qrels and run files: fast reading, exact error locations, atomic writing.

qrels: ``qid iter doc_id grade``; run: ``qid Q0 doc_id rank score tag``, fields
separated by any whitespace (fields after a run's tag are ignored, as trec_eval
does). Files are parsed with numpy, without pandas (see the fast reader below);
when a check fails, the file is scanned again line by line so that the error
names the exact line and what is wrong with it.
"""

from __future__ import annotations

import math
from itertools import chain
from pathlib import Path
from typing import Mapping

import numpy as np

from rag_eval.errors import InputFormatError
from rag_eval.tables import FlatTable, check_unique_pairs, check_values, hash_words

QRELS_COLUMNS = ("qid", "iter", "doc_id", "grade")
RUN_COLUMNS = ("qid", "q0", "doc_id", "rank", "score", "tag")


def read_qrels(path: str | Path) -> FlatTable:
    """Read a TREC qrels file into judgement columns."""
    return _read(Path(path), QRELS_COLUMNS, value_index=3, what="judgements")


def read_run(path: str | Path) -> FlatTable:
    """Read a TREC run file into run columns (the rank column is ignored)."""
    return _read(Path(path), RUN_COLUMNS, value_index=4, what="run")


def _read(path: Path, columns: tuple[str, ...], value_index: int, what: str) -> FlatTable:
    if not path.is_file():
        raise InputFormatError(f"{path}: no such file")

    def locate_error() -> None:
        _scan_for_error(path, columns, value_index, what)

    try:
        try:
            keys, codes, words, values, hashes = _parse_fast(path, len(columns), value_index)
        except _Irregular:
            keys, codes, words, values = _parse_lines(path, columns, value_index, what)
            hashes = None
    except (UnicodeDecodeError, _Irregular):
        locate_error()
        raise InputFormatError(f"{path}: cannot be read as a TREC {what} file") from None
    if values.size == 0:
        if what == "judgements":
            raise InputFormatError(f"{path}: holds no judgements; expected lines 'qid iter doc_id grade'")
        return FlatTable([], np.empty(0, np.int64), np.empty(0, object), np.empty(0))
    table = FlatTable(keys, codes, values=values, doc_words=words, doc_hashes=hashes, locate_error=locate_error)
    table._cache["all_keys_have_rows"] = True  # the keys come from the rows
    try:
        check_values(table, what)
        check_unique_pairs(table, what)
    except InputFormatError as error:
        locate_error()
        raise InputFormatError(f"{path}: {error}") from None
    return table


# ---- the fast reader ----------------------------------------------------------------------
#
# The file is mapped into memory and cut into chunks of whole lines. A chunk in the
# usual layout (one space or tab between fields, one newline after each line) is
# parsed with a few numpy passes: the positions of all separators give every field's
# start and end; ids are packed into uint64 words and numbers are parsed eight
# characters at a time (SWAR) exactly as strtod would. Anything else (blank lines,
# runs of spaces, carriage returns, extra fields, exotic numbers) is handed to the
# line-by-line reader, which is slower but follows the same rules.

_CHUNK_BYTES = 1 << 21  # the largest chunk
_FRONT = 16  # readable bytes before a chunk (numbers are read as the 8 bytes that end them)
_PAD = 32  # readable bytes after a chunk, so that 16-byte windows never run off its end

_U64 = np.uint64
_ONE = _U64(1)
_ALL = _U64(2**64 - 1)
_BYTE_INDEX = _U64(0x0001020304050607)  # (1 << 8k) * this >> 56 == k
_ONES = _U64(0x0101010101010101)
_HIGHS = _U64(0x8080808080808080)
_DOTS = _U64(0x2E2E2E2E2E2E2E2E)
_ZEROS = _U64(0x3030303030303030)
_SEVENS = _U64(0x7676767676767676)
_LANES = (_U64(0x00FF00FF00FF00FF), _U64(0x0000FFFF0000FFFF), _U64(0x00000000FFFFFFFF))
_KEEP_LOW = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [2**64 - 1], dtype=_U64)  # low k bytes
_POW10_INT = np.array([10**k for k in range(17)], dtype=_U64)
_POW10 = np.array([10.0**k for k in range(23)])  # exact in float64
_EXACT = _U64(2**53)  # integers below this are exact in float64


class _Irregular(Exception):
    """The file is not in the layout the fast reader handles."""


def _parse_fast(path: Path, ncols: int, value_index: int) -> tuple:
    """(query keys, query codes, doc words, values, doc hashes) of a TREC file, or :class:`_Irregular`."""
    import mmap

    size = path.stat().st_size
    if size == 0:
        return [], np.empty(0, np.int32), np.zeros((0, 1), np.uint64), np.empty(0), np.empty(0, np.uint64)
    with path.open("rb") as handle:
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        data = np.frombuffer(mapped, dtype=np.uint8)
        # Chunks of about 1/32 of the file (within limits): their temporary arrays then
        # stay small next to the columns, however large or small the file is.
        chunk_bytes = min(max(size // 32, _CHUNK_BYTES // 8), _CHUNK_BYTES)
        bounds = []
        start = 0
        while start < size:
            end = min(start + chunk_bytes, size)
            if end < size:
                newline = mapped.find(b"\n", end - 1)
                end = size if newline < 0 else newline + 1
            bounds.append((start, end))
            start = end
        page = mmap.PAGESIZE

        def release(ab: tuple[int, int]) -> None:
            # Parsed lines are not needed again: drop their pages from this process (they stay
            # in the page cache), so that memory holds the columns, not the whole file too.
            lo, hi = -(-ab[0] // page) * page, ab[1] // page * page  # whole pages inside
            if hi > lo and hasattr(mapped, "madvise"):
                mapped.madvise(mmap.MADV_DONTNEED, lo, hi - lo)

        # First the lines of each chunk, so that every chunk writes its values straight into
        # the table's columns (no second copy of them in memory).
        # Pages are let go as soon as counted: the file is never mapped whole.
        counts = _map_chunks(lambda ab: int(np.count_nonzero(data[ab[0] : ab[1]] == 10)), bounds, release)
        counts[-1] += int(data[size - 1] != 10)
        offsets = np.cumsum([0] + counts).tolist()
        values = np.empty(offsets[-1], dtype=np.float64)
        hashes = np.empty(offsets[-1], dtype=np.uint64)
        words = np.empty((offsets[-1], 1), dtype=np.uint64)  # ids of up to 8 bytes go straight here
        tasks = [(a, b, offsets[i], offsets[i + 1]) for i, (a, b) in enumerate(bounds)]

        def parse(task: tuple[int, int, int, int]):
            a, b, lo, hi = task
            return _parse_chunk(data, a, b, ncols, value_index, values[lo:hi], hashes[lo:hi], words[lo:hi])

        chunks = _map_chunks(parse, tasks, release)
        del data
    finally:
        try:
            mapped.close()
        except BufferError:  # pragma: no cover - a view still alive (an exception's traceback)
            pass
    keys, codes, words = _assemble(chunks, words)
    return keys, codes, words, values, hashes


def _map_chunks(parse, bounds: list, release) -> list:
    """``parse`` over the chunks, on two threads when there are several (numpy releases the GIL).

    ``release(bounds[i])``, unless None, is called once chunk i and all before it are parsed.
    """
    if len(bounds) < 4:
        results = []
        for ab in bounds:
            results.append(parse(ab))
            if release is not None:
                release(ab)
        return results
    import threading

    results: list = [None] * len(bounds)
    done = [False] * len(bounds)
    failure: list = []
    lock = threading.Lock()
    next_index = [0]
    released = [0]

    def work() -> None:
        while True:
            with lock:
                i = next_index[0]
                next_index[0] += 1
            if i >= len(bounds) or failure:
                return
            try:
                results[i] = parse(bounds[i])
            except BaseException as error:  # re-raised in the caller's thread
                failure.append(error)
                return
            with lock:
                done[i] = True
                while release is not None and released[0] < len(bounds) and done[released[0]]:
                    release(bounds[released[0]])
                    released[0] += 1

    helper = threading.Thread(target=work, daemon=True)
    helper.start()
    work()
    helper.join()
    if failure:
        raise failure[0]
    return results


def _assemble(chunks: list, narrow: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Query keys, query codes and doc words of the whole file.

    ``narrow`` holds the words of the chunks whose ids all fit in one word; a chunk
    with longer ids returned its own words (then all are copied into a wider array).
    """
    # A query's lines may continue in the next chunk (or come back later): one code per id,
    # numbered in order of first appearance (C-level dict calls: there can be many queries).
    names = list(chain.from_iterable(chunk[1] for chunk in chunks))
    keys = dict(zip(dict.fromkeys(names), range(len(names))))
    group_codes = np.fromiter(map(keys.__getitem__, names), dtype=np.int32, count=len(names))
    group_lengths = np.concatenate([np.diff(starts, append=rows) for starts, _, rows, _ in chunks])
    codes = np.repeat(group_codes, group_lengths)
    width = max(1 if c[3] is None else c[3].shape[1] for c in chunks)
    if width == 1:
        return list(keys), codes, narrow
    words = np.zeros((narrow.shape[0], width), dtype=np.uint64)
    row = 0
    for i in range(len(chunks)):
        rows, wide = chunks[i][2], chunks[i][3]
        chunks[i] = None
        if wide is None:
            words[row : row + rows, :1] = narrow[row : row + rows]
        else:
            words[row : row + rows, : wide.shape[1]] = wide
        row += rows
    return list(keys), codes, words


def _parse_chunk(
    data: np.ndarray, a: int, b: int, ncols: int, value_index: int, values: np.ndarray, hashes: np.ndarray,
    words: np.ndarray,
):
    """The lines in data[a:b]: fills values, hashes and (ids of one word) words.

    Returns (group starts, group query ids, rows, doc words if any id needs more than one word).
    """
    if a >= _FRONT and b + _PAD <= data.size and data[b - 1] == 10:
        base = data[a - _FRONT : b + _PAD]
        length = b - a
    else:  # the first or last chunk: copy it, with padding (and a final newline)
        length = b - a + int(data[b - 1] != 10)
        base = np.zeros(_FRONT + length + _PAD, dtype=np.uint8)
        base[_FRONT : _FRONT + b - a] = data[a:b]
        base[_FRONT + length - 1] = 10
    try:
        return _parse_text(base, length, ncols, value_index, values, hashes, words)
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
    return _parse_text(base, stripped.size, ncols, value_index, values, hashes, words)


def _parse_text(
    base: np.ndarray, length: int, ncols: int, value_index: int, values: np.ndarray, hashes: np.ndarray,
    words: np.ndarray,
):
    """:func:`_parse_chunk` on base[_FRONT:_FRONT + length] (whole lines, readable padding around)."""
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
    if int(text.max()) >= 128:
        text.tobytes().decode("utf-8")  # raises UnicodeDecodeError
    fields += _FRONT  # offsets into base
    u64 = np.ndarray((base.size - 7,), dtype="<u8", buffer=base, offset=0, strides=(1,))
    line_start = np.empty(n, dtype=np.int64)
    line_start[0] = _FRONT
    line_start[1:] = fields[:-1, -1] + 1
    query = _pack(u64, line_start, fields[:, 0] - line_start)
    if query.shape[1] == 1:
        change = np.flatnonzero(query[1:, 0] != query[:-1, 0]) + 1
    else:
        change = np.flatnonzero((query[1:] != query[:-1]).any(axis=1)) + 1
    starts = np.concatenate(([0], change))
    names = [raw.decode("utf-8") for raw in query[starts].view(f"S{query.shape[1] * 8}").ravel().tolist()]
    doc_start = fields[:, 1] + 1
    docs = _pack(u64, doc_start, fields[:, 2] - doc_start)
    value_start = fields[:, value_index - 1] + 1
    value_end = fields[:, value_index]
    values[:] = _parse_numbers(u64, base, value_start, value_end)
    hashes[:] = hash_words(docs)
    if docs.shape[1] == 1:
        words[:] = docs
        docs = None
    return starts, names, n, docs


def _pack(u64: np.ndarray, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Tokens as (n, W) little-endian uint64 words, zero padded (the layout of pack_ids)."""
    longest, shortest = int(length.max()), int(length.min())
    width = max(1, (longest + 7) // 8)
    out = np.empty((start.size, width), dtype=np.uint64)
    for j in range(width):
        word = u64[start + 8 * j] if j else u64[start]
        if shortest < 8 * (j + 1):
            # keep the token's bytes of this word: (1 << 8 * bytes) - 1; numpy shifts by 64 give 0
            shift = (np.minimum(np.maximum(length - 8 * j, 0), 8) << 3).astype(np.uint64)
            word &= (_ONE << shift) - _ONE
        out[:, j] = word
    return out


def _swar8(v: np.ndarray) -> np.ndarray:
    """Eight digit values, one per byte (first digit in the lowest byte) -> their number."""
    v = v * _U64(10) + (v >> _U64(8))
    v &= _LANES[0]
    v = v * _U64(100) + (v >> _U64(16))
    v &= _LANES[1]
    v = v * _U64(10000) + (v >> _U64(32))
    v &= _LANES[2]
    return v


def _first_flagged_byte(flags: np.ndarray) -> np.ndarray:
    """Index of the lowest byte whose high bit is set (flags != 0)."""
    lowest = flags & (~flags + _U64(1))
    _, exponent = np.frexp(lowest.astype(np.float64))
    return (exponent - 1) >> 3


def _parse_numbers(u64: np.ndarray, base: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The numbers in base[start:end], exactly as strtod reads them (or :class:`_Irregular`)."""
    length = end - start
    if int(length.max()) <= 8:
        values, ok = _parse_short_numbers(u64, end, length)
    else:
        short = np.flatnonzero(length <= 8)
        values, ok = _parse_long_numbers(u64, base, start, end)
        if short.size:
            values[short], ok[short] = _parse_short_numbers(u64, end[short], length[short])
    if not ok.all():
        for i in np.flatnonzero(~ok).tolist():
            values[i] = _number(base[start[i] : end[i]].tobytes())
    return values


def _parse_short_numbers(u64: np.ndarray, end: np.ndarray, length: np.ndarray):
    """Numbers of 1..8 characters ``[sign][digits][.][digits]``: (values, ok).

    Each token is loaded right-aligned into one word (its last character in the
    top byte), the bytes before it set to '0', the dot taken out; the eight
    digits then give an integer M < 10**8 and M / 10**F is one correctly rounded
    division: the double strtod returns.
    """
    r = u64[end - 8]
    junk = ((8 - length) << 3).astype(np.uint64)  # bits below the token
    r >>= junk
    r <<= junk
    r |= _ZEROS >> (_U64(64) - junk)  # the bytes below the token become '0'
    first = (r >> junk) & _U64(0xFF)
    negative = first == _U64(45)
    signed = negative | (first == _U64(43))
    any_sign = bool(signed.any())
    if any_sign:
        r ^= np.where(signed, first ^ _U64(0x30), _U64(0)) << junk  # the sign becomes '0'
    x = r ^ _DOTS
    dots = (x - _ONES) & ~x & _HIGHS  # the high bit of a '.' byte (digits never borrow)
    first_dots = dots[0]
    if bool((dots == first_dots).all()):  # the usual case: one format, "%.4f" or integers
        if first_dots:
            dot = (int(first_dots).bit_length() - 8) // 8  # the byte of its high bit
            above = _U64(((1 << 64) - 1) ^ ((1 << (8 * dot + 8)) - 1)) if dot < 7 else _U64(0)
            r = (r & above) | (((r << _U64(8)) | _U64(0x30)) & ~above)  # bytes below the dot move up
        v = r ^ _ZEROS
        ok = ((v + _SEVENS | v) & _HIGHS) == 0  # eight digits 0..9 (a second dot is not)
        ok &= length > (1 if first_dots else 0) + signed  # at least one digit
        if not first_dots:
            ok &= length < 8  # eight characters and no dot: the top digit was shifted out
        values = _swar8(v).astype(np.float64)
        if first_dots:
            values /= _POW10[7 - dot]
    else:
        has_dot = dots != 0
        dot = ((dots >> _U64(7)) * _BYTE_INDEX) >> _U64(56)  # index of the '.' byte (one dot)
        fraction = np.where(has_dot, _U64(7) - dot, _U64(0))
        above = _ALL << ((dot + _ONE) << _U64(3))
        r = (r & above) | (((r << _U64(8)) | _U64(0x30)) & ~above)  # bytes below the dot move up
        v = r ^ _ZEROS
        ok = ((v + _SEVENS | v) & _HIGHS) == 0  # eight digits 0..9 (a second dot is not)
        ok &= has_dot | (length < 8)  # eight characters and no dot: the top digit was shifted out
        ok &= length > has_dot.astype(np.int64) + signed  # at least one digit
        values = _swar8(v).astype(np.float64) / _POW10[np.minimum(fraction, 7)]
    if any_sign:
        values = np.where(negative, -values, values)
    return values, ok


def _parse_long_numbers(u64: np.ndarray, base: np.ndarray, start: np.ndarray, end: np.ndarray):
    """Decimal numbers ``[sign]digits[.digits]`` of up to 16 characters, exactly as strtod.

    Returns (values, ok); rows not ok (longer, exponents, inf, garbage) are parsed
    one by one by the caller. A number is at most 15 significant digits here, so its
    digits form an integer M < 2**53 and M / 10**F is one correctly rounded division:
    the same double strtod returns.
    """
    length = end - start
    first = base[start]
    negative = first == 45
    signed = negative | (first == 43)
    any_sign = bool(signed.any())
    if any_sign:
        start = start + signed
        length = length - signed
    ok = (length >= 1) & (length <= 16)
    length = np.clip(length, 0, 16)
    two_words = bool(length.max() > 8)
    w0 = u64[start]
    w0 &= _KEEP_LOW[np.minimum(length, 8)]
    x0 = w0 ^ _DOTS
    z0 = (x0 - _ONES) & ~x0 & _HIGHS  # high bit of the first '.' byte (exact for the lowest)
    has0 = z0 != 0
    dot = np.where(has0, _first_flagged_byte(z0), length)
    if two_words:
        w1 = u64[start + 8]
        w1 &= _KEEP_LOW[np.clip(length - 8, 0, 8)]
        x1 = w1 ^ _DOTS
        z1 = (x1 - _ONES) & ~x1 & _HIGHS
        has1 = (z1 != 0) & ~has0
        dot = np.where(has1, 8 + _first_flagged_byte(z1), dot)
        has_dot = has0 | has1
        # Remove the dot: bytes above it move down one place.
        m0 = _KEEP_LOW[np.minimum(dot, 8)]
        m1 = _KEEP_LOW[np.clip(dot - 8, 0, 8)]
        d0 = (w0 & m0) | (((w0 >> _U64(8)) | (w1 << _U64(56))) & ~m0)
        d1 = (w1 & m1) | ((w1 >> _U64(8)) & ~m1)
    else:
        has_dot = has0
        m0 = _KEEP_LOW[dot]
        d0 = (w0 & m0) | ((w0 >> _U64(8)) & ~m0)
    digits = length - has_dot
    fraction = np.where(has_dot, length - dot - 1, 0)
    ok &= digits >= 1
    v0 = d0 ^ _ZEROS
    v0 &= _KEEP_LOW[np.minimum(digits, 8)]
    ok &= ((v0 + _SEVENS | v0) & _HIGHS) == 0  # every byte a digit 0..9
    first8 = _swar8(v0)  # the first 8 digits, zero padded on the right
    if two_words:
        v1 = d1 ^ _ZEROS
        v1 &= _KEEP_LOW[np.clip(digits - 8, 0, 8)]
        ok &= ((v1 + _SEVENS | v1) & _HIGHS) == 0
        long = digits > 8
        n_long = np.clip(digits, 8, 16)
        # digits 9..16: their value divided by 10**(16 - n), exact (an integer below 2**53).
        rest = (_swar8(v1).astype(np.float64) / _POW10[16 - n_long]).astype(np.uint64)
        mantissa = first8 * _POW10_INT[n_long - 8] + rest
        ok &= ~long | (mantissa < _EXACT)
        values = np.where(
            long,
            mantissa.astype(np.float64) / _POW10[np.minimum(fraction, 22)],
            first8.astype(np.float64) / _POW10[8 - np.minimum(digits, 8) + np.minimum(fraction, 14)],
        )
    else:
        values = first8.astype(np.float64) / _POW10[8 - digits + fraction]
    if any_sign:
        values = np.where(negative, -values, values)
    return values, ok


def _number(token: bytes) -> float:
    """One number the vectorised parser left (exponent, inf, nan, many digits)."""
    if b"_" in token:  # Python's float() takes 1_000; trec files do not
        raise _Irregular
    try:
        return float(token)
    except ValueError:
        raise _Irregular from None


def _parse_lines(
    path: Path, columns: tuple[str, ...], value_index: int, what: str
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """The line-by-line reader: any whitespace, blank lines, extra fields after a run's tag."""
    from rag_eval.tables import pack_ids

    expected = len(columns)
    keys: dict[str, int] = {}
    codes: list[int] = []
    docs: list[str] = []
    values: list[float] = []
    with path.open("rb") as handle:
        for line in handle:
            fields = line.split()
            if not fields:
                continue
            if len(fields) < expected or (len(fields) > expected and what != "run"):
                raise _Irregular
            codes.append(keys.setdefault(fields[0].decode("utf-8"), len(keys)))
            docs.append(fields[2].decode("utf-8"))
            values.append(_number(fields[value_index]))
    return (
        list(keys),
        np.array(codes, dtype=np.int32),
        pack_ids(docs) if docs else np.zeros((0, 1), np.uint64),
        np.array(values, dtype=np.float64),
    )


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

