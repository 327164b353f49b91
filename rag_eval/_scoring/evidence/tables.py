"""Evidence, retrieved spans and chunks as numpy columns, read and checked without a Python step per span.

``{qid: [(doc, start, end, value), ...]}`` becomes columns (query, doc code, start,
end, value) through C-level iteration (``map``, ``itemgetter``, ``array``): a million
spans take a fraction of a second. Every problem is one line naming the input, the
query, the item's position in that query's list and the document, and the fix:

    spans: query 'q7', item 3 (doc 'manual.md'): end 5 is not after start 10; a span is [start, end) ...

Offsets are ints (not floats, not bools, rag_eval._core.spans.span_problem), values finite
numbers; evidence grades are > 0; a span twice in one query's ranking is refused.
An item may also be a dict: ``{doc, start, end, score}`` (spans), ``{doc, start, end, grade?}``
(evidence) or ``{doc, start, end}`` (chunks).
"""

from __future__ import annotations

import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from typing import Any, NoReturn

import numpy as np

from rag_eval._core.errors import InputFormatError
from rag_eval._core.ids import any_control_characters, id_problem, shown_id
from rag_eval._core.spans import Chunk, EvidenceSpan, chunk_id, is_offset, span_problem
from rag_eval._scoring.evidence.blocks import sort_within_blocks

_ID_RULE = "ids must be non-empty text without control characters"
_NUMBER_TYPES = (int, float, np.integer, np.floating)


@dataclass
class SpanColumns:
    """Spans of many queries (or of none: chunks) as columns, in the order given.

    ``query`` indexes ``query_keys``; ``first[q]`` is the row of query q's item 0, so a
    row's position in its query's list is ``row - first[query[row]]``. ``docs`` holds the
    doc ids as given until :meth:`DocIndex.code` turns them into ``doc`` codes.
    """

    what: str  # "evidence", "spans" or "chunks": the start of every message
    query_keys: list[str]
    lengths: np.ndarray  # int64, rows per query key
    query: np.ndarray  # int64
    docs: list[Any]
    start: np.ndarray  # int64
    end: np.ndarray  # int64
    value: np.ndarray  # float64: the score of a retrieved span, the grade of evidence (1.0 for chunks)
    items: list[Any]  # the items as given, for messages only
    doc: np.ndarray | None = None  # int64 codes into the DocIndex, once coded

    def __len__(self) -> int:
        return int(self.start.size)

    @property
    def first(self) -> np.ndarray:
        """Row of each query's first item."""
        return np.cumsum(self.lengths) - self.lengths

    def place(self, row: int, with_doc: bool = True) -> str:
        """``spans: query 'q7', item 3 (doc 'd')``: where a row came from."""
        where = self.what
        if self.query_keys:
            q = int(self.query[row])
            where += f": query {shown_id(self.query_keys[q])}, item {row - int(self.first[q])}"
        else:
            where += f": item {row}"
        if with_doc:
            doc = self.docs[row]
            where += f" (doc {shown_id(doc) if isinstance(doc, str) else repr(doc)})"
        return where

    def fail(self, row: int, problem: str, with_doc: bool = True) -> NoReturn:
        """Raise the one-line error of a row."""
        raise InputFormatError(f"{self.place(row, with_doc)}: {problem}")


def read_spans(data: Any, what: str) -> SpanColumns:
    """``{qid: [(doc, start, end, value), ...]}`` as columns.

    ``what`` is "spans" (the value is a score, required) or "evidence" (the value is a
    grade, default 1; :class:`~rag_eval._core.spans.EvidenceSpan` items are accepted too).
    """
    if not isinstance(data, Mapping):
        raise InputFormatError(
            f"{what}: expected a mapping {{query_id: [(doc_id, start, end, {_value_name(what)}), ...]}}, "
            f"got {type(data).__name__}"
        )
    query_keys = _query_ids(list(data), what)
    lists = list(data.values())
    for kind in set(map(type, lists)):  # one look per type, not per query
        if issubclass(kind, (list, tuple)):
            continue
        qid = next(q for q, items in zip(query_keys, lists) if type(items) is kind)
        raise InputFormatError(
            f"{what}: query {shown_id(qid)}: expected a list of (doc_id, start, end, {_value_name(what)}), "
            f"got {kind.__name__}"
        )
    lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    items = list(chain.from_iterable(lists))
    query = np.repeat(np.arange(len(query_keys), dtype=np.int64), lengths)
    columns = _columns(what, query_keys, lengths, query, items)
    return columns


