"""``adapter: langchain``, ``llamaindex`` and ``haystack`` against the real frameworks, with in-memory stores.

The stores are built by the example factories of configs/integrations/frameworks.py, embedding with
rag_eval's own encoder and cache (the embedding bridge). The reference is ``adapter: dense``'s exact
ranking of datasets/ocean_facts.yaml, computed in this module with the same model: each framework must
rank the same passages in the same order, with scores within 1e-5, however its hits are mapped.
Bad input (a factory that is no function of the team's, one that raises, a metadata field the store
lacks) is tested through the command line: exit code 2, one line, nothing written, nothing called.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # before haystack is first imported

import numpy as np
import pytest
import yaml
from conftest import REPO

from rag_eval import ranked_ids
from rag_eval._core.errors import RetrieverError
from rag_eval._core.plugins import config_folder, import_target
from rag_eval._data.datasets import load_dataset
from rag_eval._data.datasets.model import passage_text
from rag_eval._retrievers.dense import DenseRetriever
from rag_eval._retrievers.external.embedding_bridge import EmbeddingBridge, document_text
from rag_eval._retrievers.external.haystack import HaystackRetriever
from rag_eval._retrievers.external.langchain import LangChainRetriever
from rag_eval._retrievers.external.llamaindex import LlamaIndexRetriever
from rag_eval.cli import main

OCEAN = REPO / "datasets" / "ocean_facts.yaml"
FRAMEWORKS = REPO / "configs" / "integrations"
TOP_K = 10
MODEL = "all-MiniLM-L6-v2"

# adapter -> (retriever class, example factory, the package it needs)
CASES: dict[str, tuple[Any, str, str]] = {
    "langchain": (LangChainRetriever, "frameworks:build_langchain_store", "langchain_core"),
    "llamaindex": (LlamaIndexRetriever, "frameworks:build_llamaindex_index", "llama_index.core"),
    "haystack": (HaystackRetriever, "frameworks:build_haystack_pipeline", "haystack"),
}


def need(adapter: str) -> None:
    pytest.importorskip(CASES[adapter][2], reason=f"adapter {adapter} needs {CASES[adapter][2]} installed")


@pytest.fixture(scope="module")
def ocean(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """Ocean facts, and dense's exact ranking of it; the embedding cache the stores are then filled from."""
    dataset = load_dataset({"path": str(OCEAN)})
    cache = tmp_path_factory.mktemp("embeddings")
    dense = DenseRetriever(model=MODEL, cache_dir=str(cache), device="cpu", show_progress=False)
    dense.index(dataset.corpus)
    ranking = dense.search(dataset.query_texts(), TOP_K)
    return SimpleNamespace(corpus=dataset.corpus, queries=dataset.query_texts(), cache=cache, dense=ranking, model=dense)


def framework(
    adapter: str, cache: Path, dataset: Path = OCEAN, factory: str | None = None, folder: Path = FRAMEWORKS, **params: Any
) -> Any:
    """The adapter on its example factory, built as the runner builds it (the config's ``folder`` on the path)."""
    need(adapter)
    cls, example, _ = CASES[adapter]
    extra = params.pop("factory_params", {})
    with config_folder(folder):
        return cls(
            factory=factory or example,
            factory_params={"dataset": str(dataset), "cache_dir": str(cache), **extra},
            **params,
        )


def run(retriever: Any, corpus: Any, queries: Any, top_k: int = TOP_K) -> dict[str, dict[str, float]]:
    try:
        retriever.index(corpus)
        return retriever.search(queries, top_k)  # type: ignore[no-any-return]
    finally:
        retriever.close()


def assert_same_as_dense(got: dict[str, dict[str, float]], dense: dict[str, dict[str, float]]) -> float:
    """Same passages in the same order for every query; returns the largest score difference."""
    assert set(got) == set(dense)
    worst = 0.0
    for qid in dense:
        assert ranked_ids(got[qid]) == ranked_ids(dense[qid]), qid
        worst = max(worst, *(abs(got[qid][pid] - dense[qid][pid]) for pid in dense[qid]))
    assert worst < 1e-5
    return worst


