"""How long an input a model can read: the size of its position-embedding table, read without torch.

``max_seq_length: 100000`` on a model with 512 position embeddings failed deep inside torch
("The size of tensor a (2002) must match the size of tensor b (512)") on the first long
passage. The table's size is in the model folder's ``config.json`` (``max_position_embeddings``),
so ``rag-eval validate`` refuses such a setting without loading torch; a model whose folder is
known only once downloaded is checked by the loaded model's config (rag_eval._models.embeddings.loading).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rag_eval._models.files import resolve_model

# Models that number positions after the padding index (RoBERTa's create_position_ids_from_input_ids):
# their table holds max_position_embeddings - (pad_token_id + 1) tokens, 514 -> 512.
_PADDED_POSITIONS = frozenset({
    "roberta", "roberta-prelayernorm", "xlm-roberta", "xlm-roberta-xl", "camembert", "mpnet", "longformer",
    "data2vec-text", "ibert", "luke", "markuplm", "xmod",
})


def position_limit(config: Mapping[str, Any]) -> int | None:
    """The most tokens (special tokens included) a model with this ``config.json`` can read; None: no table."""
    positions = config.get("max_position_embeddings")
    if not isinstance(positions, int) or isinstance(positions, bool) or positions <= 0:
        return None  # relative or no position embeddings (T5): nothing to overrun
    if config.get("model_type") in _PADDED_POSITIONS:
        pad = config.get("pad_token_id")
        positions -= pad + 1 if isinstance(pad, int) and not isinstance(pad, bool) and pad >= 0 else 2
    return positions if positions > 0 else None


def folder_position_limit(folder: Path | None) -> int | None:
    """:func:`position_limit` of a model folder (its transformer's ``config.json``); None when unreadable."""
    if folder is None:
        return None
    for candidate in (folder / "config.json", *_module_configs(folder)):
        try:
            config = json.loads(candidate.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(config, dict):
            return position_limit(config)
    return None


def length_problem(value: int | None, limit: int | None, field: str, spec: str) -> str | None:
    """Why ``field: value`` cannot be read by model ``spec`` with ``limit`` positions (None when it can)."""
    if value is None or limit is None or value <= limit:
        return None
    return (
        f"more than the {limit:,} positions model {spec!r} has (max_position_embeddings in its config.json); "
        f"use at most {limit}, or remove {field} (default: the model's own)"
    )


def _module_configs(folder: Path) -> list[Path]:
    """``config.json`` of a sentence-transformers Transformer module kept in a sub-folder (older layouts)."""
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(modules, list):
        return []
    return [folder / m["path"] / "config.json" for m in modules
            if isinstance(m, dict) and isinstance(m.get("path"), str) and m["path"]]


def check_model_length(value: int | None, model: Any, field: str, adapter: str) -> int | None:
    """A params validator's check of ``field`` (``max_seq_length``, ``max_length``) against ``model``'s positions.

    Past the model's position embeddings torch fails mid-run; this says so at validate time, from the
    model folder's config.json (no torch). A model not found locally (to be downloaded) is checked
    when it loads. Raises ValueError (pydantic's way of refusing a value) with the problem.
    """
    if value is not None and isinstance(model, str):
        problem = length_problem(value, folder_position_limit(resolve_model(model, adapter).path), field, model)
        if problem:
            raise ValueError(problem)
    return value
