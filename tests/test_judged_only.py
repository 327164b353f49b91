"""Judged-only evaluation (the condensed list, trec_eval -J), exact to trec_eval for every measure it has.

trec_eval -J (form_res_rels.c, judged_docs_only_flag) drops from each ranking every document whose
qrels grade is not >= 0 (no judgement, or a negative grade), keeps the order of the rest (ties broken
by doc id first) and numbers them 1, 2, ... again; the judgements are unchanged. The references:
pytrec_eval with ``judged_docs_only_flag=True`` (trec_eval compiled) on trec_eval's own test
collection and on random collections, read from dicts and from TREC files in any line order; and,
for float grades and every rag_eval metric, the same evaluation of a run from which those documents
were deleted.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import numpy as np
import pytest
from _pytrec import pytrec_values, read_trec_qrels, read_trec_run
from _trec_cases import (
    FLOAT32_SCORES,
    FLOAT_GRADES,
    SETTINGS,
    TREC_GRADES,
    collection,
    trec_lines,
    trec_safe,
    write_lines,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_eval import EvaluationOptions, RagEvalError, evaluate, evaluate_evidence, parse_metric
from rag_eval._data.config.sections import EvaluationSpec
from rag_eval._scoring.engine import read_qrels, read_run
from rag_eval.cli import main

TEST_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)  # trec_eval's default cutoffs
# trec_eval's measures that rag_eval has, as pytrec_eval names its results.
COLLECTION_MEASURES = (
    ["ndcg", "map", "recip_rank", "Rprec", "bpref", "success_1", "success_5", "success_10"]
    + [f"{family}_{k}" for family in ("ndcg_cut", "P", "recall", "map_cut") for k in TEST_CUTS]
)
COLLECTION_REQUEST = ["ndcg", "map", "recip_rank", "Rprec", "bpref", "success", "ndcg_cut", "P", "recall", "map_cut"]


def compare(results, reference: dict, names: list[str]) -> int:
    """Assert every per-query value and mean of ``results`` equals pytrec_eval's; return how many were compared."""
    compared = 0
    for trec_name in names:
        metric = str(parse_metric(trec_name))
        want = [reference[q][trec_name] if q in reference else 0.0 for q in results.query_ids]  # -c: unanswered 0
        for qid, value in zip(results.query_ids, want):
            got = results.value(metric, qid)
            assert got == pytest.approx(value, abs=1e-12, rel=0), f"{trec_name} {qid}: {got} != trec_eval -J {value}"
            compared += 1
        assert results.aggregate[metric] == pytest.approx(sum(want) / len(want), abs=1e-12, rel=0), trec_name
    return compared


# ---- trec_eval's own test collection ----------------------------------------------------------


@pytest.mark.parametrize(
    ("qrels", "run", "level"),
    [
        ("qrels.test", "results.test", 1),
        ("qrels.rel_level", "results.test", 2),  # graded, with 304 grades of -1: dropped by -J
        ("qrels.test", "results.trunc", 1),  # topic 302 unanswered (trec_eval -c: 0)
    ],
)
def test_every_measure_equals_trec_eval_J_on_its_test_collection(trec_eval_test, qrels, run, level):
    qrels_path, run_path = trec_eval_test / qrels, trec_eval_test / run
    reference = pytrec_values(
        read_trec_qrels(qrels_path), read_trec_run(run_path), COLLECTION_REQUEST, level=level, judged_only=True
    )
    condensed = evaluate(
        read_qrels(qrels_path), read_run(run_path), COLLECTION_MEASURES,
        no_relevant="zero", relevance_threshold=level, judged_only=True,
    )
    assert compare(condensed, reference, COLLECTION_MEASURES) == len(COLLECTION_MEASURES) * 3
    # The collection is a fair test: -J changes many of these values (results.test retrieves 241, 236
    # and 285 unjudged documents for topics 301, 302 and 303).
    plain = evaluate(read_qrels(qrels_path), read_run(run_path), COLLECTION_MEASURES,
                     no_relevant="zero", relevance_threshold=level)
    changed = sum(
        int(np.sum(np.abs(plain.values[m] - condensed.values[m]) > 1e-9)) for m in plain.values
    )
    assert changed >= 20, changed


