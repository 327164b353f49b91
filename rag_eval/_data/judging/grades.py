"""What a grade's provenance may be, and the grade scale of a dataset: one rule for the sheet, the query set and merge.

A grade's **provenance** (``source``) says who gave it:

- ``human``: a person;
- ``llm+verified``: a model's grade that a person confirmed;
- ``<kind>:<name>``: a judge, e.g. ``llm:qwen2.5-0.5b-instruct`` or a plug-in judge's ``cross-encoder:ms-marco``;
  ``kind`` is a lower-case word (letters, digits, ``_ . + -``), ``name`` any text on one line.

A query set stores it beside the grade (``{grade: 2, source: llm:qwen}``, or ``source:`` on an evidence
item); a grade written without one is the query set's own, of unrecorded provenance.

The **grade scale** of a dataset runs from 0 to its highest grade (judgements and evidence): a sheet's
grade outside it is refused by ``judgements merge``, and the pool's exports offer exactly those grades.
A dataset with no grade above 0 gets the scale 0-3 of TREC's graded assessments.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from rag_eval._core.spans import EvidenceSpan
from rag_eval._data.judging.sheet import HUMAN, VERIFIED

DEFAULT_HIGHEST = 3.0
PROVENANCE_FORMS = f"{HUMAN}, {VERIFIED} or <kind>:<name> such as llm:qwen2.5"
_KIND = re.compile(r"[a-z][a-z0-9_.+-]*\Z")


def provenance_problem(value: str) -> str | None:
    """Why ``value`` is not a provenance (see the module docstring), or None when it is one."""
    if value in (HUMAN, VERIFIED):
        return None
    kind, colon, name = value.partition(":")
    if not colon:
        return f"source {value!r} is not a provenance; write {PROVENANCE_FORMS}"
    if not _KIND.match(kind):
        return f"source {value!r}: {kind!r} is not a judge kind (a lower-case word); write {PROVENANCE_FORMS}"
    if not name.strip() or name != name.strip() or not name.isprintable():
        return f"source {value!r}: the judge's name is empty, padded or holds a control character; write {PROVENANCE_FORMS}"
    return None


def provenance_from_value(value: Any) -> str:
    """A provenance read from YAML or JSON: text following :func:`provenance_problem`; ValueError otherwise."""
    if not isinstance(value, str):
        raise ValueError(f"source must be text ({PROVENANCE_FORMS}), not {type(value).__name__}")  # noqa: TRY004
    problem = provenance_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def note_from_value(value: Any, name: str) -> str:
    """``annotator`` or ``time`` beside a grade: text on one line (a YAML timestamp is taken as its ISO text)."""
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    if not isinstance(value, str) or not value.isprintable():
        raise ValueError(f"{name} must be text on one line")
    return value


def highest_grade(
    judgements: Mapping[str, Mapping[str, float]], evidence: Mapping[str, Iterable[EvidenceSpan]] | None = None
) -> float:
    """The top of the dataset's grade scale: its highest grade, or :data:`DEFAULT_HIGHEST` when none is above 0."""
    top = 0.0
    for grades in judgements.values():
        for grade in grades.values():
            top = max(top, float(grade))
    for spans in (evidence or {}).values():
        for span in spans:
            top = max(top, span.grade)
    return top if top > 0 else DEFAULT_HIGHEST


def scale_values(highest: float) -> list[int]:
    """The whole grades 0..highest that a rating question offers (at least 0 and 1)."""
    return list(range(max(1, math.floor(highest)) + 1))
