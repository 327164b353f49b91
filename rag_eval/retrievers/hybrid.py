"""``hybrid``: fuse the rankings of two or more retrievers.

YAML parameters::

    adapter: hybrid
    params:
      retrievers:                 # two or more retriever specs
        - {adapter: bm25, params: {}, weight: 1.0}
        - {adapter: dense, params: {model: all-MiniLM-L6-v2}}
      method: rrf                 # rrf | weighted
      k: 60                       # rrf constant
      normalization: minmax       # minmax | zscore (method: weighted only)
      candidates: null            # depth asked of each retriever (default max(top_k, 100))
      cache_dir: null             # handed to children that take one and set none

Ranks. Each child's list for a query is ranked by score descending, ties broken
by doc id descending: the order trec_eval evaluates, so rank 1 here is rank 1 there.

``rrf`` (reciprocal rank fusion, Cormack et al. 2009)::

    score(d) = sum_i  weight_i / (k + rank_i(d))

summed over the children that returned ``d`` (rank is 1-based); a child that did
not return ``d`` adds nothing. Weights default to 1, giving plain RRF.

``weighted``: each child's scores for a query are normalised, then
``score(d) = sum_i weight_i * norm_i(d)`` (weights default to 1, not rescaled).

- ``minmax``: ``(s - min) / (max - min)`` over the child's list for that query;
  when every score in the list is equal (including a one-document list) each gets 1.0,
  since the child still put those documents first.
- ``zscore``: ``(s - mean) / std`` with the population std (ddof=0); an all-equal
  list gives 0.0 for every document.

A document that a child did not return gets that child's *lowest* normalised score
for the query: 0 under minmax, the list's minimum z-score under zscore (0 when the
list is empty). The choice keeps one property: being absent from a child's list is
never better than being in it (a plain 0 under zscore would rank an absent
document above every below-average one the child did return).

Fused ties are broken by doc id descending, as trec_eval would.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping, Sequence

from rag_eval.errors import RetrieverError
from rag_eval.retrievers import models as _models
from rag_eval.retrievers.base import Corpus, Queries, Ranking, describe

ADAPTER = "hybrid"
METHODS = ("rrf", "weighted")
NORMALIZATIONS = ("minmax", "zscore")


def ranked(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """A child's list in evaluation order: score descending, then doc id descending."""
    return sorted(((doc, float(s)) for doc, s in scores.items()), key=lambda item: (item[1], item[0]), reverse=True)


def rrf_scores(lists: Sequence[Mapping[str, float]], weights: Sequence[float], k: float) -> dict[str, float]:
    """Weighted reciprocal rank fusion of one query's lists (see the module docstring)."""
    fused: dict[str, float] = {}
    for scores, weight in zip(lists, weights):
        for rank, (doc, _) in enumerate(ranked(scores), start=1):
            fused[doc] = fused.get(doc, 0.0) + weight / (k + rank)
    return fused


def normalize(scores: Mapping[str, float], method: str) -> tuple[dict[str, float], float]:
    """``(normalised scores, value for absent documents)`` of one child's list for one query."""
    if not scores:
        return {}, 0.0
    values = [float(s) for s in scores.values()]
    if method == "minmax":
        low, high = min(values), max(values)
        if high == low:
            return {doc: 1.0 for doc in scores}, 0.0
        span = high - low
        return {doc: (float(s) - low) / span for doc, s in scores.items()}, 0.0
    if method == "zscore":
        mean = math.fsum(values) / len(values)
        std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))
        if std == 0.0:
            return {doc: 0.0 for doc in scores}, 0.0
        normed = {doc: (float(s) - mean) / std for doc, s in scores.items()}
        return normed, min(normed.values())
    raise ValueError(f"unknown normalization {method!r}")


def weighted_scores(
    lists: Sequence[Mapping[str, float]], weights: Sequence[float], normalization: str
) -> dict[str, float]:
    """Weighted sum of normalised scores of one query's lists (see the module docstring)."""
    normalised = [normalize(scores, normalization) for scores in lists]
    docs: dict[str, None] = {}
    for scores in lists:
        docs.update(dict.fromkeys(scores))
    return {
        doc: math.fsum(weight * normed.get(doc, floor) for (normed, floor), weight in zip(normalised, weights))
        for doc in docs
    }


