"""rag_eval against independent implementations, on random data (hypothesis).

* pytrec_eval (trec_eval itself, compiled) for every trec_eval measure with
  integer grades. trec_eval keeps global state between evaluator objects and was
  seen to hang, so each reference evaluation runs in a fresh Python process with
  a time limit. To keep that cheap, one hypothesis example is a batch of many
  queries (trec_eval evaluates queries independently) and costs one process.
* trec_eval again for exponential gain: its gain is the grade itself, so a copy of
  each query whose grades g > 0 are replaced by 2^g - 1 has, under trec_eval, the
  DCG and IDCG of exponential gain (every gain keeps its order). The copies ride in
  the same process as the originals. (The same check against ranx's
  ``ndcg_burges`` compiled ranx's numba code on every run of the suite: it is a
  benchmark now, benchmarks/bench_ranx_exponential.py.)
* A slow, obviously-correct reference written below from SEMANTICS.md, for float
  grades, float thresholds, judged@k, DCG/IDCG, micro aggregation and policies.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _pytrec import pytrec_values
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rag_eval import evaluate, parse_metric

# Mixed-case, mixed-length ids: byte order differs from numeric and case-insensitive order.
DOCS = ["d0", "d1", "d2", "d9", "d10", "d11", "D3", "a", "ab", "b", "Z9", "z"]
# Few distinct values so that ties are frequent; -0.0 ties with 0.0.
TIED_SCORES = st.sampled_from([2.0, 1.5, 1.0, 0.5, 0.0, -0.0, -1.0])
SCORES = st.one_of(TIED_SCORES, st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False))
# trec_eval stores a score in a C float (TEXT_RESULTS.sim), so scores that differ
# only beyond float32 precision tie there; rag_eval ranks float64 (SEMANTICS.md).
# The comparison with trec_eval therefore uses scores that float32 holds exactly.
FLOAT32_SCORES = st.one_of(TIED_SCORES, st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False, width=32))
INT_GRADES = st.integers(-3, 4)
# trec_eval uses -1 and -2 internally as "not in pool" / "unjudged" markers; a qrels
# grade of -2 or lower makes pytrec_eval crash (SIGSEGV) depending on the other
# queries. Its comparison therefore uses grades >= -1; lower negative grades are
# checked against the slow reference below.
TREC_GRADES = st.integers(-1, 4)
FLOAT_GRADES = st.one_of(
    st.sampled_from([0.5, 0.9, 0.3, 0.6, 0.1, 1.0, 2.0, 0.0, -0.5]),
    st.floats(-1.0, 3.0, allow_nan=False).map(lambda g: round(g, 3)),
)
CUTS = (1, 2, 3, 5, 10, 20)  # rankings hold at most len(DOCS) = 12 documents

SETTINGS = {"deadline": None, "database": None, "suppress_health_check": [HealthCheck.too_slow]}


@st.composite
def query_case(draw, grades=INT_GRADES, scores=SCORES):
    """(judgements or None, ranking or None) of one query.

    judgements None: the query has no judgements (a run-only query); ranking None:
    the query is absent from the run; {} is an empty ranking.
    """
    judged = draw(st.lists(st.sampled_from(DOCS), unique=True, max_size=8))
    judgements = {d: draw(grades) for d in judged} if judged else None
    kind = draw(st.sampled_from(["ranked"] * 6 + ["empty", "missing"]))
    if kind == "missing":
        ranking = None
    elif kind == "empty":
        ranking = {}
    else:
        retrieved = draw(st.lists(st.sampled_from(DOCS), unique=True, min_size=1, max_size=len(DOCS)))
        ranking = {d: draw(scores) for d in retrieved}
    return judgements, ranking


def build(cases) -> tuple[dict, dict]:
    judgements, run = {}, {}
    for i, (judged, ranking) in enumerate(cases):
        qid = f"q{i}"
        if judged is not None:
            judgements[qid] = judged
        if ranking is not None:
            run[qid] = ranking
    return judgements, run


# ---- pytrec_eval, each evaluation in a fresh process (tests/_pytrec.py) ---------------


def trec_eval_reference(qrels: dict, run: dict, measures: list[str], level: int) -> dict[str, dict[str, float]]:
    """pytrec_eval's per-query values."""
    return pytrec_values(qrels, run, measures, level=level)


