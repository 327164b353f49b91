"""Merge the graded rows of a judgement sheet into a YAML query set, each grade with its provenance.

Every row is checked first (an unknown query or unit, a grade outside the dataset's scale or
negative, a bad ``source``, a text that no longer matches the unit): any problem refuses the whole
merge, each problem one line naming the sheet and its line. Ungraded rows are skipped and counted.

What a graded row becomes (``source``, ``annotator`` and ``time`` go with the grade):

- a passage dataset: the judgement ``passage: {grade, source, ...}`` of the query;
- a dataset of documents, a row without offsets (a whole document): the document judgement;
- a span graded > 0: an evidence item ``{doc, start, end, grade, source, ...}``;
- a span graded 0: evidence holds grades > 0 only, so a 0 says that nothing in the document answers
  the query, as far as the judge saw. If the document has no grade for the query after the merge, it
  gets the document judgement 0 (from the first such row); otherwise the span already grades 0 by the
  chunk rule (docs/semantics.md) and nothing is written.

A **conflict** is a graded row that the query set contradicts: another grade for the same passage,
document or span; a span graded > 0 in a document judged <= 0; a document graded 0 that holds
evidence; a span graded 0 that overlaps evidence. Conflicts are refused, every one listed, unless
resolved: ``keep`` keeps the query set's grade (the row is skipped), ``replace`` takes the sheet's and
removes what contradicts it (the document's judgement <= 0, or the evidence inside a span or document
graded 0). A sheet that contradicts itself (a document graded 0 on one row, evidence in it on another)
is refused.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from rag_eval._core.errors import RagEvalError
from rag_eval._core.messages import close_match, shown
from rag_eval._core.spans import EvidenceSpan, span_problem
from rag_eval._data.datasets import Dataset
from rag_eval._data.datasets.evidence import document_grades
from rag_eval._data.datasets.values import id_from_value
from rag_eval._data.judging.grades import highest_grade, provenance_problem
from rag_eval._data.judging.sheet import SheetRow, sheet_format

KEEP, REPLACE = "keep", "replace"


class MergeRefused(RagEvalError):
    """The merge writes nothing: ``problems`` lists every reason, one line each; the message sums them up."""


@dataclass(frozen=True)
class Line:
    """A graded row and where it is in the sheet."""

    where: str  # "sheet.csv:7"
    row: SheetRow
    number: int = 0  # the line, to list conflicts in the sheet's order

    @property
    def grade(self) -> float:
        assert self.row.grade is not None
        return self.row.grade


@dataclass
class Counts:
    """What the merge did, for its summary line."""

    judgements: int = 0  # judgements added
    evidence: int = 0  # evidence items added
    replaced: int = 0  # grades replaced (conflicts resolved by replace)
    removed: int = 0  # judgements or evidence removed because a replacing grade contradicts them
    kept: int = 0  # conflicts resolved by keep
    unchanged: int = 0  # rows the query set already says (the same grade, or 0 by the chunk rule)
    ungraded: int = 0  # rows without a grade, skipped
    resolved: list[str] = field(default_factory=list)  # "kept: ..." / "replaced: ...", one per conflict

    @property
    def changed(self) -> bool:
        return bool(self.judgements or self.evidence or self.replaced or self.removed)


class Edits:
    """What a merge changes, recorded against the loaded dataset, applied to the YAML tree by rag_eval/_data/judging/merge_file.py."""

    def __init__(self) -> None:
        self.judgements: dict[tuple[str, str], Line | None] = {}  # (qid, unit) -> set to the row's grade, None: remove
        self.regraded: dict[tuple[str, int], Line] = {}  # (qid, evidence item) -> its new grade
        self.removed: set[tuple[str, int]] = set()  # (qid, evidence item)
        self.added: list[Line] = []  # new evidence items


def graded_lines(path: str | Path, rows: list[SheetRow]) -> tuple[list[Line], int]:
    """The graded rows with their places (``sheet.csv:7``), and how many rows have no grade."""
    lines = _row_lines(path, len(rows))
    graded = [Line(f"{path}:{line}", row, line) for line, row in zip(lines, rows) if row.grade is not None]
    return graded, len(rows) - len(graded)


def check_lines(lines: list[Line], dataset: Dataset) -> list[str]:
    """Every problem of the graded rows against ``dataset``, one line each (empty: all fine)."""
    highest = highest_grade(dataset.judgements, dataset.evidence)
    problems = []
    for line in lines:
        problem = _problem(line.row, dataset, highest)
        if problem is not None:
            problems.append(f"{line.where}: {problem}")
    problems += _self_contradictions(lines, dataset)
    return problems


def plan(lines: list[Line], dataset: Dataset, resolve: str | None, counts: Counts) -> tuple[Edits, list[str]]:
    """The edits of a merge of checked ``lines``, and its conflicts (listed and not applied when ``resolve`` is None)."""
    edits = Edits()
    listed: list[tuple[int, str]] = []  # (line, text): conflicts, or how each was resolved

    def conflict(line: Line, text: str, replace: Callable[[], Any]) -> bool:
        """List, keep or replace a conflict; whether the sheet's grade was taken."""
        message = f"{line.where}: query {shown(line.row.query_id)}, {text}"
        if resolve is None:
            listed.append((line.number, message))
            return False
        if resolve == KEEP:
            counts.kept += 1
            listed.append((line.number, f"kept: {message}"))
            return False
        counts.replaced += 1
        listed.append((line.number, f"replaced: {message}"))
        replace()
        return True

    if dataset.has_documents:
        groups: dict[tuple[str, str], list[Line]] = {}
        for line in lines:
            groups.setdefault((line.row.query_id, line.row.doc), []).append(line)
        for (qid, doc), group in groups.items():
            _plan_document(qid, doc, group, dataset, edits, counts, conflict)
    else:
        _plan_passages(lines, dataset, edits, counts, conflict)
    ordered = [text for _, text in sorted(listed, key=lambda item: item[0])]
    if resolve is None:
        return edits, ordered
    counts.resolved.extend(ordered)
    return edits, []


