"""Allocator tuning for ``rag-eval evaluate`` (called by that command only, never on import).

numpy allocates and frees a temporary array for nearly every operation. With
glibc's defaults, blocks from about 128 KiB up are mapped fresh from the kernel
and unmapped when freed (or trimmed off the heap), so the next operation touches
new pages and takes a page fault on each one; the two threads of the TREC reader
then also queue on the kernel's lock of the process' memory map. Asking malloc to
keep up to 64 MiB of freed memory for reuse removes most of that: reading the
benchmark's 35 MiB run file went from about 53,000 page faults to 5,500 and from
0.24 s to 0.17 s (benchmarks/README.md).
"""

from __future__ import annotations

import ctypes
import sys

_M_TRIM_THRESHOLD = -1  # glibc mallopt parameters (malloc.h)
_M_MMAP_THRESHOLD = -3
_KEEP_FREED_BYTES = 64 << 20  # free heap memory kept before it is given back to the kernel
_MAP_FRESH_FROM_BYTES = 32 << 20  # larger blocks are still mapped (and unmapped) on their own


def keep_freed_memory() -> bool:
    """Tell glibc's malloc to reuse freed memory; False where that is not possible (not glibc)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(_M_TRIM_THRESHOLD, _KEEP_FREED_BYTES)) and bool(
            libc.mallopt(_M_MMAP_THRESHOLD, _MAP_FRESH_FROM_BYTES)
        )
    except (OSError, AttributeError):  # musl or another libc: keep its defaults
        return False