# ---- the ranking is dense's ----------------------------------------------------------------------------


# LangChain's example stores "<title> <text>" as page_content (what it embeds): its text mapping is tested on
# untitled passages below.
WAYS = [(adapter, way) for way in ("metadata", "own id", "text") for adapter in CASES if (adapter, way) != ("langchain", "text")]


@pytest.mark.parametrize(("adapter", "way"), WAYS)
def test_a_store_built_with_the_bridge_ranks_as_dense(ocean, adapter, way):
    mapping = {"metadata": {"passage_id": "passage_id"}, "own id": {"passage_id": "@id"}, "text": {"text": True}}[way]
    retriever = framework(adapter, ocean.cache, map=mapping)
    got = run(retriever, ocean.corpus, ocean.queries)
    worst = assert_same_as_dense(got, ocean.dense)
    info = retriever.describe()
    hits = len(ocean.queries) * TOP_K
    assert info["mapping"]["hits"] == info["mapping"]["mapped"] == hits
    assert info["mapping"]["scoreless_hits"] == 0 and info["short_answers"] == 0 and info["unsorted_answers"] == 0
    assert info["adapter"] == adapter and info["factory"] == CASES[adapter][1]
    assert info["framework"] and next(iter(info["framework"].values()))  # the installed version
    assert info["latency"]["queries"] == len(ocean.queries)
    print(f"{adapter} by {way}: largest |score - dense| = {worst:.2e}, p50 {info['latency']['p50_ms']} ms/query")


def test_langchain_text_mapping_on_untitled_passages(ocean, tmp_path):
    """page_content is what LangChain embeds: passages without a title map by their text, and rank as dense."""
    untitled = {pid: {"title": "", "text": passage_text(p)} for pid, p in ocean.corpus.items()}
    path = tmp_path / "untitled.yaml"
    path.write_text(yaml.safe_dump({"corpus": [{"id": pid, **p} for pid, p in untitled.items()]}))
    got = run(framework("langchain", ocean.cache, dataset=path, map={"text": True}), untitled, ocean.queries)
    assert_same_as_dense(got, ocean.dense)  # the same strings embedded: dense's numbers


def test_the_bridge_gives_dense_vectors_read_or_encoded(ocean):
    """From the shared cache: dense's vectors bit for bit; encoded afresh (no cache): within float32 rounding."""
    ids = sorted(ocean.corpus)
    texts = [passage_text(ocean.corpus[pid]) for pid in ids]
    shared = EmbeddingBridge(model=MODEL, cache_dir=str(ocean.cache), device="cpu")
    assert np.array_equal(shared.embed_passages(texts), ocean.model._embeddings)
    assert shared.counts == {"passages": len(ids), "passages_encoded": 0, "queries": 0, "queries_encoded": 0}
    fresh = EmbeddingBridge(model=MODEL, use_cache=False, device="cpu")
    vectors = fresh.embed_passages(texts)
    assert fresh.counts["passages_encoded"] == len(ids)
    assert np.abs(vectors - ocean.model._embeddings).max() < 1e-5
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    query = ocean.queries["q-largest-ocean"]
    scores = fresh.embed_queries([query])[0] @ vectors.T
    assert abs(float(scores.max()) - max(ocean.dense["q-largest-ocean"].values())) < 1e-5
    # Haystack's rule (meta values, then content) gives dense's text; blank or absent values are left out
    assert document_text("The text.", {"title": " Pacific Ocean "}, ["title"], " ") == "Pacific Ocean The text."
    assert document_text("The text.", {"title": None, "x": ""}, ["title", "x", "y"], " ") == "The text."


