"""rag_eval's YAML query set: a pydantic model of the file, and its loader.

The file is validated as strictly as a run config, with the same one-line
messages (file, field path, problem, bad value, fix; see
:mod:`rag_eval.config.messages`): unknown keys, wrong types, ids YAML read as
dates or numbers, grades that are not finite numbers. Then the checks that
span items: duplicate ids, judgements of passages the corpus lacks, a query
set with no judgement at all. Every problem is collected before raising.

A query set judges either a ``corpus`` of passages (by id) or ``documents``
(long texts; a list of ``{id, text, title?}``, or the path of a .jsonl file or of
a folder of .txt/.md files, see :mod:`rag_eval._data.datasets.documents`), never both.
With documents, a query's ``judgements`` are document judgements and its
``evidence`` lists spans ``{doc, start, end, grade?}`` or ``{doc, quote, match?, grade?}``
(grade > 0, default 1; offsets and quotes as :mod:`rag_eval._data.datasets.evidence`
says; ``match: whitespace`` lets runs of white space in a quote match any run). A
``grade_map`` applies to judgements, not to evidence grades. A judgement may carry its provenance,
``{grade: 2, source: llm:qwen, annotator?, time?}``, and so may an evidence item (``source``,
``annotator``, ``time``): ``rag-eval judgements merge`` writes them (rag_eval._data.judging.grades says
what a source may be); they change no number and no fingerprint. The sources are kept in the Dataset's
``judgement_sources`` and ``evidence_sources`` (rag_eval._data.datasets.provenance).

A document's title is as the config's ``dataset.titles`` says (:mod:`rag_eval._data.datasets.titles`):
an inline document's ``title`` or a .jsonl line's ``"title"`` as written, a folder's files by their
front matter or first heading (``auto``); the files' names (``file_name``, a folder only); or none.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
)

from rag_eval._core.errors import DatasetError
from rag_eval._core.files import MAX_DOCUMENT_BYTES
from rag_eval._core.spans import EvidenceSpan
from rag_eval._core.validation import field_path, validation_problems
from rag_eval._core.yaml_loader import load_yaml, parse_yaml
from rag_eval._data.datasets.corpus import load_corpus_file, resolve_path
from rag_eval._data.datasets.documents import chunk_id_clash, chunk_id_clashes, load_documents
from rag_eval._data.datasets.evidence import (
    conflict_message,
    document_grades,
    evidence_span,
    unknown_document,
)
from rag_eval._data.datasets.model import Dataset, Problems, Query
from rag_eval._data.datasets.provenance import judgement_sources
from rag_eval._data.datasets.titles import AUTO, FILE_NAME, NONE
from rag_eval._data.datasets.values import (
    evidence_grade_from_value,
    grade_from_value,
    id_from_value,
    mapped_grade,
)
from rag_eval._data.judging.anchor import EvidenceItem, Finding, stale_evidence
from rag_eval._data.judging.grades import note_from_value, provenance_from_value

Id = Annotated[str, BeforeValidator(id_from_value)]
Grade = Annotated[float, BeforeValidator(grade_from_value)]
EvidenceGrade = Annotated[float, BeforeValidator(evidence_grade_from_value)]
# Who gave a grade (rag_eval._data.judging.grades): `human`, `llm+verified`, `<kind>:<name>`; and by whom, when.
Provenance = Annotated[str, BeforeValidator(provenance_from_value)]
Annotator = Annotated[str, BeforeValidator(lambda value: note_from_value(value, "annotator"))]
When = Annotated[str, BeforeValidator(lambda value: note_from_value(value, "time"))]
_PROVENANCE_KEYS = ("grade", "source", "annotator", "time")


def _judgement_grade(value: Any) -> float:
    """A judgement: a grade (``2``), or a grade with its provenance (``{grade: 2, source: llm:qwen}``, as
    ``rag-eval judgements merge`` writes it; ``annotator`` and ``time`` optional)."""
    if isinstance(value, Mapping):
        unknown = [key for key in value if key not in _PROVENANCE_KEYS]
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r}; a judgement is a grade, or {{grade, source, annotator?, time?}}")
        if "grade" not in value or "source" not in value:
            raise ValueError("a judgement written as a mapping needs grade and source ({grade: 2, source: human})")
        provenance_from_value(value["source"])
        for key in ("annotator", "time"):
            if key in value:
                note_from_value(value[key], key)
        value = value["grade"]
    return grade_from_value(value)


JudgementGrade = Annotated[float, BeforeValidator(_judgement_grade)]

# Ordering keys of problems, so that `rag-eval validate` lists them in the file's order.
_TOP, _CORPUS, _QUERIES, _OVERALL = 0, 1, 2, 3
_NEITHER = "a query set needs 'corpus' (passages judged by id) or 'documents' (long texts judged by document and evidence)"


class _Strict(BaseModel):
    # strict: a quoted "2" is not silently a grade, nor `yes` an id.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class PassageSpec(_Strict):
    """A passage of an inline corpus."""

    id: Id
    text: str
    title: str | None = None
    metadata: dict[str, Any] | None = None


class DocumentSpec(_Strict):
    """A document given inline: its id, its full text and an optional title."""

    id: Id
    text: str
    title: str | None = None


class EvidenceSpec(_Strict):
    """A span of a document that answers the query: ``{doc, start, end, grade?}`` or ``{doc, quote, grade?}``."""

    doc: Id
    # Offsets are checked by rag_eval._data.datasets.evidence (one wording for every format), not by type here.
    start: Any = None
    end: Any = None
    quote: str | None = None
    # How the quote is matched: exactly (the default), or with runs of white space matching any run
    # (rag_eval._data.datasets.evidence).
    match: Literal["exact", "whitespace"] | None = None
    # What start and end held when judged: an edit of the document is then noticed (and a moved span found
    # again) by rag_eval._data.judging.anchor; only their form is checked on loading (evidence.stored_check_problem).
    text: str | None = None
    sha256: str | None = None
    grade: EvidenceGrade = 1.0
    # Who gave the grade, by whom and when (rag-eval judgements merge writes them); no part of any number.
    source: Provenance | None = None
    annotator: Annotator | None = None
    time: When | None = None


class QuerySpec(_Strict):
    """A question, its tags, its graded judgements ``{doc_id: grade}`` and (with documents) its evidence spans."""

    id: Id
    text: str
    # A list of tags ([billing, numeric]) or named ones ({topic: billing, kind: [numeric, short]}): the report
    # shows each retriever's mean per tag value (rag_eval._compare.segments.segment_table).
    tags: list[str] | dict[str, str | list[str]] = Field(default_factory=list)
    judgements: dict[Id, JudgementGrade] = Field(default_factory=dict)
    evidence: list[EvidenceSpec] = Field(default_factory=list)

    @field_validator("text", mode="before")
    @classmethod
    def _has_text(cls, value: Any) -> Any:
        if value is None or (isinstance(value, str) and not value.strip()):
            raise ValueError("empty query text; give each query a 'text'")
        return value

    @field_validator("tags", "judgements", "evidence", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any, info: Any) -> Any:
        # `judgements:` with nothing after it is YAML's null: no judgements yet.
        if value is None:
            return {} if info.field_name == "judgements" else []
        return value


def _tags(tags: list[str] | dict[str, str | list[str]]) -> tuple[str, ...]:
    """Tags as strings; a named tag ``{topic: billing}`` becomes ``"topic:billing"`` (rag_eval._compare.segments.query_tags)."""
    if isinstance(tags, list):
        return tuple(tags)
    return tuple(f"{key}:{value}" for key, values in tags.items() for value in ([values] if isinstance(values, str) else values))


def _corpus_form(value: Any) -> str:
    return "<file>" if isinstance(value, str) else "<passages>"


class QuerySetFile(_Strict):
    """A YAML query set: ``name``, ``description``, ``corpus`` or ``documents``, ``queries``."""

    name: str | None = None
    description: str | None = None
    corpus: (
        Annotated[
            Annotated[str, Tag("<file>")] | Annotated[list[PassageSpec], Tag("<passages>")],
            Discriminator(_corpus_form),
            Field(description="a list of passages (id, text, title) or the path of a corpus file"),
        ]
        | None
    ) = None
    documents: (
        Annotated[
            Annotated[str, Tag("<file>")] | Annotated[list[DocumentSpec], Tag("<passages>")],
            Discriminator(_corpus_form),
            Field(description="a list of documents (id, text, title), or the path of a .jsonl file or of a folder "
                              "of .txt/.md files"),
        ]
        | None
    ) = None
    queries: list[QuerySpec] = Field(min_length=1)


def load_yaml_query_set(
    path: Path, grade_map: Mapping[float, float] | None = None, text: str | None = None, titles: str = AUTO
) -> Dataset:
    """A YAML query set: ``name``, ``description``, ``corpus`` (inline list or a file) or ``documents``, ``queries``.

    ``text``: the file's text, when the caller holds it (a query set about to be written, checked first);
    paths in it are still resolved against ``path``'s folder. ``titles``: where the documents' titles come
    from (``auto``, ``file_name``, ``none``; :mod:`rag_eval._data.datasets.titles`); ``file_name`` needs
    documents that are files (a folder), else a DatasetError says so. A corpus of passages keeps its titles
    (``none`` is applied to it by :func:`rag_eval._data.datasets.load_dataset`).
    """

    if text is None:
        raw = load_yaml(path, "YAML query set", MAX_DOCUMENT_BYTES, DatasetError)
    else:
        raw = parse_yaml(text, path, DatasetError)
    if not isinstance(raw, dict):
        raise DatasetError(f"{path}: a query set is a mapping with keys name, description, corpus, queries")
    problems = Problems()
    try:
        model: QuerySetFile | None = QuerySetFile.model_validate(raw)
    except ValidationError as error:
        model = None
        for item, message in zip(error.errors(), validation_problems(path, error, raw, QuerySetFile)):
            problems.add(message, _order(item["loc"]))
    # kept_evidence: a query whose invalid evidence items were left out -> the positions in the file of those kept
    queries, kept_evidence = (list(enumerate(model.queries)), {}) if model else _valid_queries(raw.get("queries"))
    if raw.get("documents") is not None:
        return _document_dataset(path, raw, model, queries, grade_map, problems, titles, kept_evidence)
    if titles == FILE_NAME and raw.get("corpus") is not None:
        raise DatasetError(
            f"{path}: dataset.titles: file_name titles documents by the names of their files, and this query set "
            "has a corpus of passages, not documents; in the config's dataset section set titles: auto or titles: none"
        )
    if raw.get("corpus") is None:
        problems.add(f"{path}: {_NEITHER}", (_TOP,))
        problems.raise_if_any()
    corpus, corpus_label = _corpus(path, raw, model, problems)
    judgements = _collect(path, raw, queries, corpus, corpus_label, grade_map, problems)
    for n, query in queries:
        if query.evidence:
            where = field_path(raw, ["queries", n, "evidence"])
            problems.add(f"{path}: {where}: evidence spans need documents; give the query set 'documents' instead of "
                         "'corpus' (passages have no offsets to point into)", (_QUERIES, n))
    problems.raise_if_any()
    return Dataset(
        *_names(path, model, queries), judgements, corpus, str(path), description=_description(model),
        judgement_sources=judgement_sources(raw, _positions(queries), judgements),
    )


def _positions(queries: list[tuple[int, QuerySpec]]) -> dict[str, int]:
    """Each query's index in the file (ids are unique once the loader's checks passed)."""
    return {query.id: n for n, query in queries}


def _names(path: Path, model: QuerySetFile | None, queries: list[tuple[int, QuerySpec]]) -> tuple[str, dict[str, Query]]:
    """The dataset's name (the file's stem unless given) and its queries."""
    name = (model.name if model else None) or path.stem
    return name, {q.id: Query(q.id, q.text, _tags(q.tags)) for _, q in queries}


def _description(model: QuerySetFile | None) -> str:
    return ((model.description if model else None) or "").strip()


def _document_dataset(
    path: Path,
    raw: dict[str, Any],
    model: QuerySetFile | None,
    queries: list[tuple[int, QuerySpec]],
    grade_map: Mapping[float, float] | None,
    problems: Problems,
    titles: str = AUTO,
    kept_evidence: Mapping[int, list[int]] | None = None,
) -> Dataset:
    """A query set with documents: document judgements and evidence, checked against the documents.

    ``kept_evidence``: for a query some of whose evidence items were invalid (and left out), the position in the
    file of each item kept, so that messages name the item the user wrote.
    """
    if raw.get("corpus") is not None:
        problems.add(
            f"{path}: give either 'corpus' (passages judged by id) or 'documents' (long texts judged by document "
            "and evidence), not both",
            (_TOP,),
        )
        problems.raise_if_any()
    notes: list[str] = []
    documents, label = _documents(path, raw, model, problems, notes, titles)
    if not documents:
        problems.raise_if_any()  # every judgement and span would name an unknown document: the cause is enough
    texts = {doc: entry["text"] for doc, entry in documents.items()}
    explicit = _collect(path, raw, queries, documents, label, grade_map, problems, kind="document")
    evidence: dict[str, tuple[EvidenceSpan, ...]] = {}
    evidence_sources: dict[str, tuple[str, ...]] = {}  # aligned with evidence[qid]; "" where none is recorded
    positions: dict[tuple[str, str], list[int]] = {}  # (qid, doc) -> its evidence items, for messages
    recorded: list[tuple[str, EvidenceItem]] = []  # items whose offsets record their text or hash
    repeated = _duplicates(path, raw, "queries", "query", Problems())  # reported by _collect already
    for n, query in queries:
        if n in repeated:
            continue
        spans = []
        sources: list[str] = []
        at = (kept_evidence or {}).get(n)
        for i, item in enumerate(query.evidence):
            i = at[i] if at else i
            where = field_path(raw, ["queries", n, "evidence", i])
            if item.match is not None and item.quote is None:
                problems.add(f"{path}: {where}: match applies to a quote; remove it, or give a quote instead of "
                             "start and end", (_QUERIES, n))
                continue
            span, found = evidence_span(
                item.doc, texts, label, start=item.start, end=item.end, quote=item.quote, grade=item.grade,
                match=item.match or "exact", stored_text=item.text, sha256=item.sha256,
            )
            problems.extend([f"{path}: {where}: {message}" for message in found], (_QUERIES, n))
            if span is not None:
                spans.append(span)
                sources.append(item.source or "")
                if item.text is not None or item.sha256 is not None:
                    recorded.append((query.id, EvidenceItem(item.doc, item.start, item.end, text=item.text,
                                                            sha256=item.sha256)))
                positions.setdefault((query.id, span.doc), []).append(i)
        if spans:
            evidence[query.id] = tuple(spans)
            if any(sources):
                evidence_sources[query.id] = tuple(sources)
    judgements, conflicts = document_grades(evidence, explicit)
    index = {query.id: n for n, query in queries if n not in repeated}
    for qid, doc, grade in conflicts:
        where = field_path(raw, ["queries", index[qid], "judgements", doc])
        problems.add(f"{path}: {where}: {conflict_message(doc, grade, positions[(qid, doc)])}", (_QUERIES, index[qid]))
    problems.raise_if_any()
    # Stale spans load at their offsets (a run scores them, says so and does not gate on them unless told).
    stale = _stale(texts, recorded)
    return Dataset(
        *_names(path, model, queries), judgements, dict(documents), str(path), tuple(notes),
        description=_description(model), documents=texts, evidence=evidence, document_judgements=explicit,
        stale_evidence=stale, judgement_sources=judgement_sources(raw, _positions(queries), explicit),
        evidence_sources=evidence_sources,
    )


def _stale(texts: Mapping[str, str], recorded: list[tuple[str, EvidenceItem]]) -> tuple[tuple[str, Finding], ...]:
    """``(query id, finding)`` of each recorded span that is stale (rag_eval._data.judging.anchor)."""
    found = stale_evidence(texts, [item for _, item in recorded])
    by_item = {id(finding.item): finding for finding in found}
    return tuple((qid, by_item[id(item)]) for qid, item in recorded if id(item) in by_item)


def _documents(
    path: Path, raw: dict[str, Any], model: QuerySetFile | None, problems: Problems, notes: list[str],
    titles: str = AUTO,
) -> tuple[dict[str, dict[str, str]], str]:
    """The documents (inline, or from a .jsonl file or a folder) and how messages name them; notes go to ``notes``."""

    value = raw.get("documents")
    if isinstance(value, str):
        documents_path = resolve_path(value, path.parent)
        found = Problems()
        from_path = load_documents(documents_path, found, notes, titles)
        problems.merge(found, (_CORPUS,))
        kind = "folder" if documents_path.is_dir() else "file"
        return from_path, f"({kind} {documents_path})"
    if titles == FILE_NAME:
        raise DatasetError(
            f"{path}: documents: dataset.titles: file_name titles each document by the name of its file, and "
            "documents written in the query set have no file of their own; in the config's dataset section set "
            "titles: auto (each document's title) or titles: none"
        )
    items = list(enumerate(model.documents)) if model and isinstance(model.documents, list) else (
        _valid_items(value, DocumentSpec)
    )
    repeated = _duplicates(path, raw, "documents", "document", problems)
    documents = {
        item.id: {"text": item.text, "title": "" if titles == NONE else item.title or ""}
        for n, item in items if n not in repeated
    }
    position = {item.id: n for n, item in items if n not in repeated}
    for doc, other in chunk_id_clashes(documents):
        where = field_path(raw, ["documents", position[doc], "id"])
        problems.add(f"{path}: {where}: {chunk_id_clash(doc, other)}; rename one of the two", (_CORPUS, position[doc]))
    if not documents and isinstance(value, list) and not value:
        problems.add(f"{path}: documents: no documents; list them (id, text) or give a .jsonl file or a folder",
                     (_CORPUS,))
    return documents, f"of {path}"


def _corpus(
    path: Path, raw: dict[str, Any], model: QuerySetFile | None, problems: Problems
) -> tuple[dict[str, dict[str, Any]], str]:
    """The corpus (inline or from its file) and how messages name it."""

    value = raw.get("corpus")
    if isinstance(value, str):
        corpus_path = resolve_path(value, path.parent)
        found = Problems()
        from_file = load_corpus_file(corpus_path, found)
        problems.merge(found, (_CORPUS,))
        if not from_file and not found.count:
            problems.add(f"{corpus_path}: the corpus is empty", (_CORPUS,))
        return from_file, str(corpus_path)
    passages = list(enumerate(model.corpus)) if model and isinstance(model.corpus, list) else (
        _valid_items(value, PassageSpec)
    )
    repeated = _duplicates(path, raw, "corpus", "passage", problems)
    corpus: dict[str, dict[str, Any]] = {}
    for n, passage in passages:
        if n in repeated:
            continue
        corpus[passage.id] = {"text": passage.text, "title": passage.title or ""}
        if passage.metadata:
            corpus[passage.id]["metadata"] = passage.metadata
    if not corpus and isinstance(value, list) and not value:
        problems.add(f"{path}: corpus: the corpus is empty; list its passages or give a corpus file", (_CORPUS,))
    return corpus, f"{path} (corpus)"


def _collect(
    path: Path,
    raw: dict[str, Any],
    queries: list[tuple[int, QuerySpec]],
    corpus: Mapping[str, Any],
    corpus_label: str,
    grade_map: Mapping[float, float] | None,
    problems: Problems,
    kind: str = "passage",
) -> dict[str, dict[str, float]]:
    """Judgements by query, after the checks that span items (duplicates, the corpus, grade_map).

    ``kind`` "document": the judgements are document judgements, checked against the documents.
    """
    judgements: dict[str, dict[str, float]] = {}
    repeated = _duplicates(path, raw, "queries", "query", problems)
    # Ids of passages that failed their own checks: judging them is not a second problem.
    raw_corpus = raw.get("corpus" if kind == "passage" else "documents")
    reported = {str(p.get("id")).strip() for p in raw_corpus if isinstance(p, dict)} if isinstance(raw_corpus, list) else set()
    for n, query in queries:
        if n in repeated:
            continue
        raw_judgements = raw["queries"][n].get("judgements") or {}
        if len(raw_judgements) != len(query.judgements):
            where = field_path(raw, ["queries", n, "judgements"])
            problems.add(f"{path}: {where}: a passage is judged twice (written once as a number, once as text)",
                         (_QUERIES, n))
        graded: dict[str, float] = {}
        for doc, grade in query.judgements.items():
            where = field_path(raw, ["queries", n, "judgements", doc])
            if corpus and doc not in corpus and doc not in reported:
                if kind == "document":
                    problems.add(f"{path}: {where}: {unknown_document(doc, corpus, corpus_label)}", (_QUERIES, n))
                else:
                    problems.add(f"{path}: {where}: passage {doc!r} is not in the corpus {corpus_label}", (_QUERIES, n))
                continue
            try:
                graded[doc] = mapped_grade(grade, grade_map)
            except ValueError as failure:
                problems.add(f"{path}: {where}: {failure}", (_QUERIES, n))
        if graded:
            judgements[query.id] = graded
    raw_queries = raw.get("queries") if isinstance(raw.get("queries"), list) else []
    if kind == "passage" and raw_queries and not any(isinstance(q, dict) and q.get("judgements") for q in raw_queries):
        problems.add(f"{path}: no query has any judgement; judge at least one passage per query", (_OVERALL,))
    if kind == "document" and raw_queries and not any(
        isinstance(q, dict) and (q.get("judgements") or q.get("evidence")) for q in raw_queries
    ):
        problems.add(f"{path}: no query has any judgement or evidence; give each query evidence spans or document "
                     "judgements", (_OVERALL,))
    return judgements


def _duplicates(path: Path, raw: dict[str, Any], section: str, what: str, problems: Problems) -> set[int]:
    """Positions in ``raw[section]`` whose id an earlier item has; each is reported once.

    Read from the raw items, so that an item with another problem still counts.
    """
    items = raw.get(section)
    if not isinstance(items, list):
        return set()
    first: dict[str, int] = {}
    repeated = set()
    for n, item in enumerate(items):
        try:
            item_id = id_from_value(item.get("id")) if isinstance(item, dict) else None
        except ValueError:
            continue  # reported by the schema
        if item_id is None:
            continue
        if item_id in first:
            where = field_path(raw, [section, n, "id"])
            problems.add(
                f"{path}: {where}: duplicate {what} id {item_id!r} (first at {section}[{first[item_id]}])",
                (_QUERIES if section == "queries" else _CORPUS, n),
            )
            repeated.add(n)
        else:
            first[item_id] = n
    return repeated


Item = TypeVar("Item", bound=BaseModel)


def _valid_items(values: Any, model: type[Item]) -> list[tuple[int, Item]]:
    """The items of a list that validate on their own (the others' problems are already reported)."""
    if not isinstance(values, list):
        return []
    valid = []
    for n, value in enumerate(values):
        try:
            valid.append((n, model.model_validate(value)))
        except ValidationError:
            continue
    return valid


def _valid_queries(values: Any) -> tuple[list[tuple[int, QuerySpec]], dict[int, list[int]]]:
    """The queries that validate on their own, and those whose only problems are in some of their evidence items:
    those items left out (their problems are reported already), so that the others are checked in the same pass.

    Also, for each query so kept, the positions of its kept evidence items in the file.
    """
    if not isinstance(values, list):
        return [], {}
    valid = []
    kept_at: dict[int, list[int]] = {}
    for n, value in enumerate(values):
        try:
            valid.append((n, QuerySpec.model_validate(value)))
            continue
        except ValidationError as error:
            bad = {item["loc"][1] for item in error.errors()
                   if len(item["loc"]) > 1 and item["loc"][0] == "evidence" and isinstance(item["loc"][1], int)}
            if not bad or len(bad) != len({item["loc"][:2] for item in error.errors()}):
                continue  # a problem outside the evidence items: the query waits for it
        at = [i for i in range(len(value["evidence"])) if i not in bad]
        if at:
            try:
                valid.append((n, QuerySpec.model_validate({**value, "evidence": [value["evidence"][i] for i in at]})))
            except ValidationError:
                continue
            kept_at[n] = at
    return valid, kept_at


def _order(loc: tuple[Any, ...]) -> tuple[int, ...]:
    """The ordering key of a schema problem at ``loc``: its section, then its item's index."""
    section = {"corpus": _CORPUS, "documents": _CORPUS, "queries": _QUERIES}.get(str(loc[0]) if loc else "", _TOP)
    index = next((part for part in loc[1:] if isinstance(part, int)), -1)
    return (section, index)
