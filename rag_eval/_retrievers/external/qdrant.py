"""``adapter: qdrant``: the dense model's vectors searched by Qdrant (local folder, in memory, or a server).

Where (exactly one; managed mode defaults to a local folder ``<cache_dir>/qdrant``)::

    location: ":memory:"          # in this process, gone when the run ends
    path: qdrant_data             # local mode: a folder on disk (qdrant-client's embedded engine)
    url: http://localhost:6333    # a Qdrant server (api_key_env: the variable holding its key; timeout: seconds)

Managed collections hold one point per passage: id = the passage's row (an int), the vector as
rag_eval encoded it, and the payload ``{rag_eval_id, text}``; the distance is ``Dot``, so a score is
exactly the dense dot product (rag_eval's cosine on unit vectors). Qdrant's ``Cosine`` would
normalise the vectors again (once more in float32), so it is not used. rag_eval's fingerprint is
the collection's ``metadata``, set after every point is written (a half-filled collection has none).

``index: {kind: exact}`` asks ``SearchParams(exact=True)`` (a server searches every vector);
``kind: hnsw`` builds the server's HNSW graph (``m``, ``ef_construct``) and searches with
``ef_search``. Local mode and ``:memory:`` always search every vector (qdrant-client's local engine
has no HNSW): an hnsw kind there is recorded, and its ranking still equals the exact one.

Read-only: the team's ``collection`` is queried with its own distance (Euclid and Manhattan turned
into ``-distance``, so higher is better), on ``vector_name`` (null: the unnamed vector); ``map:``
reads payload fields, ``text_field`` the chunk text, and ``Hit.id`` is the point id as a string.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import numpy as np
from pydantic import Field, model_validator

from rag_eval._core.errors import RetrieverError
from rag_eval._core.messages import error_line
from rag_eval._retrievers.base import Corpus
from rag_eval._retrievers.external.hits import Hit
from rag_eval._retrievers.external.vector_db import (
    FIELD_SAMPLE,
    MANAGED_PREFIX,
    MANAGED_VERSION,
    PASSAGE_FIELD,
    VectorDBParams,
    VectorDBRetriever,
    check_named_fields,
)
from rag_eval._retrievers.index_spec import check_parameters_fit_kind, parameters_of_kind
from rag_eval._retrievers.params import AdapterParams, Folder

ADAPTER = "qdrant"
#: Collection metadata keys rag_eval writes on its own collections (the fingerprint last of all).
FINGERPRINT_KEY = "rag_eval_fingerprint"
VERSION_KEY = "rag_eval_version"
#: Payload field of a managed point's text.
TEXT_FIELD = "text"
#: How long a server may take to build its HNSW graph after the last upsert before the run goes on.
INDEX_WAIT_S = 600.0

# Which kinds each index parameter applies to: set for another kind, it is an error, not ignored.
_APPLIES: dict[str, tuple[str, ...]] = {
    "m": ("hnsw",),
    "ef_construct": ("hnsw",),
    "ef_search": ("hnsw",),
    "attribution_sample": ("hnsw",),
    "seed": ("hnsw",),
}


class QdrantIndex(AdapterParams):
    """``index:`` of ``adapter: qdrant``: exact search, or the server's HNSW graph with its parameters."""

    kind: Literal["exact", "hnsw"] = Field("exact", description="exact | hnsw")
    m: int = Field(16, ge=0, le=512, description="hnsw: edges per node (0: no graph)")
    ef_construct: int = Field(100, ge=4, description="hnsw: candidate list while building")
    ef_search: int | None = Field(None, ge=1, description="hnsw: candidate list while searching (default: the server's)")
    attribution_sample: int = Field(1000, ge=0, description="hnsw: queries also searched exactly (0 = none)")
    seed: int = Field(0, ge=0, description="hnsw: seed of that sample of queries")

    def described(self) -> dict[str, Any]:
        """The kind and the parameters that apply to it (what the report shows)."""
        return parameters_of_kind(self, self.kind, _APPLIES)

    @model_validator(mode="after")
    def _parameters_fit_kind(self) -> QdrantIndex:
        check_parameters_fit_kind(self, self.kind, _APPLIES)
        return self


