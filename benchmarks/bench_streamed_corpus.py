"""The driver's memory with a corpus held in memory against one kept on disk (what the Ray engine loads).

A synthetic BEIR folder of ``--passages`` passages (ids like MS MARCO's, ~60-word texts,
every tenth with a title) is loaded in a fresh process per way, and each process reports:

- ``load``: seconds and peak resident set (RSS) to load the dataset (``load_dataset``: the
  in-memory dict, or ``stream_corpus=True``: a FileCorpus holding ids and offsets);
- ``fingerprint``: seconds for the dataset fingerprint (every passage read, in id order);
- ``lookups``: random ``corpus[doc]`` reads per second (what a report's snippets do);
- ``pass``: seconds for one pass over ``corpus.values()`` (what BM25 indexing reads);
- the peak RSS after all of it, and the RSS of the same process with the imports only.

Both ways must give the same fingerprint (checked). Run:

    nice -n 5 python benchmarks/bench_streamed_corpus.py [--passages 1000000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

WORDS = ["ocean", "salt", "water", "wave", "tide", "current", "reef", "shelf", "trench", "abyss", "coral", "kelp", "plankton", "whale", "current", "basin", "storm", "surge", "estuary", "delta", "lagoon", "atoll", "island", "coast", "harbour", "sediment", "mineral", "pressure", "depth", "light"]


def write_collection(folder: Path, passages: int, seed: int = 13) -> None:
    """A BEIR folder: corpus.jsonl (``passages`` lines), 1,000 queries, two judgements each."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    ids = [f"msmarco_passage_{n // 100_000:02d}_{rng.randrange(10**9):09d}{n}" for n in range(passages)]
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as handle:
        for n, doc in enumerate(ids):
            text = " ".join(rng.choice(WORDS) for _ in range(55 + n % 11))
            record = {"_id": doc, "title": rng.choice(WORDS) if n % 10 == 0 else "", "text": text}
            handle.write(json.dumps(record) + "\n")
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as handle:
        for q in range(1000):
            handle.write(json.dumps({"_id": f"q{q}", "text": " ".join(rng.choice(WORDS) for _ in range(4))}) + "\n")
    (folder / "qrels").mkdir(exist_ok=True)
    with open(folder / "qrels" / "test.tsv", "w", encoding="utf-8") as handle:
        handle.write("query-id\tcorpus-id\tscore\n")
        for q in range(1000):
            for doc in rng.sample(ids, 2):
                handle.write(f"q{q}\t{doc}\t1\n")


def measure(folder: Path, stream: bool) -> dict:
    """One way, in this process: times and peak RSS (run in a fresh process per way)."""
    from rag_eval._data.datasets import load_dataset

    imports_mib = _peak_mib()
    started = time.perf_counter()
    dataset = load_dataset({"path": str(folder)}, stream_corpus=stream)
    load_s = time.perf_counter() - started
    load_mib = _peak_mib()
    started = time.perf_counter()
    fingerprint = dataset.fingerprint
    fingerprint_s = time.perf_counter() - started
    ids = list(dataset.corpus)
    picks = random.Random(7).sample(ids, min(20_000, len(ids)))
    started = time.perf_counter()
    for doc in picks:
        dataset.corpus[doc]["text"]
    lookups_per_s = len(picks) / (time.perf_counter() - started)
    started = time.perf_counter()
    characters = sum(len(passage["text"]) for passage in dataset.corpus.values())
    pass_s = time.perf_counter() - started
    return {
        "way": "on disk (FileCorpus)" if stream else "in memory (dict)",
        "passages": len(dataset.corpus),
        "load_s": round(load_s, 2),
        "load_peak_mib": round(load_mib),
        "imports_mib": round(imports_mib),
        "fingerprint_s": round(fingerprint_s, 2),
        "lookups_per_s": round(lookups_per_s),
        "pass_s": round(pass_s, 2),
        "peak_mib": round(_peak_mib()),
        "fingerprint": fingerprint,
        "characters": characters,
    }


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, help="folder for the collection (kept; reused when it exists)")
    parser.add_argument("--measure", choices=["memory", "disk"], help=argparse.SUPPRESS)  # the child process
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.folder, args.measure == "disk")))
        return
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch) / "collection"
        if not (folder / "corpus.jsonl").exists():
            started = time.perf_counter()
            write_collection(folder, args.passages)
            print(f"wrote {args.passages:,} passages in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        size = (folder / "corpus.jsonl").stat().st_size
        print(f"corpus.jsonl: {size / 2**20:,.0f} MiB, {args.passages:,} passages")
        rows = []
        for way in ("memory", "disk"):
            command = [sys.executable, __file__, "--measure", way, "--folder", str(folder)]
            rows.append(json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout))
        assert rows[0]["fingerprint"] == rows[1]["fingerprint"] and rows[0]["characters"] == rows[1]["characters"]
        print("| corpus | load s | peak RSS after load MiB | fingerprint s | random reads/s | one pass s | peak RSS MiB |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for row in rows:
            print(f"| {row['way']} | {row['load_s']} | {row['load_peak_mib']:,} | {row['fingerprint_s']} | "
                  f"{row['lookups_per_s']:,} | {row['pass_s']} | {row['peak_mib']:,} |")
        print(f"imports alone: {rows[0]['imports_mib']} MiB RSS; fingerprints equal: {rows[0]['fingerprint']}")


if __name__ == "__main__":
    main()
