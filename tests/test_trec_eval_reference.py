"""Every value trec_eval printed for its own test collection, reproduced to 4 decimals.

out.test.aq: ``trec_eval -m all_trec -q qrels.test results.test``;
out.test.aql: the same with graded ``qrels.rel_level`` and ``-l2``. trec_eval
scores a query without relevant documents as 0, hence ``no_relevant="zero"``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rag_eval import evaluate
from rag_eval._scoring.engine import read_qrels, read_run
from rag_eval._scoring.metrics.measures import parse_metrics

CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
TREC_MEASURES = (
    ["ndcg", "map", "recip_rank", "Rprec", "success_1", "success_5", "success_10"]
    + [f"ndcg_cut_{k}" for k in CUTS]
    + [f"P_{k}" for k in CUTS]
    + [f"recall_{k}" for k in CUTS]
    + [f"map_cut_{k}" for k in CUTS]
)


def read_expected(path: Path) -> dict[tuple[str, str], float]:
    expected = {}
    for line in path.read_text().splitlines():
        measure, qid, value = re.split(r"\s+", line.strip())
        if measure in TREC_MEASURES:
            expected[(measure, qid)] = float(value)
    return expected


@pytest.mark.parametrize(
    "qrels_name, out_name, threshold",
    [("qrels.test", "out.test.aq", 1), ("qrels.rel_level", "out.test.aql", 2)],
)
def test_every_trec_eval_value_is_reproduced(trec_eval_test, qrels_name, out_name, threshold):
    expected = read_expected(trec_eval_test / out_name)
    metrics = parse_metrics(TREC_MEASURES)
    results = evaluate(
        read_qrels(trec_eval_test / qrels_name),
        read_run(trec_eval_test / "results.test"),
        metrics,
        no_relevant="zero",
        relevance_threshold=threshold,
    )
    checked = 0
    for trec_name, metric in zip(TREC_MEASURES, metrics):
        for qid in list(results.query_ids) + ["all"]:
            want = expected[(trec_name, qid)]
            got = results.aggregate[str(metric)] if qid == "all" else results.value(metric, qid)
            assert f"{got:.4f}" == f"{want:.4f}", f"{trec_name} {qid}: rag_eval {got!r}, trec_eval {want}"
            checked += 1
    assert checked == len(TREC_MEASURES) * 4  # 3 topics + all
