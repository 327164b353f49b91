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
  a TREC run line tagged <label> (or is empty) beside such a <label>.json -- and refused
  otherwise. A ``.rag_eval.json`` that is not a manifest is refused too. Every entry the
  new set does not name is kept.

The lock is taken by :mod:`rag_eval._core.folder_lock`, folders are swapped by
:mod:`rag_eval._core.folder_renames`, and the files of rag_eval <= 0.1 are recognised by
:mod:`rag_eval._core.old_outputs`.
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import shutil
import stat
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rag_eval._core import folder_lock, folder_renames  # by module: the tests force the fallback of renameat2
from rag_eval._core.atomic import permission_bits, write_new_file
from rag_eval._core.errors import RagEvalError
from rag_eval._core.files import describe_kind
from rag_eval._core.old_outputs import written_by_old_rag_eval

MANIFEST = ".rag_eval.json"
MANIFEST_KIND = "rag_eval.output_set"
# A folder with more entries than this that rag_eval did not write is not an output folder
# (a home, a project, a dataset): refuse rather than mirror it entry by entry.
MAX_USER_ENTRIES = 20_000
_MAX_MANIFEST_BYTES = 1 << 20
# Temporary files of atomic writes (mkstemp in rag_eval <= 0.1): ".report.md.k3j_x9a2.tmp".
_STALE_TEMPORARY = re.compile(r"\..+\.(md|json|run)\.[a-z0-9_]{8}\.tmp", re.DOTALL)
# os.link failures after which a regular file is copied instead.
_NO_LINK = {errno.EXDEV, errno.EPERM, errno.EACCES, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP}
# The lock is re-entrant within one thread (rag_eval._core.folder_lock holds it across processes).
_registry = threading.Lock()
_held: dict[Path, tuple[int, int]] = {}  # folder -> (thread holding it, depth)


def _checkpoint(step: str) -> None:
    """Called after every change on disk; the tests replace it to kill the process at each step."""


