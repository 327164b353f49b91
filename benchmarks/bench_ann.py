"""Exact and approximate search over a synthetic 1M-passage corpus: build time, query time, memory, recall@10.

No encoder: the vectors are generated (seeded, unit length, 384 dimensions by default)
as a mixture of clusters of different spreads, so neighbours have structure, as
real embeddings do (uniform noise would make every ANN index look bad). The queries
come from the same mixture. Each method builds its searcher over the corpus, then
answers all queries for the top 10; recall@10 is measured against the exact method
(rag_eval's top_k_blockwise), and ``= exact`` counts queries whose ranking is identical.

Memory is the peak resident set size while the method builds and searches (Linux:
the peak is reset before each method through /proc/self/clear_refs), so it includes
the corpus vectors every method shares; ``+RSS`` is the growth over the resident set
before the method (mostly the index's own copy of the vectors, or its codes).

    nice -n 10 python benchmarks/bench_ann.py [--passages 1000000] [--queries 1000] [--dim 384]
        [--methods exact,flat,hnsw,ivf,ivf_pq] [--threads N]

A method is a function from the corpus vectors to a searcher (anything with
``search(queries, k) -> (indices per query, scores per query)``, and optionally
``close()``, called right after the search to free what the method holds), registered
in METHODS with :func:`register`; :func:`rows_for` measures one.

``ray-exact`` is exact sharded search on a local Ray cluster (rag_eval._execution): its
build writes the vectors into an EmbeddingStore in a temporary folder (65,536 rows per
shard file) and starts Ray (2 CPUs) unless it is running; its search is
``search_on_ray`` over 2 shards, each a task that reads its rows from the store and
searches them, merged on the driver. Its query time therefore includes reading the
vectors from the store. Its peak RSS is the driver's only: the workers' own peaks (each
holds its shard's vectors) are in the printed info line as ``worker_peak_rss_gib``.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import resource
import shutil
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from rag_eval._models.embeddings.store import EmbeddingStore, text_key
from rag_eval._retrievers.ann import IndexSpec, build_searcher

K = 10
Builder = Callable[[np.ndarray], Any]
#: name -> builder; the first one is the reference every other row is compared with.
METHODS: dict[str, Builder] = {}
LABELS: dict[str, str] = {}


def register(name: str, label: str | None = None) -> Callable[[Builder], Builder]:
    """Add a method to the table (``label``: what the table calls it, default the name)."""

    def add(builder: Builder) -> Builder:
        METHODS[name] = builder
        LABELS[name] = label or name
        return builder

    return add


@register("exact", "exact local (top_k_blockwise)")
def _exact(passages: np.ndarray) -> Any:
    return build_searcher(IndexSpec(), passages)


@register("flat", "FAISS flat")
def _flat(passages: np.ndarray) -> Any:
    return build_searcher(IndexSpec(kind="flat"), passages)


@register("hnsw", "FAISS HNSW (m 16, efC 80, efS 128)")
def _hnsw(passages: np.ndarray) -> Any:
    # efC 80 rather than the default 200: building 1M nodes on 2 cores takes minutes, not an hour
    return build_searcher(IndexSpec(kind="hnsw", m=16, ef_construction=80, ef_search=128), passages)


@register("ivf", "FAISS IVF (defaults)")
def _ivf(passages: np.ndarray) -> Any:
    return build_searcher(IndexSpec(kind="ivf"), passages)


# The two IVF-PQ rows share one index through the on-disk cache: the second row's build time is
# the cache load (checksum + read), and it shows what rescoring 4 x k candidates exactly buys.
_CACHE = tempfile.TemporaryDirectory(prefix="bench_ann_")


@register("ivf_pq", "FAISS IVF-PQ (defaults)")
def _ivf_pq(passages: np.ndarray) -> Any:
    return build_searcher(IndexSpec(kind="ivf_pq"), passages, cache_dir=_CACHE.name)


@register("ivf_pq_refine", "FAISS IVF-PQ + refine 4 (index from cache)")
def _ivf_pq_refine(passages: np.ndarray) -> Any:
    return build_searcher(IndexSpec(kind="ivf_pq", refine=4), passages, cache_dir=_CACHE.name)


class RayExact:
    """Exact sharded search on a local Ray cluster over vectors written to an EmbeddingStore (the ``ray-exact`` row).

    Row ``i`` of the corpus is stored under ``text_key(f"p{i}")`` (a synthetic passage text:
    no encoder here), so the rows ``search_on_ray`` returns are corpus rows, comparable with
    exact local search's. :meth:`close` shuts Ray down (only if started here) and removes the
    temporary store.
    """

    def __init__(self, passages: np.ndarray, shards: int = 2, batch: int = 65536) -> None:
        import ray

        self.shards = shards
        self.folder = tempfile.mkdtemp(prefix="bench_ann_ray_")
        self.started_ray = False
        self.info: dict[str, Any] = {"shards": shards}
        try:
            started = time.perf_counter()
            self.keys = [text_key(f"p{i}") for i in range(len(passages))]
            self.store = EmbeddingStore(self.folder, "bench")
            for start in range(0, len(passages), batch):
                self.store.put(self.keys[start : start + batch], passages[start : start + batch])
            written = time.perf_counter() - started
            if len(self.store) != len(passages):  # put only warns on a full disk: a hole would fail the search
                raise RuntimeError(
                    f"the embedding store in {self.folder} holds {len(self.store)} of {len(passages)} rows"
                )
            started = time.perf_counter()
            if not ray.is_initialized():
                ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
                self.started_ray = True
            self.info.update({
                "store_write_s": round(written, 1),
                "ray_start_s": round(time.perf_counter() - started, 1),
                "store_files": len(self.store.shard_paths()),
            })
        except BaseException:
            self.close()
            raise

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` rows per query, searched shard by shard on Ray workers and merged on the driver."""
        from rag_eval._data.config.execution import ExecutionSpec
        from rag_eval._execution.ray_engine import search_on_ray

        return search_on_ray(self.store, self.keys, queries, k, spec=ExecutionSpec(engine="ray", shards=self.shards))

    def close(self) -> None:
        """Record the workers' peak RSS, shut Ray down if it was started here, remove the store's folder."""
        import ray

        try:
            if ray.is_initialized():
                peaks = _ray_worker_peaks()
                if peaks is not None:
                    self.info["worker_peak_rss_gib"] = peaks
        finally:
            if self.started_ray:
                ray.shutdown()
                self.started_ray = False
            shutil.rmtree(self.folder, ignore_errors=True)


