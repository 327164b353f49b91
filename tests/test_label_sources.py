"""Grades a model gave: kept in the loaded dataset, metrics without them, each decision's share, the report.

Every number is derived by hand in the comments, or by a slow reference written here from the
definitions (precision@k, the module docstring's Δ = H + M), never read from rag_eval's output.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_eval._compare.decision import paired_differences
from rag_eval._compare.label_sources import (
    evaluate_by_labels,
    human_only_dataset,
    human_only_judgements,
    label_counts,
    model_names,
    model_share,
    reference_label,
    run_without_model_labels,
    same_model_warnings,
)
from rag_eval._data.config.schema import load_config
from rag_eval._data.datasets import load_yaml_query_set
from rag_eval._data.datasets.model import is_model_source
from rag_eval._run.execute import execute
from rag_eval.cli import main

# ---- a passage query set whose grades carry their sources ------------------------------------------

MIXED = """\
name: mixed
corpus:
  - {id: a, text: Alpha}
  - {id: b, text: Bravo}
  - {id: 東京, text: Tokyo}
  - {id: d, text: Delta}
queries:
  - id: q1
    text: first
    judgements: {a: {grade: 1, source: human, annotator: ana}, b: {grade: 1, source: "llm:judge-7b"}}
  - id: q2
    text: second
    judgements: {東京: {grade: 1, source: "llm:judge-7b", time: 2026-11-20T09:00:00+00:00}}
  - id: q3
    text: third
    judgements: {d: 1}
"""
# The same grades written as plain numbers: the same dataset, the same fingerprint.
PLAIN = """\
name: mixed
corpus:
  - {id: a, text: Alpha}
  - {id: b, text: Bravo}
  - {id: 東京, text: Tokyo}
  - {id: d, text: Delta}
queries:
  - id: q1
    text: first
    judgements: {a: 1, b: 1}
  - id: q2
    text: second
    judgements: {東京: 1}
  - id: q3
    text: third
    judgements: {d: 1}
"""
CONFIG = """\
dataset: {path: qs.yaml}
retrievers:
  - label: r1
    adapter: static
    params: {rankings: {q1: [a, b], q2: [東京, a], q3: [d, a]}}
  - label: r2
    adapter: static
    params: {rankings: {q1: [b, 東京], q2: [a, b], q3: [a, d]}}
top_k: 2
metrics: [precision@2, ndcg@2]
main_metric: precision@2
report: {plots: false}
output: out
"""
RANKINGS = {
    "r1": {"q1": {"a": 2.0, "b": 1.0}, "q2": {"東京": 2.0, "a": 1.0}, "q3": {"d": 2.0, "a": 1.0}},
    "r2": {"q1": {"b": 2.0, "東京": 1.0}, "q2": {"a": 2.0, "b": 1.0}, "q3": {"a": 2.0, "d": 1.0}},
}
# precision@2 by hand (relevant: grade >= 1).
#   all grades:   r1 q1 [a ✓, b ✓] 1, q2 [東京 ✓, a ✗(not judged for q2)] 0.5, q3 [d ✓, a ✗] 0.5 -> 2/3
#                 r2 q1 [b ✓, 東京 ✗] 0.5, q2 [a ✗, b ✗] 0, q3 [a ✗, d ✓] 0.5              -> 1/3
#   without the model's grades (b of q1 and 東京 of q2 unjudged; q2 has no judgement left, not scored):
#                 r1 q1 [a ✓, b ✗] 0.5, q3 0.5 -> 0.5;   r2 q1 [b ✗, 東京 ✗] 0, q3 0.5 -> 0.25
# The decision: r1 is best (2/3); r2 - r1 per query, all grades: q1 -0.5, q2 -0.5, q3 0 -> Δ = -1/3;
#   without model grades: q1 0 - 0.5 = -0.5, q2 unseen (0), q3 0 -> H = -1/6; M = Δ - H = -1/6;
#   share = |M| / (|H| + |M|) = 1/2; H has Δ's sign: the direction holds.


def _write(folder: Path, query_set: str, config: str = CONFIG) -> Path:
    (folder / "qs.yaml").write_text(query_set, encoding="utf-8")
    (folder / "config.yaml").write_text(config, encoding="utf-8")
    return folder / "config.yaml"


def test_the_loaded_dataset_keeps_each_grades_source_beside_it(tmp_path):
    dataset = load_yaml_query_set(_write(tmp_path, MIXED).parent / "qs.yaml")
    assert dataset.judgements == {"q1": {"a": 1.0, "b": 1.0}, "q2": {"東京": 1.0}, "q3": {"d": 1.0}}
    # q3's grade records no source: it is absent from the map (the query set's own grade).
    assert dataset.judgement_sources == {"q1": {"a": "human", "b": "llm:judge-7b"}, "q2": {"東京": "llm:judge-7b"}}
    assert dataset.evidence_sources == {}
    assert dataset.has_model_labels


def test_provenance_changes_no_fingerprint(tmp_path):
    mixed = load_yaml_query_set(_write(tmp_path, MIXED).parent / "qs.yaml")
    (tmp_path / "plain.yaml").write_text(PLAIN, encoding="utf-8")
    plain = load_yaml_query_set(tmp_path / "plain.yaml")
    assert plain.judgement_sources == {} and not plain.has_model_labels
    assert mixed.fingerprint == plain.fingerprint
    assert mixed.judgements == plain.judgements


def test_a_whole_number_key_and_a_person_only_set(tmp_path):
    path = tmp_path / "n.yaml"
    path.write_text("corpus: [{id: 1, text: one}, {id: x, text: ex}]\nqueries:\n  - id: q\n    text: t\n"
                    "    judgements: {1: {grade: 2, source: llm+verified}, x: {grade: 0, source: human}}\n",
                    encoding="utf-8")
    dataset = load_yaml_query_set(path)
    assert dataset.judgement_sources == {"q": {"1": "llm+verified", "x": "human"}}
    assert not dataset.has_model_labels  # a person confirmed the model's grade: it is a person's


DOCUMENTS = """\
documents:
  - {id: d1, text: "The answer is forty two. Nothing else here."}
  - {id: d2, text: "Another text about forty two, as a model saw it."}
  - {id: d3, text: "Unrelated words."}