def test_langchain_retriever_without_scores_is_ranked_by_its_order(ocean):
    """as_retriever(k=4) gives no scores: ranked by order (10, 9, ... 1), said so; k is passed per call."""
    retriever = framework("langchain", ocean.cache, map={"passage_id": "passage_id"},
                          factory_params={"as_retriever": True, "k": 4})
    got = run(retriever, ocean.corpus, ocean.queries)
    for qid in ocean.dense:
        assert ranked_ids(got[qid]) == ranked_ids(ocean.dense[qid])
        assert sorted(got[qid].values(), reverse=True) == [float(TOP_K - n) for n in range(TOP_K)]
    info = retriever.describe()
    assert info["kind"] == "vector_store_retriever" and info["scores"].startswith("rank order")
    assert info["mapping"]["scoreless_hits"] == info["mapping"]["hits"] == len(ocean.queries) * TOP_K
    assert info["short_answers"] == 0  # top_k (10) reached the retriever, not its own k=4


def test_llamaindex_calls_no_llm_and_leaves_settings_alone(ocean):
    need("llamaindex")
    from llama_index.core import Settings

    run(framework("llamaindex", ocean.cache, map={"passage_id": "passage_id"}), ocean.corpus, ocean.queries)
    retriever = framework("llamaindex", ocean.cache, map={"text": True}, factory_params={"as_retriever": True})
    assert_same_as_dense(run(retriever, ocean.corpus, ocean.queries), ocean.dense)
    assert retriever.describe()["kind"] == "retriever"
    # never resolved: no default LLM and no default (OpenAI) embedding model was asked for
    assert Settings._llm is None and Settings._embed_model is None


def test_llamaindex_nodes_embed_dense_text(ocean):
    need("llamaindex")
    from llama_index.core.schema import MetadataMode

    with config_folder(FRAMEWORKS):
        build = import_target("frameworks:build_llamaindex_index", "test")
    index = build(str(OCEAN), cache_dir=str(ocean.cache))
    nodes = index.docstore.docs
    assert len(nodes) == len(ocean.corpus)
    for pid, node in nodes.items():
        assert node.get_content(MetadataMode.EMBED) == passage_text(ocean.corpus[pid])
        assert node.get_content() == ocean.corpus[pid]["text"]


def test_haystack_sockets_are_found_and_checked(ocean):
    retriever = framework("haystack", ocean.cache, map={"passage_id": "passage_id"})
    run(retriever, ocean.corpus, ocean.queries)
    info = retriever.describe()
    assert (info["input"], info["top_k_input"], info["output"]) == ("embedder.text", "retriever.top_k", "retriever.documents")
    wrong = framework("haystack", ocean.cache, map={"passage_id": "passage_id"}, input="embeder.text")
    with pytest.raises(RetrieverError) as caught:
        wrong.index(ocean.corpus)
    assert str(caught.value) == (
        "haystack: params.input 'embeder.text' is not an open input of the pipeline built by "
        "'frameworks:build_haystack_pipeline'; set it to one of: embedder.text, retriever.filters, retriever.top_k, "
        "retriever.scale_score, retriever.return_embedding"
    )


