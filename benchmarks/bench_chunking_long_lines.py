"""Time to chunk one-line text (no line breaks, no sentence ends) against its size, for each built-in method.

    python benchmarks/bench_chunking_long_lines.py                       # 1, 2, 4, 8 MB; word tokens
    python benchmarks/bench_chunking_long_lines.py --sizes 1 2 4 8 16    # other sizes (MB of text)
    python benchmarks/bench_chunking_long_lines.py --before              # semantic-text-splitter on the whole text
    python benchmarks/bench_chunking_long_lines.py --limit 120           # give up on a cell after 120 s

Text extracted from PDF or HTML often has no line breaks and few sentence ends: the splitting
library rag_eval used before (semantic-text-splitter) then finds no boundary above words, and
its cost grows with the square of the text's length (issue 20, item 7: 2 MB took 8.9 s, 50 MB
never finished). rag_eval's own splitter (rag_eval._models.chunking.packing) looks at the text
up to each chunk's end only; ``--before`` runs the library instead, to measure what it replaced
(benchmarks/bench_chunking_vs_libraries.py compares other libraries as well).

The text is seeded (the same every run): words of 2 to 9 letters, a comma now and then, no
period and no line break. Each cell is the seconds of one ``Chunker.chunk({"doc": text})``
(offsets checked, as in a run), run in a child process so that a cell over ``--limit`` is
stopped and shown as "> limit". The last column divides the largest size's time by the
smallest's: 8 for 1 -> 8 MB is linear, 64 quadratic.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import time

CHUNKERS: dict[str, dict] = {
    "fixed 400/200": {"method": "fixed", "size": 400, "overlap": 200},
    "recursive 400/200": {"method": "recursive", "size": 400, "overlap": 200},
    "sentences 400/0": {"method": "sentences", "size": 400},
    "markdown 800": {"method": "markdown", "size": 800},
}
MB = 1_000_000


def one_line_text(size: int, seed: int = 0) -> str:
    """``size`` characters of seeded words, with commas but no sentence end and no line break."""
    rng = random.Random(seed)
    letters = "etaoinshrdlucmfwypvbgkjqxz"
    vocabulary = ["".join(rng.choices(letters, k=rng.randint(2, 9))) for _ in range(5000)]
    words, length = [], 0
    while length < size:
        word = rng.choice(vocabulary) + ("," if rng.random() < 0.08 else "")
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:size]


def _cell(label: str, megabytes: float, before: bool, tokenizer: str) -> dict:
    """Run in the child: chunk the text once and report seconds and chunks."""
    from rag_eval._models.chunking import build_chunker

    spec = {**CHUNKERS[label], "tokenizer": tokenizer}
    text = one_line_text(int(megabytes * MB))
    if before and spec["method"] != "fixed":
        from bench_chunking_vs_libraries import Counter, _before

        chunk = _before(spec["method"], spec["size"], spec.get("overlap", 0), Counter(tokenizer))
        started = time.perf_counter()
        found = chunk({"doc": text})
        return {"seconds": time.perf_counter() - started, "chunks": len(found)}
    chunker = build_chunker(label, spec)
    started = time.perf_counter()
    chunks = chunker.chunk({"doc": text})
    return {"seconds": time.perf_counter() - started, "chunks": len(chunks)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1, 2, 4, 8], help="MB of one-line text")
    parser.add_argument("--limit", type=float, default=300, help="seconds before a cell is given up")
    parser.add_argument("--before", action="store_true", help="semantic-text-splitter on the whole text (the old path)")
    parser.add_argument("--tokenizer", default="words", help="'words' or a Hugging Face tokenizer name/folder")
    parser.add_argument("--cell", nargs=2, metavar=("CHUNKER", "MB"), help=argparse.SUPPRESS)  # the child's job
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.cell:
        print(json.dumps(_cell(args.cell[0], float(args.cell[1]), args.before, args.tokenizer)))
        return

    path = "semantic-text-splitter on the whole text (before)" if args.before else "rag_eval's splitter"
    print(f"one-line text, {path}; tokenizer {args.tokenizer}; limit {args.limit:g} s a cell; "
          f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs")
    print()
    sizes = args.sizes
    print("| chunker | " + " | ".join(f"{size:g} MB" for size in sizes) + f" | {sizes[-1]:g} MB / {sizes[0]:g} MB |")
    print("|---|" + "---:|" * (len(sizes) + 1))
    for label in CHUNKERS:
        cells, seconds = [], []
        for size in sizes:
            command = [sys.executable, __file__, "--cell", label, str(size), "--tokenizer", args.tokenizer]
            if args.before:
                command.append("--before")
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=args.limit, check=True)
            except subprocess.TimeoutExpired:
                cells.append(f"> {args.limit:g}")
                seconds.append(None)
                continue
            result = json.loads(done.stdout.strip().splitlines()[-1])
            seconds.append(result["seconds"])
            cells.append(f"{result['seconds']:.2f}")
        first, last = seconds[0], seconds[-1]
        ratio = f"{last / first:.1f}" if first and last else "–"
        print(f"| {label} | " + " | ".join(cells) + f" | {ratio} |", flush=True)


if __name__ == "__main__":
    main()
