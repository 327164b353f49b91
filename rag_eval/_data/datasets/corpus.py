"""Corpora and queries files: YAML, JSON, JSON Lines, CSV and TSV records, checked one by one.

A corpus file's format comes from its name (``.yaml``/``.yml``, ``.json``, ``.jsonl``,
``.csv``, anything else TSV ``id<TAB>text``; each may end in ``.gz``). Every record
is checked with the id rule of :mod:`rag_eval._data.datasets.values`; problems are
collected with the file and line (or position), never raised one at a time.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from rag_eval._core.errors import DatasetError
from rag_eval._core.files import MAX_DOCUMENT_BYTES, parse_json, read_text
from rag_eval._core.messages import shown
from rag_eval._core.yaml_loader import load_yaml
from rag_eval._data.datasets.lines import csv_header, csv_records, strip_ending, text_lines
from rag_eval._data.datasets.model import Problems, Query
from rag_eval._data.datasets.values import id_from_text, id_from_value, text_problem

# (position, record): the position is a line number (line formats) or an index (documents).
Records = Iterable[tuple[int, Any]]


def load_corpus_file(path: Path, problems: Problems | None = None, what: str = "corpus file") -> dict[str, dict[str, Any]]:
    """A corpus in YAML, JSON, JSON Lines, CSV or TSV (``id<TAB>text``), by suffix.

    With ``problems`` given, problems are added to it; otherwise they are raised here.
    """
    own = problems is None
    problems = problems if problems is not None else Problems()
    suffix = _suffix(path)
    if suffix in (".yaml", ".yml"):
        data = _passage_records(load_yaml(path, what, MAX_DOCUMENT_BYTES, DatasetError))
        if not isinstance(data, list):
            raise DatasetError(f"{path}: a YAML corpus is a list of passages (id, text, title)")
        corpus = corpus_from_records(enumerate(data), str(path), problems)
    elif suffix == ".json" and not _looks_like_json_lines(path, what):
        data = _passage_records(parse_json(read_text(path, what, MAX_DOCUMENT_BYTES, DatasetError), path, DatasetError))
        if not isinstance(data, list):
            raise DatasetError(f"{path}: a JSON corpus is a list of passages, {{\"corpus\": [...]}} or {{id: text}}")
        corpus = corpus_from_records(enumerate(data), str(path), problems)
    elif suffix in (".json", ".jsonl"):
        corpus = corpus_from_records(json_lines(path, what), str(path), problems, line_numbers=True)
    elif suffix == ".csv":
        header = csv_header(path, what)
        if not {"id", "text"} <= set(header):
            raise DatasetError(f"{path}:1: a CSV corpus needs a header row with columns id and text (title optional)")
        corpus = corpus_from_records(csv_records(path, what), str(path), problems, line_numbers=True)
    else:  # .tsv, .docs, ...: id<TAB>text
        corpus = corpus_from_records(tab_pairs(path, what, problems), str(path), problems, line_numbers=True)
    if own:
        problems.raise_if_any()
    return corpus


def corpus_from_records(
    records: Records, source: str, problems: Problems, line_numbers: bool = False
) -> dict[str, dict[str, Any]]:
    """``{doc_id: {"text", "title"[, "metadata"]}}`` from passage records (``id`` or ``_id``, ``text``, ``title``)."""
    corpus: dict[str, dict[str, Any]] = {}
    for position, record in records:
        where = f"{source}:{position}" if line_numbers else f"{source}: corpus[{position}]"
        found = passage_from_record(record, where, corpus, problems)
        if found is not None:
            corpus[found[0]] = found[1]
    return corpus


def passage_from_record(
    record: Any, where: str, seen: Mapping[str, Any], problems: Problems
) -> tuple[str, dict[str, Any]] | None:
    """``(doc_id, {"text", "title"[, "metadata"]})`` of one passage record, or None after adding its problem.

    The one rule of what a passage record is, for corpora held in memory and corpora read
    from disk (:class:`rag_eval._data.datasets.file_corpus.FileCorpus`). ``seen``: the ids so far
    (an id in it is a duplicate).
    """
    doc = _record_id(record, where, "passage", "a passage with id and text", seen, problems)
    if doc is None:
        return None
    text = record.get("text")
    if not isinstance(text, str):
        problems.add(f"{where}: passage {doc!r} has no text")
        text = ""
    title = str(record.get("title") or "")
    # Written to the run's reports and handed to tokenizers as UTF-8: reported, and the passage kept (judgements
    # naming it are not a second problem).
    field, problem = next(((f, p) for f, v in (("text", text), ("title", title)) if (p := text_problem(v))), ("", None))
    if problem is not None:
        problems.add(f"{where}: passage {doc!r}: '{field}' {problem}")
    passage: dict[str, Any] = {"text": text, "title": title}
    metadata = record.get("metadata")
    if metadata:
        passage["metadata"] = metadata
    return doc, passage


def load_queries_file(path: Path, problems: Problems, what: str = "queries file") -> dict[str, Query]:
    """Queries as JSON Lines (``_id``/``id``, ``text``) or TSV (``id<TAB>text``)."""
    records = json_lines(path, what) if _suffix(path) in (".jsonl", ".json") else tab_pairs(path, what, problems)
    queries: dict[str, Query] = {}
    for n, record in records:
        where = f"{path}:{n}"
        qid = _record_id(record, where, "query", "a JSON object with _id and text", queries, problems)
        if qid is None:
            continue
        text = record.get("text")
        if not isinstance(text, str) or not text.strip():
            problems.add(f"{where}: query {qid!r} has an empty text")
            text = ""
        elif (problem := text_problem(text)) is not None:
            problems.add(f"{where}: query {qid!r}: 'text' {problem}")
        queries[qid] = Query(qid, text)
    return queries


def record_id(record: Mapping[str, Any]) -> Any:
    """The id of a JSON record, under ``id`` or BEIR's ``_id``; ValueError when it has both, and they differ."""
    if "id" in record and "_id" in record and _as_written(record["id"]) != _as_written(record["_id"]):
        raise ValueError(f"the record has both id {shown(record['id'])} and _id {shown(record['_id'])}; keep one")
    return record.get("id", record.get("_id"))


