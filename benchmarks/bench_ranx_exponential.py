"""rag_eval's exponential-gain nDCG against ranx's ``ndcg_burges``, on random tie-free data.

This comparison was a test (tests/test_differential.py) until it was seen to spend its time
compiling ranx's numba code, on every run of the suite (ranx builds numba typed dicts, which
are compiled in each process whatever numba's on-disk cache holds). The suite now checks
exponential gain against trec_eval instead (pytrec_eval on grades mapped to 2^g - 1, in
``test_matches_trec_eval_per_query``); this script keeps the check against a second,
independent implementation, at a size a test could not afford, and says what ranx costs.

Data: ``--batches`` batches of ``--queries`` queries each (seeded), drawn as the test drew them:
per query 1-8 judged documents with grades 0..4 and 1-12 retrieved documents with distinct
scores (ranx orders tied scores its own way, so there are none), over ids whose byte order
differs from numeric and case-insensitive order. Every query of every batch is compared, for
``ndcg`` and ``ndcg@k`` at k = 1, 2, 3, 5, 10, 20, with ``no_relevant="zero"`` (ranx scores a
query without a relevant document 0). The script fails unless every value agrees within 1e-9,
and unless ranx itself gives the hand-derived value on a two-query example.

    .venv/bin/python benchmarks/bench_ranx_exponential.py
    .venv/bin/python benchmarks/bench_ranx_exponential.py --queries 200 --batches 3   # smoke test

Prints one markdown row (times in seconds): ranx's first call with an empty numba cache
(``NUMBA_CACHE_DIR`` set to a new folder before ranx is imported: everything is compiled, as
on a first use), its later calls, rag_eval's calls, and the largest difference. Needs the
``bench`` extra (ranx).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import math
import os
import platform
import random
import sys
import tempfile
import time
import warnings

DOCS = ["d0", "d1", "d2", "d9", "d10", "d11", "D3", "a", "ab", "b", "Z9", "z"]
CUTS = (1, 2, 3, 5, 10, 20)


def tie_free_batch(rng: random.Random, queries: int) -> tuple[dict, dict]:
    """``(judgements, run)`` of ``queries`` queries, as the test's ``tie_free_case`` drew them."""
    judgements, run = {}, {}
    for n in range(queries):
        judged = rng.sample(DOCS, rng.randint(1, 8))
        retrieved = rng.sample(DOCS, rng.randint(1, len(DOCS)))
        values = [v * 0.25 - 1.0 for v in range(len(retrieved))]
        rng.shuffle(values)  # distinct scores in a random order: no ties
        judgements[f"q{n}"] = {d: rng.randint(0, 4) for d in judged}
        run[f"q{n}"] = dict(zip(retrieved, values))
    return judgements, run


def ranx_values(qrels: dict, run: dict, metrics: list[str]) -> dict[str, dict[str, float]]:
    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate

    ranx_run = Run(run)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba type-safety warnings inside ranx
        # threads=1: ranx otherwise switches numba's thread count by query count, which is slow.
        ranx_evaluate(Qrels(qrels), ranx_run, metrics, return_mean=False, save_results_in_run=True, threads=1)
    # ranx keeps each query's value, keyed by query id, in the Run object.
    return {m: {q: float(v) for q, v in ranx_run.scores[m].items()} for m in metrics}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=2000, help="queries per batch (default 2000)")
    parser.add_argument("--batches", type=int, default=5, help="batches, each a ranx call (default 5)")
    parser.add_argument("--seed", type=int, default=20261127)
    args = parser.parse_args()

    # Before ranx (and numba) is imported: an empty cache, so the first call compiles everything.
    os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="numba-cache-")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        started = time.perf_counter()
        import numba
        import ranx  # noqa: F401  (timed: its import compiles nothing yet)
        import_s = time.perf_counter() - started

    from rag_eval import __version__, evaluate

    # Hand check of ranx itself: grades a=2, d=1 (d missed); run a, b, c. Exponential DCG = 2^2 - 1 = 3
    # (a at rank 1); IDCG = 3 + (2^1 - 1)/log2(3). Query p has nothing relevant: ranx scores it 0.
    started = time.perf_counter()
    hand = ranx_values(
        {"q": {"a": 2, "b": 0, "d": 1}, "p": {"a": 0}},
        {"q": {"a": 1.0, "b": 0.5, "c": 0.25}, "p": {"a": 1.0}},
        ["ndcg_burges"],
    )["ndcg_burges"]
    first_s = time.perf_counter() - started
    if abs(hand["q"] - 3 / (3 + 1 / math.log2(3))) > 1e-12 or hand["p"] != 0.0:
        print(f"ranx's ndcg_burges is not the definition on the hand example: {hand}", file=sys.stderr)
        return 1

    ranx_metrics = ["ndcg_burges"] + [f"ndcg_burges@{k}" for k in CUTS]
    ours = ["ndcg"] + [f"ndcg@{k}" for k in CUTS]
    rng = random.Random(args.seed)
    ranx_times, ours_times, worst, compared = [], [], 0.0, 0
    for _ in range(args.batches):
        judgements, run = tie_free_batch(rng, args.queries)
        started = time.perf_counter()
        reference = ranx_values(judgements, run, ranx_metrics)
        ranx_times.append(time.perf_counter() - started)
        started = time.perf_counter()
        results = evaluate(judgements, run, ours, gain="exponential", no_relevant="zero")
        ours_times.append(time.perf_counter() - started)
        for ranx_name, name in zip(ranx_metrics, ours):
            for qid in results.query_ids:
                difference = abs(results.value(name, qid) - reference[ranx_name][qid])
                if difference > 1e-9:
                    print(f"{name} {qid}: rag_eval {results.value(name, qid)!r}, ranx {reference[ranx_name][qid]!r}",
                          file=sys.stderr)
                    return 1
                worst = max(worst, difference)
                compared += 1

    print(f"<!-- Python {platform.python_version()}, rag_eval {__version__}, ranx {importlib.metadata.version('ranx')} "
          f"(numba {numba.__version__}); {os.cpu_count()} CPUs; load average {os.getloadavg()} -->")
    print("| queries compared | values compared | ranx import | ranx first call (compiles) | ranx later call, "
          "best | rag_eval call, best | largest difference |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {args.queries * args.batches:,} | {compared:,} | {import_s:.2f} | {first_s:.2f} | {min(ranx_times):.3f} "
          f"| {min(ours_times):.3f} | {worst:.1e} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
