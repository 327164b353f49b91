"""Batches formed by length and tokenised ahead of the model on worker threads, handed over in order.

The encoder's loop asks :meth:`TokenFeed.batches` for one batch at a time while the threads
tokenise the next ones: the Rust tokenizer releases the GIL in ``encode_batch``, so the
threads run in parallel with each other and with the model (on a GPU the model's kernels run
while the CPU tokenises). Each batch is cut into pieces of about ``batch_size / threads``
texts so that all threads work on the batch needed next and the first one is ready soon;
at most a few batches are tokenised ahead (bounded memory). Every text is tokenised once:
the token counts before truncation come from the same encodings. Imports numpy only.
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Generator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag_eval._models.embeddings.fast_tokens import RustTokens, TokenArrays

# Texts per piece of work: fewer costs more calls, more leaves threads idle on the batch needed next.
_SMALLEST_PIECE, _LARGEST_PIECE = 16, 256


def length_order(items: Sequence[Any]) -> np.ndarray:
    """Positions of ``items`` longest first (characters; a pair counts both texts), ties in input order.

    sentence-transformers' ``encode`` and ``predict`` sort by the same measure, so batches hold
    texts of similar length and pad little.
    """
    lengths = np.fromiter(
        (len(item) if isinstance(item, str) else sum(len(part) for part in item) for item in items),
        dtype=np.int64,
        count=len(items),
    )
    return np.argsort(-lengths, kind="stable")


@dataclass
class TokenBatch:
    """One batch: the positions of its items in the caller's sequence, and their tokens."""

    rows: np.ndarray
    tokens: TokenArrays


class TokenFeed:
    """Tokenises length-sorted batches on ``threads`` worker threads, a few batches ahead of the caller.

    The threads are kept for the feed's life (stopped when it is garbage-collected).
    """

    def __init__(self, tokens: RustTokens, threads: int) -> None:
        self.tokens = tokens
        self.threads = max(1, threads)
        self._pool = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="tokenize")
        weakref.finalize(self, self._pool.shutdown, wait=False, cancel_futures=True)

    def piece_size(self, batch_size: int) -> int:
        """Texts per piece of work: a batch shared out over the threads, within bounds."""
        return max(_SMALLEST_PIECE, min(_LARGEST_PIECE, -(-batch_size // self.threads)))

    def batches(
        self, items: Sequence[Any], batch_size: int, *, count: bool = False
    ) -> Generator[TokenBatch, None, None]:
        """The batches of ``items`` (texts or pairs), longest first, each tokenised once, in order.

        ``count``: the tokens also carry each item's count before truncation. Closing the
        iterator early (an error in the caller's loop) cancels the work not started yet.
        """
        items = list(items)
        order = length_order(items)
        batch_rows = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
        piece = self.piece_size(batch_size)
        plan = iter(
            (index, rows[start : start + piece])
            for index, rows in enumerate(batch_rows)
            for start in range(0, len(rows), piece)
        )
        # Two batches ahead, and never fewer pieces than threads: the threads never wait for the caller.
        window = max(2 * self.threads, 2 * -(-batch_size // piece))
        pending: deque[tuple[int, Future[TokenArrays]]] = deque()

        def fill() -> None:
            while len(pending) < window:
                following = next(plan, None)
                if following is None:
                    return
                index, rows = following
                pending.append((index, self._pool.submit(self.tokens.encode, [items[i] for i in rows], count=count)))

        try:
            fill()
            for index, rows in enumerate(batch_rows):
                parts = []
                while pending and pending[0][0] == index:
                    parts.append(pending.popleft()[1].result())
                    fill()
                yield TokenBatch(rows, join(parts, self.tokens))
        finally:
            for _, future in pending:
                future.cancel()


def join(parts: list[TokenArrays], tokens: RustTokens) -> TokenArrays:
    """Pieces of one batch as one, padded to the batch's longest item as transformers pads a batch."""
    if len(parts) == 1:
        return parts[0]
    width = max(part.width for part in parts)
    rows = sum(int(part.input_ids.shape[0]) for part in parts)

    def stacked(name: str, fill: int) -> np.ndarray:
        out = np.full((rows, width), fill, dtype=np.int64)
        start = 0
        for part in parts:
            block = getattr(part, name)
            end = start + block.shape[0]
            if tokens.pad_left:
                out[start:end, width - block.shape[1] :] = block
            else:
                out[start:end, : block.shape[1]] = block
            start = end
        return out

    counts = [part.counts for part in parts]
    return TokenArrays(
        stacked("input_ids", tokens.pad_id),
        stacked("attention_mask", 0),
        stacked("token_type_ids", tokens.pad_type_id) if tokens.type_ids else None,
        np.concatenate([c for c in counts if c is not None]) if all(c is not None for c in counts) else None,
    )
