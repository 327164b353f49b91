"""A run with `execution: {engine: ray}` writes the same rankings and numbers as the same run in this process."""

from __future__ import annotations

import sys
from pathlib import Path

import _models
import pytest

pytest.importorskip("ray", reason="Ray is not installed (pip install rag-eval[ray])")

from rag_eval.config import load_config  # noqa: E402
from rag_eval.errors import RetrieverError  # noqa: E402
from rag_eval.runner import execute  # noqa: E402

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


def test_ray_execution_gives_the_rankings_and_numbers_of_local_execution(tmp_path: Path) -> None:
    import ray

    model = _models.tiny_bi_encoder()
    (local,) = execute(_config(tmp_path / "local", model, "{engine: local}"), progress=False).outcomes
    assert not ray.is_initialized()  # local execution never starts Ray
    spec = "{engine: ray, address: local, actors: 1, batch_size: 3, shards: 2}"
    (remote,) = execute(_config(tmp_path / "ray", model, spec), progress=False).outcomes
    assert not ray.is_initialized()  # the run started Ray, so the run shut it down
    assert remote.ranking == local.ranking  # same documents, same order, same float32 score bits
    assert remote.results.per_query == local.results.per_query
    assert remote.description["execution"] == "ray"
    assert remote.description["embedding_dim"] == local.description["embedding_dim"] == 32  # was 0 on Ray
    assert remote.description["passages_encoded"] == local.description["passages_encoded"] == local.description["passages"]
    assert local.description["passages"] > 30 and "ray" in sys.modules


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
    from rag_eval.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        _config(tmp_path, _models.tiny_bi_encoder(), "{engine: ray}", params)
    assert where in str(caught.value) and "\n" not in str(caught.value)


def test_a_nested_approximate_index_is_refused_with_ray_too(tmp_path: Path) -> None:
    from rag_eval.errors import ConfigError

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
