"""The rule for a retriever's label, which names its output files (``<label>.json``, ``<label>.run``).

No separators, no ``..``, no spaces, control characters or line breaks: nothing a file
system could read differently. One home, used by the schema and by the sweep's generated labels.
"""

from __future__ import annotations

import re

LABEL_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._+-]*"
LABEL_MAX = 80
LABEL_RULE = (
    f"a label names the files <label>.json and <label>.run: use letters, digits and . _ + - "
    f"(starting with a letter or digit), at most {LABEL_MAX} characters"
)
_LABEL = re.compile(LABEL_PATTERN)


def is_label(text: str) -> bool:
    """Whether ``text`` is a valid label: the whole text matches (a final newline does not slip through)."""
    return len(text) <= LABEL_MAX and _LABEL.fullmatch(text) is not None


def check_label(value: str) -> str:
    """A pydantic field validator's check of a label: ValueError with :data:`LABEL_RULE` when it breaks the rule."""
    if not is_label(value):
        raise ValueError(LABEL_RULE)
    return value
