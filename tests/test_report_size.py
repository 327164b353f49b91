"""report.md stays a summary for any run: at most 200 KB, with the decision, the tables and the worst queries.

The case the limit was written for: a sweep of 12 chunkings x retrievers over 500 questions on long documents
(the chroma chunking sweep's shape; its report was 531 KB, 414 KB of it retrieved chunks). The run is built by
hand (documents of words, evidence spans, each variant's chunks ranked at random), scored by evaluate_evidence
as the runner scores it, and rendered by the same function `rag-eval run` uses.
"""

from __future__ import annotations

import functools
import random
from pathlib import Path

import pytest

from rag_eval._core.spans import Chunk, EvidenceSpan
from rag_eval._data.config.schema import LoadedConfig, RunConfig
from rag_eval._data.datasets import Dataset, Query
from rag_eval._models.chunking import summarize_chunks
from rag_eval._report.markdown import MAX_REPORT_BYTES, PER_QUERY_ROWS, render_run_report
from rag_eval._run.outcome import ChunkingRecord, RetrieverOutcome, RunOutcome
from rag_eval._scoring.evidence import evaluate_evidence

WORDS = ["ocean", "tide", "current", "salt", "reef", "whale", "kelp", "delta", "basin", "shelf", "trench", "gyre", "storm", "wave", "coast", "harbour", "island", "lagoon", "estuary", "fjord"]
SIZES = (200, 400, 800)
OVERLAPS = (0, 50)
ADAPTERS = ("bm25", "dense")
QUERIES = 500


@functools.cache
def sweep_run(main: str) -> RunOutcome:
    rng = random.Random(20261127)
    documents = {f"doc {d:02d} ünïcode.md": " ".join(rng.choice(WORDS) for _ in range(900)) for d in range(30)}
    evidence = {}
    for q in range(QUERIES):
        doc = rng.choice(sorted(documents))
        start = rng.randrange(0, len(documents[doc]) - 300)
        evidence[f"q-{q:03d}"] = (EvidenceSpan(doc, start, start + rng.randrange(40, 300), 1.0),)
    chunking = {f"fixed-{size}-{overlap}": {"method": "fixed", "size": size, "overlap": overlap, "unit": "chars"}
                for size in SIZES for overlap in OVERLAPS}
    retrievers = [{"label": f"{adapter}.size-{size}.overlap-{overlap}", "adapter": "bm25",
                   "chunker": f"fixed-{size}-{overlap}"}
                  for adapter in ADAPTERS for size in SIZES for overlap in OVERLAPS]
    metrics = ["evidence_recall@1000chars", "evidence_recall@5", "evidence_precision@5", "doc_ndcg@10"]
    raw = {"name": "size", "dataset": {"path": "x.yaml"}, "chunking": chunking, "retrievers": retrievers,
           "metrics": metrics, "main_metric": main, "top_k": 10,
           "report": {"detailed_queries": 20, "passage_chars": 400}}
    config = LoadedConfig(Path("configs/size.yaml"), raw, RunConfig.model_validate(raw))
    queries = {qid: Query(qid, f"where is the {rng.choice(WORDS)} of {qid}?") for qid in evidence}
    grades = {qid: {spans[0].doc: 1.0} for qid, spans in evidence.items()}
    dataset = Dataset("size", queries, grades, {doc: {"text": text} for doc, text in documents.items()},
                      "x.yaml", documents=documents, evidence=evidence)
    outcomes = []
    for spec in config.model.retrievers:
        size, overlap = chunking[spec.chunker]["size"], chunking[spec.chunker]["overlap"]
        chunks = [Chunk(doc, start, min(start + size, len(text)), text[start:start + size])
                  for doc, text in documents.items() for start in range(0, len(text), size - overlap)]
        spans = {qid: [(c.doc, c.start, c.end, rng.random()) for c in rng.sample(chunks, 10)] for qid in evidence}
        # the evidence's own chunk first for about half the queries, so that the variants differ
        for qid, (span, *_) in evidence.items():
            if rng.random() < 0.5:
                own = next(c for c in chunks if c.doc == span.doc and c.start <= span.start < c.end)
                others = [item for item in spans[qid] if item[:3] != (own.doc, own.start, own.end)]
                spans[qid] = [(own.doc, own.start, own.end, 2.0), *others[:9]]
        results = evaluate_evidence({q: list(e) for q, e in evidence.items()}, spans, metrics,
                                    document_judgements=grades, chunks=chunks, documents=documents,
                                    **config.model.evaluation.document_options())
        ranking = {q: {f"{d}#{s}-{e}": score for d, s, e, score in items} for q, items in spans.items()}
        record = ChunkingRecord(spec.chunker, "chunker", chunking[spec.chunker],
                                summarize_chunks(chunks, lambda t: len(t.split())), "f" * 16)
        outcomes.append(RetrieverOutcome(spec, {"class": "bm25"}, ranking, results, {"index_s": 1.0, "search_s": 0.5},
                                         chunking=record, spans=spans))
    return RunOutcome(config, dataset, outcomes, created="2026-11-27T00:00:00+00:00")


@pytest.mark.parametrize("main", ["evidence_recall@1000chars", "evidence_recall@5"])
def test_a_twelve_variant_sweep_report_stays_under_200_kb_and_keeps_its_summary(main):
    report = report_of(main)
    assert len(report.encode("utf-8")) <= MAX_REPORT_BYTES == 200_000
    assert "## 🏁 Decision" in report and "**Ship " in report
    # the per-query table: the worst queries, saying where the others are
    table = report.split("## 🔎 Per query")[1].split("\n## ")[0]
    assert f"(the {PER_QUERY_ROWS} worst of 500 queries)" in table.splitlines()[0]
    assert "Every query: report.html and per-query.csv." in table
    assert sum(line.startswith("| q-") for line in table.splitlines()) == PER_QUERY_ROWS
    # 12 variants: the detail shows the reference and the best, and says so
    if "## 🧩 Retrieved chunks" in report:
        assert "With 12 retrievers, the chunks of " in report
    else:
        assert "report.html shows every query in detail" in report


@functools.cache
def report_of(main: str) -> str:
    return render_run_report(sweep_run(main))


def test_the_worst_queries_are_the_lowest_mean_over_the_variants():
    run = sweep_run("evidence_recall@5")
    report = report_of("evidence_recall@5")
    table = report.split("## 🔎 Per query")[1].split("\n## ")[0]
    shown = [line.split(" | ")[0].removeprefix("| ") for line in table.splitlines() if line.startswith("| q-")]
    columns = [o.results.values["evidence_recall@5"] for o in run.outcomes]
    ids = list(run.outcomes[0].results.query_ids)
    means = {qid: sum(column[i] for column in columns) / len(columns) for i, qid in enumerate(ids)}
    expected = sorted(ids, key=lambda qid: (means[qid], qid))[:PER_QUERY_ROWS]  # lowest first, ties by id
    assert shown == expected
