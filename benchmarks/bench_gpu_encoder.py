"""Encoding on a GPU, every cell side by side: what the encoder reaches, and what limits it.

One fresh process per cell (``--cell``), all on the same corpora, each loading the model
itself (fp16 on CUDA, fp32 on a CPU):

- ``encode()``: sentence-transformers' ``SentenceTransformer.encode`` (batch 256), the baseline
  every other cell's embeddings are compared with (cosine, per passage).
- ``before``: rag_eval's encoder with the path it had before the Rust tokenizer: the transformers
  tokenizer on CPU threads ahead of the GPU (batch 1024).
- ``rust``: rag_eval's encoder as it runs now: the Rust tokenizer (``tokenizer.json``) on CPU
  threads, batches by length, pinned memory, copies on their own CUDA streams (batch 1024).
- ``forward``: the model's forward pass alone on tokens made beforehand and already in pinned
  memory, with the same copies: what the GPU can do when nothing waits for the CPU.
- ``tokenize``: the Rust tokenizer alone: rag_eval's feed (its threads, tokens to padded arrays,
  as the encoder gets them) and the library's ``encode_batch_fast`` with its own threads.
- ``ce-predict`` / ``ce-rust``: re-ranking, a cross-encoder of MiniLM's size (all-MiniLM-L6-v2's
  layers under a seeded random one-logit head: the speed of a real re-ranker of this shape, its
  scores meaningless) on 100 (query, abstract) pairs per test query: sentence-transformers'
  ``CrossEncoder.predict`` (batch 256) against rag_eval's scorer, the same Rust-tokenizer path as
  the encoder (batch 1024); scores compared pair by pair.
- ``startup``: what a fresh process pays before the first passage: importing torch, initialising
  CUDA, importing sentence-transformers, importing rag_eval.
- ``profile-scaled``: ``rag-eval run`` on the scaled corpus again (cold cache) under cProfile; the
  top of its profile is printed, and saved under ``--profile-dir`` when given.

Each encoder cell encodes SciFact (5,183 abstracts) once to warm up, then ``--rounds`` times
timed (median kept), the 300 test queries (nDCG@10 of exact search, rag_eval's ``evaluate()``),
then ``--scale`` distinct passages (SciFact's abstracts, then numbered copies) once, timed. The
rag_eval cells hand ``encode`` as many texts per call as the dense retriever does
(``texts_per_call``). Then ``rag-eval run`` on SciFact and on the ``--scale`` corpus (one
``adapter: dense`` retriever, cold cache): passages/s = passages / ``index_s``, which includes
loading the model. A markdown table ends the output; every row is also in ``--json``.

    python benchmarks/bench_gpu_encoder.py --prepare .dev/gpu     # here: the files to carry (~50 MiB)
    python benchmarks/bench_gpu_encoder.py --model .dev/gpu/all-MiniLM-L6-v2 --data .dev/gpu/scifact --json out.json
    python benchmarks/bench_gpu_encoder.py --device cpu --subset 300   # a smoke test without a GPU (scaled: 500)

No cell starts past ``--deadline`` seconds, and a cell still running ``--grace`` seconds after it
is killed with its process group: the whole run ends within deadline + grace (default 270 + 60 s)
plus the last table. ``--subset N``: 50 test queries, their judged abstracts and N others.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# The caller's setting, read before anything imported below sets a default: every cell runs with it.
CALLER_TOKENIZERS_PARALLELISM = os.environ.get("TOKENIZERS_PARALLELISM")

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from bench_gpu_paths import (  # noqa: E402
    child_error,
    prepare_data,
    rag_eval_env,
    rag_eval_run,
    run_child,
    scaled_copy,
    write_config,
)

# (cell, label, batch size)
CELLS = [
    ("encode()", "sentence-transformers encode()", 256),
    ("rust", "rag_eval encoder: Rust tokenizer on threads, pinned memory, copy streams (now)", 1024),
    ("forward", "model forward alone, tokens ready in pinned memory", 1024),
    ("tokenize", "Rust tokenizer alone", 1024),
    ("before", "rag_eval encoder: transformers tokenizer on threads (before)", 1024),
    ("ce-predict", "cross-encoder (MiniLM-sized): sentence-transformers CrossEncoder.predict()", 256),
    ("ce-rust", "cross-encoder (MiniLM-sized): rag_eval scorer, Rust tokenizer path", 1024),
    ("startup", "a fresh process: imports and CUDA initialisation", 0),
]
CE_PAIRS_PER_QUERY = 100
CE_MAX_LENGTH = 256
RUN_BATCH = 1024
# Most wanted first: a deadline cuts the end. encode() first, every cell's embeddings are compared with its.
DEFAULT_ORDER = ["encode()", "rust", "run-scaled", "forward", "tokenize", "run-scifact", "ce-predict", "ce-rust",
                 "startup", "profile-scaled", "before"]


# --------------------------------------------------------------------------- data


def read_passages(folder: Path) -> tuple[list[str], list[str], list[str], list[str], dict[str, dict[str, int]]]:
    """(doc ids sorted, their texts as the dense retriever reads them, query ids sorted, query texts, judgements)."""
    from bench_backends import load_scifact

    corpus, queries, qrels = load_scifact(folder)
    doc_ids, query_ids = sorted(corpus), sorted(queries)
    return doc_ids, [corpus[d] for d in doc_ids], query_ids, [queries[q] for q in query_ids], qrels


def scaled_texts(folder: Path) -> list[str]:
    """The passages of the scaled corpus (``scaled_copy``), title and text as the dense retriever joins them."""
    from rag_eval._data.datasets.model import passage_text

    with open(folder / "corpus.jsonl", encoding="utf-8") as handle:
        return [passage_text(json.loads(line)) for line in handle if line.strip()]


# --------------------------------------------------------------------------- one cell (a child process)


def worker(args: argparse.Namespace) -> None:
    """Run one cell and print ``RESULT <json>``; embeddings go to ``--workdir`` as .npy files."""
    if CALLER_TOKENIZERS_PARALLELISM is None:  # undo the default an imported benchmark module set
        os.environ.pop("TOKENIZERS_PARALLELISM", None)
    if args.cell == "startup":  # first: nothing heavy imported yet in this process
        print("RESULT " + json.dumps({"cell": "startup", **startup_cell()}), flush=True)
        return
    import torch
    from bench_gpu import ndcg_at_10

    cuda = args.device.startswith("cuda")
    doc_ids, passages, query_ids, query_texts, qrels = read_passages(args.data)
    scaled = scaled_texts(args.scaled)
    workdir = Path(args.workdir)
    batch = args.batch_size
    row: dict[str, Any] = {"cell": args.cell, "batch_size": batch, "passages": len(passages), "scaled": len(scaled),
                           "tokenizers_parallelism": os.environ.get("TOKENIZERS_PARALLELISM", "unset"),
                           "gpu": torch.cuda.get_device_name(0) if cuda else None, "torch": torch.__version__}

    def synced() -> float:
        if cuda:
            torch.cuda.synchronize()
        return time.perf_counter()

    started = time.perf_counter()
    if args.cell in ("ce-predict", "ce-rust"):
        row.update(cross_encoder_cell(args, passages, query_texts, batch, workdir))
        print("RESULT " + json.dumps(row), flush=True)
        return
    if args.cell == "tokenize":
        row.update(tokenize_cell(args, passages, scaled, batch))
        print("RESULT " + json.dumps(row), flush=True)
        return
    model, encode, describe = load_cell(args)
    row["load_s"] = time.perf_counter() - started
    row.update(describe)
    if args.cell == "forward":
        row.update(forward_cell(args, model, passages, scaled, batch, workdir))
        print("RESULT " + json.dumps(row), flush=True)
        return

    warm = synced()
    encode(passages, batch)
    row["warmup_s"] = synced() - warm
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    walls = []
    vectors = np.empty(0)
    for _ in range(args.rounds):
        begin = synced()
        vectors = encode(passages, batch)
        walls.append(synced() - begin)
    row.update(walls=walls, passages_per_s=len(passages) / float(np.median(walls)))
    row["ndcg10"] = ndcg_at_10(vectors, encode(query_texts, batch), doc_ids, query_ids, qrels)
    np.save(workdir / f"{args.cell}-scifact.npy", vectors)
    begin = synced()
    scaled_vectors = encode(scaled, batch)
    row["scaled_s"] = synced() - begin
    row["scaled_per_s"] = len(scaled) / row["scaled_s"]
    np.save(workdir / f"{args.cell}-scaled.npy", scaled_vectors)
    if cuda:
        row["peak_gpu_mib"] = torch.cuda.max_memory_allocated() / 2**20
    print("RESULT " + json.dumps(row), flush=True)


def load_cell(args: argparse.Namespace) -> tuple[Any, Any, dict[str, Any]]:
    """(the SentenceTransformer, ``encode(texts, batch) -> float32 rows``, what describes the path) for a cell."""
    from rag_eval._models.embeddings.loading import load_encoder
    from rag_eval._models.embeddings.options import EncoderOptions
    from rag_eval._models.files import ResolvedModel

    cuda = args.device.startswith("cuda")
    if args.cell in ("encode()", "forward"):
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(args.model), device=args.device)
        model.half() if args.precision == "fp16" else model.float()  # a model saved in fp16 loads in fp16

        def own(texts: list[str], batch: int) -> np.ndarray:
            array = model.encode(texts, batch_size=batch, normalize_embeddings=True, convert_to_numpy=True)
            return np.asarray(array, dtype=np.float32)

        return model, own, {"path": "SentenceTransformer.encode()"}

    options = EncoderOptions(precision=args.precision)
    encoder: Any = load_encoder(ResolvedModel(str(args.model), args.model, "local"), args.device, options, None, None,
                                "bench")
    if not encoder.pipeline_ready():
        raise SystemExit("the model's features differ from our tokenisation: no pipeline to measure")
    if args.cell == "before":  # the Rust path marked unusable for this model length: transformers' threads run
        encoder._rust, encoder._rust_length = False, encoder.model.max_seq_length
    elif encoder.fast_tokens() is None:
        raise SystemExit("the Rust tokenizer path is not usable for this model")
    per_call = encoder.texts_per_call(args.batch_size, 1024)

    def ours(texts: list[str], batch: int) -> np.ndarray:
        # As the dense retriever calls it: texts_per_call texts at a time. On a CPU, encode() would run
        # sentence-transformers' loop: the GPU's path is called directly so that the smoke test runs it.
        call = encoder.encode if cuda else (lambda part, batch_size: encoder._encode_pipelined(part, batch_size, True,
                                                                                                   False))
        parts = [call(texts[start : start + per_call], batch_size=batch) for start in range(0, len(texts), per_call)]
        return np.concatenate(parts) if parts else np.empty((0, 0), dtype=np.float32)

    path = encoder.tokenization() if cuda else ({"path": "rust"} if args.cell == "rust" else {"path": "transformers threads"})
    return encoder.model, ours, {"path": path, "threads": encoder.threads, "texts_per_call": per_call}


def forward_cell(args: argparse.Namespace, model: Any, passages: list[str], scaled: list[str], batch: int,
                 workdir: Path) -> dict[str, Any]:
    """The forward pass alone: every batch tokenised and pinned first, then copied and run, timed together."""
    import torch

    from rag_eval._models.cpus import available_cpus
    from rag_eval._models.embeddings.device_copy import DeviceCopies
    from rag_eval._models.embeddings.fast_tokens import TOKEN_PROBES
    from rag_eval._models.embeddings.token_feed import TokenFeed
    from rag_eval._models.embeddings.torch_backend import checked_rust_tokens

    cuda = args.device.startswith("cuda")
    checked = checked_rust_tokens(model, list(TOKEN_PROBES), model.max_seq_length)
    if checked is None:
        raise SystemExit("the Rust tokenizer path is not usable for this model")
    tokens, constant = checked
    feed = TokenFeed(tokens, available_cpus())  # as many threads as the encoder's feed on a GPU
    out: dict[str, Any] = {"path": "forward on ready tokens"}
    for name, texts in (("scifact", passages), ("scaled", scaled)):
        ready = list(feed.batches(texts, batch))
        pinned = [{k: torch.from_numpy(v).pin_memory() if cuda else torch.from_numpy(v)
                   for k, v in b.tokens.features().items()} for b in ready]
        order = np.concatenate([b.rows for b in ready])

        def run(pinned: list[dict[str, Any]] = pinned) -> np.ndarray:
            copies = DeviceCopies(args.device)
            with torch.inference_mode():
                for features in pinned:
                    inputs = _upload(copies, features) if cuda else features
                    embedded = model.forward({**inputs, **constant})["sentence_embedding"]
                    copies.output(torch.nn.functional.normalize(embedded, p=2, dim=1).float())
                return copies.gather()

        run()  # warm-up: kernels for every shape
        walls = []
        array = np.empty(0)
        for _ in range(args.rounds if name == "scifact" else 1):
            if cuda:
                torch.cuda.synchronize()
            begin = time.perf_counter()
            array = run()
            walls.append(time.perf_counter() - begin)
        restored = np.empty_like(array)
        restored[order] = array
        np.save(workdir / f"forward-{name}.npy", restored)
        key = "passages_per_s" if name == "scifact" else "scaled_per_s"
        out[key] = len(texts) / float(np.median(walls))
        out[f"{name}_walls"] = walls
    return out


def _upload(copies: Any, pinned: dict[str, Any]) -> dict[str, Any]:
    """Pinned tensors to the GPU on the copy stream (DeviceCopies.inputs without making them again)."""
    import torch

    with torch.cuda.stream(copies._upload):
        moved = {k: v.to(copies.device, non_blocking=True) for k, v in pinned.items()}
    copies._compute.wait_stream(copies._upload)
    for tensor in moved.values():
        tensor.record_stream(copies._compute)
    return moved


def cross_encoder_folder(model: Path, workdir: Path) -> Path:
    """A cross-encoder of MiniLM's shape: its layers under a seeded random one-logit head (built once per run)."""
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    folder = workdir / "cross-encoder"
    if not (folder / "config.json").exists():
        torch.manual_seed(0)
        BertForSequenceClassification.from_pretrained(str(model), num_labels=1).save_pretrained(folder)
        AutoTokenizer.from_pretrained(str(model)).save_pretrained(folder)
    return folder


