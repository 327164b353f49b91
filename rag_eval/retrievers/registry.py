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

import contextlib
import contextvars
import difflib
import importlib
import inspect
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from rag_eval.errors import RagEvalError, RetrieverError
from rag_eval.retrievers.params import AdapterParams, check_params, unknown_parameter

ENTRY_POINT_GROUP = "rag_eval.retrievers"

#: Attribute that marks a factory function as a retriever factory (see :func:`retriever_factory`).
FACTORY_MARKER = "rag_eval_retriever_factory"

BUILTIN: dict[str, str] = {
    "static": "rag_eval.retrievers.static:StaticRetriever",
    "bm25": "rag_eval.retrievers.bm25:BM25Retriever",
    "dense": "rag_eval.retrievers.dense:DenseRetriever",
    "cross_encoder": "rag_eval.retrievers.cross_encoder:CrossEncoderReranker",
    "hybrid": "rag_eval.retrievers.hybrid:HybridRetriever",
}

_SEAM = "a retriever class needs index(corpus) and search(queries, top_k) methods (see docs/plugins.md)"
_PATH_SHOWN = 3  # sys.path entries named when an import fails

# The folder of the config being checked or built: import strings are looked up there first.
_config_folder: contextvars.ContextVar[Path | None] = contextvars.ContextVar("rag_eval_config_folder", default=None)


def retriever_factory(function: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a function (not a class) as a retriever factory that a config may name.

    Without the mark, an import string naming a function is refused: the registry
    never calls something that did not declare itself a retriever.
    """
    setattr(function, FACTORY_MARKER, True)
    return function


@contextlib.contextmanager
def config_folder(folder: str | os.PathLike[str] | None) -> Iterator[None]:
    """Within the block, import strings are also looked up in ``folder`` (searched first)."""
    # absolute: a relative entry on sys.path would follow the current directory
    token = _config_folder.set(Path(folder).resolve() if folder is not None else None)
    try:
        yield
    finally:
        _config_folder.reset(token)


def plugin_names() -> dict[str, Any]:
    """Entry points of installed plug-ins, by name (read afresh on every call)."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def known_names() -> list[str]:
    """Every name a config may use as an adapter (built-ins and plug-ins)."""
    return sorted(set(BUILTIN) | set(plugin_names()))


def is_import_string(name: str) -> bool:
    """``package.module:Class`` form."""
    return ":" in name


def check_adapter_name(name: str) -> None:
    """Raise a RetrieverError with a hint when ``name`` is not a known adapter.

    Import strings are not imported here (loading a config stays cheap and safe);
    they are resolved when the retriever is checked or built.
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
    except (Exception, SystemExit) as error:  # a broken plug-in must not be hidden
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
            raise RetrieverError(problems[0], problems=problems)
    try:
        signature.bind(**params)
    except TypeError as error:
        raise RetrieverError(f"adapter {name!r}: {error}; its parameters: {', '.join(allowed or [])}") from None
    return factory


def build(name: str, params: Mapping[str, Any] | None = None) -> Any:
    """Check, then instantiate the retriever ``name`` with keyword ``params``.

    Whatever the constructor raises (SystemExit included) becomes one RetrieverError
    line naming the adapter; the result must have ``index`` and ``search``.
    """
    params = dict(params or {})
    factory = check(name, params)
    try:
        retriever = factory(**params)
    except RagEvalError:
        raise
    except (Exception, SystemExit) as error:
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
        "or a factory function marked with @rag_eval.retrievers.registry.retriever_factory"
    )


def object_kind(obj: Any) -> str:
    """What ``obj`` is, for messages: "the module x", "the function m.f", "an object of type T"."""
    if inspect.ismodule(obj):
        return f"the module {obj.__name__}"
    if inspect.isbuiltin(obj):
        return f"the built-in function {qualified_name(obj)}"
    if inspect.isfunction(obj) or inspect.ismethod(obj):
        return f"the function {qualified_name(obj)}"
    return f"an object of type {type(obj).__name__}"


def qualified_name(obj: Any) -> str:
    """``module.QualName`` of a class or function, for messages."""
    module = getattr(obj, "__module__", None)
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or type(obj).__name__
    return f"{module}.{name}" if module else str(name)


def _signature(factory: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(factory)
    except (TypeError, ValueError):
        return None


def error_cause(error: BaseException) -> str:
    """``Type: message`` on one line (the CLI prints one line per error)."""
    if isinstance(error, SystemExit):
        return f"SystemExit({error.code!r}); a plug-in must raise an exception, not exit the process"
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


@contextlib.contextmanager
def _searching(folder: Path | None) -> Iterator[None]:
    """``folder`` first on sys.path during one import only, as ``python script.py`` puts the script's folder."""
    entry = str(folder) if folder is not None else None
    if entry is None or entry in sys.path:
        yield
        return
    sys.path.insert(0, entry)
    importlib.invalidate_caches()  # a module written just now must be seen
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(entry)


def _where_looked(folder: Path | None) -> str:
    shown = [repr(p) if p else "'' (the current folder)" for p in sys.path[:_PATH_SHOWN]]
    more = f", ... ({len(sys.path) - _PATH_SHOWN} more)" if len(sys.path) > _PATH_SHOWN else ""
    path = f"sys.path: {', '.join(shown)}{more}"
    return f"the config's folder {str(folder)!r}, then {path}" if folder is not None else path


def import_target(target: str, name: str, what: str = "adapter") -> Any:
    """The object ``module:attr`` names, imported with the config's folder first on the path.

    ``what`` names the kind of plug-in in messages (``adapter``, ``chunker``); every failure is
    one RetrieverError line saying what was looked for, where, and the fix.
    """
    module_name, _, attr = target.partition(":")
    folder = _config_folder.get()
    try:
        with _searching(folder):
            module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        missing = error.name or ""
        if missing and (module_name == missing or module_name.startswith(missing + ".")):
            file = module_name.replace(".", "/") + ".py"
            raise RetrieverError(
                f"{what} {name!r}: no module named {missing!r}; looked in {_where_looked(folder)}; "
                f"put {file} beside the config, or install the package that provides it"
            ) from error
        raise RetrieverError(
            f"{what} {name!r}: module {module_name!r} needs {missing!r}, which is not installed ({error})"
        ) from error
    except (Exception, SystemExit) as error:
        raise RetrieverError(f"{what} {name!r}: importing {module_name!r} failed: {error_cause(error)}") from error
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except Exception:  # noqa: BLE001 - AttributeError, or whatever a module-level __getattr__ raises
            raise RetrieverError(f"{what} {name!r}: module {module_name!r} has no attribute {attr!r}") from None
    return obj
