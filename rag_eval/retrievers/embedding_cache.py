"""On-disk cache of passage embeddings, so a second run does not re-encode the corpus.

Layout (one pair of files per entry, under ``<cache_dir>/embeddings/``)::

    <key>.npy    float32 array, one row per passage, rows in manifest["doc_ids"] order
    <key>.json   manifest: key, doc_ids, shape, dtype, sha256 of the array bytes, and
                 the inputs of the key (model identity, options, corpus fingerprint)

The key is a sha256 over everything that changes the numbers: the model identity
(a hash of the model folder's files, see :func:`rag_eval.retrievers.models.model_identity`),
the encoding options (passage prefix, normalisation, max_seq_length) and the corpus
fingerprint (doc ids and passage texts). Anything else, such as the device or the
batch size, can move embeddings only by float rounding and is deliberately not part
of the key.

A FIFO, device or folder where an entry's file should be is reported and rebuilt like
a damaged entry, never opened (opening a FIFO would block forever).

Writes are atomic (temporary file + ``os.replace``) and the manifest is written last,
so it acts as the commit marker. Reads verify the manifest, the doc ids, the shape,
the dtype and the checksum; anything wrong raises an :class:`EmbeddingCacheWarning`
and the entry is treated as missing (and rebuilt by the caller), never used.

Importing this module needs numpy only.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

FORMAT_VERSION = 1


class EmbeddingCacheWarning(UserWarning):
    """A cache entry was unusable (corrupt, partial, mismatched) and will be rebuilt."""


def default_cache_dir() -> Path:
    """``$RAG_EVAL_CACHE_DIR``, else ``$XDG_CACHE_HOME/rag_eval``, else ``~/.cache/rag_eval``."""
    if os.environ.get("RAG_EVAL_CACHE_DIR"):
        return Path(os.environ["RAG_EVAL_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rag_eval"


def corpus_fingerprint(doc_ids: Sequence[str], texts: Sequence[str]) -> str:
    """sha256 over (doc id, passage text) pairs, in the order given (callers sort ids).

    Each pair is JSON-encoded on its own line so no two different corpora can
    produce the same byte stream (an id ending where a text begins, etc.).
    """
    digest = hashlib.sha256()
    for doc_id, text in zip(doc_ids, texts, strict=True):
        digest.update(json.dumps([doc_id, text], ensure_ascii=False).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def array_checksum(array: np.ndarray) -> str:
    """sha256 of the array's raw bytes (C order)."""
    return hashlib.sha256(np.ascontiguousarray(array).data).hexdigest()


