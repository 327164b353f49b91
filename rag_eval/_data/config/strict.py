"""What the config's section models share: strict validation, and several problems raised at once.

Every section of a run config (:mod:`rag_eval._data.config.sections`, ``.regression``,
``.sweep_spec`` and the whole :class:`rag_eval._data.config.schema.RunConfig`) derives from
:class:`Strict`. A validator that finds several problems raises them together with
:func:`several`, so that one run of ``rag-eval validate`` lists them all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from rag_eval._core.validation import ProblemAt


class Strict(BaseModel):
    """A section of a run config: unknown keys and wrong types are errors, values are frozen."""

    # strict: YAML's `true` or "10" is not silently turned into a number (top_k: yes -> 1).
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def several(problems: Sequence[ProblemAt], value: Any) -> ValidationError:
    """One ValidationError holding each of ``problems`` (found validating ``value``), for a validator to raise.

    A validator can raise only one ValueError, which pydantic turns into one error; a
    ValidationError raised there keeps each of its errors instead, every one placed where its
    :class:`ProblemAt` says (relative to the model or field being validated). ``value`` is the
    mapping being validated: as for a validator's ValueError, no value is shown after the
    problem (a mapping never is), since each problem names what is wrong itself.
    """
    return ValidationError.from_exception_data(
        "run config",
        [{"type": "value_error", "loc": (), "input": value, "ctx": {"error": problem}} for problem in problems],
    )
