"""rag_eval's outputs in a folder without a manifest, recognised by their first bytes.

Such a folder was written by rag_eval <= 0.1 (before output folders had a manifest), or lost its
``.rag_eval.json`` on the way (a CI artifact upload skips hidden files), or is the user's. A file a
new run would replace is replaced only when it is recognisably rag_eval's output: report.md whose
third line is the generated ``## 📚 What was evaluated``, comparison.md starting ``# Regression
check: ✅ PASS`` (or ``❌ FAIL``), <label>.json starting with ``"schema_version"`` and ``"kind":
"rag_eval.results"``, <label>.run whose first line is a TREC run line tagged <label> (or is empty)
beside such a <label>.json, report.html carrying ``<meta name="generator" content="rag_eval">``;
per-query.csv starting ``variant,qid,`` and plot-*.svg holding the plots' ``id="plot-title"``
only beside such a report.md or report.html (a CSV or an SVG alone could be anybody's).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

_OLD_REPORT_HEADING = "## \N{BOOKS} What was evaluated"
_OLD_COMPARISON_TITLES = (
    "# Regression check: \N{WHITE HEAVY CHECK MARK} PASS",
    "# Regression check: \N{CROSS MARK} FAIL",
)
_OLD_RESULTS_START = re.compile(rb'\A\{\s*"schema_version":\s*\d+,\s*"kind":\s*"rag_eval\.results",')
_RECOGNISE_BYTES = 1 << 16
_PAGE_GENERATOR = b'<meta name="generator" content="rag_eval">'
_PER_QUERY_HEADER = "variant,qid,"
_PLOT_TITLE = b'id="plot-title"'


def written_by_old_rag_eval(folder: Path, name: str) -> bool:
    """Whether ``folder/name`` is, by its first bytes, one of rag_eval's outputs (for a folder without a manifest)."""
    head = _head(folder / name)
    if head is None:
        return False
    lines = head.decode("utf-8", "replace").split("\n", 3)
    if name == "report.md":
        return lines[0].startswith("# ") and len(lines) > 2 and lines[2] == _OLD_REPORT_HEADING
    if name == "comparison.md":
        return lines[0] in _OLD_COMPARISON_TITLES
    if name.endswith(".json"):
        return bool(_OLD_RESULTS_START.match(head))
    if name.endswith(".run"):
        label = name[: -len(".run")]
        results = _head(folder / f"{label}.json")
        fields = lines[0].split()
        tagged = not head or (len(fields) == 6 and fields[1] == "Q0" and fields[5] == label)
        # A run file alone could be the user's own run of the same name: only its results file vouches for it.
        return tagged and results is not None and bool(_OLD_RESULTS_START.match(results))
    if name == "report.html":
        return head.startswith(b"<!DOCTYPE html>") and _PAGE_GENERATOR in head[:4096]
    if name == "per-query.csv":
        return lines[0].startswith(_PER_QUERY_HEADER) and _beside_a_report(folder)
    if name.startswith("plot-") and name.endswith(".svg"):
        return head.startswith(b"<svg") and _PLOT_TITLE in head[:4096] and _beside_a_report(folder)
    return False


def _beside_a_report(folder: Path) -> bool:
    """Whether ``folder`` holds a report.md or report.html recognisably rag_eval's: it vouches for the tables and plots."""
    return any(written_by_old_rag_eval(folder, report) for report in ("report.md", "report.html"))


def _head(path: Path) -> bytes | None:
    """The first bytes of a regular file (never following a link or blocking on a FIFO); None otherwise."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, _RECOGNISE_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
