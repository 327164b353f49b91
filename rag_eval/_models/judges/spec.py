"""A judge's config file (``rag-eval judge --judge JUDGE.yaml``), read and built.

::

    adapter: llm                 # llm | cross_encoder | a plug-in's name | package.module:Class
    params: {base_url: http://127.0.0.1:8080/v1, model: SmolLM2-135M-Instruct}

Import strings are looked up in the file's folder first, as a run config's are; a relative
``cache_dir``, and a ``model`` starting with ``.`` or ``~`` that names an existing folder, are
taken relative to the file. Every problem is one error line naming the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rag_eval._core.errors import ConfigError, RagEvalError
from rag_eval._core.messages import did_you_mean
from rag_eval._core.plugins import config_folder
from rag_eval._core.yaml_loader import load_yaml
from rag_eval._models.judges import base

KEYS = ("adapter", "params")
#: Parameters of every judge that are folders, taken relative to the judge's file.
PATH_PARAMS = ("cache_dir",)


def load_judge(path: str | Path, *, cache_dir: Path | None = None) -> Any:
    """The judge ``path`` describes, built (``cache_dir``: the default for a judge that takes one and sets none)."""
    path = Path(path)
    raw = load_yaml(path, what="judge config")
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: a judge config is a mapping with adapter: and params:, not "
                          f"{type(raw).__name__ if raw is not None else 'an empty file'}")
    for key in raw:
        if key not in KEYS:
            raise ConfigError(f"{path}: unknown key {key!r}; {did_you_mean(str(key), KEYS)}a judge config has "
                              "adapter: and params:")
    adapter = raw.get("adapter")
    if not isinstance(adapter, str) or not adapter.strip():
        raise ConfigError(f"{path}: adapter: is missing; name the judge: {', '.join(base.BUILTIN)}, a plug-in's name "
                          "or 'package.module:Class'")
    params = raw.get("params")
    params = {} if params is None else params
    if not isinstance(params, Mapping):
        raise ConfigError(f"{path}: params: must be a mapping of the judge's parameters, not {type(params).__name__}")
    folder = path.resolve().parent
    try:
        with config_folder(folder):
            return base.build(adapter, _relative_to(folder, params), cache_dir=cache_dir)
    except RagEvalError as error:
        problems = [f"{path}: {' '.join(problem.split())}" for problem in error.problems]
        raise base.JudgeError(f"{path}: {' '.join(str(error).split())}", problems=problems) from error


def _relative_to(folder: Path, params: Mapping[str, Any]) -> dict[str, Any]:
    resolved = {str(key): value for key, value in params.items()}
    for key in PATH_PARAMS:
        value = resolved.get(key)
        if isinstance(value, str) and value:
            resolved[key] = str(_under(folder, value))
    model = resolved.get("model")
    if isinstance(model, str) and model.startswith((".", "~")) and _under(folder, model).exists():
        resolved["model"] = str(_under(folder, model))
    return resolved


def _under(folder: Path, value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else folder / path
