"""Nearest-neighbour search over passage embeddings: exact, or a FAISS index (flat, HNSW, IVF, IVF-PQ).

YAML (under the dense retriever's ``params``)::

    index:
      kind: hnsw            # exact (default) | flat | hnsw | ivf | ivf_pq
      m: 32                 # hnsw: graph neighbours per node
      ef_construction: 200  # hnsw: candidate list while building
      ef_search: 128        # hnsw: candidate list while searching (not part of the cache key)
      nlist: null           # ivf, ivf_pq: inverted lists (default: about sqrt(passages))
      nprobe: null          # ivf, ivf_pq: lists visited per query (default: nlist / 16, at least 8 or all)
      train_size: null      # ivf, ivf_pq: passages sampled for training (default: 64 per list)
      pq_m: null            # ivf_pq: sub-quantizers, must divide the dimension (default: dimension / 8)
      pq_bits: 8            # ivf_pq: bits per sub-quantizer code
      refine: 1             # ivf_pq: rescore refine x k candidates with the exact vectors (1 = PQ scores)
      seed: 0               # training sample, k-means and HNSW levels
      threads: null         # FAISS threads while building and searching (default: FAISS's own)
      attribution_sample: 1000  # queries whose exact top k is also computed (0 = none)

Every kind scores by inner product; cosine is the inner product of the unit vectors
the dense retriever produces. ``exact`` is :func:`rag_eval._core.topk.top_k_blockwise`.
``flat`` is FAISS's exhaustive search and returns the same rankings: a tie that
crosses the cut-off is redone exactly (FAISS keeps the first index of tied scores,
the ranking rule wants the greatest). The others are approximate: their rows are
ordered by the ranking rule, and a position FAISS could not fill (its ``-1``) is
dropped, so a row may hold fewer than ``k`` passages. IVF-PQ scores are estimates
from the compressed codes; with ``refine`` it fetches ``refine x k`` candidates and
rescores them with the exact vectors (which the dense retriever holds anyway).

Built indexes (hnsw, ivf, ivf_pq) are cached under ``<cache_dir>/indexes/`` keyed by
the embeddings' checksum and the parameters that change the built index (search-time
``ef_search``, ``nprobe``, ``refine`` and ``threads`` are not among them, so tuning them reuses
the index). The index file is written atomically and its manifest last, holding the
file's size and sha256; a missing, damaged or mismatched entry is a miss with an
:class:`~rag_eval._retrievers.index_cache.IndexCacheWarning`, never opened unchecked (FAISS may crash on garbled
bytes) and never a failed run. ``flat`` is not cached: building it is a copy.

FAISS indexes are built by :mod:`rag_eval._retrievers.faiss_build` and cached by
:mod:`rag_eval._retrievers.index_cache`. FAISS is imported only when a FAISS kind is built;
importing this module needs numpy and pydantic.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from rag_eval._core.ranking import check_top_k, order_rows
from rag_eval._core.topk import top_k_blockwise
from rag_eval._retrievers.faiss_build import (
    as_ivf,
    build_flat,
    build_index,
    faiss_module,
    faiss_threads,
    index_settings,
)
from rag_eval._retrievers.index_cache import IndexCache, index_cache_key
from rag_eval._retrievers.index_spec import IndexSpec

#: One 1-D array per query, best first: passage row indices, and their scores (float32).
Hits = tuple[list[np.ndarray], list[np.ndarray]]


class Searcher(Protocol):
    """Top-k search over the passages a searcher was built on."""

    info: dict[str, Any]

    def search(self, queries: np.ndarray, k: int) -> Hits:
        """Per query: row indices and scores of the best ``k`` passages, ordered by the ranking rule."""
        ...


def build_searcher(
    spec: IndexSpec,
    passages: np.ndarray,
    *,
    similarity: str = "cosine",
    cache_dir: Path | str | None = None,
    key: str | None = None,
    block_size: int = 65536,
) -> Searcher:
    """A searcher over ``passages`` (float32, one row per passage, rows in doc id order).

    ``similarity`` is ``cosine`` (the caller passes unit vectors) or ``dot``; both
    are inner products. ``key`` identifies the embeddings in the index cache (a
    checksum of them; computed here when None); ``cache_dir`` None caches nothing.
    ``block_size`` is the exact search's passage block. Impossible parameters for
    these passages (pq_m not dividing the dimension, more lists than passages)
    raise a one-line :class:`RetrieverError`.
    """
    if similarity not in ("cosine", "dot"):
        raise ValueError(f"similarity must be 'cosine' or 'dot', got {similarity!r}")
    passages = np.asarray(passages)
    if passages.ndim != 2:
        raise ValueError(f"passages must be a 2-D array, got shape {passages.shape}")
    passages = np.ascontiguousarray(passages, dtype=np.float32)
    if spec.kind == "exact" or passages.shape[0] == 0:
        return ExactSearcher(passages, block_size, kind=spec.kind)
    if spec.kind == "flat":
        return FaissSearcher(spec, passages, *build_flat(spec, passages))
    settings = index_settings(spec, *passages.shape)
    if key is None:
        key = hashlib.sha256(passages.data).hexdigest()
    cache = IndexCache(Path(cache_dir).expanduser()) if cache_dir is not None else None
    entry = index_cache_key(key, passages.shape, settings)
    index = cache.load(entry, passages.shape) if cache is not None else None
    info: dict[str, Any] = {"cache": "off" if cache is None else ("hit" if index is not None else "miss")}
    if cache is not None:
        info["cache_path"] = str(cache.paths(entry)[0])
    if index is None:
        started = time.perf_counter()
        index = build_index(spec, settings, passages)
        info["build_seconds"] = time.perf_counter() - started
        if cache is not None:
            cache.save(entry, index, {"embeddings": key, "shape": list(passages.shape), **settings})
    return FaissSearcher(spec, passages, index, {**info, **settings})


class ExactSearcher:
    """Exact inner-product search (:func:`rag_eval._core.topk.top_k_blockwise`)."""

    def __init__(self, passages: np.ndarray, block_size: int = 65536, kind: str = "exact") -> None:
        self.passages = passages
        self.block_size = block_size
        self.info: dict[str, Any] = {"kind": kind, "exact": True}

    def search(self, queries: np.ndarray, k: int) -> Hits:
        """Exact top ``k`` of each query row (see the class docstring)."""
        queries = _check_queries(queries, self.passages, k)
        n_queries = queries.shape[0]
        if self.passages.shape[0] == 0:
            return [np.empty(0, np.int64)] * n_queries, [np.empty(0, np.float32)] * n_queries

        indices, scores = top_k_blockwise(queries, self.passages, k, self.block_size)
        return list(indices), list(scores)


class FaissSearcher:
    """A FAISS index over the passages, its rows re-ordered by the ranking rule."""

    def __init__(self, spec: IndexSpec, passages: np.ndarray, index: Any, info: dict[str, Any]) -> None:
        self.spec = spec
        self.passages = passages
        self.index = index
        self.info: dict[str, Any] = {"kind": spec.kind, "exact": spec.kind == "flat", **info}
        if spec.kind == "hnsw":
            index.hnsw.efSearch = spec.ef_search
        elif spec.kind in ("ivf", "ivf_pq"):
            as_ivf(index).nprobe = info["nprobe"]

    def search(self, queries: np.ndarray, k: int) -> Hits:
        """Top ``k`` of each query row; approximate kinds may return fewer (FAISS's -1 dropped)."""
        queries = _check_queries(queries, self.passages, k)
        n_passages = self.passages.shape[0]
        k = min(k, n_passages)
        flat, refine = self.spec.kind == "flat", self.spec.refine > 1
        # flat asks for one more, to see whether a tie crosses the cut-off.
        fetch = min(k + 1 if flat else k * self.spec.refine, n_passages)
        faiss = faiss_module()
        with faiss_threads(faiss, self.spec.threads):
            scores, indices = self.index.search(queries, fetch)
        rows_i: list[np.ndarray] = []
        rows_s: list[np.ndarray] = []
        for row in range(queries.shape[0]):
            ids, vals = indices[row], scores[row]
            if flat and fetch > k and vals[k - 1] == vals[k]:
                # FAISS keeps the lowest index among tied scores; the rule keeps the greatest.
                exact_i, exact_s = ExactSearcher(self.passages).search(queries[row : row + 1], k)
                rows_i.append(exact_i[0])
                rows_s.append(exact_s[0])
                continue
            keep = ids >= 0
            ids = ids[keep].astype(np.int64)
            vals = self.passages[ids] @ queries[row] if refine else vals[keep].astype(np.float32)
            order = order_rows(vals, ids)[:k]
            rows_i.append(ids[order])
            rows_s.append(vals[order])
        return rows_i, rows_s


def _check_queries(queries: np.ndarray, passages: np.ndarray, k: int) -> np.ndarray:
    check_top_k(k, name="k")
    queries = np.asarray(queries)
    if queries.ndim != 2:
        raise ValueError(f"queries must be a 2-D array, got shape {queries.shape}")
    if passages.shape[0] and queries.shape[1] != passages.shape[1]:
        raise ValueError(f"queries have dimension {queries.shape[1]}, passages {passages.shape[1]}")
    return np.ascontiguousarray(queries, dtype=np.float32)
