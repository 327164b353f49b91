"""Golden values of SEMANTICS.md and the documented semantics of rag_eval._scoring.evaluate.

Every number below is either printed in SEMANTICS.md ("Golden values") or worked
out by hand in a comment next to the assertion; none is copied from rag_eval's
own output. Printed values are compared to the digits they were printed with.
"""

from __future__ import annotations

import copy
import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from rag_eval import Metric, evaluate, parse_metric, parse_metrics
from rag_eval._core.errors import EvaluationError, MetricError, RagEvalError
from rag_eval._scoring.metrics.measures import valid_metric_names


def printed(text: str) -> pytest.approx:
    """``pytest.approx`` that accepts exactly what rounds to ``text``'s digits."""
    decimals = len(text.split(".")[1]) if "." in text else 0
    return pytest.approx(float(text), abs=0.5 * 10.0**-decimals + 1e-15, rel=0)


def ranked(order, start: float = 100.0) -> dict[str, float]:
    """Scores that rank ``order`` exactly as given (strictly decreasing, no ties)."""
    return {doc: start - i for i, doc in enumerate(order)}


def one_query(grades_in_rank_order, metrics, **options):
    """Judgements d0..dn-1 with the given grades, retrieved in that order."""
    docs = [f"d{i}" for i in range(len(grades_in_rank_order))]
    judgements = {"q": dict(zip(docs, grades_in_rank_order))}
    run = {"q": ranked(docs)}
    return evaluate(judgements, run, metrics, **options).aggregate


# ---- seeds ------------------------------------------------------------------------


def test_seed_by_hand_2_3_1_3_0():
    got = one_query([2, 3, 1, 3, 0], ["dcg@5", "idcg@5", "ndcg@5", "ndcg@3"])
    assert got["dcg@5"] == printed("5.6848189")
    assert got["idcg@5"] == printed("6.3234658")
    assert got["ndcg@5"] == printed("0.8990037")
    assert got["ndcg@3"] == printed("0.7454516")


def test_seed_ocean_facts_3_2_0_1():
    got = one_query([3, 2, 0, 1], ["dcg@4", "idcg@4", "ndcg@4"])
    assert got["dcg@4"] == printed("4.6925")
    assert got["idcg@4"] == printed("4.7619")
    assert got["ndcg@4"] == printed("0.98544")
    # The seed's 0.9855 divides rounded intermediates; full precision is not that.
    assert got["ndcg@4"] != printed("0.9855")


def test_seed_3_2_3_0_1():
    got = one_query([3, 2, 3, 0, 1], ["dcg@5", "idcg@5", "ndcg@5"])
    assert got["dcg@5"] == printed("6.1487")
    assert got["idcg@5"] == printed("6.3235")
    assert got["ndcg@5"] == printed("0.97236")


@pytest.mark.parametrize(
    "grades, expected",
    [
        ([3, 1, 2, 0, 2], 0.950849602851865),
        ([0, 1, 2, 2, 3], 0.5664478625498256),
        ([3, 2, 2, 1, 0], 1.0),
    ],
)
def test_seed_exponential_gain(grades, expected):
    got = one_query(grades, ["ndcg@5"], gain="exponential")
    assert got["ndcg@5"] == pytest.approx(expected, rel=1e-13, abs=0)


FLOAT_GRADES = {"A": 0.5, "B": 0.9, "C": 0.3, "D": 0.6, "E": 0.1}


@pytest.mark.parametrize(
    "order, metric, expected",
    [
        ("ABCDE", "dcg@5", "1.51493"),
        ("DAECB", "dcg@5", "1.44284"),
        ("ABCDE", "idcg@5", "1.69645"),
        ("DAECB", "idcg@5", "1.69645"),
        ("BDACE", "dcg@5", "1.69645"),  # the ideal order itself
    ],
)
def test_seed_float_grades(order, metric, expected):
    got = evaluate({"q": FLOAT_GRADES}, {"q": ranked(order)}, [metric]).aggregate
    assert got[metric] == printed(expected)


# ---- ties and the ideal ranking ----------------------------------------------------


