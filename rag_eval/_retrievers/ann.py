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
the dense retriever produces. ``exact`` is :func:`rag_eval._retrievers.dense.top_k_blockwise`.
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
:class:`IndexCacheWarning`, never opened unchecked (FAISS may crash on garbled
bytes) and never a failed run. ``flat`` is not cached: building it is a copy.

FAISS is imported only when a FAISS kind is built; importing this module needs numpy
and pydantic.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np
from pydantic import Field, model_validator

from rag_eval._core.atomic import atomic_write_text, atomic_writer
from rag_eval._core.errors import RetrieverError
from rag_eval._core.files import describe_kind
from rag_eval._core.ranking import order_rows
from rag_eval._core.topk import top_k_blockwise
from rag_eval._retrievers.params import AdapterParams

CACHE_FORMAT = 1
Kind = Literal["exact", "flat", "hnsw", "ivf", "ivf_pq"]
#: One 1-D array per query, best first: passage row indices, and their scores (float32).
Hits = tuple[list[np.ndarray], list[np.ndarray]]

# Which kinds each parameter applies to: setting one for another kind is an error, not ignored.
_APPLIES: dict[str, tuple[str, ...]] = {
    "m": ("hnsw",),
    "ef_construction": ("hnsw",),
    "ef_search": ("hnsw",),
    "nlist": ("ivf", "ivf_pq"),
    "nprobe": ("ivf", "ivf_pq"),
    "train_size": ("ivf", "ivf_pq"),
    "pq_m": ("ivf_pq",),
    "pq_bits": ("ivf_pq",),
    "refine": ("ivf_pq",),
    "seed": ("hnsw", "ivf", "ivf_pq"),
    "threads": ("flat", "hnsw", "ivf", "ivf_pq"),
    "attribution_sample": ("flat", "hnsw", "ivf", "ivf_pq"),
}


class IndexCacheWarning(UserWarning):
    """A cached index was unusable (damaged, partial, mismatched) or could not be written; it is rebuilt."""


class IndexSpec(AdapterParams):
    """How the dense retriever searches (see the module docstring); unknown keys are errors."""

    kind: Kind = Field("exact", description="exact | flat | hnsw | ivf | ivf_pq")
    m: int = Field(32, ge=2, le=512, description="hnsw: neighbours per node")
    ef_construction: int = Field(200, ge=1, description="hnsw: candidate list while building")
    ef_search: int = Field(128, ge=1, description="hnsw: candidate list while searching")
    nlist: int | None = Field(None, ge=1, description="ivf: inverted lists (default about sqrt(passages))")
    nprobe: int | None = Field(None, ge=1, description="ivf: lists visited per query (default nlist / 16, at least 8 or all)")
    train_size: int | None = Field(None, ge=1, description="ivf: passages sampled to train (default 64 per list)")
    pq_m: int | None = Field(None, ge=1, description="ivf_pq: sub-quantizers, a divisor of the dimension")
    pq_bits: int = Field(8, ge=1, le=16, description="ivf_pq: bits per sub-quantizer code")
    refine: int = Field(1, ge=1, le=100, description="ivf_pq: refine x k candidates rescored exactly (1 = off)")
    seed: int = Field(0, ge=0, description="seed of training samples, k-means and HNSW levels")
    threads: int | None = Field(None, ge=1, description="FAISS threads (default: FAISS's own)")
    attribution_sample: int = Field(1000, ge=0, description="queries also searched exactly (0 = none)")

    @model_validator(mode="after")
    def _parameters_fit_kind(self) -> IndexSpec:
        for name in sorted(self.model_fields_set):
            kinds = _APPLIES.get(name)
            if kinds is not None and self.kind not in kinds:
                raise ValueError(
                    f"index parameter {name!r} applies to kind {' | '.join(kinds)}, not {self.kind}; remove it"
                )
        if self.nlist is not None and self.nprobe is not None and self.nprobe > self.nlist:
            raise ValueError(f"nprobe {self.nprobe} exceeds nlist {self.nlist}; use nprobe <= nlist")
        return self

    @property
    def approximate(self) -> bool:
        """Whether rankings may differ from exact search (every kind but exact and flat)."""
        return self.kind not in ("exact", "flat")


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
        return FaissSearcher(spec, passages, *_build_flat(spec, passages))
    settings = _resolve(spec, *passages.shape)
    if key is None:
        key = hashlib.sha256(passages.data).hexdigest()
    cache = _IndexCache(Path(cache_dir).expanduser()) if cache_dir is not None else None
    entry = _cache_key(key, passages.shape, settings)
    index = cache.load(entry, passages.shape) if cache is not None else None
    info: dict[str, Any] = {"cache": "off" if cache is None else ("hit" if index is not None else "miss")}
    if cache is not None:
        info["cache_path"] = str(cache.paths(entry)[0])
    if index is None:
        started = time.perf_counter()
        index = _build(spec, settings, passages)
        info["build_seconds"] = time.perf_counter() - started
        if cache is not None:
            cache.save(entry, index, {"embeddings": key, "shape": list(passages.shape), **settings})
    return FaissSearcher(spec, passages, index, {**info, **settings})


