"""rag_eval's recursive, sentences and markdown chunking against chunking libraries, same settings, exact offsets.

    python benchmarks/bench_chunking_vs_libraries.py                              # MiniLM tokens: corpus, then growth
    python benchmarks/bench_chunking_vs_libraries.py --tokenizer words            # rag_eval's word tokens
    python benchmarks/bench_chunking_vs_libraries.py --only corpus --rounds 5     # the corpus table only
    python benchmarks/bench_chunking_vs_libraries.py --only growth --base 0.25    # one-line text of 0.25, 1, 4 MB

Every tool chunks the same documents with the same tokenizer (its count never includes special
tokens), the same size and the same overlap, and must give each chunk's offsets:

- rag_eval: ``build_chunker(...).chunk(documents)`` (offsets checked inside, as in a run);
- semantic-text-splitter (what rag_eval used before: "before"): ``chunk_indices`` gives offsets;
  ``sentences`` is its TextSplitter on the text with line breaks as U+2029, ``markdown`` its
  MarkdownSplitter on each heading section, as rag_eval did;
- semchunk: ``chunkerify(count, size, max_token_chars=...)(text, offsets=True, overlap=...)``
  (its fastest exact setting: a fresh memoized counter each call, so no round reuses a cache);
- chonkie: RecursiveChunker (no overlap: compared at 400/0) and SentenceChunker; their
  ``start_index`` are used as given, then checked;
- langchain-text-splitters: RecursiveCharacterTextSplitter and MarkdownTextSplitter with the
  count as ``length_function``. It gives no exact offsets (``add_start_index`` is wrong with
  overlap), so each chunk is located with ``str.find`` from the previous chunk's start + 1,
  the cheapest correct way for chunks in order; that time is counted, as a user pays it.

Timing: the tools of a setting run interleaved, ``--rounds`` times (the order rotated each round),
on 2 shared CPU cores; each cell is the min and the median of its rounds. "bad" counts chunks
whose offsets do not give their text; "max" is the largest chunk in tokens counted on its own.
The growth table chunks one line of seeded words and commas (no line break, no sentence end;
benchmarks/bench_chunking_long_lines.py) of ``--base`` x 1, 4 and 16 MB, each cell in a child
process stopped after ``--limit`` seconds (a tool over it is not run on larger sizes); the last
column divides the 16x time by the 1x time: 16 is linear, 256 quadratic.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CORPORA = Path(os.environ.get("RAG_EVAL_SHARED_DATASETS", REPO.parent / "shared" / "datasets")) / (
    "chroma_chunking/corpora"
)
sys.path.insert(0, str(REPO / "benchmarks"))

# setting: (rag_eval spec, size, overlap, other tools)
SETTINGS: dict[str, tuple[dict[str, Any], int, int, list[str]]] = {
    "recursive 400/200": (
        {"method": "recursive", "size": 400, "overlap": 200},
        400, 200, ["semantic-text-splitter", "semchunk", "langchain"],
    ),
    "recursive 400/0": (
        {"method": "recursive", "size": 400}, 400, 0, ["semantic-text-splitter", "semchunk", "chonkie", "langchain"]
    ),
    "sentences 400/0": ({"method": "sentences", "size": 400}, 400, 0, ["semantic-text-splitter", "chonkie"]),
    "markdown 800": ({"method": "markdown", "size": 800}, 800, 0, ["semantic-text-splitter", "langchain"]),
}
Spans = list[tuple[str, int, int, str]]  # (doc, start, end, the chunk text the tool returned)
Tool = Callable[[dict[str, str]], Spans]


class Counter:
    """The tokenizer every tool counts with (no special tokens), and what each library is given."""

    def __init__(self, name: str) -> None:
        self.name = name
        if name == "words":
            from rag_eval._core.tokens import count_words

            self.backend = None
            self.count: Callable[[str], int] = count_words
            self.max_token_chars = None
        else:
            from rag_eval._models.chunking.tokenizers import HuggingFaceTokenizer, load_tokenizer

            tokenizer = load_tokenizer(name, "--tokenizer")
            assert isinstance(tokenizer, HuggingFaceTokenizer)
            backend = tokenizer.backend
            self.backend = backend
            self.count = lambda text: len(backend.encode(text, add_special_tokens=False).ids)
            self.max_token_chars = max(len(token) for token in backend.get_vocab())


def tool(name: str, setting: str, counter: Counter) -> Tool:
    """The function that chunks documents with ``name`` in ``setting`` and returns ``(doc, start, end)``."""
    spec, size, overlap, _ = SETTINGS[setting]
    method = spec["method"]
    if name == "rag_eval":
        from rag_eval._models.chunking import build_chunker

        chunker = build_chunker("bench", {**spec, "tokenizer": counter.name})
        return lambda docs: [(c.doc, c.start, c.end, c.text) for c in chunker.chunk(docs)]
    if name == "semantic-text-splitter":
        return _before(method, size, overlap, counter)
    if name == "semchunk":
        import semchunk

        def chunk_semchunk(docs: dict[str, str]) -> Spans:
            count = counter.count
            chunker = semchunk.chunkerify(lambda text: count(text), size, max_token_chars=counter.max_token_chars)
            out = []
            for doc, text in docs.items():
                pieces, offsets = chunker(text, offsets=True, overlap=overlap or None)
                out += [(doc, a, b, piece) for piece, (a, b) in zip(pieces, offsets, strict=True)]
            return out

        return chunk_semchunk
    if name == "chonkie":
        from chonkie import RecursiveChunker, SentenceChunker

        given: Any = counter.backend if counter.backend is not None else counter.count
        if method == "sentences":
            chonkie_chunker: Any = SentenceChunker(tokenizer=given, chunk_size=size, chunk_overlap=overlap)
        else:
            chonkie_chunker = RecursiveChunker(tokenizer=given, chunk_size=size)
        return lambda docs: [
            (doc, c.start_index, c.end_index, c.text) for doc, text in docs.items() for c in chonkie_chunker.chunk(text)
        ]
    if name == "langchain":
        from langchain_text_splitters import MarkdownTextSplitter, RecursiveCharacterTextSplitter

        cls = MarkdownTextSplitter if method == "markdown" else RecursiveCharacterTextSplitter
        splitter = cls(chunk_size=size, chunk_overlap=overlap, length_function=counter.count)

        def chunk_langchain(docs: dict[str, str]) -> Spans:
            out = []
            for doc, text in docs.items():
                start = -1
                for piece in splitter.split_text(text):
                    start = text.find(piece, start + 1)  # chunks come in order; each starts after the last
                    out.append((doc, start, start + len(piece), piece))
            return out

        return chunk_langchain
    raise ValueError(name)


def _before(method: str, size: int, overlap: int, counter: Counter) -> Tool:
    """semantic-text-splitter as rag_eval called it before (trimmed chunks, heading sections for markdown)."""
    from semantic_text_splitter import MarkdownSplitter, TextSplitter

    from rag_eval._models.chunking.sections import sections

    cls: Any = MarkdownSplitter if method == "markdown" else TextSplitter
    if counter.backend is not None:
        splitter = cls.from_huggingface_tokenizer(counter.backend, size, overlap=overlap, trim=True)
    else:
        splitter = cls.from_callback(counter.count, size, overlap=overlap, trim=True)
    paragraph = str.maketrans({"\n": "\u2029", "\r": "\u2029"})

    def spans_of(doc: str, text: str, shift: int, original: str) -> Spans:
        out = []
        for start, chunk in splitter.chunk_indices(text):
            stripped = chunk.strip()
            if stripped:
                lead = start + len(chunk) - len(chunk.lstrip())
                # the chunk of the original text (sentences split a stand-in with U+2029 for line breaks)
                out.append((doc, shift + lead, shift + lead + len(stripped), original[lead : lead + len(stripped)]))
        return out

    def chunk_before(docs: dict[str, str]) -> Spans:
        out = []
        for doc, text in docs.items():
            if method == "markdown":
                for a, b in sections(text):
                    out += spans_of(doc, text[a:b], a, text[a:b])
            else:
                out += spans_of(doc, text.translate(paragraph) if method == "sentences" else text, 0, text)
        return out

    return chunk_before


def check(spans: Spans, docs: dict[str, str], count: Callable[[str], int]) -> tuple[int, int, int]:
    """``(chunks, bad offsets, max tokens)``: a chunk is bad when its offsets do not give the text the tool returned."""
    bad, largest = 0, 0
    for doc, start, end, piece in spans:
        if start < 0 or docs[doc][start:end] != piece:
            bad += 1
        largest = max(largest, count(piece))
    return len(spans), bad, largest


def corpus(args: argparse.Namespace, counter: Counter) -> None:
    """The corpus table: every setting, its tools interleaved."""
    documents = {path.name: path.read_text(encoding="utf-8") for path in sorted(CORPORA.glob("*.md"))}
    if not documents:
        raise SystemExit(f"no .md files in {CORPORA}; set RAG_EVAL_SHARED_DATASETS")
    chars = sum(map(len, documents.values()))
    print(f"chroma_chunking corpus: {len(documents)} documents, {chars:,} characters; tokenizer {counter.name}; "
          f"{args.rounds} rounds interleaved")
    for setting, (_, _, _, others) in SETTINGS.items():
        names = ["rag_eval", *[o for o in others if o not in args.skip]]
        tools = {name: tool(name, setting, counter) for name in names}
        seconds: dict[str, list[float]] = {name: [] for name in names}
        found: dict[str, Spans] = {}
        for round_ in range(args.rounds):
            order = names[round_ % len(names):] + names[: round_ % len(names)]
            for name in order:
                started = time.perf_counter()
                found[name] = tools[name](documents)
                seconds[name].append(time.perf_counter() - started)
        reference = {span[:3] for span in found.get("semantic-text-splitter", [])}
        base = statistics.median(seconds["rag_eval"])
        print(f"\n{setting}  (load average {', '.join(f'{x:.2f}' for x in os.getloadavg())})\n")
        print("| tool | chunks | bad | max tokens | same chunks as before | min s | median s | median / rag_eval |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for name in names:
            chunks, bad, largest = check(found[name], documents, counter.count)
            mine = {span[:3] for span in found[name]}
            same = f"{len(reference & mine) / max(len(reference), 1):.1%}" if reference else "–"
            median = statistics.median(seconds[name])
            print(f"| {name} | {chunks:,} | {bad} | {largest} | {same} | {min(seconds[name]):.2f} | {median:.2f} | "
                  f"{median / base:.2f} |", flush=True)


def growth(args: argparse.Namespace, counter: Counter) -> None:
    """The growth table: one-line text of base x 1, 4, 16 MB, each cell in a child process."""
    sizes = [args.base, args.base * 4, args.base * 16]
    print(f"\none-line text (seeded words and commas); tokenizer {counter.name}; {args.growth_rounds} rounds "
          f"interleaved; limit {args.limit:g} s a cell")
    print("\n| setting | tool | " + " | ".join(f"{size:g} MB min / median" for size in sizes)
          + f" | {sizes[-1]:g} MB / {sizes[0]:g} MB |")
    print("|---|---|" + "---:|" * (len(sizes) + 1))
    for setting, (_, _, _, others) in SETTINGS.items():
        if setting == "recursive 400/0":
            continue  # one line: the same chunks as 400/200 without overlap
        names = ["rag_eval", *[o for o in others if o not in args.skip]]
        times: dict[tuple[str, float], list[float]] = {}
        over: set[str] = set()
        for size in sizes:
            for round_ in range(args.growth_rounds):
                for name in itertools.islice(itertools.cycle(names), round_, round_ + len(names)):
                    if name in over:
                        continue
                    command = [sys.executable, __file__, "--cell", name, setting, str(size), "--tokenizer", counter.name]
                    try:
                        done = subprocess.run(command, capture_output=True, text=True, timeout=args.limit, check=True)
                    except subprocess.TimeoutExpired:
                        over.add(name)
                        continue
                    times.setdefault((name, size), []).append(json.loads(done.stdout.splitlines()[-1])["seconds"])
        for name in names:
            cells = []
            for size in sizes:
                got = times.get((name, size))
                cells.append(f"{min(got):.2f} / {statistics.median(got):.2f}" if got else f"> {args.limit:g}")
            first, last = times.get((name, sizes[0])), times.get((name, sizes[-1]))
            ratio = f"{statistics.median(last) / statistics.median(first):.1f}" if first and last else "–"
            print(f"| {setting} | {name} | " + " | ".join(cells) + f" | {ratio} |", flush=True)
    print(f"\nload average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


def cell(name: str, setting: str, megabytes: float, counter: Counter) -> None:
    """In the child: chunk one line of ``megabytes`` once and print the seconds."""
    from bench_chunking_long_lines import one_line_text

    chunk = tool(name, setting, counter)
    text = one_line_text(int(megabytes * 1_000_000))
    started = time.perf_counter()
    spans = chunk({"doc": text})
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "chunks": len(spans)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", default="all-MiniLM-L6-v2", help="'words' or a Hugging Face tokenizer")
    parser.add_argument("--only", choices=["corpus", "growth"], help="one table only")
    parser.add_argument("--rounds", type=int, default=5, help="rounds on the corpus")
    parser.add_argument("--growth-rounds", type=int, default=3, help="rounds on each size of one-line text")
    parser.add_argument("--base", type=float, default=0.25, help="MB of the smallest one-line text")
    parser.add_argument("--limit", type=float, default=90, help="seconds before a growth cell is given up")
    parser.add_argument("--skip", nargs="*", default=[], help="tools to leave out (e.g. semantic-text-splitter)")
    parser.add_argument("--cell", nargs=3, metavar=("TOOL", "SETTING", "MB"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    warnings.filterwarnings("ignore")  # chonkie and langchain announce themselves
    counter = Counter(args.tokenizer)
    if args.cell:
        cell(args.cell[0], args.cell[1], float(args.cell[2]), counter)
        return
    print(f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs")
    if args.only != "growth":
        corpus(args, counter)
    if args.only != "corpus":
        growth(args, counter)


if __name__ == "__main__":
    main()
