"""Grades of retrieved spans (results files, reports): the chunk grade rule of SEMANTICS.md, by hand."""

from __future__ import annotations

from rag_eval._scoring.evidence import span_grades

EVIDENCE = {"q1": [("d", 10, 20, 2), ("d", 40, 50, 1)], "q2": [("e", 0, 5, 3)]}
SPANS = {
    "q1": [("d", 15, 45, 0.7), ("d", 0, 15, 0.9), ("d", 60, 70, 0.1), ("x", 0, 3, 5.0), ("d", 45, 60, 0.8)],
    "q2": [("e", 4, 9, 0.5), ("d", 10, 20, 1.0)],
    "q3": [("d", 0, 5, 1.0)],  # no evidence, no judgement: not graded at all
}


def test_highest_overlapping_grade_zero_for_judged_documents_none_for_unjudged():
    assert span_grades(EVIDENCE, SPANS) == {
        "q1": [
            ("x#0-3", 5.0, None),  # document x is not judged for q1
            ("d#0-15", 0.9, 2.0),  # overlaps [10, 15) of the grade-2 span
            ("d#45-60", 0.8, 1.0),
            ("d#15-45", 0.7, 2.0),  # overlaps both spans: the higher grade
            ("d#60-70", 0.1, 0.0),  # judged document, no evidence inside
        ],
        "q2": [("d#10-20", 1.0, None), ("e#4-9", 0.5, 3.0)],
    }


def test_min_evidence_fraction_counts_the_share_of_the_evidence_span():
    graded = span_grades(EVIDENCE, SPANS, min_evidence_fraction=0.5)
    # [15, 45) covers 5 of 10 characters of each span: exactly half, enough at 0.5.
    assert [g for _, _, g in graded["q1"]] == [None, 2.0, 1.0, 2.0, 0.0]
    graded = span_grades(EVIDENCE, SPANS, min_evidence_fraction=0.6)
    assert [g for _, _, g in graded["q1"]] == [None, 0.0, 0.0, 0.0, 0.0]
    assert graded["q2"] == [("d#10-20", 1.0, None), ("e#4-9", 0.5, 0.0)]  # 1 of 5 characters


def test_explicit_document_judgement_makes_spans_of_it_judged():
    graded = span_grades(EVIDENCE, SPANS, document_judgements={"q1": {"x": 0}})
    assert graded["q1"][0] == ("x#0-3", 5.0, 0.0)
