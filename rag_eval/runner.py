"""Run a config: load the dataset, run each retriever, evaluate, write outputs.

Nothing is written until every retriever has run and been evaluated: the
report, the results files and the run files are then each written atomically,
so a failed run leaves what the user had untouched.
"""

from __future__ import annotations

import datetime as _dt
import inspect
import math
import platform
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping

from rag_eval.config.schema import LoadedConfig, RetrieverSpec
from rag_eval.dataset import Dataset, load_dataset
from rag_eval.errors import RagEvalError, RetrieverError
from rag_eval.evaluate import evaluate
from rag_eval.results import Results

RESULTS_SCHEMA_VERSION = 1
_PACKAGES = ("rag-eval", "numpy", "pandas", "scipy", "bm25s", "sentence-transformers", "transformers", "torch")


@dataclass
class RetrieverOutcome:
    """One retriever's ranking, its evaluation and what it cost."""

    spec: RetrieverSpec
    description: dict[str, Any]
    ranking: dict[str, dict[str, float]]
    results: Results
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.spec.label


@dataclass
class RunOutcome:
    """Everything a run produced, before anything is written."""

    config: LoadedConfig
    dataset: Dataset
    outcomes: list[RetrieverOutcome]
    created: str = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))


def load_config_dataset(config: LoadedConfig) -> Dataset:
    """The dataset a config names, with paths resolved against the config."""
    spec = config.model.dataset.model_dump(exclude_none=True)
    return load_dataset(spec, base=config.base)


def execute(config: LoadedConfig, progress: bool | None = None) -> RunOutcome:
    """Run every retriever of ``config`` and evaluate it; writes nothing."""
    from tqdm.auto import tqdm

    dataset = load_config_dataset(config)
    model = config.model
    queries = dataset.query_texts()
    outcomes = []
    # Build every retriever before running any: a typo in the last one's parameters must
    # not wait for the first one to index a corpus. Adapters load models lazily (in index),
    # and each retriever is dropped once it has run, so this holds no model in memory.
    retrievers: list[Any] = [build_retriever(spec, config) for spec in model.retrievers]
    steps = tqdm(total=2 * len(model.retrievers), desc="retrieval", unit="step", disable=_disabled(progress))
    with steps:
        for position, spec in enumerate(model.retrievers):
            retriever, retrievers[position] = retrievers[position], None
            timings: dict[str, float] = {}
            steps.set_postfix_str(f"{spec.label}: index")
            started = time.perf_counter()
            _call(spec, "index", retriever.index, dataset.corpus)
            timings["index_s"] = time.perf_counter() - started
            steps.update()
            steps.set_postfix_str(f"{spec.label}: search")
            started = time.perf_counter()
            raw = _call(spec, "search", retriever.search, queries, model.top_k)
            timings["search_s"] = time.perf_counter() - started
            steps.update()
            ranking = check_ranking(spec.label, raw, queries, dataset.corpus, model.top_k)
            started = time.perf_counter()
            results = evaluate(dataset.judgements, ranking, model.metrics, **model.evaluation.model_dump())
            timings["evaluate_s"] = time.perf_counter() - started
            from rag_eval.retrievers.base import describe

            outcomes.append(RetrieverOutcome(spec, describe(retriever), ranking, results, timings))
    return RunOutcome(config, dataset, outcomes)


