"""The plain sections of a run config: what is read (``dataset``), by what (``retrievers``), how it is
scored (``evaluation``) and shown (``report``).

Each is checked on its own here; the checks across sections (a retriever naming a chunker of
``chunking``, a gate on one of ``metrics``) are :mod:`rag_eval._data.config.consistency`'s.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from rag_eval._data.config.adapters import check_adapter_name
from rag_eval._data.config.labels import LABEL_RULE, check_label
from rag_eval._data.config.strict import Strict


class DatasetSpec(Strict):
    """Where the queries, judgements and corpus come from."""

    format: Literal["yaml", "beir", "trec", "cranfield", "chroma"] | None = None
    path: str | None = None
    split: str = "test"
    qrels: str | None = None
    queries: str | None = None
    corpus: str | None = None
    grade_map: dict[float, float] | None = None
    name: str | None = None
    as_documents: bool = Field(
        default=False,
        description="Read each passage of a passage collection as a document, so that chunkers can cut it and "
        "document metrics (doc_ndcg@10, by MaxP) score the chunks against the passage judgements.",
    )
    titles: Literal["auto", "file_name", "none"] = Field(
        default="auto",
        description="Where documents' titles come from; each chunk is indexed with its document's title, and a "
        "whole document with its own. `auto`: what the source gives (a .md file's front matter `title`, else its "
        "first line when that is a `# heading`; a .jsonl line's or an inline document's `title`). `file_name`: the "
        "file's name without its suffix (a folder of documents, the chroma layout). `none`: no titles, even where "
        "the source has them, to compare like for like with a baseline that indexes text alone "
        "([documents.md](documents.md#titles)).",
    )

    @model_validator(mode="after")
    def _needs_location(self) -> DatasetSpec:
        if self.format == "trec" or (self.format is None and self.qrels):
            missing = [k for k in ("qrels", "queries", "corpus") if not getattr(self, k)]
            if missing:
                raise ValueError(f"a TREC dataset needs qrels, queries and corpus; missing {', '.join(missing)}")
        elif not self.path:
            raise ValueError("give the dataset's 'path' (a query set YAML, a BEIR folder or the Cranfield folder)")
        fmt = "trec" if self.format is None and self.qrels else self.format
        if self.titles == "file_name" and fmt in ("beir", "trec", "cranfield"):
            raise ValueError(
                f"titles: file_name titles documents by the names of their files, and a {fmt} corpus has no file per "
                "document; set titles: auto (the corpus's own titles) or titles: none"
            )
        return self


class RetrieverSpec(Strict):
    """One retriever to evaluate: a label, an adapter name or import string, parameters."""

    label: str = Field(description=LABEL_RULE)
    adapter: str
    params: dict[str, Any] = Field(default_factory=dict)
    chunker: str | None = Field(
        default=None,
        description="The name of a chunker of `chunking` whose chunks this retriever indexes (datasets with "
        "documents only). Not set: the retriever indexes whole documents, or returns spans itself.",
    )

    _safe_label = field_validator("label")(check_label)

    @field_validator("adapter")
    @classmethod
    def _known_adapter(cls, value: str) -> str:
        check_adapter_name(value)
        return value


class EvaluationSpec(Strict):
    """The semantics of docs/semantics.md; printed in every report."""

    gain: Literal["linear", "exponential"] = "linear"
    aggregation: Literal["macro", "micro"] = "macro"
    no_relevant: Literal["skip", "zero", "error"] = "skip"
    relevance_threshold: float = Field(default=1.0, gt=0)
    judged_only: bool = Field(
        default=False,
        description="Score the condensed list (trec_eval -J, ir_measures' judged-only): each ranking loses its "
        "documents without a judgement (and those with a negative grade) before the ranking metrics are computed; "
        "the judgements are unchanged. Evidence metrics are not affected.",
    )
    min_evidence_fraction: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="Datasets with evidence spans: a chunk takes an evidence span's grade when it covers at least "
        "this share of the span (0: one shared character is enough). Chunk-level metrics only.",
    )

    tokenizer: str = Field(
        default="words",
        description="Datasets with documents: what a context budget in tokens (`evidence_recall@512tokens`) "
        "counts, for every retriever alike, so that budgets compare chunkings like for like: `words` "
        "(`\\w+|[^\\w\\s]`) or a Hugging Face tokenizer found offline (a name such as `all-MiniLM-L6-v2`, or a "
        "folder holding `tokenizer.json`).",
    )

    def passage_options(self) -> dict[str, Any]:
        """The keyword arguments of :func:`rag_eval.evaluate` (the options that apply to passage runs)."""
        return self.model_dump(exclude={"min_evidence_fraction", "tokenizer"})

    def document_options(self) -> dict[str, Any]:
        """The keyword arguments of :func:`rag_eval.evaluate_evidence` from this section (not the tokenizer)."""
        return self.model_dump(exclude={"tokenizer"})


class ReportSpec(Strict):
    """How much the markdown report shows."""

    plots: bool = Field(
        default=True,
        description="Write SVG plots beside report.md (means with intervals, per-query differences, metric@k, one "
        "per swept parameter), linked from it with their numbers in text. false: no plots.",
    )
    detailed_queries: int = Field(default=20, ge=0)
    passage_chars: int = Field(default=160, ge=20)
    title: str | None = None
