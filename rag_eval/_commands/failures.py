"""Failures that are not a command's own errors, told apart so that each gets its exit code.

- standard output that cannot be written (a full disk, a closed pipe) is bad input, not a bug:
  :class:`GuardedStdout` turns it into :class:`StdoutError`, distinct from an OSError of rag-eval's own;
- a bug in rag-eval is said in one line, its traceback written to a log file (or, with ``--debug``,
  to stderr): :func:`internal_error_line`.
"""

from __future__ import annotations

import os
import sys
import tempfile
import traceback
from typing import Any, TextIO

from rag_eval._core.plugins import error_cause

# The exception's text in the one line, at most this long (the whole of it is in the traceback).
SUMMARY_CHARS = 300


class StdoutError(Exception):
    """Standard output cannot be written (a full disk, a closed pipe): bad input, not a bug."""


class GuardedStdout:
    """``sys.stdout`` while a command runs: a failed write or flush becomes :class:`StdoutError`."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as error:
            raise StdoutError(error.strerror or str(error)) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as error:
            raise StdoutError(error.strerror or str(error)) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def internal_error_line(error: BaseException, *, debug: bool, version: str) -> str:
    """The line that reports ``error`` as a bug in rag-eval ``version``; with ``debug`` the traceback is written
    to stderr first, else to a new log file named in the line (when none can be written, the line says so)."""
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    summary = error_cause(error)[:SUMMARY_CHARS]  # never raises: the error may come from a plug-in's code
    if debug:
        sys.stderr.write(text)
        where = "traceback above"
    else:
        try:
            fd, log = tempfile.mkstemp(prefix="rag-eval-crash-", suffix=".log")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(f"rag-eval {version}: internal error\ncommand: {' '.join(sys.argv)}\n\n{text}")
            where = f"traceback written to {log}; rerun with --debug to print it"
        except OSError:
            where = "rerun with --debug to print the traceback"
    return f"rag-eval: internal error (a bug in rag-eval, please report it): {summary} ({where})"
