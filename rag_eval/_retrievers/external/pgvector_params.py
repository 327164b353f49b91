"""``adapter: pgvector``'s parameters (the index kinds and their settings, the connection, the read-only
table's columns) and its DSN handling (``${ENV}`` read when connecting, passwords never shown).

Kept apart from :mod:`rag_eval._retrievers.external.pgvector` (the queries): checking a config needs only this.
"""

from __future__ import annotations

import os
import re
import warnings
from typing import Literal

from pydantic import Field, model_validator

from rag_eval._core.errors import RetrieverError
from rag_eval._core.masking import mask_text, scrub
from rag_eval._core.messages import shown
from rag_eval._retrievers.external.vector_db import VectorDBParams
from rag_eval._retrievers.index_spec import check_parameters_fit_kind
from rag_eval._retrievers.params import AdapterParams

ADAPTER = "pgvector"
#: HNSW's default candidate list while searching (pgvector's ``hnsw.ef_search``).
DEFAULT_EF_SEARCH = 40
#: ``${NAME}`` in a DSN: read from the environment when connecting (a password kept out of the config).
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

# Which index kinds each parameter applies to: a parameter set for another kind is an error, not ignored.
_APPLIES: dict[str, tuple[str, ...]] = {
    "m": ("hnsw",),
    "ef_construction": ("hnsw",),
    "ef_search": ("hnsw",),
    "lists": ("ivfflat",),
    "probes": ("ivfflat",),
    "attribution_sample": ("hnsw", "ivfflat"),
    "seed": ("hnsw", "ivfflat"),
}
# Parameters of the index build: rag_eval builds in managed mode only (read_only uses the table's own index).
_BUILD = ("m", "ef_construction", "lists")

class PgvectorIndex(AdapterParams):
    """``index:`` of ``adapter: pgvector``: exact (a sequential scan) or one of pgvector's two index kinds."""

    kind: Literal["exact", "hnsw", "ivfflat"] = Field("exact", description="exact | hnsw | ivfflat")
    m: int = Field(16, ge=2, le=100, description="hnsw (managed): neighbours per node")
    ef_construction: int = Field(64, ge=4, le=1000, description="hnsw (managed): candidate list while building")
    ef_search: int | None = Field(
        None,
        ge=1,
        le=1000,
        description=f"hnsw: candidate list per query (default {DEFAULT_EF_SEARCH}, raised to top_k)",
    )
    lists: int = Field(100, ge=1, le=32768, description="ivfflat (managed): inverted lists")
    probes: int = Field(1, ge=1, le=32768, description="ivfflat: lists visited per query")
    attribution_sample: int = Field(1000, ge=0, description="managed: queries also searched exactly (0 = none)")
    seed: int = Field(0, ge=0, description="seed of the attribution sample")

    @model_validator(mode="after")
    def _parameters_fit_kind(self) -> PgvectorIndex:
        check_parameters_fit_kind(self, self.kind, _APPLIES)
        if self.ef_construction < 2 * self.m:
            raise ValueError(
                f"ef_construction {self.ef_construction} is below 2 x m ({2 * self.m}), which pgvector refuses; "
                f"raise ef_construction to {2 * self.m} or more"
            )
        if self.probes > self.lists and "lists" in self.model_fields_set:
            # (without lists, the table's own index may have more: read_only; managed mode checks its default)
            raise ValueError(f"probes {self.probes} exceeds lists {self.lists}; use probes <= lists")
        return self


with warnings.catch_warnings():
    # ``schema`` shadows pydantic's deprecated BaseModel.schema(); the YAML name is what users know.
    warnings.filterwarnings("ignore", message='Field name "schema"')

    class PgvectorParams(VectorDBParams):
        """Parameters of ``adapter: pgvector`` (see the module docstring)."""

        dsn: str | None = Field(
            None,
            min_length=1,
            description="PostgreSQL URI of the team's server; null: an embedded server in <cache_dir>/pgvector",
        )
        schema: str = Field(  # type: ignore[assignment]  # the field, not BaseModel.schema()
            "public", min_length=1, description="schema of the tables (managed: created if absent)"
        )
        connect_timeout: int = Field(10, ge=1, le=3600, description="seconds to wait for the server")
        vector_column: str = Field("embedding", min_length=1, description="read_only: the vector(d) column")
        id_column: str = Field("id", min_length=1, description="read_only: the column of the row's id")
        metadata_column: str | None = Field(
            "metadata", min_length=1, description="read_only: a jsonb column holding map's fields (null: none)"
        )
        index: PgvectorIndex = Field(  # type: ignore[assignment]  # pgvector's kinds, not FAISS's
            default_factory=lambda: PgvectorIndex.model_validate({}),
            description="exact (default) | hnsw {m, ef_construction, ef_search} | ivfflat {lists, probes}",
        )

        @model_validator(mode="after")
        def _fields_fit_mode(self) -> PgvectorParams:
            if self.mode == "managed":
                given: list[str] = [
                    name for name in ("vector_column", "id_column", "metadata_column") if name in self.model_fields_set
                ]
                if self.index.probes > self.index.lists:
                    raise ValueError(
                        f"index.probes {self.index.probes} exceeds index.lists {self.index.lists}; use probes <= lists"
                    )
                if given:
                    raise ValueError(
                        f"{', '.join(given)} apply to mode read_only (the team's table); a managed table has its own "
                        f"columns: remove {', '.join(given)} or set mode: read_only"
                    )
            else:
                given = [f"index.{name}" for name in _BUILD if name in self.index.model_fields_set]
                if given:
                    raise ValueError(
                        f"{', '.join(given)} build an index, which mode read_only never does (the table's own index "
                        f"is searched): remove {', '.join(given)}"
                    )
            return self


def expand_dsn(dsn: str) -> str:
    """``${NAME}`` in the DSN replaced by the environment's value (read here, never written or printed)."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise RetrieverError(
                f"{ADAPTER}: params.dsn reads the environment variable {name}, which is not set; export {name} "
                "before the run, or write the value in the DSN"
            )
        return os.environ[name]

    return _ENV.sub(value, dsn)


def redact(dsn: str) -> str:
    """``dsn`` without its password (URI ``user:***@``, ``?password=***`` and key-value ``password=***`` forms)."""
    return mask_text(dsn)


def one_line_error(error: BaseException, dsn: str | None) -> str:
    """A psycopg error as one line, any password of ``dsn`` in it masked."""
    text = scrub(" ".join(str(error).split()) or type(error).__name__, dsn)
    return shown(text, 400) if len(text) > 400 else text
