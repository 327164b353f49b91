"""Run configs: YAML -> dict (loader), dict -> validated model (schema).

The names below load on first use (PEP 562), so that importing a light submodule
such as ``rag_eval.config.reference`` (which the CLI registers at start-up) does
not import pydantic, PyYAML and the models.
"""

from __future__ import annotations

from typing import Any

from rag_eval._core.yaml_loader import load_yaml
from rag_eval._data.config import schema

__all__ = ["RunConfig", "load_config", "load_yaml"]


def __getattr__(name: str) -> Any:
    if name in ("RunConfig", "load_config"):
        return getattr(schema, name)
    if name == "load_yaml":
        return load_yaml
    raise AttributeError(f"module 'rag_eval.config' has no attribute {name!r}")