queries:
  - id: q1
    text: what is the answer
    evidence:
      - {doc: d1, start: 0, end: 24, grade: 2, source: human}
      - {doc: d2, start: 0, end: 28, grade: 1, source: "llm:judge-7b"}
      - {doc: d2, quote: "a model saw it"}
  - id: q2
    text: other
    judgements: {d3: {grade: 1, source: "llm:judge-7b"}}
"""
DOCUMENT_CONFIG = """\
dataset: {path: qs.yaml}
retrievers:
  - label: w1
    adapter: static
    params: {rankings: {q1: [d2, d1], q2: [d3]}}
  - label: w2
    adapter: static
    params: {rankings: {q1: [d1, d3], q2: [d1]}}
top_k: 2
metrics: [doc_precision@2, evidence_recall@2]
main_metric: doc_precision@2
report: {plots: false}
output: out
"""


def test_evidence_sources_are_aligned_with_the_spans_and_removed_with_them(tmp_path):
    dataset = load_yaml_query_set(_write(tmp_path, DOCUMENTS, DOCUMENT_CONFIG).parent / "qs.yaml")
    assert [(s.doc, s.start, s.end, s.grade) for s in dataset.evidence["q1"]] == [
        ("d1", 0, 24, 2.0), ("d2", 0, 28, 1.0), ("d2", 33, 47, 1.0)]
    assert dataset.evidence_sources == {"q1": ("human", "llm:judge-7b", "")}
    assert dataset.judgement_sources == {"q2": {"d3": "llm:judge-7b"}}
    counts = label_counts(dataset)
    assert (counts.total, counts.model, counts.by_source, counts.model_only_queries) == (
        4, 2, {"llm:judge-7b": 2}, ("q2",))
    human = human_only_dataset(dataset)
    # The model's span of d2 goes; d2 keeps the grade of its unsourced span (1); q2's only grade goes.
    assert [(s.doc, s.start, s.end) for s in human.evidence["q1"]] == [("d1", 0, 24), ("d2", 33, 47)]
    assert human.evidence_sources == {"q1": ("human", "")}
    assert human.judgements == {"q1": {"d1": 2.0, "d2": 1.0}}
    assert human.document_judgements == {}
    assert human.fingerprint != dataset.fingerprint  # grades were removed: another dataset


@pytest.mark.parametrize(("source", "model"), [
    ("human", False), ("llm+verified", False), ("", False), ("llm:qwen2.5:0.5b", True),
    ("cross_encoder:ms-marco-MiniLM-L-6-v2", True), ("keyword:overlap", True),
])
def test_which_sources_are_a_models(source, model):
    assert is_model_source(source) is model


# ---- metrics with and without the model's grades, by hand --------------------------------------------


def test_metrics_without_model_labels_by_hand(tmp_path):
    dataset = load_yaml_query_set(_write(tmp_path, MIXED).parent / "qs.yaml")
    assert human_only_judgements(dataset.judgements, dataset.judgement_sources) == {"q1": {"a": 1.0}, "q3": {"d": 1.0}}
    scored = evaluate_by_labels(dataset.judgements, dataset.judgement_sources, RANKINGS, ["precision@2"])
    every, human = scored["r1"]
    assert human is not None
    assert every.query_ids == ("q1", "q2", "q3") and every.values["precision@2"].tolist() == [1.0, 0.5, 0.5]
    assert human.query_ids == ("q1", "q3") and human.values["precision@2"].tolist() == [0.5, 0.5]
    every2, human2 = scored["r2"]
    assert human2 is not None
    assert every2.values["precision@2"].tolist() == [0.5, 0.0, 0.5]
    assert human2.values["precision@2"].tolist() == [0.0, 0.5]
    assert every.aggregate["precision@2"] == pytest.approx(2 / 3) and human2.aggregate["precision@2"] == 0.25

    assert reference_label({"r1": every, "r2": every2}, "precision@2") == "r1"
    assert reference_label({"r1": every, "r2": every2}, "precision@2", baseline="r2") == "r2"
    share = model_share("precision@2", "r1", "r2", (every, every2), (human, human2))
    assert share is not None
    assert (share.n, share.unseen, share.direction) == (3, 1, "holds")
    assert share.delta == pytest.approx(-1 / 3) and share.human == pytest.approx(-1 / 6)
    assert share.model == pytest.approx(-1 / 6) and share.share == pytest.approx(0.5)
    # Δ is the decision's own mean paired difference (rag_eval._compare.decision).
    deltas = paired_differences("precision@2", every, every2)
    assert deltas is not None and share.delta == pytest.approx(float(deltas.mean()))


def test_a_difference_that_reverses_and_one_that_is_none():
    judgements = {"q1": {"a": 1, "b": 1, "c": 1}}
    sources = {"q1": {"a": "human", "b": "llm:x", "c": "llm:x"}}
    rankings = {"ref": {"q1": {"b": 2.0, "c": 1.0}}, "var": {"q1": {"a": 2.0, "z": 1.0}}}
    scored = evaluate_by_labels(judgements, sources, rankings, ["precision@2"])
    # all grades: ref [b ✓ c ✓] 1, var [a ✓ z ✗] 0.5 -> Δ -0.5; people's only: ref 0, var 0.5 -> H +0.5;
    # M = -1; share = 1 / 1.5 = 2/3; H against Δ: reverses.
    found = model_share("precision@2", "ref", "var", (scored["ref"][0], scored["var"][0]),
                        (scored["ref"][1], scored["var"][1]))
    assert found is not None
    assert (found.delta, found.human, found.model, found.direction) == (-0.5, 0.5, -1.0, "reverses")
    assert found.share == pytest.approx(2 / 3)
    same = model_share("precision@2", "ref", "ref", (scored["ref"][0],) * 2, (scored["ref"][1],) * 2)
    assert same is not None and (same.delta, same.share, same.direction) == (0.0, None, "none")


def _precision(ranking: dict[str, float], grades: dict[str, float], k: int) -> float:
    """precision@k from its definition: relevant (grade >= 1) among the first k, / k; NaN without a relevant unit."""
    if not any(g >= 1 for g in grades.values()):
        return math.nan
    top = sorted(ranking, key=lambda unit: -ranking[unit])[:k]
    return sum(1 for unit in top if grades.get(unit, 0) >= 1) / k


UNITS = ["a", "b", "c", "d", "é"]


@st.composite
def _cases(draw):
    judgements, sources = {}, {}
    for q in ("q1", "q2", "q3", "q4"):
        units = draw(st.lists(st.sampled_from(UNITS), unique=True, max_size=4))
        if units:
            judgements[q] = {u: draw(st.sampled_from([0, 1, 2, 3])) for u in units}
            sources[q] = {u: draw(st.sampled_from(["human", "", "llm+verified", "llm:x", "cross_encoder:y"]))
                          for u in units}
    if not judgements:
        judgements["q1"], sources["q1"] = {"a": 1}, {"a": "llm:x"}
    rankings = {}
    for label in ("ref", "var"):
        rankings[label] = {}
        for q in judgements:
            units = draw(st.lists(st.sampled_from(UNITS), unique=True, max_size=4))
            rankings[label][q] = {u: float(len(units) - i) for i, u in enumerate(units)}  # distinct scores
    return judgements, sources, rankings


@settings(max_examples=150, deadline=None)
@given(_cases())
def test_the_split_matches_a_slow_reference(case):
    judgements, sources, rankings = case
    k = 2
    scored = evaluate_by_labels(judgements, sources, rankings, ["precision@2"])
    found = model_share("precision@2", "ref", "var", (scored["ref"][0], scored["var"][0]),
                        (scored["ref"][1], scored["var"][1]))
    human = {q: {u: g for u, g in units.items() if sources[q][u] not in ("llm:x", "cross_encoder:y")}
             for q, units in judgements.items()}
    d, h = [], []
    for q in sorted(judgements):
        ref, var = (_precision(rankings[side].get(q, {}), judgements[q], k) for side in ("ref", "var"))
        if math.isnan(ref) or math.isnan(var):
            continue
        d.append(var - ref)
        href, hvar = (_precision(rankings[side].get(q, {}), human[q], k) for side in ("ref", "var"))
        h.append(0.0 if math.isnan(href) or math.isnan(hvar) else hvar - href)
    if not d:
        assert found is None
        return
    assert found is not None and found.n == len(d)
    assert found.delta == pytest.approx(np.mean(d), abs=1e-12)
    assert found.human == pytest.approx(np.mean(h), abs=1e-12)
    assert found.human + found.model == pytest.approx(found.delta, abs=1e-12)
    total = abs(found.human) + abs(found.model)
    if total == 0:
        assert found.share is None
    else:
        assert found.share is not None and 0 <= found.share <= 1
        assert found.share == pytest.approx(abs(found.model) / total)


# ---- a run: rescoring matches the run's own evaluation ------------------------------------------------

CHUNKED = """\
dataset: {path: qs.yaml}
chunking:
  fx: {method: fixed, size: 4, overlap: 0, tokenizer: words}
