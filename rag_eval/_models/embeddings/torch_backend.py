"""The torch backend: sentence-transformers' bi-encoder (:class:`TorchEncoder`) and cross-encoder (:class:`TorchScorer`).

``precision: fp16`` runs on a CUDA GPU; ``devices`` (several GPUs) runs one process per device
through sentence-transformers' multi-process pool (:func:`stop_pool` ends it). torch is
imported inside the methods that need it.
"""

from __future__ import annotations

import contextlib
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
from rag_eval._models.embeddings.device_copy import DeviceCopies
from rag_eval._models.embeddings.fast_tokens import (
    PAIR_PROBES,
    TOKEN_PROBES,
    RustTokens,
    rust_tokens,
    same_as_transformers,
)
from rag_eval._models.embeddings.interface import Encoder, Scorer
from rag_eval._models.embeddings.options import EncoderOptions
from rag_eval._models.embeddings.pipeline import PROBES
from rag_eval._models.embeddings.progress import progress_bar
from rag_eval._models.embeddings.token_feed import TokenFeed


class TorchEncoder(Encoder):
    """sentence-transformers' model, fed by the Rust tokenizer on threads ahead of it (CPU and GPU).

    ``SentenceTransformer.encode`` tokenises each batch between two forward passes, through
    transformers' tokenizer, whose Python side (lists, then tensors, under the GIL) is the
    bottleneck on a GPU: on an H200, MiniLM fp16 ran its forward pass at 32k-36k passages/s
    from ready tokens, the Rust tokenizer alone at 15k/s on 16 cores, and ``encode`` at 2.5k/s.
    So, where the model's tokenizer is a fast one, batches formed by length are tokenised by
    the Rust tokenizer itself (:mod:`.fast_tokens`, :mod:`.token_feed`: ``encode_batch``
    releases the GIL, so worker threads tokenise the next batches while the model runs one),
    copied to the GPU from pinned memory on a stream of their own (:mod:`.device_copy`), and
    the model's own ``forward`` (transformer, pooling, normalisation) does the rest. Each text
    is tokenised once, and its token count before truncation comes from the same encodings
    (``last_token_lengths``). On a CPU, ``encode`` is kept (tokenising is a few per cent of the
    time there); the same path runs there, one tokenising thread, when called directly
    (``_encode_pipelined``: the tests and benchmarks/bench_backends.py do).

    The tokens are checked once against the model's own preprocessing (on probe texts): any
    difference (a model that adds prompts, or feeds more than token ids) keeps the path
    before it: transformers' tokenizer on CPU threads ahead of the GPU (one tokenizer copy
    per thread: a transformers tokenizer refuses concurrent calls), or
    sentence-transformers' ``encode``. ``describe()["tokenization"]`` says which ran.
    A call of one batch or less goes to ``encode`` (nothing to overlap).
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
        # The Rust tokenizer path: None not checked yet, False not usable; checked again if max_seq_length changes.
        self._rust: RustTokens | bool | None = None
        self._rust_length: int | None = None
        self._feed: TokenFeed | None = None

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
        if self._pipelined(len(texts), batch_size):
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

    def _pipelined(self, count: int, batch_size: int) -> bool:
        """Whether a call of ``count`` texts runs our own tokenisation ahead of the model (else ``encode``).

        On a CUDA GPU only: on a CPU the model's compute dwarfs tokenising (a few per cent of
        the time; benchmarks/bench_backends.py measures both), and ``encode`` is kept there.
        """
        if self.pool is not None or self._pool_broken or count <= batch_size:
            return False
        return self.device.startswith("cuda") and self.pipeline_ready()

    def counting_tokenizer(self) -> str | None:
        """See :meth:`Encoder.counting_tokenizer` (the Rust tokenizer, or the model's as transformers set it up)."""
        if isinstance(self._rust, RustTokens):
            return self._rust.to_str()
        backend = getattr(getattr(self.model, "tokenizer", None), "backend_tokenizer", None)
        return backend.to_str() if backend is not None else None

    def describe(self) -> dict[str, Any]:
        """See :meth:`Backend.describe`; ``tokenization`` says which tokenising path a call of several batches takes."""
        info = super().describe()
        info["tokenization"] = self.tokenization()
        return info

    def tokenization(self) -> dict[str, Any]:
        """The tokenising path: ``rust`` (the tokenizer file it read), ``transformers threads`` or ``encode()``."""
        if self.pool is not None or self._pool_broken:
            return {"path": "encode()", "note": "sentence-transformers' encode in one process per device"}
        if not self.device.startswith("cuda") or not self.pipeline_ready():
            return {"path": "encode()"}
        rust = self.fast_tokens()
        if rust is not None:
            return {"path": "rust", "tokenizer": rust.source, "threads": self._feed_threads()}
        return {"path": "transformers threads", "threads": max(1, self.threads)}

    def fast_tokens(self) -> RustTokens | None:
        """The Rust tokenizer set up as the model's own (:mod:`.fast_tokens`), or None where it differs or is missing.

        Checked once (again if ``max_seq_length`` changes) against the model's preprocessing on
        :data:`TOKEN_PROBES`: ids, type ids and attention masks equal, no feature missing.
        """
        length = getattr(self.model, "max_seq_length", None)
        if self._rust is None or self._rust_length != length:
            self._rust, self._rust_length, self._feed = False, length, None
            if self.pipeline_ready():
                checked = checked_rust_tokens(self.model, list(TOKEN_PROBES), length)
                self._rust = checked[0] if checked is not None else False
        return self._rust if isinstance(self._rust, RustTokens) else None

    def _feed_threads(self) -> int:
        # On a GPU every CPU tokenises; on a CPU the model takes them, and one thread keeps a batch ready.
        return max(1, self.threads) if self.device.startswith("cuda") else 1

    def _token_feed(self, tokens: RustTokens) -> TokenFeed:
        if self._feed is None or self._feed.tokens is not tokens:
            self._feed = TokenFeed(tokens, self._feed_threads())
        return self._feed

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
        """Our own tokenisation ahead of the model: the Rust tokenizer where it is checked, else transformers' on threads."""
        tokens = self.fast_tokens()
        if tokens is not None:
            return self._encode_rust(tokens, texts, batch_size, normalize, show)
        return self._encode_threads(texts, batch_size, normalize, show)

    def _encode_rust(
        self, tokens: RustTokens, texts: list[str], batch_size: int, normalize: bool, show: bool
    ) -> np.ndarray:
        import torch

        constant = self._constant_features
        assert isinstance(constant, dict), "pipeline_ready() first"
        copies = DeviceCopies(self.device)
        rows: list[np.ndarray] = []
        counted: list[np.ndarray | None] = []
        progress = progress_bar(len(texts), show)
        try:
            with torch.inference_mode(), contextlib.closing(
                self._token_feed(tokens).batches(texts, batch_size, count=True)
            ) as batches:
                for batch in batches:
                    inputs = copies.inputs(batch.tokens.features())
                    embedded = self.model.forward({**inputs, **constant})["sentence_embedding"]
                    if normalize:
                        embedded = torch.nn.functional.normalize(embedded, p=2, dim=1)
                    copies.output(embedded.float())
                    rows.append(batch.rows)
                    counted.append(batch.tokens.counts)
                    if progress is not None:
                        progress.update(len(batch.rows))
                array = copies.gather()
        finally:
            if progress is not None:
                progress.close()
        order = np.concatenate(rows)
        restored = np.empty_like(array)
        restored[order] = array
        if all(c is not None for c in counted):
            token_lengths = np.empty(len(texts), dtype=np.int64)
            token_lengths[order] = np.concatenate([c for c in counted if c is not None])
            self.last_token_lengths = token_lengths
        return np.ascontiguousarray(restored, dtype=np.float32)

    def _encode_threads(self, texts: list[str], batch_size: int, normalize: bool, show: bool) -> np.ndarray:
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
    """sentence-transformers' cross-encoder with the identity activation (raw logits), fed as :class:`TorchEncoder` is.

    Where the Rust tokenizer gives the model's own features for (query, passage) pairs (checked
    once on :data:`PAIR_PROBES`), pairs are sorted by length, tokenised on threads ahead of the
    model and scored by its ``forward``; otherwise ``CrossEncoder.predict``.
    """

    def __init__(self, model: Any, options: EncoderOptions, device: str, threads: int) -> None:
        super().__init__(options, device, threads)
        self.model = model
        self._rust: tuple[RustTokens, dict[str, Any]] | bool | None = None  # (tokens, constant features) once checked
        self._feed: TokenFeed | None = None

    def fast_tokens(self) -> tuple[RustTokens, dict[str, Any]] | None:
        """The Rust tokenizer for pairs and the constant features the model's preprocessing adds, or None."""
        if self._rust is None:
            length = getattr(self.model, "max_seq_length", None)
            self._rust = checked_rust_tokens(self.model, list(PAIR_PROBES), length) or False
        return self._rust if isinstance(self._rust, tuple) else None

    def describe(self) -> dict[str, Any]:
        """See :meth:`Backend.describe`; ``tokenization`` says which tokenising path scores pairs."""
        info = super().describe()
        checked = self.fast_tokens()
        info["tokenization"] = (
            {"path": "rust", "tokenizer": checked[0].source, "threads": self._feed_threads()}
            if checked is not None
            else {"path": "predict()"}
        )
        return info

    def _feed_threads(self) -> int:
        return max(1, self.threads) if self.device.startswith("cuda") else 1

    def score(
        self, pairs: Sequence[tuple[str, str]], *, batch_size: int = 32, show_progress: bool = False
    ) -> np.ndarray:
        """See :meth:`Scorer.score`."""
        import torch

        if not pairs:
            return np.empty(0, dtype=np.float32)
        checked = self.fast_tokens()
        if checked is not None:
            return self._score_rust(*checked, [(str(q), str(p)) for q, p in pairs], batch_size, show_progress)
        scores = self.model.predict(
            [tuple(pair) for pair in pairs],
            batch_size=batch_size,
            show_progress_bar=show_progress,
            activation_fn=torch.nn.Identity(),
            convert_to_numpy=True,
        )
        return np.asarray(scores, dtype=np.float32).reshape(-1)

    def _score_rust(
        self, tokens: RustTokens, constant: dict[str, Any], pairs: list[tuple[str, str]], batch_size: int, show: bool
    ) -> np.ndarray:
        import torch

        if self._feed is None:
            self._feed = TokenFeed(tokens, self._feed_threads())
        copies = DeviceCopies(self.device)
        rows: list[np.ndarray] = []
        progress = progress_bar(len(pairs), show)
        try:
            with torch.inference_mode(), contextlib.closing(self._feed.batches(pairs, batch_size)) as batches:
                for batch in batches:
                    inputs = copies.inputs(batch.tokens.features())
                    # As predict(): the model's __call__ (a compiled model applies), logits upcast to fp32.
                    copies.output(self.model({**inputs, **constant})["scores"].float().reshape(-1))
                    rows.append(batch.rows)
                    if progress is not None:
                        progress.update(len(batch.rows))
                scores = copies.gather()
        finally:
            if progress is not None:
                progress.close()
        restored = np.empty(len(pairs), dtype=np.float32)
        restored[np.concatenate(rows)] = scores
        return restored


def checked_rust_tokens(model: Any, probes: list[Any], length: int | None) -> tuple[RustTokens, dict[str, Any]] | None:
    """The Rust tokenizer for ``model`` and the constant features its preprocessing adds (``modality``, say),
    when its tokens equal the model's own preprocessing of ``probes`` (texts or pairs); else None.

    None too for a model with a default prompt (``encode`` adds it before tokenising) or whose
    preprocessing gives any tensor the Rust path does not make (position ids, pixel values, ...).
    """
    import torch

    tokenizer = getattr(model, "tokenizer", None)
    preprocess = getattr(model, "preprocess", None)
    if tokenizer is None or preprocess is None or getattr(model, "default_prompt_name", None):
        return None
    try:
        want = dict(preprocess(probes))
    except Exception:  # whatever this model's preprocessing needs, its own encode()/predict() knows it
        return None
    tensors = {key: value for key, value in want.items() if isinstance(value, torch.Tensor)}
    rust = rust_tokens(tokenizer, length, "token_type_ids" in tensors)
    if rust is None or not same_as_transformers(tensors, rust.encode(probes)):
        return None
    return rust, {key: value for key, value in want.items() if key not in tensors}


def stop_pool(pool: dict[str, Any]) -> None:
    """Stop a sentence-transformers multi-process pool once (a second call does nothing)."""
    if pool.get("stopped"):
        return
    pool["stopped"] = True
    from sentence_transformers import SentenceTransformer

    SentenceTransformer.stop_multi_process_pool(pool)  # type: ignore[arg-type]
