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

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from rag_eval._core.errors import RetrieverError
from rag_eval._core.messages import close_match, first_and_more
from rag_eval._core.validation import PARAMETER_VOICE, pydantic_problems

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
        problems = [lead + line for line in describe_errors(model, error, adapter, params)]
    raise RetrieverError(first_and_more(problems), problems=problems)


def unknown_parameter(adapter: str, key: str, allowed: list[str]) -> str:
    """``adapter 'x' has no parameter 'y' (did you mean 'z'?); its parameters: ...`` (in the order given)."""
    guess = close_match(key, allowed)
    hint = f" (did you mean {guess!r}?)" if guess is not None else ""
    return f"adapter {adapter!r} has no parameter {key!r}{hint}; its parameters: {', '.join(allowed) or 'none'}"


def describe_errors(
    model: type[BaseModel], error: ValidationError, adapter: str, params: Mapping[str, Any] | None = None
) -> list[str]:
    """One line per problem: ``params.FIELD: must be ..., got VALUE`` (:func:`rag_eval._core.validation.pydantic_problems`).

    An unknown parameter at the top is :func:`unknown_parameter`'s line; ``params`` (what was
    validated) names list items by their label where they have one.
    """
    return pydantic_problems(
        error,
        dict(params) if params is not None else {},
        model,
        root="params",
        voice=PARAMETER_VOICE,
        unknown_top_key=lambda key, allowed: unknown_parameter(adapter, key, allowed),
    )
