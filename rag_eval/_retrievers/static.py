"""Replay a stored ranking: score rankings produced by any outside system.

Rankings come from a TREC run file, a JSON file (``{qid: [doc, ...]}`` or
``{qid: {doc: score}}``) or inline YAML. A plain list is ranked as given: the
first document gets the highest score. Also rag_eval's test double: examples and
CI run fast with no model at all.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from rag_eval._core import files  # by module: its size limit is read when a file is checked
from rag_eval._core.errors import InputFormatError, RetrieverError
from rag_eval._core.files import check_input_file, parse_json, read_text
from rag_eval._core.messages import shown, some_of
from rag_eval._core.ranking import top_k as best_of
from rag_eval._core.spans import parse_chunk_id
from rag_eval._data.datasets.values import id_from_value, is_plain_number
from rag_eval._retrievers.params import AdapterParams
from rag_eval._retrievers.title_use import OWN_INDEX
from rag_eval._scoring.engine import read_run, to_nested


class StaticParams(AdapterParams):
    """The static adapter's parameters: exactly one of ``rankings`` and ``path``.

    Checked by ``rag-eval validate`` without reading anything: the file must be a
    readable regular file (not a folder, FIFO or device); its content is checked
    when the retriever is built.
    """

    rankings: dict[Any, Any] | None = Field(default=None, description="inline {qid: [doc, ...]} or {qid: {doc: score}}")
    path: str | Path | None = Field(default=None, description="a TREC run file or a JSON file of the same shapes")

    @model_validator(mode="after")
    def _one_source(self) -> StaticParams:
        if (self.rankings is None) == (self.path is None):
            raise RetrieverError(_ONE_SOURCE)
        if self.path is not None:
            _check_file(Path(self.path))
        return self


_ONE_SOURCE = "static: give exactly one of 'rankings' (inline) or 'path' (a TREC run or JSON file)"


class StaticRetriever:
    """A retriever whose answers were decided in advance.

    Parameters: ``rankings`` (inline ``{qid: [doc, ...]}`` or ``{qid: {doc: score}}``)
    or ``path`` (a TREC run file or a JSON file of the same shapes).
    """

    PATH_PARAMS = ("path",)
    Params = StaticParams

    @classmethod
    def title_use(cls, params: Mapping[str, Any]) -> str:
        """Rankings made elsewhere, from an index this run never sees (rag_eval._retrievers.title_use)."""
        return OWN_INDEX

    def __init__(self, rankings: Mapping[str, Any] | None = None, path: str | None = None) -> None:
        if (rankings is None) == (path is None):
            raise RetrieverError(_ONE_SOURCE)
        self.path = None if path is None else str(path)
        source = _load(Path(path)) if path is not None else rankings
        self.rankings = _normalise(source, self.path or "rankings")
        self._corpus: Mapping[str, Any] | None = None
        self._not_asked = 0

    def index(self, corpus: Mapping[str, Any]) -> None:
        """Keep the corpus to check the stored doc ids against it."""
        self._corpus = corpus

    def search(self, queries: Mapping[str, str], top_k: int) -> dict[str, dict[str, float]]:
        """The stored ranking of each query (empty for a query it has none for).

        Cut at ``top_k`` in trec_eval order (score descending, ties by doc id
        descending), so a tie at the cutoff keeps the documents trec_eval ranks first.
        """

        if self.rankings and queries and not any(qid in self.rankings for qid in queries):
            # Scoring every query 0 in silence would hide a query-id mismatch (e.g. "PLAIN-1" vs "1").
            stored = some_of([shown(qid) for qid in sorted(self.rankings)], 3)
            asked = some_of([shown(qid) for qid in sorted(queries)], 3)
            raise RetrieverError(
                f"static: {self.path or 'rankings'}: none of its {len(self.rankings)} queries is in the query set "
                f"(it has {stored}; the query set has {asked}); check the query ids"
            )
        self._not_asked = sum(1 for qid in self.rankings if qid not in queries)
        out: dict[str, dict[str, float]] = {}
        for qid in queries:
            ranked = self.rankings.get(qid, {})
            if self._corpus is not None:
                for doc in ranked:
                    if doc not in self._corpus and not _chunk_of(doc, self._corpus):
                        raise RetrieverError(
                            f"static: {self.path or 'rankings'}: query {qid!r} ranks doc {doc!r}, which is not in the corpus"
                        )
            out[qid] = best_of(ranked, top_k)
        return out

    def describe(self) -> dict[str, Any]:
        """Where the rankings came from and how many queries they cover."""
        description: dict[str, Any] = {"source": self.path or "inline", "queries": len(self.rankings)}
        if self._not_asked:
            description["queries_not_in_query_set"] = self._not_asked
        return description


def _check_file(path: Path) -> None:
    """A stored-ranking file is a readable regular file (stat only: a FIFO is never opened)."""

    if not path.exists() and not path.is_symlink():
        raise RetrieverError(f"static: {path}: no such file")
    try:
        if path.suffix == ".json":
            check_input_file(path, "JSON ranking file", files.MAX_DOCUMENT_BYTES, RetrieverError)
        else:  # a TREC run is streamed: no size limit
            check_input_file(path, "TREC run file", None, RetrieverError)
    except RetrieverError as error:
        raise RetrieverError(f"static: {error}") from None


def _load(path: Path) -> Any:
    """The stored rankings of a JSON or TREC run file, every problem as one ``static: PATH: ...`` line."""

    _check_file(path)
    try:
        if path.suffix == ".json":
            return parse_json(read_text(path, "JSON ranking file", files.MAX_DOCUMENT_BYTES, RetrieverError), path, RetrieverError)

        return to_nested(read_run(path))
    except (RetrieverError, InputFormatError) as error:
        raise RetrieverError(f"static: {error}") from None


def _normalise(source: Any, where: str) -> dict[str, dict[str, float]]:
    """``{qid: {doc: score}}`` from stored rankings; ids follow the id rule, scores are finite numbers."""
    if not isinstance(source, Mapping):
        raise RetrieverError(f"static: {where}: expected a mapping of query id to a list of doc ids or {{doc: score}}")
    out: dict[str, dict[str, float]] = {}
    for raw_qid, ranking in source.items():
        qid = _id(raw_qid, where, "query id")
        if qid in out:
            raise RetrieverError(f"static: {where}: query {qid!r} appears twice")
        if isinstance(ranking, list):
            docs = [_id(d, where, f"query {qid!r}: doc id") for d in ranking]
            if len(set(docs)) != len(docs):
                seen: set[str] = set()
                dup = next(d for d in docs if d in seen or seen.add(d))  # type: ignore[func-returns-value]
                raise RetrieverError(f"static: {where}: query {qid!r} lists doc {dup!r} twice")
            # The first document gets the highest score: ranks are kept exactly.
            out[qid] = {doc: float(len(docs) - i) for i, doc in enumerate(docs)}
        elif isinstance(ranking, Mapping):
            scored: dict[str, float] = {}
            for raw_doc, score in ranking.items():
                doc = _id(raw_doc, where, f"query {qid!r}: doc id")
                if doc in scored:
                    raise RetrieverError(f"static: {where}: query {qid!r} scores doc {doc!r} twice")
                scored[doc] = _score(score, where, qid, doc)
            out[qid] = scored
        else:
            raise RetrieverError(f"static: {where}: query {qid!r}: expected a list of doc ids or {{doc: score}}")
    return out


def _id(value: Any, where: str, what: str) -> str:
    try:
        # A space is kept: such an id names no query or document of a dataset (their ids hold none), so
        # search() refuses it as a document that is not in the corpus, and a query id never matches.
        return id_from_value(value, spaces=True)
    except ValueError as failure:
        raise RetrieverError(f"static: {where}: {what}: {failure} (got {shown(value)})") from None


def _score(value: Any, where: str, qid: str, doc: str) -> float:
    """A stored score: a finite number (a numeric string, as some tools write JSON, is read too)."""

    if isinstance(value, bool) or not isinstance(value, (int, float, str)) or (
        isinstance(value, str) and not is_plain_number(value.strip())
    ):
        raise RetrieverError(f"static: {where}: query {qid!r}: scores must be numbers")
    try:
        number = float(value)
    except ValueError:
        raise RetrieverError(f"static: {where}: query {qid!r}: scores must be numbers") from None
    except OverflowError:  # an int past 1.8e308
        number = math.inf
    if not math.isfinite(number):
        raise RetrieverError(
            f"static: {where}: query {qid!r}, doc {doc!r}: score {value!r:.40} is not a finite number; "
            "scores must be finite (NaN and infinity cannot be ranked)"
        )
    return number


def _chunk_of(key: str, corpus: Any) -> bool:
    """Whether ``key`` is a chunk id ``<doc>#<start>-<end>`` of a document of ``corpus``.

    A stored ranking of a document dataset names chunks; replayed without a chunker, the
    runner scores them as the retriever's own spans (rag_eval._run.documents).
    """

    parsed = parse_chunk_id(key)
    return parsed is not None and parsed[0] in corpus
