"""Per-passage embedding store: one embedding per (model, encoding options, exact text).

Layout::

    <root>/passages/<namespace>/<name>.emb      one shard per put(), written atomically

``namespace`` = :func:`namespace_key` (model content hash + everything else that changes the
numbers); a key = :func:`text_key` (sha256 of the exact text the encoder receives). Editing one
passage changes one key, so one passage is re-encoded; chunkings and corpora that share texts
share keys, so they share embeddings.

A shard file (little-endian)::

    8 bytes   magic b"RAGEMB\\x00\\x01"
    4 bytes   header length H (uint32)
    H bytes   header, JSON: {"format", "count", "dim", "dtype": "<f4", "sha256"}, padded with
              spaces so that the payload starts at a multiple of 64 bytes
    payload   count x 32 bytes: the keys (sha256 digests, sorted), then
              count x dim float32: the vectors, row i belonging to key i

The shard's NAME is the sha256 of its sorted hex keys joined by newlines, and ``sha256`` in the
header covers the payload: a changed key, vector, header or length is detected (name, checksum,
size), the shard is skipped with an :class:`EmbeddingCacheWarning`, removed when it is a regular
file, and its keys count as missing (the caller re-encodes them). A FIFO, device or folder in a
shard's place is never read (opened non-blocking, checked with fstat).

Why this store and not LMDB or Arrow/Lance: the writers are several processes, possibly Ray
workers on several machines sharing only a filesystem or object store. Append-only files whose
names are derived from their content need no lock server and no single writer: two writers never
touch the same file unless they write the same batch (a retried worker), and then the last
``os.replace`` wins with identical content, so there are neither duplicates nor holes. LMDB
allows one writer at a time and its lock file does not work on network filesystems; an
Arrow/Lance dataset needs a commit protocol for concurrent appends. Each write is a temporary
file renamed into place, so a committed name is always a whole shard and a killed run loses
at most the batch in flight.

Scale: opening a store reads every shard's header and keys (32 bytes per entry), not the
vectors, and keeps the keys as one sorted numpy array (``searchsorted`` lookups, no Python
object per entry). Vectors are memory-mapped when read; each shard's checksum is verified the
first time this process reads from it. :meth:`EmbeddingStore.compact` merges small shards.

Importing this module needs numpy only.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import stat
import struct
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rag_eval._core.atomic import atomic_writer
from rag_eval._core.files import describe_kind

FORMAT_VERSION = 1

_MAGIC = b"RAGEMB\x00\x01"
_SUFFIX = ".emb"
_ALIGN = 64
_KEY_BYTES = 32
_MAX_HEADER = 1 << 16
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


class EmbeddingCacheWarning(UserWarning):
    """A cache entry was unusable (corrupt, partial, mismatched) or could not be written; the run goes on."""


def text_key(text: str) -> str:
    """sha256 hex of the UTF-8 of ``text``, the exact text the encoder receives (prefix included).

    Lone surrogates (valid in JSON strings) are encoded with ``surrogatepass`` so every
    Python string has a key and no two strings share one.
    """
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def namespace_key(model_identity: str, options: Mapping[str, Any]) -> str:
    """sha256 hex over (FORMAT_VERSION, model identity, canonical JSON of the encoding options).

    ``options`` must hold everything besides the model and the text that changes the numbers
    (kind of text, normalisation, max_seq_length, backend, quantisation, precision ...);
    key order does not matter.
    """
    payload = json.dumps(
        {"format": FORMAT_VERSION, "model": model_identity, "options": dict(options)},
        sort_keys=True,
        ensure_ascii=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("ascii")).hexdigest()


@dataclass
class _Shard:
    """What the index knows of one committed shard (its keys are in memory, its vectors are not)."""

    path: Path
    keys: np.ndarray  # (count,) S32, sorted
    dim: int
    vectors_at: int  # byte offset of the vectors
    checksum: str  # sha256 of the payload (keys + vectors), from the header
    signature: tuple[int, int, int]  # (inode, size, mtime_ns): a rewritten file is checked again
    verified: bool = False


@dataclass
class _Index:
    """All valid shards' keys as one sorted array, with the shard and row of each."""

    keys: np.ndarray = field(default_factory=lambda: np.empty(0, dtype="S32"))
    shard: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    row: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    names: list[str] = field(default_factory=list)


