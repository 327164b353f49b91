"""Read YAML purely (safe_load) and turn its syntax errors into one located line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rag_eval.errors import ConfigError


def load_yaml(path: str | Path) -> Any:
    """Parse a YAML file; a missing file or bad syntax raises ConfigError with line and column."""
    import yaml

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a folder, expected a YAML file") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "somewhere"
        problem = error.problem or error.context or "invalid YAML"
        raise ConfigError(f"{path}: {where}: invalid YAML: {problem}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: invalid YAML: {error}") from None
