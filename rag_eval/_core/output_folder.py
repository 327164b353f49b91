"""Replace the set of files in an output folder as a whole, beside the user's own files.

A run's outputs (report.md, <label>.json, <label>.run, comparison.md) are one set. They
are never replaced file by file: whatever fails, and wherever a process is killed, the
output folder holds exactly the previous complete set or the new complete set.

On disk, for an output folder ``P/N``:

* ``P/.N.rag_eval-lock`` is held (flock) while a run writes N; a second run is refused,
  naming the holder's pid. The kernel drops the lock when its process dies.
* ``N/.rag_eval.json``, the manifest, lists the files of the set: the files rag_eval owns
  in N. Every other entry of N (a baseline, notes, a subfolder) is the user's and is kept.
* A write stages the new set in ``P/.N.rag_eval-new-<id>``: manifest first, then each file
  (fsync'ed), then a hard link (or a copy) of every user entry of N. One
  ``renameat2(RENAME_EXCHANGE)`` swaps it with N; the old folder, now at the staging name,
  is then emptied: its rag_eval files deleted, entries identical to N's deleted, entries
  that appeared in N meanwhile moved into N, nothing else removed.
* Without an atomic exchange (not Linux, or a filesystem lacking it) N is renamed to
  ``P/.N.rag_eval-old-<id>`` and the staged folder to N; a kill between the two renames
  leaves no N (the old set waits whole at the old name), and the next run renames the old
  folder back as soon as it holds the lock, before it retrieves anything.
* Each run first repairs what a killed run left (under the lock, so its process is gone; a
  parent folder created for the lock is removed again if the run writes nothing):
  a staged folder that never went live (the live manifest's id is not its id) is deleted;
  an old folder is emptied as above; hidden ``.NAME.XXXXXXXX.tmp`` files of earlier
  versions are deleted. An old folder holding a file that differs from N's copy is never
  deleted: it is renamed ``P/.N.rag_eval-kept-<id>`` and the run stops, saying so.
* rag_eval never replaces a file it did not write. In a folder with a manifest, an entry
  named like a file of the new set (report.md, comparison.md, <label>.json, <label>.run)
  that the manifest does not list is the user's, and so is a folder or link where a listed
  file was: the write is refused, naming it. A folder
  without a manifest was written by rag_eval <= 0.1, or is the user's: an entry the new set
  names is replaced only when it is recognisably rag_eval's output -- report.md whose third
  line is the generated ``## 📚 What was evaluated``, comparison.md starting
  ``# Regression check: ✅ PASS`` (or ``❌ FAIL``), <label>.json starting with
  ``"schema_version"`` and ``"kind": "rag_eval.results"``, <label>.run whose first line is
  a TREC run line tagged <label> (or is empty) beside such a <label>.json, report.html,
  per-query.csv and plots as :mod:`rag_eval._core.old_outputs` says -- and refused
  otherwise (one line naming every file in the way). A ``.rag_eval.json`` that is not a
  manifest is refused too. Every entry the new set does not name is kept.

The lock is taken by :mod:`rag_eval._core.folder_lock`, the manifest is read by
:mod:`rag_eval._core.output_manifest`, a set is staged, swapped in and a kill repaired by
:mod:`rag_eval._core.output_swap` (which swaps folders with :mod:`rag_eval._core.folder_renames`),
and the files of rag_eval <= 0.1 are recognised by :mod:`rag_eval._core.old_outputs`. This module
checks the folder, holds its lock and calls them.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from rag_eval._core import folder_lock
from rag_eval._core.errors import RagEvalError
from rag_eval._core.files import describe_kind
from rag_eval._core.messages import some_of
from rag_eval._core.old_outputs import written_by_old_rag_eval
from rag_eval._core.output_manifest import MANIFEST, plain_name, read_manifest
from rag_eval._core.output_swap import repair, replace_files

# The lock is re-entrant within one thread (rag_eval._core.folder_lock holds it across processes).
_registry = threading.Lock()
_held: dict[Path, tuple[int, int]] = {}  # folder -> (thread holding it, depth)


def replace_output_set(
    folder: str | os.PathLike[str], files: Mapping[str, bytes], config_path: str | os.PathLike[str] | None = None
) -> Path:
    """Make ``files`` (``{name: content}``) the set of rag_eval files in ``folder``, as one step.

    Files of the previous set that ``files`` does not name disappear; entries rag_eval
    did not write are kept. Returns the folder's real path. Raises RagEvalError, with
    one line naming the folder, when the folder is refused, held by another run, or
    cannot be written; the previous set is then left as it was.
    """
    names = _checked_names(files)
    with hold_output_folder(folder, config_path) as real:
        try:
            repair(real)
            check_replaceable(folder, names)  # again under the lock: a file may have been saved meanwhile
            replace_files(real, {name: files[name] for name in names})
        except OSError as error:
            raise _cannot_write(folder, error) from error
    return real


def check_replaceable(folder: str | os.PathLike[str], names: Iterable[str]) -> None:
    """RagEvalError, one line naming the file and the fix, when writing ``names`` would replace a user's file.

    An entry of ``folder`` named in ``names`` (or the manifest's name) may be replaced only
    when rag_eval wrote it: the manifest lists it (and it is still a regular file: a folder or a
    link saved where a listed file was is the user's) or, without a manifest, it is recognisably
    the output of an earlier rag_eval (see the module's docstring).
    """
    real = Path(os.path.realpath(folder))
    if not real.is_dir():
        return
    manifest = read_manifest(real)
    if manifest is None and os.path.lexists(real / MANIFEST):
        raise RagEvalError(
            f"{Path(folder) / MANIFEST}: not a manifest rag_eval wrote, and a run would replace it; "
            "move it elsewhere or choose another output folder (output: or --output)"
        )
    refused: list[tuple[str, str]] = []  # every file in the way, said at once: not one per run
    for name in sorted(set(names) - {MANIFEST}):
        try:
            mode = os.lstat(real / name).st_mode
        except OSError:
            continue
        if manifest is not None and name not in manifest.files:
            why = f"not written by rag_eval (the folder's {MANIFEST} does not list it)"
        elif manifest is not None and not stat.S_ISREG(mode):
            # rag_eval writes regular files only: this was put in the place of one. Replacing it would swap in
            # the new set and only then fail to empty the old folder, blaming an interrupted write.
            what = "a symbolic link" if stat.S_ISLNK(mode) else describe_kind(mode)
            why = f"{what} where the file rag_eval wrote was (the folder's {MANIFEST} lists a file)"
        elif manifest is None and not written_by_old_rag_eval(real, name):
            why = "not recognisably written by rag_eval (the folder has no manifest)"
        else:
            continue
        refused.append((name, why))
    if refused:
        name, why = refused[0]
        more = "" if len(refused) == 1 else (
            f" (and {len(refused) - 1} more in the same folder: {some_of([n for n, _ in refused[1:]], 5)})")
        them = "it" if len(refused) == 1 else "them"
        raise RagEvalError(
            f"{Path(folder) / name}: {why}, and this run would replace it{more}; move {them} elsewhere or choose "
            "another output folder (output: or --output)"
        )


def check_output_folder(folder: str | os.PathLike[str], config_path: str | os.PathLike[str] | None = None) -> Path:
    """The real path of ``folder``; RagEvalError when rag_eval must not write its outputs there.

    Refused: ``/``, the home folder or one of its parents, the config's own folder or
    one of its parents, a folder holding ``.git``, a mount point (it cannot be swapped),
    and anything that is not a folder.
    """
    real = Path(os.path.realpath(folder))
    why = _danger(real, config_path)
    if why:
        raise RagEvalError(
            f"{folder}: refusing to write the outputs into {why}; set 'output:' (or --output) to a folder of "
            "their own, such as reports/<name>"
        )
    try:
        mode = os.lstat(real).st_mode
    except FileNotFoundError:
        return real
    except OSError as error:
        raise RagEvalError(f"{folder}: cannot write the outputs: {error.strerror}") from None
    if not stat.S_ISDIR(mode):
        kind = "a file" if stat.S_ISREG(mode) else "not a folder"
        raise RagEvalError(f"{folder}: cannot write the outputs: it is {kind}, expected a folder")
    return real


@contextmanager
def hold_output_folder(
    folder: str | os.PathLike[str], config_path: str | os.PathLike[str] | None = None
) -> Iterator[Path]:
    """Check ``folder`` and hold its lock for the block, yielding its real path; another run is refused meanwhile.

    Re-entrant within one thread, so a caller may hold it for a whole run (refusing a
    second run before any retrieval) and still call :func:`replace_output_set`. Once the lock
    is taken, what a killed run left is repaired (:func:`repair`): a folder set aside by a
    run killed between the two renames of the fallback is back before the block runs, so a
    run that then fails still leaves the old set in place. Parent folders created for the
    lock are removed again when the block ends without an output folder (a failed run writes
    nothing), as long as they are empty.
    """
    real = check_output_folder(folder, config_path)
    me = threading.get_ident()
    with _registry:
        owner = _held.get(real)
        if owner is not None and owner[0] == me:
            _held[real] = (me, owner[1] + 1)
    if owner is not None and owner[0] == me:
        try:
            yield real
        finally:
            with _registry:
                _held[real] = (me, _held[real][1] - 1)
        return
    created = _missing_folders(real.parent)
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
        fd = folder_lock.acquire(real)
    except BaseException as error:
        _remove_empty(created)
        if isinstance(error, OSError):
            raise _cannot_write(folder, error) from error
        raise
    with _registry:
        _held[real] = (me, 1)
    try:
        try:
            repair(real)
        except OSError as error:
            raise _cannot_write(folder, error) from error
        yield real
    finally:
        with _registry:
            del _held[real]
        folder_lock.release(real, fd)
        if not os.path.lexists(real):
            _remove_empty(created)


def _missing_folders(folder: Path) -> list[Path]:
    """``folder`` and its ancestors that do not exist yet, deepest first: what ``mkdir(parents=True)`` creates."""
    missing = []
    while not os.path.lexists(folder) and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def _remove_empty(folders: list[Path]) -> None:
    """Remove the folders a run created for nothing, deepest first, stopping at one that is not empty."""
    for path in folders:
        try:
            os.rmdir(path)
        except OSError:  # something was saved there meanwhile (another run's lock, a user's file): kept
            return


# ---- helpers ----------------------------------------------------------------------------------------------


def _cannot_write(folder: str | os.PathLike[str], error: OSError) -> RagEvalError:
    return RagEvalError(f"{error.filename or folder}: cannot write the outputs: {error.strerror or error}")


def _checked_names(files: Mapping[str, bytes]) -> list[str]:
    bad = [name for name in files if not plain_name(name)]
    if bad:
        raise ValueError(f"output file names must be plain names in the folder, got {bad!r}")
    return list(files)


def _danger(real: Path, config_path: str | os.PathLike[str] | None) -> str | None:
    """Why ``real`` must not be an output folder (which is swapped as a whole), or None."""
    if real == Path(real.anchor):
        return f"the root folder {real}"
    try:
        home = Path(os.path.realpath(Path.home()))
    except (RuntimeError, KeyError):
        home = None
    if home is not None and real == home:
        return "your home folder"
    if home is not None and real in home.parents:
        return f"{real}, which holds your home folder"
    if config_path is not None:
        config_folder = Path(os.path.realpath(config_path)).parent
        if real == config_folder:
            return "the config's own folder"
        if real in config_folder.parents:
            return f"{real}, which holds the config's folder"
    try:
        cwd: Path | None = Path(os.path.realpath(os.getcwd()))
    except OSError:  # the current folder was removed
        cwd = None
    if cwd is not None and (real == cwd or real in cwd.parents):  # swapped away, it would leave this process and a shell in a removed folder
        return "the current folder" if real == cwd else f"{real}, which holds the current folder"
    if os.path.lexists(real / ".git"):
        return f"{real}, which holds .git (a repository)"
    if os.path.isdir(real) and os.path.ismount(real):
        return f"{real}, a mount point (it cannot be swapped in one step; use a folder inside it)"
    return None