def read_chunks(data: Iterable[Any]) -> SpanColumns:
    """Every chunk of a chunking: ``(doc, start, end)`` tuples or :class:`~rag_eval._core.spans.Chunk` objects."""
    if isinstance(data, (str, bytes, Mapping)) or not isinstance(data, Iterable):
        raise InputFormatError(
            f"chunks: expected an iterable of (doc_id, start, end) or Chunk, got {type(data).__name__}"
        )
    items = list(data)
    if Chunk in set(map(type, items)):
        items = [(c.doc, c.start, c.end) if isinstance(c, Chunk) else c for c in items]
    empty = np.zeros(0, dtype=np.int64)
    return _columns("chunks", [], empty, np.zeros(len(items), dtype=np.int64), items)


def _columns(what: str, query_keys: list[str], lengths: np.ndarray, query: np.ndarray, items: list[Any]) -> SpanColumns:
    width = 3 if what == "chunks" else 4
    if what == "evidence" and set(map(type, items)) - {tuple, list}:
        # EvidenceSpan objects: normalised here (evidence is small; spans are never given as objects).
        items = [(e.doc, e.start, e.end, e.grade) if isinstance(e, EvidenceSpan) else e for e in items]
    columns = SpanColumns(what, query_keys, lengths, query, [], np.zeros(0, np.int64), np.zeros(0, np.int64),
                          np.zeros(0), items)
    if any(issubclass(kind, Mapping) for kind in set(map(type, items))):
        items = columns.items = _from_mappings(columns)
    try:
        sizes = set(map(len, items))  # one C-level pass; an item without a length (an object, a number) raises
    except TypeError:
        _fail_on_shape(columns, width)
    if what == "evidence" and 3 in sizes:  # (doc, start, end): grade 1
        items = [(*e, 1.0) if len(e) == 3 else e for e in items]
        columns.items = items
        sizes = set(map(len, items))
    if sizes - {width}:
        _fail_on_shape(columns, width)
    columns.docs = list(map(itemgetter(0), items))
    columns.start = _offsets(columns, 1, "start")
    columns.end = _offsets(columns, 2, "end")
    columns.value = _values(columns) if width == 4 else np.ones(len(items))
    return columns


# The keys of an item given as a dict (docs/plugins.md: a retriever may return spans so); evidence's grade is optional.
_KEYS = {"spans": ("doc", "start", "end", "score"), "evidence": ("doc", "start", "end"), "chunks": ("doc", "start", "end")}


def _from_mappings(columns: SpanColumns) -> list[Any]:
    """The items with every dict turned into its tuple; one line naming the query and item for a missing key.

    Other keys of a span or chunk are ignored (a pipeline's span may carry its text), as the
    runner does; evidence takes only doc, start, end and grade, so a misspelt ``grade`` is not
    silently read as grade 1.
    """
    what, keys = columns.what, _KEYS[columns.what]
    shown = "{" + ", ".join(keys) + (", grade" if what == "evidence" else "") + "}"
    if what != "evidence" and all(isinstance(item, Mapping) for item in columns.items):
        try:  # the usual case, a list of dicts: read in C
            return list(map(itemgetter(*keys), columns.items))
        except KeyError:
            pass  # the loop below names the item
    items: list[Any] = []
    for row, item in enumerate(columns.items):
        if not isinstance(item, Mapping):
            items.append(item)
            continue
        missing = [key for key in keys if key not in item]
        if missing:
            names = " and ".join(repr(key) for key in missing)
            columns.fail(row, f"the dict has no {names} key; give {shown} or ({_form(what)}), got {_short(dict(item))}",
                         with_doc=False)
        if what == "evidence":
            unknown = [key for key in item if key not in (*keys, "grade")]
            if unknown:
                columns.fail(row, f"unknown key {_short(unknown[0])}; evidence is given as {shown} "
                                  f"or ({_form(what)})", with_doc=False)
            items.append((*itemgetter(*keys)(item), item.get("grade", 1.0)))
        else:
            items.append(itemgetter(*keys)(item))
    return items


