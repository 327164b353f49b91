"""Encoding backends for bi-encoders: torch (sentence-transformers), ONNX Runtime and OpenVINO.

``load_encoder`` returns an :class:`Encoder` whose ``encode`` gives the same float32
embeddings as ``SentenceTransformer.encode`` (fp32 backends: within 1e-4 per component,
measured ~2e-7 on all-MiniLM-L6-v2), faster on a CPU:

- ``torch``: sentence-transformers itself, as before (``precision: fp16`` on a CUDA GPU).
- ``onnx``: our own export of the local model's transformer (``torch.onnx.export``, the
  TorchScript exporter: the dynamo exporter needs ``onnxscript``, which is not installed),
  with dynamic batch and sequence axes, attention exported "eager" so that ONNX Runtime's
  BERT fusions (fused attention, skip-layer-norm, bias-gelu) apply. The pooling and
  normalisation of the model's ``modules.json`` (Transformer, Pooling: cls / max / mean /
  mean_sqrt_len_tokens, Normalize) are applied here in numpy; any other module (Dense,
  weighted-mean or last-token pooling, ...) is refused with one line naming it.
  ``quantize: int8`` is ONNX Runtime dynamic quantisation with per-channel int8 weights
  (per-tensor weights measured a minimum cosine of 0.90 to torch, per-channel 0.988).
- ``openvino``: the same export converted to OpenVINO IR (weights kept fp32, inference
  precision pinned to f32 so a bf16-capable CPU does not silently change the numbers).
  No int8 for OpenVINO: its weight compression needs NNCF (not a dependency); ONNX
  Runtime's fused int8 graph (QAttention) does not convert, its unfused int8 graph runs
  decomposed at 0.65x fp32 speed, and hand-made int8 weights only pay off on CPUs with
  VNNI/AMX (measured: no gain on this AVX2 machine).

Exports are cached under ``<export_dir>/<model identity>-<backend>-<quantize>/`` (model
file(s) + ``manifest.json`` with sizes and sha256 of every file), built offline from the
local model folder in a temporary folder renamed into place, so a killed export leaves
nothing half-written and concurrent processes never see a partial one. A damaged entry
is rebuilt with an :class:`ExportCacheWarning`. Each export is checked against torch on
a few probe texts before it is stored (fp32: last hidden state within 1e-3; a fused graph
that fails falls back to the plain one).

Inputs are tokenised with the model's own tokenizer (transformers ``AutoTokenizer``,
exactly as sentence-transformers loads it), truncated at ``max_seq_length``, sorted by
token length and batched (little padding), the order being restored at the end. Work is
spread over ``threads`` CPU threads (default: the CPUs this process may use) as
``streams`` concurrent batches: on small CPUs one thread per batch beats threads inside
a batch (see benchmarks/bench_backends.py). torch, onnxruntime and openvino are imported
only when an encoder is loaded.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import os
import secrets
import shutil
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from rag_eval.embeddings.store import EmbeddingCacheWarning
from rag_eval.errors import RetrieverError
from rag_eval.retrievers import models as _models

#: Bump when the export recipe changes (it changes the numbers, so it is part of the cache key).
EXPORT_FORMAT = 1
ONNX_OPSET = 17
# Texts tokenised at once: bounds the memory of token lists for a huge call.
_CHUNK = 8192
# fp32 export check: max abs difference of the last hidden state against torch (measured ~2e-6).
_FP32_TOLERANCE = 1e-3
_PROBES = (
    "",
    "ocean",
    "The Pacific is the largest and deepest of Earth's five oceanic divisions.",
    "Zürich, São Paulo and 東京 are cities; naïve café résumé.",
    " ".join(["Coral reefs are diverse underwater ecosystems held together by calcium carbonate."] * 30),
)
_SUPPORTED_POOLING = ("cls", "max", "mean", "mean_sqrt_len_tokens")
_LEGACY_POOLING = {  # sentence-transformers' order of concatenation
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}


class ExportCacheWarning(EmbeddingCacheWarning):
    """A cached exported model was damaged or could not be written; it is rebuilt / kept in memory only."""


class EncoderOptions(BaseModel):
    """How passages are encoded: backend, quantisation, precision, CPU threads.

    ``backend``, ``quantize`` and ``precision`` change the numbers (they go into the
    embedding cache key via :meth:`Encoder.cache_options`); ``threads`` and ``streams``
    change only the speed.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Literal["torch", "onnx", "openvino"] = "torch"
    quantize: Literal["none", "int8"] = "none"
    precision: Literal["fp32", "fp16"] = "fp32"
    threads: int | None = Field(None, ge=1, description="CPU threads (default: the CPUs available to the process)")
    streams: int | None = Field(None, ge=1, description="onnx/openvino: batches run at once (default: one per thread)")

    @model_validator(mode="after")
    def _compatible(self) -> EncoderOptions:
        if self.quantize == "int8" and self.backend == "torch":
            raise ValueError("quantize: int8 needs backend: onnx (ONNX Runtime int8); backend: torch runs fp32 or fp16")
        if self.quantize == "int8" and self.backend == "openvino":
            raise ValueError(
                "quantize: int8 is not available with backend: openvino (it would need NNCF); "
                "use backend: onnx with quantize: int8, or backend: openvino with quantize: none"
            )
        if self.streams is not None and self.backend == "torch":
            raise ValueError(
                "streams applies to backend onnx or openvino (torch runs one batch at a time on its threads); "
                "remove streams"
            )
        if self.precision == "fp16" and self.backend != "torch":
            raise ValueError(
                f"precision: fp16 runs only with backend: torch on a CUDA GPU, not backend: {self.backend}; "
                "use precision: fp32 (or quantize: int8 with backend: onnx for speed on a CPU)"
            )
        return self


class EncodingParams(BaseModel):
    """The encoding fields of an adapter's params (dense, cross_encoder): mixed into its params model.

    Checked together when the config is validated, so a clash (``quantize: int8`` with
    ``backend: torch``) is one line before any model is loaded.
    """

    backend: Literal["torch", "onnx", "openvino"] = Field(
        "torch", description="torch | onnx | openvino (onnx and openvino run on the CPU, from a cached export)"
    )
    quantize: Literal["none", "int8"] = Field("none", description="none | int8 (backend: onnx only)")
    precision: Literal["fp32", "fp16"] = Field("fp32", description="fp32 | fp16 (backend: torch on a CUDA GPU)")
    threads: int | None = Field(None, ge=1, description="CPU threads for encoding (default: the CPUs available)")
    streams: int | None = Field(None, ge=1, description="onnx/openvino: batches encoded at once")

    @model_validator(mode="after")
    def _options_compatible(self) -> EncodingParams:
        self.encoder_options()
        return self

    def encoder_options(self) -> EncoderOptions:
        """These fields as :class:`EncoderOptions`; a clash is a ValueError with one line naming it."""
        try:
            return EncoderOptions(
                backend=self.backend, quantize=self.quantize, precision=self.precision,
                threads=self.threads, streams=self.streams,
            )
        except ValueError as error:  # pydantic's ValidationError is a ValueError
            raise ValueError(options_error(error)) from None


