"""Time to chunk the chroma_chunking corpus (1.4 MB, 5 markdown files) with each built-in method.

    python benchmarks/bench_chunking.py                                  # word tokens (the default)
    python benchmarks/bench_chunking.py --tokenizer all-MiniLM-L6-v2     # the dense model's tokenizer
    python benchmarks/bench_chunking.py --repeats 3                      # best of 3 per chunker

Each row: one ``rag_eval.chunking`` chunker built from a config entry, its number of chunks,
their mean length in characters and in tokens (of the chunker's tokenizer), the largest
chunk in tokens, and the seconds ``Chunker.chunk(documents)`` took (best of --repeats;
offsets are checked inside that call, as in a run). Building the chunker (loading a
tokenizer) is not timed. Needs ../shared/datasets (or RAG_EVAL_SHARED_DATASETS).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

from rag_eval._models.chunking import build_chunker

REPO = Path(__file__).resolve().parents[1]
CORPORA = Path(os.environ.get("RAG_EVAL_SHARED_DATASETS", REPO.parent / "shared" / "datasets")) / (
    "chroma_chunking/corpora"
)

CHUNKERS: dict[str, dict] = {
    "fixed 200/0": {"method": "fixed", "size": 200},
    "fixed 400/200": {"method": "fixed", "size": 400, "overlap": 200},
    "recursive 400/200": {"method": "recursive", "size": 400, "overlap": 200},
    "recursive 800/400": {"method": "recursive", "size": 800, "overlap": 400},
    "sentences 400/0": {"method": "sentences", "size": 400},
    "markdown (sections, split to 800)": {"method": "markdown", "size": 800},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", default="words", help="'words' or a Hugging Face tokenizer name/folder")
    parser.add_argument("--repeats", type=int, default=1, help="time each chunker this many times, keep the best")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing is downloaded

    documents = {path.name: path.read_text(encoding="utf-8") for path in sorted(CORPORA.glob("*.md"))}
    if not documents:
        raise SystemExit(f"no .md files in {CORPORA}; set RAG_EVAL_SHARED_DATASETS")
    chars = sum(len(text) for text in documents.values())
    print(
        f"chroma_chunking corpus: {len(documents)} documents, {chars:,} characters; tokenizer {args.tokenizer}; "
        f"best of {args.repeats}; Python {platform.python_version()} on {platform.machine()}"
    )
    print()
    print("| chunker | chunks | mean chars | mean tokens | max tokens | seconds |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, spec in CHUNKERS.items():
        chunker = build_chunker(label, {**spec, "tokenizer": args.tokenizer})
        best = float("inf")
        for _ in range(max(1, args.repeats)):
            started = time.perf_counter()
            chunks = chunker.chunk(documents)
            best = min(best, time.perf_counter() - started)
        summary = chunker.summarize(chunks)
        print(
            f"| {label} | {summary['chunks']:,} | {summary['mean_chars']:,.0f} | {summary['mean_tokens']:,.1f} | "
            f"{summary['max_tokens']:,} | {best:.2f} |"
        )


if __name__ == "__main__":
    main()
