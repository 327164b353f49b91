"""Encoding through the embedding store: only the texts it lacks are encoded, each batch stored as soon as it is."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from rag_eval._models.embeddings.store import EmbeddingCacheWarning, EmbeddingStore, text_key


def encode_missing(
    texts: Sequence[str],
    encode: Callable[[list[str]], np.ndarray],
    store: EmbeddingStore | None,
    *,
    write_every: int | Callable[[], int] = 1024,
    progress: Callable[[int], None] | None = None,
    dim: int | None = None,
) -> tuple[np.ndarray, dict[str, int]]:
    """Embeddings of ``texts`` (float32, one row per text, in order), encoding only what the store lacks.

    Distinct missing texts are encoded ``write_every`` at a time and each batch is put into
    the store as soon as it is encoded, on a writer thread while the next batch encodes (a
    shard's fsync can take longer than a GPU takes to encode it): a run killed during encoding
    loses at most the batch in flight and the one being written, and an error in ``encode``
    still lets every batch encoded before it reach the store. ``progress`` is called with each
    batch's size. Returns the array and ``{"reused": r, "encoded": e, "duplicates": d}``: r + e
    distinct texts, d repeats of them (r + e + d = len(texts)). With ``store=None`` every distinct text is encoded, nothing written.
    ``write_every`` may be a callable, asked only when something is missing (it may load the model
    to decide: a GPU encodes more texts a call than a CPU).

    Stored vectors whose dimension is not the encoder's are not this model's (a namespace has one
    model): they are a miss with an :class:`EmbeddingCacheWarning`, encoded again with the rest.
    That takes an encoded batch; when nothing is missing, only ``dim`` (the model's dimension, when
    the caller knows it) can tell: stored shards of another dimension are then dropped (warned,
    removed) before anything is read, and their texts encoded again.
    """
    keys = [text_key(text) for text in texts]
    first: dict[str, int] = {}
    for i, key in enumerate(keys):
        first.setdefault(key, i)
    distinct_keys = list(first)
    slot = {key: n for n, key in enumerate(distinct_keys)}
    inverse = np.array([slot[key] for key in keys], dtype=np.int64)
    if store is not None and distinct_keys:
        if dim is not None:
            store.expect_dim(dim)
        distinct, found = store.get(distinct_keys)
    else:
        distinct, found = np.zeros((len(distinct_keys), 0), dtype=np.float32), np.zeros(len(distinct_keys), bool)
    missing = np.flatnonzero(~found)
    every = (write_every() if callable(write_every) else write_every) if len(missing) else 1
    if every < 1:
        raise ValueError(f"write_every must be >= 1, got {every}")
    writer = ThreadPoolExecutor(1, thread_name_prefix="rag-eval-store") if store is not None and len(missing) else None
    written: Future[None] | None = None
    start = 0
    try:
        while start < len(missing):  # grows when the stored vectors turn out to be another model's
            batch = missing[start : start + every]
            start += len(batch)
            batch_texts = [texts[first[distinct_keys[i]]] for i in batch]
            vectors = np.asarray(encode(batch_texts))
            if vectors.ndim != 2 or vectors.shape[0] != len(batch):
                raise ValueError(f"encode returned shape {vectors.shape} for {len(batch)} texts")
            if distinct.shape[1] != vectors.shape[1]:
                if found.any():
                    warnings.warn(
                        f"embedding store {store.directory if store else ''}: its vectors have dim "
                        f"{distinct.shape[1]}, the encoder's {vectors.shape[1]}: they are not this model's; the "
                        f"{int(found.sum())} texts read from it are re-encoded",
                        EmbeddingCacheWarning,
                        stacklevel=2,
                    )
                    missing = np.concatenate([missing, np.flatnonzero(found)])
                    found[:] = False
                distinct = np.zeros((len(distinct_keys), vectors.shape[1]), dtype=np.float32)
            distinct[batch] = vectors
            if writer is not None and store is not None:
                if written is not None:
                    written.result()  # one write in flight: memory stays bounded, a write error surfaces here
                written = writer.submit(store.put, [distinct_keys[i] for i in batch], vectors.astype(np.float32))
            if progress is not None:
                progress(len(batch))
    finally:
        if writer is not None:
            writer.shutdown(wait=True)  # every batch encoded is written, also when encode() failed
    if written is not None:
        written.result()
    counts = {
        "reused": int(np.count_nonzero(found)),
        "encoded": len(missing),
        "duplicates": len(keys) - len(distinct_keys),
    }
    return np.ascontiguousarray(distinct[inverse], dtype=np.float32), counts