def options_error(error: Exception) -> str:
    """The one-line message of a rejected :class:`EncoderOptions` (pydantic's text without its frame)."""
    errors = getattr(error, "errors", None)
    if callable(errors):
        first = errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ()))
        message = str(first.get("msg", error)).removeprefix("Value error, ")
        return f"{where}: {message}" if where else message
    return str(error)


def cache_options(options: EncoderOptions) -> dict[str, Any]:
    """The options that change the numbers (backend, quantize, precision, export recipe), for cache keys.

    Known before any model is loaded, so a cache hit loads none. Threads and streams are
    left out: they change the speed only. The default (torch, fp32, no quantisation) adds
    nothing: those are the numbers embeddings were cached with before backends existed, so
    caches written then stay valid.
    """
    if options.backend == "torch" and options.precision == "fp32":
        return {}
    keyed: dict[str, Any] = {"backend": options.backend, "quantize": options.quantize, "precision": options.precision}
    if options.backend != "torch":
        keyed["export_format"] = EXPORT_FORMAT
    if options.quantize == "int8":  # int8 kernels and graph fusions differ between releases beyond rounding
        keyed["onnxruntime"] = _version("onnxruntime")
    return keyed


def _version(distribution: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


def saved_in_half_precision(folder: Path | None) -> bool:
    """Whether a model folder's weights are saved in fp16 or bf16 (config.json's ``torch_dtype`` / ``dtype``).

    Such a model computes in fp32 unless ``precision: fp16``; embeddings cached before that
    rule were computed in the saved dtype, so the cache key says which (read without loading).
    """
    if folder is None:
        return False
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    saved = config.get("torch_dtype") or config.get("dtype") if isinstance(config, dict) else None
    return saved in ("float16", "bfloat16")


def available_cpus() -> int:
    """CPUs this process may run on: its affinity mask, capped by a cgroup v2 CPU quota when one is set."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS / Windows have no affinity call
        count = os.cpu_count() or 1
    try:  # a container limited to 1.5 CPUs on a 64-core host must not start 64 threads
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            count = min(count, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, count)


def thread_plan(options: EncoderOptions) -> tuple[int, int]:
    """``(threads, streams)``: total threads and concurrent batches (each gets threads // streams)."""
    threads = options.threads or available_cpus()
    streams = options.streams or min(threads, 8)
    return threads, max(1, min(streams, threads))


# --------------------------------------------------------------------------- the model's pipeline


@dataclass(frozen=True)
class Pipeline:
    """What a sentence-transformers folder computes after the transformer (read from modules.json)."""

    transformer: Path  # folder of the Hugging Face transformer and its tokenizer
    pooling: tuple[str, ...]
    normalize: bool
    max_seq_length: int | None  # from sentence_bert_config.json
    do_lower_case: bool


def read_pipeline(folder: Path, adapter: str, backend: str) -> Pipeline:
    """The model's modules (Transformer, Pooling, Normalize), or one line naming what this backend cannot run."""
    modules_file = folder / "modules.json"
    if not modules_file.is_file():  # a plain transformers folder: sentence-transformers adds mean pooling
        return Pipeline(folder, ("mean",), False, *_transformer_settings(folder))
    modules = _read_json(modules_file, adapter)
    if not isinstance(modules, list):
        raise RetrieverError(f"{adapter}: {modules_file} must hold a list of modules")
    transformer: Path | None = None
    pooling: tuple[str, ...] | None = None
    normalize = False
    for module in modules:
        kind = str(module.get("type", "")).rsplit(".", 1)[-1] if isinstance(module, dict) else ""
        path = folder / str(module.get("path", "")) if isinstance(module, dict) else folder
        if kind == "Transformer" and transformer is None and pooling is None:
            transformer = path
        elif kind == "Pooling" and transformer is not None and pooling is None:
            pooling = _pooling_modes(_read_json(path / "config.json", adapter), adapter, backend, path)
        elif kind == "Normalize" and pooling is not None:
            normalize = True
        else:
            raise RetrieverError(
                f"{adapter}: backend {backend} cannot run module {kind or module!r} of model {folder} "
                f"({modules_file.name}); it runs Transformer, Pooling ({', '.join(_SUPPORTED_POOLING)}) and "
                "Normalize: use backend: torch for this model"
            )
    if transformer is None or pooling is None:
        raise RetrieverError(
            f"{adapter}: model {folder} has no Transformer + Pooling modules in {modules_file.name}; "
            "use backend: torch for this model"
        )
    return Pipeline(transformer, pooling, normalize, *_transformer_settings(transformer))


def _pooling_modes(config: Any, adapter: str, backend: str, where: Path) -> tuple[str, ...]:
    if not isinstance(config, dict):
        raise RetrieverError(f"{adapter}: {where / 'config.json'} must hold a JSON object")
    if "pooling_mode" in config:
        mode = config["pooling_mode"]
        modes = (mode,) if isinstance(mode, str) else tuple(str(m) for m in mode or ())
    else:
        modes = tuple(mode for key, mode in _LEGACY_POOLING.items() if config.get(key)) or ("mean",)
    unsupported = [m for m in modes if m not in _SUPPORTED_POOLING]
    if unsupported:
        raise RetrieverError(
            f"{adapter}: backend {backend} cannot apply pooling {', '.join(unsupported)} ({where / 'config.json'}); "
            f"it supports {', '.join(_SUPPORTED_POOLING)}: use backend: torch for this model"
        )
    return modes


def _transformer_settings(folder: Path) -> tuple[int | None, bool]:
    try:
        config = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, False
    if not isinstance(config, dict):
        return None, False
    task = config.get("transformer_task", "feature-extraction")
    if task != "feature-extraction":
        raise RetrieverError(
            f"{folder}: transformer_task {task!r} (sentence_bert_config.json); the onnx/openvino backends run "
            "feature-extraction transformers only: use backend: torch for this model"
        )
    length = config.get("max_seq_length")
    length = length if isinstance(length, int) and not isinstance(length, bool) and length > 0 else None
    return length, bool(config.get("do_lower_case", False))


def _read_json(path: Path, adapter: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise RetrieverError(f"{adapter}: cannot read {path}: {error}; the model folder is incomplete") from error


def load_tokenizer(pipeline: Pipeline, max_seq_length: int | None) -> tuple[Any, int]:
    """The model's tokenizer as sentence-transformers loads it, and the length inputs are cut at."""
    from transformers import AutoConfig, AutoTokenizer

    length = max_seq_length or pipeline.max_seq_length
    kwargs = {"model_max_length": length} if length else {}
    tokenizer = AutoTokenizer.from_pretrained(str(pipeline.transformer), local_files_only=True, **kwargs)
    if length is None:  # as sentence-transformers: the tokenizer's limit, capped by the position table
        config = AutoConfig.from_pretrained(str(pipeline.transformer), local_files_only=True)
        positions = getattr(config, "max_position_embeddings", -1)
        length = tokenizer.model_max_length
        if isinstance(positions, int) and positions > 0:
            length = min(length, positions)
        tokenizer.model_max_length = length
    if pipeline.do_lower_case and getattr(tokenizer, "is_fast", False):
        from tokenizers.normalizers import Lowercase
        from tokenizers.normalizers import Sequence as NormalizerSequence

        backend = tokenizer.backend_tokenizer
        if "Lowercase" not in repr(backend.normalizer) and "lowercase: true" not in repr(backend.normalizer).lower():
            parts = [Lowercase()] + ([backend.normalizer] if backend.normalizer is not None else [])
            backend.normalizer = NormalizerSequence(parts)
    return tokenizer, int(length)


# --------------------------------------------------------------------------- encoders and scorers


class Backend:
    """What every loaded model shares: options, device, threads, the export used; ``describe()`` for results."""

    def __init__(self, options: EncoderOptions, device: str, threads: int) -> None:
        self.options = options
        self.device = device
        self.threads = threads
        self.export_path: Path | None = None
        self.export_status: str | None = None  # "built" | "hit" | "rebuilt" | "temporary"

    def cache_options(self) -> dict[str, Any]:
        """What changes the numbers besides the model and the texts: part of the embedding cache key."""
        return cache_options(self.options)

    def describe(self) -> dict[str, Any]:
        """JSON-ready: backend, quantize, precision, device, threads (and the export used)."""
        options = self.options
        info: dict[str, Any] = {
            "backend": options.backend, "quantize": options.quantize, "precision": options.precision,
            "device": self.device, "threads": self.threads,
        }
        if self.export_path is not None:
            info.update(export_path=str(self.export_path), export=self.export_status)
        return info


class Encoder(Backend):
    """Texts -> float32 embeddings (a bi-encoder)."""

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 32, normalize: bool = True, show_progress: bool = False
    ) -> np.ndarray:
        """Embeddings of ``texts`` (float32, one row per text, in order); ``normalize`` L2-normalises them."""
        raise NotImplementedError


class Scorer(Backend):
    """(query, passage) pairs -> float32 relevance scores, the cross-encoder's raw logits (no sigmoid)."""

    def score(
        self, pairs: Sequence[tuple[str, str]], *, batch_size: int = 32, show_progress: bool = False
    ) -> np.ndarray:
        """One score per pair, in order (shape ``(len(pairs),)``)."""
        raise NotImplementedError


class TorchEncoder(Encoder):
    """sentence-transformers' own ``encode`` on a CPU; on a GPU, tokenisation on CPU threads ahead of the GPU.

    On a GPU, ``SentenceTransformer.encode`` tokenises each batch between two forward passes,
    and the tokenizer is the bottleneck: measured on an H100 with all-MiniLM-L6-v2, the GPU
    computed 21k SciFact abstracts/s from ready tokens while ``encode`` gave 1.15k (fp16). So
    on CUDA batches are tokenised by a pool of threads (one tokenizer copy each: a fast
    tokenizer refuses concurrent calls) while the GPU runs the batches before them, and the
    model's own ``forward`` (transformer, pooling, normalisation) does the rest: 1.6k (batch
    256) to 3.0k (batch 1024, 100k passages) in the same run, the same embeddings
    (benchmarks/bench_gpu.py, benchmarks/README.md).
    The tokenisation is checked once against the model's own preprocessing on probe texts,
    and any difference (a model that adds prompts, lower-cases, or feeds more than token
    ids) keeps sentence-transformers' ``encode``.
    """

    def __init__(
        self, model: Any, options: EncoderOptions, device: str, threads: int, pool: dict[str, Any] | None = None
    ) -> None:
        super().__init__(options, device, threads)
        self.model = model
        #: sentence-transformers' multi-process pool (one process per device) when several devices are used.
        self.pool = pool
        # Features the model's preprocessing adds besides the tokens (e.g. modality: text), once checked;
        # None: not checked yet; False: our tokenisation differs, encode() is used.
        self._constant_features: dict[str, Any] | bool | None = None
        self._fitting_batch: int | None = None  # the batch size that fitted after an out-of-memory error
        self._executor: ThreadPoolExecutor | None = None
        self._thread_tokenizers = threading.local()
        self._pool_broken = False

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 32, normalize: bool = True, show_progress: bool = False
    ) -> np.ndarray:
        """See :meth:`Encoder.encode`. A batch too big for the GPU's memory is halved until it fits (warned once)."""
        import torch

        batch_size = min(batch_size, self._fitting_batch or batch_size)
        while True:
            try:
                return self._encode_once(texts, batch_size, normalize, show_progress)
            except torch.OutOfMemoryError:
                if batch_size == 1:
                    raise
                if self.device.startswith("cuda"):
                    torch.cuda.empty_cache()
                smaller = batch_size // 2
                warnings.warn(
                    f"batch_size {batch_size} does not fit in the memory of {self.device}; encoding with "
                    f"batch_size {smaller} (set batch_size: {smaller} or less to skip this retry)",
                    stacklevel=2,
                )
                batch_size = self._fitting_batch = smaller

    def _encode_once(self, texts: Sequence[str], batch_size: int, normalize: bool, show_progress: bool) -> np.ndarray:
        if self.pool is None and self.device.startswith("cuda") and len(texts) > batch_size and self.pipeline_ready():
            return self._encode_pipelined(list(texts), batch_size, normalize, show_progress)
        if self.pool is not None or self._pool_broken:
            return self._encode_on_pool(texts, batch_size, normalize, show_progress)
        array = self.model.encode(
            list(texts),
            batch_size=batch_size,
            show_progress_bar=show_progress,
            normalize_embeddings=normalize,
            convert_to_numpy=True,
        )
        return np.ascontiguousarray(np.asarray(array, dtype=np.float32))

    def _encode_on_pool(self, texts: Sequence[str], batch_size: int, normalize: bool, show: bool) -> np.ndarray:
        if self._pool_broken or self.pool is None:
            raise RetrieverError(
                f"the encoding processes on {self.device} were stopped after an error; run again"
            )
        if not texts:
            return np.empty((0, self.model.get_sentence_embedding_dimension()), dtype=np.float32)
        try:
            array = self.model.encode(
                list(texts), batch_size=batch_size, show_progress_bar=show, normalize_embeddings=normalize,
                convert_to_numpy=True, pool=self.pool,
            )
        except BaseException:
            # A call that stopped early leaves results in the pool's queue, which the next call would
            # take for its own: the pool is stopped and never used again.
            pool, self.pool, self._pool_broken = self.pool, None, True
            stop_pool(pool)
            raise
        return np.ascontiguousarray(np.asarray(array, dtype=np.float32))

    def _tokenize(self, tokenizer: Any, texts: list[str]) -> dict[str, Any]:
        return dict(
            tokenizer(
                texts, padding=True, truncation="longest_first", max_length=self.model.max_seq_length,
                return_tensors="pt",
            )
        )

    def pipeline_ready(self) -> bool:
        """Whether our tokenisation gives exactly the model's own features (checked once, on probe texts)."""
        if self._constant_features is None:
            self._constant_features = False
            tokenizer = getattr(self.model, "tokenizer", None)
            preprocess = getattr(self.model, "preprocess", None) or getattr(self.model, "tokenize", None)
            # A default prompt is added by encode() before preprocessing: our tokenisation would drop it.
            prompted = bool(getattr(self.model, "default_prompt_name", None))
            if tokenizer is not None and preprocess is not None and getattr(tokenizer, "is_fast", False) and not prompted:
                import torch

                probes = list(_PROBES)
                try:
                    want, got = dict(preprocess(probes)), self._tokenize(tokenizer, probes)
                except Exception:  # whatever this model's preprocessing needs, encode() knows it
                    return False
                constant = {k: v for k, v in want.items() if k not in got}
                same = all(k in want and torch.equal(want[k], v) for k, v in got.items())
                if same and not any(isinstance(v, torch.Tensor) for v in constant.values()):
                    self._constant_features = constant
        return isinstance(self._constant_features, dict)

    def _tokenizing_pool(self) -> ThreadPoolExecutor:
        """The threads that tokenise ahead of the GPU, kept for the encoder's life (each keeps its tokenizer copy)."""
        if self._executor is None:
            import weakref

            self._executor = ThreadPoolExecutor(max_workers=max(1, self.threads), thread_name_prefix="tokenize")
            weakref.finalize(self, self._executor.shutdown, wait=False, cancel_futures=True)
        return self._executor

    def _encode_pipelined(self, texts: list[str], batch_size: int, normalize: bool, show: bool) -> np.ndarray:
        import copy
        from collections import deque

        import torch

        constant = self._constant_features
        assert isinstance(constant, dict), "pipeline_ready() first"
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))  # longest first, as encode() sorts
        batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
        pool, local, tokenizer = self._tokenizing_pool(), self._thread_tokenizers, self.model.tokenizer

        def prepare(rows: list[int]) -> dict[str, Any]:
            own = getattr(local, "tokenizer", None)
            if own is None:  # a fast tokenizer refuses concurrent calls: one copy per thread
                own = local.tokenizer = copy.deepcopy(tokenizer)
            features = self._tokenize(own, [texts[i] for i in rows])
            if self.device.startswith("cuda"):  # page-locked: the copy to the GPU overlaps its work
                features = {k: v.pin_memory() for k, v in features.items()}
            return features

        outputs: list[Any] = []
        progress = _progress(len(texts), show)
        pending: deque[Any] = deque()
        upcoming = iter(batches)
        try:
            with torch.inference_mode():
                for rows in upcoming:  # 2 batches per thread in flight: bounded memory, the GPU never waits
                    pending.append(pool.submit(prepare, rows))
                    if len(pending) >= 2 * max(1, self.threads):
                        break
                while pending:
                    features = pending.popleft().result()
                    following = next(upcoming, None)
                    if following is not None:
                        pending.append(pool.submit(prepare, following))
                    on_device = {k: v.to(self.device, non_blocking=True) for k, v in features.items()}
                    embedded = self.model.forward({**on_device, **constant})["sentence_embedding"]
                    if normalize:
                        embedded = torch.nn.functional.normalize(embedded, p=2, dim=1)
                    outputs.append(embedded.float())
                    if progress is not None:
                        progress.update(int(embedded.shape[0]))
                array = torch.cat(outputs).cpu().numpy()
        finally:
            for future in pending:  # an error (out of memory, say) stops the tokenising ahead at once
                future.cancel()
            if progress is not None:
                progress.close()
        restored = np.empty_like(array)
        restored[np.asarray(order)] = array
        return np.ascontiguousarray(restored, dtype=np.float32)


