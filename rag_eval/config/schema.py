"""A run config, validated strictly: unknown keys and wrong types are errors.

Each error names the file, the field path, the bad value and, where it can, the
fix ("did you mean bm25?"). Paths in the config resolve against its folder.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from rag_eval.errors import ConfigError, MetricError, RagEvalError, RetrieverError

LABEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._+-]*$"


class _Strict(BaseModel):
    # strict: YAML's `true` or "10" is not silently turned into a number (top_k: yes -> 1).
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class DatasetSpec(_Strict):
    """Where the queries, judgements and corpus come from."""

    format: Literal["yaml", "beir", "trec", "cranfield"] | None = None
    path: str | None = None
    split: str = "test"
    qrels: str | None = None
    queries: str | None = None
    corpus: str | None = None
    grade_map: dict[float, float] | None = None
    name: str | None = None

    @model_validator(mode="after")
    def _needs_location(self) -> "DatasetSpec":
        if self.format == "trec" or (self.format is None and self.qrels):
            missing = [k for k in ("qrels", "queries", "corpus") if not getattr(self, k)]
            if missing:
                raise ValueError(f"a TREC dataset needs qrels, queries and corpus; missing {', '.join(missing)}")
        elif not self.path:
            raise ValueError("give the dataset's 'path' (a query set YAML, a BEIR folder or the Cranfield folder)")
        return self


class RetrieverSpec(_Strict):
    """One retriever to evaluate: a label, an adapter name or import string, parameters."""

    label: str = Field(pattern=LABEL_PATTERN, max_length=80)
    adapter: str
    params: dict[str, Any] = Field(default_factory=dict)

    @field_validator("adapter")
    @classmethod
    def _known_adapter(cls, value: str) -> str:
        from rag_eval.retrievers.registry import check_adapter_name

        check_adapter_name(value)
        return value


class EvaluationSpec(_Strict):
    """The semantics of SEMANTICS.md; printed in every report."""

    gain: Literal["linear", "exponential"] = "linear"
    aggregation: Literal["macro", "micro"] = "macro"
    no_relevant: Literal["skip", "zero", "error"] = "skip"
    relevance_threshold: float = Field(default=1.0, gt=0)


class ReportSpec(_Strict):
    """How much the markdown report shows."""

    detailed_queries: int = Field(default=20, ge=0)
    passage_chars: int = Field(default=160, ge=20)
    title: str | None = None


class GateSpec(_Strict):
    """A regression gate on one metric."""

    max_drop: float = Field(default=0.0, ge=0)
    alpha: float | None = Field(default=None, gt=0, lt=1)


class RegressionSpec(_Strict):
    """Compare each retriever's results with a saved baseline results file."""

    baseline: str
    gates: dict[str, GateSpec]
    retriever: str | None = None
    confidence: float = Field(default=0.95, gt=0, lt=1)
    resamples: int = Field(default=10_000, ge=100)
    seed: int = 0


class RunConfig(_Strict):
    """A whole run config."""

    name: str | None = None
    dataset: DatasetSpec
    retrievers: list[RetrieverSpec] = Field(min_length=1)
    metrics: list[str] = Field(min_length=1)
    main_metric: str | None = None
    top_k: int = Field(default=100, ge=1)
    evaluation: EvaluationSpec = Field(default_factory=EvaluationSpec)
    report: ReportSpec = Field(default_factory=ReportSpec)
    output: str | None = None
    cache_dir: str | None = None
    regression: RegressionSpec | None = None

    @field_validator("metrics")
    @classmethod
    def _valid_metrics(cls, values: list[str]) -> list[str]:
        from rag_eval.metrics.measures import parse_metrics

        return [str(m) for m in parse_metrics(values)]

    @field_validator("main_metric")
    @classmethod
    def _valid_main(cls, value: str | None) -> str | None:
        from rag_eval.metrics.measures import parse_metric

        return None if value is None else str(parse_metric(value))

    @model_validator(mode="after")
    def _consistent(self) -> "RunConfig":
        labels = [r.label for r in self.retrievers]
        duplicates = sorted({label for label in labels if labels.count(label) > 1})
        if duplicates:
            raise ValueError(f"retriever labels must be unique; repeated: {', '.join(duplicates)}")
        if self.main_metric and self.main_metric not in self.metrics:
            raise ValueError(f"main_metric {self.main_metric} is not among metrics {self.metrics}")
        if self.regression:
            from rag_eval.metrics.measures import parse_metric

            for gate in self.regression.gates:
                if str(parse_metric(gate)) not in self.metrics:
                    raise ValueError(f"regression gate {gate} is not among metrics {self.metrics}")
            if self.regression.retriever and self.regression.retriever not in labels:
                raise ValueError(f"regression.retriever {self.regression.retriever!r} is not a retriever label")
        return self

    @property
    def primary_metric(self) -> str:
        """The metric of the per-query table and the derivations (first nDCG@k by default)."""
        if self.main_metric:
            return self.main_metric
        return next((m for m in self.metrics if m.startswith("ndcg")), self.metrics[0])