def test_tie_all_equal_scores_sorted_by_doc_id_descending():
    # order d3, d2, d1: the only relevant document is first.
    results = evaluate({"q": {"d3": 1}}, {"q": {"d1": 1, "d2": 1, "d3": 1}}, ["ndcg", "mrr", "precision@1"])
    assert results.aggregate["ndcg"] == 1.0
    assert results.aggregate["mrr"] == 1.0
    assert results.aggregate["precision@1"] == 1.0


def test_tie_unretrieved_nonrelevant_judgement():
    # order c, b: DCG = 1/log2(3), IDCG = 1.
    got = evaluate({"q": {"a": 0, "b": 1, "c": 0}}, {"q": {"b": 1.0, "c": 1.0}}, ["ndcg", "mrr"]).aggregate
    assert got["ndcg"] == printed("0.6309")
    assert got["mrr"] == 0.5


def test_tie_order_is_byte_order_not_numeric_or_case_insensitive():
    # Descending bytes: "b" (0x62) > "a" > "Z" (0x5a) > "B" > "A"; "d9" > "d10".
    judgements = {"q": {"Z": 1}, "p": {"d9": 1}}
    run = {"q": {"A": 0.0, "B": 0.0, "Z": 0.0, "a": 0.0, "b": 0.0}, "p": {"d10": 2.0, "d9": 2.0}}
    results = evaluate(judgements, run, ["mrr"])
    assert results.value("mrr", "q") == 1 / 3  # b, a, Z
    assert results.value("mrr", "p") == 1.0  # d9 before d10


D_JUDGEMENTS = {"q": {"D0": 0, "D1": 1, "D2": 1, "D3": 2, "D4": 0}}
D_RUN = {"q": {"D0": 0.8, "D2": 0.7, "D3": 0.4, "D1": 0.3, "D4": 0.1}}


@pytest.mark.parametrize(
    "gain, metric, expected",
    [
        ("linear", "ndcg", 0.6584645692843067),
        ("linear", "ndcg@2", 0.23981246656813146),
        ("exponential", "ndcg", 0.6201040599710453),
        ("exponential", "ndcg@2", 0.17376534287144002),
    ],
)
def test_graded_vector_d0_d4(gain, metric, expected):
    got = evaluate(D_JUDGEMENTS, D_RUN, [metric], gain=gain).aggregate[metric]
    assert got == pytest.approx(expected, rel=1e-13, abs=0)


def test_ideal_uses_relevant_documents_the_run_missed():
    # run retrieves only b (grade 1) first; a (grade 3) was missed.
    # DCG = 1, IDCG = 3 + 1/log2(3); a judged-but-missed document lowers nDCG.
    got = evaluate({"q": {"a": 3, "b": 1}}, {"q": {"b": 1.0}}, ["ndcg", "ndcg@1", "recall@10"]).aggregate
    assert got["ndcg"] == pytest.approx(1 / (3 + 1 / math.log2(3)), rel=1e-14)
    assert got["ndcg@1"] == pytest.approx(1 / 3, rel=1e-14)
    assert got["recall@10"] == 0.5


def test_negative_grade_is_judged_but_gains_nothing():
    # order n (grade -2), r (grade 1): DCG = 0 + 1/log2(3); ideal = [r] -> IDCG 1.
    results = evaluate({"q": {"n": -2, "r": 1}}, {"q": {"n": 2.0, "r": 1.0}}, ["ndcg", "judged@2", "precision@2"])
    assert results.aggregate["ndcg"] == pytest.approx(1 / math.log2(3), rel=1e-14)
    assert results.aggregate["judged@2"] == 1.0
    assert results.aggregate["precision@2"] == 0.5


# ---- aggregation ------------------------------------------------------------------


