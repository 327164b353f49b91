"""The ``sweep:`` section of a run config, as written: grids and listed variants of the config's retrievers.

Only the section's model lives here; :mod:`rag_eval._data.config.sweep` expands a validated
sweep into plain retrievers (and the chunkers they read), which the config validates again.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from rag_eval._core.validation import ProblemAt
from rag_eval._data.config.labels import LABEL_RULE, check_label
from rag_eval._data.config.strict import Strict


def _values_to_try(values: dict[str, list[Any]]) -> dict[str, list[Any]]:
    for key, tried in values.items():
        if not tried:
            raise ProblemAt((key,), "an empty list of values; give at least one value to try")
    return values


class SweepGridEntry(Strict):
    """One grid of a sweep: a retriever of `retrievers` and the values to try for its parameters."""

    retriever: str = Field(description="The label of the retriever of `retrievers` whose parameters vary.")
    params: dict[str, list[Any]] = Field(
        default_factory=dict,
        description="Values to try for the retriever's parameters, e.g. `{k1: [0.9, 1.2], b: [0.4, 0.75]}`; each "
        "replaces the parameter of the same name (the others stay as the retriever gives them).",
    )
    chunking: dict[str, list[Any]] = Field(
        default_factory=dict,
        description="Values to try for the parameters of the chunker the retriever reads (`chunker:`), e.g. "
        "`{size: [200, 400], overlap: [0, 100]}`; each distinct chunker spec becomes one entry of `chunking`.",
    )

    _nonempty_params = field_validator("params")(_values_to_try)
    _nonempty_chunking = field_validator("chunking")(_values_to_try)

    @model_validator(mode="after")
    def _varies_something(self) -> SweepGridEntry:
        if not self.params and not self.chunking:
            raise ValueError("a grid entry varies nothing; give `params:` or `chunking:` values to try")
        return self


class SweepVariant(Strict):
    """One variant listed by hand: a retriever of `retrievers`, a label, and the values it changes."""

    retriever: str = Field(description="The label of the retriever of `retrievers` the variant changes.")
    label: str = Field(description=LABEL_RULE)
    params: dict[str, Any] = Field(default_factory=dict, description="The parameters it changes.")
    chunking: dict[str, Any] = Field(
        default_factory=dict, description="The parameters of the retriever's chunker it changes."
    )

    _safe_label = field_validator("label")(check_label)


class SweepSpec(Strict):
    """Variants of the config's retrievers, expanded into retrievers when the config is loaded ([sweeps.md](sweeps.md))."""

    max_variants: int = Field(
        default=100, ge=1, description="A sweep that expands to more variants than this is refused, with the count."
    )
    baseline: str | None = Field(
        default=None,
        description="The label (of a variant, or of a retriever of `retrievers`) the report compares all others "
        "with. Not set: the best by the main metric.",
    )
    grid: list[SweepGridEntry] = Field(
        default_factory=list,
        description="Grids: each replaces its retriever by one variant per combination of values (the cartesian "
        "product), labelled from the values that vary: `bm25.k1-0.9.b-0.4`.",
    )
    variants: list[SweepVariant] = Field(
        default_factory=list,
        description="Variants listed one by one, each with its own label; added beside their retriever, which stays.",
    )

    @model_validator(mode="after")
    def _something(self) -> SweepSpec:
        if not self.grid and not self.variants:
            raise ValueError("a sweep needs `grid:` or `variants:`")
        return self
