"""The ``execution:`` section of a run config: where encoding and exact search run (local or Ray).

Only the model of the section lives here (the data layer); the engine that reads it is
:mod:`rag_eval._execution.ray_engine`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class ExecutionSpec(BaseModel):
    """The ``execution:`` section of a run config: where encoding and exact search run."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    engine: Literal["local", "ray"] = Field(default="local", description="local (this process) or ray")
    address: str = Field(
        default="local",
        description="local (start a Ray cluster here), auto (join the running one) or a cluster address",
    )
    actors: int | None = Field(default=None, ge=1, description="encoder actors (default: one per GPU, else CPUs - 1)")
    batch_size: int = Field(
        default=1024, ge=1, description="passages per actor call, and per shard written to the store"
    )
    num_cpus_per_actor: float = Field(default=1.0, gt=0, description="CPUs reserved by each encoder actor")
    num_gpus_per_actor: float | None = Field(
        default=None, ge=0, description="GPUs per encoder actor (default: 1 when the cluster has GPUs, else 0)"
    )
    shards: int | None = Field(
        default=None, ge=1, description="search shards (default: one per CPU, at least rows / 1M)"
    )
    max_retries: int = Field(
        default=3, ge=0, description="restarts of a dead actor and retries of its batch or search task"
    )

    @field_validator("address")
    @classmethod
    def _plain_address(cls, value: str) -> str:
        if not value.strip() or any(c.isspace() for c in value):
            raise ValueError(
                f"address must be local, auto or a Ray cluster address such as ray://head:10001, got {value!r}"
            )
        return value

    @model_validator(mode="after")
    def _ray_keys_need_ray(self) -> ExecutionSpec:
        # With engine: local these keys would be read by nothing: a forgotten `engine: ray` is said, not ignored.
        # (Values equal to the defaults pass: a dumped config validates again as written.)
        fields = type(self).model_fields
        unused = [name for name in fields if name != "engine" and getattr(self, name) != fields[name].default]
        if self.engine == "local" and unused:
            one = len(unused) == 1
            raise ValueError(
                f"{', '.join(unused)} {'is' if one else 'are'} read only with engine: ray; "
                f"add engine: ray, or remove {'it' if one else 'them'}"
            )
        return self
