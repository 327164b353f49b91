"""The team's own factory: a function that builds their retriever, store, index or pipeline, named in a config.

``factory: "package.module:function"`` is resolved and checked while a config is validated, and
called only when a run connects (:meth:`FactoryRetriever.connect`). Naming is not calling, and a
run calls only the team's own code: a plain Python function (:func:`inspect.isfunction`; a static
method is one) whose code lies in a file outside the standard library, outside every
installed-packages folder (``site-packages``, ``dist-packages``, ``purelib``/``platlib``) and outside
rag_eval; or a function that declares itself with :func:`rag_eval.extend.retriever_factory` (the
team's own installed package). Never a class, a built-in, a bound method, a library's function
(``torch:save``) or anything of the standard library (``os:system``, ``shutil:rmtree``...), since a
run would call it with ``factory_params``.
The config's folder is searched first while the name is resolved (:func:`rag_eval._core.plugins.config_folder`).

:class:`FactoryRetriever` is what the LangChain, LlamaIndex and Haystack adapters share: the
two parameters, the call, the object's description, and a check that each answer's scores fall
along the order in which the target returned its hits.
"""

from __future__ import annotations

import inspect
import os
import site
import sys
import sysconfig
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, ValidationInfo, field_validator

from rag_eval._core.errors import RagEvalError, RetrieverError
from rag_eval._core.plugins import error_cause, import_target, object_kind, qualified_name
from rag_eval._retrievers.base import Queries, Ranking
from rag_eval._retrievers.external.by_text import ScoreOrder, TextHitsParams, TextHitsRetriever
from rag_eval._retrievers.external.hits import Hit
from rag_eval._retrievers.registry import FACTORY_MARKER

_INSTALLED = "an installed package's"
#: rag_eval's own package folder: none of its functions is a factory.
_RAG_EVAL = Path(__file__).resolve().parents[2]
_WHAT = "a plain function of your code that builds the object, e.g. 'my_rag.store:build_store'"


def resolve_factory(target: str) -> Callable[..., Any]:
    """The function ``target`` names, imported (config folder first) and checked; never called.

    What may be named is the team's own code (see the module docstring): a plain Python function
    (:func:`inspect.isfunction`; a static method is one) whose code is in a file outside the
    standard library, outside every installed-packages folder (``site-packages``, ``dist-packages``,
    the interpreter's ``purelib`` / ``platlib``) and outside rag_eval; or a function of an installed
    package of the team's that declares itself with :func:`rag_eval.extend.retriever_factory`.
    RetrieverError (one line) for a malformed name, a missing module or attribute, or anything else.
    """
    module_name, colon, attr = target.partition(":")
    if not colon or not module_name or not attr:
        raise RetrieverError(f"{target!r} is not of the form 'package.module:function'; name {_WHAT}")
    obj = import_target(target, target, what="factory")
    if not inspect.isfunction(obj):
        raise RetrieverError(f"{target!r} is {_kind(obj)}, not a plain function, so it was not called; name {_WHAT}")
    source = _foreign_source(obj, module_name)
    if source is not None:
        mark = (" (a function of your own installed package: mark it @rag_eval.extend.retriever_factory)"
                if source == _INSTALLED else "")
        raise RetrieverError(
            f"{target!r} is {source} function {qualified_name(obj)}, not a factory of yours, so it was not "
            f"called; name {_WHAT}{mark}"
        )
    return obj