class ExactSearcher:
    """Exact inner-product search (:func:`rag_eval._retrievers.dense.top_k_blockwise`)."""

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
            _as_ivf(index).nprobe = info["nprobe"]

    def search(self, queries: np.ndarray, k: int) -> Hits:
        """Top ``k`` of each query row; approximate kinds may return fewer (FAISS's -1 dropped)."""
        queries = _check_queries(queries, self.passages, k)
        n_passages = self.passages.shape[0]
        k = min(k, n_passages)
        flat, refine = self.spec.kind == "flat", self.spec.refine > 1
        # flat asks for one more, to see whether a tie crosses the cut-off.
        fetch = min(k + 1 if flat else k * self.spec.refine, n_passages)
        faiss = _faiss()
        with _faiss_threads(faiss, self.spec.threads):
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
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    queries = np.asarray(queries)
    if queries.ndim != 2:
        raise ValueError(f"queries must be a 2-D array, got shape {queries.shape}")
    if passages.shape[0] and queries.shape[1] != passages.shape[1]:
        raise ValueError(f"queries have dimension {queries.shape[1]}, passages {passages.shape[1]}")
    return np.ascontiguousarray(queries, dtype=np.float32)


# ---------------------------------------------------------------- building


def _resolve(spec: IndexSpec, n: int, dim: int) -> dict[str, Any]:
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


def _build_flat(spec: IndexSpec, passages: np.ndarray) -> tuple[Any, dict[str, Any]]:
    faiss = _faiss()

    started = time.perf_counter()
    index = faiss.IndexFlatIP(passages.shape[1])
    with _faiss_threads(faiss, spec.threads):
        index.add(passages)
    return index, {"cache": "off", "build_seconds": time.perf_counter() - started}


def _build(spec: IndexSpec, settings: dict[str, Any], passages: np.ndarray) -> Any:
    """A trained and filled FAISS index; seeded, so one spec and one array give one index."""
    faiss = _faiss()

    n, dim = passages.shape
    with _faiss_threads(faiss, spec.threads):
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
        ivf = _as_ivf(index)
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


def _as_ivf(index: Any) -> Any:
    faiss = _faiss()

    return faiss.downcast_index(faiss.extract_index_ivf(index))


@contextmanager
def _faiss_threads(faiss: Any, threads: int | None) -> Iterator[None]:
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


# ---------------------------------------------------------------- cache


def _cache_key(embeddings: str, shape: tuple[int, int], settings: dict[str, Any]) -> str:
    """Entry name: the embeddings and what changes the built index (search-time settings left out)."""
    faiss = _faiss()

    built = {name: value for name, value in settings.items() if name not in ("nprobe", "ef_search", "refine")}
    payload = {"format": CACHE_FORMAT, "embeddings": embeddings, "shape": list(shape), "index": built,
               "faiss": faiss.__version__.split(".")[0]}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()


