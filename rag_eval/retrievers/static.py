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

    def index(self, corpus: Mapping[str, Any]) -> None:
        """Keep the corpus to check the stored doc ids against it."""
        self._corpus = corpus

    def search(self, queries: Mapping[str, str], top_k: int) -> dict[str, dict[str, float]]:
        """The stored ranking of each query (empty for a query it has none for)."""
        out: dict[str, dict[str, float]] = {}
        for qid in queries:
            ranked = self.rankings.get(qid, {})
            top = sorted(ranked.items(), key=lambda item: -item[1])[:top_k]
            out[qid] = dict(top)
        return out

    def describe(self) -> dict[str, Any]:
        """Where the rankings came from and how many queries they cover."""
        return {"source": self.path or "inline", "queries": len(self.rankings)}


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