def _foreign_source(function: Callable[..., Any], module_name: str) -> str | None:
    """Whose code ``function`` is when it is not the team's ("the standard-library"...), or None for the team's."""
    for owner in (getattr(function, "__module__", None) or "", module_name):
        package = owner.partition(".")[0]
        if package == "rag_eval":
            return "rag_eval's own"
        if package in sys.stdlib_module_names:
            return "the standard-library"
    code = getattr(function, "__code__", None)
    filename = getattr(code, "co_filename", "") or ""
    path = Path(filename)
    if not filename or not path.is_absolute() or not path.is_file():
        # made at run time (exec, a C extension's wrapper): whose it is cannot be told from a file
        return "a file-less" if not getattr(function, FACTORY_MARKER, False) else None
    resolved = path.resolve()
    if _inside(resolved, [_RAG_EVAL]):
        return "rag_eval's own"
    # packages first: a virtual environment's platstdlib folder holds its site-packages
    if _inside(resolved, _package_folders()) or {"site-packages", "dist-packages"} & set(resolved.parts):
        # A function of an installed package: a library's (torch:save), unless it declares itself a factory.
        return None if getattr(function, FACTORY_MARKER, False) else _INSTALLED
    if _inside(resolved, _stdlib_folders()):
        return "the standard-library"
    return None


def _inside(path: Path, folders: Sequence[Path]) -> bool:
    return any(path == folder or folder in path.parents for folder in folders)


def _stdlib_folders() -> list[Path]:
    paths = sysconfig.get_paths()
    folders = {Path(paths[key]).resolve() for key in ("stdlib", "platstdlib") if paths.get(key)}
    base = Path(os.__file__).resolve().parent  # the interpreter's own
    return sorted(folders | {base})


def _package_folders() -> list[Path]:
    paths = sysconfig.get_paths()
    folders = {Path(paths[key]).resolve() for key in ("purelib", "platlib") if paths.get(key)}
    try:
        folders |= {Path(folder).resolve() for folder in site.getsitepackages()}
    except AttributeError:  # an old virtualenv's site module
        pass
    user = site.getusersitepackages() if hasattr(site, "getusersitepackages") else None
    if isinstance(user, str):
        folders.add(Path(user).resolve())
    return sorted(folders)


