"""evaluate_evidence against a plain-Python loop written from docs/semantics.md: same numbers, how much faster.

    .venv/bin/python benchmarks/bench_evidence_vs_python.py --shapes A,B,C   # ~10 min on 2 cores
    .venv/bin/python benchmarks/bench_evidence_vs_python.py --shapes D       # 20 million spans, ~12 GB
    .venv/bin/python benchmarks/bench_evidence_vs_python.py --scale 0.1      # a quick look

The reference (``reference_evidence`` below, ~60 lines) is the definition read literally, one query
at a time: each query's evidence merged into disjoint pieces per document, its spans sorted by
(score, chunk id in bytes) descending, the top k (or the best spans that fit a budget of characters)
merged per document and intersected with the evidence pieces by a two-pointer sweep. It shares no code
with rag_eval. Before a row is printed, every per-query value and every mean of the twelve metrics
(recall, precision and IoU at 5, 10, 100 and 2,000 characters) must agree to 1e-12.

Data (deterministic from --seed), messy on purpose: one collection of 4,000 documents of 2,000-60,000
characters for every shape (more data is more queries or longer rankings, not more documents); query
and doc ids of 2-45 characters with spaces, accents, CJK and emoji; queries listed in shuffled order,
each query's spans in shuffled order; spans of 10-1,500 characters at any offset (they overlap each
other), a third of them in the query's evidence documents; evidence spans that overlap each other
(some nested, some repeated); scores with 3 decimals (ties); some judged queries retrieve nothing,
some queries of ``spans`` have no evidence.

Timing: the tools run on the same dicts, interleaved (rag_eval, the loop, rag_eval's reading of the span
tuples alone) for --rounds rounds: wall time (min and median) and CPU time of the process (min: on a
busy machine it leaves out the time the process waits for a core), the ratios of the loop's times to
rag_eval's, and os.getloadavg() before and after the rounds. With
--baseline DIR, the rag_eval package found in DIR (another version, e.g. the last commit's:
``git archive HEAD rag_eval | tar -x -C DIR``) is timed too, in the same rounds, and checked the same way.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import statistics
import sys
import time
from collections import defaultdict

import numpy as np

from rag_eval import evaluate_evidence
from rag_eval._scoring.evidence.tables import DocIndex, read_spans

CONTEXTS = [(5, None), (10, None), (100, None), (2000, "chars")]
METRICS = [f"evidence_{m}@{k}{unit or ''}" for k, unit in CONTEXTS for m in ("recall", "precision", "iou")]
SHAPES = [  # (name, queries, spans per query, evidence spans per query)
    ("A", 10_000, 100, 3),
    ("B", 2_000, 1_000, 20),
    ("C = 10 x A", 100_000, 100, 3),
    ("D = 10 x B", 20_000, 1_000, 20),  # 20 million spans: about 12 GB of memory
]


# ---- the reference: docs/semantics.md, "Documents, chunks and evidence", one query at a time ----------


def merge(intervals):
    """The union of [start, end) intervals as sorted, disjoint [start, end] pieces."""
    pieces = []
    for start, end in sorted(intervals):
        if pieces and start <= pieces[-1][1]:
            pieces[-1][1] = max(pieces[-1][1], end)
        else:
            pieces.append([start, end])
    return pieces


def overlap(a, b):
    """Characters inside both unions (each sorted and disjoint): a two-pointer sweep."""
    total, i, j = 0, 0, 0
    while i < len(a) and j < len(b):
        total += max(0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def within_budget(ranked, budget):
    """The best spans whose lengths together fit the budget; the first that overflows ends the context."""
    read, used = [], 0
    for span in ranked:
        used += span[2] - span[1]
        if used > budget:
            break
        read.append(span)
    return read


def reference_evidence(evidence, spans, contexts):
    """{qid: {(k, unit): (recall, precision, iou)}} for every query with evidence."""
    out = {}
    for qid, items in evidence.items():
        if not items:
            continue
        by_doc = defaultdict(list)
        for doc, start, end, *_ in items:
            by_doc[doc].append((start, end))
        wanted = {doc: merge(intervals) for doc, intervals in by_doc.items()}
        total = sum(end - start for pieces in wanted.values() for start, end in pieces)
        # Score descending, ties by chunk id <doc>#<start>-<end> descending in bytes.
        ranked = sorted(spans.get(qid, ()), key=lambda s: (s[3], f"{s[0]}#{s[1]}-{s[2]}".encode()), reverse=True)
        out[qid] = {}
        for k, unit in contexts:
            read = ranked[:k] if unit is None else within_budget(ranked, k)
            context = sum(end - start for _, start, end, _ in read)
            hits = defaultdict(list)
            for doc, start, end, _ in read:
                if doc in wanted:
                    hits[doc].append((start, end))
            covered = sum(overlap(merge(intervals), wanted[doc]) for doc, intervals in hits.items())
            precision = covered / context if context else 0.0
            out[qid][(k, unit)] = (covered / total, precision, covered / (context + total - covered))
    return out


# ---- the data ---------------------------------------------------------------------------------------


N_DOCS = 4_000
ALPHABET = list("abcdefghijklmnopqrstuvwxyz0123456789 _.:/-") + list("éüßçñ日本語文書検索") + ["😀", "🔍", "Ω"]


def messy_ids(rng, n: int, prefix: str) -> list[str]:
    """n distinct ids: a prefix, a counter (keeps them distinct), 0-39 characters with spaces and UTF-8."""
    lengths = rng.integers(0, 40, size=n)
    letters = rng.integers(0, len(ALPHABET), size=int(lengths.sum()))
    chars = [ALPHABET[i] for i in letters.tolist()]
    ends = np.cumsum(lengths).tolist()
    return [f"{prefix}{i}{''.join(chars[e - n_:e])}" for i, (e, n_) in enumerate(zip(ends, lengths.tolist()))]


def make_data(n_queries: int, n_spans: int, n_evidence: int, seed: int):
    """(evidence, spans) dicts of messy data; see the module docstring."""
    rng = np.random.default_rng(seed)
    n_docs = N_DOCS  # one collection for every shape: more data is more queries (or spans), not more documents
    doc_ids = messy_ids(rng, n_docs, "d")
    doc_len = rng.integers(2_000, 60_000, size=n_docs)
    query_ids = messy_ids(rng, n_queries, "q")
    # Evidence: in 1-3 documents per query; a fifth of the spans copy or shift another (overlapping, nested, repeated).
    home = rng.integers(0, n_docs, size=(n_queries, 3))
    e_doc = np.take_along_axis(home, rng.integers(0, rng.integers(1, 4, size=(n_queries, 1)), (n_queries, n_evidence)), 1)
    e_len = rng.integers(20, 600, size=(n_queries, n_evidence))
    e_start = (rng.random((n_queries, n_evidence)) * (doc_len[e_doc] - e_len)).astype(np.int64)
    copy = rng.random((n_queries, n_evidence)) < 0.2
    copy[:, 0] = False
    src = np.where(copy, np.maximum(np.arange(n_evidence) - 1, 0), np.arange(n_evidence))
    e_doc = np.take_along_axis(e_doc, src, 1)
    shift = np.where(copy, rng.integers(-100, 100, size=(n_queries, n_evidence)), 0)
    e_start = np.clip(np.take_along_axis(e_start, src, 1) + shift, 0, doc_len[e_doc] - e_len)
    # Spans: a third in the evidence documents (half of those near the evidence), the rest anywhere.
    in_home = rng.random((n_queries, n_spans)) < 1 / 3
    s_doc = np.where(in_home, np.take_along_axis(home, rng.integers(0, 3, size=(n_queries, n_spans)), 1),
                     rng.integers(0, n_docs, size=(n_queries, n_spans)))
    s_len = rng.integers(10, 1_500, size=(n_queries, n_spans))
    s_start = (rng.random((n_queries, n_spans)) * (doc_len[s_doc] - s_len)).astype(np.int64)
    near = in_home & (rng.random((n_queries, n_spans)) < 0.5)
    s_doc = np.where(near, e_doc[:, :1], s_doc)
    s_start = np.where(near, np.clip(e_start[:, :1] + rng.integers(-800, 400, size=(n_queries, n_spans)), 0,
                                     doc_len[s_doc] - s_len), s_start)
    scores = np.round(rng.random((n_queries, n_spans)), 3)
    # A span twice in one query's list is refused: keep the first of each repeat.
    key = ((np.arange(n_queries)[:, None] * n_docs + s_doc) * 60_000 + s_start) * 1_600 + s_len
    _, first = np.unique(key.ravel(), return_index=True)
    keep = np.zeros(key.size, dtype=bool)
    keep[first] = True
    keep = keep.reshape(key.shape)
    evidence, spans = {}, {}
    e_rows = zip(e_doc.tolist(), e_start.tolist(), (e_start + e_len).tolist())
    s_rows = zip(s_doc.tolist(), s_start.tolist(), (s_start + s_len).tolist(), scores.tolist(), keep.tolist())
    for q, (qid, (ed, es, ee), (sd, ss, se, sc, kp)) in enumerate(zip(query_ids, e_rows, s_rows)):
        if q % 50 != 7:  # one query in 50 has no evidence (unjudged)
            evidence[qid] = [(doc_ids[d], s, e, 1) for d, s, e in zip(ed, es, ee)]
        if q % 50 != 3:  # one in 50 retrieves nothing (unanswered)
            spans[qid] = [(doc_ids[d], s, e, c) for d, s, e, c, k in zip(sd, ss, se, sc, kp) if k]
    order = rng.permutation(n_queries).tolist()
    evidence = {query_ids[q]: evidence[query_ids[q]] for q in order if query_ids[q] in evidence}
    spans = {query_ids[q]: spans[query_ids[q]] for q in order if query_ids[q] in spans}
    return evidence, spans


# ---- the comparison -----------------------------------------------------------------------------------


def check_same(results, reference) -> None:
    """Every per-query value and every mean of rag_eval equals the reference's to 1e-12."""
    assert sorted(results.query_ids) == sorted(reference), "not the same judged queries"
    for c, (k, unit) in enumerate(CONTEXTS):
        for m in range(3):  # recall, precision, iou
            metric = METRICS[3 * c + m]
            want = np.array([reference[q][(k, unit)][m] for q in results.query_ids])
            got = results.values[metric]
            worst = float(np.max(np.abs(got - want)))
            assert worst <= 1e-12, f"{metric}: rag_eval differs from the reference by {worst}"
            mean = sum(want.tolist()) / want.size
            assert abs(results.aggregate[metric] - mean) <= 1e-12, f"{metric}: mean differs"


