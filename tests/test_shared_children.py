"""Equal nested retrievers of a run's variants are indexed and searched once, with unchanged numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_eval._data.config import load_config
from rag_eval._retrievers import bm25 as bm25_module
from rag_eval._retrievers.shared_children import SharedChild, shared, sharing
from rag_eval._run.execute import execute

ROOT = Path(__file__).resolve().parents[1]

HYBRID_SWEEP = f"""
name: hybrid-sweep
dataset: {{path: {ROOT / "datasets" / "ocean_facts.yaml"}}}
retrievers:
  - label: hybrid
    adapter: hybrid
    params:
      retrievers:
        - {{adapter: bm25, params: {{k1: 1.2}}}}
        - {{adapter: bm25, params: {{k1: 0.6, b: 0.3}}}}
sweep:
  grid:
    - retriever: hybrid
      params: {{k: [1, 10, 60]}}
top_k: 5
metrics: [ndcg@5, recall@5]
reuse_rankings: false
"""


def _config(tmp_path: Path, text: str):
    path = tmp_path / "run.yaml"
    path.write_text(text, encoding="utf-8")
    return load_config(path)


@pytest.fixture
def index_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    original = bm25_module.BM25Retriever.index

    def counting(self, corpus):  # type: ignore[no-untyped-def]
        calls.append(len(corpus))
        return original(self, corpus)

    monkeypatch.setattr(bm25_module.BM25Retriever, "index", counting)
    return calls


def test_three_fusion_variants_index_each_child_once(tmp_path: Path, index_calls: list[int]) -> None:
    run = execute(_config(tmp_path, HYBRID_SWEEP), progress=False)
    assert [o.spec.label for o in run.outcomes] == ["hybrid.k-1", "hybrid.k-10", "hybrid.k-60"]
    assert len(index_calls) == 2  # two distinct bm25 children, not 3 variants x 2


def test_shared_numbers_equal_each_variant_run_alone(tmp_path: Path) -> None:
    together = execute(_config(tmp_path, HYBRID_SWEEP), progress=False)
    for outcome in together.outcomes:
        k = int(outcome.spec.label.rsplit("-", 1)[1])
        alone_text = HYBRID_SWEEP.split("sweep:")[0].replace("label: hybrid\n", "label: alone\n").replace(
            "      retrievers:\n", f"      k: {k}\n      retrievers:\n"
        ) + "top_k: 5\nmetrics: [ndcg@5, recall@5]\nreuse_rankings: false\n"
        (alone,) = execute(_config(tmp_path, alone_text), progress=False).outcomes
        assert alone.ranking == outcome.ranking
        assert alone.results.per_query == outcome.results.per_query


class _Counting:
    def __init__(self) -> None:
        self.indexed = 0
        self.searched = 0

    def index(self, corpus):  # type: ignore[no-untyped-def]
        self.indexed += 1

    def search(self, queries, top_k):  # type: ignore[no-untyped-def]
        self.searched += 1
        return {qid: {"d1": 1.0, "d2": 0.5} for qid in queries}


def test_shared_child_reuses_index_and_search_and_copies_answers() -> None:
    inner = _Counting()
    child = SharedChild(inner)
    corpus = {"d1": {"text": "a"}, "d2": {"text": "b"}}
    child.index(corpus)
    child.index(dict(corpus))
    first = child.search({"q": "x"}, 10)
    first["q"]["d1"] = -5.0  # a parent changing its copy must not change what the next parent gets
    second = child.search({"q": "x"}, 10)
    assert (inner.indexed, inner.searched) == (1, 1)
    assert second == {"q": {"d1": 1.0, "d2": 0.5}}
    child.search({"q": "x"}, 3)  # another depth: asked again
    child.index({"d1": {"text": "changed"}})  # another corpus: indexed again, answers forgotten
    child.search({"q": "x"}, 10)
    assert (inner.indexed, inner.searched) == (2, 3)
    assert child.reused == {"index": 1, "search": 1}


def test_only_builtins_inside_a_run_are_shared() -> None:
    built: list[object] = []

    def build() -> object:
        built.append(object())
        return built[-1]

    assert shared("bm25", {"k1": 1.0}, build) is built[0]  # outside a run: built, not wrapped
    with sharing():
        a = shared("bm25", {"k1": 1.0}, build)
        b = shared("bm25", {"k1": 1.0}, build)
        c = shared("bm25", {"k1": 2.0}, build)
        plugin = shared("my_module:Mine", {"k1": 1.0}, build)
        plugin_again = shared("my_module:Mine", {"k1": 1.0}, build)
    assert a is b and a is not c and isinstance(a, SharedChild)
    assert plugin is not plugin_again and not isinstance(plugin, SharedChild)
    assert len(built) == 5  # the first, a (= b), c and the two plug-ins


def test_a_hybrid_of_shared_children_keeps_its_ranking_cache_identity() -> None:
    from rag_eval._retrievers import registry
    from rag_eval._retrievers.ranking_cache import components

    params = {"retrievers": [{"adapter": "bm25", "params": {"k1": 1.2}}, {"adapter": "bm25"}]}
    alone = components(registry.build("hybrid", params))
    with sharing():
        hybrid = registry.build("hybrid", params)
        assert all(isinstance(child, SharedChild) for child in hybrid.children)
        assert components(hybrid) == alone is not None
