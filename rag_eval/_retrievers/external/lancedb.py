"""``adapter: lancedb``: the dense model's vectors searched by LanceDB (embedded, a folder of Lance tables).

``uri`` is the database folder (managed default: ``<cache_dir>/lancedb``). A managed table is written
from Arrow record batches in one commit (``ingest_batch`` rows each): a ``vector`` column of
``fixed_size_list<float32>``, ``rag_eval_id`` and ``text``. Distances are LanceDB's ``dot``
(``1 - q·v``), so a hit's score is ``1 - _distance``: the dense dot product (rag_eval's cosine on unit
vectors), to float32 rounding of that subtraction. rag_eval's fingerprint is the metadata of the
table's ``vector`` field, written after the rows and the index (a half-written table has none).

``index: {kind: exact}`` builds no vector index and searches with ``bypass_vector_index()``;
``ivf_pq`` (``num_partitions``, ``num_sub_vectors``, ``num_bits``; searched with ``nprobes``,
``refine_factor``) and ``ivf_hnsw_sq`` (``num_partitions``, ``m``, ``ef_construction``; searched with
``nprobes``, ``ef``, ``refine_factor``) build LanceDB's index, with ``dot`` distances.

Read-only: the team's table ``collection`` is searched on ``vector_column`` with ``metric`` (default:
the distance its vector index was built with, else ``dot``; ``l2`` scores ``-distance``). ``map:``
reads columns, and keys of a ``metadata`` column (a struct, a map or a JSON string); ``Hit.id`` is
the ``id_column`` value, or the row id when the table has no such column. With ``index.kind: exact``
the table's own index is bypassed; with its kind it is used with the search parameters given.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from rag_eval._core.errors import RetrieverError
from rag_eval._core.messages import error_line
from rag_eval._retrievers.base import Corpus
from rag_eval._retrievers.external.hits import Hit
from rag_eval._retrievers.external.vector_db import (
    MANAGED_PREFIX,
    MANAGED_VERSION,
    PASSAGE_FIELD,
    VectorDBParams,
    VectorDBRetriever,
)
from rag_eval._retrievers.index_spec import check_parameters_fit_kind, parameters_of_kind
from rag_eval._retrievers.params import AdapterParams, Folder

ADAPTER = "lancedb"
#: Field metadata keys rag_eval writes on its own tables' vector column (the fingerprint last of all).
FINGERPRINT_KEY = "rag_eval_fingerprint"
VERSION_KEY = "rag_eval_version"
#: Columns of a managed table.
VECTOR_COLUMN = "vector"
TEXT_COLUMN = "text"
#: The column a read-only table may keep its metadata in (its keys are map fields too).
METADATA_COLUMN = "metadata"
DISTANCE = "_distance"
ROW_ID = "_rowid"

# Which kinds each index parameter applies to: set for another kind, it is an error, not ignored.
_APPLIES: dict[str, tuple[str, ...]] = {
    "num_partitions": ("ivf_pq", "ivf_hnsw_sq"),
    "nprobes": ("ivf_pq", "ivf_hnsw_sq"),
    "refine_factor": ("ivf_pq", "ivf_hnsw_sq"),
    "num_sub_vectors": ("ivf_pq",),
    "num_bits": ("ivf_pq",),
    "m": ("ivf_hnsw_sq",),
    "ef_construction": ("ivf_hnsw_sq",),
    "ef": ("ivf_hnsw_sq",),
    "attribution_sample": ("ivf_pq", "ivf_hnsw_sq"),
    "seed": ("ivf_pq", "ivf_hnsw_sq"),
}


class LanceIndex(AdapterParams):
    """``index:`` of ``adapter: lancedb``: exact search, or one of LanceDB's vector indexes with its parameters."""

    kind: Literal["exact", "ivf_pq", "ivf_hnsw_sq"] = Field("exact", description="exact | ivf_pq | ivf_hnsw_sq")
    num_partitions: int | None = Field(None, ge=1, description="ivf: partitions (default: LanceDB's, about sqrt(rows))")
    num_sub_vectors: int | None = Field(None, ge=1, description="ivf_pq: sub-vectors, a divisor of the dimension")
    num_bits: Literal[4, 8] = Field(8, description="ivf_pq: bits per code")
    m: int = Field(20, ge=2, le=512, description="ivf_hnsw_sq: edges per node")
    ef_construction: int = Field(300, ge=1, description="ivf_hnsw_sq: candidate list while building")
    nprobes: int | None = Field(None, ge=1, description="ivf: partitions searched per query (default: LanceDB's)")
    ef: int | None = Field(None, ge=1, description="ivf_hnsw_sq: candidate list while searching (default: LanceDB's)")
    refine_factor: int | None = Field(None, ge=1, description="ivf: refine_factor x k candidates rescored exactly")
    attribution_sample: int = Field(1000, ge=0, description="queries also searched exactly (0 = none)")
    seed: int = Field(0, ge=0, description="seed of that sample of queries")

    def described(self) -> dict[str, Any]:
        """The kind and the parameters that apply to it (what the report shows)."""
        return parameters_of_kind(self, self.kind, _APPLIES)

    @model_validator(mode="after")
    def _parameters_fit_kind(self) -> LanceIndex:
        check_parameters_fit_kind(self, self.kind, _APPLIES)
        return self


