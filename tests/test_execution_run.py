"""A run with `execution: {engine: ray}` writes the same rankings and numbers as the same run in this process."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import _models
import pytest
from _shards import shorten_every_vector
from conftest import skip_module_without

skip_module_without("ray", "Ray is not installed (pip install '.[ray]')")

from rag_eval._core.errors import RetrieverError  # noqa: E402
from rag_eval._data.config import load_config  # noqa: E402
from rag_eval._models.embeddings.store import EmbeddingStore  # noqa: E402
from rag_eval._run.execute import execute  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _config(tmp_path: Path, model: Path, execution: str, params: str = "") -> object:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "run.yaml"
    path.write_text(
        f"""
name: ocean
dataset: {{path: {ROOT / "datasets" / "ocean_facts.yaml"}}}
retrievers:
  - label: dense
    adapter: dense
    params: {{model: {model}, device: cpu, show_progress: false{params}}}
top_k: 5
metrics: [ndcg@5, recall@5, mrr@10]
reuse_rankings: false
cache_dir: {tmp_path / "cache"}
execution: {execution}
""",
        encoding="utf-8",
    )
    return load_config(path)


class FakeRay:
    """Stands in for the ``ray`` module: records what a run asks of Ray, and starts nothing."""

    # The installed package's spec and path: a run checks that Ray and Ray Data are installed
    # (importlib.util.find_spec, which reads these from the module in sys.modules) before it connects.
    __spec__ = importlib.util.find_spec("ray")
    __path__ = __spec__.submodule_search_locations

    def __init__(self, running: bool) -> None:
        self.running, self.calls = running, []

    def is_initialized(self) -> bool:
        self.calls.append("is_initialized")
        return self.running

    def init(self, **kwargs) -> None:
        self.calls.append(("init", kwargs["address"]))
        self.running = True

    def shutdown(self) -> None:
        self.calls.append("shutdown")
        self.running = False


def test_a_run_shuts_down_the_cluster_it_started_and_only_that_one(monkeypatch: pytest.MonkeyPatch) -> None:
    # With a fake ray module: a real local cluster takes 5-8 s to start here, and the other tests
    # of this file share one (tests/conftest.py), which a run joins and must leave running.
    from rag_eval._data.config.execution import ExecutionSpec
    from rag_eval._execution.context import executing, ray_spec

    for running, want in [
        (False, ["is_initialized", ("init", "local"), "shutdown"]),  # started here: shut down at the end
        (True, ["is_initialized"]),  # joined a running cluster: left running
    ]:
        fake = FakeRay(running)
        monkeypatch.setitem(sys.modules, "ray", fake)
        with executing(ExecutionSpec(engine="ray", address="local")):
            assert fake.calls == []  # nothing is joined before a retriever asks
            assert ray_spec().engine == ray_spec().engine == "ray"  # joined once, however often asked
        assert fake.calls == want
        assert fake.running is running
    fake = FakeRay(False)
    monkeypatch.setitem(sys.modules, "ray", fake)
    with executing(ExecutionSpec(engine="local")):
        assert ray_spec() is None
    assert fake.calls == []


@pytest.mark.ray_state
def test_ray_execution_needs_the_store(tmp_path: Path) -> None:
    model = _models.tiny_bi_encoder()
    config = _config(tmp_path, model, "{engine: ray, address: local, actors: 1}", ", use_cache: false")
    with pytest.raises(RetrieverError, match="needs use_cache: true"):
        execute(config, progress=False)
    import ray

    assert not ray.is_initialized()  # refused before any cluster was started


@pytest.mark.parametrize(
    ("params", "where"),
    [
        (", index: {kind: hnsw}", "retrievers[0](dense).params.index: execution engine ray searches exactly"),
        (", devices: [cpu, cpu]", "retrievers[0](dense).params.devices: execution engine ray runs one encoder actor"),
    ],
)
def test_what_ray_cannot_run_is_refused_by_the_config(tmp_path: Path, params: str, where: str) -> None:
    # Said when the config loads (so by `validate`), not when the retriever first needs to encode.
    from rag_eval._core.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        _config(tmp_path, _models.tiny_bi_encoder(), "{engine: ray}", params)
    assert where in str(caught.value) and "\n" not in str(caught.value)


def test_a_nested_approximate_index_is_refused_with_ray_too(tmp_path: Path) -> None:
    from rag_eval._core.errors import ConfigError

    path = tmp_path / "nested.yaml"
    path.write_text(
        f"""