def grades_after(dataset: Dataset, edits: Edits) -> Dataset:
    """``dataset`` with the grades a merge of ``edits`` writes, in memory: for scoring what-ifs.

    What a query set reloaded after the merge would grade (the document grades derived again from
    its judgements and evidence); the provenance (``source`` and the rest) is left as it was, so this
    is for computing metrics, never for writing.
    """
    if not dataset.has_documents:
        return replace(dataset, judgements=_judged_after(dataset.judgements, edits))
    explicit = _judged_after(dataset.document_judgements, edits)
    evidence: dict[str, list[EvidenceSpan]] = {}
    for qid, spans in dataset.evidence.items():
        for i, span in enumerate(spans):
            if (qid, i) in edits.removed:
                continue
            line = edits.regraded.get((qid, i))
            evidence.setdefault(qid, []).append(span if line is None else replace(span, grade=line.grade))
    for line in edits.added:
        row = line.row
        assert row.start is not None and row.end is not None
        evidence.setdefault(row.query_id, []).append(EvidenceSpan(row.doc, row.start, row.end, line.grade))
    judgements, _ = document_grades(evidence, explicit)  # a conflict was resolved by the plan
    return replace(dataset, judgements=judgements, document_judgements=explicit,
                   evidence={qid: tuple(spans) for qid, spans in evidence.items() if spans})


def _judged_after(judged: dict[str, dict[str, float]], edits: Edits) -> dict[str, dict[str, float]]:
    """``judged`` (passage judgements, or a dataset's explicit document grades) with ``edits.judgements``
    set or removed; queries left with none dropped."""
    after = {qid: dict(units) for qid, units in judged.items()}
    for (qid, unit), line in edits.judgements.items():
        if line is None:
            after.get(qid, {}).pop(unit, None)
        else:
            after.setdefault(qid, {})[unit] = line.grade
    return {qid: units for qid, units in after.items() if units}


def _plan_passages(
    lines: list[Line], dataset: Dataset, edits: Edits, counts: Counts,
    conflict: Callable[[Line, str, Callable[[], Any]], bool],
) -> None:
    """Each row of a passage query set: a judgement added, the same grade, or a conflict."""
    for line in lines:
        qid, doc, grade = line.row.query_id, line.row.doc, line.grade
        given = dataset.judgements.get(qid, {}).get(doc)
        if given is None:
            edits.judgements[(qid, doc)] = line
            counts.judgements += 1
        elif given == grade:
            counts.unchanged += 1
        else:
            conflict(line, f"passage {shown(doc)}: the query set grades it {given:g}, the sheet {grade:g}",
                     partial(edits.judgements.__setitem__, (qid, doc), line))