def _worker_peaks_here() -> list[float]:
    """Run on a Ray worker: peak RSS (GiB, largest first) of the workers of its raylet, itself included.

    Itself too: Ray reuses idle workers, so this probe may run in a worker that searched a shard.
    """
    parent, peaks = os.getppid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", encoding="ascii", errors="replace") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read()
        except OSError:
            continue
        if int(fields.get("PPid", "0").strip() or 0) == parent and command.startswith(b"ray::") and "VmHWM" in fields:
            peaks.append(round(int(fields["VmHWM"].split()[0]) / 2**20, 2))
    return sorted(peaks, reverse=True)


def _ray_worker_peaks() -> list[float] | None:
    """Peak RSS (GiB) of the local Ray cluster's workers, the 3 largest; None where /proc cannot tell."""
    import ray

    try:
        peaks = ray.get(ray.remote(_worker_peaks_here).options(num_cpus=0).remote(), timeout=60)
    except Exception:  # a measurement only: the row stands without it
        return None
    return peaks[:3] or None


@register("ray-exact", "exact sharded on local Ray (2 shards)")
def _ray_exact(passages: np.ndarray) -> Any:
    return RayExact(passages, shards=2)


def synthetic(rows: int, dim: int, clusters: int, seed: int, centers: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` unit vectors from a mixture of ``clusters`` clusters grouped in topics; returns (vectors, centers).

    Two levels, so that neighbourhoods straddle cluster borders as in real embeddings:
    ``clusters / 5`` random unit topics; each cluster centre is a topic plus noise of
    norm 0.7; a point is its cluster's centre plus noise of norm ``spread`` (0.6 to
    1.2, one per cluster), normalised (top-1 cosine of a query about 0.6). Generated
    in chunks (float32) so memory stays at the result. Pass ``centers`` to draw more
    points (the queries) from the same mixture.
    """
    rng = np.random.default_rng(seed)
    if centers is None:
        topics = rng.standard_normal((max(1, clusters // 5), dim), dtype=np.float32)
        topics /= np.linalg.norm(topics, axis=1, keepdims=True)
        centers = topics[rng.integers(0, len(topics), clusters)]
        centers += 0.7 * rng.standard_normal((clusters, dim), dtype=np.float32) / np.sqrt(dim)
        centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    spread = np.random.default_rng(seed + 1).uniform(0.6, 1.2, size=len(centers)).astype(np.float32)
    out = np.empty((rows, dim), dtype=np.float32)
    for start in range(0, rows, 65536):
        chunk_rng = np.random.default_rng([seed, start])
        n = min(65536, rows - start)
        which = chunk_rng.integers(0, len(centers), n)
        noise = chunk_rng.standard_normal((n, dim), dtype=np.float32) * (spread[which] / np.sqrt(dim))[:, None]
        block = centers[which] + noise
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start : start + n] = block
    return out, centers


def _rss_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")  # resets VmHWM (the peak RSS) to the current RSS
        return True
    except OSError:
        return False


def rows_for(name: str, passages: np.ndarray, queries: np.ndarray, reference: list[np.ndarray] | None
             ) -> dict[str, Any]:
    """Build method ``name`` over ``passages``, search ``queries`` for the top 10; one table row.

    ``reference``: the exact method's indices (None: this is the reference).
    """
    gc.collect()
    exact_peak = _reset_peak()
    before = _rss_kib("VmRSS")
    started = time.perf_counter()
    searcher = METHODS[name](passages)
    build = time.perf_counter() - started
    try:
        started = time.perf_counter()
        indices, _ = searcher.search(queries, K)
        search = time.perf_counter() - started
        peak = _rss_kib("VmHWM") if exact_peak else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    finally:
        if hasattr(searcher, "close"):  # e.g. Ray shut down and its store removed before the next method runs
            searcher.close()
    row: dict[str, Any] = {"method": LABELS[name], "build_s": build, "search_s": search,
                           "peak_rss_gib": peak / 2**20 if peak else None,
                           "added_rss_gib": (peak - before) / 2**20 if peak and before else None,
                           "info": {k: v for k, v in getattr(searcher, "info", {}).items() if k != "cache_path"}}
    if reference is None:
        row.update(recall_mean=1.0, recall_min=1.0, identical=len(indices))
    else:
        recall = [len(set(a.tolist()) & set(e.tolist())) / len(e) for a, e in zip(indices, reference)]
        row.update(recall_mean=float(np.mean(recall)), recall_min=float(np.min(recall)),
                   identical=sum(np.array_equal(a, e) for a, e in zip(indices, reference)))
    row["indices"] = indices
    del searcher
    gc.collect()
    return row


def table(rows: list[dict[str, Any]], queries: int) -> str:
    """The markdown table of the rows (rounding happens here only)."""
    lines = ["| method | build s | query s (all) | ms / query | peak RSS GiB | +RSS GiB | recall@10 mean | min | = exact |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        peak = f"{row['peak_rss_gib']:.2f}" if row["peak_rss_gib"] is not None else "n/a"
        added = f"{row['added_rss_gib']:.2f}" if row["added_rss_gib"] is not None else "n/a"
        lines.append(f"| {row['method']} | {row['build_s']:.1f} | {row['search_s']:.2f} | "
                     f"{1000 * row['search_s'] / queries:.2f} | {peak} | {added} | {row['recall_mean']:.4f} | "
                     f"{row['recall_min']:.1f} | {row['identical']}/{queries} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--clusters", type=int, default=None, help="default: one per 20 passages (5 per topic)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated, of {', '.join(METHODS)}")
    parser.add_argument("--threads", type=int, default=None, help="FAISS/BLAS threads (default: theirs)")
    args = parser.parse_args()
    names = [name.strip() for name in args.methods.split(",") if name.strip()]
    unknown = [name for name in names if name not in METHODS]
    if unknown:
        parser.error(f"unknown method(s) {', '.join(unknown)}; known: {', '.join(METHODS)}")
    names = ["exact"] + [name for name in names if name != "exact"]  # exact first: the reference
    if args.threads:
        import faiss

        faiss.omp_set_num_threads(args.threads)
    clusters = args.clusters or max(1, args.passages // 20)
    started = time.perf_counter()
    passages, centers = synthetic(args.passages, args.dim, clusters, args.seed)
    queries, _ = synthetic(args.queries, args.dim, clusters, args.seed + 1000, centers)
    print(f"{args.passages:,} passages x {args.dim} float32 ({passages.nbytes / 2**30:.2f} GiB), {clusters} clusters, "
          f"{args.queries} queries, top {K}; generated in {time.perf_counter() - started:.1f} s; "
          f"{os.cpu_count()} CPUs")
    rows: list[dict[str, Any]] = []
    reference = None
    for name in names:
        row = rows_for(name, passages, queries, reference)
        if reference is None:
            reference = row["indices"]
        rows.append(row)
        print(f"  {name}: build {row['build_s']:.1f} s, search {row['search_s']:.2f} s, "
              f"recall@10 {row['recall_mean']:.4f}; {row['info']}", flush=True)
    print()
    print(table(rows, args.queries))


if __name__ == "__main__":
    main()
