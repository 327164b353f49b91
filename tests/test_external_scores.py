"""A framework hit's score, settled in one place (rag_eval._retrievers.external.hits.settled), and id_map at validate.

Real LangChain, LlamaIndex and Haystack classes (a VectorStore, a BaseRetriever, a component) answer
crafted hits, as a team's own store would. The attacks:

- a VectorStore whose scores are all None exited 2 blaming the store for rag_eval's own float();
  now the answer is ranked by position, as documented;
- a score given as a str ("0.9") was taken; now it is refused in one line naming the adapter, the
  query and the hit, exit 2, nothing written (a bool too);
- LlamaIndex nodes mixing scores and None were ranked on two scales (None nodes got rank scores
  3, 2, 1 above cosines below 1); now the whole answer is ranked by position and counted;
- ``rag-eval validate`` passed an id_map that is missing or a folder, which run refused.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # before haystack is first imported

import pytest
import yaml

from rag_eval._core.errors import RetrieverError
from rag_eval._core.plugins import config_folder
from rag_eval.cli import main

# Factories of the team's kind: real framework classes whose answers are crafted. Each leaves a mark when called.
FACTORIES = '''
import pathlib

HERE = pathlib.Path(__file__).parent
TEXT = {"p1": "alpha", "p2": "beta", "p3": "gamma", "p4": "delta"}


def _called():
    (HERE / "factory.called").write_text("called")


def lc_store(scores):
    """A LangChain VectorStore answering p3, p1, p2 with the scores given (None, str, numbers)."""
    from langchain_core.documents import Document
    from langchain_core.vectorstores import VectorStore

    _called()

    class Crafted(VectorStore):
        def add_texts(self, texts, metadatas=None, **kwargs):
            raise NotImplementedError

        @classmethod
        def from_texts(cls, *args, **kwargs):
            raise NotImplementedError

        def similarity_search(self, query, k=4, **kwargs):
            return [document for document, _ in self.similarity_search_with_score(query, k)]

        def similarity_search_with_score(self, query, k=4, **kwargs):
            return [
                (Document(page_content=TEXT[p], metadata={"pid": p}, id="e" + p[1:]), score)
                for p, score in zip(["p3", "p1", "p2"], scores)
            ][:k]

    return Crafted()


def li_retriever(scores):
    """A LlamaIndex BaseRetriever answering p3, p1, p2 with the node scores given."""
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, TextNode

    _called()

    class Crafted(BaseRetriever):
        def _retrieve(self, query_bundle):
            return [
                NodeWithScore(node=TextNode(text=TEXT[p], id_="n" + p[1:], metadata={"pid": p}), score=score)
                for p, score in zip(["p3", "p1", "p2"], scores)
            ]

    return Crafted()


def hs_component(scores):
    """A Haystack component answering p3, p1, p2 with the document scores given."""
    from haystack import Document, component

    _called()

    @component
    class Crafted:
        @component.output_types(documents=list[Document])
        def run(self, query: str, top_k: int = 10):
            return {"documents": [
                Document(id="h" + p[1:], content=TEXT[p], meta={"pid": p}, score=score)
                for p, score in zip(["p3", "p1", "p2"], scores)
            ][:top_k]}

    return Crafted()
'''

QUERY_SET = {
    "name": "tiny",
    "corpus": [{"id": p, "text": t} for p, t in {"p1": "alpha", "p2": "beta", "p3": "gamma", "p4": "delta"}.items()],
    "queries": [{"id": "q1", "text": "alpha beta", "judgements": {"p1": 2, "p2": 1}}],
}
CORPUS = {entry["id"]: {"title": "", "text": entry["text"]} for entry in QUERY_SET["corpus"]}
ADAPTERS = {
    "langchain": ("external_scores_factories:lc_store", "langchain_core"),
    "llamaindex": ("external_scores_factories:li_retriever", "llama_index.core"),
    "haystack": ("external_scores_factories:hs_component", "haystack"),
}
# The hand-made answer p3, p1, p2 ranked by position: grades 0, 2, 1 at ranks 1, 2, 3 (linear gain).
NDCG_BY_POSITION = (2 / math.log2(3) + 1 / math.log2(4)) / (2 + 1 / math.log2(3))  # 0.6697


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "external_scores_factories.py").write_text(FACTORIES)
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(QUERY_SET, sort_keys=False))
    return tmp_path


def built(adapter: str, folder: Path, answer: list[Any], **params: Any) -> Any:
    """The adapter on a crafted target, built and indexed as the runner does it (the folder on the path)."""
    factory, package = ADAPTERS[adapter]
    pytest.importorskip(package)
    from rag_eval._retrievers import registry

    with config_folder(folder):
        retriever = registry.build(adapter, {
            "factory": factory, "factory_params": {"scores": answer}, "map": {"passage_id": "pid"}, **params
        })
        retriever.index(CORPUS)
    return retriever


def config(folder: Path, adapter: str, answer: list[Any], **params: Any) -> Path:
    factory, package = ADAPTERS[adapter]
    pytest.importorskip(package)
    spec = {"factory": factory, "factory_params": {"scores": answer}, "map": {"passage_id": "pid"}, **params}
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump({
        "name": "scores",
        "dataset": {"path": "tiny.yaml"},
        "retrievers": [{"label": "x", "adapter": adapter, "params": spec}],
        "metrics": ["ndcg@10"],
        "top_k": 10,
        "output": "out",
    }, sort_keys=False))
    return path


@pytest.mark.parametrize("adapter", ["langchain", "llamaindex", "haystack"])
def test_an_answer_without_scores_is_ranked_by_position(folder, adapter):
    retriever = built(adapter, folder, [None, None, None])
    assert retriever.search({"q1": "alpha beta"}, 10) == {"q1": {"p3": 3.0, "p1": 2.0, "p2": 1.0}}
    mapping = retriever.describe()["mapping"]
    assert (mapping["scoreless_hits"], mapping["ranked_by_order"], mapping["mixed_scores"]) == (3, 1, 0)


@pytest.mark.parametrize("adapter", ["langchain", "llamaindex", "haystack"])
def test_an_answer_mixing_scored_and_scoreless_hits_is_ranked_by_position_whole(folder, adapter):
    # p2 has the best score (0.95) but came third: the store's order is the one scale the answer has.
    # Before: p3 0.9, p1 (no score) 3 - 1 = 2.0, p2 0.95, so p1 ranked first on a scale of its own.
    retriever = built(adapter, folder, [0.9, None, 0.95])
    assert retriever.search({"q1": "alpha beta"}, 10) == {"q1": {"p3": 3.0, "p1": 2.0, "p2": 1.0}}
    mapping = retriever.describe()["mapping"]
    assert (mapping["scoreless_hits"], mapping["ranked_by_order"], mapping["mixed_scores"]) == (1, 1, 1)


@pytest.mark.parametrize("adapter", ["langchain", "llamaindex", "haystack"])
def test_scores_as_given_are_ranked_by_score(folder, adapter):
    retriever = built(adapter, folder, [0.5, 0.25, 2])  # an int is a number
    assert retriever.search({"q1": "alpha beta"}, 10) == {"q1": {"p2": 2.0, "p3": 0.5, "p1": 0.25}}
    assert retriever.describe()["mapping"]["ranked_by_order"] == 0


def test_langchain_distances_are_negated_after_the_check(folder):
    np = pytest.importorskip("numpy")
    retriever = built("langchain", folder, [np.float32(0.25), np.float32(0.5), np.float64(1.0)], scores="distance")
    assert retriever.search({"q1": "alpha beta"}, 10) == {"q1": {"p3": -0.25, "p1": -0.5, "p2": -1.0}}


@pytest.mark.parametrize(
    ("adapter", "hit", "value", "shown"),
    [
        ("langchain", "hit 1 (id 'e3')", "0.9", "'0.9' (str)"),
        ("langchain", "hit 1 (id 'e3')", True, "True (bool)"),
        ("haystack", "hit 1 (id 'h3')", "0.9", "'0.9' (str)"),
    ],
)
def test_a_score_that_is_no_number_is_refused_naming_adapter_query_and_hit(folder, adapter, hit, value, shown):
    # (LlamaIndex's NodeWithScore is a pydantic model with score: Optional[float]: it turns "0.9" into 0.9 itself.)
    retriever = built(adapter, folder, [value, 0.5, 0.25])
    with pytest.raises(RetrieverError) as caught:
        retriever.search({"q1": "alpha beta"}, 10)
    assert str(caught.value) == f"{adapter}: query 'q1': {hit}: score {shown} is not a number; return an int or a float"


def test_run_ranks_a_scoreless_langchain_store_by_position(folder, monkeypatch, capsys):
    monkeypatch.chdir(folder)
    config(folder, "langchain", [None, None, None])
    assert main(["run", "run.yaml", "--no-progress"]) == 0
    assert f"x\tndcg@10\t{NDCG_BY_POSITION:.4f}" in capsys.readouterr().out  # 0.6697


@pytest.mark.parametrize(("adapter", "hit"), [("langchain", "hit 2 (id 'e1')"), ("haystack", "hit 2 (id 'h1')")])
def test_run_refuses_a_str_score_exit_2_one_line_nothing_written(folder, monkeypatch, capsys, adapter, hit):
    monkeypatch.chdir(folder)
    config(folder, adapter, [0.9, "0.53", 0.1])
    assert main(["run", "run.yaml", "--no-progress"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"rag-eval: error: run.yaml: retriever 'x' ({adapter}) failed in search(): {adapter}: query 'q1': {hit}: "
        "score '0.53' (str) is not a number; return an int or a float"
    ]
    assert not (folder / "out").exists()


@pytest.mark.parametrize(
    ("id_map", "problem"),
    [
        ("missing.tsv", "id_map 'missing.tsv' does not exist; give a file of 'external id<TAB>passage id' lines"),
        ("folder", "id_map 'folder' cannot be read: Is a directory"),
    ],
)
def test_validate_reports_an_unreadable_id_map_as_run_does_and_calls_no_factory(folder, monkeypatch, capsys, id_map, problem):
    monkeypatch.chdir(folder)
    (folder / "folder").mkdir()
    config(folder, "langchain", [0.9, 0.5, 0.1], id_map=id_map)
    line = f"run.yaml: retriever 'x': params.id_map: {problem}"
    assert main(["validate", "run.yaml"]) == 2
    captured = capsys.readouterr()
    assert line in (captured.out + captured.err).splitlines()
    assert not (folder / "factory.called").exists()
    assert main(["run", "run.yaml", "--no-progress"]) == 2
    assert capsys.readouterr().err.splitlines() == [f"rag-eval: error: {line}"]
    assert not (folder / "factory.called").exists() and not (folder / "out").exists()


def test_validate_passes_a_good_id_map(folder, monkeypatch, capsys):
    monkeypatch.chdir(folder)
    (folder / "ids.tsv").write_text("e3\tp3\ne1\tp1\n")
    config(folder, "langchain", [0.9, 0.5, 0.1], id_map="ids.tsv")
    assert main(["validate", "run.yaml"]) == 0
    assert not (folder / "factory.called").exists()


def test_the_report_says_when_an_answer_mixed_scored_and_scoreless_hits():
    """report.md said "the target gave no scores" only when every hit had none; a mixed answer, ranked by
    order with its scores set aside, was not mentioned."""
    from rag_eval._report.external import _problems

    mixed = {"mapping": {"scoreless_hits": 125, "ranked_by_order": 25, "mixed_scores": 25}}
    assert _problems("x", mixed) == [
        "- **x**: 25 answers mixed scored hits with 125 hits without a score: those answers were ranked in the order "
        "the target returned them, their scores set aside."
    ]
    none = {"mapping": {"scoreless_hits": 30, "ranked_by_order": 3, "mixed_scores": 0}}
    assert _problems("x", none) == ["- **x**: the target gave no scores (30 hits): ranked in the order it returned them."]
