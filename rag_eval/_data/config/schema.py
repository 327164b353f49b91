"""A run config, validated strictly: unknown keys and wrong types are errors.

Each error names the file, the field path, the bad value and, where it can, the
fix ("did you mean bm25?"). Paths in the config resolve against its folder.

This module holds the whole config (:class:`RunConfig`), a loaded one (:class:`LoadedConfig`)
and :func:`load_config`. The sections' models are :mod:`rag_eval._data.config.sections`
(dataset, retrievers, evaluation, report), ``.regression``, ``.execution`` and
``.sweep_spec``; the checks across sections are :mod:`rag_eval._data.config.consistency`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from pydantic import (
    Field,
    ModelWrapValidatorHandler,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from typing_extensions import Self

from rag_eval._core.errors import ConfigError, MetricError, RetrieverError
from rag_eval._core.files import MAX_CONFIG_BYTES
from rag_eval._core.messages import first_and_more, summarise
from rag_eval._core.ranking import TOP_K_MIN
from rag_eval._core.validation import validation_problems
from rag_eval._core.yaml_loader import load_yaml
from rag_eval._data.config.consistency import cross_section_problems
from rag_eval._data.config.execution import ExecutionSpec
from rag_eval._data.config.labels import LABEL_MAX
from rag_eval._data.config.regression import RegressionSpec
from rag_eval._data.config.sections import DatasetSpec, EvaluationSpec, ReportSpec, RetrieverSpec
from rag_eval._data.config.strict import Strict, several
from rag_eval._data.config.sweep import expand_sweep
from rag_eval._data.config.sweep_spec import SweepSpec
from rag_eval._scoring.metrics.measures import parse_metric, parse_metrics

# The default output folder's name, derived from the config's name (a label, not a path).
_UNSAFE_IN_FOLDER_NAME = re.compile(r"[^\w.+-]+")
FOLDER_NAME_MAX = 100
NAME_DESCRIPTION = (
    "A label for reports; not a path. Without `output`, it also names the default output folder "
    "`reports/<name>` (see `output`), reduced to letters, digits and `. _ + -`. A name with no letter or digit "
    "(`...`, `😀😀`) is then refused, since all such names would share one folder: give `output`. Not set: the "
    "config file's name without its extension."
)

# Validation contexts. load_config validates a config with a sweep twice: first as written (_UNEXPANDED:
# references to labels that only the expansion creates are not checked yet), then expanded, with every check.
_UNEXPANDED = "sweep_unexpanded"
# load_config runs the checks across sections itself (_ACROSS_APART), on valid and invalid sections alike.
_ACROSS_APART = "checks_across_sections_apart"


def name_problem(value: str) -> str | None:
    """What is wrong with ``value`` as a config's ``name`` (it titles the report); None when nothing is."""
    if not value.strip() or not value.isprintable():
        return "a name is one line of printable text (it titles the report)"
    return None


def chunker_names_problem(names: list[str]) -> str | None:
    """What is wrong with the names of ``chunking``'s chunkers (all of them, on one line); None when nothing is."""
    bad = [name for name in names if not name.strip() or not name.isprintable() or len(name) > LABEL_MAX]
    if not bad:
        return None
    named = f"chunker name {bad[0]!r}" if len(bad) == 1 else f"chunker names {', '.join(map(repr, bad))}"
    return (
        f"{named}: a chunker's name is one line of printable text, at most {LABEL_MAX} characters "
        "(retrievers name it with chunker:)"
    )


def canonical_metrics(values: list[str]) -> list[str]:
    """The canonical names of ``values`` (exact repeats dropped); MetricError naming every unknown one."""
    problems: list[str] = []
    for value in values:
        try:
            parse_metric(value)
        except MetricError as error:
            problems += [problem for problem in error.problems if problem not in problems]
    if problems:
        raise MetricError(first_and_more(problems), problems=problems)
    return [str(m) for m in parse_metrics(values)]


