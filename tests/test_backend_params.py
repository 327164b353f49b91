"""The encoding backends through the adapters: dense and cross_encoder params, cache keys, describe.

Uses the tiny models of tests/_models.py: what is checked here is the wiring (the numbers of
each backend against torch are tests/test_backends.py's job).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rag_eval._core.errors import RetrieverError

pytest.importorskip("torch")
pytest.importorskip("sentence_transformers")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from _models import tiny_bi_encoder, tiny_cross_encoder  # noqa: E402

from rag_eval._retrievers.cross_encoder import CrossEncoderReranker  # noqa: E402
from rag_eval._retrievers.dense import DenseRetriever  # noqa: E402

CORPUS = {
    "d1": {"title": "Pacific", "text": "The Pacific is the largest ocean."},
    "d2": {"title": "Coral", "text": "Coral reefs bleach when the water warms."},
    "d3": {"title": "Tides", "text": "Tides follow the moon and the sun."},
    "d4": {"title": "", "text": "Whales are marine mammals that breathe air."},
    "d5": {"title": "Bread", "text": "Knead the dough and let it rise."},
}
QUERIES = {"q1": "largest ocean", "q2": "why do reefs bleach", "q3": "moon and tides"}


def _dense(tmp_path: Path, **params: object) -> DenseRetriever:
    return DenseRetriever(
        **{"model": str(tiny_bi_encoder()), "device": "cpu", "show_progress": False,
           "cache_dir": str(tmp_path / "cache"), **params}
    )


def test_onnx_dense_gives_torch_scores_and_its_own_cache_entries(tmp_path: Path) -> None:
    torch_run = _dense(tmp_path)
    torch_run.index(CORPUS)
    want = torch_run.search(QUERIES, 5)

    onnx_run = _dense(tmp_path, backend="onnx")
    onnx_run.index(CORPUS)
    got = onnx_run.search(QUERIES, 5)
    info = onnx_run.describe()
    # Not the torch entries: the backend is part of the key, so all five passages were encoded again.
    assert info["cache"] == "miss" and info["passages_encoded"] == 5
    assert info["encoder"]["backend"] == "onnx" and info["encoder"]["export"] == "built"
    assert info["parameters"]["backend"] == "onnx" and info["device"] == "cpu"
    assert info["cache_namespace"] != torch_run.describe()["cache_namespace"]
    for qid in QUERIES:
        assert list(got[qid]) == list(want[qid])
        assert [got[qid][d] for d in want[qid]] == pytest.approx(list(want[qid].values()), abs=1e-5)

    again = _dense(tmp_path, backend="onnx")
    again.index(CORPUS)
    assert again.search(QUERIES, 5) == got
    described = again.describe()
    assert described["cache"] == "hit" and described["query_cache"] == "hit"
    assert "encoder" not in described  # a full cache hit loads no model and exports nothing


def test_int8_is_keyed_apart_from_fp32_onnx(tmp_path: Path) -> None:
    fp32 = _dense(tmp_path, backend="onnx")
    fp32.index(CORPUS)
    int8 = _dense(tmp_path, backend="onnx", quantize="int8")
    int8.index(CORPUS)
    assert int8.describe()["cache"] == "miss"
    assert int8.describe()["encoder"]["quantize"] == "int8"
    assert fp32.describe()["cache_namespace"] != int8.describe()["cache_namespace"]


def test_the_default_backend_keeps_the_cache_keys_written_before_backends(tmp_path: Path) -> None:
    # torch / fp32 / none add nothing to the namespace: embeddings cached by earlier versions stay valid.
    retriever = _dense(tmp_path)
    assert retriever._encoding_options() == {"normalize": True, "max_seq_length": None}
    assert _dense(tmp_path, threads=1)._encoding_options() == retriever._encoding_options()  # speed only


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"quantize": "int8"}, "dense: params: quantize: int8 needs backend: onnx"),
        ({"backend": "openvino", "quantize": "int8"}, "quantize: int8 is not available with backend: openvino"),
        ({"backend": "onnx", "precision": "fp16"}, "precision: fp16 runs only with backend: torch"),
        ({"backend": "tensorrt"}, "backend"),
        ({"threads": 0}, "threads"),
        ({"threads": "4"}, "threads"),
        # issue 20, item 8: torch.set_num_threads(100000) segfaults
        ({"threads": 100_000}, "dense: params.threads: at most 1,024 threads (FAISS and torch crash at 100,000)"),
        ({"streams": 2}, "streams applies to backend onnx or openvino"),
        ({"index": "hnsw"}, "dense: params.index: must be a mapping such as {kind: hnsw}"),
    ],
)
def test_bad_encoding_params_are_one_line_before_loading(tmp_path: Path, params: dict, message: str) -> None:
    with pytest.raises(RetrieverError) as caught:
        _dense(tmp_path, **params)
    text = str(caught.value)
    assert message in text and "\n" not in text


def test_fp16_on_a_cpu_is_refused_by_the_config_or_when_auto_finds_no_gpu(tmp_path: Path) -> None:
    with pytest.raises(RetrieverError, match=r"^dense: params: precision: fp16 needs a CUDA GPU, not device 'cpu'"):
        _dense(tmp_path, precision="fp16")
    with pytest.raises(RetrieverError, match=r"devices: precision: fp16 needs a CUDA GPU, not device 'cpu'"):
        _dense(tmp_path, precision="fp16", device="auto", devices=["cpu", "cpu"])
    retriever = _dense(tmp_path, precision="fp16", use_cache=False, device="auto")  # auto: known when it loads
    with pytest.raises(RetrieverError, match=r"^dense: precision: fp16 needs a CUDA GPU, but the device is 'cpu'"):
        retriever.index(CORPUS)


def _reranker(tmp_path: Path, **params: object) -> CrossEncoderReranker:
    return CrossEncoderReranker(
        **{"model": str(tiny_cross_encoder()), "first_stage": {"adapter": "bm25", "params": {}}, "rerank_top_n": 5,
           "device": "cpu", "show_progress": False, "cache_dir": str(tmp_path / "cache"), **params}
    )


def test_onnx_cross_encoder_scores_equal_torch(tmp_path: Path) -> None:
    torch_run = _reranker(tmp_path)
    torch_run.index(CORPUS)
    want = torch_run.search(QUERIES, 5)
    onnx_run = _reranker(tmp_path, backend="onnx")
    onnx_run.index(CORPUS)
    got = onnx_run.search(QUERIES, 5)
    for qid in QUERIES:
        assert set(got[qid]) == set(want[qid])
        docs = sorted(want[qid])
        assert np.allclose([got[qid][d] for d in docs], [want[qid][d] for d in docs], atol=1e-4)
    info = onnx_run.describe()
    assert info["scorer"]["backend"] == "onnx" and info["parameters"]["backend"] == "onnx"
    exported = Path(info["scorer"]["export_path"])
    assert exported.parent == tmp_path / "cache" / "exported"  # kept in the run's cache folder
    assert torch_run.describe()["scorer"]["backend"] == "torch"


def test_cross_encoder_refuses_int8_with_torch(tmp_path: Path) -> None:
    with pytest.raises(RetrieverError, match="cross_encoder: params: quantize: int8 needs backend: onnx"):
        _reranker(tmp_path, quantize="int8")
    with pytest.raises(RetrieverError, match="cross_encoder: params: precision: fp16 needs a CUDA GPU, not device 'cpu'"):
        _reranker(tmp_path, precision="fp16")


@pytest.mark.slow
def test_several_devices_encode_in_one_process_each_and_a_failed_call_stops_them_for_good(tmp_path: Path) -> None:
    # On a CPU the pool's devices are [cpu, cpu]: two processes, each with its own model copy. One pool serves
    # both checks (each costs two processes importing sentence-transformers, ~10 s on one core); the pool's
    # stop when its encoder is collected is tests/test_backends.py's.
    single = _dense(tmp_path, use_cache=False)
    single.index(CORPUS)
    want = single.search(QUERIES, 5)
    pooled = _dense(tmp_path, use_cache=False, devices=["cpu", "cpu"])
    pooled.index(CORPUS)
    got = pooled.search(QUERIES, 5)
    for qid in QUERIES:
        assert list(got[qid]) == list(want[qid])
        assert [got[qid][d] for d in want[qid]] == pytest.approx(list(want[qid].values()), abs=1e-6)
    info = pooled.describe()
    assert info["device"] == "cpu,cpu" and info["parameters"]["devices"] == ["cpu", "cpu"]
    encoder = pooled._model
    processes = list(encoder.pool["processes"])
    assert len(processes) == 2 and all(p.is_alive() for p in processes)

    # A call that stops early leaves results in the pool's queue: the pool is stopped, never reused.
    def broken(*args, **kwargs):
        raise RuntimeError("worker died unexpectedly")

    original, encoder.model.encode = encoder.model.encode, broken
    with pytest.raises(RuntimeError, match="died"):
        encoder.encode(["tide"])
    encoder.model.encode = original
    assert encoder.pool is None and not any(p._closed is False and p.is_alive() for p in processes)
    with pytest.raises(RetrieverError, match=r"encoding processes on cpu,cpu were stopped after an error; run again"):
        encoder.encode(["tide"])


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"devices": ["cpu"]}, "devices"),  # one device is `device`
        ({"devices": ["cpu", "cpu"], "backend": "onnx"}, "devices (one process per device) runs backend torch"),
        ({"devices": ["cpu", "gpu7"]}, "devices"),
        ({"backend": "openvino", "device": "cuda"}, "backend openvino runs on the CPU here, not device 'cuda'"),
        ({"backend": "onnx", "device": "cuda:1"}, "backend onnx runs on the CPU here, not device 'cuda:1'"),
    ],
)
def test_bad_devices_are_one_line(tmp_path: Path, params: dict, message: str) -> None:
    with pytest.raises(RetrieverError) as caught:
        _dense(tmp_path, **params)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_model_saved_in_half_precision_has_its_own_cache_namespace(tmp_path: Path) -> None:
    # Earlier versions computed such a model in its saved dtype; its fp32 embeddings must not meet those.
    import json
    import shutil

    folder = tmp_path / "half"
    shutil.copytree(tiny_bi_encoder(), folder)
    config = json.loads((folder / "config.json").read_text())
    config["dtype"] = "float16"
    (folder / "config.json").write_text(json.dumps(config))
    options = DenseRetriever(model=str(folder), device="cpu", cache_dir=str(tmp_path / "c"))._encoding_options()
    assert options == {"normalize": True, "max_seq_length": None, "computed_in": "float32"}
    fp16 = DenseRetriever(model=str(folder), device="cuda", precision="fp16", cache_dir=str(tmp_path / "c"))
    assert "computed_in" not in fp16._encoding_options()


def test_cuda_n_past_the_gpus_there_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from rag_eval._models.files import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("cuda:1", "dense") == "cuda:1"
    with pytest.raises(RetrieverError, match=r"^dense: device 'cuda:2' requested but torch sees 2 CUDA GPU\(s\) "
                       r"\(cuda:0 to cuda:1\); use one of those, or device: auto$"):
        resolve_device("cuda:2", "dense")


def test_a_cross_encoder_backend_on_a_gpu_is_refused_from_the_config(tmp_path: Path) -> None:
    # Known without loading anything, so `validate` says it (a run that hits the cache would not).
    with pytest.raises(RetrieverError, match=r"cross_encoder: params: backend onnx runs on the CPU here, not device 'cuda'"):
        _reranker(tmp_path, backend="onnx", device="cuda")


def test_a_missing_cross_encoder_is_not_sent_to_the_bundled_bi_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(RetrieverError) as caught:
        CrossEncoderReranker(model="nobody/no-such-reranker", first_stage={"adapter": "bm25"})
    message = str(caught.value)
    assert "point model: at a local cross-encoder folder" in message and "all-MiniLM-L6-v2" not in message


def test_report_notes_say_how_a_model_encoded_and_which_index_and_engine_ran() -> None:
    from rag_eval._report.markdown import _description_notes

    base = {"model": "m", "parameters": {"backend": "torch", "quantize": "none", "precision": "fp32", "devices": None}}
    assert "encoding" not in _description_notes(base)  # the default says nothing
    int8 = {**base, "parameters": {**base["parameters"], "backend": "onnx", "quantize": "int8"},
            "encoder": {"export": "built"}}
    assert "encoding: onnx int8 (model exported by this run)" in _description_notes(int8)
    gpus = {**base, "parameters": {**base["parameters"], "precision": "fp16", "devices": ["cuda:0", "cuda:1"]}}
    assert "encoding: torch fp16 on cuda:0, cuda:1" in _description_notes(gpus)
    ivf = {**base, "index": {"kind": "ivf", "exact": False, "nlist": 20, "nprobe": 8, "seed": 0}, "execution": "ray"}
    notes = _description_notes(ivf)
    assert "index: ivf (nlist 20, nprobe 8)" in notes and "execution: ray" in notes


def test_results_say_which_tokenising_path_each_model_ran(tmp_path: Path) -> None:
    # The dense encoder on a CPU keeps sentence-transformers' encode(); the re-ranker and the exported
    # backends call the model's Rust tokenizer (tokenizer.json), and the description names the file.
    dense = _dense(tmp_path)
    dense.index(CORPUS)
    assert dense.describe()["encoder"]["tokenization"] == {"path": "encode()"}
    onnx = _dense(tmp_path, backend="onnx")
    onnx.index(CORPUS)
    assert onnx.describe()["encoder"]["tokenization"] == {
        "path": "rust", "tokenizer": str(tiny_bi_encoder() / "tokenizer.json")
    }
    reranker = _reranker(tmp_path)
    reranker.index(CORPUS)
    reranker.search(QUERIES, 5)
    scorer = reranker.describe()["scorer"]
    assert scorer["tokenization"] == {"path": "rust", "tokenizer": str(tiny_cross_encoder() / "tokenizer.json"),
                                      "threads": 1}
