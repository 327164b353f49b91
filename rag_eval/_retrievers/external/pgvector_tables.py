"""A team's pgvector table, read before it is searched (never written): its columns, dimension, rows and indexes.

Every column ``adapter: pgvector``'s parameters name is checked here, each problem one line naming the
parameter and the fix.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rag_eval._core.errors import RetrieverError
from rag_eval._retrievers.external.pgvector_params import ADAPTER, PgvectorParams


@dataclass(frozen=True)
class TeamTable:
    """What a read-only search needs of the table: sizes, vector indexes, and which columns a hit reads."""

    dimension: int
    points: int
    indexes: list[dict[str, str]]
    has_text: bool
    has_metadata: bool
    extra_columns: list[str]


def read_team_table(
    execute: Callable[..., Any], table: Any, oid: int, settings: PgvectorParams, where: str
) -> TeamTable:
    """Read and check the table of relation ``oid`` (``table``: its quoted SQL name; ``where``: for messages)."""
    from psycopg import sql

    columns = {
        str(row[0]): (str(row[1]), int(row[2]), int(row[3]))
        for row in execute(
            "SELECT a.attname, t.typname, a.atttypmod, a.attnum FROM pg_attribute a "
            "JOIN pg_type t ON t.oid = a.atttypid WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped "
            "ORDER BY a.attnum",
            (oid,),
        ).fetchall()
    }
    listed = ", ".join(columns)
    column = settings.vector_column
    if column not in columns:
        raise RetrieverError(
            f"{ADAPTER}: params.vector_column: {where} has no column {column!r} (its columns: {listed}); "
            "set vector_column to its vector column"
        )
    if columns[column][0] != "vector":
        raise RetrieverError(
            f"{ADAPTER}: params.vector_column: column {column!r} of {where} is of type {columns[column][0]}, "
            "not vector; set vector_column to a vector(d) column"
        )
    if settings.id_column not in columns:
        raise RetrieverError(
            f"{ADAPTER}: params.id_column: {where} has no column {settings.id_column!r} (its columns: {listed}); "
            "set id_column to its id column"
        )
    for field, value in (("text_field", settings.text_field), ("metadata_column", settings.metadata_column)):
        if value is not None and value not in columns and field in settings.model_fields_set:
            raise RetrieverError(
                f"{ADAPTER}: params.{field}: {where} has no column {value!r} (its columns: {listed}); "
                f"set {field} to one of them, or null"
            )
    has_text = settings.text_field is not None and settings.text_field in columns
    has_metadata = settings.metadata_column is not None and settings.metadata_column in columns
    if has_metadata and columns[str(settings.metadata_column)][0] not in ("jsonb", "json"):
        raise RetrieverError(
            f"{ADAPTER}: params.metadata_column: column {settings.metadata_column!r} of {where} is of type "
            f"{columns[str(settings.metadata_column)][0]}, not jsonb; set metadata_column to a jsonb column, or null"
        )
    taken = {column, settings.id_column, settings.text_field, settings.metadata_column}
    spec = settings.map
    named = [] if spec is None else [spec.doc_id, spec.start, spec.end, spec.passage_id]
    extra_columns = [field for field in dict.fromkeys(named) if field in columns and field not in taken]
    dimension = max(columns[column][1], 0)
    if not dimension:  # vector without a dimension in its type: read one row's
        row = execute(
            sql.SQL("SELECT vector_dims({c}) FROM {t} WHERE {c} IS NOT NULL LIMIT 1").format(
                c=sql.Identifier(column), t=table
            )
        ).fetchone()
        dimension = int(row[0]) if row else 0
    points = int(execute(sql.SQL("SELECT count(*) FROM {}").format(table)).fetchone()[0])
    indexes = [
        {"name": str(row[0]), "kind": str(row[1]), "opclass": str(row[2]), "definition": str(row[3])}
        for row in execute(
            "SELECT i.relname, am.amname, opc.opcname, pg_get_indexdef(i.oid) FROM pg_index x "
            "JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_am am ON am.oid = i.relam "
            "JOIN pg_opclass opc ON opc.oid = x.indclass[0] "
            "WHERE x.indrelid = %s AND x.indkey[0] = %s ORDER BY i.relname",
            (oid, columns[column][2]),
        ).fetchall()
    ]
    return TeamTable(dimension, points, indexes, has_text, has_metadata, extra_columns)
