"""The layout of Chroma's chunking evaluation: a folder of documents and a questions CSV with evidence.

    <path>/corpora/<document>.md     one document per file; its id is the file name without .md
                                     (a space written %20, as in a documents folder); its title
                                     as ``dataset.titles`` says (rag_eval._data.datasets.titles:
                                     front matter or first ``# heading`` by default)
    <path>/questions.csv             columns question, references, corpus_id

``references`` is a JSON list of ``{"content", "start_index", "end_index"}``: character
offsets into the document (code points, end exclusive), and the excerpt itself. Every
reference is checked: its offsets are a span of the document and ``content`` equals
``text[start_index:end_index]`` exactly; a mismatch is reported with its CSV line and row.
Each reference becomes an evidence span of grade 1; the document grade is then 1.

Query ids are ``<corpus_id>-<n>``, n the question's position among the questions of its
document in file order, zero-padded to 3 digits (``finance-007``): readable in reports
(the document is in the id) and stable for a given file (the set is published and
pinned; ids change only if its rows are reordered). Each query is tagged with its
document, so that reports can group by it. A question without references is kept,
unjudged, and listed in the dataset's notes.

Documents are read as UTF-8, a leading BOM removed, line endings kept (the published
offsets were made on files with ``\\n`` endings; a mismatch would show as a reported
content mismatch, never as silently shifted spans).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

from rag_eval._core.errors import DatasetError
from rag_eval._core.files import MAX_DOCUMENT_BYTES, read_text
from rag_eval._core.ids import id_problem
from rag_eval._core.messages import did_you_mean, shown, some_of
from rag_eval._core.spans import EvidenceSpan, span_problem
from rag_eval._data.datasets.documents import chunk_id_clash, chunk_id_clashes, folder_document_id, shown_path
from rag_eval._data.datasets.lines import csv_header, csv_records
from rag_eval._data.datasets.model import Dataset, Problems, Query
from rag_eval._data.datasets.titles import AUTO, document_title, front_matter_note

COLUMNS = ("question", "references", "corpus_id")
_ID_DIGITS = 3
# Questions without references named in the dataset's note at most.
_LISTED = 20


def is_chroma_folder(path: Path) -> bool:
    """Whether ``path`` has the layout of Chroma's chunking evaluation (corpora/ and questions.csv)."""
    return (path / "corpora").is_dir() and (path / "questions.csv").is_file()


def load_chroma(path: Path, titles: str = AUTO) -> Dataset:
    """The documents, questions and evidence spans of a Chroma chunking-evaluation folder.

    ``titles``: where the documents' titles come from (``auto``, ``file_name``, ``none``;
    :mod:`rag_eval._data.datasets.titles`); the text of each document is the file's, whatever its title.
    """
    corpora, questions_path = path / "corpora", path / "questions.csv"
    if not corpora.is_dir():
        raise DatasetError(f"{corpora}: no such folder; a chroma dataset holds corpora/<document>.md and questions.csv")
    problems = Problems()
    documents: dict[str, str] = {}
    document_titles: dict[str, str] = {}
    unread: list[tuple[str, str]] = []  # (file, why its front matter title could not be read)
    for file in sorted(corpora.glob("*.md")):
        doc = folder_document_id(file.stem)  # a space is %20 in an id, as in a documents folder
        problem = id_problem(doc)  # (a name that is not UTF-8 holds surrogates)
        if problem is not None:
            problems.add(f"{shown_path(str(file))}: the file name cannot be a document id: it {problem}; rename the file")
            continue
        try:
            documents[doc] = read_text(file, "document", MAX_DOCUMENT_BYTES, DatasetError)
        except DatasetError as failure:
            problems.add(str(failure))
            continue
        document_titles[doc], why = document_title(documents[doc], file.name, titles)
        if why is not None:
            unread.append((file.name, why))
    for doc, other in chunk_id_clashes(documents):
        problems.add(f"{corpora / (doc + '.md')}: {chunk_id_clash(doc, other)}; rename one of the two files")
    if not documents and not problems.count:
        raise DatasetError(f"{corpora}: no .md documents; a chroma dataset holds corpora/<document>.md")
    header = csv_header(questions_path, "questions file")
    missing = [column for column in COLUMNS if column not in header]
    if missing:
        raise DatasetError(
            f"{questions_path}:1: the header lacks column{'s' if len(missing) > 1 else ''} {', '.join(missing)}; "
            f"a chroma questions file has columns {', '.join(COLUMNS)}"
        )
    queries, evidence, unanswered = _questions(questions_path, documents, corpora, problems)
    if not queries and not problems.count:
        problems.add(f"{questions_path}: no questions")
    problems.raise_if_any()
    judgements = {qid: {span.doc: 1.0 for span in spans} for qid, spans in evidence.items()}
    notes: tuple[str, ...] = ()
    if unanswered:
        notes = (f"{len(unanswered)} question(s) of {questions_path.name} have no references and cannot be scored: "
                 f"{some_of(unanswered, _LISTED)}",)
    if unread:
        notes += (front_matter_note(str(corpora), unread, _LISTED),)
    corpus = {doc: {"text": text, "title": document_titles[doc]} for doc, text in documents.items()}
    return Dataset(
        _name(path), queries, judgements, corpus, str(path), notes,
        documents=documents, evidence=evidence, document_judgements={},
    )