class LanceParams(VectorDBParams):
    """Parameters of ``adapter: lancedb`` (see the module docstring)."""

    uri: Folder | None = Field(None, description="the database folder (managed default: <cache_dir>/lancedb)")
    vector_column: str = Field(VECTOR_COLUMN, min_length=1, description="read_only: the column of the vectors")
    id_column: str = Field("id", min_length=1, description="read_only: the column of a hit's id (absent: the row id)")
    metric: Literal["dot", "cosine", "l2"] | None = Field(
        None, description="read_only: distance (default: the vector index's, else dot)"
    )
    index: LanceIndex = Field(  # type: ignore[assignment]  # LanceDB's own kinds replace dense's FAISS ones
        default_factory=lambda: LanceIndex.model_validate({}),
        description="{kind: exact} | {kind: ivf_pq, num_partitions, num_sub_vectors, num_bits, nprobes, refine_factor} | "
        "{kind: ivf_hnsw_sq, num_partitions, m, ef_construction, nprobes, ef, refine_factor}; attribution_sample, seed",
    )

    @model_validator(mode="after")
    def _read_only_fields(self) -> LanceParams:
        if self.mode == "read_only" and self.uri is None:
            raise ValueError("mode read_only queries an existing table: set uri (the LanceDB folder)")
        if self.mode == "managed":
            given = [name for name in ("vector_column", "id_column", "metric") if name in self.model_fields_set]
            if given:
                raise ValueError(
                    f"{', '.join(given)} apply to mode read_only; a managed table has its own columns and dot "
                    "distances: remove " + ", ".join(given)
                )
        return self