class _IndexCache:
    """``<dir>/indexes/<key>.faiss`` + ``<key>.json`` (size, sha256; written last, the commit marker)."""

    def __init__(self, directory: Path) -> None:
        self.entries = directory / "indexes"

    def paths(self, key: str) -> tuple[Path, Path]:
        return self.entries / f"{key}.faiss", self.entries / f"{key}.json"

    def load(self, key: str, shape: tuple[int, int]) -> Any | None:
        """The cached index, or None (with an IndexCacheWarning when an entry exists but fails a check)."""
        index_path, manifest_path = self.paths(key)
        if not os.path.lexists(manifest_path):
            if os.path.lexists(index_path):
                self._reject(index_path, "index file without a manifest (an interrupted write?)")
            return None
        problem = _not_a_plain_file(manifest_path) or _not_a_plain_file(index_path)
        if problem:
            self._reject(index_path, problem)
            return None
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
            size, digest = manifest["size"], manifest["sha256"]
            if manifest["key"] != key:
                raise ValueError("manifest key does not match its file name")
        except (OSError, ValueError, KeyError, TypeError) as error:
            self._reject(manifest_path, f"unreadable manifest ({type(error).__name__}: {error})")
            return None
        try:
            actual = index_path.stat().st_size
            if actual != size:
                self._reject(index_path, f"file has {actual} bytes, the manifest says {size} (truncated?)")
                return None
            if _file_sha256(index_path) != digest:
                self._reject(index_path, "checksum mismatch (the file was modified or partly written)")
                return None
            faiss = _faiss()

            index = faiss.read_index(str(index_path))
        except (OSError, RuntimeError) as error:
            self._reject(index_path, f"unreadable index ({type(error).__name__}: {' '.join(str(error).split())})")
            return None
        if (index.ntotal, index.d) != tuple(shape) or index.metric_type != _inner_product():
            self._reject(index_path, f"index holds {index.ntotal} x {index.d} vectors, expected {shape[0]} x {shape[1]}")
            return None
        return index

    def save(self, key: str, index: Any, info: dict[str, Any]) -> None:
        """Write the index atomically, then its manifest; a failure warns and the run goes on."""
        faiss = _faiss()


        index_path, manifest_path = self.paths(key)
        digest = hashlib.sha256()
        size = 0
        try:
            self.entries.mkdir(parents=True, exist_ok=True)
            try:
                manifest_path.unlink()  # the old entry stops being valid before its file is replaced
            except FileNotFoundError:
                pass
            with atomic_writer(index_path) as handle:

                def write(chunk: bytes) -> int:
                    nonlocal size
                    digest.update(chunk)
                    size += len(chunk)
                    return handle.write(chunk)

                faiss.write_index(index, faiss.PyCallbackIOWriter(write))
            manifest = {"format": CACHE_FORMAT, "key": key, "size": size, "sha256": digest.hexdigest(), **info}
            atomic_write_text(manifest_path, json.dumps(manifest, sort_keys=True))
        except OSError as error:  # a read-only or full disk must not fail the run
            warnings.warn(f"could not write index cache {index_path}: {error}", IndexCacheWarning, stacklevel=3)

    def _reject(self, path: Path, problem: str) -> None:
        warnings.warn(
            f"index cache entry {path} is unusable: {problem}; rebuilding the index and rewriting it",
            IndexCacheWarning,
            stacklevel=3,
        )


def _not_a_plain_file(path: Path) -> str | None:
    """Why ``path`` cannot be read as a cache file (a FIFO would block forever), or None."""

    try:
        kind = describe_kind(os.stat(path).st_mode)
    except FileNotFoundError:
        return f"{path.name} is missing"
    except OSError as error:
        return f"{path.name} cannot be examined ({error.strerror or error})"
    return f"{path.name} is {kind}, not a regular file" if kind else None


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 22), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _inner_product() -> int:
    faiss = _faiss()

    return int(faiss.METRIC_INNER_PRODUCT)


def _faiss() -> Any:
    """The faiss module, imported on first use (its type stubs lack several of the names used here)."""
    try:
        import faiss
    except ImportError as error:
        raise RetrieverError(
            f"index kinds flat, hnsw, ivf and ivf_pq need FAISS, which could not be imported ({error}); "
            "install it with pip install 'rag-eval[ann]', or use index kind exact"
        ) from error
    return faiss
