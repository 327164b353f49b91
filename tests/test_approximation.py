"""rag_eval._scoring.approximation: overlap@k with exact search and the metric difference, on hand-made cases."""

from __future__ import annotations

import pytest

from rag_eval._scoring.approximation import approximation_cost, overlap_at_k, sample_queries


def _ranking(ids: list[str]) -> dict[str, float]:
    """Scores decreasing in list order."""
    return {doc: float(len(ids) - rank) for rank, doc in enumerate(ids)}


EXACT_10 = [f"d{i:02d}" for i in range(10)]


def test_overlap_seven_of_ten_and_ten_of_ten() -> None:
    approx = {
        "q1": _ranking(EXACT_10[:7] + ["x1", "x2", "x3"]),  # 3 of exact's top 10 lost
        "q2": _ranking(list(reversed(EXACT_10))),  # same set, other order: overlap ignores order
    }
    exact = {"q1": _ranking(EXACT_10), "q2": _ranking(EXACT_10)}
    cost = approximation_cost(approx, exact, 10)
    assert cost["overlap"] == {"q1": 0.7, "q2": 1.0}
    assert cost["overlap_mean"] == pytest.approx(0.85, abs=1e-15)
    assert (cost["overlap_min"], cost["overlap_min_query"], cost["queries"], cost["k"]) == (0.7, "q1", 2, 10)
    assert cost["metric_difference"] is None and cost["metric_queries"] == 0


def test_only_the_top_k_counts_and_ties_follow_the_ranking_rule() -> None:
    # exact top 2 by the rule: b (0.9), then the tie at 0.5 goes to the greater id "z"
    exact = {"q": {"a": 0.5, "b": 0.9, "z": 0.5}}
    assert approximation_cost({"q": {"b": 0.9, "a": 0.5}}, exact, 2)["overlap"] == {"q": 0.5}
    assert approximation_cost({"q": {"b": 0.9, "z": 0.5, "a": 0.1}}, exact, 2)["overlap"] == {"q": 1.0}
    # a document below the approximate top k does not count even if exact has it
    assert overlap_at_k({"x": 3.0, "y": 2.0, "b": 1.0}, exact["q"], 2) == 0.0


def test_small_corpus_missing_query_and_empty_rankings() -> None:
    exact = {"q1": _ranking(["a", "b", "c"]), "q2": _ranking(["a"]), "q3": {}}
    approx = {"q1": _ranking(["a", "c"]), "q3": {}}  # q2 missing: nothing found
    cost = approximation_cost(approx, exact, 10)
    assert cost["overlap"] == {"q1": pytest.approx(2 / 3), "q2": 0.0, "q3": 1.0}
    assert (cost["overlap_min"], cost["overlap_min_query"]) == (0.0, "q2")


def test_queries_outside_the_exact_sample_are_not_counted() -> None:
    exact = {"q1": _ranking(EXACT_10)}
    approx = {"q1": _ranking(EXACT_10[:9] + ["x"]), "q2": _ranking(["y"])}
    cost = approximation_cost(approx, exact, 10)
    assert (cost["queries"], cost["overlap_mean"]) == (1, 0.9)


def test_metric_difference_on_the_sampled_queries() -> None:
    exact = {"q1": _ranking(EXACT_10), "q2": _ranking(EXACT_10), "q4": _ranking(EXACT_10)}
    approx = {qid: _ranking(EXACT_10) for qid in ("q1", "q2", "q3", "q4")}
    ndcg_approx = {"q1": 0.5, "q2": 0.8, "q3": 0.1}  # q3 not sampled; q4 unjudged (no value)
    ndcg_exact = {"q1": 0.6, "q2": 0.8}
    cost = approximation_cost(approx, exact, 10, ndcg_approx, ndcg_exact)
    assert cost["metric_queries"] == 2
    assert cost["metric_approx"] == pytest.approx(0.65, abs=1e-15)
    assert cost["metric_exact"] == pytest.approx(0.7, abs=1e-15)
    assert cost["metric_difference"] == pytest.approx(-0.05, abs=1e-15)


def test_no_sampled_query_gives_none_not_nan() -> None:
    cost = approximation_cost({"q": {"a": 1.0}}, {}, 10, {"q": 1.0}, {"q": 1.0})
    assert (cost["queries"], cost["overlap_mean"], cost["overlap_min"], cost["metric_difference"]) == (0, None, None, None)


def test_k_must_be_positive() -> None:
    with pytest.raises(ValueError, match="k must be >= 1, got 0"):
        approximation_cost({}, {"q": {"a": 1.0}}, 0)


def test_sample_is_seeded_order_free_and_kept_in_query_order() -> None:
    ids = [f"q{i}" for i in range(100)]
    sample = sample_queries(ids, 10, seed=3)
    assert len(sample) == 10 and len(set(sample)) == 10
    assert sample == [qid for qid in ids if qid in set(sample)]  # in the given order
    assert set(sample_queries(list(reversed(ids)), 10, seed=3)) == set(sample)  # input order does not matter
    assert set(sample_queries(ids, 10, seed=4)) != set(sample)
    assert sample_queries(ids, 100) == ids and sample_queries(ids, 1000) == ids
    assert sample_queries(ids, 0) == []
    with pytest.raises(ValueError, match="sample size must be >= 0, got -1"):
        sample_queries(ids, -1)
