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
import json
import math
import os
import re
import stat
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import Any

from rag_eval._core.errors import InputFormatError, RagEvalError

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


# A run of this many NUL bytes is never text: a binary file, or a sparse one (allocated, never written).
# Text readers refuse it when they meet it, before reading the rest (a 2 GB file of NULs: at once).
NUL_RUN = 1 << 16


def binary_content(path: str | os.PathLike[str], offset: int, what: str) -> str:
    """The one line refusing a file that holds :data:`NUL_RUN` NUL bytes from byte ``offset``."""
    return (
        f"{path}: {NUL_RUN // 1024} KiB of NUL bytes from byte {offset:,}: not a text file (a binary file, or one "
        f"allocated and never written); expected a {what}"
    )


def read_bytes(
    path: str | os.PathLike[str],
    what: str = "file",
    max_bytes: int | None = MAX_DOCUMENT_BYTES,
    error: type[RagEvalError] = InputFormatError,
) -> bytes:
    """The bytes of a checked input file, a leading BOM removed.

    A file that begins with :data:`NUL_RUN` NUL bytes is refused before the rest is read.
    """
    path = check_input_file(path, what, max_bytes, error)
    try:
        with path.open("rb") as handle:
            head = handle.read(NUL_RUN)
            if len(head) == NUL_RUN and not head.strip(b"\0"):
                raise error(binary_content(path, 0, what))
            handle.seek(0)
            data = handle.read()  # one allocation (head + the rest would copy a 500 MB file once more)
    except OSError as failure:  # a race with the checks above, or an I/O error
        raise error(f"{path}: cannot be read ({_reason(failure)})") from None
    return data.removeprefix(BOM)


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


# json.loads recurses once per nesting level and gives out near Python's recursion limit
# (about 1000); when it does, the first place nested deeper than this is named.
JSON_NESTING_SHOWN = 500
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


@dataclass(frozen=True)
class StrictJson:
    """How a file rag_eval writes itself (a results file) is read back: strict JSON, as it was written.

    Python's json reads a bare ``NaN``, ``Infinity`` or ``-Infinity``; strict parsers (JavaScript's
    JSON.parse, jq) refuse them, and so does :func:`parse_json` given this, naming the field that
    holds one. Its failures are worded as such a file's readers have always said them:
    ``PATH: line L, column C: not valid JSON (reason)``.
    """

    holds: str  # what the file holds instead of a bare constant, said after refusing one
    depth: str  # how deep the file nests, said when it is nested too deeply to parse


def parse_json(
    text: str,
    source: str | os.PathLike[str],
    error: type[RagEvalError] = InputFormatError,
    line: int | None = None,
    *,
    strict: StrictJson | None = None,
) -> Any:
    """``json.loads(text)``, every failure one line: ``SOURCE: line L: invalid JSON: ... (column C)``.

    The one JSON parser of rag_eval. Besides syntax errors this covers a document nested too
    deeply for Python's stack (RecursionError, with the place it gets too deep) and an integer too
    long to convert (ValueError). ``line``: ``text`` is that line of a JSON Lines file, named
    ``SOURCE:LINE:`` as line formats are. ``strict``: the file is one rag_eval wrote (see
    :class:`StrictJson`): bare NaN and Infinity are refused too, and failures are worded for it.
    """
    bare: list[_Bare] = []

    def constant(name: str) -> _Bare:
        found = _Bare(name)
        bare.append(found)
        return found

    try:
        data = json.loads(text) if strict is None else json.loads(text, parse_constant=constant)
    except json.JSONDecodeError as failure:
        if strict is not None:
            raise error(
                f"{source}: line {failure.lineno}, column {failure.colno}: not valid JSON ({failure.msg})"
            ) from None
        where = _json_place(source, line, failure.lineno)
        raise error(f"{where}: invalid JSON: {failure.msg} (column {failure.colno})") from None
    except RecursionError:
        offset = _deeper_than(text, JSON_NESTING_SHOWN) or 0
        text_line, column = _line_column(text, offset)
        if strict is not None:
            raise error(
                f"{source}: arrays or objects nested too deeply to parse (more than {JSON_NESTING_SHOWN} levels at "
                f"line {text_line}, column {column}); {strict.depth}"
            ) from None
        raise error(
            f"{_json_place(source, line, text_line)}: invalid JSON: nested more than {JSON_NESTING_SHOWN} levels deep "
            f"(column {column}); flatten the structure"
        ) from None
    except ValueError as failure:  # an integer of more than 4300 digits (sys.get_int_max_str_digits)
        reason = " ".join(str(failure).split(";")[0].split())
        where = f"{source}:{line}" if line is not None else str(source)
        raise error(f"{where}: invalid JSON: a number is too long to read ({reason})") from None
    if bare and strict is not None:
        where, name = _find_bare(data)
        raise error(f"{source}: {where}: {name} is not JSON (strict parsers reject it); {strict.holds}")
    return data


