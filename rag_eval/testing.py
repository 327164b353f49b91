"""Helpers for projects that keep retrieval-quality tests in their own pytest suite.

    from rag_eval.testing import assert_no_regression

    def test_search_quality():
        assert_no_regression("configs/search.yaml", "baselines/bm25.json",
                             gates={"ndcg@10": {"max_drop": 0.01}})
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rag_eval._commands.outputs import write_outputs as write
from rag_eval._compare.regression import Verdict, verdict_for_run
from rag_eval._core.errors import ConfigError
from rag_eval._data.config.schema import load_config
from rag_eval._run.execute import execute


def assert_no_regression(
    config_path: str | Path,
    baseline_path: str | Path | None = None,
    *,
    gates: Mapping[str, Mapping[str, Any]] | None = None,
    retriever: str | None = None,
    write_outputs: bool = False,
) -> Verdict:
    """Run ``config_path`` and fail (AssertionError) if a gate fails against the baseline.

    ``baseline_path`` and ``gates`` default to the config's ``regression`` section;
    ``retriever`` picks the retriever to check when the config has several.
    Returns the verdict when every gate passes. ``write_outputs``: also write the run's outputs
    (report, results and run files, as ``rag-eval run`` does, without comparison.md).
    """
    config = load_config(config_path)
    section = config.model.regression
    if baseline_path is None and section is None:
        raise ConfigError(f"{config.path}: give baseline_path, or a regression section in the config")
    data = section.model_dump() if section is not None else {}
    if baseline_path is not None:
        data["baseline"] = str(Path(baseline_path).resolve())
    if gates is not None:
        data["gates"] = dict(gates)
    if retriever is not None:
        data["retriever"] = retriever
    if not data.get("gates"):
        raise ConfigError(f"{config.path}: no gates: pass gates={{'ndcg@10': {{'max_drop': 0.01}}}}")
    try:
        # The whole config is validated again, so its own checks (gates among the metrics,
        # the retriever among the labels, limits) hold for the arguments too.
        config.model = type(config.model).model_validate({**config.model.model_dump(), "regression": data})
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in item['loc']) or 'regression'}: {item['msg'].removeprefix('Value error, ')}"
            for item in error.errors()
        )
        raise ConfigError(f"{config.path}: assert_no_regression: {problems}") from None
    run = execute(config, progress=False)
    if write_outputs:
        write(run)
    verdict = verdict_for_run(run)
    if not verdict.passed:
        lines = "\n".join(f"  - {line}" for line in verdict.failure_lines())
        raise AssertionError(
            f"retrieval regression: {verdict.candidate.label} vs baseline {verdict.baseline.path}: "
            f"{len(verdict.failed)} of {len(verdict.gates)} gates failed\n{lines}"
        )
    return verdict
