"""A run config, validated strictly: unknown keys and wrong types are errors.

Each error names the file, the field path, the bad value and, where it can, the
fix ("did you mean bm25?"). Paths in the config resolve against its folder.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    field_validator,
    model_validator,
)

from rag_eval._core.errors import ConfigError, MetricError, RetrieverError
from rag_eval._core.files import MAX_CONFIG_BYTES
from rag_eval._core.messages import did_you_mean, shown
from rag_eval._core.ranking import TOP_K_MIN
from rag_eval._core.validation import ProblemAt, raise_invalid
from rag_eval._core.yaml_loader import load_yaml
from rag_eval._data.config.adapters import check_adapter_name
from rag_eval._data.config.execution import ExecutionSpec
from rag_eval._data.config.labels import LABEL_MAX, LABEL_RULE, is_label
from rag_eval._data.config.sweep import expand_sweep
from rag_eval._scoring.metrics.measures import parse_metric, parse_metrics
from rag_eval._scoring.stats import (
    MAX_RESAMPLES,
    MIN_RESAMPLES,
    confidence_problem,
    resamples_problem,
    seed_problem,
)

# The default output folder's name, derived from the config's name (a label, not a path).
_UNSAFE_IN_FOLDER_NAME = re.compile(r"[^\w.+-]+")
FOLDER_NAME_MAX = 100
NAME_DESCRIPTION = (
    "A label for reports; not a path. Without `output`, it also names the default output folder "
    "`reports/<name>` (see `output`), reduced to letters, digits and `. _ + -`. A name with no letter or digit "
    "(`...`, `😀😀`) is then refused, since all such names would share one folder: give `output`. Not set: the "
    "config file's name without its extension."
)


class _Strict(BaseModel):
    # strict: YAML's `true` or "10" is not silently turned into a number (top_k: yes -> 1).
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class DatasetSpec(_Strict):
    """Where the queries, judgements and corpus come from."""

    format: Literal["yaml", "beir", "trec", "cranfield", "chroma"] | None = None
    path: str | None = None
    split: str = "test"
    qrels: str | None = None
    queries: str | None = None
    corpus: str | None = None
    grade_map: dict[float, float] | None = None
    name: str | None = None
    as_documents: bool = Field(
        default=False,
        description="Read each passage of a passage collection as a document, so that chunkers can cut it and "
        "document metrics (doc_ndcg@10, by MaxP) score the chunks against the passage judgements.",
    )

    @model_validator(mode="after")
    def _needs_location(self) -> DatasetSpec:
        if self.format == "trec" or (self.format is None and self.qrels):
            missing = [k for k in ("qrels", "queries", "corpus") if not getattr(self, k)]
            if missing:
                raise ValueError(f"a TREC dataset needs qrels, queries and corpus; missing {', '.join(missing)}")
        elif not self.path:
            raise ValueError("give the dataset's 'path' (a query set YAML, a BEIR folder or the Cranfield folder)")
        return self


class RetrieverSpec(_Strict):
    """One retriever to evaluate: a label, an adapter name or import string, parameters."""

    label: str = Field(description=LABEL_RULE)
    adapter: str
    params: dict[str, Any] = Field(default_factory=dict)
    chunker: str | None = Field(
        default=None,
        description="The name of a chunker of `chunking` whose chunks this retriever indexes (datasets with "
        "documents only). Not set: the retriever indexes whole documents, or returns spans itself.",
    )

    @field_validator("label")
    @classmethod
    def _safe_label(cls, value: str) -> str:
        if not is_label(value):
            raise ValueError(LABEL_RULE)
        return value

    @field_validator("adapter")
    @classmethod
    def _known_adapter(cls, value: str) -> str:

        check_adapter_name(value)
        return value


class EvaluationSpec(_Strict):
    """The semantics of docs/semantics.md; printed in every report."""

    gain: Literal["linear", "exponential"] = "linear"
    aggregation: Literal["macro", "micro"] = "macro"
    no_relevant: Literal["skip", "zero", "error"] = "skip"
    relevance_threshold: float = Field(default=1.0, gt=0)
    min_evidence_fraction: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="Datasets with evidence spans: a chunk takes an evidence span's grade when it covers at least "
        "this share of the span (0: one shared character is enough). Chunk-level metrics only.",
    )

    tokenizer: str = Field(
        default="words",
        description="Datasets with documents: what a context budget in tokens (`evidence_recall@512tokens`) "
        "counts, for every retriever alike, so that budgets compare chunkings like for like: `words` "
        "(`\\w+|[^\\w\\s]`) or a Hugging Face tokenizer found offline (a name such as `all-MiniLM-L6-v2`, or a "
        "folder holding `tokenizer.json`).",
    )

    def passage_options(self) -> dict[str, Any]:
        """The keyword arguments of :func:`rag_eval.evaluate` (the options that apply to passage runs)."""
        return self.model_dump(exclude={"min_evidence_fraction", "tokenizer"})

    def document_options(self) -> dict[str, Any]:
        """The keyword arguments of :func:`rag_eval.evaluate_evidence` from this section (not the tokenizer)."""
        return self.model_dump(exclude={"tokenizer"})


class ReportSpec(_Strict):
    """How much the markdown report shows."""

    plots: bool = Field(
        default=True,
        description="Write SVG plots beside report.md (means with intervals, per-query differences, metric@k, one "
        "per swept parameter), linked from it with their numbers in text. false: no plots (matplotlib not needed).",
    )
    detailed_queries: int = Field(default=20, ge=0)
    passage_chars: int = Field(default=160, ge=20)
    title: str | None = None


class GateSpec(_Strict):
    """A regression gate on one metric."""

    max_drop: float = Field(default=0.0, ge=0)
    alpha: float | None = Field(default=None, gt=0, lt=1)


def repeated_gate(named: Sequence[tuple[str, str]]) -> str | None:
    """The problem of two gates on one metric, given each gate's ``(name as the user wrote it, metric)``; None
    when every metric has one gate. With two, which limit applies would depend on their order."""
    first: dict[str, str] = {}
    for name, metric in named:
        if metric in first:
            return f"{first[metric]} and {name} both gate {metric} (the same metric); keep one gate per metric"
        first[metric] = name
    return None


# ---- the resampling of a comparison ------------------------------------------------------------------
# Their limits and wording are the statistics' own (rag_eval._scoring.stats, which loads scipy only when a
# function runs): these types add pydantic's strict type, and declare the same limits with Field for the JSON
# schema and the reference. A config's regression section, `rag-eval compare`'s flags and the arguments of
# rag_eval._compare.regression.compare are all checked through these types (check_resampling).

_LIMIT_ERRORS = frozenset({"greater_than", "greater_than_equal", "less_than", "less_than_equal"})


def _checked_by(problem: Callable[[Any], str | None]) -> WrapValidator:
    """The limits of a value of the right type checked by ``problem`` and refused in its words (pydantic's say less).

    A value outside the limits the type declares is the right type, so ``problem`` can say what is
    wrong with it; one within them is asked too, so that ``problem`` decides either way.
    """

    def check(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            typed = handler(value)
        except ValidationError as error:
            found = problem(value) if all(item["type"] in _LIMIT_ERRORS for item in error.errors()) else None
            if found is None:  # a wrong type (or limits that disagree with problem's): pydantic's words
                raise
            raise ValueError(found) from None
        found = problem(typed)
        if found:
            raise ValueError(found)
        return typed

    return WrapValidator(check)


Confidence = Annotated[float, Field(gt=0, lt=1), _checked_by(confidence_problem)]
Resamples = Annotated[int, Field(ge=MIN_RESAMPLES, le=MAX_RESAMPLES), _checked_by(resamples_problem)]
Seed = Annotated[int, Field(ge=0), _checked_by(seed_problem)]
_RESAMPLING: dict[str, TypeAdapter[Any]] = {
    "confidence": TypeAdapter(Confidence),
    "resamples": TypeAdapter(Resamples),
    "seed": TypeAdapter(Seed),
}


def check_resampling(
    confidence: Any, resamples: Any, seed: Any, *, names: Mapping[str, str] | None = None
) -> None:
    """ConfigError naming the first value outside its limits, checked as ``regression.confidence``, ``.resamples``
    and ``.seed`` of a config are; ``names``: what the caller calls them (``{"resamples": "--resamples"}``)."""
    for key, value in (("confidence", confidence), ("resamples", resamples), ("seed", seed)):
        try:
            _RESAMPLING[key].validate_python(value, strict=True)
        except ValidationError as error:
            problem = error.errors()[0]["msg"].removeprefix("Value error, ")
            raise ConfigError(f"{(names or {}).get(key, key)}: {problem} (got {shown(value)})") from None


class RegressionSpec(_Strict):
    """Compare each retriever's results with a saved baseline results file."""

    baseline: str
    gates: dict[str, GateSpec]
    retriever: str | None = None
    confidence: Confidence = 0.95
    resamples: Resamples = Field(default=10_000, description="bootstrap / permutation resamples")
    seed: Seed = Field(default=0, description="random seed of the resampling (numpy needs it >= 0)")


# load_config validates a config with a sweep twice: first as written (this context: references to labels
# that only the expansion creates are not checked yet), then expanded, with every check.
_UNEXPANDED = "sweep_unexpanded"


def _values_to_try(values: dict[str, list[Any]]) -> dict[str, list[Any]]:

    for key, tried in values.items():
        if not tried:
            raise ProblemAt((key,), "an empty list of values; give at least one value to try")
    return values


class SweepGridEntry(_Strict):
    """One grid of a sweep: a retriever of `retrievers` and the values to try for its parameters."""

    retriever: str = Field(description="The label of the retriever of `retrievers` whose parameters vary.")
    params: dict[str, list[Any]] = Field(
        default_factory=dict,
        description="Values to try for the retriever's parameters, e.g. `{k1: [0.9, 1.2], b: [0.4, 0.75]}`; each "
        "replaces the parameter of the same name (the others stay as the retriever gives them).",
    )
    chunking: dict[str, list[Any]] = Field(
        default_factory=dict,
        description="Values to try for the parameters of the chunker the retriever reads (`chunker:`), e.g. "
        "`{size: [200, 400], overlap: [0, 100]}`; each distinct chunker spec becomes one entry of `chunking`.",
    )

    _nonempty_params = field_validator("params")(_values_to_try)
    _nonempty_chunking = field_validator("chunking")(_values_to_try)

    @model_validator(mode="after")
    def _varies_something(self) -> SweepGridEntry:
        if not self.params and not self.chunking:
            raise ValueError("a grid entry varies nothing; give `params:` or `chunking:` values to try")
        return self


class SweepVariant(_Strict):
    """One variant listed by hand: a retriever of `retrievers`, a label, and the values it changes."""

    retriever: str = Field(description="The label of the retriever of `retrievers` the variant changes.")
    label: str = Field(description=LABEL_RULE)
    params: dict[str, Any] = Field(default_factory=dict, description="The parameters it changes.")
    chunking: dict[str, Any] = Field(
        default_factory=dict, description="The parameters of the retriever's chunker it changes."
    )

    @field_validator("label")
    @classmethod
    def _safe_label(cls, value: str) -> str:
        if not is_label(value):
            raise ValueError(LABEL_RULE)
        return value


class SweepSpec(_Strict):
    """Variants of the config's retrievers, expanded into retrievers when the config is loaded ([sweeps.md](sweeps.md))."""

    max_variants: int = Field(
        default=100, ge=1, description="A sweep that expands to more variants than this is refused, with the count."
    )
    baseline: str | None = Field(
        default=None,
        description="The label (of a variant, or of a retriever of `retrievers`) the report compares all others "
        "with. Not set: the best by the main metric.",
    )
    grid: list[SweepGridEntry] = Field(
        default_factory=list,
        description="Grids: each replaces its retriever by one variant per combination of values (the cartesian "
        "product), labelled from the values that vary: `bm25.k1-0.9.b-0.4`.",
    )
    variants: list[SweepVariant] = Field(
        default_factory=list,
        description="Variants listed one by one, each with its own label; added beside their retriever, which stays.",
    )

    @model_validator(mode="after")
    def _something(self) -> SweepSpec:
        if not self.grid and not self.variants:
            raise ValueError("a sweep needs `grid:` or `variants:`")
        return self


def _check_for_ray(spec: Any, where: tuple[Any, ...]) -> None:
    """Dense settings that cannot run with ``execution: {engine: ray}``, nested retrievers included.

    Said by ``validate``: a run would otherwise say it only when the retriever first needs
    to encode or search (never, when every ranking comes from the cache).
    """

    if not isinstance(spec, dict) or not isinstance(spec.get("params"), dict):
        return
    params = spec["params"]
    if spec.get("adapter") == "dense":
        index = params.get("index")
        if isinstance(index, dict) and index.get("kind", "exact") != "exact":
            raise ProblemAt(
                (*where, "params", "index"),
                f"execution engine ray searches exactly, shard by shard; index kind {index.get('kind')!r} runs in "
                "one process: remove index, or use execution engine local",
            )
        if params.get("devices"):
            raise ProblemAt(
                (*where, "params", "devices"),
                "execution engine ray runs one encoder actor per GPU of the cluster; remove devices "
                "(set execution.num_gpus_per_actor instead)",
            )
    for key, value in params.items():
        if isinstance(value, dict):
            _check_for_ray(value, (*where, "params", key))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                _check_for_ray(item, (*where, "params", key, i))


class RunConfig(_Strict):
    """A whole run config."""

    name: str | None = Field(default=None, description=NAME_DESCRIPTION)
    dataset: DatasetSpec
    retrievers: list[RetrieverSpec] = Field(min_length=1)
    metrics: list[str] = Field(min_length=1)
    main_metric: str | None = None
    top_k: int = Field(default=100, ge=TOP_K_MIN)  # the rule of rag_eval._core.ranking.check_top_k, in pydantic's words
    evaluation: EvaluationSpec = Field(default_factory=EvaluationSpec)
    report: ReportSpec = Field(default_factory=ReportSpec)
    output: str | None = None
    cache_dir: str | None = None
    reuse_rankings: bool = Field(
        default=True,
        description="Reuse a built-in retriever's ranking from an earlier run (stored under `cache_dir`, else the "
        "default cache folder) when nothing it depends on changed: adapter, parameters, the exact corpus it indexes "
        "and query texts, `top_k`, model files, a static retriever's rankings, rag_eval and library versions. "
        "Plug-in retrievers are never reused. `false` indexes and searches every time.",
    )
    execution: ExecutionSpec = Field(
        default_factory=ExecutionSpec,
        description="Where dense encoding and exact search run: `{engine: local}` (default: this process) or "
        "`{engine: ray, address: local | auto | <cluster address>, actors, batch_size, shards, ...}` "
        "([scale.md](scale.md)). The rankings and numbers are the same either way; evaluation stays local.",
    )
    regression: RegressionSpec | None = None
    chunking: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Named chunkers, each `{method: fixed | recursive | sentences | markdown | <module:function>, "
        "size, overlap, unit, tokenizer, ...}` ([chunking.md](chunking.md)); a retriever reads one with `chunker:`. "
        "Datasets with documents only ([documents.md](documents.md)).",
    )
    sweep: SweepSpec | None = Field(
        default=None,
        description="Variants of the retrievers above to compare (a grid over any retriever or chunker parameter, "
        "and variants listed by hand), expanded into retrievers when the config is loaded: [sweeps.md](sweeps.md).",
    )

    @field_validator("name")
    @classmethod
    def _one_line_name(cls, value: str | None) -> str | None:
        if value is not None and (not value.strip() or not value.isprintable()):
            raise ValueError("a name is one line of printable text (it titles the report)")
        return value

    @field_validator("chunking")
    @classmethod
    def _named_chunkers(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for name in value:
            if not name.strip() or not name.isprintable() or len(name) > LABEL_MAX:
                raise ValueError(
                    f"chunker name {name!r}: a chunker's name is one line of printable text, at most {LABEL_MAX} "
                    "characters (retrievers name it with chunker:)"
                )
        return value

    @field_validator("metrics")
    @classmethod
    def _valid_metrics(cls, values: list[str]) -> list[str]:

        return [str(m) for m in parse_metrics(values)]

    @field_validator("main_metric")
    @classmethod
    def _valid_main(cls, value: str | None) -> str | None:

        return None if value is None else str(parse_metric(value))

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> RunConfig:
        labels = [r.label for r in self.retrievers]
        expanded = not (info.context and info.context.get(_UNEXPANDED))
        duplicates = sorted({label for label in labels if labels.count(label) > 1})
        if duplicates:
            raise ValueError(f"retriever labels must be unique; repeated: {', '.join(duplicates)}")
        for position, spec in enumerate(self.retrievers):
            if spec.chunker is not None and spec.chunker not in self.chunking:
                known = ", ".join(self.chunking) or "none: add a `chunking:` section"
                raise ProblemAt(
                    ("retrievers", position, "chunker"),
                    f"no chunker {spec.chunker!r} in chunking; {did_you_mean(spec.chunker, self.chunking)}chunkers: {known}",
                )
        if self.execution.engine == "ray":
            for position, spec in enumerate(self.retrievers):
                _check_for_ray({"adapter": spec.adapter, "params": spec.params}, ("retrievers", position))
        if self.main_metric and self.main_metric not in self.metrics:
            raise ValueError(f"main_metric {self.main_metric} is not among metrics {self.metrics}")
        if self.regression:
            gated = [(repr(gate), str(parse_metric(gate))) for gate in self.regression.gates]
            for gate, (_, canonical) in zip(self.regression.gates, gated):
                if canonical not in self.metrics:
                    raise ValueError(f"regression gate {gate} is not among metrics {self.metrics}")
            twice = repeated_gate(gated)
            if twice:
                raise ProblemAt(("regression", "gates"), twice)
            if expanded and self.regression.retriever and self.regression.retriever not in labels:
                raise ValueError(f"regression.retriever {self.regression.retriever!r} is not a retriever label")
        if expanded and self.sweep is not None and self.sweep.baseline is not None:
            _check_baseline(self.sweep.baseline, labels)
        return self

    @property
    def primary_metric(self) -> str:
        """The metric of the per-query table and the derivations (first nDCG@k by default)."""
        if self.main_metric:
            return self.main_metric

        # The first metric of the family its record marks (nDCG) at any level (doc_ndcg@10 on a dataset of
        # documents), as config.md says; else the first metric.
        return next((m for m in self.metrics if parse_metric(m).family.main_by_default), self.metrics[0])


def _check_baseline(baseline: str, labels: list[str]) -> None:
    if baseline not in labels:
        listed = ", ".join(labels[:10]) + (f", ... ({len(labels)} in all)" if len(labels) > 10 else "")
        raise ProblemAt(
            ("sweep", "baseline"),
            f"{baseline!r} is not the label of a retriever or variant after expanding the sweep; "
            f"{did_you_mean(baseline, labels)}labels: {listed}",
        )


class LoadedConfig:
    """A validated config with its file, folder and raw dict."""

    def __init__(self, path: Path, raw: dict[str, Any], model: RunConfig, output: Path | None = None) -> None:
        self.path = path
        self.base = path.parent
        self.raw = raw
        self.model = model
        # --output as the user typed it (relative to the current folder); model.output names the
        # same folder relative to the config, as the results file records it.
        self.output = output
        # A sweep's generated variants: label -> the values that vary ({"params.k1": 0.9}); empty without a sweep.
        self.variants: dict[str, dict[str, Any]] = {}
        # A sweep's variant label -> the retriever of the config it varies.
        self.variant_templates: dict[str, str] = {}
        # "sweep: 6 variants (bm25: 3 k1 x 2 b)" for `rag-eval validate`; "" without a sweep.
        self.sweep_summary = ""

    @property
    def baseline_label(self) -> str | None:
        """The sweep's declared baseline (a retriever or variant label), None when not declared."""
        return self.model.sweep.baseline if self.model.sweep is not None else None

    def resolve(self, value: str) -> Path:
        """A path from the config, relative to the config's folder."""
        path = Path(value).expanduser()
        # normpath keeps the path relative to where the user ran the command, without "configs/../".
        return path if path.is_absolute() else Path(os.path.normpath(self.base / path))

    @property
    def name(self) -> str:
        """The run's name: the config's ``name``, else the config file's stem."""
        return self.model.name or self.path.stem

    @property
    def output_dir(self) -> Path:
        """Where report.md and results go: ``--output`` as typed, else ``output``, else reports/<name> beside configs/.

        The default is resolved exactly as ``output: ../reports/<folder name>`` would be, so it
        is the same folder whatever the current directory (``cd configs && rag-eval run x.yaml``
        gives ``../reports/x``); it stays relative when the config's path was. The name is a
        label, never a path: the folder is named by :func:`folder_name` (``name: ../../x``
        writes to reports/x). ConfigError when nothing of the name is left for a folder name.
        """
        if self.output is not None:
            return self.output
        if self.model.output:
            return self.resolve(self.model.output)
        folder = folder_name(self.name)
        if not folder:
            raise ConfigError(self._no_folder_name())
        return self.resolve(os.path.join(os.pardir, "reports", folder))

    def _no_folder_name(self) -> str:
        fix = "give 'output:' (or --output), or a name with letters or digits"
        if self.model.name:
            return (
                f"{self.path}: name: {self.model.name!r} has no letter or digit to name the default output folder "
                f"reports/<name>; {fix}"
            )
        return (
            f"{self.path}: the config file's name {self.path.stem!r} has no letter or digit to name the default "
            "output folder reports/<name>; give 'name:' with letters or digits, or 'output:' (or --output)"
        )


def folder_name(name: str) -> str:
    """A folder name derived from a run's name: no separators, no ``..``, no leading dot.

    Runs of characters other than letters, digits and ``. _ + -`` become one ``-``;
    ``Ocean facts: v2/BM25`` becomes ``Ocean-facts-v2-BM25``. Empty when nothing is left
    (``...``, ``😀😀``): such names would all share one folder, so the caller refuses them.
    """
    slug = _UNSAFE_IN_FOLDER_NAME.sub("-", name)
    return re.sub(r"\.{2,}", ".", slug).strip("-.")[:FOLDER_NAME_MAX].strip("-.")


def load_config(path: str | Path, output: str | None = None) -> LoadedConfig:
    """Read and validate a run config; every problem is named in one ConfigError.

    ``output`` (``rag-eval run --output``, relative to the current directory) replaces the
    config's ``output`` before validation. A config whose default output folder cannot be
    named (see :func:`folder_name`) is refused here, so ``rag-eval validate`` reports it too.
    """

    path = Path(path)
    raw = load_yaml(path, "YAML run config", MAX_CONFIG_BYTES, ConfigError)
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a run config is a mapping with keys dataset, retrievers, metrics, ...")
    data = raw if output is None else {**raw, "output": _relative_to_config(output, path)}
    sweeping = data.get("sweep") is not None
    try:
        model = RunConfig.model_validate(data, context={_UNEXPANDED: True} if sweeping else None)
    except ValidationError as error:
        raise_invalid(path, error, data, RunConfig, ConfigError)
    expansion = None
    if model.sweep is not None:

        expansion = expand_sweep(model, data, path)
        try:  # the expanded config, checked as if written by hand
            model = RunConfig.model_validate(expansion.data)
        except ValidationError as error:
            raise_invalid(path, error, expansion.data, RunConfig, ConfigError)
    typed = None if output is None else Path(os.path.normpath(Path(output).expanduser()))
    config = LoadedConfig(path, raw, model, typed)
    if expansion is not None:
        config.variants, config.sweep_summary = expansion.variants, expansion.summary
        config.variant_templates = expansion.templates
    if not model.output and not folder_name(config.name):
        raise ConfigError(config._no_folder_name())
    return config


def _relative_to_config(output: str, config_path: Path) -> str:
    """A folder given relative to the current directory, as the config's ``output`` would name it.

    Relative stays relative (so printed paths stay as short as the user typed them); where
    no relative path exists (another drive on Windows) the absolute path is used.
    """
    folder = Path(output).expanduser()
    if folder.is_absolute():
        return str(folder)
    try:
        return os.path.relpath(os.path.abspath(folder), os.path.abspath(config_path.parent))
    except ValueError:
        return os.path.abspath(folder)


__all__ = ["ConfigError", "LoadedConfig", "MetricError", "RetrieverError", "RunConfig", "load_config"]
