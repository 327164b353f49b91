"""Run a config: load the dataset, run each retriever, evaluate it; nothing is written.

One loop over the retrievers. What differs between a passage corpus and a dataset of
documents (what a retriever indexes, how its answer becomes a ranking and is scored)
is behind one interface, :class:`Side`: rag_eval/_run/passages.py and
rag_eval/_run/documents.py. Each retriever is indexed and searched, or its ranking
is taken from the ranking cache when nothing it depends on changed
(rag_eval/_run/ranking_reuse.py); either way the answer is checked and evaluated.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from typing import Any, Protocol

from rag_eval._core.errors import ConfigError, RagEvalError, RetrieverError
from rag_eval._core.plugins import error_cause
from rag_eval._data.config.schema import LoadedConfig
from rag_eval._data.config.sections import RetrieverSpec
from rag_eval._execution.context import executing
from rag_eval._execution.ray_cluster import ray_missing
from rag_eval._models.progress import NoBar, showing_progress
from rag_eval._retrievers.base import describe
from rag_eval._retrievers.shared_children import sharing
from rag_eval._run.build import build_retrievers, one_line
from rag_eval._run.checks import RetrieverRunError
from rag_eval._run.chunking_use import check_chunking_use
from rag_eval._run.documents import DocumentRun
from rag_eval._run.outcome import RetrieverOutcome, RunOutcome
from rag_eval._run.passages import PassageRun
from rag_eval._run.plan import load_config_dataset
from rag_eval._run.ranking_reuse import HIT, STORED_TIMINGS, RankingReuse
from rag_eval._run.read_only import read_only_queries

# Three steps per retriever on the progress bar: index, search, evaluate.
STEPS = 3


class Side(Protocol):
    """What a run does differently for passages and for documents; the loop of :func:`execute` calls only this."""

    def prepare(self) -> None:
        """Whatever can fail before any retrieval (chunkers, chunkings, tokenizers): done first."""

    def corpus(self, spec: RetrieverSpec) -> Mapping[str, Mapping[str, Any]]:
        """What ``spec``'s retriever indexes (read-only)."""

    def timings(self, spec: RetrieverSpec) -> dict[str, float]:
        """Time already spent for ``spec``'s retriever before it indexes (cutting its chunking)."""

    def outcome(
        self, spec: RetrieverSpec, retriever: Any, description: dict[str, Any], raw: Any, timings: dict[str, float],
        fresh: bool,
    ) -> tuple[RetrieverOutcome, Any]:
        """The answer checked and evaluated, and the answer the ranking cache keeps; ``fresh``: not from the cache."""


def execute(config: LoadedConfig, progress: bool | None = None) -> RunOutcome:
    """Run every retriever of ``config`` and evaluate it; writes nothing.

    ``progress``: show progress bars (None: tqdm decides, bars on a terminal and none in CI logs).
    Equal nested retrievers of several retrievers (a sweep over a hybrid's fusion) are built,
    indexed and searched once (rag_eval._retrievers.shared_children). With ``execution: {engine:
    ray}`` dense encoding and exact search run on a Ray cluster, joined when a retriever first needs
    it (rag_eval._execution.context); the evaluation stays in this process.
    """
    missing_ray = ray_missing() if config.model.execution.engine == "ray" else None
    if missing_ray is not None:  # refused before anything runs, as `validate` refuses it
        raise ConfigError(f"{config.path}: execution.{missing_ray}")
    with sharing(), executing(config.model.execution), showing_progress(progress):
        dataset = load_config_dataset(config)
        check_chunking_use(config, dataset)
        retrievers = build_retrievers(config)  # each dropped once it has run: no model is held longer
        queries = dataset.query_texts()
        side: Side
        if dataset.has_documents:
            side = DocumentRun(config, dataset, queries)
        else:
            side = PassageRun(config, dataset, queries)
        side.prepare()
        loop = _Loop(config, side, queries, progress)
        return RunOutcome(config, dataset, loop.run(retrievers))


