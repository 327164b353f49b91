"""The peak memory of a ``rag-eval`` command, measured in the process that runs it.

``ru_maxrss`` of a child (``os.wait4``, ``RUSAGE_CHILDREN``) counts the memory the child had before
it exec'd Python, that is the test process's own size at the fork: late in a full test session the
test process holds gigabytes, and every child then looks as large. ``VmHWM`` in /proc/self/status is
the high-water mark of the running program alone, read here as the command exits.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import IO, Any

_WRAPPER = """
import atexit, runpy, sys
peak_file = sys.argv[1]
def _record_peak():
    with open('/proc/self/status') as status:
        for line in status:
            if line.startswith('VmHWM:'):
                with open(peak_file, 'w') as out:
                    out.write(line.split()[1])
atexit.register(_record_peak)
import os
_exit = os._exit
def _recording_exit(code):  # `rag-eval evaluate` leaves with os._exit (it skips freeing its arrays): no atexit
    _record_peak()
    _exit(code)
os._exit = _recording_exit
sys.argv = ['rag-eval'] + sys.argv[2:]
runpy.run_module('rag_eval', run_name='__main__', alter_sys=True)
"""


def run_with_peak(args: list[str], folder: Path, stdout: IO[Any] | int, stderr: IO[Any] | int) -> tuple[int, float]:
    """(exit code, peak resident memory in MiB) of ``rag-eval ARGS`` run in a process of its own."""
    peak_file = folder / "peak-kib.txt"
    code = subprocess.run([sys.executable, "-c", _WRAPPER, str(peak_file), *args], stdout=stdout, stderr=stderr).returncode
    return code, int(peak_file.read_text()) / 1024
