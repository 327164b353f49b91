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

Exports are built, checked against torch and cached by :mod:`rag_eval._models.embeddings.export`;
the model's pooling and tokenizer come from :mod:`rag_eval._models.embeddings.pipeline`.

Inputs are tokenised with the model's own tokenizer (transformers ``AutoTokenizer``,
exactly as sentence-transformers loads it), truncated at ``max_seq_length``, sorted by
token length and batched (little padding), the order being restored at the end. Work is
spread over ``threads`` CPU threads (default: the CPUs this process may use) as
``streams`` concurrent batches: on small CPUs one thread per batch beats threads inside
a batch (see benchmarks/bench_backends.py). torch, onnxruntime and openvino are imported
only when an encoder is loaded.
"""

from __future__ import annotations

import copy
import json
import math
import os
import shutil
import threading
import warnings
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from rag_eval._core.errors import RetrieverError
from rag_eval._core.versions import package_version
from rag_eval._models import files as _models
from rag_eval._models.embeddings.export import EXPORT_FORMAT, cached_export
from rag_eval._models.embeddings.pipeline import (
    PROBES,
    Pipeline,
    l2_normalize,
    load_tokenizer,
    pool_hidden,
    read_json,
    read_pipeline,
    transformer_settings,
)

# Texts tokenised at once: bounds the memory of token lists for a huge call.
_CHUNK = 8192


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
        options = self.encoder_options()
        # The adapter's own `device` field (dense and cross_encoder both have one).
        problem = device_problem(options.backend, getattr(self, "device", "auto"), options.precision)
        if problem:
            raise ValueError(problem)
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
        keyed["onnxruntime"] = package_version("onnxruntime")
    return keyed


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
    """Texts -> float32 embeddings (a bi-encoder).

    ``last_token_lengths``: after a call of ``encode``, each text's token count before
    truncation, when the encoder tokenised whole texts anyway and got them for nothing
    (the GPU pipeline), else None. The truncation report then need not tokenise them again.
    """

    last_token_lengths: np.ndarray | None = None

    def counting_tokenizer(self) -> str | None:
        """The tokenizer (as ``tokenizers`` JSON) that counted ``last_token_lengths``, or None."""
        return None

    def texts_per_call(self, batch_size: int, default: int) -> int:
        """How many texts a caller should hand ``encode`` at once (the store writes after each call)."""
        return default

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
    computed 21k SciFact abstracts/s from ready tokens. ``encode`` keeps up only while the
    tokenizer's own threads are on: 2,265 abstracts/s with them, 938 without them (after a
    fork, or ``TOKENIZERS_PARALLELISM=false``). So on CUDA batches are tokenised by a pool of
    threads (one tokenizer copy each: a fast tokenizer refuses concurrent calls) while the
    GPU runs the batches before them, and the model's own ``forward`` (transformer, pooling,
    normalisation) does the rest: 2,372 and 2,157 abstracts/s in the same run with those
    threads on and off, the same embeddings (benchmarks/bench_gpu_paths.py). The pipeline
    also counts each text's tokens before truncation for nothing (``last_token_lengths``).
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
        self.last_token_lengths = None
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

    def counting_tokenizer(self) -> str | None:
        """See :meth:`Encoder.counting_tokenizer` (the model's fast tokenizer, as transformers set it up)."""
        backend = getattr(getattr(self.model, "tokenizer", None), "backend_tokenizer", None)
        return backend.to_str() if backend is not None else None

    def texts_per_call(self, batch_size: int, default: int) -> int:
        """On a GPU, 16 batches: the pipeline tokenises the next batches while the GPU runs one."""
        if self.pool is None and self.device.startswith("cuda"):
            return max(default, 16 * batch_size)
        return default

    def _tokenize(self, tokenizer: Any, texts: list[str]) -> Any:
        """The model's inputs for ``texts`` (a BatchEncoding: a dict of tensors that keeps the tokenizer's encodings)."""
        return tokenizer(
            texts, padding=True, truncation="longest_first", max_length=self.model.max_seq_length, return_tensors="pt"
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

                probes = list(PROBES)
                try:
                    want, got = dict(preprocess(probes)), dict(self._tokenize(tokenizer, probes))
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

            self._executor = ThreadPoolExecutor(max_workers=max(1, self.threads), thread_name_prefix="tokenize")
            weakref.finalize(self, self._executor.shutdown, wait=False, cancel_futures=True)
        return self._executor

    def _encode_pipelined(self, texts: list[str], batch_size: int, normalize: bool, show: bool) -> np.ndarray:

        import torch

        constant = self._constant_features
        assert isinstance(constant, dict), "pipeline_ready() first"
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))  # longest first, as encode() sorts
        batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
        pool, local, tokenizer = self._tokenizing_pool(), self._thread_tokenizers, self.model.tokenizer
        specials = tokenizer.num_special_tokens_to_add(pair=False)

        def prepare(rows: list[int]) -> tuple[dict[str, Any], list[int] | None]:
            own = getattr(local, "tokenizer", None)
            if own is None:  # a fast tokenizer refuses concurrent calls: one copy per thread
                own = local.tokenizer = copy.deepcopy(tokenizer)
            encoded = self._tokenize(own, [texts[i] for i in rows])
            lengths = untruncated_lengths(encoded, specials)
            features = dict(encoded)
            if self.device.startswith("cuda"):  # page-locked: the copy to the GPU overlaps its work
                features = {k: v.pin_memory() for k, v in features.items()}
            return features, lengths

        outputs: list[Any] = []
        counted: list[list[int] | None] = []
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
                    features, lengths = pending.popleft().result()
                    counted.append(lengths)
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
        if counted and all(lengths is not None for lengths in counted):
            token_lengths = np.empty(len(texts), dtype=np.int64)
            token_lengths[np.asarray(order)] = np.concatenate([np.asarray(c, dtype=np.int64) for c in counted if c])
            self.last_token_lengths = token_lengths
        return np.ascontiguousarray(restored, dtype=np.float32)


def untruncated_lengths(encoded: Any, specials: int) -> list[int] | None:
    """Each text's token count before truncation, from a fast tokenizer's output (None when it kept no encodings).

    Truncation moves the tokens past the limit into ``overflowing`` pieces (no stride), each
    with the special tokens added again: the text's count is the tokens of every piece, less
    the repeated special tokens. Padding is not counted (the attention mask says which are).
    """
    encodings = getattr(encoded, "encodings", None)
    if not encodings:
        return None
    return [
        sum(encoding.attention_mask) + sum(sum(piece.attention_mask) - specials for piece in encoding.overflowing)
        for encoding in encodings
    ]


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
        return l2_normalize(array) if normalize else array

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

