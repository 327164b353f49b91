"""Replay a stored ranking: score rankings produced by any outside system.

Rankings come from a TREC run file, a JSON file (``{qid: [doc, ...]}`` or
``{qid: {doc: score}}``) or inline YAML. A plain list is ranked as given: the
first document gets the highest score. Also rag_eval's test double: examples and
CI run fast with no model at all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from rag_eval.errors import RetrieverError


class StaticRetriever:
    """A retriever whose answers were decided in advance.

    Parameters: ``rankings`` (inline ``{qid: [doc, ...]}`` or ``{qid: {doc: score}}``)
    or ``path`` (a TREC run file or a JSON file of the same shapes).
    """

    PATH_PARAMS = ("path",)

    def __init__(self, rankings: Mapping[str, Any] | None = None, path: str | None = None) -> None:
        if (rankings is None) == (path is None):
            raise RetrieverError("static: give exactly one of 'rankings' (inline) or 'path' (a TREC run or JSON file)")
        self.path = path
        source = _load(Path(path)) if path is not None else rankings
        self.rankings = _normalise(source, path or "rankings")
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
        from rag_eval.trec import ranked_doc_ids

        if self.rankings and queries and not any(qid in self.rankings for qid in queries):
            # Scoring every query 0 in silence would hide a query-id mismatch (e.g. "PLAIN-1" vs "1").
            stored = sorted(self.rankings)[:3]
            asked = sorted(queries)[:3]
            raise RetrieverError(
                f"static: {self.path or 'rankings'}: none of its {len(self.rankings)} queries is in the query set "
                f"(it has {', '.join(map(repr, stored))}, ...; the query set has {', '.join(map(repr, asked))}, ...); "
                "check the query ids"
            )
        self._not_asked = sum(1 for qid in self.rankings if qid not in queries)
        out: dict[str, dict[str, float]] = {}
        for qid in queries:
            ranked = self.rankings.get(qid, {})
            if self._corpus is not None:
                for doc in ranked:
                    if doc not in self._corpus:
                        raise RetrieverError(
                            f"static: {self.path or 'rankings'}: query {qid!r} ranks doc {doc!r}, which is not in the corpus"
                        )
            out[qid] = {doc: ranked[doc] for doc in ranked_doc_ids(ranked)[:top_k]}
        return out

    def describe(self) -> dict[str, Any]:
        """Where the rankings came from and how many queries they cover."""
        description: dict[str, Any] = {"source": self.path or "inline", "queries": len(self.rankings)}
        if self._not_asked:
            description["queries_not_in_query_set"] = self._not_asked
        return description


def _load(path: Path) -> Any:
    if not path.is_file():
        raise RetrieverError(f"static: {path}: no such file")
    if path.suffix == ".json":
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise RetrieverError(f"static: {path}: line {error.lineno}: invalid JSON ({error.msg})") from None
    from rag_eval.errors import InputFormatError
    from rag_eval.trec import read_run, table_to_nested

    try:
        return table_to_nested(read_run(path))
    except InputFormatError as error:
        raise RetrieverError(f"static: {error}") from None


def _normalise(source: Any, where: str) -> dict[str, dict[str, float]]:
    if not isinstance(source, Mapping):
        raise RetrieverError(f"static: {where}: expected a mapping of query id to a list of doc ids or {{doc: score}}")
    out: dict[str, dict[str, float]] = {}
    for qid, ranking in source.items():
        qid = str(qid)
        if isinstance(ranking, list):
            docs = [str(d) for d in ranking]
            if len(set(docs)) != len(docs):
                dup = next(d for d in docs if docs.count(d) > 1)
                raise RetrieverError(f"static: {where}: query {qid!r} lists doc {dup!r} twice")
            # The first document gets the highest score: ranks are kept exactly.
            out[qid] = {doc: float(len(docs) - i) for i, doc in enumerate(docs)}
        elif isinstance(ranking, Mapping):
            try:
                out[qid] = {str(d): float(s) for d, s in ranking.items()}
            except (TypeError, ValueError):
                raise RetrieverError(f"static: {where}: query {qid!r}: scores must be numbers") from None
        else:
            raise RetrieverError(f"static: {where}: query {qid!r}: expected a list of doc ids or {{doc: score}}")
    return out
