"""The ``holes`` section of a results file: what a run knows of the holes in its judgements, per metric.

A *hole* is a retrieved unit (a passage; on a dataset of documents a chunk or, for ``doc_``
metrics, a document) that nobody judged for the query: it counts as not relevant
(docs/semantics.md, "The holes"). For each metric of a run the section records, over the
metric's top k (its cutoff, or ``top_k`` when it has none or a budget):

- ``judged`` and ``unjudged``: the mean share of the top k that is judged (``judged@k``) and
  unjudged (their sum is the share of the top k retrieved at all);
- ``low``: the value with the holes as misses (the results' own value, today's number);
  ``high``: the value with every hole of the top k judged at the query's highest grade
  (rag_eval._scoring.holes.bounds; a hole ranked below the cutoff is not filled); ``condensed``: the value with the holes removed from each
  ranking first (trec_eval ``-J``);
- the same per query (``low`` is the results' per-query value, not repeated).

Evidence metrics read characters, not grades: they get the shares, and no bounds (``bounded``
false, the values null). :class:`HolesRecord` is the record a run fills and a comparison reads;
:class:`HolesSection` checks the section's shape on load (a wrong type, a share outside [0, 1]: the
file is refused). A results file without the section (written before rag_eval recorded holes) is read
as before: its record is None; so is one whose section does not hold together with the file's results
(an entry edited, or the results edited after the run: :func:`consistent`), and an entry of a metric
the results no longer hold is left out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, Strict, StrictBool, StrictInt, StrictStr, model_validator

from rag_eval._core.files import json_key
from rag_eval._scoring.consistency import BOUND_SLACK, CORRUPTED, FieldProblem
from rag_eval._scoring.metrics.measures import parse_metric

UNITS = ("passage", "chunk", "document")
# judged + unjudged is at most 1 (the share of the top k retrieved): a float sum may pass it by an ulp.
SHARE_SLACK = 1e-9
NO_BOUNDS = "evidence metrics read characters, not grades: filling a hole changes no evidence, so there are no bounds"
RULES = {
    "passage": "a retrieved passage with no judgement for the query",
    "chunk": "a retrieved chunk of a document that is not judged for the query (no evidence in it, no document grade)",
    "document": "a retrieved document with no document grade for the query (doc_ metrics, MaxP)",
}
RULE = (
    "low: the holes as misses (the results' values); high: every hole of the top k judged at the highest grade among "
    "the query's judgements (a hole below the metric's cutoff is not filled); condensed: the holes removed from each ranking before scoring (trec_eval -J). judged and unjudged: "
    "mean share of the top k (the metric's cutoff, else top_k) judged and unjudged"
)


# ---- the record ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricHoles:
    """The holes of one metric's top k: shares and bounds, per query (aligned with ``query_ids``) and overall.

    ``low``, ``high`` and ``condensed`` are per-query float64 arrays, NaN where the query is left out
    of the mean (and everywhere for a metric without bounds, ``bounded`` False); ``dataset_*`` are the
    dataset values, NaN where there is none.
    """

    metric: str
    unit: str
    k: int
    query_ids: tuple[str, ...]
    judged: np.ndarray
    unjudged: np.ndarray
    low: np.ndarray
    high: np.ndarray
    condensed: np.ndarray
    dataset_low: float
    dataset_high: float
    dataset_condensed: float
    bounded: bool = True

    @property
    def judged_share(self) -> float:
        """Mean share of the top k that is judged, over the judged queries (the run's ``judged@k``)."""
        return float(self.judged.mean()) if self.judged.size else 0.0

    @property
    def unjudged_share(self) -> float:
        """Mean share of the top k that is unjudged, over the judged queries."""
        return float(self.unjudged.mean()) if self.unjudged.size else 0.0

    def high_by_query(self) -> dict[str, float]:
        """``{qid: high}`` (NaN: left out of the mean, or no bounds)."""
        return dict(zip(self.query_ids, self.high.tolist()))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (NaN as null), as the results file's ``holes.metrics.<metric>`` holds it."""
        per_query = {
            qid: {"judged": j, "unjudged": u, "high": _json(h), "condensed": _json(c)}
            for qid, j, u, h, c in zip(
                self.query_ids, self.judged.tolist(), self.unjudged.tolist(), self.high.tolist(),
                self.condensed.tolist(),
            )
        }
        entry: dict[str, Any] = {
            "unit": self.unit,
            "k": self.k,
            "judged": self.judged_share,
            "unjudged": self.unjudged_share,
            "bounded": self.bounded,
            "low": _json(self.dataset_low),
            "high": _json(self.dataset_high),
            "condensed": _json(self.dataset_condensed),
        }
        if not self.bounded:
            entry["note"] = NO_BOUNDS
        entry["per_query"] = per_query
        return entry


@dataclass(frozen=True)
class HolesRecord:
    """Every metric's holes of one retriever of a run (``metrics``: canonical name -> :class:`MetricHoles`)."""

    metrics: dict[str, MetricHoles]

    def get(self, metric: str) -> MetricHoles | None:
        """The holes of ``metric`` (any accepted spelling), or None when not recorded."""
        return self.metrics.get(str(parse_metric(metric)))

    def to_dict(self) -> dict[str, Any]:
        """The results file's ``holes`` section."""
        units = sorted({entry.unit for entry in self.metrics.values()}, key=UNITS.index)
        return {
            "units": {unit: RULES[unit] for unit in units},
            "rule": RULE,
            "metrics": {name: entry.to_dict() for name, entry in self.metrics.items()},
        }

    @classmethod
    def from_section(
        cls, section: HolesSection, query_ids: Iterable[str], low: Mapping[str, Mapping[str, float | None]],
        aggregate: Mapping[str, float | None],
    ) -> HolesRecord | None:
        """The record of a validated section; ``low`` and ``aggregate``: the results' per-query values
        ``{qid: {metric: value}}`` and dataset values.

        An entry of a metric the results no longer hold is left out. An entry of a metric they hold that does
        not hold together with them (:func:`consistent`: the results or the section edited after the run), or
        a metric of the results without an entry, makes the whole section untrustworthy: None, read as a file
        without holes, so that ``on_holes: fail`` says that nothing can be checked instead of passing gates
        whose holes were silently dropped.
        """
        order = tuple(query_ids)
        metrics = {}
        for name, entry in section.metrics.items():
            if name not in aggregate:
                continue
            if not consistent(name, entry, aggregate, low, aggregate):
                return None
            rows = [entry.per_query[qid] for qid in order]
            metrics[name] = MetricHoles(
                metric=name,
                unit=entry.unit,
                k=entry.k,
                query_ids=order,
                judged=np.array([row.judged for row in rows], dtype=np.float64),
                unjudged=np.array([row.unjudged for row in rows], dtype=np.float64),
                low=np.array([_nan(low[qid][name]) for qid in order], dtype=np.float64),
                high=np.array([_nan(row.high) for row in rows], dtype=np.float64),
                condensed=np.array([_nan(row.condensed) for row in rows], dtype=np.float64),
                dataset_low=_nan(entry.low),
                dataset_high=_nan(entry.high),
                dataset_condensed=_nan(entry.condensed),
                bounded=entry.bounded,
            )
        if set(metrics) != set(aggregate):
            return None
        return cls(metrics)


def _json(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _nan(value: float | None) -> float:
    return math.nan if value is None else float(value)


# ---- the section, checked on load -----------------------------------------------------------------

# As rag_eval._run.results_file has them: finite float64 (an integer is accepted), null where there is none.
Number = Annotated[float, Strict(), Field(allow_inf_nan=False)]
MaybeNumber = Number | None
Share = Annotated[float, Strict(), Field(ge=0, le=1, allow_inf_nan=False)]


class _Part(BaseModel):
    # extra="allow": keys a later writer of the same schema version adds are kept, not refused.
    model_config = ConfigDict(extra="allow", frozen=True)


class QueryHolesSection(_Part):
    """One query's shares of its top k, and its high and condensed values (null: left out, or no bounds)."""

    judged: Share
    unjudged: Share
    high: MaybeNumber = None
    condensed: MaybeNumber = None


class MetricHolesSection(_Part):
    """One metric's holes: unit, k, mean shares, dataset bounds and the per-query rows."""

    unit: Literal["passage", "chunk", "document"]
    k: StrictInt = Field(ge=1)
    judged: Share
    unjudged: Share
    bounded: StrictBool = True
    low: MaybeNumber = None
    high: MaybeNumber = None
    condensed: MaybeNumber = None
    per_query: dict[StrictStr, QueryHolesSection]

    @model_validator(mode="after")
    def _shares(self) -> MetricHolesSection:
        if self.judged + self.unjudged > 1 + SHARE_SLACK:
            raise FieldProblem("unjudged", f"judged {self.judged!r} + unjudged {self.unjudged!r} is above 1; {CORRUPTED}")
        for qid, row in self.per_query.items():
            if row.judged + row.unjudged > 1 + SHARE_SLACK:
                raise FieldProblem(
                    f"per_query{json_key(qid)}.unjudged", f"judged + unjudged is above 1; {CORRUPTED}"
                )
            if not self.bounded and (row.high is not None or row.condensed is not None):
                raise FieldProblem(f"per_query{json_key(qid)}", f"a metric without bounds has no high value; {CORRUPTED}")
        return self


class HolesSection(_Part):
    """The ``holes`` section: every metric's holes (a results file without it was written before they were kept)."""

    units: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    rule: StrictStr | None = None
    metrics: dict[StrictStr, MetricHolesSection]


def consistent(
    name: str, entry: MetricHolesSection, metrics: Iterable[str], per_query: Mapping[str, Mapping[str, float | None]],
    aggregate: Mapping[str, float | None],
) -> bool:
    """Whether ``entry`` (the holes of ``name``) was written with these results, so that it can be used.

    ``name`` is one of ``results.metrics``; the rows are the results' queries, no more, no fewer; ``low`` is
    the results' aggregate; a high value is null exactly where the results' value is (a query left out of
    the mean is left out at both bounds) and lies within the metric's limits. An entry that fails is stale
    (the results were edited after the run): it is not used, as if not recorded, and the file still loads,
    as a file written before holes were kept does.
    """
    if name not in set(metrics) or set(entry.per_query) != set(per_query) or entry.low != aggregate.get(name):
        return False
    bounded = parse_metric(name).family.bounded
    for qid, row in entry.per_query.items():
        value = per_query[qid].get(name)
        if row.high is None:
            if entry.bounded and value is not None:
                return False
        elif value is None or row.high < 0 or (bounded and row.high > 1 + BOUND_SLACK):
            return False
    return True
