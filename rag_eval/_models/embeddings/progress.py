"""A progress bar over the texts being encoded, when asked for and tqdm is installed (else None)."""

from __future__ import annotations

from typing import Any


def progress_bar(total: int, show: bool) -> Any:
    """A tqdm bar of ``total`` texts (call ``update(n)``, then ``close()``), or None: not asked, nothing to do, no tqdm."""
    if not show or total == 0:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="Encoding", unit="text")