def test_micro_versus_macro_by_hand():
    # q1: judged {a: 1}; run x, a -> DCG = 1/log2(3) = 0.63093, IDCG = 1, nDCG = 0.63093
    # q2: judged {b: 3, c: 1}; run b, c -> DCG = IDCG = 3 + 1/log2(3) = 3.63093, nDCG = 1
    # macro = (0.63093 + 1) / 2                           = 0.81546
    # micro = (0.63093 + 3.63093) / (1 + 3.63093) = 4.26186 / 4.63093 = 0.92030
    judgements = {"q1": {"a": 1}, "q2": {"b": 3, "c": 1}}
    run = {"q1": {"x": 2.0, "a": 1.0}, "q2": {"b": 2.0, "c": 1.0}}
    third = 1 / math.log2(3)
    macro = evaluate(judgements, run, ["ndcg"]).aggregate["ndcg"]
    micro = evaluate(judgements, run, ["ndcg"], aggregation="micro").aggregate["ndcg"]
    assert macro == pytest.approx((third + 1) / 2, rel=1e-14)
    assert micro == pytest.approx((third + 3 + third) / (1 + 3 + third), rel=1e-14)
    assert macro == printed("0.81546")
    assert micro == printed("0.92030")


def test_micro_ignores_queries_without_relevant_documents():
    # q3 has IDCG 0 and DCG 0: it adds nothing to either sum, whatever the policy.
    judgements = {"q1": {"a": 1}, "q2": {"b": 3, "c": 1}, "q3": {"z": 0}}
    run = {"q1": {"x": 2.0, "a": 1.0}, "q2": {"b": 2.0, "c": 1.0}, "q3": {"z": 1.0}}
    third = 1 / math.log2(3)
    for policy in ("skip", "zero"):
        micro = evaluate(judgements, run, ["ndcg"], aggregation="micro", no_relevant=policy).aggregate["ndcg"]
        assert micro == pytest.approx((third + 3 + third) / (1 + 3 + third), rel=1e-14)


def test_micro_of_queries_that_all_lack_a_relevant_document():
    """Under zero each such query scores 0 and is averaged: their micro value is 0 (0 / 0 gave NaN, printed n/a),
    as their macro mean is; under skip no query is left, and the value is undefined (NaN) either way."""
    judgements, run = {"q1": {"a": 0}, "q2": {"b": -1}}, {"q1": {"a": 1.0}, "q2": {"c": 1.0}}
    for aggregation in ("macro", "micro"):
        assert evaluate(judgements, run, ["ndcg", "ndcg@3"], aggregation=aggregation,
                        no_relevant="zero").aggregate == {"ndcg": 0.0, "ndcg@3": 0.0}
        skipped = evaluate(judgements, run, ["ndcg"], aggregation=aggregation).aggregate["ndcg"]
        assert math.isnan(skipped)


# ---- which queries enter the mean ---------------------------------------------------

NO_REL_JUDGEMENTS = {"good": {"a": 1}, "none": {"b": 0, "c": -1}}
NO_REL_RUN = {"good": {"a": 1.0, "x": 0.5}, "none": {"b": 1.0}}


def test_no_relevant_skip_leaves_query_out_and_lists_it():
    results = evaluate(NO_REL_JUDGEMENTS, NO_REL_RUN, ["ndcg", "precision@2", "judged@2"])
    assert math.isnan(results.value("ndcg", "none"))
    assert math.isnan(results.value("precision@2", "none"))
    assert results.left_out["ndcg"] == ("none",)
    assert results.left_out["precision@2"] == ("none",)
    # good: ndcg 1, P@2 = 1/2; the mean is over "good" alone.
    assert results.aggregate["ndcg"] == 1.0
    assert results.aggregate["precision@2"] == 0.5
    # judged@k is defined without relevant documents: none retrieved b (judged) only -> 1/2.
    assert "judged@2" not in results.left_out
    assert results.value("judged@2", "none") == 0.5
    assert results.aggregate["judged@2"] == pytest.approx((0.5 + 0.5) / 2)
    assert "ndcg" not in results.per_query["none"]


def test_no_relevant_zero_scores_zero_and_averages():
    results = evaluate(NO_REL_JUDGEMENTS, NO_REL_RUN, ["ndcg", "precision@2"], no_relevant="zero")
    assert results.value("ndcg", "none") == 0.0
    assert results.aggregate["ndcg"] == 0.5  # (1 + 0) / 2
    assert results.aggregate["precision@2"] == 0.25  # (0.5 + 0) / 2
    assert results.left_out == {}