def test_rag_eval_evaluate_judged_only_flag_prints_trec_eval_J_values(trec_eval_test, capsys):
    qrels, run = trec_eval_test / "qrels.test", trec_eval_test / "results.test"
    reference = pytrec_values(read_trec_qrels(qrels), read_trec_run(run), ["P", "map"], judged_only=True)
    code = main(["evaluate", "--qrels", str(qrels), "--run", str(run), "-m", "P_10", "-m", "map", "-q",
                 "--judged-only"])
    assert code == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    names = {"precision@10": "P_10", "map": "map"}
    for name, qid, value in rows:
        if qid != "all":
            assert value == f"{reference[qid][names[name]]:.4f}", (name, qid)
    condensed = {(n, q): v for n, q, v in rows}
    assert (condensed[("map", "301")], condensed[("map", "all")]) == ("0.0441", "0.1848")
    # Without the flag the same files give trec_eval's plain values (out.test.aq: map 0.0324 for 301).
    assert main(["evaluate", "--qrels", str(qrels), "--run", str(run), "-m", "map", "-q"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "map\t301\t0.0324"


# ---- pytrec_eval -J on random collections -------------------------------------------------------

CUTS = (1, 2, 3, 5, 10, 20)
RANDOM_REQUEST = ["ndcg", "map", "recip_rank", "Rprec", "bpref"] + [
    f"{family}.{','.join(map(str, CUTS))}" for family in ("ndcg_cut", "P", "recall", "map_cut", "success")
]
RANDOM_MEASURES = ["ndcg", "map", "recip_rank", "Rprec", "bpref"] + [
    f"{family}_{k}" for family in ("ndcg_cut", "P", "recall", "map_cut", "success") for k in CUTS
]


@settings(max_examples=30, **SETTINGS)
@given(
    case=collection(grades=TREC_GRADES, scores=FLOAT32_SCORES),
    level=st.sampled_from([1, 2, 3]),
    via_files=st.booleans(),
    data=st.data(),
)
def test_every_measure_equals_trec_eval_J_on_random_collections(case, level, via_files, data):
    judgements, run = trec_safe(case[0]), case[1]
    reference = pytrec_values(judgements, run, RANDOM_REQUEST, level=level, judged_only=True)
    options = {"no_relevant": "zero", "relevance_threshold": level, "judged_only": True}
    if via_files:  # TREC files, their lines in any order (the packed-id reader and the sorting ranker)
        qrels_lines, run_lines = trec_lines(judgements, run)
        with tempfile.TemporaryDirectory() as folder:
            qrels = write_lines(Path(folder) / "qrels", data.draw(st.permutations(qrels_lines)))
            trec_run = write_lines(Path(folder) / "run", data.draw(st.permutations(run_lines)))
            results = evaluate(read_qrels(qrels), read_run(trec_run), RANDOM_MEASURES, **options)
    else:
        results = evaluate(judgements, run, RANDOM_MEASURES, **options)
    assert set(results.query_ids) == set(judgements)
    assert compare(results, reference, RANDOM_MEASURES) == len(RANDOM_MEASURES) * len(judgements)


# ---- every rag_eval metric: the run without its unjudged documents -------------------------------

ALL_METRICS = ["ndcg", "dcg", "idcg", "mrr", "map", "r_precision", "bpref"] + [
    f"{family}@{k}" for family in ("ndcg", "dcg", "precision", "recall", "mrr", "map", "hit_rate", "judged")
    for k in (1, 3, 5)
]


@settings(max_examples=60, **SETTINGS)
@given(
    case=collection(grades=FLOAT_GRADES, scores=st.one_of(FLOAT32_SCORES, st.floats(-1, 1))),
    gain=st.sampled_from(["linear", "exponential"]),
    aggregation=st.sampled_from(["macro", "micro"]),
    no_relevant=st.sampled_from(["skip", "zero"]),
    level=st.sampled_from([1, 0.5, 2]),
)
def test_judged_only_is_the_run_without_unjudged_and_negative_documents(case, gain, aggregation, no_relevant, level):
    judgements, run = case
    kept = {q: {d: s for d, s in ranking.items() if judgements.get(q, {}).get(d, -1) >= 0} for q, ranking in run.items()}
    options = {"gain": gain, "aggregation": aggregation, "no_relevant": no_relevant, "relevance_threshold": level}
    condensed = evaluate(judgements, run, ALL_METRICS, judged_only=True, **options)
    deleted = evaluate(judgements, kept, ALL_METRICS, **options)
    assert condensed.query_ids == deleted.query_ids
    for name in condensed.metric_names:
        np.testing.assert_array_equal(condensed.values[name], deleted.values[name], err_msg=name)
        got, want = condensed.aggregate[name], deleted.aggregate[name]
        assert (math.isnan(got) and math.isnan(want)) or got == want, name
    assert condensed.left_out == deleted.left_out
    assert condensed.options["judged_only"] is True and "judged_only" not in deleted.options


# ---- by hand, and where the option is accepted ---------------------------------------------------


def test_hand_example():
    # Judged a 1, b 0, c 1, n -1; retrieved a, x (unjudged), b, n, c. As retrieved: relevant at ranks 1
    # and 5, P@3 = 1/3, AP = (1/1 + 2/5) / 2 = 0.7. Condensed (x and n removed): a, b, c, relevant at 1
    # and 3: P@3 = 2/3, AP = (1/1 + 2/3) / 2 = 5/6; nDCG@3 = (1 + 1/2) / (1 + 1/log2(3)).
    judgements = {"q": {"a": 1, "b": 0, "c": 1, "n": -1}}
    run = {"q": {"a": 0.9, "x": 0.8, "b": 0.7, "n": 0.6, "c": 0.5}}
    names = ["precision@3", "map", "ndcg@3"]
    plain = evaluate(judgements, run, names).aggregate
    condensed = evaluate(judgements, run, names, judged_only=True).aggregate
    assert plain["precision@3"] == pytest.approx(1 / 3) and plain["map"] == pytest.approx(0.7)
    assert condensed["precision@3"] == pytest.approx(2 / 3) and condensed["map"] == pytest.approx(5 / 6)
    assert condensed["ndcg@3"] == pytest.approx(1.5 / (1 + 1 / math.log2(3)))
    reference = pytrec_values(judgements, run, ["P.3", "map", "ndcg_cut.3"], judged_only=True)["q"]
    assert (reference["P_3"], reference["map"]) == pytest.approx((2 / 3, 5 / 6))


def test_the_option_is_checked_and_recorded():
    with pytest.raises(RagEvalError, match="judged_only must be true or false, got 'yes'"):
        EvaluationOptions(judged_only="yes")  # type: ignore[arg-type]
    assert "judged_only" not in EvaluationOptions().to_dict()  # absent means false: older results files agree
    assert EvaluationOptions(judged_only=True).to_dict()["judged_only"] is True


def test_the_config_option_reaches_evaluate_and_evaluate_evidence():
    spec = EvaluationSpec(judged_only=True)
    assert EvaluationSpec().judged_only is False
    judgements, run = {"q": {"a": 1, "b": 0}}, {"q": {"x": 0.9, "a": 0.5}}
    results = evaluate(judgements, run, ["mrr"], **spec.passage_options())
    assert results.aggregate["mrr"] == 1.0 and results.options["judged_only"] is True
    assert evaluate(judgements, run, ["mrr"], **EvaluationSpec().passage_options()).aggregate["mrr"] == 0.5
    # Document metrics: the chunk ranking collapsed to documents (x, then a), then condensed (a).
    evidence = {"q": [("a", 0, 5, 1)]}
    spans = {"q": [("x", 0, 5, 3.0), ("a", 0, 5, 2.0)]}
    documents = evaluate_evidence(evidence, spans, ["doc_mrr", "evidence_recall@1"], **spec.document_options())
    assert documents.aggregate["doc_mrr"] == 1.0
    assert documents.aggregate["evidence_recall@1"] == 0.0  # evidence metrics read characters: unchanged


def test_a_run_config_takes_bpref_and_judged_only(tmp_path):
    # bm25 ties d3 and d1 for "alpha" (same length, one match each): d3, the greater id, ranks first
    # and is unjudged. As retrieved MRR = 1/2; condensed, d1 is first: MRR = 1. bpref ignores d3 either way.
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "tiny.yaml").write_text(
        "name: tiny\ncorpus:\n  - {id: d1, text: alpha beta}\n  - {id: d2, text: gamma delta}\n"
        "  - {id: d3, text: alpha gamma}\nqueries:\n  - {id: q1, text: alpha, judgements: {d1: 2, d2: 0}}\n"
    )
    for judged_only in (False, True):
        config = tmp_path / f"run-{judged_only}.yaml"
        config.write_text(
            "name: tiny-run\ndataset: {path: data/tiny.yaml}\nretrievers: [{label: bm25, adapter: bm25}]\n"
            f"metrics: [bpref, mrr]\nevaluation: {{judged_only: {str(judged_only).lower()}}}\nreport: {{plots: false}}\n"
        )
        out = tmp_path / f"out-{judged_only}"
        assert main(["run", str(config), "--output", str(out), "--no-progress"]) == 0
        results = json.loads((out / "bm25.json").read_text())["results"]
        assert results["aggregate"] == {"bpref": 1.0, "mrr": 1.0 if judged_only else 0.5}
        assert results["options"].get("judged_only", False) is judged_only
