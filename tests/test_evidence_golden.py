"""evaluate_evidence on hand-computed examples: the golden values of SEMANTICS.md ("Documents, chunks and
evidence"), budgets, document grades, chunk grades, query lists, and every input error as one line."""

from __future__ import annotations

import math

import pytest

from rag_eval import evaluate, evaluate_evidence
from rag_eval._core.errors import EvaluationError, InputFormatError, MetricError, RagEvalError
from rag_eval._core.spans import Chunk, EvidenceSpan
from rag_eval._scoring.evidence import collapse_to_documents, covered_evidence

# SEMANTICS.md: document "d", evidence [10,20) and [40,50); chunks ranked [0,15), [45,60), [15,45).
EVIDENCE = {"q": [("d", 10, 20, 1), ("d", 40, 50, 1)]}
SPANS = {"q": [("d", 15, 45, 1.0), ("d", 0, 15, 3.0), ("d", 45, 60, 2.0)]}  # any order: ranked by score


def test_semantics_golden_values():
    names = [f"evidence_{m}@{k}" for k in (1, 3) for m in ("recall", "precision", "iou")]
    got = evaluate_evidence(EVIDENCE, SPANS, names).per_query["q"]
    assert got["evidence_recall@1"] == 0.25  # covered 5 of 20
    assert got["evidence_precision@1"] == pytest.approx(5 / 15, abs=1e-15)
    assert got["evidence_iou@1"] == pytest.approx(1 / 6, abs=1e-15)  # 5 / (15 + 15)
    assert got["evidence_recall@3"] == 1.0  # covered 20
    assert got["evidence_precision@3"] == pytest.approx(1 / 3, abs=1e-15)  # 20 / 60
    assert got["evidence_iou@3"] == pytest.approx(1 / 3, abs=1e-15)  # 20 / (60 + 0)


def test_budget_keeps_the_best_chunks_that_fit_and_stops_at_the_first_overflow():
    # Lengths in rank order 15, 15, 30: 29 chars fit one chunk, 30 and 59 fit two, 60 all three.
    metrics = ["evidence_recall@14chars", "evidence_recall@29chars", "evidence_recall@30chars",
               "evidence_recall@59chars", "evidence_recall@60chars", "evidence_precision@30chars"]
    got = evaluate_evidence(EVIDENCE, SPANS, metrics).per_query["q"]
    assert got["evidence_recall@14chars"] == 0.0  # the first chunk overflows: an empty context
    assert got["evidence_recall@29chars"] == 0.25
    assert got["evidence_recall@30chars"] == 0.5
    assert got["evidence_recall@59chars"] == 0.5
    assert got["evidence_recall@60chars"] == 1.0
    assert got["evidence_precision@30chars"] == pytest.approx(10 / 30, abs=1e-15)


def test_a_chunk_that_overflows_ends_the_context_even_if_a_later_one_would_fit():
    spans = {"q": [("d", 0, 15, 3.0), ("d", 15, 45, 2.0), ("d", 45, 50, 1.0)]}  # lengths 15, 30, 5
    got = evaluate_evidence(EVIDENCE, spans, ["evidence_recall@25chars"]).per_query["q"]
    assert got["evidence_recall@25chars"] == 0.25  # [45,50) is not taken after [15,45) overflowed