def _plan_document(
    qid: str, doc: str, group: list[Line], dataset: Dataset, edits: Edits, counts: Counts,
    conflict: Callable[[Line, str, Callable[[], Any]], bool],
) -> None:
    """The rows of one (query, document): whole-document grade first, then spans > 0, then spans graded 0."""
    explicit = dataset.document_judgements.get(qid, {}).get(doc)
    items = [(i, span) for i, span in enumerate(dataset.evidence.get(qid, ())) if span.doc == doc]
    state = {"explicit": explicit}  # the document judgement as the merge leaves it (changed by replace)
    name = f"document {shown(doc)}"

    def set_explicit(line: Line, contradicted: list[tuple[int, EvidenceSpan]] | None = None) -> None:
        edits.judgements[(qid, doc)] = line
        state["explicit"] = line.grade
        if contradicted:
            remove_items(contradicted)

    def remove_items(chosen: list[tuple[int, EvidenceSpan]]) -> None:
        for i, _ in chosen:
            if (qid, i) not in edits.removed:
                edits.removed.add((qid, i))
                counts.removed += 1

    whole = [line for line in group if line.row.start is None]
    spans = [line for line in group if line.row.start is not None]
    for line in whole:
        grade = line.grade
        if explicit is not None:
            if explicit == grade:
                counts.unchanged += 1
            else:
                conflict(line, f"{name}: the query set grades it {explicit:g}, the sheet {grade:g}",
                         partial(set_explicit, line))
        elif items:
            derived = max(span.grade for _, span in items)
            if grade == derived:
                counts.unchanged += 1
            elif grade <= 0:
                conflict(line, f"{name}: the sheet grades it {grade:g} but the query set has evidence in it "
                               f"({_spans(items)}); replace removes that evidence",
                         partial(set_explicit, line, items))
            else:
                conflict(line, f"{name}: its evidence grades it {derived:g}, the sheet {grade:g}",
                         partial(set_explicit, line))
        else:
            set_explicit(line)
            counts.judgements += 1
    for line in [line for line in spans if line.grade > 0]:
        start, end, grade = line.row.start, line.row.end, line.grade
        where = f"{name} [{start}, {end})"
        same = [(i, span) for i, span in items if (span.start, span.end) == (start, end)]
        current = state["explicit"]
        if current is not None and current <= 0:
            def add_after_removing(line: Line = line) -> None:
                edits.judgements[(qid, doc)] = None
                state["explicit"] = None
                counts.removed += 1
                edits.added.append(line)
            conflict(line, f"{where}: the sheet grades it {grade:g} but the query set judges the document "
                           f"{current:g}; replace removes that judgement", add_after_removing)
        elif same:
            i, span = same[0]
            if span.grade == grade:
                counts.unchanged += 1
            else:
                conflict(line, f"{where}: the query set's evidence grades it {span.grade:g}, the sheet {grade:g}",
                         partial(edits.regraded.__setitem__, (qid, i), line))
        else:
            edits.added.append(line)
            counts.evidence += 1
    standing: list[tuple[Line, bool]] = []  # spans graded 0 that stand, and whether each replaced evidence
    for line in [line for line in spans if line.grade <= 0]:
        start, end = line.row.start or 0, line.row.end or 0
        inside = [(i, span) for i, span in items
                  if (qid, i) not in edits.removed and span.start < end and start < span.end]
        if inside and not conflict(line, f"{name} [{start}, {end}): the sheet grades it 0 but the query set has "
                                         f"evidence in it ({_spans(inside)}); replace removes that evidence",
                                   partial(remove_items, inside)):
            continue
        standing.append((line, bool(inside)))
    graded_after = state["explicit"] is not None or any((qid, i) not in edits.removed for i, _ in items) or any(
        added.row.query_id == qid and added.row.doc == doc for added in edits.added
    )
    for n, (line, replaced) in enumerate(standing):
        if n == 0 and not graded_after:  # the document's first grade: 0, from this row
            edits.judgements[(qid, doc)] = line
            counts.judgements += 1
        elif not replaced:
            counts.unchanged += 1  # 0 already, by the chunk rule


