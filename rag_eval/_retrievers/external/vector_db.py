"""The base of every vector-database retriever: the same model as ``dense``, the vectors searched by the database.

Two modes (``mode:``):

- ``managed`` (default): rag_eval fills one collection per (corpus or chunking, model, index)
  fingerprint, named ``rag_eval_<fingerprint>``, through the client's bulk path, from the
  per-passage embedding cache (a chunking encoded once is never encoded again, for any database).
  A collection whose stored fingerprint matches is reused as it is; ``rag-eval clean`` removes
  these collections and nothing else. With an approximate index (HNSW, IVF) the exact top k of a
  sample of the queries is computed from the same vectors, and the report attributes what the
  database's index cost, as it does for FAISS.
- ``read_only``: the team's existing ``collection`` is queried and never written. Queries are
  encoded with ``model`` (which must give vectors of the collection's dimension); hits map to
  the dataset through ``map:`` (:mod:`rag_eval._retrievers.external.mapping`).

A subclass implements the database's part (connect, the collection's dimension and size,
create and fill, query, describe, drop, list) and declares its ``Params`` (adding its connection
and ``index`` fields to :class:`VectorDBParams`). Every hit a query returns is mapped; backend
time is measured per query apart from the harness's own time (:mod:`.latency`).
"""

from __future__ import annotations

import hashlib
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from rag_eval._core.errors import RetrieverError
from rag_eval._core.ranking import check_top_k
from rag_eval._core.topk import top_k_blockwise
from rag_eval._data.datasets.model import passage_text
from rag_eval._retrievers.base import Corpus, Queries, Ranking
from rag_eval._retrievers.dense import DenseParams, DenseRetriever
from rag_eval._retrievers.external.hits import Hit
from rag_eval._retrievers.external.latency import LatencyLog
from rag_eval._retrievers.external.mapping import OWN_ID, HitMapper, MapSpec, read_id_map
from rag_eval._retrievers.index_spec import IndexSpec
from rag_eval._retrievers.params import AdapterParams, Folder, check_params
from rag_eval._retrievers.title_use import OWN_INDEX, READS
from rag_eval._scoring.approximation import sample_queries

#: Prefix of every collection rag_eval creates: ``rag-eval clean`` removes only names with it AND rag_eval's marker.
MANAGED_PREFIX = "rag_eval_"
#: Bumped when what a managed collection holds changes: a collection of another version is never reused.
MANAGED_VERSION = 1
#: Queries whose hits are held before they are mapped (see search()).
MAP_EVERY = 256
#: Metadata field holding the passage id in a managed collection.
PASSAGE_FIELD = "rag_eval_id"
#: Records read (read-only mode) to check that the fields ``map`` names exist (:func:`check_named_fields`).
FIELD_SAMPLE = 100


class VectorDBParams(DenseParams):
    """Parameters every vector-database adapter shares (its own add the connection and ``index``)."""

    mode: Literal["managed", "read_only"] = Field(
        "managed", description="managed: rag_eval fills its own collection | read_only: query the team's collection"
    )
    collection: str | None = Field(
        None, min_length=1, description="read_only: the collection / table to query (managed: chosen by fingerprint)"
    )
    map: MapSpec | None = Field(None, description="read_only: how a hit becomes a passage or a span (docs/integrations.md)")
    id_map: Folder | None = Field(None, description="read_only: file of 'external id<TAB>passage id' lines")
    text_field: str | None = Field("text", description="read_only: the metadata field holding the chunk text (null: none)")
    ingest_batch: int = Field(1024, ge=1, le=1_000_000, description="managed: rows written per bulk call")

    @model_validator(mode="after")
    def _mode_fits(self) -> VectorDBParams:
        if self.mode == "read_only":
            if self.collection is None:
                raise ValueError("mode read_only queries an existing collection: set collection (its name)")
            if self.map is None and self.id_map is None:
                raise ValueError(
                    "mode read_only needs map (how a hit becomes a passage: doc_id/start/end, passage_id or "
                    "text: true) or id_map (a file)"
                )
        else:
            given = [name for name in ("collection", "map", "id_map") if getattr(self, name) is not None]
            if given:
                raise ValueError(
                    f"{', '.join(given)} apply to mode read_only; mode managed names and maps its own collections: "
                    "remove " + ", ".join(given) + " or set mode: read_only"
                )
        return self


