"""Spans of documents: evidence, chunks and their ids, in one place.

A position in a document is a code-point offset (a Python ``str`` index), and a span
is ``[start, end)`` with ``0 <= start < end <= len(document)`` (docs/semantics.md,
"Documents, chunks and evidence"). A chunk id names its document and its position,
``<doc id>#<start>-<end>``, so that the same span has the same id whether the
harness chunked the document or a retriever returned the span itself, and so that
ties between chunks break the same way everywhere (rag_eval._core.ranking, by id bytes).
The id is read back from the right: a document id may itself hold ``#`` and ``-``.
"""

from __future__ import annotations

import numbers
import re
from dataclasses import dataclass
from typing import cast

_POSITION = re.compile(r"#([0-9]+)-([0-9]+)\Z")


@dataclass(frozen=True)
class EvidenceSpan:
    """A graded span of a document that answers a query (grade > 0)."""

    doc: str
    start: int
    end: int
    grade: float = 1.0

    @property
    def length(self) -> int:
        """Characters (code points) in the span."""
        return self.end - self.start


@dataclass(frozen=True)
class Chunk:
    """A piece of a document: its offsets and exactly ``document[start:end]``."""

    doc: str
    start: int
    end: int
    text: str

    @property
    def id(self) -> str:
        """``<doc>#<start>-<end>``: the chunk's document and position."""
        return chunk_id(self.doc, self.start, self.end)

    @property
    def length(self) -> int:
        """Characters (code points) in the chunk."""
        return self.end - self.start


def chunk_id(doc: str, start: int, end: int) -> str:
    """The id of the span ``[start, end)`` of document ``doc``: ``<doc>#<start>-<end>``."""
    return f"{doc}#{start}-{end}"


def parse_chunk_id(value: str) -> tuple[str, int, int] | None:
    """``(doc, start, end)`` of a chunk id written by :func:`chunk_id`, or None when it is not one."""
    match = _POSITION.search(value)
    if match is None or match.start() == 0:
        return None
    start, end = int(match.group(1)), int(match.group(2))
    if end <= start:
        return None
    return value[: match.start()], start, end


def is_offset(value: object) -> bool:
    """Whether ``value`` may be an offset: an integer (``int`` or a numpy integer), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def span_problem(start: object, end: object, length: int) -> str | None:
    """Why ``[start, end)`` is not a span of a document of ``length`` characters, or None.

    Offsets are integers: Python's or numpy's (a chunker computing with numpy returns ``np.int64``, as
    evaluate_evidence accepts), not bools, not floats (3.0 is refused rather than guessed). A caller
    that keeps the offsets turns them into ``int`` with :func:`int` once this says None.
    """
    for name, value in (("start", start), ("end", end)):
        if not is_offset(value):
            return f"{name} {value!r} is not an integer offset"
    first, last = int(cast(int, start)), int(cast(int, end))  # numpy's integers shown as Python's
    if first < 0:
        return f"start {first} is negative; offsets count characters from 0"
    if last <= first:
        return f"end {last} is not after start {first}; a span is [start, end) with end > start"
    if last > length:
        return f"end {last} is past the end of the document ({length:,} characters)"
    return None