class _Unusable(Exception):
    """A shard failed a check (the message says which); ``remove``: the file itself is bad, not our access to it."""

    def __init__(self, message: str, remove: bool = True) -> None:
        super().__init__(message)
        self.remove = remove


class EmbeddingStore:
    """Embeddings of one namespace under ``<root>/passages/<namespace>/`` (see the module docstring)."""

    def __init__(self, root: Path | str, namespace: str) -> None:
        if not namespace or namespace in (".", "..") or not all(c.isalnum() or c in "-_." for c in namespace):
            raise ValueError(f"embedding store namespace {namespace!r} must be a plain name (use namespace_key())")
        self.root = Path(root).expanduser()
        self.namespace = namespace
        self.directory = self.root / "passages" / namespace
        self._shards: dict[str, _Shard] = {}
        self._bad: dict[str, tuple[int, int, int] | None] = {}  # names skipped, with the signature they had
        self._dim: int | None = None
        self._index: _Index | None = None

    # ------------------------------------------------------------------ reading

    def get(self, keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(vectors float32 (n, dim) in the order of ``keys``, found bool (n,)); missing rows are zeros.

        With an empty store the dim is unknown and the vectors have shape (n, 0). A shard
        that fails its checksum here is skipped with a warning; its keys are looked up in
        other shards, else reported missing.
        """
        wanted = _digests(keys)
        self._refresh()
        found = np.zeros(len(wanted), dtype=bool)
        vectors = np.zeros((len(wanted), self._dim or 0), dtype=np.float32)
        while True:
            index = self._built_index()
            todo = np.flatnonzero(~found)
            if not len(todo) or not len(index.keys):
                return vectors, found
            pos = np.searchsorted(index.keys, wanted[todo])
            inside = pos < len(index.keys)
            hit = np.zeros(len(todo), dtype=bool)
            hit[inside] = index.keys[pos[inside]] == wanted[todo[inside]]
            todo, pos = todo[hit], pos[hit]
            if not len(todo):
                return vectors, found
            if vectors.shape[1] != (self._dim or 0) and not found.any():
                vectors = np.zeros((len(wanted), self._dim or 0), dtype=np.float32)
            failed = False
            shard_of = index.shard[pos]
            for shard_id in np.unique(shard_of):
                chosen = shard_of == shard_id
                name = index.names[shard_id]
                try:
                    vectors[todo[chosen]] = self._read_rows(name, index.row[pos[chosen]])
                except FileNotFoundError:  # compacted or removed by another process: look again
                    self._forget(name, None)
                    self._refresh()
                    failed = True
                except _Unusable as problem:
                    self._reject(self._shards[name].path, str(problem), remove=problem.remove)
                    failed = True
                else:
                    found[todo[chosen]] = True
            if not failed:
                return vectors, found

    def __len__(self) -> int:
        """Number of distinct keys stored (in valid shards)."""
        self._refresh()
        keys = self._built_index().keys
        return int(len(keys) and 1 + np.count_nonzero(keys[1:] != keys[:-1]))

    def shard_paths(self) -> list[Path]:
        """Committed, valid shards (headers and names checked), sorted by name, to stream shard by shard."""
        self._refresh()
        return [self._shards[name].path for name in sorted(self._shards)]

    # ------------------------------------------------------------------ writing

    def put(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        """Write one new shard holding ``vectors`` (row i for ``keys[i]``), atomically.

        The name comes from the keys, so putting the same batch again (a retried worker)
        rewrites the same file. An OSError (full or read-only disk) is reported as an
        :class:`EmbeddingCacheWarning` and the run goes on; wrong shapes raise ValueError.
        """
        array = np.asarray(vectors)
        if array.ndim != 2 or array.shape[0] != len(keys):
            raise ValueError(f"embedding store: {len(keys)} keys but vectors of shape {array.shape}")
        if self._dim is not None and array.shape[1] != self._dim:
            raise ValueError(f"embedding store {self.directory}: vectors of dim {array.shape[1]}, stored {self._dim}")
        if not len(keys):
            return
        digests, first = np.unique(_digests(keys), return_index=True)  # sorted; a repeated key kept once
        rows = np.ascontiguousarray(array[first], dtype="<f4")
        name = _shard_name(digests)
        payload = [digests.tobytes(), rows.tobytes()]
        checksum = hashlib.sha256()
        for part in payload:
            checksum.update(part)
        header = _header(len(digests), rows.shape[1], checksum.hexdigest())
        path = self.directory / f"{name}{_SUFFIX}"

        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with atomic_writer(path) as handle:
                handle.write(header)
                for part in payload:
                    handle.write(part)
            info = os.stat(path)
        except OSError as error:
            warnings.warn(
                f"could not write embedding shard {path}: {error.strerror or error}; "
                f"these {len(digests)} embeddings are not cached",
                EmbeddingCacheWarning,
                stacklevel=2,
            )
            return
        self._bad.pop(name, None)
        shard = _Shard(
            path, digests, rows.shape[1], len(header) + digests.nbytes, checksum.hexdigest(), _signature(info)
        )
        shard.verified = True  # written just now from these very arrays
        self._add(name, shard)

    def compact(self, target_rows: int = 65536) -> int:
        """Merge shards of fewer than ``target_rows`` rows into shards of about ``target_rows``; returns shards removed.

        Merged shards are written (and committed) before the small ones are removed, so a
        concurrent reader always finds every key in some shard (a reader that misses a
        removed file looks again).
        """
        self._refresh()
        self._remove_stale_temporaries()
        small = sorted(name for name, shard in self._shards.items() if len(shard.keys) < target_rows)
        if len(small) < 2:
            return 0
        removed = 0
        group: list[str] = []
        for position, name in enumerate(small):
            group.append(name)
            size = sum(len(self._shards[n].keys) for n in group)
            if size >= target_rows or position == len(small) - 1:
                removed += self._merge(group)
                group = []
        return removed

    def _remove_stale_temporaries(self, older_than_s: float = 24 * 3600) -> None:
        """Remove temporary files of writes killed long ago (a write in progress is seconds old)."""

        try:
            entries = [e for e in os.listdir(self.directory) if e.startswith(".") and e.endswith(".tmp")]
        except OSError:
            return
        for entry in entries:
            path = self.directory / entry
            try:
                info = os.lstat(path)
                if stat.S_ISREG(info.st_mode) and time.time() - info.st_mtime > older_than_s:
                    os.unlink(path)
            except OSError:
                continue

    def _merge(self, names: list[str]) -> int:
        if len(names) < 2:
            return 0
        parts_keys, parts_vectors, merged = [], [], []
        for name in names:
            shard = self._shards.get(name)
            if shard is None:
                continue
            try:
                parts_vectors.append(self._read_rows(name, np.arange(len(shard.keys))))
            except FileNotFoundError:
                self._forget(name, None)
                continue
            except _Unusable as problem:
                self._reject(shard.path, str(problem), remove=problem.remove)
                continue
            parts_keys.extend(_hex(shard.keys))
            merged.append(shard)
        if len(merged) < 2:
            return 0
        before = set(self._shards)
        self.put(parts_keys, np.concatenate(parts_vectors))
        if set(self._shards) == before:  # the merged shard was not written: keep the small ones
            return 0
        removed = 0
        for shard in merged:
            name = shard.path.name[: -len(_SUFFIX)]
            if name in self._shards and self._shards[name] is not shard:
                continue  # the merged shard has this very name (same keys): nothing to remove
            try:
                os.unlink(shard.path)
                removed += 1
            except FileNotFoundError:
                pass
            except OSError:
                continue
            self._forget(name, None)
        return removed

    # ------------------------------------------------------------------ index

    def _refresh(self) -> None:
        """Index shards committed since the last look (by this or another process)."""
        try:
            names = sorted(entry for entry in os.listdir(self.directory) if entry.endswith(_SUFFIX))
        except FileNotFoundError:
            return
        except OSError as error:
            warnings.warn(
                f"cannot list embedding store {self.directory}: {error.strerror or error}; treating it as empty",
                EmbeddingCacheWarning,
                stacklevel=3,
            )
            return
        for entry in names:
            name = entry[: -len(_SUFFIX)]
            if entry.startswith(".") or name in self._shards:
                continue  # "." = a temporary file of a write in progress
            path = self.directory / entry
            if name in self._bad:
                try:
                    if _signature(os.lstat(path)) == self._bad[name]:
                        continue  # the same bad file: warned once already
                except OSError:
                    continue
            try:
                shard = self._open(path, name)
            except FileNotFoundError:
                continue
            except _Unusable as problem:
                self._reject(path, str(problem), remove=problem.remove)
                continue
            self._add(name, shard)

    def _add(self, name: str, shard: _Shard) -> None:
        if self._dim is None:
            self._dim = shard.dim
        elif shard.dim != self._dim:
            self._reject(shard.path, f"its vectors have dim {shard.dim}, the store's others {self._dim}", remove=False)
            return
        self._shards[name] = shard
        self._index = None

    def _forget(self, name: str, signature: tuple[int, int, int] | None) -> None:
        if self._shards.pop(name, None) is not None:
            self._index = None
        if signature is not None:
            self._bad[name] = signature
        if not self._shards:
            self._dim = None

    def _built_index(self) -> _Index:
        if self._index is None:
            names = sorted(self._shards)
            if not names:
                self._index = _Index()
                return self._index
            keys = np.concatenate([self._shards[n].keys for n in names])
            shard = np.repeat(np.arange(len(names), dtype=np.int64), [len(self._shards[n].keys) for n in names])
            row = np.concatenate([np.arange(len(self._shards[n].keys), dtype=np.int64) for n in names])
            order = np.argsort(keys, kind="stable")
            self._index = _Index(keys[order], shard[order], row[order], names)
        return self._index

    def _reject(self, path: Path, problem: str, remove: bool = True) -> None:
        """Warn, stop using the shard and remove it (a regular file or FIFO only), so later runs do not warn again."""
        name = path.name[: -len(_SUFFIX)]
        try:
            info = os.lstat(path)
        except OSError:
            info = None
        self._forget(name, _signature(info) if info is not None else None)
        removed = False
        if remove and info is not None and (stat.S_ISREG(info.st_mode) or stat.S_ISFIFO(info.st_mode)):
            try:
                # Only the file we examined: a correct shard written under this name since then is kept.
                if _signature(os.lstat(path)) == _signature(info):
                    os.unlink(path)
                    removed = True
            except OSError:
                pass
        warnings.warn(
            f"embedding cache shard {path} is unusable: {problem}; "
            f"{'removed it; ' if removed else ''}its embeddings count as missing and are re-encoded",
            EmbeddingCacheWarning,
            stacklevel=4,
        )

    # ------------------------------------------------------------------ one shard

    def _open(self, path: Path, name: str) -> _Shard:
        """Read and check a shard's header and keys (not its vectors)."""
        fd = _open_regular(path)
        try:
            return _parse(fd, path, name)
        except OSError as error:  # an I/O error is not proof that the file is bad: keep it
            raise _Unusable(f"cannot be read ({error.strerror or error})", remove=False) from None
        finally:
            os.close(fd)

    def _read_rows(self, name: str, rows: np.ndarray) -> np.ndarray:
        """Vectors of ``rows`` of shard ``name``, memory-mapped; the checksum is verified on first use."""
        shard = self._shards[name]
        fd = _open_regular(shard.path)
        try:
            info = os.fstat(fd)
            if _signature(info) != shard.signature:  # rewritten since indexed (a retried batch): check it again
                fresh = _parse(fd, shard.path, name)
                if fresh.dim != shard.dim or len(fresh.keys) != len(shard.keys):
                    raise _Unusable("it changed shape since it was indexed")
                shard = self._shards[name] = fresh
            if info.st_size == 0:
                raise _Unusable("it is empty")
            with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as mapped:
                if not shard.verified:
                    with memoryview(mapped) as view:
                        digest = hashlib.sha256(view[shard.vectors_at - shard.keys.nbytes :]).hexdigest()
                    if digest != shard.checksum:
                        raise _Unusable("checksum mismatch (the file was modified or partly written)")
                    shard.verified = True
                matrix = np.frombuffer(mapped, dtype="<f4", count=len(shard.keys) * shard.dim, offset=shard.vectors_at)
                out = matrix.reshape(len(shard.keys), shard.dim)[rows]  # fancy indexing: a copy, not a view
                del matrix  # the map can only be closed once no array points into it
            return out
        except OSError as error:
            raise _Unusable(f"cannot be read ({error.strerror or error})", remove=False) from None
        finally:
            os.close(fd)


# ---------------------------------------------------------------------- encoding through the store


def encode_missing(
    texts: Sequence[str],
    encode: Callable[[list[str]], np.ndarray],
    store: EmbeddingStore | None,
    *,
    write_every: int | Callable[[], int] = 1024,
    progress: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, dict[str, int]]:
    """Embeddings of ``texts`` (float32, one row per text, in order), encoding only what the store lacks.

    Distinct missing texts are encoded ``write_every`` at a time and each batch is put into
    the store as soon as it is encoded, so a run killed during encoding loses at most the
    batch in flight. ``progress`` is called with each batch's size. Returns the array and
    ``{"reused": r, "encoded": e, "duplicates": d}``: r + e distinct texts, d repeats of them
    (r + e + d = len(texts)). With ``store=None`` every distinct text is encoded, nothing written.
    ``write_every`` may be a callable, asked only when something is missing (it may load the model
    to decide: a GPU encodes more texts a call than a CPU).
    """
    keys = [text_key(text) for text in texts]
    first: dict[str, int] = {}
    for i, key in enumerate(keys):
        first.setdefault(key, i)
    distinct_keys = list(first)
    slot = {key: n for n, key in enumerate(distinct_keys)}
    inverse = np.array([slot[key] for key in keys], dtype=np.int64)
    if store is not None and distinct_keys:
        distinct, found = store.get(distinct_keys)
    else:
        distinct, found = np.zeros((len(distinct_keys), 0), dtype=np.float32), np.zeros(len(distinct_keys), bool)
    missing = np.flatnonzero(~found)
    every = (write_every() if callable(write_every) else write_every) if len(missing) else 1
    if every < 1:
        raise ValueError(f"write_every must be >= 1, got {every}")
    for start in range(0, len(missing), every):
        batch = missing[start : start + every]
        batch_texts = [texts[first[distinct_keys[i]]] for i in batch]
        vectors = np.asarray(encode(batch_texts))
        if vectors.ndim != 2 or vectors.shape[0] != len(batch):
            raise ValueError(f"encode returned shape {vectors.shape} for {len(batch)} texts")
        if distinct.shape[1] != vectors.shape[1]:
            if found.any():
                raise ValueError(
                    f"encode returned dim {vectors.shape[1]} but the embedding store "
                    f"{store.directory if store else ''} holds dim {distinct.shape[1]}"
                )
            distinct = np.zeros((len(distinct_keys), vectors.shape[1]), dtype=np.float32)
        distinct[batch] = vectors
        if store is not None:
            store.put([distinct_keys[i] for i in batch], distinct[batch])
        if progress is not None:
            progress(len(batch))
    counts = {
        "reused": int(np.count_nonzero(found)),
        "encoded": len(missing),
        "duplicates": len(keys) - len(distinct_keys),
    }
    return np.ascontiguousarray(distinct[inverse], dtype=np.float32), counts


# ---------------------------------------------------------------------- file format helpers


class PackedKeys(Sequence[str]):
    """Store keys held as raw 32-byte digests: 32 bytes a key, where a 64-digit hex str takes 113.

    A sequence of the hex keys (``keys[i]`` is ``text_key(...)``; a slice is PackedKeys again;
    equal to any sequence of the same hex keys), for the driver of a run over millions of
    passages, which holds a key per row while searching. The store reads it without converting.
    """

    __slots__ = ("digests",)

    def __init__(self, digests: np.ndarray) -> None:
        self.digests = np.ascontiguousarray(digests, dtype="S32")

    @classmethod
    def from_hex(cls, keys: Sequence[str]) -> PackedKeys:
        """Packed from hex keys (ValueError for anything that is not 64 hex digits)."""
        return cls(_digests(keys))

    def __len__(self) -> int:
        return len(self.digests)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return PackedKeys(self.digests[index])
        position = index + len(self.digests) if index < 0 else index
        if not 0 <= position < len(self.digests):
            raise IndexError(f"key {index} of {len(self.digests)}")
        # A slice of one, not digests[i]: numpy strips the trailing zero bytes of an S32 element.
        return self.digests[position : position + 1].tobytes().hex()

    def __iter__(self) -> Any:
        step = 65536  # hex strings made a block at a time, never all at once
        for start in range(0, len(self.digests), step):
            yield from _hex(self.digests[start : start + step])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PackedKeys):
            return bool(np.array_equal(self.digests, other.digests))
        return isinstance(other, Sequence) and not isinstance(other, str) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PackedKeys({len(self):,} keys)"


