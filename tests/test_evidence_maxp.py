"""Document metrics (MaxP) against trec_eval itself on the collapsed run.

The chunk ranking of each query is collapsed to documents (collapse_to_documents: each
document at the rank of its best chunk, rank-derived scores), and trec_eval (pytrec_eval,
in a fresh process as in test_differential.py) scores that run against the document grades
(explicit, else the highest evidence grade). evaluate_evidence's doc_ metrics must give the
same per-query values (trec_eval -c: a judged query without spans scores 0).
"""

from __future__ import annotations

import pytest
from _pytrec import pytrec_values
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_eval import evaluate_evidence
from rag_eval._scoring.evidence import collapse_to_documents

DOCS = ["d0", "d1", "d2", "d9", "d10", "D3", "a", "ab", "z"]
CUTS = (1, 2, 3, 5, 10)
TREC_REQUEST = ["ndcg", "ndcg_cut.1,2,3,5,10", "P.1,2,3,5,10", "recall.1,2,3,5,10", "map", "map_cut.1,2,3,5,10",
                "recip_rank", "Rprec", "success.1,2,3,5,10"]
TREC_NAMES = ["ndcg", "map", "recip_rank", "Rprec"] + [
    f"{family}_{k}" for family in ("ndcg_cut", "P", "recall", "map_cut", "success") for k in CUTS
]
# rag_eval's name of each trec_eval measure, at document level.
DOC_NAMES = {
    "ndcg": "doc_ndcg", "map": "doc_map", "recip_rank": "doc_mrr", "Rprec": "doc_r_precision",
    **{f"ndcg_cut_{k}": f"doc_ndcg@{k}" for k in CUTS}, **{f"P_{k}": f"doc_precision@{k}" for k in CUTS},
    **{f"recall_{k}": f"doc_recall@{k}" for k in CUTS}, **{f"map_cut_{k}": f"doc_map@{k}" for k in CUTS},
    **{f"success_{k}": f"doc_hit_rate@{k}" for k in CUTS},
}

def trec_eval_reference(qrels: dict, run: dict, level: int) -> dict[str, dict[str, float]]:
    """pytrec_eval's per-query values, each evaluation in a fresh process (it keeps global state)."""
    return pytrec_values(qrels, run, TREC_REQUEST, level=level)


@st.composite
def query(draw):
    """(evidence, explicit document grades, spans) of one query; None where absent."""
    evidence = [
        (draw(st.sampled_from(DOCS)), start, start + draw(st.integers(1, 20)), draw(st.integers(1, 3)))
        for start in draw(st.lists(st.integers(0, 100), max_size=4))
    ]
    held = {doc for doc, *_ in evidence}
    judged = draw(st.lists(st.sampled_from(DOCS), max_size=4, unique=True))
    # trec_eval reads grades <= -2 as its own markers: explicit grades stay >= -1 here.
    explicit = {d: draw(st.integers(1, 3) if d in held else st.integers(-1, 3)) for d in judged}
    kind = draw(st.sampled_from(["spans"] * 5 + ["empty", "missing"]))
    spans = None
    if kind == "empty":
        spans = []
    elif kind == "spans":
        # Several chunks per document, overlapping, with tied scores: the best-ranked chunk places the document.
        chunks = draw(st.lists(st.tuples(st.sampled_from(DOCS), st.integers(0, 60), st.integers(1, 30)),
                               min_size=1, max_size=14, unique_by=lambda c: (c[0], c[1], c[2])))
        scores = st.sampled_from([3.0, 2.5, 2.0, 1.0, 0.0])
        spans = [(doc, start, start + size, draw(scores)) for doc, start, size in chunks]
    return evidence or None, explicit or None, spans


@settings(max_examples=30, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries=st.lists(query(), min_size=1, max_size=25), level=st.sampled_from([1, 2]))
def test_document_metrics_equal_trec_eval_on_the_collapsed_run(queries, level):
    evidence, judgements, spans = {}, {}, {}
    for i, (ev, explicit, items) in enumerate(queries):
        qid = f"q{i}"
        if ev:
            evidence[qid] = ev
        if explicit:
            judgements[qid] = explicit
        if items is not None:
            spans[qid] = items
    if not evidence and not judgements:
        return
    results = evaluate_evidence(evidence, spans, list(DOC_NAMES.values()), document_judgements=judgements,
                                no_relevant="zero", relevance_threshold=level)

    qrels = {}
    for qid in set(evidence) | set(judgements):
        grades: dict[str, int] = {}
        for doc, _, _, grade in evidence.get(qid, []):
            grades[doc] = max(grades.get(doc, 0), grade)
        grades.update(judgements.get(qid, {}))
        qrels[qid] = grades
    run = collapse_to_documents(spans)
    reference = trec_eval_reference(qrels, run, level)
    compared = 0
    for trec_name, name in DOC_NAMES.items():
        for qid in results.query_ids:
            got = results.value(name, qid)
            want = reference[qid][trec_name] if qid in reference else 0.0  # trec_eval -c: unanswered scores 0
            assert got == pytest.approx(want, abs=1e-9, rel=0), f"{name} {qid}: {got} != trec_eval {trec_name} {want}"
            compared += qid in reference
    assert compared or not any(spans.get(q) for q in qrels)


def test_collapse_keeps_each_document_at_its_best_chunk():
    spans = {
        "q": [("b", 0, 5, 0.5), ("a", 0, 5, 0.9), ("b", 5, 9, 0.9), ("a", 5, 9, 0.1), ("c", 0, 1, 0.5)],
        "e": [],
    }
    # Ranked: b#5-9 (0.9, 'b#5-9' > 'a#0-5'), a#0-5, c#0-1 (0.5, 'c' > 'b'), b#0-5, a#5-9.
    assert collapse_to_documents(spans) == {"q": {"b": 3.0, "a": 2.0, "c": 1.0}, "e": {}}
    assert list(collapse_to_documents(spans)["q"]) == ["b", "a", "c"]


def test_document_cutoffs_count_documents_of_the_collapsed_list():
    evidence = {"q": [("a", 0, 5, 1), ("b", 0, 5, 1), ("c", 0, 5, 1)]}
    # Three chunks of a before the first of b: in the top 3 chunks there is one document.
    spans = {"q": [("a", 0, 5, 6.0), ("a", 5, 9, 5.0), ("a", 9, 12, 4.0), ("b", 0, 5, 3.0), ("c", 0, 5, 2.0)]}
    results = evaluate_evidence(evidence, spans, ["doc_recall@1", "doc_recall@2", "doc_recall@3", "doc_precision@2"])
    row = results.per_query["q"]
    # Document cutoffs count documents of the collapsed list: a, b, c.
    assert row["doc_recall@1"] == pytest.approx(1 / 3, abs=1e-15)
    assert row["doc_recall@2"] == pytest.approx(2 / 3, abs=1e-15)
    assert row["doc_recall@3"] == 1.0
    assert row["doc_precision@2"] == 1.0
