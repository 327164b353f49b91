"""``rag-eval validate``: every check that needs no retrieval, all problems at once (of a run config, or of a
query set given alone)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rag_eval._compare.regression import candidate_label
from rag_eval._core.errors import RagEvalError, RetrieverError
from rag_eval._core.output_folder import check_output_folder, check_replaceable
from rag_eval._data.config.partial import partial_config
from rag_eval._data.config.schema import LoadedConfig, QuerySetGiven, load_config
from rag_eval._data.config.sections import RetrieverSpec
from rag_eval._data.datasets import load_yaml_query_set
from rag_eval._execution.ray_cluster import ray_missing
from rag_eval._models.chunking import check_chunker
from rag_eval._models.chunking.tokenizers import load_tokenizer
from rag_eval._run.build import build_retriever
from rag_eval._run.chunking_use import check_chunking_use
from rag_eval._run.inputs import check_outputs_are_not_inputs
from rag_eval._run.own_spans import as_span_lists, checked_own_spans, returns_own_spans
from rag_eval._run.plan import load_config_dataset, plan_run
from rag_eval._run.results_file import load_results_file


def validate_config(path: str | Path) -> tuple[list[str], str]:
    """Check the config, its dataset and its retrievers; return (problems, summary).

    Every problem is found in one pass: when the config itself is invalid, the checks after it
    run on its parts that are valid alone (:func:`partial_config`): the dataset is loaded, the
    valid retrievers' and chunkers' parameters, the valid metrics' use with the dataset and the
    baseline file are checked. What depends on an invalid part waits for it to be fixed: the
    parameters of a retriever whose spec is wrong (an unknown adapter, a bad label), the files of
    a dataset section that is wrong itself, and the output folder (named from the whole config).

    Retrievers are checked, never built: each adapter is resolved to a retriever
    class (import strings are imported, which runs their import-time code) and its
    parameters are validated against the class's ``Params`` model or constructor
    signature; no constructor, ``index`` or ``search`` is called. The one exception is
    ``static`` (rag_eval's own): its stored rankings are read and looked up in the dataset.
    """
    problems: list[str] = []
    try:
        config: LoadedConfig | None = load_config(path)
    except QuerySetGiven:
        return validate_query_set(Path(path))
    except RagEvalError as error:
        problems += error.problems
        config = partial_config(path)
    if config is None:  # no config to read further (not YAML, or not a mapping)
        return problems, ""
    dataset = None
    if "dataset" not in (config.left_out or ()):
        try:
            dataset = load_config_dataset(config)
        except RagEvalError as error:
            problems += error.problems
    for spec in config.model.retrievers:
        try:
            build_retriever(spec, config, instantiate=False)
            if spec.adapter == "static":
                _check_stored_ranking(spec, config, dataset)
        except RagEvalError as error:
            problems += error.problems
    problems += _chunking_problems(config, dataset)
    missing_ray = ray_missing() if config.model.execution.engine == "ray" else None
    if missing_ray is not None:
        problems.append(f"{config.path}: execution.{missing_ray}")
    problems += _regression_problems(config, dataset)
    if config.left_out is None:  # the outputs are named from the whole config
        problems += _output_problems(config)
    if problems or dataset is None:
        return problems, ""
    what = "documents" if dataset.has_documents else "passages"
    summary = (
        f"{config.path}: OK: dataset {dataset.name} ({len(dataset.queries)} queries, {len(dataset.corpus)} {what}, "
        f"fingerprint {dataset.fingerprint}), {len(config.model.retrievers)} retriever(s), "
        + (f"{config.sweep_summary}, " if config.sweep_summary else "")
        + f"metrics {', '.join(config.model.metrics)}"
    )
    return problems, summary


def validate_query_set(path: Path) -> tuple[list[str], str]:
    """A YAML query set given alone: every problem of it and of the files it names; return (problems, summary)."""
    try:
        dataset = load_yaml_query_set(path)
    except RagEvalError as error:
        return error.problems, ""
    what = "documents" if dataset.has_documents else "passages"
    size = len(dataset.documents) if dataset.has_documents else len(dataset.corpus)
    return [], (f"{path}: OK: query set {dataset.name} ({len(dataset.queries)} queries, {size} {what}, "
                f"fingerprint {dataset.fingerprint})")


def _check_stored_ranking(spec: RetrieverSpec, config: LoadedConfig, dataset: Any) -> None:
    """A ``static`` retriever's rankings read (rag_eval's own adapter: no plug-in code runs) and, with the
    dataset, looked up as ``run`` does: a query id that names no query, a doc id that is not in the corpus."""
    retriever = build_retriever(spec, config)
    if dataset is None:
        return
    # Passages, or whole documents: with a chunker, a chunk id's document is looked up (its offsets need the chunks)
    retriever.index(dataset.corpus)
    queries = {qid: query.text for qid, query in dataset.queries.items()}
    try:
        answer = retriever.search(queries, config.model.top_k)
    except RagEvalError as error:
        where = f"{config.path}: retriever {spec.label!r}"
        raise RetrieverError(f"{where}: {error}", problems=[f"{where}: {p}" for p in error.problems]) from None
    if spec.chunker is None and dataset.has_documents and returns_own_spans(answer, dataset.documents):
        try:  # chunk ids of the documents: their offsets checked as run checks them
            checked_own_spans(spec.label, as_span_lists(spec.label, answer, dataset.documents), queries,
                              dataset.documents)
        except RagEvalError as error:  # (the message names the retriever already)
            raise RetrieverError(f"{config.path}: {error}") from None


def _regression_problems(config: LoadedConfig, dataset: Any) -> list[str]:
    """The baseline file as ``run`` reads it before retrieving, the retriever compared with it, and its dataset
    (the verdict of a run on another would be "incomparable" once every retriever has run)."""
    regression = config.model.regression
    if regression is None or "regression" in (config.left_out or ()):
        return []
    path = config.resolve(regression.baseline)
    try:
        baseline = load_results_file(path)
        if config.left_out is None:  # the labels of an invalid config's retrievers are not all known
            candidate_label(config, baseline.label)
    except RagEvalError as error:
        return [problem if problem.startswith(str(config.path)) else f"{config.path}: regression.baseline: {problem}"
                for problem in error.problems]
    if config.left_out is None and dataset is not None and baseline.fingerprint != dataset.fingerprint:
        return [f"{config.path}: regression.baseline: {path} was made on another dataset ({baseline.dataset_name} "
                f"fingerprint {baseline.fingerprint}; this config's: {dataset.name} fingerprint {dataset.fingerprint}); "
                "rerun the baseline on this dataset"]
    return []


def _chunking_problems(config: LoadedConfig, dataset: Any) -> list[str]:
    """Each chunker's parameters (nothing is chunked, no custom chunker called) and their use with the dataset."""
    problems: list[str] = []
    for name, spec in config.model.chunking.items():
        try:
            check_chunker(name, spec, config.base)
        except RagEvalError as error:
            problems += [f"{config.path}: {problem}" for problem in error.problems]
    tokenizer = config.model.evaluation.tokenizer
    if tokenizer != "words":
        try:
            load_tokenizer(tokenizer, "evaluation.tokenizer", config.base)
        except RagEvalError as error:
            problems += [f"{config.path}: {problem}" for problem in error.problems]
    if dataset is not None:
        try:
            check_chunking_use(config, dataset)
        except RagEvalError as error:
            problems += error.problems
    return problems


def _output_problems(config: LoadedConfig) -> list[str]:
    """What `run` would refuse about its outputs, checked the same way without writing or locking anything:
    the output folder itself, outputs that would replace an input, and files in the way that rag_eval did not write.
    """
    outputs = plan_run(config).outputs
    problems = []
    for check in (
        lambda: check_outputs_are_not_inputs(config, outputs),
        lambda: check_output_folder(config.output_dir, config.path),
        lambda: check_replaceable(config.output_dir, outputs) if config.output_dir.is_dir() else None,
    ):
        try:
            check()
        except RagEvalError as error:
            problems += error.problems
    return problems
