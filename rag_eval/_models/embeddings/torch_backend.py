"""The torch backend: sentence-transformers' bi-encoder (:class:`TorchEncoder`) and cross-encoder (:class:`TorchScorer`).

``precision: fp16`` runs on a CUDA GPU; ``devices`` (several GPUs) runs one process per device
through sentence-transformers' multi-process pool (:func:`stop_pool` ends it). torch is
imported inside the methods that need it.
"""

from __future__ import annotations

import copy
import threading
import warnings
import weakref
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from rag_eval._core.errors import RetrieverError
from rag_eval._models.embeddings.interface import Encoder, Scorer
from rag_eval._models.embeddings.options import EncoderOptions
from rag_eval._models.embeddings.pipeline import PROBES
from rag_eval._models.embeddings.progress import progress_bar


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
        progress = progress_bar(len(texts), show)
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


def stop_pool(pool: dict[str, Any]) -> None:
    """Stop a sentence-transformers multi-process pool once (a second call does nothing)."""
    if pool.get("stopped"):
        return
    pool["stopped"] = True
    from sentence_transformers import SentenceTransformer

    SentenceTransformer.stop_multi_process_pool(pool)  # type: ignore[arg-type]
