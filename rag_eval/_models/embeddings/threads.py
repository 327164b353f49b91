"""How many CPU threads encoding uses, and how many batches run at once.

A container limited to 1.5 CPUs on a 64-core host must not start 64 threads: the count is the
process's affinity mask, capped by its cgroup v2 CPU quota.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from rag_eval._models.embeddings.options import EncoderOptions


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


def thread_plan(options: EncoderOptions) -> tuple[int, int]:
    """``(threads, streams)``: total threads and concurrent batches (each gets threads // streams)."""
    threads = options.threads or available_cpus()
    streams = options.streams or min(threads, 8)
    return threads, max(1, min(streams, threads))
