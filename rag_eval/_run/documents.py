"""Retrievers over a dataset of documents: what each indexes, and how its answer becomes ranked spans.

A retriever of a document dataset reads one of three things, and every answer ends
as spans ``(doc, start, end, score)`` scored by :func:`rag_eval.evaluate_evidence`
against the dataset's one set of judgements (docs/semantics.md, "Documents, chunks and
evidence"):

- ``chunker: <name>``: the chunks of that chunker (each named chunker is run once
  per run, however many retrievers read it); the answer names chunk ids.
- no chunker, answer ``{qid: {doc_id: score}}``: whole documents, i.e. the
  chunking whose one chunk per document is ``[0, len(document))``.
- no chunker, answer ``{qid: [(doc, start, end, score), ...]}`` (or dicts with those
  keys): the retriever chunked the documents itself; its spans are checked against
  the documents and scored as they are. Chunk-level metrics need a chunking to build
  the ideal ranking from, so they are not computed for such a retriever (said in the
  report); document and evidence metrics are.

Every span's id is :func:`rag_eval._core.spans.chunk_id`, so a tie breaks the same way in
the run file, the evaluation and the report.
"""

from __future__ import annotations

import hashlib
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from rag_eval._core.errors import ConfigError, RagEvalError, RetrieverError
from rag_eval._core.ranking import top_k as best_of
from rag_eval._core.spans import Chunk, chunk_id, parse_chunk_id, span_problem
from rag_eval._core.tokens import count_words
from rag_eval._data.datasets.evidence import did_you_mean
from rag_eval._models import chunking
from rag_eval._models.chunking.tokenizers import load_tokenizer
from rag_eval._run.checks import check_ranking
from rag_eval._run.read_only import read_only_corpus
from rag_eval._scoring.evidence import evaluate_evidence
from rag_eval._scoring.metrics.measures import parse_metric

if TYPE_CHECKING:
    from rag_eval._data.config.schema import LoadedConfig
    from rag_eval._data.datasets import Dataset
    from rag_eval._scoring.results import Results

WHOLE_DOCUMENTS = "whole documents"
OWN_SPANS = "the retriever's own spans"

Span = tuple[str, int, int]
ScoredSpan = tuple[str, int, int, float]


