"""A query set's documents and evidence items read as written, for checking them against edited documents.

The dataset loader (rag_eval._data.datasets.query_set) refuses a quote the document no longer
holds: right for a run, but the point of ``rag-eval judgements check`` is to list such evidence.
So this reader is lenient where staleness shows (a quote found nowhere, offsets past the end)
and strict about the form (an item that is not a mapping, offsets that are not integers, a
quote and offsets both): a form problem is bad input, one line naming the file and the item.

Documents are read as the loader reads them (inline, a .jsonl file or a folder, via
rag_eval._data.datasets.documents), so offsets count into the same text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_eval._core.errors import DatasetError
from rag_eval._core.files import MAX_DOCUMENT_BYTES, read_bytes
from rag_eval._core.messages import shown
from rag_eval._core.spans import is_offset
from rag_eval._core.validation import field_path
from rag_eval._core.yaml_loader import parse_yaml
from rag_eval._data.datasets.corpus import resolve_path
from rag_eval._data.datasets.documents import load_documents
from rag_eval._data.datasets.evidence import stored_check_problem
from rag_eval._data.datasets.model import Problems
from rag_eval._data.datasets.values import id_from_value
from rag_eval._data.judging.anchor import EvidenceItem

_VALIDATE = "`rag-eval validate` lists every problem of a query set"


@dataclass(frozen=True)
class Entry:
    """One evidence item and its place: ``queries[query].evidence[index]``, the query's id, the place as text."""

    query: int
    index: int
    qid: str
    where: str
    item: EvidenceItem


@dataclass(frozen=True)
class EvidenceFile:
    """A query set as read: its bytes (a leading BOM removed), the parsed YAML, documents and evidence items."""

    path: Path
    content: bytes
    raw: dict[str, Any]
    documents: dict[str, str]
    entries: tuple[Entry, ...]


def read_query_set(path: Path) -> tuple[bytes, dict[str, Any]]:
    """The bytes of a YAML query set (a leading BOM removed) and its parsed content, which must be a mapping."""
    content = read_bytes(path, "YAML query set", MAX_DOCUMENT_BYTES, DatasetError)
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        raise DatasetError(f"{path}: is not UTF-8 text; save the query set as UTF-8") from None
    raw = parse_yaml(text, path, DatasetError)
    if not isinstance(raw, dict):
        raise DatasetError(f"{path}: a query set is a mapping with keys name, description, documents, queries")
    return content, raw


def read_evidence_file(path: Path) -> EvidenceFile:
    """The query set at ``path`` with its documents and every evidence item; DatasetError for a form problem."""
    content, raw = read_query_set(path)
    documents = read_documents(path, raw)
    queries = raw.get("queries")
    if not isinstance(queries, list):
        raise DatasetError(f"{path}: queries: expected a list of queries ({{id, text, evidence}}); {_VALIDATE}")
    entries = []
    for n, query in enumerate(queries):
        if not isinstance(query, dict):
            raise DatasetError(f"{path}: queries[{n}]: expected a query {{id, text, evidence}}, got {shown(query)}")
        qid = _id(path, raw, ["queries", n, "id"], query.get("id"), spaces=True)
        items = query.get("evidence") or []
        if not isinstance(items, list):
            where = field_path(raw, ["queries", n, "evidence"])
            raise DatasetError(f"{path}: {where}: expected a list of evidence items ({{doc, quote}} or {{doc, start, "
                               "end}})")
        for i, value in enumerate(items):
            where = field_path(raw, ["queries", n, "evidence", i])
            entries.append(Entry(n, i, qid, where, evidence_item(path, raw, where, value)))
    return EvidenceFile(path, content, raw, documents, tuple(entries))


def read_documents(path: Path, raw: dict[str, Any]) -> dict[str, str]:
    """``{doc id: text}`` of the query set's ``documents`` (inline, a .jsonl file or a folder); DatasetError if bad."""
    value = raw.get("documents")
    if value is None:
        kind = "a corpus of passages, judged by id" if raw.get("corpus") is not None else "no documents"
        raise DatasetError(f"{path}: has {kind}; evidence spans need 'documents' (long texts judged by evidence)")
    if isinstance(value, str):
        problems = Problems()
        loaded = load_documents(resolve_path(value, path.parent), problems, [])
        problems.raise_if_any()
        return {doc: entry["text"] for doc, entry in loaded.items()}
    if not isinstance(value, list):
        raise DatasetError(f"{path}: documents: expected a list of documents (id, text) or the path of a .jsonl file "
                           "or a folder")
    documents: dict[str, str] = {}
    for n, document in enumerate(value):
        where = field_path(raw, ["documents", n])
        if not isinstance(document, dict) or not isinstance(document.get("text"), str):
            raise DatasetError(f"{path}: {where}: expected a document {{id, text}} with text; {_VALIDATE}")
        doc = _id(path, raw, ["documents", n, "id"], document.get("id"))
        if doc in documents:
            raise DatasetError(f"{path}: {where}: duplicate document id {doc!r}; give each document its own id")
        documents[doc] = document["text"]
    return documents


def evidence_item(path: Path, raw: dict[str, Any], where: str, value: Any) -> EvidenceItem:
    """One evidence item's form checked (not its place in the document): the item, or DatasetError."""
    if not isinstance(value, dict):
        raise DatasetError(f"{path}: {where}: expected an evidence item {{doc, quote}} or {{doc, start, end}}, got "
                           f"{shown(value)}")
    try:
        doc = id_from_value(value.get("doc"))
    except ValueError as failure:
        raise DatasetError(f"{path}: {where}.doc: {failure}") from None
    start, end, quote = value.get("start"), value.get("end"), value.get("quote")
    has_offsets = start is not None or end is not None
    problem = None
    if quote is not None and has_offsets:
        problem = "give either a quote or start and end, not both"
    elif quote is None and not has_offsets:
        problem = "give start and end (code-point offsets into the document) or a quote"
    elif quote is not None and (not isinstance(quote, str) or not quote.strip()):
        problem = f"quote {shown(quote)} is not text; copy the evidence text from the document"
    elif quote is None:
        problem = next((f"{name} {shown(offset)} is not an integer offset; write offsets as whole numbers"
                        for name, offset in (("start", start), ("end", end))
                        if not is_offset(offset)), None)
    match = value.get("match") or "exact"
    if problem is None and match not in ("exact", "whitespace"):
        problem = f"match {shown(match)} is not exact or whitespace"
    if problem is None:
        problem = stored_check_problem(value.get("text"), value.get("sha256"), by_quote=quote is not None)
    if problem is not None:
        raise DatasetError(f"{path}: {where}: {problem}")
    return EvidenceItem(doc, start, end, quote, match, value.get("text"), value.get("sha256"))


def _id(path: Path, raw: dict[str, Any], loc: list[Any], value: Any, spaces: bool = False) -> str:
    try:
        return id_from_value(value, spaces=spaces)
    except ValueError as failure:
        raise DatasetError(f"{path}: {field_path(raw, loc)}: {failure}") from None