def check_factory_params(function: Callable[..., Any], params: Mapping[str, Any]) -> None:
    """Refuse ``params`` that ``function`` cannot take (bound to its signature; nothing is called)."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return  # no signature to check: the call reports bad parameters
    try:
        signature.bind(**params)
    except TypeError as error:
        takes = ", ".join(signature.parameters) or "no parameters"
        raise RetrieverError(
            f"{qualified_name(function)}() cannot take them: {error}; it takes: {takes}"
        ) from None


def call_factory(function: Callable[..., Any], params: Mapping[str, Any], target: str, adapter: str) -> Any:
    """``function(**params)``; whatever it raises becomes one RetrieverError line naming the factory."""
    try:
        built = function(**params)
    except RagEvalError as error:
        raise RetrieverError(f"{adapter}: params.factory {target!r} failed: {_one_line(error)}") from error
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # SystemExit, asyncio.CancelledError...: the plug-in failed (rag_eval._core.plugins)
        raise RetrieverError(
            f"{adapter}: params.factory {target!r} raised {error_cause(error)}; fix the factory or params.factory_params"
        ) from error
    if built is None:
        raise RetrieverError(
            f"{adapter}: params.factory {target!r} returned None; it must return the object to ask (return it)"
        )
    return built


def framework_version(distribution: str) -> str | None:
    """The installed version of ``distribution`` (a pip name), or None when it is not installed."""
    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


class FactoryParams(TextHitsParams):
    """Parameters of an adapter that asks what the team's factory builds."""

    factory: str = Field(
        ..., min_length=3, description='the function that builds the object to ask: "package.module:function"'
    )
    factory_params: dict[str, Any] = Field(
        default_factory=dict, description="keyword arguments of the factory (YAML values, passed as given)"
    )

    @field_validator("factory")
    @classmethod
    def _a_function(cls, value: str) -> str:
        resolve_factory(value)  # imported and checked, not called
        return value

    @field_validator("factory_params")
    @classmethod
    def _fit_the_function(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        target = info.data.get("factory")
        if isinstance(target, str):  # absent when params.factory was refused: that is said already
            check_factory_params(resolve_factory(target), value)
        return value


class FactoryRetriever(TextHitsRetriever):
    """A text-asked retriever whose target is built by the team's factory (see the module docstring)."""

    Params: ClassVar[type[TextHitsParams]] = FactoryParams
    #: The pip distribution whose version describes the target (``langchain-core``...), set by each subclass.
    DISTRIBUTION: ClassVar[str] = ""

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        # Resolved here, while the runner still has the config's folder on the import path.
        self.function = resolve_factory(self.settings.factory)
        self.target: Any = None
        self.kind = ""  # what the factory returned, as the subclass reads it ("vector_store", "pipeline"...)
        self.target_class: str | None = None
        self.top_k: int | None = None
        self.short_answers = 0  # answers with fewer than top_k hits
        self.order = ScoreOrder()  # how answers' scores fall along the target's order

    @abstractmethod
    def adopt(self, built: Any) -> None:
        """Take what the factory returned (check its kind, keep what :meth:`ask` needs), or raise RetrieverError."""

    def scores_note(self) -> str:
        """How this target's scores are read, for :meth:`describe`."""
        return "as the target gives them (higher = better)"

    def connect(self) -> None:
        """Call the factory (only here, never while a config is validated) and adopt its object."""
        built = call_factory(self.function, self.settings.factory_params, self.settings.factory, self.ADAPTER)
        self.target_class = qualified_name(type(built))
        self.adopt(built)

    def close(self) -> None:
        """Let go of the team's object (it holds the store); safe to call twice."""
        self.target = None

    def search(self, queries: Queries, top_k: int) -> Ranking:
        """As :meth:`TextHitsRetriever.search`, counting short answers and answers whose scores rise."""
        self.top_k = top_k
        self.short_answers = 0
        self.order = ScoreOrder()
        return super().search(queries, top_k)

    def ask_many(self, texts: Sequence[str], k: int) -> list[list[Hit]]:
        """Each query's hits (:meth:`answer_many`); a failure of the team's object is one line naming it."""
        try:
            answers = self.answer_many(texts, k)
        except RagEvalError:
            raise
        except Exception as error:  # the team's object failed: said with what it is and who built it
            raise RetrieverError(
                f"{self.ADAPTER}: the {self.target_class} built by params.factory {self.settings.factory!r} raised "
                f"{error_cause(error)} while answering a query"
            ) from error
        return answers

    def observe(self, hits: Sequence[Hit], k: int) -> None:
        """Count an answer of fewer than ``k`` hits, and how its scores fall along the target's order."""
        self.short_answers += len(hits) < k
        self.order.observe(hits)

    def answer_many(self, texts: Sequence[str], k: int) -> list[list[Hit]]:
        """Several queries' hits (one :meth:`ask` each); a subclass may answer a batch in one call."""
        return [self.ask(text, k) for text in texts]

    def target_info(self) -> dict[str, Any]:
        """The factory, the object's class, the framework's version, how scores are read, what the answers were."""
        info: dict[str, Any] = {
            "factory": self.settings.factory,
            "factory_function": qualified_name(self.function),
            "factory_params": dict(self.settings.factory_params),
            "object": self.target_class,
            "kind": self.kind or None,
            "framework": {self.DISTRIBUTION: framework_version(self.DISTRIBUTION)},
            "scores": self.scores_note(),
        }
        if self.top_k is not None:
            # A target with its own k (a retriever built with k=4) answers fewer hits than top_k: said, not hidden.
            info["short_answers"] = self.short_answers
            info["unsorted_answers"] = self.order.unsorted
        return info

    def refuse(self, built: Any, wanted: str) -> RetrieverError:
        """The error for a factory that returned the wrong kind of object."""
        return RetrieverError(
            f"{self.ADAPTER}: params.factory {self.settings.factory!r} returned {object_kind(built)}, not {wanted}; "
            f"return {wanted}"
        )


def _kind(obj: Any) -> str:
    """What ``obj`` is, classes included (:func:`object_kind` names a class by its type)."""
    return f"the class {qualified_name(obj)}" if inspect.isclass(obj) else object_kind(obj)


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())