class QdrantParams(VectorDBParams):
    """Parameters of ``adapter: qdrant`` (see the module docstring)."""

    location: Literal[":memory:"] | None = Field(None, description='":memory:": an in-process store, gone after the run')
    path: Folder | None = Field(None, description="local mode: a folder (managed default: <cache_dir>/qdrant)")
    url: str | None = Field(None, min_length=1, description="a Qdrant server, e.g. http://localhost:6333")
    api_key_env: str | None = Field(
        None, min_length=1, description="url: the environment variable holding the server's API key (never the key itself: "
        "params are copied into the results files)"
    )
    timeout: int = Field(10, ge=1, le=3600, description="url: seconds a request may take")
    vector_name: str | None = Field(None, min_length=1, description="read_only: the named vector (null: the unnamed one)")
    index: QdrantIndex = Field(  # type: ignore[assignment]  # Qdrant's own kinds replace dense's FAISS ones
        default_factory=lambda: QdrantIndex.model_validate({}), description="{kind: exact} | {kind: hnsw, m, ef_construct, ef_search, attribution_sample, seed}"
    )

    @model_validator(mode="after")
    def _one_place(self) -> QdrantParams:
        given = [name for name in ("location", "path", "url") if getattr(self, name) is not None]
        if len(given) > 1:
            raise ValueError(f"{' and '.join(given)} name two places; keep one of location, path, url")
        if self.mode == "read_only" and not given:
            raise ValueError("mode read_only queries an existing collection: set url (a server) or path (a local folder)")
        if self.url is None:
            for name in ("api_key_env", "timeout"):
                if name in self.model_fields_set:
                    raise ValueError(f"{name} applies to url (a server); remove {name} or set url")
        if self.url is not None and urlsplit(self.url).scheme not in ("http", "https"):
            raise ValueError(f"url {self.url!r} must start with http:// or https:// (e.g. http://localhost:6333)")
        if self.mode == "managed" and self.vector_name is not None:
            raise ValueError("vector_name applies to mode read_only; a managed collection has one unnamed vector: remove it")
        return self


