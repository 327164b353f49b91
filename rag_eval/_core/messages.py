"""The toolkit of every message rag_eval prints: one home for each small rule of wording.

- :func:`first_and_more`: the first problem and how many more there are;
- :func:`some_of`: the first few names of a list and how many more there are;
- :func:`close_match` / :func:`did_you_mean`: the "did you mean ...?" hint for a misspelt name;
- :func:`shown`: a value short and on one line (a label holding a newline, or a 1 MB string,
  must not break the CLI's one-line error);
- :func:`error_line`: a library's error inside one of ours, as ``Type: its first line``;

Light by design (no pydantic): every layer uses it, the metric engine included. Pydantic's
validation errors are worded by :mod:`rag_eval._core.validation` with these same rules.
"""

from __future__ import annotations

import datetime as _dt
import difflib
from collections.abc import Collection, Sequence
from typing import Any

from rag_eval._core.yaml_numbers import IntAsWritten

SHOWN_CHARS = 60
# The message of a library's error, in one of ours: enough to act on.
ERROR_LINE_CHARS = 160


def summarise(problems: Sequence[str]) -> str:
    """The first problem, and how many more `rag-eval validate` would list."""
    return first_and_more(problems, hint=VALIDATE_LISTS_ALL)


# What the CLI's one line adds when a config or dataset has more problems than it shows.
VALIDATE_LISTS_ALL = "`rag-eval validate` lists all"
# Names compared for a "did you mean" hint at the most (difflib is quadratic in the name's length,
# linear in their number: a corpus of a million ids would take seconds for one hint, and a
# problem list of unknown ids asks once per id).
CLOSE_MATCH_LIMIT = 5_000


def first_and_more(problems: Sequence[str], count: int | None = None, *, hint: str | None = None) -> str:
    """``first (and N more)``: the first of ``problems`` and how many more there are, on one line.

    ``count``: the total when more were found than kept in ``problems``; ``hint``: where the rest
    can be read (``VALIDATE_LISTS_ALL``), added after the count.
    """
    total = len(problems) if count is None else count
    if total <= 1:
        return problems[0]
    return f"{problems[0]} (and {total - 1:,} more{'; ' + hint if hint else ''})"


def some_of(items: Sequence[str], limit: int) -> str:
    """``a, b, c, ... (N more)``: the first ``limit`` of ``items``, and how many more there are."""
    listed = ", ".join(items[:limit])
    return listed + (f", ... ({len(items) - limit:,} more)" if len(items) > limit else "")


def close_match(name: str, known: Collection[str] | Any) -> str | None:
    """The known name ``name`` was most likely meant to be, or None.

    In this order: a name equal but for case; a path with the same last part (``a.md`` for
    ``docs/a.md``, the same file in another folder; the first in sorted order); the closest by
    difflib's ratio (at least 0.6). Past :data:`CLOSE_MATCH_LIMIT` names, difflib is not asked.
    """
    candidates = [candidate for candidate in known if isinstance(candidate, str)]
    folded = name.casefold()
    tail = name.rsplit("/", 1)[-1]
    same_tail = []
    for candidate in candidates:
        if candidate.casefold() == folded and candidate != name:
            return candidate
        if candidate != name and candidate.rsplit("/", 1)[-1] == tail:
            same_tail.append(candidate)
    if same_tail:
        return min(same_tail)
    if len(candidates) > CLOSE_MATCH_LIMIT:
        return None
    guesses = difflib.get_close_matches(name, candidates, n=1)
    return guesses[0] if guesses else None


def did_you_mean(name: str, known: Collection[str] | Any) -> str:
    """``did you mean 'x'? `` (with its trailing space, to stand before the list of known names), or ``""``."""
    guess = close_match(name, known)
    return f"did you mean {guess!r}? " if guess is not None else ""


def shown(value: Any, limit: int = SHOWN_CHARS) -> str:
    """``value`` for a message: its repr, short (at most ``limit`` characters), on one line, dates as YAML wrote them."""
    if isinstance(value, _dt.datetime):
        return f"the date and time {value.isoformat(sep=' ')}"
    if isinstance(value, _dt.date):
        return f"the date {value.isoformat()}"
    if isinstance(value, IntAsWritten):  # 010 as the file has it, not 8 as YAML read it
        return _clipped(value.written, limit)
    if isinstance(value, (str, int, float, bool, bytes)) or value is None:
        text = repr(value)  # repr escapes newlines and control characters
    else:
        text = type(value).__name__
    return _clipped(text, limit)


def error_line(error: BaseException, limit: int = ERROR_LINE_CHARS) -> str:
    """``Type: first line of the message``, clipped at ``limit`` characters of message, or the type alone.

    For an error of a library (transformers, Ray, the Hub) inside one of ours: its first line
    is enough to act on, its traceback and the rest of a long message are not.
    """
    lines = str(error).strip().splitlines()
    text = _clipped(lines[0].strip(), limit) if lines else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _clipped(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the last three of them ``...`` when it was longer."""
    return text if len(text) <= limit else text[: max(0, limit - 3)] + "..."
