"""How many CPU threads encoding uses, and how many batches run at once.

A container limited to 1.5 CPUs on a 64-core host must not start 64 threads: the count is the
process's affinity mask, capped by its cgroup v2 CPU quota.
"""

from __future__ import annotations

from rag_eval._models.cpus import available_cpus
from rag_eval._models.embeddings.options import EncoderOptions

__all__ = ["available_cpus", "thread_plan"]  # available_cpus lives in rag_eval._models.cpus


def thread_plan(options: EncoderOptions) -> tuple[int, int]:
    """``(threads, streams)``: total threads and concurrent batches (each gets threads // streams)."""
    threads = options.threads or available_cpus()
    streams = options.streams or min(threads, 8)
    return threads, max(1, min(streams, threads))
