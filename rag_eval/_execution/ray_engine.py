"""The Ray engine: passage encoding as a Ray Data pipeline and exact search shard by shard on workers.

What it changes is where the work runs, never a number:

- :func:`encode_on_ray` streams the corpus (JSON Lines read in byte ranges by workers,
  Parquet by row groups; the driver never holds the texts), encodes on a pool of actors
  that each load the model once, at their first text the store lacks (GPU actors when the
  cluster has GPUs), and writes every batch to the shared
  :class:`~rag_eval._models.embeddings.store.EmbeddingStore` as soon as it is encoded.
  A worker killed mid-batch is restarted and its batch retried: the batch first
  looks its texts up in the store, so what was written before the kill is not encoded again,
  and a shard's name comes from its keys, so a rewritten batch is the same file. The driver
  gets back only ``(doc_id, key)`` per passage, sorted by doc id: row ``i`` of the search.
- :func:`search_on_ray` cuts the rows into contiguous shards; a task per shard reads its
  vectors from the store and computes that shard's exact top k
  (:func:`rag_eval._execution.sharded.search_shard`); the driver merges the lists with the
  ranking rule (:func:`~rag_eval._execution.sharded.merge_top_k`). The result equals local
  exact search bit for bit (see :mod:`rag_eval._core.scores`).

The cluster is joined by :mod:`rag_eval._execution.ray_cluster`, the corpus read by
:mod:`rag_eval._execution.ray_sources`. Ray is imported inside the functions: importing this
module needs numpy and pydantic only. Workers import rag_eval, so it must be installed on every node.
"""

from __future__ import annotations

import itertools
import math
import os
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from rag_eval._core.errors import DatasetError, RetrieverError
from rag_eval._core.ranking import check_top_k
from rag_eval._data.config.execution import ExecutionSpec
from rag_eval._execution.ray_cluster import actor_plan, connect, quiet_ray_data, user_errors
from rag_eval._execution.ray_sources import arrow, passages_dataset
from rag_eval._execution.sharded import merge_top_k, search_shard, shard_bounds
from rag_eval._models.embeddings.keys import PackedKeys
from rag_eval._models.embeddings.store import EmbeddingCacheWriteWarning, EmbeddingStore, text_key

# Rows per search shard when the spec does not say: about 1.5 GB of 384-d float32 vectors per worker.
_ROWS_PER_SHARD = 1_000_000


class Encoder(Protocol):
    """What an encoder factory returns: float32 rows, one per text, in order."""

    def encode(self, texts: list[str]) -> np.ndarray: ...


class TokenCounting(Protocol):
    """Counts each text's tokens for the truncation report (:class:`rag_eval._models.embeddings.truncation.TokenCounter`).

    ``record`` takes counts an encoder made while tokenising anyway (an encoder's
    ``last_token_lengths``, with the tokenizer that made them), so they are not made twice.
    """

    def lengths(self, texts: list[str]) -> np.ndarray | None: ...

    def record(self, texts: list[str], lengths: np.ndarray, tokenizer_json: str | None) -> None: ...


@dataclass
class EncodedCorpus:
    """The rows of a corpus encoded on Ray: doc ids sorted (row i), the store key of each row's text, counts.

    ``counts``, as local encoding counts them: ``passages`` read; ``encoded`` distinct texts
    encoded now; ``reused`` distinct texts the store held already; ``duplicates`` repeats of a
    text in the corpus (encoded + reused + duplicates = passages; a text two batches encoded at
    once counts once: same key, same shard content).
    ``token_lengths``: each row's token count, counted by the workers, when a counter was given
    and could count.
    """

    doc_ids: list[str]
    keys: PackedKeys  # a sequence of hex keys, held as 32-byte digests
    counts: dict[str, int] = field(default_factory=dict)
    token_lengths: np.ndarray | None = None


