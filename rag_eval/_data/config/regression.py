"""The ``regression:`` section of a run config: the baseline, the gates, and the resampling of the comparison.

Only the section's model and the rules a comparison shares with it live here (the data layer):
one gate per metric (:func:`repeated_gate`) and the limits of ``confidence``, ``resamples`` and
``seed`` (:func:`check_resampling`), which `rag-eval compare`'s flags and
:func:`rag_eval._compare.regression.compare` are checked by too. The comparison itself is
:mod:`rag_eval._compare.regression`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, ValidationError, ValidatorFunctionWrapHandler, WrapValidator

from rag_eval._core.errors import ConfigError
from rag_eval._core.messages import shown
from rag_eval._data.config.strict import Strict
from rag_eval._scoring.stats import (
    MAX_RESAMPLES,
    MIN_RESAMPLES,
    confidence_problem,
    resamples_problem,
    seed_problem,
)


class GateSpec(Strict):
    """A regression gate on one metric."""

    max_drop: float = Field(default=0.0, ge=0)
    alpha: float | None = Field(default=None, gt=0, lt=1)


def repeated_gate(named: Sequence[tuple[str, str]]) -> str | None:
    """The problem of two gates on one metric, given each gate's ``(name as the user wrote it, metric)``; None
    when every metric has one gate. With two, which limit applies would depend on their order."""
    first: dict[str, str] = {}
    for name, metric in named:
        if metric in first:
            return f"{first[metric]} and {name} both gate {metric} (the same metric); keep one gate per metric"
        first[metric] = name
    return None


# ---- the resampling of a comparison ------------------------------------------------------------------
# Their limits and wording are the statistics' own (rag_eval._scoring.stats, which loads scipy only when a
# function runs): these types add pydantic's strict type, and declare the same limits with Field for the JSON
# schema and the reference. A config's regression section, `rag-eval compare`'s flags and the arguments of
# rag_eval._compare.regression.compare are all checked through these types (check_resampling).

_LIMIT_ERRORS = frozenset({"greater_than", "greater_than_equal", "less_than", "less_than_equal"})


def _checked_by(problem: Callable[[Any], str | None]) -> WrapValidator:
    """The limits of a value of the right type checked by ``problem`` and refused in its words (pydantic's say less).

    A value outside the limits the type declares is the right type, so ``problem`` can say what is
    wrong with it; one within them is asked too, so that ``problem`` decides either way.
    """

    def check(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            typed = handler(value)
        except ValidationError as error:
            found = problem(value) if all(item["type"] in _LIMIT_ERRORS for item in error.errors()) else None
            if found is None:  # a wrong type (or limits that disagree with problem's): pydantic's words
                raise
            raise ValueError(found) from None
        found = problem(typed)
        if found:
            raise ValueError(found)
        return typed

    return WrapValidator(check)


Confidence = Annotated[float, Field(gt=0, lt=1), _checked_by(confidence_problem)]
Resamples = Annotated[int, Field(ge=MIN_RESAMPLES, le=MAX_RESAMPLES), _checked_by(resamples_problem)]
Seed = Annotated[int, Field(ge=0), _checked_by(seed_problem)]
_RESAMPLING: dict[str, TypeAdapter[Any]] = {
    "confidence": TypeAdapter(Confidence),
    "resamples": TypeAdapter(Resamples),
    "seed": TypeAdapter(Seed),
}


def check_resampling(
    confidence: Any, resamples: Any, seed: Any, *, names: Mapping[str, str] | None = None
) -> None:
    """ConfigError naming the first value outside its limits, checked as ``regression.confidence``, ``.resamples``
    and ``.seed`` of a config are; ``names``: what the caller calls them (``{"resamples": "--resamples"}``)."""
    for key, value in (("confidence", confidence), ("resamples", resamples), ("seed", seed)):
        try:
            _RESAMPLING[key].validate_python(value, strict=True)
        except ValidationError as error:
            problem = error.errors()[0]["msg"].removeprefix("Value error, ")
            raise ConfigError(f"{(names or {}).get(key, key)}: {problem} (got {shown(value)})") from None


class RegressionSpec(Strict):
    """Compare each retriever's results with a saved baseline results file."""

    baseline: str
    gates: dict[str, GateSpec]
    retriever: str | None = None
    confidence: Confidence = 0.95
    resamples: Resamples = Field(default=10_000, description="bootstrap / permutation resamples")
    seed: Seed = Field(default=0, description="random seed of the resampling (numpy needs it >= 0)")
    on_holes: Literal["warn", "fail"] = Field(
        default="warn",
        description="a gate that could flip (its pass/fail differs between the candidate's unjudged results "
        "counted as misses and judged at the highest grade): warn says so and keeps the verdict; fail fails the "
        "gate, saying why",
    )
    on_stale_evidence: Literal["fail", "allow"] = Field(
        default="fail",
        description="evidence whose document changed under it (moved, changed or gone; rag-eval judgements check "
        "lists it): fail fails every gate, saying why; allow gates on it anyway",
    )
