"""A BEIR-style JSON Lines corpus read in byte ranges, so that workers stream it and no process holds it all.

A range ``[start, stop)`` owns every line whose first byte lies in it: a reader seeks to
``start - 1``, drops the rest of that line (it belongs to the range before) and reads
lines until it has passed ``stop``. Ranges cut anywhere therefore cover every line exactly
once. A ``.gz`` file cannot be entered in the middle and is one range, still read line by
line.

Each line becomes ``(doc_id, text)`` by the local loader's own rules
(:func:`rag_eval._data.datasets.corpus.passage_from_record` and
:func:`rag_eval._retrievers.base.passage_text`): id from ``_id`` or ``id``, ``text`` a string,
the text encoded is ``prefix + title + " " + text`` (title stripped; no title, no space).
Problems are one line naming the file and the byte offset of the line (a worker does not
know line numbers without reading everything before its range).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rag_eval._core.errors import DatasetError
from rag_eval._data.datasets.corpus import passage_from_record
from rag_eval._data.datasets.lines import byte_lines
from rag_eval._data.datasets.model import Problems, passage_text

# A range of 64 MB holds about 100,000 BEIR passages: enough work per task, little memory per worker.
DEFAULT_RANGE_BYTES = 64 << 20


def byte_ranges(path: Path | str, range_bytes: int = DEFAULT_RANGE_BYTES) -> list[tuple[int, int]]:
    """``[(start, stop), ...]`` covering ``path`` in pieces of about ``range_bytes`` (one piece for ``.gz``)."""
    if range_bytes < 1:
        raise ValueError(f"range_bytes must be >= 1, got {range_bytes}")
    size = os.stat(path).st_size
    if str(path).endswith(".gz") or size == 0:
        return [(0, size)]
    return [(start, min(start + range_bytes, size)) for start in range(0, size, range_bytes)]


def read_range(
    path: Path | str, start: int, stop: int, prefix: str = "", batch: int = 1024
) -> Iterator[tuple[list[str], list[str]]]:
    """``(doc_ids, texts)`` lists of at most ``batch`` passages, for the lines that begin in ``[start, stop)``."""
    path = Path(path)
    doc_ids: list[str] = []
    texts: list[str] = []
    for offset, raw in byte_lines(path, start, stop):
        if not raw.strip():
            continue
        parsed = parse_passage_line(raw, path, offset)
        if parsed is None:  # blank in Unicode's sense (a no-break space, say): skipped, as the loader does
            continue
        doc_id, text = parsed
        doc_ids.append(doc_id)
        texts.append(prefix + text)
        if len(doc_ids) >= batch:
            yield doc_ids, texts
            doc_ids, texts = [], []
    if doc_ids:
        yield doc_ids, texts


def parse_passage_line(raw: bytes, path: Path, offset: int) -> tuple[str, str] | None:
    """``(doc_id, title + " " + text)`` of one JSON Lines record (None for a blank line); DatasetError naming the
    file and byte offset."""
    where = f"{path}: line at byte {offset}"
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as failure:
        raise DatasetError(f"{where}: not UTF-8 (byte {offset + failure.start}); save the file as UTF-8") from None
    if not line.strip():
        return None
    try:
        record = json.loads(line)
    except ValueError as failure:  # JSONDecodeError, or an integer too long to convert
        raise DatasetError(f"{where}: invalid JSON: {failure}") from None
    except RecursionError:
        raise DatasetError(f"{where}: invalid JSON: nested too deeply; flatten the structure") from None
    return passage_record(record, where)


def passage_record(record: Any, where: str) -> tuple[str, str]:
    """``(doc_id, title + " " + text)`` of a passage record (a JSON object or a table row), as the local loader reads it.

    The record is checked by the loader's own rule (:func:`rag_eval._data.datasets.corpus.passage_from_record`);
    its first problem is raised here, since a worker cannot collect them.
    """

    problems = Problems()
    found = passage_from_record(record, where, {}, problems)
    if found is None or problems.count:
        raise DatasetError(problems.messages[0])
    return found[0], passage_text(found[1])
