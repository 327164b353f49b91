"""The metric records: every family is complete, every spelling parses to one canonical metric."""

from __future__ import annotations

import re

import pytest

from rag_eval._core.errors import MetricError
from rag_eval._scoring.metrics import evidence_kernels, kernels
from rag_eval._scoring.metrics.measures import FAMILIES, Metric, Micro, parse_metric, valid_metric_names


def _public_functions(module) -> set:
    return {v for k, v in vars(module).items() if callable(v) and getattr(v, "__module__", "") == module.__name__
            and not k.startswith("_") and not isinstance(v, type)}


def test_every_family_carries_its_own_kernel_from_its_kind_and_every_kernel_has_a_family():
    # The record is the only table of kernels: a ranking family's kernel is a ranking kernel (KernelContext, k),
    # an evidence family's an evidence kernel (EvidenceCounts); no two families share one.
    by_kind = {"ranking": _public_functions(kernels), "evidence": _public_functions(evidence_kernels)}
    for family in FAMILIES.values():
        assert family.kernel in by_kind[family.kind], family.name
    assert len({family.kernel for family in FAMILIES.values()}) == len(FAMILIES)
    assert {name for name, family in FAMILIES.items() if family.kind == "evidence"} == {
        "evidence_recall", "evidence_precision", "evidence_iou"
    }
    every_kernel = {f for f in by_kind["ranking"] if f.__code__.co_varnames[:2] == ("ctx", "k")}
    assert every_kernel == {f.kernel for f in FAMILIES.values() if f.kind == "ranking"}
    assert {f.kernel for f in FAMILIES.values() if f.kind == "evidence"} == {
        evidence_kernels.evidence_recall, evidence_kernels.evidence_precision, evidence_kernels.evidence_iou
    }


def test_one_family_leads_a_config_without_main_metric():
    # RunConfig.primary_metric reads the record; with two marked families the choice would depend on the order.
    assert [name for name, family in FAMILIES.items() if family.main_by_default] == ["ndcg"]


def test_only_ndcg_has_a_micro_rule_and_its_parts_keep_the_cutoff_and_level():
    assert {name: f.micro for name, f in FAMILIES.items() if f.micro is not None} == {"ndcg": Micro("dcg", "idcg")}
    assert [str(m) for m in parse_metric("ndcg@10").micro_parts] == ["dcg@10", "idcg@10"]
    assert [str(m) for m in parse_metric("doc_ndcg").micro_parts] == ["doc_dcg", "doc_idcg"]
    assert parse_metric("map@10").micro_parts is None and parse_metric("evidence_recall@5").micro_parts is None


@pytest.mark.parametrize(
    ("text", "rank_cutoff", "shown_of_10", "shown_of_3"),
    [
        ("ndcg@5", 5, 5, 3),  # k counts ranks: at most top_k of them are shown
        ("ndcg", None, 10, 3),  # no cutoff: the whole ranking
        ("r_precision", None, 10, 3),
        ("doc_recall@20", 20, 10, 3),
        ("evidence_recall@2", 2, 2, 2),
        ("evidence_recall@2000chars", None, 10, 3),  # a budget is no number of ranks
        ("evidence_iou@512tokens", None, 10, 3),
    ],
)
def test_the_cutoff_rule_counts_ranks_never_a_budget(text, rank_cutoff, shown_of_10, shown_of_3):
    metric = parse_metric(text)
    assert metric.rank_cutoff == rank_cutoff
    assert (metric.ranks_shown(10), metric.ranks_shown(3)) == (shown_of_10, shown_of_3)


def test_direction_orders_best_first(monkeypatch):
    import dataclasses

    from rag_eval._scoring.metrics import measures

    higher = parse_metric("ndcg@10")
    assert sorted([0.2, 0.9, 0.5], key=higher.best_first_key) == [0.9, 0.5, 0.2]
    assert higher.best([0.2, 0.9, 0.5]) == 0.9
    monkeypatch.setitem(measures.FAMILIES, "ndcg", dataclasses.replace(measures.FAMILIES["ndcg"], higher_is_better=False))
    lower = parse_metric("ndcg@10")
    assert sorted([0.2, 0.9, 0.5], key=lower.best_first_key) == [0.2, 0.5, 0.9]
    assert lower.best([0.2, 0.9, 0.5]) == 0.2


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
        ("bpref", "bpref", "bpref"),
        ("BPref", "bpref", "bpref"),
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
        ("ndgc@10", "did you mean 'ndcg@10'"),
        ("precision", "needs a cutoff"),
        ("r_precision@5", "takes no cutoff"),
        ("P_x", "is not an integer"),
        ("ndcg@0", "positive integer"),
    ],
)
def test_bad_names_say_what_is_wrong(text, message):
    with pytest.raises(MetricError, match=message):
        parse_metric(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # 'precision' alone would be refused in turn: a family that needs a cutoff is suggested with one.
        ("precisoin", "unknown metric 'precisoin' (did you mean 'precision@k'?); valid: "),
        ("bpre@5", "unknown metric 'bpre@5' (did you mean 'bpref'?); valid: "),  # bpref takes no cutoff
        ("precison@5", "unknown metric 'precison@5' (did you mean 'precision@5'?); valid: "),
        ("hitrate", "unknown metric 'hitrate' (did you mean 'hit_rate@k'?); valid: "),
        ("ndgc@10", "unknown metric 'ndgc@10' (did you mean 'ndcg@10'?); valid: "),  # the user's cutoff kept
        ("mmr@10", "unknown metric 'mmr@10' (did you mean 'mrr@10'?); valid: "),
        ("ndgc", "unknown metric 'ndgc' (did you mean 'ndcg'?); valid: "),  # no cutoff given, none needed
        ("ndgc@0", "unknown metric 'ndgc@0' (did you mean 'ndcg'?); valid: "),  # 0 is no cutoff to keep
        ("rprecc", "unknown metric 'rprecc' (did you mean 'r_precision'?); valid: "),
        ("xyzzy", "unknown metric 'xyzzy'; valid: "),  # nothing close: no suggestion
    ],
)
def test_a_suggestion_is_a_form_that_parses_or_there_is_none(text, message):
    with pytest.raises(MetricError) as raised:
        parse_metric(text)
    assert str(raised.value).startswith(message)


