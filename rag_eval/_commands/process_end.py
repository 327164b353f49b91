"""How the ``rag-eval`` process ends: threads a plug-in leaves running do not keep it alive.

Threads that are not daemons and outlive the command would keep the process alive after its
outputs are written, and a CI job waiting on it would hang: they get :data:`LINGER_S` seconds,
then the process exits with the command's code all the same, saying which threads it left.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import time

LINGER_S = 3


# The name every worker thread of rag_eval's own starts with (ThreadPoolExecutor's thread_name_prefix).
OWN_THREAD_PREFIX = "rag-eval-"


def lingering_threads() -> list[threading.Thread]:
    """Threads that are not daemons, other than this one, still running: the interpreter waits for them at exit."""
    main_thread = threading.main_thread()
    return [t for t in threading.enumerate() if t is not main_thread and not t.daemon and t.is_alive()]


def end_despite_threads(code: int) -> None:
    """A daemon: once :data:`LINGER_S` seconds have passed, end the process with ``code`` if threads still hold it.

    The interpreter's exit waits for threads that are not daemons before anything else; while it
    waits, this thread runs. It ends the process with ``os._exit`` (no exit handlers: the outputs
    are written and flushed already).
    """
    time.sleep(LINGER_S)
    left = lingering_threads()
    if not left:
        return
    names = ", ".join(repr(thread.name) for thread in left)
    # rag_eval names its own workers "rag-eval-...": one still running waits on a request (a judge's, a service's).
    owner = "rag_eval's, waiting on a request" if all(t.name.startswith(OWN_THREAD_PREFIX) for t in left) else "a plug-in's?"
    which = f"thread {names} ({owner}) is" if len(left) == 1 else f"threads {names} ({owner}) are"
    them = "it" if len(left) == 1 else "them"
    try:
        sys.stderr.write(f"rag-eval: warning: {which} still running {LINGER_S} s after rag-eval finished; exiting without waiting for {them}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)


def skip_final_collections() -> None:
    """Leave every object alive now out of the garbage collections of the interpreter's teardown.

    Once a command is done, the teardown collects garbage again and again over every object still
    alive: with torch, transformers and sentence-transformers loaded (any run of a model on the
    torch backend), that took about 1.2 s of the process's end, 0.17 s with the objects frozen
    (measured on this project's 2-core machine). Exit handlers still run (servers, encoding
    processes and Ray stopped, temporary folders removed) and objects are still released as the
    modules are cleared; only reference cycles among them are left to the operating system.
    """
    gc.freeze()


def discard_stdout() -> None:
    """Point stdout at /dev/null (the interpreter's last flush of an unwritable stdout must not report twice)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
