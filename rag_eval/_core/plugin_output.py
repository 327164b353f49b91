"""What plug-in code prints goes to stderr: while a command runs it, stdout holds the command's own lines only.

Scripts read ``rag-eval run``'s stdout (``label<TAB>metric<TAB>value``), and docs/plugins.md promises it holds the
result lines only. :func:`contextlib.redirect_stdout` is not enough for that promise: it rebinds ``sys.stdout``
alone, and a plug-in (or a library it calls) that writes below it reaches the process's stdout all the same:
``os.write(1, ...)``, ``sys.__stdout__``, a child process (``subprocess.run(["echo", ...])``, ``os.system``), C
code's ``printf``, a logging handler that took ``sys.stdout`` at import time.

So the redirect is made at the file-descriptor level: while the block runs, fd 1 is a duplicate of stderr
(:func:`os.dup2`) and ``sys.stdout`` is ``sys.stderr``; the command's own lines go to the stream the block yields,
opened on a duplicate of the original fd 1 (:func:`os.dup`, made before). Afterwards, on errors too, fd 1 is
restored. Where ``sys.stdout`` is not fd 1 (pytest's capsys, an in-process caller's StringIO) no file descriptor
is touched: ``sys.stdout`` alone is redirected and the yielded stream is the caller's ``sys.stdout``.

This module lives in the core layer because ``rag_eval._run.round_trip`` redirects plug-in output too.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any, TextIO

STDOUT_FD = 1
STDERR_FD = 2


@contextlib.contextmanager
def plugin_output_to_stderr(*, last: bool = False) -> Iterator[TextIO]:
    """Within the block everything written to stdout, at any level, goes to stderr; yields the stream that
    reaches the real stdout, for the command's own lines (flush it before the block ends to see its errors).

    ``last``: the block holds every line the command prints (``run``). Then, when a thread started in the block
    is still running at its end (a plug-in's, not a daemon), stdout stays on stderr for the rest of the process:
    restored, the thread's writes would reach stdout until the process turns it away again at its exit.
    """
    stdout = sys.stdout
    before = set(threading.enumerate())
    saved = _duplicate_stdout(stdout)
    if saved is None:
        with contextlib.redirect_stdout(sys.stderr):
            yield stdout
        return
    # What was written before the block is the command's: it goes to the real stdout, before fd 1 moves.
    _flush(stdout, sys.__stdout__, sys.stderr)
    results = open(  # noqa: SIM115 - closed below, once fd 1 is restored from it
        saved, "w", buffering=1 if getattr(stdout, "line_buffering", False) else -1,  # 1: lines, as on a terminal
        encoding=getattr(stdout, "encoding", None) or "utf-8", errors=getattr(stdout, "errors", None) or "strict",
        closefd=True,
    )
    # The plug-ins' sys.stdout is a stream of its own on a duplicate of stderr, not sys.stderr itself: a plug-in
    # that closes sys.stdout (or dup2s /dev/null onto its fileno()) must not close or silence rag-eval's stderr,
    # where the command's error line goes.
    plugins = open(  # noqa: SIM115 - closed below
        os.dup(_stderr_fd()), "w", buffering=1, encoding=getattr(sys.stderr, "encoding", None) or "utf-8",
        errors="backslashreplace", closefd=True,
    )
    try:
        os.dup2(_stderr_fd(), STDOUT_FD)
        with contextlib.redirect_stdout(plugins):
            yield results
    finally:
        # A plug-in's text still in the buffers of the stream objects on fd 1 (sys.__stdout__) is flushed while
        # fd 1 is stderr, or it would reach the real stdout at the next flush.
        _flush(stdout, sys.__stdout__, results, plugins)
        lingering = last and any(t.is_alive() and not t.daemon for t in set(threading.enumerate()) - before)
        if lingering:
            sys.stdout = sys.stderr  # the command has no line left to print; a lingering thread's prints go here
        else:
            os.dup2(saved, STDOUT_FD)
        with contextlib.suppress(OSError, ValueError):  # an unwritable stdout was reported by the command's flush
            results.close()
        if not lingering:  # a lingering thread may still write to it
            with contextlib.suppress(OSError, ValueError):  # closed by the plug-in already
                plugins.close()


def reserve_standard_streams() -> None:
    """A standard stream the process was started without (``rag-eval run ... >&-``) is opened on /dev/null.

    Otherwise fd 1 (or 2) is free: Python's ``sys.stdout`` is None, so the command ends in an internal error
    (exit 1 after a traceback), and the first file rag-eval opens (its output folder's lock) takes fd 1, where
    a plug-in's ``os.write(1, ...)`` would land. Closed, the stream's lines go nowhere, as with ``> /dev/null``.
    For the console script only: an in-process caller's streams are its own.
    """
    for fd, name in ((STDOUT_FD, "stdout"), (STDERR_FD, "stderr")):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        opened = os.open(os.devnull, os.O_WRONLY)  # the lowest free fd: `fd` itself when the lower ones are open
        if opened != fd:
            os.dup2(opened, fd)
            os.close(opened)
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, "w", encoding="utf-8", closefd=False))  # noqa: SIM115 - the process's own


def stdout_to_stderr() -> None:
    """From now on, for the rest of the process, stdout at every level goes to stderr (the command's lines are
    out, and a plug-in's thread that outlives the command must not add to them)."""
    _flush(sys.stdout, sys.__stdout__)
    if _is_stdout_fd(sys.stdout):
        with contextlib.suppress(OSError):
            os.dup2(_stderr_fd(), STDOUT_FD)
    sys.stdout = sys.stderr


def _duplicate_stdout(stdout: Any) -> int | None:
    """A new fd on the process's stdout when ``stdout`` writes to fd 1; None where fds are left alone."""
    if not _is_stdout_fd(stdout):
        return None
    try:
        return os.dup(STDOUT_FD)  # not inherited by child processes (PEP 446): only rag-eval writes to it
    except OSError:
        return None


def _is_stdout_fd(stream: Any) -> bool:
    try:
        return bool(stream.fileno() == STDOUT_FD)
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation (capsys, StringIO) is both
        return False


def _stderr_fd() -> int:
    try:
        return int(sys.stderr.fileno())
    except (AttributeError, OSError, ValueError):
        return STDERR_FD


def _flush(*streams: Any) -> None:
    for stream in streams:
        if stream is None:
            continue
        with contextlib.suppress(Exception):  # a closed or unwritable stream: the command reports its own
            stream.flush()
