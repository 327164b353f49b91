"""Ids of any length as packed UTF-8 bytes: hashing, exact comparison, byte order.

The fast TREC reader and the join keep doc ids (and, while reading, query ids) as
their UTF-8 bytes in little-endian uint64 words, one id after another, each zero
padded to a whole word. An id of up to 8 bytes (the usual case) is one word and a
table of such ids is one word per row; longer ids (URLs, ``<dbpedia:Oceanic_Airlines>``,
``reports/2024/q3.pdf#p12#c7``) take as many words as they need, so the memory
is proportional to the ids' bytes whatever the longest id is.

Ids never hold a NUL byte (rag_eval._core.ids refuses control characters), so zero
padding cannot make two different ids equal, and every word inside an id is
non-zero.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

_M1 = np.uint64(0xFF51AFD7ED558CCD)
_M2 = np.uint64(0xC4CEB9FE1A85EC53)
_S33 = np.uint64(33)
_PADDED_RANK_WORDS = 1 << 22  # byte_rank builds an (ids x words) matrix up to this size, else sorts bytes
# factorize's table: at most 2**20 slots (4 MiB, few page faults); past about 100,000 distinct ids,
# more of them share a slot and are numbered by the exact sort instead.
_MAX_SLOT_BITS = 20


def mix(x: np.ndarray) -> np.ndarray:
    """murmur3's 64-bit finaliser (a bijection with good avalanche), in place; returns ``x``."""
    x ^= x >> _S33
    x *= _M1
    x ^= x >> _S33
    x *= _M2
    x ^= x >> _S33
    return x


