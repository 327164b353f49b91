"""Run + judgements + metrics -> :class:`Results`, with trec_eval's semantics.

The run is sorted per query by score descending, ties broken by doc id descending
(byte order), exactly as trec_eval does; its rank column, if any, is ignored.
Every judged query enters the mean (a query the retriever did not answer scores
0); queries without judgements are listed, never scored. See SEMANTICS.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np

from rag_eval.errors import EvaluationError, InputFormatError
from rag_eval.metrics.kernels import GAINS, KernelContext, RankedJudgedRun, compute, has_relevant
from rag_eval.metrics.measures import Metric, parse_metrics
from rag_eval.results import Results
from rag_eval.tables import FlatTable, from_dataframe, from_nested

AGGREGATIONS = ("macro", "micro")
NO_RELEVANT_POLICIES = ("skip", "zero", "error")


@dataclass(frozen=True)
class EvaluationOptions:
    """The choices that change what a number means (printed in every report)."""

    gain: str = "linear"
    aggregation: str = "macro"
    no_relevant: str = "skip"
    relevance_threshold: float = 1.0

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

    def to_dict(self) -> dict[str, Any]:
        """Plain dict, as stored in results files."""
        return {
            "gain": self.gain,
            "aggregation": self.aggregation,
            "no_relevant": self.no_relevant,
            "relevance_threshold": self.relevance_threshold,
            "discount": "1/log2(rank+1)",
            "ties": "score descending, then doc id descending (trec_eval)",
            "ideal": "all judged documents with grade > 0, retrieved or not",
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
) -> Results:
    """Score ``run`` against ``judgements`` on ``metrics``, per query and overall.

    ``judgements`` is ``{qid: {doc_id: grade}}`` and ``run`` is
    ``{qid: {doc_id: score}}``, or pandas DataFrames with columns qid, doc_id and
    grade / score. Inputs are never mutated. Options are those of SEMANTICS.md.
    """
    options = EvaluationOptions(gain, aggregation, no_relevant, relevance_threshold)
    parsed = parse_metrics([metrics] if isinstance(metrics, str) else metrics)
    return evaluate_tables(_table(judgements, "grade", "judgements"), _table(run, "score", "run"), parsed, options)


def evaluate_tables(
    judgements: FlatTable, run: FlatTable, metrics: tuple[Metric, ...], options: EvaluationOptions
) -> Results:
    """:func:`evaluate` on already flattened and checked tables."""
    prepared, query_ids, unjudged, unanswered = prepare(judgements, run)
    ctx = KernelContext(prepared, gain=options.gain, relevance_threshold=options.relevance_threshold)
    values: dict[str, np.ndarray] = {}
    aggregate: dict[str, float] = {}
    left_out: dict[str, tuple[str, ...]] = {}
    for metric in metrics:
        per_query = compute(ctx, metric)
        defined = has_relevant(ctx, metric) if metric.uses_relevance else np.ones(len(query_ids), dtype=bool)
        if not defined.all():
            missing = tuple(query_ids[i] for i in np.flatnonzero(~defined))
            if options.no_relevant == "error":
                raise EvaluationError(
                    f"metric {metric}: {len(missing)} judged quer{'y has' if len(missing) == 1 else 'ies have'} "
                    f"no relevant document ({', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''}); "
                    "judge a relevant document for each, or set no_relevant to skip or zero"
                )
            if options.no_relevant == "skip":
                per_query = np.where(defined, per_query, np.nan)
                left_out[str(metric)] = missing
            else:
                per_query = np.where(defined, per_query, 0.0)
        values[str(metric)] = per_query
        aggregate[str(metric)] = _aggregate(ctx, metric, per_query, defined, options)
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


def _aggregate(
    ctx: KernelContext, metric: Metric, per_query: np.ndarray, defined: np.ndarray, options: EvaluationOptions
) -> float:
    if options.aggregation == "micro" and metric.name == "ndcg":
        from rag_eval.metrics.kernels import dcg, idcg

        keep = defined if options.no_relevant == "skip" else np.ones_like(defined)
        total_ideal = float(idcg(ctx, metric.k)[keep].sum())
        return float(dcg(ctx, metric.k)[keep].sum() / total_ideal) if total_ideal > 0 else float("nan")
    included = per_query[~np.isnan(per_query)]
    return float(included.mean()) if included.size else float("nan")


def prepare(judgements: FlatTable, run: FlatTable) -> tuple[RankedJudgedRun, list[str], list[str], list[str]]:
    """Sort the run in trec_eval order and join it with the judgements.

    Returns the joined arrays, the judged query ids (sorted as trec_eval sorts
    topics), the run's queries without judgements, and the judged queries the run
    did not answer.
    """
    import pandas as pd

    # Judged queries, in trec_eval's order (byte order of the id).
    judged_keys = sorted(set(judgements.query_keys[c] for c in np.unique(judgements.query_codes)))
    judged_index = {q: i for i, q in enumerate(judged_keys)}
    jq = _recode(judgements.query_codes, judgements.query_keys, judged_index)

    rq_all = _recode(run.query_codes, run.query_keys, judged_index)
    run_queries_present = set(run.query_keys[c] for c in np.unique(run.query_codes)) if len(run) else set()
    unjudged = sorted(q for q in run_queries_present if q not in judged_index)
    unanswered = sorted(set(judged_keys) - run_queries_present)

    keep = rq_all >= 0
    rq, docs, scores = (rq_all, run.docs, run.values) if keep.all() else (rq_all[keep], run.docs[keep], run.values[keep])

    order = _trec_order(rq, scores, docs)
    if order is not None:
        rq, docs = rq[order], docs[order]

    # Join on (query, doc): code judged docs, look run docs up in the same codes.
    jdoc_codes, jdoc_uniques = pd.factorize(judgements.docs)
    rdoc_codes = pd.Index(jdoc_uniques).get_indexer(docs)
    width = np.int64(len(jdoc_uniques) + 1)
    jkeys = jq * width + jdoc_codes
    jorder = np.argsort(jkeys, kind="stable")
    jkeys_sorted = jkeys[jorder]
    rkeys = rq * width + rdoc_codes
    hit = np.searchsorted(jkeys_sorted, rkeys)
    hit_clipped = np.minimum(hit, max(jkeys_sorted.size - 1, 0))
    found = (rdoc_codes >= 0) & (jkeys_sorted.size > 0)
    if jkeys_sorted.size:
        found &= jkeys_sorted[hit_clipped] == rkeys
    grades = np.full(rq.size, np.nan)
    grades[found] = judgements.values[jorder[hit_clipped[found]]]

    from rag_eval.metrics.kernels import positions_within_groups

    n = len(judged_keys)
    prepared = RankedJudgedRun(
        n_queries=n,
        row_query=rq,
        row_pos=positions_within_groups(rq, n),
        row_grade=grades,
        judgement_query=jq,
        judgement_grade=judgements.values,
    )
    return prepared, judged_keys, unjudged, unanswered


def _trec_order(query: np.ndarray, scores: np.ndarray, docs: np.ndarray) -> np.ndarray | None:
    """Row order: query ascending, score descending, doc id descending (bytes).

    Returns None when the rows are already in that order (the usual case for
    runs written by a retriever), so that no sort is paid for.
    """
    if query.size < 2:
        return None
    already = _order_if_sorted_within_groups(query, scores)
    if already is not None:
        return None if already.size == 0 else already
    order = np.lexsort((-scores, query))
    q_sorted, s_sorted = query[order], scores[order]
    tied_next = (q_sorted[1:] == q_sorted[:-1]) & (s_sorted[1:] == s_sorted[:-1])
    if not tied_next.any():
        return order
    tied = np.zeros(order.size, dtype=bool)
    tied[:-1] |= tied_next
    tied[1:] |= tied_next
    # Only tied rows need their doc ids compared. Comparing str by code point is the
    # same as comparing their UTF-8 bytes, which is trec_eval's strcmp order.
    tied_rows = order[tied]
    _, doc_rank = np.unique(docs[tied_rows].astype(str), return_inverse=True)
    doc_key = np.zeros(order.size, dtype=np.int64)
    doc_key[tied_rows] = doc_rank.ravel() + 1
    return np.lexsort((-doc_key, -scores, query))


def _order_if_sorted_within_groups(query: np.ndarray, scores: np.ndarray) -> np.ndarray | None:
    """Cheap path for runs already sorted by strictly decreasing score per query.

    Returns an empty array when nothing needs to move, a permutation that only
    reorders whole query groups when the groups are contiguous but not ascending,
    and None when a real sort is needed (unsorted rows or tied scores).
    """
    same_query = query[1:] == query[:-1]
    if not bool(np.all(~same_query | (scores[1:] < scores[:-1]))):
        return None
    starts = np.concatenate(([0], np.flatnonzero(~same_query) + 1))
    group_query = query[starts]
    if bool(np.all(group_query[1:] > group_query[:-1])):
        return np.empty(0, dtype=np.int64)
    if np.unique(group_query).size != group_query.size:
        return None  # a query's rows are split into several groups
    lengths = np.diff(np.concatenate((starts, [query.size])))
    order = np.argsort(group_query, kind="stable")
    new_starts = np.concatenate(([0], np.cumsum(lengths[order])[:-1]))
    return np.repeat(starts[order] - new_starts, lengths[order]) + np.arange(query.size)


def _recode(codes: np.ndarray, keys: list[str], index: Mapping[str, int]) -> np.ndarray:
    """Map per-row codes into ``keys`` onto positions in ``index`` (-1 if absent)."""
    lookup = np.fromiter((index.get(k, -1) for k in keys), dtype=np.int64, count=len(keys))
    return lookup[codes] if codes.size else codes.astype(np.int64)


def _table(data: Any, value_column: str, what: str) -> FlatTable:
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
