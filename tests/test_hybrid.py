"""The hybrid adapter: RRF and weighted fusion checked against sums worked out by hand."""

from __future__ import annotations

import json
import math

import _models
import pytest

from rag_eval._core.errors import RetrieverError
from rag_eval._retrievers import registry
from rag_eval._retrievers.hybrid import normalize

CORPUS = {d: {"title": "", "text": f"passage {d}"} for d in "abcdexy"}


def fixed(run: dict, weight: float | None = None) -> dict:
    spec = {"adapter": "_models:FixedRetriever", "params": {"run": run}}
    if weight is not None:
        spec["weight"] = weight
    return spec


def hybrid(*children, **params):
    retriever = registry.build("hybrid", {"retrievers": list(children), **params})
    retriever.index(CORPUS)
    return retriever


A = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
B = {"q": {"c": 0.9, "d": 0.8, "a": 0.1}}


def test_rrf_by_hand():
    run = hybrid(fixed(A), fixed(B)).search({"q": "?"}, top_k=10)["q"]
    # A ranks a=1 b=2 c=3; B ranks c=1 d=2 a=3; k = 60
    want = {"a": 1 / 61 + 1 / 63, "b": 1 / 62, "c": 1 / 63 + 1 / 61, "d": 1 / 62}
    assert run == pytest.approx(want, abs=1e-15)
    # a and c tie exactly, b and d tie exactly: doc id descending breaks ties
    assert list(run) == ["c", "a", "d", "b"]


def test_weighted_rrf_and_k():
    run = hybrid(fixed(A, weight=2), fixed(B, weight=0.5), k=1).search({"q": "?"}, top_k=2)["q"]
    want = {"a": 2 / 2 + 0.5 / 4, "b": 2 / 3, "c": 2 / 4 + 0.5 / 2, "d": 0.5 / 3}
    assert run == pytest.approx({"a": want["a"], "c": want["c"]})
    assert list(run) == ["a", "c"]


def test_rrf_ranks_ties_inside_a_child_by_doc_id_descending():
    tied = {"q": {"x": 1.0, "y": 1.0, "a": 0.5}}
    run = hybrid(fixed(tied), fixed({"q": {}})).search({"q": "?"}, top_k=3)["q"]
    assert run == pytest.approx({"y": 1 / 61, "x": 1 / 62, "a": 1 / 63})


def test_minmax_by_hand():
    left = {"q": {"a": 10.0, "b": 6.0, "c": 2.0}}
    right = {"q": {"b": 0.3, "d": 0.1}}
    run = hybrid(fixed(left), fixed(right, weight=3), method="weighted").search({"q": "?"}, top_k=10)["q"]
    # left: a=(10-2)/8=1, b=(6-2)/8=0.5, c=0; right: b=1, d=0; absent = 0
    want = {"a": 1 + 3 * 0, "b": 0.5 + 3 * 1, "c": 0 + 3 * 0, "d": 0 + 3 * 0}
    assert run == pytest.approx(want)
    assert list(run) == ["b", "a", "d", "c"]


def test_minmax_of_a_one_document_list_is_one():
    run = hybrid(fixed({"q": {"a": 5.0, "b": 1.0}}), fixed({"q": {"b": 42.0}}), method="weighted").search(
        {"q": "?"}, 10
    )["q"]
    assert run == pytest.approx({"a": 1.0, "b": 0.0 + 1.0})
    assert list(run) == ["b", "a"]  # 1.0 each, doc id descending


def test_zscore_by_hand():
    left = {"q": {"a": 3.0, "b": 1.0, "c": 2.0}}
    right = {"q": {"b": 4.0, "d": 0.0}}
    run = hybrid(fixed(left), fixed(right), method="weighted", normalization="zscore").search({"q": "?"}, 10)["q"]
    # left: mean 2, population std sqrt(2/3); right: mean 2, std 2
    s = math.sqrt(2 / 3)
    za, zb, zc = 1 / s, -1 / s, 0.0
    zb_r, zd_r = 1.0, -1.0
    # an absent document takes that child's lowest z-score: left -1/s, right -1
    want = {"a": za + zd_r, "b": zb + zb_r, "c": zc + zd_r, "d": zb + zd_r}
    assert run == pytest.approx(want)
    assert list(run) == ["a", "b", "c", "d"]


def test_normalize_edge_cases():
    assert normalize({}, "minmax") == ({}, 0.0)
    assert normalize({"a": 2.0, "b": 2.0}, "zscore") == ({"a": 0.0, "b": 0.0}, 0.0)
    assert normalize({"a": 2.0, "b": 2.0}, "minmax") == ({"a": 1.0, "b": 1.0}, 0.0)
    normed, floor = normalize({"a": 1.0, "b": 2.0, "c": 6.0}, "zscore")
    assert sum(normed.values()) == pytest.approx(0.0, abs=1e-12)
    assert sum(v * v for v in normed.values()) / 3 == pytest.approx(1.0)
    assert floor == normed["a"]


def test_depth_asked_of_each_child():
    retriever = hybrid(fixed(A), fixed(B))
    retriever.search({"q": "?"}, 10)
    retriever.search({"q": "?"}, 250)
    assert [child.calls for child in retriever.children] == [[100, 250], [100, 250]]
    shallow = hybrid(fixed(A), fixed(B), candidates=5)
    shallow.search({"q": "?"}, 2)
    shallow.search({"q": "?"}, 8)
    assert shallow.children[0].calls == [5, 8]  # candidates, never fewer than top_k


