"""Calibration of a model's grades against people's: kappa, the confusion matrix, Kendall's tau, the command.

Kappa and tau are derived by hand on small tables, then checked against independent references:
scikit-learn's cohen_kappa_score and scipy's kendalltau (when installed), and slow implementations
written here from the textbook formulas.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_eval._commands import calibrate as command
from rag_eval._compare.calibration import (
    Pair,
    calibrate,
    confusion_matrix,
    kendall_tau_b,
    overlap,
    variant_agreement,
    weighted_kappa,
)
from rag_eval._core.errors import InputFormatError
from rag_eval._data.judging.sheet import SheetRow, read_sheet

# ---- kappa by hand ----------------------------------------------------------------------------------


def test_kappa_of_a_2x2_table_by_hand():
    # n = 50; observed agreement (20 + 15) / 50 = 0.7; chance (25 * 30 + 25 * 20) / 2500 = 0.5;
    # kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4. With two grades, quadratic weights are Cohen's plain kappa.
    assert weighted_kappa([[20, 5], [10, 15]], [0, 1]) == pytest.approx(0.4)


FIVE = [Pair("q1", "b", 0, 1, "llm:x"), Pair("q1", "c", 1, 1, "llm:x"), Pair("q2", "a", 2, 3, "llm:x"),
        Pair("q2", "東京", 3, 3, "llm:x"), Pair("q3", "a", 0, 2, "llm:x")]


def test_kappa_of_a_4x4_table_by_hand():
    # Pairs (person, model): (0,1) (1,1) (2,3) (3,3) (0,2).
    # Observed mean squared difference: (1 + 0 + 1 + 0 + 4) / 5 = 1.2.
    # By chance (independent marginals): E[(H - M)^2] = Var H + Var M + (mean H - mean M)^2
    #   H: 0,1,2,3,0 -> mean 1.2, E[H^2] = 14/5 = 2.8, Var 1.36;  M: 1,1,3,3,2 -> mean 2, E[M^2] = 24/5, Var 0.8
    #   -> 1.36 + 0.8 + 0.64 = 2.8.  kappa = 1 - 1.2 / 2.8 = 4/7.
    found = calibrate(FIVE, "llm:x")
    assert found.categories == (0.0, 1.0, 2.0, 3.0)
    assert found.matrix == ((0, 1, 1, 0), (0, 1, 0, 0), (0, 0, 0, 1), (0, 0, 0, 1))
    assert found.kappa == pytest.approx(4 / 7)
    assert (found.n, found.agree, found.model_higher, found.model_lower) == (5, 2, 3, 0)
    assert (found.mean_human, found.mean_model) == (pytest.approx(1.2), pytest.approx(2.0))


def test_kappa_is_undefined_when_both_give_one_same_grade_to_everything():
    assert math.isnan(weighted_kappa([[0, 0], [0, 4]], [0, 1]))
    assert math.isnan(weighted_kappa([[0, 0], [0, 0]], [0, 1]))


def _slow_kappa(humans: list[int], models: list[int]) -> float:
    """Quadratic kappa from its pairwise form: 1 - mean_i (h_i - m_i)^2 / mean_{i,j} (h_i - m_j)^2."""
    n = len(humans)
    observed = sum((h - m) ** 2 for h, m in zip(humans, models)) / n
    chance = sum((h - m) ** 2 for h in humans for m in models) / (n * n)
    return math.nan if chance == 0 else 1 - observed / chance


grades = st.integers(min_value=0, max_value=3)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(grades, grades), min_size=1, max_size=40))
def test_kappa_matches_a_slow_reference_and_scikit_learn(pairs):
    humans, models = [h for h, _ in pairs], [m for _, m in pairs]
    found = calibrate([Pair("q", str(i), h, m, "llm:x") for i, (h, m) in enumerate(pairs)], "llm:x")
    slow = _slow_kappa(humans, models)
    if math.isnan(slow):
        assert math.isnan(found.kappa)
        return
    assert found.kappa == pytest.approx(slow, abs=1e-12)
    if _has("sklearn"):
        from sklearn.metrics import cohen_kappa_score

        assert found.kappa == pytest.approx(
            cohen_kappa_score(humans, models, labels=[0, 1, 2, 3], weights="quadratic"), abs=1e-9)


def _has(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def test_a_grade_outside_0_3_gets_its_own_row_and_column():
    pairs = [Pair("q", "a", 0, 4, "llm:x"), Pair("q", "b", 4, 4, "llm:x")]
    categories = [0.0, 1.0, 2.0, 3.0, 4.0]
    assert calibrate(pairs, "llm:x").categories == tuple(categories)
    assert confusion_matrix(pairs, categories)[0] == [0, 0, 0, 0, 1]


# ---- Kendall's tau-b ---------------------------------------------------------------------------------


def test_tau_b_of_three_and_four_variants_by_hand():
    # 3 variants: pairs (1,2) discordant (0.5 > 0.4 but 0.45 < 0.5), (1,3) and (2,3) concordant: (2 - 1) / 3.
    assert kendall_tau_b([0.5, 0.4, 0.3], [0.45, 0.5, 0.2]) == pytest.approx(1 / 3)
    # 4 variants, a tie on the model's side: x 1,2,3,4; y 1,1,3,2. Pair (1,2) tied in y only; (3,4) discordant;
    # the other 4 concordant. tau-b = (4 - 1) / sqrt((6 - 0) * (6 - 1)) = 3 / sqrt(30).
    assert kendall_tau_b([1, 2, 3, 4], [1, 1, 3, 2]) == pytest.approx(3 / math.sqrt(30))
    assert kendall_tau_b([1, 2, 3], [3, 2, 1]) == -1.0
    assert math.isnan(kendall_tau_b([1, 1, 1], [1, 2, 3]))  # one side ties them all
    assert math.isnan(kendall_tau_b([1], [1]))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=2, max_size=12))
def test_tau_b_matches_scipy(values):
    scipy_stats = pytest.importorskip("scipy.stats")
    x, y = [float(a) for a, _ in values], [float(b) for _, b in values]
    expected = scipy_stats.kendalltau(x, y).statistic  # tau-b is scipy's default
    found = kendall_tau_b(x, y)
    assert (math.isnan(found) and math.isnan(expected)) or found == pytest.approx(expected, abs=1e-12)


# ---- the pairs of two sheets -----------------------------------------------------------------------------


def test_pairs_are_the_rows_a_person_and_a_model_both_graded():
    human = [
        SheetRow("q1", "b", grade=0, source="human"),
        SheetRow("q1", "c", grade=1, source="llm+verified"),
        SheetRow("q1", "d", grade=2, source="llm:x"),  # a model's grade in the people's sheet: left out
        SheetRow("q2", "doc", start=0, end=5, grade=3, source="human"),
        SheetRow("q2", "e"),  # not graded
    ]
    model = [
        SheetRow("q1", "b", grade=1, source="llm:x"),
        SheetRow("q1", "c", grade=1, source="cross_encoder:m"),
        SheetRow("q1", "d", grade=2, source="llm:x"),
        SheetRow("q2", "doc", start=0, end=5, grade=2, source="llm:x"),
        SheetRow("q2", "f", grade=1, source="human"),  # a person's grade in the model's sheet: left out
    ]
    found = overlap(human, model)
    assert [(p.query_id, p.unit, p.human, p.model, p.source) for p in found.pairs] == [
        ("q1", "b", 0.0, 1.0, "llm:x"), ("q1", "c", 1.0, 1.0, "cross_encoder:m"), ("q2", "doc#0-5", 3.0, 2.0, "llm:x")]
    assert (found.human_graded, found.model_graded, found.human_not_person, found.model_not_model) == (3, 4, 1, 1)
    assert found.sources == ["cross_encoder:m", "llm:x"]


def test_variant_rankings_under_each_set_of_labels_by_hand():
    judgements = {"q1": {"a": 1}, "q2": {"b": 1}}
    pairs = [Pair("q1", "c", 0, 1, "llm:x"), Pair("q2", "d", 2, 0, "llm:x")]
    rankings = {
        "r1": {"q1": {"a": 2.0, "c": 1.0}, "q2": {"d": 2.0, "z": 1.0}},
        "r2": {"q1": {"c": 2.0, "z": 1.0}, "q2": {"b": 2.0, "z": 1.0}},
        "r3": {"q1": {"z": 2.0, "y": 1.0}, "q2": {"z": 2.0, "y": 1.0}},
    }
    # precision@2. People: q1 {a 1, c 0}, q2 {b 1, d 2}. r1: q1 [a ✓ c ✗] 0.5, q2 [d ✓ z] 0.5 -> 0.5;
    #   r2: q1 [c ✗ z] 0, q2 [b ✓ z] 0.5 -> 0.25; r3: 0.
    # Model: q1 {a 1, c 1}, q2 {b 1, d 0}. r1: q1 1, q2 0 -> 0.5; r2: q1 0.5, q2 0.5 -> 0.5; r3: 0.
    # tau-b of (0.5, 0.25, 0) and (0.5, 0.5, 0): (r1,r2) tied in y only; the other two concordant:
    # 2 / sqrt(3 * 2) = 0.8165.
    found = variant_agreement(judgements, pairs, rankings, "precision@2")
    assert found.human == (0.5, 0.25, 0.0) and found.model == (0.5, 0.5, 0.0)
    assert found.tau == pytest.approx(2 / math.sqrt(6))
    assert (found.best_human, found.best_model) == ("r1", "r1")  # r1 first of the equals


# ---- the command ---------------------------------------------------------------------------------

HEADER = "query_id,query_text,doc,start,end,text,grade,source,annotator,time,priority,note\r\n"
HUMAN_CSV = HEADER + (
    "q1,first,b,,,Bravo,0,human,ana,,1,\r\n"
    "q1,first,c,,,Charlie,1,human,ana,,2,\r\n"
    "q2,second,a,,,Alpha,2,,,,3,\r\n"  # no source: typed by hand, read as human
    "q2,second,東京,,,Tokyo,3,llm+verified,ana,,4,\r\n"
    "q3,third,a,,,Alpha,0,human,,,5,\r\n"
)
MODEL_JSONL = "".join(
    json.dumps({"query_id": qid, "doc": doc, "grade": grade, "source": "llm:judge-7b"}, ensure_ascii=False) + "\n"
    for qid, doc, grade in [("q1", "b", 1), ("q1", "c", 1), ("q2", "a", 3), ("q2", "東京", 3), ("q3", "a", 2)]
)
QUERY_SET = """\
corpus:
  - {id: a, text: Alpha}
  - {id: b, text: Bravo}
  - {id: c, text: Charlie}
  - {id: 東京, text: Tokyo}