def test_token_budget_counts_each_chunk_text():
    documents = {"d": "one two three four five six seven eight nine ten eleven twelve thirteen fourteen."}
    # Evidence "three four" = [8, 18); chunks: [0, 7) "one two" (2 tokens), [8, 18) (2 tokens), [19, 33) (3 tokens).
    evidence = {"q": [("d", 8, 18)]}
    spans = {"q": [("d", 0, 7, 3.0), ("d", 8, 18, 2.0), ("d", 19, 33, 1.0)]}
    got = evaluate_evidence(evidence, spans, ["evidence_recall@3tokens", "evidence_recall@4tokens",
                                              "evidence_precision@7tokens"], documents=documents).per_query["q"]
    assert got["evidence_recall@3tokens"] == 0.0  # only "one two" fits
    assert got["evidence_recall@4tokens"] == 1.0
    assert got["evidence_precision@7tokens"] == pytest.approx(10 / (7 + 10 + 14), abs=1e-15)
    custom = evaluate_evidence(evidence, spans, ["evidence_recall@1tokens"], documents=documents,
                               count_tokens=lambda text: 1 if text.startswith("one") else 0)
    assert custom.per_query["q"]["evidence_recall@1tokens"] == 1.0  # 1 + 0 + 0 tokens: all fit


def test_overlapping_evidence_is_counted_once_and_overlapping_chunks_twice():
    evidence = {"q": [("d", 0, 10, 1), ("d", 5, 15, 2), ("d", 15, 20, 1)]}  # union [0, 20): 20 characters
    spans = {"q": [("d", 0, 10, 2.0), ("d", 5, 15, 1.0)]}
    got = evaluate_evidence(evidence, spans, ["evidence_recall@2", "evidence_precision@2", "evidence_iou@2"])
    row = got.per_query["q"]
    assert row["evidence_recall@2"] == 0.75  # [0, 15)
    assert row["evidence_precision@2"] == 0.75  # 15 / (10 + 10): the context holds [5, 10) twice
    assert row["evidence_iou@2"] == pytest.approx(15 / (20 + 5), abs=1e-15)


def test_spans_in_other_documents_cover_nothing_but_take_context():
    evidence = {"q": [("a", 0, 10)]}
    spans = {"q": [("b", 0, 10, 2.0), ("a", 0, 5, 1.0)]}
    row = evaluate_evidence(evidence, spans, ["evidence_recall@2", "evidence_precision@2"]).per_query["q"]
    assert row == {"evidence_recall@2": 0.5, "evidence_precision@2": pytest.approx(5 / 15, abs=1e-15)}


def test_ties_break_by_chunk_id_descending_in_bytes():
    # Same score: 'd#9-20' > 'd#10-20' in bytes ('9' > '1'), so [9, 20) is ranked first.
    evidence = {"q": [("d", 9, 10)]}
    spans = {"q": [("d", 10, 20, 1.0), ("d", 9, 20, 1.0)]}
    assert evaluate_evidence(evidence, spans, ["evidence_recall@1"]).per_query["q"]["evidence_recall@1"] == 1.0
    spans = {"q": [("d", 9, 20, -0.0), ("d", 10, 20, 0.0)]}  # -0.0 ties with 0.0
    assert evaluate_evidence(evidence, spans, ["evidence_recall@1"]).per_query["q"]["evidence_recall@1"] == 1.0


def test_queries_enter_the_mean_as_evaluate_says():
    evidence = {"a": [("d", 0, 10)], "b": [("d", 0, 10)], "c": []}
    spans = {"a": [("d", 0, 5, 1.0)], "c": [("d", 0, 5, 1.0)], "z": [("d", 0, 5, 1.0)], "e": []}
    results = evaluate_evidence(evidence, spans, ["evidence_recall@5", "doc_ndcg@5"],
                                document_judgements={"n": {"d": 1}})
    assert results.query_ids == ("a", "b", "n")  # with evidence or a document judgement, in byte order
    assert results.unanswered_queries == ("b", "n")  # judged, no span: 0
    assert results.unjudged_queries == ("c", "z")  # spans, nothing to judge them by ('e' retrieved nothing)
    assert results.per_query["b"]["evidence_recall@5"] == 0.0
    assert results.per_query["b"]["doc_ndcg@5"] == 0.0
    # 'n' has a document judgement but no evidence: no evidence metric (skip), document metrics as usual.
    assert results.left_out["evidence_recall@5"] == ("n",)
    assert math.isnan(results.values["evidence_recall@5"][2])
    assert results.aggregate["evidence_recall@5"] == 0.25  # mean of a (0.5) and b (0)
    zero = evaluate_evidence(evidence, spans, ["evidence_recall@5"], document_judgements={"n": {"d": 1}},
                             no_relevant="zero")
    assert zero.aggregate["evidence_recall@5"] == pytest.approx(0.5 / 3, abs=1e-15)
    with pytest.raises(EvaluationError, match=r"metric evidence_recall@5: 1 judged query has no evidence \(n\)"):
        evaluate_evidence(evidence, spans, ["evidence_recall@5"], document_judgements={"n": {"d": 1}},
                          no_relevant="error")


