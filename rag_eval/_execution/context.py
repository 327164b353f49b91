"""The execution engine of the run in progress, for the retrievers that can use it (the dense retriever).

The runner opens :func:`executing` with the config's ``execution:`` section for the whole run;
a retriever asks :func:`ray_spec` whether to encode and search on Ray. The cluster is joined
(or a local one started) the first time a retriever asks, so a run whose retrievers never use
it never starts Ray, and it is shut down at the end of the run only if the run started it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from rag_eval._data.config.execution import ExecutionSpec
from rag_eval._execution.ray_cluster import connect


@dataclass
class _Session:
    spec: ExecutionSpec
    connected: bool = False
    started_here: bool = False


_CURRENT: ContextVar[_Session | None] = ContextVar("rag_eval_execution", default=None)


@contextmanager
def executing(spec: ExecutionSpec) -> Iterator[None]:
    """Make ``spec`` the execution engine of the retrievers run inside this block."""
    session = _Session(spec)
    token = _CURRENT.set(session)
    try:
        yield
    finally:
        _CURRENT.reset(token)
        if session.started_here:
            import ray

            ray.shutdown()


def engine() -> str:
    """The engine of the run in progress, without connecting to anything: ``local`` or ``ray``."""
    session = _CURRENT.get()
    return "local" if session is None else session.spec.engine


def ray_spec() -> ExecutionSpec | None:
    """The run's spec when it runs on Ray (connecting on the first call), else None (local execution)."""
    session = _CURRENT.get()
    if session is None or session.spec.engine != "ray":
        return None
    if not session.connected:
        session.started_here = connect(session.spec)
        session.connected = True
    return session.spec
