"""Speed of rag_eval.evaluate_evidence: evidence metrics of many queries, in memory.

    python benchmarks/bench_evidence.py                   # 10,000 queries x 100 spans x 3 evidence spans
    python benchmarks/bench_evidence.py --queries 1000    # a quick look

Synthetic data (deterministic from --seed): 2,000 documents of 20,000 characters cut
into windows of 500 characters every 250 (overlapping chunks). Each query has 3
evidence spans of 50-400 characters in 1-2 documents, and retrieves 100 distinct
chunks, about a third of them from its evidence documents, scores descending with 4
decimals (ties are few but present). The timed call is ``evaluate_evidence(evidence, spans, metrics)`` on the
``{qid: [(doc, start, end, score), ...]}`` dicts (building them is not timed), for
evidence_recall / precision / iou at 5, 10 and 100 and with a 2,000-character
budget; further rows add document metrics (MaxP) and spans given in shuffled order.
Each row is the best of --repeats calls (the first call is shown too).
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from rag_eval import evaluate_evidence

N_DOCS, DOC_CHARS, WINDOW, STEP = 2_000, 20_000, 500, 250
EVIDENCE_METRICS = [f"evidence_{m}@{k}" for k in (5, 10, 100) for m in ("recall", "precision", "iou")] + [
    f"evidence_{m}@2000chars" for m in ("recall", "precision", "iou")
]
DOC_METRICS = ["doc_ndcg@10", "doc_recall@100", "doc_mrr@10"]


def make_data(n_queries: int, n_spans: int, n_evidence: int, seed: int):
    """(evidence, spans, spans in shuffled order) dicts."""
    rng = np.random.default_rng(seed)
    docs = [f"doc{i:05d}" for i in range(N_DOCS)]
    windows = (DOC_CHARS - WINDOW) // STEP + 1
    # Evidence: each query's spans in one or two documents.
    evidence_doc = rng.integers(0, N_DOCS, size=(n_queries, 2))
    which = rng.integers(0, 2, size=(n_queries, n_evidence))
    e_doc = np.take_along_axis(evidence_doc, which, axis=1)
    e_len = rng.integers(50, 401, size=(n_queries, n_evidence))
    e_start = rng.integers(0, DOC_CHARS - 400, size=(n_queries, n_evidence))
    # Retrieved chunks: a third from the evidence documents, the rest anywhere; distinct per query.
    from_evidence = rng.random((n_queries, n_spans)) < 1 / 3
    s_doc = np.where(
        from_evidence,
        np.take_along_axis(evidence_doc, rng.integers(0, 2, size=(n_queries, n_spans)), axis=1),
        rng.integers(0, N_DOCS, size=(n_queries, n_spans)),
    )
    s_window = rng.integers(0, windows, size=(n_queries, n_spans))
    key = s_doc * windows + s_window
    key.sort(axis=1)
    repeat = np.zeros_like(key, dtype=bool)
    repeat[:, 1:] = key[:, 1:] == key[:, :-1]
    key[repeat] = (key[repeat] + rng.integers(1, 10**6, size=int(repeat.sum()))) % (N_DOCS * windows)
    key = np.array([np.unique(row) for row in key], dtype=object)  # (rare) repeats left: dropped below
    # Scores with 4 decimals, as bench_metrics.py: ties are few but present.
    scores = np.round(np.sort(rng.random((n_queries, n_spans)), axis=1)[:, ::-1], 4)
    evidence, spans, shuffled = {}, {}, {}
    for q in range(n_queries):
        qid = f"q{q:06d}"
        placed = zip(e_doc[q].tolist(), e_start[q].tolist(), e_len[q].tolist())
        evidence[qid] = [(docs[d], s, s + n, 1.0) for d, s, n in placed]
        row = rng.permutation(key[q])
        spans[qid] = _spans(docs, windows, row.tolist(), scores[q].tolist())
        # The same spans, listed in no order (built afresh, as a retriever that does not sort would).
        mixed = rng.permutation(len(row))
        shuffled[qid] = _spans(docs, windows, row[mixed].tolist(), scores[q][mixed].tolist())
    return evidence, spans, shuffled


def _spans(docs: list[str], windows: int, keys: list[int], scores: list[float]) -> list[tuple[str, int, int, float]]:
    return [(docs[k // windows], k % windows * STEP, k % windows * STEP + WINDOW, s) for k, s in zip(keys, scores)]


def timed(repeats: int, call) -> tuple[float, float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return times[0], min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--spans", type=int, default=100)
    parser.add_argument("--evidence", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    evidence, spans, shuffled = make_data(args.queries, args.spans, args.evidence, args.seed)
    total = sum(map(len, spans.values()))
    cases = [
        ("evidence recall/precision/iou @5, @10, @100, @2000chars", spans, EVIDENCE_METRICS),
        ("the same + doc_ndcg@10, doc_recall@100, doc_mrr@10 (MaxP)", spans, EVIDENCE_METRICS + DOC_METRICS),
        ("evidence metrics, spans in shuffled order", shuffled, EVIDENCE_METRICS),
    ]
    print(f"{args.queries:,} queries x {args.spans} spans ({total:,} in all) x {args.evidence} evidence spans; "
          f"Python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}\n")
    print(f"| metrics | metrics computed | first call (s) | best of {args.repeats} (s) |")
    print("|---|---:|---:|---:|")
    for name, data, metrics in cases:
        first, best = timed(args.repeats, lambda d=data, m=metrics: evaluate_evidence(evidence, d, m))
        print(f"| {name} | {len(metrics)} | {first:.3f} | {best:.3f} |")


if __name__ == "__main__":
    main()