class PackedIds:
    """A sequence of ids stored as packed UTF-8 words.

    Id ``i`` is ``words[starts[i]:starts[i + 1]]``; ``starts`` is None when every id
    fits one word (then id ``i`` is ``words[i]``).
    """

    __slots__ = ("starts", "words")

    def __init__(self, words: np.ndarray, starts: np.ndarray | None = None) -> None:
        self.words = words
        self.starts = starts

    def __len__(self) -> int:
        return int(self.words.size if self.starts is None else self.starts.size - 1)

    def __repr__(self) -> str:
        return f"PackedIds({len(self)} ids, {self.words.size} words)"

    @property
    def narrow(self) -> bool:
        """True when every id is one word."""
        return self.starts is None

    # ---- building ------------------------------------------------------------------

    @classmethod
    def from_strings(cls, ids: Iterable[str]) -> PackedIds:
        """Pack str ids (UTF-8). An id holding a NUL character is refused (ValueError)."""
        return cls.from_bytes([s.encode("utf-8") for s in ids])

    @classmethod
    def from_bytes(cls, raw: Sequence[bytes]) -> PackedIds:
        """Pack byte strings. One holding a NUL byte is refused (ValueError): padding is zeros."""
        lengths = np.fromiter(map(len, raw), dtype=np.int64, count=len(raw))
        joined = b"".join(raw)
        if b"\0" in joined:
            bad = next(r for r in raw if b"\0" in r)
            raise ValueError(f"id {bad.decode('utf-8', 'replace')!r} holds a NUL character")
        if not lengths.size or int(lengths.max()) <= 8:
            return cls(np.frombuffer(b"".join(r.ljust(8, b"\0") for r in raw), dtype="<u8").astype(np.uint64))
        counts = np.maximum(1, -(-lengths // 8))
        padded = b"".join(r.ljust(8 * c, b"\0") for r, c in zip(raw, counts.tolist()))
        starts = np.zeros(len(raw) + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])
        return cls(np.frombuffer(padded, dtype="<u8").astype(np.uint64), starts)

    @classmethod
    def from_text(
        cls, u64: np.ndarray, start: np.ndarray, length: np.ndarray, out: np.ndarray | None = None
    ) -> PackedIds:
        """Tokens ``text[start:start + length]`` of a text seen as ``u64`` (the uint64 word at
        every byte offset: ``u64[i]`` holds bytes i..i+7). At least 7 readable bytes must
        follow each token; nothing beyond them is read. ``out``: the array the words go to
        (exactly as long as they need), when the caller has a place for them."""
        if not length.size or int(length.max()) <= 8:
            first = _token_word(u64, start, length, 0)
            if out is None:
                return cls(first)
            out[:] = first
            return cls(out)
        first = _token_word(u64, start, length, 0)
        counts = np.maximum(1, (length + 7) >> 3)
        starts = np.zeros(length.size + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])
        words = np.empty(int(starts[-1]), dtype=np.uint64) if out is None else out
        firsts = starts[:-1]
        words[firsts] = first
        j, shortest = 1, int(counts.min())
        while j < shortest:  # word j of every id
            words[firsts + j] = _token_word(u64, start, length, j)
            j += 1
        active = np.flatnonzero(counts > j)
        while active.size:  # word j of the ids that have one (fewer ids at each step)
            words[starts[active] + j] = _token_word(u64, start[active], length[active], j)
            j += 1
            active = active[counts[active] > j]
        return cls(words, starts)

    @staticmethod
    def concat(parts: Sequence[PackedIds]) -> PackedIds:
        """The ids of ``parts``, one after another."""
        if all(p.narrow for p in parts):
            return PackedIds(np.concatenate([p.words for p in parts]) if parts else np.empty(0, np.uint64))
        starts = [np.zeros(1, dtype=np.int64)]
        offset = 0
        for p in parts:
            local = np.arange(len(p) + 1, dtype=np.int64) if p.starts is None else p.starts
            starts.append(local[1:] + offset)
            offset += p.words.size
        return PackedIds(np.concatenate([p.words for p in parts]), np.concatenate(starts))

    def take(self, rows: np.ndarray) -> PackedIds:
        """The ids at ``rows``, as a new PackedIds."""
        rows = np.asarray(rows, dtype=np.int64)
        if self.narrow:
            return PackedIds(self.words[rows])
        first, counts = self._spans(rows)
        if not counts.size or int(counts.max()) == 1:
            return PackedIds(self.words[first])
        starts = np.zeros(rows.size + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])
        words = np.empty(int(starts[-1]), dtype=np.uint64)
        active = np.arange(rows.size)
        j = 0
        while active.size:
            words[starts[active] + j] = self.words[first[active] + j]
            j += 1
            active = active[counts[active] > j]
        return PackedIds(words, starts)

    # ---- reading -------------------------------------------------------------------

    def _spans(self, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(first word, word count) of each id at ``rows`` (None: all)."""
        starts = self.starts
        if starts is None:
            first = np.arange(len(self), dtype=np.int64) if rows is None else np.asarray(rows, dtype=np.int64)
            return first, np.ones(first.size, dtype=np.int64)
        if rows is None:
            return starts[:-1], np.diff(starts)
        first = starts[rows]
        return first, starts[np.asarray(rows) + 1] - first

    def hashes(self, rows: np.ndarray | None = None) -> np.ndarray:
        """64-bit hash of each id (of ``rows``; None: all): a function of the id's bytes only."""
        if self.narrow:
            return mix(self.words.copy() if rows is None else self.words[rows])
        first, counts = self._spans(rows)
        h = mix(self.words[first])
        j, shortest = 1, int(counts.min()) if counts.size else 1
        while j < shortest:  # word j of every id
            h ^= self.words[first + j]
            mix(h)
            j += 1
        active = np.flatnonzero(counts > j)
        while active.size:
            h[active] = mix(h[active] ^ self.words[first[active] + j])
            j += 1
            active = active[counts[active] > j]
        return h

    def equal(self, rows: np.ndarray, other: PackedIds, other_rows: np.ndarray) -> np.ndarray:
        """Whether id ``self[rows[i]]`` equals id ``other[other_rows[i]]``, for each i."""
        if self.narrow and other.narrow:
            return self.words[rows] == other.words[other_rows]
        first, counts = self._spans(rows)
        other_first, other_counts = other._spans(other_rows)
        same = counts == other_counts
        same &= self.words[first] == other.words[other_first]
        j, shortest = 1, int(np.minimum(counts, other_counts).min()) if counts.size else 1
        while j < shortest:  # word j of every id, on both sides
            same &= self.words[first + j] == other.words[other_first + j]
            j += 1
        active = np.flatnonzero(same & (counts > j))
        while active.size:
            same[active] = self.words[first[active] + j] == other.words[other_first[active] + j]
            j += 1
            active = active[same[active] & (counts[active] > j)]
        return same

    def same_as_previous(self) -> np.ndarray:
        """For each id but the first: whether it equals the id before it."""
        if self.narrow:
            return self.words[1:] == self.words[:-1]
        n = len(self)
        return self.equal(np.arange(1, n), self, np.arange(n - 1))

    def to_bytes(self, rows: np.ndarray | None = None) -> list[bytes]:
        """The ids (of ``rows``) as bytes."""
        if self.narrow:
            words = self.words if rows is None else self.words[rows]
            return [b.rstrip(b"\0") for b in words.astype("<u8").view("S8").tolist()]
        first, counts = self._spans(rows)
        if rows is not None and 8 * counts.sum() < self.words.size:  # a few ids: their words only
            words = self.words.astype("<u8", copy=False)
            return [words[f : f + c].tobytes().rstrip(b"\0") for f, c in zip(first.tolist(), counts.tolist())]
        raw = self.words.astype("<u8", copy=False).tobytes()
        return [
            raw[8 * f : 8 * (f + c)].rstrip(b"\0") for f, c in zip(first.tolist(), counts.tolist())
        ]

    def decode(self, rows: np.ndarray | None = None) -> np.ndarray:
        """The ids (of ``rows``) as an object array of str."""
        first, counts = self._spans(rows)
        if first.size < _DECODE_JOINED:
            return np.array([b.decode("utf-8") for b in self.to_bytes(rows)], dtype=object)
        # Many ids: their bytes copied out with numpy, a newline after each (no id holds one), decoded
        # as one text and split: a C loop, not a Python one per id.
        data = self.words.astype("<u8", copy=False).view(np.uint8)
        ids: list[str] = []
        for lo in range(0, first.size, _DECODE_JOINED):
            f, c = first[lo : lo + _DECODE_JOINED], counts[lo : lo + _DECODE_JOINED]
            last = self.words[f + c - 1]  # its top zero bytes are padding (an id's last word is never zero)
            length = 8 * c - 7
            for k in range(1, 8):
                length += last >= np.uint64(1 << (8 * k))
            span = length + 1
            at = np.cumsum(span) - span  # where each id starts in the joined text
            source = np.repeat(8 * f - at, span)
            source += np.arange(source.size)
            np.minimum(source, data.size - 1, out=source)  # (a newline's place: any byte, overwritten)
            joined = data[source]
            joined[at + length] = 10
            ids += joined.tobytes().decode("utf-8").split("\n")[:-1]
        return np.array(ids, dtype=object)

    def byte_rank(self, rows: np.ndarray) -> np.ndarray:
        """Rank (int64, from 0) of each id at ``rows`` in ascending byte order; equal ids, equal rank.

        Byte order is C's strcmp on the UTF-8 bytes, which is the order ranking.py
        breaks score ties by (descending): ``ranking.ranked`` sorts str, and str order
        is UTF-8 byte order.
        """
        rows = np.asarray(rows, dtype=np.int64)
        m = rows.size
        if m == 0:
            return np.empty(0, dtype=np.int64)
        first, counts = self._spans(rows)
        width = int(counts.max())
        if width == 1:
            _, rank = np.unique(self.words[first].byteswap(), return_inverse=True)
            return rank.ravel().astype(np.int64)
        if m * width <= _PADDED_RANK_WORDS:
            # Big-endian words, zero padded: comparing rows word by word compares their bytes,
            # and a shorter id (zeros after it) sorts before a longer one it is a prefix of.
            matrix = np.zeros((m, width), dtype=np.uint64)
            active = np.arange(m)
            j = 0
            while active.size:
                matrix[active, j] = self.words[first[active] + j].byteswap()
                j += 1
                active = active[counts[active] > j]
            order = np.lexsort(matrix.T[::-1])
            ordered = matrix[order]
            new = np.ones(m, dtype=bool)
            new[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
        else:  # very long ids among many rows: sort the byte strings themselves
            raw = self.to_bytes(rows)
            order = np.array(sorted(range(m), key=raw.__getitem__), dtype=np.int64)
            new = np.ones(m, dtype=bool)
            new[1:] = [raw[a] != raw[b] for a, b in zip(order[1:].tolist(), order[:-1].tolist())]
        rank = np.empty(m, dtype=np.int64)
        rank[order] = np.cumsum(new) - 1
        return rank

    def factorize(self, hashes: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(code of each id, row of each code's first occurrence): equal ids share a code,
        codes are numbered in order of first appearance. Exact (every match is confirmed).
        ``hashes``: :meth:`hashes`, when the caller has them already."""
        n = len(self)
        if n == 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        # A table of 8n slots, indexed by the high bits of each id's hash: written in reverse
        # row order, each slot keeps the first row that falls into it (numpy's last write
        # wins). A row whose id equals its slot's row has found its id's first occurrence:
        # an id that owns its slot owns it from its first row on. The ids of rows that do not
        # match (their slot went to another id) are numbered by sorting, among themselves.
        bits = min(max(10, (8 * n - 1).bit_length()), _MAX_SLOT_BITS)
        slot = ((self.hashes() if hashes is None else hashes) >> np.uint64(64 - bits)).astype(np.intp)
        table = np.empty(1 << bits, dtype=np.int32 if n < 2**31 else np.int64)
        table[slot[::-1]] = np.arange(n - 1, -1, -1, dtype=table.dtype)
        first_row = table[slot].astype(np.int64)
        del table, slot
        if self.narrow:
            rest = np.flatnonzero(self.words != self.words[first_row])
        else:
            rest = np.flatnonzero(~self.equal(np.arange(n), self, first_row))
        if rest.size:
            codes, first = self.take(rest)._factorize_by_sorting()
            first_row[rest] = rest[first[codes]]
        is_first = np.zeros(n, dtype=bool)
        is_first[first_row] = True
        number = np.cumsum(is_first) - 1
        return number[first_row], np.flatnonzero(is_first)

    def _factorize_by_sorting(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`factorize` by one sort of (hash, row) keys."""
        n = len(self)
        shift = np.uint64(max(1, (n - 1).bit_length()))
        # One plain sort of (hash, row) keys: equal ids become neighbours, the first of each
        # run of equal hashes is the id's first appearance (rows ascend within a run).
        keys = self.hashes()
        keys >>= shift
        keys <<= shift
        keys |= np.arange(n, dtype=np.uint64)
        keys.sort()
        rows = (keys & ((np.uint64(1) << shift) - np.uint64(1))).astype(np.int64)
        keys >>= shift
        new = np.ones(n, dtype=bool)
        np.not_equal(keys[1:], keys[:-1], out=new[1:])
        del keys
        first = rows[new]
        group = np.cumsum(new) - 1
        # Number the codes by first appearance.
        by_appearance = np.argsort(first)
        renumber = np.empty(first.size, dtype=np.int64)
        renumber[by_appearance] = np.arange(first.size, dtype=np.int64)
        codes = np.empty(n, dtype=np.int64)
        codes[rows] = renumber[group]
        first = first[by_appearance]
        if not bool(self.equal(np.arange(n), self, first[codes]).all()):
            return self._factorize_exactly()  # two ids shared a hash: astronomically rare
        return codes, first

    def _factorize_exactly(self) -> tuple[np.ndarray, np.ndarray]:
        seen: dict[bytes, int] = {}
        raw = self.to_bytes()
        codes = np.fromiter((seen.setdefault(r, len(seen)) for r in raw), dtype=np.int64, count=len(raw))
        first = np.full(len(seen), len(raw), dtype=np.int64)
        np.minimum.at(first, codes, np.arange(len(raw), dtype=np.int64))
        return codes, first


_ONE = np.uint64(1)


_DECODE_JOINED = 1 << 12  # ids decoded as one text from this many on (a block of this many at a time)
_GROUP_WORDS = 4  # query ids of up to this many words are grouped from a fixed-width copy of their words


def group_tokens(u64: np.ndarray, start: np.ndarray, length: np.ndarray):
    """Runs of equal tokens in a text (see :meth:`PackedIds.from_text`), numbered: how a chunk's query ids are read.

    Returns (where each run starts, the code of each run's token among the distinct ones, the
    distinct tokens in order of first appearance as :class:`PackedIds`, their :meth:`PackedIds.hashes`).
    Lines of a query usually come together (a run per query); in a file whose lines were shuffled
    every line is a run. Tokens of up to 32 bytes are read once into a word per 8 bytes, and those
    words serve for finding the runs, hashing them, numbering them (by hash) and confirming the
    numbers (every run's words equal to its code's first run): no token is packed but the distinct.
    """
    n = start.size
    longest = int(length.max())
    if longest <= 8 or longest > 8 * _GROUP_WORDS:
        ids = PackedIds.from_text(u64, start, length)
        starts = np.concatenate(([0], np.flatnonzero(~ids.same_as_previous()) + 1))
        groups = ids if starts.size == n else ids.take(starts)
        hashes = groups.hashes()
        codes, first = groups.factorize(hashes)
        return starts, codes, groups.take(first), hashes[first]
    words = []
    for j in range((longest + 7) // 8):  # word j of every token, zero past its end
        at = start if j == 0 else np.where(length > 8 * j, start + 8 * j, start)
        words.append(_cut(u64[at], length - 8 * j))
    same = length[1:] == length[:-1]
    for w in words:
        same &= w[1:] == w[:-1]
    starts = np.concatenate(([0], np.flatnonzero(~same) + 1))
    if starts.size < n:
        words = [w[starts] for w in words]
        start, length = start[starts], length[starts]
    counts = np.maximum(1, (length + 7) >> 3)
    hashes = mix(words[0].copy())  # as PackedIds.hashes: a word more mixed in for each word an id has
    for j in range(1, len(words)):
        hashes = np.where(counts > j, mix(hashes ^ words[j]), hashes)
    codes, first = PackedIds(hashes).factorize()  # by hash, then confirmed on the words
    of_code = first[codes]
    confirmed = length == length[of_code]
    for w in words:
        confirmed &= w == w[of_code]
    if not bool(confirmed.all()):  # two tokens shared a hash: astronomically rare
        groups = PackedIds.from_text(u64, start, length)
        hashes = groups.hashes()
        codes, first = groups.factorize(hashes)
    return starts, codes, PackedIds.from_text(u64, start[first], length[first]), hashes[first]


def _cut(words: np.ndarray, length: np.ndarray) -> np.ndarray:
    """``words`` with the bytes from ``length`` on (when under 8; none when 0 or less) zeroed, in place."""
    if length.size and int(length.min()) < 8:
        shift = np.clip(length, 0, 8).astype(np.uint64)
        shift <<= np.uint64(3)
        words &= (_ONE << shift) - _ONE  # numpy shifts by 64 give 0
    return words


def _token_word(u64: np.ndarray, start: np.ndarray, length: np.ndarray, j: int) -> np.ndarray:
    """Word ``j`` (bytes 8j..8j+7) of each token, the bytes past its end zeroed."""
    word = u64[start + 8 * j] if j else u64[start]
    if int(length.min()) < 8 * (j + 1):
        # keep the token's bytes of this word: (1 << 8 * bytes) - 1; numpy shifts by 64 give 0
        shift = np.minimum(length - 8 * j, 8).astype(np.uint64)
        shift <<= np.uint64(3)
        word &= (_ONE << shift) - _ONE
    return word