def test_document_metrics_by_maxp_with_document_grades():
    # Evidence grades 2 in d1 and 1 in d2; d3 judged explicitly 1; d4 unjudged.
    evidence = {"q": [("d1", 0, 5, 2), ("d1", 10, 12, 1), ("d2", 0, 5, 1)]}
    spans = {"q": [("d4", 0, 5, 0.9), ("d2", 0, 5, 0.8), ("d4", 5, 9, 0.7), ("d2", 5, 9, 0.6), ("d1", 0, 5, 0.5)]}
    # Collapsed: d4, d2, d1 (d3 not retrieved). Gains 0, 1, 2; ideal 2, 1, 1.
    results = evaluate_evidence(evidence, spans, ["doc_ndcg@3", "doc_precision@2", "doc_recall@3", "doc_mrr"],
                                document_judgements={"q": {"d3": 1}})
    dcg = 1 / math.log2(3) + 2 / math.log2(4)
    idcg = 2 + 1 / math.log2(3) + 1 / math.log2(4)
    row = results.per_query["q"]
    assert row["doc_ndcg@3"] == pytest.approx(dcg / idcg, abs=1e-15)
    assert row["doc_precision@2"] == 0.5
    assert row["doc_recall@3"] == pytest.approx(2 / 3, abs=1e-15)
    assert row["doc_mrr"] == 0.5
    # The same numbers as evaluate() on the collapsed run with the document grades.
    run = collapse_to_documents(spans)
    assert list(run["q"]) == ["d4", "d2", "d1"] and run["q"] == {"d4": 3.0, "d2": 2.0, "d1": 1.0}
    plain = evaluate({"q": {"d1": 2, "d2": 1, "d3": 1}}, run, ["ndcg@3", "precision@2", "recall@3", "mrr"])
    for name in ("ndcg@3", "precision@2", "recall@3", "mrr"):
        assert results.per_query["q"]["doc_" + name] == plain.per_query["q"][name]


def test_an_explicit_document_grade_wins_over_evidence():
    evidence = {"q": [("d1", 0, 5, 1)]}
    spans = {"q": [("d1", 0, 5, 1.0)]}
    results = evaluate_evidence(evidence, spans, ["doc_dcg@1"], document_judgements={"q": {"d1": 3}})
    assert results.per_query["q"]["doc_dcg@1"] == 3.0


def test_an_explicit_zero_on_a_document_with_evidence_is_an_error():
    with pytest.raises(InputFormatError) as raised:
        evaluate_evidence({"q": [("d1", 4, 9, 1)]}, {"q": []}, ["doc_ndcg@10"], document_judgements={"q": {"d1": 0}})
    assert str(raised.value) == (
        "document_judgements: query 'q', doc 'd1': grade 0, but the document holds evidence for the query "
        "(evidence: query 'q', item 0: 'd1#4-9'); a document with evidence is relevant: remove the grade 0 or the "
        "evidence"
    )


