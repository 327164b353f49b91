"""The line formats of judgement and run files: TREC qrels, TREC run and BEIR qrels.

A :class:`Layout` names a format's columns, where its doc id and value are, and what it holds;
the entry points (rag_eval._scoring.engine.reader) and both readers (``fast_reader``,
``line_reader``) take one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Layout:
    """One line format: its columns, where the doc id and the value are, what it holds."""

    name: str  # "TREC qrels", "TREC run", "BEIR qrels"
    what: str  # "judgements" or "run" (the checks of engine.tables)
    columns: tuple[str, ...]
    doc_index: int
    value_index: int
    header: tuple[bytes, ...] = ()  # a first line that must be exactly these fields
    extra_fields: bool = False  # fields after the last column are ignored (a run's tag)
    # Columns not read that must still be numbers (a run's rank): trec_eval ignores them, but a doc id
    # holding a space shifts the fields after it, and the rank is where that shows.
    number_fields: tuple[int, ...] = ()

    @property
    def value_label(self) -> str:
        return "grade" if self.what == "judgements" else "score"


TREC_QRELS = Layout("TREC qrels", "judgements", ("qid", "iter", "doc_id", "grade"), 2, 3)
TREC_RUN = Layout(
    "TREC run", "run", ("qid", "Q0", "doc_id", "rank", "score", "tag"), 2, 4, extra_fields=True, number_fields=(3,)
)
BEIR_QRELS = Layout(
    "BEIR qrels", "judgements", ("query-id", "corpus-id", "score"), 1, 2, header=(b"query-id", b"corpus-id", b"score")
)
