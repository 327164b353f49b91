"""The mechanics of replacing an output set: stage the new set, swap it in, empty the old one, repair a kill.

What happens on disk, and why a kill at any step leaves the previous set or the new one whole,
is told in rag_eval._core.output_folder, which checks the folder, holds its lock and calls
:func:`replace_files` and :func:`repair` here. Every change on disk is followed by a call to
``_checkpoint``, which the tests replace to kill the process at each step.
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import shutil
import stat
from collections.abc import Mapping
from pathlib import Path

from rag_eval._core import folder_renames  # by module: the tests force the fallback of renameat2
from rag_eval._core.atomic import permission_bits, write_new_file
from rag_eval._core.errors import RagEvalError
from rag_eval._core.output_manifest import MANIFEST, MANIFEST_KIND, Manifest, read_manifest

# A folder with more entries than this that rag_eval did not write is not an output folder
# (a home, a project, a dataset): refuse rather than mirror it entry by entry.
MAX_USER_ENTRIES = 20_000
# Temporary files of atomic writes (mkstemp in rag_eval <= 0.1): ".report.md.k3j_x9a2.tmp".
_STALE_TEMPORARY = re.compile(r"\..+\.(md|json|run)\.[a-z0-9_]{8}\.tmp", re.DOTALL)
# os.link failures after which a regular file is copied instead.
_NO_LINK = {errno.EXDEV, errno.EPERM, errno.EACCES, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP}


def _checkpoint(step: str) -> None:
    """Called after every change on disk; the tests replace it to kill the process at each step."""


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


# ---- one replacement ------------------------------------------------------------------------------------


def replace_files(folder: Path, files: Mapping[str, bytes]) -> None:
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