@dataclass(frozen=True)
class ChunkingRecord:
    """What a retriever indexed: which chunking, how it was made, and its shape."""

    name: str | None  # the config's chunker name; None for whole documents and own spans
    kind: str  # "chunker" | "documents" | "own"
    description: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    fingerprint: str | None = None  # sha256 of every chunk's (doc, start, end); None for own spans

    @property
    def title(self) -> str:
        """How the report names it."""
        if self.kind == "chunker":
            return str(self.name)
        return WHOLE_DOCUMENTS if self.kind == "documents" else OWN_SPANS

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, as results files record it."""
        return {
            "name": self.name,
            "kind": self.kind,
            "title": self.title,
            "description": dict(self.description),
            "summary": dict(self.summary),
            "fingerprint": self.fingerprint,
        }


def chunks_fingerprint(chunks: Sequence[Chunk]) -> str:
    """sha256 (first 16 hex) of the chunk offsets: equal exactly when two chunkings cut the same places."""
    digest = hashlib.sha256()
    for chunk in sorted(chunks, key=lambda c: (c.doc, c.start, c.end)):
        digest.update(f"{chunk.doc}\0{chunk.start}\0{chunk.end}\n".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:16]


@dataclass
class Indexed:
    """What one retriever indexes, and how its ids map back to spans."""

    corpus: Mapping[str, Mapping[str, str]]
    record: ChunkingRecord
    chunks: list[Chunk] | None  # every chunk of the chunking (None: the retriever's own spans)
    count_tokens: Any  # the tokenizer of token budgets: the chunker's, else the word tokenizer
    span_of: dict[str, Span] = field(default_factory=dict)  # corpus id -> (doc, start, end)


class DocumentRun:
    """Chunks each named chunker once per run, and turns retrievers' answers into ranked spans."""

    def __init__(self, config: LoadedConfig, dataset: Dataset) -> None:
        self.config = config
        self.dataset = dataset
        self._chunkers: dict[str, Any] = {}
        self._budget_tokenizer: Any = None
        self._indexed: dict[str | None, Indexed] = {}

    def chunker(self, name: str) -> Any:
        """The built chunker ``name`` of the config's ``chunking`` section."""
        if name not in self._chunkers:

            spec = self.config.model.chunking.get(name)
            if spec is None:  # the config's own check names it first; kept for API callers
                raise ConfigError(f"{self.config.path}: no chunker {name!r} in chunking")
            try:
                self._chunkers[name] = chunking.build_chunker(name, spec, self.config.base)
            except RagEvalError as error:
                raise self._in_config(error) from error
        return self._chunkers[name]

    def _in_config(self, error: RagEvalError) -> ConfigError:
        """A chunker's error (``chunking.<name>: ...``) with the config file in front, as every config error has."""
        prefix = f"{self.config.path}: "

        def placed(text: str) -> str:
            return text if text.startswith(prefix) else prefix + text

        return ConfigError(placed(str(error)), problems=[placed(problem) for problem in error.problems])

    def indexed(self, chunker_name: str | None) -> Indexed:
        """The corpus a retriever with ``chunker: chunker_name`` (None: none) indexes, built once."""
        if chunker_name in self._indexed:
            return self._indexed[chunker_name]

        documents = self.dataset.documents
        if chunker_name is None:
            chunks = [Chunk(doc, 0, len(text), text) for doc, text in sorted(documents.items()) if text]
            count_tokens = count_words
            record_kind, description = "documents", {"method": "whole documents"}
        else:
            chunker = self.chunker(chunker_name)
            try:  # a custom chunker raising, or giving offsets that do not hold its text
                chunks = list(chunker.chunk(documents))
            except RagEvalError as error:
                raise self._in_config(error) from error
            count_tokens = chunker.count_tokens
            record_kind, description = "chunker", dict(chunker.describe())
        span_of: dict[str, Span] = {}
        if chunker_name is None:  # whole documents, indexed by document id as a passage corpus would be
            corpus: Mapping[str, Mapping[str, str]] = self.dataset.corpus
            span_of = {chunk.doc: (chunk.doc, chunk.start, chunk.end) for chunk in chunks}
        else:
            titles = {doc: (self.dataset.corpus.get(doc) or {}).get("title") or "" for doc in documents}
            passages: dict[str, dict[str, str]] = {}
            for chunk in chunks:
                key = chunk.id
                if key in span_of:
                    raise ConfigError(
                        f"{self.config.path}: chunking.{chunker_name}: the chunk {key!r} occurs twice; a chunker cuts "
                        "each span once"
                    )
                span_of[key] = (chunk.doc, chunk.start, chunk.end)
                passage = {"text": chunk.text}
                if titles.get(chunk.doc):  # as BEIR feeds passages: the document's title with each chunk
                    passage["title"] = titles[chunk.doc]
                passages[key] = passage
            corpus = passages
        record = ChunkingRecord(
            chunker_name, record_kind, description, chunking.summarize_chunks(chunks, count_tokens), chunks_fingerprint(chunks)
        )
        indexed = Indexed(read_only_corpus(corpus), record, chunks, count_tokens, span_of)
        self._indexed[chunker_name] = indexed
        return indexed

    def documents_corpus(self) -> Mapping[str, Mapping[str, str]]:
        """Whole documents keyed by document id: what a retriever that returns its own spans indexes."""

        return read_only_corpus(self.dataset.corpus)

    def spans(
        self, label: str, raw: Any, queries: Mapping[str, str], indexed: Indexed, top_k: int, own: bool
    ) -> tuple[dict[str, dict[str, float]], dict[str, list[ScoredSpan]]]:
        """``(ranking by chunk id, spans)`` of a retriever's answer, checked and cut to ``top_k``."""

        if own:
            ranking, span_of = self._own_spans(label, raw, queries)
        else:
            if indexed.record.kind == "chunker" and isinstance(raw, Mapping) and any(
                isinstance(items, (list, tuple)) for items in raw.values()
            ):
                raise RetrieverError(
                    f"retriever {label!r} reads chunker {indexed.record.name!r} but search() returned spans "
                    "(lists of (doc_id, start, end, score)); with a chunker it answers {qid: {chunk_id: score}} "
                    "with the ids index() was given: remove `chunker` to score its own spans"
                )
            whole = indexed.record.kind == "documents"
            # Whole documents are cut below, once keyed by chunk id: cut by document id here, a tie at the
            # top_k boundary could keep another document than the chunk-id rule ranks first.
            ranking = check_ranking(label, raw, queries, indexed.corpus, sys.maxsize if whole else top_k)
            span_of = indexed.span_of
            if whole:  # whole documents: keyed by chunk id too, for one tie rule
                ranking = {q: {chunk_id(*_whole(label, q, d, span_of)): s for d, s in scored.items()}
                           for q, scored in ranking.items()}
                span_of = {chunk_id(*span): span for span in span_of.values()}
        spans: dict[str, list[ScoredSpan]] = {}
        for qid, scored in ranking.items():
            if len(scored) > top_k:
                scored = ranking[qid] = best_of(scored, top_k)
            spans[qid] = [(*span_of[key], score) for key, score in scored.items()]
        return ranking, spans

    def _own_spans(
        self, label: str, raw: Any, queries: Mapping[str, str]
    ) -> tuple[dict[str, dict[str, float]], dict[str, Span]]:
        documents = self.dataset.documents
        if not isinstance(raw, Mapping):
            raise RetrieverError(
                f"retriever {label!r}: search() returned {type(raw).__name__}, expected "
                "{qid: [(doc_id, start, end, score), ...]}"
            )
        ranking: dict[str, dict[str, float]] = {}
        span_of: dict[str, Span] = {}
        for qid, items in raw.items():
            if qid not in queries:
                raise RetrieverError(f"retriever {label!r}: search() answered query {qid!r}, which was not asked")
            if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
                raise RetrieverError(
                    f"retriever {label!r}: query {qid!r}: expected a list of (doc_id, start, end, score), "
                    f"got {type(items).__name__}; a retriever returns ids for every query or spans for every query"
                )
            scored: dict[str, float] = {}
            for position, item in enumerate(items):
                doc, start, end, score = _span_item(label, qid, position, item)
                where = f"retriever {label!r}: query {qid!r}, span {position} ({doc!r}, {start!r}, {end!r})"
                if not isinstance(doc, str):
                    raise RetrieverError(f"{where}: the document id is {type(doc).__name__}; give the id as a string")
                if doc not in documents:
                    raise RetrieverError(f"{where}: document {doc!r} is not in the dataset{_guess(doc, documents)}")
                problem = span_problem(start, end, len(documents[doc]))
                if problem:
                    raise RetrieverError(f"{where}: {problem}")
                key = chunk_id(doc, start, end)
                if key in scored:
                    raise RetrieverError(
                        f"{where}: the same span is returned twice for this query; return each span once"
                    )
                scored[key] = _score(where, score)
                span_of[key] = (doc, start, end)
            ranking[qid] = scored
        for qid in queries:
            ranking.setdefault(qid, {})
        return ranking, span_of

    def evaluate(
        self, spans: Mapping[str, Sequence[ScoredSpan]], indexed: Indexed, metrics: Sequence[str], own: bool
    ) -> Results:
        """``metrics`` on these spans; ``own``: the retriever's own spans, scored without a chunking."""

        options = self.config.model.evaluation.document_options()
        chunks = None if own else indexed.chunks
        results = evaluate_evidence(
            dict(self.dataset.evidence),
            spans,
            list(metrics),
            document_judgements=self.dataset.document_judgements,
            chunks=chunks,
            documents=self.dataset.documents,
            count_tokens=self.budget_tokenizer().count,
            **options,
        )
        results.options["budget_tokens"] = self.config.model.evaluation.tokenizer
        return results

    def budget_tokenizer(self) -> Any:
        """The tokenizer of token budgets (``evaluation.tokenizer``): one for every retriever of the run."""
        if self._budget_tokenizer is None:

            name = self.config.model.evaluation.tokenizer
            try:
                self._budget_tokenizer = load_tokenizer(name, "evaluation.tokenizer")
            except RagEvalError as error:
                raise ConfigError(f"{self.config.path}: {error}") from error
        return self._budget_tokenizer