retrievers:
  - {label: b1, adapter: bm25, chunker: fx}
  - label: w2
    adapter: static
    params: {rankings: {q1: [d1, d3], q2: [d1]}}
top_k: 3
metrics: [ndcg@3, doc_precision@2, evidence_recall@2, evidence_recall@8tokens]
main_metric: ndcg@3
report: {plots: false}
output: out
"""


def test_without_model_labels_is_the_run_itself_when_people_gave_every_grade(tmp_path):
    """The chunking read back from the run (chunk ids, whole documents) gives the run's own values."""
    people = DOCUMENTS.replace('"llm:judge-7b"', "human")
    run = execute(load_config(_write(tmp_path, people, CHUNKED)), progress=False)
    assert not run.dataset.has_model_labels
    again = run_without_model_labels(run, ["ndcg@3", "doc_precision@2", "evidence_recall@2", "evidence_recall@8tokens"])
    for outcome in run.outcomes:
        rescored = again[outcome.label]
        assert rescored is not None and rescored.query_ids == outcome.results.query_ids
        for metric in outcome.results.values:
            np.testing.assert_array_equal(rescored.values[metric], outcome.results.values[metric])


def test_without_model_labels_on_documents_by_hand(tmp_path):
    run = execute(load_config(_write(tmp_path, DOCUMENTS, DOCUMENT_CONFIG)), progress=False)
    human = run_without_model_labels(run, ["doc_precision@2", "evidence_recall@2"])
    # People's grades only: q1 judges d1 (2) and d2 (1, the unsourced quote); q2 has none (not scored).
    # w1 q1 [d2 ✓, d1 ✓] -> doc_precision@2 1; w2 q1 [d1 ✓, d3 ✗] -> 0.5.
    # evidence_recall@2: q1's evidence left is d1[0,24) (24 chars) and d2[33,47) (14 chars), both covered by w1's
    # whole documents -> 1; w2 covers d1's only -> 24 / 38.
    w1, w2 = human["w1"], human["w2"]
    assert w1 is not None and w2 is not None
    assert w1.query_ids == ("q1",) and w1.values["doc_precision@2"].tolist() == [1.0]
    assert w2.values["doc_precision@2"].tolist() == [0.5]
    assert w1.values["evidence_recall@2"].tolist() == [1.0]
    assert w2.values["evidence_recall@2"][0] == pytest.approx(24 / 38)


