"""What a query, document or chunk id may hold: one rule for every reader.

Ids are any non-empty UTF-8 text of any length (URLs, paths, ``<dbpedia:X>``,
``reports/2024/q3.pdf#p12#c7``) without control characters: a NUL, a tab or a
newline inside an id cannot be written to a TREC file and back, and a NUL would
silently match the id without it in C-based tools.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def id_problem(value: str) -> str | None:
    """Why ``value`` cannot be an id, or None when it can."""
    if value == "":
        return "is empty"
    bad = _CONTROL.search(value)
    if bad is not None:
        return f"holds the control character U+{ord(bad.group()):04X} at position {bad.start() + 1}"
    return None


def any_control_characters(ids: Iterable[str]) -> bool:
    """True when some id of ``ids`` holds a control character: the check of :func:`id_problem`
    on many ids at once, without a Python step per id (one scan of their joined UTF-8 bytes).

    Empty ids are not seen here (joined, they vanish); a non-str id raises TypeError.
    """
    data = np.frombuffer("".join(ids).encode("utf-8", "surrogatepass"), dtype=np.uint8)
    # In UTF-8 a byte below 0x80 is always a whole character: no multi-byte character holds these.
    return bool((data < 0x20).any()) or bool((data == 0x7F).any())


def shown_id(value: str, limit: int = 60) -> str:
    """``value`` quoted for a message (control characters escaped); a long one cut, saying how long it is."""
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}... ({len(value)} characters)"
