"""The data report.html embeds for its per-query table, columnar (pure, no I/O); the rankings: units_data.py.

Everything is read from the run, never computed anew: metric values from each retriever's Results,
tags from the queries, the baseline of the Δ columns as the plots choose it (the declared one, else
the best mean: rag_eval._compare.variants.choose_baseline). The shapes are chosen for size at 10,000
queries x 12 variants (docs/report.md, "Size"):

- ``vals[r][m]``: one column per retriever and metric, each value as the integer of its printed 4
  decimals (``0.8159`` is ``8159``; n/a apart), so that the page shows exactly report.md's numbers and
  its deltas are exact differences of the values shown; written as fixed-width digits (:func:`value_column`);
- ``means[r][m]``, ``dmeans[r][m]``: the mean of the exact values and of the exact differences to the
  baseline, printed, for the table's last row when nothing is filtered (:func:`_exact_means`);
- ``qids``, ``qtext``: the scored queries in the run's order; ``tags`` every (key, value) once and
  ``qtags`` per query the numbers of its tags;
- the drill-down's depth (``depth``: each ranking's top units the page holds, at most :data:`DEPTH_CAP`)
  and cutoff (``k``), the options the derivation needs, and the text budget (:data:`TEXT_BUDGET`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rag_eval._compare.decision import defined_values, paired_differences
from rag_eval._compare.segments import query_tags
from rag_eval._compare.variants import choose_baseline
from rag_eval._report.derivation import derivation_cutoff
from rag_eval._report.format import fmt
from rag_eval._report.html.encode import StringTable
from rag_eval._report.retrieved_chunks import shown_cutoff
from rag_eval._scoring.metrics.measures import parse_metric

if TYPE_CHECKING:
    from rag_eval._run.outcome import RunOutcome

__all__ = ["ALPHABET", "DEPTH_CAP", "TEXT_BUDGET", "RunData", "build_data", "digits", "shown_value"]

# The drill-down holds each retriever's top units up to this depth (the derivation's cutoff when smaller).
DEPTH_CAP = 20
# Characters of passage and chunk text the page may hold in all; past it a unit shows its id only.
TEXT_BUDGET = 3_000_000
# Digits of the ranking strings: 64 characters that JSON writes as they are.
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


_ONE = list(ALPHABET)
_TWO = [a + b for a in ALPHABET for b in ALPHABET]


def shown_value(value: float) -> int | None:
    """A metric value as the integer of its printed 4 decimals (report.md's ``fmt``); None for NaN.

    ``round(value, 4)`` rounds the exact binary value correctly, as ``f"{value:.4f}"`` does; its
    result times 10,000 lies within far less than 0.5 of that integer.
    """
    if value != value:
        return None
    scaled = round(value, 4) * 10_000
    return int(scaled + 0.5) if scaled >= 0 else -int(-scaled + 0.5)


def digits(numbers: Sequence[int], width: int) -> str:
    """``numbers`` (each below 64 ** width) as fixed-width base-64 digits of :data:`ALPHABET`, most significant first."""
    if width == 1:
        return "".join(map(_ONE.__getitem__, numbers))
    if width == 2:
        return "".join(map(_TWO.__getitem__, numbers))
    out = []
    for n in numbers:
        code = ""
        for _ in range(width // 2):
            code = _TWO[n & 4095] + code
            n >>= 12
        out.append(_ONE[n & 63] + code if width % 2 else code)
    return "".join(out)


def width_for(largest: int) -> int:
    """The fewest base-64 digits that write every number up to ``largest``."""
    width = 1
    while 64**width <= largest:
        width += 1
    return width


class RunData:
    """The data of one report.html, built by :func:`build_data`; ``data`` is what the page embeds."""

    def __init__(self, run: RunOutcome) -> None:
        self.run = run
        self.data: dict[str, Any] = {}
        self.units = StringTable()
        self.texts_used = 0
        self.texts_left_out = 0


def build_data(run: RunOutcome) -> RunData:
    """The table and drill-down data of ``run`` (documents datasets: see rag_eval._report.html.documents_data)."""
    built = RunData(run)
    data = built.data
    config = run.config.model
    outcomes = run.outcomes
    main = config.primary_metric
    documents = run.dataset.has_documents
    metrics: list[str] = []
    for outcome in outcomes:
        metrics.extend(name for name in outcome.results.metric_names if name not in metrics)
    canonical_main = str(parse_metric(main))
    qids = list(outcomes[0].results.query_ids) if outcomes else []
    by_label = {o.label: o.results for o in outcomes if canonical_main in o.results.values}
    baseline = choose_baseline(by_label, canonical_main, getattr(run.config, "baseline_label", None)) \
        if len(by_label) > 1 else None
    options = outcomes[0].results.options if outcomes else {}
    # The drill-down's cutoff: report.md's, the chunks its detailed queries show or its derivation's nDCG@k.
    k: int | None = shown_cutoff(main, config.top_k) if documents else derivation_cutoff(main, config.top_k)
    depth = min(k if k is not None else config.top_k, config.top_k, DEPTH_CAP)
    data.update({
        "kind": "documents" if documents else "passages",
        "labels": [o.label for o in outcomes],
        "base": None if baseline is None else [o.label for o in outcomes].index(baseline),
        "metrics": metrics,
        "main": metrics.index(canonical_main) if canonical_main in metrics else 0,
        "qids": qids,
        "qtext": [run.dataset.queries[q].text if q in run.dataset.queries else "" for q in qids],
        "depth": depth,
        "k": k,
        "topk": config.top_k,
        "gain": options.get("gain", "linear"),
        "noRelevant": options.get("no_relevant", "skip"),
        "micro": options.get("aggregation", "macro") == "micro",
        "chars": config.report.passage_chars,
        "budget": TEXT_BUDGET,
    })
    data["vals"] = [_values(o.results, metrics, qids) for o in outcomes]
    data["means"], data["dmeans"] = _exact_means(outcomes, metrics, data["base"])
    data["tags"], data["qtags"] = _tags(run, qids)
    ndcg = f"ndcg@{k}" if k is not None else "ndcg"
    data["ndcg"] = metrics.index(ndcg) if ndcg in metrics and not documents else None
    return built


def _values(results: Any, metrics: Sequence[str], qids: Sequence[str]) -> list[Any]:
    """One retriever's values: per metric a column of :func:`value_column` (None: the metric is not computed)."""
    position = {q: i for i, q in enumerate(results.query_ids)}
    same = list(results.query_ids) == list(qids)  # the usual case: one order for every retriever of a run
    columns: list[Any] = []
    for name in metrics:
        if name not in results.values:
            columns.append(None)
            continue
        column = results.values[name].tolist()
        shown = [shown_value(v) for v in column] if same else \
            [shown_value(column[position[q]]) if q in position else None for q in qids]
        columns.append(value_column(shown))
    return columns


def _exact_means(outcomes: Sequence[Any], metrics: Sequence[str], base: int | None) -> tuple[list[Any], list[Any]]:
    """Per retriever and metric, the mean of its exact values and of its exact differences to the baseline,
    printed (4 decimals; None: no value): the table's last row when no filter is set, so that it shows the
    decision's numbers (rag_eval._compare.decision: the mean of the values, the mean paired difference)
    rather than a mean of rounded values."""
    means: list[Any] = []
    deltas: list[Any] = []
    for r, outcome in enumerate(outcomes):
        results = outcome.results
        row: list[str | None] = []
        drow: list[str | None] = []
        for name in metrics:
            defined = defined_values(results, name) if name in results.values else None
            row.append(fmt(float(defined.mean())) if defined is not None and defined.size else None)
            paired = None
            if base is not None and r != base and name in results.values and name in outcomes[base].results.values:
                paired = paired_differences(name, outcomes[base].results, results)
            drow.append(f"{float(paired.mean()):+.4f}" if paired is not None and paired.size else None)
        means.append(row)
        deltas.append(drow)
    return means, deltas


def value_column(values: Sequence[int | None]) -> Any:
    """Shown values as ``[width, digits]``: each value + 1 in :func:`digits` of ``width``, 0 for n/a.

    A column with a negative value (no metric of rag_eval has one) stays a JSON array of integers and nulls.
    """
    if any(v is not None and v < 0 for v in values):
        return list(values)
    width = width_for(max((v + 1 for v in values if v is not None), default=0))
    return [width, digits([0 if v is None else v + 1 for v in values], width)]


def _tags(run: RunOutcome, qids: Sequence[str]) -> tuple[list[list[str]], list[list[int]]]:
    """Every (key, value) of the queries' tags, sorted, and per query the numbers of its tags."""
    per_query = []
    seen: set[tuple[str, str]] = set()
    parsed: dict[tuple[str, ...], list[tuple[str, str]]] = {}  # queries share a few combinations of tags
    for qid in qids:
        query = run.dataset.queries.get(qid)
        tags = tuple(query.tags) if query else ()
        pairs = parsed.get(tags)
        if pairs is None:
            pairs = parsed[tags] = [(key, value) for key, values in query_tags(tags).items() for value in values]
        per_query.append(pairs)
        seen.update(pairs)
    order = sorted(seen)
    number = {pair: i for i, pair in enumerate(order)}
    return [list(pair) for pair in order], [[number[pair] for pair in pairs] for pairs in per_query]