class TorchScorer(Scorer):
    """sentence-transformers' ``CrossEncoder.predict`` with the identity activation (raw logits)."""

    def __init__(self, model: Any, options: EncoderOptions, device: str, threads: int) -> None:
        super().__init__(options, device, threads)
        self.model = model

    def score(
        self, pairs: Sequence[tuple[str, str]], *, batch_size: int = 32, show_progress: bool = False
    ) -> np.ndarray:
        """See :meth:`Scorer.score`."""
        import torch

        if not pairs:
            return np.empty(0, dtype=np.float32)
        scores = self.model.predict(
            [tuple(pair) for pair in pairs],
            batch_size=batch_size,
            show_progress_bar=show_progress,
            activation_fn=torch.nn.Identity(),
            convert_to_numpy=True,
        )
        return np.asarray(scores, dtype=np.float32).reshape(-1)


class GraphRunner:
    """Tokenise, sort by token length, batch, run an exported graph on ``streams`` threads, restore the order.

    ``tokenize(items)`` returns token lists (``input_ids``, maybe ``token_type_ids``);
    ``infer(feeds)`` returns the graph's output and must be safe to call from several
    threads at once; ``head(output, attention_mask)`` turns one batch's output into rows.
    """

    def __init__(
        self,
        infer: Callable[[dict[str, np.ndarray]], np.ndarray],
        input_names: Sequence[str],
        tokenize: Callable[[list[Any]], dict[str, list[list[int]]]],
        head: Callable[[np.ndarray, np.ndarray], np.ndarray],
        tokenizer: Any,
        streams: int,
        one_per_call: bool,
    ) -> None:
        self.infer = infer
        self.input_names = tuple(input_names)
        self.tokenize = tokenize
        self.head = head
        self.streams = streams
        # Dynamic int8 scales activations per call: in a batch, an item's result would depend on its
        # neighbours (cosine moves ~0.005). One item per call keeps it a function of the item alone
        # (cacheable per passage, the same on every worker) and is no slower on a CPU (measured).
        self.one_per_call = one_per_call
        self.sort_by_length = True  # the benchmark switches it off to measure what it is worth
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.pad_left = getattr(tokenizer, "padding_side", "right") == "left"

    def run(self, items: Sequence[Any], batch_size: int, show_progress: bool) -> np.ndarray | None:
        """Rows for ``items`` in order (float32, 2-D), or None when there are no items."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        if self.one_per_call:
            batch_size = 1
        items = list(items)
        parts = []
        bar = _progress(len(items), show_progress)
        try:
            with ThreadPoolExecutor(self.streams) as pool:
                for start in range(0, len(items), _CHUNK):
                    parts.append(self._run_chunk(items[start : start + _CHUNK], batch_size, pool, bar))
        finally:
            if bar is not None:
                bar.close()
        if not parts:
            return None
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def _run_chunk(self, items: list[Any], batch_size: int, pool: ThreadPoolExecutor, bar: Any) -> np.ndarray:
        tokens = self.tokenize(items)
        lengths = np.fromiter((len(ids) for ids in tokens["input_ids"]), dtype=np.int64, count=len(items))
        # Longest first (stable): each batch pads to its own longest item, so sorting cuts the padding.
        order = np.argsort(-lengths, kind="stable") if self.sort_by_length else np.arange(len(items))
        batches = [order[start : start + batch_size] for start in range(0, len(items), batch_size)]

        def run(rows: np.ndarray) -> np.ndarray:
            result = self._run_batch(tokens, rows)
            if bar is not None:
                bar.update(len(rows))
            return result

        out: np.ndarray | None = None
        for rows, result in zip(batches, pool.map(run, batches)):
            if out is None:
                out = np.empty((len(items), result.shape[1]), dtype=np.float32)
            out[rows] = result
        assert out is not None  # items is never empty here
        return out

    def _run_batch(self, tokens: dict[str, list[list[int]]], rows: np.ndarray) -> np.ndarray:
        ids = [tokens["input_ids"][r] for r in rows]
        width = max(len(x) for x in ids)
        feeds = {"input_ids": np.full((len(ids), width), self.pad_id, dtype=np.int64)}
        mask = np.zeros((len(ids), width), dtype=np.int64)
        types = np.zeros((len(ids), width), dtype=np.int64)
        for j, row in enumerate(ids):
            span = slice(width - len(row), width) if self.pad_left else slice(0, len(row))
            feeds["input_ids"][j, span] = row
            mask[j, span] = 1
            if "token_type_ids" in tokens:
                types[j, span] = tokens["token_type_ids"][rows[j]]
        if "attention_mask" in self.input_names:
            feeds["attention_mask"] = mask
        if "token_type_ids" in self.input_names:
            feeds["token_type_ids"] = types
        return self.head(np.asarray(self.infer(feeds), dtype=np.float32), mask)


class GraphEncoder(Encoder):
    """A bi-encoder on an exported graph: our tokenisation and length batching, the model's pooling."""

    def __init__(
        self,
        infer: Callable[[dict[str, np.ndarray]], np.ndarray],
        input_names: Sequence[str],
        tokenizer: Any,
        max_seq_length: int,
        pipeline: Pipeline,
        options: EncoderOptions,
        threads: int,
        streams: int,
    ) -> None:
        super().__init__(options, "cpu", threads)
        self.tokenizer = tokenizer
        self.max_seq_length = max_seq_length
        self.pipeline = pipeline
        self.runner = GraphRunner(
            infer,
            input_names,
            self.tokenize,
            lambda hidden, mask: pool_hidden(hidden, mask, pipeline.pooling, pipeline.normalize),
            tokenizer,
            streams,
            one_per_call=options.quantize == "int8",
        )

    @property
    def sort_by_length(self) -> bool:
        """Batch texts of similar token length together (on by default)."""
        return self.runner.sort_by_length

    @sort_by_length.setter
    def sort_by_length(self, value: bool) -> None:
        self.runner.sort_by_length = value

    def tokenize(self, texts: Sequence[str]) -> dict[str, list[list[int]]]:
        """Token ids (and type ids when the graph takes them), truncated as sentence-transformers does."""
        encoded = self.tokenizer(
            list(texts),
            truncation="longest_first",
            max_length=self.max_seq_length,
            padding=False,
            return_attention_mask=False,
            return_token_type_ids="token_type_ids" in self.runner.input_names,
        )
        return {key: encoded[key] for key in ("input_ids", "token_type_ids") if key in encoded}

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 32, normalize: bool = True, show_progress: bool = False
    ) -> np.ndarray:
        """See :meth:`Encoder.encode`; batches hold texts of similar token length."""
        array = self.runner.run(texts, batch_size, show_progress)
        if array is None:
            return np.empty((0, self.dimension()), dtype=np.float32)
        return _l2_normalize(array) if normalize else array

    def dimension(self) -> int:
        """Embedding width (one short text encoded)."""
        array = self.runner.run(["a"], 1, False)
        assert array is not None
        return int(array.shape[1])