def test_only_each_childs_top_candidates_take_part():
    # A child returning more than asked is cut to its own best `candidates`
    greedy = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}

    class Greedy(_models.FixedRetriever):
        def search(self, queries, top_k):
            return {q: dict(self.run.get(q, {})) for q in queries}

    retriever = hybrid(fixed(greedy), fixed({"q": {"d": 1.0}}), candidates=2)
    retriever.children[0] = Greedy(greedy)
    run = retriever.search({"q": "?"}, top_k=2)["q"]
    assert "c" not in run and run == pytest.approx({"a": 1 / 61, "d": 1 / 61})


def test_queries_missing_from_a_child():
    run = hybrid(fixed(A), fixed({})).search({"q": "?", "empty": "?"}, 2)
    assert run["empty"] == {}
    assert run["q"] == pytest.approx({"a": 1 / 61, "b": 1 / 62})


def test_three_children_with_the_tiny_dense_model_and_a_plugin(tmp_path):
    tiny = _models.tiny_bi_encoder()
    dense_spec = {"adapter": "dense", "params": {"model": str(tiny), "show_progress": False, "device": "cpu"}}
    overlap_spec = {"adapter": "_models:OverlapRetriever"}
    corpus = {
        "p1": {"title": "", "text": "the pacific is the largest ocean"},
        "p2": {"title": "", "text": "the atlantic ocean is salt water"},
        "p3": {"title": "", "text": "coral reef fish"},
    }
    queries = {"q": "largest ocean"}
    retriever = registry.build(
        "hybrid",
        {"retrievers": [dense_spec, overlap_spec, fixed({"q": {"p3": 1.0}})], "cache_dir": str(tmp_path), "k": 10},
    )
    assert retriever.children[0].cache_dir == tmp_path  # passed down: dense takes a cache_dir
    retriever.index(corpus)
    fused = retriever.search(queries, 3)["q"]

    # recompute each child's own ranking and fuse by hand
    want: dict[str, float] = {}
    for child in retriever.children:
        ranking = sorted(child.search(queries, 100)["q"].items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
        for rank, (doc, _) in enumerate(ranking, start=1):
            want[doc] = want.get(doc, 0.0) + 1 / (10 + rank)
    assert fused == pytest.approx(want)
    described = retriever.describe()
    json.dumps(described)
    adapters = [c["adapter"] for c in described["retrievers"]]
    assert adapters == ["dense", "_models:OverlapRetriever", "_models:FixedRetriever"]
    assert described["retrievers"][0]["description"]["cache"] == "miss"


@pytest.mark.parametrize(
    "params, message",
    [
        ({"retrievers": [fixed(A)]}, "params.retrievers: must list two or more retrievers to fuse, got 1"),
        ({"retrievers": None}, "params.retrievers: must be a valid list, got None"),
        ({"method": "sum"}, "params.method: must be 'rrf' or 'weighted', got 'sum'"),
        ({"normalization": "l2"}, "params.normalization: must be 'minmax' or 'zscore', got 'l2'"),
        ({"k": -1}, "params.k: must be greater than or equal to 0, got -1"),
        ({"candidates": 0}, "params.candidates: must be greater than or equal to 1, got 0"),
        ({"retrievers": [fixed(A), {"params": {}}]}, "params.retrievers[1].adapter: required field is missing"),
        (
            {"retrievers": [fixed(A), {**fixed(B), "wieght": 2}]},
            "params.retrievers[1].wieght: unknown key; did you mean 'weight'? allowed: adapter, params, weight",
        ),
        (
            {"retrievers": [fixed(A), fixed(B, weight=-1)]},
            "params.retrievers[1].weight: must be greater than or equal to 0",
        ),
        ({"retrievers": [fixed(A, weight=0), fixed(B, weight=0)]}, "params: every weight is 0"),
        ({"retrievers": [fixed(A), {"adapter": "denes"}]}, "[1]: unknown adapter 'denes'; did you mean 'dense'?"),
        ({"retrievers": [fixed(A), "bm25"]}, "params.retrievers[1]: must be a mapping {adapter: ..., params: {...}}"),
        (
            {"retrievers": [fixed(A), {"adapter": "bm25", "params": {"k1": -1}}]},
            "params.retrievers[1].params.k1: must be greater than or equal to 0, got -1",
        ),
        (
            {"retrievers": [fixed(A), {"adapter": "shutil:rmtree", "params": {"path": "/nonexistent"}}]},
            "params.retrievers[1]: adapter 'shutil:rmtree' is the function shutil.rmtree, not a retriever class",
        ),
    ],
)
def test_bad_parameters(params, message):
    spec = {"retrievers": [fixed(A), fixed(B)], **params}
    with pytest.raises(RetrieverError) as caught:
        registry.build("hybrid", spec)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
    with pytest.raises(RetrieverError) as checked:  # found by the check alone, nothing built
        registry.check("hybrid", spec)
    assert message in str(checked.value)


def test_fused_ties_at_the_cut_off_keep_the_greater_doc_ids():
    # x and y get the same fused score from two children: the ranking rule keeps y at k=1.
    left = {"q": {"x": 2.0, "y": 1.0}}
    right = {"q": {"y": 2.0, "x": 1.0}}
    run = hybrid(fixed(left), fixed(right)).search({"q": "?"}, top_k=1)["q"]
    assert run == pytest.approx({"y": 1 / 61 + 1 / 62})
    # a child that returns more than the depth asked: its own cut keeps the greater ids too
    greedy = {"adapter": "_models:GreedyRetriever", "params": {"run": {"q": {d: 1.0 for d in "abcde"}}}}
    retriever = hybrid(greedy, fixed({"q": {}}), candidates=2)
    assert retriever.search({"q": "?"}, top_k=2)["q"] == pytest.approx({"e": 1 / 61, "d": 1 / 62})