CUT_LIST = ",".join(map(str, CUTS))
TREC_REQUEST = [
    "ndcg", f"ndcg_cut.{CUT_LIST}", f"P.{CUT_LIST}", f"recall.{CUT_LIST}", "map", f"map_cut.{CUT_LIST}",
    "recip_rank", "Rprec", f"success.{CUT_LIST}",
]
# trec_eval's output names, which rag_eval also accepts as metric names.
TREC_NAMES = (
    ["ndcg", "map", "recip_rank", "Rprec"]
    + [f"{family}_{k}" for family in ("ndcg_cut", "P", "recall", "map_cut", "success") for k in CUTS]
)


# Exponential gain through trec_eval: each judged query gets a copy, named with this prefix,
# whose grades g > 0 are 2^g - 1 (0 and -1 give no gain either way and are kept).
EXP = "exp:"
EXP_TREC_NAMES = ["ndcg"] + [f"ndcg_cut_{k}" for k in CUTS]


def exponential_copies(judgements: dict, run: dict) -> tuple[dict, dict]:
    grades = {EXP + q: {d: 2**g - 1 if g > 0 else g for d, g in judged.items()} for q, judged in judgements.items()}
    return grades, {EXP + q: ranking for q, ranking in run.items() if q in judgements}


def relevant_exists(judged: dict | None, metric_name: str, level: float) -> bool:
    """Whether the metric is defined for this query (SEMANTICS: no_relevant)."""
    if not judged:
        return False
    if parse_metric(metric_name).name == "ndcg":
        return any(g > 0 for g in judged.values())
    return any(g >= level for g in judged.values())


@settings(max_examples=25, **SETTINGS)
@given(
    cases=st.lists(query_case(grades=TREC_GRADES, scores=FLOAT32_SCORES), min_size=1, max_size=40),
    level=st.sampled_from([1, 2, 3]),
)
def test_matches_trec_eval_per_query(cases, level):
    judgements, run = build(cases)
    assume(judgements)
    exp_judgements, exp_run = exponential_copies(judgements, run)
    both = trec_eval_reference({**judgements, **exp_judgements}, {**run, **exp_run}, TREC_REQUEST, level)
    reference = {q: values for q, values in both.items() if not q.startswith(EXP)}
    exp_reference = {q[len(EXP):]: values for q, values in both.items() if q.startswith(EXP)}
    results = evaluate(judgements, run, TREC_NAMES, no_relevant="zero", relevance_threshold=level)

    assert set(results.query_ids) == set(judgements)
    assert set(results.unjudged_queries) == {q for q, r in run.items() if r and q not in judgements}
    assert set(reference) <= set(judgements)
    compared = 0
    for trec_name in TREC_NAMES:
        name = str(parse_metric(trec_name))
        per_query = []
        for qid in results.query_ids:
            got = results.value(name, qid)
            if qid in reference:
                want = reference[qid][trec_name]
                assert got == pytest.approx(want, abs=1e-9, rel=0), f"{trec_name} {qid}: {got} != trec_eval {want}"
                compared += 1
            else:
                # trec_eval -c: a judged query the run did not answer scores 0.
                assert not run.get(qid), qid
                want = 0.0
                assert got == 0.0, f"{trec_name} {qid}: unanswered query scored {got}"
            per_query.append(want)
        # The dataset value is the mean over every judged query (trec_eval -c).
        assert results.aggregate[name] == pytest.approx(sum(per_query) / len(per_query), abs=1e-9, rel=0)
    assert compared or not any(run.get(q) for q in judgements)

    # Exponential gain (2^g - 1): equal to trec_eval on the copies, query by query and in the mean.
    exponential = evaluate(judgements, run, EXP_TREC_NAMES, gain="exponential", no_relevant="zero")
    assert set(exp_reference) == set(reference)
    for trec_name in EXP_TREC_NAMES:
        name = str(parse_metric(trec_name))
        want = [exp_reference[q][trec_name] if q in exp_reference else 0.0 for q in exponential.query_ids]
        for qid, value in zip(exponential.query_ids, want):
            got = exponential.value(name, qid)
            assert got == pytest.approx(value, abs=1e-9, rel=0), f"exponential {trec_name} {qid}: {got} != {value}"
        assert exponential.aggregate[name] == pytest.approx(sum(want) / len(want), abs=1e-9, rel=0)

    # Policy skip: NaN exactly where nothing is relevant, listed, and out of the mean.
    skipped = evaluate(judgements, run, TREC_NAMES, relevance_threshold=level)
    for trec_name in TREC_NAMES:
        name = str(parse_metric(trec_name))
        defined = np.array([relevant_exists(judgements[q], name, level) for q in skipped.query_ids])
        column, zero_column = skipped.values[name], results.values[name]
        np.testing.assert_array_equal(~np.isnan(column), defined, err_msg=name)
        np.testing.assert_array_equal(column[defined], zero_column[defined], err_msg=name)
        assert set(skipped.left_out.get(name, ())) == {q for q, d in zip(skipped.query_ids, defined) if not d}
        if defined.any():
            assert skipped.aggregate[name] == pytest.approx(zero_column[defined].mean(), abs=1e-12, rel=0)
        else:
            assert math.isnan(skipped.aggregate[name])


