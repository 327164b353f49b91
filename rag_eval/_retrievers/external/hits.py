"""A hit as an external retriever returns it, before rag_eval maps it to its own units."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Hit:
    """One ranked result of a database, a framework or a service.

    ``id``: the backend's own id of the hit (a point id, a row key, a node id), or None.
    ``score``: higher is better (an adapter turns a distance into a similarity before it builds
    the hit), or None when the backend gives no score (rank order is used, and the report says so).
    ``text``: the chunk's text as stored, or None. ``metadata``: the payload stored with it.
    """

    id: str | None
    score: float | None
    text: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