class GraphScorer(Scorer):
    """A cross-encoder on an exported graph: pairs tokenised as sentence-transformers does, raw logits."""

    def __init__(
        self,
        infer: Callable[[dict[str, np.ndarray]], np.ndarray],
        input_names: Sequence[str],
        tokenizer: Any,
        max_length: int,
        options: EncoderOptions,
        threads: int,
        streams: int,
    ) -> None:
        super().__init__(options, "cpu", threads)
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.runner = GraphRunner(
            infer,
            input_names,
            self.tokenize,
            lambda logits, mask: logits[:, :1],
            tokenizer,
            streams,
            one_per_call=options.quantize == "int8",
        )

    def tokenize(self, pairs: Sequence[tuple[str, str]]) -> dict[str, list[list[int]]]:
        """Token ids of each (query, passage) pair, cut longest-first at ``max_length``."""
        encoded = self.tokenizer(
            [pair[0] for pair in pairs],
            [pair[1] for pair in pairs],
            truncation="longest_first",
            max_length=self.max_length,
            padding=False,
            return_attention_mask=False,
            return_token_type_ids="token_type_ids" in self.runner.input_names,
        )
        return {key: encoded[key] for key in ("input_ids", "token_type_ids") if key in encoded}

    def score(
        self, pairs: Sequence[tuple[str, str]], *, batch_size: int = 32, show_progress: bool = False
    ) -> np.ndarray:
        """See :meth:`Scorer.score`."""
        array = self.runner.run(pairs, batch_size, show_progress)
        return np.empty(0, dtype=np.float32) if array is None else array[:, 0].copy()


