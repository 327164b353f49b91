"""Dense encoding on one machine with a GPU: passages/s and nDCG@10 per device, precision and batch size.

On SciFact (5,183 abstracts, 300 test queries) it times rag_eval's own encoders
(:func:`rag_eval._models.embeddings.loading.load_encoder`, what ``adapter: dense`` runs):

- GPU (``device: cuda``): fp32 and fp16 (``precision: fp16``) at several batch sizes; each
  setting encodes the whole corpus ``--rounds`` times after a warm-up (median kept), then
  the queries; exact search and nDCG@10 with rag_eval's ``evaluate()``; the agreement of
  its embeddings with GPU fp32's (max abs difference, min cosine); peak GPU memory. Rows
  marked ``encode()`` use sentence-transformers' own ``encode`` (tokenising on one thread
  between batches) instead of rag_eval's pipeline (tokenising on CPU threads ahead of the
  GPU), for comparison.
- Steady state: ``--scale N`` unique passages (SciFact abstracts, each made distinct by a
  numbered suffix) encoded in fp16 and fp32 at the largest batch: the figure the scaling
  plan in docs/scale.md multiplies out.
- The machine's CPUs: torch fp32 and ONNX int8 with every core on ``--cpu-subset``
  abstracts (the figure for a CPU node), and torch fp32 on the whole corpus for the
  nDCG@10 a CPU gives with the same weights.

    python benchmarks/bench_gpu.py --model /path/to/all-MiniLM-L6-v2 --data ../shared/datasets/scifact

Stages past ``--deadline`` seconds are skipped and say so, so a time-boxed machine still
returns a table. Rows are printed as they finish and written to ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from bench_backends import load_scifact  # noqa: E402

from rag_eval import evaluate  # noqa: E402
from rag_eval._core.topk import top_k_blockwise  # noqa: E402
from rag_eval._models.cpus import available_cpus  # noqa: E402
from rag_eval._models.embeddings.loading import load_encoder  # noqa: E402
from rag_eval._models.embeddings.options import EncoderOptions  # noqa: E402
from rag_eval._models.files import ResolvedModel, resolve_model  # noqa: E402

# (precision, batch size, rag_eval's pipeline (True) or sentence-transformers' encode() (False))
GPU_SETTINGS = [("fp32", 256, True), ("fp16", 256, True), ("fp16", 1024, True), ("fp16", 256, False),
                ("fp32", 256, False)]


def ndcg_at_10(vectors: np.ndarray, query_vectors: np.ndarray, doc_ids: list[str], query_ids: list[str],
               qrels: dict[str, dict[str, int]]) -> float:
    """nDCG@10 of exact cosine search (rag_eval's blockwise top k and ranking rule, its evaluate())."""
    indices, scores = top_k_blockwise(query_vectors.astype(np.float32), vectors.astype(np.float32), 10)
    run = {
        q: {doc_ids[i]: float(s) for i, s in zip(indices[r].tolist(), scores[r].tolist())}
        for r, q in enumerate(query_ids)
    }
    return float(evaluate(qrels, run, ["ndcg@10"]).aggregate["ndcg@10"])


def encode_timed(encoder: Any, texts: list[str], batch_size: int, rounds: int) -> tuple[np.ndarray, float]:
    """(embeddings, median wall seconds over ``rounds``), CUDA work finished inside each timing."""
    import torch

    walls = []
    vectors = np.empty(0)
    for _ in range(rounds):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        started = time.perf_counter()
        vectors = encoder.encode(texts, batch_size=batch_size, normalize=True)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        walls.append(time.perf_counter() - started)
    return vectors, float(np.median(walls))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "datasets" / "scifact")
    parser.add_argument("--model", default="all-MiniLM-L6-v2", help="model name or local folder")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scale", type=int, default=100_000, help="unique passages for the steady-state rows")
    parser.add_argument("--cpu-subset", type=int, default=2000, help="abstracts timed per CPU row")
    parser.add_argument("--cpu-rows", nargs="*", default=["torch", "int8", "onnx"], help="CPU rows to run")
    parser.add_argument("--deadline", type=float, default=480.0, help="seconds after which stages are skipped")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    start = time.perf_counter()

    import torch

    corpus, queries, qrels = load_scifact(args.data)
    doc_ids = sorted(corpus)
    passages = [corpus[d] for d in doc_ids]
    query_ids = sorted(queries)
    query_texts = [queries[q] for q in query_ids]
    path = Path(args.model)
    model = ResolvedModel(args.model, path, "local") if path.is_dir() else resolve_model(args.model, "bench")
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    print(f"GPU {gpu}; CPUs {available_cpus()}; torch {torch.__version__}; SciFact {len(passages)} abstracts, "
          f"{len(query_ids)} queries", flush=True)
    rows: list[dict[str, Any]] = []

    def emit(row: dict[str, Any]) -> None:
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1))

    def time_left(stage: str) -> bool:
        if time.perf_counter() - start < args.deadline:
            return True
        print(f"skipped (deadline {args.deadline:.0f} s): {stage}", flush=True)
        return False

    reference: np.ndarray | None = None
    if gpu is not None:
        for precision, batch, pipelined in GPU_SETTINGS:
            if not time_left(f"cuda {precision} batch {batch}"):
                break
            encoder = load_encoder(model, "cuda", EncoderOptions(precision=precision), None, None, "bench")
            if not pipelined:
                encoder._constant_features = False  # sentence-transformers' encode()
            try:
                encoder.encode(passages[:1024], batch_size=batch)  # warm-up: kernels, allocator, threads
                torch.cuda.reset_peak_memory_stats()
                vectors, wall = encode_timed(encoder, passages, batch, args.rounds)
            except Exception as error:  # one failing setting must not cost the other rows
                emit({"device": "cuda", "precision": precision, "batch_size": batch, "pipelined": pipelined,
                      "error": f"{type(error).__name__}: {error}"})
                continue
            query_vectors = encoder.encode(query_texts, batch_size=batch)
            row: dict[str, Any] = {
                "device": "cuda", "gpu": gpu, "precision": precision, "batch_size": batch,
                "encoder": "rag_eval pipeline" if encoder.pipeline_ready() else "encode()",
                "passages": len(passages), "passages_per_s": len(passages) / wall,
                "peak_gpu_mib": torch.cuda.max_memory_allocated() / 2**20,
                "ndcg10": ndcg_at_10(vectors, query_vectors, doc_ids, query_ids, qrels),
            }
            if reference is None:  # the first row, GPU fp32
                reference = vectors
            cosines = (vectors.astype(np.float64) * reference).sum(axis=1)
            row.update(max_abs_vs_gpu_fp32=float(np.abs(vectors - reference).max()), min_cos_vs_gpu_fp32=float(cosines.min()))
            emit(row)
            del encoder
            torch.cuda.empty_cache()

        scaled = [f"{passages[i % len(passages)]} [{i}]" for i in range(args.scale)]
        for precision in ("fp16", "fp32"):
            if not time_left(f"steady state {precision}"):
                break
            encoder = load_encoder(model, "cuda", EncoderOptions(precision=precision), None, None, "bench")
            encoder.encode(scaled[:1024], batch_size=1024)
            torch.cuda.reset_peak_memory_stats()
            _, wall = encode_timed(encoder, scaled, 1024, 1)
            emit({"device": "cuda", "gpu": gpu, "precision": precision, "batch_size": 1024, "passages": len(scaled),
                  "encoder": "rag_eval pipeline" if encoder.pipeline_ready() else "encode()",
                  "passages_per_s": len(scaled) / wall, "peak_gpu_mib": torch.cuda.max_memory_allocated() / 2**20,
                  "stage": "steady state"})
            del encoder
            torch.cuda.empty_cache()

    cpus = available_cpus()
    subset = [corpus[d] for d in list(corpus)[: args.cpu_subset]]  # file order, as bench_backends.py
    cpu_reference: np.ndarray | None = None
    with tempfile.TemporaryDirectory(prefix="bench_gpu_") as export_dir:
        cpu_rows = {"torch": ("torch", "none", 64), "int8": ("onnx", "int8", 1), "onnx": ("onnx", "none", 1)}
        for backend, quantize, batch in (cpu_rows[name] for name in args.cpu_rows):
            if not time_left(f"cpu {backend} {quantize}"):
                break
            options = EncoderOptions(backend=backend, quantize=quantize)
            loaded = time.perf_counter()
            encoder = load_encoder(model, "cpu", options, Path(export_dir), None, "bench")
            load_s = time.perf_counter() - loaded
            encoder.encode(subset[:64], batch_size=batch)
            _, wall = encode_timed(encoder, subset, batch, 1)
            row = {"device": "cpu", "cpus": cpus, "backend": backend, "quantize": quantize, "batch_size": batch,
                   "passages": len(subset), "passages_per_s": len(subset) / wall, "load_s": load_s}
            if backend == "torch" and time_left("cpu torch whole corpus (nDCG)"):
                vectors, wall = encode_timed(encoder, passages, batch, 1)
                cpu_reference = vectors
                row.update(corpus_passages_per_s=len(passages) / wall, ndcg10=ndcg_at_10(
                    vectors, encoder.encode(query_texts, batch_size=batch), doc_ids, query_ids, qrels))
                if reference is not None:
                    cosines = (vectors.astype(np.float64) * reference).sum(axis=1)
                    row.update(max_abs_vs_gpu_fp32=float(np.abs(vectors - reference).max()),
                               min_cos_vs_gpu_fp32=float(cosines.min()))
            emit(row)
            del encoder
    del cpu_reference
    print(f"done in {time.perf_counter() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
