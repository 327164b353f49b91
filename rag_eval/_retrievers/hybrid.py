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

Each child's answer is checked as the run checks a top-level retriever's
(:func:`rag_eval._retrievers.answer_check.check_answer`) before it is fused: a doc id not in
the corpus, a NaN, infinite, str or bool score, or a query that was not asked stops the
search with one line naming the child (``hybrid: retrievers[0] (my_pkg:Mine): query ...``),
since a fused score hides where a bad value came from.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from rag_eval._core import ranking
from rag_eval._core.errors import RetrieverError
from rag_eval._models import files as _models
from rag_eval._retrievers.answer_check import check_answer
from rag_eval._retrievers.base import Corpus, Queries, Ranking, describe
from rag_eval._retrievers.children import RetrieverRef, build_child
from rag_eval._retrievers.params import AdapterParams, Folder, check_params
from rag_eval._retrievers.title_use import fused_title_use

ADAPTER = "hybrid"


class HybridChild(RetrieverRef):
    """One fused retriever: a retriever spec and its weight."""

    weight: float = Field(1.0, ge=0, allow_inf_nan=False, description="its share of the fused score")


class HybridParams(AdapterParams):
    """Parameters of ``adapter: hybrid`` (see the module docstring)."""

    retrievers: list[HybridChild] = Field(
        description="two or more retriever specs {adapter: ..., params: ..., weight: ...}"
    )
    method: Literal["rrf", "weighted"] = Field("rrf", description="reciprocal rank fusion or a weighted score sum")
    k: float = Field(60, ge=0, allow_inf_nan=False, description="the rrf constant")
    normalization: Literal["minmax", "zscore"] = Field("minmax", description="score normalisation (weighted only)")
    candidates: int | None = Field(None, ge=1, description="depth asked of each retriever (default max(top_k, 100))")
    cache_dir: Folder | None = Field(None, description="handed to children that take one and set none")

    @field_validator("retrievers")
    @classmethod
    def _two_or_more(cls, value: list[HybridChild]) -> list[HybridChild]:
        if len(value) < 2:
            raise ValueError(f"must list two or more retrievers to fuse, got {len(value)}")
        return value

    @model_validator(mode="after")
    def _some_weight(self) -> HybridParams:
        if not any(child.weight for child in self.retrievers):
            raise ValueError("every weight is 0; give at least one retriever a positive weight")
        return self


def rrf_scores(lists: Sequence[Mapping[str, float]], weights: Sequence[float], k: float) -> dict[str, float]:
    """Weighted reciprocal rank fusion of one query's lists (see the module docstring)."""
    fused: dict[str, float] = {}
    for scores, weight in zip(lists, weights):
        for rank, (doc, _) in enumerate(ranking.ranked(scores), start=1):
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

    Params = HybridParams

    @classmethod
    def title_use(cls, params: Mapping[str, Any]) -> str:
        """As its fused retrievers do, when they all agree; PARTLY otherwise (rag_eval._retrievers.title_use)."""
        return fused_title_use(params.get("retrievers"))
    #: Parameters the runner resolves against the config file's folder when relative.
    PATH_PARAMS = ("cache_dir",)

    def __init__(self, **params: Any) -> None:
        settings = check_params(HybridParams, params, ADAPTER)
        self.method = settings.method
        self.k = float(settings.k)
        self.normalization = settings.normalization
        self.candidates = settings.candidates
        self.cache_dir = _models.folder(settings.cache_dir)
        self.specs = [{"adapter": child.adapter, "params": dict(child.params)} for child in settings.retrievers]
        self.weights = [float(child.weight) for child in settings.retrievers]
        self.children = [
            build_child(child, f"{ADAPTER}: retrievers[{position}]", self.cache_dir)
            for position, child in enumerate(settings.retrievers)
        ]
        self._corpus: Corpus | None = None  # what the children indexed: their answers are checked against it

    def depth(self, top_k: int) -> int:
        """How many results to ask of each child: ``candidates``, never fewer than ``top_k``."""
        return max(top_k, self.candidates if self.candidates is not None else 100)

    def index(self, corpus: Corpus) -> None:
        """Index every child on the same corpus."""
        self._corpus = None  # a failing index() must not leave the old corpus as the one to check against
        for child in self.children:
            child.index(corpus)
        self._corpus = corpus

    def search(self, queries: Queries, top_k: int) -> Ranking:
        """Fused top ``top_k`` per query (ties at the cut-off keep the greater doc ids)."""
        ranking.check_top_k(top_k, where=ADAPTER, error=RetrieverError)
        if self._corpus is None:
            raise RetrieverError(f"{ADAPTER}: search() called before index(corpus)")
        depth = self.depth(top_k)
        # Each child's answer checked and cut to its top `depth` (a child may return more than asked).
        runs = [
            check_answer(self.child_name(position), child.search(queries, depth), queries, self._corpus, depth)
            for position, child in enumerate(self.children)
        ]
        results: Ranking = {}
        for qid in queries:
            lists = [run[qid] for run in runs]
            if self.method == "rrf":
                fused = rrf_scores(lists, self.weights, self.k)
            else:
                fused = weighted_scores(lists, self.weights, self.normalization)
            results[qid] = ranking.top_k(fused, top_k)
        return results

    def child_name(self, position: int) -> str:
        """How errors name a child: its place in params.retrievers and its adapter."""
        return f"{ADAPTER}: retrievers[{position}] ({self.specs[position]['adapter']})"

    def describe(self) -> dict[str, Any]:
        """Fusion settings and each child's own description."""
        children = []
        for position, child in enumerate(self.children):
            try:
                children.append(describe(child, adapter=str(self.specs[position]["adapter"])))
            except RetrieverError as error:  # which child: its place in params.retrievers, as search errors say
                raise RetrieverError(f"{self.child_name(position)}: {error}") from error
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
