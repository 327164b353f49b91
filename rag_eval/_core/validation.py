"""Pydantic validation errors as one-line messages: field path, problem, bad value, fix.

The one formatter of every validated input: the config and the query set
(:func:`validation_problems`), an adapter's params (:mod:`rag_eval._retrievers.params`) and a
chunker's (:mod:`rag_eval._models.chunking.params`), so that each says ``configs/run.yaml:
retrievers[0](bm25).parms: unknown key; did you mean 'params'? allowed: adapter, label, params``
in the same style. The small rules of wording it uses are :mod:`rag_eval._core.messages`'.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, get_args

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from rag_eval._core.errors import RagEvalError
from rag_eval._core.messages import SHOWN_CHARS, did_you_mean, shown, summarise
from rag_eval._core.yaml_numbers import NumberAsText

# Keys whose value names an item of a list in a field path: retrievers[0](bm25), queries[3](q17).
LABEL_KEYS = ("label", "id", "_id")
# A label this long or shorter, printable, names a list item as written; a longer one is shown().
_LABEL_CHARS = 40
# Error types of a field that wanted a number (a grade's own check raises value_error).
_NUMBER_ERRORS = ("int_", "float_", "finite_number", "greater_than", "less_than", "value_error")
# Parts of an error's location that pydantic adds for its own bookkeeping, by their form.
_PYDANTIC_PARTS = ("function-", "literal[", "<")


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


@dataclass(frozen=True)
class Voice:
    """What still reads differently between the two families of validated inputs (each pinned by the CLI's tests).

    ``should``: pydantic's "Input should be ..." as said in this voice; ``got``: how the bad
    value follows the problem (``{}`` stands for the value); ``sorted_keys``: the keys a model
    allows listed sorted (a file's sections, looked up by name) or in the order the model
    declares them (a method's parameters, in the order the docs give them). Everything else
    (paths, unknown keys, missing fields, which value is shown and how) is one rule for both.
    """

    should: str
    got: str
    sorted_keys: bool

    def keys(self, model: type[BaseModel]) -> list[str]:
        """The keys ``model`` allows, in this voice's order."""
        return sorted(model.model_fields) if self.sorted_keys else list(model.model_fields)


#: A file's fields (the config, a query set): pydantic's own sentence, the value in parentheses.
FILE_VOICE = Voice(should="Input should be ", got=" (got {})", sorted_keys=True)
#: An adapter's or a chunker's parameters: ``must be ..., got VALUE``.
PARAMETER_VOICE = Voice(should="must be ", got=", got {}", sorted_keys=False)


def validation_problems(source: str | Path, error: ValidationError, raw: Any, root: type[BaseModel]) -> list[str]:
    """Every error of ``error`` (raised validating the file ``source``'s ``raw`` as ``root``) as ``SOURCE: path: problem``."""
    return [f"{source}: {line}" for line in pydantic_problems(error, raw, root)]


def pydantic_problems(
    error: ValidationError,
    raw: Any,
    model: type[BaseModel],
    *,
    root: str = "",
    voice: Voice = FILE_VOICE,
    keys_named: str = "allowed",
    unknown_top_key: Callable[[str, list[str]], str] | None = None,
) -> list[str]:
    """Every error of ``error`` (raised validating ``raw`` as ``model``) as one line ``PATH: problem`` + the value.

    - ``PATH`` is :func:`field_path` under ``root`` (``params``, ``chunking.c``; none for a file);
    - an unknown key: ``unknown key; did you mean 'x'? allowed: a, b`` (the known keys in the
      voice's order; ``keys_named`` replaces "allowed", e.g. ``method 'fixed' takes``); at the top level,
      ``unknown_top_key(key, known keys)`` may word the whole line instead, and such lines come
      first (a misspelt name explains the missing field that follows);
    - a missing field: ``required field is missing (its description)``;
    - a field that wanted a mapping: which keys it takes;
    - a :class:`RagEvalError` raised by a validator is whole already: each of its problems is a
      line at the field's path (at the top, as it is), and a nested adapter's own
      ``params.x: ...`` goes under the field's path (``params.retrievers[1].params.x: ...``);
    - a :class:`ProblemAt` names its field below the model that raised it;
    - pydantic's errors at one path (the branches of a union) are one line: ``must be a valid
      string or a valid list``;
    - the bad value, :func:`shown`, follows as the ``voice`` says, except for a missing or
      unknown key and a whole message; ``None``, a mapping or a list only where the type was
      wrong (a mapping or list by its type name); a number YAML read as text gets
      :meth:`NumberAsText.advice` instead.
    """
    first: list[str] = []
    lines: list[list[Any]] = []  # [path, messages, value shown or None]; messages None: a whole line
    merged: dict[str, list[Any]] = {}
    for item in error.errors():
        loc = list(item["loc"])
        cause = (item.get("ctx") or {}).get("error")
        if isinstance(cause, ProblemAt):  # a check across fields that knows which field is wrong
            loc = [*loc, *cause.loc]
        kind = item["type"]
        if kind == "extra_forbidden" and len(loc) == 1 and unknown_top_key is not None:
            first.append(unknown_top_key(str(loc[0]), voice.keys(model)))
            continue
        path = field_path(raw, loc, model, root=root)
        if isinstance(cause, RagEvalError):
            lines.extend(_whole_problems(path, cause, at_top=not loc))
            continue
        message, value = _problem(item, loc, model, voice, keys_named)
        line = merged.get(path)
        if line is None:
            line = merged[path] = [path, [message], value]
            lines.append(line)
        elif message not in line[1]:
            line[1].append(message)
            line[2] = line[2] if line[2] is not None else value
    return first + [_line(path, messages, value, voice) for path, messages, value in lines]


def _whole_problems(path: str, cause: RagEvalError, at_top: bool) -> list[list[Any]]:
    """The problems of a RagEvalError a validator raised, placed at ``path``."""
    placed = []
    for problem in cause.problems:
        problem = " ".join(problem.split())
        if problem.startswith(("params.", "params:")) and not at_top:  # a nested adapter's own check: one path
            inner, problem = problem.split(": ", 1)
            placed.append([f"{path}.{inner}", [problem], None])
        else:
            placed.append([path if not at_top else "", [problem], None])
    return placed


def _line(path: str, messages: list[str], value: str | None, voice: Voice) -> str:
    # union branches: "must be a valid string or a valid list", not "must be ... or must be ..."
    text = messages[0] + "".join(" or " + m.removeprefix(voice.should) for m in messages[1:])
    lead = f"{path}: " if path else ""
    return lead + text + (voice.got.format(value) if value is not None else "")


def _problem(
    item: Any, loc: list[Any], model: type[BaseModel], voice: Voice, keys_named: str
) -> tuple[str, str | None]:
    """(what is wrong and how to fix it, the offending value as shown, or None)."""
    kind = item["type"]
    value = item.get("input")
    if kind == "missing":
        owner = model_at(model, loc[:-1])
        field = _field(owner, loc[-1]) if owner is not None and loc else None
        described = f" ({field.description})" if field is not None and field.description else ""
        return f"required field is missing{described}", None
    if kind == "extra_forbidden":
        owner = model_at(model, loc[:-1])
        known = voice.keys(owner) if owner is not None else []
        if not known:
            return "unknown key", None
        return f"unknown key; {did_you_mean(str(loc[-1]), known)}{keys_named}: {', '.join(known)}", None
    if kind == "model_type":
        expected = model_at(model, loc)
        if expected is not None and {"adapter", "params"} <= set(expected.model_fields):  # a retriever spec
            return f"{voice.should}a mapping {{adapter: ..., params: {{...}}}}", _type_named(value)
        if expected is not None and isinstance(value, str) and "kind" in expected.model_fields:  # index: hnsw
            return f"{voice.should}a mapping such as {{kind: {value}}}", None
        if expected is not None:
            return f"{voice.should}a mapping with keys among {', '.join(voice.keys(expected))}", _type_named(value)
    if isinstance(value, NumberAsText) and kind.startswith(_NUMBER_ERRORS):
        # "written without quotes" or "not a valid integer" would blame the user for YAML 1.1's rule.
        return value.advice(), None
    message = " ".join(str(item["msg"]).removeprefix("Value error, ").split())
    message = voice.should + message.removeprefix("Input should be ") if message.startswith("Input should be ") else message
    if value is None or isinstance(value, (dict, list)):
        # Named where the type was wrong; elsewhere our own validators already say what is wrong with
        # an empty value or a whole list (and a whole mapping would not fit on the line).
        return message, _type_named(value) if kind.endswith("_type") or kind == "is_instance_of" else None
    return message, shown(value)


def _type_named(value: Any) -> str:
    """``value`` shown, a mapping or list by its type (a whole one would not fit on the line)."""
    return type(value).__name__ if isinstance(value, (dict, list)) else shown(value)


def field_path(raw: Any, loc: Sequence[Any], model: type[BaseModel] | None = None, *, root: str = "") -> str:
    """``retrievers[0](bm25).params`` for the location ``("retrievers", 0, "params")`` in ``raw``.

    A list item is named by its label (:data:`LABEL_KEYS`) where it has one. Parts that
    pydantic adds for its own bookkeeping (validator names, union branches, "this dict key")
    are left out: they are not keys of the user's input. With ``model`` (what ``raw`` was
    validated as), a part is a key when the model has the field or ``raw`` has the key; without
    it, every part but pydantic's by their form. ``root`` is the path's first part
    (``params``); without one, an empty path is ``(top level)``.
    """
    parts: list[str] = [root] if root else []
    node = raw
    current = model
    for part in loc:
        if isinstance(part, int):
            item = node[part] if isinstance(node, list) and 0 <= part < len(node) else None
            label = _label(item)
            index = f"[{part}]" + (f"({label})" if label else "")
            if parts:
                parts[-1] += index
            else:
                parts.append(index)
            node = item
            continue
        if not isinstance(part, str) or part.startswith(_PYDANTIC_PARTS) or part == "[key]" or isinstance(node, list):
            continue  # pydantic's own parts: validator names, union tags, "this dict key"
        field = _field(current, part)
        if model is not None and field is None and not (isinstance(node, dict) and part in node):
            continue  # a union branch ("str", "list[str]") or another tag: no key of the input
        # A key that is not short printable text (a doc id with a newline) is shown quoted.
        simple = part.isprintable() and " " not in part and 0 < len(part) <= SHOWN_CHARS
        parts.append(part if simple else f"[{shown(part)}]")
        node = node.get(part) if isinstance(node, dict) else None
        if field is not None:
            current = _first_model(field.annotation)
    return _joined(parts) or "(top level)"


def _joined(parts: list[str]) -> str:
    return "".join(part if not index or part.startswith("[") else "." + part for index, part in enumerate(parts))


def _label(item: Any) -> str | None:
    if not isinstance(item, dict):
        return None
    for key in LABEL_KEYS:
        value = item.get(key)
        if isinstance(value, str) and value.isprintable() and 0 < len(value) <= _LABEL_CHARS:
            return value
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return shown(value)
    return None


def _field(model: type[BaseModel] | None, name: Any) -> FieldInfo | None:
    """The field ``name`` (or whose alias is ``name``) of ``model``."""
    if model is None or not isinstance(name, str):
        return None
    if name in model.model_fields:
        return model.model_fields[name]
    return next((field for field in model.model_fields.values() if field.alias == name), None)


def model_at(root: type[BaseModel], loc: Sequence[Any]) -> type[BaseModel] | None:
    """The model whose keys are allowed at ``loc`` (for "allowed: ..." in unknown-key errors)."""
    model: type[BaseModel] | None = root
    for part in loc:
        if model is None:
            return None
        field = _field(model, part)
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
