"""The cross_encoder adapter: re-ranking plumbing checked against an independent CrossEncoder."""

from __future__ import annotations

import json

import _models
import pytest

from rag_eval._core.errors import RetrieverError
from rag_eval._data.datasets.model import passage_text
from rag_eval._retrievers import registry

CORPUS = {
    "d1": {"title": "Pacific", "text": "the pacific is the largest ocean"},
    "d2": {"title": "", "text": "the atlantic ocean is salt water"},
    "d3": {"title": "Reef", "text": "coral reef fish live in warm sea"},
    "d4": {"title": "", "text": "a whale is a deep sea mammal"},
    "d5": {"title": "Tides", "text": "the moon drives the tide"},
}
FIRST_STAGE_RUN = {
    "q1": {"d1": 5.0, "d2": 4.0, "d3": 3.0, "d4": 2.0, "d5": 1.0},
    "q2": {"d4": 2.0, "d3": 2.0, "d2": 0.5},  # d4 and d3 tie: doc id desc puts d4 first
}
QUERIES = {"q1": "largest ocean", "q2": "whale in the deep sea", "q3": "nothing"}


@pytest.fixture(scope="module")
def tiny_ce():
    return _models.tiny_cross_encoder()


@pytest.fixture(scope="module")
def reference(tiny_ce):
    """The same cross-encoder loaded independently, returning raw logits."""
    import torch
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(str(tiny_ce), device="cpu")
    return lambda pairs: [float(s) for s in model.predict(pairs, activation_fn=torch.nn.Identity())]


def reranker(model_dir, **params):
    spec = {
        "model": str(model_dir),
        "first_stage": {"adapter": "_models:FixedRetriever", "params": {"run": FIRST_STAGE_RUN}},
        "show_progress": False,
        "device": "cpu",
    }
    spec.update(params)
    return registry.build("cross_encoder", spec)


def test_reranks_the_first_stage_top_n_by_cross_encoder_score(tiny_ce, reference):
    retriever = reranker(tiny_ce, rerank_top_n=3, batch_size=2)
    retriever.index(CORPUS)
    run = retriever.search(QUERIES, top_k=2)
    assert retriever.first_stage.calls == [3]  # asked the first stage for rerank_top_n

    # q1: first stage top 3 are d1, d2, d3; d4 and d5 must never be scored or returned
    q1_docs = ["d1", "d2", "d3"]
    q1 = dict(zip(q1_docs, reference([(QUERIES["q1"], passage_text(CORPUS[d])) for d in q1_docs])))
    want_q1 = sorted(q1.items(), key=lambda kv: kv[1], reverse=True)[:2]
    assert list(run["q1"]) == [d for d, _ in want_q1]
    assert list(run["q1"].values()) == pytest.approx([s for _, s in want_q1], abs=1e-5)
    # q2: three candidates, all within rerank_top_n
    q2_docs = ["d4", "d3", "d2"]
    q2 = dict(zip(q2_docs, reference([(QUERIES["q2"], passage_text(CORPUS[d])) for d in q2_docs])))
    want_q2 = sorted(q2.items(), key=lambda kv: kv[1], reverse=True)[:2]
    assert list(run["q2"]) == [d for d, _ in want_q2]
    assert list(run["q2"].values()) == pytest.approx([s for _, s in want_q2], abs=1e-5)
    # q3: the first stage found nothing, so nothing is re-ranked
    assert run["q3"] == {}
    assert retriever.describe()["pairs_scored"] == 6
    # the reference scores really differ, so the order above is a real check
    assert len({round(s, 4) for s in q1.values()}) == 3


def test_first_stage_ties_at_the_cut_follow_evaluation_order(tiny_ce, reference):
    retriever = reranker(tiny_ce, rerank_top_n=1)
    retriever.index(CORPUS)
    run = retriever.search({"q2": QUERIES["q2"]}, top_k=1)
    # d4 and d3 tie at 2.0 in the first stage; trec_eval order (doc id desc) keeps d4
    assert list(run["q2"]) == ["d4"]
    assert run["q2"]["d4"] == pytest.approx(reference([(QUERIES["q2"], passage_text(CORPUS["d4"]))])[0], abs=1e-5)


def test_top_k_beyond_rerank_depth_warns(tiny_ce):
    retriever = reranker(tiny_ce, rerank_top_n=2)
    retriever.index(CORPUS)
    with pytest.warns(UserWarning, match="top_k=10 exceeds rerank_top_n=2"):
        run = retriever.search({"q1": QUERIES["q1"]}, top_k=10)
    assert len(run["q1"]) == 2


@pytest.mark.parametrize(("answer", "problem"), [
    ({"q": {"ghost": 1.0}}, "query 'q': returned doc 'ghost', which is not in the corpus"),
    # Checked as every retriever's answer is (rag_eval._retrievers.answer_check): these were re-ranked before.
    ({"q": {"d1": float("nan")}}, "query 'q', doc 'd1': score is NaN"),
    ({"q": {"d1": "0.5"}}, "query 'q', doc 'd1': score '0.5' (str) is not a number; return an int or a float"),
    ({"q": {"d1": True}}, "query 'q', doc 'd1': score True (bool) is not a number; return an int or a float"),
])
def test_the_first_stages_answer_is_checked_as_a_retrievers(tiny_ce, answer, problem):
    retriever = registry.build(
        "cross_encoder",
        {
            "model": str(tiny_ce),
            "first_stage": {"adapter": "_models:FixedRetriever", "params": {"run": answer}},
            "show_progress": False,
        },
    )
    retriever.index(CORPUS)
    with pytest.raises(RetrieverError) as caught:
        retriever.search({"q": "x"}, 3)
    assert str(caught.value) == f"cross_encoder: first_stage (_models:FixedRetriever): {problem}"