class _Bare:
    """Stands in for a bare NaN / Infinity while parsing strictly, so that its field can be named."""

    def __init__(self, name: str) -> None:
        self.name = name


def _find_bare(data: Any) -> tuple[str, str]:
    """(field path, constant) of the first bare constant in ``data``, in document order."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:  # iterative: the document may be deeper than Python's recursion limit allows
        where, node = stack.pop()
        if isinstance(node, _Bare):
            return where or "(top level)", node.name
        if isinstance(node, dict):
            stack.extend((f"{where}{json_key(k) if where else k}", v) for k, v in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend((f"{where}[{i}]", v) for i, v in reversed(list(enumerate(node))))
    return "(top level)", "NaN"  # pragma: no cover - not reached: parse_constant saw one


_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_@-]+$")


def strict_json(document: Any, indent: int = 2) -> str:
    """``document`` as strict JSON text (a NaN or infinity raises ValueError), indented, with every list of
    scalars, or of lists of scalars, on one line (``[["doc-1", 12.5, 2], ["doc-2", 11.0, null]]``).

    The same JSON as ``json.dumps(document, indent=indent, allow_nan=False)``, laid out for people and
    written at the C encoder's speed: the standard library indents in pure Python, node by node, which took
    about 0.7 s for a results file of 300 rankings of 100 (a ranking is then one line, not 500).
    """
    return _indented(document, 0, " " * indent) + "\n"


def _indented(value: Any, level: int, step: str) -> str:
    if isinstance(value, dict):
        if not value:
            return "{}"
        inner = step * (level + 1)
        items = (f"{inner}{_dumps(key if isinstance(key, str) else _key(key))}: {_indented(item, level + 1, step)}"
                 for key, item in value.items())
        return "{\n" + ",\n".join(items) + "\n" + step * level + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        if all(map(_flat, value)):
            return _dumps(value)
        inner = step * (level + 1)
        return "[\n" + ",\n".join(inner + _indented(item, level + 1, step) for item in value) + "\n" + step * level + "]"
    return _dumps(value)


def _key(key: Any) -> str:
    """A non-string key as json.dumps writes it (``true``, ``1.5``), or its TypeError for a key it refuses."""
    return str(next(iter(json.loads(json.dumps({key: 0}, allow_nan=False)))))


# The types of a JSON scalar: a list whose items are all of these is flat at C speed (``issuperset`` over
# ``map(type, ...)``; a results file has ~30,000 such lists); other types take the isinstance test.
_SCALAR_TYPES = frozenset({str, int, float, bool, type(None)})


def _flat(item: Any) -> bool:
    """A scalar, or a list of scalars: written inside a one-line list."""
    if isinstance(item, (list, tuple)):
        return _SCALAR_TYPES.issuperset(map(type, item)) or not any(
            isinstance(part, (list, tuple, dict)) for part in item
        )
    return not isinstance(item, dict)


def _dumps(value: Any) -> str:
    kind = type(value)
    # The scalars of a results file (hundreds of thousands of them) written as json.dumps writes them,
    # without its per-call set-up: a str by the C encoder json.dumps uses, a finite float or an int by its
    # repr, as json's encoder does. Anything else (a NaN, a subclass, a list) goes through json.dumps.
    if kind is str:
        return encode_basestring_ascii(value)
    if kind is float and -math.inf < value < math.inf:
        return float.__repr__(value)
    if kind is int:
        return int.__repr__(value)
    return json.dumps(value, allow_nan=False, separators=(", ", ": "))


def json_key(name: Any) -> str:
    """A key in a field path of a JSON document: ``.name`` for a plain key, ``["odd key"]`` for one
    holding dots, spaces or brackets (``results.per_query["q 2.x"].ndcg@10``)."""
    name = str(name)
    return f".{name}" if _PLAIN_KEY.match(name) else f"[{json.dumps(name, ensure_ascii=False)}]"


def _json_place(source: str | os.PathLike[str], line: int | None, text_line: int) -> str:
    return f"{source}:{line + text_line - 1}" if line is not None else f"{source}: line {text_line}"


def _deeper_than(text: str, limit: int) -> int | None:
    """Offset of the first bracket nested more than ``limit`` deep, or None (strings skipped)."""
    depth = 0
    for token in _JSON_TOKEN.finditer(text):
        kind = token.group()[0]
        if kind in "[{":
            depth += 1
            if depth > limit:
                return token.start()
        elif kind in "]}":
            depth -= 1
    return None


def _line_column(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


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
