"""A config's retrievers, built: adapters resolved, path parameters made relative to the config's folder."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rag_eval._core.errors import RagEvalError, RetrieverError
from rag_eval._core.plugins import config_folder, error_cause, error_text
from rag_eval._data.config.schema import LoadedConfig
from rag_eval._data.config.sections import RetrieverSpec
from rag_eval._retrievers import registry


def build_retrievers(config: LoadedConfig) -> list[Any]:
    """Every retriever of ``config``, built before any runs: a typo in the last one's parameters must not
    wait for the first one to index a corpus. Adapters load their models lazily (in ``index``)."""
    return [build_retriever(spec, config) for spec in config.model.retrievers]


def build_retriever(spec: RetrieverSpec, config: LoadedConfig, *, instantiate: bool = True) -> Any:
    """Build one retriever, resolving its path parameters against the config's folder.

    With ``instantiate=False`` (``rag-eval validate``) the adapter is resolved and its
    parameters checked, but nothing is called: the retriever class is returned.
    Import strings are looked up in the config's folder first (see the registry).
    """
    where = f"{config.path}: retriever {spec.label!r}"
    try:
        with config_folder(config.base):
            factory = registry.resolve(spec.adapter)
            params = resolve_params(factory, spec.params, config)
            if not instantiate:
                return registry.check(spec.adapter, params)
            return registry.build(spec.adapter, params)
    except KeyboardInterrupt:
        raise
    except RagEvalError as error:
        problems = [f"{where}: {' '.join(problem.split())}" for problem in error.problems]
        raise RetrieverError(f"{where}: {one_line(error)}", problems=problems) from error
    except BaseException as error:  # what a plug-in's Params model raised, or a bug in resolving: name the retriever
        raise RetrieverError(f"{where} ({spec.adapter}) could not be built: {error_cause(error)}") from error


def resolve_params(factory: Any, params: Mapping[str, Any], config: LoadedConfig) -> dict[str, Any]:
    """Make relative paths in ``params`` relative to the config file.

    A retriever names its path parameters in ``PATH_PARAMS``; a ``model`` that
    is a relative path to an existing folder is resolved too. ``cache_dir`` is
    filled from the config when the retriever accepts one and none is given.
    """
    params = dict(params)
    for key in getattr(factory, "PATH_PARAMS", ()):
        if isinstance(params.get(key), str):
            params[key] = str(config.resolve(params[key]))
    model = params.get("model")
    if isinstance(model, str) and model.startswith((".", "~")) and config.resolve(model).exists():
        params["model"] = str(config.resolve(model))
    if config.model.cache_dir and "cache_dir" not in params and registry.accepts(factory, "cache_dir"):
        params["cache_dir"] = str(config.resolve(config.model.cache_dir))
    # Nested retriever specs (hybrid's retrievers, cross_encoder's first_stage) get the same treatment.
    for key, value in params.items():
        if _is_spec(value):
            params[key] = _resolve_spec(value, config)
        elif isinstance(value, list) and value and all(_is_spec(item) for item in value):
            params[key] = [_resolve_spec(item, config) for item in value]
    return params


def one_line(error: BaseException) -> str:
    """An exception's message on one line: the CLI prints exactly one line per error.

    Never raises: a plug-in's exception may have a ``__str__`` that does (rag_eval._core.plugins words it).
    """
    return error_text(error)


def _is_spec(value: Any) -> bool:
    return isinstance(value, Mapping) and isinstance(value.get("adapter"), str)


def _resolve_spec(spec: Mapping[str, Any], config: LoadedConfig) -> dict[str, Any]:
    nested = dict(spec)
    if isinstance(nested.get("params"), Mapping):
        try:
            factory = registry.resolve(nested["adapter"])
        except RagEvalError:
            return nested  # the parent's parameter check reports it, with its place (retrievers[1])
        nested["params"] = resolve_params(factory, nested["params"], config)
    return nested
