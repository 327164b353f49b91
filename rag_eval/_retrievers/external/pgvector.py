"""``adapter: pgvector``: PostgreSQL with the pgvector extension, a team's server or one rag_eval starts itself.

YAML parameters (besides ``dense``'s model parameters and the vector-database ones, see
:mod:`rag_eval._retrievers.external.vector_db`)::

    adapter: pgvector
    params:
      dsn: null                 # postgresql://user:${PGPASS}@host:5432/db (${ENV} read when connecting);
                                #   null: an embedded server (pgserver)
                                #   in <cache_dir>/pgvector, started here and stopped by close()
      schema: public            # where the tables are (managed: created if absent)
      connect_timeout: 10       # seconds to wait for the server
      index: {kind: exact}      # exact | hnsw {m, ef_construction, ef_search} | ivfflat {lists, probes}
      # mode read_only (the team's table, never written):
      collection: chunks        # the table
      vector_column: embedding  # a vector(d) column
      id_column: id
      text_field: text          # a text column (null: none)
      metadata_column: metadata # a jsonb column; map's fields are read there and from plain columns
      map: {doc_id: doc_id, start: start, end: end}

Managed mode stores each passage in ``rag_eval_<fingerprint>(rag_eval_id text primary key, text
text, embedding vector(d))`` through binary COPY, builds the index (HNSW or IVFFlat, with
``vector_cosine_ops`` for similarity cosine and ``vector_ip_ops`` for dot), and records the
fingerprint last, in the same transaction, in ``rag_eval_collections``. Exact search orders every
row by ``embedding <#> q`` (the negative inner product) with index scans off: a sequential scan,
whose scores (``-distance``) are the dense retriever's dot products, ties broken by passage id as
rag_eval breaks them. Queries run as prepared statements on one connection.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np

from rag_eval._core.errors import RetrieverError
from rag_eval._retrievers.external.embedded_postgres import INSTALL_HINT, EmbeddedPostgres
from rag_eval._retrievers.external.hits import Hit
from rag_eval._retrievers.external.pgvector_params import (
    ADAPTER,
    DEFAULT_EF_SEARCH,
    PgvectorIndex,
    PgvectorParams,
    expand_dsn,
    one_line_error,
    redact,
)
from rag_eval._retrievers.external.pgvector_tables import read_team_table
from rag_eval._retrievers.external.vector_db import (
    MANAGED_PREFIX,
    PASSAGE_FIELD,
    VectorDBRetriever,
)

#: The table listing the collections rag_eval created, with their fingerprints (written last).
MARKER_TABLE = "rag_eval_collections"
#: Where a managed collection's vectors are, and which text it stores.
MANAGED_VECTOR, MANAGED_TEXT = "embedding", "text"

# Distance operator of each operator class, and how its distance becomes a similarity (higher = better).
_OPERATORS: dict[str, tuple[str, Callable[[float], float]]] = {
    "vector_ip_ops": ("<#>", lambda d: -d),  # negative inner product
    "vector_cosine_ops": ("<=>", lambda d: 1.0 - d),  # 1 - cosine
    "vector_l2_ops": ("<->", lambda d: 1.0 - d * d / 2.0),  # Euclidean: the cosine of unit vectors
    "vector_l1_ops": ("<+>", lambda d: -d),
}


class PgvectorRetriever(VectorDBRetriever):
    """The dense model's vectors searched by PostgreSQL + pgvector (see the module docstring)."""

    Params = PgvectorParams  # type: ignore[assignment]  # VectorDBParams with the connection and pgvector's index
    ADAPTER = ADAPTER
    SEARCH_TIME_INDEX_FIELDS = ("ef_search", "probes")

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        settings: PgvectorParams = self.settings
        self.dsn = settings.dsn
        self.schema = settings.schema
        self._conn: Any = None
        self._target: str | None = None  # the DSN as connected (${ENV} read): masked in every message
        self._cursor: Any = None
        self._embedded: EmbeddedPostgres | None = None
        self._sql: Any = None  # the prepared query
        self._score: Callable[[float], float] = _OPERATORS["vector_ip_ops"][1]
        self._operator = "<#>"
        self._extra_columns: list[str] = []  # read_only: plain columns map names, returned as metadata
        self._has_text = self._has_metadata = False
        self._table_info: dict[str, Any] | None = None  # read_only: the table's columns, dimension, points, index
        self._ef_search: int | None = None  # hnsw: the value this session has
        self._opclass = "vector_ip_ops"
        self._searched_index: dict[str, Any] | None = None  # read_only: the table's index the query uses
        self._last_vector: np.ndarray | None = None
        self._last_k = 10
        self._timings: dict[str, float] = {}

    # ------------------------------------------------------------------ connection

    def connect(self) -> None:
        """Open one connection (starting the embedded server when ``dsn`` is null); read_only sessions cannot write."""
        if self._conn is not None and not self._conn.closed:
            return
        psycopg, register_vector = _client()

        if self.dsn is None:
            self._embedded = EmbeddedPostgres(self.cache_dir / "pgvector")
            target = self._embedded.start()
        else:
            target = self._target = expand_dsn(self.dsn)
        try:
            conn = psycopg.connect(target, autocommit=True, connect_timeout=self.settings.connect_timeout)
        except (psycopg.Error, ValueError) as error:
            self._stop_embedded()
            reason = one_line_error(error, target)
            if self.dsn is None:
                raise RetrieverError(
                    f"{ADAPTER}: cannot connect to the embedded PostgreSQL ({reason}); delete "
                    f"{str(self.cache_dir / 'pgvector')!r} to start afresh, or set params.dsn"
                ) from None
            raise RetrieverError(
                f"{ADAPTER}: params.dsn: cannot connect to {redact(self.dsn)}: {reason}; check host, port and credentials"
            ) from None
        try:
            if self.mode == "read_only":
                # Every transaction of this session is read-only: the server itself refuses a write.
                conn.execute("SET default_transaction_read_only = on")
                if conn.execute("SELECT to_regtype('vector')").fetchone()[0] is None:
                    # No vector type, so no vector column: said by the table check (a missing table first).
                    self._conn, self._cursor = conn, conn.cursor(binary=True)
                    return
            else:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            register_vector(conn)
        except psycopg.Error as error:
            conn.close()
            self._stop_embedded()
            raise RetrieverError(
                f"{ADAPTER}: the vector extension is not available in {self._where()} ({one_line_error(error, self._target)}); "
                "install pgvector on the server and run CREATE EXTENSION vector in this database"
            ) from None
        self._conn = conn
        self._cursor = conn.cursor(binary=True)

    def close(self) -> None:
        """Close the connection and stop the embedded server this retriever started; safe to call twice."""
        conn, self._conn, self._cursor = self._conn, None, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 (closing runs after errors and Ctrl-C: it must not hide them)
                pass
        self._stop_embedded()

    def _stop_embedded(self) -> None:
        if self._embedded is not None:
            self._embedded.stop()

    def _where(self) -> str:
        return "the embedded PostgreSQL" if self.dsn is None else redact(self.dsn)

    def _execute(self, query: Any, params: Sequence[Any] | None = None) -> Any:
        """Run one statement; a database error becomes one line naming where it happened."""
        import psycopg

        try:
            return self._conn.execute(query, params)
        except psycopg.Error as error:
            raise RetrieverError(f"{ADAPTER}: {self._where()}: {one_line_error(error, self._target)}") from None

    def _table(self, name: str) -> Any:
        from psycopg import sql

        return sql.Identifier(self.schema, name)

    # ------------------------------------------------------------------ collections

    def _relation(self, name: str) -> int | None:
        """The oid of the table (or view) ``schema.name``, None when there is none."""
        row = self._execute(
            "SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'f')",
            (self.schema, name),
        ).fetchone()
        return int(row[0]) if row else None

    def collection_shape(self, name: str) -> tuple[int, int] | None:
        """``(dimension, rows)`` of ``schema.name`` (the dimension from the vector column's type), or None."""
        if self.mode == "read_only":
            info = self._read_only_table(name)
            return None if info is None else (info["dimension"], info["points"])
        from psycopg import sql

        oid = self._relation(name)
        if oid is None:
            return None
        row = self._execute(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = %s AND attname = %s AND NOT attisdropped",
            (oid, MANAGED_VECTOR),
        ).fetchone()
        points = self._execute(sql.SQL("SELECT count(*) FROM {}").format(self._table(name))).fetchone()[0]
        return (max(int(row[0]), 0) if row else 0, int(points))

    def stored_fingerprint(self, name: str) -> str | None:
        """The fingerprint of ``name`` in the marker table (None without the table or the row)."""
        if self._relation(MARKER_TABLE) is None:
            return None
        from psycopg import sql

        row = self._execute(
            sql.SQL("SELECT fingerprint FROM {} WHERE name = %s").format(self._table(MARKER_TABLE)), (name,)
        ).fetchone()
        return str(row[0]) if row and row[0] is not None else None

    def create(
        self, name: str, dimension: int, fingerprint: str, ids: Sequence[str], vectors: np.ndarray, texts: Sequence[str]
    ) -> None:
        """One transaction: the table, binary COPY in batches of ``ingest_batch``, the index, then the marker row."""
        import psycopg
        from psycopg import sql

        table = self._table(name)
        batch = self.settings.ingest_batch
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        try:
            with self._conn.transaction():
                self._conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.schema)))
                self._conn.execute(
                    sql.SQL("CREATE TABLE {} ({} text PRIMARY KEY, {} text NOT NULL, {} vector({}) NOT NULL)").format(
                        table,
                        sql.Identifier(PASSAGE_FIELD),
                        sql.Identifier(MANAGED_TEXT),
                        sql.Identifier(MANAGED_VECTOR),
                        sql.Literal(int(dimension)),
                    )
                )
                copy_sql = sql.SQL("COPY {} ({}, {}, {}) FROM STDIN WITH (FORMAT BINARY)").format(
                    table, sql.Identifier(PASSAGE_FIELD), sql.Identifier(MANAGED_TEXT), sql.Identifier(MANAGED_VECTOR)
                )
                started = time.perf_counter()
                cursor = self._conn.cursor()
                for first in range(0, len(ids), batch):
                    with cursor.copy(copy_sql) as copy:
                        copy.set_types(["text", "text", "vector"])
                        for row in range(first, min(first + batch, len(ids))):
                            copy.write_row((ids[row], _storable(texts[row]), vectors[row]))
                self._timings["copy_s"] = time.perf_counter() - started
                started = time.perf_counter()
                index = self.db_index
                if index.kind != "exact":
                    self._conn.execute(self._index_sql(name, index))
                self._timings["index_build_s"] = time.perf_counter() - started
                self._conn.execute(
                    sql.SQL(
                        "CREATE TABLE IF NOT EXISTS {} (name text PRIMARY KEY, fingerprint text, created timestamptz, "
                        "points bigint)"
                    ).format(self._table(MARKER_TABLE))
                )
                self._conn.execute(  # last: a table without its row is never reused
                    sql.SQL(
                        "INSERT INTO {} (name, fingerprint, created, points) VALUES (%s, %s, now(), %s) "
                        "ON CONFLICT (name) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, "
                        "created = EXCLUDED.created, points = EXCLUDED.points"
                    ).format(self._table(MARKER_TABLE)),
                    (name, fingerprint, len(ids)),
                )
        except psycopg.Error as error:
            raise RetrieverError(
                f"{ADAPTER}: filling table {self.schema}.{name} in {self._where()} failed: {one_line_error(error, self._target)}"
            ) from None

    def _index_sql(self, name: str, index: PgvectorIndex) -> Any:
        from psycopg import sql

        options = (
            {"m": index.m, "ef_construction": index.ef_construction} if index.kind == "hnsw" else {"lists": index.lists}
        )
        return sql.SQL("CREATE INDEX {} ON {} USING {} ({} {}) WITH ({})").format(
            sql.Identifier(f"{name}_{index.kind}"),
            self._table(name),
            sql.SQL(index.kind),
            sql.Identifier(MANAGED_VECTOR),
            sql.SQL(self._managed_opclass()),
            sql.SQL(", ").join(
                sql.SQL("{} = {}").format(sql.SQL(key), sql.Literal(value)) for key, value in options.items()
            ),
        )

    def _managed_opclass(self) -> str:
        """The operator class of a managed index (and so its operator): cosine, or inner product for dot."""
        if self.db_index.kind == "exact":
            return "vector_ip_ops"  # no index: the inner product is the dense retriever's own number
        return "vector_cosine_ops" if self.similarity == "cosine" else "vector_ip_ops"

    def drop(self, name: str) -> None:
        """Drop a table rag_eval created, and its marker row."""
        if not name.startswith(MANAGED_PREFIX) or name == MARKER_TABLE:
            raise RetrieverError(f"{ADAPTER}: refusing to drop {name!r}: rag_eval drops only the tables it created")
        from psycopg import sql

        with self._conn.transaction():
            self._execute(sql.SQL("DROP TABLE IF EXISTS {}").format(self._table(name)))
            if self._relation(MARKER_TABLE) is not None:
                self._execute(sql.SQL("DELETE FROM {} WHERE name = %s").format(self._table(MARKER_TABLE)), (name,))

    def managed_collections(self) -> list[str]:
        """Tables of the schema that rag_eval created: a marker row with a fingerprint, the prefix, the table there."""
        if self._relation(MARKER_TABLE) is None:
            return []
        from psycopg import sql

        rows = self._execute(
            sql.SQL("SELECT name FROM {} WHERE fingerprint IS NOT NULL ORDER BY name").format(self._table(MARKER_TABLE))
        ).fetchall()
        return [
            str(row[0])
            for row in rows
            if str(row[0]).startswith(MANAGED_PREFIX)
            and row[0] != MARKER_TABLE
            and self._relation(str(row[0])) is not None
        ]

    def fingerprint(self, corpus: Any) -> str:
        """The base's fingerprint, with the operator class an index is built with (similarity cosine or dot).

        Query-time parameters (ef_search, probes) are not in it (``SEARCH_TIME_INDEX_FIELDS``): one table serves
        them all. The operator class is: a cosine index cannot answer inner-product queries.
        """
        fingerprint = super().fingerprint(corpus)
        if self.db_index.kind == "exact":
            return fingerprint  # no index: the table is the same for both similarities
        return hashlib.sha256(f"{fingerprint}:{self._managed_opclass()}".encode()).hexdigest()

    def location(self) -> str:
        """The embedded server, or the DSN without its password."""
        return self._where()

    # ------------------------------------------------------------------ read_only: the team's table

    def _read_only_table(self, name: str) -> dict[str, Any] | None:
        """Columns, vector dimension, rows and vector indexes of the team's table (read once), checked."""
        if self._table_info is not None:
            return self._table_info
        oid = self._relation(name)
        if oid is None:
            return None
        table = read_team_table(self._execute, self._table(name), oid, self.settings, f"table {self.schema}.{name}")
        self._has_text, self._has_metadata, self._extra_columns = table.has_text, table.has_metadata, table.extra_columns
        self._table_info = {"dimension": table.dimension, "points": table.points, "indexes": table.indexes}
        return self._table_info

    def _read_only_operator(self) -> tuple[str, dict[str, Any] | None]:
        """The operator class searched: the table's index of the kind asked for; exact: the similarity's."""
        wanted = "vector_cosine_ops" if self.similarity == "cosine" else "vector_ip_ops"
        kind = self.db_index.kind
        if kind == "exact":
            return wanted, None
        assert self._table_info is not None
        found = [index for index in self._table_info["indexes"] if index["kind"] == kind]
        if not found:
            others = ", ".join(f"{i['kind']} ({i['opclass']})" for i in self._table_info["indexes"]) or "none"
            raise RetrieverError(
                f"{ADAPTER}: params.index.kind: table {self.schema}.{self.collection_name} has no {kind} index on column "
                f"{self.settings.vector_column!r} (its indexes there: {others}); set index.kind to the kind of its "
                "index, or exact"
            )
        index = next((i for i in found if i["opclass"] == wanted), found[0])
        if index["opclass"] not in _OPERATORS:
            raise RetrieverError(
                f"{ADAPTER}: params.index.kind: index {index['name']!r} uses operator class {index['opclass']}, which "
                f"rag_eval cannot score ({', '.join(_OPERATORS)}); set index.kind: exact"
            )
        return index["opclass"], index

    # ------------------------------------------------------------------ search

    def index(self, corpus: Any) -> None:
        """The base's index(), then the query this retriever runs, prepared on its session."""
        super().index(corpus)
        if self.collection_name is None or (self.mode == "managed" and not self._doc_ids):
            return
        self._prepare_query()

    def _prepare_query(self) -> None:
        from psycopg import sql

        settings: PgvectorParams = self.settings
        index: PgvectorIndex = self.db_index
        columns: list[Any]
        if self.mode == "managed":
            opclass, found = self._managed_opclass(), None
            vector, columns = sql.Identifier(MANAGED_VECTOR), [sql.Identifier(PASSAGE_FIELD)]
        else:
            opclass, found = self._read_only_operator()
            vector, columns = sql.Identifier(settings.vector_column), [sql.Identifier(settings.id_column)]
            if self._has_text:
                columns.append(sql.Identifier(str(settings.text_field)))
            if self._has_metadata:
                columns.append(sql.Identifier(str(settings.metadata_column)))
            columns += [sql.Identifier(name) for name in self._extra_columns]
        self._operator, self._score = _OPERATORS[opclass]
        self._opclass, self._searched_index = opclass, found
        order: Any = sql.SQL("distance")
        if index.kind == "exact" and self.mode == "managed":
            # Equal distances (equal vectors) ranked as rag_eval ranks ties: by passage id descending, in bytes.
            order = sql.SQL('distance, {} COLLATE "C" DESC').format(sql.Identifier(PASSAGE_FIELD))
        self._sql = sql.SQL("SELECT {}, {} {} %b AS distance FROM {} ORDER BY {} LIMIT %s").format(
            columns[0],
            vector,
            sql.SQL(self._operator),
            self._table(str(self.collection_name)),
            order,
        )
        if len(columns) > 1:
            self._sql = sql.SQL("SELECT {}, {} {} %b AS distance, {} FROM {} ORDER BY {} LIMIT %s").format(
                columns[0],
                vector,
                sql.SQL(self._operator),
                sql.SQL(", ").join(columns[1:]),
                self._table(str(self.collection_name)),
                order,
            )
        # Session settings: exact scans every row (no index may answer); an index kind is always used, as in
        # production, even where the planner would scan a small table instead.
        off = (
            ("enable_indexscan", "enable_bitmapscan", "enable_indexonlyscan")
            if index.kind == "exact"
            else ("enable_seqscan",)
        )
        for setting in off:
            self._execute(sql.SQL("SET {} = off").format(sql.SQL(setting)))
        if index.kind == "ivfflat":
            self._execute(sql.SQL("SET ivfflat.probes = {}").format(sql.Literal(index.probes)))
        self._ef_search = None

    def _ef_for(self, k: int) -> None:
        """HNSW returns at most ef_search rows: ef_search is at least top_k (an explicit lower value is an error)."""
        wanted = self.db_index.ef_search
        if wanted is not None and wanted < k:
            raise RetrieverError(
                f"{ADAPTER}: params.index.ef_search {wanted} is below top_k {k}, and HNSW returns at most ef_search "
                f"rows per query; raise ef_search to {k} or more (at most 1000), or remove it"
            )
        value = max(wanted or DEFAULT_EF_SEARCH, k)
        if value > 1000:
            raise RetrieverError(
                f"{ADAPTER}: top_k {k} exceeds 1000, pgvector's largest hnsw.ef_search, so HNSW cannot return "
                "top_k rows; lower top_k or use index.kind exact"
            )
        if value != self._ef_search:
            from psycopg import sql

            self._execute(sql.SQL("SET hnsw.ef_search = {}").format(sql.Literal(value)))
            self._ef_search = value

    def query(self, vector: np.ndarray, k: int) -> list[Hit]:
        """The top ``k`` rows of one query vector (a prepared statement), distances turned into similarities."""
        if self._sql is None or self._cursor is None:
            raise RetrieverError(f"{ADAPTER}: search() called before index(corpus)")
        if self.db_index.kind == "hnsw":
            self._ef_for(k)
        self._last_vector, self._last_k = vector, k
        import psycopg

        try:
            rows = self._cursor.execute(self._sql, (vector, k), prepare=True).fetchall()
        except psycopg.Error as error:
            raise RetrieverError(
                f"{ADAPTER}: the query on {self.schema}.{self.collection_name} failed in {self._where()}: "
                f"{one_line_error(error, self._target)}"
            ) from None
        score = self._score
        if self.mode == "managed":
            return [Hit(row[0], score(row[1])) for row in rows]
        return [self._hit(row) for row in rows]

    def _hit(self, row: Sequence[Any]) -> Hit:
        position = 2
        text = None
        if self._has_text:
            text = None if row[position] is None else str(row[position])
            position += 1
        metadata: dict[str, Any] = {}
        if self._has_metadata:
            stored = row[position]
            if isinstance(stored, dict):
                metadata.update(stored)
            position += 1
        for name, value in zip(self._extra_columns, row[position:]):
            if value is not None:
                metadata[name] = value  # a plain column of map's name: its value wins over the jsonb's
        return Hit(None if row[0] is None else str(row[0]), self._score(row[1]), text, metadata)

    def plan(self, vector: np.ndarray | None = None, k: int | None = None) -> list[str]:
        """The plan nodes of this retriever's query (EXPLAIN on its session), outermost first.

        Without arguments: for the last query asked. ``Seq Scan`` in exact mode; ``Index Scan`` of the index otherwise.
        """
        vector = self._last_vector if vector is None else vector
        k = self._last_k if k is None else k
        if self._sql is None or vector is None or self._conn is None:
            return []
        from psycopg import sql

        if self.db_index.kind == "hnsw":
            self._ef_for(k)
        rows = (
            self._conn.cursor(binary=True)
            .execute(sql.SQL("EXPLAIN (FORMAT JSON) ") + self._sql, (vector, k))
            .fetchone()
        )
        document = rows[0]
        nodes: list[str] = []
        node = document[0]["Plan"] if isinstance(document, list) else None
        stack = [node] if node else []
        while stack:
            node = stack.pop(0)
            label = str(node.get("Node Type"))
            if node.get("Index Name"):
                label += f" using {node['Index Name']}"
            if node.get("Relation Name") and "Index" not in label:
                label += f" on {node['Relation Name']}"
            nodes.append(label)
            stack = list(node.get("Plans", [])) + stack
        return nodes

    # ------------------------------------------------------------------ describe

    def database_info(self) -> dict[str, Any]:
        """Server, extension and client versions, where the server is, the table, its rows, the index and the plan."""
        import psycopg

        info: dict[str, Any] = {"server": "embedded (pgserver)" if self.dsn is None else "dsn"}
        if self.dsn is not None:
            info["dsn"] = redact(self.dsn)
        elif self._embedded is not None:
            info.update(self._embedded.describe())
        info["schema"] = self.schema
        info["table"] = self.collection_name
        info["psycopg_version"] = psycopg.__version__
        try:
            info["pgvector_python_version"] = version("pgvector")
        except PackageNotFoundError:
            pass
        index: PgvectorIndex = self.db_index
        described: dict[str, Any] = {"kind": index.kind}
        if index.kind == "hnsw":
            described.update(ef_search=self._ef_search or index.ef_search or DEFAULT_EF_SEARCH)
            if self.mode == "managed":
                described.update(m=index.m, ef_construction=index.ef_construction)
        elif index.kind == "ivfflat":
            described.update(probes=index.probes, **({"lists": index.lists} if self.mode == "managed" else {}))
        if self._sql is not None:
            described.update(opclass=self._opclass, operator=self._operator)
            if self._searched_index is not None:
                described["table_index"] = self._searched_index["definition"]
        info["index"] = described
        info.update({key: round(value, 3) for key, value in self._timings.items()})
        if self._timings.get("copy_s") and self._doc_ids:
            info["copy_rows_per_s"] = round(len(self._doc_ids) / max(self._timings["copy_s"], 1e-9), 1)
        if self._conn is None or self._conn.closed:
            return info
        info["server_version"] = self._execute("SHOW server_version").fetchone()[0]
        row = self._execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        info["pgvector_version"] = row[0] if row else None
        if self.collection_name is not None:
            shape = self.collection_shape(self.collection_name)
            if shape is not None:
                info["dimension"], info["points"] = shape
        if self._last_vector is not None:
            info["plan"] = self.plan()
        return info


def _client() -> tuple[Any, Any]:
    """psycopg and pgvector's ``register_vector``; a missing one is one line naming the extra to install."""
    try:
        import psycopg
        from pgvector.psycopg import register_vector
    except ImportError as error:
        raise RetrieverError(
            f"{ADAPTER}: the pgvector adapter needs psycopg and pgvector ({error.name or error} is not installed); "
            f"install them with {INSTALL_HINT}"
        ) from None
    return psycopg, register_vector


def _storable(text: str) -> str:
    """PostgreSQL's text holds no NUL character and no lone surrogate: such characters are replaced, not refused.

    The stored text of a managed table is for people reading it; hits map by passage id.
    """
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


__all__ = ["PgvectorRetriever"]
