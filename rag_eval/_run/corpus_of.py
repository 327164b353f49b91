"""The corpus a config's dataset gives its retrievers, for code outside a run (a team's factory, a script)."""

from __future__ import annotations

from pathlib import Path

from rag_eval._data.config.schema import load_config
from rag_eval._run.plan import load_config_dataset


def config_corpus(config_path: str | Path) -> dict[str, dict[str, str]]:
    """``{passage id: {"title", "text"}}`` of the dataset a run config names, paths resolved as a run resolves them.

    For a dataset of documents, the documents (the units a retriever without a chunker indexes).
    A bad config or dataset raises :class:`~rag_eval.RagEvalError` with the one line ``rag-eval validate`` prints.
    """
    dataset = load_config_dataset(load_config(config_path))
    return {
        unit: {"title": str(passage.get("title") or ""), "text": str(passage.get("text") or "")}
        for unit, passage in dataset.corpus.items()
    }