def pool_hidden(hidden: np.ndarray, mask: np.ndarray, modes: Sequence[str], normalize: bool) -> np.ndarray:
    """sentence-transformers' Pooling (+ Normalize module) in numpy: modes concatenated in order."""
    weights = mask[..., None].astype(np.float32)
    vectors = []
    for mode in modes:
        if mode == "cls":  # the first real token (argmax of the mask handles left padding)
            vectors.append(hidden[np.arange(hidden.shape[0]), mask.argmax(axis=1)])
        elif mode == "max":
            vectors.append(np.where(weights > 0, hidden, -np.inf).max(axis=1))
        else:
            counts = np.maximum(weights.sum(axis=1), 1e-9)
            total = (hidden * weights).sum(axis=1)
            vectors.append(total / (counts if mode == "mean" else np.sqrt(counts)))
    pooled = np.concatenate(vectors, axis=1) if len(vectors) > 1 else vectors[0]
    pooled = np.ascontiguousarray(pooled, dtype=np.float32)
    return _l2_normalize(pooled) if normalize else pooled


def _l2_normalize(array: np.ndarray) -> np.ndarray:
    # torch.nn.functional.normalize: x / max(||x||, 1e-12), what normalize_embeddings does
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return (array / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


def _progress(total: int, show: bool) -> Any:
    if not show or total == 0:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="Encoding", unit="text")


