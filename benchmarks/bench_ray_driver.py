"""The driver's peak memory in a whole `rag-eval run` on the Ray engine: corpus read by the workers, or sent from memory.

The same synthetic passages (``--passages``, ~60-word texts; bench_streamed_corpus.py's
generator) as two datasets: a BEIR folder (``corpus.jsonl``, which the Ray engine leaves on disk
for its workers to read) and a TREC dataset with a TSV corpus (which is read into the driver's
memory and sent to the workers as (id, text) pairs). Each is run by ``rag-eval run`` with one
dense retriever (a tiny random 2-layer BERT, 32 dimensions, built like the test suite's, so
that encoding is cheap and the driver's own memory shows), ``execution: {engine: ray, address:
local}``, top 10, no plots. Reported per way: the driver's peak RSS (the ``rag-eval`` process
alone; Ray's workers are other processes), wall time, and the run files compared (they must be
identical).

    nice -n 5 python benchmarks/bench_ray_driver.py [--passages 300000]
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
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "tests"))

from bench_streamed_corpus import write_collection  # noqa: E402


def tsv_copy(beir: Path, folder: Path) -> None:
    """The BEIR collection as a TREC dataset: qrels (4 columns), queries TSV, corpus TSV (title + text as one text)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(beir / "corpus.jsonl", encoding="utf-8") as source, open(folder / "corpus.tsv", "w", encoding="utf-8") as out:
        for line in source:
            record = json.loads(line)
            # A TSV passage has no title: the text the encoder receives is the same (title + " " + text).
            text = f"{record['title']} {record['text']}" if record["title"] else record["text"]
            out.write(f"{record['_id']}\t{text}\n")
    with open(beir / "queries.jsonl", encoding="utf-8") as source, open(folder / "queries.tsv", "w", encoding="utf-8") as out:
        for line in source:
            record = json.loads(line)
            out.write(f"{record['_id']}\t{record['text']}\n")
    with open(beir / "qrels" / "test.tsv", encoding="utf-8") as source, open(folder / "qrels.txt", "w", encoding="utf-8") as out:
        for line in list(source)[1:]:
            qid, doc, grade = line.split()
            out.write(f"{qid} 0 {doc} {grade}\n")


def config(path: Path, dataset: dict, model: Path, cache: Path) -> Path:
    """One dense retriever (the tiny model on the CPU) on the Ray engine, top 10."""
    from bench_gpu_paths import write_config

    params = {"model": str(model), "device": "cpu", "batch_size": 256, "show_progress": False}
    return write_config(path, dataset, params, cache, reuse_rankings=False, top_k=10,
                        execution={"engine": "ray", "address": "local", "batch_size": 4096})


def run_one(config_path: Path) -> dict:
    """``rag-eval run`` in a child process: its peak RSS (this wrapper waits for it alone) and wall time."""
    command = [sys.executable, "-c", (
        "import resource, subprocess, sys, time; t = time.perf_counter(); "
        f"code = subprocess.run([sys.executable, '-m', 'rag_eval.cli', 'run', {str(config_path)!r}, '--no-progress'],"
        " capture_output=True).returncode; "
        "print(code, time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(command, capture_output=True, text=True, env=env, check=True).stdout.split()
    return {"rc": int(out[0]), "wall_s": round(float(out[1]), 1), "driver_peak_mib": round(int(out[2]) / 1024)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=300_000)
    args = parser.parse_args()
    import _models

    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        model = work / "tiny-bi"
        shutil.copytree(_models.tiny_bi_encoder(), model)
        beir = work / "beir"
        started = time.perf_counter()
        write_collection(beir, args.passages)
        tsv_copy(beir, work / "trec")
        print(f"{args.passages:,} passages written in {time.perf_counter() - started:.0f} s; "
              f"corpus.jsonl {(beir / 'corpus.jsonl').stat().st_size / 2**20:,.0f} MiB", flush=True)
        ways = {
            "corpus.jsonl: read by the workers": {"format": "beir", "path": str(beir)},
            "corpus.tsv: read into the driver, sent as pairs": {
                "format": "trec", "qrels": str(work / "trec" / "qrels.txt"),
                "queries": str(work / "trec" / "queries.tsv"), "corpus": str(work / "trec" / "corpus.tsv")},
        }
        rows = []
        for n, (way, dataset) in enumerate(ways.items()):
            path = config(work / f"way{n}.yaml", dataset, model, work / f"cache{n}")
            row = {"way": way, **run_one(path)}
            rows.append(row)
            print(json.dumps(row), flush=True)
        same = (work / "way0_out" / "dense.run").read_bytes() == (work / "way1_out" / "dense.run").read_bytes()
        print("| corpus | driver peak RSS MiB | wall s |")
        print("|---|---:|---:|")
        for row in rows:
            print(f"| {row['way']} | {row['driver_peak_mib']:,} | {row['wall_s']} |")
        print(f"run files identical: {same}")


if __name__ == "__main__":
    main()