def _name(path: Path) -> str:
    """The dataset's name: the folder's own name, also for ``path: .`` or ``..`` (links kept as written)."""
    absolute = Path(os.path.abspath(path))  # normalises . and .. without resolving symbolic links
    return absolute.name or str(absolute)


def _questions(
    questions_path: Path, documents: dict[str, str], corpora: Path, problems: Problems
) -> tuple[dict[str, Query], dict[str, tuple[EvidenceSpan, ...]], list[str]]:
    """Queries, their evidence, and the questions without references (``'<qid>' (row N)``)."""
    queries: dict[str, Query] = {}
    evidence: dict[str, tuple[EvidenceSpan, ...]] = {}
    unanswered: list[str] = []
    per_document: dict[str, int] = defaultdict(int)
    previous_end = 1  # the header's line
    for row, (end_line, record) in enumerate(csv_records(questions_path, "questions file"), start=1):
        # csv reports the line a record ends on; a record (a question with its JSON) may span lines.
        line, previous_end = previous_end + 1, end_line
        where = f"{questions_path}:{line}: row {row}"
        doc = folder_document_id((record.get("corpus_id") or "").strip())
        if doc not in documents:
            hint = did_you_mean(doc, documents)
            problems.add(f"{where}: corpus_id {doc!r} names no document {corpus_name(corpora, doc)}; {hint}"
                         f"documents: {', '.join(sorted(documents))}")
            continue
        per_document[doc] += 1
        qid = f"{doc}-{per_document[doc]:0{_ID_DIGITS}d}"
        where = f"{where} (query {qid!r})"
        text = record.get("question") or ""
        if not text.strip():
            problems.add(f"{where}: the question is empty")
            continue
        queries[qid] = Query(qid, text, (doc,))
        spans = _references(record.get("references"), doc, documents[doc], where, problems)
        if spans:
            evidence[qid] = spans
        elif spans is not None:
            unanswered.append(f"{qid!r} (row {row})")
    return queries, evidence, unanswered


def corpus_name(corpora: Path, doc: str) -> str:
    """How a message names the file of document ``doc``: ``corpora/<doc>.md``."""
    return f"{corpora.name}/{doc}.md"


def _references(
    raw: str | None, doc: str, text: str, where: str, problems: Problems
) -> tuple[EvidenceSpan, ...] | None:
    """The evidence spans of one question's ``references`` (None when the field itself is unreadable)."""
    try:
        references = json.loads(raw or "")
    except (json.JSONDecodeError, RecursionError, ValueError) as failure:
        reason = failure.msg if isinstance(failure, json.JSONDecodeError) else type(failure).__name__
        problems.add(f"{where}: references: invalid JSON ({reason}); write a JSON list of "
                     '{"content", "start_index", "end_index"}')
        return None
    if not isinstance(references, list):
        problems.add(f"{where}: references: expected a JSON list of {{\"content\", \"start_index\", \"end_index\"}}, "
                     f"got {shown(references)}")
        return None
    spans = []
    for i, reference in enumerate(references):
        place = f"{where}: references[{i}]"
        if not isinstance(reference, dict):
            problems.add(f"{place}: expected {{\"content\", \"start_index\", \"end_index\"}}, got {shown(reference)}")
            continue
        missing = [key for key in ("content", "start_index", "end_index") if key not in reference]
        if missing:
            names = " and ".join(repr(key) for key in missing)
            problems.add(f"{place}: {names} {'is' if len(missing) == 1 else 'are'} missing; each reference is "
                         '{"content", "start_index", "end_index"}')
            continue
        start, end, content = reference["start_index"], reference["end_index"], reference["content"]
        problem = span_problem(start, end, len(text))
        if problem is not None:
            problems.add(f"{place}: start_index/end_index in document {doc!r}: {problem}")
            continue
        found = text[start:end]
        if found != content:
            problems.add(
                f"{place}: content {shown(content)} is not the text of document {doc!r} at [{start}, {end}), "
                f"which is {shown(found)}; fix start_index and end_index (code points, end exclusive)"
            )
            continue
        spans.append(EvidenceSpan(doc, start, end, 1.0))
    return tuple(spans)