@pytest.mark.parametrize("typo", ["bprf", "precison", "recal", "sucess", "hitrate", "judge", "judgd@3", "recip_rnk", "mapp"])
def test_every_suggested_name_parses(typo):
    with pytest.raises(MetricError) as raised:
        parse_metric(typo)
    suggestion = re.search(r"did you mean '([^']+)'", str(raised.value))
    assert suggestion, str(raised.value)
    parse_metric(suggestion.group(1).replace("@k", "@10"))  # the placeholder k aside, it is valid as written


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # int() reads Unicode digits: '٣' (Arabic-Indic three) was taken as precision@3.
        ("P_\u0663", "metric 'P_\u0663': cutoff '\u0663' is not written in ASCII digits 0-9; write e.g. precision@3"),
        ("ndcg@\uff11\uff10", "metric 'ndcg@\uff11\uff10': cutoff '\uff11\uff10' is not written in ASCII digits 0-9; "
         "write e.g. ndcg@10"),
        ("ndcg@5_000", "metric 'ndcg@5_000': cutoff '5_000' is not an integer; write e.g. ndcg@5000"),
        ("ndcg@+5", "metric 'ndcg@+5': cutoff '+5' is not an integer; write e.g. ndcg@5"),
        ("ndcg@ 5", "metric 'ndcg@ 5': cutoff ' 5' is not an integer; write e.g. ndcg@5"),
        ("ndcg@-2", "metric 'ndcg@-2': cutoff must be a positive integer, got -2"),
        ("recip_ran\u212a", "unknown metric 'recip_ran\u212a'"),  # the Kelvin sign lower-cases to 'k'
    ],
)
def test_names_and_cutoffs_are_ascii(text, message):
    with pytest.raises(MetricError) as raised:
        parse_metric(text)
    assert str(raised.value).startswith(message)


def test_graded_and_relevance_properties_come_from_the_record():
    assert Metric("ndcg", 10).is_graded and Metric("ndcg", 10).uses_relevance
    assert Metric("dcg", 10).is_graded and not Metric("dcg", 10).uses_relevance
    assert not Metric("precision", 5).is_graded and Metric("precision", 5).uses_relevance
    assert not Metric("judged", 5).uses_relevance


# ---- document (doc_) and evidence metrics -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "canonical", "fields"),
    [
        ("doc_ndcg@10", "doc_ndcg@10", ("ndcg", 10, True, None)),
        ("DOC_nDCG_cut_10", "doc_ndcg@10", ("ndcg", 10, True, None)),
        ("doc_P_5", "doc_precision@5", ("precision", 5, True, None)),
        ("doc_recip_rank", "doc_mrr", ("mrr", None, True, None)),
        ("doc_Rprec", "doc_r_precision", ("r_precision", None, True, None)),
        ("evidence_recall@10", "evidence_recall@10", ("evidence_recall", 10, False, None)),
        ("evidence_precision@5", "evidence_precision@5", ("evidence_precision", 5, False, None)),
        ("evidence_iou@10", "evidence_iou@10", ("evidence_iou", 10, False, None)),
        ("evidence_recall@2000chars", "evidence_recall@2000chars", ("evidence_recall", 2000, False, "chars")),
        ("Evidence_IoU@512Tokens", "evidence_iou@512tokens", ("evidence_iou", 512, False, "tokens")),
    ],
)
def test_document_and_evidence_names_parse_to_one_canonical_metric(text, canonical, fields):
    metric = parse_metric(text)
    assert str(metric) == canonical
    assert (metric.name, metric.k, metric.doc, metric.unit) == fields
    assert parse_metric(canonical) == metric
    assert metric.trec_eval_name is None  # doc_ndcg@10 is ndcg_cut_10 of the collapsed run, not a trec_eval measure
    assert metric.is_document_level == fields[2]
    assert metric.is_evidence == fields[0].startswith("evidence_")
    assert metric.budget_unit == fields[3]


