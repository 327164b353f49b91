"""Opening the user's input files: one home for every check made before reading.

Every reader of a user file (config, query set, corpus, qrels, run, results,
cache) goes through :func:`check_input_file` or :func:`read_text`, so that a
folder, a FIFO, a device, a symlink loop, an unreadable or oversized file gets
the same one-line error naming the path, what it is and the fix, instead of a
hang (a FIFO), a MemoryError (/dev/zero) or a traceback (PermissionError).

A leading UTF-8 byte-order mark is never part of the content: Excel and some
Windows tools write one, and it would otherwise become part of the first id.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from rag_eval.errors import InputFormatError, RagEvalError

BOM = b"\xef\xbb\xbf"

MiB = 1 << 20
# Whole-file formats are read into memory and parsed into Python objects (several
# times their size): refuse past these sizes rather than fail with MemoryError.
MAX_CONFIG_BYTES = 16 * MiB  # a run config
MAX_DOCUMENT_BYTES = 512 * MiB  # a YAML or JSON query set, corpus, stored ranking or results file
# Line formats (TREC, JSONL, TSV, CSV) are streamed and have no size limit.

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def describe_kind(mode: int) -> str | None:
    """What a non-regular file is ("a folder", "a FIFO (named pipe)", ...); None for a regular file."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


def check_input_file(
    path: str | os.PathLike[str],
    what: str = "file",
    max_bytes: int | None = None,
    error: type[RagEvalError] = InputFormatError,
) -> Path:
    """Check that ``path`` is a readable regular file (under ``max_bytes``); return it as a Path.

    Never opens a FIFO or device (which could block forever or never end); a
    failure raises ``error`` with one line: ``PATH: is a FIFO (named pipe), expected a
    results file``.
    """
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        hint = "" if path.parent.exists() or str(path.parent) in ("", ".") else f" (folder {path.parent} does not exist)"
        raise error(f"{path}: no such file{hint}; expected a {what}") from None
    except OSError as failure:
        raise error(f"{path}: cannot be opened ({_reason(failure)}); expected a {what}") from None
    kind = describe_kind(info.st_mode)
    if kind is not None:
        raise error(f"{path}: is {kind}, expected a {what} (a regular file)")
    if max_bytes is not None and info.st_size > max_bytes:
        raise error(
            f"{path}: is {_size(info.st_size)}, over the {_size(max_bytes)} limit for a {what}; "
            "split it or use a line format (JSONL, TSV, TREC) that is streamed"
        )
    if not os.access(path, os.R_OK):
        raise error(f"{path}: permission denied; make the {what} readable")
    return path


def read_bytes(
    path: str | os.PathLike[str],
    what: str = "file",
    max_bytes: int | None = MAX_DOCUMENT_BYTES,
    error: type[RagEvalError] = InputFormatError,
) -> bytes:
    """The bytes of a checked input file, a leading BOM removed."""
    path = check_input_file(path, what, max_bytes, error)
    try:
        data = path.read_bytes()
    except OSError as failure:  # a race with the checks above, or an I/O error
        raise error(f"{path}: cannot be read ({_reason(failure)})") from None
    return data[len(BOM):] if data.startswith(BOM) else data


def read_text(
    path: str | os.PathLike[str],
    what: str = "file",
    max_bytes: int | None = MAX_DOCUMENT_BYTES,
    error: type[RagEvalError] = InputFormatError,
) -> str:
    """The UTF-8 text of a checked input file, a leading BOM removed.

    Text that is not UTF-8 raises ``error`` naming the line and column of the first bad byte.
    """
    data = read_bytes(path, what, max_bytes, error)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as failure:
        raise error(f"{Path(path)}: {not_utf8(data, failure)}") from None


def not_utf8(data: bytes, failure: UnicodeDecodeError) -> str:
    """``line L, column C: not UTF-8 text (...)`` for a decoding failure in ``data``."""
    line = data.count(b"\n", 0, failure.start) + 1
    column = failure.start - (data.rfind(b"\n", 0, failure.start) + 1) + 1
    return (
        f"line {line}, column {column}: not UTF-8 text (byte 0x{data[failure.start]:02x}: {failure.reason}); "
        "save the file as UTF-8"
    )


def _reason(failure: OSError) -> str:
    if failure.errno == errno.ELOOP:
        return "a symbolic link loop"
    if failure.errno == errno.EACCES:
        return "permission denied"
    return failure.strerror or type(failure).__name__


def _size(n: int) -> str:
    if n >= 1 << 30:
        return f"{n / (1 << 30):.1f} GiB"
    if n >= MiB:
        return f"{n / MiB:.1f} MiB"
    return f"{n} bytes"
