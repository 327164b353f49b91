"""Run + judgements + metrics -> :class:`Results`, with trec_eval's semantics.

Each query's documents are ranked by the rule of rag_eval._core.ranking (score descending,
ties by doc id descending in bytes, as trec_eval) and joined with the judgements by
the engine (rag_eval._scoring.engine.prepare); a rank column in the input, if any, is ignored.
Every judged query enters the mean (a query the retriever did not answer scores
0); queries without judgements are listed, never scored. See docs/semantics.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag_eval._core.errors import EvaluationError, InputFormatError, MetricError
from rag_eval._scoring.engine import FlatTable, JoinedRun, from_dataframe, from_nested, prepare
from rag_eval._scoring.metrics.aggregation import AGGREGATIONS, dataset_value
from rag_eval._scoring.metrics.condensed import condense
from rag_eval._scoring.metrics.kernels import GAINS, KernelContext, dcg, idcg
from rag_eval._scoring.metrics.measures import Metric, parse_metrics
from rag_eval._scoring.results import Results

NO_RELEVANT_POLICIES = ("skip", "zero", "error")


@dataclass(frozen=True)
class EvaluationOptions:
    """The choices that change what a number means (printed in every report)."""

    gain: str = "linear"
    aggregation: str = "macro"
    no_relevant: str = "skip"
    relevance_threshold: float = 1.0
    # trec_eval -J: unjudged documents (and negative grades) removed from each ranking before scoring
    judged_only: bool = False

    def __post_init__(self) -> None:
        _check_choice("gain", self.gain, GAINS)
        _check_choice("aggregation", self.aggregation, AGGREGATIONS)
        _check_choice("no_relevant", self.no_relevant, NO_RELEVANT_POLICIES)
        threshold = self.relevance_threshold
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not np.isfinite(threshold):
            raise InputFormatError(f"relevance_threshold must be a finite number, got {threshold!r}")
        if threshold <= 0:
            raise InputFormatError(
                f"relevance_threshold must be > 0 (grades <= 0 are never relevant), got {threshold!r}"
            )
        object.__setattr__(self, "relevance_threshold", float(threshold))
        if not isinstance(self.judged_only, (bool, np.bool_)):
            raise InputFormatError(f"judged_only must be true or false, got {self.judged_only!r}")
        object.__setattr__(self, "judged_only", bool(self.judged_only))

    def to_dict(self) -> dict[str, Any]:
        """Plain dict, as stored in results files (``judged_only`` only when set: absent means false)."""
        condensed = {"judged_only": True} if self.judged_only else {}
        return {
            "gain": self.gain,
            "aggregation": self.aggregation,
            "no_relevant": self.no_relevant,
            "relevance_threshold": self.relevance_threshold,
            "discount": "1/log2(rank+1)",
            "ties": "score descending, then doc id descending (trec_eval)",
            "ideal": "all judged documents with grade > 0, retrieved or not",
            **condensed,
        }


def evaluate(
    judgements: Mapping | Any,
    run: Mapping | Any,
    metrics: Iterable[str | Metric] | str,
    *,
    gain: str = "linear",
    aggregation: str = "macro",
    no_relevant: str = "skip",
    relevance_threshold: float = 1,
    judged_only: bool = False,
) -> Results:
    """Score ``run`` against ``judgements`` on ``metrics``, per query and overall.

    ``judgements`` is ``{qid: {doc_id: grade}}`` and ``run`` is
    ``{qid: {doc_id: score}}``, or pandas DataFrames with columns qid, doc_id and
    grade / score, or tables read by rag_eval._scoring.engine (``read_qrels``, ``read_run``).
    Ids are non-empty UTF-8 text without control characters (rag_eval._core.ids), as in files;
    a run's doc ids that have no judgement are not checked (they cannot change a number,
    see rag_eval._scoring.engine.from_nested). Grades and scores are finite int or float values
    (a grade given as a str or a bool is refused); empty judgements are an error, and so
    are grades whose gains overflow float64 (:class:`~rag_eval._core.errors.EvaluationError`
    naming the query). Inputs are never mutated. Options are those of docs/semantics.md;
    ``judged_only`` scores the condensed list (trec_eval -J: unjudged documents removed first).
    """
    options = EvaluationOptions(gain, aggregation, no_relevant, relevance_threshold, judged_only)
    parsed = passage_metrics(parse_metrics([metrics] if isinstance(metrics, str) else metrics))
    return score(join_inputs(judgements, run), parsed, options)


def join_inputs(judgements: Any, run: Any, keep_unjudged: bool = False) -> JoinedRun:
    """``judgements`` and ``run`` (the forms :func:`evaluate` takes) ranked and joined; empty judgements refused.

    ``keep_unjudged``: keep the retrieved documents without a judgement too, as rows of grade NaN
    (rag_eval._scoring.engine.prepare).
    """
    joined = prepare(as_table(judgements, "grade", "judgements"), as_table(run, "score", "run"), keep_unjudged)
    if not joined.query_ids:  # every mean would be NaN: say why instead
        raise InputFormatError(
            "judgements: no query has a judgement (empty), so there is nothing to score; "
            "give {query_id: {doc_id: grade}} with at least one grade"
        )
    return joined


def passage_metrics(metrics: tuple[Metric, ...], fix: str = "") -> tuple[Metric, ...]:
    """``metrics``, refusing document (``doc_``) and evidence metrics: a passage run has neither.

    A passage run has no documents to collapse chunks into and no offsets to cover evidence
    with; ``fix`` replaces the default advice (the CLI names its own).
    """
    needs_documents = [m for m in metrics if m.is_document_level or m.is_evidence]
    if needs_documents:
        first = needs_documents[0]
        raise MetricError(
            f"metric {first}: {'document' if first.is_document_level else 'evidence'} metrics need documents and "
            "spans; " + (fix or "score chunk rankings with rag_eval.evaluate_evidence, or run a dataset with documents")
        )
    return metrics


def score(joined: JoinedRun, metrics: tuple[Metric, ...], options: EvaluationOptions) -> Results:
    """Every metric of a :class:`JoinedRun`, per query and over the dataset.

    Under ``judged_only`` the kernels read the condensed ranking (rag_eval._scoring.metrics.condensed).
    """
    query_ids, unjudged, unanswered = joined.query_ids, joined.unjudged, joined.unanswered
    ranked = condense(joined.ranked) if options.judged_only else joined.ranked
    ctx = KernelContext(ranked, gain=options.gain, relevance_threshold=options.relevance_threshold)
    values: dict[str, np.ndarray] = {}
    aggregate: dict[str, float] = {}
    left_out: dict[str, tuple[str, ...]] = {}
    for metric in metrics:
        if metric.is_graded:
            _check_gains_fit(ctx, metric, query_ids)
        per_query = _kernel(ctx, metric)
        defined = ctx.has_relevant(metric.is_graded) if metric.uses_relevance else np.ones(len(query_ids), dtype=bool)
        per_query, missing = apply_no_relevant(metric, per_query, defined, options, query_ids)
        if missing:
            left_out[str(metric)] = missing
        values[str(metric)] = per_query
        aggregate[str(metric)] = dataset_value(metric, per_query, options.aggregation, lambda part: _kernel(ctx, part))
    return Results(
        metrics=metrics,
        query_ids=tuple(query_ids),
        values=values,
        aggregate=aggregate,
        options=options.to_dict(),
        left_out=left_out,
        unjudged_queries=tuple(unjudged),
        unanswered_queries=tuple(unanswered),
    )


def apply_no_relevant(
    metric: Metric,
    per_query: np.ndarray,
    defined: np.ndarray,
    options: EvaluationOptions,
    query_ids: list[str],
    nothing: str = "no relevant document",
    fix: str = "judge a relevant document for each",
) -> tuple[np.ndarray, tuple[str, ...]]:
    """The ``no_relevant`` policy for the queries where ``metric`` is undefined: ``(values, left out)``.

    ``skip``: NaN and listed; ``zero``: 0; ``error``: one EvaluationError naming the queries.
    ``nothing`` and ``fix`` word the error (evidence metrics lack evidence, not a relevant document).
    """
    if defined.all():
        return per_query, ()
    missing = tuple(query_ids[i] for i in np.flatnonzero(~defined).tolist())
    if options.no_relevant == "error":
        raise EvaluationError(
            f"metric {metric}: {len(missing)} judged quer{'y has' if len(missing) == 1 else 'ies have'} "
            f"{nothing} ({', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''}); "
            f"{fix}, or set no_relevant to skip or zero"
        )
    if options.no_relevant == "skip":
        return np.where(defined, per_query, np.nan), missing
    return np.where(defined, per_query, 0.0), ()


# Sums of gains below this cannot overflow, whatever their order: all DCGs of the run are then finite.
_SAFE_GAIN_TOTAL = np.finfo(np.float64).max / 4


def _check_gains_fit(ctx: KernelContext, metric: Metric, query_ids: list[str]) -> None:
    """Refuse grades whose gains, or DCG / ideal DCG, are too large for a float64, naming the query.

    nDCG would otherwise be inf / inf = NaN or a finite / inf = 0 (and results files cannot hold
    Infinity). trec_eval has no answer for them either. One sum decides the usual case: every DCG
    and ideal DCG is at most the sum of all gains of the judgements (discounts are at most 1).
    """
    _, _, gains = ctx.ideal
    with np.errstate(over="ignore"):  # an overflowing sum is inf: the exact check below runs
        total = ctx.cached("gain_total", lambda: float(np.sum(gains)) if gains.size else 0.0)
    if total < _SAFE_GAIN_TOTAL:
        return

    with np.errstate(over="ignore", invalid="ignore"):
        ideal, actual = idcg(ctx, metric.k), dcg(ctx, metric.k)
    bad = ~(np.isfinite(ideal) & np.isfinite(actual))
    if not bad.any():
        return
    i = int(np.flatnonzero(bad)[0])
    what = "ideal DCG" if not np.isfinite(ideal[i]) else "DCG"
    judgement = ctx.data.judgement_query == i
    largest = float(ctx.data.judgement_grade[judgement].max())
    if ctx.gain == "exponential" and largest >= 1024:  # 2.0**1024 is past float64
        cause = f"with exponential gain, 2^{largest:g} - 1 is past the largest float64 (about 1.8e308)"
        fix = "use grades up to 1023 with exponential gain, or linear gain"
    else:
        cause = f"its gains (grades up to {largest:g}) add up past the largest float64 (about 1.8e308)"
        fix = "use smaller grades"
    raise EvaluationError(
        f"judgements: query {query_ids[i]!r}: {metric} cannot be computed: its {what} is infinite, as {cause}; "
        f"{fix} (trec_eval cannot score such grades either)"
    )


def _kernel(ctx: KernelContext, metric: Metric) -> np.ndarray:
    """Per-query values of ``metric`` by its family's kernel (NaN only where nDCG's IDCG is 0)."""
    with np.errstate(over="ignore", invalid="ignore"):  # gains are checked first: no overflow reaches a value
        return metric.family.kernel(ctx, metric.k)


def as_table(data: Any, value_column: str, what: str) -> FlatTable:
    """``data`` (``{qid: {doc_id: value}}``, a DataFrame or a FlatTable) as a FlatTable; ``what`` names it in errors."""
    if isinstance(data, FlatTable):
        return data
    if isinstance(data, Mapping):
        return from_nested(data, what)
    if hasattr(data, "columns") and hasattr(data, "iloc"):
        return from_dataframe(data, value_column, what)
    raise InputFormatError(
        f"{what}: expected {{qid: {{doc_id: {value_column}}}}} or a DataFrame with columns qid, doc_id, "
        f"{value_column}; got {type(data).__name__}"
    )


def _check_choice(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise InputFormatError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")

