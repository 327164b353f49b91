"""Dense encoding on a GPU as a user meets it: tokenizer threads, the dense adapter's store path, a process pool.

On SciFact (5,183 abstracts, 300 test queries), one JSON line per row, all rows also in ``--json``:

A. Tokenizer threads: rag_eval's encoder (:func:`rag_eval._models.embeddings.loading.load_encoder`,
   ``precision`` fp16, batch 1024: tokenising on CPU threads ahead of the GPU) and
   sentence-transformers' own ``SentenceTransformer.encode()`` (fp16, batch 256), each with
   ``TOKENIZERS_PARALLELISM`` false and true. Each of the four cells is a fresh process (the
   variable is read when tokenizers is imported): one warm-up encode of the corpus, then two
   timed ones (passages/s of the median), and nDCG@10 of exact search (rag_eval's ``evaluate()``).
B. The dense adapter's store path: ``rag-eval run`` (``python -m rag_eval.cli run``) on a config
   with one ``adapter: dense`` retriever (fp16, batch 1024), an empty ``cache_dir``, ``top_k``
   100. B1 cold: passages/s = passages / ``index_s`` of the results file (``index_s`` includes
   loading the model), nDCG@10. B2 the same command again: what the second run costs (the
   ranking cache serves it when nothing changed; then no retriever runs and its description is
   the stored one). B3 again with ``reuse_rankings: false``: the embedding store serves the
   passages and queries (passages encoded: 0). ``TOKENIZERS_PARALLELISM`` as the caller left it.
C. The multi-process pool: the same config with ``devices: [cuda:0, cuda:0]`` (two processes on one
   GPU) and a fresh cache: passages/s, nDCG@10, and its ranking against B1's (max abs score
   difference over passages both rank, queries whose top 10 differ).

    python benchmarks/bench_gpu_paths.py --model .dev/gpu/all-MiniLM-L6-v2 --data .dev/gpu/scifact --json paths.json
    python benchmarks/bench_gpu_paths.py --device cpu --subset 200 ...   # a smoke test without a GPU (fp32)

``--data`` is a BEIR SciFact folder; a ``corpus.jsonl.gz`` in place of ``corpus.jsonl`` is unpacked
into a temporary folder. ``--subset N`` keeps 50 test queries, their judged abstracts and N other
abstracts (seed 13). No stage starts past ``--deadline`` seconds (it prints "skipped (deadline)"),
and a child process still running ``--grace`` seconds past the deadline is killed with its process group.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# The caller's setting, read before bench_backends (imported below) defaults it to "false":
# stages B and C run rag-eval with the environment a user has.
CALLER_TOKENIZERS_PARALLELISM = os.environ.get("TOKENIZERS_PARALLELISM")

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from bench_backends import load_scifact, sample  # noqa: E402
from bench_gpu import encode_timed, ndcg_at_10  # noqa: E402

SUBSET_QUERIES = 50
# Stage A's cells: (label, encoder, batch size) x TOKENIZERS_PARALLELISM.
A_ENCODERS = [("rag_eval pipeline", "pipeline", 1024), ("encode()", "st", 256)]
A_PARALLELISM = ["false", "true"]
B_BATCH = 1024


# --------------------------------------------------------------------------- data


def prepare_data(data: Path, subset: int | None, workdir: Path) -> Path:
    """A BEIR folder to run on: ``data`` itself, its unpacked copy (corpus.jsonl.gz), or a subset of it."""
    if (data / "corpus.jsonl").exists() and subset is None:
        return data.resolve()
    folder = workdir / "scifact"
    (folder / "qrels").mkdir(parents=True)
    if (data / "corpus.jsonl").exists():
        shutil.copyfile(data / "corpus.jsonl", folder / "corpus.jsonl")
    else:
        with gzip.open(data / "corpus.jsonl.gz", "rb") as packed, open(folder / "corpus.jsonl", "wb") as out:
            shutil.copyfileobj(packed, out)
    shutil.copyfile(data / "queries.jsonl", folder / "queries.jsonl")
    shutil.copyfile(data / "qrels" / "test.tsv", folder / "qrels" / "test.tsv")
    if subset is None:
        return folder
    corpus, queries, qrels = sample(*load_scifact(folder), SUBSET_QUERIES, subset)
    keep_lines(folder / "corpus.jsonl", lambda line: str(json.loads(line)["_id"]) in corpus)
    keep_lines(folder / "queries.jsonl", lambda line: str(json.loads(line)["_id"]) in queries)
    keep_lines(folder / "qrels" / "test.tsv", lambda line: line.split("\t")[0] in qrels, header=True)
    return folder


def scaled_copy(data: Path, passages: int, folder: Path) -> Path:
    """A BEIR folder of ``passages`` distinct passages: SciFact's abstracts, then copies with a numbered suffix.

    The originals keep their ids (the judgements and nDCG@10 still mean something); the
    copies are distinct texts, so every one is encoded.
    """
    (folder / "qrels").mkdir(parents=True)
    shutil.copyfile(data / "queries.jsonl", folder / "queries.jsonl")
    shutil.copyfile(data / "qrels" / "test.tsv", folder / "qrels" / "test.tsv")
    records = [json.loads(line) for line in (data / "corpus.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as out:
        for n in range(passages):
            record = dict(records[n % len(records)])
            if n >= len(records):
                record["_id"] = f"{record['_id']}-copy-{n // len(records)}"
                record["text"] = f"{record['text']} (copy {n // len(records)})"
            out.write(json.dumps(record) + "\n")
    return folder


def keep_lines(path: Path, keep: Any, header: bool = False) -> None:
    """Rewrite ``path`` with the lines ``keep(line)`` accepts (the first line kept as a header)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    head, body = (lines[:1], lines[1:]) if header else ([], lines)
    path.write_text("".join(head + [line for line in body if line.strip() and keep(line)]), encoding="utf-8")