def test_no_relevant_error_raises():
    with pytest.raises(EvaluationError, match="none"):
        evaluate(NO_REL_JUDGEMENTS, NO_REL_RUN, ["ndcg"], no_relevant="error")
    # Without such a query, "error" computes normally.
    got = evaluate({"good": {"a": 1}}, {"good": {"a": 1.0}}, ["ndcg"], no_relevant="error").aggregate
    assert got["ndcg"] == 1.0


def test_relevance_threshold_decides_no_relevant_for_binary_metrics():
    # grade 1 is below the threshold 2: no relevant document for P@1, but nDCG has gain 1.
    results = evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["ndcg", "precision@1"], relevance_threshold=2)
    assert results.value("ndcg", "q") == 1.0
    assert math.isnan(results.value("precision@1", "q"))


def test_judged_query_missing_from_run_scores_zero_and_stays_in_mean():
    judgements = {"q1": {"a": 1}, "q2": {"b": 2}}
    run = {"q1": {"a": 1.0}}
    metrics = ["ndcg", "ndcg@5", "precision@5", "recall@5", "mrr", "map", "r_precision", "hit_rate@5", "judged@5"]
    results = evaluate(judgements, run, metrics)
    assert results.query_ids == ("q1", "q2")
    assert results.unanswered_queries == ("q2",)
    for metric in metrics:
        assert results.value(metric, "q2") == 0.0, metric
    assert results.aggregate["ndcg"] == 0.5
    assert results.aggregate["precision@5"] == pytest.approx(0.1)  # (1/5 + 0) / 2
    assert results.aggregate["judged@5"] == pytest.approx(0.1)


def test_empty_ranking_scores_zero():
    results = evaluate({"q1": {"a": 1}, "q2": {"b": 1}}, {"q1": {"a": 1.0}, "q2": {}}, ["ndcg", "mrr"])
    assert results.value("ndcg", "q2") == 0.0
    assert results.aggregate["mrr"] == 0.5


def test_run_query_without_judgements_is_listed_not_scored():
    results = evaluate({"q1": {"a": 1}}, {"q1": {"a": 1.0}, "stray": {"a": 1.0}, "other": {"z": 3.0}}, ["ndcg"])
    assert results.query_ids == ("q1",)
    assert results.unjudged_queries == ("other", "stray")
    assert results.aggregate["ndcg"] == 1.0


# ---- divisors --------------------------------------------------------------------


def test_judged_at_k_divides_by_k():
    # run a, b, x: a and b judged, x not.
    results = evaluate({"q": {"a": 1, "b": 0}}, {"q": {"a": 3.0, "b": 2.0, "x": 1.0}},
                       ["judged@1", "judged@2", "judged@3", "judged@10"])
    assert results.aggregate["judged@1"] == 1.0
    assert results.aggregate["judged@2"] == 1.0
    assert results.aggregate["judged@3"] == pytest.approx(2 / 3)
    assert results.aggregate["judged@10"] == pytest.approx(2 / 10)  # not 2/3


def test_precision_at_k_divides_by_k_even_when_fewer_retrieved():
    results = evaluate({"q": {"a": 1, "b": 1, "c": 1}}, {"q": {"a": 2.0, "b": 1.0}},
                       ["precision@1", "precision@2", "precision@5", "precision@10", "recall@10"])
    assert results.aggregate["precision@1"] == 1.0
    assert results.aggregate["precision@2"] == 1.0
    assert results.aggregate["precision@5"] == pytest.approx(2 / 5)
    assert results.aggregate["precision@10"] == pytest.approx(2 / 10)
    assert results.aggregate["recall@10"] == pytest.approx(2 / 3)