def test_haystack_component_and_a_store_returning_distances(ocean, tmp_path):
    """A lone component is called run(query=..., top_k=...); a LangChain store of distances is refused, then negated."""
    need("haystack")
    need("langchain")
    (tmp_path / "team_factories.py").write_text(
        "from haystack import Document\n"
        "from haystack.components.retrievers.in_memory import InMemoryBM25Retriever\n"
        "from haystack.document_stores.in_memory import InMemoryDocumentStore\n"
        "from langchain_core.vectorstores import InMemoryVectorStore\n"
        "import frameworks\n\n"
        "def bm25(dataset, cache_dir=None):\n"
        "    store = InMemoryDocumentStore()\n"
        "    store.write_documents([Document(id=p['id'], content=p['text']) for p in frameworks.read_passages(dataset)])\n"
        "    return InMemoryBM25Retriever(document_store=store)\n\n"
        "class DistanceStore(InMemoryVectorStore):\n"
        "    def similarity_search_with_score(self, query, k=4, **kwargs):\n"
        "        return [(doc, 1.0 - score) for doc, score in super().similarity_search_with_score(query, k, **kwargs)]\n\n"
        "def distances(dataset, cache_dir=None):\n"
        "    built = frameworks.build_langchain_store(dataset, cache_dir=cache_dir)\n"
        "    store = DistanceStore(embedding=built.embeddings)\n"
        "    store.store = built.store\n"
        "    return store\n"
    )
    shutil.copy(FRAMEWORKS / "frameworks.py", tmp_path / "frameworks.py")
    component = framework("haystack", ocean.cache, factory="team_factories:bm25", folder=tmp_path, map={"passage_id": "@id"})
    got = run(component, ocean.corpus, ocean.queries)
    info = component.describe()
    assert info["kind"] == "component" and (info["input"], info["top_k_input"], info["output"]) == ("query", "top_k", "documents")
    lengths = [len(got[qid]) for qid in ocean.queries]
    assert max(lengths) == TOP_K and info["mapping"]["unmapped"] == 0  # top_k reached it (its default is 10 too)
    assert info["short_answers"] == sum(n < TOP_K for n in lengths)  # BM25 leaves out passages sharing no word
    print("haystack BM25 component: hits per query", lengths)
    with config_folder(tmp_path):
        direct = import_target("team_factories:bm25", "test")(str(OCEAN))
    for qid, text in ocean.queries.items():  # what the component itself answers, with its scores as given
        assert got[qid] == {doc.id: doc.score for doc in direct.run(query=text, top_k=TOP_K)["documents"]}

    as_given = framework("langchain", ocean.cache, factory="team_factories:distances", folder=tmp_path,
                         map={"passage_id": "@id"})
    negated = framework("langchain", ocean.cache, factory="team_factories:distances", folder=tmp_path,
                        map={"passage_id": "@id"}, scores="distance")
    with pytest.raises(RetrieverError, match=r"its scores are distances \(lower = better\); set params.scores: distance"):
        run(as_given, ocean.corpus, ocean.queries)
    got = run(negated, ocean.corpus, ocean.queries)
    # -(1 - cos) = cos - 1: dense's order, and its scores less one
    assert_same_as_dense({q: {p: s + 1.0 for p, s in r.items()} for q, r in got.items()}, ocean.dense)


def test_a_factory_of_the_wrong_kind_or_a_target_that_fails_gives_one_line(ocean, tmp_path):
    need("langchain")
    (tmp_path / "wrong_kind.py").write_text(
        "from langchain_core.retrievers import BaseRetriever\n\n"
        "class Broken(BaseRetriever):\n"
        "    def _get_relevant_documents(self, query, *, run_manager):\n"
        "        raise ConnectionError('index server at 10.0.0.9 refused the connection')\n\n"
        "def build(dataset, cache_dir=None):\n    return {'not': 'a store'}\n\n"
        "def broken(dataset, cache_dir=None):\n    return Broken()\n"
    )
    retriever = framework("langchain", ocean.cache, factory="wrong_kind:build", folder=tmp_path, map={"text": True})
    with pytest.raises(RetrieverError) as caught:
        retriever.index(ocean.corpus)
    assert str(caught.value) == (
        "langchain: params.factory 'wrong_kind:build' returned an object of type dict, not a LangChain VectorStore "
        "or BaseRetriever; return a LangChain VectorStore or BaseRetriever"
    )
    retriever = framework("langchain", ocean.cache, factory="wrong_kind:broken", folder=tmp_path, map={"text": True})
    with pytest.raises(RetrieverError) as caught:
        run(retriever, ocean.corpus, ocean.queries)
    assert str(caught.value) == (
        "langchain: the wrong_kind.Broken built by params.factory 'wrong_kind:broken' raised ConnectionError: index "
        "server at 10.0.0.9 refused the connection while answering a query"
    )


