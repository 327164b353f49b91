"""The toolkit of every message rag_eval prints: one home for each small rule of wording.

- :func:`first_and_more`: the first problem and how many more there are;
- :func:`close_match` / :func:`did_you_mean`: the "did you mean ...?" hint for a misspelt name;
- :func:`shown`: a value short and on one line (a label holding a newline, or a 1 MB string,
  must not break the CLI's one-line error);
- pydantic validation errors as one-line messages (file, field path, problem, bad value, fix),
  so that every validated input says ``configs/run.yaml: retrievers[0](bm25).parms: unknown
  key; did you mean 'params'? allowed: adapter, label, params`` in the same style.
"""

from __future__ import annotations

import datetime as _dt
import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn, get_args

from pydantic import BaseModel, ValidationError

from rag_eval._core.errors import RagEvalError
from rag_eval._core.yaml_loader import NumberAsText

# Keys whose value names an item of a list in a field path: retrievers[0](bm25), queries[3](q17).
LABEL_KEYS = ("label", "id", "_id")
SHOWN_CHARS = 60
# Error types of a field that wanted a number (a grade's own check raises value_error).
_NUMBER_ERRORS = ("int_", "float_", "finite_number", "greater_than", "less_than", "value_error")


class ProblemAt(ValueError):
    """A model validator's problem with the place it belongs to, relative to the model (``("retrievers", 2, "chunker")``).

    Checks that span fields (a retriever naming a chunker of ``chunking``) run on the whole
    model, where pydantic knows no field; the message then names the field anyway.
    """

    def __init__(self, loc: Sequence[str | int], message: str) -> None:
        super().__init__(message)
        self.loc = tuple(loc)


def raise_invalid(
    source: str | Path, error: ValidationError, raw: Any, root: type[BaseModel], kind: type[RagEvalError]
) -> NoReturn:
    """Raise ``kind`` naming the first problem and counting the others (all kept in ``problems``)."""
    problems = validation_problems(source, error, raw, root)
    raise kind(summarise(problems), problems=problems) from None


def summarise(problems: Sequence[str]) -> str:
    """The first problem, and how many more `rag-eval validate` would list."""
    return first_and_more(problems, hint=VALIDATE_LISTS_ALL)


# What the CLI's one line adds when a config or dataset has more problems than it shows.
VALIDATE_LISTS_ALL = "`rag-eval validate` lists all"
# Names compared for a "did you mean" hint at the most (difflib is quadratic in the name's length,
# linear in their number: a corpus of a million ids would take seconds for one hint).
CLOSE_MATCH_LIMIT = 10_000


def first_and_more(problems: Sequence[str], count: int | None = None, *, hint: str | None = None) -> str:
    """``first (and N more)``: the first of ``problems`` and how many more there are, on one line.

    ``count``: the total when more were found than kept in ``problems``; ``hint``: where the rest
    can be read (``VALIDATE_LISTS_ALL``), added after the count.
    """
    total = len(problems) if count is None else count
    if total <= 1:
        return problems[0]
    return f"{problems[0]} (and {total - 1:,} more{'; ' + hint if hint else ''})"


def close_match(name: str, known: Sequence[str] | Any) -> str | None:
    """The known name ``name`` was most likely meant to be, or None.

    A name equal but for case wins; then the closest by difflib's ratio (at least 0.6). Past
    :data:`CLOSE_MATCH_LIMIT` names only the case-insensitive match is looked for.
    """
    candidates = list(known)
    folded = name.casefold()
    for candidate in candidates:
        if isinstance(candidate, str) and candidate.casefold() == folded and candidate != name:
            return candidate
    if len(candidates) > CLOSE_MATCH_LIMIT:
        return None
    guesses = difflib.get_close_matches(name, [c for c in candidates if isinstance(c, str)], n=1)
    return guesses[0] if guesses else None


def did_you_mean(name: str, known: Sequence[str] | Any) -> str:
    """``did you mean 'x'? `` (with its trailing space, to stand before the list of known names), or ``""``."""
    guess = close_match(name, known)
    return f"did you mean {guess!r}? " if guess is not None else ""