def test_binary_metrics_by_hand():
    # ranking: x(0) r1(1) n(0) r2(2) y(unjudged); relevant = {r1, r2, r3 (missed)}, R = 3
    judgements = {"q": {"x": 0, "r1": 1, "n": 0, "r2": 2, "r3": 1}}
    run = {"q": {"x": 5.0, "r1": 4.0, "n": 3.0, "r2": 2.0, "y": 1.0}}
    metrics = ["mrr", "mrr@1", "map", "map@2", "r_precision", "hit_rate@1", "hit_rate@2", "recall@4"]
    got = evaluate(judgements, run, metrics).aggregate
    assert got["mrr"] == 0.5
    assert got["mrr@1"] == 0.0
    assert got["map"] == pytest.approx((1 / 2 + 2 / 4) / 3)  # precisions at ranks 2 and 4, over R = 3
    assert got["map@2"] == pytest.approx((1 / 2) / 3)
    assert got["r_precision"] == pytest.approx(1 / 3)  # top 3: x, r1, n
    assert got["hit_rate@1"] == 0.0
    assert got["hit_rate@2"] == 1.0
    assert got["recall@4"] == pytest.approx(2 / 3)
    # with threshold 2 only r2 is relevant (R = 1): first at rank 4.
    got2 = evaluate(judgements, run, metrics, relevance_threshold=2).aggregate
    assert got2["mrr"] == 0.25
    assert got2["map"] == 0.25
    assert got2["r_precision"] == 0.0


# ---- inputs ------------------------------------------------------------------------

JUDGEMENTS = {"q1": {"a": 2, "b": 0, "c": 1.5}, "q2": {"x": 1, "y": -1}, "q3": {"z": 0}}
RUN = {"q1": {"c": 0.3, "a": 0.3, "d": 0.9}, "q2": {"y": 5.0, "x": 4.0, "w": 4.0}, "q4": {"z": 1.0}}
ALL_METRICS = ["ndcg", "ndcg@2", "dcg@3", "idcg@3", "precision@2", "recall@2", "mrr", "map", "map@2",
               "r_precision", "hit_rate@1", "judged@3"]


def test_inputs_are_not_mutated():
    judgements, run = copy.deepcopy(JUDGEMENTS), copy.deepcopy(RUN)
    evaluate(judgements, run, ALL_METRICS, gain="exponential", aggregation="micro")
    assert judgements == JUDGEMENTS and run == RUN
    assert list(judgements) == list(JUDGEMENTS) and list(run["q1"]) == list(RUN["q1"])  # order kept too

    jframe, rframe = _frames(JUDGEMENTS, RUN)
    jcopy, rcopy = jframe.copy(deep=True), rframe.copy(deep=True)
    evaluate(jframe, rframe, ALL_METRICS)
    pd.testing.assert_frame_equal(jframe, jcopy)
    pd.testing.assert_frame_equal(rframe, rcopy)


def _frames(judgements, run):
    jframe = pd.DataFrame(
        [(q, d, g) for q, docs in judgements.items() for d, g in docs.items()], columns=["qid", "doc_id", "grade"]
    )
    rframe = pd.DataFrame(
        [(q, d, s) for q, docs in run.items() for d, s in docs.items()], columns=["qid", "doc_id", "score"]
    )
    return jframe, rframe


@pytest.mark.parametrize("gain", ["linear", "exponential"])
def test_dataframe_input_matches_dict_input(gain):
    from_dicts = evaluate(JUDGEMENTS, RUN, ALL_METRICS, gain=gain)
    jframe, rframe = _frames(JUDGEMENTS, RUN)
    # Shuffle rows: a DataFrame's row order must not matter.
    rframe = rframe.sample(frac=1.0, random_state=3).reset_index(drop=True)
    from_frames = evaluate(jframe, rframe, ALL_METRICS, gain=gain)
    assert from_frames.query_ids == from_dicts.query_ids
    assert from_frames.unjudged_queries == from_dicts.unjudged_queries == ("q4",)
    for name in from_dicts.metric_names:
        np.testing.assert_array_equal(from_frames.values[name], from_dicts.values[name])
        assert from_frames.aggregate[name] == from_dicts.aggregate[name]
    # And a hand check of one value: q1 ranks d(0.9), c(0.3), a(0.3) (tie: c > a).
    # linear DCG@3 = 0 + 1.5/log2(3) + 2/2
    if gain == "linear":
        assert from_dicts.value("dcg@3", "q1") == pytest.approx(1.5 / math.log2(3) + 1.0, rel=1e-14)


