"""Per-passage embedding store: one embedding per (model, encoding options, exact text).

Layout::

    <root>/passages/<namespace>/<name>.emb      one shard per put(), written atomically

``namespace`` = :func:`namespace_key` (model content hash + everything else that changes the
numbers); a key = :func:`text_key` (sha256 of the exact text the encoder receives). Editing one
passage changes one key, so one passage is re-encoded; chunkings and corpora that share texts
share keys, so they share embeddings.

The format of a shard file is :mod:`rag_eval._models.embeddings.shard_file`'s; a shard's
keys travel packed (:mod:`rag_eval._models.embeddings.keys`), and
:mod:`rag_eval._models.embeddings.incremental` encodes through the store.

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
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rag_eval._core.atomic import atomic_writer
from rag_eval._models.embeddings.keys import to_digests, to_hex
from rag_eval._models.embeddings.shard_file import (
    FORMAT_VERSION,
    SUFFIX,
    Shard,
    Unusable,
    open_regular,
    parse_shard,
    shard_header,
    shard_name,
    signature,
)


class EmbeddingCacheWarning(UserWarning):
    """A cache entry was unusable (corrupt, partial, mismatched) or could not be written; the run goes on."""


class EmbeddingCacheWriteWarning(EmbeddingCacheWarning):
    """A shard could not be written (a full or read-only disk): those embeddings are not cached."""


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
class _Index:
    """All valid shards' keys as one sorted array, with the shard and row of each."""

    keys: np.ndarray = field(default_factory=lambda: np.empty(0, dtype="S32"))
    shard: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    row: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    names: list[str] = field(default_factory=list)


