"""``index:`` of the dense retriever's params: how it searches (exact, or a FAISS kind with its parameters), checked.

A parameter set for a kind it does not apply to is an error, not ignored. Importing this
module needs pydantic only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from rag_eval._models.cpus import MAX_THREADS, check_threads
from rag_eval._retrievers.params import AdapterParams

Kind = Literal["exact", "flat", "hnsw", "ivf", "ivf_pq"]


# Which kinds each parameter applies to: setting one for another kind is an error, not ignored.
_APPLIES: dict[str, tuple[str, ...]] = {
    "m": ("hnsw",),
    "ef_construction": ("hnsw",),
    "ef_search": ("hnsw",),
    "nlist": ("ivf", "ivf_pq"),
    "nprobe": ("ivf", "ivf_pq"),
    "train_size": ("ivf", "ivf_pq"),
    "pq_m": ("ivf_pq",),
    "pq_bits": ("ivf_pq",),
    "refine": ("ivf_pq",),
    "seed": ("hnsw", "ivf", "ivf_pq"),
    "threads": ("flat", "hnsw", "ivf", "ivf_pq"),
    "attribution_sample": ("flat", "hnsw", "ivf", "ivf_pq"),
}


def check_parameters_fit_kind(index: AdapterParams, kind: str, applies: Mapping[str, tuple[str, ...]]) -> None:
    """Refuse a parameter set for a kind it does not apply to (FAISS's and every database's ``index:``)."""
    for name in sorted(index.model_fields_set):
        kinds = applies.get(name)
        if kinds is not None and kind not in kinds:
            raise ValueError(f"index parameter {name!r} applies to kind {' | '.join(kinds)}, not {kind}; remove it")


def parameters_of_kind(index: AdapterParams, kind: str, applies: Mapping[str, tuple[str, ...]]) -> dict[str, Any]:
    """The kind and the parameters that apply to it (None: the engine's own default, left out), as reports show it."""
    applying = {name: value for name, value in index.model_dump().items()
                if kind in applies.get(name, ()) and value is not None}
    return {"kind": kind, **applying}


class IndexSpec(AdapterParams):
    """How the dense retriever searches (see the module docstring); unknown keys are errors."""

    kind: Kind = Field("exact", description="exact | flat | hnsw | ivf | ivf_pq")
    m: int = Field(32, ge=2, le=512, description="hnsw: neighbours per node")
    ef_construction: int = Field(200, ge=1, description="hnsw: candidate list while building")
    ef_search: int = Field(128, ge=1, description="hnsw: candidate list while searching")
    nlist: int | None = Field(None, ge=1, description="ivf: inverted lists (default about sqrt(passages))")
    nprobe: int | None = Field(None, ge=1, description="ivf: lists visited per query (default nlist / 16, at least 8 or all)")
    train_size: int | None = Field(None, ge=1, description="ivf: passages sampled to train (default 64 per list)")
    pq_m: int | None = Field(None, ge=1, description="ivf_pq: sub-quantizers, a divisor of the dimension")
    pq_bits: int = Field(8, ge=1, le=16, description="ivf_pq: bits per sub-quantizer code")
    refine: int = Field(1, ge=1, le=100, description="ivf_pq: refine x k candidates rescored exactly (1 = off)")
    seed: int = Field(0, ge=0, description="seed of training samples, k-means and HNSW levels")
    threads: int | None = Field(None, ge=1, description=f"FAISS threads (default: FAISS's own; at most {MAX_THREADS})")
    attribution_sample: int = Field(1000, ge=0, description="queries also searched exactly (0 = none)")

    # OpenMP segfaulted FAISS at threads: 100000 (exit 139): bounded here, one line when the config is read
    _threads_bounded = field_validator("threads")(check_threads)

    @model_validator(mode="after")
    def _parameters_fit_kind(self) -> IndexSpec:
        check_parameters_fit_kind(self, self.kind, _APPLIES)
        if self.nlist is not None and self.nprobe is not None and self.nprobe > self.nlist:
            raise ValueError(f"nprobe {self.nprobe} exceeds nlist {self.nlist}; use nprobe <= nlist")
        return self

    @property
    def approximate(self) -> bool:
        """Whether rankings may differ from exact search (every kind but exact and flat)."""
        return self.kind not in ("exact", "flat")
