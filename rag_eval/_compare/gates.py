"""Regression gates: a pass/fail rule on one metric, from a ``--gate`` text, a config's ``regression.gates``
or the default of a comparison given none.

A gate ``ndcg@10: {max_drop: 0.01}`` fails when the candidate is worse than the baseline by
more than 0.01; with ``alpha`` it fails only if that drop is also significant. Each metric has
one gate at most (:func:`rag_eval._data.config.regression.repeated_gate`, the config's rule too).
Deciding a gate is :mod:`rag_eval._compare.gate_results`'.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_eval._core.errors import ConfigError
from rag_eval._data.config.regression import repeated_gate
from rag_eval._run.results_file import ResultsFile
from rag_eval._scoring.metrics.measures import parse_metric


@dataclass(frozen=True)
class Gate:
    """A pass/fail rule on one metric."""

    metric: str
    max_drop: float = 0.0
    alpha: float | None = None

    def describe(self) -> str:
        """``drop ≤ 0.01, unless p ≥ 0.05``: the rule in words, as the reports print it."""
        text = f"drop ≤ {self.max_drop:g}"
        return text + (f", unless p ≥ {self.alpha:g}" if self.alpha is not None else "")


def parse_gate(text: str) -> Gate:
    """``ndcg@10:max_drop=0.01,alpha=0.05`` -> Gate (also ``ndcg@10`` alone: any drop fails)."""
    metric_text, _, options = text.partition(":")
    try:
        metric = str(parse_metric(metric_text))
    except ValueError as error:
        raise ConfigError(f"gate {text!r}: {error}") from None
    values: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in options.split(","))):
        key, eq, value = (part.strip() for part in item.partition("="))
        if not eq or key not in ("max_drop", "alpha"):
            raise ConfigError(f"gate {text!r}: expected METRIC:max_drop=0.01[,alpha=0.05], got {item!r}")
        if key in values:  # keeping the last one silently would hide a typo in a CI command line
            raise ConfigError(f"gate {text!r}: {key} is given twice; give each option once")
        try:
            values[key] = float(value)
        except ValueError:
            raise ConfigError(f"gate {text!r}: {key} must be a number, got {value!r}") from None
    return make_gate(metric, values.get("max_drop", 0.0), values.get("alpha"), where=f"gate {text!r}")


def parse_gates(texts: Sequence[str]) -> list[Gate]:
    """Several ``--gate`` texts; two gates on one metric (under any two spellings) are refused, naming both."""
    gates = [parse_gate(text) for text in texts]
    refuse_repeated_metrics([(repr(text), gate) for text, gate in zip(texts, gates)], "--gate")
    return gates


def refuse_repeated_metrics(named: Sequence[tuple[str, Gate]], where: str) -> None:
    """ConfigError when two of the gates ``named`` (``(name as the caller shows it, gate)``) gate one metric."""
    problem = repeated_gate([(name, gate.metric) for name, gate in named])
    if problem:
        raise ConfigError(f"{where}: {problem}")


def default_gates(baseline: ResultsFile) -> list[Gate]:
    """The gate of a comparison given none: ndcg@10 with max_drop 0, or doc_ndcg@10 on a document dataset
    (a gate that holds across chunkings); ConfigError when the results have no such metric."""
    have = list(baseline.results.values)
    if baseline.chunking is not None:
        if "doc_ndcg@10" in have:
            return [make_gate("doc_ndcg@10")]
        # A metric the results have, that compares any two chunkings (document and evidence metrics do).
        usable = [m for m in have if m.startswith(("doc_", "evidence_"))] or have
        raise ConfigError(f"no --gate given and the results have no doc_ndcg@10; name one of theirs, e.g. --gate "
                          f"{usable[0]}:max_drop=0.01 (document and evidence metrics compare any two chunkings)")
    if "ndcg@10" in have:
        return [make_gate("ndcg@10")]
    raise ConfigError(f"no --gate given and the results have no ndcg@10; name one of theirs, e.g. --gate "
                      f"{have[0]}:max_drop=0.01")


def make_gate(metric: str, max_drop: float = 0.0, alpha: float | None = None, where: str = "gate") -> Gate:
    """Validate the parts of a gate."""
    if not math.isfinite(max_drop) or max_drop < 0:
        raise ConfigError(f"{where}: max_drop must be a number >= 0, got {max_drop}")
    if alpha is not None and not 0 < alpha < 1:
        raise ConfigError(f"{where}: alpha must be between 0 and 1, got {alpha}")
    return Gate(str(parse_metric(metric)), float(max_drop), alpha)


def gates_from_config(gates: Mapping[str, Any]) -> list[Gate]:
    """Gates from a config's ``regression.gates`` mapping (validated GateSpec objects or dicts)."""
    out = []
    for metric, spec in gates.items():
        data = spec.model_dump() if hasattr(spec, "model_dump") else dict(spec or {})
        out.append(make_gate(metric, data.get("max_drop", 0.0), data.get("alpha"), where=f"regression.gates.{metric}"))
    refuse_repeated_metrics([(repr(metric), gate) for metric, gate in zip(gates, out)], "regression.gates")
    return out