class EmbeddingStore:
    """Embeddings of one namespace under ``<root>/passages/<namespace>/`` (see the module docstring)."""

    def __init__(self, root: Path | str, namespace: str) -> None:
        if not namespace or namespace in (".", "..") or not all(c.isalnum() or c in "-_." for c in namespace):
            raise ValueError(f"embedding store namespace {namespace!r} must be a plain name (use namespace_key())")
        self.root = Path(root).expanduser()
        self.namespace = namespace
        self.directory = self.root / "passages" / namespace
        self._shards: dict[str, Shard] = {}
        self._bad: dict[str, tuple[int, int, int] | None] = {}  # names skipped, with the signature they had
        self._dim: int | None = None
        # The dimension this process's encoder wrote (put): it outranks whatever the shards on disk say.
        self._proven_dim: int | None = None
        self._index: _Index | None = None

    # ------------------------------------------------------------------ reading

    def get(self, keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(vectors float32 (n, dim) in the order of ``keys``, found bool (n,)); missing rows are zeros.

        With an empty store the dim is unknown and the vectors have shape (n, 0). A shard
        that fails its checksum here is skipped with a warning; its keys are looked up in
        other shards, else reported missing.
        """
        wanted = to_digests(keys)
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
                except Unusable as problem:
                    self._reject(self._shards[name].path, str(problem), remove=problem.remove)
                    failed = True
                else:
                    found[todo[chosen]] = True
            if not failed:
                return vectors, found

    def dim(self) -> int | None:
        """The dimension of the store's vectors (settled over its valid shards), or None when it holds none."""
        self._refresh()
        return self._dim if self._shards else None

    def expect_dim(self, dim: int) -> None:
        """The model's known dimension: shards of any other are not its vectors and are dropped now.

        Said by a caller that knows what the encoder produces (its first batch, the model's own
        answer) before anything is read: a shard of another dimension is skipped with a warning and
        removed even when it is the only one (nothing else would outvote it), and its texts are
        missing, so they are encoded again.
        """
        if dim < 1:
            raise ValueError(f"embedding store {self.directory}: expected dimension {dim}")
        self._refresh()
        if self._proven_dim != dim:
            self._proven_dim = dim
            self._settle_dim()

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
        Vectors of another dimension than the store's shards are the encoder's: a namespace has
        one model, so the shards of the other dimension are not its vectors and are dropped
        (warned, removed, re-encoded when next asked for).
        """
        array = np.asarray(vectors)
        if array.ndim != 2 or array.shape[0] != len(keys):
            raise ValueError(f"embedding store: {len(keys)} keys but vectors of shape {array.shape}")
        if not len(keys):
            return
        if array.shape[1] < 1:
            raise ValueError(f"embedding store {self.directory}: vectors of dimension 0")
        if self._proven_dim != array.shape[1]:
            self._proven_dim = array.shape[1]
            self._settle_dim()
        digests, first = np.unique(to_digests(keys), return_index=True)  # sorted; a repeated key kept once
        rows = np.ascontiguousarray(array[first], dtype="<f4")
        name = shard_name(digests)
        payload = [digests.tobytes(), rows.tobytes()]
        checksum = hashlib.sha256()
        for part in payload:
            checksum.update(part)
        header = shard_header(len(digests), rows.shape[1], checksum.hexdigest(), self.namespace)
        path = self.directory / f"{name}{SUFFIX}"

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
                EmbeddingCacheWriteWarning,
                stacklevel=2,
            )
            return
        self._bad.pop(name, None)
        shard = Shard(
            path, digests, rows.shape[1], len(header) + digests.nbytes, checksum.hexdigest(), signature(info)
        )
        shard.verified = True  # written just now from these very arrays
        self._add(name, shard)
        self._dim = self._proven_dim

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
            except Unusable as problem:
                self._reject(shard.path, str(problem), remove=problem.remove)
                continue
            parts_keys.extend(to_hex(shard.keys))
            merged.append(shard)
        if len(merged) < 2:
            return 0
        before = set(self._shards)
        self.put(parts_keys, np.concatenate(parts_vectors))
        if set(self._shards) == before:  # the merged shard was not written: keep the small ones
            return 0
        removed = 0
        for shard in merged:
            name = shard.path.name[: -len(SUFFIX)]
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
            names = sorted(entry for entry in os.listdir(self.directory) if entry.endswith(SUFFIX))
        except FileNotFoundError:
            return
        except OSError as error:
            warnings.warn(
                f"cannot list embedding store {self.directory}: {error.strerror or error}; treating it as empty",
                EmbeddingCacheWarning,
                stacklevel=3,
            )
            return
        added = False
        for entry in names:
            name = entry[: -len(SUFFIX)]
            if entry.startswith(".") or name in self._shards:
                continue  # "." = a temporary file of a write in progress
            path = self.directory / entry
            if name in self._bad:
                try:
                    if signature(os.lstat(path)) == self._bad[name]:
                        continue  # the same bad file: warned once already
                except OSError:
                    continue
            try:
                shard = self._open(path, name)
            except FileNotFoundError:
                continue
            except Unusable as problem:
                self._reject(path, str(problem), remove=problem.remove)
                continue
            self._add(name, shard)
            added = True
        if added:  # settled over every shard at once: a majority counted shard by shard could be the first one's
            self._settle_dim()

    def _add(self, name: str, shard: Shard) -> None:
        """Index ``shard``; the caller settles the store's dimension once every new shard is added."""
        self._shards[name] = shard
        self._index = None

    def _settle_dim(self) -> None:
        """One dimension for the store; shards of any other are dropped with a warning and removed.

        A namespace is one model, so its embeddings have one dimension. Which one: the encoder's,
        once this process has written vectors; before that, the dimension most keys have (a stray
        or tampered shard is outvoted, whichever was listed first). Should the majority be wrong,
        the encoder's first batch proves it (see :func:`rag_eval._models.embeddings.incremental.encode_missing`).
        """
        rows: dict[int, int] = {}
        for shard in self._shards.values():
            rows[shard.dim] = rows.get(shard.dim, 0) + len(shard.keys)
        if self._proven_dim is not None:
            keep = self._proven_dim
        elif rows:
            keep = max(rows, key=lambda dim: (rows[dim], -dim))
        else:
            return
        for shard in [s for s in self._shards.values() if s.dim != keep]:
            why = "the encoder's" if self._proven_dim is not None else "most of the store's"
            self._reject(shard.path, f"its vectors have dim {shard.dim}, {why} have dim {keep}")
        self._dim = keep if self._shards or self._proven_dim is not None else None

    def _forget(self, name: str, signature: tuple[int, int, int] | None) -> None:
        if self._shards.pop(name, None) is not None:
            self._index = None
        if signature is not None:
            self._bad[name] = signature
        if not self._shards:
            self._dim = self._proven_dim

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
        name = path.name[: -len(SUFFIX)]
        try:
            info = os.lstat(path)
        except OSError:
            info = None
        self._forget(name, signature(info) if info is not None else None)
        removed = False
        if remove and info is not None and (stat.S_ISREG(info.st_mode) or stat.S_ISFIFO(info.st_mode)):
            try:
                # Only the file we examined: a correct shard written under this name since then is kept.
                if signature(os.lstat(path)) == signature(info):
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

    def _open(self, path: Path, name: str) -> Shard:
        """Read and check a shard's header and keys (not its vectors)."""
        fd = open_regular(path)
        try:
            return parse_shard(fd, path, name, self.namespace)
        except OSError as error:  # an I/O error is not proof that the file is bad: keep it
            raise Unusable(f"cannot be read ({error.strerror or error})", remove=False) from None
        finally:
            os.close(fd)

    def _read_rows(self, name: str, rows: np.ndarray) -> np.ndarray:
        """Vectors of ``rows`` of shard ``name``, memory-mapped; the checksum is verified on first use."""
        shard = self._shards[name]
        fd = open_regular(shard.path)
        try:
            info = os.fstat(fd)
            if signature(info) != shard.signature:  # rewritten since indexed (a retried batch): check it again
                fresh = parse_shard(fd, shard.path, name, self.namespace)
                if fresh.dim != shard.dim or len(fresh.keys) != len(shard.keys):
                    raise Unusable("it changed shape since it was indexed")
                shard = self._shards[name] = fresh
            if info.st_size == 0:
                raise Unusable("it is empty")
            with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as mapped:
                if not shard.verified:
                    with memoryview(mapped) as view:
                        digest = hashlib.sha256(view[shard.vectors_at - shard.keys.nbytes :]).hexdigest()
                    if digest != shard.checksum:
                        raise Unusable("checksum mismatch (the file was modified or partly written)")
                    shard.verified = True
                matrix = np.frombuffer(mapped, dtype="<f4", count=len(shard.keys) * shard.dim, offset=shard.vectors_at)
                out = matrix.reshape(len(shard.keys), shard.dim)[rows]  # fancy indexing: a copy, not a view
                del matrix  # the map can only be closed once no array points into it
            return out
        except OSError as error:
            raise Unusable(f"cannot be read ({error.strerror or error})", remove=False) from None
        finally:
            os.close(fd)