# ---- a retriever judged by its own model ----------------------------------------------------------------


def test_a_retriever_that_ranks_with_the_judges_model_is_named():
    descriptions = {
        "rerank": {"adapter": "cross_encoder", "model": "cross-encoder/ms-marco-MiniLM-L-6-v2",
                   "model_path": "/cache/models--cross-encoder--ms-marco-MiniLM-L-6-v2/snapshots/abc",
                   "first_stage": {"adapter": "bm25"}},
        "llm-rerank": {"class": "mine:LLMReranker", "parameters": {"model": "Qwen2.5:0.5B"}},
        "dense": {"adapter": "dense", "model": "./models/all-MiniLM-L6-v2", "first_stage": None},
        "static": {"adapter": "static", "source": "inline"},
    }
    sources = [("cross_encoder:ms-marco-MiniLM-L-6-v2", 12), ("llm:qwen2.5:0.5b", 3), ("human", 40)]
    found = same_model_warnings(descriptions, sources)
    assert [(w.retriever, w.model, w.source, w.grades) for w in found] == [
        ("rerank", "cross-encoder/ms-marco-MiniLM-L-6-v2", "cross_encoder:ms-marco-MiniLM-L-6-v2", 12),
        ("llm-rerank", "Qwen2.5:0.5B", "llm:qwen2.5:0.5b", 3),
    ]
    assert model_names(descriptions["rerank"]) == [
        "cross-encoder/ms-marco-MiniLM-L-6-v2", "/cache/models--cross-encoder--ms-marco-MiniLM-L-6-v2/snapshots/abc"]
    assert same_model_warnings(descriptions, [("llm:other-model", 5)]) == []