class HybridRetriever:
    """Runs each child retriever and fuses their rankings per query."""

    #: Parameters the runner resolves against the config file's folder when relative.
    PATH_PARAMS = ("cache_dir",)

    def __init__(
        self,
        retrievers: Sequence[Mapping[str, Any]] | None = None,
        method: str = "rrf",
        k: float = 60,
        normalization: str = "minmax",
        candidates: int | None = None,
        cache_dir: str | Path | None = None,
    ):
        if not isinstance(retrievers, (list, tuple)) or len(retrievers) < 2:
            raise RetrieverError(
                f"{ADAPTER}: retrievers must be a list of two or more specs "
                f"({{adapter: ..., params: ..., weight: ...}}), got {retrievers!r}"
            )
        self.method = _models.check_choice(ADAPTER, "method", method, METHODS)
        self.k = _models.check_number(ADAPTER, "k", k, minimum=0.0)
        self.normalization = _models.check_choice(ADAPTER, "normalization", normalization, NORMALIZATIONS)
        self.candidates = _models.check_int(ADAPTER, "candidates", candidates, optional=True)
        self.cache_dir = _models.check_path(ADAPTER, "cache_dir", cache_dir)
        self.specs = [dict(spec) if isinstance(spec, Mapping) else spec for spec in retrievers]
        self.weights: list[float] = []
        self.children: list[Any] = []
        for position, spec in enumerate(retrievers):
            where = f"{ADAPTER}: retrievers[{position}]"
            weight = spec.get("weight", 1.0) if isinstance(spec, Mapping) else 1.0
            self.weights.append(_models.check_number(where, "weight", weight, minimum=0.0))
            self.children.append(_models.build_child(spec, where, self.cache_dir, extra_keys=("weight",)))
        if not any(self.weights):
            raise RetrieverError(f"{ADAPTER}: every weight is 0; give at least one retriever a positive weight")

    def depth(self, top_k: int) -> int:
        """How many results to ask of each child: ``candidates``, never fewer than ``top_k``."""
        return max(top_k, self.candidates if self.candidates is not None else 100)

    def index(self, corpus: Corpus) -> None:
        """Index every child on the same corpus."""
        for child in self.children:
            child.index(corpus)

    def search(self, queries: Queries, top_k: int) -> Ranking:
        """Fused top ``top_k`` per query."""
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise RetrieverError(f"{ADAPTER}: top_k must be an integer >= 1, got {top_k!r}")
        depth = self.depth(top_k)
        runs = []
        for position, child in enumerate(self.children):
            run = child.search(queries, depth)
            if not isinstance(run, Mapping):
                raise RetrieverError(
                    f"{ADAPTER}: retrievers[{position}] returned {type(run).__name__}, not {{qid: {{doc: score}}}}"
                )
            runs.append(run)
        results: Ranking = {}
        for qid in queries:
            # A child may return more than asked: only its top `depth` take part.
            lists = [dict(ranked(run.get(qid) or {})[:depth]) for run in runs]
            if self.method == "rrf":
                fused = rrf_scores(lists, self.weights, self.k)
            else:
                fused = weighted_scores(lists, self.weights, self.normalization)
            results[qid] = dict(ranked(fused)[:top_k])
        return results

    def describe(self) -> dict[str, Any]:
        """Fusion settings and each child's own description."""
        children = [describe(child) for child in self.children]
        caches = [f"{spec['adapter']} {d['cache']}" for spec, d in zip(self.specs, children) if d.get("cache")]
        fusion = f"rrf (k={self.k:g})" if self.method == "rrf" else f"weighted {self.normalization}"
        return {
            "adapter": ADAPTER,
            "method": fusion,
            **({"cache": ", ".join(caches)} if caches else {}),
            "parameters": {
                "method": self.method,
                "k": self.k,
                "normalization": self.normalization,
                "candidates": self.candidates,
            },
            "retrievers": [
                {"adapter": spec["adapter"], "weight": weight, "description": child_description}
                for spec, weight, child_description in zip(self.specs, self.weights, children)
            ],
        }