@dataclass(frozen=True)
class Manifest:
    """The manifest of a set: its id and the names of its files."""

    id: str
    files: frozenset[str]


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
            _replace(real, {name: files[name] for name in names})
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
        raise RagEvalError(
            f"{Path(folder) / name}: {why}, and this run would replace it; move it elsewhere or choose another "
            "output folder (output: or --output)"
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


def repair(folder: Path) -> None:
    """Undo or finish what a killed run left beside ``folder``; the caller holds its lock."""
    leftovers = _leftovers(folder)
    if not os.path.lexists(folder):
        olds = [path for kind, _, path in leftovers if kind == "old"]
        if olds:  # killed between the two renames of the fallback: the old set goes back
            os.rename(olds[0], folder)
            _checkpoint("old set restored")
            leftovers = _leftovers(folder)
    live = read_manifest(folder)
    for kind, set_id, path in leftovers:
        if kind == "new" and (live is None or live.id != set_id):
            _remove(path)  # staged, never live: rag_eval's files and links to entries of the folder
        else:
            _empty_into(path, folder, live, set_id)
    if folder.is_dir():
        for name in sorted(os.listdir(folder)):
            if _STALE_TEMPORARY.fullmatch(name) and stat.S_ISREG(os.lstat(folder / name).st_mode):
                os.unlink(folder / name)
                _checkpoint(f"stale temporary {name} removed")


def read_manifest(folder: Path) -> Manifest | None:
    """The manifest of ``folder``; None when it has none or it is not one rag_eval wrote."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(folder / MANIFEST, flags)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, _MAX_MANIFEST_BYTES + 1)
    finally:
        os.close(fd)
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    if not (isinstance(doc, dict) and doc.get("kind") == MANIFEST_KIND and isinstance(doc.get("id"), str)):
        return None
    listed = doc.get("files")
    names = frozenset(n for n in listed if isinstance(n, str) and _plain_name(n)) if isinstance(listed, list) else ()
    return Manifest(doc["id"], frozenset(names))


# ---- one replacement ------------------------------------------------------------------------------------


def _replace(folder: Path, files: Mapping[str, bytes]) -> None:
    live = folder.is_dir()
    old = read_manifest(folder) if live else None
    set_id = secrets.token_hex(8)
    staging = _sibling(folder, "new", set_id)
    try:
        _stage(staging, folder if live else None, files, old, set_id)
        if not live:
            os.rename(staging, folder)
            _checkpoint("new set in place")
            folder_renames.fsync_folder(folder.parent)
            return
        aside = _swap(staging, folder, set_id)
    except BaseException:
        swapped = (read_manifest(folder) or Manifest("", frozenset())).id == set_id
        if os.path.lexists(staging) and not swapped:
            _remove(staging)  # the staged set never went live: the old set is in place, untouched
        raise
    folder_renames.fsync_folder(folder.parent)
    _empty_into(aside, folder, read_manifest(folder), set_id)


def _stage(staging: Path, live: Path | None, files: Mapping[str, bytes], old: Manifest | None, set_id: str) -> None:
    os.mkdir(staging)
    # The mode a new folder gets here (the umask applied by the kernel, never read with os.umask,
    # which races with other threads); the folder stays private until complete.
    mode = stat.S_IMODE(os.stat(staging).st_mode)
    os.chmod(staging, 0o700)
    _checkpoint("staging folder created")
    # The manifest names the set's files: the next write knows they are rag_eval's, and a reader can check them.
    manifest = {"kind": MANIFEST_KIND, "version": 1, "id": set_id, "files": sorted(files)}
    write_new_file(staging / MANIFEST, (json.dumps(manifest, indent=1) + "\n").encode())
    _checkpoint("manifest staged")
    for name, data in files.items():
        write_new_file(staging / name, data, permission_bits(live / name) if live else None)
        _checkpoint(f"{name} staged")
    if live is not None:
        budget = [MAX_USER_ENTRIES]
        theirs = old.files if old else frozenset()
        for name in sorted(os.listdir(live)):
            if name == MANIFEST or name in files or name in theirs or _STALE_TEMPORARY.fullmatch(name):
                continue
            _carry(live / name, staging / name, budget, live)
            _checkpoint(f"{name} carried")
    folder_renames.fsync_folder(staging)
    try:
        os.chmod(staging, stat.S_IMODE(os.stat(live).st_mode) if live else mode)
    except PermissionError:  # a shared folder owned by someone else: ours keeps the umask's mode
        os.chmod(staging, mode)


def _carry(source: Path, target: Path, budget: list[int], live: Path) -> None:
    """Mirror a user entry into the staged folder: hard links, so nothing is copied or ever missing."""
    budget[0] -= 1
    if budget[0] < 0:
        raise RagEvalError(
            f"{live}: holds more than {MAX_USER_ENTRIES} files and folders rag_eval did not write; "
            "choose an output folder of its own"
        )
    info = os.lstat(source)
    if stat.S_ISDIR(info.st_mode):
        os.mkdir(target, 0o700)
        for name in sorted(os.listdir(source)):
            _carry(source / name, target / name, budget, live)
        folder_renames.fsync_folder(target)
        os.chmod(target, stat.S_IMODE(info.st_mode))
        os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
    elif stat.S_ISLNK(info.st_mode):
        os.symlink(os.readlink(source), target)
    else:
        try:
            os.link(source, target, follow_symlinks=False)
        except OSError as error:
            if error.errno not in _NO_LINK or not stat.S_ISREG(info.st_mode):
                raise

            shutil.copy2(source, target, follow_symlinks=False)


def _swap(staging: Path, folder: Path, set_id: str) -> Path:
    """Put the staged folder at ``folder``; return where the old folder went."""
    if folder_renames.exchange(staging, folder):
        _checkpoint("exchanged")
        return staging
    aside = _sibling(folder, "old", set_id)
    os.rename(folder, aside)
    _checkpoint("old set moved aside")
    try:
        os.rename(staging, folder)
    except BaseException:
        os.rename(aside, folder)
        raise
    _checkpoint("new set in place")
    return aside


def _empty_into(old: Path, live: Path, live_manifest: Manifest | None, set_id: str) -> None:
    """Delete an old folder's own files and what ``live`` also holds; give back the rest; remove it."""
    ours = {MANIFEST}
    for manifest in (read_manifest(old), live_manifest):
        if manifest is not None:
            ours |= manifest.files
    _writable(old)
    # The manifest goes last: until then, a run repairing after a kill here still knows which files are rag_eval's.
    for name in sorted(os.listdir(old), key=lambda name: (name == MANIFEST, name)):
        path = old / name
        if (name in ours or _STALE_TEMPORARY.fullmatch(name)) and not stat.S_ISDIR(os.lstat(path).st_mode):
            os.unlink(path)
            _checkpoint(f"old {name} removed")
        else:
            _merge(path, live / name)
    try:
        os.rmdir(old)
    except OSError as error:
        if error.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
        kept = _sibling(live, "kept", set_id)
        os.rename(old, kept)
        raise RagEvalError(
            f"{kept}: left by an interrupted or concurrent write into {live}, it holds files that differ from "
            f"those in {live}; compare them and delete it, then run again"
        ) from None
    _checkpoint("old folder removed")


def _merge(entry: Path, live: Path) -> None:
    """An entry of an old folder: deleted if ``live`` holds the same, moved there if it holds nothing."""
    info = os.lstat(entry)
    try:
        there = os.lstat(live)
    except FileNotFoundError:
        try:
            if folder_renames.rename_no_replace(entry, live) or folder_renames.rename_if_absent(entry, live):
                _checkpoint(f"{entry.name} given back")
        except FileExistsError:
            pass  # it appeared there meanwhile: kept, and reported with its folder
        return
    if stat.S_ISDIR(info.st_mode) and stat.S_ISDIR(there.st_mode):
        _writable(entry)
        for name in sorted(os.listdir(entry)):
            _merge(entry / name, live / name)
        try:
            os.rmdir(entry)
        except OSError:
            return  # something in it differs: kept, and reported with its folder
        _checkpoint(f"old {entry.name}/ removed")
    elif _same(entry, info, live, there):
        os.unlink(entry)
        _checkpoint(f"old {entry.name} removed")


def _same(a: Path, a_info: os.stat_result, b: Path, b_info: os.stat_result) -> bool:
    if (a_info.st_dev, a_info.st_ino) == (b_info.st_dev, b_info.st_ino):
        return True
    if stat.S_ISLNK(a_info.st_mode) and stat.S_ISLNK(b_info.st_mode):
        return os.readlink(a) == os.readlink(b)
    if not (stat.S_ISREG(a_info.st_mode) and stat.S_ISREG(b_info.st_mode)) or a_info.st_size != b_info.st_size:
        return False
    with open(a, "rb") as left, open(b, "rb") as right:  # a copy made where a hard link was refused
        while True:
            chunk = left.read(1 << 20)
            if chunk != right.read(1 << 20):
                return False
            if not chunk:
                return True


# ---- helpers ----------------------------------------------------------------------------------------------


def _cannot_write(folder: str | os.PathLike[str], error: OSError) -> RagEvalError:
    return RagEvalError(f"{error.filename or folder}: cannot write the outputs: {error.strerror or error}")


def _sibling(folder: Path, kind: str, set_id: str) -> Path:
    return folder.with_name(f".{folder.name}.rag_eval-{kind}-{set_id}")


def _leftovers(folder: Path) -> list[tuple[str, str, Path]]:
    """``(kind, id, path)`` of the staged (new) and old folders killed runs left beside ``folder``."""
    pattern = re.compile(rf"\.{re.escape(folder.name)}\.rag_eval-(new|old)-([0-9a-f]{{16}})", re.DOTALL)
    found = []
    for name in sorted(os.listdir(folder.parent)):
        match = pattern.fullmatch(name)
        if match and stat.S_ISDIR(os.lstat(folder.parent / name).st_mode):
            found.append((match[1], match[2], folder.parent / name))
    return found


def _remove(path: Path) -> None:
    """Delete a file or a folder tree of rag_eval's own."""
    info = os.lstat(path)
    if stat.S_ISDIR(info.st_mode):
        _writable(path, info)
        for name in sorted(os.listdir(path)):
            _remove(path / name)
        os.rmdir(path)
    else:
        os.unlink(path)
    _checkpoint(f"{path.name} removed")


def _writable(folder: Path, info: os.stat_result | None = None) -> None:
    # A folder about to be emptied (a read-only user folder mirrored or set aside) must let us remove entries.
    mode = stat.S_IMODE((info or os.lstat(folder)).st_mode)
    if mode & 0o700 != 0o700:
        os.chmod(folder, mode | 0o700)


def _plain_name(name: str) -> bool:
    return bool(name) and name not in (".", "..", MANIFEST) and "/" not in name and "\0" not in name and os.sep not in name


def _checked_names(files: Mapping[str, bytes]) -> list[str]:
    bad = [name for name in files if not _plain_name(name)]
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
