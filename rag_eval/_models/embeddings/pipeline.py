"""What a sentence-transformers folder computes around its transformer, for the exported backends.

``read_pipeline`` reads ``modules.json`` (Transformer, Pooling, Normalize; anything else is
refused with one line), ``load_tokenizer`` loads the model's own tokenizer as
sentence-transformers does, and ``pool_hidden`` applies the pooling and normalisation in
numpy. Shared by :mod:`rag_eval._models.embeddings.loading` (encoding) and
:mod:`rag_eval._models.embeddings.export` (building and checking exports). Imports numpy only;
transformers when a tokenizer is loaded.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag_eval._core.errors import RetrieverError

#: Texts every export and the GPU tokenising pipeline are checked on (empty, short, non-ASCII, long).
PROBES = (
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
        return Pipeline(folder, ("mean",), False, *transformer_settings(folder))
    modules = read_json(modules_file, adapter)
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
            pooling = _pooling_modes(read_json(path / "config.json", adapter), adapter, backend, path)
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
    return Pipeline(transformer, pooling, normalize, *transformer_settings(transformer))


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


def transformer_settings(folder: Path) -> tuple[int | None, bool]:
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


def read_json(path: Path, adapter: str) -> Any:
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
    return l2_normalize(pooled) if normalize else pooled


def l2_normalize(array: np.ndarray) -> np.ndarray:
    # torch.nn.functional.normalize: x / max(||x||, 1e-12), what normalize_embeddings does
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return (array / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
