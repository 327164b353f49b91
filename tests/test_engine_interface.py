"""The evaluation engine's fence and the id rule for in-memory data.

Everything outside rag_eval/_scoring/engine/ goes through the names of ``rag_eval._scoring.engine``
(its internals are tuned for speed and may change); dicts and DataFrames given to
``rag_eval.evaluate`` follow the id rule of rag_eval._core.ids, as files do.
"""

from __future__ import annotations

import ast
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rag_eval
from rag_eval._core.errors import InputFormatError
from rag_eval._scoring import engine

PACKAGE = Path(rag_eval.__file__).parent
TESTS = Path(__file__).parent

INTERFACE = [
    "BEIR_QRELS",
    "FlatTable",
    "JoinedRun",
    "Layout",
    "from_dataframe",
    "from_nested",
    "prepare",
    "read_judgements",
    "read_qrels",
    "read_run",
    "to_nested",
]


def test_the_interface_is_pinned():
    assert engine.__all__ == INTERFACE
    for name in engine.__all__:
        assert (getattr(engine, name).__doc__ or "").strip(), f"rag_eval._scoring.engine.{name} has no docstring"


def _imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) of every import of a rag_eval module in a file (names: [] for ``import m``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rag_eval"):
            found.append((node.lineno, node.module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names if alias.name.startswith("rag_eval")]
    return found


def _outside_the_engine(paths):
    return [path for path in sorted(paths) if path.parent != PACKAGE / "_scoring" / "engine"]


def test_the_package_uses_the_engine_only_through_its_interface():
    """No module outside rag_eval/_scoring/engine/ imports an engine module, or an underscore name of the engine."""
    crossing = []
    for path in _outside_the_engine(PACKAGE.rglob("*.py")):
        for line, module, names in _imports(path):
            inside = module.startswith("rag_eval._scoring.engine.")
            private = module == "rag_eval._scoring.engine" and any(name.startswith("_") for name in names)
            if inside or private:
                crossing.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {module} {names}")
    assert crossing == []


def test_no_underscore_name_of_the_engine_is_imported_outside_it():
    """Tests of internals may import an internal module (to monkeypatch it), never its private names."""
    offenders = []
    for path in _outside_the_engine([*PACKAGE.rglob("*.py"), *TESTS.glob("*.py")]):
        for line, module, names in _imports(path):
            if module.startswith("rag_eval._scoring.engine") and any(name.startswith("_") for name in names):
                offenders.append(f"{path.name}:{line}: {module} {names}")
    assert offenders == []


def test_importing_rag_eval_stays_light():
    code = (
        "import sys, rag_eval\n"
        "heavy = ('pandas', 'scipy', 'torch', 'matplotlib', 'ray', 'yaml', 'pydantic')\n"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"


# ---- the id rule for dicts and DataFrames ---------------------------------------------------

MANY = {f"d{i}": float(-i) for i in range(5000)}  # a bad id deep inside: the vectorised scan, not a sample


@pytest.mark.parametrize(
    "judgements, run, message",
    [
        ({"q1": {"a\x00": 1}}, {"q1": {"a": 1.0}},
         r"^judgements: query 'q1': doc id 'a\\x00' holds the control character U\+0000 at position 2; "
         "ids must be non-empty and may not hold control characters$"),
        ({"q1": {"a": 1, **{f"d{i}": 0 for i in range(5000)}, "x\x1fy": 0}}, {"q1": {"a": 1.0}},
         r"^judgements: query 'q1': doc id 'x\\x1fy' holds the control character U\+001F"),
        ({"q1": {"a": 1}, "q2": {"": 1}}, {"q1": {"a": 1.0}}, r"^judgements: query 'q2': doc id '' is empty"),
        ({"q1": {"a": 1}}, {"q1": {"a": 1.0}, "q\n2": {"a": 1.0}},
         r"^run: query id 'q\\n2' holds the control character U\+000A at position 2"),
        ({"q\x7f": {"a": 1}}, {"q1": {"a": 1.0}}, r"^judgements: query id 'q\\x7f' holds the control character U\+007F"),
        ({"": {"a": 1}}, {"q1": {"a": 1.0}}, r"^judgements: query id '' is empty"),
        ({"q1": {"a": 1}}, {"": {"a": 1.0}}, r"^run: query id '' is empty"),
        ({"q1": {"a\ud800": 1}}, {"q1": {"a": 1.0}},
         r"^judgements: query 'q1': doc id 'a\\ud800' holds a lone surrogate U\+D800 at position 2, "
         "which is not UTF-8"),
        ({"q\udfff": {"a": 1}}, {"q1": {"a": 1.0}}, r"^judgements: query id 'q\\udfff' holds a lone surrogate U\+DFFF"),
        ({"q1": {"a": 1}}, {"q1": {"a": 1.0}, "é\ud83d": {"a": 1.0}},
         r"^run: query id 'é\\ud83d' holds a lone surrogate U\+D83D"),
        ({"q1": {"p/" * 50 + "\x00": 1}}, {"q1": {"a": 1.0}},
         r"^judgements: query 'q1': doc id 'p/p/.*'\.\.\. \(101 characters\) holds the control character U\+0000 at position 101"),
    ],
)
def test_dict_ids_follow_the_id_rule(judgements, run, message):
    with pytest.raises(InputFormatError, match=message):
        rag_eval.evaluate(judgements, run, ["ndcg@10"])


@pytest.mark.parametrize("in_score_order", [True, False])  # the two joins of dicts (engine.join)
@pytest.mark.parametrize("bad", ["b\tc", "", "x\x1fy", "é\r", "a\ud800", "z\x00", "a\x00"])
def test_a_run_doc_id_without_a_judgement_is_not_checked_and_changes_no_number(bad, in_score_order):
    """Checking every retrieved id would cost a scan of the whole run (docs/semantics.md), and an id
    that has no judgement only takes a rank: the numbers equal those of a clean id in its place,
    even tied with a judged document (ties compare the ids exactly, NUL and surrogates included)."""
    judgements = {"q1": {"a": 1, "m": 2}, "q2": {"b": 1}}
    stand_in = "~clean" if bad > "a" else " "  # on the same side of "a" in byte order
    for score in (2.0, 1.0, 0.5):  # above, tied with and below the judged "a"
        run = {"q1": {"m": 3.0, bad: score, "a": 1.0, **MANY}, "q2": {"b": 1.0}}
        clean = {"q1": {"m": 3.0, stand_in: score, "a": 1.0, **MANY}, "q2": {"b": 1.0}}
        if not in_score_order:
            run["q1"], clean["q1"] = dict(reversed(run["q1"].items())), dict(reversed(clean["q1"].items()))
        got = rag_eval.evaluate(judgements, run, ["ndcg", "map", "mrr@2"]).aggregate
        assert got == rag_eval.evaluate(judgements, clean, ["ndcg", "map", "mrr@2"]).aggregate, (bad, score)


def test_a_run_doc_id_with_a_nul_is_refused_where_ids_are_compared_as_bytes(tmp_path):
    """Against judgements read from a file, the ids are compared packed (UTF-8 padded with zero
    bytes): there 'a\x00' would be taken for 'a', so it is refused, naming the query and the id."""
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 a 1\n")
    for bad, problem in (("a\x00", r"holds the control character U\+0000 at position 2"),
                         ("a\ud800", r"holds a lone surrogate U\+D800 at position 2")):
        with pytest.raises(InputFormatError, match=rf"^run: query 'q1': doc id {re.escape(repr(bad))} {problem}"):
            rag_eval.evaluate(engine.read_qrels(qrels), {"q1": {"a": 0.5, bad: 1.0}}, ["ndcg"])
    # A clean unjudged id is fine there too: 'a' ranks second.
    results = rag_eval.evaluate(engine.read_qrels(qrels), {"q1": {"a": 0.5, "b\tc": 1.0}}, ["ndcg"])
    assert results.aggregate["ndcg"] == pytest.approx(1 / math.log2(3), rel=1e-15)


@pytest.mark.parametrize("run", [{"q": {5: 1.0, 7: 2.0}}, {"q": {np.int64(5): 1.0, 7: 2.0}}])
def test_a_run_of_int_doc_ids_matches_the_judgements_as_their_digits(run):
    """Judged ints were taken as their digits, a run's were not: the judged 5 never matched the run's 5, and the
    query scored 0 without a word. Ranking 7 (2.0) then 5 (1.0), the one relevant document at rank 2."""
    for judgements in ({"q": {5: 1}}, {"q": {"5": 1}}):
        results = rag_eval.evaluate(judgements, run, ["ndcg", "P_1", "recall@2"])
        assert results.per_query == {"q": {"ndcg": 1 / math.log2(3), "precision@1": 0.0, "recall@2": 1.0}}
    with pytest.raises(InputFormatError, match=r"ids must be strings \(or integers\), got 5\.0"):
        rag_eval.evaluate({"q": {"5": 1}}, {"q": {5.0: 1.0}}, ["ndcg"])


@pytest.mark.parametrize("run", [{"q": {"x": 4.0, 5: 3.0, 7: 2.0}}, {"q": {7: 2.0, "x": 4.0, 5: 3.0}}])
def test_a_query_whose_ids_mix_str_and_int_at_an_end_is_read_as_digits(run):
    """Only the first id was looked at: a str first left the ints after it unconverted (nDCG 0 instead of
    0.6697). ranking x, 5, 7; judged 5 (2) and 7 (1): DCG 2/log2(3) + 1/2, ideal 2 + 1/log2(3)."""
    results = rag_eval.evaluate({"q": {"5": 2, "7": 1}}, run, ["ndcg@10"])
    assert results.aggregate["ndcg@10"] == pytest.approx((2 / math.log2(3) + 0.5) / (2 + 1 / math.log2(3)), rel=1e-15)


def test_a_value_past_float64_and_a_null_id_are_one_line_errors():
    """Before: a bare OverflowError (10**400 is an int float64 cannot hold) and a bare TypeError (a null id)."""
    huge = 10**400
    with pytest.raises(InputFormatError, match=r"^run: query 'q', doc 'a': score 1000.*\(401 characters\) is too "
                                               r"large for a float64 \(at most about 1\.8e308\)$"):
        rag_eval.evaluate({"q": {"a": 1}}, {"q": {"a": huge}}, ["ndcg"])
    with pytest.raises(InputFormatError, match=r"^judgements: query 'q', doc 'a': grade 1000.* is too large"):
        rag_eval.evaluate({"q": {"a": huge}}, {"q": {"a": 1.0}}, ["ndcg"])
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"qid": ["q"], "doc_id": ["a"], "score": [huge]}, dtype=object)
    with pytest.raises(InputFormatError, match=r"^run: row 0: score 1000.* is too large for a float64"):
        rag_eval.evaluate({"q": {"a": 1}}, frame, ["ndcg"])
    floats = pd.DataFrame({"qid": ["q", "q"], "doc_id": [5.0, 7.0], "score": [1.0, 0.5]})  # was "5.0": scored 0
    with pytest.raises(InputFormatError, match=r"^run: row 0: the doc id 5\.0 is a float; give ids as text or integers$"):
        rag_eval.evaluate({"q": {5: 1}}, floats, ["ndcg"])
    for column, kind in (("doc_id", "doc id"), ("qid", "query id")):
        frame = pd.DataFrame({"qid": ["q", "q"], "doc_id": ["a", "b"], "grade": [1, 1]})
        frame.loc[1, column] = None
        with pytest.raises(InputFormatError, match=rf"^judgements: row 1: the {kind} is missing \(null\); give every "
                                                   rf"row a {column}$"):
            rag_eval.evaluate(frame, {"q": {"a": 1.0}}, ["ndcg"])


def test_dataframe_ids_follow_the_id_rule():
    pd = pytest.importorskip("pandas")
    judgements = pd.DataFrame({"qid": ["q1", "q1"], "doc_id": ["a", "b\x0bc"], "grade": [1, 2]})
    run = pd.DataFrame({"qid": ["q1"], "doc_id": ["a"], "score": [1.0]})
    with pytest.raises(InputFormatError, match=r"^judgements: row 1: doc id 'b\\x0bc' holds the control character U\+000B"):
        rag_eval.evaluate(judgements, run, ["ndcg"])


def test_ids_the_rule_allows_are_scored():
    """Any other text is an id: spaces, punctuation, non-ASCII (U+0085 and U+00A0 are not C0 controls),
    integers (as their digits), and ids of any length."""
    ids = ["a b", "<dbpedia:Oceanic_Airlines>", "reports/2024/q3.pdf#p12#c7", "é\u0085\u00a0東😀", "x" * 2000]
    judgements = {"q 1": {doc: 1 for doc in ids}, 7: {3: 2}}
    run = {"q 1": {doc: float(len(ids) - i) for i, doc in enumerate(ids)}, "7": {"3": 1.0, 4: 0.5}}
    results = rag_eval.evaluate(judgements, run, ["ndcg", "recall@5"])
    assert results.query_ids == ("7", "q 1")
    assert results.aggregate["ndcg"] == 1.0
    assert results.aggregate["recall@5"] == 1.0
