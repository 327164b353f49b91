"""A judgement sheet's empty grades filled by a judge: rows grouped by query into batches, provenance written.

Only rows whose grade is empty are judged: a grade already in the sheet (a person's, or an earlier
judge's) is never asked for again nor changed. A graded row gets the judge's ``source``
(``llm:<model>``), its description as ``annotator``, the time (ISO 8601, UTC) and the judge's
explanation as ``note``. A row the judge could not grade stays ungraded (never a 0) and is
listed in :attr:`Graded.failed` with the reason.
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_eval._core.messages import shown
from rag_eval._data.judging.sheet import SheetRow
from rag_eval._models.judges.base import JudgeError, description_of, judge_all, source_of

#: Passages handed to the judge at once (several queries' batches); the progress bar moves per call.
PASSAGES_PER_CALL = 64


@dataclass
class Graded:
    """The sheet's rows after judging, in their order, and what it took."""

    rows: list[SheetRow]
    source: str
    graded: int = 0
    kept: int = 0  # rows that had a grade already
    cache_hits: int = 0
    failed: list[tuple[SheetRow, str]] = field(default_factory=list)
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    request_seconds: float = 0.0
    seconds: float = 0.0


def grade_rows(
    rows: Sequence[SheetRow],
    judge: Any,
    *,
    where: str = "the sheet",
    judge_where: str = "",
    progress: Callable[[int], None] | None = None,
) -> Graded:
    """Judge the ungraded ``rows`` with ``judge`` (see the module docstring); ``progress(n)`` after each n rows.

    A row to judge without its query's text or its unit's text is bad input: one JudgeError
    naming ``where`` (the sheet) and the row, before anything is asked. A judge that fails (its
    endpoint down, a plug-in's bad answer) is one JudgeError line starting with ``judge_where``
    (the judge's config file).
    """
    try:
        source, annotator = source_of(judge), description_of(judge)
    except JudgeError as error:
        raise JudgeError(f"{judge_where}: {error}" if judge_where else str(error)) from error
    result = Graded(list(rows), source)
    todo: dict[tuple[str, str], list[int]] = {}  # (query id, query text) -> row positions, in sheet order
    for position, row in enumerate(rows):
        if row.grade is not None:
            result.kept += 1
            continue
        for name, value in (("query_text", row.query_text), ("text", row.text)):
            if not value.strip():
                raise JudgeError(
                    f"{where}: the row of query {shown(row.query_id)} and unit {shown(row.unit)} has an empty "
                    f"{name}; the judge reads the query's and the unit's text (rag-eval pool writes both)"
                )
        todo.setdefault((row.query_id, row.query_text), []).append(position)
    started = time.perf_counter()
    for call in _calls(list(todo.items())):
        batches = [(query_text, [rows[p].text for p in positions]) for (_, query_text), positions in call]
        try:
            answers = judge_all(judge, batches)
        except JudgeError as error:
            raise JudgeError(f"{judge_where}: {error}" if judge_where else str(error)) from error
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        for (_, positions), grades in zip(call, answers):
            for position, grade in zip(positions, grades):
                row = rows[position]
                result.requests += grade.requests
                result.cache_hits += grade.cached
                if not grade.cached:  # what this run spent: a cached answer's cost was paid when it was asked
                    result.prompt_tokens += grade.prompt_tokens
                    result.completion_tokens += grade.completion_tokens
                    result.request_seconds += grade.seconds
                if grade.grade is None:
                    result.failed.append((row, grade.error or "the judge gave no grade"))
                    continue
                result.graded += 1
                result.rows[position] = row.graded(grade.grade, source, annotator=annotator, time=now,
                                                   note=grade.explanation)
        if progress is not None:
            progress(sum(len(positions) for _, positions in call))
    result.seconds = time.perf_counter() - started
    return result


def _calls(groups: list[tuple[tuple[str, str], list[int]]]) -> list[list[tuple[tuple[str, str], list[int]]]]:
    """Whole queries gathered into calls of about :data:`PASSAGES_PER_CALL` passages (a query is never split)."""
    calls: list[list[tuple[tuple[str, str], list[int]]]] = []
    size = 0
    for group in groups:
        if not calls or size >= PASSAGES_PER_CALL:
            calls.append([])
            size = 0
        calls[-1].append(group)
        size += len(group[1])
    return calls