class _Loop:
    """The retrievers of one run, one after the other, behind one progress bar."""

    def __init__(self, config: LoadedConfig, side: Side, queries: Mapping[str, str], progress: bool | None) -> None:
        self.config = config
        self.side = side
        # Retrievers read the queries through a view that cannot change them: the numbers, the report and
        # the fingerprint describe what was loaded.
        self.queries = read_only_queries(queries)
        self.reuse = RankingReuse(config, self.queries)
        self.progress = progress

    def run(self, retrievers: list[Any]) -> list[RetrieverOutcome]:
        specs = self.config.model.retrievers
        outcomes = []
        # The bar names the retriever and the stage running now ("bm25: search"), and which of the config's it is.
        with self._bar(STEPS * len(specs)) as bar:
            for position, spec in enumerate(specs):
                retriever, retrievers[position] = retrievers[position], None
                bar.set_postfix_str(f"retriever {position + 1} of {len(specs)}", refresh=False)
                try:
                    outcomes.append(self._one(spec, retriever, bar))
                finally:
                    _release(retriever)  # a database client closed, an embedded server stopped: Ctrl-C too
        return outcomes

    def _bar(self, total: int) -> Any:
        if self.progress is False:  # --no-progress: tqdm is not even imported
            return NoBar()
        if self.progress is None and not _on_a_terminal(sys.stderr):
            return NoBar()  # tqdm's rule for disable=None (no bar off a terminal) without its import: ~30 ms
        from tqdm.auto import tqdm

        return tqdm(total=total, desc="retrieval", unit="step", disable=_disabled(self.progress))

    def _one(self, spec: RetrieverSpec, retriever: Any, bar: Any) -> RetrieverOutcome:
        """One retriever: its ranking (stored, or indexed and searched), checked, evaluated, stored."""
        timings = self.side.timings(spec)
        corpus = self.side.corpus(spec)
        key = self.reuse.key(spec, retriever, corpus)
        reused = self._reused(spec, retriever, key, timings, bar)
        if reused is not None:
            return reused
        raw = self._retrieve(spec, retriever, corpus, timings, bar)
        try:
            description = describe(retriever, spec.label, spec.adapter)
        except RetrieverError as error:  # a run error, as index() and search() fail: `run` names the config
            raise RetrieverRunError(str(error), problems=error.problems) from error
        bar.set_description(f"{spec.label}: evaluate")
        outcome, answer = self.side.outcome(spec, retriever, description, raw, timings, fresh=True)
        self.reuse.save(key, answer, description, timings)  # stored only once checked and evaluated
        bar.update()
        return outcome

    def _reused(
        self, spec: RetrieverSpec, retriever: Any, key: str | None, timings: dict[str, float], bar: Any
    ) -> RetrieverOutcome | None:
        """The outcome of a stored ranking, checked and evaluated; None when there is none or it fails the checks.

        A stored ranking is checked like a fresh answer. One that fails (a document not in the corpus, a query
        not asked: an entry edited or damaged in a way its checksum does not show) is the cache's fault, not the
        retriever's: a miss with a warning, and the retriever runs.
        """
        cached = self.reuse.load(key)
        if cached is None:
            return None
        bar.set_description(f"{spec.label}: stored ranking")
        # The cost columns keep the original run's index and search times (what the retriever costs).
        stored = {name: cached.timings[name] for name in STORED_TIMINGS if name in cached.timings}
        description = {**cached.description, **HIT}
        try:
            outcome, _ = self.side.outcome(
                spec, retriever, description, cached.answer, {**timings, **stored}, fresh=False
            )
        except RetrieverRunError as error:
            self.reuse.discard(key, f"its ranking fails the run's checks ({one_line(error)})")
            return None
        bar.update(STEPS)
        return outcome

    def _retrieve(
        self, spec: RetrieverSpec, retriever: Any, corpus: Mapping[str, Mapping[str, Any]], timings: dict[str, float],
        bar: Any,
    ) -> Any:
        """``index(corpus)`` then ``search(queries, top_k)``, each timed; the raw answer."""
        bar.set_description(f"{spec.label}: index")
        started = time.perf_counter()
        _call(spec, "index", retriever.index, corpus)
        timings["index_s"] = time.perf_counter() - started
        bar.update()
        bar.set_description(f"{spec.label}: search")
        started = time.perf_counter()
        raw = _call(spec, "search", retriever.search, self.queries, self.config.model.top_k)
        timings["search_s"] = time.perf_counter() - started
        bar.update()
        return raw


def _call(spec: RetrieverSpec, step: str, method: Any, *args: Any) -> Any:
    """Call a retriever's method; whatever it raises becomes one RetrieverRunError naming it and the step.

    SystemExit included: a plug-in that calls ``sys.exit()`` has failed, and must not end
    rag-eval with the plug-in's exit code (which CI would read as a verdict); so has one that
    raises asyncio.CancelledError or another BaseException (which would end it with 1, "a gate
    failed"). Ctrl-C (KeyboardInterrupt) still stops the run.
    """
    where = f"retriever {spec.label!r} ({spec.adapter}) failed in {step}()"
    try:
        return method(*args)
    except KeyboardInterrupt:
        raise
    except RagEvalError as error:
        raise RetrieverRunError(f"{where}: {one_line(error)}") from error
    except SystemExit as error:
        raise RetrieverRunError(
            f"{where}: it called sys.exit({error.code!r}); a plug-in must raise an exception, not exit the process"
        ) from error
    except BaseException as error:  # the plug-in failed, whatever it raised (rag_eval._core.plugins)
        raise RetrieverRunError(f"{where}: {error_cause(error)}") from error


def _release(retriever: Any) -> None:
    """Close what an integration opened (its client, a server it started); plug-ins' own methods are not called."""
    # By the loaded modules: a retriever of these classes exists only once its module was imported, and
    # importing them for a run without integrations cost a warm rerun ~16 ms.
    kinds = []
    if (vector_db := sys.modules.get("rag_eval._retrievers.external.vector_db")) is not None:
        kinds.append(vector_db.VectorDBRetriever)
    if (by_text := sys.modules.get("rag_eval._retrievers.external.by_text")) is not None:
        kinds.append(by_text.TextHitsRetriever)
    if any(isinstance(retriever, kind) for kind in kinds):
        retriever.close()


def _on_a_terminal(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty()) if isatty is not None else True  # tqdm shows a bar on a stream that cannot say


def _disabled(progress: bool | None) -> bool | None:
    # None lets tqdm decide: bars on a terminal, none in CI logs.
    return None if progress is None else not progress
