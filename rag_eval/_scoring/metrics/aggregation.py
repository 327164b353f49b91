"""The dataset value of a metric: how its per-query values become one number (docs/semantics.md).

One rule, read from the family's record (:attr:`~rag_eval._scoring.metrics.measures.Family.micro`),
for whoever needs it: the evaluator computes the aggregate with it, and the results-file check
(rag_eval._scoring.consistency) recomputes it from the file's per-query values the same way.

- ``macro`` (the default): the mean of the per-query values, queries left out (NaN) excluded.
- ``micro``: for a family with a micro rule (nDCG), the sum of the numerator's per-query values
  (DCG) over the sum of the denominator's (IDCG), both over the queries in the metric's mean (0
  when every one of them scored 0 for want of a relevant document, under ``no_relevant: zero``);
  for every other family the macro mean.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rag_eval._core.errors import EvaluationError
from rag_eval._scoring.metrics.measures import Metric

AGGREGATIONS = ("macro", "micro")


def dataset_value(
    metric: Metric, values: np.ndarray, aggregation: str, part_values: Callable[[Metric], np.ndarray]
) -> float:
    """The dataset value of ``metric`` from its per-query ``values`` (NaN: left out of the mean); NaN when none.

    ``part_values(part)`` gives the per-query values of a part of the micro rule (``dcg@10`` of
    ``ndcg@10``), aligned with ``values``; it is called only under ``micro`` for a family with a rule.

    Raises:
        EvaluationError: when the denominators add up past the largest float64.
    """
    kept = ~np.isnan(values)
    parts = metric.micro_parts if aggregation == "micro" else None
    if parts is None:
        included = values[kept]
        return float(included.mean()) if included.size else float("nan")
    numerator, denominator = parts
    with np.errstate(over="ignore"):
        total_ideal = float(part_values(denominator)[kept].sum())
        total = float(part_values(numerator)[kept].sum())
    if not np.isfinite(total_ideal):  # each query's is finite (checked by the evaluator), their sum is not
        raise EvaluationError(
            f"{metric} with aggregation micro cannot be computed: the ideal DCGs of all queries add up past "
            "the largest float64 (about 1.8e308); use smaller grades or aggregation macro"
        )
    if total_ideal > 0:
        return total / total_ideal
    # No kept query has a relevant document: each scored 0 (no_relevant: zero), and so does their total.
    return 0.0 if kept.any() else float("nan")