def ce_pairs(passages: list[str], query_texts: list[str], per_query: int) -> list[tuple[str, str]]:
    """``per_query`` (query, abstract) pairs per query, abstracts picked by a fixed stride (a re-ranker's load)."""
    n = len(passages)
    return [(query, passages[(q * 37 + j * 53) % n]) for q, query in enumerate(query_texts)
            for j in range(min(per_query, n))]


def cross_encoder_cell(args: argparse.Namespace, passages: list[str], query_texts: list[str], batch: int,
                       workdir: Path) -> dict[str, Any]:
    """Pairs scored per second by ``CrossEncoder.predict`` or by rag_eval's scorer; scores saved for comparison."""
    import torch

    from rag_eval._models.embeddings.loading import load_scorer
    from rag_eval._models.embeddings.options import EncoderOptions
    from rag_eval._models.files import ResolvedModel

    cuda = args.device.startswith("cuda")
    folder = cross_encoder_folder(args.model, workdir)
    pairs = ce_pairs(passages, query_texts, args.ce_pairs)
    started = time.perf_counter()
    if args.cell == "ce-predict":
        from sentence_transformers import CrossEncoder

        model = CrossEncoder(str(folder), device=args.device, max_length=CE_MAX_LENGTH)
        model.model.half() if args.precision == "fp16" else model.model.float()

        def score(items: list[tuple[str, str]]) -> np.ndarray:
            out = model.predict(items, batch_size=batch, activation_fn=torch.nn.Identity(), convert_to_numpy=True,
                                show_progress_bar=False)
            return np.asarray(out, dtype=np.float32).reshape(-1)

        path: Any = "CrossEncoder.predict()"
    else:
        scorer: Any = load_scorer(ResolvedModel(str(folder), folder, "local"), args.device,
                                  EncoderOptions(precision=args.precision), None, CE_MAX_LENGTH, "bench")

        def score(items: list[tuple[str, str]]) -> np.ndarray:
            return scorer.score(items, batch_size=batch)

        path = scorer.describe().get("tokenization")
    out: dict[str, Any] = {"path": path, "load_s": time.perf_counter() - started, "pairs": len(pairs)}
    score(pairs[: 4 * batch])  # warm-up: kernels for the first shapes
    walls = []
    scores = np.empty(0)
    for _ in range(args.rounds):
        if cuda:
            torch.cuda.synchronize()
        begin = time.perf_counter()
        scores = score(pairs)
        if cuda:
            torch.cuda.synchronize()
        walls.append(time.perf_counter() - begin)
    np.save(workdir / f"{args.cell}-pairs.npy", scores)
    out.update(walls=walls, pairs_per_s=len(pairs) / float(np.median(walls)))
    if cuda:
        out["peak_gpu_mib"] = torch.cuda.max_memory_allocated() / 2**20
    return out


