"""The evaluation engine's fence and the id rule for in-memory data.

Everything outside rag_eval/engine/ goes through the names of ``rag_eval.engine``
(its internals are tuned for speed and may change); dicts and DataFrames given to
``rag_eval.evaluate`` follow the id rule of rag_eval.ids, as files do.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import rag_eval
from rag_eval import engine
from rag_eval.errors import InputFormatError

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
        assert (getattr(engine, name).__doc__ or "").strip(), f"rag_eval.engine.{name} has no docstring"


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
    return [path for path in sorted(paths) if path.parent != PACKAGE / "engine"]


def test_the_package_uses_the_engine_only_through_its_interface():
    """No module outside rag_eval/engine/ imports an engine module, or an underscore name of the engine."""
    crossing = []
    for path in _outside_the_engine(PACKAGE.rglob("*.py")):
        for line, module, names in _imports(path):
            inside = module.startswith("rag_eval.engine.")
            private = module == "rag_eval.engine" and any(name.startswith("_") for name in names)
            if inside or private:
                crossing.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {module} {names}")
    assert crossing == []


def test_no_underscore_name_of_the_engine_is_imported_outside_it():
    """Tests of internals may import an internal module (to monkeypatch it), never its private names."""
    offenders = []
    for path in _outside_the_engine([*PACKAGE.rglob("*.py"), *TESTS.glob("*.py")]):
        for line, module, names in _imports(path):
            if module.startswith("rag_eval.engine") and any(name.startswith("_") for name in names):
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
        ({"q1": {"a": 1}}, {"q1": {"a": 1.0, "b\tc": 0.5}},  # unjudged, and still refused
         r"^run: query 'q1': doc id 'b\\tc' holds the control character U\+0009 at position 2"),
        ({"q1": {"a": 1}}, {"q1": {"a": 1.0}, "q\n2": {"a": 1.0}},
         r"^run: query id 'q\\n2' holds the control character U\+000A at position 2"),
        ({"q\x7f": {"a": 1}}, {"q1": {"a": 1.0}}, r"^judgements: query id 'q\\x7f' holds the control character U\+007F"),
        ({"q1": {"a": 1}}, {"q1": {"a": 1.0, "": 0.5}}, r"^run: query 'q1': doc id '' is empty"),
        ({"": {"a": 1}}, {"q1": {"a": 1.0}}, r"^judgements: query id '' is empty"),
        ({"q1": {"a": 1}}, {"q1": {**MANY, "x\x1fy": -1e9}},
         r"^run: query 'q1': doc id 'x\\x1fy' holds the control character U\+001F"),
        ({"q1": {"a": 1}}, {"q0": {"a": 1.0}, **{f"q{i}": {"d": 1.0} for i in range(1, 300)}, "q300": {"é\r": 1.0}},
         r"^run: query 'q300': doc id 'é\\r' holds the control character U\+000D"),
        ({"q1": {"a": 1}}, {"q1": {**MANY, 7: 1.0, "z\x00": 0.5}},  # a non-str id past the first ones
         r"^run: query 'q1': doc id 'z\\x00' holds the control character U\+0000"),
        ({"q1": {"a": 1}}, {"q1": {"p/" * 50 + "\x00": 1.0}},
         r"^run: query 'q1': doc id 'p/p/.*'\.\.\. \(101 characters\) holds the control character U\+0000 at position 101"),
    ],
)
def test_dict_ids_follow_the_id_rule(judgements, run, message):
    with pytest.raises(InputFormatError, match=message):
        rag_eval.evaluate(judgements, run, ["ndcg@10"])


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
