"""The embedded PostgreSQL of ``adapter: pgvector`` with ``dsn: null``: pgserver's server, its data in the cache.

The pip package ``pgserver`` ships PostgreSQL with the pgvector extension; it runs one server per
data folder, reached through a Unix socket in that folder (nothing listens on a TCP port). Here:

- a folder is started once per process, however many retrievers use it, and stopped when the
  last of them calls :meth:`EmbeddedPostgres.stop` (counted here);
- between processes, pgserver keeps the ids of the processes using a folder's server in the folder
  (``.handle_pids.json``) and the last one stops it. A process killed before it could stop the
  server (SIGKILL) leaves its id there, and nobody would ever stop that server again: ids of
  processes that no longer run are removed before each start, so the next run adopts the server
  and stops it at its end;
- a start interrupted (Ctrl-C) after the server came up but before it was handed back stops it;
- as root, pgserver runs the server as an OS user ``pgserver`` and opens every folder above the
  data folder to other users (``chmod g+rx,o+rx`` up to ``/``): run from ``/root/.cache`` it would
  open ``/root``. So when a folder above the data folder is not open already, the data goes to a
  folder of its own under the system's temporary folder instead (named by a hash of the intended
  one, so reruns find it again), and no permission of the user's folders changes.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any

from rag_eval._core.errors import RetrieverError
from rag_eval._core.versions import install_extra

#: What to install when pgserver is missing.
INSTALL_HINT = install_extra("pgvector")
#: pgserver's list of the processes that use a data folder's server.
_HANDLES = ".handle_pids.json"

_LOCK = threading.Lock()
# data folder -> [server, retrievers of this process using it]
_RUNNING: dict[Path, list[Any]] = {}


class EmbeddedPostgres:
    """One use of the embedded server of a data folder: :meth:`start` gives its URI, :meth:`stop` releases it."""

    def __init__(self, data_dir: Path) -> None:
        self.intended_dir = Path(data_dir).expanduser().resolve()
        self.data_dir = _folder_pgserver_may_use(self.intended_dir)
        self._server: Any = None

    @property
    def started(self) -> bool:
        """Whether this handle holds the server (started and not stopped yet)."""
        return self._server is not None

    def start(self) -> str:
        """Start the server of the data folder (or join it when it runs); its connection URI. Safe to call twice."""
        with _LOCK:
            if self._server is None:
                entry = _RUNNING.get(self.data_dir)
                if entry is None:
                    entry = _RUNNING[self.data_dir] = [_start(self.data_dir), 0]
                entry[1] += 1
                self._server = entry[0]
            return str(self._server.get_uri())

    def stop(self) -> None:
        """Release the server; the last user of this process stops it (unless another process still uses it)."""
        with _LOCK:
            if self._server is None:
                return
            self._server = None
            entry = _RUNNING.get(self.data_dir)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] > 0:
                return
            del _RUNNING[self.data_dir]
        _stop(entry[0], self.data_dir)

    def describe(self) -> dict[str, Any]:
        """Where the server keeps its data, and its process id while it runs."""
        info: dict[str, Any] = {"data_dir": str(self.data_dir)}
        if self.data_dir != self.intended_dir:
            info["data_dir_instead_of"] = str(self.intended_dir)  # root: pgserver would have opened its parents
        if self._server is not None:
            try:
                info["pid"] = self._server.get_pid()
            except Exception:  # noqa: BLE001 (a description never fails a run)
                pass
        return info


# Group and others may read and traverse: what pgserver, run as root, would otherwise chmod each parent to.
_OPEN = stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH


def _folder_pgserver_may_use(data_dir: Path) -> Path:
    """``data_dir``, or as root (when a folder above it is closed to others) one under the temporary folder."""
    if not (hasattr(os, "geteuid") and os.geteuid() == 0):
        return data_dir
    closed = [p for p in data_dir.parents if p.exists() and (p.stat().st_mode & _OPEN) != _OPEN]
    if not closed:
        return data_dir
    name = hashlib.sha256(str(data_dir).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    home = Path(tempfile.gettempdir()).resolve() / f"rag_eval-pgvector-{name}"
    if home.is_symlink() or (home.exists() and home.stat().st_uid != 0):
        raise RetrieverError(
            f"pgvector: {str(home)!r} (where the embedded PostgreSQL keeps its data when run as root) belongs to "
            "another user or is a link; remove it, or set params.cache_dir to a folder whose parents others may read"
        )
    return home / "data"


def _pgserver() -> Any:
    try:
        with warnings.catch_warnings():
            # platformdirs warns at import that XDG_RUNTIME_DIR is unset (a container); pgserver copes.
            warnings.simplefilter("ignore")
            import pgserver
    except ImportError as error:
        raise RetrieverError(
            f"pgvector: params.dsn is null, so rag_eval starts its own PostgreSQL, which needs the pgserver "
            f"package ({error.name or 'pgserver'} is not installed); install it with {INSTALL_HINT}, or set "
            "params.dsn to your PostgreSQL server"
        ) from None
    return pgserver


def _start(data_dir: Path) -> Any:
    pgserver = _pgserver()
    try:
        data_dir.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise RetrieverError(
            f"pgvector: cannot create the embedded PostgreSQL's folder {str(data_dir.parent)!r}: "
            f"{error.strerror or error}; set params.cache_dir to a writable folder, or set params.dsn"
        ) from None
    _forget_dead_processes(pgserver, data_dir)
    was_running = _postmaster_running(pgserver, data_dir)
    # A server object of this folder left by pgserver in this process (another process still used it
    # when ours was stopped) holds no handle of ours any more: a fresh one registers this process again.
    pgserver.PostgresServer._instances.pop(data_dir, None)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pgserver.get_server(data_dir, cleanup_mode="stop")
    except BaseException as error:
        if not was_running:
            _force_stop(pgserver, data_dir)  # it may have come up before the failure (or Ctrl-C): not left running
        if not isinstance(error, Exception):
            raise
        raise RetrieverError(
            f"pgvector: the embedded PostgreSQL in {str(data_dir)!r} did not start ({_reason(error, data_dir)}); "
            "see its log file there, delete the folder to start afresh, or set params.dsn to a PostgreSQL server"
        ) from error


def _stop(server: Any, data_dir: Path) -> None:
    try:
        server.cleanup()  # pg_ctl stop -w, when no other process uses the server
    except Exception as error:  # noqa: BLE001 (stopping runs in close(): it must not hide the run's own error)
        warnings.warn(
            f"pgvector: the embedded PostgreSQL in {str(data_dir)!r} did not stop cleanly: {error}", stacklevel=2
        )


def _forget_dead_processes(pgserver: Any, data_dir: Path) -> None:
    """Remove ids of processes that no longer run from pgserver's list of the server's users (under its lock)."""
    path = data_dir / _HANDLES
    if not path.exists():
        return
    from pgserver.utils import process_is_running

    with pgserver.PostgresServer._lock:
        try:
            pids = json.loads(path.read_text())
        except (OSError, ValueError):
            pids = None
        if not isinstance(pids, list):
            path.unlink(missing_ok=True)  # unreadable: pgserver would fail on it; nobody can be counted anyway
            return
        alive = [pid for pid in pids if isinstance(pid, int) and process_is_running(pid)]
        if alive != pids:
            path.write_text(json.dumps(alive))


def _postmaster_running(pgserver: Any, data_dir: Path) -> bool:
    from pgserver.utils import PostmasterInfo

    try:
        info = PostmasterInfo.read_from_pgdata(data_dir)
    except Exception:  # noqa: BLE001 (a damaged postmaster.pid: no server to adopt)
        return False
    return bool(info is not None and info.is_running())


def _force_stop(pgserver: Any, data_dir: Path) -> None:
    if not _postmaster_running(pgserver, data_dir):
        return
    try:
        pgserver.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=data_dir, user=_system_user(pgserver), timeout=30)
    except Exception:  # noqa: BLE001 (best effort while another error is on its way)
        pass


def _system_user(pgserver: Any) -> str | None:
    # pgserver runs the server as user "pgserver" when this process is root (PostgreSQL refuses root).
    return "pgserver" if hasattr(os, "geteuid") and os.geteuid() == 0 else None


def _reason(error: BaseException, data_dir: Path) -> str:
    """The last line of the server's log when it has one, else the error itself: one line."""
    log = data_dir / "log"
    try:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        lines = []
    text = lines[-1] if lines else f"{type(error).__name__}: {error}"
    return " ".join(text.split())[:300]
