"""Built FAISS indexes cached on disk: ``<cache_dir>/indexes/<key>.faiss`` and its manifest, checked before FAISS reads it.

The index file is written atomically and its manifest last, holding the file's size and
sha256; a missing, damaged or mismatched entry is a miss with an :class:`IndexCacheWarning`,
never opened unchecked (FAISS may crash on garbled bytes) and never a failed run.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path
from typing import Any

from rag_eval._core.atomic import atomic_write_text, atomic_writer
from rag_eval._core.files import describe_kind
from rag_eval._retrievers.faiss_build import faiss_module

CACHE_FORMAT = 1


class IndexCacheWarning(UserWarning):
    """A cached index was unusable (damaged, partial, mismatched) or could not be written; it is rebuilt."""


def index_cache_key(embeddings: str, shape: tuple[int, int], settings: dict[str, Any]) -> str:
    """Entry name: the embeddings and what changes the built index (search-time settings left out)."""
    faiss = faiss_module()
    built = {name: value for name, value in settings.items() if name not in ("nprobe", "ef_search", "refine")}
    payload = {"format": CACHE_FORMAT, "embeddings": embeddings, "shape": list(shape), "index": built,
               "faiss": faiss.__version__.split(".")[0]}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()


class IndexCache:
    """``<dir>/indexes/<key>.faiss`` + ``<key>.json`` (size, sha256; written last, the commit marker)."""

    def __init__(self, directory: Path) -> None:
        self.entries = directory / "indexes"

    def paths(self, key: str) -> tuple[Path, Path]:
        """The index file and the manifest of the entry ``key``."""
        return self.entries / f"{key}.faiss", self.entries / f"{key}.json"

    def load(self, key: str, shape: tuple[int, int]) -> Any | None:
        """The cached index, or None (with an IndexCacheWarning when an entry exists but fails a check)."""
        index_path, manifest_path = self.paths(key)
        if not os.path.lexists(manifest_path):
            if os.path.lexists(index_path):
                self._reject(index_path, "index file without a manifest (an interrupted write?)")
            return None
        problem = _not_a_plain_file(manifest_path) or _not_a_plain_file(index_path)
        if problem:
            self._reject(index_path, problem)
            return None
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
            size, digest = manifest["size"], manifest["sha256"]
            if manifest["key"] != key:
                raise ValueError("manifest key does not match its file name")
        except (OSError, ValueError, KeyError, TypeError) as error:
            self._reject(manifest_path, f"unreadable manifest ({type(error).__name__}: {error})")
            return None
        try:
            actual = index_path.stat().st_size
            if actual != size:
                self._reject(index_path, f"file has {actual} bytes, the manifest says {size} (truncated?)")
                return None
            if _file_sha256(index_path) != digest:
                self._reject(index_path, "checksum mismatch (the file was modified or partly written)")
                return None
            faiss = faiss_module()
            index = faiss.read_index(str(index_path))
        except (OSError, RuntimeError) as error:
            self._reject(index_path, f"unreadable index ({type(error).__name__}: {' '.join(str(error).split())})")
            return None
        if (index.ntotal, index.d) != tuple(shape) or index.metric_type != _inner_product():
            self._reject(index_path, f"index holds {index.ntotal} x {index.d} vectors, expected {shape[0]} x {shape[1]}")
            return None
        return index

    def save(self, key: str, index: Any, info: dict[str, Any]) -> None:
        """Write the index atomically, then its manifest; a failure warns and the run goes on."""
        faiss = faiss_module()
        index_path, manifest_path = self.paths(key)
        digest = hashlib.sha256()
        size = 0
        try:
            self.entries.mkdir(parents=True, exist_ok=True)
            try:
                manifest_path.unlink()  # the old entry stops being valid before its file is replaced
            except FileNotFoundError:
                pass
            with atomic_writer(index_path) as handle:
                def write(chunk: bytes) -> int:
                    nonlocal size
                    digest.update(chunk)
                    size += len(chunk)
                    return handle.write(chunk)

                faiss.write_index(index, faiss.PyCallbackIOWriter(write))
            manifest = {"format": CACHE_FORMAT, "key": key, "size": size, "sha256": digest.hexdigest(), **info}
            atomic_write_text(manifest_path, json.dumps(manifest, sort_keys=True))
        except OSError as error:  # a read-only or full disk must not fail the run
            warnings.warn(f"could not write index cache {index_path}: {error}", IndexCacheWarning, stacklevel=3)

    def _reject(self, path: Path, problem: str) -> None:
        warnings.warn(
            f"index cache entry {path} is unusable: {problem}; rebuilding the index and rewriting it",
            IndexCacheWarning,
            stacklevel=3,
        )


def _not_a_plain_file(path: Path) -> str | None:
    """Why ``path`` cannot be read as a cache file (a FIFO would block forever), or None."""

    try:
        kind = describe_kind(os.stat(path).st_mode)
    except FileNotFoundError:
        return f"{path.name} is missing"
    except OSError as error:
        return f"{path.name} cannot be examined ({error.strerror or error})"
    return f"{path.name} is {kind}, not a regular file" if kind else None


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 22), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _inner_product() -> int:
    faiss = faiss_module()
    return int(faiss.METRIC_INNER_PRODUCT)
