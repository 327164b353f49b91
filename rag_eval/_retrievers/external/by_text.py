"""The base of retrievers asked by query text: LangChain, LlamaIndex and Haystack objects, HTTP services.

Such a retriever encodes nothing itself: it hands each query's text to the team's object or
service and maps the hits it gets back (:mod:`rag_eval._retrievers.external.mapping`). A
subclass implements :meth:`TextHitsRetriever.connect` (build or reach the object; for a factory,
only here, never while a config is validated) and :meth:`TextHitsRetriever.ask` (one query's
hits, best first); it may override :meth:`TextHitsRetriever.ask_many` to answer a batch at once.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from rag_eval._core.errors import RetrieverError
from rag_eval._core.ranking import check_top_k
from rag_eval._retrievers.base import Corpus, Queries, Ranking
from rag_eval._retrievers.external.hits import Hit, settled
from rag_eval._retrievers.external.latency import LatencyLog
from rag_eval._retrievers.external.mapping import HitMapper, MapSpec, read_id_map
from rag_eval._retrievers.params import AdapterParams, Folder, check_params
from rag_eval._retrievers.title_use import OWN_INDEX


class TextHitsParams(AdapterParams):
    """Parameters every text-asked adapter shares: how its hits map (its own add the target)."""

    map: MapSpec | None = Field(None, description="how a hit becomes a passage or a span (docs/integrations.md)")
    id_map: Folder | None = Field(None, description="file of 'external id<TAB>passage id' lines")
    batch_size: int = Field(1, ge=1, le=10_000, description="queries per call where the target answers batches")

    @field_validator("id_map")
    @classmethod
    def _a_readable_id_map(cls, value: Folder | None) -> Folder | None:
        # Read whole here, so that `rag-eval validate` (which builds nothing) says what index() would: a file
        # missing, a folder, a bad line. index() reads it again: the run maps with the file as it is then.
        if value is not None:
            read_id_map(Path(value).expanduser())
        return value

    @model_validator(mode="after")
    def _some_mapping(self) -> TextHitsParams:
        if self.map is None and self.id_map is None:
            raise ValueError(
                "set map (how a hit becomes a passage: doc_id/start/end, passage_id or text: true) or id_map (a file)"
            )
        return self


#: ``scores:`` of an adapter whose target gives a score per hit (LangChain vector stores, HTTP services).
Scores = Literal["similarity", "distance"]
SCORES_HELP = (
    "similarity: higher is better, as given | distance: lower is better, negated; left out, an answer "
    "list whose scores rise along its order in every answer is refused"
)


class ScoreOrder:
    """How each answer's scores fall along the order in which the target returned its hits.

    A target that returns its best hit first with the LOWEST score, in every answer, gives distances
    (lower = better) and would be ranked upside down as similarities: :meth:`distances_error` says so,
    unless the config set ``scores`` itself (``scores: similarity`` when a service returns its worst
    hit first; rag_eval ranks by score either way). Shared by the framework adapters and ``http``.
    """

    def __init__(self) -> None:
        self.unsorted = 0  # answers whose scores rise somewhere along the order
        self.rising = 0  # answers whose scores never fall along it (of those with two different scores or more)
        self.spread = 0  # answers with two different scores or more

    def observe(self, hits: Sequence[Hit]) -> None:
        """Count one answer, in the order the target returned it (scores as they will be ranked).

        An answer with a hit without a score is ranked in the order returned (HitMapper.rank): its
        scores are not used, so they say nothing here.
        """
        if any(hit.score is None for hit in hits):
            return
        scores = [hit.score for hit in hits if hit.score is not None]
        self.unsorted += any(later > earlier for earlier, later in pairwise(scores))
        if len(set(scores)) > 1:
            self.spread += 1
            self.rising += all(later >= earlier for earlier, later in pairwise(scores))

    def distances_error(self, adapter: str, target: str, settings: Any) -> RetrieverError | None:
        """The refusal of a target whose every answer rises (see the class), or None."""
        explicit = "scores" in settings.model_fields_set
        if explicit or settings.scores != "similarity" or not self.spread or self.rising != self.spread:
            return None
        return RetrieverError(
            f"{adapter}: {target} returns its best hit first with the lowest score, in every answer: its scores are "
            "distances (lower = better); set params.scores: distance (or params.scores: similarity if it returns "
            "its worst hit first: rag_eval ranks by score)"
        )


class TextHitsRetriever(ABC):
    """Asks a target by query text and maps its hits (see the module docstring)."""

    Params: ClassVar[type[TextHitsParams]] = TextHitsParams

    @classmethod
    def title_use(cls, params: Mapping[str, Any]) -> str:
        """The team's own index answers: what it holds is theirs to say (rag_eval._retrievers.title_use)."""
        return OWN_INDEX
    PATH_PARAMS: ClassVar[tuple[str, ...]] = ("id_map",)
    #: Rankings of a team's object or service are never reused: it can change under the same params.
    REUSE_RANKINGS = False
    ADAPTER: ClassVar[str] = "by_text"

    def __init__(self, **params: Any) -> None:
        self.settings: Any = check_params(self.Params, params, self.ADAPTER)
        self.id_map_path = Path(self.settings.id_map).expanduser() if self.settings.id_map is not None else None
        self.mapper: HitMapper | None = None
        self.latency = LatencyLog()

    @abstractmethod
    def connect(self) -> None:
        """Build or reach the target (a factory is called here, never while a config is validated)."""

    @abstractmethod
    def ask(self, text: str, k: int) -> list[Hit]:
        """One query's top ``k`` hits, best first."""

    def ask_many(self, texts: Sequence[str], k: int) -> list[list[Hit]]:
        """Several queries' hits (default: one :meth:`ask` each); a subclass may answer a batch in one call."""
        return [self.ask(text, k) for text in texts]

    def close(self) -> None:
        """Release what :meth:`connect` opened; safe to call twice (nothing, unless a subclass opens something)."""
        return None

    def target_info(self) -> dict[str, Any]:
        """What was asked: the factory or endpoint, the object's class, library versions (JSON-ready)."""
        return {}

    def index(self, corpus: Corpus) -> None:
        """Reach the target and prepare the mapping to ``corpus``; nothing is indexed (the target holds its own)."""
        spec = self.settings.map or MapSpec.model_validate({})
        id_map = read_id_map(self.id_map_path) if self.id_map_path is not None else None
        self.mapper = HitMapper(spec, corpus, id_map, adapter=self.ADAPTER)
        self.latency = LatencyLog()
        self.connect()

    def search(self, queries: Queries, top_k: int) -> Ranking:
        """Each query's hits from the target (``batch_size`` queries per call), mapped to the dataset."""
        check_top_k(top_k, where=self.ADAPTER, error=RetrieverError)
        if self.mapper is None:
            raise RetrieverError(f"{self.ADAPTER}: search() called before index(corpus)")
        query_ids = list(queries)
        started = time.perf_counter()
        ranking: Ranking = {}
        size = self.settings.batch_size
        for first in range(0, len(query_ids), size):
            batch = query_ids[first : first + size]
            texts = [queries[qid] for qid in batch]
            answers = self.latency.timed(len(batch), self.ask_many, texts, top_k)
            self._check_answers(batch, answers)
            for qid, hits in zip(batch, answers):
                hits = settled(self.ADAPTER, qid, hits, self.score_sign())
                self.observe(hits, top_k)
                ranking[qid] = self.mapper.rank_top(qid, hits, top_k)
        self.latency.overhead_s += (time.perf_counter() - started) - self.latency.backend_s
        self.mapper.check_mapped()
        return ranking

    def score_sign(self) -> float:
        """-1.0 where the config says the target's scores are distances (lower = better), else 1.0."""
        return -1.0 if getattr(self.settings, "scores", "similarity") == "distance" else 1.0

    def observe(self, hits: Sequence[Hit], k: int) -> None:
        """Look at one query's settled hits, in the target's order, before they are mapped (nothing by default)."""
        return None

    def _check_answers(self, batch: Sequence[str], answers: Any) -> None:
        if not isinstance(answers, list) or len(answers) != len(batch):
            raise RetrieverError(
                f"{self.ADAPTER}: {len(batch)} queries asked, {len(answers) if isinstance(answers, list) else answers!r} "
                "answers returned"
            )

    def describe(self) -> dict[str, Any]:
        """The adapter, its target, the mapping and the latency."""
        info: dict[str, Any] = {"adapter": self.ADAPTER, **self.target_info()}
        if self.mapper is not None:
            info["mapping"] = self.mapper.describe()
        latency = self.latency.describe()
        if latency:
            info["latency"] = latency
        return info


def metadata_of(value: Any) -> Mapping[str, Any]:
    """A hit's metadata as a mapping (a framework may hand None)."""
    return value if isinstance(value, Mapping) else {}
