"""The passages side of a run: every retriever indexes the corpus as it is, its answer is checked and evaluated.

:class:`PassageRun` answers the same calls as rag_eval/_run/documents.py's DocumentRun (``prepare``,
``corpus``, ``timings``, ``outcome``), so that rag_eval/_run/execute.py runs either with one loop.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from rag_eval._data.config.schema import LoadedConfig
from rag_eval._data.config.sections import RetrieverSpec
from rag_eval._data.datasets import Dataset
from rag_eval._run.checks import check_ranking
from rag_eval._run.holes_record import evaluation_options, passage_holes
from rag_eval._run.outcome import RetrieverOutcome
from rag_eval._run.read_only import read_only_corpus
from rag_eval._scoring.approximation import approximation_cost
from rag_eval._scoring.evaluate import evaluate
from rag_eval._scoring.results import Results


class PassageRun:
    """Retrievers over a passage corpus: each indexes the corpus (read-only), its ranking is scored by evaluate()."""

    def __init__(self, config: LoadedConfig, dataset: Dataset, queries: Mapping[str, str]) -> None:
        self.config = config
        self.dataset = dataset
        self.queries = queries
        # A view that cannot change the corpus (no copy: it may hold millions of passages).
        self._corpus = read_only_corpus(dataset.corpus)

    def prepare(self) -> None:
        """Nothing to cut or load before the retrievers run: they index the corpus as it is."""

    def corpus(self, spec: RetrieverSpec) -> Mapping[str, Mapping[str, Any]]:
        """What every retriever indexes: the corpus."""
        return self._corpus

    def timings(self, spec: RetrieverSpec) -> dict[str, float]:
        """No work is done for a retriever before it indexes."""
        return {}

    def outcome(
        self, spec: RetrieverSpec, retriever: Any, description: dict[str, Any], raw: Any, timings: dict[str, float],
        fresh: bool,
    ) -> tuple[RetrieverOutcome, Any]:
        """The answer checked and evaluated; with the checked ranking, which the ranking cache keeps.

        A stored ranking (``fresh`` False) is checked again like a fresh answer: an entry can never give
        what search() could not. It keeps the cost of an approximate index measured when it was computed.
        """
        model = self.config.model
        ranking = check_ranking(spec.label, raw, self.queries, self.dataset.corpus, model.top_k)
        started = time.perf_counter()
        options = model.evaluation.passage_options()
        results = evaluate(self.dataset.judgements, ranking, model.metrics, **options)
        # The holes are part of the evaluation: what each number could be had the unjudged passages been judged.
        holes = passage_holes(self.dataset.judgements, ranking, results, model.top_k, evaluation_options(options))
        timings["evaluate_s"] = time.perf_counter() - started
        if fresh:
            cost = approximation_of(spec.label, retriever, ranking, results, self.config, self.dataset)
            if cost is not None:
                description["approximation"] = cost
        return RetrieverOutcome(spec, description, ranking, results, timings, holes=holes), ranking


def approximation_of(
    label: str, retriever: Any, ranking: Mapping[str, Mapping[str, float]], results: Results, config: LoadedConfig,
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
