"""What a run produced, before anything is written: the records the run fills and
the renderers (report, results file, regression check) read.

They live apart from the run's execution (rag_eval/_run/execute.py) so that the renderers
need not import it: data flows execute -> outcome -> renderers.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: this module stays free of the config and dataset loaders
    from collections.abc import Mapping

    from rag_eval._data.config.schema import LoadedConfig
    from rag_eval._data.config.sections import RetrieverSpec
    from rag_eval._data.datasets import Dataset
    from rag_eval._run.holes_section import HolesRecord
    from rag_eval._scoring.results import Results

WHOLE_DOCUMENTS = "whole documents"
OWN_SPANS = "the retriever's own spans"


@dataclass(frozen=True)
class ChunkingRecord:
    """What a retriever indexed: which chunking, how it was made, and its shape."""

    name: str | None  # the config's chunker name; None for whole documents and own spans
    kind: str  # "chunker" | "documents" | "own"
    description: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    fingerprint: str | None = None  # sha256 of every chunk's (doc, start, end); None for own spans

    @property
    def title(self) -> str:
        """How the report names it."""
        if self.kind == "chunker":
            return str(self.name)
        return WHOLE_DOCUMENTS if self.kind == "documents" else OWN_SPANS

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, as results files record it."""
        return {
            "name": self.name,
            "kind": self.kind,
            "title": self.title,
            "description": dict(self.description),
            "summary": dict(self.summary),
            "fingerprint": self.fingerprint,
        }


@dataclass
class RetrieverOutcome:
    """One retriever's ranking, its evaluation and what it cost."""

    spec: RetrieverSpec
    description: dict[str, Any]
    ranking: dict[str, dict[str, float]]
    results: Results
    timings: dict[str, float] = field(default_factory=dict)
    # Document datasets only: what the retriever indexed, its ranked spans {qid: [(doc, start, end, score)]},
    # the corpus it read (chunk texts for the report), and lines for the report (notes) and stderr (warnings).
    chunking: ChunkingRecord | None = None
    spans: dict[str, list[tuple[str, int, int, float]]] | None = None
    corpus: Mapping[str, Mapping[str, str]] | None = None
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # The holes in the judgements of its ranking, per metric (rag_eval._run.holes_record); None when not computed.
    holes: HolesRecord | None = None

    @property
    def label(self) -> str:
        """The retriever's label from the config (unique within a run)."""
        return self.spec.label


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


@dataclass
class RunOutcome:
    """Everything a run produced, before anything is written.

    ``documents`` holds each retriever's results document once built
    (:func:`rag_eval._run.results_file.results_document`), so that the regression check
    and the writer use the same one instead of building it twice.
    """

    config: LoadedConfig
    dataset: Dataset
    outcomes: list[RetrieverOutcome]
    created: str = field(default_factory=_now)
    documents: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False, compare=False)
