"""Shared fixtures: where the shared IR collections live, skipping cleanly without them."""

from __future__ import annotations

import importlib.util
import itertools
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_eval._commands.process_end import skip_final_collections
from rag_eval._scoring.results import Results

REPO = Path(__file__).resolve().parents[1]
# `python -m pytest` puts the working folder first on sys.path, where the repository's data folder `datasets/`
# becomes an importable namespace package named `datasets`: sentence-transformers then imports it as Hugging
# Face's datasets, and lancedb, seeing it loaded, fails on it. Tests import nothing from the repository's root.
sys.path[:] = [entry for entry in sys.path if entry not in ("", ".") and Path(entry or ".").resolve() != REPO]
# Bytecode is written even where PYTHONDONTWRITEBYTECODE is set (container images set it): without it
# each of the suite's ~100 `python -m rag_eval` children compiles rag_eval again, and pytest rewrites
# every test module on every run; together about 30 s of a 5-minute serial run on 2 cores. The .pyc
# files go to the usual __pycache__ folders beside the sources (ignored by git); installed packages
# already have theirs.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def _pin_xdist_worker() -> None:
    """Under pytest-xdist (``-n``), worker N runs on CPU N of this process's CPUs (modulo their number).

    Each worker's encoders, ONNX sessions and FAISS otherwise start one thread per CPU, as do the
    processes they start: on 2 cores, two workers ran four busy threads (back to back on 2 idle
    cores: 254 s unpinned, 236 s pinned). The worker's children (a run's subprocess, the Ray cluster) inherit its CPU,
    and rag_eval sizes its threads from it (rag_eval._models.cpus.available_cpus).
    """
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw") or not hasattr(os, "sched_setaffinity"):
        return
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) > 1:
        os.sched_setaffinity(0, {cpus[int(worker[2:]) % len(cpus)]})


_pin_xdist_worker()


def skip_module_without(module: str, reason: str) -> None:
    """Skip the calling test module when ``module`` is not installed, without importing it.

    Every worker collects every module: a heavy client (Ray, a database's) imported at the top of a
    module cost 0.4-1 s in each worker, also in the one that never runs its tests. Such a module
    calls this at its top and imports the client in its tests or fixtures.
    """
    if importlib.util.find_spec(module) is None:
        caller = sys._getframe(1).f_globals.get("__file__", "")  # pytest would name this file, not the module
        pytest.skip(f"{Path(caller).name}: {reason}", allow_module_level=True)


SHARED_DATASETS = Path(os.environ.get("RAG_EVAL_SHARED_DATASETS", REPO.parent / "shared" / "datasets"))


@pytest.fixture(scope="module", autouse=True)
def _module_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Never the user's cache, nor another module's: module-scoped fixtures run before the per-test
    fixture below, and must not reuse rankings (or embeddings) stored by other runs."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAG_EVAL_CACHE_DIR", str(tmp_path_factory.mktemp("module-cache")))
        yield


