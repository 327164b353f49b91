"""How a hit of an external index becomes one of rag_eval's units: a passage, or a span of a judged document.

A config's ``map:`` names the ways, tried in this order for every hit (the first that applies wins):

1. ``doc_id`` + ``start`` + ``end``: metadata fields holding the document id and the chunk's character
   offsets. The hit becomes the span ``<doc>#<start>-<end>`` of a judged document (the whole document's
   id when the span covers it), so evidence and ``doc_`` metrics work on the team's own chunking.
   When the hit carries its text and the document no longer holds that text at those offsets, the
   index is stale: the text is looked for in the same document (found once: the hit is *relocated*
   there; else the hit is *stale* and maps to nothing). Both are counted and listed in the report.
2. ``passage_id``: a metadata field holding a passage id (``"@id"``: the hit's own id).
3. ``id_map`` (an adapter parameter): a file of ``external id<TAB>passage or chunk id`` lines.
4. ``text: true``: the hit's exact text, equal to a passage (or document), else found inside a
   document (the first document holding it; a text held by more than one is counted as ambiguous).

A hit that maps to nothing is counted for its query with the reason, never dropped silently;
a run in which no hit maps at all is refused (the mapping is wrong, not the retriever).
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from rag_eval._core.errors import RetrieverError
from rag_eval._core.messages import shown
from rag_eval._core.spans import chunk_id, parse_chunk_id
from rag_eval._data.datasets.model import passage_text
from rag_eval._retrievers.external.hits import Hit
from rag_eval._retrievers.params import AdapterParams

#: ``passage_id: "@id"`` maps a hit by its own id.
OWN_ID = "@id"
#: Hits listed per problem in the results file and the report (all are counted).
EXAMPLES = 20
# Between documents in the text-match haystack: a character no text holds, so no match spans two documents.
_SEPARATOR = "\x00"


class MapSpec(AdapterParams):
    """``map:``: how a hit becomes a passage or a span of a document (see the module docstring)."""

    doc_id: str | None = Field(None, min_length=1, description="metadata field holding the document id")
    start: str | None = Field(None, min_length=1, description="metadata field: the chunk's first character offset")
    end: str | None = Field(None, min_length=1, description="metadata field: the offset just after the chunk")
    passage_id: str | None = Field(
        None, min_length=1, description='metadata field holding a passage id; "@id" for the hit\'s own id'
    )
    text: bool = Field(False, description="map a hit by its exact text, found in a passage or a document")

    @model_validator(mode="after")
    def _spans_whole(self) -> MapSpec:
        named = [name for name in ("doc_id", "start", "end") if getattr(self, name) is not None]
        if named and len(named) != 3:
            missing = [name for name in ("doc_id", "start", "end") if name not in named]
            raise ValueError(
                f"a span needs doc_id, start and end together; add {' and '.join(missing)} (the metadata "
                "fields that hold them) or remove " + " and ".join(named)
            )
        return self

    @property
    def spans(self) -> bool:
        """Whether hits carry a document id and offsets."""
        return self.doc_id is not None

    def ways(self, id_map: bool) -> list[str]:
        """The ways named, in the order they are tried."""
        ways = ["spans"] if self.spans else []
        ways += ["passage_id"] if self.passage_id is not None else []
        ways += ["id_map"] if id_map else []
        ways += ["text"] if self.text else []
        return ways


def read_id_map(path: Path) -> dict[str, str]:
    """``{external id: passage or chunk id}`` from a UTF-8 file of ``external<TAB>unit`` lines (BOM allowed).

    Empty lines are skipped; a line without a tab, or an external id given twice with two units, is an error
    naming the file and line.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise RetrieverError(f"id_map {str(path)!r} does not exist; give a file of 'external id<TAB>passage id' lines") from None
    except UnicodeDecodeError as error:
        raise RetrieverError(f"id_map {str(path)!r} is not UTF-8 (byte {error.start}); save it as UTF-8") from None
    except OSError as error:
        raise RetrieverError(f"id_map {str(path)!r} cannot be read: {error.strerror or error}") from None
    table: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        external, tab, unit = line.partition("\t")
        if not tab or not external or not unit:
            raise RetrieverError(
                f"id_map {str(path)!r} line {number}: {shown(line)} is not 'external id<TAB>passage id'; "
                "separate the two ids with one tab"
            )
        if table.get(external, unit) != unit:
            raise RetrieverError(
                f"id_map {str(path)!r} line {number}: external id {shown(external)} is mapped twice "
                f"({shown(table[external])} and {shown(unit)}); keep one line per id"
            )
        table[external] = unit
    if not table:
        raise RetrieverError(f"id_map {str(path)!r} holds no mapping; give 'external id<TAB>passage id' lines")
    return table