# ---- a slow reference written from SEMANTICS.md ---------------------------------


def trec_order(ranking: dict[str, float]) -> list[str]:
    """score descending, ties by doc id descending in bytes (two stable sorts)."""
    by_doc = sorted(ranking, key=lambda d: d.encode("utf-8"), reverse=True)
    return sorted(by_doc, key=lambda d: -ranking[d])


def gain_of(grade: float, gain: str) -> float:
    if grade is None or grade <= 0:
        return 0.0
    return grade if gain == "linear" else 2.0**grade - 1.0


def slow_query(judged: dict, ranking: dict, metric: str, gain: str, level: float) -> tuple[float, float, float]:
    """(value, dcg, idcg) of one metric on one query; value NaN where undefined."""
    m = parse_metric(metric)
    k = m.k
    order = trec_order(ranking or {})
    top = order if k is None else order[:k]
    rel = [d for d, g in judged.items() if g >= level]
    is_rel = [judged.get(d, -math.inf) >= level for d in order]
    n_rel = len(rel)

    def dcg_of(grades):
        return sum(gain_of(g, gain) / math.log2(i + 2) for i, g in enumerate(grades))

    dcg = dcg_of([judged.get(d) for d in top])
    ideal = sorted((g for g in judged.values() if g > 0), key=lambda g: -gain_of(g, gain))
    idcg = dcg_of(ideal if k is None else ideal[:k])
    if m.name == "dcg":
        return dcg, dcg, idcg
    if m.name == "idcg":
        return idcg, dcg, idcg
    if m.name == "ndcg":
        return (dcg / idcg if idcg > 0 else math.nan), dcg, idcg
    if m.name == "judged":
        return sum(d in judged for d in top) / k, dcg, idcg
    if n_rel == 0:
        return math.nan, dcg, idcg
    hits = is_rel if k is None else is_rel[:k]
    if m.name == "precision":
        value = sum(hits) / k
    elif m.name == "recall":
        value = sum(hits) / n_rel
    elif m.name == "hit_rate":
        value = float(any(hits))
    elif m.name == "mrr":
        value = next((1.0 / (i + 1) for i, h in enumerate(hits) if h), 0.0)
    elif m.name == "map":
        found, total = 0, 0.0
        for i, h in enumerate(hits):
            if h:
                found += 1
                total += found / (i + 1)
        value = total / n_rel
    elif m.name == "r_precision":
        value = sum(is_rel[:n_rel]) / n_rel
    else:  # pragma: no cover
        raise AssertionError(metric)
    return value, dcg, idcg


