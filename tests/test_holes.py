"""The holes in the judgements (rag_eval._scoring.holes): bounds of a metric and the unjudged share of the top k.

The reference is written here the slow way: fill the holes by hand (every document of a judged query's
top k, k the metric's cutoff or the whole ranking, that has no judgement gets the highest grade among
that query's judgements) and call evaluate on the filled judgements; the low value is evaluate on the
judgements as given. A hole ranked below the cutoff is not the metric's: it is left unjudged.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _trec_cases import FLOAT32_SCORES, FLOAT_GRADES, SETTINGS, TREC_GRADES, collection, trec_order
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_eval import EvaluationOptions, RagEvalError, evaluate
from rag_eval._scoring.holes import bounds, unjudged_share

ALL_METRICS = ["ndcg", "dcg", "idcg", "mrr", "map", "r_precision", "bpref"] + [
    f"{family}@{k}"
    for family in ("ndcg", "dcg", "idcg", "precision", "recall", "mrr", "map", "hit_rate", "judged")
    for k in (1, 3, 5)
]


def filled_by_hand(judgements: dict, run: dict, k: int | None = None) -> dict:
    """Each judged query's judgements plus the unjudged documents of its top ``k`` (None: all retrieved) at the
    query's highest grade."""
    filled = {}
    for qid, judged in judgements.items():
        highest = max(judged.values())
        top = trec_order(run.get(qid, {}))[:k]
        filled[qid] = {**judged, **{d: highest for d in top if d not in judged}}
    return filled


def cutoff(name: str) -> int | None:
    """The rank cutoff of a metric name of ALL_METRICS (None: the whole ranking)."""
    return int(name.split("@")[1]) if "@" in name else None


def same(got: np.ndarray, want: np.ndarray) -> bool:
    return bool(np.all((np.isnan(got) & np.isnan(want)) | np.isclose(got, want, rtol=1e-12, atol=1e-12)))


@settings(max_examples=60, **SETTINGS)
@given(
    case=collection(grades=st.one_of(FLOAT_GRADES, TREC_GRADES), scores=st.one_of(FLOAT32_SCORES, st.floats(-1, 1))),
    gain=st.sampled_from(["linear", "exponential"]),
    aggregation=st.sampled_from(["macro", "micro"]),
    no_relevant=st.sampled_from(["skip", "zero"]),
    level=st.sampled_from([1, 0.5, 2]),
    judged_only=st.booleans(),
)
def test_bounds_equal_evaluate_on_the_judgements_filled_by_hand(
    case, gain, aggregation, no_relevant, level, judged_only
):
    judgements, run = case
    options = EvaluationOptions(gain, aggregation, no_relevant, level, judged_only)
    keywords = {"gain": gain, "aggregation": aggregation, "no_relevant": no_relevant,
                "relevance_threshold": level, "judged_only": judged_only}
    low = evaluate(judgements, run, ALL_METRICS, **keywords)
    highs = {
        k: evaluate(filled_by_hand(judgements, run, k), run, [m for m in ALL_METRICS if cutoff(m) == k], **keywords)
        for k in {cutoff(m) for m in ALL_METRICS}
    }
    for name in low.metric_names:
        high = highs[cutoff(name)]
        found = bounds(judgements, run, name, options)
        assert found.query_ids == low.query_ids == high.query_ids
        assert same(found.low, low.values[name]), (name, found.low, low.values[name])
        assert same(found.high, high.values[name]), (name, found.high, high.values[name])
        for got, want in ((found.dataset_low, low.aggregate[name]), (found.dataset_high, high.aggregate[name])):
            assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, rel=1e-12, abs=1e-12), name
        # Filling holes with a query's own highest grade never makes a relevant document where none was.
        assert found.left_out == low.left_out.get(name, ()) == high.left_out.get(name, ())
        assert set(found.per_query) == {q for q, v in zip(low.query_ids, low.values[name]) if not math.isnan(v)}


@settings(max_examples=60, **SETTINGS)
@given(case=collection(grades=st.one_of(FLOAT_GRADES, TREC_GRADES)), k=st.sampled_from([1, 2, 3, 5, 20]))
def test_unjudged_share_counts_the_holes_of_the_top_k(case, k):
    judgements, run = case
    share = unjudged_share(judgements, run, k)
    judged_at_k = evaluate(judgements, run, [f"judged@{k}"])
    assert share.query_ids == judged_at_k.query_ids
    for qid, value in share.per_query.items():
        top = trec_order(run.get(qid, {}))[:k]
        assert value == sum(d not in judgements[qid] for d in top) / k, qid
        # judged@k + unjudged share = the share of the top k that was retrieved at all.
        assert value + judged_at_k.value(f"judged@{k}", qid) == pytest.approx(len(top) / k, abs=1e-15)
    assert share.mean == pytest.approx(sum(share.per_query.values()) / len(share.query_ids))


@settings(max_examples=60, **SETTINGS)
@given(case=collection(grades=st.one_of(FLOAT_GRADES, TREC_GRADES)), k=st.sampled_from([1, 3, 5]))
def test_filling_holes_only_raises_the_metrics_that_count_what_was_found(case, k):
    judgements, run = case
    share = unjudged_share(judgements, run, k).values
    for name in (f"precision@{k}", f"hit_rate@{k}", "mrr", f"dcg@{k}"):
        found = bounds(judgements, run, name, EvaluationOptions(no_relevant="zero"))
        assert np.all(found.high >= found.low - 1e-12), name
    # precision@k rises by exactly the unjudged share where the highest grade is relevant, else not at all.
    found = bounds(judgements, run, f"precision@{k}", EvaluationOptions(no_relevant="zero"))
    relevant = np.array([max(judgements[q].values()) >= 1 for q in found.query_ids])
    np.testing.assert_allclose(found.high - found.low, np.where(relevant, share, 0.0), atol=1e-12)


