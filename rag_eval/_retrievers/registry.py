"""One registry for retrievers: built-in names, import strings, entry points.

- built-in names map to lazy ``"module:Class"`` strings (nothing heavy is imported
  until a retriever is built);
- ``"my_pkg.search:MyRetriever"`` imports a user's class; while a config is being
  checked or built (:func:`config_folder`), the config's own folder is searched
  first, so a ``my_search.py`` beside the config can be named ``my_search:MyRetriever``;
- installed packages add names through the entry-point group ``rag_eval.retrievers``.

Naming is not calling. An adapter must resolve to a CLASS with callable ``index`` and
``search`` attributes, or to a factory registered as a retriever (an entry point of
the group above, or a callable marked with :func:`retriever_factory`); anything else
(``shutil:rmtree``, ``os:system``, ``builtins:exec``) is refused before it could be
called. :func:`check` validates the parameters without calling anything
(``rag-eval validate``); only :func:`build` (``rag-eval run``) instantiates.

Importing an adapter's module runs that module's import-time code, as importing a
pytest plug-in does: name only modules you trust.

Unknown names get a "did you mean ...?" hint; a plug-in that fails to import
fails loudly with its cause.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from rag_eval._core.errors import RagEvalError, RetrieverError
from rag_eval._core.messages import first_and_more
from rag_eval._core.plugins import error_cause, import_target, object_kind, qualified_name
from rag_eval._data.config.adapters import BUILTIN, check_adapter_name, is_import_string, plugin_names
from rag_eval._retrievers.params import AdapterParams, check_params, unknown_parameter

#: Attribute that marks a factory function as a retriever factory (see :func:`retriever_factory`).
FACTORY_MARKER = "rag_eval_retriever_factory"


_SEAM = "a retriever class needs index(corpus) and search(queries, top_k) methods (see docs/plugins.md)"


def retriever_factory(function: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a function (not a class) as a retriever factory that a config may name.

    Without the mark, an import string naming a function is refused: the registry
    never calls something that did not declare itself a retriever.
    """
    setattr(function, FACTORY_MARKER, True)
    return function


def resolve(name: str) -> Any:
    """The retriever class (or registered factory) behind an adapter name; nothing is called."""
    check_adapter_name(name)
    if is_import_string(name):
        return _retriever_factory(import_target(name, name), name, registered=False)
    if name in BUILTIN:
        return _retriever_factory(import_target(BUILTIN[name], name), name, registered=False)
    entry = plugin_names()[name]
    try:
        loaded = entry.load()
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # a broken plug-in must not be hidden, whatever it raised (rag_eval._core.plugins)
        raise RetrieverError(
            f"plug-in retriever {name!r} (entry point {entry.value}) failed to load: {error_cause(error)}"
        ) from error
    return _retriever_factory(loaded, name, registered=True)


def params_model(factory: Any) -> type[AdapterParams] | None:
    """The pydantic ``Params`` model a retriever class declares, if any."""
    model = getattr(factory, "Params", None)
    return model if isinstance(model, type) and issubclass(model, AdapterParams) else None


def parameter_names(factory: Any) -> list[str] | None:
    """The parameters ``factory`` takes, or None when it takes any (``**kwargs``) or cannot tell."""
    model = params_model(factory)
    if model is not None:
        return list(model.model_fields)
    signature = _signature(factory)
    if signature is None or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values()):
        return None
    return [p for p in signature.parameters if p != "self"]


def accepts(factory: Any, key: str) -> bool:
    """Whether ``factory`` surely takes the parameter ``key`` (True for ``**kwargs``, False when unknown)."""
    if params_model(factory) is None and _signature(factory) is None:
        return False
    names = parameter_names(factory)
    return names is None or key in names


def check(name: str, params: Mapping[str, Any] | None = None) -> Any:
    """Resolve ``name`` and check ``params`` against it WITHOUT calling anything; returns the factory.

    A class with a ``Params`` model is validated by the model (types, ranges, nested
    specs); any other is checked by binding ``params`` to its constructor's signature.
    Every problem is listed in the error's ``problems``.
    """
    factory = resolve(name)
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise RetrieverError(f"adapter {name!r}: params must be a mapping, got {type(params).__name__}")
    model = params_model(factory)
    if model is not None:
        check_params(model, params, name, prefix=False)
        return factory
    signature = _signature(factory)
    if signature is None:
        return factory  # a C-level callable: its own call reports bad parameters
    allowed = parameter_names(factory)
    if allowed is not None:
        problems = [unknown_parameter(name, str(key), allowed) for key in params if key not in allowed]
        if problems:
            raise RetrieverError(first_and_more(problems), problems=problems)
    try:
        signature.bind(**params)
    except TypeError as error:
        raise RetrieverError(f"adapter {name!r}: {error}; its parameters: {', '.join(allowed or [])}") from None
    return factory


def build(name: str, params: Mapping[str, Any] | None = None) -> Any:
    """Check, then instantiate the retriever ``name`` with keyword ``params``.

    Whatever the constructor raises (SystemExit and asyncio.CancelledError included, Ctrl-C
    excepted) becomes one RetrieverError line naming the adapter; the result must have
    ``index`` and ``search``.
    """
    params = dict(params or {})
    factory = check(name, params)
    try:
        retriever = factory(**params)
    except (RagEvalError, KeyboardInterrupt):
        raise
    except BaseException as error:  # the plug-in failed, whatever it raised (rag_eval._core.plugins)
        raise RetrieverError(f"adapter {name!r}: {qualified_name(factory)}() raised {error_cause(error)}") from error
    for method in ("index", "search"):
        if not callable(getattr(retriever, method, None)):
            raise RetrieverError(
                f"adapter {name!r}: the factory returned {type(retriever).__name__}, which has no {method}() method; "
                + _SEAM
            )
    return retriever


# --------------------------------------------------------------------------- internals


def _retriever_factory(obj: Any, name: str, registered: bool) -> Any:
    """``obj`` when it is a retriever class or a registered factory; refused (never called) otherwise."""
    if inspect.isclass(obj):
        missing = [method for method in ("index", "search") if not callable(getattr(obj, method, None))]
        if missing:
            raise RetrieverError(
                f"adapter {name!r}: class {qualified_name(obj)} has no {' or '.join(m + '()' for m in missing)} method; "
                + _SEAM
            )
        return obj
    if callable(obj) and (registered or getattr(obj, FACTORY_MARKER, False) is True):
        return obj
    raise RetrieverError(
        f"adapter {name!r} is {object_kind(obj)}, not a retriever class, so it was not called; {_SEAM}, "
        "or a factory function marked with @rag_eval.extend.retriever_factory"
    )


def _signature(factory: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(factory)
    except (TypeError, ValueError):
        return None
