"""What a query, document or chunk id may hold: one rule for every reader.

Ids are any non-empty UTF-8 text of any length (URLs, paths, ``<dbpedia:X>``,
``reports/2024/q3.pdf#p12#c7``) without control characters: a NUL, a tab or a
newline inside an id cannot be written to a TREC file and back, and a NUL would
silently match the id without it in C-based tools. A lone surrogate (a Python str
may hold one, from a ``\ud800`` escape in JSON or YAML) is not UTF-8 text: refused too.

Ids that rag_eval reads from a dataset or a stored ranking may not hold ASCII white
space either (:func:`stored_id_problem`): they are written to TREC files (the ``.run``
files of every run), whose fields are separated by white space, so ``"d1 9"`` would be
read back as the id ``"d1"``. Refusing such an id where it enters keeps every written
file readable by rag_eval and by trec_eval as it is, with no encoding to undo; a
documents folder, where rag_eval makes the id from a file name, writes a space as
``%20`` instead (rag_eval._data.datasets.documents).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")

# How each kind of problem is fixed, said after it by readers that add a fix.
CONTROL_FIX = "ids are one line of text without tabs or control characters"
SURROGATE_FIX = (
    "it is half of a UTF-16 pair (an escape \\ud800 to \\udfff without its other half), not a character: "
    "fix the escape"
)
SPACE_FIX = (
    "ids are written to TREC files, whose fields are separated by white space: write it without spaces "
    "(a documents folder writes the space of a file name as %20)"
)


def id_problem(value: str) -> str | None:
    """Why ``value`` cannot be an id, or None when it can (see the module's docstring)."""
    if value == "":
        return "is empty"
    bad = _CONTROL.search(value)
    if bad is not None:
        return f"holds the control character U+{ord(bad.group()):04X} at position {bad.start() + 1}"
    return surrogate_problem(value)


def surrogate_problem(value: str) -> str | None:
    """Why ``value`` is not UTF-8 text (a lone surrogate, with its position), or None.

    Part of :func:`id_problem` (every id and chunk id is written to the run's files and reports as UTF-8),
    and the rule for a passage's, document's or query's text (rag_eval._data.datasets.values.text_problem).
    """
    if value.isascii():  # (a flag of the str: free) only non-ASCII text can hold a surrogate
        return None
    half = _SURROGATE.search(value)
    if half is None:
        return None
    return f"holds a lone surrogate U+{ord(half.group()):04X} at position {half.start() + 1}, which is not UTF-8 text"


def joined_pairs(value: str) -> str:
    """``value`` with each UTF-16 pair written as two escapes (``"\\ud83d\\ude00"``, as JSON writes an emoji and
    YAML readers keep apart) joined into its one character; a half without its pair stays (surrogate_problem)."""
    if value.isascii() or _SURROGATE.search(value) is None:
        return value
    return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def stored_id_problem(value: str) -> str | None:
    """:func:`id_problem`, and ASCII white space: the rule for ids read from a dataset or a stored ranking."""
    problem = id_problem(value)
    if problem is None and " " in value:  # every other ASCII white space character is a control character
        return f"holds a space at position {value.index(' ') + 1}"
    return problem


def id_fix(problem: str) -> str:
    """What to do about ``problem`` (a text of :func:`stored_id_problem` or :func:`surrogate_problem`)."""
    if "surrogate" in problem:
        return SURROGATE_FIX
    if "a space" in problem:
        return SPACE_FIX
    return CONTROL_FIX


def any_control_characters(ids: Iterable[str]) -> bool:
    """True when some id of ``ids`` holds a control character: the check of :func:`id_problem`
    on many ids at once, without a Python step per id (one scan of their joined UTF-8 bytes).

    Empty ids are not seen here (joined, they vanish); a non-str id raises TypeError.
    """
    data = np.frombuffer("".join(ids).encode("utf-8", "surrogatepass"), dtype=np.uint8)
    # In UTF-8 a byte below 0x80 is always a whole character: no multi-byte character holds these.
    return bool((data < 0x20).any()) or bool((data == 0x7F).any())


def any_unwritable(ids: Iterable[str]) -> bool:
    """True when some id of ``ids`` cannot be a field of a TREC file: it holds ASCII white space (a field
    separator) or a control character; one scan of the joined UTF-8 bytes, as above."""
    data = np.frombuffer("".join(ids).encode("utf-8", "surrogatepass"), dtype=np.uint8)
    return bool((data <= 0x20).any()) or bool((data == 0x7F).any())


def shown_id(value: str, limit: int = 60) -> str:
    """``value`` quoted for a message (control characters escaped); a long one cut, saying how long it is."""
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}... ({len(value)} characters)"
