"""How passages are encoded: the options (backend, quantisation, precision, threads), their checks, their cache keys.

:class:`EncoderOptions` is what a loader takes; :class:`EncodingParams` is the same fields
mixed into an adapter's params (dense, cross_encoder), so that a clash is one line when the
config is validated, before any model loads. :func:`cache_options` and
:func:`saved_in_half_precision` say which of them change the numbers (part of the embedding
cache key). Importing this module needs pydantic only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rag_eval._core.versions import package_version
from rag_eval._models.cpus import MAX_THREADS, check_threads
from rag_eval._models.embeddings.export import EXPORT_FORMATS


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
    threads: int | None = Field(
        None, ge=1, description=f"CPU threads (default: the CPUs available to the process; at most {MAX_THREADS})"
    )
    streams: int | None = Field(None, ge=1, description="onnx/openvino: batches run at once (default: one per thread)")

    # torch.set_num_threads(100000) segfaults: bounded where the option is read
    _threads_bounded = field_validator("threads")(check_threads)

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
    threads: int | None = Field(
        None, ge=1, description=f"CPU threads for encoding (default: the CPUs available; at most {MAX_THREADS})"
    )
    streams: int | None = Field(None, ge=1, description="onnx/openvino: batches encoded at once")

    _threads_bounded = field_validator("threads")(check_threads)

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
        keyed["export_format"] = EXPORT_FORMATS[options.backend]
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