def _as_written(value: Any) -> Any:
    """An id value as the id it gives (1 and "1", " d1" and "d1" are one id); anything else as it is."""
    try:
        return id_from_value(value, spaces=True)
    except ValueError:
        return value


def _record_id(
    record: Any, where: str, kind: str, expected: str, seen: Mapping[str, Any], problems: Problems
) -> str | None:
    """The id (``id`` or ``_id``) of a passage or query record, or None after adding the problem with it."""
    if not isinstance(record, Mapping):
        problems.add(f"{where}: expected {expected}, got {shown(record)}")
        return None
    try:
        raw_id = record_id(record)
    except ValueError as failure:
        problems.add(f"{where}: {kind} id: {failure}")
        return None
    try:
        value = id_from_value(raw_id)
    except ValueError as failure:
        problems.add(f"{where}: {kind} id: {failure} (got {shown(raw_id)})")
        return None
    if value in seen:
        problems.add(f"{where}: duplicate {kind} id {value!r}")
        return None
    return value


def json_lines(path: Path, what: str) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` of each non-blank line of a JSON Lines file."""
    for n, line in text_lines(path, what):
        if line.strip():  # parsed without its ending: a value cut short is on this line, not the next
            yield n, parse_json(strip_ending(line), path, DatasetError, line=n)


def tab_pairs(path: Path, what: str, problems: Problems) -> Iterator[tuple[int, dict[str, str]]]:
    """``(line number, {"id", "text"})`` of an ``id<TAB>text`` file; a line without a tab is a problem."""
    for n, line in text_lines(path, what):
        line = strip_ending(line)
        if not line.strip():
            continue
        key, tab, value = line.partition("\t")
        if not tab:
            problems.add(f"{path}:{n}: expected 'id<TAB>text' (no tab on this line)")
            continue
        try:
            yield n, {"id": id_from_text(key), "text": value}
        except ValueError as failure:
            problems.add(f"{path}:{n}: {failure} (got {shown(key)})")


def _suffix(path: Path) -> str:
    """The format suffix: ``.jsonl`` for ``x.jsonl.gz``."""
    return path.suffixes[-2] if path.suffix == ".gz" and len(path.suffixes) > 1 else path.suffix


def _passage_records(data: Any) -> Any:
    """A corpus document as a list of records: ``[...]``, ``{corpus: [...]}`` or ``{id: text | {title, text}}``."""
    if isinstance(data, Mapping) and "corpus" in data:
        data = data["corpus"]
    if isinstance(data, Mapping):
        # {"id": k, "text": v} for anything that is not a mapping: a null or a number is then reported, not a crash.
        data = [{"id": k, **v} if isinstance(v, Mapping) else {"id": k, "text": v} for k, v in data.items()]
    return data


def _looks_like_json_lines(path: Path, what: str) -> bool:
    """Whether a ``.json`` corpus is JSON Lines: its first line is one passage object on its own."""
    for _, line in text_lines(path, what):
        if not line.strip():
            continue
        try:
            first = parse_json(line, path, DatasetError)
        except DatasetError:
            return False  # the first line of a multi-line document
        return isinstance(first, Mapping) and any(key in first for key in ("_id", "id", "text"))
    return False


def resolve_path(value: Any, base: Path) -> Path:
    """A path from a config or query set, relative to ``base`` (the folder of the file that names it)."""
    path = Path(str(value)).expanduser()
    return path if path.is_absolute() else Path(os.path.normpath(base / path))
