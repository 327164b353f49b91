"""A BEIR-style JSON Lines corpus read in byte ranges, so that workers stream it and no process holds it all.

A range ``[start, stop)`` owns every line whose first byte lies in it: a reader seeks to
``start - 1``, drops the rest of that line (it belongs to the range before) and reads
lines until it has passed ``stop``. Ranges cut anywhere therefore cover every line exactly
once. A ``.gz`` file cannot be entered in the middle and is one range, still read line by
line.

Each line becomes ``(doc_id, text)`` with the same rules as the local loader
(:func:`rag_eval.datasets.corpus.corpus_from_records` and
:func:`rag_eval.retrievers.base.passage_text`): id from ``_id`` or ``id``, ``text`` a string,
the text encoded is ``prefix + title + " " + text`` (title stripped; no title, no space).
Problems are one line naming the file and the byte offset of the line (a worker does not
know line numbers without reading everything before its range).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rag_eval.errors import DatasetError

_BOM = b"\xef\xbb\xbf"
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
    for offset, raw in _lines(path, start, stop):
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
    """``(doc_id, title + " " + text)`` of a passage record (a JSON object or a table row), as the local loader reads it."""
    from rag_eval.datasets.values import id_from_value
    from rag_eval.retrievers.base import passage_text

    if not isinstance(record, dict):
        raise DatasetError(f"{where}: expected a passage with _id and text, got {type(record).__name__}")
    raw_id = record.get("id", record.get("_id"))
    try:
        doc_id = id_from_value(raw_id)
    except ValueError as failure:
        raise DatasetError(f"{where}: passage id: {failure} (got {raw_id!r})") from None
    text = record.get("text")
    if not isinstance(text, str):
        raise DatasetError(f"{where}: passage {doc_id!r} has no text (a string field 'text')")
    return doc_id, passage_text({"title": str(record.get("title") or ""), "text": text})


def _lines(path: Path, start: int, stop: int) -> Iterator[tuple[int, bytes]]:
    """``(byte offset, line)`` of the lines beginning in ``[start, stop)`` (all lines of a ``.gz`` file)."""
    gz = path.name.endswith(".gz")
    try:
        with _open(path, gz) as handle:
            offset = 0
            if start > 0 and not gz:
                handle.seek(start - 1)
                offset = start - 1 + len(handle.readline())  # the line holding byte start-1 is the previous range's
            while offset < stop or gz:
                line = handle.readline()
                if not line:
                    return
                if offset == 0 and line.startswith(_BOM):
                    line = line[len(_BOM) :]
                    yield 0, line
                    offset = len(line) + len(_BOM)
                    continue
                yield offset, line
                offset += len(line)
    except (gzip.BadGzipFile, EOFError, zlib.error) as failure:
        raise DatasetError(f"{path}: not a valid gzip file ({failure}); a .gz name needs gzip content") from None
    except OSError as failure:
        raise DatasetError(f"{path}: cannot be read ({failure.strerror or type(failure).__name__})") from None


def _open(path: Path, gz: bool) -> gzip.GzipFile | io.BufferedReader:
    return gzip.open(path, "rb") if gz else open(path, "rb")  # noqa: SIM115 (closed by the caller's with)
