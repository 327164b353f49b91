"""The pool: the units nobody judged in the top K of some retrievers' rankings, as rows of a judgement sheet.

Pure: from the rankings (each retriever's units in rank order), the dataset's judgements and its
texts. What a unit is, and when it is unjudged, follows docs/semantics.md:

- a passage dataset: a unit is a passage; it is unjudged for a query that has no grade for it
  (a negative grade is a grade: that passage is judged, not a hole);
- a dataset of documents: a unit is a retrieved chunk ``(doc, start, end)``; a chunk is unjudged
  when its document has no grade for the query (no document judgement and no evidence in it),
  since a chunk of a document judged for the query already has a grade (the evidence it overlaps,
  else 0). A chunk that covers its whole document (a retriever over whole documents) is pooled as
  the document itself: a row without offsets.

The same unit surfaced by several retrievers (or variants of a sweep) is one row, whose ``note``
lists who surfaced it and at which rank. Rows are ordered so that the queries whose verdict could
flip come first (:func:`pool`), and numbered by ``priority`` 1..n in that order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rag_eval._core.errors import InputFormatError
from rag_eval._core.messages import shown
from rag_eval._core.spans import parse_chunk_id, span_problem
from rag_eval._data.datasets import Dataset
from rag_eval._data.judging.sheet import SheetRow

# A unit: (doc, start, end); start and end are None for a passage or a whole document.
Unit = tuple[str, int | None, int | None]


@dataclass(frozen=True)
class Ranked:
    """One retriever's rankings: ``{qid: [unit id, ...]}`` best first (passage ids, or chunk ids for documents).

    ``name`` is how a row's note names the retriever (its label); ``where`` how an error names the source.
    """

    name: str
    rankings: Mapping[str, Sequence[str]]
    where: str = ""


@dataclass(frozen=True)
class Pool:
    """The rows to judge, and what they were drawn from."""

    rows: list[SheetRow]
    depth: int
    retrievers: int
    # Per query with a hole: the largest share of some retriever's top ``depth`` that is unjudged.
    shares: dict[str, float] = field(default_factory=dict)

    @property
    def queries(self) -> int:
        """How many queries have rows."""
        return len({row.query_id for row in self.rows})


@dataclass
class _Found:
    """One unit of one query, as the retrievers surfaced it."""

    unit: Unit
    ranks: dict[str, int] = field(default_factory=dict)  # retriever name -> best rank (1 = first)

    @property
    def best(self) -> int:
        return min(self.ranks.values())


def pool(dataset: Dataset, answers: Sequence[Ranked], depth: int) -> Pool:
    """The unjudged units of the top ``depth`` of each of ``answers``, deduplicated and ordered.

    Order (each row's ``priority``, 1 first):

    1. the queries that have judgements before those that have none: a query with no judgement is not
       scored today, so no verdict rests on it yet;
    2. then by the query's **unjudged share**, largest first: over the retrievers, the largest share of
       one retriever's top ``depth`` positions that hold an unjudged unit (its holes / ``depth``, as
       ``judged@k`` counts them). The retriever whose top is least judged is the one whose number, and
       any verdict about it, could move most;
    3. then by the best rank of the query's holes (a hole at rank 1 weighs more in every ranked metric),
       then by query id (bytes);
    4. within a query: by the unit's best rank over the retrievers, then by how many retrievers surfaced
       it (more first), then by document id (bytes) and offsets.

    ``answers`` name queries and units of ``dataset``; anything else (a results file written on another
    dataset) is an error naming its ``where``.
    """
    if depth < 1:
        raise InputFormatError(f"--depth {depth}: pool at least the top 1")
    found: dict[str, dict[Unit, _Found]] = {}
    shares: dict[str, float] = {}
    for answer in answers:
        for qid, units in answer.rankings.items():
            if qid not in dataset.queries:
                raise InputFormatError(f"{answer.where}: query {shown(qid)} is not in the dataset {dataset.name!r}; "
                                       "pool results written on this config's dataset")
            graded = dataset.judgements.get(qid, {})
            holes = 0
            for rank, unit_id in enumerate(units[:depth], start=1):
                unit = _unit(dataset, answer, qid, unit_id)
                if unit[0] in graded:
                    continue
                holes += 1
                entry = found.setdefault(qid, {}).setdefault(unit, _Found(unit))
                entry.ranks[answer.name] = min(rank, entry.ranks.get(answer.name, rank))
            if holes:
                shares[qid] = max(shares.get(qid, 0.0), holes / depth)
    order = sorted(found, key=lambda qid: (
        not dataset.judgements.get(qid), -shares[qid], min(f.best for f in found[qid].values()), qid.encode("utf-8"),
    ))
    rows: list[SheetRow] = []
    for qid in order:
        entries = sorted(found[qid].values(), key=lambda f: (
            f.best, -len(f.ranks), f.unit[0].encode("utf-8"), f.unit[1] or 0, f.unit[2] or 0,
        ))
        for entry in entries:
            doc, start, end = entry.unit
            rows.append(SheetRow(
                query_id=qid, doc=doc, query_text=dataset.queries[qid].text, start=start, end=end,
                text=_text(dataset, entry.unit), priority=len(rows) + 1, note=_note(entry),
            ))
    return Pool(rows, depth, len(answers), shares)


def _unit(dataset: Dataset, answer: Ranked, qid: str, unit_id: str) -> Unit:
    """The unit a ranked id names: a passage, or for documents a span (a whole document: no offsets)."""
    if not dataset.has_documents:
        if unit_id not in dataset.corpus:
            raise InputFormatError(f"{answer.where}: query {shown(qid)}: passage {shown(unit_id)} is not in the corpus of "
                                   f"{dataset.name!r}; pool results written on this config's dataset")
        return unit_id, None, None
    documents = dataset.documents
    if unit_id in documents:  # a retriever over whole documents, as a results file of an older run names it
        return unit_id, None, None
    parsed = parse_chunk_id(unit_id)
    if parsed is None or parsed[0] not in documents:
        raise InputFormatError(f"{answer.where}: query {shown(qid)}: {shown(unit_id)} is not a chunk <doc>#<start>-<end> of "
                               f"a document of {dataset.name!r}; pool results written on this config's dataset")
    doc, start, end = parsed
    problem = span_problem(start, end, len(documents[doc]))
    if problem is not None:
        raise InputFormatError(f"{answer.where}: query {shown(qid)}: chunk {shown(unit_id)}: {problem}; the document "
                               "changed since these results were written: run the retrievers again")
    if start == 0 and end == len(documents[doc]):
        return doc, None, None
    return doc, start, end


def _text(dataset: Dataset, unit: Unit) -> str:
    doc, start, end = unit
    if not dataset.has_documents:
        return str((dataset.corpus.get(doc) or {}).get("text") or "")
    text = dataset.documents[doc]
    return text if start is None or end is None else text[start:end]


def _note(entry: _Found) -> str:
    """``surfaced by bm25 at rank 1, dense at rank 3``: best rank first, then by name."""
    ranks = sorted(entry.ranks.items(), key=lambda item: (item[1], item[0].encode("utf-8")))
    return "surfaced by " + ", ".join(f"{name} at rank {rank}" for name, rank in ranks)
