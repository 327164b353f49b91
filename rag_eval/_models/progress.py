"""Whether progress bars are shown in this run: rag_eval's own, and the libraries' it calls.

``rag-eval run --no-progress`` must silence every bar, not only the run's own: sentence-transformers
draws "Batches" (``show_progress_bar``), transformers "Loading weights" and huggingface_hub
"Fetching files" on stderr. The runner opens :func:`showing_progress` with the run's setting for
the whole run; a retriever asks :func:`progress_wanted` (its own ``show_progress`` and the run's)
and loads its model inside :func:`library_bars`. A context variable, like the execution engine's
(rag_eval._execution.context): two runs in one process (threads, tests) do not see each other's.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Callable, Iterator
from contextvars import ContextVar

# None: nobody said (each bar decides: a retriever's show_progress, tqdm's terminal check).
_SHOWN: ContextVar[bool | None] = ContextVar("rag_eval_progress", default=None)


@contextlib.contextmanager
def showing_progress(progress: bool | None) -> Iterator[None]:
    """Within the block, progress bars follow ``progress``: False none at all, True and None as each bar decides."""
    # Only the setting: the libraries' switches are turned where a model loads (library_bars), so a
    # run without a model never imports transformers for nothing.
    token = _SHOWN.set(progress)
    try:
        yield
    finally:
        _SHOWN.reset(token)


def progress_wanted(own: bool = True) -> bool:
    """Whether a bar asked for by ``own`` (a retriever's ``show_progress``) is shown: not when the run said no."""
    return bool(own) and _SHOWN.get() is not False


def tqdm_disable() -> bool | None:
    """tqdm's ``disable`` for rag_eval's own bars: True when the run said no, False when it said yes, else None
    (tqdm decides: bars on a terminal, none in a CI log)."""
    shown = _SHOWN.get()
    return None if shown is None else not shown


@contextlib.contextmanager
def library_bars(show: bool) -> Iterator[None]:
    """transformers' and huggingface_hub's progress bars off within the block unless ``show``; restored after.

    Both keep a process-wide switch, so it is set back to what it was when the block ends (a
    later run in the same process, or the user's own code, keeps its bars).
    """
    if show:
        yield
        return
    restore: list[Callable[[], object]] = []
    if importlib.util.find_spec("huggingface_hub") is not None:
        from huggingface_hub import utils as hub

        if not hub.are_progress_bars_disabled():
            hub.disable_progress_bars()
            restore.append(lambda: hub.enable_progress_bars())  # its optional argument names one library
    if importlib.util.find_spec("transformers") is not None:
        # transformers draws "Loading weights" through its own switch (it also turns huggingface_hub's off)
        from transformers.utils import logging as transformers_logging

        if transformers_logging.is_progress_bar_enabled():
            transformers_logging.disable_progress_bar()
            restore.append(transformers_logging.enable_progress_bar)
    try:
        yield
    finally:
        for undo in reversed(restore):
            undo()


class NoBar(contextlib.AbstractContextManager["NoBar"]):
    """What a disabled tqdm bar does, without importing tqdm (and asyncio with it: ~20 ms of a rerun).

    It counts (``n``) and shows nothing.
    """

    def __init__(self) -> None:
        self.n = 0

    def update(self, n: int = 1) -> None:
        """Count ``n`` more."""
        self.n += n

    def set_description(self, desc: str | None = None, refresh: bool = True) -> None:
        """Nothing to show."""

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        """Nothing to show."""

    def close(self) -> None:
        """Nothing to close."""

    def __exit__(self, *exc: object) -> None:
        return None