class LanceDBRetriever(VectorDBRetriever):
    """Dense retrieval whose vectors LanceDB searches (see the module docstring)."""

    Params = LanceParams  # type: ignore[assignment]
    PATH_PARAMS = ("cache_dir", "id_map", "uri")  # type: ignore[assignment]
    ADAPTER = ADAPTER
    SEARCH_TIME_INDEX_FIELDS = ("nprobes", "ef", "refine_factor")

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        settings: LanceParams = self.settings
        self.uri = Path(settings.uri).expanduser() if settings.uri is not None else self.cache_dir / "lancedb"
        managed = self.mode == "managed"
        self.vector_column = VECTOR_COLUMN if managed else settings.vector_column
        self.id_column = settings.id_column
        self.metric: str = "dot" if managed else (settings.metric or "")  # read_only: settled by index()
        self.db: Any = None
        self._tables: dict[str, Any] = {}
        self._columns: list[str] = []  # read_only: what each hit brings back (all but the vectors)

    # ------------------------------------------------------------------ connection

    def location(self) -> str:
        """The database folder."""
        return str(self.uri)

    def connect(self) -> None:
        """Open the database folder (once); read-only mode needs it to exist and writes nothing to it."""
        if self.db is not None:
            return
        lancedb = _import_lancedb()

        uri = self.uri
        if uri.exists() and not uri.is_dir():
            raise RetrieverError(f"{ADAPTER}: params.uri {str(uri)!r} is a file; give a folder (the LanceDB database)")
        if self.mode == "read_only" and not uri.is_dir():
            raise RetrieverError(
                f"{ADAPTER}: params.uri {str(uri)!r} does not exist; mode read_only needs the folder of an existing "
                "LanceDB database"
            )
        try:
            if self.mode != "read_only":
                uri.mkdir(parents=True, exist_ok=True)
            self.db = lancedb.connect(str(uri))
        except Exception as error:
            raise RetrieverError(
                f"{ADAPTER}: params.uri {str(uri)!r} cannot be opened ({error_line(error)}); give a writable folder"
            ) from None

    def close(self) -> None:
        """Forget the tables and the connection (LanceDB holds no server or lock); safe to call twice."""
        self._tables.clear()
        self.db = None

    def _call(self, what: str, call: Any, *args: Any, **kwargs: Any) -> Any:
        """A LanceDB call whose failure becomes one line naming what it did."""
        try:
            return call(*args, **kwargs)
        except RetrieverError:
            raise
        except Exception as error:
            raise RetrieverError(
                f"{ADAPTER}: {what} in {self.location()!r} failed ({error_line(error)}); check params.uri and params.collection"
            ) from None

    # ------------------------------------------------------------------ tables

    def _names(self) -> list[str]:
        names: list[str] = []
        token = None
        while True:
            page = self._call("listing tables", self.db.list_tables, page_token=token)
            names.extend(page.tables)
            token = page.page_token
            if not token:
                return names

    def _table(self, name: str) -> Any:
        """The open table, or None when there is none (or none that opens: a create killed before its commit)."""
        if name not in self._tables:
            if name not in self._names():
                return None
            try:
                self._tables[name] = self.db.open_table(name)
            except (ValueError, FileNotFoundError, OSError):
                return None
        return self._tables[name]

    def collection_shape(self, name: str) -> tuple[int, int] | None:
        """``(dimension, rows)``; the dimension is 0 for a variable-length list column (checked per query by LanceDB)."""
        table = self._table(name)
        if table is None:
            return None
        schema = table.schema
        if self.vector_column not in schema.names:
            raise RetrieverError(
                f"{ADAPTER}: params.vector_column {self.vector_column!r} is not a column of table {name!r} (its columns: "
                f"{', '.join(schema.names)}); set params.vector_column to the column of the vectors"
            )
        kind = schema.field(self.vector_column).type
        dimension = int(getattr(kind, "list_size", 0) or 0)
        return dimension, int(self._call(f"counting rows of {name!r}", table.count_rows))

    def stored_fingerprint(self, name: str) -> str | None:
        """The fingerprint in the metadata of the table's vector field; None for a table rag_eval did not finish."""
        table = self._table(name)
        if table is None or VECTOR_COLUMN not in table.schema.names:
            return None
        metadata = table.schema.field(VECTOR_COLUMN).metadata or {}
        value = metadata.get(FINGERPRINT_KEY.encode())
        return value.decode() if isinstance(value, bytes) else None

    def create(self, name: str, dimension: int, fingerprint: str, ids: Sequence[str], vectors: np.ndarray,
               texts: Sequence[str]) -> None:
        """Write the rows as Arrow batches in one commit, build the vector index, then mark the vector field."""
        import pyarrow as pa  # type: ignore[import-untyped]

        if name in self._names():  # a create killed before its commit left files that do not open
            self.drop(name)
        schema = pa.schema([
            pa.field(VECTOR_COLUMN, pa.list_(pa.float32(), dimension)),
            pa.field(PASSAGE_FIELD, pa.string()),
            pa.field(TEXT_COLUMN, pa.string()),
        ])
        matrix = np.ascontiguousarray(vectors, dtype=np.float32)
        batch = self.settings.ingest_batch

        def batches() -> Any:
            for start in range(0, len(ids), batch):
                stop = min(start + batch, len(ids))
                column = pa.FixedSizeListArray.from_arrays(pa.array(matrix[start:stop].ravel()), dimension)
                yield pa.RecordBatch.from_arrays(
                    [column, pa.array(list(ids[start:stop]), pa.string()), pa.array(list(texts[start:stop]), pa.string())],
                    schema=schema,
                )

        reader = pa.RecordBatchReader.from_batches(schema, batches())
        table = self._call(f"creating table {name!r}", self.db.create_table, name, data=reader)
        self._tables[name] = table
        config = self._index_config()
        if config is not None:
            self._call(f"building the {self.db_index.kind} index of {name!r}", table.create_index, VECTOR_COLUMN, config=config)
        marker = {FINGERPRINT_KEY: fingerprint, VERSION_KEY: str(MANAGED_VERSION)}
        self._call(f"marking table {name!r}", table.update_field_metadata, {"path": VECTOR_COLUMN, "metadata": marker})

    def _index_config(self) -> Any:
        from lancedb.index import IvfHnswSq, IvfPq

        spec = self.db_index
        if spec.kind == "ivf_pq":
            return IvfPq(distance_type="dot", num_partitions=spec.num_partitions, num_sub_vectors=spec.num_sub_vectors,
                         num_bits=spec.num_bits)
        if spec.kind == "ivf_hnsw_sq":
            return IvfHnswSq(distance_type="dot", num_partitions=spec.num_partitions, m=spec.m,
                             ef_construction=spec.ef_construction)
        return None

    def drop(self, name: str) -> None:
        """Remove a table rag_eval created."""
        self._tables.pop(name, None)
        self._call(f"dropping table {name!r}", self.db.drop_table, name)

    def managed_collections(self) -> list[str]:
        """rag_eval's tables here: the prefix AND a fingerprint on the vector field (never anyone else's)."""
        names = sorted(name for name in self._names() if name.startswith(MANAGED_PREFIX))
        return [name for name in names if self.stored_fingerprint(name) is not None]

    # ------------------------------------------------------------------ search

    def index(self, corpus: Corpus) -> None:
        """The base's index, then (read-only) the metric settled and the fields ``map`` names checked."""
        super().index(corpus)
        if self.mode == "read_only":
            assert self.collection_name is not None
            table = self._table(self.collection_name)
            self._columns = [name for name in table.schema.names if name != self.vector_column]
            if not self.metric:
                self.metric = self._index_metric(table) or "dot"
            self._check_fields(table)

    def _index_metric(self, table: Any) -> str | None:
        """The distance the table's vector index on ``vector_column`` was built with, if it has one."""
        for index in self._call("listing indexes", table.list_indices):
            if list(index.columns) == [self.vector_column]:
                stats = self._call("reading index statistics", table.index_stats, index.name)
                metric = getattr(stats, "distance_type", None)
                if metric in ("dot", "cosine", "l2"):
                    return str(metric)
        return None

    def _check_fields(self, table: Any) -> None:
        """A field ``map`` (or an explicit ``text_field``) names that the first row lacks: one line, not 0 mapped."""
        rows = self._call(f"reading table {self.collection_name!r}", lambda: table.search().limit(1).to_arrow().to_pylist())
        if not rows:
            return
        fields = self._metadata({key: value for key, value in rows[0].items() if key != self.vector_column})
        spec = self.settings.map
        named = {f"map.{key}": getattr(spec, key) for key in ("doc_id", "start", "end", "passage_id")} if spec else {}
        if "text_field" in self.settings.model_fields_set:
            named["text_field"] = self.settings.text_field
        for where, field in named.items():
            if field is not None and field != "@id" and field not in fields:
                raise RetrieverError(
                    f"{ADAPTER}: params.{where} names {field!r}, which table {self.collection_name!r} does not have (its "
                    f"columns and metadata keys: {', '.join(sorted(fields)) or 'none'}); set params.{where} to one of them"
                )

    def _metadata(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """The row's columns, and the keys of its ``metadata`` column (a struct, a map, or a JSON object string)."""
        fields = dict(row)
        nested = row.get(METADATA_COLUMN)
        if isinstance(nested, str):
            try:
                nested = json.loads(nested)
            except ValueError:
                nested = None
        if isinstance(nested, list) and all(isinstance(item, tuple) and len(item) == 2 for item in nested):
            nested = dict(nested)  # an Arrow map comes back as (key, value) pairs
        if isinstance(nested, dict):
            for key, value in nested.items():
                fields.setdefault(str(key), value)  # a column of that name wins
        return fields

    def query(self, vector: np.ndarray, k: int) -> list[Hit]:
        """One vector search: the top ``k`` rows, best first, as hits with similarity scores."""
        assert self.collection_name is not None
        table = self._table(self.collection_name)
        managed = self.mode == "managed"
        builder = table.search(vector, vector_column_name=self.vector_column).distance_type(self.metric).limit(k)
        spec = self.db_index
        if spec.kind == "exact":
            builder = builder.bypass_vector_index()
        else:
            if spec.nprobes is not None:
                builder = builder.nprobes(spec.nprobes)
            if spec.refine_factor is not None:
                builder = builder.refine_factor(spec.refine_factor)
            if spec.kind == "ivf_hnsw_sq" and spec.ef is not None:
                builder = builder.ef(spec.ef)
        columns = [PASSAGE_FIELD] if managed else list(self._columns)
        with_row_id = not managed and self.id_column not in self._columns
        if with_row_id:
            builder = builder.with_row_id(True)
        builder = builder.select(columns + [DISTANCE])  # named: LanceDB warns when _distance is left implicit
        rows = self._call(f"searching table {self.collection_name!r}", lambda: builder.to_arrow().to_pylist())
        if managed:
            # dot distance is 1 - q·v: the similarity back, in float64 (float32 rounding of 1 - q·v stays)
            return [Hit(id=str(row[PASSAGE_FIELD]), score=1.0 - float(row[DISTANCE])) for row in rows]
        return [self._hit(row, with_row_id) for row in rows]

    def _hit(self, row: Mapping[str, Any], with_row_id: bool) -> Hit:
        distance = float(row[DISTANCE])
        score = -distance if self.metric == "l2" else 1.0 - distance  # cosine distance is 1 - cos, dot 1 - q·v
        ident = row.get(ROW_ID) if with_row_id else row.get(self.id_column)
        metadata = self._metadata({key: value for key, value in row.items() if key not in (DISTANCE, ROW_ID)})
        text_field = self.settings.text_field
        text = metadata.get(text_field) if text_field else None
        return Hit(id=None if ident is None else str(ident), score=score, text=text if isinstance(text, str) else None,
                   metadata=metadata)

    # ------------------------------------------------------------------ describe

    def database_info(self) -> dict[str, Any]:
        """Version, the folder, the table's rows and vector column, the distance, the index asked and the one built."""
        lancedb = _import_lancedb()

        info: dict[str, Any] = {
            "engine": "lancedb",
            "deployment": "embedded (a local folder; no server)",
            "location": self.location(),
            "client_version": lancedb.__version__,
            "server_version": None,
            "metric": self.metric or None,
            "index": self.db_index.described(),
            "search": "exact (bypass_vector_index)" if self.db_index.kind == "exact" else self.db_index.kind,
        }
        if self.db is not None and self.collection_name is not None:
            shape = self.collection_shape(self.collection_name)
            table = self._table(self.collection_name)
            if shape is not None and table is not None:
                info.update(points=shape[1], dimension=shape[0] or None, vector_column=self.vector_column)
                info["vector_indexes"] = [
                    {"name": index.name, "type": str(index.index_type), "columns": list(index.columns)}
                    for index in self._call("listing indexes", table.list_indices)
                ]
        return info


def _import_lancedb() -> Any:
    """lancedb, imported with a stray module named ``datasets`` out of its way.

    lancedb registers Hugging Face datasets as a source when a module named ``datasets`` is loaded, and
    fails when that module is not Hugging Face's: a folder named ``datasets`` in the working folder of
    ``python -m rag_eval`` (this repository has one) is imported as a namespace package by
    sentence-transformers' own probe. Such a module is hidden while lancedb is imported, then put back.
    """
    stray = sys.modules.get("datasets")
    if stray is None or getattr(stray, "__file__", None) is not None or hasattr(stray, "Dataset"):
        import lancedb

        return lancedb
    del sys.modules["datasets"]
    try:
        import lancedb
    finally:
        sys.modules.setdefault("datasets", stray)
    return lancedb