# ---- metric names ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, canonical",
    [
        ("nDCG@10", "ndcg@10"),
        ("ndcg", "ndcg"),
        ("P_5", "precision@5"),
        ("precision@5", "precision@5"),
        ("ndcg_cut_10", "ndcg@10"),
        ("recip_rank", "mrr"),
        ("Rprec", "r_precision"),
        ("success_1", "hit_rate@1"),
        ("map_cut_100", "map@100"),
        ("map", "map"),
        ("recall_1000", "recall@1000"),
        ("  MRR@10 ", "mrr@10"),
        ("judged@10", "judged@10"),
    ],
)
def test_canonical_metric_names(text, canonical):
    metric = parse_metric(text)
    assert str(metric) == canonical
    assert parse_metric(canonical) == metric
    assert parse_metric(metric) is metric


def test_metric_is_hashable_and_frozen():
    a, b = parse_metric("nDCG@10"), parse_metric("ndcg_cut_10")
    assert a == b == Metric("ndcg", 10)
    assert hash(a) == hash(b)
    assert len({a, b, parse_metric("P_10")}) == 2
    assert {a: 1}[b] == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.k = 5  # type: ignore[misc]
    assert parse_metrics(["nDCG@10", "ndcg_cut_10", "P_5"]) == (Metric("ndcg", 10), Metric("precision", 5))


def test_unknown_metric_lists_valid_names_and_suggests():
    with pytest.raises(MetricError) as info:
        parse_metric("ndgc@10")
    message = str(info.value)
    assert "ndgc@10" in message
    assert "did you mean 'ndcg@10'" in message  # the cutoff kept: it is a valid one
    for form in valid_metric_names():
        assert form in message
    assert "precision@k" in message and "r_precision" in message
    assert isinstance(info.value, RagEvalError)


def test_unknown_metric_without_close_match_still_lists_valid_names():
    with pytest.raises(MetricError, match="valid: .*ndcg@k"):
        parse_metric("zzzzqqq")


@pytest.mark.parametrize(
    "text", ["ndcg@0", "ndcg@-1", "P_0", "precision@-3", "ndcg_cut_0", "hit_rate@0", "map_cut_-5"]
)
def test_non_positive_cutoff_is_an_error(text):
    with pytest.raises(MetricError, match="positive"):
        parse_metric(text)


@pytest.mark.parametrize("text", ["ndcg@2.5", "ndcg@ten", "P_x", "precision@", "ndcg@1e1", "recall@1.0"])
def test_non_integer_cutoff_is_an_error(text):
    with pytest.raises(MetricError, match="integer"):
        parse_metric(text)


@pytest.mark.parametrize("text", ["precision", "recall", "hit_rate", "judged", "P", "success"])
def test_cutoff_required(text):
    with pytest.raises(MetricError, match="cutoff"):
        parse_metric(text)


@pytest.mark.parametrize("text", ["r_precision@5", "Rprec@5"])
def test_r_precision_takes_no_cutoff(text):
    with pytest.raises(MetricError, match="no cutoff"):
        parse_metric(text)


def test_evaluate_rejects_bad_metric_name_before_computing():
    with pytest.raises(MetricError, match="did you mean"):
        evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["ndcg@10", "precison@5"])


# ---- input the API refuses (one clear error, never a silent number) ----------------------


