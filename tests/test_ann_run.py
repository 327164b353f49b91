"""A dense retriever with an approximate index reports what the approximation cost, measured against exact search."""

from __future__ import annotations

from pathlib import Path

import _models
import numpy as np
import pytest

pytest.importorskip("faiss", reason="FAISS is not installed (pip install '.[ann]')")

from rag_eval._data.config import load_config  # noqa: E402
from rag_eval._run.execute import execute  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _run(tmp_path: Path, retrievers: str, execution: str = "{engine: local}"):
    model = _models.tiny_bi_encoder()
    path = tmp_path / "run.yaml"
    path.write_text(
        f"""
name: ocean
dataset: {{path: {ROOT / "datasets" / "ocean_facts.yaml"}}}
retrievers:
{retrievers.replace("MODEL", str(model))}
top_k: 5
metrics: [ndcg@5, recall@5]
reuse_rankings: false
cache_dir: {tmp_path / "cache"}
execution: {execution}
""",
        encoding="utf-8",
    )
    return execute(load_config(path), progress=False)


COMMON = "model: MODEL, device: cpu, show_progress: false"


def test_the_cost_of_an_ivf_index_equals_its_difference_to_exact_search(tmp_path: Path) -> None:
    run = _run(tmp_path, f"""
  - {{label: exact, adapter: dense, params: {{{COMMON}}}}}
  - {{label: ivf, adapter: dense, params: {{{COMMON}, index: {{kind: ivf, nlist: 6, nprobe: 1, train_size: 37}}}}}}
""")
    exact, ivf = run.outcomes
    cost = ivf.description["approximation"]
    assert "approximation" not in exact.description
    queries = sorted(ivf.ranking)
    assert cost["queries"] == len(queries) == 10  # attribution_sample 1000: every query
    overlaps = [len(set(ivf.ranking[q]) & set(exact.ranking[q])) / 5 for q in queries]
    assert cost["overlap_mean"] == pytest.approx(np.mean(overlaps), abs=1e-12)
    assert cost["overlap_min"] == pytest.approx(min(overlaps), abs=1e-12)
    assert cost["overlap_mean"] < 1.0  # one list of six probed: the index does lose passages here
    assert cost["metric"] == "ndcg@5"
    assert cost["metric_exact"] == pytest.approx(exact.results.aggregate["ndcg@5"], abs=1e-12)
    assert cost["metric_approx"] == pytest.approx(ivf.results.aggregate["ndcg@5"], abs=1e-12)
    assert cost["metric_difference"] == pytest.approx(
        ivf.results.aggregate["ndcg@5"] - exact.results.aggregate["ndcg@5"], abs=1e-12
    )
    assert ivf.description["index"]["kind"] == "ivf" and ivf.description["index"]["nprobe"] == 1


def test_a_flat_index_costs_nothing_and_a_sample_is_measured_on_its_queries_only(tmp_path: Path) -> None:
    run = _run(tmp_path, f"""
  - {{label: exact, adapter: dense, params: {{{COMMON}}}}}
  - {{label: flat, adapter: dense, params: {{{COMMON}, index: {{kind: flat, attribution_sample: 4}}}}}}
""")
    exact, flat = run.outcomes
    assert flat.ranking.keys() == exact.ranking.keys()
    for qid in exact.ranking:
        assert list(flat.ranking[qid]) == list(exact.ranking[qid])
    cost = flat.description["approximation"]
    assert (cost["queries"], cost["overlap_mean"], cost["metric_difference"]) == (4, 1.0, 0.0)


@pytest.mark.ray_state
def test_an_approximate_index_with_ray_execution_is_refused_before_ray_starts(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="Ray is not installed")
    import ray

    from rag_eval._core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"retrievers\[0\]\(hnsw\)\.params\.index: execution engine ray searches exactly"):
        _run(tmp_path, f"  - {{label: hnsw, adapter: dense, params: {{{COMMON}, index: {{kind: hnsw}}}}}}",
             "{engine: ray, address: local}")  # refused when the config loads (so by validate too)
    assert not ray.is_initialized()
