"""FAISS indexes built for the dense retriever's ``index:`` (flat, HNSW, IVF, IVF-PQ): their settings, seeded builds.

:func:`index_settings` turns an index spec into the settings for a number of passages and a
dimension, refusing what cannot be built (pq_m not dividing the dimension, more lists than
passages) with one line; :func:`build_index` trains and fills a seeded index, so one spec and
one array give one index. FAISS is imported on first use (:func:`faiss_module`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from rag_eval._core.errors import RetrieverError
from rag_eval._core.versions import install_extra
from rag_eval._retrievers.index_spec import IndexSpec


def index_settings(spec: IndexSpec, n: int, dim: int) -> dict[str, Any]:
    """The build and search settings for ``n`` passages of ``dim`` dimensions; RetrieverError if impossible."""
    lead = f"index {spec.kind}"
    if spec.kind == "hnsw":
        return {"m": spec.m, "ef_construction": spec.ef_construction, "ef_search": spec.ef_search, "seed": spec.seed}
    nlist = spec.nlist if spec.nlist is not None else _default_nlist(n)
    if nlist > n:
        raise RetrieverError(f"{lead}: nlist {nlist} exceeds the {n} passages; use nlist <= {n} or leave it unset")
    # nlist / 16, but at least 8 lists: with few lists, visiting one lost 0.14 nDCG@10 on an 800-passage corpus.
    nprobe = spec.nprobe if spec.nprobe is not None else min(nlist, max(8, nlist // 16))
    if nprobe > nlist:
        raise RetrieverError(f"{lead}: nprobe {nprobe} exceeds nlist {nlist}; use nprobe <= {nlist}")
    settings: dict[str, Any] = {"nlist": nlist, "nprobe": nprobe, "seed": spec.seed}
    need = nlist
    if spec.kind == "ivf_pq":
        pq_m = spec.pq_m if spec.pq_m is not None else _default_pq_m(dim)
        if dim % pq_m:
            divisors = _divisors(dim)
            near = [max(d for d in divisors if d < pq_m)] + [d for d in divisors if d > pq_m][:1]
            raise RetrieverError(
                f"{lead}: pq_m {pq_m} must divide the embedding dimension {dim}; "
                f"use a divisor such as {' or '.join(map(str, near))}"
            )
        codes = 1 << spec.pq_bits
        if n < codes:
            raise RetrieverError(
                f"{lead}: pq_bits {spec.pq_bits} needs at least {codes} passages to train its codebooks, got {n}; "
                "use fewer pq_bits, or kind ivf / hnsw"
            )
        settings.update(pq_m=pq_m, pq_bits=spec.pq_bits, refine=spec.refine)
        need = max(nlist, codes)
    train = spec.train_size if spec.train_size is not None else 64 * need
    if train < need:
        raise RetrieverError(f"{lead}: train_size {train} is below the {need} points training needs; raise it")
    settings["train_size"] = min(train, n)
    return settings


def _default_nlist(n: int) -> int:
    """About sqrt(n) lists, but at least 39 training points per list (FAISS's minimum for k-means)."""
    return max(1, min(round(math.sqrt(n)), n // 39))


def _default_pq_m(dim: int) -> int:
    """The largest divisor of ``dim`` up to dim / 8 (384 -> 48 code bytes a vector, 32x smaller than float32).

    Eight or more dimensions per sub-quantizer: FAISS 1.15 trains 4-dimensional ones
    about 20 times slower than 8-dimensional ones.
    """
    return max(d for d in _divisors(dim) if d <= max(1, dim // 8))


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def build_flat(spec: IndexSpec, passages: np.ndarray) -> tuple[Any, dict[str, Any]]:
    """FAISS's exhaustive inner-product index over ``passages`` and its info (never cached: building it is a copy)."""
    faiss = faiss_module()
    started = time.perf_counter()
    index = faiss.IndexFlatIP(passages.shape[1])
    with faiss_threads(faiss, spec.threads):
        index.add(passages)
    return index, {"cache": "off", "build_seconds": time.perf_counter() - started}


def build_index(spec: IndexSpec, settings: dict[str, Any], passages: np.ndarray) -> Any:
    """A trained and filled FAISS index; seeded, so one spec and one array give one index."""
    faiss = faiss_module()
    n, dim = passages.shape
    with faiss_threads(faiss, spec.threads):
        if spec.kind == "hnsw":
            index = faiss.IndexHNSWFlat(dim, settings["m"], faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = settings["ef_construction"]
            index.hnsw.rng = faiss.RandomGenerator(settings["seed"])  # node levels
            index.add(passages)
            return index
        if spec.kind == "ivf":
            factory = f"IVF{settings['nlist']},Flat"
        else:
            factory = f"IVF{settings['nlist']},PQ{settings['pq_m']}x{settings['pq_bits']}"
        index = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
        ivf = as_ivf(index)
        ivf.cp.seed = settings["seed"]
        if spec.kind == "ivf_pq":
            ivf.pq.cp.seed = settings["seed"]
            # The factory turns on polysemous training (codes re-ordered for Hamming filtering, which
            # inner-product search never uses): it costs ~50x the PQ training itself.
            ivf.do_polysemous_training = False
        rows = np.random.default_rng(settings["seed"]).choice(n, settings["train_size"], replace=False)
        index.train(passages[np.sort(rows)])
        index.add(passages)
        return index


def as_ivf(index: Any) -> Any:
    """The inverted-file part of an IVF index (where nprobe and the k-means seeds are set)."""
    faiss = faiss_module()
    return faiss.downcast_index(faiss.extract_index_ivf(index))


@contextmanager
def faiss_threads(faiss: Any, threads: int | None) -> Iterator[None]:
    """FAISS's (process-wide) OpenMP thread count set for a block, then restored."""
    if threads is None:
        yield
        return
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(threads)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def faiss_module() -> Any:
    """The faiss module, imported on first use (its type stubs lack several of the names used here)."""
    try:
        import faiss
    except ImportError as error:
        raise RetrieverError(
            f"index kinds flat, hnsw, ivf and ivf_pq need FAISS, which could not be imported ({error}); "
            f"install it with {install_extra('ann')}, or use index kind exact"
        ) from error
    return faiss