def validation_problems(source: str | Path, error: ValidationError, raw: Any, root: type[BaseModel]) -> list[str]:
    """Every error of ``error`` (raised validating ``raw`` as ``root``) as a one-line message."""
    return [describe(source, item, raw, root) for item in error.errors()]


def describe(source: str | Path, item: Any, raw: Any, root: type[BaseModel]) -> str:
    """One pydantic error item as ``SOURCE: field.path: problem (got VALUE)``."""
    loc = list(item["loc"])
    cause = item.get("ctx", {}).get("error")
    if isinstance(cause, ProblemAt):  # a check across fields that knows which field is wrong
        loc = [*loc, *cause.loc]
    field = field_path(raw, loc)
    kind = item["type"]
    if kind == "extra_forbidden":
        name = loc[-1]
        parent_model = _model_at(root, loc[:-1])
        allowed = sorted(parent_model.model_fields) if parent_model else []
        return f"{source}: {field}: unknown key; {did_you_mean(str(name), allowed)}allowed: {', '.join(allowed)}"
    if kind == "missing":
        return f"{source}: {field}: required field is missing"
    cause = item.get("ctx", {}).get("error")
    message = str(cause) if isinstance(cause, RagEvalError) else item["msg"].removeprefix("Value error, ")
    value = item.get("input")
    if isinstance(value, NumberAsText) and kind.startswith(_NUMBER_ERRORS):
        # "written without quotes" or "not a valid integer" would blame the user for YAML 1.1's rule.
        return f"{source}: {field}: {value.advice()}"
    got = "" if isinstance(value, (dict, list)) or value is None else f" (got {shown(value)})"
    return f"{source}: {field}: {' '.join(message.split())}{got}"


def shown(value: Any, limit: int = SHOWN_CHARS) -> str:
    """``value`` for a message: its repr, short (at most ``limit`` characters), on one line, dates as YAML wrote them."""
    if isinstance(value, _dt.datetime):
        return f"the date and time {value.isoformat(sep=' ')}"
    if isinstance(value, _dt.date):
        return f"the date {value.isoformat()}"
    if isinstance(value, (str, int, float, bool, bytes)) or value is None:
        text = repr(value)  # repr escapes newlines and control characters
    else:
        text = type(value).__name__
    return text if len(text) <= limit else text[: max(0, limit - 3)] + "..."


def field_path(raw: Any, loc: Sequence[Any]) -> str:
    """``retrievers[0](bm25).params`` for the location ``("retrievers", 0, "params")`` in ``raw``.

    Parts that pydantic adds for its own bookkeeping (validator names, union
    tags) are left out: they are not keys of the user's file.
    """
    parts: list[str] = []
    node = raw
    for part in loc:
        if isinstance(part, int):
            label = _label(node[part]) if isinstance(node, list) and part < len(node) else None
            parts.append(f"[{part}]" + (f"({label})" if label else ""))
            node = node[part] if isinstance(node, list) and part < len(node) else None
            continue
        if not isinstance(part, str) or part.startswith(("function-", "literal[", "<")) or part == "[key]":
            continue  # pydantic's own parts: validator names, union tags, "this dict key"
        if isinstance(node, list):
            continue
        # A key that is not short printable text (a doc id with a newline) is shown quoted.
        simple = part.isprintable() and " " not in part and 0 < len(part) <= SHOWN_CHARS
        parts.append((("." if parts else "") + part) if simple else f"[{shown(part)}]")
        node = node.get(part) if isinstance(node, dict) else None
    return "".join(parts) or "(top level)"


def _label(item: Any) -> str | None:
    if not isinstance(item, dict):
        return None
    for key in LABEL_KEYS:
        value = item.get(key)
        if isinstance(value, str) and value.isprintable() and 0 < len(value) <= 40:
            return value
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return shown(value)
    return None


def _model_at(root: type[BaseModel], loc: Sequence[Any]) -> type[BaseModel] | None:
    """The model whose keys are allowed at ``loc`` (for "allowed: ..." in unknown-key errors)."""
    model: type[BaseModel] | None = root
    for part in loc:
        if model is None:
            return None
        field = model.model_fields.get(part) if isinstance(part, str) else None
        if field is not None:
            model = _first_model(field.annotation)
    return model


def _first_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in get_args(annotation):
        found = _first_model(argument)
        if found is not None:
            return found
    return None
