"""What a run produced, before anything is written: the records the runner fills and
the renderers (report, results file, regression check) read.

They live apart from runner.py so that the renderers need not import the runner
(which imports them to write the outputs): data flows runner -> outcome -> renderers.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: this module stays free of the config and dataset loaders
    from collections.abc import Mapping

    from rag_eval._data.config.schema import LoadedConfig, RetrieverSpec
    from rag_eval._data.datasets import Dataset
    from rag_eval._run.documents import ChunkingRecord
    from rag_eval._scoring.results import Results


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
