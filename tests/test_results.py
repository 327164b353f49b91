"""Results answer to every accepted spelling of a metric, and iterate in canonical names."""

from __future__ import annotations

import json
import math

import pytest

from rag_eval import evaluate
from rag_eval._scoring.metrics.measures import Metric
from rag_eval._scoring.results import MetricDict, Results

# q1: d1 (grade 1) ranked 2nd behind the unjudged d2; q2: the relevant d3 first.
JUDGEMENTS = {"q1": {"d1": 1, "d9": 0}, "q2": {"d3": 2}}
RUN = {"q1": {"d2": 2.0, "d1": 1.0}, "q2": {"d3": 1.0}}


@pytest.fixture(scope="module")
def results() -> Results:
    return evaluate(JUDGEMENTS, RUN, ["ndcg@10", "precision@5", "mrr"])


def test_aggregate_by_any_accepted_name(results):
    # precision@5: q1 1/5, q2 1/5 -> 0.2; nDCG@10 of q1: (1/log2 3) / 1; q2: 1.
    p5 = 0.2
    ndcg_q1 = 1 / math.log2(3)
    assert results.aggregate["P_5"] == results.aggregate["precision@5"] == results.aggregate["P@5"] == pytest.approx(p5)
    assert results.aggregate["ndcg_cut_10"] == results.aggregate["nDCG@10"] == pytest.approx((ndcg_q1 + 1) / 2)
    assert results.aggregate[Metric("ndcg", 10)] == results.aggregate["ndcg@10"]
    assert results.aggregate["recip_rank"] == pytest.approx((0.5 + 1) / 2)
    assert "P_5" in results.aggregate and results.aggregate.get("P_5") == pytest.approx(p5)


def test_per_query_and_values_by_any_accepted_name(results):
    assert results.per_query["q1"]["ndcg_cut_10"] == pytest.approx(1 / math.log2(3))
    assert results.per_query["q2"]["P_5"] == pytest.approx(0.2)
    assert results.values["ndcg_cut_10"].tolist() == pytest.approx([1 / math.log2(3), 1.0])
    assert results.value("P_5", "q1") == pytest.approx(0.2)


def test_iteration_and_json_keep_canonical_names(results):
    assert list(results.aggregate) == ["ndcg@10", "precision@5", "mrr"]
    assert list(results.per_query["q1"]) == ["ndcg@10", "precision@5", "mrr"]
    assert list(json.loads(json.dumps(results.aggregate))) == ["ndcg@10", "precision@5", "mrr"]
    assert sorted(results.to_dict()["per_query"]["q2"]) == ["mrr", "ndcg@10", "precision@5"]


def test_metrics_not_computed_or_unknown_are_key_errors(results):
    for key in ("map", "P_10", "ndgc@10", 5, None):
        with pytest.raises(KeyError):
            results.aggregate[key]
        assert key not in results.aggregate
        assert results.aggregate.get(key, "none") == "none"


def test_metric_dict_is_a_dict():
    values = MetricDict({"precision@5": 0.25})
    assert values == {"precision@5": 0.25} and isinstance(values, dict)
    assert values["P_5"] == 0.25 and values.get("P.5") is None


def test_results_from_a_results_file_answer_too(results):
    loaded = Results.from_dict(results.to_dict())
    assert loaded.aggregate["P_5"] == results.aggregate["precision@5"]
    assert loaded.per_query["q2"]["ndcg_cut_10"] == 1.0
