"""The report's section on retrievers rag_eval did not build: databases, frameworks, services (pure).

For each retriever whose description carries a ``database``, a ``mapping`` or a ``latency``
(rag_eval._retrievers.external), one table row says what was asked (backend, collection, points,
index), how its hits mapped to the dataset and how fast it answered; then one line per problem:
hits that mapped to nothing (per query), stale hits (a document changed since it was indexed),
hits relocated in their document, texts found in more than one document, hits without scores.
Nothing here is hidden in the numbers: an unmapped hit is a hit the metrics did not count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rag_eval._report.format import escape_cell, escape_inline, shorten

if TYPE_CHECKING:
    from rag_eval._run.outcome import RetrieverOutcome, RunOutcome

# Queries and hits named per problem line (all are counted).
SHOWN = 5


def external_lines(run: RunOutcome) -> list[str]:
    """The section (empty when every retriever of the run is rag_eval's own)."""
    outcomes = [o for o in run.outcomes if _is_external(o.description)]
    if not outcomes:
        return []
    lines = [
        "**External indexes and services** (hits mapped to the dataset; latency as the backend answered)",
        "",
        "| Retriever | Backend | Collection | Points | Index | Mapped hits | Unmapped | Stale | "
        "p50 / p95 (ms) | QPS | Harness (ms / query) |",
        "|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    problems: list[str] = []
    for outcome in outcomes:
        lines.append(_row(outcome))
        problems += _problems(outcome.label, outcome.description)
    return lines + [""] + problems + ([""] if problems else [])


def _is_external(description: Mapping[str, Any]) -> bool:
    return any(isinstance(description.get(key), Mapping) for key in ("database", "mapping", "latency"))


def _row(outcome: RetrieverOutcome) -> str:
    description = outcome.description
    database = _mapping(description.get("database"))
    mapping = _mapping(description.get("mapping"))
    latency = _mapping(description.get("latency"))
    backend = " ".join(
        str(part) for part in (description.get("adapter"), database.get("server_version") or description.get("target"))
        if part
    )
    index = _mapping(database.get("index"))
    index_text = ", ".join(f"{key} {value}" for key, value in index.items()) if index else "–"
    points = database.get("points")
    hits, mapped = mapping.get("hits"), mapping.get("mapped")
    ways = ", ".join(f"{way} {count:,}" for way, count in _mapping(mapping.get("by_way")).items() if count)
    mapped_text = f"{mapped:,} of {hits:,}" + (f" ({ways})" if ways else "") if isinstance(hits, int) else "–"
    cells = [
        escape_cell(outcome.label),
        escape_cell(shorten(backend, 60) or "–"),
        escape_cell(str(database.get("collection") or "–")),
        f"{points:,}" if isinstance(points, int) else "–",
        escape_cell(shorten(index_text, 80)),
        escape_cell(mapped_text),
        f"{mapping.get('unmapped', 0):,}" if mapping else "–",
        f"{mapping.get('stale', 0):,}" if mapping else "–",
        _pair(latency.get("p50_ms"), latency.get("p95_ms")),
        f"{latency['qps']:,.1f}" if isinstance(latency.get("qps"), (int, float)) else "–",
        f"{latency['harness_ms_per_query']:.3f}" if isinstance(latency.get("harness_ms_per_query"), (int, float)) else "–",
    ]
    return "| " + " | ".join(cells) + " |"


def _problems(label: str, description: Mapping[str, Any]) -> list[str]:
    """One line per kind of problem of one retriever, naming queries and hits (a few of each)."""
    mapping = _mapping(description.get("mapping"))
    if not mapping:
        return []
    who = f"- **{escape_inline(label)}**:"
    lines = []
    by_query = _mapping(mapping.get("unmapped_by_query"))
    examples = _mapping(mapping.get("examples"))
    if by_query:
        worst = sorted(by_query.items(), key=lambda item: (-item[1], item[0]))
        named = ", ".join(f"{qid} ({count})" for qid, count in worst[:SHOWN])
        more = f" and {len(worst) - SHOWN} more" if len(worst) > SHOWN else ""
        lines.append(
            f"{who} {mapping.get('unmapped', 0):,} hits of {len(by_query):,} queries map to nothing and are not "
            f"counted: {escape_inline(named)}{more}; {_first(examples.get('unmapped'))}"
        )
    if mapping.get("stale"):
        lines.append(
            f"{who} stale index: {mapping['stale']:,} hits name offsets whose text the document no longer holds; "
            f"{_first(examples.get('stale'))}. Re-index the changed documents."
        )
    if mapping.get("relocated"):
        lines.append(
            f"{who} {mapping['relocated']:,} hits' text had moved within its document and was mapped where it is now; "
            f"{_first(examples.get('relocated'))}"
        )
    if mapping.get("ambiguous_text"):
        lines.append(
            f"{who} {mapping['ambiguous_text']:,} hits' text occurs in more than one document; each was mapped to "
            "the first (by id). Map by doc_id/start/end or passage_id to be exact."
        )
    if mapping.get("duplicates"):
        lines.append(f"{who} {mapping['duplicates']:,} hits repeat a passage already ranked higher; the first was kept.")
    if mapping.get("mixed_scores"):
        # some hits scored, others not: the whole answer was ranked by the target's order (docs/integrations.md)
        lines.append(
            f"{who} {mapping['mixed_scores']:,} answers mixed scored hits with {mapping.get('scoreless_hits', 0):,} "
            "hits without a score: those answers were ranked in the order the target returned them, their scores "
            "set aside."
        )
    elif mapping.get("scoreless_hits"):
        lines.append(
            f"{who} the target gave no scores ({mapping['scoreless_hits']:,} hits): ranked in the order it returned them."
        )
    return lines


def _first(rows: Any) -> str:
    if not isinstance(rows, Sequence) or not rows or not isinstance(rows[0], Mapping):
        return "no example kept"
    row = rows[0]
    return escape_inline(f"first: query {row.get('query')}, hit {row.get('hit')}: {row.get('why')}")


def _pair(p50: Any, p95: Any) -> str:
    if isinstance(p50, (int, float)) and isinstance(p95, (int, float)):
        return f"{p50:.2f} / {p95:.2f}"
    return "–"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
