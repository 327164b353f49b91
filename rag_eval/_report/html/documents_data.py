"""report.html's data for a dataset of documents: chunk texts with their evidence marked, evidence counts (pure).

What report.md's detailed queries show (rag_eval._report.retrieved_chunks), for every query: each
ranked chunk's document and offsets, its text cut around the query's evidence (the cut of
rag_eval._report.emphasis, within ``report.passage_chars``) with the evidence as marks, the
query's evidence spans, and per retriever the characters that the chunks its main metric reads (its top k,
or those that fit its budget) cover, miss and read: report.md's own rule, in one home
(rag_eval._report.retrieved_chunks.chunks_and_evidence).

Shapes (added to :attr:`RunData.data`): ``docs`` document ids; ``uo[unit]`` ``[doc, start, end]`` (None for
a unit that is not a chunk id); per entry ``et`` a number in ``texts`` (-1: text left out) and ``em``
``[cut before, cut after, start, end, ...]`` with the marks relative to the text (0: no marks, no cut);
``ev[q]`` the evidence ``[doc, start, end, grade, text]``; ``ec[r]`` ``[covered, evidence, read]`` per
query (characters); ``miss[r][q]`` the evidence pieces outside the chunks read, ``[doc, start, end]``;
``nr[r]`` per query how many chunks the main metric reads (the first of its ranking), as ``[width, digits]``;
``read`` what they are (in words, the budget or cutoff, and the run's evidence metrics that read them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rag_eval._core.spans import parse_chunk_id
from rag_eval._report.emphasis import clip, cut_window, evidence_by_doc
from rag_eval._report.format import one_line, shorten
from rag_eval._report.html.data import TEXT_BUDGET, RunData, digits, width_for
from rag_eval._report.html.encode import StringTable
from rag_eval._report.retrieved_chunks import chunks_and_evidence, reading

__all__ = ["document_details"]


class _Texts:
    """Window and quote texts, each stored once, within the run's text budget."""

    def __init__(self, built: RunData) -> None:
        self.built = built
        self.table = StringTable()
        self._known: set[str] = set()

    def number(self, value: str) -> int:
        """The number of ``value``; -1 when it is new and the budget is spent."""
        if value in self._known:
            return self.table.add(value)
        if self.built.texts_used + len(value) > TEXT_BUDGET:
            self.built.texts_left_out += 1
            return -1
        self.built.texts_used += len(value)
        self._known.add(value)
        return self.table.add(value)


def document_details(built: RunData, entry_units: Sequence[Sequence[int]], order: Iterable[int]) -> None:
    """Add the documents' shapes (see the module's docstring) to ``built.data``."""
    data, run = built.data, built.run
    documents = run.dataset.documents
    limit = data["chars"]
    docs = StringTable()
    texts = _Texts(built)
    qids = data["qids"]
    evidence_of = {q: tuple(run.dataset.evidence.get(q, ())) for q in qids}
    evidence_rows = []
    for qid in qids:  # the evidence first: a query's quotes take the budget before any chunk's text
        rows = []
        for span in sorted(evidence_of[qid], key=lambda s: (s.doc, s.start, s.end)):
            quote = shorten(one_line(documents.get(span.doc, "")[span.start:span.end]), limit)
            grade = float(span.grade)
            rows.append([docs.add(span.doc), span.start, span.end, int(grade) if grade.is_integer() else grade,
                         texts.number(quote)])
        evidence_rows.append(rows)
    chunks: list[Any] = []
    for unit in built.units.items:
        parsed = parse_chunk_id(unit)
        chunks.append(None if parsed is None else (parsed, docs.add(parsed[0])))
    first_entry = [0]
    for count in data["en"]:
        first_entry.append(first_entry[-1] + count)
    et = [-1] * first_entry[-1]
    em: list[Any] = [0] * first_entry[-1]
    wanted = [evidence_by_doc(evidence_of[q]) for q in qids]
    for key in order:
        q, e = key >> 20, key & 0xFFFFF
        chunk = chunks[entry_units[q][e]]
        if chunk is None:
            continue
        (doc, start, end), _ = chunk
        text = documents.get(doc, "")
        marks = clip(wanted[q].get(doc, []), start, end)
        low, high = cut_window(text, start, end, marks, limit)
        index = first_entry[q] + e
        et[index] = texts.number(text[low:high])
        if et[index] < 0:
            break  # the budget is spent: the chunks after this one show their document and offsets only
        shown = clip(marks, low, high)
        if shown or low > start or high < end:
            em[index] = [int(low > start), int(high < end), *(x - low for piece in shown for x in piece)]
    data["ec"], data["miss"], data["nr"] = _evidence_counts(built, evidence_of, docs)
    read = reading(run.config.model.primary_metric, run.config.model.top_k)
    # What the chunks read are, as report.md says it ("the top 5 chunks", "the chunks that fit 1,000 tokens"),
    # the budget (None: a number of chunks), and the evidence metrics of the run that read them.
    at = f"@{read.k}" + (read.unit or "")
    data["read"] = {
        "chunks": read.chunks,
        "k": read.k,
        "unit": read.unit,
        "metrics": [data["metrics"].index(name + at) if name + at in data["metrics"] else None
                    for name in ("evidence_recall", "evidence_precision", "evidence_iou")],
    }
    data.update({
        "docs": docs.items,
        "uo": [None if chunk is None else [chunk[1], chunk[0][1], chunk[0][2]] for chunk in chunks],
        "texts": texts.table.items,
        "et": et,
        "em": em,
        "ev": evidence_rows,
        "textsLeftOut": sum(1 for number in et if number < 0),
    })


def _count_column(numbers: Sequence[int]) -> list[Any]:
    """``numbers`` (each >= 0) as ``[width, digits]`` (:func:`rag_eval._report.html.data.digits`)."""
    width = width_for(max(numbers, default=0))
    return [width, digits(numbers, width)]


def _evidence_counts(
    built: RunData, evidence_of: Mapping[str, tuple[Any, ...]], docs: StringTable
) -> tuple[list[list[int]], list[list[list[list[int]]]], list[list[Any]]]:
    """Per retriever: ``[covered, evidence, read]`` characters of the chunks each query's main metric reads,
    the pieces they missed, and how many chunks that is (report.md's own rule:
    :func:`rag_eval._report.retrieved_chunks.chunks_and_evidence`)."""
    data, run = built.data, built.run
    qids = data["qids"]
    read = reading(run.config.model.primary_metric, run.config.model.top_k)
    cache: dict[tuple[str, int, int], int] = {}  # token counts, shared by the variants of one chunking
    counts, missed, numbers = [], [], []
    for outcome in run.outcomes:
        found = chunks_and_evidence(outcome, qids, run.dataset.documents, evidence_of, read, cache)
        row: list[int] = []
        pieces = []
        for qid in qids:
            these = found[qid]
            row += [these.covered, these.evidence, these.context]
            pieces.append([[docs.add(doc), s, e] for doc, s, e in these.coverage.missed])
        counts.append(row)
        missed.append(pieces)
        numbers.append(_count_column([len(found[qid].chunks) for qid in qids]))
    return counts, missed, numbers
