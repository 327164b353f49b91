"""The provenance a YAML query set records beside its grades, read into the loaded Dataset.

A judgement may be written ``{grade: 2, source: llm:qwen, annotator?, time?}`` (what ``rag-eval
judgements merge`` writes); the query set's pydantic model keeps only its grade, so the source is read
here from the raw YAML, for the judgements the loader kept. Evidence items carry theirs as a field
(query_set.EvidenceSpec.source) and are collected by the loader as it builds each span.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rag_eval._data.datasets.values import id_from_value


def judgement_sources(
    raw: Mapping[str, Any], positions: Mapping[str, int], judgements: Mapping[str, Mapping[str, float]]
) -> dict[str, dict[str, str]]:
    """``{qid: {unit: source}}`` of the kept ``judgements`` written with a source (empty when none is).

    ``positions``: each query's index in ``raw["queries"]``; ``raw``: the query set as YAML read it
    (already validated, so every key is an id and every source a provenance).
    """
    sources: dict[str, dict[str, str]] = {}
    queries = raw.get("queries")
    if not isinstance(queries, list):
        return sources
    for qid, grades in judgements.items():
        n = positions.get(qid)
        entry = queries[n] if n is not None and n < len(queries) else None
        written = entry.get("judgements") if isinstance(entry, Mapping) else None
        if not isinstance(written, Mapping):
            continue
        for key, value in written.items():
            if not isinstance(value, Mapping) or not isinstance(value.get("source"), str):
                continue
            try:
                unit = id_from_value(key)
            except ValueError:  # reported by the schema; never reached for a file that loaded
                continue
            if unit in grades:
                sources.setdefault(qid, {})[unit] = value["source"]
    return sources
