"""Speed and memory of rag_eval's metric engine against ranx and pytrec_eval.

    python benchmarks/bench_metrics.py            # full sizes (about 20 minutes, ~6 GiB RAM at most)
    python benchmarks/bench_metrics.py --quick    # small sizes, a smoke test (well under a minute)
    python benchmarks/bench_metrics.py --cases 10000x300 --only files --tools rag_eval \
        --line-orders sorted,shuffled,reversed --repeats 3   # does the order of a run's lines matter?

Synthetic data (deterministic from --seed) is generated once under
benchmarks/.data/: per query a ranked list of documents drawn from a shared
corpus id space ("d%07d" over 8.8M ids, scores with 4 decimals so ties are few
but present), and 20-50 graded judgements (0..3) per query, some of them for
documents the run did not retrieve. Every query has at least one relevant
document and every judged query is answered, so that all three tools average
over the same queries.

Every measurement runs in its own fresh Python process (pytrec_eval keeps
trec_eval's global measure state between evaluator objects, and a fresh process
is also the only honest way to see first-call costs and peak memory):

* in memory: the process builds the same ``{qid: {doc: score}}`` dicts for every
  tool, then times the tool's calls on them. rag_eval: ``evaluate(qrels, run,
  metrics)``, first call and warm. ranx: ``Qrels.from_dict`` + ``Run.from_dict``
  + ``evaluate``, first call with an empty numba cache (so compilation is
  included) and warm, plus evaluate-only. pytrec_eval: ``RelevanceEvaluator``
  + ``evaluate`` + the mean, and evaluate-only. "peak MiB" is the growth of the
  process' peak RSS during the calls (the dicts themselves excluded).
* from TREC files: a whole process per tool (interpreter start, imports, reading
  both files, evaluating, printing), timed from outside, with its max RSS.
  rag_eval runs its CLI; ranx ``Qrels/Run.from_file``; pytrec_eval reads the
  files with plain Python (``line.split()``) into dicts.

Before a row is printed, rag_eval's aggregate values are checked against
pytrec_eval's (|difference| <= 1e-9 for every metric); the benchmark fails if
they disagree. ranx's difference to pytrec_eval is shown for information.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DATA = HERE / ".data"
CORPUS_SIZE = 8_841_823  # MS MARCO passage ids; doc ids are "d%07d"

FULL_CASES = [(10_000, 100), (10_000, 1_000), (100_000, 100), (10_000, 300)]
QUICK_CASES = [(1_000, 100), (1_000, 300)]
# How a run file's lines are ordered: as retrievers write them (each query's documents together,
# best first), all lines shuffled (queries interleaved, scores in no order), or the whole file
# reversed (each query's documents worst first). trec_eval ignores the order; so must the speed.
LINE_ORDERS = ("sorted", "shuffled", "reversed")

# (label, rag_eval names, pytrec_eval measures, pytrec_eval keys, ranx names)
METRIC_SETS = {
    "ndcg@10": (["ndcg@10"], {"ndcg_cut.10"}, ["ndcg_cut_10"], ["ndcg@10"]),
    "ndcg@10+map+mrr+recall@100": (
        ["ndcg@10", "map", "mrr", "recall@100"],
        {"ndcg_cut.10", "map", "recip_rank", "recall.100"},
        ["ndcg_cut_10", "map", "recip_rank", "recall_100"],
        ["ndcg@10", "map", "mrr", "recall@100"],
    ),
}
TOLERANCE = 1e-9


def case_name(n: int, depth: int) -> str:
    def short(x: int) -> str:
        return f"{x // 1000}k" if x % 1000 == 0 and x >= 1000 else str(x)

    return f"{short(n)}x{depth}"


# ---- data ---------------------------------------------------------------------------


def generate(n: int, depth: int, seed: int) -> dict[str, np.ndarray]:
    """Arrays of one case, cached in benchmarks/.data/<case>-s<seed>.npz."""
    path = DATA / f"{case_name(n, depth)}-s{seed}.npz"
    if path.exists():
        with np.load(path) as z:
            return {k: z[k] for k in z.files}
    rng = np.random.default_rng([seed, n, depth])
    docs = rng.integers(0, CORPUS_SIZE, size=(n, depth), dtype=np.int64)
    # A query never retrieves a document twice: redraw the rare rows with repeats.
    srt = np.sort(docs, axis=1)
    for row in np.flatnonzero((srt[:, 1:] == srt[:, :-1]).any(axis=1)):
        docs[row] = rng.choice(CORPUS_SIZE, size=depth, replace=False)
    # BM25-like scores, descending, in units of 1e-4 (so file text and float agree).
    top = rng.normal(250_000, 30_000, size=(n, 1))
    gaps = rng.exponential(100_000 / depth, size=(n, depth))
    gaps[:, 0] = 0
    scores = np.round(top - np.cumsum(gaps, axis=1)).astype(np.int64)
    # Judgements: 20-50 per query, ~60% among the retrieved (biased to the top), the
    # rest from the corpus (mostly not retrieved); grades 0..3, relevant more often
    # near the top; at least one relevant document per query.
    counts = rng.integers(20, 51, size=n)
    q_parts, d_parts, g_parts = [], [], []
    for q in range(n):
        m = int(counts[q])
        m_ret = round(m * 0.6)
        ranks = np.unique((depth * rng.random(m_ret * 2) ** 2.5).astype(np.int64))[:m_ret]
        other = rng.integers(0, CORPUS_SIZE, size=m - ranks.size)
        judged = np.concatenate((docs[q, ranks], other))
        judged, first = np.unique(judged, return_index=True)
        top_hit = np.concatenate((ranks < 10, np.zeros(other.size, bool)))[first]
        p_top, p_rest = [0.3, 0.3, 0.25, 0.15], [0.55, 0.25, 0.13, 0.07]
        grades = np.where(
            top_hit, rng.choice(4, size=judged.size, p=p_top), rng.choice(4, size=judged.size, p=p_rest)
        )
        if not (grades > 0).any():
            grades[0] = 1
        q_parts.append(np.full(judged.size, q, np.int64))
        d_parts.append(judged)
        g_parts.append(grades)
    data = {
        "run_docs": docs.astype(np.int32),
        "run_scores": scores,
        "qrels_query": np.concatenate(q_parts).astype(np.int32),
        "qrels_docs": np.concatenate(d_parts).astype(np.int32),
        "qrels_grades": np.concatenate(g_parts).astype(np.int8),
    }
    DATA.mkdir(parents=True, exist_ok=True)
    np.savez(path, **data)
    return data


def qid(q: int) -> str:
    return f"q{q:06d}"


def score_text(units: int) -> str:
    sign = "-" if units < 0 else ""
    units = abs(units)
    return f"{sign}{units // 10000}.{units % 10000:04d}"


def write_files(n: int, depth: int, seed: int, data: dict[str, np.ndarray]) -> tuple[Path, Path]:
    """TREC qrels and run files of one case (run lines in rank order, as retrievers write)."""
    base = DATA / f"{case_name(n, depth)}-s{seed}"
    qrels_path, run_path = base.with_suffix(".qrels"), base.with_suffix(".run")
    if not qrels_path.exists():
        lines = [
            f"{qid(q)} 0 d{d:07d} {g}\n"
            for q, d, g in zip(data["qrels_query"].tolist(), data["qrels_docs"].tolist(), data["qrels_grades"].tolist())
        ]
        tmp = qrels_path.with_suffix(".tmp")
        tmp.write_text("".join(lines))
        tmp.rename(qrels_path)
    if not run_path.exists():
        tmp = run_path.with_suffix(".tmp")
        with tmp.open("w") as out:
            for q in range(n):
                name = qid(q)
                docs = data["run_docs"][q].tolist()
                scores = data["run_scores"][q].tolist()
                out.write(
                    "".join(
                        f"{name} Q0 d{d:07d} {r} {score_text(s)} bench\n"
                        for r, (d, s) in enumerate(zip(docs, scores), start=1)
                    )
                )
        tmp.rename(run_path)
    return qrels_path, run_path


def reorder_lines(run_path: Path, order: str, seed: int) -> Path:
    """The run file with its lines in ``order`` (a copy next to it; "sorted" is the file itself).

    Written by a child process: a parent grown by the whole file would pass its peak RSS on
    to every process it starts afterwards (Linux keeps the larger max RSS across exec).
    """
    if order == "sorted":
        return run_path
    path = run_path.with_name(f"{run_path.stem}-{order}.run")
    if not path.exists():
        job = json.dumps([str(run_path), order, seed, str(path)])
        subprocess.run([sys.executable, __file__, "--reorder", job], check=True)
    return path


def write_reordered(run_path: Path, order: str, seed: int, path: Path) -> None:
    """Write ``path``: the lines of ``run_path`` in ``order``."""
    data = np.fromfile(run_path, dtype=np.uint8)
    ends = np.flatnonzero(data == 10) + 1
    starts = np.concatenate(([0], ends[:-1]))
    lines = np.arange(ends.size)
    if order == "shuffled":
        lines = np.random.default_rng([seed, 7]).permutation(ends.size)
    elif order == "reversed":
        lines = lines[::-1]
    else:
        raise ValueError(f"unknown line order {order!r}; one of {', '.join(LINE_ORDERS)}")
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as out:
        raw = data.tobytes()
        for block in range(0, lines.size, 100_000):
            chosen = lines[block : block + 100_000].tolist()
            out.write(b"".join(raw[starts[i] : ends[i]] for i in chosen))
    tmp.rename(path)


def build_dicts(data: dict[str, np.ndarray]) -> tuple[dict, dict]:
    """The same {qid: {doc: grade}} and {qid: {doc: score}} dicts for every tool."""
    qrels: dict[str, dict[str, int]] = {}
    for q, d, g in zip(data["qrels_query"].tolist(), data["qrels_docs"].tolist(), data["qrels_grades"].tolist()):
        qrels.setdefault(qid(q), {})[f"d{d:07d}"] = g
    run: dict[str, dict[str, float]] = {}
    for q in range(data["run_docs"].shape[0]):
        docs = data["run_docs"][q].tolist()
        scores = (data["run_scores"][q] / 10000.0).tolist()
        run[qid(q)] = {f"d{d:07d}": s for d, s in zip(docs, scores)}
    return qrels, run


# ---- workers (each runs in a fresh process) ---------------------------------------------


def _rss_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _reset_peak() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM (Linux >= 4.0)
    except OSError:
        pass


def worker_memory(tool: str, n: int, depth: int, seed: int, metric_set: str, repeat: int) -> dict:
    names, trec_measures, trec_keys, ranx_names = METRIC_SETS[metric_set]
    data = generate(n, depth, seed)
    qrels, run = build_dicts(data)
    del data
    out: dict = {}
    if tool == "rag_eval":
        import rag_eval

        def call():
            t0 = time.perf_counter()
            results = rag_eval.evaluate(qrels, run, names)
            return {"total": time.perf_counter() - t0}, dict(zip(trec_keys, (results.aggregate[m] for m in names)))

    elif tool == "ranx":
        from ranx import Qrels, Run, evaluate

        def call():
            t0 = time.perf_counter()
            rq, rr = Qrels.from_dict(qrels), Run.from_dict(run)
            t1 = time.perf_counter()
            scores = evaluate(rq, rr, ranx_names)
            t2 = time.perf_counter()
            scores = scores if isinstance(scores, dict) else {ranx_names[0]: scores}
            return {"total": t2 - t0, "eval": t2 - t1}, {k: float(scores[r]) for k, r in zip(trec_keys, ranx_names)}

    elif tool == "pytrec_eval":
        import pytrec_eval

        repeat = 0  # one evaluator per process (global trec_eval state)

        def call():
            t0 = time.perf_counter()
            evaluator = pytrec_eval.RelevanceEvaluator(qrels, trec_measures)
            t1 = time.perf_counter()
            per_query = evaluator.evaluate(run)
            means = {k: sum(v[k] for v in per_query.values()) / len(per_query) for k in trec_keys}
            t2 = time.perf_counter()
            return {"total": t2 - t0, "eval": t2 - t1}, means

    else:
        raise SystemExit(f"unknown tool {tool}")
    gc.collect()
    rss_before = _rss_kib("VmRSS")
    _reset_peak()
    first, aggregate = call()
    out["first"] = first
    out["peak_mib"] = (_rss_kib("VmHWM") - rss_before) / 1024
    warm: list[dict] = []
    for _ in range(repeat):
        gc.collect()
        timing, aggregate = call()
        warm.append(timing)
    if warm:
        out["warm"] = {k: min(t[k] for t in warm) for k in warm[0]}
    out["aggregate"] = aggregate
    return out


RANX_FILE_SCRIPT = """
import json, sys
from ranx import Qrels, Run, evaluate
names = sys.argv[3:]
scores = evaluate(Qrels.from_file(sys.argv[1], kind="trec"), Run.from_file(sys.argv[2], kind="trec"), names)
print(json.dumps(scores if isinstance(scores, dict) else {names[0]: scores}))
"""

PYTREC_FILE_SCRIPT = """
import json, sys
import pytrec_eval
qrels, run = {}, {}
with open(sys.argv[1]) as f:
    for line in f:
        q, _, d, g = line.split()
        qrels.setdefault(q, {})[d] = int(g)
with open(sys.argv[2]) as f:
    for line in f:
        q, _, d, _, s, _ = line.split()
        run.setdefault(q, {})[d] = float(s)
measures = sys.argv[3].split(",")
keys = sys.argv[4].split(",")
per_query = pytrec_eval.RelevanceEvaluator(qrels, set(measures)).evaluate(run)
print(json.dumps({k: sum(v[k] for v in per_query.values()) / len(per_query) for k in keys}))
"""


def file_command(tool: str, qrels_path: Path, run_path: Path, metric_set: str, lenient: bool = False) -> list[str]:
    """The command line of one tool's whole process on two files.

    ``lenient``: for files as users have them (benchmarks/bench_evaluate_files.py): the plain-Python
    read takes a line's first fields and ignores the rest (fields after a run's tag, as trec_eval
    does), and ranx is told ``make_comparable`` (the qrels and the run may hold different queries).
    """
    names, trec_measures, trec_keys, ranx_names = METRIC_SETS[metric_set]
    py = sys.executable
    if tool == "rag_eval":
        metric_args = [a for m in names for a in ("-m", m)]
        script = Path(py).parent / "rag-eval"  # the console script, as users run it
        start = [str(script)] if script.exists() else [py, "-m", "rag_eval.cli"]
        return [*start, "evaluate", "--qrels", str(qrels_path), "--run", str(run_path), *metric_args, "--format", "json"]
    if tool == "ranx":
        code = RANX_FILE_SCRIPT.replace("names)", "names, make_comparable=True)") if lenient else RANX_FILE_SCRIPT
        return [py, "-c", code, str(qrels_path), str(run_path), *ranx_names]
    if tool == "pytrec_eval":
        code = PYTREC_FILE_SCRIPT
        if lenient:
            code = code.replace("g = line.split()", "g = line.split()[:4]").replace("_ = line.split()", "_ = line.split()[:6]")
        return [py, "-c", code, str(qrels_path), str(run_path), ",".join(sorted(trec_measures)), ",".join(trec_keys)]
    raise ValueError(tool)


def child_env(extra: dict | None = None) -> dict:
    """The environment of a measured process: as a user's shell has it (bytecode caching on)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(extra or {})
    return env


def run_process(command: list[str], env: dict | None = None) -> tuple[float, float, str]:
    """Run a whole process; (wall seconds, max RSS MiB, stdout)."""
    env = env if env is not None else child_env()
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.PIPE, env=env, cwd=HERE.parent)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        err = proc.stderr.read().decode(errors="replace")
        proc.stderr.close()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:4])} ... failed ({proc.returncode}):\n{err[-3000:]}")
    return wall, usage.ru_maxrss / 1024, text


def memory_measure(tool: str, n: int, depth: int, seed: int, metric_set: str, repeat: int) -> dict:
    env = child_env()
    cache = None
    if tool == "ranx":
        cache = tempfile.mkdtemp(prefix="numba-cache-")
        env["NUMBA_CACHE_DIR"] = cache  # empty: the first call compiles
    args = json.dumps([tool, n, depth, seed, metric_set, repeat])
    try:
        _, _, text = run_process([sys.executable, __file__, "--worker", args], env)
    finally:
        if cache:
            shutil.rmtree(cache, ignore_errors=True)
    return json.loads(text.strip().splitlines()[-1])


def file_measures(
    tools: list[str], qrels_path: Path, run_path: Path, metric_set: str, repeats: dict, lenient: bool = False
) -> dict:
    """Each tool's best whole-process run; the tools take turns, so a slow spell of the machine
    does not fall on one tool only. ``lenient``: see :func:`file_command`."""
    best: dict[str, tuple] = {}
    for round_number in range(max(repeats.values(), default=0)):
        for tool in tools:
            if round_number < repeats[tool]:
                measured = run_process(file_command(tool, qrels_path, run_path, metric_set, lenient))
                if tool not in best or measured[0] < best[tool][0]:
                    best[tool] = measured
    return {tool: _file_result(tool, metric_set, *best[tool]) for tool in tools}


def _file_result(tool: str, metric_set: str, wall: float, rss: float, text: str) -> dict:
    names, _, trec_keys, ranx_names = METRIC_SETS[metric_set]
    parsed = json.loads(text)
    if tool == "rag_eval":
        aggregate = {k: parsed["aggregate"][m] for k, m in zip(trec_keys, names)}
    elif tool == "ranx":
        aggregate = {k: float(parsed[r]) for k, r in zip(trec_keys, ranx_names)}
    else:
        aggregate = parsed
    return {"wall": wall, "rss_mib": rss, "aggregate": aggregate}


def max_diff(a: dict, b: dict) -> float:
    return max(abs(a[k] - b[k]) for k in b)


# ---- report -------------------------------------------------------------------------


def versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    def v(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "n/a"

    return (
        f"Python {platform.python_version()}, numpy {v('numpy')}, pandas {v('pandas')}, rag_eval {v('rag-eval')}, "
        f"ranx {v('ranx')} (numba {v('numba')}), pytrec_eval-terrier {v('pytrec-eval-terrier')}; "
        f"{os.cpu_count()} CPU cores, {platform.machine()}, Linux {platform.release()}"
    )


def fmt_s(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--seed", type=int, default=20240611)
    parser.add_argument("--cases", help="comma-separated n x depth, e.g. 10000x100,100000x100")
    parser.add_argument("--only", choices=("memory", "files"), help="run only one of the two tables")
    parser.add_argument("--tools", default="rag_eval,ranx,pytrec_eval")
    parser.add_argument("--line-orders", default="sorted",
                        help=f"comma-separated orders of the run file's lines for the files table: {', '.join(LINE_ORDERS)}")
    parser.add_argument("--repeats", type=int, help="whole-process runs per tool in the files table (best is kept)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--reorder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker_memory(*json.loads(args.worker))))
        return 0
    if args.reorder:
        run_path, order, seed, path = json.loads(args.reorder)
        write_reordered(Path(run_path), order, seed, Path(path))
        return 0

    cases = QUICK_CASES if args.quick else FULL_CASES
    if args.cases:
        cases = [tuple(int(x) for x in c.split("x")) for c in args.cases.split(",")]
    tools = args.tools.split(",")
    line_orders = args.line_orders.split(",")
    print(f"<!-- {versions()}; niceness {os.nice(0)}; load average at start {os.getloadavg()} -->", flush=True)
    memory_rows, file_rows, failures = [], [], []
    order_walls: dict[str, dict[str, float]] = {}  # "case | metrics" -> line order -> rag_eval seconds
    for n, depth in cases:
        t0 = time.perf_counter()
        data = generate(n, depth, args.seed)
        qrels_path, run_path = write_files(n, depth, args.seed, data)
        del data
        size_mib = run_path.stat().st_size / 2**20
        print(f"<!-- data {case_name(n, depth)}: run file {size_mib:.0f} MiB, ready in "
              f"{time.perf_counter() - t0:.0f} s -->", flush=True)
        for metric_set in METRIC_SETS:
            label = f"{case_name(n, depth)} | {metric_set}"
            if args.only in (None, "memory"):
                res = {t: memory_measure(t, n, depth, args.seed, metric_set, 2) for t in tools}
                check = _check(label + " (in memory)", res, failures)
                memory_rows.append((label, res, check))
                print(f"<!-- {label} in memory: {json.dumps(res)} -->", flush=True)
            if args.only in (None, "files"):
                # Whole processes are noisy on a shared machine (a run can be 30% faster than the
                # next): best of 5 for rag_eval and pytrec_eval, whose ratio is closest to its
                # target, of 3 for ranx; of 2 for the slow tools on the largest files, where one
                # run takes up to a minute.
                small = size_mib < 150
                repeats = {t: 5 if t == "rag_eval" or (small and t == "pytrec_eval") else 3 if small else 2 for t in tools}
                if args.repeats:
                    repeats = dict.fromkeys(tools, args.repeats)
                for order in line_orders:
                    ordered_label = label if line_orders == ["sorted"] else f"{case_name(n, depth)}, {order} | {metric_set}"
                    res = file_measures(tools, qrels_path, reorder_lines(run_path, order, args.seed), metric_set, repeats)
                    check = _check(ordered_label + " (files)", res, failures)
                    file_rows.append((ordered_label, size_mib, res, check))
                    if "rag_eval" in res:
                        order_walls.setdefault(label, {})[order] = res["rag_eval"]["wall"]
                    print(f"<!-- {ordered_label} files: {json.dumps(res)} -->", flush=True)
        gc.collect()

    print()
    print(f"Machine: {versions()}. Load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}.")
    if memory_rows:
        print()
        print("In memory (seconds; same Python dicts for every tool; each tool in a fresh process):")
        print()
        print("| case | metrics | rag_eval first | rag_eval warm | ranx first (compile) | ranx warm | "
              "ranx warm eval only | pytrec_eval | pytrec_eval eval only | speedup vs ranx warm | "
              "peak MiB rag_eval / ranx / pytrec | agree |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for label, res, check in memory_rows:
            r, x, p = res.get("rag_eval"), res.get("ranx"), res.get("pytrec_eval")
            speed_text = f"{x['warm']['total'] / r['warm']['total']:.1f}x" if r and x else "-"
            peaks = " / ".join(f"{res[t]['peak_mib']:.0f}" if t in res else "-" for t in ("rag_eval", "ranx", "pytrec_eval"))
            print(
                f"| {label} | {fmt_s(r['first']['total']) if r else '-'} | {fmt_s(r['warm']['total']) if r else '-'} | "
                f"{fmt_s(x['first']['total']) if x else '-'} | {fmt_s(x['warm']['total']) if x else '-'} | "
                f"{fmt_s(x['warm']['eval']) if x else '-'} | {fmt_s(p['first']['total']) if p else '-'} | "
                f"{fmt_s(p['first']['eval']) if p else '-'} | {speed_text} | {peaks} | {check} |"
            )
    if file_rows:
        print()
        print("From TREC files, whole processes (seconds, max RSS; interpreter start to printed result):")
        print()
        print("| case | metrics | run file MiB | rag_eval | ranx | pytrec_eval (plain-Python read) | "
              "speedup vs ranx | speedup vs pytrec_eval | max RSS MiB rag_eval / ranx / pytrec | "
              "rag_eval RSS / run file | agree |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for label, size, res, check in file_rows:
            r, x, p = res.get("rag_eval"), res.get("ranx"), res.get("pytrec_eval")
            rss = " / ".join(f"{res[t]['rss_mib']:.0f}" if t in res else "-" for t in ("rag_eval", "ranx", "pytrec_eval"))
            vs_ranx = f"{x['wall'] / r['wall']:.1f}x" if r and x else "-"
            vs_pytrec = f"{p['wall'] / r['wall']:.1f}x" if r and p else "-"
            ratio = f"{r['rss_mib'] / size:.2f}x" if r else "-"
            print(
                f"| {label} | {size:.0f} | {fmt_s(r['wall']) if r else '-'} | {fmt_s(x['wall']) if x else '-'} | "
                f"{fmt_s(p['wall']) if p else '-'} | {vs_ranx} | {vs_pytrec} | {rss} | {ratio} | {check} |"
            )
    if len(line_orders) > 1:
        print()
        print("Line order of the run file (rag_eval, whole process, seconds; ratio to the sorted file):")
        print()
        print("| case | metrics | " + " | ".join(line_orders) + " |")
        print("|---|---|" + "---:|" * len(line_orders))
        for label, walls in order_walls.items():
            base = walls.get("sorted")
            cells = [f"{fmt_s(walls[o])}" + (f" ({walls[o] / base:.2f}x)" if base and o != "sorted" else "")
                     for o in line_orders]
            print(f"| {label} | " + " | ".join(cells) + " |")
    if failures:
        print()
        for line in failures:
            print(f"DISAGREEMENT: {line}")
        return 1
    return 0


def _check(label: str, res: dict, failures: list[str]) -> str:
    """rag_eval vs pytrec_eval to 1e-9 (required); ranx vs pytrec_eval shown."""
    if "pytrec_eval" not in res:
        return "not checked"
    ref = res["pytrec_eval"]["aggregate"]
    parts = []
    if "rag_eval" in res:
        diff = max_diff(res["rag_eval"]["aggregate"], ref)
        ok = diff <= TOLERANCE
        parts.append(f"rag_eval {'✓' if ok else '✗'} ({diff:.0e})")
        if not ok:
            failures.append(f"{label}: rag_eval {res['rag_eval']['aggregate']} vs pytrec_eval {ref}")
    if "ranx" in res:
        parts.append(f"ranx Δ {max_diff(res['ranx']['aggregate'], ref):.0e}")
    return ", ".join(parts)


if __name__ == "__main__":
    sys.exit(main())