class LoadedConfig:
    """A validated config with its file, folder and raw dict."""

    def __init__(self, path: Path, raw: dict[str, Any], model: RunConfig) -> None:
        self.path = path
        self.base = path.parent
        self.raw = raw
        self.model = model

    def resolve(self, value: str) -> Path:
        """A path from the config, relative to the config's folder."""
        path = Path(value).expanduser()
        # normpath keeps the path relative to where the user ran the command, without "configs/../".
        return path if path.is_absolute() else Path(os.path.normpath(self.base / path))

    @property
    def name(self) -> str:
        return self.model.name or self.path.stem

    @property
    def output_dir(self) -> Path:
        """Where report.md and results go (default: reports/<name> beside configs/)."""
        if self.model.output:
            return self.resolve(self.model.output)
        return Path(os.path.normpath(self.base.parent / "reports" / self.name))


def load_config(path: str | Path) -> LoadedConfig:
    """Read and validate a run config; every problem is named in one ConfigError."""
    from rag_eval.config.loader import load_yaml

    path = Path(path)
    raw = load_yaml(path)
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a run config is a mapping with keys dataset, retrievers, metrics, ...")
    try:
        model = RunConfig.model_validate(raw)
    except ValidationError as error:
        problems = [_describe(path, item, raw) for item in error.errors()]
        first = problems[0]
        more = f" (and {len(problems) - 1} more; `rag-eval validate` lists all)" if len(problems) > 1 else ""
        raise ConfigError(first + more, problems=problems) from None
    return LoadedConfig(path, raw, model)


def _describe(path: Path, item: dict[str, Any], raw: Any) -> str:
    loc = [p for p in item["loc"] if p not in ("function-after[_needs_location(), DatasetSpec]",)]
    field = _field_path(raw, loc)
    kind = item["type"]
    if kind == "extra_forbidden":
        name = loc[-1]
        parent_model = _model_at(loc[:-1])
        allowed = sorted(parent_model.model_fields) if parent_model else []
        guess = difflib.get_close_matches(str(name), allowed, n=1)
        hint = f"did you mean {guess[0]!r}? " if guess else ""
        return f"{path}: {field}: unknown key; {hint}allowed: {', '.join(allowed)}"
    if kind == "missing":
        return f"{path}: {field}: required field is missing"
    error = item.get("ctx", {}).get("error")
    if isinstance(error, RagEvalError):
        message = str(error)
    else:
        message = item["msg"].removeprefix("Value error, ")
    value = item.get("input")
    shown = "" if isinstance(value, (dict, list)) or value is None else f" (got {value!r})"
    return f"{path}: {field}: {message}{shown}"


def _field_path(raw: Any, loc: list[Any]) -> str:
    parts: list[str] = []
    node = raw
    for part in loc:
        if isinstance(part, int):
            label = None
            if isinstance(node, list) and part < len(node) and isinstance(node[part], dict):
                label = node[part].get("label")
            parts.append(f"[{part}]" + (f"({label})" if label else ""))
            node = node[part] if isinstance(node, list) and part < len(node) else None
        else:
            if not isinstance(part, str) or part.startswith(("function-", "literal[")):
                continue
            parts.append(("." if parts else "") + part)
            node = node.get(part) if isinstance(node, dict) else None
    return "".join(parts) or "(top level)"


def _model_at(loc: list[Any]) -> type[BaseModel] | None:
    model: type[BaseModel] | None = RunConfig
    for part in loc:
        if isinstance(part, int) or model is None:
            continue
        field = model.model_fields.get(part)
        if field is None:
            return None
        annotation = field.annotation
        candidates = [annotation, *getattr(annotation, "__args__", ())]
        model = next(
            (c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)),
            None,
        )
        if model is None:
            for c in candidates:
                for inner in getattr(c, "__args__", ()):
                    if isinstance(inner, type) and issubclass(inner, BaseModel):
                        model = inner
    return model


__all__ = ["RunConfig", "LoadedConfig", "load_config", "ConfigError", "MetricError", "RetrieverError"]