def startup_cell() -> dict[str, Any]:
    """Seconds a fresh process spends importing torch, initialising CUDA, importing sentence-transformers and rag_eval."""
    out: dict[str, Any] = {}
    begin = time.perf_counter()
    import torch

    out["import_torch_s"] = time.perf_counter() - begin
    begin = time.perf_counter()
    if torch.cuda.is_available():
        torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
    out["cuda_init_s"] = time.perf_counter() - begin
    begin = time.perf_counter()
    import sentence_transformers  # noqa: F401

    out["import_sentence_transformers_s"] = time.perf_counter() - begin
    begin = time.perf_counter()
    import rag_eval.cli  # noqa: F401

    out["import_rag_eval_cli_s"] = time.perf_counter() - begin
    return out


def tokenize_cell(args: argparse.Namespace, passages: list[str], scaled: list[str], batch: int) -> dict[str, Any]:
    """The Rust tokenizer alone: rag_eval's feed on every CPU, and the library's encode_batch_fast with its own threads."""
    from transformers import AutoTokenizer

    from rag_eval._models.cpus import available_cpus
    from rag_eval._models.embeddings.fast_tokens import rust_tokens
    from rag_eval._models.embeddings.token_feed import TokenFeed
    from rag_eval._models.embeddings.truncation import model_max_length

    length = model_max_length(args.model)
    tokenizer = AutoTokenizer.from_pretrained(str(args.model), model_max_length=length, local_files_only=True)
    tokens = rust_tokens(tokenizer, length, "token_type_ids" in tokenizer.model_input_names)
    if tokens is None:
        raise SystemExit("no Rust tokenizer for this model")
    threads = available_cpus()
    feed = TokenFeed(tokens, threads)
    out: dict[str, Any] = {"path": "Rust tokenizer alone", "threads": threads}
    for name, texts in (("scifact", passages), ("scaled", scaled)):
        for _ in feed.batches(texts[:2048], batch, count=True):  # warm-up: threads started
            pass
        begin = time.perf_counter()
        for _ in feed.batches(texts, batch, count=True):
            pass
        out["passages_per_s" if name == "scifact" else "scaled_per_s"] = len(texts) / (time.perf_counter() - begin)
        begin = time.perf_counter()
        for start in range(0, len(texts), batch):
            tokens.encodings(texts[start : start + batch])
        out[f"{name}_encode_batch_fast_per_s"] = len(texts) / (time.perf_counter() - begin)
    return out