# ---- through the command line --------------------------------------------------------------------------


MARKER_MODULE = """\
from pathlib import Path

MARK = Path(__file__).with_name("called.txt")


def build(**kwargs):
    MARK.write_text("called")
    raise ValueError("the store at /nowhere cannot be opened")


class Builder:
    def __init__(self, **kwargs):
        MARK.write_text("called")

    @staticmethod
    def make(**kwargs):
        MARK.write_text("called")
        raise ValueError("static factory called")
"""

# A package as pip installs it (a folder named site-packages): its functions are a library's, never called.
INSTALLED_MODULE = """\
from pathlib import Path

from rag_eval.extend import retriever_factory


def save(obj=None, f=None):
    Path(f).write_text("called")


@retriever_factory
def declared(f=None):
    Path(f).write_text("called")
    raise ValueError("declared factory called")
"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A config folder with the example factories and a factory module that leaves a mark when called."""
    folder = tmp_path_factory.mktemp("configs")
    shutil.copy(FRAMEWORKS / "frameworks.py", folder / "frameworks.py")
    (folder / "marker_factory.py").write_text(MARKER_MODULE)
    yield folder


def write_config(folder: Path, retrievers: list[dict[str, Any]], cache: Path, name: str = "run.yaml") -> Path:
    config = {
        "name": "frameworks",
        "dataset": {"path": str(OCEAN)},
        "retrievers": retrievers,
        "metrics": ["ndcg@10", "recall@10"],
        "top_k": TOP_K,
        "cache_dir": str(cache),
        "output": "out",
    }
    path = folder / name
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def langchain_spec(factory: str, cache: Path, **params: Any) -> dict[str, Any]:
    return {
        "label": "lc",
        "adapter": "langchain",
        "params": {"factory": factory, "factory_params": {"dataset": str(OCEAN), "cache_dir": str(cache)}, **params},
    }


@pytest.mark.parametrize(
    ("factory", "factory_params", "said"),
    [
        ("os:system", {"command": "touch {folder}/called.txt"}, "is the built-in function posix.system, not a plain function"),
        ("shutil:rmtree", {"path": "{folder}/victim"}, "is the standard-library function shutil.rmtree, not a factory of yours"),
        ("subprocess:getoutput", {"cmd": "touch {folder}/called.txt"}, "is the standard-library function subprocess.getoutput"),
        ("marker_factory:Builder", {}, "is the class marker_factory.Builder, not a plain function"),
    ],
)
def test_validate_refuses_what_is_not_a_team_function_and_calls_nothing(workspace, tmp_path, capsys, factory, factory_params, said):
    need("langchain")
    if factory == "os:system" and os.name != "posix":
        pytest.skip("os.system is posix.system here")
    (workspace / "victim").mkdir(exist_ok=True)
    spec = {"label": "lc", "adapter": "langchain", "params": {
        "factory": factory,
        "factory_params": {key: value.format(folder=workspace) for key, value in factory_params.items()},
        "map": {"passage_id": "passage_id"},
    }}
    config = write_config(workspace, [spec], tmp_path, name="refused.yaml")
    assert main(["validate", str(config)]) == 2
    out = capsys.readouterr()
    lines = [line for line in (out.out + out.err).splitlines() if "params.factory" in line]
    assert len(lines) == 1 and f"params.factory: {factory!r} {said}" in lines[0] and "so it was not called" in lines[0]
    assert not (workspace / "called.txt").exists() and (workspace / "victim").is_dir()