def test_hand_example():
    # Judged: a 2, b 0, d 1 (d missed); retrieved a, x, b, y (x and y unjudged). The highest grade is 2.
    judgements = {"q": {"a": 2, "b": 0, "d": 1}}
    run = {"q": {"a": 1.0, "x": 0.7, "b": 0.5, "y": 0.2}}
    # precision@2: a relevant, x a hole: 1/2 as judged, 2/2 with x at grade 2.
    assert bounds(judgements, run, "precision@2").per_query == {"q": (0.5, 1.0)}
    # recall@4: R = 2 (a, d) and a found: 1/2; filled, R = 4 (a, d, x, y) and a, x, y found: 3/4.
    assert bounds(judgements, run, "recall@4").per_query == {"q": (0.5, 0.75)}
    # recall@2: 1/2; x filled, R = 3 (a, d, x) and a, x found: 2/3 (y, below the cutoff, is not recall@2's hole).
    assert bounds(judgements, run, "recall@2").per_query == {"q": (0.5, pytest.approx(2 / 3))}
    # recall@1: the top 1 (a) holds no hole, so nothing is filled: judging x or y could only grow R.
    assert bounds(judgements, run, "recall@1").per_query == {"q": (0.5, 0.5)}
    # nDCG: gains 2, 0, 0, 0 as judged: DCG 2, IDCG 2 + 1/log2(3); filled, gains 2, 2, 0, 2:
    # DCG = 2 + 2/log2(3) + 2/log2(5), IDCG (grades 2, 2, 2, 1) = 2 + 2/log2(3) + 2/2 + 1/log2(5).
    low, high = bounds(judgements, run, "ndcg").per_query["q"]
    assert low == pytest.approx(2 / (2 + 1 / math.log2(3)))
    assert high == pytest.approx((2 + 2 / math.log2(3) + 2 / math.log2(5)) / (3 + 2 / math.log2(3) + 1 / math.log2(5)))
    assert (round(low, 4), round(high, 4)) == (0.7602, 0.8787)
    assert unjudged_share(judgements, run, 2).per_query == {"q": 0.5}
    assert unjudged_share(judgements, run, 10).per_query == {"q": 0.2}  # divided by k, as judged@k is


def test_a_hole_below_the_cutoff_is_not_filled():
    """The attack's case: a b c judged 2 1 0, x (nobody judged it) at rank 4, below every @3 cutoff.

    By hand, L = 1/log2(3): DCG@3 = 2 + L = IDCG@3, so ndcg@3 is 1; judged, x could only join the ideal
    (IDCG@3 2 + 2L + 1/2: ndcg@3 0.6994, the attack's mean 0.8497 with a second query at 1) or R (recall@3 and map@3 2/3), never what the top 3 found. So the
    metrics with cutoff 3 have no hole: high is low. Metrics over the whole ranking (x at rank 4 is theirs)
    fill it.
    """
    L = 1 / math.log2(3)
    judgements = {"q": {"a": 2, "b": 1, "c": 0}}
    run = {"q": {"a": 4.0, "b": 3.0, "c": 2.0, "x": 1.0}}
    assert bounds(judgements, run, "ndcg@3").per_query == {"q": (1.0, 1.0)}
    assert bounds(judgements, run, "recall@3").per_query == {"q": (1.0, 1.0)}  # R = 2 (a, b), both found
    assert bounds(judgements, run, "map@3").per_query == {"q": (1.0, 1.0)}  # (1/1 + 2/2) / R
    assert bounds(judgements, run, "precision@3").per_query == {"q": (pytest.approx(2 / 3), pytest.approx(2 / 3))}
    assert bounds(judgements, run, "mrr").per_query == {"q": (1.0, 1.0)}
    # The whole ranking holds x: with x at grade 2, DCG = 2 + L + 2/log2(5), IDCG (2, 2, 1, 0) = 2 + 2L + 1/2.
    low, high = bounds(judgements, run, "ndcg").per_query["q"]
    assert low == 1.0 and high == pytest.approx((2 + L + 2 / math.log2(5)) / (2.5 + 2 * L))
    assert round(high, 4) == 0.9283
    # recall@4: R = 3 (a, b, x), all found: 1, as measured.
    assert bounds(judgements, run, "recall@4").per_query == {"q": (1.0, 1.0)}
    assert unjudged_share(judgements, run, 3).per_query == {"q": 0.0}


@settings(max_examples=60, **SETTINGS)
@given(case=collection(grades=st.one_of(FLOAT_GRADES, TREC_GRADES)), k=st.sampled_from([1, 3, 5]))
def test_no_hole_in_the_top_k_no_bounds_apart(case, k):
    """Every metric with cutoff k: a query whose top k holds no hole has its high value equal to its low one."""
    judgements, run = case
    share = unjudged_share(judgements, run, k).per_query
    for family in ("ndcg", "dcg", "precision", "recall", "mrr", "map", "hit_rate"):
        found = bounds(judgements, run, f"{family}@{k}", EvaluationOptions(no_relevant="zero"))
        for qid, (low, high) in found.per_query.items():
            if share[qid] == 0:
                assert high == low, (family, qid)


def test_bad_arguments_are_refused():
    judgements, run = {"q": {"a": 1}}, {"q": {"a": 1.0}}
    with pytest.raises(RagEvalError, match="doc_ndcg@10: document metrics need documents"):
        bounds(judgements, run, "doc_ndcg@10")
    with pytest.raises(RagEvalError, match="k must be a positive integer, got 0"):
        unjudged_share(judgements, run, 0)
    with pytest.raises(RagEvalError, match="no query has a judgement"):
        bounds({}, run, "ndcg")