def test_levels_are_distinct_metrics_and_passage_names_are_unchanged():
    assert parse_metric("doc_ndcg@10") != parse_metric("ndcg@10")
    assert parse_metric("evidence_recall@10") != parse_metric("evidence_recall@10chars")
    assert Metric("ndcg", 10) == parse_metric("ndcg@10") and str(Metric("ndcg", 10)) == "ndcg@10"
    assert Metric("evidence_iou", 2000, unit="chars") == parse_metric("evidence_iou@2000chars")
    assert "ndcg_cut_10 of the collapsed run" in parse_metric("doc_ndcg@10").description
    assert "budget of 2000 chars" in parse_metric("evidence_recall@2000chars").description
    assert not parse_metric("evidence_recall@5").is_graded and parse_metric("evidence_recall@5").uses_relevance
    assert parse_metric("doc_judged@5").uses_relevance is False


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ndcg@10chars", "metric 'ndcg@10chars': only evidence metrics take a budget in chars or tokens; "
         "write 'ndcg@10' or 'evidence_recall@10chars'"),
        ("doc_r_precision@5tokens", "metric 'doc_r_precision@5tokens': only evidence metrics take a budget in chars "
         "or tokens; write 'doc_r_precision' or 'evidence_recall@5tokens'"),
        ("evidence_recall@10words", "metric 'evidence_recall@10words': budget unit 'words' is neither 'chars' nor "
         "'tokens'; write e.g. evidence_recall@10chars or evidence_recall@10tokens"),
        ("doc_evidence_recall@10", "metric 'doc_evidence_recall@10': the doc_ prefix applies to ranking metrics "
         "(doc_ndcg@10, doc_recall@100); evidence_recall already measures characters of documents; "
         "write evidence_recall@10"),
        ("evidence_iou", "metric 'evidence_iou': evidence_iou needs a cutoff; write e.g. evidence_iou@10"),
        ("doc_precision", "metric 'doc_precision': doc_precision needs a cutoff; write e.g. doc_precision@10"),
        ("doc_rprec@5", "metric 'doc_rprec@5': doc_r_precision takes no cutoff; write 'doc_r_precision'"),
        ("evidence_recall@0chars", "metric 'evidence_recall@0chars': the budget must be a positive number of chars, "
         "got 0; write e.g. evidence_recall@2000chars"),
        ("evidence_iou@-5tokens", "metric 'evidence_iou@-5tokens': the budget must be a positive number of tokens, "
         "got -5; write e.g. evidence_iou@2000tokens"),
        ("doc_ndgc@10", "unknown metric 'doc_ndgc@10' (did you mean 'doc_ndcg@10'?); valid: "),
        ("evidence_recal@2000chars", "unknown metric 'evidence_recal@2000chars' (did you mean "
         "'evidence_recall@2000chars'?); valid: "),
        ("evidence_iuo@5", "unknown metric 'evidence_iuo@5' (did you mean 'evidence_iou@5'?); valid: "),
    ],
)
def test_bad_document_and_evidence_names_say_what_is_wrong(text, message):
    with pytest.raises(MetricError) as raised:
        parse_metric(text)
    assert str(raised.value).startswith(message), str(raised.value)
    assert "\n" not in str(raised.value)


def test_unknown_names_mention_the_document_and_budget_forms():
    with pytest.raises(MetricError) as raised:
        parse_metric("infAP")  # a trec_eval measure rag_eval does not compute
    assert str(raised.value).endswith(
        "evidence_iou@k; prefix doc_ for document level (doc_ndcg@10); evidence metrics also take a budget "
        "(evidence_recall@2000chars, evidence_recall@512tokens)"
    )


@pytest.mark.parametrize("typo", ["doc_ndgc@10", "doc_precison@5", "evidence_recal@10", "evidence_iuo@512tokens"])
def test_every_suggested_document_or_evidence_name_parses(typo):
    with pytest.raises(MetricError) as raised:
        parse_metric(typo)
    suggestion = re.search(r"did you mean '([^']+)'", str(raised.value))
    assert suggestion, str(raised.value)
    parse_metric(suggestion.group(1).replace("@k", "@10"))


def test_what_counts_as_relevant_comes_from_the_record():
    # Graded families gain from every grade > 0; binary ones count grades >= the threshold; unjudged never counts.
    ndcg, recall = parse_metric("ndcg@10"), parse_metric("recall@10")
    assert [ndcg.is_relevant(g, 2.0) for g in (None, -1.0, 0.0, 0.5, 1.0, 2.0)] == [False, False, False, True, True, True]
    assert [recall.is_relevant(g, 2.0) for g in (None, -1.0, 0.0, 0.5, 1.0, 2.0)] == [False, False, False, False, False, True]
    assert parse_metric("doc_map").is_relevant(1.0, 1.0) and not parse_metric("doc_map").is_relevant(0.5, 1.0)
