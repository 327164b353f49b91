"""``rag-eval generate``: not built yet (issue 22)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from rag_eval._core.errors import RagEvalError


def main(args: argparse.Namespace, say: Callable[[str], None]) -> int:
    """Not built yet: one line, exit 2."""
    raise RagEvalError("rag-eval generate is not built yet")
