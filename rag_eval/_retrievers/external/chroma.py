"""``adapter: chroma``: the dense model's vectors searched by Chroma (a local folder, or a Chroma server).

Where (one; managed mode defaults to the folder ``<cache_dir>/chroma``)::

    path: chroma_data            # chromadb.PersistentClient(path=...), in this process
    host: localhost              # chromadb.HttpClient: a Chroma server (port, ssl)
    port: 8000

Chroma always searches its HNSW graph: there is no exact mode, so ``index.kind`` is ``hnsw`` and
the search counts as approximate. In managed mode the base then searches a sample of the queries
exactly over the same vectors (``index.attribution_sample``), and the report says what the graph
cost. The defaults (``ef_construction`` and ``ef_search`` 400, ``m`` 32) are set high so that the graph
finds the exact top k on the collections rag_eval evaluates; raise them for very large corpora.

Managed collections (``rag_eval_<fingerprint>``) use the ``ip`` space: Chroma's distance is then
``1 - dot``, and a hit's score is ``1 - distance``: the dense dot product (cosine on unit vectors),
up to float32 rounding. A point's Chroma id is the passage id, its document the passage text, its
metadata ``{rag_eval_id}``; rag_eval's fingerprint is the collection metadata, written after every
point (a half-filled collection has none, and is filled again). The client's telemetry is off, and
no embedding function is ever given to Chroma (its default would download a model): rag_eval
always hands it vectors.

Read-only: the team's ``collection`` is queried and never written (no add, modify or delete is
called); a hit's text is the stored document (``text_field: "@document"``, or a metadata key), its
metadata what ``map:`` reads, its id the Chroma id. The score follows the collection's space: ``ip``
and ``cosine`` give ``1 - distance``; ``l2`` (Chroma's default, the squared distance) gives
``1 - distance / 2``, the dot product for unit vectors and in any case the same order.
"""

from __future__ import annotations

import http.client
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Literal

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
from rag_eval._retrievers.params import AdapterParams, Folder

ADAPTER = "chroma"
#: Collection metadata keys rag_eval writes on its own collections (after every point).
FINGERPRINT_KEY = "rag_eval_fingerprint"
VERSION_KEY = "rag_eval_version"
#: ``text_field`` value naming Chroma's stored document (the default) rather than a metadata key.
DOCUMENT = "@document"
#: The file a Chroma folder holds: a read-only ``path`` without it is refused (the client would create one).
CHROMA_FILE = "chroma.sqlite3"


class ChromaIndex(AdapterParams):
    """``index:`` of ``adapter: chroma``: Chroma's HNSW graph (the only way it searches), with its parameters."""

    kind: Literal["hnsw"] = Field("hnsw", description="hnsw: Chroma has no exact search")
    space: Literal["ip", "cosine"] = Field("ip", description="managed: ip (1 - dot) or cosine (1 - cosine)")
    ef_construction: int = Field(400, ge=1, description="candidate list while building (high: near-exact graph)")
    ef_search: int = Field(400, ge=1, description="candidate list while searching (at least top_k is used)")
    m: int = Field(32, ge=2, le=512, description="edges per node (Chroma's max_neighbors)")
    attribution_sample: int = Field(1000, ge=0, description="queries also searched exactly, to measure the graph (0: none)")
    seed: int = Field(0, ge=0, description="seed of that sample of queries")