def encode_on_ray(
    source: str | os.PathLike[str] | Iterable[tuple[str, str]],
    encoder_factory: Callable[[], Encoder],
    store: EmbeddingStore,
    *,
    spec: ExecutionSpec | None = None,
    prefix: str = "",
    count_tokens: TokenCounting | None = None,
) -> EncodedCorpus:
    """Encode every passage of ``source`` the store lacks, on Ray actors; return the rows in doc-id order.

    ``source``: a BEIR ``corpus.jsonl`` (``_id``, ``title``, ``text``; ``.jsonl.gz`` too), a
    Parquet file or folder with the same columns, or ``(doc_id, text)`` pairs (text already
    title + text). The text encoded and keyed is ``prefix + title + " " + text``, exactly as
    the dense retriever encodes it. ``encoder_factory`` is pickled to the actors and called
    once in each, at its first batch with a text the store lacks (that is where the model
    loads); its ``encode(list[str])`` returns float32 rows. The store's folder must be
    shared by every node (it is how vectors travel back).
    ``count_tokens`` (picklable, e.g. a :class:`rag_eval._models.embeddings.truncation.TokenCounter`)
    counts each text's tokens on the workers, so that the driver never reads the texts to say
    how many the encoder cuts; where the encoder counted them while tokenising (a GPU actor),
    its counts are taken.
    """
    import ray

    spec = spec or ExecutionSpec(engine="ray")
    connect(spec)
    quiet_ray_data()
    actors, gpus = actor_plan(spec, ray.cluster_resources())
    dataset = passages_dataset(source, prefix, spec)
    with warnings.catch_warnings():
        # Ray 2.60 deprecates **ray_remote_args without a named replacement for max_restarts yet.
        warnings.filterwarnings("ignore", message="`ray_remote_args` is deprecated")
        encoded = _encode_stage(dataset, encoder_factory, store, spec, actors, gpus, count_tokens)
    doc_ids: list[str] = []
    keys: list[np.ndarray] = []  # raw digests: a driver over millions of rows holds 32 bytes a key, not a hex str
    tokens: list[np.ndarray] = []
    statuses: list[np.ndarray] = []
    with user_errors():
        for batch in encoded.iter_batches(batch_format="numpy", batch_size=None):
            doc_ids.extend(raw.decode("utf-8", "surrogatepass") for raw in batch["doc_id"].tolist())
            keys.append(PackedKeys.from_hex(batch["key"].tolist()).digests)
            tokens.append(batch["tokens"].astype(np.int64))
            statuses.append(batch["status"].astype(np.int8))
    order = sorted(range(len(doc_ids)), key=doc_ids.__getitem__)  # rows in doc-id order: the tie rule needs it
    doc_ids = [doc_ids[i] for i in order]
    rows = np.asarray(order, dtype=np.int64)
    packed = PackedKeys(np.concatenate(keys)[rows] if keys else np.empty(0, dtype="S32"))
    lengths = np.concatenate(tokens)[rows] if tokens else np.empty(0, dtype=np.int64)
    token_lengths = lengths if len(lengths) and (lengths >= 0).all() else None  # -1: a worker could not count
    for previous, current in itertools.pairwise(doc_ids):
        if previous == current:
            raise DatasetError(f"{_source_name(source)}: duplicate passage id {current!r}; ids must be unique")
    # Counted over the corpus, as local encoding counts: a distinct text is encoded if some batch encoded
    # it (two batches may have, at once), else reused; its other rows are duplicates. The batches' own
    # lookups would call a text repeated in a later batch "reused", as if an earlier run had stored it.
    status = np.concatenate(statuses) if statuses else np.empty(0, dtype=np.int8)
    digests = np.concatenate(keys) if keys else np.empty(0, dtype="S32")
    distinct = len(np.unique(digests))
    encoded_now = len(np.unique(digests[status == 2]))
    counts = {
        "passages": len(doc_ids),
        "encoded": encoded_now,
        "reused": distinct - encoded_now,
        "duplicates": len(doc_ids) - distinct,
    }
    return EncodedCorpus(doc_ids, packed, counts, token_lengths)


def _encode_stage(
    dataset: Any,
    encoder_factory: Callable[[], Encoder],
    store: EmbeddingStore,
    spec: ExecutionSpec,
    actors: int,
    gpus: float,
    count_tokens: TokenCounting | None = None,
) -> Any:
    """The actor stage: ``actors`` encoders, each built once, writing to ``store``; retried a bounded number of times."""
    import ray.data

    return dataset.map_batches(
        _EncodeBatches,
        fn_constructor_args=(encoder_factory, str(store.root), store.namespace, count_tokens),
        batch_size=spec.batch_size,
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(size=actors),
        num_cpus=spec.num_cpus_per_actor,
        num_gpus=gpus,
        # Ray Data's default is to restart dead actors forever; an encoder that always dies must fail the run.
        max_restarts=spec.max_retries,
        max_task_retries=spec.max_retries,
    )