@pytest.mark.parametrize(
    "judgements, message",
    [
        ({"q1": {"a": "1"}},
         r"^judgements: query 'q1', doc 'a': grade '1' is not a number; give each grade as an int or a float$"),
        ({"q1": {"a": 1, "b": True}}, r"^judgements: query 'q1', doc 'b': grade True is not a number"),
        ({"q1": {"a": np.bool_(True)}}, r"^judgements: query 'q1', doc 'a': grade np\.True_ is not a number"),
        ({"q1": {"a": None}}, r"^judgements: query 'q1', doc 'a': grade None is not a number"),
        ({"q1": {"a": 1, "b": float("inf")}},
         r"^judgements: query 'q1', doc 'b': grade is inf; every grade must be a finite"),
        ({}, r"^judgements: no query has a judgement \(empty\), so there is nothing to score"),
        ({"q1": {}, "q2": {}}, r"^judgements: no query has a judgement \(empty\)"),
    ],
)
def test_judgements_that_are_not_grades_are_refused(judgements, message):
    """'1' and True would be read as 1.0, and empty judgements give {'ndcg': nan}: refused instead."""
    with pytest.raises(RagEvalError, match=message):
        evaluate(judgements, {"q1": {"a": 1.0}}, ["ndcg"])


def test_numbers_of_any_numeric_type_are_grades():
    judgements = {"q1": {"a": np.int64(2), "b": np.float32(1.0), "c": 0.5}}
    results = evaluate(judgements, {"q1": {"a": 1.0, "b": 0.5}}, ["ndcg"])
    # DCG 2 + 1/log2(3); IDCG 2 + 1/log2(3) + 0.5/2.
    assert results.aggregate["ndcg"] == (2 + 1 / math.log2(3)) / (2 + 1 / math.log2(3) + 0.5 / 2)


def test_dataframe_grades_that_are_not_numbers_are_refused():
    run = pd.DataFrame({"qid": ["q1"], "doc_id": ["a"], "score": [1.0]})
    for grades, row, shown in (([1, "1"], 1, "'1'"), ([True, False], 0, "True")):
        judgements = pd.DataFrame({"qid": ["q1", "q1"], "doc_id": ["a", "b"], "grade": grades})
        with pytest.raises(RagEvalError, match=rf"^judgements: row {row}: grade {shown} is not a number"):
            evaluate(judgements, run, ["ndcg"])


@pytest.mark.parametrize("score", [float("inf"), -float("inf"), float("nan")])
def test_a_run_score_that_is_not_finite_is_refused(score):
    message = rf"^run: query 'q1', doc 'b': score is {score!r}; every score must be a finite number$"
    with pytest.raises(RagEvalError, match=message):
        evaluate({"q1": {"a": 1}}, {"q1": {"a": 1.0, "b": score}}, ["ndcg"])


@pytest.mark.parametrize(
    "judgements, gain, problem",
    [
        # 1e308 (1 + 1/log2 3 + 1/2) is past float64's 1.8e308; two such grades would still fit.
        ({"q0": {"a": 1}, "q1": {"a": 1e308, "b": 1e308, "c": 1e308}}, "linear",
         r"its ideal DCG is infinite, as its gains \(grades up to 1e\+308\) add up past the largest float64"),
        ({"q1": {"a": 1100}}, "exponential",
         r"its ideal DCG is infinite, as with exponential gain, 2\^1100 - 1 is past the largest float64"),
    ],
)
def test_gains_past_float64_raise_naming_the_query_without_a_warning(judgements, gain, problem, recwarn):
    with pytest.raises(EvaluationError, match=rf"^judgements: query 'q1': ndcg@5 cannot be computed: {problem}"):
        evaluate(judgements, {"q1": {"a": 2.0, "b": 1.0}}, ["precision@1", "ndcg@5"], gain=gain)
    assert [str(w.message) for w in recwarn] == []
    # Metrics without gains score such grades exactly: precision@1 of q1 is 1.
    assert evaluate(judgements, {"q1": {"a": 2.0, "b": 1.0}}, ["precision@1"], gain=gain).value("P_1", "q1") == 1.0


def test_micro_ndcg_refuses_ideal_dcgs_that_add_up_past_float64():
    judgements = {f"q{i}": {"a": 1e308} for i in range(3)}  # each IDCG is 1e308, their sum is not finite
    run = {q: {"a": 1.0} for q in judgements}
    assert evaluate(judgements, run, ["ndcg"]).aggregate["ndcg"] == 1.0
    with pytest.raises(EvaluationError, match="ndcg with aggregation micro cannot be computed: the ideal DCGs of all"):
        evaluate(judgements, run, ["ndcg"], aggregation="micro")
