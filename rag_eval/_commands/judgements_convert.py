"""``rag-eval judgements convert CHUNKS --texts FILE --documents QUERY_SET --output FILE``: chunk ids to evidence.

CHUNKS is a qrels file of chunk ids (TREC or BEIR, read by rag_eval's qrels reader), ``--texts``
a JSON Lines file of the chunks' texts, ``--documents`` a query set with the documents the
chunks were cut from (and the queries the qrels name). Each judged chunk is located in its
document (rag_eval._data.judging.convert) and written as an evidence span with its grade: the
output is the ``--documents`` query set, comments and order kept, each query's converted
spans appended to its ``evidence`` (a documents path rewritten relative to the output's folder).
One line per chunk that could not be located (or that lands in a document the query set judges
0 for its query), then a summary. Exit 0 when every judged chunk was located, 1 when some are
listed (the output is written with the others), 2 for bad input (nothing written). ``--output`` may
not be one of the inputs, and an existing file there is replaced only when it is a query set.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rag_eval._commands.output_paths import check_query_set_output
from rag_eval._core.errors import DatasetError
from rag_eval._core.messages import some_of
from rag_eval._data.datasets.corpus import resolve_path
from rag_eval._data.datasets.values import id_from_value
from rag_eval._data.judging.convert import BY_ID, EXACT, TOLERANT, Conversion, convert, read_chunk_texts
from rag_eval._data.judging.evidence_file import read_documents, read_query_set
from rag_eval._data.judging.rewrite import append, rewrite_yaml
from rag_eval._scoring.engine import read_judgements

_UNKNOWN_LISTED = 5


def main(args: argparse.Namespace, say: Callable[[str], None]) -> int:
    """Convert ``args.chunks`` with ``args.texts`` into evidence in a copy of ``args.documents``; the exit code."""
    chunks, source, output = Path(args.chunks), Path(args.documents), Path(args.output)
    # Read as written, not by the run's loader: a query set not judged yet (the usual input) is no run's dataset.
    content, raw = read_query_set(source)
    inputs: list[tuple[str, str | os.PathLike[str]]] = [
        ("chunk judgements", chunks), ("--texts", args.texts), ("--documents query set", source),
    ]
    if isinstance(raw.get("documents"), str):
        inputs.append(("documents", resolve_path(raw["documents"], source.parent)))
    check_query_set_output(args.output, "--output", inputs)  # before anything else is read
    judgements = chunk_judgements(chunks)
    texts = read_chunk_texts(Path(args.texts))
    documents = read_documents(source, raw)
    queries, explicit = query_ids(source, raw)
    unknown = sorted(set(judgements) - set(queries))
    if unknown:
        raise DatasetError(f"{chunks}: judges {len(unknown):,} query id(s) that {source} lacks: "
                           f"{some_of([repr(q) for q in unknown], _UNKNOWN_LISTED)}; add the queries to the query set "
                           "or remove them from the qrels")
    result = convert(judgements, texts, documents, explicit, queries)
    rewrite_yaml(source, content, lambda data: add_evidence(data, result, source, output), target=output)
    for qid, chunk, why in result.unlocatable:
        say(f"{chunks}: query {qid!r}, chunk {chunk!r}: unlocatable ({why})")
    for qid, chunk, doc in result.conflicts:
        say(f"{chunks}: query {qid!r}, chunk {chunk!r}: located in document {doc!r}, which {source} judges 0 (not "
            "relevant) or below for this query; not written: remove the judgement or the chunk's")
    say(f"{chunks}: {summary(result, sum(len(graded) for graded in judgements.values()), output)}")
    return 1 if result.unlocatable or result.conflicts else 0


def chunk_judgements(path: Path) -> dict[str, dict[str, float]]:
    """``{query: {chunk id: grade}}`` of a TREC or BEIR qrels file (rag_eval's reader: one line per problem)."""
    table, _ = read_judgements(path)
    judgements: dict[str, dict[str, float]] = {}
    for code, chunk, grade in zip(table.query_codes.tolist(), table.docs.tolist(), table.values.tolist()):
        judgements.setdefault(table.query_keys[code], {})[chunk] = float(grade)
    return judgements


def query_ids(path: Path, raw: dict[str, Any]) -> tuple[list[str], dict[str, dict[str, float]]]:
    """The query set's query ids in order, and its explicit document judgements (the numeric ones)."""
    queries = raw.get("queries")
    if not isinstance(queries, list) or not queries:
        raise DatasetError(f"{path}: queries: expected a list of queries ({{id, text}}); the qrels judge them")
    ids: list[str] = []
    explicit: dict[str, dict[str, float]] = {}
    for n, query in enumerate(queries):
        try:
            qid = id_from_value(query.get("id") if isinstance(query, dict) else None)
        except ValueError as failure:
            raise DatasetError(f"{path}: queries[{n}].id: {failure}") from None
        ids.append(qid)
        given = query.get("judgements")
        if isinstance(given, dict):
            explicit[qid] = {str(doc): float(grade) for doc, grade in given.items()
                             if isinstance(grade, (int, float)) and not isinstance(grade, bool)}
    return ids, explicit


def add_evidence(data: Any, result: Conversion, source: Path, output: Path) -> None:
    """Append each query's converted spans to its ``evidence`` in ``data`` (the parsed query set).

    A ``documents`` path is relative to the query set's folder: it is rewritten relative to the
    output's folder (absolute where no relative path leads there), so the output reads the same files.
    """
    documents = data.get("documents")
    if isinstance(documents, str) and output.resolve().parent != source.resolve().parent:
        target = resolve_path(documents, source.parent).resolve()
        try:
            data["documents"] = Path(os.path.relpath(target, output.resolve().parent)).as_posix()
        except ValueError:  # another drive (Windows): no relative path
            data["documents"] = str(target)
    for query in data["queries"]:
        spans = result.evidence.get(id_from_value(query.get("id")))
        if not spans:
            continue
        items = []
        for doc, start, end, grade in spans:
            item: dict[str, Any] = {"doc": doc, "start": start, "end": end}
            if grade != 1:
                item["grade"] = int(grade) if grade.is_integer() else grade
            items.append(item)
        if query.get("evidence") is None:
            query.pop("evidence", None)  # `evidence:` with nothing after it
            append(query, items, "evidence")
        else:
            for item in items:
                append(query["evidence"], item)


def summary(result: Conversion, judged: int, output: Path) -> str:
    """``9 judged chunks: 5 located (...), 2 unlocatable, 1 in a document judged 0, 1 judged 0; wrote N spans``."""
    located = sum(result.located.values())
    ways = ", ".join(f"{result.located[how]:,} {words}" for how, words in (
        (BY_ID, "by the offsets in their ids"), (EXACT, "exactly"), (TOLERANT, "with white space and case ignored"),
    ) if result.located.get(how))
    spans = sum(len(spans) for spans in result.evidence.values())
    parts = [f"{located:,} located" + (f" ({ways})" if ways else ""), f"{len(result.unlocatable):,} unlocatable"]
    if result.conflicts:
        parts.append(f"{len(result.conflicts):,} in a document judged 0 for the query")
    if result.not_relevant:
        parts.append(f"{result.not_relevant:,} judged 0 or below (not evidence)")
    return f"{judged:,} judged chunks: {', '.join(parts)}; wrote {spans:,} evidence spans to {output}"
