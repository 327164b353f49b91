"""A run config that failed validation, reduced to its parts that are valid on their own.

``rag-eval validate`` lists every problem in one pass. The config's own problems are
:func:`rag_eval._data.config.schema.load_config`'s; the checks after it read the config's
sections (the dataset is loaded, each retriever's and each chunker's parameters checked, the
baseline file looked for), and a section does not stop being valid because another one is not.
So the config is read again and each part validated alone (a section, a retriever, a chunker,
a metric): those checks run on what is valid, and a part that is invalid itself is left out,
since whatever they would say of it waits for its own problem to be fixed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from rag_eval._core.errors import MetricError, RagEvalError
from rag_eval._data.config.execution import ExecutionSpec
from rag_eval._data.config.regression import RegressionSpec
from rag_eval._data.config.schema import LoadedConfig, RunConfig, chunker_names_problem, read_config
from rag_eval._data.config.sections import DatasetSpec, EvaluationSpec, RetrieverSpec
from rag_eval._scoring.metrics.measures import parse_metric

# Sections whose fields are independent settings: a field that fails takes its default, the rest is kept.
_SETTINGS: dict[str, type[BaseModel]] = {"evaluation": EvaluationSpec, "execution": ExecutionSpec, "regression": RegressionSpec}


def partial_config(path: str | Path) -> LoadedConfig | None:
    """The config at ``path`` with only its parts that are valid alone; None when it is no readable mapping.

    Kept: ``dataset`` when it is valid (whole: where its files are and how they are read go
    together), each valid retriever, metric (by its canonical name) and chunker (with a valid
    name), ``evaluation``, ``execution`` and ``regression`` with the fields that fail at their
    default and the gates that fail dropped, and ``cache_dir``; the rest keeps its default.
    ``left_out`` names the sections that were left out whole. The checks across sections do not
    run (load_config lists their problems) and a sweep is not expanded (its retrievers are the
    ones written). For checking only: built without validation (``model_construct``), never run.
    """
    try:
        raw = read_config(Path(path))
    except RagEvalError:
        return None  # the file itself is wrong: load_config said so, and there is nothing to check further
    parts: dict[str, Any] = {}
    left_out = set()
    try:
        parts["dataset"] = DatasetSpec.model_validate(raw.get("dataset"))
    except ValidationError:
        left_out.add("dataset")
    retrievers = raw.get("retrievers")
    parts["retrievers"] = [spec for spec in map(_retriever, retrievers if isinstance(retrievers, list) else []) if spec]
    metrics = raw.get("metrics")
    parts["metrics"] = list(dict.fromkeys(filter(None, map(_metric, metrics if isinstance(metrics, list) else []))))
    chunking = raw.get("chunking")
    parts["chunking"] = {
        name: spec
        for name, spec in (chunking.items() if isinstance(chunking, Mapping) else ())
        if isinstance(name, str) and chunker_names_problem([name]) is None and isinstance(spec, dict)
    }
    for key, model in _SETTINGS.items():
        if raw.get(key) is not None:
            section = _settings(model, raw[key])
            if section is None:
                left_out.add(key)
            else:
                parts[key] = section
    if isinstance(raw.get("cache_dir"), str):
        parts["cache_dir"] = raw["cache_dir"]
    config = LoadedConfig(Path(path), raw, RunConfig.model_construct(**parts))
    config.left_out = frozenset(left_out)
    return config


def _retriever(value: Any) -> RetrieverSpec | None:
    try:
        return RetrieverSpec.model_validate(value)
    except ValidationError:
        return None


def _metric(value: Any) -> str | None:
    try:
        return str(parse_metric(value)) if isinstance(value, str) else None
    except MetricError:
        return None


def _settings(model: type[BaseModel], value: Any) -> BaseModel | None:
    """``value`` as ``model``; where it fails, again without what failed (a field takes its default, an item of
    a mapping such as a gate is dropped). None when that fails too, or a check of the whole section failed."""
    try:
        return model.model_validate(value)
    except ValidationError as error:
        failed = [item["loc"] for item in error.errors()]
    if not isinstance(value, Mapping) or not all(failed):
        return None  # not a mapping, or a check of the whole section (execution keys read only by ray)
    kept = dict(value)
    for loc in failed:
        field = kept.get(loc[0])
        if len(loc) > 1 and isinstance(field, Mapping):
            kept[loc[0]] = {key: entry for key, entry in field.items() if key != loc[1]}
        else:
            kept.pop(loc[0], None)
    try:
        return model.model_validate(kept)
    except ValidationError:
        return None
