"""The exported-graph backends (ONNX Runtime, OpenVINO): a bi-encoder, a cross-encoder, and the runner both use.

Inputs are tokenised with the model's own tokenizer (transformers ``AutoTokenizer``,
exactly as sentence-transformers loads it), truncated at ``max_seq_length``, sorted by
token length and batched (little padding), the order being restored at the end. Where the
tokenizer is a fast one and its Rust tokenizer gives the same ids on probe texts
(:mod:`rag_eval._models.embeddings.fast_tokens`), the Rust tokenizer is called directly,
without transformers' Python side (``describe()["tokenization"]`` says which ran). Work is
spread over ``streams`` concurrent batches, each on ``threads // streams`` threads: on
small CPUs one thread per batch beats threads inside a batch (see
benchmarks/bench_backends.py). The model's pooling and normalisation (``modules.json``)
are applied in numpy (:mod:`rag_eval._models.embeddings.pipeline`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from rag_eval._models.embeddings.fast_tokens import PAIR_PROBES, TOKEN_PROBES, RustTokens, rust_tokens, same_lists
from rag_eval._models.embeddings.interface import Encoder, Scorer
from rag_eval._models.embeddings.options import EncoderOptions
from rag_eval._models.embeddings.pipeline import Pipeline, l2_normalize, pool_hidden
from rag_eval._models.embeddings.progress import progress_bar

# Texts tokenised at once: bounds the memory of token lists for a huge call.
_CHUNK = 8192


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
        bar = progress_bar(len(items), show_progress)
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
        self.tokens = FastTokens(tokenizer, max_seq_length)
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
        rust = self.tokens.checked(self.runner.input_names, list(TOKEN_PROBES), self._tokenize_transformers)
        return rust.lists(texts) if rust is not None else self._tokenize_transformers(texts)

    def _tokenize_transformers(self, texts: Sequence[str]) -> dict[str, list[list[int]]]:
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

    def describe(self) -> dict[str, Any]:
        """See :meth:`Backend.describe`, with the tokenising path (``rust`` or ``transformers``)."""
        rust = self.tokens.checked(self.runner.input_names, list(TOKEN_PROBES), self._tokenize_transformers)
        return {**super().describe(), "tokenization": self.tokens.describe(rust)}

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
        self.tokens = FastTokens(tokenizer, max_length)
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
        rust = self.tokens.checked(self.runner.input_names, list(PAIR_PROBES), self._tokenize_transformers)
        return rust.lists([(str(q), str(p)) for q, p in pairs]) if rust is not None else self._tokenize_transformers(pairs)

    def _tokenize_transformers(self, pairs: Sequence[tuple[str, str]]) -> dict[str, list[list[int]]]:
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

    def describe(self) -> dict[str, Any]:
        """See :meth:`Backend.describe`, with the tokenising path (``rust`` or ``transformers``)."""
        rust = self.tokens.checked(self.runner.input_names, list(PAIR_PROBES), self._tokenize_transformers)
        return {**super().describe(), "tokenization": self.tokens.describe(rust)}

    def score(
        self, pairs: Sequence[tuple[str, str]], *, batch_size: int = 32, show_progress: bool = False
    ) -> np.ndarray:
        """See :meth:`Scorer.score`."""
        array = self.runner.run(pairs, batch_size, show_progress)
        return np.empty(0, dtype=np.float32) if array is None else array[:, 0].copy()


class FastTokens:
    """The Rust tokenizer of a graph backend, once checked against transformers' token lists (None: it differs)."""

    def __init__(self, tokenizer: Any, max_length: int) -> None:
        self.tokenizer = tokenizer
        self.max_length = max_length
        self._rust: RustTokens | bool | None = None

    def checked(
        self, input_names: Sequence[str], probes: list[Any], reference: Callable[[Any], dict[str, list[list[int]]]]
    ) -> RustTokens | None:
        """The Rust tokenizer when its lists equal ``reference(probes)`` (transformers'), else None; checked once."""
        if self._rust is None:
            self._rust = False
            keys = ["input_ids"] + (["token_type_ids"] if "token_type_ids" in input_names else [])
            rust = rust_tokens(self.tokenizer, self.max_length, len(keys) > 1)
            if rust is not None and same_lists(reference(probes), rust.lists(probes), keys):
                self._rust = rust
        return self._rust if isinstance(self._rust, RustTokens) else None

    @staticmethod
    def describe(rust: RustTokens | None) -> dict[str, Any]:
        """The tokenising path for ``describe()``."""
        return {"path": "rust", "tokenizer": rust.source} if rust is not None else {"path": "transformers"}