# --------------------------------------------------------------------------- the table


def cosines(workdir: Path, cell: str, name: str) -> dict[str, float]:
    """Min and mean cosine of a cell's embeddings against encode()'s (per passage), when both were saved."""
    mine, base = workdir / f"{cell}-{name}.npy", workdir / f"encode()-{name}.npy"
    if not mine.exists() or not base.exists():
        return {}
    a, b = np.load(mine).astype(np.float64), np.load(base).astype(np.float64)
    if a.shape != b.shape:
        return {f"{name}_shape_differs": 1.0}
    cos = (a * b).sum(axis=1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)
    return {f"{name}_min_cos": float(cos.min()), f"{name}_mean_cos": float(cos.mean())}


def score_differences(workdir: Path, cell: str) -> dict[str, float]:
    """Largest and mean absolute difference of a cross-encoder cell's scores from ce-predict's, when both were saved."""
    mine, base = workdir / f"{cell}-pairs.npy", workdir / "ce-predict-pairs.npy"
    if not cell.startswith("ce-") or not mine.exists() or not base.exists():
        return {}
    a, b = np.load(mine).astype(np.float64), np.load(base).astype(np.float64)
    if a.shape != b.shape:
        return {"pairs_shape_differs": 1.0}
    return {"max_abs_vs_predict": float(np.abs(a - b).max()), "mean_abs_vs_predict": float(np.abs(a - b).mean()),
            "score_spread": float(b.std())}


