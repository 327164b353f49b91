"""What a run of a config will do, known before anything runs: its output set, named once.

The names of the files a run writes into its output folder live here and nowhere else:
``rag-eval validate`` checks them, ``rag-eval run`` checks the output folder for them
before any retrieval, and the writer (rag_eval/_commands/outputs.py) takes every name
it writes from the same :class:`RunPlan`. A run may write fewer files than planned (a
plot with nothing to draw, no comparison), never one the plan does not name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rag_eval._core.output_manifest import MANIFEST
from rag_eval._data.config.schema import LoadedConfig
from rag_eval._data.datasets import Dataset, load_dataset
from rag_eval._run.inputs import has_documents

REPORT = "report.md"
# The same run as one self-contained page to explore: every query sortable and filterable, its rankings
# with their grades and derivations (rag_eval._report.html; docs/report.md).
REPORT_HTML = "report.html"
COMPARISON = "comparison.md"
# Every retriever's per-query values, one row per (retriever, query), for pandas and spreadsheets.
PER_QUERY_CSV = "per-query.csv"
# Document datasets: the document grades as qrels. No label's files can take the name: labels give
# <label>.json, <label>.run and <label>.docs.trec only.
DOCUMENT_QRELS = "documents.qrels"


def results_name(label: str) -> str:
    """The results file of a retriever: ``<label>.json``."""
    return f"{label}.json"


def run_name(label: str) -> str:
    """The TREC run file of a retriever: ``<label>.run``."""
    return f"{label}.run"


def document_run_name(label: str) -> str:
    """The file of a retriever's MaxP document run: ``<label>.docs.trec``."""
    return f"{label}.docs.trec"


@dataclass(frozen=True)
class RunPlan:
    """A config's run before it runs: whether it compares with a baseline and reads documents, and so its outputs."""

    config: LoadedConfig
    comparison: bool  # comparison.md is written (a regression section, run by `rag-eval run`)
    documents: bool  # the dataset holds documents: document runs and documents.qrels are written

    @property
    def plots(self) -> list[str]:
        """The plot files the run may draw (none when the config turns plots off)."""
        if not self.config.model.report.plots:
            return []
        return planned_plot_names(len(self.config.model.retrievers), self.config.variants)

    @property
    def outputs(self) -> list[str]:
        """The name of every file the run may write into its output folder, the manifest included."""
        labels = [spec.label for spec in self.config.model.retrievers]
        names = [REPORT, REPORT_HTML, MANIFEST, PER_QUERY_CSV, *self.plots]
        for label in labels:
            names += [results_name(label), run_name(label)]
        if self.documents:
            names += [document_run_name(label) for label in labels] + [DOCUMENT_QRELS]
        if self.comparison:
            names.append(COMPARISON)
        return names


def plan_run(config: LoadedConfig, *, comparison: bool | None = None, documents: bool | None = None) -> RunPlan:
    """The plan of a run of ``config``.

    ``comparison``: whether comparison.md is written; None: when the config has a regression section.
    ``documents``: whether the dataset holds documents; None: told from the config without loading the
    dataset (a chunking section, a documents dataset format or a query set with ``documents:``).
    """
    return RunPlan(
        config,
        config.model.regression is not None if comparison is None else comparison,
        has_documents(config) if documents is None else documents,
    )


def load_config_dataset(config: LoadedConfig) -> Dataset:
    """The dataset a config names, with paths resolved against the config.

    On the Ray engine a JSON Lines corpus stays on disk (rag_eval._data.datasets.file_corpus): the
    workers read it themselves, and the driver need not hold it.
    """
    spec = config.model.dataset.model_dump(exclude_none=True)
    return load_dataset(spec, base=config.base, stream_corpus=config.model.execution.engine == "ray")


# The plots a run may draw, named before anything runs: the run's plan (rag_eval/_run/plan.py) counts them
# in its output set, and the report (rag_eval/_report/plots.py) draws into these names.
MEANS, DELTAS, AT_K = "plot-means.svg", "plot-deltas.svg", "plot-at-k.svg"


def planned_plot_names(retrievers: int, variants: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The plot files a run may write, known before it runs (the output folder is checked for them first)."""
    names = [MEANS, AT_K] + ([DELTAS] if retrievers > 1 else [])
    params: list[str] = []
    for varied in variants.values():
        params.extend(p for p in varied if p not in params)
    return names + [f"plot-sweep-{plot_file_part(param)}.svg" for param in params]


def plot_file_part(param: str) -> str:
    """A parameter name as part of a file name: letters, digits, ``. _ -`` only."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", param).strip("-") or "param"
