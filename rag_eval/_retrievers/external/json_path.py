"""Reading one field out of a JSON response: a dotted path, JSONPath-lite.

A path is keys separated by dots (``data.hits``), list positions as numbers or in brackets
(``results.0.hits``, ``results[0].hits``), and at most one ``*`` (or ``[*]``): every element of a
list (``results.*.hits``: the hit list of each query of a batch). ``$`` alone is the value itself
(the response is the hit list; a hit is its own id); a leading ``$.`` is allowed and means nothing
more. Keys holding dots or brackets cannot be named (no quoting), which the services seen do not need.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: A path's step: a key (str), a list position (int), or every element of a list (``WILDCARD``).
WILDCARD = "*"
_BRACKET = re.compile(r"\[(\d+|\*)\]")
_SEGMENT = re.compile(r"[^.\[\]]+")
# A miss is shown with at most this many keys of the object where the path stopped.
_KEYS_SHOWN = 8


class _Missing:
    """What a path finds where nothing is (None is a JSON value, so it cannot say 'absent')."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


@dataclass(frozen=True)
class JsonPath:
    """A compiled path (see the module docstring); ``text`` is what the config gave."""

    text: str
    steps: tuple[str | int, ...]

    @property
    def wildcard(self) -> bool:
        """Whether the path holds ``*`` (it then finds one value per element of a list)."""
        return WILDCARD in self.steps

    def find(self, value: Any) -> Any:
        """The value at this path, or :data:`MISSING`; with ``*``, the list of what each element holds."""
        return _walk(value, self.steps)

    def miss(self, value: Any, root: str = "the response") -> str:
        """Where this path stops in ``value`` (called ``root``) and what is there instead, for an error message."""
        return _miss(value, self.steps, (), root)


def compile_path(text: str) -> JsonPath:
    """``text`` as a :class:`JsonPath`; ValueError (with the fix) when it is not one."""
    if not isinstance(text, str):
        raise ValueError(f"a path is a string such as 'hits' or 'data.hits', got {text!r}")
    body = text.strip()
    if body == "$":
        return JsonPath(text, ())
    if body.startswith("$."):
        body = body[2:]
    if not body:
        raise ValueError("a path is keys separated by dots, such as 'hits' or 'data.hits' ('$' for the value itself)")
    steps: list[str | int] = []
    for part in body.split("."):
        if not part:
            raise ValueError(f"path {text!r} has an empty step (two dots, or a dot at an end); write keys as 'a.b'")
        head = part.split("[", 1)[0]
        rest = part[len(head) :]
        if head:
            if not _SEGMENT.fullmatch(head):
                raise ValueError(f"path {text!r}: step {part!r} is not a key; write keys as 'a.b' and positions as 'a[0]'")
            steps.append(int(head) if head.isdigit() else head)
        while rest:
            bracket = _BRACKET.match(rest)
            if bracket is None:
                raise ValueError(f"path {text!r}: {rest!r} is not a position; write '[0]' or '[*]'")
            inner = bracket.group(1)
            steps.append(WILDCARD if inner == WILDCARD else int(inner))
            rest = rest[bracket.end() :]
    if steps.count(WILDCARD) > 1:
        raise ValueError(f"path {text!r} has more than one '*'; a path may take every element of one list only")
    return JsonPath(text, tuple(steps))


def _walk(value: Any, steps: tuple[str | int, ...]) -> Any:
    current = value
    for depth, step in enumerate(steps):
        if step == WILDCARD:
            if not isinstance(current, list):
                return MISSING
            found = [_walk(element, steps[depth + 1 :]) for element in current]
            return MISSING if any(item is MISSING for item in found) else found
        current = _step(current, step)
        if current is MISSING:
            return MISSING
    return current


def _step(current: Any, step: str | int) -> Any:
    if isinstance(current, Mapping):
        # A number names a key too: JSON object keys are strings ("0" in {"0": ...}).
        key = str(step)
        return current.get(key, MISSING)
    if isinstance(current, list) and isinstance(step, int):
        return current[step] if step < len(current) else MISSING
    return MISSING


def _miss(value: Any, steps: tuple[str | int, ...], walked: tuple[str | int, ...], root: str) -> str:
    current = value
    for depth, step in enumerate(steps):
        if step == WILDCARD:
            if not isinstance(current, list):
                return f"{_where(walked, root)} is {_kind(current)}, not a list"
            for position, element in enumerate(current):
                if _walk(element, steps[depth + 1 :]) is MISSING:
                    return _miss(element, steps[depth + 1 :], (*walked, position), root)
            return "found"
        following = _step(current, step)
        if following is MISSING:
            return f"{_where((*walked, step), root)} is absent ({_what_is(current, walked, root)})"
        current = following
        walked = (*walked, step)
    return "found"


def _where(steps: tuple[str | int, ...], root: str) -> str:
    """``'a.b[0].c'`` (the response's) or ``the hit's 'a'``; ``root`` alone for no steps."""
    if not steps:
        return root
    text = ""
    for step in steps:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else step)
    return repr(text) if root == "the response" else f"{root}'s {text!r}"


def _what_is(current: Any, steps: tuple[str | int, ...], root: str) -> str:
    where = _where(steps, root)
    if isinstance(current, Mapping):
        keys = [str(key) for key in current]
        listed = ", ".join(repr(key) for key in keys[:_KEYS_SHOWN]) + (", ..." if len(keys) > _KEYS_SHOWN else "")
        return f"{where} has keys {listed}" if keys else f"{where} is an empty object"
    if isinstance(current, list):
        return f"{where} is a list of {len(current)}"
    return f"{where} is {_kind(current)}"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return type(value).__name__
