"""A lock beside a folder, held by one process at a time: ``P/.N.rag_eval-lock`` for the folder ``P/N``.

The lock is ``flock`` (a byte-range lock on Windows), which the kernel drops when its process
dies, so a killed run never leaves a folder locked; the file holds the holder's pid, for the
message that refuses a second run. The last holder removes the file as it releases it.
"""

from __future__ import annotations

import os
from pathlib import Path

from rag_eval._core.errors import RagEvalError


def acquire(folder: Path) -> int:
    """The lock of ``folder`` taken: its open descriptor; RagEvalError naming the holder's pid when another holds it."""
    path = lock_path(folder)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
        try:
            locked = _try_lock(fd)
            if not locked:
                holder = os.read(fd, 32).decode("ascii", "replace").strip()
                pid = f"pid {holder}" if holder.isdigit() else "pid unknown"
                raise RagEvalError(
                    f"{folder}: another rag-eval run ({pid}) is writing into this output folder; "
                    "wait for it to finish or choose another output folder"
                )
            # The last holder removes the file as it releases it: a lock taken on a removed
            # file guards nothing, so take the new file's instead.
            try:
                current = os.stat(path)
            except FileNotFoundError:
                current = None
            mine = os.fstat(fd)
            if current is not None and (current.st_dev, current.st_ino) == (mine.st_dev, mine.st_ino):
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode())
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def _try_lock(fd: int) -> bool:
    try:
        import fcntl
    except ImportError:  # Windows: a byte-range lock, also dropped when the process dies
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def release(folder: Path, fd: int) -> None:
    """Give the lock of ``folder`` back (``fd`` from :func:`acquire`), removing its file."""
    # Removed while still locked, so that nobody can take a lock on it that guards nothing.
    try:
        os.unlink(lock_path(folder))
    except OSError:
        pass
    os.close(fd)


def lock_path(folder: Path) -> Path:
    """``P/.N.rag_eval-lock`` for the folder ``P/N``."""
    return folder.with_name(f".{folder.name}.rag_eval-lock")
