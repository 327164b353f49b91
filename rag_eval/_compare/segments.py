"""Segments by query tags: each variant's mean of a metric per tag value (``topic:billing``).

Pure (no I/O); the markdown tables live in :mod:`rag_eval._report.decision`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from rag_eval._scoring.metrics.measures import parse_metric

if TYPE_CHECKING:
    from rag_eval._scoring.results import Results

__all__ = ["Segment", "SegmentTable", "query_tags", "segment_table"]

UNTAGGED_KEY = "tag"  # the key of a plain tag such as "billing" (no "key:value")


# ---- segments by tag ------------------------------------------------------------------------


def query_tags(tags: Sequence[str] | Mapping[str, object]) -> dict[str, tuple[str, ...]]:
    """A query's tags as ``{key: values}``.

    Accepts a mapping (``{topic: billing}``; a list value gives several values) or strings:
    ``"topic:billing"`` is key ``topic``, value ``billing``; a plain ``"billing"`` is key ``tag``.
    """
    out: dict[str, list[str]] = {}
    if isinstance(tags, Mapping):
        for key, value in tags.items():
            values = value if isinstance(value, (list, tuple)) else [value]
            out.setdefault(str(key), []).extend(str(v) for v in values)
    else:
        for tag in tags:
            key, sep, value = str(tag).partition(":")
            if sep and key.strip() and value.strip():
                out.setdefault(key.strip(), []).append(value.strip())
            else:
                out.setdefault(UNTAGGED_KEY, []).append(str(tag).strip())
    return {key: tuple(dict.fromkeys(values)) for key, values in out.items()}


@dataclass(frozen=True)
class Segment:
    """One tag value: how many of the scored queries carry it, and each variant's mean over them."""

    value: str
    count: int
    means: dict[str, float]  # NaN: the variant has no value for any of these queries


@dataclass(frozen=True)
class SegmentTable:
    """Every value of one tag key."""

    key: str
    segments: list[Segment] = field(default_factory=list)


def segment_table(
    results: Mapping[str, Results],
    metric: str,
    tags: Mapping[str, Sequence[str] | Mapping[str, object]],
) -> list[SegmentTable]:
    """Per tag key (sorted), per value (sorted): the count of queries and each variant's mean of ``metric``.

    Queries are those of the first variant's Results (a run scores the same queries for all);
    a variant's mean leaves out its NaN values, as its overall mean does. A query with several
    values of one key counts under each.
    """
    name = str(parse_metric(metric))
    first = next(iter(results.values()))
    by_key: dict[str, dict[str, list[str]]] = {}
    for qid in first.query_ids:
        for key, values in query_tags(tags.get(qid, ())).items():
            for value in values:
                by_key.setdefault(key, {}).setdefault(value, []).append(qid)
    columns = {}
    for label, res in results.items():
        index = {q: i for i, q in enumerate(res.query_ids)}
        columns[label] = (index, np.asarray(res.values[name], dtype=np.float64))
    tables = []
    for key in sorted(by_key):
        segments = []
        for value in sorted(by_key[key]):
            qids = by_key[key][value]
            means = {}
            for label, (index, column) in columns.items():
                picked = np.array([column[index[q]] for q in qids if q in index], dtype=np.float64)
                picked = picked[~np.isnan(picked)]
                means[label] = float(picked.mean()) if picked.size else math.nan
            segments.append(Segment(value, len(qids), means))
        tables.append(SegmentTable(key, segments))
    return tables
