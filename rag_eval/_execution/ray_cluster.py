"""The Ray cluster a run uses: joined or started, its actors planned, its workers' errors said as ours.

Ray is imported inside the functions.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from rag_eval._core.errors import RagEvalError, RetrieverError
from rag_eval._core.messages import error_line
from rag_eval._data.config.execution import ExecutionSpec


def connect(spec: ExecutionSpec) -> bool:
    """Start or join the Ray cluster ``spec.address`` names, unless Ray is running here already; True if started now."""
    import ray

    if ray.is_initialized():
        return False
    try:
        # "local" starts a new local cluster even when RAY_ADDRESS names another one.
        ray.init(address=spec.address, include_dashboard=False, logging_level=logging.WARNING)
    except (ConnectionError, RuntimeError, ValueError) as failure:
        hint = (
            "start one with `ray start --head`, or use address: local"
            if spec.address == "auto"
            else ("check the address (ray://<head>:10001 for a remote cluster, <head>:6379 on a cluster node)")
        )
        raise RetrieverError(
            f"execution.address {spec.address!r}: cannot reach a Ray cluster ({error_line(failure)}); {hint}"
        ) from None
    return True


@contextmanager
def ray_session(spec: ExecutionSpec) -> Iterator[None]:
    """Ray running for the duration of the block; shut down afterwards only if it was started here."""
    import ray

    started = connect(spec)
    try:
        yield
    finally:
        if started:
            ray.shutdown()


def actor_plan(spec: ExecutionSpec, resources: Mapping[str, float]) -> tuple[int, float]:
    """``(actors, GPUs per actor)`` for the cluster's ``resources`` (``ray.cluster_resources()``)."""
    gpus = float(resources.get("GPU", 0.0))
    cpus = float(resources.get("CPU", 1.0))
    per_actor = spec.num_gpus_per_actor if spec.num_gpus_per_actor is not None else (1.0 if gpus >= 1 else 0.0)
    if per_actor > gpus:
        raise RetrieverError(
            f"execution.num_gpus_per_actor is {per_actor:g} but the Ray cluster has {gpus:g} GPUs; "
            "set it to 0 (CPU actors) or add GPU nodes"
        )
    if spec.actors is not None:
        actors = spec.actors
    elif per_actor > 0:
        actors = max(1, int(gpus // per_actor))
    else:  # one CPU is left for the tasks that read the corpus
        actors = max(1, int((cpus - 1) // spec.num_cpus_per_actor))
    return actors, per_actor


@contextmanager
def user_errors() -> Iterator[None]:
    """Re-raise a RagEvalError raised on a worker as itself (one line for the CLI), not wrapped in Ray's errors.

    Ray wraps a task's exception in a RayTaskError that is also an instance of the original
    class, with the worker's traceback in its message: unwrap it rather than pass it on.
    """
    try:
        yield
    except Exception as failure:
        cause = _rag_eval_cause(failure)
        if cause is None or cause is failure:
            raise
        raise type(cause)(str(cause)) from None


def _rag_eval_cause(failure: BaseException) -> RagEvalError | None:
    """The original RagEvalError behind ``failure`` (Ray's ``cause``, then ``__cause__`` / ``__context__``)."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [failure]
    while todo:
        current = todo.pop(0)
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        wrapped = getattr(current, "cause", None)
        if isinstance(current, RagEvalError) and not isinstance(wrapped, BaseException):
            return current  # not Ray's wrapper (which is also an instance of the class it wraps)
        todo.extend([wrapped if isinstance(wrapped, BaseException) else None, current.__cause__, current.__context__])
    return None
