"""Shared fixtures: where the shared IR collections live, skipping cleanly without them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_eval._scoring.results import Results

REPO = Path(__file__).resolve().parents[1]
SHARED_DATASETS = Path(os.environ.get("RAG_EVAL_SHARED_DATASETS", REPO.parent / "shared" / "datasets"))


@pytest.fixture(scope="module", autouse=True)
def _module_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Never the user's cache, nor another module's: module-scoped fixtures run before the per-test
    fixture below, and must not reuse rankings (or embeddings) stored by other runs."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAG_EVAL_CACHE_DIR", str(tmp_path_factory.mktemp("module-cache")))
        yield


@pytest.fixture(autouse=True)
def _own_cache_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with an empty default cache: a ranking stored by one test must not be reused by another."""
    monkeypatch.setenv("RAG_EVAL_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


def shared_dataset(name: str) -> Path:
    """Path of ../shared/datasets/<name>, or skip the test saying why."""
    path = SHARED_DATASETS / name
    if not path.is_dir():
        pytest.skip(f"shared dataset {name!r} not found at {path} (set RAG_EVAL_SHARED_DATASETS); CI has it")
    return path


@pytest.fixture
def trec_eval_test() -> Path:
    return shared_dataset("trec_eval_test")


# Hypothesis: in CI (CI=true) every run draws the same examples (a red build is reproducible
# from its log) and a failing example is printed with the blob to replay it; locally, new
# examples are explored each run.
from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, print_blob=True, deadline=None)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def results_from_columns(values: dict, qids) -> Results:
    """A hand-made Results: ``{metric: per-query values}`` over ``qids`` (NaN = left out), aggregate = nan-mean."""
    import numpy as np

    from rag_eval._scoring.metrics.measures import parse_metrics

    arrays = {name: np.array(column, dtype=np.float64) for name, column in values.items()}
    return Results(
        metrics=parse_metrics(list(values)),
        query_ids=tuple(qids),
        values=arrays,
        aggregate={name: float(np.nanmean(column)) for name, column in arrays.items()},
        options={},
    )
