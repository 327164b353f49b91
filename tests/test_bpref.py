"""bpref, exact to trec_eval (m_bpref.c): its own test collection, pytrec_eval on random data, a hand example.

trec_eval's definition: R = judged documents with grade >= the relevance level (-l), N = judged
documents with 0 <= grade < the level, retrieved or not. Walking the ranking, unjudged documents and
negative grades are skipped; a relevant document with n judged non-relevant ones above it adds
1 - min(n, R) / min(N, R) (1 when n = 0); the sum is divided by R (0 when R = 0).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from _pytrec import pytrec_values, read_trec_qrels, read_trec_run
from _trec_cases import FLOAT32_SCORES, FLOAT_GRADES, SETTINGS, TREC_GRADES, collection, trec_order, trec_safe
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_eval import evaluate, parse_metric
from rag_eval._scoring.engine import read_qrels, read_run, to_nested
from rag_eval.cli import main


def trec_eval_printed(path: Path, measure: str) -> dict[str, str]:
    """{topic or 'all': value as trec_eval printed it} of one measure of an out.* file."""
    rows = (re.split(r"\s+", line.strip()) for line in path.read_text().splitlines())
    return {topic: value for name, topic, value in rows if name == measure}


# ---- trec_eval's own test collection ----------------------------------------------------


@pytest.mark.parametrize(
    ("qrels", "run", "out", "level"),
    [
        ("qrels.test", "results.test", "out.test.aq", 1),  # trec_eval -m all_trec -q
        ("qrels.rel_level", "results.test", "out.test.aql", 2),  # graded, -1 grades, -l2
        ("qrels.test", "results.trunc", "out.test.aqc", 1),  # -c: topic 302 unanswered, scores 0
    ],
)
def test_bpref_equals_trec_eval_on_its_test_collection(trec_eval_test, qrels, run, out, level):
    expected = trec_eval_printed(trec_eval_test / out, "bpref")
    results = evaluate(
        read_qrels(trec_eval_test / qrels), read_run(trec_eval_test / run), ["bpref"],
        no_relevant="zero", relevance_threshold=level,
    )
    got = {qid: f"{results.value('bpref', qid):.4f}" for qid in results.query_ids}
    got["all"] = f"{results.aggregate['bpref']:.4f}"
    assert got == expected
    assert len(expected) == 4


def test_bpref_with_at_most_100_documents_per_topic_equals_trec_eval_M100(trec_eval_test):
    # out.test.aqcM is trec_eval -c -M100: each topic's ranking cut at 100 documents before scoring.
    expected = trec_eval_printed(trec_eval_test / "out.test.aqcM", "bpref")
    run = to_nested(read_run(trec_eval_test / "results.trunc"))
    cut = {q: {d: ranking[d] for d in trec_order(ranking)[:100]} for q, ranking in run.items()}
    results = evaluate(read_qrels(trec_eval_test / "qrels.test"), cut, ["bpref"], no_relevant="zero")
    got = {qid: f"{results.value('bpref', qid):.4f}" for qid in results.query_ids}
    assert {**got, "all": f"{results.aggregate['bpref']:.4f}"} == expected == {
        "301": "0.0456", "302": "0.0000", "303": "0.3300", "all": "0.1252",
    }


def test_default_trec_eval_output_and_pytrec_eval_agree_to_the_last_digit(trec_eval_test):
    # out.test: plain `trec_eval qrels.test results.test` prints bpref among its default measures.
    assert trec_eval_printed(trec_eval_test / "out.test", "bpref") == {"all": "0.1981"}
    qrels, run = trec_eval_test / "qrels.test", trec_eval_test / "results.test"
    reference = pytrec_values(read_trec_qrels(qrels), read_trec_run(run), ["bpref"])
    results = evaluate(read_qrels(qrels), read_run(run), ["bpref"], no_relevant="zero")
    for qid in results.query_ids:
        assert results.value("bpref", qid) == pytest.approx(reference[qid]["bpref"], abs=1e-12, rel=0)


def test_rag_eval_evaluate_takes_bpref_on_the_command_line(trec_eval_test, capsys):
    code = main([
        "evaluate", "--qrels", str(trec_eval_test / "qrels.test"), "--run", str(trec_eval_test / "results.test"),
        "-m", "bpref", "-q",
    ])
    assert code == 0
    assert capsys.readouterr().out.splitlines() == [
        "bpref\t301\t0.1230", "bpref\t302\t0.4712", "bpref\t303\t0.0000", "bpref\tall\t0.1981",
    ]


# ---- by hand -------------------------------------------------------------------------------


def test_hand_example():
    # Judged: a 1, c 1 (R = 2); b 0, d 0, e 0 (N = 3). Ranking a, x (unjudged), b, c.
    # a: no judged non-relevant above: 1. x: skipped. c: b above, 1 - min(1, 2) / min(3, 2) = 1/2.
    # bpref = (1 + 1/2) / 2 = 0.75, whatever x is.
    judgements = {"q": {"a": 1, "b": 0, "c": 1, "d": 0, "e": 0}}
    run = {"q": {"a": 4.0, "x": 3.0, "b": 2.0, "c": 1.0}}
    assert evaluate(judgements, run, ["bpref"]).aggregate["bpref"] == 0.75
    assert pytrec_values(judgements, run, ["bpref"])["q"]["bpref"] == 0.75
    # A negative grade is "in the pool, not judged" for trec_eval: skipped too, and not counted in N.
    negative = {"q": {"a": 1, "b": 0, "c": 1, "x": -1}}
    assert evaluate(negative, run, ["bpref"]).aggregate["bpref"] == pytest.approx((1 + (1 - 1 / 1)) / 2)
    assert pytrec_values(negative, run, ["bpref"])["q"]["bpref"] == 0.5
    # Threshold 2: only grade >= 2 is relevant; grades 0 and 1 are non-relevant (N counts both).
    graded = {"q": {"a": 2, "b": 1, "c": 2, "d": 0}}
    # R = 2, N = 2. a: 1. b: non-relevant. c: 1 - min(1, 2) / min(2, 2) = 1/2. bpref = 0.75.
    assert evaluate(graded, run, ["bpref"], relevance_threshold=2).aggregate["bpref"] == 0.75
    assert pytrec_values(graded, run, ["bpref"], level=2)["q"]["bpref"] == 0.75


def test_bpref_needs_a_relevant_document_and_follows_the_no_relevant_policy():
    judgements = {"q": {"a": 0}, "p": {"a": 1}}
    run = {"q": {"a": 1.0}, "p": {"a": 1.0}}
    skipped = evaluate(judgements, run, ["bpref"])
    assert skipped.left_out["bpref"] == ("q",) and skipped.aggregate["bpref"] == 1.0
    assert evaluate(judgements, run, ["bpref"], no_relevant="zero").aggregate["bpref"] == 0.5  # trec_eval: q is 0
    metric = parse_metric("bpref")
    assert (metric.trec_eval_name, metric.higher_is_better, metric.uses_relevance) == ("bpref", True, True)
    assert parse_metric("doc_bpref").is_document_level


# ---- pytrec_eval on random collections ----------------------------------------------------


@settings(max_examples=30, **SETTINGS)
@given(case=collection(grades=TREC_GRADES, scores=FLOAT32_SCORES), level=st.sampled_from([1, 2, 3]))
def test_bpref_equals_pytrec_eval_on_random_collections(case, level):
    judgements, run = trec_safe(case[0]), case[1]
    reference = pytrec_values(judgements, run, ["bpref"], level=level)
    reference_condensed = pytrec_values(judgements, run, ["bpref"], level=level, judged_only=True)
    for judged_only, want in ((False, reference), (True, reference_condensed)):
        results = evaluate(
            judgements, run, ["bpref"], no_relevant="zero", relevance_threshold=level, judged_only=judged_only
        )
        assert set(results.query_ids) == set(judgements)
        for qid in results.query_ids:
            expected = want[qid]["bpref"] if qid in want else 0.0  # trec_eval -c: unanswered scores 0
            assert results.value("bpref", qid) == pytest.approx(expected, abs=1e-12, rel=0), (qid, judged_only)


def slow_bpref(judged: dict, ranking: dict, level: float) -> float:
    """m_bpref.c line by line; NaN where R = 0 (rag_eval's no_relevant policy then applies)."""
    r = sum(1 for g in judged.values() if g >= level)
    n = sum(1 for g in judged.values() if 0 <= g < level)
    if r == 0:
        return math.nan
    total, nonrelevant_above = 0.0, 0
    for doc in trec_order(ranking):
        grade = judged.get(doc)
        if grade is None or grade < 0:
            continue
        if grade < level:
            nonrelevant_above += 1
        else:
            total += 1.0 - min(nonrelevant_above, r) / min(n, r) if nonrelevant_above else 1.0
    return total / r


@settings(max_examples=60, **SETTINGS)
@given(
    case=collection(grades=FLOAT_GRADES, scores=st.one_of(FLOAT32_SCORES, st.floats(-1, 1))),
    level=st.sampled_from([1, 0.5, 0.35, 2, 1.25]),
)
def test_bpref_of_float_grades_and_thresholds_equals_a_slow_reference(case, level):
    judgements, run = case
    results = evaluate(judgements, run, ["bpref"], relevance_threshold=level)
    for qid in results.query_ids:
        want = slow_bpref(judgements[qid], run.get(qid, {}), level)
        got = results.value("bpref", qid)
        assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, abs=1e-12, rel=0), qid
