"""hybrid checks each child's answer with the run's own check (rag_eval._retrievers.answer_check).

The attack: a child answering NaN, inf, a str or bool score, a doc id not in the corpus or an
int doc id was fused without a word (NaN under rrf gave nDCG@10 0.6392 with exit 0; an unknown
id took rank 1), or failed with a bare TypeError. Now the child's answer meets the same check as a
top-level retriever's, and the one line names the child; the run exits 2 and writes nothing.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from rag_eval._core.errors import RetrieverError
from rag_eval._retrievers import registry
from rag_eval._retrievers.answer_check import RetrieverRunError
from rag_eval._retrievers.base import describe
from rag_eval._run.checks import check_ranking
from rag_eval.cli import main

CORPUS = {d: {"title": "", "text": f"passage {d}"} for d in ("a", "b", "c")}
GOOD = {"q": {"a": 2.0, "b": 1.0}}
CHILD = "hybrid: retrievers[1] (test_hybrid_child_checks:Verbatim)"


class Verbatim:
    """Answers ``answer`` as given, whatever is asked (an unasked query, a list in place of a mapping...)."""

    def __init__(self, answer):
        self.answer = answer

    def index(self, corpus):
        pass

    def search(self, queries, top_k):
        return self.answer


def hybrid(bad: dict, **params):
    """A hybrid of a well-behaved child and one answering ``bad`` verbatim, indexed."""
    children = [
        {"adapter": "_models:GreedyRetriever", "params": {"run": GOOD}},
        {"adapter": "test_hybrid_child_checks:Verbatim", "params": {"answer": bad}},
    ]
    retriever = registry.build("hybrid", {"retrievers": children, **params})
    retriever.index(CORPUS)
    return retriever


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"q": {"a": math.nan}}, "query 'q', doc 'a': score is NaN"),
        ({"q": {"a": np.float32("nan")}}, "query 'q', doc 'a': score is NaN"),
        ({"q": {"a": math.inf}}, "query 'q', doc 'a': score is inf; scores must be finite numbers"),
        ({"q": {"a": "0.5"}}, "query 'q', doc 'a': score '0.5' (str) is not a number; return an int or a float"),
        ({"q": {"a": True}}, "query 'q', doc 'a': score True (bool) is not a number; return an int or a float"),
        ({"q": {"zz": 1.0}}, "query 'q': returned doc 'zz', which is not in the corpus"),
        ({"q": {7: 1.0}}, "query 'q': returned doc 7, which is not in the corpus"),
        ({"q": {"a ": 1.0}}, "query 'q': returned doc 'a ', which is not in the corpus"),
        ({"other": {"a": 1.0}}, "search() answered query 'other', which was not asked"),
        ({"q": [("a", 1.0)]}, "query 'q': expected {doc_id: score}, got list"),
    ],
)
@pytest.mark.parametrize("method", ["rrf", "weighted"])
def test_a_bad_child_answer_is_refused_naming_the_child(bad, message, method):
    retriever = hybrid(bad, method=method)
    with pytest.raises(RetrieverRunError) as caught:
        retriever.search({"q": "?"}, 10)
    assert str(caught.value) == f"{CHILD}: {message}"


def test_the_childs_message_is_the_top_level_checks_own():
    # One rule, one home: the same answer refused at the top names the retriever where the child is named.
    for bad in ({"q": {"a": math.nan}}, {"q": {"a": "1"}}, {"q": {"zz": 1.0}}, {"q": {7: 1.0}}):
        with pytest.raises(RetrieverRunError) as top:
            check_ranking("x", bad, {"q": "?"}, CORPUS, 10)
        with pytest.raises(RetrieverRunError) as child:
            hybrid(bad).search({"q": "?"}, 10)
        assert str(top.value).removeprefix("retriever 'x': ") == str(child.value).removeprefix(f"{CHILD}: ")


def test_search_before_index_is_refused():
    retriever = registry.build("hybrid", {"retrievers": [
        {"adapter": "_models:GreedyRetriever", "params": {"run": GOOD}},
        {"adapter": "_models:GreedyRetriever", "params": {"run": GOOD}},
    ]})
    with pytest.raises(Exception, match=r"^hybrid: search\(\) called before index\(corpus\)$"):
        retriever.search({"q": "?"}, 10)


def test_good_children_fuse_as_by_hand():
    # int and numpy scores pass the check; rrf, k = 60: child 0 ranks a=1 b=2, child 1 ranks b=1 c=2
    run = hybrid({"q": {"b": 5, "c": np.float64(1.0)}}).search({"q": "?"}, 10)["q"]
    assert run == pytest.approx({"a": 1 / 61, "b": 1 / 62 + 1 / 61, "c": 1 / 62}, abs=1e-15)
    assert list(run) == ["b", "a", "c"]


def _write(path: Path, data) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _config(folder: Path, bad: dict) -> Path:
    _write(folder / "tiny.yaml", {
        "name": "tiny",
        "corpus": [{"id": "d1", "text": "alpha beta"}, {"id": "d2", "text": "gamma delta"},
                   {"id": "d3", "text": "epsilon"}],
        "queries": [{"id": "q1", "text": "alpha", "judgements": {"d1": 2, "d2": 1}}],
    })
    return _write(folder / "run.yaml", {
        "name": "hyb",
        "dataset": {"path": "tiny.yaml"},
        "retrievers": [{"label": "h", "adapter": "hybrid", "params": {"retrievers": [
            {"adapter": "_models:GreedyRetriever", "params": {"run": bad}},
            {"adapter": "_models:GreedyRetriever", "params": {"run": {"q1": {"d3": 3.0, "d2": 2.0, "d1": 1.0}}}},
        ]}}],
        "metrics": ["ndcg@10"],
        "output": "out",
    })


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ({"q1": {"d1": math.nan, "d2": 1.0}}, "query 'q1', doc 'd1': score is NaN"),
        ({"q1": {"d1": math.inf}}, "query 'q1', doc 'd1': score is inf; scores must be finite numbers"),
        ({"q1": {"d1": "0.5"}}, "query 'q1', doc 'd1': score '0.5' (str) is not a number; return an int or a float"),
        ({"q1": {"nope": 9.0, "d1": 1.0}}, "query 'q1': returned doc 'nope', which is not in the corpus"),
    ],
)
def test_run_refuses_a_bad_child_exit_2_one_line_nothing_written(tmp_path, monkeypatch, capsys, bad, problem):
    monkeypatch.chdir(tmp_path)
    _config(tmp_path, bad)
    assert main(["run", "run.yaml", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "rag-eval: error: run.yaml: retriever 'h' (hybrid) failed in search(): "
        f"hybrid: retrievers[0] (_models:GreedyRetriever): {problem}"
    ]
    assert not (tmp_path / "out").exists()


def test_run_of_good_children_gives_the_hand_computed_ndcg(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _config(tmp_path, {"q1": {"d2": 2.0, "d1": 1.0}})
    assert main(["run", "run.yaml", "--no-progress"]) == 0
    # rrf k=60: d2 = 1/61 + 1/62 (0.03252), d1 = 1/62 + 1/63 (0.03200), d3 = 1/61 (0.01639): d2, d1, d3
    # linear gains d2=1, d1=2, d3=0: DCG = 1 + 2/log2(3); ideal = 2 + 1/log2(3)
    ndcg = (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    assert f"h\tndcg@10\t{ndcg:.4f}" in capsys.readouterr().out  # 0.8597


class FailingDescribe(Verbatim):
    def describe(self):
        raise RuntimeError("model card missing")


def test_a_childs_describe_failure_names_the_child():
    """The line named the hybrid by its class path and the child by its class, without its place."""
    children = [
        {"adapter": "_models:GreedyRetriever", "params": {"run": GOOD}},
        {"adapter": "test_hybrid_child_checks:FailingDescribe", "params": {"answer": GOOD}},
    ]
    retriever = registry.build("hybrid", {"retrievers": children})
    with pytest.raises(RetrieverError) as caught:
        describe(retriever, "h", "hybrid")
    assert str(caught.value) == (
        "retriever 'h' (hybrid): describe() failed: hybrid: retrievers[1] (test_hybrid_child_checks:FailingDescribe): "
        "retriever test_hybrid_child_checks:FailingDescribe: describe() raised RuntimeError: model card missing; "
        "describe() must return a dict (or None)"
    )