def print_profile(path: Path, lines: int = 30) -> None:
    """The top of a cProfile statistics file, by cumulative and by own time."""
    import pstats

    for order in ("cumulative", "tottime"):
        print(f"\n--- {path.name}: top {lines} by {order}", flush=True)
        pstats.Stats(str(path), stream=sys.stdout).strip_dirs().sort_stats(order).print_stats(lines)
    sys.stdout.flush()


def print_table(rows: list[dict[str, Any]], scale: int) -> None:
    """The markdown table: one line per cell and per ``rag-eval run``."""
    base = next((r for r in rows if r.get("cell") == "encode()" and "passages_per_s" in r), None)
    print(f"\n| cell | SciFact passages/s | {scale:,} passages/s | x encode() (SciFact / {scale:,}) | nDCG@10 | "
          "min cos vs encode() (SciFact / scaled) | notes |")
    print("|---|---:|---:|---:|---:|---:|---|")

    def number(value: Any, digits: int | None = None) -> str:
        if not isinstance(value, (int, float)):
            return ""
        return f"{value:,.{digits if digits is not None else (0 if value >= 100 else 1)}f}"

    for r in rows:
        if "error" in r or "skipped" in r:
            print(f"| {r.get('label', r.get('cell', r.get('run')))} | | | | | | {r.get('error') or r.get('skipped')} |")
            continue
        if r.get("stage") == "run":
            print(f"| {r['run']} | {number(r.get('encoder_per_s'))} | | | {number(r.get('ndcg10'), 4)} | | "
                  f"encoder {number(r.get('encoder_per_s'))} passages/s over its {number(r.get('encode_passages_s'), 2)} s; "
                  f"{number(r.get('passages_per_s'))} passages/s over index_s {number(r.get('index_s'), 1)} s "
                  f"(model load {number(r.get('model_load_s'), 1)} s included); wall {number(r.get('wall_s'), 1)} s; "
                  f"tokenization {json.dumps((r.get('encoder') or {}).get('tokenization'))} |")
            continue
        if r.get("cell") == "startup":
            parts = [f"{k.removesuffix('_s')} {r[k]:.2f} s" for k in r if k.endswith("_s") and k not in ("process_s", "elapsed_s")]
            print(f"| {r['label']} | | | | | | {'; '.join(parts)} |")
            continue
        if "pairs_per_s" in r:
            diff = f"max abs score diff vs predict() {r['max_abs_vs_predict']:.2e} (score spread {r['score_spread']:.2f})" \
                if "max_abs_vs_predict" in r else ""
            print(f"| {r['label']} | {number(r['pairs_per_s'])} pairs/s | | | | | {r.get('pairs', 0):,} pairs; "
                  f"{json.dumps(r.get('path'))}; peak {number(r.get('peak_gpu_mib'))} MiB; {diff} |")
            continue
        ratio = ""
        if base is not None and "passages_per_s" in r:
            ratio = f"{r['passages_per_s'] / base['passages_per_s']:.2f}"
            if "scaled_per_s" in r and "scaled_per_s" in base:
                ratio += f" / {r['scaled_per_s'] / base['scaled_per_s']:.2f}"
        cos = " / ".join(f"{r[k]:.6f}" for k in ("scifact_min_cos", "scaled_min_cos") if k in r)
        notes = [json.dumps(r["path"]) if "path" in r else ""]
        if "scifact_encode_batch_fast_per_s" in r:
            notes.append(f"encode_batch_fast (library threads): {r['scifact_encode_batch_fast_per_s']:,.0f} / "
                         f"{r.get('scaled_encode_batch_fast_per_s', 0):,.0f} per s")
        if "peak_gpu_mib" in r:
            notes.append(f"peak {r['peak_gpu_mib']:,.0f} MiB")
        print(f"| {r['label']} | {number(r.get('passages_per_s'))} | {number(r.get('scaled_per_s'))} | {ratio} | "
              f"{number(r.get('ndcg10'), 4)} | {cos} | {'; '.join(n for n in notes if n)} |")