def _fail_on_shape(columns: SpanColumns, width: int) -> NoReturn:
    """Name the first item that is not a tuple (or list) of ``width`` values."""
    for row, item in enumerate(columns.items):
        if not isinstance(item, (tuple, list)):
            columns.fail(row, f"expected ({_form(columns.what)}), got {type(item).__name__} {_short(item)}",
                         with_doc=False)
        if len(item) != width:
            columns.fail(row, f"expected ({_form(columns.what)}), got {len(item)} values {_short(item)}",
                         with_doc=False)
    raise AssertionError("no item is malformed")  # pragma: no cover


def _offsets(columns: SpanColumns, field: int, name: str) -> np.ndarray:
    """Column ``field`` as int64; ``array('q')`` refuses floats, strings and None on the way (in C)."""
    items = columns.items
    try:
        values = np.frombuffer(array.array("q", map(itemgetter(field), items)), dtype=np.int64)
    except (TypeError, OverflowError):
        values = None
    if values is None or values.size != len(items):
        for row, item in enumerate(items):
            if not isinstance(item, (tuple, list)):  # a str of 4 characters has the right length
                columns.fail(row, f"expected ({_form(columns.what)}), got {type(item).__name__} {_short(item)}",
                             with_doc=False)
            value = item[field]
            if not is_offset(value) or not -(2**63) <= value < 2**63:
                columns.fail(row, _offset_problem(name, value))
        raise AssertionError("no offset is bad")  # pragma: no cover
    # array('q') takes a bool as 0 or 1: only those rows need a look at their type.
    for row in np.flatnonzero((values == 0) | (values == 1)).tolist():
        if isinstance(items[row][field], (bool, np.bool_)):
            columns.fail(row, _offset_problem(name, items[row][field]))
    return values.copy()  # writable, independent of the array's buffer


def _offset_problem(name: str, value: Any) -> str:
    shown = _short(value)
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return f"{name} {shown} is too large for an offset"
    return f"{name} {shown} is not an integer offset; offsets are ints counting characters (code points) from 0"


def _values(columns: SpanColumns) -> np.ndarray:
    """The score or grade column as float64: numbers only (not str, not bool), finite; grades > 0."""
    items, what = columns.items, columns.what
    name = _value_name(what)
    getter = map(itemgetter(3), items)
    try:
        values = np.frombuffer(array.array("d", getter), dtype=np.float64).copy()
    except (TypeError, ValueError):
        values = None
    kinds = set(map(type, map(itemgetter(3), items))) if what == "evidence" or values is None else set()
    for kind in kinds:
        if not issubclass(kind, _NUMBER_TYPES) or issubclass(kind, (bool, np.bool_)):
            row = next(i for i, item in enumerate(items) if type(item[3]) is kind)
            columns.fail(row, f"{name} {_short(items[row][3])} is not a number; give each {name} as an int or a float")
    assert values is not None
    if not kinds:  # array('d') takes a bool as 0.0 or 1.0 (and a numpy bool): only those rows need a look
        for row in np.flatnonzero((values == 0) | (values == 1)).tolist():
            if isinstance(items[row][3], (bool, np.bool_)):
                columns.fail(row, f"{name} {items[row][3]!r} is not a number; give each {name} as an int or a float")
    bad = ~np.isfinite(values)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        columns.fail(row, f"{name} is {float(values[row])!r}; every {name} must be a finite number")
    if what == "evidence":
        bad = values <= 0
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            columns.fail(
                row,
                f"grade {_short(items[row][3])} is not > 0; evidence is a span that answers the query "
                "(grade > 0): leave out spans that do not, or judge their document with grade 0",
            )
    return values