class ChromaParams(VectorDBParams):
    """Parameters of ``adapter: chroma`` (see the module docstring)."""

    path: Folder | None = Field(None, description="a Chroma folder (PersistentClient); managed default <cache_dir>/chroma")
    host: str | None = Field(None, min_length=1, description="a Chroma server's host (HttpClient)")
    port: int = Field(8000, ge=1, le=65535, description="host: the server's port")
    ssl: bool = Field(False, description="host: https")
    timeout: int = Field(10, ge=1, le=3600, description="host: seconds the server may take to answer a request")
    tenant: str = Field("default_tenant", min_length=1, description="Chroma tenant")
    database: str = Field("default_database", min_length=1, description="Chroma database")
    text_field: str | None = Field(  # Chroma stores the chunk's text as its document
        DOCUMENT, description='read_only: "@document" (the stored document), a metadata key, or null'
    )
    index: ChromaIndex = Field(  # type: ignore[assignment]  # Chroma's HNSW replaces dense's FAISS kinds
        default_factory=lambda: ChromaIndex.model_validate({}),
        description="{kind: hnsw, space: ip|cosine, ef_construction, ef_search, m, attribution_sample}",
    )

    @model_validator(mode="after")
    def _one_place(self) -> ChromaParams:
        if self.path is not None and self.host is not None:
            raise ValueError("path and host name two places; keep path (a folder) or host (a server)")
        if self.mode == "read_only" and self.path is None and self.host is None:
            raise ValueError("mode read_only queries an existing collection: set path (a Chroma folder) or host (a server)")
        if self.host is None:
            for name in ("port", "ssl", "timeout"):
                if name in self.model_fields_set:
                    raise ValueError(f"{name} applies to host (a server); remove {name} or set host")
        if self.mode == "read_only" and "index" in self.model_fields_set:
            raise ValueError(
                "index applies to mode managed; a read-only collection keeps its own HNSW settings: remove index"
            )
        return self