def test_chunk_level_metrics_grade_chunks_by_evidence_overlap():
    # Chunking: d [0,20) [20,40) [40,60), e [0,30); evidence [15,25) grade 2 and [50,52) grade 1.
    chunks = [("d", 0, 20), ("d", 20, 40), Chunk("d", 40, 60, "x" * 20), ("e", 0, 30)]
    evidence = {"q": [EvidenceSpan("d", 15, 25, 2.0), ("d", 50, 52)]}
    spans = {"q": [("e", 0, 30, 4.0), ("d", 20, 40, 3.0), ("d", 0, 20, 2.0)]}
    got = evaluate_evidence(evidence, spans, ["ndcg@3", "dcg@3", "idcg@3", "judged@3"], chunks=chunks).per_query["q"]
    # Grades: [0,20) 2, [20,40) 2, [40,60) 1; e unjudged. Ranked: e (unjudged), [20,40), [0,20).
    assert got["dcg@3"] == pytest.approx(2 / math.log2(3) + 2 / math.log2(4), abs=1e-15)
    assert got["idcg@3"] == pytest.approx(2 + 2 / math.log2(3) + 1 / math.log2(4), abs=1e-15)
    assert got["judged@3"] == pytest.approx(2 / 3, abs=1e-15)
    # min_evidence_fraction 0.6: [15,25) overlaps each of [0,20) and [20,40) by 5 of 10: neither counts.
    strict = evaluate_evidence(evidence, spans, ["dcg@3", "idcg@3"], chunks=chunks, min_evidence_fraction=0.6)
    assert strict.per_query["q"] == {"dcg@3": 0.0, "idcg@3": 1.0}


def test_covered_evidence_splits_evidence_into_covered_and_missed():
    got = covered_evidence(EVIDENCE, SPANS, 1)
    assert got["q"].covered == (("d", 10, 15),)
    assert got["q"].missed == (("d", 15, 20), ("d", 40, 50))
    assert covered_evidence(EVIDENCE, SPANS, 3)["q"].missed == ()
    assert covered_evidence(EVIDENCE, SPANS, 30, unit="chars")["q"].covered == (("d", 10, 15), ("d", 45, 50))


def test_results_keep_the_order_asked_and_the_options():
    results = evaluate_evidence(EVIDENCE, SPANS, ["doc_ndcg@10", "evidence_iou@3", "EVIDENCE_RECALL@10chars"])
    assert results.metric_names == ["doc_ndcg@10", "evidence_iou@3", "evidence_recall@10chars"]
    assert list(results.values) == results.metric_names
    assert results.options["min_evidence_fraction"] == 0.0 and results.options["no_relevant"] == "skip"
    assert results.aggregate["evidence_iou@3"] == pytest.approx(1 / 3, abs=1e-15)


# ---- refusals: one line each, naming the place -----------------------------------------------


