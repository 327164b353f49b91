"""The manifest of an output set: the file ``.rag_eval.json`` that names the files rag_eval owns in a folder.

A write (rag_eval._core.output_swap) stages the manifest first; :func:`read_manifest` reads it
back, and :func:`plain_name` is the rule for the names a set may hold (and a manifest may list).
The rules built on it are told in rag_eval._core.output_folder.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

MANIFEST = ".rag_eval.json"
MANIFEST_KIND = "rag_eval.output_set"
_MAX_MANIFEST_BYTES = 1 << 20


@dataclass(frozen=True)
class Manifest:
    """The manifest of a set: its id and the names of its files."""

    id: str
    files: frozenset[str]


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
    names = frozenset(n for n in listed if isinstance(n, str) and plain_name(n)) if isinstance(listed, list) else ()
    return Manifest(doc["id"], frozenset(names))


def plain_name(name: str) -> bool:
    return bool(name) and name not in (".", "..", MANIFEST) and "/" not in name and "\0" not in name and os.sep not in name
