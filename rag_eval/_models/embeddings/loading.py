"""A bi-encoder or cross-encoder loaded on the backend its options name: torch, ONNX Runtime or OpenVINO.

``load_encoder`` returns an :class:`~rag_eval._models.embeddings.interface.Encoder` whose
``encode`` gives the same float32 embeddings as ``SentenceTransformer.encode`` (fp32
backends: within 1e-4 per component, measured ~2e-7 on all-MiniLM-L6-v2), faster on a CPU:

- ``torch``: sentence-transformers itself (``precision: fp16`` on a CUDA GPU, where the
  model's Rust tokenizer feeds it from threads ahead of it;
  :mod:`rag_eval._models.embeddings.torch_backend`).
- ``onnx``: our own export of the local model's transformer (``torch.onnx.export``, the
  TorchScript exporter: the dynamo exporter needs ``onnxscript``, which is not installed),
  with dynamic batch and sequence axes, attention exported "eager" so that ONNX Runtime's
  BERT fusions (fused attention, bias-gelu; not skip-layer-norm, whose kernel is slow) apply. The pooling and
  normalisation of the model's ``modules.json`` (Transformer, Pooling: cls / max / mean /
  mean_sqrt_len_tokens, Normalize) are applied in numpy; any other module (Dense,
  weighted-mean or last-token pooling, ...) is refused with one line naming it.
  ``quantize: int8`` is ONNX Runtime dynamic quantisation with per-channel int8 weights
  (per-tensor weights measured a minimum cosine of 0.90 to torch, per-channel 0.988).
- ``openvino``: the same export converted to OpenVINO IR (weights kept fp32, inference
  precision pinned to f32 so a bf16-capable CPU does not silently change the numbers).
  No int8 for OpenVINO: its weight compression needs NNCF (not a dependency); ONNX
  Runtime's fused int8 graph (QAttention) does not convert, its unfused int8 graph runs
  decomposed at 0.65x fp32 speed, and hand-made int8 weights only pay off on CPUs with
  VNNI/AMX (measured: no gain on this AVX2 machine).

Exports are built, checked against torch and cached by :mod:`rag_eval._models.embeddings.export`;
the model's pooling and tokenizer come from :mod:`rag_eval._models.embeddings.pipeline`; the
exported graphs run in :mod:`rag_eval._models.embeddings.graph_backend`. torch, onnxruntime
and openvino are imported only when an encoder is loaded.
"""

from __future__ import annotations

import shutil
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rag_eval._core.errors import RetrieverError
from rag_eval._models import files as _models
from rag_eval._models.embeddings.export import cached_export
from rag_eval._models.embeddings.graph_backend import GraphEncoder, GraphScorer
from rag_eval._models.embeddings.graph_session import open_graph, require_runtime
from rag_eval._models.embeddings.interface import Encoder, Scorer
from rag_eval._models.embeddings.options import EncoderOptions, device_problem
from rag_eval._models.embeddings.pipeline import (
    Pipeline,
    load_tokenizer,
    read_json,
    read_pipeline,
    transformer_settings,
)
from rag_eval._models.embeddings.threads import thread_plan
from rag_eval._models.embeddings.torch_backend import TorchEncoder, TorchScorer, stop_pool
from rag_eval._models.positions import length_problem, position_limit


def load_encoder(
    resolved: _models.ResolvedModel,
    device: str,
    options: EncoderOptions,
    export_dir: Path | None,
    max_seq_length: int | None,
    adapter: str,
    *,
    identity: str | None = None,
    devices: Sequence[str] | None = None,
) -> Encoder:
    """A bi-encoder for ``resolved`` on ``device`` (``auto`` allowed) with ``options``.

    ``export_dir`` holds cached exports (None: export to a temporary folder, not kept);
    ``identity`` is the model's content hash when the caller has it (else computed).
    ``devices`` (two or more, torch only): one process per device through sentence-transformers'
    multi-process pool, stopped when the encoder is garbage-collected or the process exits.
    Problems are one :class:`RetrieverError` line naming the option and the fix.
    """
    threads, streams = thread_plan(options)
    if devices:
        return _pooled_encoder(resolved, devices, options, max_seq_length, adapter, threads)
    if options.backend == "torch":
        used = _torch_device(device, options, adapter, threads)
        model = _models.load_sentence_transformer(resolved, used, adapter)
        if max_seq_length is not None:
            _check_length(model, max_seq_length, "max_seq_length", resolved, adapter)
            model.max_seq_length = max_seq_length
        _set_precision(model, options)
        return TorchEncoder(model, options, used, threads)
    folder = _graph_folder(resolved, device, options, adapter)
    pipeline = read_pipeline(folder, adapter, options.backend)
    tokenizer, length = load_tokenizer(pipeline, max_seq_length)
    infer, manifest, status, path = _load_graph(
        folder, pipeline, identity, options, export_dir, adapter, tokenizer, "embeddings", threads, streams
    )
    encoder = GraphEncoder(infer, manifest["inputs"], tokenizer, length, pipeline, options, threads, streams)
    encoder.export_path, encoder.export_status = path, status
    return encoder


def _pooled_encoder(
    resolved: _models.ResolvedModel,
    devices: Sequence[str],
    options: EncoderOptions,
    max_seq_length: int | None,
    adapter: str,
    threads: int,
) -> TorchEncoder:

    if options.backend != "torch":
        raise RetrieverError(
            f"{adapter}: devices (one process per device) runs backend torch, not {options.backend}; "
            "remove devices, or use backend: torch"
        )
    used = [_torch_device(device, options, adapter, threads) for device in devices]
    model = _models.load_sentence_transformer(resolved, "cpu", adapter)  # each process moves its copy
    if max_seq_length is not None:
        _check_length(model, max_seq_length, "max_seq_length", resolved, adapter)
        model.max_seq_length = max_seq_length
    _set_precision(model, options)
    pool = model.start_multi_process_pool(target_devices=used)
    encoder = TorchEncoder(model, options, ",".join(used), threads, pool=pool)
    weakref.finalize(encoder, stop_pool, pool)
    return encoder


