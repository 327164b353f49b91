"""Round-trip retrieval: does a config's first retriever find each synthetic question's evidence again?

``rag-eval generate --round-trip CONFIG`` keeps a synthetic question only when the first retriever
of CONFIG, asked the question, returns in its top k (the config's ``top_k``) a chunk or document
that overlaps the question's evidence span: at least one character of the same document in common.
A question whose own evidence cannot be found by a real retriever is more likely a paraphrase the
model made up, or one so vague that it tests nothing.

The retriever runs exactly as ``rag-eval run`` runs it (:func:`rag_eval._run.execute.execute`, with
its chunking, its parameters and its ranking cache), on a query set holding the documents and the
candidate questions only: written to a temporary folder, named in place of the config's dataset,
and removed afterwards. The config's other retrievers, its sweep and its regression section are
not run. Nothing else is written.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rag_eval._core.errors import RetrieverError
from rag_eval._core.plugin_output import plugin_output_to_stderr
from rag_eval._core.ranking import ranked_ids
from rag_eval._core.spans import parse_chunk_id
from rag_eval._data.config.schema import LoadedConfig
from rag_eval._data.config.sections import DatasetSpec
from rag_eval._run.checks import RetrieverRunError
from rag_eval._run.execute import execute


@dataclass(frozen=True)
class Candidate:
    """A synthetic question and its evidence span ``[start, end)`` in document ``doc``."""

    qid: str
    text: str
    doc: str
    start: int
    end: int
    quote: str


@dataclass(frozen=True)
class RoundTrip:
    """Each candidate's rank (1 first) of the first unit overlapping its evidence in the top k; None: not found."""

    label: str  # the retriever's label
    k: int
    ranks: dict[str, int | None]
    warnings: tuple[str, ...] = ()

    @property
    def found(self) -> list[str]:
        """The candidates found again."""
        return [qid for qid, rank in self.ranks.items() if rank is not None]


def round_trip(
    config: LoadedConfig,
    documents: str | list[dict[str, str]],
    candidates: Sequence[Candidate],
    *,
    name: str = "synthetic",
    progress: bool | None = None,
) -> RoundTrip:
    """Run ``config``'s first retriever on ``documents`` (an absolute path, or ``[{id, text, title?}]``) and ``candidates``.

    A retriever that fails is one RetrieverError line naming the config (bad input: exit 2).
    """
    first = config.model.retrievers[0]
    k = config.model.top_k
    if not candidates:
        return RoundTrip(first.label, k, {})
    with tempfile.TemporaryDirectory(prefix="rag-eval-generate-") as folder:
        path = Path(folder) / "candidates.yaml"
        path.write_text(_query_set(name, documents, candidates), encoding="utf-8")
        model = config.model.model_copy(update={
            "dataset": DatasetSpec(format="yaml", path=str(path)),
            "retrievers": [first],
            "regression": None,
            "sweep": None,
        })
        try:
            with plugin_output_to_stderr():  # a plug-in's prints must not mix with the summary line
                run = execute(LoadedConfig(config.path, config.raw, model), progress=progress)
        except RetrieverRunError as error:
            raise RetrieverError(f"{config.path}: --round-trip: {error}", problems=error.problems) from error
    outcome = run.outcomes[0]
    ranks = {candidate.qid: _rank(outcome.ranking.get(candidate.qid, {}), candidate, k) for candidate in candidates}
    return RoundTrip(first.label, k, ranks, tuple(outcome.warnings))


def overlaps(unit: tuple[str, int, int], candidate: Candidate) -> bool:
    """Whether a retrieved unit ``(doc, start, end)`` shares at least one character with the candidate's evidence."""
    doc, start, end = unit
    return doc == candidate.doc and start < candidate.end and candidate.start < end


def _rank(scores: Mapping[str, float], candidate: Candidate, k: int) -> int | None:
    """The rank of the first unit of the top ``k`` that overlaps the evidence (the run's tie rule), else None."""
    for rank, unit_id in enumerate(ranked_ids(scores)[:k], start=1):
        unit = parse_chunk_id(unit_id)  # a document run keys whole documents by chunk id too
        if unit is not None and overlaps(unit, candidate):
            return rank
    return None


def _query_set(name: str, documents: str | list[dict[str, str]], candidates: Sequence[Candidate]) -> str:
    """The candidates as a YAML query set over ``documents``, each judged by its quote's span (as offsets)."""
    queries: list[dict[str, Any]] = [
        {"id": c.qid, "text": c.text, "evidence": [{"doc": c.doc, "start": c.start, "end": c.end}]} for c in candidates
    ]
    data = {"name": name, "documents": documents, "queries": queries}
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=1 << 30)