class _TextIndex:
    """Where an exact text occurs in the corpus: equal to a passage, or inside a document."""

    def __init__(self, corpus: Mapping[str, Mapping[str, Any]]) -> None:
        self.ids = sorted(corpus)
        self.texts = [str(corpus[i].get("text", "")) for i in self.ids]
        self.equal: dict[str, str] = {}
        for unit, text in zip(self.ids, self.texts):
            self.equal.setdefault(text, unit)
        for unit in self.ids:  # a store that keeps title + text (what dense encodes) maps too
            self.equal.setdefault(passage_text(corpus[unit]), unit)
        self.haystack = _SEPARATOR.join(self.texts)
        self.starts: list[int] = []
        offset = 0
        for text in self.texts:
            self.starts.append(offset)
            offset += len(text) + 1

    def find(self, text: str) -> tuple[str | None, bool]:
        """``(unit id, ambiguous)``: the passage equal to ``text``, else the span of the first document holding it."""
        if not text:
            return None, False
        if text in self.equal:
            return self.equal[text], False
        position = self.haystack.find(text)
        if position < 0:
            return None, False
        row = bisect.bisect_right(self.starts, position) - 1
        start = position - self.starts[row]
        following = self.haystack.find(text, position + 1)
        ambiguous = following >= 0
        return chunk_id(self.ids[row], start, start + len(text)), ambiguous