class QdrantRetriever(VectorDBRetriever):
    """Dense retrieval whose vectors Qdrant searches (see the module docstring)."""

    Params = QdrantParams  # type: ignore[assignment]
    PATH_PARAMS = ("cache_dir", "id_map", "path")  # type: ignore[assignment]
    ADAPTER = ADAPTER
    SEARCH_TIME_INDEX_FIELDS = ("ef_search",)

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        settings: QdrantParams = self.settings
        self.url = settings.url
        self.api_key_env = settings.api_key_env
        self.timeout = settings.timeout
        self.memory = settings.location == ":memory:"
        self.path: Path | None = None
        if self.url is None and not self.memory:
            self.path = Path(settings.path).expanduser() if settings.path is not None else self.cache_dir / "qdrant"
        self.vector_name = settings.vector_name
        self.client: Any = None
        self.server_version: str | None = None
        self._distance: str | None = None  # read_only: the collection's distance, which decides the score's sign
        self._search_params: Any = None

    # ------------------------------------------------------------------ connection

    def location(self) -> str:
        """The server's URL without credentials, the local folder, or ``:memory:``."""
        if self.url is not None:
            parts = urlsplit(self.url)
            host = parts.hostname or ""
            netloc = f"{host}:{parts.port}" if parts.port else host
            return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
        return ":memory:" if self.memory else str(self.path)

    def connect(self) -> None:
        """Open the client (once): check a server answers, or that a read-only folder is a Qdrant storage."""
        if self.client is not None:
            return
        from qdrant_client import QdrantClient

        if self.url is not None:
            api_key = None
            if self.api_key_env is not None:
                api_key = os.environ.get(self.api_key_env)
                if not api_key:
                    raise RetrieverError(
                        f"{ADAPTER}: params.api_key_env names {self.api_key_env!r}, which is not set in the environment; "
                        f"export {self.api_key_env}=<the server's API key>, or remove params.api_key_env"
                    )
            client = None
            try:
                client = QdrantClient(url=self.url, api_key=api_key, timeout=self.timeout, check_compatibility=False)
                self.server_version = str(client.info().version)
            except Exception as error:  # refused, timed out, not Qdrant (garbage): said on one line
                if client is not None:
                    client.close()
                raise RetrieverError(
                    f"{ADAPTER}: params.url {self.location()!r} does not answer as a Qdrant server within "
                    f"{self.timeout} s ({error_line(error)}); check the URL and that the server runs, or raise params.timeout"
                ) from None
            self.client = client
            return
        if self.memory:
            self.client = QdrantClient(location=":memory:")
            return
        assert self.path is not None
        self.check_local_folder(self.path, "Qdrant local storage", "meta.json", "QdrantClient(path=...)")
        try:
            self.client = QdrantClient(path=str(self.path))
        except RuntimeError as error:  # the folder's lock: another client (run, process) has it open
            raise RetrieverError(
                f"{ADAPTER}: params.path {str(self.path)!r} is open in another Qdrant client ({error_line(error)}); "
                "finish that run or process first, or use a Qdrant server (params.url) for concurrent access"
            ) from None
        except Exception as error:
            raise RetrieverError(
                f"{ADAPTER}: params.path {str(self.path)!r} cannot be opened as a Qdrant local storage "
                f"({error_line(error)}); give a folder Qdrant's local mode wrote, or an empty one"
            ) from None

    def close(self) -> None:
        """Close the client (a local folder's lock is released); safe to call twice."""
        client, self.client = self.client, None
        if client is not None:
            client.close()

    def _call(self, what: str, call: Any, *args: Any, **kwargs: Any) -> Any:
        """A client call whose failure (timeout, a server's error, garbage) becomes one line naming what it did."""
        try:
            return call(*args, **kwargs)
        except RetrieverError:
            raise
        except Exception as error:
            raise RetrieverError(
                f"{ADAPTER}: {what} at {self.location()!r} failed ({error_line(error)}); check the database "
                "(params.url / params.path) and params.collection"
            ) from None

    # ------------------------------------------------------------------ collections

    def _info(self, name: str) -> Any:
        if not self._call("listing collections", self.client.collection_exists, name):
            return None
        return self._call(f"reading collection {name!r}", self.client.get_collection, name)

    def collection_shape(self, name: str) -> tuple[int, int] | None:
        """``(dimension, points)`` of the collection (of ``vector_name`` in read-only mode); None when absent."""
        info = self._info(name)
        if info is None:
            return None
        params = self._vector_params(name, info.config.params.vectors)
        self._distance = str(getattr(params.distance, "value", params.distance))
        return int(params.size), int(info.points_count or 0)

    def _vector_params(self, name: str, vectors: Any) -> Any:
        """The collection's vector parameters for ``vector_name``; one line when the name does not fit."""
        named = isinstance(vectors, dict)
        if not named and self.vector_name is not None:
            raise RetrieverError(
                f"{ADAPTER}: collection {name!r} has one unnamed vector, not {self.vector_name!r}; remove params.vector_name"
            )
        if named and self.vector_name not in vectors:
            choices = ", ".join(sorted(vectors)) or "none"
            wanted = "names no vector" if self.vector_name is None else f"names {self.vector_name!r}"
            raise RetrieverError(
                f"{ADAPTER}: params.vector_name {wanted}, and collection {name!r} holds the named vectors {choices}; "
                "set params.vector_name to one of them"
            )
        return vectors[self.vector_name] if named else vectors

    def stored_fingerprint(self, name: str) -> str | None:
        """The fingerprint in the collection's metadata; None for a collection rag_eval did not finish."""
        info = self._info(name)
        metadata = getattr(info.config, "metadata", None) if info is not None else None
        value = metadata.get(FINGERPRINT_KEY) if isinstance(metadata, dict) else None
        return value if isinstance(value, str) else None

    def create(self, name: str, dimension: int, fingerprint: str, ids: Sequence[str], vectors: np.ndarray,
               texts: Sequence[str]) -> None:
        """Create ``name`` (Dot distance), upsert the points in ``ingest_batch`` batches, then write the fingerprint."""
        from qdrant_client import models

        spec = self.db_index
        graph = models.HnswConfigDiff(m=spec.m, ef_construct=spec.ef_construct) if spec.kind == "hnsw" else (
            models.HnswConfigDiff(m=0)  # exact: no graph to build, every query scans
        )
        vectors_config = models.VectorParams(size=dimension, distance=models.Distance.DOT, hnsw_config=graph)
        self._call(f"creating collection {name!r}", self.client.create_collection, name, vectors_config=vectors_config)
        batch = self.settings.ingest_batch
        with self._bulk_local(name):
            for start in range(0, len(ids), batch):
                stop = min(start + batch, len(ids))
                points = models.Batch(
                    ids=list(range(start, stop)),
                    vectors=vectors[start:stop].tolist(),  # float32 -> float64 -> float32: the same numbers
                    payloads=[{PASSAGE_FIELD: ids[row], TEXT_FIELD: texts[row]} for row in range(start, stop)],
                )
                self._call(f"writing points {start}-{stop} to {name!r}", self.client.upsert, name, points=points, wait=True)
        if self.url is not None and spec.kind == "hnsw":
            self._wait_for_index(name)
        marker = {FINGERPRINT_KEY: fingerprint, VERSION_KEY: MANAGED_VERSION}
        self._call(f"marking collection {name!r}", self.client.update_collection, name, metadata=marker)
        if self.stored_fingerprint(name) != fingerprint:
            raise RetrieverError(
                f"{ADAPTER}: the server at {self.location()!r} does not keep collection metadata, where rag_eval records "
                "what a managed collection holds; upgrade the server, or use mode read_only with your own collection"
            )

    @contextmanager
    def _bulk_local(self, name: str) -> Iterator[None]:
        """Local folder: the collection's SQLite file unsynced while it is filled, then synced once.

        qdrant-client's local mode commits each point on its own, each commit an fsync: 45 points/s on
        this project's test machine (1,400 Cranfield passages took 13 s). Without the per-commit sync it
        writes about 1,800 points/s; the file is synced once at the end, before the fingerprint is written,
        so a collection marked as complete is on disk. Reached through the client's internals, checked
        step by step: another client version, or a server, is filled the ordinary way.
        """
        collections = getattr(getattr(self.client, "_client", None), "collections", None)
        persistence = getattr(collections.get(name), "storage", None) if isinstance(collections, dict) else None
        storage = getattr(persistence, "storage", None)  # the sqlite3 connection of the collection's file
        database = getattr(persistence, "location", None)  # that file's path
        if self.path is None or not isinstance(storage, sqlite3.Connection) or database is None:
            yield
            return
        storage.execute("PRAGMA synchronous=OFF")
        try:
            yield
        finally:
            storage.execute("PRAGMA synchronous=FULL")
            handle = os.open(database, os.O_RDONLY)
            try:
                os.fsync(handle)
            finally:
                os.close(handle)

    def _wait_for_index(self, name: str) -> None:
        """A server builds its graph after the upserts: wait until it is green, so latency measures the graph."""
        from qdrant_client import models

        deadline = time.monotonic() + INDEX_WAIT_S
        while time.monotonic() < deadline:
            info = self._call(f"reading collection {name!r}", self.client.get_collection, name)
            if info.status == models.CollectionStatus.GREEN:
                return
            time.sleep(0.5)

    def drop(self, name: str) -> None:
        """Delete a collection rag_eval created."""
        self._call(f"deleting collection {name!r}", self.client.delete_collection, name)

    def managed_collections(self) -> list[str]:
        """rag_eval's collections here: the prefix AND a fingerprint in the metadata (never anyone else's)."""
        listed = self._call("listing collections", self.client.get_collections)
        names = sorted(c.name for c in listed.collections if c.name.startswith(MANAGED_PREFIX))
        return [name for name in names if self.stored_fingerprint(name) is not None]

    # ------------------------------------------------------------------ search

    def index(self, corpus: Corpus) -> None:
        """The base's index, then (read-only) the payload checked to hold the fields ``map`` and ``text_field`` name."""
        super().index(corpus)
        self._search_params = self._make_search_params()
        if self.mode == "read_only":
            self._check_payload_fields()

    def _make_search_params(self) -> Any:
        """Server only (the local engine always scans, and warns on search params): exact, or HNSW's ef."""
        from qdrant_client import models

        if self.url is None:
            return None
        if self.db_index.kind == "exact":
            return models.SearchParams(exact=True)
        return models.SearchParams(hnsw_ef=self.db_index.ef_search, exact=False)

    def _check_payload_fields(self) -> None:
        """A field named in ``map`` (or an explicit ``text_field``) that no sampled point holds: one line, not 0 mapped."""
        assert self.collection_name is not None
        points, _ = self._call(
            f"reading collection {self.collection_name!r}", self.client.scroll, self.collection_name,
            limit=FIELD_SAMPLE, with_payload=True, with_vectors=False,
        )
        spec = self.settings.map
        named = {f"map.{key}": getattr(spec, key) for key in ("doc_id", "start", "end", "passage_id")} if spec else {}
        if "text_field" in self.settings.model_fields_set:
            named["text_field"] = self.settings.text_field
        records = [(point.id, point.payload or {}) for point in points]
        check_named_fields(ADAPTER, named, records, self.collection_name, "payload field")

    def query(self, vector: np.ndarray, k: int) -> list[Hit]:
        """One ``query_points`` call: the top ``k`` points, best first, as hits."""
        assert self.collection_name is not None
        managed = self.mode == "managed"
        response = self._call(
            f"querying collection {self.collection_name!r}", self.client.query_points, self.collection_name,
            query=vector.tolist(), using=self.vector_name, limit=k, search_params=self._search_params,
            with_payload=[PASSAGE_FIELD] if managed else True, with_vectors=False,
        )
        if managed:
            return [Hit(id=str((p.payload or {}).get(PASSAGE_FIELD)), score=float(p.score)) for p in response.points]
        sign = -1.0 if self._distance in ("Euclid", "Manhattan") else 1.0  # distances: smaller is better
        text_field = self.settings.text_field
        hits = []
        for point in response.points:
            payload = point.payload or {}
            text = payload.get(text_field) if text_field else None
            hits.append(Hit(id=str(point.id), score=sign * float(point.score), text=text if isinstance(text, str) else None,
                            metadata=payload))
        return hits

    # ------------------------------------------------------------------ describe

    def database_info(self) -> dict[str, Any]:
        """Versions, where, the collection's points and vector parameters, the index asked and how it searched."""
        try:
            client_version = version("qdrant-client")
        except PackageNotFoundError:
            client_version = None
        deployment = "server" if self.url is not None else "in memory" if self.memory else "local folder"
        info: dict[str, Any] = {
            "engine": "qdrant",
            "deployment": deployment,
            "location": self.location(),
            "client_version": client_version,
            "server_version": self.server_version,
            "index": self.db_index.described(),
        }
        if self.url is None:
            info["search"] = "exact: qdrant-client's local engine scans every vector (it has no HNSW)"
        else:
            info["search"] = "exact (SearchParams exact=True)" if self.db_index.kind == "exact" else "hnsw"
        if self.client is not None and self.collection_name is not None:
            collection = self._info(self.collection_name)
            if collection is not None:
                params = self._vector_params(self.collection_name, collection.config.params.vectors)
                info.update(
                    points=int(collection.points_count or 0),
                    dimension=int(params.size),
                    distance=str(getattr(params.distance, "value", params.distance)),
                    vector_name=self.vector_name,
                )
                if self.url is not None:
                    info["indexed_vectors"] = collection.indexed_vectors_count
                    info["status"] = str(getattr(collection.status, "value", collection.status))
        return info
