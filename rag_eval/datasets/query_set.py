"""rag_eval's YAML query set: a pydantic model of the file, and its loader.

The file is validated as strictly as a run config, with the same one-line
messages (file, field path, problem, bad value, fix; see
:mod:`rag_eval.config.messages`): unknown keys, wrong types, ids YAML read as
dates or numbers, grades that are not finite numbers. Then the checks that
span items: duplicate ids, judgements of passages the corpus lacks, a query
set with no judgement at all. Every problem is collected before raising.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar

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

from rag_eval.config.messages import field_path, validation_problems
from rag_eval.datasets.model import Dataset, Problems, Query
from rag_eval.datasets.values import grade_from_value, id_from_value, mapped_grade
from rag_eval.errors import DatasetError
from rag_eval.files import MAX_DOCUMENT_BYTES

Id = Annotated[str, BeforeValidator(id_from_value)]
Grade = Annotated[float, BeforeValidator(grade_from_value)]

# Ordering keys of problems, so that `rag-eval validate` lists them in the file's order.
_TOP, _CORPUS, _QUERIES, _OVERALL = 0, 1, 2, 3


class _Strict(BaseModel):
    # strict: a quoted "2" is not silently a grade, nor `yes` an id.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class PassageSpec(_Strict):
    """A passage of an inline corpus."""

    id: Id
    text: str
    title: str | None = None
    metadata: dict[str, Any] | None = None


class QuerySpec(_Strict):
    """A question, its tags and its graded judgements ``{doc_id: grade}``."""

    id: Id
    text: str
    tags: list[str] = Field(default_factory=list)
    judgements: dict[Id, Grade] = Field(default_factory=dict)

    @field_validator("text", mode="before")
    @classmethod
    def _has_text(cls, value: Any) -> Any:
        if value is None or (isinstance(value, str) and not value.strip()):
            raise ValueError("empty query text; give each query a 'text'")
        return value

    @field_validator("tags", "judgements", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any, info: Any) -> Any:
        # `judgements:` with nothing after it is YAML's null: no judgements yet.
        if value is None:
            return [] if info.field_name == "tags" else {}
        return value


def _corpus_form(value: Any) -> str:
    return "<file>" if isinstance(value, str) else "<passages>"


class QuerySetFile(_Strict):
    """A YAML query set: ``name``, ``description``, ``corpus`` (passages or a corpus file), ``queries``."""

    name: str | None = None
    description: str | None = None
    corpus: Annotated[
        Annotated[str, Tag("<file>")] | Annotated[list[PassageSpec], Tag("<passages>")],
        Discriminator(_corpus_form),
        Field(description="a list of passages (id, text, title) or the path of a corpus file"),
    ]
    queries: list[QuerySpec] = Field(min_length=1)


def load_yaml_query_set(path: Path, grade_map: Mapping[float, float] | None = None) -> Dataset:
    """A YAML query set: ``name``, ``description``, ``corpus`` (inline list or a file), ``queries``."""
    from rag_eval.config.loader import load_yaml

    raw = load_yaml(path, "YAML query set", MAX_DOCUMENT_BYTES, DatasetError)
    if not isinstance(raw, dict):
        raise DatasetError(f"{path}: a query set is a mapping with keys name, description, corpus, queries")
    problems = Problems()
    try:
        model: QuerySetFile | None = QuerySetFile.model_validate(raw)
    except ValidationError as error:
        model = None
        for item, message in zip(error.errors(), validation_problems(path, error, raw, QuerySetFile)):
            problems.add(message, _order(item["loc"]))
    queries = list(enumerate(model.queries)) if model else _valid_items(raw.get("queries"), QuerySpec)
    corpus, corpus_label = _corpus(path, raw, model, problems)
    judgements = _collect(path, raw, queries, corpus, corpus_label, grade_map, problems)
    problems.raise_if_any()
    name = (model.name if model else None) or path.stem
    description = ((model.description if model else None) or "").strip()
    query_map = {q.id: Query(q.id, q.text, tuple(q.tags)) for _, q in queries}
    return Dataset(name, query_map, judgements, corpus, str(path), description=description)


def _corpus(
    path: Path, raw: dict[str, Any], model: QuerySetFile | None, problems: Problems
) -> tuple[dict[str, dict[str, Any]], str]:
    """The corpus (inline or from its file) and how messages name it."""
    from rag_eval.datasets.corpus import load_corpus_file, resolve_path

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
) -> dict[str, dict[str, float]]:
    """Judgements by query, after the checks that span items (duplicates, the corpus, grade_map)."""
    judgements: dict[str, dict[str, float]] = {}
    repeated = _duplicates(path, raw, "queries", "query", problems)
    # Ids of passages that failed their own checks: judging them is not a second problem.
    raw_corpus = raw.get("corpus")
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
                problems.add(f"{path}: {where}: passage {doc!r} is not in the corpus {corpus_label}", (_QUERIES, n))
                continue
            try:
                graded[doc] = mapped_grade(grade, grade_map)
            except ValueError as failure:
                problems.add(f"{path}: {where}: {failure}", (_QUERIES, n))
        if graded:
            judgements[query.id] = graded
    raw_queries = raw.get("queries") if isinstance(raw.get("queries"), list) else []
    if raw_queries and not any(isinstance(q, dict) and q.get("judgements") for q in raw_queries):
        problems.add(f"{path}: no query has any judgement; judge at least one passage per query", (_OVERALL,))
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
                (_CORPUS if section == "corpus" else _QUERIES, n),
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


def _order(loc: tuple[Any, ...]) -> tuple[int, ...]:
    """The ordering key of a schema problem at ``loc``: its section, then its item's index."""
    section = {"corpus": _CORPUS, "queries": _QUERIES}.get(str(loc[0]) if loc else "", _TOP)
    index = next((part for part in loc[1:] if isinstance(part, int)), -1)
    return (section, index)