def _spans(items: list[tuple[int, EvidenceSpan]]) -> str:
    shown_items = [f"[{span.start}, {span.end}) grade {span.grade:g}" for _, span in items[:3]]
    return ", ".join(shown_items) + (f" and {len(items) - 3} more" if len(items) > 3 else "")


def _problem(row: SheetRow, dataset: Dataset, highest: float) -> str | None:
    """Why a graded row cannot be merged into ``dataset``, or None."""
    assert row.grade is not None
    if row.query_id not in dataset.queries:
        guess = close_match(row.query_id, dataset.queries)
        hint = f"; did you mean {guess!r}?" if guess else "; the sheet must be pooled from this query set"
        return f"query {shown(row.query_id)} is not in the query set{hint}"
    if row.grade < 0 or row.grade > highest:
        return (f"grade {row.grade:g} is outside the query set's scale 0-{highest:g} (0: not relevant, {highest:g}: its "
                "highest grade); correct the grade")
    problem = provenance_problem(row.source)
    if problem is not None:
        return problem
    if not dataset.has_documents:
        if row.start is not None:
            return "a passage query set has no offsets; leave start and end empty"
        passage = dataset.corpus.get(row.doc)
        if passage is None:
            guess = close_match(row.doc, dataset.corpus)
            return f"passage {shown(row.doc)} is not in the corpus{f'; did you mean {guess!r}?' if guess else ''}"
        return _text_problem(row, str(passage.get("text") or ""), f"passage {shown(row.doc)}")
    text = dataset.documents.get(row.doc)
    if text is None:
        guess = close_match(row.doc, dataset.documents)
        return f"document {shown(row.doc)} is not in the documents{f'; did you mean {guess!r}?' if guess else ''}"
    if row.start is None or row.end is None:
        return _text_problem(row, text, f"document {shown(row.doc)}")
    problem = span_problem(row.start, row.end, len(text))
    if problem is not None:
        return f"document {shown(row.doc)}: {problem}"
    return _text_problem(row, text[row.start:row.end], f"document {shown(row.doc)} [{row.start}, {row.end})")


def _text_problem(row: SheetRow, current: str, what: str) -> str | None:
    """The row's text (when given) must still be the unit's, white space aside (a spreadsheet may change it)."""
    if row.text and row.text.split() != current.split():
        return (f"the row's text differs from the text of {what} in the query set (edited since the pool?); pool "
                "again, or empty the row's text cell")
    return None


def _self_contradictions(lines: list[Line], dataset: Dataset) -> list[str]:
    """A document graded <= 0 on one row of the sheet and given evidence (a span > 0) on another."""
    if not dataset.has_documents:
        return []
    zero = {(line.row.query_id, line.row.doc): line for line in lines if line.row.start is None and line.grade <= 0}
    problems = []
    for line in lines:
        other = zero.get((line.row.query_id, line.row.doc))
        if other is not None and line.row.start is not None and line.grade > 0:
            problems.append(f"{line.where}: query {shown(line.row.query_id)}: the sheet grades document "
                            f"{shown(line.row.doc)} {other.grade:g} on {other.where} and gives it evidence here; "
                            "grade the document or its spans, not both ways")
    return problems


def _row_lines(path: str | Path, count: int) -> list[int]:
    """The line of each row of a sheet, as rag_eval._data.judging.sheet reads it (blank rows skipped).

    Falls back to row numbers (2, 3, ...) should the file not read back to ``count`` rows.
    """
    text = Path(path).read_bytes().decode("utf-8-sig")
    lines: list[int] = []
    if sheet_format(path) == ".csv":
        reader = csv.reader(io.StringIO(text, newline=""))
        next(reader, None)
        for values in reader:
            if any(value.strip() for value in values):
                lines.append(reader.line_num)
    else:
        lines = [n for n, raw in enumerate(text.split("\n"), start=1) if raw.strip()]
    return lines if len(lines) == count else list(range(2, count + 2))


def raw_id(value: Any) -> str | None:
    """A query's or document's id as a query set's YAML holds it (``123`` is ``"123"``), or None."""
    try:
        return id_from_value(value)
    except ValueError:
        return None
