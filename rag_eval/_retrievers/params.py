"""Adapter parameters as pydantic models: one validation style, checked without building.

A retriever class may declare ``Params``, a subclass of :class:`AdapterParams`
whose fields are its YAML parameters. The registry then validates a config's
``params:`` against that model before (and, for ``rag-eval validate``, instead of)
calling the constructor, so a bad value never reaches user code and every
problem is reported at once, one line each::

    params.k1: must be greater than or equal to 0, got -1
    adapter 'bm25' has no parameter 'stemer' (did you mean 'stemmer'?); its parameters: k1, b, ...

A class without ``Params`` is checked by binding the params to its constructor's
signature (unknown and missing parameters); its own constructor checks values.

Adopting it in an adapter::

    class MyParams(AdapterParams):
        k: int = Field(10, ge=1, description="how many ...")

    class MyRetriever:
        Params = MyParams

        def __init__(self, **params):
            self.settings = check_params(MyParams, params, "my_adapter")  # for direct Python use
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from rag_eval._core.errors import RagEvalError, RetrieverError

P = TypeVar("P", bound="AdapterParams")


class AdapterParams(BaseModel):
    """Base of every adapter's parameter model: unknown keys are errors, YAML types are not coerced.

    ``strict``: YAML's ``yes`` is not an integer and ``"10"`` is not a number.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def _device(value: str) -> str:
    if not re.fullmatch(r"cpu|auto|mps|cuda(:\d+)?", value):
        raise ValueError("must be one of auto, cpu, cuda, cuda:N, mps")
    return value


#: ``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps`` (availability is checked when a model loads).
Device = Annotated[str, AfterValidator(_device)]
#: A folder: a string from YAML, or a Path from Python.
Folder = str | Path




def check_params(model: type[P], params: Mapping[str, Any], adapter: str, *, prefix: bool = True) -> P:
    """``params`` validated by ``model``; a RetrieverError listing every problem otherwise.

    With ``prefix`` each line starts with ``adapter:`` (a constructor called directly
    from Python); the registry leaves it out, since the runner names the retriever.
    """
    lead = f"{adapter}: " if prefix else ""
    if not isinstance(params, Mapping):
        raise RetrieverError(f"{lead}params must be a mapping, got {type(params).__name__}")
    try:
        return model.model_validate(dict(params))
    except ValidationError as error:
        problems = [lead + line for line in describe_errors(model, error, adapter)]
    first = problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
    raise RetrieverError(first, problems=problems)


def unknown_parameter(adapter: str, key: str, allowed: list[str]) -> str:
    """``adapter 'x' has no parameter 'y' (did you mean 'z'?); its parameters: ...``."""
    guess = difflib.get_close_matches(key, allowed, n=1)
    hint = f" (did you mean {guess[0]!r}?)" if guess else ""
    return f"adapter {adapter!r} has no parameter {key!r}{hint}; its parameters: {', '.join(allowed) or 'none'}"


def describe_errors(model: type[BaseModel], error: ValidationError, adapter: str) -> list[str]:
    """One line per problem: ``params.FIELD: must be ..., got VALUE`` (union branches merged).

    A RagEvalError raised by a validator is already a whole message: a nested
    retriever's ``params.k1: ...`` is placed under its parent's path
    (``params.retrievers[1].params.k1: ...``), and one raised for the model as a whole
    (no field) is kept as it is.
    """
    merged: dict[str, tuple[list[str], str | None]] = {}
    lines: list[str] = []
    for item in error.errors():
        loc = list(item["loc"])
        if item["type"] == "extra_forbidden" and len(loc) == 1:
            lines.append(unknown_parameter(adapter, str(loc[0]), list(model.model_fields)))
            continue
        path = _path(model, loc[:-1]) + f".{loc[-1]}" if item["type"] == "extra_forbidden" else _path(model, loc)
        cause = (item.get("ctx") or {}).get("error")
        if isinstance(cause, RagEvalError):
            for problem in cause.problems:
                problem = " ".join(problem.split())
                if problem.startswith(("params.", "params:")):  # a nested retriever's own check: one path
                    inner, problem = problem.split(": ", 1)
                    merged.setdefault(f"{path}.{inner}", ([problem], None))
                elif loc:
                    merged.setdefault(path, ([], None))[0].append(problem)
                else:
                    lines.append(problem)
            continue
        message, shown = _message(model, item, loc)
        messages, got = merged.setdefault(path, ([], None))
        if message not in messages:
            messages.append(message)
        merged[path] = (messages, got or shown)
    for path, (messages, got) in merged.items():
        # union branches: "must be a valid string or a valid list", not "must be ... or must be ..."
        text = messages[0] + "".join(" or " + m.removeprefix("must be ") for m in messages[1:])
        lines.append(f"{path}: {text}" + (f", got {got}" if got else ""))
    return lines