def build_retriever(spec: RetrieverSpec, config: LoadedConfig) -> Any:
    """Build one retriever, resolving its path parameters against the config's folder."""
    from rag_eval.retrievers import registry

    try:
        factory = registry.resolve(spec.adapter)
        params = resolve_params(factory, spec.params, config)
        return registry.build(spec.adapter, params)
    except RagEvalError as error:
        raise RetrieverError(f"{config.path}: retriever {spec.label!r}: {_one_line(error)}") from error
    except Exception as error:  # the user's constructor raised: name the retriever, keep the cause
        raise RetrieverError(
            f"{config.path}: retriever {spec.label!r} ({spec.adapter}) could not be built: "
            f"{type(error).__name__}: {_one_line(error)}"
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
    from rag_eval.retrievers import registry

    nested = dict(spec)
    if isinstance(nested.get("params"), Mapping):
        nested["params"] = resolve_params(registry.resolve(nested["adapter"]), nested["params"], config)
    return nested


def check_ranking(
    label: str, raw: Any, queries: Mapping[str, str], corpus: Mapping[str, Any], top_k: int
) -> dict[str, dict[str, float]]:
    """Check a retriever's answer and cut each query's list to ``top_k``.

    A doc id not in the corpus, a non-numeric or NaN score, or a query id that
    was not asked stops the run with an error naming the retriever.
    """
    from rag_eval.trec import ranked_doc_ids

    if not isinstance(raw, Mapping):
        raise RetrieverError(f"retriever {label!r}: search() returned {type(raw).__name__}, expected {{qid: {{doc_id: score}}}}")
    ranking: dict[str, dict[str, float]] = {}
    for qid, scored in raw.items():
        if qid not in queries:
            raise RetrieverError(f"retriever {label!r}: search() answered query {qid!r}, which was not asked")
        if not isinstance(scored, Mapping):
            raise RetrieverError(f"retriever {label!r}: query {qid!r}: expected {{doc_id: score}}, got {type(scored).__name__}")
        clean: dict[str, float] = {}
        for doc, score in scored.items():
            if doc not in corpus:
                raise RetrieverError(f"retriever {label!r}: query {qid!r}: returned doc {doc!r}, which is not in the corpus")
            try:
                value = float(score)
            except (TypeError, ValueError):
                raise RetrieverError(f"retriever {label!r}: query {qid!r}, doc {doc!r}: score {score!r} is not a number") from None
            if math.isnan(value):
                raise RetrieverError(f"retriever {label!r}: query {qid!r}, doc {doc!r}: score is NaN")
            clean[doc] = value
        if len(clean) > top_k:
            clean = {doc: clean[doc] for doc in ranked_doc_ids(clean)[:top_k]}
        ranking[qid] = clean
    for qid in queries:
        ranking.setdefault(qid, {})
    return ranking


def results_document(run: RunOutcome, outcome: RetrieverOutcome) -> dict[str, Any]:
    """The self-describing results file of one retriever (the unit a regression check compares)."""
    return {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "kind": "rag_eval.results",
        "created": run.created,
        "config": {"path": str(run.config.path), "resolved": run.config.model.model_dump(mode="json")},
        "dataset": run.dataset.summary(),
        "retriever": {
            "label": outcome.spec.label,
            "adapter": outcome.spec.adapter,
            "params": outcome.spec.params,
            "description": outcome.description,
        },
        "top_k": run.config.model.top_k,
        "timings": outcome.timings,
        "packages": package_versions(),
        "query_texts": {q: run.dataset.queries[q].text for q in outcome.results.query_ids},
        "results": outcome.results.to_dict(),
        "rankings": ranking_with_grades(outcome.ranking, run.dataset.judgements),
    }


def ranking_with_grades(
    ranking: Mapping[str, Mapping[str, float]], judgements: Mapping[str, Mapping[str, float]]
) -> dict[str, list[list[Any]]]:
    """``{qid: [[doc_id, score, grade or None], ...]}`` in rank order, for comparison reports."""
    from rag_eval.trec import ranked_doc_ids

    out = {}
    for qid in sorted(ranking):
        grades = judgements.get(qid, {})
        out[qid] = [[doc, ranking[qid][doc], grades.get(doc)] for doc in ranked_doc_ids(ranking[qid])]
    return out


def write_outputs(run: RunOutcome, extra: Mapping[str, str] | None = None) -> list[Path]:
    """Render everything first, then write all files as one step; returns the paths.

    Every file is first written in full to a temporary file beside its target;
    only when all are on disk are they renamed into place. A failure while
    writing (disk full, no permission, the output folder is a file) removes the
    temporary files and leaves every earlier output untouched.
    """
    import json

    from rag_eval.report.markdown import render_run_report
    from rag_eval.trec import format_run

    out_dir = run.config.output_dir
    files: dict[Path, str] = {}
    for outcome in run.outcomes:
        doc = results_document(run, outcome)
        # default=str: a YAML date in params or a Path in describe() must not crash the write.
        files[out_dir / f"{outcome.label}.json"] = json.dumps(doc, indent=2, sort_keys=False, default=str) + "\n"
        files[out_dir / f"{outcome.label}.run"] = format_run(outcome.ranking, tag=outcome.label)
    files[out_dir / "report.md"] = render_run_report(run)
    for name, text in (extra or {}).items():
        files[out_dir / name] = text
    _write_all(files, out_dir)
    return list(files)


def _write_all(files: Mapping[Path, str], out_dir: Path) -> None:
    from rag_eval.atomic import atomic_write_many

    try:
        atomic_write_many(dict(files))
    except OSError as error:
        where = error.filename or out_dir
        raise RagEvalError(f"{where}: cannot write the outputs: {error.strerror or error}") from error


def package_versions() -> dict[str, str]:
    """Versions of Python and the packages that shape the numbers (from metadata, no imports)."""
    versions = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def _call(spec: RetrieverSpec, step: str, method: Any, *args: Any) -> Any:
    try:
        return method(*args)
    except RagEvalError as error:
        raise RetrieverError(f"retriever {spec.label!r} ({spec.adapter}) failed in {step}(): {_one_line(error)}") from error
    except Exception as error:
        raise RetrieverError(
            f"retriever {spec.label!r} ({spec.adapter}) failed in {step}(): {type(error).__name__}: {_one_line(error)}"
        ) from error


def _one_line(error: BaseException) -> str:
    """An exception's message on one line: the CLI prints exactly one line per error."""
    return " ".join(str(error).split())


def _accepts(factory: Any, name: str) -> bool:
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False
    return name in parameters or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


def _disabled(progress: bool | None) -> bool | None:
    # None lets tqdm decide: bars on a terminal, none in CI logs.
    return None if progress is None else not progress