def cache_key(model_identity: str, options: Mapping[str, Any], corpus: str) -> str:
    """The entry name for one (model, options, corpus) combination."""
    payload = json.dumps(
        {"format": FORMAT_VERSION, "model": model_identity, "options": dict(options), "corpus": corpus},
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """Passage embeddings stored under ``directory/embeddings``."""

    def __init__(self, directory: str | os.PathLike[str]):
        self.directory = Path(directory).expanduser()
        self.entries = self.directory / "embeddings"

    def paths(self, key: str) -> tuple[Path, Path]:
        """(array file, manifest file) of an entry."""
        return self.entries / f"{key}.npy", self.entries / f"{key}.json"

    def load(self, key: str, doc_ids: Sequence[str]) -> np.ndarray | None:
        """The cached array for ``key`` whose rows are ``doc_ids``, or None.

        None without a warning when there is no entry; None with an
        :class:`EmbeddingCacheWarning` when an entry exists but fails a check.
        """
        array_path, manifest_path = self.paths(key)
        if not os.path.lexists(manifest_path):
            if os.path.lexists(array_path):
                self._reject(array_path, "array without a manifest (an interrupted write?)")
            return None
        # Checked before opening: a FIFO or device in the cache would block or never end.
        problem = _not_a_plain_file(manifest_path) or _not_a_plain_file(array_path)
        if problem:
            self._reject(manifest_path if "manifest" in problem else array_path, problem)
            return None
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            self._reject(manifest_path, f"unreadable manifest ({type(error).__name__}: {error})")
            return None
        problem = _check_manifest(manifest, key, doc_ids)
        if problem:
            self._reject(manifest_path, problem)
            return None
        try:
            array = np.load(array_path, allow_pickle=False)
        except FileNotFoundError:
            self._reject(array_path, "array file missing")
            return None
        except Exception as error:  # noqa: BLE001 - truncated or garbled .npy: numpy raises several kinds
            self._reject(array_path, f"unreadable array ({type(error).__name__}: {error})")
            return None
        if array.dtype != np.float32 or list(array.shape) != list(manifest["shape"]):
            self._reject(
                array_path, f"array is {array.dtype}{list(array.shape)}, manifest says float32{manifest['shape']}"
            )
            return None
        if array_checksum(array) != manifest["sha256"]:
            self._reject(array_path, "checksum mismatch (the file was modified or partly written)")
            return None
        return array

    def save(self, key: str, doc_ids: Sequence[str], array: np.ndarray, info: Mapping[str, Any] | None = None) -> None:
        """Store ``array`` (rows = ``doc_ids``) under ``key``, atomically.

        The old manifest is removed first and the new one written last, so a
        crash in between leaves an array without manifest, which :meth:`load`
        reports and ignores.
        """
        array = np.ascontiguousarray(array, dtype=np.float32)
        if array.ndim != 2 or array.shape[0] != len(doc_ids):
            raise ValueError(f"embedding array {array.shape} does not match {len(doc_ids)} doc ids")
        array_path, manifest_path = self.paths(key)
        self.entries.mkdir(parents=True, exist_ok=True)
        try:
            manifest_path.unlink()
        except FileNotFoundError:
            pass
        _atomic_save_npy(array_path, array)
        manifest = {
            "format": FORMAT_VERSION,
            "key": key,
            "shape": list(array.shape),
            "dtype": "float32",
            "sha256": array_checksum(array),
            **dict(info or {}),
            "doc_ids": list(doc_ids),
        }
        from rag_eval.atomic import atomic_write_text

        atomic_write_text(manifest_path, json.dumps(manifest, ensure_ascii=False))

    def _reject(self, path: Path, problem: str) -> None:
        warnings.warn(
            f"embedding cache entry {path} is unusable: {problem}; re-encoding the corpus and rewriting it",
            EmbeddingCacheWarning,
            stacklevel=3,
        )


def _not_a_plain_file(path: Path) -> str | None:
    """Why ``path`` cannot be read as a cache file (a FIFO, a folder, ...), or None."""
    from rag_eval.files import describe_kind

    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None  # reported where it is opened
    except OSError as error:
        return f"cannot be examined ({error.strerror or error})"
    kind = describe_kind(info.st_mode)
    what = "manifest" if path.suffix == ".json" else "array file"
    return f"{what} is {kind}, not a regular file" if kind else None


def _check_manifest(manifest: Any, key: str, doc_ids: Sequence[str]) -> str | None:
    if not isinstance(manifest, dict):
        return "manifest is not a JSON object"
    missing = [f for f in ("format", "key", "shape", "dtype", "sha256", "doc_ids") if f not in manifest]
    if missing:
        return f"manifest lacks {', '.join(missing)}"
    if manifest["format"] != FORMAT_VERSION:
        return f"manifest format {manifest['format']!r}, expected {FORMAT_VERSION}"
    if manifest["key"] != key:
        return "manifest key does not match its file name"
    if manifest["dtype"] != "float32":
        return f"manifest dtype {manifest['dtype']!r}, expected 'float32'"
    shape = manifest["shape"]
    if not (isinstance(shape, list) and len(shape) == 2 and shape[0] == len(doc_ids)):
        return f"manifest shape {shape!r} does not fit {len(doc_ids)} passages"
    if manifest["doc_ids"] != list(doc_ids):
        return "manifest doc ids differ from the corpus"
    return None


def _atomic_save_npy(path: Path, array: np.ndarray) -> None:
    # np.save straight into the temporary file: no second in-memory copy of a large array.
    from rag_eval.atomic import atomic_writer

    with atomic_writer(path) as handle:
        np.save(handle, array, allow_pickle=False)

