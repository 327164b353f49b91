"""Ingest rate and query latency of each vector database, side by side, with the harness's own time per query.

For each dataset (Cranfield: 1,400 passages, 225 queries; SciFact: 5,183 abstracts, 300 queries) one config
runs the built-in exact `dense` retriever and the same model through pgvector (embedded server), Qdrant (local
mode on disk), LanceDB and Chroma, in managed mode, with top_k 100. Before the run `rag-eval clean` removes the
managed collections, so every database is filled again (ingest measured) from the embedding cache (encoding
is not measured: the first run of the script encodes once). Numbers are read from the results files:
`database.ingest_rows_per_s`, `latency` (p50/p95 per query, queries per second of backend time, the harness's
own time per query, and that time's share of the backend time).

    python benchmarks/bench_integrations.py [--datasets cranfield scifact] [--repeat 2]

Needs ../shared/datasets and the integrations extra (scripts/setup.sh installs it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "datasets"
DATASETS = {
    "cranfield": {"format": "cranfield", "path": str(SHARED / "cranfield"), "grade_map": {1: 4, 2: 3, 3: 2, 4: 1, -1: 0}},
    "scifact": {"format": "beir", "path": str(SHARED / "scifact"), "split": "test"},
}
MODEL = "all-MiniLM-L6-v2"
DATABASES = {
    "pgvector": {"adapter": "pgvector", "params": {"model": MODEL, "index": {"kind": "exact"}}},
    "pgvector-hnsw": {"adapter": "pgvector", "params": {"model": MODEL, "index": {"kind": "hnsw"}}},
    "qdrant": {"adapter": "qdrant", "params": {"model": MODEL, "index": {"kind": "exact"}}},
    "lancedb": {"adapter": "lancedb", "params": {"model": MODEL, "index": {"kind": "exact"}}},
    "chroma": {"adapter": "chroma", "params": {"model": MODEL}},
}


def config_for(name: str, cache: Path, folder: Path) -> Path:
    """A config of the dense retriever and every database on dataset ``name``."""
    retrievers = [{"label": "dense", "adapter": "dense", "params": {"model": MODEL}}]
    retrievers += [{"label": label, **spec} for label, spec in DATABASES.items()]
    config = {
        "name": f"bench-integrations-{name}", "dataset": DATASETS[name], "retrievers": retrievers, "top_k": 100,
        "metrics": ["ndcg@10"], "cache_dir": str(cache), "output": str(folder / "out"), "reuse_rankings": False,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def rag_eval(*args: str) -> None:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    subprocess.run([str(REPO / ".venv" / "bin" / "rag-eval"), *args], check=True, env=env, stdout=subprocess.DEVNULL)


def measure(name: str, cache: Path) -> dict[str, dict]:
    """One clean + run of dataset ``name``: per retriever its database and latency records."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        config = config_for(name, cache, folder)
        rag_eval("clean", str(config))
        rag_eval("run", str(config), "--no-progress")
        rows = {}
        for label in ["dense", *DATABASES]:
            data = json.loads((folder / "out" / f"{label}.json").read_text(encoding="utf-8"))
            description = data["retriever"]["description"]
            queries = data["results"]["num_queries"]
            rows[label] = {
                "database": description.get("database", {}), "latency": description.get("latency", {}),
                "search_ms_per_query": data["timings"]["search_s"] * 1000 / max(queries, 1),
                "ndcg@10": data["results"]["aggregate"]["ndcg@10"],
            }
        return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--repeat", type=int, default=2, help="runs per dataset (the table gives each run's numbers)")
    args = parser.parse_args()
    cache = REPO / "benchmarks" / ".data" / "integrations-cache"
    print("| dataset | retriever | ndcg@10 | ingest (rows/s) | p50 / p95 (ms) | QPS (backend) | search, whole (ms / query) "
          "| harness (ms / query) | harness / backend |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.datasets:
        runs = [measure(name, cache) for _ in range(args.repeat)]
        for label in runs[0]:
            cells = [_cells(run[label]) for run in runs]
            joined = [" ; ".join(values) for values in zip(*cells)]
            print(f"| {name} | {label} | {runs[0][label]['ndcg@10']:.4f} | " + " | ".join(joined) + " |")
        sys.stdout.flush()


def _cells(row: dict) -> list[str]:
    database, latency = row["database"], row["latency"]
    ingest = database.get("ingest_rows_per_s")
    return [
        f"{ingest:,.0f}" if ingest else "–",
        f"{latency['p50_ms']:.2f} / {latency['p95_ms']:.2f}" if latency else "–",
        f"{latency['qps']:,.0f}" if latency.get("qps") else "–",
        f"{row['search_ms_per_query']:.2f}",
        f"{latency['harness_ms_per_query']:.3f}" if latency else "–",
        f"{latency['harness_share']:.1%}" if latency.get("harness_share") is not None else "–",
    ]


if __name__ == "__main__":
    main()