# --------------------------------------------------------------------------- the files a GPU machine needs


def prepare(target: Path, model: Path, data: Path) -> None:
    """The model (weights rounded to fp16: the device's 64 MiB transfer limit) and SciFact (corpus gzipped) under ``target``.

    The GPU computes in fp16 anyway; every cell there uses the same rounded weights.
    """
    import gzip

    import torch
    from safetensors.torch import load_file, save_file

    folder = target / "all-MiniLM-L6-v2"
    shutil.copytree(model, folder, ignore=shutil.ignore_patterns("*.md", ".gitattributes", "onnx", "openvino"))
    for weights in folder.rglob("*.safetensors"):
        tensors = load_file(str(weights))
        save_file({k: v.half() if v.dtype == torch.float32 else v for k, v in tensors.items()}, str(weights))
    (target / "scifact" / "qrels").mkdir(parents=True)
    with open(data / "corpus.jsonl", "rb") as source, gzip.open(target / "scifact" / "corpus.jsonl.gz", "wb") as out:
        shutil.copyfileobj(source, out)
    shutil.copyfile(data / "queries.jsonl", target / "scifact" / "queries.jsonl")
    shutil.copyfile(data / "qrels" / "test.tsv", target / "scifact" / "qrels" / "test.tsv")
    size = sum(f.stat().st_size for f in target.rglob("*") if f.is_file())
    print(f"{target}: {size / 2**20:.1f} MiB (model {folder}, data {target / 'scifact'})")


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, help="a local sentence-transformers folder (default: the bundled MiniLM)")
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "datasets" / "scifact")
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu")
    parser.add_argument("--precision", choices=("fp16", "fp32"), help="default: fp16 on CUDA, else fp32")
    parser.add_argument("--subset", type=int, help="smoke test: 50 queries, their judged abstracts and N others")
    parser.add_argument("--scale", type=int, help="distinct passages of the scaled corpus (default 100,000; 500 on a CPU)")
    parser.add_argument("--rounds", type=int, default=2, help="timed SciFact encodes per cell (median kept)")
    parser.add_argument("--cells", nargs="*", default=DEFAULT_ORDER, help=f"cells to run, in order (default {DEFAULT_ORDER})")
    parser.add_argument("--deadline", type=float, default=270.0, help="seconds after which no cell starts")
    parser.add_argument("--grace", type=float, default=60.0, help="a cell still running this long past it is killed")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--prepare", type=Path, metavar="DIR",
                        help="write what a lent GPU machine needs under DIR (model with fp16 weights, SciFact) and stop")
    parser.add_argument("--ce-pairs", type=int, default=CE_PAIRS_PER_QUERY, help="cross-encoder pairs per query")
    parser.add_argument("--profile-dir", type=Path, help="where profile-scaled's cProfile statistics are copied")
    parser.add_argument("--cell", help=argparse.SUPPRESS)
    parser.add_argument("--scaled", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--batch-size", type=int, default=RUN_BATCH, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.model is None:
        from rag_eval._models.files import bundled_minilm_path

        args.model = bundled_minilm_path()
        if args.model is None:
            raise SystemExit("no --model and no bundled all-MiniLM-L6-v2")
    args.model = Path(args.model).resolve()
    args.precision = args.precision or ("fp16" if args.device.startswith("cuda") else "fp32")
    args.scale = args.scale or (100_000 if args.device.startswith("cuda") else 500)
    if args.prepare:
        prepare(args.prepare, args.model, args.data)
        return
    if args.cell:
        worker(args)
        return

    start = time.perf_counter()
    workdir = Path(tempfile.mkdtemp(prefix="bench_gpu_encoder_"))
    rows: list[dict[str, Any]] = []

    def emit(row: dict[str, Any]) -> None:
        row["elapsed_s"] = round(time.perf_counter() - start, 1)
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1))

    def time_left() -> float:
        return args.deadline - (time.perf_counter() - start)

    try:
        data = prepare_data(args.data, args.subset, workdir)
        scaled = scaled_copy(data, args.scale, workdir / "scaled")
        print(f"{data}: device {args.device} {args.precision}; CPUs {len(os.sched_getaffinity(0))}; scaled corpus "
              f"{args.scale:,}; TOKENIZERS_PARALLELISM (caller) {CALLER_TOKENIZERS_PARALLELISM}; load average "
              f"{os.getloadavg()[0]:.2f}", flush=True)
        env = rag_eval_env(workdir)
        labels = {c: (label, batch) for c, label, batch in CELLS}
        for cell in args.cells:
            if time_left() <= 0:
                emit({"cell": cell, "label": labels.get(cell, (cell,))[0], "skipped": "deadline"})
                continue
            timeout = time_left() + args.grace
            if cell in labels:
                label, batch = labels[cell]
                command = [sys.executable, str(Path(__file__).resolve()), "--cell", cell, "--model", str(args.model),
                           "--data", str(data), "--scaled", str(scaled), "--workdir", str(workdir), "--device",
                           args.device, "--precision", args.precision, "--batch-size", str(batch), "--rounds",
                           str(args.rounds), "--ce-pairs", str(args.ce_pairs)]
                code, out, err, wall = run_child(command, env, timeout)
                row: dict[str, Any] = {"cell": cell, "label": label, "process_s": wall}
                result = next((line[7:] for line in out.splitlines() if line.startswith("RESULT ")), None)
                if code == 0 and result:
                    row.update(json.loads(result))
                    for name in ("scifact", "scaled"):
                        row.update(cosines(workdir, cell, name))
                    row.update(score_differences(workdir, cell))
                else:
                    row["error"] = child_error(code, err, timeout)
                emit(row)
            elif cell in ("run-scifact", "run-scaled", "profile-scaled"):
                folder = data if cell == "run-scifact" else scaled
                params = {"model": str(args.model), "device": args.device, "precision": args.precision,
                          "batch_size": RUN_BATCH, "show_progress": False}
                config = write_config(workdir / f"{cell}.yaml", folder, params, workdir / f"cache-{cell}")
                name = "SciFact" if cell == "run-scifact" else f"{args.scale:,} passages"
                profile = workdir / f"{cell}.pstats" if cell == "profile-scaled" else None
                label = f"rag-eval run, {name}, cold cache" + (", under cProfile" if profile else "")
                emit({"stage": "run", "cell": cell, "run": label,
                      **rag_eval_run(config, workdir / f"out-{cell}", env, timeout, profile=profile)})
                if profile is not None and profile.exists():
                    print_profile(profile)
                    if args.profile_dir:
                        args.profile_dir.mkdir(parents=True, exist_ok=True)
                        shutil.copyfile(profile, args.profile_dir / profile.name)
            else:
                emit({"cell": cell, "error": "unknown cell"})
    finally:
        if args.keep:
            print(f"kept {workdir}", flush=True)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"load average at end {os.getloadavg()[0]:.2f}; done in {time.perf_counter() - start:.0f} s", flush=True)
    print_table(rows, args.scale)


if __name__ == "__main__":
    main()
