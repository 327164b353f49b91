"""The holes in the judgements: how much a metric could move if the unjudged retrieved documents were judged.

A retrieved document nobody judged counts as not relevant (docs/semantics.md, "Grades"), so a
metric is computed as if every hole held a miss. :func:`bounds` computes a metric twice:

- ``low``: the value :func:`~rag_eval._scoring.evaluate.evaluate` gives, with the options given;
- ``high``: the value on judgements in which every hole of the metric's top k (its rank cutoff; the
  whole ranking for a metric without one) is judged at the highest grade among that query's
  judgements (the grade of the best document a judge has seen for it), then scored with the same
  options. The holes filled are exactly those :func:`unjudged_share` counts.

A hole ranked below the cutoff is not filled: like every unjudged document the run did not retrieve,
it is never counted as found by a metric with that cutoff, and judging it could only add to the ideal
ranking or to R (lowering nDCG@k, recall@k and MAP@k, changing precision, DCG, MRR and hit rate not at
all). So when the top k holds no hole, ``high`` equals ``low``.

For the metrics that only count what the ranking found (precision, hit rate, MRR, DCG) ``high`` is
the largest value any judging of the top k's holes at grades up to the query's highest could give, and
``low`` the smallest. Where filling a
hole also grows what the value is divided by (recall, MAP, R-precision and nDCG divide by the judged
relevant documents; bpref's N grows when the highest grade is below the relevance threshold) ``high``
may be below ``low``: it is the value of one complete, optimistic judging, not a bound over every
possible judging. A document judged with a negative
grade is not a hole. :func:`unjudged_share` says how many holes the top k holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag_eval._core.errors import InputFormatError
from rag_eval._scoring.engine import JoinedRun
from rag_eval._scoring.evaluate import EvaluationOptions, join_inputs, passage_metrics, score
from rag_eval._scoring.metrics.kernels import RankedJudgedRun
from rag_eval._scoring.metrics.measures import Metric, parse_metric


@dataclass(frozen=True)
class Bounds:
    """One metric with the holes as misses (``low``) and as the query's best grade (``high``).

    ``low`` and ``high`` are per-query float64 arrays aligned with ``query_ids`` (the judged queries,
    in trec_eval's order); NaN where the ``no_relevant`` policy ``skip`` leaves the query out, which
    is the same queries in both (filling holes with a query's own highest grade never makes a
    relevant document where none was). ``dataset_low`` and ``dataset_high`` are the dataset values,
    aggregated as the options say.
    """

    metric: Metric
    query_ids: tuple[str, ...]
    low: np.ndarray
    high: np.ndarray
    dataset_low: float
    dataset_high: float
    left_out: tuple[str, ...] = ()

    @property
    def per_query(self) -> dict[str, tuple[float, float]]:
        """``{qid: (low, high)}`` of the queries in the mean (left-out queries are absent)."""
        return {
            qid: (low, high)
            for qid, low, high in zip(self.query_ids, self.low.tolist(), self.high.tolist())
            if not math.isnan(low)
        }


@dataclass(frozen=True)
class UnjudgedShare:
    """Per judged query, the share of the top k positions that hold a retrieved document with no judgement.

    ``values`` is aligned with ``query_ids``; ``mean`` is their mean over every judged query (a query the
    run did not answer holds no hole: 0).
    """

    k: int
    query_ids: tuple[str, ...]
    values: np.ndarray
    mean: float

    @property
    def per_query(self) -> dict[str, float]:
        """``{qid: share}``."""
        return dict(zip(self.query_ids, self.values.tolist()))


def bounds(judgements: Any, run: Any, metric: str | Metric, options: EvaluationOptions | None = None) -> Bounds:
    """``metric`` of ``run`` with the unjudged retrieved documents as misses and at the query's highest grade.

    ``judgements`` and ``run`` take the forms of :func:`rag_eval.evaluate` (nested dicts, DataFrames,
    tables read by the engine); ``options`` are the evaluation options of both values (default: the
    defaults). Under ``judged_only`` the low value is the condensed-list value, and the filled holes,
    being judged, stay in the high one's list. Document and evidence metrics are refused (a passage
    run has neither). Errors are those of evaluate.
    """
    options = options or EvaluationOptions()
    (parsed,) = passage_metrics((parse_metric(metric),))
    joined = join_inputs(judgements, run, keep_unjudged=True)
    low = score(joined, (parsed,), options)
    high = score(filled(joined, parsed.rank_cutoff), (parsed,), options)
    name = str(parsed)
    return Bounds(
        metric=parsed,
        query_ids=low.query_ids,
        low=low.values[name],
        high=high.values[name],
        dataset_low=low.aggregate[name],
        dataset_high=high.aggregate[name],
        left_out=low.left_out.get(name, ()),
    )


def filled(joined: JoinedRun, k: int | None = None) -> JoinedRun:
    """``joined`` (made with ``keep_unjudged``) with every unjudged row of the top ``k`` judged at its query's
    highest grade (``k`` None: every unjudged row of the ranking).

    The new judgements join the query's judgements too, so they count wherever judgements count:
    in R (the judged relevant documents), in the ideal ranking and in bpref's N. An unjudged row
    ranked below ``k`` is left unjudged, as every unjudged document the run did not retrieve is: a
    metric with cutoff ``k`` never counts it as found, and judging it could only add to the ideal
    ranking or to R, which lowers nDCG@k, recall@k and MAP@k and changes nothing else.
    """
    data = joined.ranked
    highest = np.full(data.n_queries, -np.inf)
    np.maximum.at(highest, data.judgement_query, data.judgement_grade)  # every judged query has a judgement
    holes = np.isnan(data.row_grade)
    if k is not None:
        holes &= data.row_pos < k
    hole_query = data.row_query[holes]
    grade = data.row_grade.copy()
    grade[holes] = highest[hole_query]
    ranked = RankedJudgedRun(
        n_queries=data.n_queries,
        row_query=data.row_query,
        row_pos=data.row_pos,
        row_grade=grade,
        judgement_query=np.concatenate((data.judgement_query, hole_query)),
        judgement_grade=np.concatenate((data.judgement_grade, highest[hole_query])),
    )
    return JoinedRun(ranked, joined.query_ids, joined.unjudged, joined.unanswered)


def unjudged_share(judgements: Any, run: Any, k: int) -> UnjudgedShare:
    """Per judged query, unjudged documents among the first ``k`` of the ranking / ``k``.

    Divided by ``k`` even when fewer were retrieved, as ``judged@k`` is, so that ``judged@k +
    unjudged_share`` is the share of the top k that was retrieved at all (1 for a full ranking). A
    document judged with any grade, negative included, is judged. The ranking is the run as retrieved
    (``judged_only`` plays no part: it removes exactly these documents).
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k <= 0:
        raise InputFormatError(f"k must be a positive integer, got {k!r}")
    joined = join_inputs(judgements, run, keep_unjudged=True)
    data = joined.ranked
    holes = np.isnan(data.row_grade) & (data.row_pos < k)
    counts = np.bincount(data.row_query[holes], minlength=data.n_queries)
    values = counts.astype(np.float64) / int(k)
    return UnjudgedShare(int(k), tuple(joined.query_ids), values, float(values.mean()))