def load_scorer(
    resolved: _models.ResolvedModel,
    device: str,
    options: EncoderOptions,
    export_dir: Path | None,
    max_length: int | None,
    adapter: str,
    *,
    identity: str | None = None,
) -> Scorer:
    """A cross-encoder (one relevance logit per pair) for ``resolved``; arguments as :func:`load_encoder`."""
    threads, streams = thread_plan(options)
    if options.backend == "torch":
        used = _torch_device(device, options, adapter, threads)
        model = _models.load_cross_encoder(resolved, used, max_length, adapter)
        if max_length is not None:
            _check_length(model, max_length, "max_length", resolved, adapter)
        _check_labels(getattr(model, "num_labels", 1), resolved, adapter)
        _set_precision(model, options)
        return TorchScorer(model, options, used, threads)
    folder = _graph_folder(resolved, device, options, adapter)
    pipeline = Pipeline(folder, (), False, *transformer_settings(folder))
    config = read_json(folder / "config.json", adapter)
    labels = config.get("num_labels", len(config.get("id2label") or {0: 0})) if isinstance(config, dict) else 1
    _check_labels(labels, resolved, adapter)
    tokenizer, length = load_tokenizer(pipeline, max_length)
    infer, manifest, status, path = _load_graph(
        folder, pipeline, identity, options, export_dir, adapter, tokenizer, "scores", threads, streams
    )
    scorer = GraphScorer(infer, manifest["inputs"], tokenizer, length, options, threads, streams)
    scorer.export_path, scorer.export_status = path, status
    return scorer


def _set_precision(model: Any, options: EncoderOptions) -> None:
    """Compute in the precision asked for: a model saved in fp16 or bf16 loads in that dtype, even on a CPU."""
    if options.precision == "fp16":
        model.half()
    else:
        model.float()


def _check_length(model: Any, value: int, field: str, resolved: _models.ResolvedModel, adapter: str) -> None:
    """Refuse ``value`` past the loaded model's position embeddings (validate checks config.json when it can;
    a model downloaded by this run is checked here, before torch fails on the first long text)."""
    problem = length_problem(value, position_limit(_transformer_config(model)), field, resolved.spec)
    if problem:
        raise RetrieverError(f"{adapter}: {field}: {problem}, got {value}")


def _transformer_config(model: Any) -> dict[str, Any]:
    """The Hugging Face config of a loaded SentenceTransformer or CrossEncoder as a dict ({} when not found)."""
    candidates = []
    try:
        candidates.append(model[0].auto_model.config)  # a SentenceTransformer's Transformer module
    except (TypeError, IndexError, KeyError, AttributeError):
        pass
    candidates.append(getattr(model, "config", None))  # a CrossEncoder
    for config in candidates:
        to_dict = getattr(config, "to_dict", None)
        if callable(to_dict):
            found = to_dict()
            if isinstance(found, dict):
                return found
    return {}


def _check_labels(labels: int, resolved: _models.ResolvedModel, adapter: str) -> None:
    if labels != 1:
        raise RetrieverError(
            f"{adapter}: model {resolved.spec!r} has {labels} output labels; a re-ranker needs "
            "a cross-encoder with one relevance score (num_labels: 1)"
        )


def _torch_device(device: str, options: EncoderOptions, adapter: str, threads: int) -> str:
    used = _models.resolve_device(device, adapter)
    if options.precision == "fp16" and not used.startswith("cuda"):
        raise RetrieverError(
            f"{adapter}: precision: fp16 needs a CUDA GPU, but the device is {used!r}; use precision: fp32 "
            "(or backend: onnx with quantize: int8 for speed on a CPU)"
        )
    if used == "cpu":
        import torch

        torch.set_num_threads(threads)  # process-wide: torch has one intra-op pool
    return used


def _graph_folder(resolved: _models.ResolvedModel, device: str, options: EncoderOptions, adapter: str) -> Path:
    problem = device_problem(options.backend, device)
    if problem:
        raise RetrieverError(f"{adapter}: {problem}")
    if resolved.path is None:
        raise RetrieverError(
            f"{adapter}: backend {options.backend} exports the model from a local folder, and {resolved.spec!r} "
            "is not downloaded yet; run once with backend: torch (or point model: at a folder)"
        )
    require_runtime(options.backend, adapter)
    return resolved.path


def _load_graph(
    folder: Path,
    pipeline: Pipeline,
    identity: str | None,
    options: EncoderOptions,
    export_dir: Path | None,
    adapter: str,
    tokenizer: Any,
    kind: str,
    threads: int,
    streams: int,
) -> tuple[Callable[[dict[str, np.ndarray]], np.ndarray], dict[str, Any], str, Path | None]:
    identity = identity or _models.model_identity(folder)
    path, status, manifest = cached_export(
        folder, pipeline, identity, options.backend, options.quantize, export_dir, adapter, tokenizer, kind
    )
    try:
        infer = open_graph(path, manifest, options.backend, threads, streams)
    finally:
        if status == "temporary":  # loaded into memory (OpenVINO keeps its mapping of the unlinked weights)
            shutil.rmtree(path, ignore_errors=True)
    return infer, manifest, status, None if status == "temporary" else path
