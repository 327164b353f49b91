"""What an id and a grade may be, read from YAML or JSON values or from text fields.

One rule per kind of value, used by every format, so that an id or grade is
refused with the same words wherever it comes from. Each function raises
ValueError with the problem and the fix (pydantic validators raise it as is;
the line-format readers add the file and line). ValueError even for a wrong type:
pydantic turns ValueError, never TypeError, into a validation error.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Mapping
from typing import Any

from rag_eval._core.ids import id_fix, id_problem, stored_id_problem, surrogate_problem
from rag_eval._core.yaml_numbers import IntAsWritten

# A grade written as text (TREC qrels, BEIR TSV): digits with an optional sign, point and
# exponent, as trec_eval's atof reads them. float() would also take "1_0" (as 10), "nan",
# "infinity" and non-ASCII digits, none of which is a grade.
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
GRADE_FORM = "a grade is a finite number such as 2, 0.5 or -1"


def id_from_value(value: Any, *, spaces: bool = False) -> str:
    """A query or document id from a YAML or JSON value: text, or a whole number (kept as its digits).

    ``spaces``: a space inside the id is kept (a stored ranking's ids, which must still name the
    dataset's ids, none of which holds one); otherwise it is refused, as :func:`id_from_text` says.
    """
    if isinstance(value, bool):
        # (From JSON, true or false; from YAML also an unquoted yes, no, on or off.)
        raise ValueError("an id must be text, not true/false (YAML reads an unquoted yes, no, on or off so too): "  # noqa: TRY004
                         "quote it")
    if isinstance(value, IntAsWritten):  # 1_000, 0x1F, +5: YAML 1.1 changed the digits
        raise ValueError(f"an id must be text; YAML read {value.written} as the number {int(value)}, which is not "
                         f"how it is written: quote it ('{value.written}')")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return id_from_text(value, spaces=spaces)
    if isinstance(value, float):
        message = "an id must be text; this one was read as a decimal number, which loses how it was written"
        raise ValueError(f"{message} (1.10 reads as 1.1): quote it")  # noqa: TRY004
    if isinstance(value, (_dt.date, _dt.datetime)):
        raise ValueError("an id must be text; YAML read this unquoted value as a date: quote it")  # noqa: TRY004
    if value is None:
        raise ValueError("an id is missing (empty)")
    raise ValueError(f"an id must be text, not a {_kind(value)}")


def id_from_text(text: str, *, spaces: bool = False) -> str:
    """An id read as text: spaces around it removed (ASCII spaces only: a tab is a control character, refused, and
    any other white space is part of the id, compared exactly); empty, control characters and (unless ``spaces``)
    a space inside refused.

    The rule of ids read from a dataset (rag_eval._core.ids.stored_id_problem): they are written to TREC
    files, which cannot hold a space inside an id.
    """
    value = text.strip(" ")
    # The common case, checked in C: no control character (not printable), no space.
    if value.isprintable() and value and (spaces or " " not in value):
        return value
    problem = id_problem(value) if spaces else stored_id_problem(value)
    if problem is not None:
        raise ValueError(f"an id {problem}; {id_fix(problem)}")
    return value


def text_problem(text: str) -> str | None:
    """Why ``text`` (a document's text or title) is not text, or None: ``holds a lone surrogate ...; fix``.

    A lone surrogate (from a ``\\ud800`` escape in JSON or YAML) is held by a Python str, but it is not a
    character: every later step that writes the text as UTF-8 (the run's fingerprints, a tokenizer, a
    results file) would fail on it.
    """
    problem = surrogate_problem(text)
    return None if problem is None else f"{problem}; {id_fix(problem)}"


def grade_from_value(value: Any) -> float:
    """A grade from a YAML or JSON value: an int or float, finite and within float range (an integer YAML 1.1 reads
    otherwise than it looks, ``010`` or ``1:0``, is refused where the YAML is read)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
            raise ValueError(f"{GRADE_FORM}, written without quotes")
        raise ValueError(GRADE_FORM)  # noqa: TRY004
    try:
        number = float(value)
    except OverflowError:  # an int past 1.8e308
        raise ValueError(f"{GRADE_FORM}; this one is too large for a float") from None
    if not math.isfinite(number):
        raise ValueError(GRADE_FORM)
    return number


EVIDENCE_GRADE_FORM = "an evidence grade is a finite number > 0 such as 1, 2 or 0.5 (default 1)"


def evidence_grade_from_value(value: Any) -> float:
    """An evidence grade from a YAML or JSON value: as :func:`grade_from_value`, in words that say it is > 0.

    The sign itself is checked by rag_eval._data.datasets.evidence (with the fix: judge the document 0);
    this only keeps the type error from suggesting a negative grade, which evidence cannot have.
    """
    try:
        return grade_from_value(value)
    except ValueError as error:
        raise ValueError(str(error).replace(GRADE_FORM, EVIDENCE_GRADE_FORM)) from None


def grade_from_text(text: str) -> float:
    """A grade written in a text file: a plain decimal number (no ``1_0``, ``nan`` or ``inf``)."""
    if text.isascii() and "_" not in text:  # the common case: float() reads exactly the plain numbers
        try:
            number = float(text)
        except ValueError:
            raise ValueError(GRADE_FORM) from None
        if math.isfinite(number):
            return number
    if not _NUMBER.fullmatch(text):  # "nan", "inf", "1_0", non-ASCII digits
        raise ValueError(GRADE_FORM)
    raise ValueError(f"{GRADE_FORM}; this one is too large for a float")


def is_plain_number(text: str) -> bool:
    """Whether ``text`` is a number as trec_eval writes one (``2``, ``-0.5``, ``1e-3``; not ``1_0`` or ``nan``)."""
    return _NUMBER.fullmatch(text) is not None


def mapped_grade(grade: float, grade_map: Mapping[float, float] | None) -> float:
    """``grade`` through the dataset's ``grade_map`` (collection codes to gains), if any."""
    if grade_map is None:
        return grade
    if grade not in grade_map:
        raise ValueError(f"grade {grade:g} is not in grade_map {sorted(grade_map)}; add it to the map")
    return grade_map[grade]


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "mapping"
    if isinstance(value, (list, tuple)):
        return "list"
    return type(value).__name__
