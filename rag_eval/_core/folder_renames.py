"""Renames of whole folders, made as atomic as the system allows, and folders made durable.

:func:`exchange` swaps two folders in one step (Linux ``renameat2(RENAME_EXCHANGE)``);
:func:`rename_no_replace` never replaces what is at the target. Both say False where the
system or the filesystem lacks the call, so the caller falls back to plain renames.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2


def exchange(source: Path, target: Path) -> bool:
    """Swap ``source`` and ``target`` in one step; False where that is not available."""
    return _rename2(source, target, _RENAME_EXCHANGE)


def rename_no_replace(source: Path, target: Path) -> bool:
    """Rename ``source`` to ``target`` unless something is there (FileExistsError); False where not available."""
    return _rename2(source, target, _RENAME_NOREPLACE)


def _rename2(source: Path, target: Path, flags: int) -> bool:
    """renameat2(2) with ``flags``; False where the system or the filesystem lacks it."""
    call = renameat2()
    if call is None:
        return False
    if call(_AT_FDCWD, os.fsencode(source), _AT_FDCWD, os.fsencode(target), flags) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM):
        return False
    raise OSError(code, os.strerror(code), str(target))


def rename_if_absent(source: Path, target: Path) -> bool:
    """Rename ``source`` to ``target`` when nothing is there (not atomic: the fallback of :func:`rename_no_replace`)."""
    if os.path.lexists(target):
        return False
    os.rename(source, target)
    return True


@lru_cache(maxsize=1)
def renameat2() -> Any:
    """libc's renameat2, or None (not Linux, or a C library without it); the tests replace it to force the fallback."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        call = ctypes.CDLL(None, use_errno=True).renameat2  # glibc >= 2.28, musl >= 1.2.3
    except (OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    call.restype = ctypes.c_int
    return call


def fsync_folder(folder: Path) -> None:
    """Make ``folder``'s entries durable (where a folder can be synced at all)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:  # a folder cannot be opened on Windows; its entries are durable there anyway
        return
    try:
        os.fsync(fd)
    except OSError as error:
        if error.errno not in (errno.EINVAL, errno.EBADF):  # a filesystem that cannot sync folders
            raise
    finally:
        os.close(fd)
