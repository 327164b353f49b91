"""A pool in the import formats of two annotation tools: Label Studio and Argilla (2.x).

**Label Studio**: a JSON list of tasks, one per sheet row, ``{"data": {...}}``. ``data`` holds
``query`` and ``text`` (what the annotator reads) and the row's keys (``query_id``, ``doc``,
``start``, ``end``, ``priority``, ``id``), which the labelling config does not show; never the note. The labelling
config (:func:`label_studio_config`) shows the query and the text and asks for one grade, a single
choice among ``0`` .. the dataset's highest grade.

**Argilla**: JSON Lines, one record per row, as ``dataset.records.log`` takes dicts: the keys
``query`` and ``text`` are the dataset's two text fields, ``query_id``, ``doc``, ``start``, ``end``
and ``priority`` its metadata properties (``start`` and ``end`` left out for a passage or a whole
document), and ``id`` a stable record id (the first 16 hex of sha256 of query id and unit). The
dataset's settings (:func:`argilla_settings`): the two fields, a rating question ``grade`` with the
values 0 .. the highest grade, the metadata properties.

Neither shows the note (which retrievers surfaced a unit): an annotator should not know.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from rag_eval._core.atomic import atomic_write_text
from rag_eval._core.errors import InputFormatError
from rag_eval._data.judging.grades import scale_values
from rag_eval._data.judging.sheet import SheetRow

# What the grades mean, as TREC's graded assessments word them; grades above 3 are shown bare.
GRADE_HINTS = {
    0: "irrelevant: nothing in it answers the query",
    1: "related: on the topic, but does not answer",
    2: "highly relevant: answers the query in part",
    3: "perfectly relevant: answers the query",
}
METADATA = ("query_id", "doc", "start", "end", "priority")


def record_id(row: SheetRow) -> str:
    """A stable id of the row's (query, unit): the first 16 hex of sha256 of query id, NUL, unit id."""
    key = f"{row.query_id}\0{row.unit}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(key).hexdigest()[:16]


def label_studio_tasks(rows: Iterable[SheetRow]) -> list[dict[str, Any]]:
    """One Label Studio task per row (see the module docstring)."""
    return [
        {"data": {
            "query": row.query_text, "text": row.text, "query_id": row.query_id, "doc": row.doc, "start": row.start,
            "end": row.end, "priority": row.priority, "id": record_id(row),
        }}
        for row in rows
    ]


def label_studio_config(highest: float) -> str:
    """The labelling config (XML) for the tasks: the query, the text, one grade among 0..``highest``."""
    choices = "\n".join(
        f"    <Choice value=\"{grade}\" hint={quoteattr(GRADE_HINTS.get(grade, str(grade)))}/>"
        for grade in scale_values(highest)
    )
    return (
        "<View>\n"
        "  <Header value=\"Query\"/>\n"
        "  <Text name=\"query\" value=\"$query\"/>\n"
        "  <Header value=\"How well does this text answer the query?\"/>\n"
        "  <Text name=\"text\" value=\"$text\"/>\n"
        "  <Choices name=\"grade\" toName=\"text\" choice=\"single\" showInline=\"true\" required=\"true\">\n"
        f"{choices}\n"
        "  </Choices>\n"
        "</View>\n"
    )


def argilla_records(rows: Iterable[SheetRow]) -> list[dict[str, Any]]:
    """One Argilla record per row (see the module docstring)."""
    records = []
    for row in rows:
        record: dict[str, Any] = {"id": record_id(row), "query": row.query_text, "text": row.text,
                                  "query_id": row.query_id, "doc": row.doc}
        if row.start is not None and row.end is not None:
            record["start"], record["end"] = row.start, row.end
        if row.priority is not None:
            record["priority"] = row.priority
        records.append(record)
    return records


def argilla_settings(highest: float) -> dict[str, Any]:
    """The dataset settings the records need, as plain data (docs/judging.md shows them as ``rg.Settings``)."""
    return {
        "fields": [{"name": "query", "type": "text"}, {"name": "text", "type": "text"}],
        "questions": [{"name": "grade", "type": "rating", "values": scale_values(highest)}],
        "metadata": [
            {"name": "query_id", "type": "terms"}, {"name": "doc", "type": "terms"},
            {"name": "start", "type": "integer"}, {"name": "end", "type": "integer"},
            {"name": "priority", "type": "integer"},
        ],
    }


def check_export_replaceable(path: str, flag: str) -> None:
    """Refuse (exit 2) to replace a file at ``path`` that is not an earlier import of the same kind (``--label-studio``:
    a JSON list of tasks whose data name ``query_id`` and ``doc``; ``--argilla``: JSON Lines of records with ``id``,
    ``query_id`` and ``doc``). Nothing there, or an empty file, is fine."""
    try:
        data = Path(path).read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as error:
        raise InputFormatError(f"{flag} {path}: cannot be read ({error.strerror or error}); give another file name") from None
    if not data.strip() or _is_our_import(data, flag):
        return
    tool = "Label Studio tasks" if flag == "--label-studio" else "Argilla records"
    raise InputFormatError(f"{flag} {path}: the file there is not {tool} rag-eval pool wrote; nothing written: give "
                           "another file name, or move that file away")


def _is_our_import(data: bytes, flag: str) -> bool:
    try:
        text = data.decode("utf-8")
        if flag == "--label-studio":
            items = json.loads(text)
            return isinstance(items, list) and all(
                isinstance(item, dict) and isinstance(item.get("data"), dict) and {"query_id", "doc"} <= set(item["data"])
                for item in items
            )
        records = [json.loads(line) for line in text.split("\n") if line.strip()]
    except ValueError:
        return False
    return all(isinstance(record, dict) and {"id", "query_id", "doc"} <= set(record) for record in records)


def write_label_studio(path: str, rows: Iterable[SheetRow]) -> int:
    """Write the Label Studio tasks atomically; returns how many."""
    tasks = label_studio_tasks(rows)
    atomic_write_text(path, json.dumps(tasks, ensure_ascii=False, indent=1) + "\n")
    return len(tasks)


def write_argilla(path: str, rows: Iterable[SheetRow]) -> int:
    """Write the Argilla records (JSON Lines) atomically; returns how many."""
    records = argilla_records(rows)
    atomic_write_text(path, "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records))
    return len(records)