def check_offsets(columns: SpanColumns, doc_lengths: np.ndarray | None) -> None:
    """Every span is ``0 <= start < end``, and ``end <= len(document)`` when the documents are known.

    ``doc_lengths[code]`` is the length of the document of that code, -1 for one not among the
    documents given; None: no documents were given, so only the offsets themselves are checked.
    """
    start, end = columns.start, columns.end
    bad = (start < 0) | (end <= start)
    length = None
    if doc_lengths is not None:
        assert columns.doc is not None
        length = doc_lengths[columns.doc]
        bad |= (length < 0) | (end > length)
    if not bad.any():
        return
    row = int(np.flatnonzero(bad)[0])
    size = int(length[row]) if length is not None else 2**63 - 1
    if size < 0:
        columns.fail(row, "the document is not among the documents given; check the doc id or add the document")
    problem = span_problem(int(start[row]), int(end[row]), size)
    assert problem is not None
    columns.fail(row, problem)


def check_unique_spans(columns: SpanColumns, n_docs: int) -> None:
    """Refuse the same span (doc, start, end) twice in one query's list (it would take two ranks)."""
    n = len(columns)
    if n < 2:
        return
    assert columns.doc is not None
    if not _any_repeat(columns, n_docs):
        return
    # Only to name the repeat: the first by (query, doc, start, end), its two rows in input order.
    order = np.lexsort((columns.end, columns.start, columns.query * n_docs + columns.doc))
    repeated = _same_neighbours(columns, n_docs, order)
    i = int(np.flatnonzero(repeated)[0])
    first, second = sorted((int(order[i]), int(order[i + 1])))
    span = chunk_id(str(columns.docs[first]), int(columns.start[first]), int(columns.end[first]))
    what = "query's ranking" if columns.what == "spans" else "chunking"
    where = columns.place(second, with_doc=False)
    earlier = first - (int(columns.first[columns.query[first]]) if columns.query_keys else 0)
    raise InputFormatError(
        f"{where}: span {shown_id(span)} is listed twice (also item {earlier}); each span appears once in a {what}"
    )


def _any_repeat(columns: SpanColumns, n_docs: int) -> bool:
    """Whether a query lists a span twice: each query's exact int64 keys sorted among themselves."""
    assert columns.doc is not None
    width = int(columns.end.max()) + 1
    if n_docs * width * width >= 2**62:  # offsets of billions of characters: one sort of all rows, three keys
        order = np.lexsort((columns.end, columns.start, columns.query * n_docs + columns.doc))
        return bool(_same_neighbours(columns, n_docs, order).any())
    key = (columns.doc * width + columns.start) * width + columns.end  # (doc, start, end) within a query
    sizes = columns.lengths if columns.query_keys else np.array([key.size])  # chunks: one block
    ordered = sort_within_blocks(key, sizes)
    first = np.zeros(key.size, dtype=bool)  # the first row of each query's list
    starts = np.cumsum(sizes) - sizes
    first[starts[starts < key.size]] = True
    return bool(((ordered[1:] == ordered[:-1]) & ~first[1:]).any())


def _same_neighbours(columns: SpanColumns, n_docs: int, order: np.ndarray) -> np.ndarray:
    """Whether rows ``order[i]`` and ``order[i + 1]`` are one span of one query."""
    assert columns.doc is not None
    pair = columns.query * n_docs + columns.doc
    return (
        (pair[order[1:]] == pair[order[:-1]])
        & (columns.start[order[1:]] == columns.start[order[:-1]])
        & (columns.end[order[1:]] == columns.end[order[:-1]])
    )