@pytest.mark.parametrize(
    ("evidence", "spans", "kwargs", "message"),
    [
        (EVIDENCE, {"q": [("d", 10, 5, 1.0)]}, {},
         "spans: query 'q', item 0 (doc 'd'): end 5 is not after start 10; a span is [start, end) with end > start"),
        (EVIDENCE, {"q": [("d", 0, 5, 1.0), ("d", -1, 5, 1.0)]}, {},
         "spans: query 'q', item 1 (doc 'd'): start -1 is negative; offsets count characters from 0"),
        (EVIDENCE, {"q": [("d", 0, 61, 1.0)]}, {"documents": {"d": "x" * 60}},
         "spans: query 'q', item 0 (doc 'd'): end 61 is past the end of the document (60 characters)"),
        (EVIDENCE, {"q": [("x", 0, 5, 1.0)]}, {"documents": {"d": "x" * 60}},
         "spans: query 'q', item 0 (doc 'x'): the document is not among the documents given; "
         "check the doc id or add the document"),
        (EVIDENCE, {"q": [("d", 0, 5.0, 1.0)]}, {},
         "spans: query 'q', item 0 (doc 'd'): end 5.0 is not an integer offset; "
         "offsets are ints counting characters (code points) from 0"),
        (EVIDENCE, {"q": [("d", True, 5, 1.0)]}, {},
         "spans: query 'q', item 0 (doc 'd'): start True is not an integer offset; "
         "offsets are ints counting characters (code points) from 0"),
        (EVIDENCE, {"q": [("d", 0, 5, float("nan"))]}, {},
         "spans: query 'q', item 0 (doc 'd'): score is nan; every score must be a finite number"),
        (EVIDENCE, {"q": [("d", 0, 5, "1")]}, {},
         "spans: query 'q', item 0 (doc 'd'): score '1' is not a number; give each score as an int or a float"),
        (EVIDENCE, {"q": [("d", 0, 5, 0.5), ("d", 5, 9, True)]}, {},
         "spans: query 'q', item 1 (doc 'd'): score True is not a number; give each score as an int or a float"),
        (EVIDENCE, {"q": [("d", 0, 5, 1.0), ("d", 5, 9, 1.0), ("d", 0, 5, 0.5)]}, {},
         "spans: query 'q', item 2: span 'd#0-5' is listed twice (also item 0); each span appears once in a "
         "query's ranking"),
        (EVIDENCE, {"q": [("d", 2**40, 2**40 + 5, 1.0), ("e", 0, 5, 1.0), ("d", 2**40, 2**40 + 5, 0.5)]}, {},
         "spans: query 'q', item 2: span 'd#1099511627776-1099511627781' is listed twice (also item 0); each span "
         "appears once in a query's ranking"),
        (EVIDENCE, SPANS, {"chunks": [("d", 0, 5), ("d", 5, 9), ("d", 0, 5)]},
         "chunks: item 2: span 'd#0-5' is listed twice (also item 0); each span appears once in a chunking"),
        (EVIDENCE, SPANS, {"chunks": [("d", 0, 5), ("d", 9, 5)]},
         "chunks: item 1 (doc 'd'): end 5 is not after start 9; a span is [start, end) with end > start"),
        (EVIDENCE, {"q": [("d", 0, 5)]}, {},
         "spans: query 'q', item 0: expected (doc_id, start, end, score), got 3 values ('d', 0, 5)"),
        (EVIDENCE, {"q": ["d#0-5"]}, {},
         "spans: query 'q', item 0: expected (doc_id, start, end, score), got str 'd#0-5'"),
        (EVIDENCE, {"q": ("d", 0, 5, 1.0)}, {},
         "spans: query 'q', item 0: expected (doc_id, start, end, score), got str 'd'"),
        (EVIDENCE, {"q": {"d#0-5": 1.0}}, {},
         "spans: query 'q': expected a list of (doc_id, start, end, score), got dict"),
        ({"q": [("d", 0, 5, 0)]}, SPANS, {},
         "evidence: query 'q', item 0 (doc 'd'): grade 0 is not > 0; evidence is a span that answers the query "
         "(grade > 0): leave out spans that do not, or judge their document with grade 0"),
        ({"q": [("d", 0, 5, 1), ("d", 7, 7, 1)]}, SPANS, {},
         "evidence: query 'q', item 1 (doc 'd'): end 7 is not after start 7; a span is [start, end) with end > start"),
        ({"q": [("d\n", 0, 5)]}, SPANS, {},
         "evidence: query 'q', item 0: doc id 'd\\n' holds the control character U+000A at position 2; "
         "ids must be non-empty text without control characters"),
        ({"q": [(None, 0, 5)]}, SPANS, {},
         "evidence: query 'q', item 0: doc id None is a NoneType; ids are strings"),
        ({"": [("d", 0, 5)]}, SPANS, {},
         "evidence: query id '' is empty; ids must be non-empty text without control characters"),
        ({}, SPANS, {},
         "evidence: no query has evidence or a document judgement, so there is nothing to score; "
         "give {query_id: [(doc_id, start, end, grade), ...]} with at least one span"),
        (EVIDENCE, SPANS, {"min_evidence_fraction": 1.5},
         "min_evidence_fraction must be a number from 0 to 1 (share of an evidence span's length a chunk must "
         "overlap; 0: one character), got 1.5"),
        (EVIDENCE, SPANS, {"document_judgements": {"q": {"d": "1"}}},
         "document_judgements: query 'q', doc 'd': grade '1' is not a number"),
    ],
)
def test_bad_input_is_one_line_naming_the_place(evidence, spans, kwargs, message):
    with pytest.raises(RagEvalError) as raised:
        evaluate_evidence(evidence, spans, ["evidence_recall@10"], **kwargs)
    assert str(raised.value).startswith(message), str(raised.value)
    assert "\n" not in str(raised.value)