# --------------------------------------------------------------------------- stage E (in this process)


def index_steps(folder: Path, model_folder: Path, device: str, precision: str, cache: Path) -> dict[str, Any]:
    """Seconds of each step the dense adapter's ``index`` takes on a cold cache, timed one by one.

    Loading the model (CUDA start-up included), counting every text's tokens for the truncation
    report (untruncated: a second tokenisation), encoding (the pipeline, after a warm-up of 2,048
    texts not timed), hashing the texts to store keys and writing the vectors to the store.
    """
    import torch

    from rag_eval._data.datasets.model import passage_text
    from rag_eval._models.embeddings.loading import load_encoder
    from rag_eval._models.embeddings.options import EncoderOptions
    from rag_eval._models.embeddings.store import EmbeddingStore, text_key
    from rag_eval._models.embeddings.truncation import TokenCounter
    from rag_eval._models.files import ResolvedModel

    records = [json.loads(line) for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    texts = [passage_text({"title": r.get("title") or "", "text": r["text"]}) for r in records]
    steps: dict[str, Any] = {"passages": len(texts)}
    started = time.perf_counter()
    encoder = load_encoder(ResolvedModel(str(model_folder), model_folder, "local"), device,
                           EncoderOptions(precision=precision), None, None, "bench")
    steps["load_s"] = time.perf_counter() - started
    started = time.perf_counter()
    lengths = TokenCounter(model_folder, None, None).lengths(texts)
    steps["token_count_s"] = time.perf_counter() - started
    steps["truncated"] = int((lengths > 256).sum()) if lengths is not None else None
    encoder.encode(texts[:2048], batch_size=B_BATCH, normalize=True)  # warm-up
    torch.cuda.synchronize() if torch.cuda.is_available() else None
    started = time.perf_counter()
    vectors = encoder.encode(texts, batch_size=B_BATCH, normalize=True)
    torch.cuda.synchronize() if torch.cuda.is_available() else None
    steps["encode_s"] = time.perf_counter() - started
    steps["encode_passages_per_s"] = len(texts) / steps["encode_s"]
    started = time.perf_counter()
    keys = [text_key(text) for text in texts]
    steps["keys_s"] = time.perf_counter() - started
    started = time.perf_counter()
    store = EmbeddingStore(cache, "bench")
    for start in range(0, len(keys), 16 * B_BATCH):  # as the adapter writes: 16 batches a call on a GPU
        store.put(keys[start : start + 16 * B_BATCH], vectors[start : start + 16 * B_BATCH])
    steps["store_put_s"] = time.perf_counter() - started
    return steps


# --------------------------------------------------------------------------- stage A worker (a child process)


class OwnEncode:
    """``SentenceTransformer.encode()`` behind the ``encode(texts, batch_size, normalize)`` call of encode_timed."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def encode(self, texts: list[str], batch_size: int, normalize: bool = True) -> np.ndarray:
        array = self.model.encode(
            list(texts), batch_size=batch_size, normalize_embeddings=normalize, convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(array, dtype=np.float32)


def worker(args: argparse.Namespace) -> None:
    """One stage-A cell: load, warm up on the corpus, time two encodes, score; print ``RESULT {json}``."""
    import torch

    from rag_eval._models.embeddings.loading import load_encoder
    from rag_eval._models.embeddings.options import EncoderOptions
    from rag_eval._models.files import ResolvedModel

    corpus, queries, qrels = load_scifact(args.data)
    doc_ids, query_ids = sorted(corpus), sorted(queries)
    passages, query_texts = [corpus[d] for d in doc_ids], [queries[q] for q in query_ids]
    batch = args.batch_size
    started = time.perf_counter()
    if args.worker == "pipeline":
        model = ResolvedModel(str(args.model), args.model, "local")
        encoder: Any = load_encoder(model, args.device, EncoderOptions(precision=args.precision), None, None, "bench")
        pipelined = args.device.startswith("cuda") and len(passages) > batch and encoder.pipeline_ready()
        label = "rag_eval pipeline" if pipelined else "rag_eval (encode(): the pipeline runs on CUDA only)"
        threads = encoder.threads
    else:
        from sentence_transformers import SentenceTransformer

        own = SentenceTransformer(str(args.model), device=args.device)
        if args.precision == "fp16":
            own.half()
        else:
            own.float()  # a model saved in fp16 loads in fp16, also on a CPU
        encoder, label, threads = OwnEncode(own), "SentenceTransformer.encode()", None
    load_s = time.perf_counter() - started
    warm = time.perf_counter()
    encoder.encode(passages, batch_size=batch)
    warmup_s = time.perf_counter() - warm
    walls = []
    for _ in range(2):
        vectors, wall = encode_timed(encoder, passages, batch, 1)
        walls.append(wall)
    query_vectors = encoder.encode(query_texts, batch_size=batch)
    gpu = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else None
    print("RESULT " + json.dumps({
        "encoder": label, "gpu": gpu, "torch": torch.__version__, "threads": threads,
        "passages": len(passages), "queries": len(query_ids), "load_s": load_s, "warmup_s": warmup_s,
        "walls": walls, "passages_per_s": len(passages) / float(np.median(walls)),
        "ndcg10": ndcg_at_10(vectors, query_vectors, doc_ids, query_ids, qrels),
    }), flush=True)


# --------------------------------------------------------------------------- child processes


def run_child(command: list[str], env: dict[str, str], timeout: float) -> tuple[int | None, str, str, float]:
    """(exit code or None when killed at ``timeout``, stdout, stderr, wall seconds); its whole process group dies."""
    started = time.perf_counter()
    with subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # its own process group: a multi-process pool goes with it
    ) as child:
        try:
            out, err = child.communicate(timeout=timeout)
            code: int | None = child.returncode
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            out, err = child.communicate()
            code = None
    return code, out, err, time.perf_counter() - started


def child_error(code: int | None, err: str, timeout: float) -> str:
    """One string saying why a child gave no result: killed at the timeout, or its exit code and stderr's end."""
    if code is None:
        return f"killed after {timeout:.0f} s (deadline)"
    return f"exit {code}: {err.strip()[-1500:]}"


def rag_eval_env(workdir: Path) -> dict[str, str]:
    """The environment of ``rag-eval run``: the repo importable, the caller's TOKENIZERS_PARALLELISM, no home cache."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env["RAG_EVAL_CACHE_DIR"] = str(workdir / "default_cache")  # the config sets cache_dir; this is a backstop
    env.pop("TOKENIZERS_PARALLELISM", None)
    if CALLER_TOKENIZERS_PARALLELISM is not None:
        env["TOKENIZERS_PARALLELISM"] = CALLER_TOKENIZERS_PARALLELISM
    return env


def write_config(
    path: Path,
    data: Path | dict[str, Any],
    params: dict[str, Any],
    cache_dir: Path,
    reuse_rankings: bool = True,
    **more: Any,
) -> Path:
    """A run config: the BEIR folder ``data`` (or a ``dataset`` section), one dense retriever labelled
    ``dense``, nDCG@10, top 100, no plots; ``more`` adds or replaces top-level keys."""
    import yaml

    config = {
        "name": path.stem,
        "dataset": data if isinstance(data, dict) else {"format": "beir", "path": str(data), "split": "test"},
        "retrievers": [{"label": "dense", "adapter": "dense", "params": params}],
        "top_k": 100,
        "metrics": ["ndcg@10"],
        "report": {"plots": False, "detailed_queries": 0},
        "cache_dir": str(cache_dir),
        "reuse_rankings": reuse_rankings,
        "output": str(path.parent / f"{path.stem}_out"),
        **more,
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def rag_eval_run(
    config: Path, output: Path, env: dict[str, str], timeout: float, profile: Path | None = None
) -> dict[str, Any]:
    """Run ``rag-eval run CONFIG --output OUTPUT``; the row: wall time, timings, nDCG@10, cache use (or the error).

    ``profile``: run it under cProfile, its statistics written there (the main thread's calls).
    """
    profiler = ["-m", "cProfile", "-o", str(profile)] if profile is not None else []
    command = [sys.executable, *profiler, "-m", "rag_eval.cli", "run", str(config), "--output", str(output),
               "--no-progress"]
    code, _, err, wall = run_child(command, env, timeout)
    row: dict[str, Any] = {"wall_s": wall}
    results = output / "dense.json"
    if code != 0 or not results.exists():
        row["error"] = child_error(code, err, timeout)
        return row
    document = json.loads(results.read_text(encoding="utf-8"))
    description = document["retriever"]["description"]
    timings = document.get("timings", {})
    passages = description.get("passages")
    row.update(
        index_s=timings.get("index_s"), search_s=timings.get("search_s"), evaluate_s=timings.get("evaluate_s"),
        passages=passages, ndcg10=document["results"]["aggregate"]["ndcg@10"],
        ranking_cache=description.get("ranking_cache", "miss"), cache=description.get("cache"),
        query_cache=description.get("query_cache"), passages_encoded=description.get("passages_encoded"),
        queries_encoded=description.get("queries_encoded"), device=description.get("device"),
        encoder=description.get("encoder"),
    )
    if row["ranking_cache"] == "hit":  # no retriever ran: its description and timings are the stored run's
        for key in ("index_s", "search_s", "cache", "query_cache", "passages_encoded", "queries_encoded"):
            row[f"stored_{key}"] = row.pop(key)
        row.update(passages_encoded=0, queries_encoded=0, note="ranking cache hit: nothing indexed or searched "
                   "(stored_*: what the run that computed the ranking recorded)")
    elif passages and row["passages_encoded"] and timings.get("index_s"):
        row["passages_per_s"] = passages / timings["index_s"]  # index_s includes loading the model
        seconds = description.get("seconds") or {}
        row.update(model_load_s=seconds.get("model_load"), encode_passages_s=seconds.get("encode_passages"))
        if seconds.get("encode_passages"):  # the encoder's own rate inside the run (the model's calls only)
            row["encoder_per_s"] = row["passages_encoded"] / seconds["encode_passages"]
    return row


def compare_rankings(a: Path, b: Path) -> dict[str, Any]:
    """Two results files' rankings: max abs score difference over (query, passage) pairs both rank, top-10 changes."""
    first = json.loads(a.read_text(encoding="utf-8"))["rankings"]
    second = json.loads(b.read_text(encoding="utf-8"))["rankings"]
    max_diff, top10_order, top10_set = 0.0, 0, 0
    for qid in first.keys() & second.keys():
        x = {doc: score for doc, score, _ in first[qid]}
        y = {doc: score for doc, score, _ in second[qid]}
        for doc in x.keys() & y.keys():
            max_diff = max(max_diff, abs(x[doc] - y[doc]))
        top_x, top_y = [e[0] for e in first[qid][:10]], [e[0] for e in second[qid][:10]]
        top10_order += top_x != top_y
        top10_set += set(top_x) != set(top_y)
    return {"queries_compared": len(first.keys() & second.keys()), "queries_only_in_one": len(first.keys() ^ second.keys()),
            "max_abs_score_diff": max_diff, "top10_order_differs": top10_order, "top10_set_differs": top10_set}


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, required=True, help="a local sentence-transformers folder")
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "datasets" / "scifact")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--deadline", type=float, default=330.0, help="seconds after which no stage starts")
    parser.add_argument("--grace", type=float, default=30.0, help="a child still running this long past the deadline is killed")
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu")
    parser.add_argument("--precision", choices=("fp16", "fp32"), help="default: fp16 on CUDA, else fp32")
    parser.add_argument("--subset", type=int, help="smoke test: 50 queries, their judged abstracts and N others")
    parser.add_argument("--stages", nargs="*", default=["A", "B", "C"], choices=("A", "B", "C", "D", "E"))
    parser.add_argument("--scale", type=int, default=100_000, help="stage D: distinct passages in the corpus")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (configs, caches, results)")
    parser.add_argument("--worker", choices=("pipeline", "st"), help=argparse.SUPPRESS)
    parser.add_argument("--batch-size", type=int, default=B_BATCH, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.model = args.model.resolve()
    args.precision = args.precision or ("fp16" if args.device.startswith("cuda") else "fp32")
    if args.worker:
        worker(args)
        return

    start = time.perf_counter()
    workdir = Path(tempfile.mkdtemp(prefix="bench_gpu_paths_"))
    rows: list[dict[str, Any]] = []

    def emit(row: dict[str, Any]) -> None:
        row["elapsed_s"] = round(time.perf_counter() - start, 1)
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1))

    def time_left(stage: str) -> bool:
        if time.perf_counter() - start < args.deadline:
            return True
        print(f"{stage}: skipped (deadline {args.deadline:.0f} s)", flush=True)
        emit({"stage": stage, "skipped": "deadline"})
        return False

    def child_timeout() -> float:
        return max(10.0, args.deadline + args.grace - (time.perf_counter() - start))

    try:
        data = prepare_data(args.data, args.subset, workdir)
        corpus, queries, _ = load_scifact(data)
        print(f"{data}: {len(corpus)} abstracts, {len(queries)} queries; device {args.device} {args.precision}; "
              f"CPUs {len(os.sched_getaffinity(0))}; python {sys.version.split()[0]}; "
              f"TOKENIZERS_PARALLELISM (caller) {CALLER_TOKENIZERS_PARALLELISM}", flush=True)

        if "A" in args.stages:
            for label, kind, batch in A_ENCODERS:
                for parallel in A_PARALLELISM:
                    stage = f"A {label} TOKENIZERS_PARALLELISM={parallel}"
                    if not time_left(stage):
                        continue
                    env = {**os.environ, "TOKENIZERS_PARALLELISM": parallel}
                    command = [sys.executable, str(Path(__file__).resolve()), "--worker", kind, "--model", str(args.model),
                               "--data", str(data), "--device", args.device, "--precision", args.precision,
                               "--batch-size", str(batch)]
                    timeout = child_timeout()
                    code, out, err, wall = run_child(command, env, timeout)
                    row: dict[str, Any] = {"stage": "A", "cell": label, "tokenizers_parallelism": parallel,
                                           "precision": args.precision, "batch_size": batch, "process_s": wall}
                    result = next((line[7:] for line in out.splitlines() if line.startswith("RESULT ")), None)
                    if code == 0 and result:
                        row.update(json.loads(result))
                    else:
                        row["error"] = child_error(code, err, timeout)
                    emit(row)

        env = rag_eval_env(workdir)
        params = {"model": str(args.model), "device": args.device, "precision": args.precision,
                  "batch_size": B_BATCH, "show_progress": False}
        b1_results: Path | None = None
        if "B" in args.stages:
            cache = workdir / "cache_b"
            config = write_config(workdir / "dense_b.yaml", data, params, cache)
            runs = [("B1 cold", config), ("B2 rerun", config),
                    ("B3 rerun, reuse_rankings: false",
                     write_config(workdir / "dense_b3.yaml", data, params, cache, reuse_rankings=False))]
            for n, (label, path) in enumerate(runs, 1):
                if not time_left(label):
                    continue
                output = workdir / f"out_b{n}"
                row = {"stage": "B", "run": label, "tokenizers_parallelism": CALLER_TOKENIZERS_PARALLELISM or "unset",
                       **rag_eval_run(path, output, env, child_timeout())}
                if n == 1 and "error" not in row:
                    b1_results = output / "dense.json"
                emit(row)

        if "C" in args.stages and time_left("C devices pool"):
            device = args.device if ":" in args.device or args.device == "cpu" else f"{args.device}:0"
            pooled = {k: v for k, v in params.items() if k != "device"}
            pooled["devices"] = [device, device]
            config = write_config(workdir / "dense_c.yaml", data, pooled, workdir / "cache_c")
            output = workdir / "out_c"
            row = {"stage": "C", "run": f"devices [{device}, {device}], cold",
                   "tokenizers_parallelism": CALLER_TOKENIZERS_PARALLELISM or "unset",
                   **rag_eval_run(config, output, env, child_timeout())}
            if "error" not in row and b1_results is not None:
                row["vs_B1"] = compare_rankings(b1_results, output / "dense.json")
            emit(row)
        if "D" in args.stages and time_left("D store path at scale"):
            folder = scaled_copy(data, args.scale, workdir / "scaled")
            config = write_config(workdir / "dense_d.yaml", folder, params, workdir / "cache_d")
            row = {"stage": "D", "run": f"store path, {args.scale:,} distinct passages, cold",
                   "tokenizers_parallelism": CALLER_TOKENIZERS_PARALLELISM or "unset",
                   **rag_eval_run(config, workdir / "out_d", env, child_timeout())}
            emit(row)
        if "E" in args.stages and time_left("E store path, step by step"):
            folder = workdir / "scaled" if (workdir / "scaled").exists() else scaled_copy(data, args.scale, workdir / "scaled")
            emit({"stage": "E", "run": f"the dense adapter's index steps, {args.scale:,} passages, in one process",
                  **index_steps(folder, args.model, args.device, args.precision, workdir / "cache_e")})
    finally:
        if args.keep:
            print(f"kept {workdir}", flush=True)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"done in {time.perf_counter() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
