"""``rag-eval judgements ACTION``: merge a graded sheet, check evidence against edited documents, convert chunk ids.

Each action's work is one module (:mod:`.judgements_merge`, :mod:`.judgements_check`,
:mod:`.judgements_convert`); this one picks it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from rag_eval._commands import calibrate, judgements_check, judgements_convert, judgements_merge

ACTIONS = {
    "merge": judgements_merge.main, "check": judgements_check.main, "convert": judgements_convert.main,
    "calibrate": calibrate.main,
}


def main(args: argparse.Namespace, say: Callable[[str], None]) -> int:
    """Run the action ``args.action``; its exit code (0 done, 1 a check found problems, 2 bad input)."""
    return ACTIONS[args.action](args, say)