def load_baseline(folder: str):
    """evaluate_evidence of the rag_eval package in ``folder``, imported beside the current one."""
    def ours(name: str) -> bool:
        return name == "rag_eval" or name.startswith("rag_eval.")

    current = {name: module for name, module in sys.modules.items() if ours(name)}
    for name in current:
        del sys.modules[name]
    sys.path.insert(0, folder)
    try:
        baseline = importlib.import_module("rag_eval")
        assert baseline.__file__ is not None and baseline.__file__.startswith(os.path.abspath(folder)), baseline.__file__
        return baseline.evaluate_evidence  # its functions keep their own modules' globals
    finally:
        sys.path.remove(folder)
        for name in [name for name in sys.modules if ours(name)]:
            del sys.modules[name]
        sys.modules.update(current)


def reading_alone(spans) -> None:
    """rag_eval's reading of the span tuples into checked columns with doc codes, nothing after it."""
    columns = read_spans(spans, "spans")
    columns.doc = DocIndex.build([columns]).code(columns.docs)


def measure(evidence, spans, rounds: int, baseline=None) -> dict[str, tuple[list[float], list[float]]]:
    """(wall, CPU) times of each tool, interleaved; the first round's results are checked."""
    tools = {"rag_eval": lambda: evaluate_evidence(evidence, spans, METRICS),
             "python": lambda: reference_evidence(evidence, spans, CONTEXTS),
             "reading": lambda: reading_alone(spans)}
    if baseline is not None:
        tools["baseline"] = lambda: baseline(evidence, spans, METRICS)
    times: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in tools}
    for r in range(rounds):
        outputs = {}
        for name, call in tools.items():
            wall, cpu = time.perf_counter(), time.process_time()
            outputs[name] = call()
            times[name][0].append(time.perf_counter() - wall)
            times[name][1].append(time.process_time() - cpu)
        if r == 0:
            check_same(outputs["rag_eval"], outputs["python"])
            if baseline is not None:
                check_same(outputs["baseline"], outputs["python"])
        del outputs
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every shape's number of queries")
    parser.add_argument("--shapes", default="A,B,C", help="which rows, by the first letter of their name (A,B,C,D)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--baseline", help="a folder holding another rag_eval package, timed too")
    args = parser.parse_args()
    baseline = load_baseline(args.baseline) if args.baseline else None
    print(f"Python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}, "
          f"{os.cpu_count()} cores; {args.rounds} rounds, interleaved; wall min / median, CPU min (s)\n")
    tools = ["rag_eval", "python", "reading"] + (["baseline"] if baseline else [])
    names = {"rag_eval": "rag_eval", "python": "Python loop", "reading": "rag_eval reading alone",
             "baseline": "baseline"}
    speedups = ["rag_eval"] + (["baseline"] if baseline else [])
    print("| shape | queries x spans x evidence | spans | " + " | ".join(names[t] for t in tools)
          + " | " + " | ".join(f"Python loop / {names[t]} (wall min, median; CPU)" for t in speedups)
          + " | load average before; after |")
    print("|---|---|---:|" + "---:|" * (len(tools) + len(speedups)) + "---|")
    for name, n_queries, n_spans, n_evidence in SHAPES:
        if name[0] not in args.shapes.split(","):
            continue
        n_queries = max(10, int(n_queries * args.scale))
        evidence, spans = make_data(n_queries, n_spans, n_evidence, args.seed)
        total = sum(map(len, spans.values()))
        before = os.getloadavg()
        times = measure(evidence, spans, args.rounds, baseline)
        after = os.getloadavg()
        cells = [f"{min(w):.3f} / {statistics.median(w):.3f}; {min(c):.3f}" for w, c in (times[t] for t in tools)]
        (pw, pc) = times["python"]
        for t in speedups:
            w, c = times[t]
            cells.append(f"{min(pw) / min(w):.2f}x, {statistics.median(pw) / statistics.median(w):.2f}x; "
                         f"{min(pc) / min(c):.2f}x")
        load = f"{before[0]:.1f}, {before[1]:.1f}; {after[0]:.1f}, {after[1]:.1f}"
        print(f"| {name} | {n_queries:,} x {n_spans:,} x {n_evidence} | {total:,} | " + " | ".join(cells)
              + f" | {load} |", flush=True)
        del evidence, spans


if __name__ == "__main__":
    main()