class HitMapper:
    """Maps the hits of each query to rag_eval's units and counts what it could not map, and why."""

    def __init__(
        self, spec: MapSpec, corpus: Mapping[str, Mapping[str, Any]], id_map: Mapping[str, str] | None = None,
        *, adapter: str,
    ) -> None:
        self.spec = spec
        self.adapter = adapter
        self.corpus = corpus
        self.id_map = dict(id_map) if id_map else None
        self.ways = spec.ways(self.id_map is not None)
        if not self.ways:
            raise RetrieverError(
                f"{adapter}: map names no way to turn a hit into a passage; set map.doc_id/start/end (metadata "
                "fields of the document id and offsets), map.passage_id, id_map (a file), or map.text: true"
            )
        self._text_index: _TextIndex | None = None
        # passage_id tried first: its hits are mapped in rank()'s fast path (other ways: one call per hit)
        self._direct_field = spec.passage_id if self.ways[0] == "passage_id" else None
        self._ids: frozenset[str] | None = None
        self.counts: Counter[str] = Counter()
        self.unmapped_by_query: Counter[str] = Counter()
        self.hits_by_query: Counter[str] = Counter()
        self.examples: dict[str, list[dict[str, Any]]] = {}
        self.scoreless = 0

    # ------------------------------------------------------------------ mapping

    def rank(self, query_id: str, hits: Sequence[Hit]) -> dict[str, float]:
        """``{unit id: score}`` of one query's hits, in the backend's order; unmapped hits counted, not kept.

        When any hit of the answer has no score, every hit of it gets one from its rank (``len(hits) - rank``):
        the backend's order is the one scale the answer has (the scores of some hits say nothing of where the
        scoreless ones stand), as :func:`best_first` cuts it. Such an answer is counted (``ranked_by_order``;
        ``mixed_scores`` when some of its hits had a score, which is then not used). Two hits of one unit keep
        the first (the better ranked) and count as a duplicate.
        """
        ranked: dict[str, float] = {}
        count = len(hits)
        self.hits_by_query[query_id] += count
        self.counts["hits"] += count
        # The common case first, counted once per query: the passage id is the hit's own id or a metadata
        # field, and the dataset has that passage (a managed collection's every hit). Anything else takes
        # the ways in order, with the reason of a hit that maps to nothing.
        field = self._direct_field
        if field is not None and self._ids is None:
            # Membership through the run's read-only corpus view costs a Python call per hit: a set of the ids
            # (references to the corpus's own strings) is built once, on the first query.
            self._ids = frozenset(self.corpus)
        ids = self._ids if self._ids is not None else frozenset()
        direct = duplicates = 0
        scoreless = sum(hit.score is None for hit in hits)
        by_order = scoreless > 0
        if by_order:
            self.counts["ranked_by_order"] += 1
            self.counts["mixed_scores"] += scoreless < count
        for position, hit in enumerate(hits):
            unit: Any = None
            if field is not None:
                unit = hit.id if field == OWN_ID else hit.metadata.get(field)
                if unit is not None and not isinstance(unit, str):
                    unit = str(unit)
                if unit is not None and unit in ids:
                    direct += 1
                else:
                    unit = None
            if unit is None:
                unit = self._unit(query_id, hit)
                if unit is None:
                    self.unmapped_by_query[query_id] += 1
                    continue
            if unit in ranked:
                duplicates += 1
                continue
            score = hit.score
            ranked[unit] = float(count - position) if by_order or score is None else float(score)
        if direct:
            self.counts["mapped"] += direct
            self.counts["by_passage_id"] += direct
        if duplicates:
            self.counts["duplicates"] += duplicates
        self.scoreless += scoreless
        return ranked

    def rank_top(self, query_id: str, hits: Sequence[Hit], k: int) -> dict[str, float]:
        """:meth:`rank` of the ``k`` best of ``hits`` (:func:`best_first`); the hits returned beyond them are counted
        (``returned``, ``beyond_top_k``), never scored."""
        kept = best_first(hits, k)
        beyond = len(hits) - len(kept)
        if beyond:
            self.counts["beyond_top_k"] += beyond
        return self.rank(query_id, kept)

    def check_mapped(self) -> None:
        """Refuse a run whose hits mapped to nothing: the mapping is wrong, and every metric would read 0.

        A run in which no query got a hit at all (an empty collection, a service that finds nothing) is
        refused the same way: every metric would read 0 as well, and nothing says why.
        """
        queries = len(self.hits_by_query)
        if queries and not self.counts["hits"] and not self.counts["beyond_top_k"]:
            raise RetrieverError(
                f"{self.adapter}: none of the {queries} queries got a hit, so every metric would read 0; check that "
                "the collection (or the service's index) holds the dataset's passages and is the one named "
                "(params.collection, params.url)"
            )
        if self.counts["hits"] and not self.counts["mapped"]:
            first = next((rows[0] for rows in self.examples.values() if rows), {})
            raise RetrieverError(
                f"{self.adapter}: none of the {self.counts['hits']} hits maps to a passage or document of the dataset "
                f"(map tries {', '.join(self.ways)}; first hit: {first.get('why', '?')}); check map's field names "
                "against what the index stores, or that the index holds this dataset"
            )

    def _unit(self, query_id: str, hit: Hit) -> str | None:
        reasons = []
        for way in self.ways:
            unit, reason = getattr(self, f"_by_{way}")(query_id, hit)
            if unit is not None:
                self.counts["mapped"] += 1
                self.counts[f"by_{way}"] += 1
                return unit
            reasons.append(reason)
        self._example("unmapped", query_id, hit, "; ".join(reason for reason in reasons if reason))
        return None

    def _by_spans(self, query_id: str, hit: Hit) -> tuple[str | None, str]:
        spec = self.spec
        assert spec.doc_id is not None and spec.start is not None and spec.end is not None
        missing = [field for field in (spec.doc_id, spec.start, spec.end) if field not in hit.metadata]
        if missing:
            return None, f"metadata has no {', '.join(repr(field) for field in missing)}"
        doc, start, end = hit.metadata[spec.doc_id], hit.metadata[spec.start], hit.metadata[spec.end]
        doc = str(doc)
        if doc not in self.corpus:
            return None, f"document {shown(doc)} is not in the dataset"
        first, last = _offset(start), _offset(end)
        if first is None or last is None:
            return None, f"offsets {start!r}, {end!r} are not integers"
        document = str(self.corpus[doc].get("text", ""))
        in_bounds = 0 <= first < last <= len(document)
        if hit.text is not None and (not in_bounds or document[first:last] != hit.text):
            moved = document.find(hit.text) if hit.text else -1
            if moved >= 0 and document.find(hit.text, moved + 1) < 0:
                self.counts["relocated"] += 1
                self._example("relocated", query_id, hit, f"text of {doc}[{first}:{last}] found at {moved} instead")
                return _span_id(doc, moved, moved + len(hit.text), len(document)), ""
            self.counts["stale"] += 1
            self._example("stale", query_id, hit, f"{doc}[{first}:{last}] no longer holds the hit's text")
            return None, f"stale: {doc}[{first}:{last}] no longer holds the hit's text"
        if not in_bounds:
            return None, f"span [{first}, {last}) is outside document {shown(doc)} of {len(document)} characters"
        return _span_id(doc, first, last, len(document)), ""

    def _by_passage_id(self, query_id: str, hit: Hit) -> tuple[str | None, str]:
        field = self.spec.passage_id
        value = hit.id if field == OWN_ID else hit.metadata.get(field or "")
        if value is None:
            return None, "the hit has no id" if field == OWN_ID else f"metadata has no {field!r}"
        unit = str(value)
        return (unit, "") if self._known(unit) else (None, f"passage {shown(unit)} is not in the dataset")

    def _by_id_map(self, query_id: str, hit: Hit) -> tuple[str | None, str]:
        assert self.id_map is not None
        if hit.id is None or str(hit.id) not in self.id_map:
            return None, f"id {shown(str(hit.id))} is not in id_map"
        unit = self.id_map[str(hit.id)]
        return (unit, "") if self._known(unit) else (None, f"id_map's {shown(unit)} is not in the dataset")

    def _by_text(self, query_id: str, hit: Hit) -> tuple[str | None, str]:
        if not hit.text:
            return None, "the hit has no text"
        if self._text_index is None:
            self._text_index = _TextIndex(self.corpus)
        unit, ambiguous = self._text_index.find(hit.text)
        if unit is None:
            return None, "its text is in no passage or document"
        if ambiguous:
            self.counts["ambiguous_text"] += 1
        return unit, ""

    def _known(self, unit: str) -> bool:
        if unit in self.corpus:
            return True
        parsed = parse_chunk_id(unit)
        if parsed is None or parsed[0] not in self.corpus:
            return False
        return parsed[2] <= len(str(self.corpus[parsed[0]].get("text", "")))

    def _example(self, kind: str, query_id: str, hit: Hit, why: str) -> None:
        rows = self.examples.setdefault(kind, [])
        if len(rows) < EXAMPLES:
            rows.append({"query": query_id, "hit": hit.id, "why": why})

    # ------------------------------------------------------------------ report

    def describe(self) -> dict[str, Any]:
        """What the mapping did, for the results file and the report (all counts; a few examples of each problem)."""
        counts = self.counts
        info: dict[str, Any] = {
            "ways": self.ways,
            "hits": counts["hits"],
            "mapped": counts["mapped"],
            "by_way": {way: counts[f"by_{way}"] for way in self.ways},
            "unmapped": counts["hits"] - counts["mapped"],
            "duplicates": counts["duplicates"],
            "relocated": counts["relocated"],
            "stale": counts["stale"],
            "ambiguous_text": counts["ambiguous_text"],
            "scoreless_hits": self.scoreless,
            # answers ranked by the backend's order (some hit had no score); of them, those whose other hits'
            # scores were set aside (a mix of scored and scoreless hits)
            "ranked_by_order": counts["ranked_by_order"],
            "mixed_scores": counts["mixed_scores"],
        }
        if counts["beyond_top_k"]:
            # every hit returned is accounted for: hits (the top_k best, mapped or not) + beyond_top_k = returned
            info["returned"] = counts["hits"] + counts["beyond_top_k"]
            info["beyond_top_k"] = counts["beyond_top_k"]
        if self.unmapped_by_query:
            info["unmapped_by_query"] = dict(sorted(self.unmapped_by_query.items()))
        if self.examples:
            info["examples"] = {kind: rows for kind, rows in sorted(self.examples.items())}
        return info


def best_first(hits: Sequence[Hit], k: int) -> list[Hit]:
    """The ``k`` best of one answer's hits, best first.

    When every hit has a score they are sorted by score descending, ties by the hit's id descending
    (bytes, as rag_eval ranks ties; a hit without an id last among its ties), before the cut: a backend
    that returns more than ``k`` hits, or returns them out of order, is cut on its scores, not on its
    order. Without scores (or with some missing) the returned order is the ranking, and the cut keeps
    the first ``k``.
    """
    if any(hit.score is None for hit in hits):
        return list(hits[:k])
    return sorted(hits, key=lambda hit: (hit.score, hit.id is not None, hit.id or ""), reverse=True)[:k]


def _offset(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)  # a JSON payload or a float column stores 12 as 12.0
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def _span_id(doc: str, start: int, end: int, length: int) -> str:
    """The whole document's id when the span covers it (a document is its own passage), else the chunk id."""
    return doc if start == 0 and end == length else chunk_id(doc, start, end)
