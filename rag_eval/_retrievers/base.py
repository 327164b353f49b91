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
from rag_eval._core.plugins import error_cause, error_text

Corpus = Mapping[str, Mapping[str, str]]
Queries = Mapping[str, str]
Ranking = dict[str, dict[str, float]]

#: How deeply a ``describe()`` result may nest containers: far more than any description needs, far less than
#: the results file's writer could follow before Python's recursion limit.
DESCRIPTION_DEPTH = 100


@runtime_checkable
class Retriever(Protocol):
    """What rag_eval calls. ``describe`` is optional and not part of the check."""

    def index(self, corpus: Corpus) -> None:
        """Prepare to search ``corpus`` (build an index, encode passages, ...)."""

    def search(self, queries: Queries, top_k: int) -> Ranking:
        """Return up to ``top_k`` scored documents for each query."""


def describe(retriever: Any, label: str | None = None, adapter: str | None = None) -> dict[str, Any]:
    """The retriever's own description, or its class path when it has none.

    ``describe()`` is user code: whatever it raises, or a result that is not a
    mapping, becomes one RetrieverError line naming the retriever (``label`` and its
    ``adapter`` as the config names it, as index and search errors do; else its class),
    never a traceback.
    """
    cls = type(retriever)
    base: dict[str, Any] = {"class": f"{cls.__module__}:{cls.__qualname__}"}
    method = getattr(retriever, "describe", None)
    if not callable(method):
        return base
    shown = adapter or base["class"]
    who = f"retriever {label!r} ({shown})" if label else f"retriever {shown}"
    try:
        extra = method()
    except KeyboardInterrupt:
        raise
    except RagEvalError as error:
        raise RetrieverError(f"{who}: describe() failed: {error_text(error)}") from error
    except BaseException as error:  # the plug-in failed, whatever it raised (rag_eval._core.plugins)
        raise RetrieverError(
            f"{who}: describe() raised {error_cause(error)}; describe() must return a dict (or None)"
        ) from error
    if extra is None:
        return base
    if not isinstance(extra, Mapping):
        raise RetrieverError(f"{who}: describe() returned {type(extra).__name__}; it must return a dict (or None)")
    problem = _not_json_data(extra)
    if problem is not None:
        raise RetrieverError(
            f"{who}: describe() returned something that is not JSON data: {problem}; return plain dicts, lists, "
            "strings and numbers"
        )
    base.update(extra)
    return base


def _not_json_data(description: Mapping[str, Any]) -> str | None:
    """Why ``description`` cannot be written as JSON (a container holding itself, or nested too deep), or None.

    Walked without recursion, so that a cycle or a deep nesting is found here, where the error can name the
    retriever, not by the results file's writer, which would hit Python's recursion limit.
    """
    # (value, where, depth); None marks leaving the container above it on the path
    todo: list[tuple[Any, str, int] | None] = [(description, "describe()", 0)]
    path: list[int] = []  # ids of the containers being walked, outermost first
    while todo:
        item = todo.pop()
        if item is None:
            path.pop()
            continue
        value, where, depth = item
        if isinstance(value, Mapping):
            children = [(v, f"{where}[{_key(k)}]") for k, v in value.items()]
        elif isinstance(value, (list, tuple, set, frozenset)):
            children = [(v, f"{where}[{n}]") for n, v in enumerate(value)]
        else:
            continue
        if id(value) in path:
            return f"{where} is a {type(value).__name__} that contains itself (a cycle)"
        if depth >= DESCRIPTION_DEPTH:
            return f"{where} is nested more than {DESCRIPTION_DEPTH} levels deep"
        path.append(id(value))
        todo.append(None)
        todo.extend((child, place, depth + 1) for child, place in reversed(children))
    return None


def _key(key: Any) -> str:
    # a plug-in's own key type may have a __repr__ that raises: its type names it instead
    return repr(key) if isinstance(key, (str, int, float, bool)) or key is None else f"<{type(key).__name__}>"
