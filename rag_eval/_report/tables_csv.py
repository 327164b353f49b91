"""Per-query results of every variant of a run as one CSV, for people who continue in pandas or a spreadsheet.

One row per (variant, query), columns ``variant, qid`` then every metric of the run in the
config's order. Values are written with Python's ``repr`` (the shortest text that reads
back as the same float64), so ``pandas.read_csv`` gives back exactly the numbers of the
Results (pandas 3 by default; pandas 2 with ``float_precision="round_trip"``); a query left
out of a metric's mean (NaN), or a metric a variant did not compute, is an empty cell. Written with the csv module: no pandas
needed to write it, and ids holding commas or quotes are quoted as CSV requires.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag_eval._run.outcome import RunOutcome
    from rag_eval._scoring.results import Results

__all__ = ["per_query_csv", "results_by_label"]


def results_by_label(run: RunOutcome | Mapping[str, Results]) -> dict[str, Results]:
    """``{label: Results}`` of a run in its retrievers' order (a mapping is taken as it is)."""
    if isinstance(run, Mapping):
        return dict(run)
    return {outcome.label: outcome.results for outcome in run.outcomes}


def per_query_csv(run: RunOutcome | Mapping[str, Results]) -> str:
    """CSV text (``\\n`` line ends): one row per (variant, query) with every metric, full precision."""
    by_label = results_by_label(run)
    metrics: list[str] = []
    for results in by_label.values():
        metrics.extend(name for name in results.metric_names if name not in metrics)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["variant", "qid", *metrics])
    for label, results in by_label.items():
        columns = [results.values[name].tolist() if name in results.values else None for name in metrics]
        for i, qid in enumerate(results.query_ids):
            writer.writerow([label, qid, *(_cell(None if column is None else column[i]) for column in columns)])
    return buffer.getvalue()


def _cell(value: float | None) -> str:
    return "" if value is None or math.isnan(value) else repr(float(value))
