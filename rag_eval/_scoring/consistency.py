"""Whether stored values hold together as the evaluator writes them: a results file's numbers, checked on load.

A results file (rag_eval._run.results_file) is plain JSON that anyone can edit; a value that
was edited, or corrupted, must not pass a regression gate. :func:`check_numbers` refuses what
the evaluator could not have written, by the metric records' own rules: which metrics leave
queries out of their mean (:attr:`Family.needs_relevant`), their bounds (:attr:`Family.bounded`)
and their dataset value, recomputed with the evaluator's own aggregation
(rag_eval._scoring.metrics.aggregation.dataset_value). Each problem is a :class:`FieldProblem`
naming the field, relative to the file's ``results`` section.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rag_eval._core.errors import EvaluationError
from rag_eval._core.files import json_key
from rag_eval._core.messages import shown
from rag_eval._scoring.metrics.aggregation import AGGREGATIONS, dataset_value
from rag_eval._scoring.metrics.measures import Metric, parse_metric

__all__ = ["AGGREGATE_RTOL", "BOUND_SLACK", "CORRUPTED", "FieldProblem", "check_numbers"]

CORRUPTED = "this file was edited or corrupted: regenerate it with rag-eval run"
# Relative tolerance between an aggregate and the value recomputed here: the same numpy arithmetic
# on the same values in the same order gives the same bits, but a file written on another machine
# may have summed in another order (~1e-16 relative); an edit is far more.
AGGREGATE_RTOL = 1e-9
# How far above 1 a bounded value may lie: DCG multiplies each gain by 1/log2(rank+1) while IDCG
# divides by log2(rank+1), so a perfect ranking's nDCG can be 1 plus a rounding error.
BOUND_SLACK = 1e-9
# Ids in messages: short and on one line.
_ID_CHARS = 40

PerQuery = Mapping[str, Mapping[str, float | None]]


class FieldProblem(ValueError):
    """A problem at a field of a section (``where``, relative to it), for a one-line message naming the field."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(message)
        self.where = where


def check_numbers(
    metrics: Sequence[str],
    options: Mapping[str, Any],
    per_query: PerQuery,
    left_out: Mapping[str, Sequence[str]],
    aggregate: Mapping[str, float | None],
) -> None:
    """Refuse values that do not hold together as ``rag-eval run`` writes them (an edit or a corruption).

    ``metrics`` are canonical names; ``per_query`` is ``{qid: {metric: value or None}}`` with every
    metric in each row, ``aggregate`` ``{metric: value or None}`` (None: null, a value left out).

    - ``left_out`` names metrics of the file and queries of ``per_query``, only for metrics that
      need a relevant passage, and a per-query value is null exactly for the queries it lists;
    - values and aggregates of bounded metrics lie in [0, 1], DCG and IDCG >= 0;
    - every aggregate equals the dataset value recomputed from the per-query values (within
      :data:`AGGREGATE_RTOL`), or is null when there is none. Under ``aggregation: micro``, nDCG@k's
      aggregate is sum DCG@k / sum IDCG@k over the queries in its mean: it is checked when the file
      also holds dcg@k and idcg@k. Without them it is checked only for its bounds, because the
      per-query nDCG values do not determine it (each query's weight is its IDCG, not in the file).

    Raises:
        FieldProblem: the first problem, with the field it is at.
    """
    parsed = {name: parse_metric(name) for name in metrics}
    aggregation = options.get("aggregation", "macro")
    if aggregation not in AGGREGATIONS:
        raise FieldProblem("options.aggregation", f"{aggregation!r} is neither 'macro' nor 'micro'; {CORRUPTED}")
    _check_left_out(parsed, per_query, left_out)
    listed = {name: set(qids) for name, qids in left_out.items()}
    for qid, row in per_query.items():
        for name, value in row.items():
            where = f"per_query{json_key(qid)}{json_key(name)}"
            if value is None:
                if qid not in listed.get(name, ()):
                    raise FieldProblem(
                        where,
                        f"is null but the query is not listed in results.left_out{json_key(name)}; only a query "
                        f"left out of the mean has no value; {CORRUPTED}",
                    )
            else:
                _check_bounds(where, name, parsed[name].family.bounded, value)
    for name, metric in parsed.items():
        _check_aggregate(name, metric, aggregation, per_query, aggregate)


def _check_left_out(parsed: Mapping[str, Metric], per_query: PerQuery, left_out: Mapping[str, Sequence[str]]) -> None:
    for name, qids in left_out.items():
        metric = parsed.get(name)
        if metric is None:
            raise FieldProblem(f"left_out{json_key(name)}", f"{name} is not among results.metrics; {CORRUPTED}")
        for i, qid in enumerate(qids):
            where = f"left_out{json_key(name)}[{i}]"
            if not metric.uses_relevance:
                raise FieldProblem(
                    where, f"{name} has a value for every query, so none is left out of its mean; {CORRUPTED}"
                )
            row = per_query.get(qid)
            if row is None:
                raise FieldProblem(where, f"{shown(qid, _ID_CHARS)} is not a query of results.per_query; {CORRUPTED}")
            if row[name] is not None:
                raise FieldProblem(
                    where,
                    f"{shown(qid, _ID_CHARS)} is listed as left out of the mean but its {name} is {row[name]!r}, "
                    f"not null; {CORRUPTED}",
                )


def _check_bounds(where: str, name: str, bounded: bool, value: float) -> None:
    if value < 0 or (bounded and value > 1 + BOUND_SLACK):
        limits = "in [0, 1]" if bounded else ">= 0"
        raise FieldProblem(where, f"{value!r} is impossible: every {name} lies {limits}; {CORRUPTED}")


def _column(per_query: PerQuery, name: str) -> np.ndarray:
    """The per-query values of ``name`` in the file's order, NaN for null (as the evaluator held them)."""
    return np.array([np.nan if (v := row[name]) is None else v for row in per_query.values()], dtype=np.float64)


def _check_aggregate(
    name: str, metric: Metric, aggregation: str, per_query: PerQuery, aggregate: Mapping[str, float | None]
) -> None:
    where = f"aggregate{json_key(name)}"
    value = aggregate[name]
    if value is not None:
        _check_bounds(where, name, metric.family.bounded, value)
    parts = metric.micro_parts if aggregation == "micro" else None
    if parts is not None:
        numerator, denominator = (str(part) for part in parts)
        if numerator not in aggregate or denominator not in aggregate:
            return  # not determined by the file (see check_numbers)
        what = f"sum {numerator} / sum {denominator} over the queries in the mean (aggregation: micro)"
    else:
        what = "the mean of the per-query values"
    try:
        recomputed = dataset_value(metric, _column(per_query, name), aggregation, lambda part: _column(per_query, str(part)))
    except EvaluationError:  # the sums overflow: no run writes such a file
        raise FieldProblem(where, f"is not {what}: the values add up past the largest float64; {CORRUPTED}") from None
    expected = None if math.isnan(recomputed) else recomputed
    if expected is None:
        if value is not None:
            raise FieldProblem(where, f"is {value!r} but no query has a value to average (it would be null); {CORRUPTED}")
    elif value is None or not math.isclose(value, expected, rel_tol=AGGREGATE_RTOL, abs_tol=0.0):
        got = "null" if value is None else repr(value)
        raise FieldProblem(where, f"{got} is not {what}, {expected!r}; {CORRUPTED}")