@dataclass
class DocIndex:
    """Doc ids of every input, coded 0..n-1 (ids given as ints are read as their digits, as evaluate() does)."""

    keys: list[str]
    codes_of: dict[Any, int]

    @classmethod
    def build(cls, columns: list[SpanColumns], more: tuple[str, list[str]] | None = None) -> DocIndex:
        """Index the doc ids of all inputs (one C-level pass each), checking each distinct id once.

        ``more`` is (what, doc ids) of an input already checked (the document judgements).
        A bad id is reported at its first place.
        """
        lists = [c.docs for c in columns] + ([more[1]] if more else [])
        try:
            given: list[Any] = list(dict.fromkeys(chain.from_iterable(lists)))
        except TypeError:  # an unhashable doc id (a list, a dict)
            _fail_at_doc(columns, lambda d: _id_text(d) is None, "is a {type}; ids are strings")
        texts: list[Any] = [_id_text(d) for d in given] if not all(type(d) is str for d in given) else given
        if None in texts:
            _fail_at_doc(columns, lambda d: _id_text(d) is None, "is a {type}; ids are strings")
        keys: list[str] = list(dict.fromkeys(texts))
        problem = _first_id_problem(keys)
        if problem is not None:
            bad, why = problem
            _fail_at_doc(columns, lambda d: _id_text(d) == bad, why + "; " + _ID_RULE)
        position = dict(zip(keys, range(len(keys))))
        if texts is given:  # all str (the usual case): the ids are their own keys
            return cls(keys, position)
        return cls(keys, {d: position[t] for d, t in zip(given, texts)})

    def code(self, docs: list[Any]) -> np.ndarray:
        """Codes of ``docs`` (all indexed by :meth:`build`)."""
        return np.fromiter(map(self.codes_of.get, docs), dtype=np.int64, count=len(docs))  # get: the fastest call

    def __len__(self) -> int:
        return len(self.keys)


def _id_text(value: Any) -> str | None:
    """An id as text: a str, or an int read as its digits; None for anything else."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return str(value)
    return None


def _fail_at_doc(columns: list[SpanColumns], bad: Any, problem: str) -> NoReturn:
    for column in columns:
        for row, doc in enumerate(column.docs):
            if bad(doc):
                shown = shown_id(doc) if isinstance(doc, str) else _short(doc)
                column.fail(row, f"doc id {shown} " + problem.replace("{type}", type(doc).__name__), with_doc=False)
    raise AssertionError("no doc id is bad")  # pragma: no cover


def _query_ids(keys: list[Any], what: str) -> list[str]:
    if not all(type(q) is str for q in keys):
        for key in keys:
            if _id_text(key) is None:
                raise InputFormatError(f"{what}: query id {_short(key)} is a {type(key).__name__}; ids are strings")
        keys = [str(key) for key in keys]
    problem = _first_id_problem(keys)
    if problem is not None:
        raise InputFormatError(f"{what}: query id {shown_id(problem[0])} {problem[1]}; {_ID_RULE}")
    return keys


def _first_id_problem(ids: list[str]) -> tuple[str, str] | None:
    """(id, why) of the first id that breaks the rule of rag_eval._core.ids or is not UTF-8 text; None when all are fine.

    All ids are checked at once (joined); the loop runs only to name a bad one.
    """
    if "" not in ids and not any_control_characters(ids):
        try:
            "".join(ids).encode("utf-8")
            return None
        except UnicodeEncodeError:
            pass
    for value in ids:
        problem = id_problem(value)
        if problem is None:
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as failure:
                problem = f"holds a lone surrogate U+{ord(value[failure.start]):04X}, which is not UTF-8 text"
        if problem is not None:
            return value, problem
    return None  # pragma: no cover - called when one is bad


def _value_name(what: str) -> str:
    return "score" if what == "spans" else "grade"


def _form(what: str) -> str:
    return {"spans": "doc_id, start, end, score", "evidence": "doc_id, start, end[, grade]"}.get(
        what, "doc_id, start, end"
    )


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