dataset: {{path: {ROOT / "datasets" / "ocean_facts.yaml"}}}
retrievers:
  - label: fused
    adapter: hybrid
    params:
      retrievers:
        - {{adapter: bm25}}
        - {{adapter: dense, params: {{index: {{kind: ivf}}}}}}
metrics: [ndcg@5]
output: out
execution: {{engine: ray}}
""",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert "retrievers[0](fused).params.retrievers[1].params.index: execution engine ray" in str(caught.value)


def _beir_folder(folder: Path) -> Path:
    """A small BEIR folder with ids as real data has them, a BOM, CRLF endings, titles and a long passage."""
    import json

    folder.mkdir(parents=True)
    words = ["ocean", "salt", "water", "wave", "tide", "current", "reef", "shelf", "trench", "abyss", "coral", "kelp"]
    ids = ["<dbpedia:Pacific_Ocean>", "https://example.org/a?b=1#frag", "docs/guide.md#3-9", "x" * 500, "日本😀", "1"]
    ids += [f"p{n}" for n in range(40)]
    records = []
    for n, doc in enumerate(ids):
        text = " ".join(words[(n * 7 + k) % len(words)] for k in range(5 + n % 9)) + (" long" * 200 if n == 3 else "")
        records.append({"_id": doc, "title": words[n % len(words)] if n % 2 else None, "text": text})
    body = "\r\n".join(json.dumps(record, ensure_ascii=n % 2 == 0) for n, record in enumerate(records)) + "\r\n"
    (folder / "corpus.jsonl").write_bytes(b"\xef\xbb\xbf" + body.encode("utf-8"))
    queries = {f"q{n}": " ".join(words[(n * 5 + k) % len(words)] for k in range(3)) for n in range(8)}
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items()))
    (folder / "qrels").mkdir()
    qrels = "".join(f"q{n}\t{ids[(n * 3) % len(ids)]}\t{1 + n % 2}\nq{n}\t{ids[(n * 5 + 1) % len(ids)]}\t1\n" for n in range(8))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels, encoding="utf-8")
    return folder


def test_on_ray_the_workers_read_the_corpus_file_and_the_numbers_are_those_of_local_execution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ray_cluster
) -> None:
    from rag_eval._data.datasets.file_corpus import FileCorpus
    from rag_eval._execution import ray_engine

    data = _beir_folder(tmp_path / "beir")
    model = _models.tiny_bi_encoder()
    sources: list[object] = []
    original = ray_engine.encode_on_ray

    def recording(source, *args, **kwargs):  # what the driver hands the Ray engine
        sources.append(source)
        return original(source, *args, **kwargs)

    monkeypatch.setattr(ray_engine, "encode_on_ray", recording)
    runs = {}
    for engine in ("local", "ray"):
        execution = "{engine: local}" if engine == "local" else "{engine: ray, address: local, actors: 1, batch_size: 7, shards: 2}"
        path = tmp_path / engine / "run.yaml"
        path.parent.mkdir()
        path.write_text(
            f"""
name: streamed
dataset: {{path: {data}}}
retrievers:
  - {{label: dense, adapter: dense, params: {{model: {model}, device: cpu, show_progress: false, max_seq_length: 32}}}}