def _path(model: type[BaseModel], loc: list[Any]) -> str:
    """``params.retrievers[1].weight``: field names and positions; union branch tags left out."""
    parts = ["params"]
    current: type[BaseModel] | None = model
    for part in loc:
        if isinstance(part, int):
            parts[-1] += f"[{part}]"
        elif current is not None and part in current.model_fields:
            parts.append(str(part))
            current = _inner_model(current.model_fields[str(part)].annotation)
        # anything else is a union branch or validator tag ("str", "list[str]", "function-after[...]")
    return ".".join(parts)


def _message(model: type[BaseModel], item: Mapping[str, Any], loc: list[Any]) -> tuple[str, str | None]:
    """(what is wrong and how to fix it, the offending value when worth showing)."""
    kind = item["type"]
    if kind == "missing":
        owner = _model_at(model, loc[:-1])
        field = owner.model_fields.get(str(loc[-1])) if owner is not None and loc else None
        hint = f" ({field.description})" if field is not None and field.description else ""
        return f"required parameter is missing{hint}", None
    if kind == "model_type":
        expected = _model_at(model, loc)
        if expected is None or {"adapter", "params"} <= set(expected.model_fields):  # a nested retriever spec
            return "must be a mapping {adapter: ..., params: {...}}", _shown(item.get("input"))
        given = item.get("input")
        if isinstance(given, str) and "kind" in expected.model_fields:  # index: hnsw
            return f"must be a mapping such as {{kind: {given}}}", None
        return f"must be a mapping with keys among {', '.join(expected.model_fields)}", _shown(given)
    if kind == "extra_forbidden":
        owner = _model_at(model, loc[:-1])
        allowed = list(owner.model_fields) if owner is not None else []
        guess = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        hint = f"did you mean {guess[0]!r}? " if guess else ""
        return (f"unknown key; {hint}allowed: {', '.join(allowed)}" if allowed else "unknown key"), None
    message = str(item["msg"]).removeprefix("Value error, ").replace("Input should be ", "must be ", 1)
    shows_value = kind.endswith("_type") or "than" in kind or kind.startswith("too_") or kind in (
        "literal_error", "finite_number", "value_error", "is_instance_of"
    )
    value = item.get("input")
    if kind == "value_error" and isinstance(value, (dict, list)):
        shows_value = False  # our own validators already say what is wrong with a whole list
    return message, (_shown(value) if loc and shows_value else None)


def _shown(value: Any) -> str:
    # a whole mapping or list would not fit on the line; its type says enough
    return type(value).__name__ if isinstance(value, (dict, list)) else repr(value)


def _model_at(model: type[BaseModel], loc: list[Any]) -> type[BaseModel] | None:
    """The nested model that holds the field at ``loc`` (for "allowed keys" hints)."""
    current: type[BaseModel] | None = model
    for part in loc:
        if isinstance(part, int) or current is None:
            continue
        field = current.model_fields.get(str(part))
        if field is None:
            return None
        current = _inner_model(field.annotation)
    return current


def _inner_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None
