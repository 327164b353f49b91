"""The CPUs this process may use, and the most threads rag_eval starts (encoding, FAISS).

A container limited to 1.5 CPUs on a 64-core host must not start 64 threads: the count is the
process's affinity mask, capped by its cgroup v2 CPU quota. A thread count is bounded too:
``threads: 100000`` made OpenMP (FAISS) and torch segfault (exit 139) instead of saying so.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

# The most threads a config may ask for: more CPUs than any one machine rag_eval runs on has
# (the largest two-socket servers have 768 hardware threads); FAISS and torch crash at 100,000.
MAX_THREADS = 1024


def available_cpus() -> int:
    """CPUs this process may run on: its affinity mask, capped by a cgroup v2 CPU quota when one is set."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS / Windows have no affinity call
        count = os.cpu_count() or 1
    try:  # a container limited to 1.5 CPUs on a 64-core host must not start 64 threads
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            count = min(count, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return max(1, count)


def check_threads(threads: int | None) -> int | None:
    """``threads`` when it is at most :data:`MAX_THREADS`; a ValueError of one line (with the fix) otherwise.

    The bound does not depend on the machine, so a config valid on a workstation stays valid in CI;
    the message names this machine's CPUs, past which threads only slow down.
    """
    if threads is not None and threads > MAX_THREADS:
        cpus = available_cpus()
        raise ValueError(
            f"at most {MAX_THREADS:,} threads (FAISS and torch crash at 100,000); past the CPUs more threads only "
            f"slow down (this machine has {cpus}): use at most {cpus}, or remove threads (default: every CPU)"
        )
    return threads
