"""Evidence cutoffs and budgets past any ranking or any context: the value of the whole ranking, never a crash.

A cutoff or a budget is parsed as a Python int of any size (``evidence_recall@9223372036854775808``); numpy
arrays hold int64. Before issue 20, 2^63 raised OverflowError (exit 3 through the CLI).
"""

from __future__ import annotations

import pytest

import rag_eval

EVIDENCE = {"q": [("d", 10, 20, 1), ("d", 40, 50, 1)], "r": [("d", 0, 5, 1)]}
SPANS = {"q": [("d", 0, 15, 3.0), ("d", 45, 60, 2.0), ("d", 15, 45, 1.0)], "r": [("d", 3, 9, 1.0)]}
HUGE = [2**63 - 1, 2**63, 2**64, 10**30]


@pytest.mark.parametrize("family", ["evidence_recall", "evidence_precision", "evidence_iou"])
@pytest.mark.parametrize("k", HUGE)
def test_a_cutoff_past_int64_reads_every_span(family, k):
    whole = rag_eval.evaluate_evidence(EVIDENCE, SPANS, [f"{family}@3"]).per_query
    values = rag_eval.evaluate_evidence(EVIDENCE, SPANS, [f"{family}@{k}"]).per_query
    assert {q: v[f"{family}@{k}"] for q, v in values.items()} == {q: v[f"{family}@3"] for q, v in whole.items()}


@pytest.mark.parametrize("family", ["evidence_recall", "evidence_precision", "evidence_iou"])
@pytest.mark.parametrize("k", HUGE)
def test_a_budget_past_int64_fits_every_span(family, k):
    whole = rag_eval.evaluate_evidence(EVIDENCE, SPANS, [f"{family}@60chars"]).per_query  # 60: every span fits
    values = rag_eval.evaluate_evidence(EVIDENCE, SPANS, [f"{family}@{k}chars"]).per_query
    assert {q: v[f"{family}@{k}chars"] for q, v in values.items()} == {q: v[f"{family}@60chars"] for q, v in whole.items()}


def test_a_budget_in_tokens_past_int64(tmp_path):
    documents = {"d": "word " * 12}
    evidence = {"q": [("d", 0, 10, 1)]}
    spans = {"q": [("d", 0, 20, 1.0), ("d", 20, 60, 0.5)]}
    names = [f"evidence_recall@{2**63}tokens", "evidence_recall@1000tokens"]
    values = rag_eval.evaluate_evidence(evidence, spans, names, documents=documents).aggregate
    assert values[names[0]] == values[names[1]] == 1.0


def test_the_budgets_at_the_edge_are_unchanged():
    names = ["evidence_recall@15chars", "evidence_recall@14chars", "evidence_recall@30chars", "evidence_recall@1"]
    values = rag_eval.evaluate_evidence(EVIDENCE, SPANS, names).per_query["q"]
    assert values == {"evidence_recall@15chars": 0.25, "evidence_recall@14chars": 0.0,
                      "evidence_recall@30chars": 0.5, "evidence_recall@1": 0.25}