# ---- the run report, through the CLI ------------------------------------------------------------------


def _report(tmp_path: Path, capsys) -> str:
    code = main(["run", str(tmp_path / "config.yaml")])
    capsys.readouterr()
    assert code == 0
    return (tmp_path / "out" / "report.md").read_text(encoding="utf-8")


def test_the_run_report_shows_metrics_without_model_labels_and_each_decisions_share(tmp_path, capsys):
    _write(tmp_path, MIXED)
    report = _report(tmp_path, capsys)
    assert "## 🏷️ Grades from models" in report
    assert ("2 of the dataset's 4 grades come from a model (`llm:judge-7b`: 2); the others are people's (`human`, "
            "`llm+verified`) or the query set's own.") in report
    assert "1 query is graded by models only, not scored without them (q2)." in report
    assert "| r1 | 0.6667 | 0.5000 | -0.1667 | 3 / 2 |" in report
    assert "| r2 | 0.3333 | 0.2500 | -0.0833 | 3 / 2 |" in report
    assert "(against r1, the best mean of precision@2)" in report
    assert "| r2 | -0.3333 | -0.1667 | -0.1667 | 50% | holds without them | 3 (1 unseen without them) |" in report
    assert "**Warning:**" not in report


def test_the_report_of_documents_shows_a_difference_that_rests_on_model_labels_only(tmp_path, capsys):
    _write(tmp_path, DOCUMENTS, DOCUMENT_CONFIG)
    report = _report(tmp_path, capsys)
    # doc_precision@2, all grades: w1 q1 [d2 ✓ d1 ✓] 1, q2 [d3 ✓] 0.5 -> 0.75; w2 q1 [d1 ✓ d3 ✗] 0.5, q2 [d1 ✗] 0 -> 0.25.
    # Without model grades q1 only (d2 keeps the grade of its unsourced quote): w1 1, w2 0.5.
    assert "| w1 | 0.7500 | 1.0000 | +0.2500 | 2 / 1 |" in report
    assert "| w2 | 0.2500 | 0.5000 | +0.2500 | 2 / 1 |" in report
    # Δ: q1 0.5 - 1 = -0.5, q2 0 - 0.5 = -0.5 -> -0.5. H: q1 0.5 - 1 = -0.5, q2 unseen -> -0.25. M = -0.25: 50%.
    assert "| w2 | -0.5000 | -0.2500 | -0.2500 | 50% | holds without them | 2 (1 unseen without them) |" in report


def test_a_report_without_model_grades_has_no_such_section(tmp_path, capsys):
    _write(tmp_path, PLAIN)
    assert "Grades from models" not in _report(tmp_path, capsys)
