"""Run a config: load the dataset, run each retriever, evaluate, write outputs.

Nothing is written until every retriever has run and been evaluated; the
report, the results files and the run files then replace the previous set as a
whole (rag_eval/_core/output_folder.py), so a failed or killed run leaves the old
complete set and a finished one the new complete set.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Mapping

from rag_eval._core.errors import ConfigError, RagEvalError, RetrieverError
from rag_eval._core.output_folder import MANIFEST, replace_output_set
from rag_eval._core.plugins import config_folder
from rag_eval._core.spans import chunk_id
from rag_eval._core.trec import format_qrels, format_run
from rag_eval._core.versions import package_versions
from rag_eval._data.config.adapters import BUILTIN
from rag_eval._data.config.schema import LoadedConfig, RetrieverSpec
from rag_eval._data.datasets import Dataset, load_dataset
from rag_eval._execution.context import executing
from rag_eval._models.embeddings.truncation import truncation_warning
from rag_eval._report.markdown import render_run_report
from rag_eval._report.plots import build_plots
from rag_eval._report.tables_csv import per_query_csv
from rag_eval._retrievers import registry
from rag_eval._retrievers.base import describe
from rag_eval._retrievers.corpus_digest import corpus_digest
from rag_eval._retrievers.embedding_cache import default_cache_dir
from rag_eval._retrievers.ranking_cache import RankingCache, ranking_key
from rag_eval._retrievers.shared_children import sharing
from rag_eval._run.checks import check_ranking
from rag_eval._run.documents import DocumentRun, as_span_lists, computable_metrics, own_spans_record, returns_own_spans
from rag_eval._run.inputs import DOCUMENT_QRELS, PER_QUERY_CSV, check_outputs_are_not_inputs, document_run_name
from rag_eval._run.outcome import RetrieverOutcome, RunOutcome
from rag_eval._run.read_only import read_only_corpus, read_only_queries

# The run's records and the results file have their own modules; these names stay importable from here.
from rag_eval._run.results_file import RESULTS_SCHEMA_VERSION, ranking_with_grades, results_document
from rag_eval._scoring.approximation import approximation_cost
from rag_eval._scoring.evaluate import evaluate
from rag_eval._scoring.evidence import collapse_to_documents
from rag_eval._scoring.metrics.measures import parse_metric

__all__ = [
    "RESULTS_SCHEMA_VERSION",
    "RetrieverOutcome",
    "RunOutcome",
    "build_retriever",
    "check_ranking",
    "execute",
    "load_config_dataset",
    "package_versions",
    "ranking_store",
    "ranking_with_grades",
    "resolve_params",
    "results_document",
    "write_outputs",
]


def load_config_dataset(config: LoadedConfig) -> Dataset:
    """The dataset a config names, with paths resolved against the config.

    On the Ray engine a JSON Lines corpus stays on disk (rag_eval._data.datasets.file_corpus): the
    workers read it themselves, and the driver need not hold it.
    """
    spec = config.model.dataset.model_dump(exclude_none=True)
    return load_dataset(spec, base=config.base, stream_corpus=config.model.execution.engine == "ray")


def execute(config: LoadedConfig, progress: bool | None = None) -> RunOutcome:
    """Run every retriever of ``config`` and evaluate it; writes nothing.

    Equal nested retrievers of several retrievers (a sweep over a hybrid's fusion) are built,
    indexed and searched once (rag_eval._retrievers.shared_children).
    """

    # execution: {engine: ray} moves dense encoding and exact search onto a Ray cluster, joined when a
    # retriever first needs it (rag_eval._execution.context); the evaluation below stays in this process.
    with sharing(), executing(config.model.execution):
        return _execute(config, progress)


def _execute(config: LoadedConfig, progress: bool | None) -> RunOutcome:
    from tqdm.auto import tqdm


    dataset = load_config_dataset(config)
    model = config.model
    check_chunking_use(config, dataset)
    queries = dataset.query_texts()
    # Retrievers read the dataset through views that cannot change it (no copy: a corpus may be
    # millions of passages): the numbers, the report and the fingerprint describe what was loaded.
    corpus_view, queries_view = read_only_corpus(dataset.corpus), read_only_queries(queries)
    outcomes = []
    # Build every retriever before running any: a typo in the last one's parameters must
    # not wait for the first one to index a corpus. Adapters load models lazily (in index),
    # and each retriever is dropped once it has run, so this holds no model in memory.
    retrievers: list[Any] = [build_retriever(spec, config) for spec in model.retrievers]
    passage_options = model.evaluation.passage_options()
    documents = None
    chunk_seconds: dict[str | None, float] = {}
    if dataset.has_documents:

        documents = DocumentRun(config, dataset)
        if any(parse_metric(name).budget_unit == "tokens" for name in model.metrics):
            documents.budget_tokenizer()  # loaded (or refused) before any retrieval
        for spec in model.retrievers:  # every chunker built (its parameters checked) before any retrieval
            if spec.chunker:
                documents.chunker(spec.chunker)
        # ... and every chunking cut, each once: a chunker that fails on some document must not wait for a
        # first retriever to index. The chunks are held for the whole run either way (DocumentRun caches them).
        for spec in model.retrievers:
            if spec.chunker not in chunk_seconds:
                started = time.perf_counter()
                documents.indexed(spec.chunker)
                chunk_seconds[spec.chunker] = time.perf_counter() - started
    store = ranking_store(config)
    digests: dict[str | None, str] = {}  # per corpus a retriever indexes (None: the passages), hashed once
    count = len(model.retrievers)
    # Three steps per retriever; the bar names the retriever and the stage running now
    # ("bm25: search"), and which of the config's retrievers it is.
    steps = tqdm(total=3 * count, desc="retrieval", unit="step", disable=_disabled(progress))
    with steps:
        for position, spec in enumerate(model.retrievers):
            retriever, retrievers[position] = retrievers[position], None
            timings: dict[str, float] = {}
            steps.set_postfix_str(f"retriever {position + 1} of {count}", refresh=False)
            indexed = None
            if documents is not None:
                indexed = documents.indexed(spec.chunker)  # cut above; the first retriever reading it gets the time
                timings["chunk_s"] = chunk_seconds.pop(spec.chunker, 0.0)
            corpus_in = corpus_view if indexed is None else indexed.corpus
            key = None
            if store is not None:
                if spec.chunker not in digests:

                    digests[spec.chunker] = corpus_digest(corpus_in, queries_view)
                key = _ranking_key(spec, config, retriever, digests[spec.chunker])
            cached = store.load(key) if store is not None and key is not None else None
            if cached is not None:  # nothing it depends on changed since the run that stored it
                steps.set_description(f"{spec.label}: stored ranking")
                raw = cached.answer
                # The cost columns keep the original run's index and search times (what the retriever costs).
                timings.update({name: cached.timings[name] for name in ("index_s", "search_s") if name in cached.timings})
                steps.update(2)
            else:
                steps.set_description(f"{spec.label}: index")
                started = time.perf_counter()
                _call(spec, "index", retriever.index, corpus_in)
                timings["index_s"] = time.perf_counter() - started
                steps.update()
                steps.set_description(f"{spec.label}: search")
                started = time.perf_counter()
                raw = _call(spec, "search", retriever.search, queries_view, model.top_k)
                timings["search_s"] = time.perf_counter() - started
                steps.update()
            steps.set_description(f"{spec.label}: evaluate")

            description = describe(retriever, spec.label) if cached is None else {**cached.description, **_HIT}
            if documents is None or indexed is None:
                # A stored ranking is checked again like a fresh answer: an entry can never give what search() could not.
                ranking = check_ranking(spec.label, raw, queries, dataset.corpus, model.top_k)
                started = time.perf_counter()
                results = evaluate(dataset.judgements, ranking, model.metrics, **passage_options)
                timings["evaluate_s"] = time.perf_counter() - started
                if cached is None:  # a stored ranking keeps the cost measured when it was computed
                    cost = approximation_of(spec.label, retriever, ranking, results, config, dataset)
                    if cost is not None:
                        description["approximation"] = cost
                outcome = RetrieverOutcome(spec, description, ranking, results, timings)
                answer = ranking
            else:
                outcome = _evaluate_documents(documents, spec, description, raw, queries, indexed, timings)
                answer = raw
            if store is not None and key is not None and cached is None:  # stored only once checked and evaluated
                store.save(key, answer, description, {name: timings[name] for name in ("index_s", "search_s")})
            steps.update()
            outcomes.append(outcome)
    return RunOutcome(config, dataset, outcomes)


def check_chunking_use(config: LoadedConfig, dataset: Dataset) -> None:
    """Refuse chunkers and document metrics where the dataset has no documents, naming the fix.

    On a dataset of documents without any evidence span (passages read as documents), chunk-level
    and evidence metrics are refused: they would score 0 or nothing for every query. With
    ``no_relevant: error``, evidence metrics are refused when a judged query has no evidence.
    """

    if dataset.has_documents:
        _check_evidence_use(config, dataset)
        return
    problems = [
        f"{config.path}: retriever {spec.label!r} names chunker {spec.chunker!r}, but the dataset {dataset.name!r} has "
        "passages, not documents; chunkers cut documents: give a dataset with documents, or remove `chunker`"
        for spec in config.model.retrievers
        if spec.chunker
    ]
    for name in config.model.metrics:
        metric = parse_metric(name)
        if metric.is_document_level or metric.is_evidence:
            problems.append(
                f"{config.path}: metric {name} needs a dataset with documents (and evidence spans), but the dataset "
                f"{dataset.name!r} has passages; use passage metrics such as {metric.name if not metric.is_evidence else 'ndcg'}@10"
            )
    if problems:  # all of them: `rag-eval validate` lists every one
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ConfigError(problems[0] + more, problems=problems)


def _check_evidence_use(config: LoadedConfig, dataset: Dataset) -> None:

    problems = []
    with_evidence = {qid for qid, spans in dataset.evidence.items() if spans}
    for name in config.model.metrics:
        metric = parse_metric(name)
        if metric.is_document_level:
            continue
        level = "evidence" if metric.is_evidence else "chunk-level"
        if not with_evidence:
            problems.append(
                f"{config.path}: metric {name}: {level} metrics need evidence spans, and the dataset "
                f"{dataset.name!r} has none (its judgements are on whole documents); use doc_ metrics such as "
                f"doc_{metric.name if not metric.is_evidence else 'ndcg'}@10"
            )
        elif metric.is_evidence and config.model.evaluation.no_relevant == "error":
            missing = [qid for qid in dataset.judged_query_ids if qid not in with_evidence]
            if missing:
                problems.append(
                    f"{config.path}: metric {name} with no_relevant: error: {len(missing)} judged quer"
                    f"{'y has' if len(missing) == 1 else 'ies have'} no evidence span ({', '.join(missing[:3])}"
                    f"{', ...' if len(missing) > 3 else ''}); give each evidence, or set no_relevant to skip or zero"
                )
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ConfigError(problems[0] + more, problems=problems)


# What a reused ranking's description gains (the report's retriever notes show it).
_HIT = {"ranking_cache": "hit"}


def ranking_store(config: LoadedConfig) -> Any:
    """The ranking cache of a run (the config's ``cache_dir``, else the default cache folder); None when disabled."""
    if not config.model.reuse_rankings:
        return None

    folder = config.resolve(config.model.cache_dir) if config.model.cache_dir else default_cache_dir()
    return RankingCache(folder)


def _ranking_key(spec: RetrieverSpec, config: LoadedConfig, retriever: Any, inputs: str) -> str | None:
    """The cache key of one retriever of the run, or None when it is not cached (a plug-in, odd parameters)."""

    if spec.adapter not in BUILTIN:
        return None  # plug-ins never: their code can change while their parameters stay the same
    try:
        with config_folder(config.base):
            params = resolve_params(registry.resolve(spec.adapter), spec.params, config)
    except RagEvalError:
        return None
    return ranking_key(spec.adapter, params, retriever, inputs, config.model.top_k)


def _evaluate_documents(
    documents: Any, spec: RetrieverSpec, description: dict[str, Any], raw: Any, queries: Mapping[str, str],
    indexed: Any, timings: dict[str, float],
) -> RetrieverOutcome:
    """A retriever of a document dataset: its answer as spans, scored by evaluate_evidence."""

    model = documents.config.model
    own = spec.chunker is None and returns_own_spans(raw, documents.dataset.documents)
    if own:
        raw = as_span_lists(spec.label, raw, documents.dataset.documents)
    ranking, spans = documents.spans(spec.label, raw, queries, indexed, model.top_k, own)
    computed, left = computable_metrics(model.metrics, own)
    if not computed:

        cutoff = parse_metric(left[0]).k or 10
        raise ConfigError(
            f"{documents.config.path}: retriever {spec.label!r} returns its own spans, and every metric of the config "
            f"is chunk-level ({', '.join(left)}), which needs a chunking to build the ideal ranking from; add document "
            f"or evidence metrics (e.g. doc_{left[0]}, evidence_recall@{cutoff})"
        )
    started = time.perf_counter()
    results = documents.evaluate(spans, indexed, computed, own)
    timings["evaluate_s"] = time.perf_counter() - started
    record = own_spans_record(spans, documents.dataset.documents) if own else indexed.record
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

        texts = documents.dataset.documents
        corpus = {chunk_id(d, s, e): {"text": texts[d][s:e]} for items in spans.values() for d, s, e, _ in items}
    return RetrieverOutcome(
        spec, description, ranking, results, timings, chunking=record, spans=spans, corpus=corpus,
        notes=notes, warnings=[warning] if warning else [],
    )


def approximation_of(
    label: str, retriever: Any, ranking: Mapping[str, Mapping[str, float]], results: Any, config: LoadedConfig,
    dataset: Dataset,
) -> dict[str, Any] | None:
    """What an approximate index cost: overlap@k with exact search and the main metric's change, on a sample.

    Only for a retriever that kept an exact reference (the dense retriever with an ANN ``index``); None otherwise.
    The reference is checked like an answer and scored with the run's own options, on the sampled queries only.
    """
    reference = getattr(retriever, "exact_reference", None)
    if not isinstance(reference, Mapping) or not reference:
        return None

    model = config.model
    main = model.primary_metric
    sample = {qid: text for qid, text in dataset.query_texts().items() if qid in reference}
    exact = check_ranking(f"{label} (exact reference)", reference, sample, dataset.corpus, model.top_k)
    judged = {qid: grades for qid, grades in dataset.judgements.items() if qid in exact}
    exact_results = evaluate(judged, exact, [main], **model.evaluation.passage_options())
    approx_values = {qid: values[main] for qid, values in results.per_query.items() if qid in exact and main in values}
    exact_values = {qid: values[main] for qid, values in exact_results.per_query.items() if main in values}
    cost = approximation_cost(ranking, exact, model.top_k, approx_values, exact_values)
    summary = {key: value for key, value in cost.items() if key != "overlap"}  # per-query overlaps: too long to keep
    return {"metric": main, **summary}


def build_retriever(spec: RetrieverSpec, config: LoadedConfig, *, instantiate: bool = True) -> Any:
    """Build one retriever, resolving its path parameters against the config's folder.

    With ``instantiate=False`` (``rag-eval validate``) the adapter is resolved and its
    parameters checked, but nothing is called: the retriever class is returned.
    Import strings are looked up in the config's folder first (see the registry).
    """

    where = f"{config.path}: retriever {spec.label!r}"
    try:
        with config_folder(config.base):
            factory = registry.resolve(spec.adapter)
            params = resolve_params(factory, spec.params, config)
            if not instantiate:
                return registry.check(spec.adapter, params)
            return registry.build(spec.adapter, params)
    except RagEvalError as error:
        problems = [f"{where}: {' '.join(problem.split())}" for problem in error.problems]
        raise RetrieverError(f"{where}: {_one_line(error)}", problems=problems) from error
    except Exception as error:  # a bug in resolving: name the retriever, keep the cause
        raise RetrieverError(
            f"{where} ({spec.adapter}) could not be built: {type(error).__name__}: {_one_line(error)}"
        ) from error


def resolve_params(factory: Any, params: Mapping[str, Any], config: LoadedConfig) -> dict[str, Any]:
    """Make relative paths in ``params`` relative to the config file.

    A retriever names its path parameters in ``PATH_PARAMS``; a ``model`` that
    is a relative path to an existing folder is resolved too. ``cache_dir`` is
    filled from the config when the retriever accepts one and none is given.
    """
    params = dict(params)
    for key in getattr(factory, "PATH_PARAMS", ()):
        if isinstance(params.get(key), str):
            params[key] = str(config.resolve(params[key]))
    model = params.get("model")
    if isinstance(model, str) and model.startswith((".", "~")) and config.resolve(model).exists():
        params["model"] = str(config.resolve(model))
    if config.model.cache_dir and "cache_dir" not in params and _accepts(factory, "cache_dir"):
        params["cache_dir"] = str(config.resolve(config.model.cache_dir))
    # Nested retriever specs (hybrid's retrievers, cross_encoder's first_stage) get the same treatment.
    for key, value in params.items():
        if _is_spec(value):
            params[key] = _resolve_spec(value, config)
        elif isinstance(value, list) and value and all(_is_spec(item) for item in value):
            params[key] = [_resolve_spec(item, config) for item in value]
    return params


def _is_spec(value: Any) -> bool:
    return isinstance(value, Mapping) and isinstance(value.get("adapter"), str)


def _resolve_spec(spec: Mapping[str, Any], config: LoadedConfig) -> dict[str, Any]:

    nested = dict(spec)
    if isinstance(nested.get("params"), Mapping):
        try:
            factory = registry.resolve(nested["adapter"])
        except RagEvalError:
            return nested  # the parent's parameter check reports it, with its place (retrievers[1])
        nested["params"] = resolve_params(factory, nested["params"], config)
    return nested






def write_outputs(run: RunOutcome, extra: Mapping[str, str] | None = None) -> list[Path]:
    """Render everything first, then replace the output folder's set of files as one step; returns the paths.

    The new set is staged in full beside the folder and swapped in at once
    (:mod:`rag_eval.output_folder`): after a failure (disk full, no permission,
    the output folder is a file) or a kill at any moment, the folder holds exactly
    the previous set or the new one. Files of the previous set that this run does
    not write (a retriever removed from the config) disappear; files the user keeps
    in the folder stay. A second run writing into the same folder is refused, and so is
    a set that would replace one of the run's inputs (:mod:`rag_eval.run_inputs`) or a
    file rag_eval did not write (:func:`rag_eval._core.output_folder.check_replaceable`).
    """


    out_dir = run.config.output_dir
    files: dict[Path, str] = {}
    for outcome in run.outcomes:
        doc = results_document(run, outcome)
        # default=str: a YAML date in params or a Path in describe() must not crash the write.
        files[out_dir / f"{outcome.label}.json"] = json.dumps(doc, indent=2, sort_keys=False, default=str) + "\n"
        files[out_dir / f"{outcome.label}.run"] = format_run(outcome.ranking, tag=outcome.label)
        if outcome.spans is not None:  # the MaxP document run: trec_eval on it with documents.qrels gives doc_ metrics

            files[out_dir / document_run_name(outcome.label)] = format_run(
                collapse_to_documents(outcome.spans), tag=outcome.label
            )
    if run.dataset.has_documents:

        files[out_dir / DOCUMENT_QRELS] = format_qrels(run.dataset.judgements)
    plots = None
    if run.config.model.report.plots:

        plots = build_plots(run, run.config.model.primary_metric, run.config.baseline_label)
        for name, svg in plots.files.items():
            files[out_dir / name] = svg

    files[out_dir / PER_QUERY_CSV] = per_query_csv(run)
    files[out_dir / "report.md"] = render_run_report(run, plots)
    for name, text in (extra or {}).items():
        files[out_dir / name] = text

    # `rag-eval run` checked this before retrieving; checked again for callers of the API, and for
    # links made meanwhile. The files a user put in the folder are guarded by replace_output_set.
    check_outputs_are_not_inputs(run.config, [path.name for path in files] + [MANIFEST])
    _write_all(files, out_dir, run.config.path)
    return list(files)


def _write_all(files: Mapping[Path, str], out_dir: Path, config_path: Path | None = None) -> None:

    # By name: every output lies directly in out_dir (a label cannot hold a "/").
    replace_output_set(out_dir, {path.name: text.encode("utf-8") for path, text in files.items()}, config_path)


def _call(spec: RetrieverSpec, step: str, method: Any, *args: Any) -> Any:
    """Call a retriever's method; whatever it raises becomes one RetrieverError naming it and the step.

    SystemExit included: a plug-in that calls ``sys.exit()`` has failed, and must not end
    rag-eval with the plug-in's exit code (which CI would read as a verdict). Ctrl-C
    (KeyboardInterrupt) still stops the run.
    """
    where = f"retriever {spec.label!r} ({spec.adapter}) failed in {step}()"
    try:
        return method(*args)
    except RagEvalError as error:
        raise RetrieverError(f"{where}: {_one_line(error)}") from error
    except SystemExit as error:
        raise RetrieverError(
            f"{where}: it called sys.exit({error.code!r}); a plug-in must raise an exception, not exit the process"
        ) from error
    except Exception as error:
        raise RetrieverError(f"{where}: {type(error).__name__}: {_one_line(error)}") from error




def _one_line(error: BaseException) -> str:
    """An exception's message on one line: the CLI prints exactly one line per error."""
    return " ".join(str(error).split())


def _accepts(factory: Any, name: str) -> bool:

    return registry.accepts(factory, name)


def _disabled(progress: bool | None) -> bool | None:
    # None lets tqdm decide: bars on a terminal, none in CI logs.
    return None if progress is None else not progress
