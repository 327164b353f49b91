"""The metric records: every family is complete, every spelling parses to one canonical metric."""

from __future__ import annotations

import pytest

from rag_eval.errors import MetricError
from rag_eval.metrics.kernels import KERNELS
from rag_eval.metrics.measures import FAMILIES, Metric, parse_metric, valid_metric_names


def test_every_family_has_a_kernel_and_no_kernel_lacks_a_family():
    assert set(FAMILIES) == set(KERNELS)


@pytest.mark.parametrize(
    ("text", "canonical", "trec"),
    [
        ("P_5", "precision@5", "P_5"),
        ("ndcg_cut_10", "ndcg@10", "ndcg_cut_10"),
        ("NDCG@10", "ndcg@10", "ndcg_cut_10"),
        ("map_cut_100", "map@100", "map_cut_100"),
        ("success_1", "hit_rate@1", "success_1"),
        ("recall_5", "recall@5", "recall_5"),
        ("Rprec", "r_precision", "Rprec"),
        ("recip_rank", "mrr", "recip_rank"),
        ("ndcg", "ndcg", "ndcg"),
        ("map", "map", "map"),
        ("judged@5", "judged@5", None),
        ("mrr@3", "mrr@3", None),
    ],
)
def test_spellings_parse_to_one_canonical_metric_with_its_trec_eval_name(text, canonical, trec):
    metric = parse_metric(text)
    assert str(metric) == canonical
    assert metric.trec_eval_name == trec
    if trec is not None:  # trec_eval's own name parses back to the same metric
        assert parse_metric(trec) == metric


def test_every_listed_form_parses():
    for form in valid_metric_names():
        metric = parse_metric(form.replace("@k", "@7"))
        assert metric.family is FAMILIES[metric.name]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ndgc@10", "did you mean 'ndcg'"),
        ("precision", "needs a cutoff"),
        ("r_precision@5", "takes no cutoff"),
        ("P_x", "is not an integer"),
        ("ndcg@0", "positive integer"),
    ],
)
def test_bad_names_say_what_is_wrong(text, message):
    with pytest.raises(MetricError, match=message):
        parse_metric(text)


def test_graded_and_relevance_properties_come_from_the_record():
    assert Metric("ndcg", 10).is_graded and Metric("ndcg", 10).uses_relevance
    assert Metric("dcg", 10).is_graded and not Metric("dcg", 10).uses_relevance
    assert not Metric("precision", 5).is_graded and Metric("precision", 5).uses_relevance
    assert not Metric("judged", 5).uses_relevance
