"""The ranking cache as one run uses it: a built-in retriever whose inputs did not change is not run again."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rag_eval._core.errors import RagEvalError
from rag_eval._core.plugins import config_folder
from rag_eval._data.config.adapters import BUILTIN
from rag_eval._data.config.schema import LoadedConfig
from rag_eval._data.config.sections import RetrieverSpec
from rag_eval._retrievers import registry
from rag_eval._retrievers.corpus_digest import corpus_digest
from rag_eval._retrievers.embedding_cache import default_cache_dir
from rag_eval._retrievers.ranking_cache import CachedRanking, RankingCache, ranking_key
from rag_eval._run.build import resolve_params

# What a reused ranking's description gains (the report's retriever notes show it).
HIT = {"ranking_cache": "hit"}
# The timings a stored ranking keeps: what the retriever cost when it ran, shown again on a hit.
STORED_TIMINGS = ("index_s", "search_s")


def ranking_store(config: LoadedConfig) -> RankingCache | None:
    """The ranking cache of a run (the config's ``cache_dir``, else the default cache folder); None when disabled."""
    if not config.model.reuse_rankings:
        return None
    folder = config.resolve(config.model.cache_dir) if config.model.cache_dir else default_cache_dir()
    return RankingCache(folder)


class RankingReuse:
    """Stored rankings for the retrievers of one run: looked up before a retriever runs, saved once it is evaluated."""

    def __init__(self, config: LoadedConfig, queries: Mapping[str, str]) -> None:
        self.config = config
        self._store = ranking_store(config)
        self._queries = queries
        self._digests: dict[str | None, str] = {}  # per corpus a retriever indexes (by chunker), hashed once

    def key(self, spec: RetrieverSpec, retriever: Any, corpus: Mapping[str, Mapping[str, Any]]) -> str | None:
        """The cache key of one retriever of the run; None when nothing is stored for it (disabled, a plug-in)."""
        if self._store is None or spec.adapter not in BUILTIN:
            return None  # plug-ins never: their code can change while their parameters stay the same
        if spec.chunker not in self._digests:
            self._digests[spec.chunker] = corpus_digest(corpus, self._queries)
        try:
            with config_folder(self.config.base):
                factory = registry.resolve(spec.adapter)
                params = resolve_params(factory, spec.params, self.config)
        except RagEvalError:
            return None
        if getattr(factory, "REUSE_RANKINGS", True) is False:
            return None  # a database or a team's service can change while the parameters stay the same
        return ranking_key(spec.adapter, params, retriever, self._digests[spec.chunker], self.config.model.top_k)

    def load(self, key: str | None) -> CachedRanking | None:
        """The stored ranking of ``key``, or None (no key, nothing stored, or an unusable entry)."""
        if self._store is None or key is None:
            return None
        return self._store.load(key)

    def discard(self, key: str | None, problem: str) -> None:
        """Say (a warning) that the stored ranking of ``key`` is unusable: ``problem``; the run computes it again."""
        if self._store is not None and key is not None:
            self._store.discard(key, problem)

    def save(self, key: str | None, answer: Any, description: Mapping[str, Any], timings: Mapping[str, float]) -> None:
        """Store a checked and evaluated answer with what it cost to compute."""
        if self._store is not None and key is not None:
            self._store.save(key, answer, description, {name: timings[name] for name in STORED_TIMINGS})
