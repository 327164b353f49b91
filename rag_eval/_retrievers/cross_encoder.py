"""``cross_encoder``: re-rank another retriever's top passages with a cross-encoder.

YAML parameters::

    adapter: cross_encoder
    params:
      model: cross-encoder/ms-marco-MiniLM-L6-v2   # required: name or local folder
      first_stage:                                 # required: any retriever spec
        adapter: bm25
        params: {}
      rerank_top_n: 100     # first-stage passages re-scored per query
      batch_size: 32        # (query, passage) pairs per model batch
      max_length: null      # token cap for a (query, passage) pair (default: the model's)
      device: auto          # auto | cpu | cuda | cuda:N | mps
      backend: torch        # torch | onnx | openvino (onnx/openvino: CPU, exported once and cached in cache_dir)
      quantize: none        # none | int8 (backend onnx; changes the scores)
      precision: fp32       # fp32 | fp16 (backend torch on a CUDA GPU)
      threads: null         # CPU threads (default: the CPUs this process may use)
      streams: null         # onnx/openvino: batches scored at once
      show_progress: true
      cache_dir: null       # handed to the first stage when it takes one and sets none; exports are kept here

The result holds at most ``rerank_top_n`` passages per query, all scored by the
cross-encoder: passages the first stage ranked lower are not appended, because
their first-stage scores are on another scale. Scores are the model's raw
logits, not sigmoid probabilities: a strong model saturates the sigmoid at 1.0 in
float32 and would turn real differences into ties.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from pydantic import Field, ValidationInfo, field_validator

from rag_eval._core import ranking
from rag_eval._core.errors import RetrieverError
from rag_eval._data.datasets.model import passage_text
from rag_eval._models import files as _models
from rag_eval._models.embeddings.interface import Scorer
from rag_eval._models.embeddings.loading import load_scorer
from rag_eval._models.embeddings.options import EncodingParams
from rag_eval._models.positions import check_model_length
from rag_eval._models.progress import library_bars, progress_wanted
from rag_eval._retrievers.answer_check import check_answer
from rag_eval._retrievers.base import Corpus, Queries, Ranking, describe
from rag_eval._retrievers.children import RetrieverRef, build_child
from rag_eval._retrievers.embedding_cache import default_cache_dir
from rag_eval._retrievers.params import AdapterParams, Device, Folder, check_params
from rag_eval._retrievers.title_use import READS

ADAPTER = "cross_encoder"


class CrossEncoderParams(AdapterParams, EncodingParams):
    """Parameters of ``adapter: cross_encoder`` (see the module docstring)."""

    model: str = Field(
        description="a cross-encoder name such as cross-encoder/ms-marco-MiniLM-L6-v2, or a local folder"
    )
    first_stage: RetrieverRef = Field(
        description="the retriever whose results are re-ranked, e.g. first_stage: {adapter: bm25, params: {}}"
    )
    rerank_top_n: int = Field(100, ge=1, description="first-stage passages re-scored per query")
    batch_size: int = Field(32, ge=1, description="(query, passage) pairs per model batch")
    max_length: int | None = Field(None, ge=1, description="token cap for a (query, passage) pair")
    device: Device = Field("auto", description="auto | cpu | cuda | cuda:N | mps")
    show_progress: bool = Field(
        True, description="progress bars while loading and scoring (none when the run has --no-progress)"
    )
    cache_dir: Folder | None = Field(None, description="handed to the first stage when it takes one and sets none")

    @field_validator("model")
    @classmethod
    def _model_exists(cls, value: str) -> str:
        _models.resolve_model(value, ADAPTER)  # cheap (no torch): a missing folder is found by validate
        return value

    @field_validator("max_length")
    @classmethod
    def _within_positions(cls, value: int | None, info: ValidationInfo) -> int | None:
        return check_model_length(value, info.data.get("model"), "max_length", ADAPTER)


class CrossEncoderReranker:
    """First stage retrieves ``rerank_top_n`` passages; a CrossEncoder re-scores them."""

    Params = CrossEncoderParams

    @classmethod
    def title_use(cls, params: Mapping[str, Any]) -> str:
        """Pairs are scored on title + text (rag_eval._retrievers.title_use)."""
        return READS
    #: Parameters the runner resolves against the config file's folder when relative.
    PATH_PARAMS = ("cache_dir",)

    def __init__(self, **params: Any) -> None:
        settings = check_params(CrossEncoderParams, params, ADAPTER)
        self.rerank_top_n = settings.rerank_top_n
        self.batch_size = settings.batch_size
        self.max_length = settings.max_length
        self.device = settings.device
        self.options = settings.encoder_options()
        self.show_progress = settings.show_progress
        self.cache_dir = _models.folder(settings.cache_dir)
        self.resolved = _models.resolve_model(settings.model, ADAPTER)
        self.first_stage_spec = {"adapter": settings.first_stage.adapter, "params": dict(settings.first_stage.params)}
        self.first_stage = build_child(settings.first_stage, f"{ADAPTER}: first_stage", self.cache_dir)

        self._model: Scorer | None = None
        self._identity: str | None = None
        self._texts: dict[str, str] | None = None
        self._pairs_scored = 0
        self._warned_depth = False

    def _get_model(self) -> Scorer:
        """The scorer (loaded once): sentence-transformers' CrossEncoder, or its ONNX / OpenVINO export."""
        if self._model is None:
            export_dir = (self.cache_dir or default_cache_dir()) / "exported"
            identity = self._model_identity() if self.resolved.path is not None else None
            with library_bars(progress_wanted(self.show_progress)):  # "Loading weights" follows the run
                self._model = load_scorer(
                    self.resolved, self.device, self.options, export_dir, self.max_length, ADAPTER, identity=identity
                )
            if self.resolved.path is None:
                try:
                    self.resolved = _models.resolve_model(self.resolved.spec, ADAPTER, allow_download=False)
                except RetrieverError:
                    pass
        return self._model

    def _model_identity(self) -> str | None:
        if self._identity is None and self.resolved.path is not None:
            self._identity = _models.model_identity(self.resolved.path)
        return self._identity

    def index(self, corpus: Corpus) -> None:
        """Index the first stage and keep the passage texts the cross-encoder will read."""
        self.first_stage.index(corpus)
        self._texts = {doc_id: passage_text(passage) for doc_id, passage in corpus.items()}

    def search(self, queries: Queries, top_k: int) -> Ranking:
        """Re-score the first stage's top ``rerank_top_n`` and return the best ``top_k``."""
        ranking.check_top_k(top_k, where=ADAPTER, error=RetrieverError)
        if self._texts is None:
            raise RetrieverError(f"{ADAPTER}: search() called before index(corpus)")
        if top_k > self.rerank_top_n and not self._warned_depth:
            self._warned_depth = True
            warnings.warn(
                f"{ADAPTER}: top_k={top_k} exceeds rerank_top_n={self.rerank_top_n}; "
                f"each query gets at most {self.rerank_top_n} re-ranked passages",
                stacklevel=2,
            )
        # The first stage's answer is checked as a retriever's (a NaN or str score, an unknown doc) and cut to its
        # best n by the ranking rule (score desc, then doc id desc), so a tie at the cut keeps the greater id.
        first = check_answer(f"{ADAPTER}: first_stage ({self.first_stage_spec['adapter']})",
                             self.first_stage.search(queries, self.rerank_top_n), queries, self._texts,
                             self.rerank_top_n)
        pairs: list[tuple[str, str]] = []
        owners: list[tuple[str, str]] = []
        for qid, text in queries.items():
            for doc_id in first[qid]:
                pairs.append((text, self._texts[doc_id]))
                owners.append((qid, doc_id))
        results: dict[str, dict[str, float]] = {qid: {} for qid in queries}
        if not pairs:
            return results
        scores = self._score(pairs)
        self._pairs_scored += len(pairs)
        for (qid, doc_id), score in zip(owners, scores):
            results[qid][doc_id] = score
        return {qid: ranking.top_k(docs, top_k) for qid, docs in results.items()}

    def _score(self, pairs: list[tuple[str, str]]) -> list[float]:
        show = progress_wanted(self.show_progress)  # never with run --no-progress
        scores = self._get_model().score(pairs, batch_size=self.batch_size, show_progress=show)
        return [float(s) for s in scores.tolist()]

    def describe(self) -> dict[str, Any]:
        """Model, identity hash, parameters, the first stage's own description, pairs scored."""
        info: dict[str, Any] = {"adapter": ADAPTER, **self.resolved.describe()}
        try:
            info["model_identity"] = self._model_identity()
        except OSError:
            info["model_identity"] = None
        info["parameters"] = {
            "model": self.resolved.spec,
            "rerank_top_n": self.rerank_top_n,
            "batch_size": self.batch_size,
            "max_length": self.max_length,
            "device": self.device,
            "backend": self.options.backend,
            "quantize": self.options.quantize,
            "precision": self.options.precision,
            "threads": self.options.threads,
            "streams": self.options.streams,
            "first_stage": self.first_stage_spec,
        }
        if self._model is not None:
            info["device"] = self._model.device
            info["scorer"] = self._model.describe()
        info["pairs_scored"] = self._pairs_scored
        info["first_stage"] = describe(self.first_stage)
        return info
