"""What a loaded model offers, whatever runs it: :class:`Encoder` (texts -> embeddings), :class:`Scorer` (pairs -> scores).

Both are a :class:`Backend`: their options, device and threads, and ``describe()`` for the
results file. The torch implementations are in :mod:`rag_eval._models.embeddings.torch_backend`,
the exported-graph ones (ONNX Runtime, OpenVINO) in :mod:`rag_eval._models.embeddings.graph_backend`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rag_eval._models.embeddings.options import EncoderOptions, cache_options


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