def test_items_given_as_dicts_give_the_golden_values():
    # docs/plugins.md lets a retriever return {doc, start, end, score}: evaluate_evidence takes the same form
    evidence = {"q": [{"doc": "d", "start": 10, "end": 20}, {"doc": "d", "start": 40, "end": 50, "grade": 1}]}
    spans = {"q": [{"doc": d, "start": s, "end": e, "score": v, "text": "ignored"} for d, s, e, v in SPANS["q"]]}
    names = [f"evidence_{m}@{k}" for k in (1, 3) for m in ("recall", "precision", "iou")] + ["doc_ndcg@10"]
    assert evaluate_evidence(evidence, spans, names).per_query == evaluate_evidence(EVIDENCE, SPANS, names).per_query
    assert evaluate_evidence(evidence, spans, ["evidence_recall@1"]).per_query["q"]["evidence_recall@1"] == 0.25
    # dicts and tuples mixed in one list, and the chunks of a chunking as dicts
    mixed = {"q": [SPANS["q"][0], spans["q"][1], SPANS["q"][2]]}
    chunks = [{"doc": "d", "start": s, "end": e} for s, e in ((0, 15), (15, 45), (45, 60))]
    assert evaluate_evidence(EVIDENCE, mixed, ["ndcg@3"], chunks=chunks).per_query == (
        evaluate_evidence(EVIDENCE, SPANS, ["ndcg@3"], chunks=[("d", 0, 15), ("d", 15, 45), ("d", 45, 60)]).per_query
    )
    # a grade given as a dict key is read, not defaulted: e (grade 1) ranked above d (grade 3)
    graded = {"q": [{"doc": "d", "start": 10, "end": 20, "grade": 3}, {"doc": "e", "start": 0, "end": 5}]}
    ranked = {"q": [("e", 0, 5, 2.0), ("d", 10, 20, 1.0)]}
    got = evaluate_evidence(graded, ranked, ["doc_ndcg@2"]).per_query["q"]["doc_ndcg@2"]
    # DCG = 1/log2(2) + 3/log2(3), ideal = 3/log2(2) + 1/log2(3)
    assert got == pytest.approx((1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3)), abs=1e-12)


@pytest.mark.parametrize(
    ("evidence", "spans", "message"),
    [
        (EVIDENCE, {"q": [("d", 0, 15, 1.0), {"doc": "d", "start": 15, "end": 45}]},
         "spans: query 'q', item 1: the dict has no 'score' key; give {doc, start, end, score} or "
         "(doc_id, start, end, score), got {'doc': 'd', 'start': 15, 'end': 45}"),
        (EVIDENCE, {"q": [{"doc": "d", "begin": 0, "end": 15, "score": 1.0}]},
         "spans: query 'q', item 0: the dict has no 'start' key; give {doc, start, end, score} or "
         "(doc_id, start, end, score), got {'doc': 'd', 'begin': 0, 'end': 15, 'score': 1.0}"),
        ({"q": [{"doc": "d", "start": 10}]}, SPANS,
         "evidence: query 'q', item 0: the dict has no 'end' key; give {doc, start, end, grade} or "
         "(doc_id, start, end[, grade]), got {'doc': 'd', 'start': 10}"),
        ({"q": [{"doc": "d", "start": 10, "end": 20, "grad": 2}]}, SPANS,
         "evidence: query 'q', item 0: unknown key 'grad'; evidence is given as {doc, start, end, grade} or "
         "(doc_id, start, end[, grade])"),
        ({"q": [{"doc": "d", "start": 10, "end": 20, "grade": 0}]}, SPANS,
         "evidence: query 'q', item 0 (doc 'd'): grade 0 is not > 0; evidence is a span that answers the query "
         "(grade > 0): leave out spans that do not, or judge their document with grade 0"),
    ],
)
def test_a_dict_item_missing_a_key_is_one_line_naming_the_query_and_item(evidence, spans, message):
    with pytest.raises(InputFormatError) as raised:
        evaluate_evidence(evidence, spans, ["evidence_recall@10"])
    assert str(raised.value) == message


