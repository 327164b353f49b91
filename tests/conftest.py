"""Shared fixtures: where the shared IR collections live, skipping cleanly without them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATASETS = Path(os.environ.get("RAG_EVAL_SHARED_DATASETS", REPO.parent / "shared" / "datasets"))


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
