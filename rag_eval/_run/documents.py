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
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_eval._core.errors import ConfigError, RagEvalError
from rag_eval._core.ranking import top_k as best_of
from rag_eval._core.spans import Chunk, chunk_id
from rag_eval._core.tokens import count_words
from rag_eval._data.config.schema import LoadedConfig
from rag_eval._data.config.sections import RetrieverSpec
from rag_eval._data.datasets import Dataset
from rag_eval._models import chunking
from rag_eval._models.chunking.tokenizers import load_tokenizer
from rag_eval._models.embeddings.truncation import truncation_warning
from rag_eval._run.checks import RetrieverRunError, ScoredSpan, Span, check_ranking
from rag_eval._run.holes_record import document_holes, evaluation_options
from rag_eval._run.holes_section import HolesRecord
from rag_eval._run.outcome import ChunkingRecord, RetrieverOutcome
from rag_eval._run.own_spans import as_span_lists, checked_own_spans, returns_own_spans
from rag_eval._run.read_only import read_only_corpus
from rag_eval._scoring.evidence import evaluate_evidence
from rag_eval._scoring.metrics.measures import parse_metric
from rag_eval._scoring.results import Results


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
    """The documents side of a run: chunks each named chunker once, and turns retrievers' answers into ranked
    spans scored by evaluate_evidence (the passages side is rag_eval/_run/passages.py, behind the same
    methods ``prepare``, ``corpus``, ``timings`` and ``outcome`` that rag_eval/_run/execute.py calls)."""

    def __init__(self, config: LoadedConfig, dataset: Dataset, queries: Mapping[str, str] | None = None) -> None:
        self.config = config
        self.dataset = dataset
        self.queries = dataset.query_texts() if queries is None else queries
        self._chunkers: dict[str, Any] = {}
        self._budget_tokenizer: Any = None
        self._indexed: dict[str | None, Indexed] = {}
        self._chunk_seconds: dict[str | None, float] = {}  # each chunking's cutting time, until a retriever takes it

    def prepare(self) -> None:
        """Everything that can fail before any retrieval: the budget tokenizer, every chunker, every chunking cut.

        A chunker that fails on some document must not wait for a first retriever to index. The chunks
        are held for the whole run either way (each chunking is cut once, whatever reads it).
        """
        model = self.config.model
        if any(parse_metric(name).budget_unit == "tokens" for name in model.metrics):
            self.budget_tokenizer()
        for spec in model.retrievers:  # every chunker built (its parameters checked) before cutting
            if spec.chunker:
                self.chunker(spec.chunker)
        for spec in model.retrievers:
            if spec.chunker not in self._chunk_seconds:
                started = time.perf_counter()
                self.indexed(spec.chunker)
                self._chunk_seconds[spec.chunker] = time.perf_counter() - started

    def corpus(self, spec: RetrieverSpec) -> Mapping[str, Mapping[str, str]]:
        """What ``spec``'s retriever indexes: its chunker's chunks, else whole documents."""
        return self.indexed(spec.chunker).corpus

    def timings(self, spec: RetrieverSpec) -> dict[str, float]:
        """``chunk_s``: the time its chunking took to cut, counted for the first retriever reading it (0 after)."""
        return {"chunk_s": self._chunk_seconds.pop(spec.chunker, 0.0)}

    def outcome(
        self, spec: RetrieverSpec, retriever: Any, description: dict[str, Any], raw: Any, timings: dict[str, float],
        fresh: bool,
    ) -> tuple[RetrieverOutcome, Any]:
        """A retriever's answer as spans, scored by evaluate_evidence; with the answer the ranking cache keeps."""
        model = self.config.model
        indexed = self.indexed(spec.chunker)
        documents = self.dataset.documents
        own = spec.chunker is None and returns_own_spans(raw, documents)
        answer = as_span_lists(spec.label, raw, documents) if own else raw
        ranking, spans = self.spans(spec.label, answer, self.queries, indexed, model.top_k, own)
        computed, left = computable_metrics(model.metrics, own)
        if not computed:
            cutoff = parse_metric(left[0]).k or 10
            raise ConfigError(
                f"{self.config.path}: retriever {spec.label!r} returns its own spans, and every metric of the config "
                f"is chunk-level ({', '.join(left)}), which needs a chunking to build the ideal ranking from; add "
                f"document or evidence metrics (e.g. doc_{left[0]}, evidence_recall@{cutoff})"
            )
        started = time.perf_counter()
        results = self.evaluate(spans, indexed, computed, own)
        holes = self.holes(ranking, spans, None if own else indexed.chunks, results)
        timings["evaluate_s"] = time.perf_counter() - started
        record = own_spans_record(spans, documents) if own else indexed.record
        notes = []
        if left:
            notes.append(
                f"retriever {spec.label!r} returns its own spans: chunk-level {', '.join(left)} not computed "
                "(they need a chunking to build the ideal ranking from); document and evidence metrics are"
            )
        what = "chunks" if record.kind != "documents" else "documents"
        warning = truncation_warning(spec.label, description.get("truncation"), what)
        if warning:
            notes.append(warning)
        corpus = indexed.corpus
        if record.kind != "chunker":  # whole documents and own spans are indexed by document id, ranked by chunk id
            corpus = {chunk_id(d, s, e): {"text": documents[d][s:e]} for items in spans.values() for d, s, e, _ in items}
        outcome = RetrieverOutcome(
            spec, description, ranking, results, timings, chunking=record, spans=spans, corpus=corpus,
            notes=notes, warnings=[warning] if warning else [], holes=holes,
        )
        return outcome, raw

    def holes(
        self, ranking: Mapping[str, Mapping[str, float]], spans: Mapping[str, Sequence[ScoredSpan]],
        chunks: Sequence[Chunk] | None, results: Results,
    ) -> HolesRecord:
        """The holes of every metric computed (rag_eval._run.holes_record): chunks, documents or evidence."""
        options = self.config.model.evaluation.document_options()
        dataset = self.dataset
        return document_holes(
            dataset.judgements, dataset.evidence, dataset.document_judgements, ranking, spans, chunks, results,
            self.config.model.top_k, evaluation_options(options), options["min_evidence_fraction"],
        )

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

    def spans(
        self, label: str, raw: Any, queries: Mapping[str, str], indexed: Indexed, top_k: int, own: bool
    ) -> tuple[dict[str, dict[str, float]], dict[str, list[ScoredSpan]]]:
        """``(ranking by chunk id, spans)`` of a retriever's answer, checked and cut to ``top_k``."""

        if own:
            ranking, span_of = checked_own_spans(label, raw, queries, self.dataset.documents)
        else:
            if indexed.record.kind == "chunker" and isinstance(raw, Mapping) and any(
                isinstance(items, (list, tuple)) for items in raw.values()
            ):
                raise RetrieverRunError(
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
                self._budget_tokenizer = load_tokenizer(name, "evaluation.tokenizer", self.config.base)
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
        raise RetrieverRunError(f"retriever {label!r}: query {qid!r}: returned document {doc!r}, which is empty")
    return span_of[doc]
