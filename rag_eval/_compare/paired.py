"""Two runs' per-query values of one metric, paired by query id.

Never by position (the files may list their queries in any order), and in sorted id order,
so that the resampling statistics, whose random draws index positions, do not depend on that
order either. Both the regression verdict and a sweep's decision (rag_eval._compare.decision)
pair this way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from rag_eval._compare.comparable import check_same_queries
from rag_eval._core.errors import ComparisonError

if TYPE_CHECKING:
    from rag_eval._scoring.results import Results


@dataclass(frozen=True)
class PairedValues:
    """One metric's per-query values of the two runs, paired by query id.

    ``baseline[i]`` and ``candidate[i]`` are the values of ``query_ids[i]``; queries
    left out of the mean (NaN: no relevant document) are not paired. ``baseline_value``
    and ``candidate_value`` are the dataset values the results report (their aggregate),
    which differ from the means of the arrays under micro aggregation.
    """

    metric: str
    query_ids: tuple[str, ...]
    baseline: np.ndarray
    candidate: np.ndarray
    baseline_value: float
    candidate_value: float

    def deltas(self) -> dict[str, float]:
        """``{query_id: candidate - baseline}``, in pairing order."""
        return {q: float(c - b) for q, b, c in zip(self.query_ids, self.baseline, self.candidate)}


def pair_by_query(metric: str, baseline: Results, candidate: Results) -> PairedValues:
    """Pair the two runs' values of ``metric`` by query id, in sorted id order.

    Never by position: the files may list their queries in any order. Sorting makes
    the resampling statistics (whose random draws index positions) independent of
    that order too. Queries left out of the mean (NaN) on either side are not paired.

    Raises:
        ComparisonError: when the query sets differ, a query is listed twice, or no
            query has a value on both sides.
    """
    check_same_queries(baseline, candidate)
    order = sorted(baseline.query_ids)
    b_index = {q: i for i, q in enumerate(baseline.query_ids)}
    c_index = {q: i for i, q in enumerate(candidate.query_ids)}
    b_values = np.asarray(baseline.values[metric], dtype=np.float64)[[b_index[q] for q in order]]
    c_values = np.asarray(candidate.values[metric], dtype=np.float64)[[c_index[q] for q in order]]
    both = ~np.isnan(b_values) & ~np.isnan(c_values)
    if not both.any():
        raise ComparisonError(
            f"{metric}: no query has a value in both results (every query was left out of the mean); "
            "nothing to compare"
        )
    return PairedValues(
        metric=metric,
        query_ids=tuple(q for q, keep in zip(order, both.tolist()) if keep),
        baseline=b_values[both],
        candidate=c_values[both],
        baseline_value=baseline.aggregate[metric],
        candidate_value=candidate.aggregate[metric],
    )
