"""The Ray cluster a run uses: joined or started, its actors planned, its workers' errors said as ours.

Joining is quiet and fails fast. Ray's own logging would otherwise fill a run's terminal: its
Python logger's warnings, every worker's output relayed to the driver, and Ray Data's progress,
logged every 10 s where stderr is not a terminal (about 15 lines for a small run). Only errors
are shown; the complete logs stay in Ray's session folder
(``/tmp/ray/session_latest/logs``). An address where no Ray server answers would make
``ray.init`` retry for minutes, printing a C++ warning every few seconds: the address is probed
first (a TCP connection, and the HTTP/2 greeting every gRPC server, Ray's included, answers),
and a wrong one is said in one line within seconds.

Ray is imported inside the functions.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import socket
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from rag_eval._core.errors import RagEvalError, RetrieverError
from rag_eval._core.messages import error_line
from rag_eval._core.versions import install_extra
from rag_eval._data.config.execution import ExecutionSpec

# How long the probe waits for a connection and for the server's first frame.
PROBE_TIMEOUT_S = 5.0
# The HTTP/2 client preface and an empty SETTINGS frame; a gRPC server's first frame is a SETTINGS frame.
_HTTP2_GREETING = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
_SETTINGS_FRAME = 4


def ray_missing() -> str | None:
    """What is wrong when Ray (with Ray Data) is not installed here, else None; imports nothing.

    The one check of ``validate`` and of a run: a config with ``engine: ray`` is refused by both.
    """
    if importlib.util.find_spec("ray") is None or importlib.util.find_spec("ray.data") is None:
        return f"engine: ray needs Ray, which is not installed; {install_extra('ray')}, or use engine: local"
    return None


def connect(spec: ExecutionSpec) -> bool:
    """Start or join the Ray cluster ``spec.address`` names, unless Ray is running here already; True if started now.

    An address where no Ray server answers is refused within :data:`PROBE_TIMEOUT_S` seconds, in one line.
    """
    missing = ray_missing()
    if missing is not None:
        raise RetrieverError(f"execution.{missing}")
    import ray

    if ray.is_initialized():
        return False
    server = _server_address(spec.address)
    problem = probe(*server) if server is not None else None
    if problem is not None:
        raise RetrieverError(f"execution.address {spec.address!r}: cannot reach a Ray cluster ({problem}); {_hint(spec)}")
    try:
        # "local" starts a new local cluster even when RAY_ADDRESS names another one. Workers' output is not
        # relayed (their errors come back as exceptions), and the driver's Ray logger says errors only. The
        # C++ core's level (RAY_BACKEND_LOG_LEVEL) is left alone: setting it prints a line of its own, and
        # with the address probed first the core has little to say.
        ray.init(address=spec.address, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as failure:
        raise RetrieverError(
            f"execution.address {spec.address!r}: cannot reach a Ray cluster ({error_line(failure)}); {_hint(spec)}"
        ) from None
    return True


def _hint(spec: ExecutionSpec) -> str:
    if spec.address == "auto":
        return "start one with `ray start --head`, or use address: local"
    return "check the address (ray://<head>:10001 for a remote cluster, <head>:6379 on a cluster node)"


def _server_address(address: str) -> tuple[str, int] | None:
    """The host and port ``ray.init(address=...)`` will connect to; None when it starts a cluster or finds none.

    ``auto`` and ``host:port`` are resolved as Ray resolves them (RAY_ADDRESS, the running cluster's
    address file; ``localhost`` becomes this node's address); where that fails, ``ray.init`` says why
    at once, so nothing is probed.
    """
    if address == "local":
        return None
    if address.startswith("ray://"):
        target: str | None = address[len("ray://") :].split("/", 1)[0]
    else:
        try:
            from ray._private.services import canonicalize_bootstrap_address

            target = canonicalize_bootstrap_address(address)
        except Exception:  # noqa: BLE001 (Ray's own resolution failed: ray.init reports it in its words)
            return None
    if not target:
        return None
    host, _, port = target.rpartition(":")
    try:
        return host.strip("[]"), int(port)
    except ValueError:
        return None


def probe(host: str, port: int, timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """Why no Ray server answers at ``host:port`` (a few words), or None when a gRPC server does.

    Ray's servers (the GCS on a head node, the Ray Client server behind ``ray://``) speak gRPC over
    HTTP/2: sent the HTTP/2 greeting, they answer with a SETTINGS frame. Anything else (a web server,
    a closed port, a host that never answers) is not Ray. With ``RAY_USE_TLS`` set the server expects
    TLS first, so only the connection is checked.
    """
    where = f"{host}:{port}"
    try:
        with socket.create_connection((host, port), timeout=timeout) as connection:
            if os.environ.get("RAY_USE_TLS", "").lower() in ("1", "true"):
                return None
            connection.settimeout(timeout)
            connection.sendall(_HTTP2_GREETING)
            head = b""
            while len(head) < 9:  # a frame header: length (3), type (1), flags (1), stream (4)
                chunk = connection.recv(9 - len(head))
                if not chunk:
                    break
                head += chunk
    except TimeoutError:
        return f"nothing answered at {where} within {timeout:g} s"
    except OSError as error:
        return f"{where}: {error.strerror or error}"
    if len(head) == 9 and head[3] == _SETTINGS_FRAME:
        return None
    return f"{where} answered, but not as a Ray server does (gRPC)"


def quiet_ray_data() -> None:
    """Ray Data's messages on the terminal: warnings and errors only (its progress and notices go to its log file).

    Where stderr is not a terminal (CI, a pipe), Ray Data logs its progress every 10 seconds at
    INFO; its own log file in Ray's session folder keeps every line.
    """
    import ray.data  # noqa: F401 (configures the "ray.data" logger, which is then adjusted)

    for handler in logging.getLogger("ray.data").handlers:
        if getattr(handler, "name", None) == "console" and handler.level < logging.WARNING:
            handler.setLevel(logging.WARNING)


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