def chunking_text(record: Mapping[str, Any] | None) -> str:
    """``recursive-400 (recursive, size 400, overlap 200, 1,300 chunks, mean 1,506 chars)``, from a results file."""
    if record is None:
        return "none (a passage dataset)"
    description, summary = record.get("description") or {}, record.get("summary") or {}
    title = str(record.get("title") or record.get("name") or "?")
    method = str(description.get("method", "?"))
    how = [] if title.startswith(method) else [method]  # "whole documents" says its method already
    how += [f"{key} {description[key]}" for key in ("size", "overlap") if description.get(key) is not None]
    chunks, mean = summary.get("chunks"), summary.get("mean_chars")
    if isinstance(chunks, int):
        how.append(f"{chunks:,} chunks" + (f", mean {mean:,.0f} chars" if isinstance(mean, (int, float)) else ""))
    return f"{title} ({', '.join(how)})"


def own_spans_record(spans: Mapping[str, Sequence[ScoredSpan]], documents: Mapping[str, str]) -> ChunkingRecord:
    """The record of a retriever that chunked the documents itself: the distinct spans it returned, in numbers."""

    distinct = sorted({(doc, start, end) for items in spans.values() for doc, start, end, _ in items})
    summary = chunking.summarize_chunks([Chunk(doc, start, end, documents[doc][start:end]) for doc, start, end in distinct])
    summary["counted"] = "distinct spans returned"
    return ChunkingRecord(None, "own", {"method": "the retriever's own"}, summary, None)


