"""Whether a file changed while it was read: its (size, modification time) stamp, and the error saying so.

Both TREC readers (``fast_reader``, ``line_reader``) stamp the file when they open it and compare
after reading: a file still being written, or rewritten by another process, gives no number.
"""

from __future__ import annotations

import os
from pathlib import Path

from rag_eval._core.errors import InputFormatError


def file_stamp(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_size, info.st_mtime_ns


def changed_error(path: Path, size: int) -> InputFormatError:
    return InputFormatError(
        f"{path}: the file changed while it was read (it had {size:,} bytes); read it again once it is complete "
        "(a file still being written, or rewritten by another process, gives no number)"
    )
