"""How a retriever treats the title that comes with each unit it indexes (a chunk, or a whole document).

Each built-in adapter says it of itself (a ``title_use(params)`` class method, beside the code that
indexes): ``bm25`` indexes title + text unless ``include_title: false``; ``dense`` and
``cross_encoder`` read title + text (rag_eval._data.datasets.model.passage_text); a vector database
fills its collection with title + text (mode managed) or is queried as the team filled it
(read_only); the framework adapters, ``http`` and ``static`` answer from the team's own index, so what
it holds is theirs to say; ``hybrid`` reads titles as its fused retrievers do. A plug-in is handed
title + text and may use the title or not. The report (rag_eval._report.indexed_text) words it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rag_eval._core.errors import RagEvalError
from rag_eval._data.config.adapters import BUILTIN
from rag_eval._retrievers.registry import resolve

READS, IGNORES, PARTLY, OWN_INDEX, PLUG_IN = "reads", "ignores", "partly", "own index", "plug-in"

__all__ = ["IGNORES", "OWN_INDEX", "PARTLY", "PLUG_IN", "READS", "fused_title_use", "title_use"]


def title_use(adapter: str, params: Mapping[str, Any]) -> str:
    """How a retriever of ``adapter`` with ``params`` treats titles: READS, IGNORES, PARTLY, OWN_INDEX or PLUG_IN.

    A built-in adapter's class answers (its ``title_use``); a plug-in or an import string is PLUG_IN.
    Nothing is built or called: the class is only looked up (as ``rag-eval validate`` does).
    """
    if adapter not in BUILTIN:
        return PLUG_IN
    try:
        factory = resolve(adapter)
    except RagEvalError:  # an extra that is not installed: the run said so already
        return PLUG_IN
    declared = getattr(factory, "title_use", None)
    return str(declared(params)) if callable(declared) else PLUG_IN


def fused_title_use(children: Any) -> str:
    """How a fusion of ``children`` (``[{adapter, params}, ...]``) treats titles: theirs when all agree, else PARTLY."""
    uses = {
        title_use(str(child.get("adapter") or ""), child.get("params") or {})
        for child in (children if isinstance(children, list) else [])
        if isinstance(child, Mapping)
    }
    return uses.pop() if len(uses) == 1 else PARTLY
