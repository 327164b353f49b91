"""The retriever seam: ``index(corpus)`` then ``search(queries, top_k)``.

A user's class needs no import from rag_eval to plug in: any object with these
two methods works. Data crosses the seam in the plain shapes that BEIR, ranx and
the trec_eval bindings share:

- corpus: ``{doc_id: {"text": str, "title": str}}``
- queries: ``{query_id: text}``
- result: ``{query_id: {doc_id: score}}``, higher score = better.

docs/plugins.md says exactly what each method receives and must return.

An optional ``describe()`` returns a JSON-ready dict (model, parameters, cache
use) recorded in results files and reports.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from rag_eval._core.errors import RagEvalError, RetrieverError

Corpus = Mapping[str, Mapping[str, str]]
Queries = Mapping[str, str]
Ranking = dict[str, dict[str, float]]


@runtime_checkable
class Retriever(Protocol):
    """What rag_eval calls. ``describe`` is optional and not part of the check."""

    def index(self, corpus: Corpus) -> None:
        """Prepare to search ``corpus`` (build an index, encode passages, ...)."""

    def search(self, queries: Queries, top_k: int) -> Ranking:
        """Return up to ``top_k`` scored documents for each query."""


def describe(retriever: Any, label: str | None = None) -> dict[str, Any]:
    """The retriever's own description, or its class path when it has none.

    ``describe()`` is user code: whatever it raises, or a result that is not a
    mapping, becomes one RetrieverError line naming the retriever (``label`` when
    given, else its class), never a traceback.
    """
    cls = type(retriever)
    base: dict[str, Any] = {"class": f"{cls.__module__}:{cls.__qualname__}"}
    method = getattr(retriever, "describe", None)
    if not callable(method):
        return base
    who = f"retriever {label!r} ({base['class']})" if label else f"retriever {base['class']}"
    try:
        extra = method()
    except RagEvalError as error:
        raise RetrieverError(f"{who}: describe() failed: {' '.join(str(error).split())}") from error
    except (Exception, SystemExit) as error:
        text = " ".join(str(error).split())
        raise RetrieverError(
            f"{who}: describe() raised {type(error).__name__}{': ' + text if text else ''}; "
            "describe() must return a dict (or None)"
        ) from error
    if extra is None:
        return base
    if not isinstance(extra, Mapping):
        raise RetrieverError(f"{who}: describe() returned {type(extra).__name__}; it must return a dict (or None)")
    base.update(extra)
    return base
