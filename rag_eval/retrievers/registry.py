"""One registry for retrievers: built-in names, import strings, entry points.

- built-in names map to lazy ``"module:Class"`` strings (nothing heavy is imported
  until a retriever is built);
- ``"my_pkg.search:MyRetriever"`` imports a user's class;
- installed packages add names through the entry-point group ``rag_eval.retrievers``.

Unknown names get a "did you mean ...?" hint; a plug-in that fails to import
fails loudly with its cause.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
from importlib.metadata import entry_points
from typing import Any, Callable, Mapping

from rag_eval.errors import RetrieverError

ENTRY_POINT_GROUP = "rag_eval.retrievers"

BUILTIN: dict[str, str] = {
    "static": "rag_eval.retrievers.static:StaticRetriever",
    "bm25": "rag_eval.retrievers.bm25:BM25Retriever",
    "dense": "rag_eval.retrievers.dense:DenseRetriever",
    "cross_encoder": "rag_eval.retrievers.cross_encoder:CrossEncoderReranker",
    "hybrid": "rag_eval.retrievers.hybrid:HybridRetriever",
}


def plugin_names() -> dict[str, Any]:
    """Entry points of installed plug-ins, by name."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def known_names() -> list[str]:
    """Every name a config may use as an adapter (built-ins and plug-ins)."""
    return sorted(set(BUILTIN) | set(plugin_names()))


def is_import_string(name: str) -> bool:
    """``package.module:Class`` form."""
    return ":" in name


def check_adapter_name(name: str) -> None:
    """Raise a RetrieverError with a hint when ``name`` is not a known adapter.

    Import strings are not imported here (validation stays cheap); they are
    checked when the retriever is built.
    """
    if is_import_string(name):
        module, _, attr = name.partition(":")
        if not module or not attr:
            raise RetrieverError(f"adapter {name!r} is not of the form 'package.module:Class'")
        return
    if name in BUILTIN or name in plugin_names():
        return
    guesses = difflib.get_close_matches(name, known_names(), n=1)
    hint = f"did you mean {guesses[0]!r}? " if guesses else ""
    raise RetrieverError(
        f"unknown adapter {name!r}; {hint}known: {', '.join(known_names())}, or an import string 'package.module:Class'"
    )


def resolve(name: str) -> Callable[..., Any]:
    """The class (or factory) behind an adapter name or import string."""
    check_adapter_name(name)
    if is_import_string(name):
        return _import(name, name)
    if name in BUILTIN:
        return _import(BUILTIN[name], name)
    entry = plugin_names()[name]
    try:
        return entry.load()
    except Exception as error:  # a broken plug-in must not be hidden
        raise RetrieverError(
            f"plug-in retriever {name!r} (entry point {entry.value}) failed to load: {type(error).__name__}: {error}"
        ) from error


def build(name: str, params: Mapping[str, Any] | None = None) -> Any:
    """Instantiate the retriever ``name`` with keyword ``params``."""
    factory = resolve(name)
    params = dict(params or {})
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        signature = None
    if signature is not None:
        accepts_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values())
        if not accepts_any:
            allowed = [p for p in signature.parameters if p != "self"]
            unknown = [key for key in params if key not in signature.parameters]
            if unknown:
                hints = []
                for key in unknown:
                    guess = difflib.get_close_matches(key, allowed, n=1)
                    hints.append(f"{key!r}" + (f" (did you mean {guess[0]!r}?)" if guess else ""))
                raise RetrieverError(
                    f"adapter {name!r} has no parameter {', '.join(hints)}; its parameters: {', '.join(allowed) or 'none'}"
                )
    try:
        retriever = factory(**params)
    except RetrieverError:
        raise
    except (TypeError, ValueError) as error:
        raise RetrieverError(f"adapter {name!r}: bad parameters: {error}") from error
    for method in ("index", "search"):
        if not callable(getattr(retriever, method, None)):
            raise RetrieverError(
                f"adapter {name!r} ({type(retriever).__name__}) has no {method}() method; "
                "a retriever needs index(corpus) and search(queries, top_k)"
            )
    return retriever


def _import(target: str, name: str) -> Any:
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name and module_name.startswith(error.name) or error.name == module_name:
            raise RetrieverError(f"adapter {name!r}: cannot import module {module_name!r} ({error})") from error
        raise RetrieverError(
            f"adapter {name!r}: module {module_name!r} needs {error.name!r}, which is not installed ({error})"
        ) from error
    except Exception as error:
        raise RetrieverError(
            f"adapter {name!r}: importing {module_name!r} failed: {type(error).__name__}: {error}"
        ) from error
    obj = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise RetrieverError(f"adapter {name!r}: module {module_name!r} has no attribute {attr!r}") from None
    return obj