def test_chunk_level_metrics_need_the_chunking_and_token_budgets_the_documents():
    with pytest.raises(MetricError) as raised:
        evaluate_evidence(EVIDENCE, SPANS, ["ndcg@10"])
    assert str(raised.value) == (
        "metric ndcg@10: chunk-level metrics need the chunking (its grades and ideal ranking come from every chunk): "
        "pass chunks=[(doc_id, start, end), ...], or use doc_ndcg@10 or evidence metrics, which do not depend on it"
    )
    with pytest.raises(MetricError, match=r"^metric evidence_recall@512tokens: a token budget counts the tokens"):
        evaluate_evidence(EVIDENCE, SPANS, ["evidence_recall@512tokens"])
    with pytest.raises(InputFormatError) as raised:
        evaluate_evidence(EVIDENCE, {"q": [("d", 0, 7, 1.0)]}, ["ndcg@10"], chunks=[("d", 0, 5)])
    assert str(raised.value) == (
        "spans: query 'q', item 0 (doc 'd'): span 'd#0-7' is not one of the chunks given; chunk-level metrics need "
        "every retrieved span to be a chunk of the chunking (or use doc_ and evidence metrics)"
    )
    suggestion = r"^unknown metric 'evidence_recal@10' \(did you mean 'evidence_recall@10'\?\)"
    with pytest.raises(MetricError, match=suggestion):
        evaluate_evidence(EVIDENCE, SPANS, ["evidence_recal@10"])


@pytest.mark.parametrize("name", ["doc_ndcg@10", "evidence_recall@5", "evidence_iou@2000chars"])
def test_evaluate_refuses_document_and_evidence_metrics(name):
    with pytest.raises(MetricError) as raised:
        evaluate({"q": {"d": 1}}, {"q": {"d": 1.0}}, ["ndcg@10", name])
    level = "document" if name.startswith("doc_") else "evidence"
    assert str(raised.value) == (
        f"metric {name}: {level} metrics need documents and spans; score chunk rankings with "
        "rag_eval.evaluate_evidence, or run a dataset with documents"
    )


def test_inputs_are_not_mutated():
    evidence = {"q": [("d", 10, 20, 1), ("d", 40, 50)]}
    spans = {"q": [("d", 15, 45, 1.0), ("d", 0, 15, 3.0)]}
    before = (repr(evidence), repr(spans))
    evaluate_evidence(evidence, spans, ["evidence_recall@1", "doc_ndcg@2"])
    assert (repr(evidence), repr(spans)) == before


def test_results_answer_to_any_spelling_and_round_trip_through_json():
    from rag_eval._scoring.results import Results

    results = evaluate_evidence(EVIDENCE, SPANS, ["doc_ndcg@10", "evidence_recall@30chars"])
    assert results.aggregate["DOC_ndcg_cut_10"] == results.aggregate["doc_ndcg@10"] == 1.0
    assert results.aggregate["evidence_recall@30Chars"] == 0.5
    again = Results.from_dict(results.to_dict())
    assert again.metrics == results.metrics and again.aggregate == results.aggregate
