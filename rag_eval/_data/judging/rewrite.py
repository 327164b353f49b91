"""A YAML query set rewritten with a few values changed, keeping its comments, order and layout.

ruamel.yaml's round trip keeps comments, key order, quoting and block scalars; its indentation
is guessed from the file (mapping indent, sequence indent, dash offset), so that an unchanged
line is written back as it was. A line is never re-wrapped (an unbounded width). A leading
byte-order mark and CRLF line endings are kept.

Two guards. The result is parsed again and compared with the original parsed the same way and
changed by the same edit: a round trip that changed anything else (a document's text) is a bug,
and nothing is written. And the file must still hold what the caller read: one edited in the
meantime (by a person, or another rag-eval) is refused rather than overwritten. The write itself
is atomic (rag_eval._core.atomic): a reader sees the old file or the new one, never half.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

from rag_eval._core.atomic import atomic_write_bytes
from rag_eval._core.errors import DatasetError
from rag_eval._core.files import BOM
from rag_eval._core.yaml_loader import parse_yaml
from rag_eval._data.judging import yaml_edit
from rag_eval._data.judging.yaml_edit import LAYOUTS, dump, round_trip_yaml

# A key with nothing after it (a nested block follows), and a line's indentation.
_KEY_ONLY = re.compile(r"^( *)(?:- +)*[^\s#-][^#]*:\s*(?:#.*)?$")
_INDENT = re.compile(r"^( *)(- +)?")


class EditedMeanwhile(DatasetError):
    """The file changed between reading it and writing it back."""


def rewrite_yaml(
    source: Path, original: bytes, edit: Callable[[Any], None], target: Path | None = None
) -> None:
    """Write ``original`` (the bytes read from ``source``, a BOM removed) changed by ``edit`` to ``target``.

    ``edit`` receives the parsed document (mappings and lists) and changes it in place; it is
    called twice, on the round-trip tree and on a plain parse (the check described in the
    module's docstring). ``target`` defaults to ``source``. Raises :class:`EditedMeanwhile`
    when ``source`` no longer holds ``original``.
    """
    from ruamel.yaml.util import load_yaml_guess_indent  # heavy, for this rewrite only (docs/architecture.md)

    text = original.decode("utf-8")
    crlf = "\r\n" in text and "\n" not in text.replace("\r\n", "")
    text = text.replace("\r\n", "\n") if crlf else text
    _, sequence, offset = load_yaml_guess_indent(text)
    guessed = (_mapping_indent(text), sequence or 2, offset or 0)
    tree = round_trip_yaml(guessed).load(text)
    # The layout whose dump of the untouched tree is the file itself, if one is: then only edited lines change.
    layout = next((one for one in (guessed, *LAYOUTS) if dump(tree, one) == text), guessed)
    edit(tree)
    written = dump(tree, layout)
    expected = parse_yaml(text, source, DatasetError)
    edit(expected)
    if parse_yaml(written, source, DatasetError) != expected:
        raise RuntimeError(f"{source}: the YAML round trip changed more than the edit; nothing written")
    data = (written.replace("\n", "\r\n") if crlf else written).encode("utf-8")
    try:
        current = source.read_bytes()
    except OSError as failure:
        raise EditedMeanwhile(f"{source}: cannot be read again before writing ({failure.strerror}); nothing "
                              "written") from None
    if current.removeprefix(BOM) != original:
        raise EditedMeanwhile(f"{source}: the file changed while rag-eval worked on it; nothing written: run the "
                              "command again")
    if target is None or target == source:
        data = (BOM if current.startswith(BOM) else b"") + data
    atomic_write_bytes(target or source, data)


def append(container: Any, value: Any, key: Any = None) -> None:
    """Append ``value`` to a mapping (under ``key``) or a list, keeping what followed the last item after it
    (:func:`rag_eval._data.judging.yaml_edit.append`, the one home of that rule).

    On ruamel's nodes ``value`` becomes ruamel's nodes too, which can carry the moved comment lines; a
    plain ``dict`` or ``list`` (the plain parse of :func:`rewrite_yaml`'s check) is appended to as is.
    """
    from ruamel.yaml.comments import CommentedBase

    yaml_edit.append(container, _commented(value) if isinstance(container, CommentedBase) else value, key)


def _commented(value: Any) -> Any:
    """``value`` with its mappings and lists as ruamel's nodes, which can carry a comment, and its text quoted
    where YAML 1.1 would read it otherwise (:func:`rag_eval._data.judging.yaml_edit.scalar`)."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(value, dict):
        return CommentedMap((yaml_edit.scalar(key), _commented(item)) for key, item in value.items())
    if isinstance(value, list):
        return CommentedSeq(_commented(item) for item in value)
    return yaml_edit.scalar(value)


# Layouts tried after the guessed one, (mapping indent, sequence indent, dash offset): the usual ones.
def _mapping_indent(text: str) -> int:
    """The indentation of a nested mapping: the first key with nothing after it, whose next line is a key."""
    lines = [line for line in text.split("\n") if line.strip() and not line.lstrip().startswith("#")]
    for above, below in pairwise(lines):
        key = _KEY_ONLY.match(above)
        if key is None:
            continue
        head = _INDENT.match(above)
        nested = _INDENT.match(below)
        assert head is not None and nested is not None  # both patterns match any line
        if nested.group(2):  # a sequence follows: its indentation is the sequence's, not a mapping's
            continue
        width = len(nested.group(1)) - len(head.group(1)) - len(head.group(2) or "")
        if width > 0:
            return width
    return 2