def test_describe_and_cache_dir_pass_through(tiny_ce, tmp_path):
    retriever = registry.build(
        "cross_encoder",
        {
            "model": str(tiny_ce),
            "first_stage": {"adapter": "_models:OverlapRetriever"},
            "cache_dir": str(tmp_path),
            "show_progress": False,
        },
    )
    assert retriever.first_stage.cache_dir == str(tmp_path)  # it takes a cache_dir and set none
    own = registry.build(
        "cross_encoder",
        {"model": str(tiny_ce), "first_stage": {"adapter": "_models:OverlapRetriever", "params": {"cache_dir": "x"}},
         "cache_dir": str(tmp_path)},
    )
    assert own.first_stage.cache_dir == "x"  # an explicit child setting wins
    fixed = reranker(tiny_ce, cache_dir=str(tmp_path))  # FixedRetriever takes no cache_dir: nothing passed
    assert not hasattr(fixed.first_stage, "cache_dir")

    retriever.index(CORPUS)
    retriever.search({"q": "pacific ocean"}, 2)
    described = retriever.describe()
    json.dumps(described)
    assert described["adapter"] == "cross_encoder" and described["model_source"] == "local"
    assert described["first_stage"] == {"class": "_models:OverlapRetriever"}
    assert described["parameters"]["rerank_top_n"] == 100 and described["pairs_scored"] == 2
    assert described["device"] == "cpu" and len(described["model_identity"]) == 64


@pytest.mark.parametrize(
    "params, message",
    [
        ({"model": None}, "params.model: must be a valid string, got None"),
        ({"first_stage": None}, "params.first_stage: must be a mapping {adapter: ..., params: {...}}, got None"),
        ({"first_stage": "bm25"}, "params.first_stage: must be a mapping {adapter: ..., params: {...}}, got 'bm25'"),
        ({"first_stage": {"params": {}}}, "params.first_stage.adapter: required field is missing"),
        (
            {"first_stage": {"adapter": "bm25", "parms": {}}},
            "params.first_stage.parms: unknown key; did you mean 'params'?",
        ),
        ({"first_stage": {"adapter": "bm25", "params": [1]}}, "params.first_stage.params: must be a valid dictionary"),
        ({"first_stage": {"adapter": "bm26"}}, "params.first_stage: unknown adapter 'bm26'; did you mean 'bm25'?"),
        (
            {"first_stage": {"adapter": "bm25", "params": {"b": 2}}},
            "params.first_stage.params.b: must be less than or equal to 1",
        ),
        ({"rerank_top_n": 0}, "params.rerank_top_n: must be greater than or equal to 1, got 0"),
        ({"max_length": "long"}, "params.max_length: must be a valid integer, got 'long'"),
        ({"device": "tpu"}, "params.device: must be one of auto, cpu, cuda, cuda:N, mps, got 'tpu'"),
        ({"model": "./no/such/reranker"}, "model folder './no/such/reranker' not found"),
    ],
)
def test_bad_parameters(tiny_ce, params, message):
    with pytest.raises(RetrieverError) as caught:
        reranker(tiny_ce, **params)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_model_and_first_stage_are_required():
    with pytest.raises(RetrieverError) as caught:
        registry.check("cross_encoder", {})
    assert caught.value.problems == [
        (
            "params.model: required field is missing (a cross-encoder name such as "
            "cross-encoder/ms-marco-MiniLM-L6-v2, or a local folder)"
        ),
        (
            "params.first_stage: required field is missing (the retriever whose results are re-ranked, "
            "e.g. first_stage: {adapter: bm25, params: {}})"
        ),
    ]


def test_ties_at_the_cut_off_keep_the_greater_doc_id(tiny_ce, monkeypatch):
    # The model scores every pair alike (two identical passages would, up to float noise
    # of batching): the re-ranked cut keeps the greater doc ids, whatever the first stage said.
    first = {"q": {"d1": 5.0, "d2": 4.0, "d3": 3.0}}
    retriever = registry.build(
        "cross_encoder",
        {"model": str(tiny_ce), "first_stage": {"adapter": "_models:FixedRetriever", "params": {"run": first}},
         "show_progress": False, "device": "cpu"},
    )
    retriever.index(CORPUS)
    monkeypatch.setattr(retriever, "_score", lambda pairs: [0.25] * len(pairs))
    assert retriever.search({"q": "largest ocean"}, top_k=2) == {"q": {"d3": 0.25, "d2": 0.25}}


def test_max_length_past_the_position_embeddings_is_refused_when_checked(tiny_ce):
    """issue 20, item 10: a cap longer than the model's 128 position embeddings failed in torch, mid-run."""
    spec = {"model": str(tiny_ce), "first_stage": {"adapter": "bm25"}, "max_length": 100_000}
    with pytest.raises(RetrieverError) as caught:
        registry.check("cross_encoder", spec)
    assert str(caught.value) == (
        f"params.max_length: more than the 128 positions model {str(tiny_ce)!r} has (max_position_embeddings in its "
        "config.json); use at most 128, or remove max_length (default: the model's own), got 100000"
    )
    registry.check("cross_encoder", {**spec, "max_length": 128})