class _EncodeBatches:
    """A Ray Data actor: each batch is looked up, encoded where missing and stored.

    The encoder is built once, at the first batch with a text the store lacks: a rerun whose
    store holds every passage loads no model on the workers (loading is most of a small run's time).
    """

    def __init__(
        self,
        encoder_factory: Callable[[], Encoder],
        root: str,
        namespace: str,
        count_tokens: TokenCounting | None = None,
    ) -> None:
        self.encoder_factory = encoder_factory
        self._encoder: Encoder | None = None
        self.store = EmbeddingStore(root, namespace)
        self.count_tokens = count_tokens

    @property
    def encoder(self) -> Encoder:
        """The encoder, built by the factory at first use."""
        if self._encoder is None:
            self._encoder = self.encoder_factory()
        return self._encoder

    def __call__(self, batch: dict[str, np.ndarray]) -> Any:
        pa = arrow()
        texts = [raw.decode("utf-8", "surrogatepass") for raw in batch["text"].tolist()]
        keys = [text_key(text) for text in texts]
        first: dict[str, int] = {}
        for position, key in enumerate(keys):
            first.setdefault(key, position)
        distinct = list(first)
        stored, found = self.store.get(distinct)
        status = np.zeros(len(keys), dtype=np.int8)  # 0: repeat within the batch, 1: found in the store, 2: encoded
        missing = []
        for key, hit in zip(distinct, found.tolist()):
            status[first[key]] = 1 if hit else 2
            if not hit:
                missing.append(key)
        if missing:
            fresh = [texts[first[key]] for key in missing]
            vectors = np.asarray(self.encoder.encode(fresh), dtype=np.float32)
            if vectors.ndim != 2 or vectors.shape[0] != len(missing):
                raise RetrieverError(f"the encoder returned shape {vectors.shape} for {len(missing)} texts")
            if found.any() and stored.shape[1] != vectors.shape[1]:
                # Stored vectors of another dimension are not this model's (the store drops them once this
                # batch is put): the texts found in them are encoded too, or the search would miss them.
                missing = distinct
                status[[first[key] for key in distinct]] = 2
                fresh = [texts[first[key]] for key in missing]
                vectors = np.asarray(self.encoder.encode(fresh), dtype=np.float32)
            self._put(missing, vectors)
            counted = getattr(self.encoder, "last_token_lengths", None)
            if self.count_tokens is not None and counted is not None and len(counted) == len(fresh):
                self.count_tokens.record(fresh, counted, self.encoder.counting_tokenizer())  # type: ignore[attr-defined]
        lengths = self.count_tokens.lengths(texts) if self.count_tokens is not None else None
        return pa.table(
            {
                "doc_id": pa.array(batch["doc_id"].tolist(), type=pa.binary()),
                "key": pa.array(keys, type=pa.string()),
                "status": pa.array(status, type=pa.int8()),
                "tokens": pa.array(np.full(len(keys), -1) if lengths is None else lengths, type=pa.int64()),
            }
        )

    def _put(self, keys: list[str], vectors: np.ndarray) -> None:
        # Locally a failed cache write only costs a re-encode later; here the store is how the
        # vectors reach the search, so a shard that could not be written fails the run. Other
        # warnings (a shard of the store found unusable and dropped) are passed on as they are.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", EmbeddingCacheWriteWarning)
            self.store.put(keys, vectors)
        for warning in caught:
            if issubclass(warning.category, EmbeddingCacheWriteWarning):
                raise RetrieverError(
                    f"{warning.message} (the Ray engine needs a writable cache folder shared by all nodes)"
                )
        for warning in caught:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)


def search_on_ray(
    store: EmbeddingStore,
    keys: Sequence[str],
    queries: np.ndarray,
    k: int,
    *,
    spec: ExecutionSpec | None = None,
    block_size: int = 65536,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top ``k`` rows per query, rows = ``keys`` in order (doc-id order), searched shard by shard on Ray.

    Returns ``(rows int64, scores float32)``, each row sorted by score descending then row
    descending: the same arrays as :func:`rag_eval._core.topk.top_k_blockwise` over the
    stacked vectors. Each shard task reads only its rows' vectors from the store.
    """
    import ray

    spec = spec or ExecutionSpec(engine="ray")
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    check_top_k(k, error=RetrieverError)
    if not len(keys):
        return np.empty((len(queries), 0), dtype=np.int64), np.empty((len(queries), 0), dtype=np.float32)
    connect(spec)
    cpus = int(ray.cluster_resources().get("CPU", 1))
    shards = spec.shards or max(cpus, math.ceil(len(keys) / _ROWS_PER_SHARD))
    shared_queries = ray.put(queries)
    task = ray.remote(_search_task).options(num_cpus=1, max_retries=spec.max_retries)
    refs = [
        task.remote(str(store.root), store.namespace, _shard_keys(keys, start, stop), start, shared_queries, k, block_size)
        for start, stop in shard_bounds(len(keys), shards)
    ]
    with user_errors():
        parts = ray.get(refs)
    return merge_top_k(parts, k)


def _shard_keys(keys: Sequence[str], start: int, stop: int) -> Sequence[str]:
    """The keys of rows ``start..stop`` as a task receives them (packed digests travel at 32 bytes a key)."""
    return keys[start:stop] if isinstance(keys, PackedKeys) else list(keys[start:stop])


def _search_task(
    root: str, namespace: str, keys: Sequence[str], first_row: int, queries: np.ndarray, k: int, block_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """One shard: its vectors from the store, its exact top k with global row numbers."""
    store = EmbeddingStore(root, namespace)
    vectors, found = store.get(keys)
    if not found.all():
        missing = np.flatnonzero(~found)
        raise RetrieverError(
            f"embedding store {store.directory}: {len(missing)} of rows {first_row}..{first_row + len(keys) - 1} "
            f"have no embedding (first: row {first_row + int(missing[0])}, key {keys[missing[0]]}); encode the corpus "
            "first (encode_on_ray) and give every node the same cache folder"
        )
    return search_shard(queries, vectors, first_row, k, block_size)


def _source_name(source: Any) -> str:
    return str(source) if isinstance(source, (str, os.PathLike)) else "passages"
