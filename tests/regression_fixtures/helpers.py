"""Shared helpers for the regression tests (loaded by file path, see load_helpers()).

* results_document(): a hand-made results JSON document, in the format `rag-eval run`
  writes, with chosen per-query values, so that every expected number can be derived
  by hand;
* table_blocks() / assert_tables_well_formed(): a GitHub-flavoured-markdown table
  checker that counts unescaped `|` cells per row.
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping

DEFAULT_OPTIONS = {
    "gain": "linear",
    "aggregation": "macro",
    "no_relevant": "skip",
    "relevance_threshold": 1.0,
    "discount": "1/log2(rank+1)",
    "ties": "score descending, then doc id descending (trec_eval)",
    "ideal": "all judged documents with grade > 0, retrieved or not",
}


def results_document(
    per_query: Mapping[str, Mapping[str, float | None]],
    *,
    label: str = "run",
    fingerprint: str = "0123456789abcdef",
    dataset_name: str = "hand-made",
    options: Mapping[str, Any] | None = None,
    query_texts: Mapping[str, str] | None = None,
    rankings: Mapping[str, list[list[Any]]] | None = None,
) -> dict[str, Any]:
    """A results document as `rag-eval run` writes it; aggregate = mean of the non-None values."""
    metrics = list(next(iter(per_query.values())))
    aggregate = {}
    for metric in metrics:
        values = [row[metric] for row in per_query.values() if row[metric] is not None]
        aggregate[metric] = sum(values) / len(values) if values else None
    return {
        "schema_version": 1,
        "kind": "rag_eval.results",
        "dataset": {"name": dataset_name, "fingerprint": fingerprint},
        "retriever": {"label": label, "adapter": "static", "params": {}},
        "query_texts": dict(query_texts or {q: f"text of {q}" for q in per_query}),
        "results": {
            "metrics": metrics,
            "options": dict(options or DEFAULT_OPTIONS),
            "aggregate": aggregate,
            "num_queries": len(per_query),
            "left_out": {m: [q for q, row in per_query.items() if row[m] is None] for m in metrics},
            "unjudged_queries": [],
            "unanswered_queries": [],
            "per_query": {q: dict(row) for q, row in per_query.items()},
        },
        "rankings": dict(rankings or {}),
    }


def split_cells(row: str) -> list[str]:
    """The cells of a GFM table row: a `|` right after a backslash is text (even after another backslash, as GFM)."""
    assert row.startswith("|") and row.rstrip().endswith("|"), f"row must start and end with |: {row!r}"
    cells, current, i = [], "", 0
    body = row.strip()
    while i < len(body):
        ch = body[i]
        if ch == "\\" and body[i + 1 : i + 2] == "|":
            current += body[i : i + 2]
            i += 2
            continue
        if ch == "|":
            cells.append(current)
            current = ""
        else:
            current += ch
        i += 1
    assert current.strip() == "", f"text after the last unescaped | in {row!r}"
    return [c.strip() for c in cells[1:]]


_SEPARATOR = re.compile(r"^:?-{3,}:?$")


def table_blocks(markdown: str) -> list[list[str]]:
    """Every table: a run of consecutive lines starting with `|`."""
    blocks, current = [], []
    for line in markdown.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return blocks


def assert_tables_well_formed(markdown: str) -> list[list[list[str]]]:
    """Check every table (header, separator, rows with the header's cell count); return the cells."""
    tables = []
    for block in table_blocks(markdown):
        assert len(block) >= 2, f"a table needs a header and a separator: {block}"
        header = split_cells(block[0])
        separator = split_cells(block[1])
        assert all(_SEPARATOR.match(cell) for cell in separator), f"bad separator row {block[1]!r}"
        assert len(separator) == len(header), f"separator has {len(separator)} cells, header {len(header)}: {block[:2]}"
        rows = [header]
        for line in block[2:]:
            cells = split_cells(line)
            assert len(cells) == len(header), f"{len(cells)} cells instead of {len(header)} in {line!r}"
            rows.append(cells)
        tables.append(rows)
    return tables


def holm_by_hand(p_values: list[float]) -> list[float]:
    """Holm-Bonferroni written out step by step (independent of rag_eval._scoring.stats.holm)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [math.nan] * m
    running = 0.0
    for rank, i in enumerate(order):  # rank 0 = smallest p, multiplied by m
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted
