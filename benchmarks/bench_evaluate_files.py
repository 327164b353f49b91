"""`rag-eval evaluate` from TREC files as users have them, against pytrec_eval and ranx.

    python benchmarks/bench_evaluate_files.py            # every case (about 25 minutes on 2 cores)
    python benchmarks/bench_evaluate_files.py --quick    # small sizes, a smoke test (a few minutes)
    python benchmarks/bench_evaluate_files.py --cases own,trec_eval --tools rag_eval,pytrec_eval
    python benchmarks/bench_evaluate_files.py --only growth   # read time at 1x and 10x the size

benchmarks/bench_metrics.py measures the engine on one kind of file: 8-character ids, scores with
4 decimals, one tab between fields. Files as users have them differ, and each difference once
took the reader off its fast path. The cases here are those files:

* ``own``: the run files rag_eval itself writes (``rag-eval run``, rag_eval._core.trec.format_run):
  scores written as ``repr`` of the float, 16 or 17 significant digits. SciFact and NFCorpus with
  BM25 (the real runs: ``rag-eval run`` on a BM25-only copy of configs/scifact.yaml and
  configs/nfcorpus.yaml, when ../shared/datasets holds the data), and synthetic runs of that
  format at bench_metrics' sizes (its data; float32 scores as BM25 gives them, written as repr).
* ``trec_eval``: trec_eval's own test files (../shared/datasets/trec_eval_test: results.test has
  a tab and two spaces before each score; results.trunc has fields after the tag), as they are and
  scaled up (the topics repeated under new ids, every byte of the layout kept).
* ``long_ids``: bench_metrics' data with long UTF-8 ids (``query-é-000042/topic``,
  ``doc/Übersicht-0042424#passage-7``) and repr scores, with the run's lines as written and
  shuffled (trec_eval ignores the line order; so must the speed).
* ``growth`` (``--only growth``): rag_eval's reading, joining and scoring in one process, at a
  size and ten times that size, best of 3 fresh processes each: the time per line must not grow.

Method: bench_metrics' (imported, not copied): a whole process per tool timed from outside,
the tools taking turns, the best of several runs kept; pytrec_eval reads the files with plain
Python (``line.split()``; here the first fields of a line, as trec_eval reads them), ranx with
``Qrels/Run.from_file`` (``make_comparable``: real qrels and runs hold different queries) and
its numba cache warm (a first, untimed run compiles). rag_eval's means must equal pytrec_eval's
within 1e-9 or the script fails.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_metrics as bm  # noqa: E402  (the data and the method of the main benchmark)

ROOT = HERE.parent
DATA = bm.DATA / "files"
SHARED = ROOT.parent / "shared" / "datasets"
TREC_EVAL_TESTS = SHARED / "trec_eval_test"
SCALE_TREC_EVAL = 400  # copies of trec_eval's test topics in the scaled files (600,000 run lines)


# ---- files ------------------------------------------------------------------------------------


def long_qid(q: int) -> str:
    return f"query-é-{q:06d}/topic"


def long_doc(d: int) -> str:
    return f"doc/Übersicht-{d:07d}#passage-{d % 13}"


def repr_score(units: int) -> str:
    """A BM25-like float32 score written as rag_eval writes scores (repr: 16-17 significant digits)."""
    return repr(float(np.float32(units / 10000)))


def synthetic_files(n: int, depth: int, seed: int, ids: str) -> tuple[Path, Path]:
    """bench_metrics' data of one case as a run in rag_eval's own format (tabs, repr scores, tag rag_eval).

    ``ids``: "short" (bench_metrics' q000042 and d0042424) or "long" (UTF-8, 21 and 33-34 bytes).
    """
    name = f"{bm.case_name(n, depth)}-s{seed}-{ids}-repr"
    qrels_path, run_path = DATA / f"{name}.qrels", DATA / f"{name}.run"
    if qrels_path.exists() and run_path.exists():
        return qrels_path, run_path
    data = bm.generate(n, depth, seed)
    qid, doc = (long_qid, long_doc) if ids == "long" else (bm.qid, lambda d: f"d{d:07d}")
    DATA.mkdir(parents=True, exist_ok=True)
    tmp = qrels_path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as out:
        rows = zip(data["qrels_query"].tolist(), data["qrels_docs"].tolist(), data["qrels_grades"].tolist())
        out.writelines(f"{qid(q)} 0 {doc(d)} {g}\n" for q, d, g in rows)
    tmp.rename(qrels_path)
    tmp = run_path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as out:
        for q in range(n):
            name_q = qid(q)
            docs, scores = data["run_docs"][q].tolist(), data["run_scores"][q].tolist()
            out.write("".join(
                f"{name_q}\tQ0\t{doc(d)}\t{rank}\t{repr_score(s)}\trag_eval\n"
                for rank, (d, s) in enumerate(zip(docs, scores), start=1)
            ))
    tmp.rename(run_path)
    return qrels_path, run_path


def own_runs() -> list[tuple[str, Path, Path]]:
    """(label, TREC qrels, run) of rag_eval's own BM25 runs of SciFact and NFCorpus, made once with
    ``rag-eval run``; none when the datasets are not there."""
    import yaml

    found = []
    for name in ("scifact", "nfcorpus"):
        folder = DATA / f"own-{name}"  # the config and the qrels; rag-eval run writes into output/
        run_path, qrels_path = folder / "output" / "bm25.run", folder / "qrels.trec"
        if not run_path.exists():
            config = yaml.safe_load((ROOT / "configs" / f"{name}.yaml").read_text())
            dataset = config["dataset"]
            for key in ("path", "qrels", "queries", "corpus"):
                if key in dataset:  # relative to the config file
                    dataset[key] = str((ROOT / "configs" / dataset[key]).resolve())
            if not Path(dataset.get("path") or dataset["qrels"]).exists():
                print(f"<!-- own runs: {name} skipped, no data at {dataset.get('path') or dataset['qrels']} -->")
                continue
            config["retrievers"] = [r for r in config["retrievers"] if r["label"] == "bm25"]
            config["output"] = str(folder / "output")
            config["cache_dir"] = str(DATA / "own-cache")
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / "bm25-only.yaml"
            path.write_text(yaml.safe_dump(config, sort_keys=False))
            script = Path(sys.executable).parent / "rag-eval"
            subprocess.run([str(script), "run", str(path), "--no-progress"], check=True, cwd=ROOT,
                           stdout=subprocess.DEVNULL)
        if not qrels_path.exists():
            dataset = yaml.safe_load((folder / "bm25-only.yaml").read_text())["dataset"]
            if dataset["format"] == "beir":  # BEIR TSV -> TREC qrels, the one format every tool reads
                source = Path(dataset["path"]) / "qrels" / f"{dataset.get('split', 'test')}.tsv"
                rows = [line.split("\t") for line in source.read_text().splitlines()[1:] if line.strip()]
                qrels_path.write_text("".join(f"{q} 0 {d} {g.strip()}\n" for q, d, g in rows))
            else:
                text = Path(dataset["qrels"]).read_text()
                qrels_path.write_text(text if text.endswith("\n") else text + "\n")
        found.append((f"{name} bm25, rag_eval's own run", qrels_path, run_path))
    return found


def scaled_trec_eval(qrels_name: str, run_name: str, copies: int) -> tuple[Path, Path]:
    """trec_eval's test qrels and run with their topics repeated ``copies`` times under new ids
    (``301`` becomes ``301.0``, ``301.1``, ...); every other byte of every line as it was."""
    qrels_path = DATA / f"{qrels_name}.x{copies}"
    run_path = DATA / f"{run_name}.x{copies}"
    DATA.mkdir(parents=True, exist_ok=True)
    for source, target in ((TREC_EVAL_TESTS / qrels_name, qrels_path), (TREC_EVAL_TESTS / run_name, run_path)):
        if target.exists():
            continue
        lines = source.read_bytes().splitlines(keepends=True)
        split = [(line[: len(line) - len(line.lstrip())], line.lstrip()) for line in lines]
        tmp = target.with_suffix(".tmp")
        with tmp.open("wb") as out:
            for k in range(copies):
                tag = f".{k}".encode()
                out.writelines(lead + rest[:_id_end(rest)] + tag + rest[_id_end(rest):] for lead, rest in split)
        tmp.rename(target)
    return qrels_path, run_path


def _id_end(line: bytes) -> int:
    for i, byte in enumerate(line):
        if byte in b" \t\r\n\v\f":
            return i
    return len(line)


# ---- measuring --------------------------------------------------------------------------------


def measure(tools: list[str], qrels: Path, run: Path, metric_set: str, repeats: dict) -> dict:
    """bench_metrics.file_measures with its lenient read; a tool that cannot read the files is reported."""
    res = {}
    readable = [t for t in tools if not (t == "ranx" and _has_fields_after_tag(run))]
    res.update(bm.file_measures(readable, qrels, run, metric_set, repeats, lenient=True))
    for tool in tools:
        if tool not in readable:
            res[tool] = {"error": "reads exactly 6 fields a line (this run has fields after the tag)"}
    return res


def _has_fields_after_tag(run: Path) -> bool:
    with run.open("rb") as handle:
        return any(len(line.split()) > 6 for line in handle)


def warm_ranx(qrels: Path, run: Path, metric_set: str) -> None:
    """One untimed ranx run, so that numba's on-disk cache is warm for the timed ones."""
    bm.run_process(bm.file_command("ranx", qrels, run, metric_set, lenient=True))


GROWTH_SCRIPT = """
import json, sys, time
t0 = time.perf_counter()
from rag_eval._core import allocator
from rag_eval._scoring.engine import prepare, read_judgements, read_run
from rag_eval._scoring.evaluate import EvaluationOptions, passage_metrics, score
from rag_eval._scoring.metrics.measures import parse_metrics
allocator.keep_freed_memory()
t1 = time.perf_counter()
judgements, _ = read_judgements(sys.argv[1])
t2 = time.perf_counter()
run = read_run(sys.argv[2])
t3 = time.perf_counter()
joined = prepare(judgements, run)
results = score(joined, passage_metrics(parse_metrics(["ndcg@10"]), ""), EvaluationOptions())
t4 = time.perf_counter()
print(json.dumps({"lines": len(run), "qrels": t2 - t1, "run": t3 - t2, "join_score": t4 - t3, "total": t4 - t1}))
"""


def agreement(label: str, res: dict, qrels: Path, run: Path, failures: list[str]) -> str:
    """bench_metrics' check (rag_eval's means equal pytrec_eval's within 1e-9), on the queries both average.

    rag-eval evaluate computes trec_eval -c with --no-relevant skip (docs/semantics.md): the mean over the
    judged queries that have a relevant document, an unanswered one counting 0; pytrec_eval's mean is over
    the judged queries the run answers. When the files hold queries where these differ (real runs, results.trunc),
    pytrec_eval's mean times answered / relevant is what rag_eval's must equal.
    """
    measured = {tool: result for tool, result in res.items() if "error" not in result}
    found: list[str] = []
    check = bm._check(label, measured, found)
    if not found:
        return check
    answered, relevant = _query_counts(qrels, run)
    expected = {k: v * answered / relevant for k, v in measured["pytrec_eval"]["aggregate"].items()}
    diff = bm.max_diff(measured["rag_eval"]["aggregate"], expected)
    if diff > bm.TOLERANCE:
        failures.extend(found)
        return check
    return f"rag_eval ✓ ({diff:.0e}; pytrec_eval x {answered}/{relevant} queries, as trec_eval -c)"


def _query_counts(qrels: Path, run: Path) -> tuple[int, int]:
    """(judged queries the run answers, judged queries with a relevant document), read with plain Python."""
    best: dict[str, int] = {}
    with qrels.open() as handle:
        for line in handle:
            fields = line.split()
            if fields:
                best[fields[0]] = max(best.get(fields[0], -(2**31)), int(fields[3]))
    with run.open() as handle:
        answered = {fields[0] for fields in map(str.split, handle) if fields}
    return len(answered & best.keys()), sum(1 for grade in best.values() if grade >= 1)


def growth_measure(qrels: Path, run: Path, repeats: int = 3) -> dict:
    best: dict | None = None
    for _ in range(repeats):
        _, _, text = bm.run_process([sys.executable, "-c", GROWTH_SCRIPT, str(qrels), str(run)])
        got = json.loads(text.strip().splitlines()[-1])
        if best is None or got["total"] < best["total"]:
            best = got
    assert best is not None
    return best


# ---- main -------------------------------------------------------------------------------------


def _wall(measured: dict | None) -> str:
    if not measured:
        return "-"
    return bm.fmt_s(measured["wall"]) if "wall" in measured else "cannot read"


def _ratio(peer: dict | None, ours: dict | None) -> str:
    if not (peer and ours and "wall" in peer and "wall" in ours):
        return "-"
    return f"{peer['wall'] / ours['wall']:.1f}x"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--seed", type=int, default=20240611)
    parser.add_argument("--cases", default="own,trec_eval,long_ids", help="comma-separated: own, trec_eval, long_ids")
    parser.add_argument("--only", choices=("files", "growth"), help="run only one of the two tables")
    parser.add_argument("--tools", default="rag_eval,ranx,pytrec_eval")
    parser.add_argument("--metrics", default="ndcg@10", choices=list(bm.METRIC_SETS))
    parser.add_argument("--repeats", type=int, help="whole-process runs per tool (best is kept)")
    parser.add_argument("--sizes", help="comma-separated n x depth of the synthetic runs (default 10000x300,100000x100)")
    args = parser.parse_args()
    tools = args.tools.split(",")
    cases = args.cases.split(",")
    sizes = [(1_000, 300)] if args.quick else [(10_000, 300), (100_000, 100)]
    if args.sizes:
        sizes = [(int(n), int(depth)) for n, depth in (size.split("x") for size in args.sizes.split(","))]
    growth_sizes = [((100, 300), (1_000, 300))] if args.quick else [((1_000, 300), (10_000, 300))]
    print(f"<!-- {bm.versions()}; niceness {os.nice(0)}; load average at start {os.getloadavg()} -->", flush=True)

    # (group, label, qrels, run)
    files: list[tuple[str, str, Path, Path]] = []
    if "own" in cases:
        files += [("own", label, q, r) for label, q, r in own_runs()]
        for n, depth in sizes:
            q, r = synthetic_files(n, depth, args.seed, "short")
            files.append(("own", f"{bm.case_name(n, depth)} synthetic, rag_eval's format (repr scores)", q, r))
    if "trec_eval" in cases:
        if TREC_EVAL_TESTS.exists():
            for qrels_name, run_name in (("qrels.test", "results.test"), ("qrels.rel_level", "results.test"),
                                         ("qrels.test", "results.trunc")):
                files.append(("trec_eval", f"{qrels_name} + {run_name}", TREC_EVAL_TESTS / qrels_name,
                              TREC_EVAL_TESTS / run_name))
            copies = 40 if args.quick else SCALE_TREC_EVAL
            q, r = scaled_trec_eval("qrels.test", "results.test", copies)
            files.append(("trec_eval", f"qrels.test + results.test, topics x{copies}", q, r))
        else:
            print(f"<!-- trec_eval: skipped, no test files at {TREC_EVAL_TESTS} -->")
    if "long_ids" in cases:
        for n, depth in sizes:
            q, r = synthetic_files(n, depth, args.seed, "long")
            files.append(("long_ids", f"{bm.case_name(n, depth)} long UTF-8 ids, repr scores", q, r))
            if (n, depth) == sizes[0]:
                shuffled = bm.reorder_lines(r, "shuffled", args.seed)
                files.append(("long_ids", f"{bm.case_name(n, depth)} long UTF-8 ids, repr scores, shuffled", q,
                              shuffled))

    rows = []
    failures: list[str] = []
    if args.only in (None, "files") and files:
        if "ranx" in tools:
            warm_ranx(files[0][2], files[0][3], args.metrics)
        for group, label, qrels, run in files:
            size_mib = run.stat().st_size / 2**20
            small = size_mib < 150
            repeats = {t: 5 if t == "rag_eval" or (small and t == "pytrec_eval") else 3 if small else 2 for t in tools}
            if args.repeats:
                repeats = dict.fromkeys(tools, args.repeats)
            res = measure(tools, qrels, run, args.metrics, repeats)
            check = agreement(label, res, qrels, run, failures)
            rows.append((group, label, size_mib, res, check))
            print(f"<!-- {label}: {json.dumps(res)} -->", flush=True)

    growth_rows = []
    if args.only in (None, "growth"):
        for (n1, d1), (n2, d2) in growth_sizes:
            for ids in ("short", "long"):
                small_files = synthetic_files(n1, d1, args.seed, ids)
                large_files = synthetic_files(n2, d2, args.seed, ids)
                for order in ("sorted", "shuffled"):
                    a = growth_measure(small_files[0], bm.reorder_lines(small_files[1], order, args.seed))
                    b = growth_measure(large_files[0], bm.reorder_lines(large_files[1], order, args.seed))
                    label = f"{ids} ids, repr scores, {order}: {bm.case_name(n1, d1)} -> {bm.case_name(n2, d2)}"
                    growth_rows.append((label, a, b))
                    print(f"<!-- growth {label}: {json.dumps([a, b])} -->", flush=True)

    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print()
    print(f"Machine: {bm.versions()}. Load average at the end: {load}.")
    if rows:
        print()
        print("From TREC files, whole processes (seconds, best of several; interpreter start to printed result):")
        print()
        print("| files | run file MiB | rag_eval | pytrec_eval (plain-Python read) | ranx (numba cache warm) | "
              "speedup vs pytrec_eval | speedup vs ranx | max RSS MiB rag_eval / pytrec / ranx | agree |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
        for _, label, size, res, check in rows:
            ours, peer, other = (res.get(t) for t in ("rag_eval", "pytrec_eval", "ranx"))
            rss = " / ".join(f"{m['rss_mib']:.0f}" if m and "rss_mib" in m else "-" for m in (ours, peer, other))
            print(f"| {label} | {size:.1f} | {_wall(ours)} | {_wall(peer)} | {_wall(other)} | {_ratio(peer, ours)} | "
                  f"{_ratio(other, ours)} | {rss} | {check} |")
        by_order = {label.removesuffix(", shuffled"): res for _, label, _, res, _ in rows if label.endswith("shuffled")}
        if by_order:
            print()
            print("Line order (rag_eval, whole process): shuffled / sorted")
            print()
            for label, later in by_order.items():
                first = next(res0 for _, l0, _, res0, _ in rows if l0 == label)
                print(f"- {label}: {bm.fmt_s(first['rag_eval']['wall'])} s sorted, "
                      f"{bm.fmt_s(later['rag_eval']['wall'])} s shuffled: "
                      f"{later['rag_eval']['wall'] / first['rag_eval']['wall']:.2f}x")
    if growth_rows:
        print()
        print("Growth with size (rag_eval in one process: reading both files, joining, scoring; best of 3; "
              "imports and interpreter start excluded):")
        print()
        print("| files | lines 1x | seconds 1x | lines 10x | seconds 10x | time ratio | per-line ratio |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for label, a, b in growth_rows:
            per_line = (b["total"] / b["lines"]) / (a["total"] / a["lines"])
            print(f"| {label} | {a['lines']:,} | {bm.fmt_s(a['total'])} | {b['lines']:,} | {bm.fmt_s(b['total'])} | "
                  f"{b['total'] / a['total']:.1f}x | {per_line:.2f} |")
    if failures:
        print()
        for line in failures:
            print(f"DISAGREEMENT: {line}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
