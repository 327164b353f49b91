"""The results file: one home for its format, its validation on load, building it and writing it.

A results file is the self-describing JSON that ``rag-eval run`` writes for each
retriever and ``rag-eval compare`` reads back: schema version, resolved config,
dataset fingerprint, retriever description, package versions, per-query and
aggregate values, the rankings with their grades, and short texts of the passages
the rankings put on top (for the comparison report).

The file is strict JSON: a value left out of the mean (no relevant passage,
``no_relevant: skip``) is ``null``, never a bare ``NaN``, and no number is
infinite, so that any JSON parser reads it. :class:`ResultsDocument` states the
format and checks it on load; every problem becomes one line naming the file and
the field (``cand.json: results.per_query.q1: expected an object, got an array``).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, Strict, StrictInt, StrictStr, ValidationError, model_validator

from rag_eval._core.errors import InputFormatError, MetricError
from rag_eval._core.files import MAX_DOCUMENT_BYTES, StrictJson, json_key, parse_json, read_text, strict_json
from rag_eval._core.masking import masked
from rag_eval._core.messages import shown
from rag_eval._core.ranking import TOP_K_MIN, ranked
from rag_eval._core.versions import package_versions
from rag_eval._data.judging.anchor import finding_record
from rag_eval._run.holes_section import HolesRecord, HolesSection
from rag_eval._scoring.consistency import FieldProblem, check_numbers
from rag_eval._scoring.evidence import span_grades
from rag_eval._scoring.metrics.measures import parse_metric
from rag_eval._scoring.results import Results

if TYPE_CHECKING:
    from rag_eval._run.outcome import RetrieverOutcome, RunOutcome

RESULTS_SCHEMA_VERSION = 1
RESULTS_KIND = "rag_eval.results"
# The comparison report shows passages beside the worst regressions' rankings: the file
# keeps a short text of each passage ranked in the top SNIPPET_RANKS of some query
# (cut to SNIPPET_CHARS, as the report cuts them), not the corpus.
SNIPPET_RANKS = 10
SNIPPET_CHARS = 60
# Results files are strict JSON, read back as strictly as they are written.
RESULTS_JSON = StrictJson(
    holds="results files write null for a missing value and hold no infinite number",
    depth="a results file is a few levels deep",
)

# A finite float64 (an integer is accepted: JSON does not tell 1 from 1.0; true is not a number).
Number = Annotated[float, Strict(), Field(allow_inf_nan=False)]
# A metric value or a grade; null where there is none (a query left out of the mean, an unjudged passage).
MaybeNumber = Number | None
# One ranked passage: [doc_id, score, grade or null when unjudged].
RankEntry = tuple[StrictStr, Number, MaybeNumber]


class _Section(BaseModel):
    # extra="allow": keys a later writer of the same schema version adds are kept, not refused.
    model_config = ConfigDict(extra="allow", frozen=True)


class DatasetSection(_Section):
    """The dataset the results were computed on (``Dataset.summary()``)."""

    name: StrictStr | None = None
    fingerprint: StrictStr | None = None


class RetrieverSection(_Section):
    """The retriever: its label, adapter, parameters (as given) and its own description."""

    label: StrictStr
    adapter: StrictStr | None = None
    params: dict[StrictStr, Any] = Field(default_factory=dict)
    description: dict[StrictStr, Any] = Field(default_factory=dict)


class ConfigSection(_Section):
    """The config file and the resolved config (every default filled in)."""

    path: StrictStr | None = None
    resolved: dict[StrictStr, Any] = Field(default_factory=dict)


class ResultsSection(_Section):
    """``Results.to_dict()``: canonical metric names, per-query and aggregate values (null = left out)."""

    metrics: list[StrictStr] = Field(min_length=1)
    options: dict[StrictStr, Any]
    aggregate: dict[StrictStr, MaybeNumber]
    num_queries: StrictInt | None = None
    left_out: dict[StrictStr, list[StrictStr]] = Field(default_factory=dict)
    unjudged_queries: list[StrictStr] = Field(default_factory=list)
    unanswered_queries: list[StrictStr] = Field(default_factory=list)
    per_query: dict[StrictStr, dict[StrictStr, MaybeNumber]]

    @model_validator(mode="after")
    def _consistent(self) -> ResultsSection:
        seen: set[str] = set()
        for i, name in enumerate(self.metrics):
            try:
                canonical = str(parse_metric(name))
            except MetricError as error:
                raise FieldProblem(f"metrics[{i}]", str(error)) from None
            if canonical != name:
                raise FieldProblem(f"metrics[{i}]", f"{name!r} is not a canonical metric name; results files hold {canonical!r}")
            if name in seen:
                raise FieldProblem(f"metrics[{i}]", f"{name} is listed twice")
            seen.add(name)
        for name in self.metrics:
            if name not in self.aggregate:
                raise FieldProblem("aggregate", f"no value for {name} (write null for a metric with no value)")
        for name in self.aggregate:
            if name not in seen:
                raise FieldProblem(f"aggregate.{name}", f"{name} is not among results.metrics")
        for qid, row in self.per_query.items():
            for name in self.metrics:
                if name not in row:
                    raise FieldProblem(f"per_query{json_key(qid)}", f"no value for {name} (a query left out of the mean is null)")
            for name in row:
                if name not in seen:
                    raise FieldProblem(f"per_query{json_key(qid)}.{name}", f"{name} is not among results.metrics")
        if self.num_queries is not None and self.num_queries != len(self.per_query):
            raise FieldProblem("num_queries", f"is {self.num_queries} but per_query holds {len(self.per_query)} queries")
        check_numbers(self.metrics, self.options, self.per_query, self.left_out, self.aggregate)
        return self


class ResultsDocument(_Section):
    """A whole results file (schema version 1)."""

    schema_version: Literal[1]
    kind: Literal["rag_eval.results"]
    created: StrictStr | None = None
    config: ConfigSection | None = None
    dataset: DatasetSection
    retriever: RetrieverSection
    top_k: StrictInt | None = Field(default=None, ge=TOP_K_MIN)  # the rule of rag_eval._core.ranking.check_top_k
    timings: dict[StrictStr, Number] = Field(default_factory=dict)
    packages: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    query_texts: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    results: ResultsSection
    rankings: dict[StrictStr, list[RankEntry]] = Field(default_factory=dict)
    passages: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    # Document datasets: what the retriever indexed (its chunking; compared by fingerprint) and notes.
    chunking: dict[StrictStr, Any] | None = None
    notes: list[StrictStr] = Field(default_factory=list)
    # The holes in the judgements per metric (rag_eval._run.holes_section); absent from files written before.
    holes: HolesSection | None = None
    # Evidence whose document changed under it (rag_eval._data.judging.anchor.finding_record); absent: none.
    stale_evidence: list[dict[StrictStr, Any]] = Field(default_factory=list)


# ---- a loaded results file ------------------------------------------------------------------------


@dataclass(frozen=True)
class ResultsFile:
    """A validated results document, where it came from, and its :class:`Results`."""

    path: str
    document: ResultsDocument
    results: Results
    # How messages name it, where not by its path: a run's own candidate, not written when incomparable.
    shown: str | None = None

    @property
    def named(self) -> str:
        """The file as messages name it: its path, or what :attr:`shown` says."""
        return self.shown or self.path

    @classmethod
    def from_document(cls, path: str | Path, data: Any, results: Results | None = None) -> ResultsFile:
        """Validate ``data`` (a parsed results document) and wrap it; errors name ``path`` and the field.

        ``results``: the Results the document was built from, when the caller has
        them (a run's own candidate); otherwise they are read from the document.
        """
        document = validate_document(data, path)
        if results is None:
            results = Results.from_dict(document.results.model_dump())
        return cls(str(path), document, results)

    @property
    def label(self) -> str:
        """The retriever's label."""
        return self.document.retriever.label

    @property
    def fingerprint(self) -> str | None:
        """The dataset fingerprint (hash of queries, judgements and corpus)."""
        return self.document.dataset.fingerprint

    @property
    def chunking(self) -> dict[str, Any] | None:
        """What the retriever indexed on a document dataset (rag_eval._run.documents.ChunkingRecord), else None."""
        value = self.document.chunking
        return None if value is None else dict(value)

    @property
    def dataset_name(self) -> str | None:
        """The dataset's name."""
        return self.document.dataset.name

    @property
    def top_k(self) -> int | None:
        """How many passages the retriever returned per query."""
        return self.document.top_k

    @property
    def query_texts(self) -> dict[str, str]:
        """``{qid: text}`` of the scored queries."""
        return dict(self.document.query_texts)

    @property
    def rankings(self) -> dict[str, list[tuple[str, float, float | None]]]:
        """``{qid: [(doc_id, score, grade or None), ...]}`` in rank order."""
        return dict(self.document.rankings)

    @property
    def holes(self) -> HolesRecord | None:
        """Each metric's holes (unjudged share of its top k, bounds), or None for a file written without them."""
        section = self.document.holes
        if section is None:
            return None
        results = self.document.results
        return HolesRecord.from_section(section, self.results.query_ids, results.per_query, results.aggregate)

    @property
    def passages(self) -> dict[str, dict[str, str]]:
        """``{doc_id: {"text": short text}}`` of the top-ranked passages, shaped like a corpus."""
        return {doc: {"text": text} for doc, text in self.document.passages.items()}


def load_results_file(path: str | Path) -> ResultsFile:
    """Read and validate a results JSON written by ``rag-eval run``.

    Refuses what is not a regular file, files over the document size limit, text
    that is not UTF-8 or not strict JSON (bare NaN / Infinity), nesting too deep to
    parse, another ``kind`` or ``schema_version``, any field of the wrong shape, and numbers
    that do not hold together (:func:`check_numbers`: a hand-edited value must not pass a gate),
    each with one line naming the file and the field.
    """
    text = read_text(path, "results file (JSON written by `rag-eval run`)", MAX_DOCUMENT_BYTES, InputFormatError)
    return ResultsFile.from_document(path, parse_json(text, path, strict=RESULTS_JSON))


def validate_document(data: Any, path: str | Path) -> ResultsDocument:
    """``data`` as a :class:`ResultsDocument`; InputFormatError naming ``path`` and the field otherwise."""
    if not isinstance(data, dict):
        raise InputFormatError(
            f"{path}: not a rag_eval results file: the top level is {_json_kind(data)}, expected an object "
            "(write one with `rag-eval run CONFIG`)"
        )
    if data.get("kind") != RESULTS_KIND:
        raise InputFormatError(
            f"{path}: not a rag_eval results file (kind is {data.get('kind')!r}, expected {RESULTS_KIND!r}); "
            "write one with `rag-eval run CONFIG`"
        )
    version = data.get("schema_version")
    if type(version) is not int or version != RESULTS_SCHEMA_VERSION:
        raise InputFormatError(
            f"{path}: schema_version: {version!r} is not supported (this rag_eval reads schema_version "
            f"{RESULTS_SCHEMA_VERSION}); rerun `rag-eval run` with this version to write the file again"
        )
    try:
        return ResultsDocument.model_validate(data)
    except ValidationError as error:
        problems = error.errors()
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InputFormatError(f"{path}: {_problem(problems[0])}{more}") from None


_EXPECTED = {
    "dict_type": "an object",
    "model_type": "an object",
    "list_type": "an array",
    "tuple_type": "an array [doc_id, score, grade or null]",
    "string_type": "a string",
    "float_type": "a number",
    "int_type": "an integer",
    "finite_number": "a finite number (a missing value is null)",
}


def _problem(item: Mapping[str, Any]) -> str:
    where = _where(item["loc"])
    error = item.get("ctx", {}).get("error")
    if isinstance(error, FieldProblem):
        return f"{_join(where, error.where)}: {error}"
    kind, value = item["type"], item.get("input")
    if kind == "missing":
        if item["loc"] and isinstance(item["loc"][-1], int):
            return f"{_where(item['loc'][:-1])}: too short; expected [doc_id, score, grade or null]"
        return f"{where}: required field is missing"
    if kind in _EXPECTED:
        return f"{where}: expected {_EXPECTED[kind]}, got {_json_kind(value)}"
    return f"{where}: {item['msg']}"


def _where(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part == "[key]":
            text += " (key)"
        else:
            text += json_key(part) if text else str(part)
    return text or "(top level)"


def _join(where: str, inner: str) -> str:
    if where == "(top level)":
        return inner
    return f"{where}{inner}" if inner.startswith("[") else f"{where}.{inner}"


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {shown(value, 40)}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


# ---- building and writing ------------------------------------------------------------------------


def results_document(run: RunOutcome, outcome: RetrieverOutcome) -> dict[str, Any]:
    """The results document of one retriever of a run (the unit a regression check compares).

    Built once per retriever and kept in ``run.documents``: the regression check and
    the writer share it. Every value is plain JSON: parameters and descriptions are
    made JSON-safe (dates as ISO text, tuples as arrays, NaN as null).
    """
    cached = run.documents.get(outcome.label)
    if cached is not None:
        return cached
    if outcome.spans is None:
        rankings = ranking_with_grades(outcome.ranking, run.dataset.judgements)
    else:
        rankings = _span_rankings(run, outcome)
    document = {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "kind": RESULTS_KIND,
        "created": run.created,
        # Credentials (a DSN's password, a URL's user and query values, header values) never reach the file.
        "config": {"path": str(run.config.path), "resolved": masked(jsonable(run.config.model.model_dump(mode="json")))},
        "dataset": jsonable(run.dataset.summary()),
        "retriever": {
            "label": outcome.spec.label,
            "adapter": outcome.spec.adapter,
            "params": recorded_params(outcome.spec.params),
            "description": masked(jsonable(outcome.description)),
        },
        "top_k": run.config.model.top_k,
        "timings": jsonable(outcome.timings),
        "packages": package_versions(),
        "query_texts": {q: run.dataset.queries[q].text for q in outcome.results.query_ids},
        "results": outcome.results.to_dict(),
        **({} if outcome.holes is None else {"holes": jsonable(outcome.holes.to_dict())}),
        "rankings": rankings,
        "passages": passage_snippets(rankings, run.dataset.corpus if outcome.corpus is None else outcome.corpus),
    }
    if outcome.chunking is not None:
        document["chunking"] = jsonable(outcome.chunking.to_dict())
        document["notes"] = list(outcome.notes)
    if run.dataset.stale_evidence:
        document["stale_evidence"] = [finding_record(qid, finding) for qid, finding in run.dataset.stale_evidence]
    run.documents[outcome.label] = document
    return document


def recorded_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """A retriever's params as results files and reports show them: JSON-safe, credentials masked
    (:func:`rag_eval._core.masking.masked`)."""
    return masked(jsonable(dict(params)))


def results_json(document: Mapping[str, Any]) -> str:
    """The text of a results file: strict JSON (a NaN slipping in raises), each ranking on one line
    (:func:`rag_eval._core.files.strict_json`)."""
    return strict_json(document)


def ranking_with_grades(
    ranking: Mapping[str, Mapping[str, float]], judgements: Mapping[str, Mapping[str, float]]
) -> dict[str, list[list[Any]]]:
    """``{qid: [[doc_id, score, grade or None], ...]}`` in rank order, for comparison reports."""

    out = {}
    for qid in sorted(ranking):
        grades = judgements.get(qid, {})
        out[qid] = [[doc, score, jsonable(grades.get(doc))] for doc, score in ranked(ranking[qid])]
    return out


def _span_rankings(run: RunOutcome, outcome: RetrieverOutcome) -> dict[str, list[list[Any]]]:
    """Chunk rankings with each chunk's grade from evidence overlap (None where its document is unjudged)."""

    assert outcome.spans is not None
    graded = span_grades(
        run.dataset.evidence,
        {q: items for q, items in outcome.spans.items() if items},
        document_judgements=run.dataset.document_judgements,
        min_evidence_fraction=run.config.model.evaluation.min_evidence_fraction,
    )
    unjudged = ranking_with_grades({q: r for q, r in outcome.ranking.items() if q not in graded}, {})
    return {q: [list(entry) for entry in graded[q]] if q in graded else unjudged[q] for q in sorted(outcome.ranking)}


def passage_snippets(
    rankings: Mapping[str, list[list[Any]]], corpus: Mapping[str, Mapping[str, Any]], ranks: int = SNIPPET_RANKS
) -> dict[str, str]:
    """``{doc_id: short text}`` of every passage ranked in the top ``ranks`` of some query."""
    out: dict[str, str] = {}
    for entries in rankings.values():
        for doc, _, _ in entries[:ranks]:
            if doc not in out:
                text = snippet(str((corpus.get(doc) or {}).get("text") or ""))
                if text:
                    out[doc] = text
    return out


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    # The words of a prefix of the text, joined, are a prefix of the whole text's: where they already run
    # past the limit, the cut is the same, and a long passage is not split whole (a few thousand per report).
    window = 2 * limit + 64
    head = " ".join(text[:window].split())
    if len(head) > limit:
        return head[: limit - 1].rstrip() + "…"
    text = head if len(text) <= window else " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def jsonable(value: Any) -> Any:
    """``value`` as plain JSON data: non-finite floats become None, dates ISO text, anything else its str."""
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, Mapping):
        return {_jsonjson_key(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((jsonable(v) for v in value), key=repr)
    if isinstance(value, (_dt.date, _dt.time)):
        return value.isoformat()
    return str(value)


def _jsonjson_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, (bool, int)):
        return json.dumps(key)
    return str(key)


