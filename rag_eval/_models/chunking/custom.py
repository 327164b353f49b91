"""Custom chunkers named by an import string: ``method: my_pkg.chunks:by_paragraph``.

A custom chunker is either

- a FUNCTION ``f(text, **params)`` marked with :func:`chunker_function`
  (``rag_eval.extend.chunker_function``), or
- a CLASS built once as ``C(**params)`` whose ``chunk(text)`` method is called per document,

returning an iterable whose items are each either

- a ``(start, end)`` pair of code-point offsets (``text[start:end]`` is the chunk), or an
  object with int ``start`` and ``end`` attributes (e.g. rag_eval._core.spans.Chunk), or
- the chunk's text: a string located in the document at its first occurrence at or after
  the previous chunk's start + 1 (so strings must come in document order; overlapping
  strings are fine; a chunk that occurs only earlier is an error).

The import string is resolved as retrievers' are (rag_eval._retrievers.registry: the
config's folder first, then ``sys.path``) and the object is inspected BEFORE anything is
called, by the adapters' rule (rag_eval._retrievers.registry): only a class with a
``chunk`` method or a function that declared itself a chunker is ever called. A module, a
built-in, an instance, a function of Python's standard library (``shutil:rmtree``) or any
other function (``torch:save``, which would write a file named by ``params``) is refused,
never called with a document's text. Whatever the chunker raises becomes one ConfigError
line naming the chunker and the document.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping
from typing import Any

from rag_eval._core.errors import ConfigError, RagEvalError
from rag_eval._core.messages import shown
from rag_eval._core.plugins import error_cause, import_target, object_kind, qualified_name

#: Attribute that marks a function as a chunker a config may name (see :func:`chunker_function`).
CHUNKER_MARKER = "rag_eval_chunker"

SEAM = (
    "a chunker is a function f(text, **params) marked with @rag_eval.extend.chunker_function, or a class "
    "C(**params) with a chunk(text) method, returning (start, end) pairs or chunk strings (see docs/chunking.md)"
)


def chunker_function(function: Callable[..., Any]) -> Callable[..., Any]:
    """Mark ``function`` (called as ``function(text, **params)`` per document) as a chunker a config may name.

    Without the mark, ``method: module:function`` is refused before anything is called: a
    config must not be able to call any function it can import (``torch:save`` with
    ``params: {f: victim.txt}`` would overwrite the file). A class with a ``chunk(text)``
    method needs no mark.
    """
    if not inspect.isfunction(function):
        raise TypeError(
            f"chunker_function marks a function, not {object_kind(function)}; a class with a chunk(text) method "
            "needs no mark"
        )
    setattr(function, CHUNKER_MARKER, True)
    return function


def resolve(name: str, method: str) -> Any:
    """The function or class behind ``method``, checked and never called; ConfigError otherwise."""
    where = f"chunking.{name}.method"
    try:
        obj = import_target(method, method, what="chunker")
    except RagEvalError as error:
        raise ConfigError(f"{where}: {error}") from None
    if inspect.isclass(obj):
        if not callable(getattr(obj, "chunk", None)):
            raise ConfigError(f"{where}: class {qualified_name(obj)} has no chunk(text) method; {SEAM}")
        return obj
    if inspect.isfunction(obj):
        if getattr(obj, CHUNKER_MARKER, False) is True:
            return obj
        package = (getattr(obj, "__module__", None) or "").partition(".")[0]
        if package in sys.stdlib_module_names:
            raise ConfigError(
                f"{where}: {method!r} is the standard-library function {qualified_name(obj)}, not a chunker, "
                f"so it was not called; {SEAM}"
            )
        # Any other function is refused too: naming is not calling (torch:save would write a file).
        raise ConfigError(
            f"{where}: {method!r} is the function {qualified_name(obj)}, which is not marked as a chunker, so it "
            f"was not called; {SEAM}"
        )
    raise ConfigError(
        f"{where}: {method!r} is {object_kind(obj)}, not a chunker function or class, so it was not called; {SEAM}"
    )


def check_params(name: str, method: str, obj: Any, params: Mapping[str, Any]) -> None:
    """Refuse ``params`` that ``obj`` cannot take (bound to its signature; nothing is called)."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return  # no signature to check: the call itself reports bad parameters
    try:
        if inspect.isclass(obj):
            signature.bind(**params)
        else:
            signature.bind("text", **params)
    except TypeError as error:
        takes = ", ".join(p for p in signature.parameters if p != "self") or "nothing"
        raise ConfigError(f"chunking.{name}.params: chunker {method!r}: {error}; it takes: {takes}") from None


def build(name: str, method: str, obj: Any, params: Mapping[str, Any]) -> Callable[[str], Any]:
    """The per-document callable: the function with ``params``, or ``C(**params).chunk``."""
    check_params(name, method, obj, params)
    kwargs = dict(params)
    if not inspect.isclass(obj):
        return lambda text: obj(text, **kwargs)
    try:
        instance = obj(**kwargs)
    except RagEvalError:
        raise
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # SystemExit, asyncio.CancelledError...: the plug-in failed (rag_eval._core.plugins)
        raise ConfigError(f"chunking.{name}: chunker {method!r}: {qualified_name(obj)}() raised {error_cause(error)}") from error
    chunk = getattr(instance, "chunk", None)
    if not callable(chunk):
        raise ConfigError(f"chunking.{name}: chunker {method!r}: the instance has no chunk(text) method; {SEAM}")
    return chunk


def spans(name: str, method: str, call: Callable[[str], Any], doc: str, text: str) -> list[tuple[int, int]]:
    """Call the chunker on one document and read its answer as spans (not yet checked against the text)."""
    lead = f"chunking.{name}: chunker {method!r}"
    try:
        result = call(text)
        if result is None or isinstance(result, (str, bytes)) or not hasattr(result, "__iter__"):
            raise ConfigError(
                f"{lead} returned {type(result).__name__} for document {doc!r}; return an iterable of (start, end) "
                "pairs or of chunk strings"
            )
        items = list(result)  # a generator runs here: its errors are the chunker's too
    except RagEvalError:
        raise
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # SystemExit, asyncio.CancelledError...: the plug-in failed (rag_eval._core.plugins)
        raise ConfigError(f"{lead} failed on document {doc!r}: {error_cause(error)}") from error
    out: list[tuple[int, int]] = []
    search_from = 0
    for number, item in enumerate(items):
        span = _span(item, text, search_from, f"{lead}: chunk {number} of document {doc!r}")
        out.append(span)
        search_from = span[0] + 1 if isinstance(span[0], int) else search_from
    return out


def _span(item: Any, text: str, search_from: int, lead: str) -> tuple[Any, Any]:
    if isinstance(item, str):
        if not item:
            raise ConfigError(f"{lead} is an empty string; a chunk holds at least one character")
        start = text.find(item, search_from)
        if start < 0:
            raise ConfigError(
                f"{lead} ({shown(item)}) does not occur in the document at or after offset {search_from}; chunk strings "
                "must be exact substrings in document order (or return (start, end) offsets)"
            )
        return start, start + len(item)
    if isinstance(item, (tuple, list)) and len(item) == 2:
        return item[0], item[1]
    if hasattr(item, "start") and hasattr(item, "end"):
        return item.start, item.end
    raise ConfigError(f"{lead} is {type(item).__name__}; a chunk is a (start, end) pair or the chunk's text")