queries:
  - {id: q1, text: first, judgements: {a: 1}}
  - {id: q2, text: second, judgements: {b: 0}}
  - {id: q3, text: third, judgements: {c: 1}}
"""
CONFIG = """\
dataset: {path: qs.yaml}
retrievers:
  - label: r1
    adapter: static
    params: {rankings: {q1: [a, b], q2: [a, 東京], q3: [c, a]}}
  - label: judged-by-itself
    adapter: own_model:Reranker
top_k: 2
metrics: [precision@2]
output: out
"""
PLUGIN = '''\
class Reranker:
    def index(self, corpus):
        pass

    def search(self, queries, top_k):
        return {"q1": {"b": 2.0, "c": 1.0}, "q2": {"b": 2.0, "東京": 1.0}, "q3": {"a": 2.0, "b": 1.0}}

    def describe(self):
        return {"model": "/models/Judge-7B/"}
'''


def _sheets(folder: Path) -> tuple[Path, Path]:
    human, model = folder / "people.csv", folder / "model.jsonl"
    human.write_bytes(b"\xef\xbb\xbf" + HUMAN_CSV.encode("utf-8"))  # a BOM, CRLF, as a spreadsheet saves it
    model.write_text(MODEL_JSONL, encoding="utf-8")
    return human, model


def _calibrate(capsys, human: Path, model: Path, config: Path | None = None) -> tuple[int, list[str]]:
    code = command.main(argparse.Namespace(human=str(human), model=str(model), config=config and str(config)), print)
    return code, capsys.readouterr().out.splitlines()


def test_the_command_prints_kappa_agreement_and_the_confusion_matrix(tmp_path, capsys):
    human, model = _sheets(tmp_path)
    assert len(read_sheet(human)) == 5
    code, lines = _calibrate(capsys, human, model)
    assert code == 0
    # The same five pairs as test_kappa_of_a_4x4_table_by_hand: kappa 4/7 = 0.5714.
    assert lines == [
        f"calibration: 5 (query, unit) pairs graded by a person in {human} (5 such rows) and by a model in {model} (5)",
        "llm:judge-7b: 5 pairs; weighted kappa (quadratic) 0.5714; exact agreement 2 (40%); the model graded higher "
        "on 3, lower on 0 (mean grade 2.00 against the people's 1.20)",
        "  confusion (rows: the people's grade, columns: the model's):",
        "              0     1     2     3",
        "        0     0     1     1     0",
        "        1     0     1     0     0",
        "        2     0     0     0     1",
        "        3     0     0     0     1",
    ]


def test_the_command_ranks_the_variants_and_warns_about_a_retriever_judged_by_its_own_model(tmp_path, capsys):
    human, model = _sheets(tmp_path)
    (tmp_path / "qs.yaml").write_text(QUERY_SET, encoding="utf-8")
    (tmp_path / "config.yaml").write_text(CONFIG, encoding="utf-8")
    (tmp_path / "own_model.py").write_text(PLUGIN, encoding="utf-8")
    try:
        code, lines = _calibrate(capsys, human, model, tmp_path / "config.yaml")
    finally:
        sys.modules.pop("own_model", None)
    assert code == 0
    # People's grades on the pairs: q1 {a 1 (the set's), b 0, c 1}, q2 {b 0 (the set's), a 2, 東京 3}, q3 {c 1, a 0}.
    #   r1: q1 [a ✓ b ✗] 0.5, q2 [a ✓ 東京 ✓] 1, q3 [c ✓ a ✗] 0.5 -> 2/3
    #   judged-by-itself: q1 [b ✗ c ✓] 0.5, q2 [b ✗ 東京 ✓] 0.5, q3 [a ✗ b] 0 -> 1/3
    # The model's: q1 {a 1, b 1, c 1}, q2 {b 0, a 3, 東京 3}, q3 {c 1, a 2}.
    #   r1: 1, 1, 1 -> 1;  judged-by-itself: q1 1, q2 0.5, q3 [a ✓ b] 0.5 -> 2/3
    # Both rank r1 first: tau-b 1.
    assert lines[-4:] == [
        "  variants ranked by precision@2: Kendall's tau-b 1.0000 over 2 variants; best under the people's grades r1, "
        "under the model's r1 (the same)",
        "    r1: 0.6667 (people) 1.0000 (model)",
        "    judged-by-itself: 0.3333 (people) 0.6667 (model)",
        "warning: retriever 'judged-by-itself' ranks with /models/Judge-7B/, the model behind llm:judge-7b, which gave "
        "5 of the model sheet's grades: it is judged by its own taste; judge it with another model, or with people",
    ]


def test_no_pair_to_compare_is_one_line_naming_both_sheets(tmp_path):
    human, model = _sheets(tmp_path)
    with pytest.raises(InputFormatError) as caught:
        command.main(argparse.Namespace(human=str(model), model=str(human), config=None), print)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{model}, {human}: no (query, unit) is graded by a person")
    assert "(0 and 0 such rows)" in message and "grade the same rows in both" in message


def test_a_pair_outside_the_configs_dataset_is_refused(tmp_path, capsys):
    human, model = _sheets(tmp_path)
    (tmp_path / "qs.yaml").write_text(QUERY_SET.replace("  - {id: 東京, text: Tokyo}\n", ""), encoding="utf-8")
    (tmp_path / "config.yaml").write_text(CONFIG.replace("東京", "c").replace(
        "  - label: judged-by-itself\n    adapter: own_model:Reranker\n",
        "  - {label: r2, adapter: static, params: {rankings: {q1: [b]}}}\n"), encoding="utf-8")
    with pytest.raises(InputFormatError) as caught:
        _calibrate(capsys, human, model, tmp_path / "config.yaml")
    assert str(caught.value) == (f"{human}: query 'q2': passage '東京' is not in the corpus of {tmp_path / 'config.yaml'}; "
                                 "calibrate sheets pooled from this config's dataset")


# ---- a dataset of documents: spans graded as a merge would grade them -------------------------------

DOC_SET = """\
documents:
  - {id: d1, text: "The answer is forty two. Nothing else here."}
  - {id: d2, text: "Another text about forty two, as a model saw it."}
  - {id: d3, text: "Unrelated words."}