class RunConfig(Strict):
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
        problem = None if value is None else name_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("chunking")
    @classmethod
    def _named_chunkers(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        problem = chunker_names_problem(list(value))
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("metrics")
    @classmethod
    def _valid_metrics(cls, values: list[str]) -> list[str]:
        return canonical_metrics(values)

    @field_validator("main_metric")
    @classmethod
    def _valid_main(cls, value: str | None) -> str | None:
        return None if value is None else str(parse_metric(value))

    @model_validator(mode="wrap")
    @classmethod
    def _consistent(cls, data: Any, handler: ModelWrapValidatorHandler[Self], info: ValidationInfo) -> Self:
        # A wrap validator, to read the config as written: the checks across sections take it
        # (consistency.py says why), and raise every problem they find at once.
        model = handler(data)
        context = info.context or {}
        if not context.get(_ACROSS_APART) and isinstance(data, dict):
            problems = cross_section_problems(data, expanded=not context.get(_UNEXPANDED))
            if problems:
                raise several(problems, data)
        return model

    @property
    def compares_unit_sizes(self) -> bool:
        """Whether the retrievers read units cut differently: several chunkers, or whole documents beside chunks."""
        return len({spec.chunker for spec in self.retrievers}) > 1

    @property
    def primary_metric(self) -> str:
        """The metric of the per-query table and the derivations (first nDCG@k by default)."""
        if self.main_metric:
            return self.main_metric
        if self.compares_unit_sizes:
            # Units of different sizes (chunkings, whole documents beside chunks): a cut-off metric
            # rewards the biggest units, a budget compares them at equal context (docs/config.md).
            budget = next((m for m in self.metrics if parse_metric(m).budget_unit is not None), None)
            if budget is not None:
                return budget

        # The first metric of the family its record marks (nDCG) at any level (doc_ndcg@10 on a dataset of
        # documents), as config.md says; else the first metric.
        return next((m for m in self.metrics if parse_metric(m).family.main_by_default), self.metrics[0])


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
        # None for a config load_config validated whole. A config that failed validation, reduced to its parts
        # that are valid alone (rag_eval._data.config.partial), names here the sections it left out.
        self.left_out: frozenset[str] | None = None

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
            raise ConfigError(_no_folder_name(self.path, self.model.name))
        return self.resolve(os.path.join(os.pardir, "reports", folder))


def _no_folder_name(path: Path, name: str | None) -> str:
    """The problem of a config whose ``name`` (None: not set) names no default output folder."""
    if name:
        return (
            f"{path}: name: {name!r} has no letter or digit to name the default output folder reports/<name>; "
            "give 'output:' (or --output), or a name with letters or digits"
        )
    return (
        f"{path}: the config file's name {path.stem!r} has no letter or digit to name the default "
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
    raw = read_config(path)
    data = raw if output is None else {**raw, "output": _relative_to_config(output, path)}
    model = _validated(path, data, expanded=data.get("sweep") is None)
    expansion = None
    if model.sweep is not None:
        expansion = expand_sweep(model, data, path)
        model = _validated(path, expansion.data, expanded=True)  # checked as if written by hand
    typed = None if output is None else Path(os.path.normpath(Path(output).expanduser()))
    config = LoadedConfig(path, raw, model, typed)
    if expansion is not None:
        config.variants, config.sweep_summary = expansion.variants, expansion.summary
        config.variant_templates = expansion.templates
    return config


class QuerySetGiven(ConfigError):
    """A query set was given where a run config belongs (``rag-eval validate`` then checks it as a query set)."""


def read_config(path: Path) -> dict[str, Any]:
    """The run config at ``path`` as written: YAML read purely, within the size limit, a mapping; else ConfigError."""
    raw = load_yaml(path, "YAML run config", MAX_CONFIG_BYTES, ConfigError)
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a run config is a mapping with keys dataset, retrievers, metrics, ...")
    found = [key for key in ("queries", "corpus", "documents") if key in raw]
    if found and "retrievers" not in raw:
        # A query set given where the config belongs: said once, not as six unknown and missing keys.
        raise QuerySetGiven(
            f"{path}: this is a query set (it has {found[0]}), not a run config; a run config names it under "
            "`dataset: {path: ...}` beside retrievers and metrics (configs/ocean_facts.yaml is one)"
        )
    return raw


def _validated(path: Path, data: dict[str, Any], *, expanded: bool) -> RunConfig:
    """``data`` as a RunConfig; else one ConfigError listing every problem found.

    Those are the sections' own problems, the problems across sections (which pydantic would
    check only once every section is valid: consistency.py) and a default output folder that
    cannot be named (see :func:`folder_name`), so that one ``rag-eval validate`` lists them all.
    """
    model = None
    problems: list[str] = []
    try:
        model = RunConfig.model_validate(data, context={_ACROSS_APART: True, _UNEXPANDED: not expanded})
    except ValidationError as error:
        problems = validation_problems(path, error, data, RunConfig)
    across = cross_section_problems(data, expanded=expanded)
    if across:
        problems += validation_problems(path, several(across, data), data, RunConfig)
    folder = _folder_problem(path, data)
    if folder:
        problems.append(folder)
    if model is None or problems:
        raise ConfigError(summarise(problems), problems=problems)
    return model


def _folder_problem(path: Path, data: dict[str, Any]) -> str | None:
    """The problem of a config without ``output`` whose name names no default output folder.

    Read from the config as written, so that it is said beside any other problem; None when
    ``output`` is given or ``name`` is wrong itself (its own problem is said).
    """
    if data.get("output") not in (None, ""):
        return None  # a folder is given (or `output` is wrong, and says so itself)
    name = data.get("name")
    if name is not None and (not isinstance(name, str) or name_problem(name)):
        return None
    return None if folder_name(name or path.stem) else _no_folder_name(path, name)


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
