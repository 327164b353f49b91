"""Query latency as the backend answered, and the harness's own time apart from it.

Each call to a backend is timed around the client call alone; the time a search() spends
elsewhere (encoding the query, mapping hits, building the answer) is the harness's overhead,
reported separately. A call that answers several queries at once (a batch) counts its time
once, shared equally by its queries.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")


class LatencyLog:
    """Per-query backend seconds and the wall time of the whole search, for :meth:`describe`."""

    def __init__(self) -> None:
        self.per_query: list[float] = []
        self.backend_s = 0.0
        self.search_s = 0.0
        self.overhead_s = 0.0  # the harness's own time outside the backend calls (query encoding excluded)

    def timed(self, queries: int, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)``, its seconds shared by ``queries`` queries."""
        started = time.perf_counter()
        result = call(*args)
        seconds = time.perf_counter() - started
        self.backend_s += seconds
        self.per_query.extend([seconds / max(queries, 1)] * max(queries, 1))
        return result

    def describe(self) -> dict[str, Any]:
        """p50/p95 per query (ms), queries per second of backend time, harness overhead (ms per query and share)."""
        if not self.per_query:
            return {}
        values = np.asarray(self.per_query) * 1000.0
        count = len(values)
        return {
            "queries": count,
            "p50_ms": round(float(np.percentile(values, 50)), 3),
            "p95_ms": round(float(np.percentile(values, 95)), 3),
            "qps": round(count / self.backend_s, 1) if self.backend_s > 0 else None,
            "harness_ms_per_query": round(self.overhead_s * 1000.0 / count, 3),
            "harness_share": round(self.overhead_s / self.backend_s, 4) if self.backend_s > 0 else None,
        }