queries:
  - id: q1
    text: what is the answer
    evidence:
      - {doc: d1, start: 0, end: 24, grade: 2}
"""
DOC_CONFIG = """\
dataset: {path: qs.yaml}
retrievers:
  - {label: w1, adapter: static, params: {rankings: {q1: [d1, d2]}}}
  - {label: w2, adapter: static, params: {rankings: {q1: [d1, d3]}}}
  - {label: w3, adapter: static, params: {rankings: {q1: [d3, d2]}}}
top_k: 2
metrics: [doc_precision@2]
output: out
"""


def _document_sheets(tmp_path, rows, person=""):
    """people.csv and model.csv grading q1's ``rows`` ``(doc, start, end, text, people's grade, model's grade)``,
    beside DOC_SET and DOC_CONFIG: the paths of the two sheets."""
    human, model = tmp_path / "people.csv", tmp_path / "model.csv"
    human.write_text(HEADER + "".join(f"q1,what is the answer,{d},{s},{e},{t},{h},human,{person},,,\r\n"
                                      for d, s, e, t, h, _ in rows), encoding="utf-8")
    model.write_text(HEADER + "".join(f"q1,what is the answer,{d},{s},{e},{t},{m},llm:judge-7b,,,,\r\n"
                                      for d, s, e, t, _, m in rows), encoding="utf-8")
    (tmp_path / "qs.yaml").write_text(DOC_SET, encoding="utf-8")
    (tmp_path / "config.yaml").write_text(DOC_CONFIG, encoding="utf-8")
    return human, model


def test_documents_are_ranked_with_the_spans_graded_as_a_merge_would_grade_them(tmp_path, capsys):
    # Two spans, each graded by a person and by the model: d2 [0, 28) "Another text about forty two" and
    # d3 [0, 9) "Unrelated".
    rows = [("d2", 0, 28, "Another text about forty two", 1, 0), ("d3", 0, 9, "Unrelated", 0, 2)]
    human, model = _document_sheets(tmp_path, rows, person="ana")
    code, lines = _calibrate(capsys, human, model, tmp_path / "config.yaml")
    assert code == 0
    # A span graded > 0 is evidence (its document graded by it); a span graded 0 grades its document 0
    # where nothing else does (rag-eval judgements merge). People: d1 2, d2 1, d3 0. The model: d1 2, d2 0, d3 2.
    #   doc_precision@2, people: w1 [d1 ✓ d2 ✓] 1, w2 [d1 ✓ d3 ✗] 0.5, w3 [d3 ✗ d2 ✓] 0.5
    #   the model's:             w1 [d1 ✓ d2 ✗] 0.5, w2 [d1 ✓ d3 ✓] 1, w3 [d3 ✓ d2 ✗] 0.5
    # tau-b: (w1, w2) discordant, (w1, w3) tied for the model, (w2, w3) tied for people: -1 / sqrt(2 * 2) = -0.5.
    assert lines[-4:] == [
        "  variants ranked by doc_precision@2: Kendall's tau-b -0.5000 over 3 variants; best under the people's "
        "grades w1, under the model's w2 (NOT the same)",
        "    w1: 1.0000 (people) 0.5000 (model)",
        "    w2: 0.5000 (people) 1.0000 (model)",
        "    w3: 0.5000 (people) 0.5000 (model)",
    ]


def test_a_span_outside_its_document_is_refused_naming_the_sheet(tmp_path, capsys):
    row = "q1,what is the answer,d3,0,99,Unrelated,{g},{s},,,,\r\n"
    human, model = tmp_path / "people.csv", tmp_path / "model.csv"
    human.write_text(HEADER + row.format(g=1, s="human"), encoding="utf-8")
    model.write_text(HEADER + row.format(g=2, s="llm:judge-7b"), encoding="utf-8")
    (tmp_path / "qs.yaml").write_text(DOC_SET, encoding="utf-8")
    (tmp_path / "config.yaml").write_text(DOC_CONFIG, encoding="utf-8")
    with pytest.raises(InputFormatError) as caught:
        _calibrate(capsys, human, model, tmp_path / "config.yaml")
    assert str(caught.value) == (f"{human}, query 'q1', unit 'd3#0-99': document 'd3': end 99 is past the end of the "
                                 "document (16 characters)")
    assert capsys.readouterr().out == ""  # nothing said before the refusal


def test_a_refusal_names_the_sheet_whose_grades_are_refused(tmp_path, capsys):
    # The model grades d3 whole 0 and a span of it 2: a merge of its sheet would be refused (the document
    # graded both ways). The people's grades of the same rows are fine: the refusal names the model's sheet.
    rows = [("d3", "", "", "Unrelated words.", 0, 0), ("d3", 0, 9, "Unrelated", 0, 2)]
    human, model = _document_sheets(tmp_path, rows)
    with pytest.raises(InputFormatError) as caught:
        _calibrate(capsys, human, model, tmp_path / "config.yaml")
    message = str(caught.value)
    assert message.startswith(f"{model}, query 'q1', unit 'd3") and str(human) not in message, message
    assert "grade the document or its spans, not both ways" in message and "\n" not in message
    assert capsys.readouterr().out == ""
