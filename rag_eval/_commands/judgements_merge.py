"""``rag-eval judgements merge SHEET --into QUERY_SET [--resolve keep|replace]``: graded rows into a query set.

The work is rag_eval/_data/judging/merge_file.py. This command prints: on stderr every problem or
conflict that refuses the merge, one line each (the CLI then prints the summary and exits 2); on
stdout each resolved conflict (``kept: ...`` / ``replaced: ...``) and one summary line.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from rag_eval._data.judging.merge import MergeRefused
from rag_eval._data.judging.merge_file import Merged, merge_sheet


def main(args: argparse.Namespace, say: Callable[[str], None]) -> int:
    """Merge ``args.sheet`` into ``args.into``; 0 when merged (or nothing to merge), 2 when refused."""
    try:
        merged = merge_sheet(args.sheet, args.into, args.resolve)
    except MergeRefused as refused:
        if len(refused.problems) > 1 or str(refused) != refused.problems[0]:
            for problem in refused.problems:
                print(problem, file=sys.stderr)
        raise
    for line in merged.counts.resolved:
        say(line)
    say(summary_line(merged, args.sheet, args.into))
    return 0


def summary_line(merged: Merged, sheet: str, query_set: str) -> str:
    """``merged pool.csv into qs.yaml: 3 judgements added, 1 evidence span added, ...; 2 ungraded rows skipped``."""
    counts = merged.counts
    parts = [
        _count(counts.judgements, "judgement", "added"), _count(counts.evidence, "evidence span", "added"),
        _count(counts.replaced, "grade", "replaced"), _count(counts.removed, "contradicted grade", "removed"),
        _count(counts.kept, "conflict", "kept as the query set has it"),
        _count(counts.unchanged, "row", "already in the query set"),
    ]
    done = ", ".join(part for part in parts if part)
    skipped = f"; {_count(counts.ungraded, 'ungraded row', 'skipped')}" if counts.ungraded else ""
    if not merged.written:
        return f"nothing to merge from {sheet} into {query_set} ({done or 'no graded row'}){skipped}; the file is unchanged"
    note = ""
    if merged.reformatted:
        note = (f"; note: the YAML writer also rewrote {merged.reformatted} other line{'s' if merged.reformatted > 1 else ''} "
                "(comments and order kept, the layout differs)")
    return f"merged {sheet} into {query_set}: {done}{skipped}{note}"


def _count(n: int, what: str, done: str) -> str:
    if not n:
        return ""
    return f"{n} {what}{'s' if n != 1 else ''} {done}"
