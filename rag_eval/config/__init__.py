"""Run configs: YAML -> dict (loader), dict -> validated model (schema)."""

from rag_eval.config.loader import load_yaml
from rag_eval.config.schema import RunConfig, load_config

__all__ = ["RunConfig", "load_config", "load_yaml"]
