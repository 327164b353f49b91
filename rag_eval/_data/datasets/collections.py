"""Published collections: BEIR folders, TREC qrels with queries and corpus files, Cranfield.

Judgements come as qrels lines (TREC ``qid iter doc grade``, BEIR ``qid doc grade``
with an optional header, Cranfield ``qid doc code``); each line's problems name
the file and the line. A ``grade_map`` turns collection codes into gains.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from rag_eval._core.messages import shown
from rag_eval._data.datasets.corpus import load_corpus_file, load_queries_file
from rag_eval._data.datasets.file_corpus import FileCorpus, streamable
from rag_eval._data.datasets.lines import split_fields, strip_ending, text_lines
from rag_eval._data.datasets.model import Dataset, Problems, Query
from rag_eval._data.datasets.values import grade_from_text, id_from_text, mapped_grade

CRANFIELD_GRADE_MAP = {1.0: 4.0, 2.0: 3.0, 3.0: 2.0, 4.0: 1.0, -1.0: 0.0}


def load_beir(
    path: Path, split: str = "test", grade_map: Mapping[float, float] | None = None, stream_corpus: bool = False
) -> Dataset:
    """A BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv.

    Only the queries judged in the split are kept (that is what the split means);
    the number left out is recorded in the dataset notes. ``stream_corpus``: the corpus
    stays on disk (:class:`~rag_eval._data.datasets.file_corpus.FileCorpus`), for the Ray engine.
    """
    problems = Problems()
    qrels_path = path / "qrels" / f"{split}.tsv"
    rows = list(qrels_rows(qrels_path, 3, f"BEIR qrels file of split {split!r}", problems))
    corpus, corpus_notes = corpus_of(path / "corpus.jsonl", problems, "BEIR corpus file", stream_corpus)
    queries_path = path / "queries.jsonl"
    queries = load_queries_file(queries_path, problems, "BEIR queries file")
    lines: dict[tuple[str, str], int] = {}
    judgements = judgements_from_rows(rows, qrels_path, problems, grade_map, lines)
    queries, notes = _restrict_queries(queries, judgements, qrels_path, queries_path, problems, lines)
    check_against_corpus(judgements, corpus, str(path / "corpus.jsonl"), str(qrels_path), problems, lines)
    problems.raise_if_any()
    return Dataset(f"{path.name}/{split}", queries, judgements, corpus, str(path), (*notes, *corpus_notes))


def load_trec(
    qrels: Path,
    queries: Path,
    corpus: Path,
    grade_map: Mapping[float, float] | None = None,
    stream_corpus: bool = False,
) -> Dataset:
    """TREC qrels (``qid iter doc grade``) with a queries file and a corpus file (``stream_corpus``: as load_beir)."""
    problems = Problems()
    corpus_docs, corpus_notes = corpus_of(corpus, problems, "corpus file", stream_corpus)
    query_set = load_queries_file(queries, problems)
    rows = qrels_rows(qrels, 4, "TREC qrels file", problems)
    lines: dict[tuple[str, str], int] = {}
    judgements = judgements_from_rows(rows, qrels, problems, grade_map, lines)
    query_set, notes = _restrict_queries(query_set, judgements, qrels, queries, problems, lines)
    check_against_corpus(judgements, corpus_docs, str(corpus), str(qrels), problems, lines)
    problems.raise_if_any()
    return Dataset(qrels.stem, query_set, judgements, corpus_docs, str(qrels), (*notes, *corpus_notes))


def corpus_of(
    path: Path, problems: Problems, what: str, stream: bool
) -> tuple[Mapping[str, Mapping[str, Any]], tuple[str, ...]]:
    """The corpus file read into memory, or (``stream``) indexed on disk where its format allows; and notes.

    Only an uncompressed JSON Lines file can be read at random from disk: any other format
    is held in memory even when streaming was asked for, and a note says so and why.
    """
    if not stream:
        return load_corpus_file(path, problems, what), ()

    if streamable(path):
        return FileCorpus.index(path, problems, what), (f"corpus read from disk as needed ({path.name})",)
    note = (
        f"corpus held in memory: only an uncompressed JSON Lines file (.jsonl) is read from disk as needed, "
        f"and {path.name} is not one"
    )
    return load_corpus_file(path, problems, what), (note,)


def load_cranfield(path: Path, grade_map: Mapping[float, float] | None = None) -> Dataset:
    """The Cranfield 1400 collection (cran.all.1400, cran.qry, cranqrel).

    cranqrel numbers queries by their position in cran.qry (1..225), not by the
    ``.I`` field. Codes: 1 = complete answer ... 4 = minimum interest, -1 = none;
    without a ``grade_map`` the default maps them to gains 4, 3, 2, 1, 0.
    """
    problems = Problems()
    docs_path = path / "cran.all.1400"
    corpus: dict[str, dict[str, Any]] = {}
    for n, doc_id, fields in _read_smart(docs_path, "Cranfield documents file", problems):
        if doc_id in corpus:
            problems.add(f"{docs_path}:{n}: duplicate passage id {doc_id!r} (.I {doc_id})")
            continue
        corpus[doc_id] = {"text": fields.get("W", ""), "title": fields.get("T", "")}
    queries_path = path / "cran.qry"
    queries: dict[str, Query] = {}
    for position, (n, number, fields) in enumerate(_read_smart(queries_path, "Cranfield queries file", problems), 1):
        text = fields.get("W", "")
        if not text.strip():
            problems.add(f"{queries_path}:{n}: query {str(position)!r} (.I {number}): empty query text")
        queries[str(position)] = Query(str(position), text)
    qrels_path = path / "cranqrel"
    codes = grade_map or CRANFIELD_GRADE_MAP
    lines: dict[tuple[str, str], int] = {}
    judgements = judgements_from_rows(qrels_rows(qrels_path, 3, "Cranfield judgements file", problems), qrels_path,
                                      problems, codes, lines)
    for qid in judgements:
        if qid not in queries:
            problems.add(
                f"{_line_of(qrels_path, lines, qid)}: query {qid!r} is judged but {queries_path.name} has "
                f"{len(queries)} queries (cranqrel numbers queries by their position in cran.qry)"
            )
    check_against_corpus(judgements, corpus, str(docs_path), str(qrels_path), problems, lines)
    problems.raise_if_any()
    note = "grades: cranqrel codes mapped to gains " + ", ".join(f"{int(k)}->{v:g}" for k, v in codes.items())
    return Dataset("cranfield", queries, judgements, corpus, str(path), (note,))


# ---- judgements ------------------------------------------------------------------------------------


def qrels_rows(path: Path, columns: int, what: str, problems: Problems) -> Iterator[tuple[int, str, str, str]]:
    """``(line, qid, doc, grade text)`` of qrels with ``columns`` fields (4: TREC, 3: BEIR or Cranfield).

    A BEIR header (``query-id corpus-id score``) on the first line is skipped.
    """
    want = "qid iter doc_id grade" if columns == 4 else "qid doc_id grade"
    for n, line in text_lines(path, what):
        fields = split_fields(line)
        if not fields:
            continue
        if n == 1 and fields[0] == "query-id":
            continue  # BEIR header
        if len(fields) != columns:
            problems.add(f"{path}:{n}: expected {columns} fields '{want}', found {len(fields)}: {shown(strip_ending(line))}")
            continue
        qid, doc, grade = fields[0], fields[-2], fields[-1]
        try:
            yield n, id_from_text(qid), id_from_text(doc), grade
        except ValueError as failure:
            problems.add(f"{path}:{n}: {failure}")


def judgements_from_rows(
    rows: Iterable[tuple[int, str, str, str]],
    path: Path,
    problems: Problems,
    grade_map: Mapping[float, float] | None,
    lines: dict[tuple[str, str], int] | None = None,
) -> dict[str, dict[str, float]]:
    """``{qid: {doc: gain}}`` from qrels rows; a bad grade or a passage judged twice is a problem.

    ``lines``, when given, receives the line of each ``(qid, doc)``: later problems name it.
    """
    judgements: dict[str, dict[str, float]] = {}
    for n, qid, doc, text in rows:
        try:
            gain = grade_from_text(text) if grade_map is None else mapped_grade(grade_from_text(text), grade_map)
        except ValueError as failure:
            problems.add(f"{path}:{n}: query {qid!r}: doc {doc!r}: grade {text!r}: {failure}")
            continue
        per_query = judgements.get(qid)
        if per_query is None:
            per_query = judgements[qid] = {}
        elif doc in per_query:
            problems.add(f"{path}:{n}: query {qid!r}: doc {doc!r} is judged twice")
            continue
        per_query[doc] = gain
        if lines is not None:
            lines[qid, doc] = n
    return judgements


def _line_of(path: Path | str, lines: Mapping[tuple[str, str], int] | None, qid: str, doc: str | None = None) -> str:
    """``path:line`` of the judgement of ``(qid, doc)`` (of ``qid``'s first, without ``doc``), or ``path`` alone."""
    if lines:
        found = lines.get((qid, doc)) if doc is not None else min(
            (n for (q, _), n in lines.items() if q == qid), default=None)
        if found is not None:
            return f"{path}:{found}"
    return str(path)


def check_against_corpus(
    judgements: Mapping[str, Mapping[str, float]],
    corpus: Mapping[str, Any],
    corpus_label: str,
    source: str,
    problems: Problems,
    lines: Mapping[tuple[str, str], int] | None = None,
) -> None:
    """Every judged passage is in the corpus; some query has a judgement; the corpus is not empty.

    ``lines``: the line of each judgement in ``source`` (:func:`judgements_from_rows`), named in the problem.
    """
    if not any(judgements.values()):
        problems.add(f"{source}: no query has any judgement; judge at least one passage per query")
    if not corpus:
        problems.add(f"{corpus_label}: the corpus is empty")
        return
    for qid, docs in judgements.items():
        for doc in docs:
            if doc not in corpus:
                problems.add(f"{_line_of(source, lines, qid, doc)}: query {qid!r} judges doc {doc!r}, which is not in "
                             f"the corpus {corpus_label}; check the doc id, or add the passage to the corpus")


def _restrict_queries(
    queries: dict[str, Query],
    judgements: Mapping[str, Any],
    qrels_path: Path,
    queries_path: Path,
    problems: Problems,
    lines: Mapping[tuple[str, str], int] | None = None,
) -> tuple[dict[str, Query], tuple[str, ...]]:
    missing = [q for q in judgements if q not in queries]
    for qid in missing[:20]:
        problems.add(f"{_line_of(qrels_path, lines, qid)}: query {qid!r} is judged but not in the queries file "
                     f"{queries_path}; add it there, or remove its judgements")
    kept = {q: queries[q] for q in queries if q in judgements}
    dropped = len(queries) - len(kept)
    if not dropped:
        return kept, ()
    note = f"{dropped} queries of {queries_path.name} have no judgements in {qrels_path.name} and are not part of this split"
    return kept, (note,)


# ---- SMART format (Cranfield) -------------------------------------------------------------------------


def _read_smart(path: Path, what: str, problems: Problems) -> list[tuple[int, str, dict[str, str]]]:
    """SMART records ``(line of .I, id, fields)``: ``.I id`` then fields ``.T .A .B .W`` with text lines."""
    records: list[tuple[int, str, dict[str, str]]] = []
    current: dict[str, list[str]] = {}
    field_name = None
    start, doc_id = 0, None
    for n, raw_line in text_lines(path, what):
        line = strip_ending(raw_line)
        if line.startswith(".I"):
            if doc_id is not None:
                records.append((start, doc_id, _joined(current)))
            field_name, current, start = None, {}, n
            try:
                doc_id = id_from_text(line[2:].strip())  # (".I<TAB>1": white space separates the field)
            except ValueError as failure:
                problems.add(f"{path}:{n}: {failure}")
                doc_id = None
        elif len(line) >= 2 and line[0] == "." and line[1].isalpha() and line[2:].strip() == "":
            field_name = line[1]
            current.setdefault(field_name, [])
        elif field_name is not None:
            current[field_name].append(line)
    if doc_id is not None:
        records.append((start, doc_id, _joined(current)))
    return records


def _joined(fields: Mapping[str, list[str]]) -> dict[str, str]:
    return {k: " ".join(" ".join(v).split()) for k, v in fields.items()}


__all__ = ["CRANFIELD_GRADE_MAP", "load_beir", "load_cranfield", "load_trec"]