class ChromaRetriever(VectorDBRetriever):
    """Dense retrieval whose vectors Chroma searches (see the module docstring)."""

    Params = ChromaParams  # type: ignore[assignment]
    PATH_PARAMS = ("cache_dir", "id_map", "path")  # type: ignore[assignment]
    ADAPTER = ADAPTER

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        settings: ChromaParams = self.settings
        self.host = settings.host
        self.path: Path | None = None
        if self.host is None:
            self.path = Path(settings.path).expanduser() if settings.path is not None else self.cache_dir / "chroma"
        self.client: Any = None
        self.server_version: str | None = None
        self._collection: Any = None  # the collection queried, fetched once
        self._space: str | None = None
        self._facts: dict[str, Any] = {}  # what database_info reports, kept while the client is open

    # ------------------------------------------------------------------ connection

    def location(self) -> str:
        """The server's URL or the folder."""
        if self.host is not None:
            return f"{'https' if self.settings.ssl else 'http'}://{self.host}:{self.settings.port}"
        return str(self.path)

    def connect(self) -> None:
        """Open the client once (telemetry off); check a read-only folder is a Chroma folder before opening it."""
        if self.client is not None:
            return
        import chromadb
        from chromadb.config import Settings

        settings: ChromaParams = self.settings
        chroma_settings = Settings(anonymized_telemetry=False)
        if self.host is not None:
            self._probe()
            try:
                self.client = chromadb.HttpClient(
                    host=self.host, port=settings.port, ssl=settings.ssl, settings=chroma_settings,
                    tenant=settings.tenant, database=settings.database,
                )
                _limit_requests(self.client, settings.timeout)
                self.server_version = str(self.client.get_version())
            except Exception as error:  # refused, not Chroma, an unknown tenant: one line
                self.client = None
                raise RetrieverError(
                    f"{ADAPTER}: no Chroma server answers at {self.location()!r} ({error_line(error)}); check "
                    "params.host and params.port, and that the server runs"
                ) from None
            return
        assert self.path is not None
        self.check_local_folder(self.path, "Chroma folder", CHROMA_FILE, "chromadb.PersistentClient(path=...)")
        try:
            self.client = chromadb.PersistentClient(
                path=str(self.path), settings=chroma_settings, tenant=settings.tenant, database=settings.database
            )
        except Exception as error:
            raise RetrieverError(
                f"{ADAPTER}: params.path {str(self.path)!r} cannot be opened as a Chroma folder ({error_line(error)}); "
                "give a folder chromadb.PersistentClient wrote, or (managed) an empty one"
            ) from None

    def _probe(self) -> None:
        """Ask the server's heartbeat within ``timeout`` first: chromadb's HttpClient waits forever for a silent server."""
        url = f"{self.location()}/api/v2/heartbeat"
        timeout = self.settings.timeout
        try:
            with urllib.request.urlopen(urllib.request.Request(url, method="GET"), timeout=timeout) as response:
                response.read(1024)
        except urllib.error.HTTPError:
            return  # it answers HTTP: the client says whether it is Chroma
        except (OSError, http.client.HTTPException) as error:
            cause = error.reason if isinstance(error, urllib.error.URLError) else error
            what = (f"no answer within {timeout} s, params.timeout" if isinstance(cause, TimeoutError)
                    else f"{type(cause).__name__}: {cause}")
            raise RetrieverError(
                f"{ADAPTER}: no Chroma server answers at {self.location()!r} ({what}); check params.host and "
                "params.port, and that the server runs"
            ) from None

    def close(self) -> None:
        """Close the client (a folder's database is released once no other client of this process holds it)."""
        client, self.client, self._collection = self.client, None, None
        if client is not None and hasattr(client, "close"):
            try:
                client.close()
            except Exception:  # closing twice, or a server gone: nothing of the run depends on it
                pass

    def _call(self, what: str, call: Any, *args: Any, **kwargs: Any) -> Any:
        """A client call whose failure (the server's error, a dimension refused) becomes one line naming what it did."""
        try:
            return call(*args, **kwargs)
        except RetrieverError:
            raise
        except Exception as error:
            raise RetrieverError(
                f"{ADAPTER}: {what} at {self.location()!r} failed ({error_line(error)}); check the database "
                "(params.path / params.host) and params.collection"
            ) from None

    # ------------------------------------------------------------------ collections

    def _get(self, name: str) -> Any:
        """The collection ``name``, or None when there is none (never created here: no embedding function given)."""
        from chromadb.errors import NotFoundError

        try:
            return self.client.get_collection(name, embedding_function=None)
        except NotFoundError:
            return None
        except ValueError as error:  # older clients said "does not exist" with a ValueError
            if "does not exist" in str(error):
                return None
            raise RetrieverError(f"{ADAPTER}: reading collection {name!r} failed ({error_line(error)})") from None
        except Exception as error:
            raise RetrieverError(
                f"{ADAPTER}: reading collection {name!r} at {self.location()!r} failed ({error_line(error)}); check "
                "params.collection"
            ) from None

    def collection_shape(self, name: str) -> tuple[int, int] | None:
        """``(dimension, points)``; the dimension read from one stored vector (0 when the collection is empty)."""
        collection = self._get(name)
        if collection is None:
            return None
        points = int(self._call(f"counting collection {name!r}", collection.count))
        dimension = 0
        if points:
            first = self._call(f"reading collection {name!r}", collection.get, limit=1, include=["embeddings"])
            embeddings = first.get("embeddings")
            if embeddings is not None and len(embeddings):
                dimension = len(embeddings[0])
        if name == self.collection_name:
            self._collection = collection
            self._space = _space_of(collection)
            self._facts.update(points=points, dimension=dimension or None, space=self._space,
                               hnsw=_hnsw_of(collection))
        return dimension, points

    def stored_fingerprint(self, name: str) -> str | None:
        """The fingerprint in the collection's metadata; None for a collection rag_eval did not finish."""
        collection = self._get(name)
        metadata = collection.metadata if collection is not None else None
        value = metadata.get(FINGERPRINT_KEY) if isinstance(metadata, Mapping) else None
        return value if isinstance(value, str) else None

    def create(self, name: str, dimension: int, fingerprint: str, ids: Sequence[str], vectors: np.ndarray,
               texts: Sequence[str]) -> None:
        """Create ``name`` (HNSW in the index's space), add the points in batches, then write the fingerprint."""
        spec: ChromaIndex = self.db_index
        configuration = {
            "hnsw": {"space": spec.space, "ef_construction": spec.ef_construction, "ef_search": spec.ef_search,
                     "max_neighbors": spec.m}
        }
        collection = self._call(
            f"creating collection {name!r}", self.client.create_collection, name, embedding_function=None,
            configuration=configuration,
        )
        batch = min(self.settings.ingest_batch, int(self._call("asking the batch limit", self.client.get_max_batch_size)))
        for start in range(0, len(ids), batch):
            stop = min(start + batch, len(ids))
            self._call(
                f"adding points {start}-{stop} to {name!r}", collection.add, ids=list(ids[start:stop]),
                embeddings=vectors[start:stop], documents=list(texts[start:stop]),
                metadatas=[{PASSAGE_FIELD: ids[row]} for row in range(start, stop)],
            )
        marker = {FINGERPRINT_KEY: fingerprint, VERSION_KEY: MANAGED_VERSION}
        self._call(f"marking collection {name!r}", collection.modify, metadata=marker)
        self._collection = None  # fetched again, with what it now holds
        if self.stored_fingerprint(name) != fingerprint:
            raise RetrieverError(
                f"{ADAPTER}: the database at {self.location()!r} did not keep collection {name!r}'s metadata, where "
                "rag_eval records what a managed collection holds; upgrade Chroma, or use mode read_only"
            )

    def drop(self, name: str) -> None:
        """Delete a collection rag_eval created."""
        self._call(f"deleting collection {name!r}", self.client.delete_collection, name)
        if name == self.collection_name:
            self._collection = None

    def managed_collections(self) -> list[str]:
        """rag_eval's collections here: the prefix AND a fingerprint in the metadata (never anyone else's)."""
        listed = self._call("listing collections", self.client.list_collections)
        names = sorted(str(getattr(item, "name", item)) for item in listed)  # older clients listed names
        return [name for name in names if name.startswith(MANAGED_PREFIX) and self.stored_fingerprint(name) is not None]

    # ------------------------------------------------------------------ search

    def index(self, corpus: Corpus) -> None:
        """The base's index; then the collection fetched once, and (read-only) the fields ``map`` names checked."""
        super().index(corpus)
        if self.collection_name is None or (self.mode == "managed" and not self._doc_ids):
            return
        shape = self.collection_shape(self.collection_name)  # the collection, its space and facts, kept for search
        if self.mode == "read_only":
            if shape is not None and shape[1] == 0:
                raise RetrieverError(
                    f"{ADAPTER}: collection {self.collection_name!r} holds no records, so every query would find "
                    "nothing; set params.collection to the collection the team filled"
                )
            self._check_metadata_fields()

    def _check_metadata_fields(self) -> None:
        """A key ``map`` (or an explicit ``text_field``) names that no sampled record holds: one line, not 0 mapped."""
        name = self.collection_name
        assert name is not None
        sample = self._call(f"reading collection {name!r}", self._collection.get, limit=FIELD_SAMPLE,
                            include=["metadatas"])
        ids = sample.get("ids") or []
        metadatas = sample.get("metadatas") or [None] * len(ids)
        spec = self.settings.map
        named = {f"map.{key}": getattr(spec, key) for key in ("doc_id", "start", "end", "passage_id")} if spec else {}
        if "text_field" in self.settings.model_fields_set and self.settings.text_field != DOCUMENT:
            named["text_field"] = self.settings.text_field
        records = [(identifier, metadata or {}) for identifier, metadata in zip(ids, metadatas)]
        check_named_fields(ADAPTER, named, records, name, "metadata key")

    def query(self, vector: np.ndarray, k: int) -> list[Hit]:
        """One ``collection.query``: the top ``k`` records, best first, distances turned into scores."""
        name = self.collection_name
        if self._collection is None:
            assert name is not None
            self.collection_shape(name)
        managed = self.mode == "managed"
        text_field = self.settings.text_field
        include = ["distances"] if managed else ["distances", "metadatas", "documents"]
        result = self._call(
            f"querying collection {name!r}", self._collection.query, query_embeddings=[vector], n_results=k,
            include=include,
        )
        ids = result["ids"][0]
        distances = result["distances"][0]
        if managed:
            return [Hit(id=str(i), score=_score(self._space, d)) for i, d in zip(ids, distances)]
        metadatas = (result.get("metadatas") or [None])[0] or [None] * len(ids)
        documents = (result.get("documents") or [None])[0] or [None] * len(ids)
        hits = []
        for identifier, distance, metadata, document in zip(ids, distances, metadatas, documents):
            metadata = metadata or {}
            text = document if text_field == DOCUMENT else metadata.get(text_field) if text_field else None
            hits.append(Hit(id=str(identifier), score=_score(self._space, distance),
                            text=text if isinstance(text, str) else None, metadata=metadata))
        return hits

    def approximate(self) -> bool:
        """Always: Chroma searches its HNSW graph, and has no exact mode."""
        return True

    # ------------------------------------------------------------------ describe

    def database_info(self) -> dict[str, Any]:
        """Versions, where, the collection's points, dimension, space and HNSW settings, and how scores are made."""
        try:
            client_version: str | None = version("chromadb")
        except PackageNotFoundError:
            client_version = None
        info: dict[str, Any] = {
            "engine": "chroma",
            "deployment": "server" if self.host is not None else "local folder",
            "location": self.location(),
            "client_version": client_version,
            "server_version": self.server_version,
            "search": "hnsw (Chroma has no exact search)",
            **self._facts,
        }
        if self.mode == "managed":
            info["index"] = self.db_index.model_dump()
        if self._space is not None:
            info["score"] = "1 - distance / 2" if self._space == "l2" else "1 - distance"
        return info


