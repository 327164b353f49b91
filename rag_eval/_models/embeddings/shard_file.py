"""One shard file of the embedding store: its format, written and read back checked.

A shard file (little-endian)::

    8 bytes   magic b"RAGEMB\\x00\\x01"
    4 bytes   header length H (uint32)
    H bytes   header, JSON: {"format", "namespace", "count", "dim", "dtype": "<f4", "sha256"},
              padded with spaces so that the payload starts at a multiple of 64 bytes
    payload   count x 32 bytes: the keys (sha256 digests, sorted), then
              count x dim float32: the vectors, row i belonging to key i

The shard's NAME is the sha256 of its sorted hex keys joined by newlines, and ``sha256`` in the
header covers the payload: a changed key, vector, header or length is detected (name, checksum,
size). The name says which texts a shard holds, not which encoding: two namespaces that encode
the same texts (``max_seq_length: 8`` and the default, say) name their shards alike, so the
header names the shard's namespace, and a shard is used only in the folder of that namespace
and only with at least one dimension (format 2; format 1 had no namespace). The store skips a
shard that fails any of these checks with an
:class:`~rag_eval._models.embeddings.store.EmbeddingCacheWarning`, removes it when it is a regular
file, and counts its keys as missing (the caller re-encodes them). A FIFO, device or folder in a
shard's place is never read (opened non-blocking, checked with fstat).

A shard that fails a check raises :class:`Unusable`; the store decides what to do with it.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag_eval._core.files import describe_kind
from rag_eval._models.embeddings.keys import KEY_BYTES, to_hex

# 2: the header names the shard's namespace (a shard copied into another namespace's folder is refused).
FORMAT_VERSION = 2
SUFFIX = ".emb"

_MAGIC = b"RAGEMB\x00\x01"
_ALIGN = 64
_MAX_HEADER = 1 << 16
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


@dataclass
class Shard:
    """What the index knows of one committed shard (its keys are in memory, its vectors are not)."""

    path: Path
    keys: np.ndarray  # (count,) S32, sorted
    dim: int
    vectors_at: int  # byte offset of the vectors
    checksum: str  # sha256 of the payload (keys + vectors), from the header
    signature: tuple[int, int, int]  # (inode, size, mtime_ns): a rewritten file is checked again
    verified: bool = False


class Unusable(Exception):
    """A shard failed a check (the message says which); ``remove``: the file itself is bad, not our access to it."""

    def __init__(self, message: str, remove: bool = True) -> None:
        super().__init__(message)
        self.remove = remove


def shard_name(digests: np.ndarray) -> str:
    """A shard's file name (without :data:`SUFFIX`): the sha256 of its sorted hex keys joined by newlines."""
    return hashlib.sha256("\n".join(to_hex(digests)).encode("ascii")).hexdigest()


def shard_header(count: int, dim: int, checksum: str, namespace: str) -> bytes:
    """Magic, length and JSON header of a shard of ``count`` vectors of ``dim`` in ``namespace``, padded so the
    payload is aligned."""
    text = json.dumps(
        {"format": FORMAT_VERSION, "namespace": namespace, "count": count, "dim": dim, "dtype": "<f4",
         "sha256": checksum},
        separators=(",", ":"),
    ).encode("ascii")
    fixed = len(_MAGIC) + 4
    padded = -(-(fixed + len(text)) // _ALIGN) * _ALIGN - fixed
    return _MAGIC + struct.pack("<I", padded) + text.ljust(padded, b" ")


def _read_header(fd: int) -> dict[str, Any]:
    fixed = len(_MAGIC) + 4
    start = os.pread(fd, fixed, 0)
    if len(start) < fixed or start[: len(_MAGIC)] != _MAGIC:
        raise Unusable("not an embedding shard (bad magic bytes)")
    (length,) = struct.unpack("<I", start[len(_MAGIC) :])
    data = os.pread(fd, length, fixed) if length <= _MAX_HEADER else b""
    if len(data) != length:
        raise Unusable("header length out of range (truncated?)")
    try:
        header = json.loads(data.decode("ascii"))
    except (UnicodeDecodeError, ValueError) as error:
        raise Unusable(f"unreadable header ({type(error).__name__})") from None
    problems = [
        not isinstance(header, dict),
        isinstance(header, dict) and header.get("format") != FORMAT_VERSION,
        isinstance(header, dict) and header.get("dtype") != "<f4",
        isinstance(header, dict) and not all(_count(header.get(f)) for f in ("count", "dim")),
        isinstance(header, dict) and not isinstance(header.get("sha256"), str),
        isinstance(header, dict) and not isinstance(header.get("namespace"), str),
    ]
    if any(problems):
        raise Unusable(
            f"header {header!r} is not format {FORMAT_VERSION} with namespace, count, dim, dtype <f4 and sha256"
        )
    header["_length"] = fixed + length
    return header


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def parse_shard(fd: int, path: Path, name: str, namespace: str) -> Shard:
    """The shard open at ``fd``, its header and keys checked against its size, ``name`` and ``namespace`` (its
    vectors not read)."""
    info = os.fstat(fd)
    header = _read_header(fd)
    count, dim, start = header["count"], header["dim"], header["_length"]
    if header["namespace"] != namespace:
        # Same texts, same name: only the header tells another encoding's vectors from this one's.
        raise Unusable(
            f"it belongs to namespace {header['namespace']!r}, not this store's {namespace!r} (copied or moved here)"
        )
    if dim < 1:  # vectors of no dimension: no encoder makes them, and they would fix the store's dimension at 0
        raise Unusable(f"its header gives dimension {dim}; embeddings have at least one")
    expected = start + count * KEY_BYTES + count * dim * 4
    if info.st_size != expected:
        raise Unusable(f"it has {info.st_size} bytes, its header says {expected} (truncated or appended to)")
    raw = os.pread(fd, count * KEY_BYTES, start)
    if len(raw) != count * KEY_BYTES:
        raise Unusable("its keys could not be read whole")
    keys = np.frombuffer(raw, dtype="S32").copy() if count else np.empty(0, dtype="S32")
    if shard_name(keys) != name:
        raise Unusable("its keys do not match its name (keys modified, or the file renamed)")
    return Shard(path, keys, dim, start + count * KEY_BYTES, header["sha256"], signature(info))


def open_regular(path: Path) -> int:
    """A read descriptor on ``path`` if it is a regular file; a FIFO is opened non-blocking, never read."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise
    except OSError as error:  # permissions, I/O: not proof that the file is bad, so it is not removed
        raise Unusable(f"cannot be opened ({error.strerror or error})", remove=False) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)

        raise Unusable(f"it is {describe_kind(mode)}, not a regular file")
    return fd


def signature(info: os.stat_result) -> tuple[int, int, int]:
    """``(inode, size, mtime_ns)``: what changes when a shard file is rewritten."""
    return (info.st_ino, info.st_size, info.st_mtime_ns)