class VectorDBRetriever(DenseRetriever, ABC):
    """A dense retriever whose vectors are searched by a database (see the module docstring)."""

    Params = VectorDBParams  # type: ignore[assignment]  # a subclass of DenseParams, with the database's fields

    @classmethod
    def title_use(cls, params: Mapping[str, Any]) -> str:
        """Managed: rag_eval fills the collection with title + text; read_only: as the team filled it."""
        return OWN_INDEX if params.get("mode") == "read_only" else READS
    PATH_PARAMS = ("cache_dir", "id_map")  # type: ignore[assignment]
    #: Rankings of a database are never reused from the ranking cache: the database can change under the same params.
    REUSE_RANKINGS = False
    #: The adapter name (``pgvector``, ``qdrant``...), set by each subclass.
    ADAPTER: ClassVar[str] = "vector_db"
    #: ``index`` fields the database reads at query time only (``ef_search``, ``probes``): not part of the fingerprint.
    SEARCH_TIME_INDEX_FIELDS: ClassVar[tuple[str, ...]] = ()

    def __init__(self, **params: Any) -> None:
        settings = self._settings(params)
        dense = {key: value for key, value in params.items() if key in DenseParams.model_fields and key != "index"}
        super().__init__(**dense)
        self.settings = settings
        self.mode = settings.mode
        self.db_index: Any = settings.index
        self.index_spec = IndexSpec.model_validate({})  # rag_eval's own search stays exact (the reference)
        self.id_map_path = Path(settings.id_map).expanduser() if settings.id_map is not None else None
        self.latency = LatencyLog()
        self.mapper: HitMapper | None = None
        self.collection_name: str | None = settings.collection
        self.reused_collection: bool | None = None
        self.ingest_s: float | None = None

    @classmethod
    def _settings(cls, params: Mapping[str, Any]) -> Any:
        return check_params(cls.Params, params, cls.ADAPTER)

    # ------------------------------------------------------------------ what a database implements

    @abstractmethod
    def connect(self) -> None:
        """Open the client (and start an embedded server where the adapter has one)."""

    @abstractmethod
    def close(self) -> None:
        """Close the client and stop anything this retriever started; safe to call twice."""

    @abstractmethod
    def collection_shape(self, name: str) -> tuple[int, int] | None:
        """``(dimension, points)`` of an existing collection, or None when there is none of that name."""

    @abstractmethod
    def stored_fingerprint(self, name: str) -> str | None:
        """The fingerprint rag_eval stored with a collection it created; None when it has none."""

    @abstractmethod
    def create(self, name: str, dimension: int, fingerprint: str, ids: Sequence[str], vectors: np.ndarray,
               texts: Sequence[str]) -> None:
        """Create ``name``, fill it through the bulk path, build ``self.db_index``, then record ``fingerprint``.

        The fingerprint is written last: a collection filled halfway (a killed run) has none, and is
        dropped and filled again by the next run.
        """

    @abstractmethod
    def query(self, vector: np.ndarray, k: int) -> list[Hit]:
        """The top ``k`` hits of one query vector, best first; in managed mode ``Hit.id`` is the passage id."""

    @abstractmethod
    def drop(self, name: str) -> None:
        """Remove a collection rag_eval created."""

    @abstractmethod
    def managed_collections(self) -> list[str]:
        """Names of the collections rag_eval created here (its prefix and its stored fingerprint)."""

    @abstractmethod
    def database_info(self) -> dict[str, Any]:
        """Server and client versions, the collection, its point count and index parameters (JSON-ready)."""

    def check_local_folder(self, path: Path, what: str, marker: str, writer: str) -> None:
        """A database kept in a local folder: managed mode creates it; read-only needs it, ``marker`` inside, as is.

        Read-only writes nothing: a client would create a missing folder and its files, so it is checked first.
        ``what`` names such a folder in messages, ``writer`` the call that made one.
        """
        where = f"{self.ADAPTER}: params.path {str(path)!r}"
        if path.exists() and not path.is_dir():
            raise RetrieverError(f"{where} is a file; give a folder (a {what})")
        if self.mode != "read_only":
            try:
                path.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise RetrieverError(
                    f"{where} cannot be created ({error.strerror or error}); give a writable folder"
                ) from None
            return
        if not path.is_dir():
            raise RetrieverError(
                f"{where} does not exist; mode read_only needs the folder of an existing {what} (what {writer} was given)"
            )
        if not (path / marker).is_file():
            raise RetrieverError(f"{where} is not a {what} (no {marker}); give the folder the team's {writer} wrote")

    def location(self) -> str:
        """Where the database is, for messages: a folder, a URL without credentials, "embedded" (default: the adapter)."""
        return self.ADAPTER

    def approximate(self) -> bool:
        """Whether the database's search may differ from exact search (its ``index`` kind is not exact)."""
        return getattr(self.db_index, "kind", "exact") != "exact"

    # ------------------------------------------------------------------ seam

    def index(self, corpus: Corpus) -> None:
        """Managed: encode (from the cache) and fill or reuse this corpus's collection. Read-only: check the collection."""
        self.latency = LatencyLog()
        self.connect()
        if self.mode == "read_only":
            assert self.collection_name is not None
            shape = self.collection_shape(self.collection_name)
            if shape is None:
                raise RetrieverError(
                    f"{self.ADAPTER}: collection {self.collection_name!r} does not exist; params.collection must name "
                    "an existing collection (mode read_only never creates one)"
                )
            spec = self.settings.map or MapSpec.model_validate({})
            id_map = read_id_map(self.id_map_path) if self.id_map_path is not None else None
            self.mapper = HitMapper(spec, corpus, id_map, adapter=self.ADAPTER)
            self._stats.update(passages=len(corpus), collection_points=shape[1], cache=None)
            return
        super().index(corpus)
        self.mapper = HitMapper(MapSpec.model_validate({"passage_id": OWN_ID}), corpus, adapter=self.ADAPTER)
        if not self._doc_ids:
            return
        assert self._embeddings is not None
        fingerprint = self.fingerprint(corpus)
        name = MANAGED_PREFIX + fingerprint[:24]
        self.collection_name = name
        if self.stored_fingerprint(name) == fingerprint:
            shape = self.collection_shape(name)
            if shape is not None and shape[1] == len(self._doc_ids):
                self.reused_collection = True
                return
        if self.collection_shape(name) is not None:
            self.drop(name)  # filled halfway by a killed run, or damaged: filled again
        texts = [passage_text(corpus[doc_id]) for doc_id in self._doc_ids]
        started = time.perf_counter()
        self.create(name, int(self._embeddings.shape[1]), fingerprint, self._doc_ids, self._embeddings, texts)
        self.ingest_s = time.perf_counter() - started
        self.reused_collection = False

    def fingerprint(self, corpus: Corpus) -> str:
        """sha256 of what a managed collection holds: passages, the embedding namespace, the index, the version."""
        digest = hashlib.sha256()
        head = {
            "version": MANAGED_VERSION,
            "adapter": self.ADAPTER,
            "embeddings": self._stats.get("cache_namespace") or self.model_identity(),
            "options": self._encoding_options(),
            "passage_prefix": self.passage_prefix,
            # Settings read only at query time never refill a collection: how it is searched, and the attribution sample.
            "index": self.db_index.model_dump(exclude={"attribution_sample", "seed", *self.SEARCH_TIME_INDEX_FIELDS}),
        }
        digest.update(json.dumps(head, sort_keys=True, default=str).encode())
        for doc_id in self._doc_ids:
            digest.update(json.dumps([doc_id, passage_text(corpus[doc_id])], ensure_ascii=False).encode("utf-8", "surrogatepass"))
        return digest.hexdigest()

    def search(self, queries: Queries, top_k: int) -> Ranking:
        """Encode the queries (cached), ask the database one query at a time, map its hits."""
        check_top_k(top_k, where=self.ADAPTER, error=RetrieverError)
        if self.mapper is None:
            raise RetrieverError(f"{self.ADAPTER}: search() called before index(corpus)")
        query_ids = list(queries)
        if not query_ids:
            return {}
        if self.mode == "managed" and not self._doc_ids:
            return {qid: {} for qid in query_ids}
        prefixed = [self.query_prefix + queries[qid] for qid in query_ids]
        vectors, status, counts, _ = self._encode_cached(prefixed, "query")
        self._stats["query_cache"] = status
        self._stats["queries_encoded"] += counts["encoded"]
        self._check_dimension(int(vectors.shape[1]))
        started = time.perf_counter()
        backend_before = self.latency.backend_s
        ranking: Ranking = {}
        mapper = self.mapper
        # Hits are mapped a block of queries at a time, after the block's client calls: the mapping loop then
        # runs warm (interleaved with each call it cost about three times as much), and memory stays bounded.
        pending: list[tuple[str, list[Hit]]] = []
        for row, qid in enumerate(query_ids):
            pending.append((qid, self.latency.timed(1, self.query, vectors[row], top_k)))
            if len(pending) == MAP_EVERY or row == len(query_ids) - 1:
                for pending_qid, hits in pending:
                    ranking[pending_qid] = mapper.rank(pending_qid, hits)
                pending.clear()
        self.latency.overhead_s += (time.perf_counter() - started) - (self.latency.backend_s - backend_before)
        mapper.check_mapped()
        if self.mode == "managed" and self.approximate() and self.attribution_sample:
            self.exact_reference = self._exact_sample(query_ids, vectors, top_k)
        return ranking

    @property
    def attribution_sample(self) -> int:
        """Queries also searched exactly over the same vectors (the index's ``attribution_sample``, default 1000)."""
        return int(getattr(self.db_index, "attribution_sample", 1000))

    def _exact_sample(self, query_ids: list[str], query_embeddings: np.ndarray, top_k: int) -> Ranking:
        """Exact top ``top_k`` of a seeded sample of the queries, over the vectors the database holds."""
        sample = sample_queries(query_ids, self.attribution_sample, seed=int(getattr(self.db_index, "seed", 0)))
        position = {qid: row for row, qid in enumerate(query_ids)}
        assert self._embeddings is not None
        indices, scores = top_k_blockwise(
            query_embeddings[[position[qid] for qid in sample]], self._embeddings, top_k, self.block_size
        )
        return {
            qid: {self._doc_ids[i]: float(s) for i, s in zip(indices[row].tolist(), scores[row].tolist())}
            for row, qid in enumerate(sample)
        }

    def _check_dimension(self, dimension: int) -> None:
        if self.mode != "read_only" or self.collection_name is None:
            return
        shape = self.collection_shape(self.collection_name)
        if shape is not None and shape[0] and shape[0] != dimension:
            raise RetrieverError(
                f"{self.ADAPTER}: params.model {self.resolved.spec!r} gives {dimension}-dimensional vectors, and "
                f"collection {self.collection_name!r} holds {shape[0]}-dimensional ones; set params.model to the "
                "model the collection was filled with"
            )

    def describe(self) -> dict[str, Any]:
        """The dense description, the database (versions, collection, points, index), the mapping and the latency."""
        info = super().describe()
        info["adapter"] = self.ADAPTER
        info["parameters"].pop("index", None)
        info["parameters"]["mode"] = self.mode
        database: dict[str, Any] = {"mode": self.mode, "collection": self.collection_name}
        try:
            database.update(self.database_info())
        except RetrieverError:
            raise
        except Exception as error:  # a closed client cannot describe itself: said, not hidden
            database["info_error"] = f"{type(error).__name__}: {error}"
        if self.reused_collection is not None:
            database["reused"] = self.reused_collection
        if self.ingest_s is not None:
            database["ingest_s"] = round(self.ingest_s, 3)
            if self._doc_ids:
                database["ingest_rows_per_s"] = round(len(self._doc_ids) / max(self.ingest_s, 1e-9), 1)
        info["database"] = database
        if self.mapper is not None:
            info["mapping"] = self.mapper.describe()
        latency = self.latency.describe()
        if latency:
            info["latency"] = latency
        return info


def check_named_fields(
    adapter: str, named: Mapping[str, str | None], records: Sequence[tuple[Any, Mapping[str, Any]]], collection: str,
    what: str,
) -> None:
    """Refuse a field ``map`` (or an explicit ``text_field``) names that NO sampled record holds: a misspelt name.

    ``records``: ``(id, metadata)`` of up to :data:`FIELD_SAMPLE` records. A field some of them hold and
    others lack is not refused: the records without it are counted as unmapped, with the reason, as
    every adapter counts them (pgvector reads no sample at all).
    """
    if not records:
        return
    for where, field in named.items():
        if field is None or field == OWN_ID:
            continue
        if not any(field in metadata for _, metadata in records):
            keys = sorted({key for _, metadata in records for key in metadata})
            raise RetrieverError(
                f"{adapter}: params.{where} names {what} {field!r}, which none of the {len(records)} records read "
                f"from collection {collection!r} holds (their {what}s: {', '.join(keys) or 'none'}); set "
                f"params.{where} to one of them"
            )


class ExactOnly(AdapterParams):
    """``index: {kind: exact}``: the database searches every vector (used where a database has no other kind here)."""

    kind: Literal["exact"] = "exact"
