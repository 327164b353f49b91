"""What a query, document or chunk id may hold: one rule for every reader.

Ids are any non-empty UTF-8 text of any length (URLs, paths, ``<dbpedia:X>``,
``reports/2024/q3.pdf#p12#c7``) without control characters: a NUL, a tab or a
newline inside an id cannot be written to a TREC file and back, and a NUL would
silently match the id without it in C-based tools.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def id_problem(value: str) -> str | None:
    """Why ``value`` cannot be an id, or None when it can."""
    if value == "":
        return "is empty"
    bad = _CONTROL.search(value)
    if bad is not None:
        return f"holds the control character U+{ord(bad.group()):04X} at position {bad.start() + 1}"
    return None


def has_control_characters(value: str) -> bool:
    """True when ``value`` holds a character an id may not hold (U+0000..U+001F, U+007F)."""
    return _CONTROL.search(value) is not None