# --------------------------------------------------------------------------- loading


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
    import weakref

    if options.backend != "torch":
        raise RetrieverError(
            f"{adapter}: devices (one process per device) runs backend torch, not {options.backend}; "
            "remove devices, or use backend: torch"
        )
    used = [_torch_device(device, options, adapter, threads) for device in devices]
    model = _models.load_sentence_transformer(resolved, "cpu", adapter)  # each process moves its copy
    if max_seq_length is not None:
        model.max_seq_length = max_seq_length
    _set_precision(model, options)
    pool = model.start_multi_process_pool(target_devices=used)
    encoder = TorchEncoder(model, options, ",".join(used), threads, pool=pool)
    weakref.finalize(encoder, stop_pool, pool)
    return encoder


def stop_pool(pool: dict[str, Any]) -> None:
    """Stop a sentence-transformers multi-process pool once (a second call does nothing)."""
    if pool.get("stopped"):
        return
    pool["stopped"] = True
    from sentence_transformers import SentenceTransformer

    SentenceTransformer.stop_multi_process_pool(pool)  # type: ignore[arg-type]


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
        _check_labels(getattr(model, "num_labels", 1), resolved, adapter)
        _set_precision(model, options)
        return TorchScorer(model, options, used, threads)
    folder = _graph_folder(resolved, device, options, adapter)
    pipeline = Pipeline(folder, (), False, *_transformer_settings(folder))
    config = _read_json(folder / "config.json", adapter)
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


def device_problem(backend: str, device: str, precision: str = "fp32") -> str | None:
    """Why the options cannot run on ``device`` (None when they can): ONNX and OpenVINO run on the CPU
    here, fp16 on a CUDA GPU.

    Known from the config alone, so ``validate`` says it, not only a run that misses the cache.
    """
    if backend != "torch" and device not in ("auto", "cpu"):
        return (
            f"backend {backend} runs on the CPU here, not device {device!r}; "
            "use device: cpu (or auto), or backend: torch on a GPU"
        )
    if precision == "fp16" and device != "auto" and not device.startswith("cuda"):
        return (
            f"precision: fp16 needs a CUDA GPU, not device {device!r}; use precision: fp32 "
            "(or backend: onnx with quantize: int8 for speed on a CPU)"
        )
    return None


def _graph_folder(resolved: _models.ResolvedModel, device: str, options: EncoderOptions, adapter: str) -> Path:
    problem = device_problem(options.backend, device)
    if problem:
        raise RetrieverError(f"{adapter}: {problem}")
    if resolved.path is None:
        raise RetrieverError(
            f"{adapter}: backend {options.backend} exports the model from a local folder, and {resolved.spec!r} "
            "is not downloaded yet; run once with backend: torch (or point model: at a folder)"
        )
    _require(options.backend, adapter)
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
        infer = _session(path, manifest, options.backend, threads, streams)
    finally:
        if status == "temporary":  # loaded into memory (OpenVINO keeps its mapping of the unlinked weights)
            shutil.rmtree(path, ignore_errors=True)
    return infer, manifest, status, None if status == "temporary" else path


def _require(backend: str, adapter: str) -> None:
    module = {"onnx": "onnxruntime", "openvino": "openvino"}[backend]
    try:
        __import__(module)
    except ImportError as error:
        raise RetrieverError(
            f"{adapter}: backend {backend} needs {module}, which is not installed ({error}); "
            f"pip install 'rag-eval[{backend}]'"
        ) from error