SLOW_METRICS = ["ndcg", "dcg", "idcg", "mrr", "map", "r_precision"] + [
    f"{family}@{k}" for family in ("ndcg", "dcg", "idcg", "precision", "recall", "mrr", "map", "hit_rate", "judged")
    for k in (1, 3, 5, 20)
]


@settings(max_examples=100, **SETTINGS)
@given(
    cases=st.lists(query_case(grades=st.one_of(FLOAT_GRADES, INT_GRADES)), min_size=1, max_size=12),
    gain=st.sampled_from(["linear", "exponential"]),
    aggregation=st.sampled_from(["macro", "micro"]),
    no_relevant=st.sampled_from(["skip", "zero"]),
    level=st.sampled_from([1, 0.5, 0.35, 2, 1.25]),
)
def test_float_grades_match_slow_reference(cases, gain, aggregation, no_relevant, level):
    judgements, run = build(cases)
    assume(judgements)
    results = evaluate(
        judgements, run, SLOW_METRICS, gain=gain, aggregation=aggregation, no_relevant=no_relevant,
        relevance_threshold=level,
    )
    assert results.query_ids == tuple(sorted(judgements))
    for metric in SLOW_METRICS:
        values, dcgs, idcgs = [], [], []
        for qid in results.query_ids:
            value, dcg, idcg = slow_query(judgements[qid], run.get(qid, {}), metric, gain, level)
            if math.isnan(value) and no_relevant == "zero":
                value = 0.0
            got = results.value(metric, qid)
            if math.isnan(value):
                assert math.isnan(got), f"{metric} {qid}: {got}, expected left out"
            else:
                assert got == pytest.approx(value, abs=1e-9, rel=1e-12), f"{metric} {qid}"
            values.append(value)
            if not (no_relevant == "skip" and idcg == 0):
                dcgs.append(dcg)
                idcgs.append(idcg)
        included = [v for v in values if not math.isnan(v)]
        if aggregation == "micro" and parse_metric(metric).name == "ndcg":
            # No relevant document anywhere: under zero every query scored 0, and so does their total.
            want = sum(dcgs) / sum(idcgs) if sum(idcgs) > 0 else (0.0 if idcgs else math.nan)
        else:
            want = sum(included) / len(included) if included else math.nan
        got = results.aggregate[metric]
        if math.isnan(want):
            assert math.isnan(got), metric
        else:
            assert got == pytest.approx(want, abs=1e-9, rel=1e-12), metric


def test_slow_reference_agrees_with_golden_values():
    """The slow reference itself reproduces SEMANTICS.md, so it is a fair judge."""
    judged = {"D0": 0, "D1": 1, "D2": 1, "D3": 2, "D4": 0}
    ranking = {"D0": 0.8, "D2": 0.7, "D3": 0.4, "D1": 0.3, "D4": 0.1}
    assert slow_query(judged, ranking, "ndcg", "linear", 1)[0] == pytest.approx(0.6584645692843067, rel=1e-14)
    assert slow_query(judged, ranking, "ndcg@2", "exponential", 1)[0] == pytest.approx(
        0.17376534287144002, rel=1e-14
    )
    assert trec_order({"b": 1.0, "c": 1.0, "a": 2.0}) == ["a", "c", "b"]


# ---- exponential gain through trec_eval: the copies are a fair judge ------------------


def test_exponential_copy_under_trec_eval_is_exponential_gain():
    # By hand: grades a=2, d=1 (d missed); run a, b, c. Exponential DCG = 2^2 - 1 = 3 (a at rank 1);
    # IDCG = 3 + (2^1 - 1)/log2(3). Query p has nothing relevant: trec_eval -c scores it 0.
    judgements = {"q": {"a": 2, "b": 0, "d": 1}, "p": {"a": 0}}
    run = {"q": {"a": 1.0, "b": 0.5, "c": 0.25}, "p": {"a": 1.0}}
    exp_judgements, exp_run = exponential_copies(judgements, run)
    assert exp_judgements == {"exp:q": {"a": 3, "b": 0, "d": 1}, "exp:p": {"a": 0}}
    reference = trec_eval_reference(exp_judgements, exp_run, ["ndcg", "ndcg_cut.1"], 1)
    assert reference["exp:q"]["ndcg"] == pytest.approx(3 / (3 + 1 / math.log2(3)), rel=1e-12)
    assert reference["exp:q"]["ndcg_cut_1"] == pytest.approx(1.0, rel=1e-12)  # IDCG@1 = 3 too
    assert reference["exp:p"]["ndcg"] == 0.0
    # ... and linear gain differs on the same ranking: DCG 2, IDCG 2 + 1/log2(3).
    assert evaluate(judgements, run, ["ndcg"]).value("ndcg", "q") == pytest.approx(2 / (2 + 1 / math.log2(3)), rel=1e-12)
    exponential = evaluate(judgements, run, ["ndcg"], gain="exponential", no_relevant="zero")
    assert exponential.value("ndcg", "q") == pytest.approx(reference["exp:q"]["ndcg"], rel=1e-12)


# ---- properties ------------------------------------------------------------------

ALL_NDCG = ["ndcg"] + [f"ndcg@{k}" for k in CUTS]


@settings(max_examples=150, **SETTINGS)
@given(
    cases=st.lists(query_case(grades=st.one_of(INT_GRADES, FLOAT_GRADES)), min_size=1, max_size=10),
    gain=st.sampled_from(["linear", "exponential"]),
)
def test_ndcg_is_between_zero_and_one(cases, gain):
    judgements, run = build(cases)
    assume(judgements)
    results = evaluate(judgements, run, ALL_NDCG, gain=gain, no_relevant="zero")
    for name in ALL_NDCG:
        values = results.values[name]
        assert np.all((values >= 0.0) & (values <= 1.0 + 1e-12)), (name, values)


@settings(max_examples=150, **SETTINGS)
@given(
    judged=st.dictionaries(st.sampled_from(DOCS), st.one_of(INT_GRADES, FLOAT_GRADES), min_size=1),
    extra=st.lists(st.sampled_from([f"x{i}" for i in range(6)]), unique=True),
    gain=st.sampled_from(["linear", "exponential"]),
)
def test_ideal_ranking_scores_one(judged, extra, gain):
    assume(any(g > 0 for g in judged.values()))
    # Relevant documents by grade (equal grades tie, which cannot matter), then
    # the rest, including documents nobody judged, below them.
    ranking = {d: 10.0 + g for d, g in judged.items() if g > 0}
    ranking.update({d: -1.0 for d in list(judged) + extra if d not in ranking})
    results = evaluate({"q": judged}, {"q": ranking}, ALL_NDCG, gain=gain)
    for name in ALL_NDCG:
        assert results.aggregate[name] == pytest.approx(1.0, abs=1e-12), name


@settings(max_examples=150, **SETTINGS)
@given(
    case=query_case(grades=st.one_of(INT_GRADES, FLOAT_GRADES)),
    k=st.sampled_from([1, 2, 3, 5]),
    gain=st.sampled_from(["linear", "exponential"]),
    data=st.data(),
)
def test_reordering_below_k_does_not_change_ndcg_at_k(case, k, gain, data):
    judged, ranking = case
    assume(judged and ranking)
    order = trec_order(ranking)
    below = order[k:]
    shuffled = data.draw(st.permutations(below))
    # Keep the top k (and its scores); give the rest new, lower, distinct scores.
    floor = min(ranking[d] for d in order[:k])
    reordered = {d: ranking[d] for d in order[:k]}
    reordered.update({d: floor - 1.0 - i for i, d in enumerate(shuffled)})
    name = f"ndcg@{k}"
    before = evaluate({"q": judged}, {"q": ranking}, [name, f"dcg@{k}"], gain=gain, no_relevant="zero")
    after = evaluate({"q": judged}, {"q": reordered}, [name, f"dcg@{k}"], gain=gain, no_relevant="zero")
    assert after.aggregate[name] == pytest.approx(before.aggregate[name], abs=1e-12)
    assert after.aggregate[f"dcg@{k}"] == pytest.approx(before.aggregate[f"dcg@{k}"], abs=1e-12)