def _limit_requests(client: Any, timeout: float) -> None:
    """Give the HTTP client's requests a timeout (chromadb 1.x creates its httpx session with none); best effort."""
    server = getattr(client, "_server", None)
    session = getattr(server, "_session", None)
    if session is not None and hasattr(session, "timeout"):
        try:
            session.timeout = type(session.timeout)(timeout)  # an httpx.Timeout, of the client's own httpx
        except Exception:  # another client layout: the heartbeat probe still bounded the connection
            pass


def _configuration(collection: Any) -> Any:
    """The collection's configuration as stored (``configuration_json``: reading ``configuration`` warns in Chroma 1.x)."""
    stored = getattr(collection, "configuration_json", None)
    return stored if isinstance(stored, Mapping) else getattr(collection, "configuration", None)


def _space_of(collection: Any) -> str:
    """The collection's distance space: its configuration (Chroma 1.x), else its ``hnsw:space`` metadata, else l2."""
    configuration = _configuration(collection)
    if isinstance(configuration, Mapping):
        for key in ("hnsw", "spann"):
            part = configuration.get(key)
            if isinstance(part, Mapping) and part.get("space"):
                return str(part["space"])
    metadata = collection.metadata if isinstance(collection.metadata, Mapping) else {}
    return str(metadata.get("hnsw:space", "l2"))


def _hnsw_of(collection: Any) -> dict[str, Any] | None:
    configuration = _configuration(collection)
    part = configuration.get("hnsw") if isinstance(configuration, Mapping) else None
    if not isinstance(part, Mapping):
        return None
    return {key: part[key] for key in ("space", "ef_construction", "ef_search", "max_neighbors") if key in part}


def _score(space: str | None, distance: float) -> float:
    """Higher is better: ``1 - d`` for ip (``d = 1 - dot``) and cosine, ``1 - d/2`` for squared l2 (the dot of unit vectors)."""
    value = float(distance)
    return 1.0 - value / 2.0 if space == "l2" else 1.0 - value
