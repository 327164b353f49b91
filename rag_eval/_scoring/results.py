"""The Results record: full-precision values per query and over the dataset.

Nothing here rounds: renderers format numbers, results files keep float64
(JSON numbers round-trip exactly through Python's repr).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from rag_eval._core.errors import MetricError
from rag_eval._scoring.metrics.measures import Metric, parse_metric, parse_metrics

V = TypeVar("V")


class MetricDict(dict[str, V]):
    """A dict keyed by canonical metric names that also answers to any accepted spelling.

    ``aggregate["P_5"]``, ``aggregate["precision@5"]`` and ``aggregate[Metric("precision", 5)]``
    are the same entry; iteration, ``keys()`` and JSON output give the canonical names.
    """

    def __missing__(self, key: object) -> V:
        canonical = _canonical(key)
        if canonical is not None and canonical != key and dict.__contains__(self, canonical):
            return dict.__getitem__(self, canonical)
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        if dict.__contains__(self, key):
            return True
        canonical = _canonical(key)
        return canonical is not None and dict.__contains__(self, canonical)

    def get(self, key: object, default: Any = None) -> Any:
        """``self[key]`` under any accepted spelling, else ``default``."""
        return self[key] if key in self else default  # type: ignore[index]  # noqa: SIM401 (self.get is this)


def _canonical(key: object) -> str | None:
    if not isinstance(key, (str, Metric)):
        return None
    try:
        return str(parse_metric(key))
    except MetricError:
        return None


@dataclass(frozen=True)
class Results:
    """Per-query and aggregate metric values with the semantics that produced them.

    ``values[metric][i]`` is the value of ``query_ids[i]``; NaN marks a query left
    out of the mean (no relevant document, policy ``skip``), listed in
    ``left_out[metric]``. ``values``, ``aggregate`` and the rows of ``per_query`` are
    keyed by canonical names and answer to any accepted spelling (``aggregate["P_5"]``).
    """

    metrics: tuple[Metric, ...]
    query_ids: tuple[str, ...]
    values: dict[str, np.ndarray]
    aggregate: dict[str, float]
    options: dict[str, Any]
    left_out: dict[str, tuple[str, ...]] = field(default_factory=dict)
    unjudged_queries: tuple[str, ...] = ()
    unanswered_queries: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Frozen: the lookup-by-any-name dicts are installed once, here.
        object.__setattr__(self, "values", MetricDict(self.values))
        object.__setattr__(self, "aggregate", MetricDict(self.aggregate))
        object.__setattr__(self, "left_out", MetricDict(self.left_out))

    @property
    def metric_names(self) -> list[str]:
        """Canonical metric strings, in the order they were asked for."""
        return [str(m) for m in self.metrics]

    @property
    def per_query(self) -> dict[str, dict[str, float]]:
        """``{qid: {metric: value}}``; a metric left out for a query is absent (any metric spelling works)."""
        out: dict[str, dict[str, float]] = {q: MetricDict() for q in self.query_ids}
        for name, column in self.values.items():
            for qid, value in zip(self.query_ids, column.tolist()):
                if not math.isnan(value):
                    out[qid][name] = value
        return out

    def value(self, metric: str | Metric, query_id: str) -> float:
        """One query's value (NaN when left out)."""
        return float(self.values[str(metric)][self.query_ids.index(query_id)])

    def to_dataframe(self):
        """One row per judged query, one column per metric (NaN = left out)."""
        import pandas as pd

        frame = pd.DataFrame({name: column for name, column in self.values.items()}, index=list(self.query_ids))
        frame.index.name = "qid"
        return frame

    def to_dict(self, per_query: bool = True) -> dict[str, Any]:
        """JSON-ready dict; NaN becomes None."""
        data: dict[str, Any] = {
            "metrics": self.metric_names,
            "options": dict(self.options),
            "aggregate": {k: _json_number(v) for k, v in self.aggregate.items()},
            "num_queries": len(self.query_ids),
            "left_out": {k: list(v) for k, v in self.left_out.items()},
            "unjudged_queries": list(self.unjudged_queries),
            "unanswered_queries": list(self.unanswered_queries),
        }
        if per_query:
            data["per_query"] = {
                qid: {name: _json_number(self.values[name][i]) for name in self.values}
                for i, qid in enumerate(self.query_ids)
            }
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Results:
        """Inverse of :meth:`to_dict` (needs ``per_query``)."""
        metrics = parse_metrics(data["metrics"])
        names = [str(m) for m in metrics]
        per_query = data["per_query"]
        query_ids = tuple(per_query)
        values = {
            name: np.array([_from_json(per_query[q].get(name)) for q in query_ids], dtype=np.float64)
            for name in names
        }
        return cls(
            metrics=metrics,
            query_ids=query_ids,
            values=values,
            aggregate={k: _from_json(v) for k, v in data["aggregate"].items()},
            options=dict(data["options"]),
            left_out={k: tuple(v) for k, v in data.get("left_out", {}).items()},
            unjudged_queries=tuple(data.get("unjudged_queries", ())),
            unanswered_queries=tuple(data.get("unanswered_queries", ())),
        )


def combined_dataframe(results_by_label: Mapping[str, Results]):
    """Every variant's per-query values in one frame: columns ``variant``, ``qid``, then every metric.

    One row per (variant, query), variants in the mapping's order and each one's queries in
    its own order; metrics in order of first appearance. NaN marks a query left out of a mean
    or a metric a variant did not compute. pandas is imported here only.
    """
    import pandas as pd

    metrics: list[str] = []
    for results in results_by_label.values():
        metrics.extend(name for name in results.metric_names if name not in metrics)
    frames = []
    for label, results in results_by_label.items():
        n = len(results.query_ids)
        columns: dict[str, Any] = {"variant": [label] * n, "qid": list(results.query_ids)}
        for name in metrics:
            columns[name] = results.values[name] if name in results.values else np.full(n, np.nan)
        frames.append(pd.DataFrame(columns))
    if not frames:
        return pd.DataFrame(columns=["variant", "qid"])
    frame = pd.concat(frames, ignore_index=True)
    return frame.astype({name: np.float64 for name in metrics})


def _json_number(value: float) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def _from_json(value: Any) -> float:
    return float("nan") if value is None else float(value)