top_k: 10
metrics: [ndcg@10, recall@10]
reuse_rankings: false
cache_dir: {tmp_path / engine / "cache"}
execution: {execution}
""",
            encoding="utf-8",
        )
        if engine == "local":
            fake = FakeRay(False)
            with monkeypatch.context() as patch:
                patch.setitem(sys.modules, "ray", fake)  # what the local run asks of Ray: nothing
                runs[engine] = execute(load_config(path), progress=False)
            assert fake.calls == []  # local execution never starts or joins Ray
        else:
            runs[engine] = execute(load_config(path), progress=False)
    assert ray_cluster.is_initialized()  # the run joined the running cluster, and left it running
    local, remote = runs["local"], runs["ray"]
    assert isinstance(remote.dataset.corpus, FileCorpus) and isinstance(local.dataset.corpus, dict)
    assert sources == [str(data / "corpus.jsonl")]  # a path: the workers read the file, not pairs from the driver
    (here,), (there,) = local.outcomes, remote.outcomes
    assert there.ranking == here.ranking  # same documents, same order, same float32 score bits
    assert there.results.per_query == here.results.per_query
    assert remote.dataset.fingerprint == local.dataset.fingerprint  # a baseline from either compares with the other
    # Tokens counted by the workers: the same truncation as counted here (one passage is over 32 tokens).
    assert there.description["truncation"] == here.description["truncation"]
    assert here.description["truncation"]["truncated"] >= 1
    assert there.description["corpus"] == "streamed from its file by the workers"
    counts = ("passages_encoded", "passages_reused", "duplicate_passages", "cache")
    assert {k: there.description[k] for k in counts} == {k: here.description[k] for k in counts}
    assert here.description["duplicate_passages"] >= 1  # a text repeated in the corpus: counted alike by both
    assert there.description["execution"] == "ray"
    assert there.description["embedding_dim"] == here.description["embedding_dim"] == 32  # was 0 on Ray
    assert there.description["passages_encoded"] == here.description["passages"] - here.description["duplicate_passages"]
    assert here.description["passages"] > 30 and "ray" in sys.modules


def test_on_ray_passage_shards_of_another_dimension_are_removed_and_encoded_again(tmp_path: Path, ray_cluster) -> None:
    """Every passage shard one dimension short and every passage found: the Ray search compared nothing and
    failed on the shapes. The queries (encoded, or cached) disagree with the shards; the model decides, the
    shards are removed, the workers encode the passages again, and the numbers are the cold run's."""
    import warnings

    from rag_eval._retrievers.embedding_cache import EmbeddingCacheWarning

    data = _beir_folder(tmp_path / "beir")
    model = _models.tiny_bi_encoder()
    path = tmp_path / "run.yaml"
    path.write_text(
        f"""
name: dims
dataset: {{path: {data}}}
retrievers:
  - {{label: dense, adapter: dense, params: {{model: {model}, device: cpu, show_progress: false, max_seq_length: 32}}}}
top_k: 10
metrics: [ndcg@10]
reuse_rankings: false
cache_dir: {tmp_path / "cache"}
execution: {{engine: ray, address: local, actors: 1, batch_size: 7, shards: 2}}
""",
        encoding="utf-8",
    )
    (cold,) = execute(load_config(path), progress=False).outcomes
    folder = Path(cold.description["cache_path"])
    shards = sorted(folder.glob("*.emb"))
    assert shards
    for shard in shards:
        shorten_every_vector(shard)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (again,) = execute(load_config(path), progress=False).outcomes
    said = [str(w.message) for w in caught if issubclass(w.category, EmbeddingCacheWarning)]
    assert any("its vectors have dim 31" in m and "removed it" in m for m in said), said
    assert again.ranking == cold.ranking and again.results.per_query == cold.results.per_query
    assert again.description["passages_encoded"] == cold.description["passages_encoded"]
    assert again.description["embedding_dim"] == 32
    # Repaired: the store holds the passages again, of the model's dimension only (a third run on Ray would
    # read them all, silently; checked on the store itself, which costs no cluster round).
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store = EmbeddingStore(folder.parent.parent, folder.name)
        assert store.dim() == 32 and len(store) == cold.description["passages_encoded"]
    assert not [w for w in caught if issubclass(w.category, EmbeddingCacheWarning)]