@pytest.fixture(scope="session")
def _test_caches(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where each test's cache folder goes: a new name for every test (see below)."""
    base = tmp_path_factory.mktemp("test-caches")
    return (base / f"test-{n}" for n in itertools.count())


@pytest.fixture(autouse=True)
def _own_cache_dir(_test_caches: Iterator[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with an empty default cache: a ranking stored by one test must not be reused by another.

    The folder is named, not made: whatever writes to it creates it, as on a user's first run.
    (tmp_path_factory.mktemp lists its parent folder to number each new one, which over the
    suite's 2,000 tests cost 3.6 s.)
    """
    monkeypatch.setenv("RAG_EVAL_CACHE_DIR", str(next(_test_caches)))


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """One local Ray cluster (2 CPUs) for every test that needs one, started at the first such test.

    Starting a cluster costs 5-8 s on 2 cores and shutting it down 1-2 s; each Ray test module,
    and each run with ``address: local``, used to pay that on its own. It is started as a run
    with ``execution: {engine: ray, address: local}`` starts one (so that call is still tested
    against real Ray), and shut down as that run would; a run finds it running, joins it and
    leaves it running. Yields the ``ray`` module.
    """
    ray = pytest.importorskip("ray", reason="the Ray engine needs the ray extra (pip install '.[ray]')")
    data = pytest.importorskip("ray.data", reason="the Ray engine needs the ray extra (pip install '.[ray]')")
    from rag_eval._data.config.execution import ExecutionSpec
    from rag_eval._execution.ray_cluster import connect

    # Workers inherit the environment the cluster starts with, for the whole session: give them a
    # cache of their own, never the user's (a session fixture is set up before the cache fixtures above).
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAG_EVAL_CACHE_DIR", str(tmp_path_factory.mktemp("ray-workers-cache")))
        started = connect(ExecutionSpec(engine="ray", address="local"))
    assert started, "Ray was running already: a test started it and did not shut it down"
    data.DataContext.get_current().enable_progress_bars = False
    yield ray
    ray.shutdown()


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the xdist_group marks added here
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests go in groups: the Ray tests first, as one group, then every module's tests, the largest first.

    Once started, the shared cluster runs until its last test (below); several other tests check that a
    run refused by its config never started Ray, which they can only see while Ray is not running (they
    carry the ``ray_state`` mark): those run before the cluster's tests, in the group "ray". Under
    pytest-xdist (``-n``, with ``--dist loadgroup`` from pyproject.toml) a group goes to one worker:
    a second cluster on 2 cores would only slow both, and the other worker never sees Ray. Every other
    test goes with the rest of its module: its module-scoped fixtures and imports are paid once.

    Groups are handed to the workers in this order (pyproject.toml turns off xdist's own reordering, by
    number of tests, which the Ray group's ~20 long tests lost to modules of a hundred quick ones): the
    Ray group, the longest, first; then the others by number of tests, the largest first, so that small
    ones fill the end. Handed out among the last, the Ray group (about 90 s of 175 on 2 cores) kept one
    worker busy 6-10 s after the other had finished; now both finish within about a second.
    """
    group_of: dict[str, str] = {}
    sizes: dict[str, int] = {}
    for item in items:
        if "ray_cluster" in getattr(item, "fixturenames", ()) or item.get_closest_marker("ray_state"):
            item.add_marker(pytest.mark.xdist_group("ray"))
        elif item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
        name = group_of[item.nodeid] = _group(item)
        sizes[name] = sizes.get(name, 0) + 1
    seen = {name: position for position, name in enumerate(sizes)}  # ties keep the order of the files

    def position(item: pytest.Item) -> tuple[bool, int, int, bool]:
        name = group_of[item.nodeid]
        uses_cluster = "ray_cluster" in getattr(item, "fixturenames", ())  # after the group's ray_state tests
        return name != "ray", -sizes[name], seen[name], uses_cluster

    items.sort(key=position)


def _group(item: pytest.Item) -> str:
    """The name of the xdist group a test is in (every test has one after the hook above)."""
    mark = item.get_closest_marker("xdist_group")
    assert mark is not None
    return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Ray is shut down after the last test on the shared cluster, not when the session ends.

    Under -n the worker of the group "ray" goes on with other modules after it: kept to the end,
    the idle cluster would cost that worker's core about 0.06 s of CPU a second meanwhile, and its
    shutdown (about 1.6 s) would come last. The session fixture's own ``ray.shutdown()`` then finds
    nothing to stop.
    """
    uses = "ray_cluster" in getattr(item, "fixturenames", ())
    if uses and (nextitem is None or "ray_cluster" not in getattr(nextitem, "fixturenames", ())):
        ray = sys.modules.get("ray")
        if ray is not None and ray.is_initialized():
            ray.shutdown()


def pytest_unconfigure(config: pytest.Config) -> None:
    """A pytest process ends as ``rag-eval`` does: its objects left out of the teardown's collections.

    With torch loaded, the interpreter's teardown took about 1.2 s collecting garbage over every
    object still alive; under -n the suite waits for each worker to end.
    """
    skip_final_collections()


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
