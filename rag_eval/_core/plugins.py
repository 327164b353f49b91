"""The one rule for code a config names (retrievers, chunkers, and every plug-in after them).

An import string ``package.module:attr`` is imported with the config's own folder first on
``sys.path`` (:func:`config_folder`), so a module beside the config can be named directly.
Naming is not calling: this module only imports and describes; what may be called is decided
by the registry of each kind (a class with the right methods, or a function registered for it).

Whatever plug-in code raises is the plug-in's failure, reported as one line (exit 2): an Exception,
SystemExit, asyncio.CancelledError, a BaseException subclass of its own. Only KeyboardInterrupt
(Ctrl-C) passes as itself. Each place that calls plug-in code therefore re-raises RagEvalError and
KeyboardInterrupt and turns any other BaseException into its own error, worded by
:func:`error_cause`, the one home that turns a plug-in's exception into text.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import inspect
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rag_eval._core.errors import RetrieverError
from rag_eval._core.messages import some_of

_PATH_SHOWN = 3  # sys.path entries named when an import fails

# The folder of the config being checked or built: import strings are looked up there first.
_config_folder: contextvars.ContextVar[Path | None] = contextvars.ContextVar("rag_eval_config_folder", default=None)


@contextlib.contextmanager
def config_folder(folder: str | os.PathLike[str] | None) -> Iterator[None]:
    """Within the block, import strings are also looked up in ``folder`` (searched first)."""
    # absolute: a relative entry on sys.path would follow the current directory
    token = _config_folder.set(Path(folder).resolve() if folder is not None else None)
    try:
        yield
    finally:
        _config_folder.reset(token)


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


def error_cause(error: BaseException) -> str:
    """``Type: message`` on one line (the CLI prints one line per error); never raises.

    A message that cannot be shown (an exception whose ``__str__`` raises) is said as such:
    ``ValueError (its message could not be shown: str() raised RuntimeError: no str)``.
    """
    if isinstance(error, SystemExit):
        return f"SystemExit({_shown_code(error)}); a plug-in must raise an exception, not exit the process"
    name = type(error).__name__
    text, shown = _message(error)
    if not shown:
        return f"{name} ({text})"
    return f"{name}: {text}" if text else name


def error_text(error: BaseException) -> str:
    """``error``'s message on one line ("" when it has none); never raises: a message that cannot be shown
    says so, naming what its ``__str__`` raised."""
    text, shown = _message(error)
    return text if shown else f"({text})"


def _message(error: BaseException) -> tuple[str, bool]:
    """``(message on one line, True)``, or ``(why it cannot be shown, False)`` when ``str(error)`` raises."""
    try:
        return " ".join(str(error).split()), True
    except KeyboardInterrupt:
        raise
    except BaseException as broken:  # a plug-in's __str__: reporting its failure must not fail in turn
        try:
            why = " ".join(str(broken).split())
        except KeyboardInterrupt:
            raise
        except BaseException:  # its own __str__ is broken too: its type alone
            why = ""
        raised = f"{type(broken).__name__}: {why}" if why else type(broken).__name__
        return f"its message could not be shown: str() raised {raised}", False


def _shown_code(stop: SystemExit) -> str:
    """The repr of ``sys.exit()``'s argument, or its type where that repr raises."""
    try:
        return repr(stop.code)
    except KeyboardInterrupt:
        raise
    except BaseException:  # a plug-in's object with a broken __repr__
        return f"<{type(stop.code).__name__}>"


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
    entries = [repr(p) if p else "'' (the current folder)" for p in sys.path]
    path = f"sys.path: {some_of(entries, _PATH_SHOWN)}"
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
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # SystemExit, asyncio.CancelledError...: the module failed to import
        raise RetrieverError(f"{what} {name!r}: importing {module_name!r} failed: {error_cause(error)}") from error
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except Exception:  # noqa: BLE001 - AttributeError, or whatever a module-level __getattr__ raises
            raise RetrieverError(f"{what} {name!r}: module {module_name!r} has no attribute {attr!r}") from None
    return obj