def test_validate_checks_a_team_function_without_calling_it(workspace, tmp_path, capsys):
    need("langchain")
    ok = write_config(workspace, [langchain_spec("marker_factory:build", tmp_path, map={"passage_id": "passage_id"})],
                      tmp_path, name="ok.yaml")
    assert main(["validate", str(ok)]) == 0
    assert not (workspace / "called.txt").exists()  # resolved and checked, never called
    unknown = write_config(
        workspace, [langchain_spec("frameworks:build_langchain_store", tmp_path, map={"text": True})], tmp_path, name="bad.yaml",
    )
    spec = yaml.safe_load(unknown.read_text())
    spec["retrievers"][0]["params"]["factory_params"]["chache_dir"] = "x"
    unknown.write_text(yaml.safe_dump(spec))
    capsys.readouterr()
    assert main(["validate", str(unknown)]) == 2
    out = capsys.readouterr()
    assert "params.factory_params: frameworks.build_langchain_store() cannot take them: got an unexpected keyword " \
        "argument 'chache_dir'; it takes: dataset, model, cache_dir, as_retriever, k" in out.out + out.err


def test_run_of_a_factory_that_raises_says_so_on_one_line(workspace, tmp_path, capsys):
    need("langchain")
    config = write_config(workspace, [langchain_spec("marker_factory:build", tmp_path, map={"passage_id": "passage_id"})],
                          tmp_path, name="raises.yaml")
    try:
        assert main(["run", str(config), "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("rag-eval: error: ")
        assert "params.factory 'marker_factory:build' raised ValueError: the store at /nowhere cannot be opened" in err
        assert not (workspace / "out").exists()
    finally:
        (workspace / "called.txt").unlink(missing_ok=True)


def test_run_with_a_metadata_field_the_store_lacks_maps_nothing_and_stops(workspace, ocean, capsys):
    need("langchain")
    spec = langchain_spec("frameworks:build_langchain_store", ocean.cache, map={"passage_id": "source_id"})
    config = write_config(workspace, [spec], ocean.cache, name="unmapped.yaml")
    assert main(["run", str(config), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "langchain: none of the 100 hits maps to a passage or document of the dataset (map tries passage_id; " \
        "first hit: metadata has no 'source_id')" in err
    assert not (workspace / "out").exists()


def e2e_config(workspace: Path, cache: Path, adapters: list[str], name: str) -> Path:
    """dense and the adapters' example stores, each mapped by its metadata field."""
    retrievers: list[dict[str, Any]] = [{"label": "dense", "adapter": "dense", "params": {"model": MODEL, "device": "cpu"}}]
    for adapter in adapters:
        need(adapter)
        retrievers.append({"label": adapter, "adapter": adapter, "params": {
            "factory": CASES[adapter][1],
            "factory_params": {"dataset": str(OCEAN), "cache_dir": str(cache)},
            "map": {"passage_id": "passage_id"},
        }})
    return write_config(workspace, retrievers, cache, name=name)


def assert_outputs_equal_dense(out: Path, adapters: list[str], printed: str) -> None:
    """Each adapter's results file: dense's rankings (ids in order) and dense's metrics, query by query."""
    dense = json.loads((out / "dense.json").read_text())
    for adapter in adapters:
        doc = json.loads((out / f"{adapter}.json").read_text())
        assert doc["rankings"].keys() == dense["rankings"].keys()
        for qid, ranking in dense["rankings"].items():
            assert [row[0] for row in doc["rankings"][qid]] == [row[0] for row in ranking], (adapter, qid)
        for qid, metrics in dense["results"]["per_query"].items():
            for name, value in metrics.items():
                assert doc["results"]["per_query"][qid][name] == pytest.approx(value, abs=1e-12), (adapter, qid, name)
        description = doc["retriever"]["description"]
        assert description["adapter"] == adapter and description["mapping"]["unmapped"] == 0
    scores = {line.split("\t")[0]: line.split("\t")[2] for line in printed.splitlines() if line.count("\t") >= 2}
    assert {scores[adapter] for adapter in adapters} == {scores["dense"]}


def test_rag_eval_run_end_to_end_langchain_equals_dense(workspace, ocean):
    """The console script on a YAML config (a fresh process): langchain's results are dense's."""
    config = e2e_config(workspace, ocean.cache, ["langchain"], "e2e.yaml")
    executable = Path(sys.executable).parent / "rag-eval"
    result = subprocess.run([str(executable), "run", str(config), "--output", "e2e", "--no-progress"],
                            capture_output=True, text=True, timeout=180, cwd=workspace,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stderr
    assert_outputs_equal_dense(workspace / "e2e", ["langchain"], result.stdout)


def test_rag_eval_run_llamaindex_and_haystack_equal_dense(workspace, ocean, capsys):
    config = e2e_config(workspace, ocean.cache, ["llamaindex", "haystack"], "e2e_more.yaml")
    assert main(["run", str(config), "--output", str(workspace / "e2e_more"), "--no-progress"]) == 0
    assert_outputs_equal_dense(workspace / "e2e_more", ["llamaindex", "haystack"], capsys.readouterr().out)


def _one_line_run(config: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(["run", str(config), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    packages = tmp_path / "venv" / "lib" / "site-packages"
    (packages / "library_pkg").mkdir(parents=True)
    (packages / "library_pkg" / "__init__.py").write_text(INSTALLED_MODULE)
    monkeypatch.syspath_prepend(str(packages))
    yield packages
    for name in [name for name in sys.modules if name.startswith("library_pkg")]:
        del sys.modules[name]


def test_a_third_party_function_is_refused_and_never_called(workspace, tmp_path, installed, capsys):
    need("langchain")
    victim = tmp_path / "written_by_library.txt"
    spec = {"label": "lc", "adapter": "langchain", "params": {
        "factory": "library_pkg:save", "factory_params": {"obj": 1, "f": str(victim)}, "map": {"passage_id": "pid"}}}
    config = write_config(workspace, [spec], tmp_path, name="library.yaml")
    err = _one_line_run(config, capsys)
    assert "params.factory: 'library_pkg:save' is an installed package's function library_pkg.save, not a factory of " \
        "yours, so it was not called" in err and "@rag_eval.extend.retriever_factory" in err, err
    assert not victim.exists()
    capsys.readouterr()
    assert main(["validate", str(config)]) == 2 and not victim.exists()
    # the same package's function marked @retriever_factory is the team's own: accepted, called by run
    spec["params"].update(factory="library_pkg:declared", factory_params={"f": str(victim)})
    err = _one_line_run(write_config(workspace, [spec], tmp_path, name="declared.yaml"), capsys)
    assert "params.factory 'library_pkg:declared' raised ValueError: declared factory called" in err and victim.exists()


def test_torch_save_is_refused_and_never_called(workspace, tmp_path, capsys):
    need("langchain")
    pytest.importorskip("torch")
    victim = tmp_path / "written_by_torch.pt"
    spec = {"label": "lc", "adapter": "langchain", "params": {
        "factory": "torch:save", "factory_params": {"obj": 1, "f": str(victim)}, "map": {"passage_id": "pid"}}}
    err = _one_line_run(write_config(workspace, [spec], tmp_path, name="torch.yaml"), capsys)
    assert "params.factory: 'torch:save' is an installed package's function torch.serialization.save, not a factory " \
        "of yours, so it was not called" in err, err
    assert not victim.exists() and not (workspace / "out").exists()


def test_a_static_method_of_the_teams_class_beside_the_config_is_a_factory(workspace, tmp_path, capsys):
    need("langchain")
    spec = {"label": "lc", "adapter": "langchain",
            "params": {"factory": "marker_factory:Builder.make", "map": {"passage_id": "pid"}}}
    config = write_config(workspace, [spec], tmp_path, name="static.yaml")
    try:
        capsys.readouterr()
        assert main(["validate", str(config)]) == 0 and not (workspace / "called.txt").exists()
        err = _one_line_run(config, capsys)
        assert "params.factory 'marker_factory:Builder.make' raised ValueError: static factory called" in err, err
    finally:
        (workspace / "called.txt").unlink(missing_ok=True)
