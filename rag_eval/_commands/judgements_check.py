"""``rag-eval judgements check``: not built yet (issue 22)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from rag_eval._core.errors import RagEvalError


def main(args: argparse.Namespace, say: Callable[[str], None]) -> int:
    """Not built yet: one line, exit 2."""
    raise RagEvalError("rag-eval judgements check is not built yet")
