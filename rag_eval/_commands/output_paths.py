"""Files a command writes where the user says (``--report``, ``--summary``): checked before anything is read.

An output must never replace one of the command's inputs (nor, for a query set, a file that is not
one), and must be a file that can be written: not a folder, not a FIFO (which would block), not under a file, not in a read-only
place. The report is replaced atomically; a CI job summary is appended to, since the job's
steps share it.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from rag_eval._core.atomic import atomic_write_text
from rag_eval._core.errors import ConfigError, RagEvalError
from rag_eval._core.files import describe_kind
from rag_eval._data.judging.evidence_file import read_query_set


def check_output(
    path: str, flag: str, inputs: Sequence[tuple[str, str | os.PathLike[str]]], append: bool = False
) -> None:
    """Refuse an output path that is one of ``inputs`` (``(role, path)``), a folder, a special file or in an
    unwritable place; ``append``: the file is appended to (a terminal or /dev/stderr is then fine)."""
    target = Path(path)
    for role, source in inputs:
        if _same_file(target, Path(source)):
            action = "appended to" if append else "replaced by the output"
            raise ConfigError(
                f"{flag} {path}: is the {role} file {source}, which would be {action}; write it to another file"
            )
    try:
        mode: int | None = os.stat(target).st_mode
    except (FileNotFoundError, NotADirectoryError):  # not there yet (or under a file: said below)
        mode = None
    except OSError as error:
        raise ConfigError(f"{flag} {path}: cannot be written ({error.strerror or error})") from None
    if mode is not None:
        kind = describe_kind(mode)
        # Appending to a terminal or /dev/stderr is fine; a FIFO would block, a folder cannot be a file.
        if kind is not None and not (append and kind == "a character device"):
            raise ConfigError(f"{flag} {path}: is {kind}; give the path of a file to write")
    folder = target.parent
    while not folder.exists() and folder != folder.parent:  # missing folders are created when writing
        folder = folder.parent
    if not folder.is_dir():
        raise ConfigError(f"{flag} {path}: {folder} is not a folder")
    if append and mode is not None:
        writable = os.access(target, os.W_OK)
    elif folder == target.parent:
        writable = _can_create_in(folder)  # the report is written to a temporary file there, then renamed
    else:
        writable = os.access(folder, os.W_OK | os.X_OK)
    if not writable:
        raise ConfigError(f"{flag} {path}: cannot write there (permission denied or a read-only place)")


def check_query_set_output(path: str, flag: str, inputs: Sequence[tuple[str, str | os.PathLike[str]]]) -> None:
    """:func:`check_output` for a command that writes a query set (``judgements convert``, ``generate``): an
    existing file there is replaced only when it is a query set (an earlier output), never another file."""
    check_output(path, flag, inputs)
    target = Path(path)
    if not target.is_file():
        return
    try:
        _, raw = read_query_set(target)
    except RagEvalError:
        raw = None
    if not (isinstance(raw, dict) and "queries" in raw):
        raise ConfigError(
            f"{flag} {path}: exists and is not a query set (a YAML mapping with queries); rag-eval replaces only a "
            "query set there (an earlier output): give another path, or move the file away"
        )


def summary_flag(path: str) -> str:
    """How the user named the job summary ``path``: ``--summary``, or ``$GITHUB_STEP_SUMMARY`` (the default)."""
    return "$GITHUB_STEP_SUMMARY" if path == os.environ.get("GITHUB_STEP_SUMMARY") else "--summary"


def write_report(path: str, text: str) -> None:
    """Replace ``path`` with ``text`` at once (``--report``); ConfigError when it cannot be written."""
    try:
        atomic_write_text(path, text)
    except OSError as error:
        raise ConfigError(f"--report {path}: cannot write the report ({error.strerror or error})") from None


def append_summary(path: str, text: str) -> None:
    """Append ``text`` to a CI job summary: GitHub's summary file is shared by the job's steps, never replaced."""
    try:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text + "\n")
    except OSError as error:
        raise ConfigError(f"{path}: cannot write the summary ({error.strerror or error})") from None


def _can_create_in(folder: Path) -> bool:
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist (yet): compare where they would be
        return a.resolve() == b.resolve()