def _session(
    folder: Path, manifest: dict[str, Any], backend: str, threads: int, streams: int
) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
    """A thread-safe ``feeds -> graph output`` callable over the exported graph."""
    per_stream = max(1, threads // streams)
    if backend == "onnx":
        import onnxruntime as ort

        settings = ort.SessionOptions()
        settings.intra_op_num_threads = per_stream
        settings.inter_op_num_threads = 1
        settings.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Spinning workers burn the CPU another stream (or another process) could use.
        settings.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = ort.InferenceSession(
            str(folder / manifest["files"][0]["name"]), settings, providers=["CPUExecutionProvider"]
        )
        output = manifest["output"]
        return lambda feeds: session.run([output], feeds)[0]
    import openvino as ov

    core = ov.Core()
    config = {"INFERENCE_NUM_THREADS": threads, "NUM_STREAMS": streams, "INFERENCE_PRECISION_HINT": "f32"}
    compiled = core.compile_model(core.read_model(str(folder / "model.xml")), "CPU", config)
    local = threading.local()  # one infer request per worker thread: a request is not re-entrant

    def infer(feeds: dict[str, np.ndarray]) -> np.ndarray:
        request = getattr(local, "request", None)
        if request is None:
            request = local.request = compiled.create_infer_request()
        return request.infer(feeds)[compiled.output(0)].copy()

    return infer


# --------------------------------------------------------------------------- export cache


def cached_export(
    model_folder: Path,
    pipeline: Pipeline,
    identity: str,
    backend: str,
    quantize: str,
    export_dir: Path | None,
    adapter: str,
    tokenizer: Any,
    kind: str = "embeddings",
) -> tuple[Path, str, dict[str, Any]]:
    """``(folder, status, manifest)`` of the exported graph, built when missing or damaged.

    ``status``: ``hit`` (reused), ``built``, ``rebuilt`` (a damaged entry was replaced)
    or ``temporary`` (``export_dir`` is None or not writable: built in a temporary
    folder that the caller removes once the graph is loaded).
    """
    name = f"{identity}-{backend}-{quantize}" + ("" if kind == "embeddings" else f"-{kind}")
    expected = {
        "format": EXPORT_FORMAT,
        "model_identity": identity,
        "backend": backend,
        "quantize": quantize,
        "kind": kind,
    }
    build = functools.partial(
        build_export, model_folder, pipeline, backend, quantize, expected=expected, adapter=adapter, tokenizer=tokenizer
    )
    if export_dir is not None:
        final = Path(export_dir) / name
        status = "built"
        if final.exists() or final.is_symlink():
            problem = check_export(final, expected)
            if problem is None:
                return final, "hit", _read_manifest(final)
            warnings.warn(
                f"exported model {final} is unusable ({problem}); rebuilding it", ExportCacheWarning, stacklevel=4
            )
            _discard(final)
            status = "rebuilt"
        try:
            return final, status, _build_in_place(final, expected, build)
        except OSError as error:  # read-only or full disk: this run still gets its model
            warnings.warn(
                f"cannot write exported models to {export_dir} ({error}); exporting to a temporary "
                "folder for this run only",
                ExportCacheWarning,
                stacklevel=4,
            )
    staging = Path(tempfile.mkdtemp(prefix="rag_eval_export_"))
    try:
        return staging, "temporary", build(out=staging)
    except OSError as error:
        raise RetrieverError(
            f"{adapter}: cannot export the model to a temporary folder ({error}); free some disk space or set TMPDIR"
        ) from error
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _build_in_place(final: Path, expected: dict[str, Any], build: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    """Build in a temporary folder beside ``final``, then rename it into place (atomic: all or nothing)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".tmp-{final.name[:16]}-", dir=final.parent))
    try:
        manifest = build(out=staging)
        try:
            os.rename(staging, final)
        except OSError:
            if check_export(final, expected) is not None:
                raise
            return _read_manifest(final)  # another process renamed its complete export first: use that one
        return manifest
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def check_export(folder: Path, expected: dict[str, Any]) -> str | None:
    """None when ``folder`` holds a complete export matching ``expected``, else what is wrong."""
    if folder.is_symlink() or not folder.is_dir():
        return "not a folder"
    try:
        manifest = _read_manifest(folder)
    except (OSError, ValueError, RetrieverError) as error:
        return f"manifest.json: {error}"
    for key, value in expected.items():
        if manifest.get(key) != value:
            return f"manifest {key} is {manifest.get(key)!r}, expected {value!r}"
    files = manifest.get("files")
    if not isinstance(files, list) or not files:
        return "manifest lists no files"
    for entry in files:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or "/" in entry["name"]:
            return f"manifest file entry {entry!r} is malformed"
        path = folder / entry["name"]
        try:
            info = os.lstat(path)
        except OSError:
            return f"{path.name} is missing"
        if not path.is_file() or path.is_symlink():
            return f"{path.name} is not a regular file"
        if info.st_size != entry.get("size"):
            return f"{path.name} has {info.st_size} bytes, expected {entry.get('size')}"
        if _models.file_digest(path) != entry.get("sha256"):
            return f"{path.name} checksum differs"
    return None


def _read_manifest(folder: Path) -> dict[str, Any]:
    from rag_eval.files import MiB, check_input_file

    path = folder / "manifest.json"
    check_input_file(path, "export manifest", max_bytes=MiB)  # a FIFO here must not hang the run
    manifest = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(manifest, dict):
        raise ValueError("not a JSON object")
    return manifest


def _discard(folder: Path) -> None:
    # Renamed first so no reader ever opens a half-deleted export, then removed.
    aside = folder.with_name(f".damaged-{folder.name[:16]}-{secrets.token_hex(4)}")
    try:
        os.rename(folder, aside)
    except OSError:
        return  # another process moved it already
    if aside.is_dir() and not aside.is_symlink():
        shutil.rmtree(aside, ignore_errors=True)
    else:
        aside.unlink(missing_ok=True)


def build_export(
    model_folder: Path,
    pipeline: Pipeline,
    backend: str,
    quantize: str,
    *,
    out: Path,
    expected: dict[str, Any],
    adapter: str,
    tokenizer: Any,
) -> dict[str, Any]:
    """Export, optimise / quantise / convert into ``out``, check against torch, write the manifest last."""
    kind = expected["kind"]
    with tempfile.TemporaryDirectory(prefix="rag_eval_onnx_") as work:
        plain = Path(work) / "plain.onnx"
        probe = _export_graph(pipeline, plain, tokenizer, adapter, kind)
        fused = False
        if backend == "onnx":
            graph = plain
            candidate = _fuse(plain, Path(work) / "fused.onnx", pipeline.transformer)
            if candidate is not None and _max_error(_ort_infer(candidate)(probe["feeds"]), probe) <= _FP32_TOLERANCE:
                graph, fused = candidate, True
            target = out / "model.onnx"
            if quantize == "int8":
                _quantize(graph, target)
            else:
                shutil.copyfile(graph, target)
            output = _ort_infer(target)(probe["feeds"])
            names = ["model.onnx"]
        else:
            import openvino as ov

            ov.save_model(ov.convert_model(str(plain)), str(out / "model.xml"), compress_to_fp16=False)
            output = _ov_infer(out / "model.xml")(probe["feeds"])
            names = ["model.xml", "model.bin"]
        error = _max_error(output, probe)
        if quantize == "none" and error > _FP32_TOLERANCE:
            raise RetrieverError(
                f"{adapter}: the {backend} export of {model_folder} differs from torch by {error:.2g} "
                f"(tolerance {_FP32_TOLERANCE}); use backend: torch for this model"
            )
    manifest = {
        **expected,
        "model_folder": str(model_folder),
        "inputs": probe["inputs"],
        "output": probe["output"],
        "opset": ONNX_OPSET,
        "fused": fused,
        "probe_max_abs_error": error,
        "versions": _versions(backend),
        "files": [_file_entry(out / name) for name in names],
    }
    if kind == "embeddings":
        manifest["probe_min_cosine"] = _min_cosine(output, probe, pipeline)
    data = json.dumps(manifest, indent=1, sort_keys=True).encode("utf-8")
    from rag_eval.atomic import write_new_file

    write_new_file(out / "manifest.json", data)
    return manifest


def _export_graph(pipeline: Pipeline, target: Path, tokenizer: Any, adapter: str, kind: str) -> dict[str, Any]:
    """``torch.onnx.export`` of the transformer (``embeddings``: its last hidden state; ``scores``: the
    sequence classifier's logits); returns the probe inputs and torch's outputs on them."""
    import inspect

    import torch
    from transformers import AutoModel, AutoModelForSequenceClassification

    loader = AutoModel if kind == "embeddings" else AutoModelForSequenceClassification
    output = "last_hidden_state" if kind == "embeddings" else "logits"
    try:
        # .float(): a model saved in fp16 / bf16 loads in that dtype; the graph is fp32 (int8 quantises from it).
        model = loader.from_pretrained(
            str(pipeline.transformer), local_files_only=True, attn_implementation="eager"
        ).float().eval()
    except Exception as error:  # transformers' errors are long; one line is enough
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise RetrieverError(
            f"{adapter}: cannot load the transformer in {pipeline.transformer} for export: "
            f"{type(error).__name__}: {first}"
        ) from error
    accepted = set(inspect.signature(model.forward).parameters)
    names: list[str] = [
        n
        for n in ("input_ids", "attention_mask", "token_type_ids")
        if n in accepted and (n != "token_type_ids" or "token_type_ids" in tokenizer.model_input_names)
    ]

    def tokens(texts: Sequence[str]) -> dict[str, np.ndarray]:
        pairs = (list(reversed(texts)),) if kind == "scores" else ()  # a cross-encoder reads (query, passage)
        encoded = tokenizer(
            list(texts),
            *pairs,
            truncation="longest_first",
            padding=True,
            return_tensors="np",
            max_length=min(tokenizer.model_max_length, 512),
        )
        return {n: np.asarray(encoded[n], dtype=np.int64) for n in names if n in encoded}

    # Traced on 2 short texts, checked on the probes (other batch size and lengths): dynamic axes really work.
    trace, feeds = tokens(_PROBES[1:3]), tokens(_PROBES)
    names = list(feeds)

    class Wrapper(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, *args: Any) -> Any:
            return getattr(self.inner(**dict(zip(names, args))), output)

    wrapper = Wrapper(model)
    axes: dict[str, dict[int, str]] = {n: {0: "batch", 1: "sequence"} for n in names}
    axes[output] = {0: "batch", 1: "sequence"} if kind == "embeddings" else {0: "batch"}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TracerWarnings about shapes; the probe check is the real test
        reference = wrapper(*(torch.from_numpy(feeds[n]) for n in names)).float().numpy()
        torch.onnx.export(
            wrapper,
            tuple(torch.from_numpy(trace[n]) for n in names),
            str(target),
            input_names=names,
            output_names=[output],
            dynamic_axes=axes,
            opset_version=ONNX_OPSET,
            do_constant_folding=True,
            dynamo=False,
        )
    return {"inputs": names, "output": output, "feeds": feeds, "hidden": reference}


def _fuse(plain: Path, target: Path, transformer: Path) -> Path | None:
    """ONNX Runtime's transformer fusions (attention, layer norm, gelu); None when they do not apply."""
    try:
        from onnxruntime.transformers.optimizer import optimize_model

        config = json.loads((transformer / "config.json").read_text(encoding="utf-8"))
        heads, hidden = int(config.get("num_attention_heads", 0)), int(config.get("hidden_size", 0))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            optimized = optimize_model(
                str(plain), model_type="bert", num_heads=heads, hidden_size=hidden, opt_level=0
            )  # python fusions only: level 1 costs 2.5 s, no speed
            optimized.save_model_to_file(str(target))
        return target
    except Exception:  # an architecture the fusions do not know: the plain graph is used
        return None


def _quantize(source: Path, target: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with warnings.catch_warnings(), _quiet_root_logger("pre-processing before quantization"):
        warnings.simplefilter("ignore")
        # Per-channel weights: per-tensor scales cost far more accuracy (min cosine 0.90 vs 0.988 on MiniLM).
        # DefaultTensorType: fused com.microsoft nodes have no inferred output type.
        quantize_dynamic(
            str(source),
            str(target),
            weight_type=QuantType.QInt8,
            per_channel=True,
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )


@contextmanager
def _quiet_root_logger(text: str) -> Iterator[None]:
    """Drop one advice message that onnxruntime logs on the root logger (the rest still shows)."""

    def keep(record: logging.LogRecord) -> bool:
        return text not in record.getMessage()

    root = logging.getLogger()
    root.addFilter(keep)
    try:
        yield
    finally:
        root.removeFilter(keep)


def _ort_infer(path: Path) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return lambda feeds: session.run(None, feeds)[0]


def _ov_infer(path: Path) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
    import openvino as ov

    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    return lambda feeds: compiled(feeds)[compiled.output(0)]


def _max_error(output: np.ndarray, probe: dict[str, Any]) -> float:
    """Largest difference to torch's output (hidden states: over real, unpadded tokens only)."""
    output = np.asarray(output, dtype=np.float32)
    mask = probe["feeds"].get("attention_mask") if output.ndim == 3 else None
    weights = mask[..., None] if mask is not None else 1
    return float(np.abs((output - probe["hidden"]) * weights).max())


def _min_cosine(hidden: np.ndarray, probe: dict[str, Any], pipeline: Pipeline) -> float:
    """Smallest cosine between our pooled probe embeddings and torch's (recorded for int8)."""
    feeds = probe["feeds"]
    mask = feeds.get("attention_mask", np.ones_like(feeds["input_ids"]))
    got = pool_hidden(np.asarray(hidden, dtype=np.float32), mask, pipeline.pooling, True)
    want = pool_hidden(probe["hidden"], mask, pipeline.pooling, True)
    return float((got * want).sum(axis=1).min())


def _file_entry(path: Path) -> dict[str, Any]:
    digest = hashlib.sha256()
    with open(path, "rb+") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
        os.fsync(handle.fileno())  # durable before the folder is renamed into place
    return {"name": path.name, "size": path.stat().st_size, "sha256": digest.hexdigest()}


def _versions(backend: str) -> dict[str, str]:
    from importlib import metadata

    names = ["torch", "transformers", "onnx"] + (["onnxruntime"] if backend == "onnx" else ["openvino"])
    versions = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions
