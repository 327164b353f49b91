"""What an approximate index cost: how much of exact search's top k it kept, and the metric change.

A regression gate sees nDCG@10 drop; was it the new model or a noisier index? For the
queries also searched exactly (all, or a sample on a big corpus), this module compares
each query's approximate top k with its exact top k (overlap@k = shared passages /
exact passages, the ANN literature's recall@k) and, given one metric's per-query values
on both rankings, the mean of each on the same queries and their difference.

Pure: rankings and numbers in, numbers out (no rounding: reports round).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rag_eval._core.ranking import ranked_ids

Ranking = Mapping[str, Mapping[str, float]]


def sample_queries(query_ids: Sequence[str], size: int, seed: int = 0) -> list[str]:
    """``size`` query ids drawn without replacement (all when ``size`` >= their number), in their given order.

    Drawn from the sorted ids with a seeded generator, so the same query set and seed
    give the same sample whatever order the queries come in.
    """
    if size < 0:
        raise ValueError(f"sample size must be >= 0, got {size}")
    if size >= len(query_ids):
        return list(query_ids)
    chosen = set(np.random.default_rng(seed).choice(sorted(query_ids), size, replace=False).tolist())
    return [qid for qid in query_ids if qid in chosen]


def overlap_at_k(approx: Mapping[str, float], exact: Mapping[str, float], k: int) -> float:
    """Share of exact search's top ``k`` (by the ranking rule) also in the approximate top ``k``.

    The denominator is the size of the exact top k (smaller than k on a corpus of
    fewer passages); two empty rankings agree fully (1.0).
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    reference = ranked_ids(exact)[:k]
    if not reference:
        return 1.0
    found = set(ranked_ids(approx)[:k])
    return sum(doc in found for doc in reference) / len(reference)


def approximation_cost(
    approx: Ranking,
    exact: Ranking,
    k: int,
    per_query_approx: Mapping[str, float] | None = None,
    per_query_exact: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Overlap@k of ``approx`` with ``exact`` on the queries of ``exact`` (the sample), and the metric change.

    Returns ``k``, ``queries`` (sampled), ``overlap`` ({query: overlap@k}),
    ``overlap_mean``, ``overlap_min`` and ``overlap_min_query`` (None without
    queries). A sampled query missing from ``approx`` has an empty ranking, overlap 0.

    With both per-query metric mappings: ``metric_queries`` (sampled queries that
    have a value in both, e.g. judged ones), ``metric_approx`` and ``metric_exact``
    (means over those queries) and ``metric_difference`` = approx - exact
    (negative: the index lost quality); None where there is nothing to average.
    """
    overlap = {qid: overlap_at_k(approx.get(qid, {}), ranking, k) for qid, ranking in exact.items()}
    values = list(overlap.values())
    worst = min(overlap, key=lambda qid: (overlap[qid], qid)) if overlap else None
    cost: dict[str, Any] = {
        "k": k,
        "queries": len(overlap),
        "overlap": overlap,
        "overlap_mean": float(np.mean(values)) if values else None,
        "overlap_min": overlap[worst] if worst is not None else None,
        "overlap_min_query": worst,
        "metric_queries": 0,
        "metric_approx": None,
        "metric_exact": None,
        "metric_difference": None,
    }
    if per_query_approx is None or per_query_exact is None:
        return cost
    scored = [qid for qid in overlap if qid in per_query_approx and qid in per_query_exact]
    if scored:
        mean_approx = float(np.mean([per_query_approx[qid] for qid in scored]))
        mean_exact = float(np.mean([per_query_exact[qid] for qid in scored]))
        cost.update(metric_approx=mean_approx, metric_exact=mean_exact, metric_difference=mean_approx - mean_exact)
    cost["metric_queries"] = len(scored)
    return cost