def returns_own_spans(raw: Any, documents: Mapping[str, str]) -> bool:
    """Whether a search() answer holds spans of its own rather than ``{qid: {doc_id: score}}`` of whole documents.

    Spans are lists ``[(doc_id, start, end, score), ...]``, or mappings keyed by chunk ids
    ``<doc>#<start>-<end>`` (a stored ranking of an earlier run, replayed by ``static``).
    """
    if not isinstance(raw, Mapping):
        return False
    for items in raw.values():
        if isinstance(items, (list, tuple)):
            return True
        if isinstance(items, Mapping):
            for key in items:
                if isinstance(key, str) and key not in documents:
                    parsed = parse_chunk_id(key)
                    if parsed is not None and parsed[0] in documents:
                        return True
                break  # one key per query tells the form
    return False


def as_span_lists(label: str, raw: Mapping[str, Any], documents: Mapping[str, str]) -> dict[str, Any]:
    """An own-spans answer with every query as a list: ``{chunk_id or doc_id: score}`` turned into spans.

    A document id stands for the whole document ``[0, len)``; anything else must be a chunk id of
    a document of the dataset.
    """
    out: dict[str, Any] = {}
    for qid, items in raw.items():
        if not isinstance(items, Mapping):
            out[qid] = items
            continue
        spans = []
        for key, score in items.items():
            if isinstance(key, str) and key in documents:
                spans.append((key, 0, len(documents[key]), score))
                continue
            parsed = parse_chunk_id(key) if isinstance(key, str) else None
            if parsed is None or parsed[0] not in documents:
                raise RetrieverError(
                    f"retriever {label!r}: query {qid!r}: {key!r} is neither a document of the dataset nor a chunk "
                    "id <document>#<start>-<end> of one; return document ids, chunk ids or (doc_id, start, end, "
                    "score) spans"
                )
            spans.append((*parsed, score))
        out[qid] = spans
    return out


def computable_metrics(metrics: Sequence[str], own_spans: bool) -> tuple[list[str], list[str]]:
    """``(computed, left out)``: chunk-level metrics need the chunking, which own spans do not give."""

    if not own_spans:
        return list(metrics), []
    computed: list[str] = []
    left: list[str] = []
    for name in metrics:
        metric = parse_metric(name)
        (left if not (metric.is_document_level or metric.is_evidence) else computed).append(name)
    return computed, left


def _whole(label: str, qid: str, doc: str, span_of: Mapping[str, Span]) -> Span:
    if doc not in span_of:
        raise RetrieverError(f"retriever {label!r}: query {qid!r}: returned document {doc!r}, which is empty")
    return span_of[doc]


def _span_item(label: str, qid: str, position: int, item: Any) -> tuple[Any, Any, Any, Any]:
    if isinstance(item, Mapping):
        missing = [key for key in ("doc", "start", "end", "score") if key not in item]
        if not missing:
            return item["doc"], _offset(item["start"]), _offset(item["end"]), item["score"]
        problem = f"misses {', '.join(missing)}"
    elif isinstance(item, (tuple, list)) and len(item) == 4:
        return item[0], _offset(item[1]), _offset(item[2]), item[3]
    else:
        problem = f"is {type(item).__name__}" + (f" of {len(item)}" if isinstance(item, (tuple, list)) else "")
    raise RetrieverError(
        f"retriever {label!r}: query {qid!r}, span {position}: {problem}; "
        "give (doc_id, start, end, score) or {doc, start, end, score}"
    )


def _offset(value: Any) -> Any:
    """A numpy integer offset as the int it is (pipelines built on numpy return np.int64); anything else as given."""
    if isinstance(value, np.integer) and not isinstance(value, np.bool_):
        return int(value)
    return value


def _guess(doc: Any, documents: Mapping[str, str]) -> str:
    """``; did you mean 'x'?`` for an unknown document id, when one is close."""

    guess = did_you_mean(doc, documents) if isinstance(doc, str) else None
    return f"; did you mean {guess!r}?" if guess else ""


def _score(where: str, score: Any) -> float:
    if isinstance(score, (bool, np.bool_)) or not isinstance(score, (int, float, np.integer, np.floating)):
        raise RetrieverError(f"{where}: score {score!r} ({type(score).__name__}) is not a number")
    try:
        value = float(score)
    except OverflowError:
        raise RetrieverError(f"{where}: score is too large for a float64") from None
    if not math.isfinite(value):
        raise RetrieverError(f"{where}: score is {value}; scores must be finite numbers")
    return value