def _digests(keys: Sequence[str]) -> np.ndarray:
    """Hex keys as an (n,) S32 array of raw digests; ValueError for anything that is not 64 hex digits."""
    if isinstance(keys, PackedKeys):
        return keys.digests
    raw = b""
    if all(isinstance(key, str) and len(key) == 64 for key in keys):
        try:
            raw = bytes.fromhex("".join(keys))
        except ValueError:
            pass
    if len(raw) != _KEY_BYTES * len(keys):  # fromhex skips spaces: a short result means a bad key too
        bad = next(k for k in keys if not (isinstance(k, str) and len(k) == 64 and set(k) <= _HEX_DIGITS))
        raise ValueError(f"embedding store keys are sha256 hex digests (text_key()), got {bad!r}")
    return np.frombuffer(raw, dtype="S32").copy() if keys else np.empty(0, dtype="S32")


def _hex(digests: np.ndarray) -> list[str]:
    raw = digests.tobytes()
    return [raw[i : i + _KEY_BYTES].hex() for i in range(0, len(raw), _KEY_BYTES)]


def _shard_name(digests: np.ndarray) -> str:
    return hashlib.sha256("\n".join(_hex(digests)).encode("ascii")).hexdigest()


def _header(count: int, dim: int, checksum: str) -> bytes:
    text = json.dumps(
        {"format": FORMAT_VERSION, "count": count, "dim": dim, "dtype": "<f4", "sha256": checksum},
        separators=(",", ":"),
    ).encode("ascii")
    fixed = len(_MAGIC) + 4
    padded = -(-(fixed + len(text)) // _ALIGN) * _ALIGN - fixed
    return _MAGIC + struct.pack("<I", padded) + text.ljust(padded, b" ")


def _read_header(fd: int) -> dict[str, Any]:
    fixed = len(_MAGIC) + 4
    start = os.pread(fd, fixed, 0)
    if len(start) < fixed or start[: len(_MAGIC)] != _MAGIC:
        raise _Unusable("not an embedding shard (bad magic bytes)")
    (length,) = struct.unpack("<I", start[len(_MAGIC) :])
    data = os.pread(fd, length, fixed) if length <= _MAX_HEADER else b""
    if len(data) != length:
        raise _Unusable("header length out of range (truncated?)")
    try:
        header = json.loads(data.decode("ascii"))
    except (UnicodeDecodeError, ValueError) as error:
        raise _Unusable(f"unreadable header ({type(error).__name__})") from None
    problems = [
        not isinstance(header, dict),
        isinstance(header, dict) and header.get("format") != FORMAT_VERSION,
        isinstance(header, dict) and header.get("dtype") != "<f4",
        isinstance(header, dict) and not all(_count(header.get(f)) for f in ("count", "dim")),
        isinstance(header, dict) and not isinstance(header.get("sha256"), str),
    ]
    if any(problems):
        raise _Unusable(f"header {header!r} is not format {FORMAT_VERSION} with count, dim, dtype <f4 and sha256")
    header["_length"] = fixed + length
    return header


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _parse(fd: int, path: Path, name: str) -> _Shard:
    info = os.fstat(fd)
    header = _read_header(fd)
    count, dim, start = header["count"], header["dim"], header["_length"]
    expected = start + count * _KEY_BYTES + count * dim * 4
    if info.st_size != expected:
        raise _Unusable(f"it has {info.st_size} bytes, its header says {expected} (truncated or appended to)")
    raw = os.pread(fd, count * _KEY_BYTES, start)
    if len(raw) != count * _KEY_BYTES:
        raise _Unusable("its keys could not be read whole")
    keys = np.frombuffer(raw, dtype="S32").copy() if count else np.empty(0, dtype="S32")
    if _shard_name(keys) != name:
        raise _Unusable("its keys do not match its name (keys modified, or the file renamed)")
    return _Shard(path, keys, dim, start + count * _KEY_BYTES, header["sha256"], _signature(info))


def _open_regular(path: Path) -> int:
    """A read descriptor on ``path`` if it is a regular file; a FIFO is opened non-blocking, never read."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise
    except OSError as error:  # permissions, I/O: not proof that the file is bad, so it is not removed
        raise _Unusable(f"cannot be opened ({error.strerror or error})", remove=False) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)

        raise _Unusable(f"it is {describe_kind(mode)}, not a regular file")
    return fd


def _signature(info: os.stat_result) -> tuple[int, int, int]:
    return (info.st_ino, info.st_size, info.st_mtime_ns)
