"""Atomic file writes: a reader sees the old file or the whole new one, never half.

Files are created with mode 0o666 and the kernel applies the process umask (and a
folder's default ACL), so a new file gets exactly the permissions a plain ``open(path,
"w")`` would give it (0644 under umask 022); a file replaced in place keeps its previous
permission bits. (``tempfile.mkstemp`` would create every file 0600, whatever the umask;
reading the umask instead would need ``os.umask`` to be set and restored, which races
with other threads.)

Several files that must change together (a run's outputs) are replaced as one set by
:mod:`rag_eval._core.output_folder`, staged by :mod:`rag_eval._core.output_swap` with :func:`write_new_file`.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

# O_CLOEXEC: a retriever that spawns processes must not inherit our half-written files.
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def permission_bits(path: str | Path) -> int | None:
    """The permission bits (0o777) of the file at ``path``; None when there is none."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode) & 0o777
    except (FileNotFoundError, NotADirectoryError):
        return None


def create_new_file(path: str | Path, mode: int | None = None) -> int:
    """Create ``path``, which must not exist, for writing; return its descriptor.

    Without ``mode`` the file gets the permissions a normal write gives (0o666 less the
    umask); with ``mode`` it gets exactly those bits (to keep the mode of a file it replaces).
    """
    fd = os.open(path, _CREATE, 0o666)
    if mode is not None and hasattr(os, "fchmod"):  # no fchmod on Windows, where there is no mode to keep
        try:
            os.fchmod(fd, mode)
        except BaseException:
            os.close(fd)
            raise
    return fd


def write_new_file(path: str | Path, data: bytes, mode: int | None = None) -> None:
    """Create ``path`` (which must not exist) holding ``data``, flushed to disk (fsync)."""
    fd = create_new_file(path, mode)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


@contextmanager
def atomic_writer(path: str | Path) -> Iterator[BinaryIO]:
    """A binary handle on a temporary file beside ``path``, renamed onto it on success.

    On any error the temporary file is removed and ``path`` is left untouched. A new
    file gets the umask's permissions; a replaced file keeps its previous mode.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_temporary(target, permission_bits(target))
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_writer(path) as handle:
        handle.write(data)


def _create_temporary(target: Path, mode: int | None) -> tuple[int, Path]:
    # The same name pattern mkstemp gave (".NAME.XXXXXXXX.tmp"), so leftovers of every version look alike.
    for _ in range(100):
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:
            return create_new_file(tmp, mode), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"{target.parent}: no free temporary file name for {target.name}")
