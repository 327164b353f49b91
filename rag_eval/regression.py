"""Results vs baseline -> a verdict: deltas, paired statistics, gates.

Two results files are compared only when they measure the same thing: the same
dataset fingerprint, the same metric semantics (gain, aggregation, no_relevant,
relevance threshold, cutoffs, and for a gated metric the same effective depth:
min(k, top_k)) and the same judged queries. Otherwise the delta
would mislead, and :class:`ComparisonError` says what differs.

A gate ``ndcg@10: {max_drop: 0.01}`` fails when the candidate is worse than the
baseline by more than 0.01; with ``alpha`` it fails only if that drop is also
significant (paired permutation test, Holm-corrected over the gates that ask for
significance). "Worse" follows the metric's own direction, never the user's.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from rag_eval.errors import ComparisonError, ConfigError
from rag_eval.metrics.measures import parse_metric
from rag_eval.results import Results

SEMANTIC_OPTIONS = ("gain", "aggregation", "no_relevant", "relevance_threshold")


@dataclass(frozen=True)
class Gate:
    """A pass/fail rule on one metric."""

    metric: str
    max_drop: float = 0.0
    alpha: float | None = None

    def describe(self) -> str:
        text = f"drop ≤ {self.max_drop:g}"
        return text + (f", unless p ≥ {self.alpha:g}" if self.alpha is not None else "")


@dataclass(frozen=True)
class ResultsFile:
    """A results file as saved by ``rag-eval run``: the document and its Results."""

    path: str
    document: dict[str, Any]
    results: Results

    @property
    def label(self) -> str:
        return str(self.document.get("retriever", {}).get("label", Path(self.path).stem))

    @property
    def fingerprint(self) -> str | None:
        return self.document.get("dataset", {}).get("fingerprint")

    @property
    def query_texts(self) -> dict[str, str]:
        return dict(self.document.get("query_texts", {}))

    @property
    def rankings(self) -> dict[str, list[list[Any]]]:
        """``{qid: [[doc_id, score, grade or None], ...]}`` in rank order."""
        return dict(self.document.get("rankings", {}))


@dataclass
class GateResult:
    """One gated metric: values, statistics and the decision."""

    gate: Gate
    baseline: float
    candidate: float
    mean_delta: float
    ci_low: float
    ci_high: float
    p_permutation: float
    p_t_test: float
    p_adjusted: float | None
    wins: int
    ties: int
    losses: int
    n: int
    passed: bool
    reason: str


@dataclass
class Verdict:
    """The outcome of a comparison: every gate, and the per-query deltas behind it."""

    baseline: ResultsFile
    candidate: ResultsFile
    gates: list[GateResult]
    confidence: float
    deltas: dict[str, dict[str, float]] = field(default_factory=dict)  # metric -> {qid: delta}

    @property
    def passed(self) -> bool:
        return all(g.passed for g in self.gates)

    @property
    def failed(self) -> list[GateResult]:
        return [g for g in self.gates if not g.passed]

    def failure_lines(self) -> list[str]:
        """One readable line per failed gate."""
        return [f"{g.gate.metric}: {g.reason}" for g in self.failed]


# ---- loading and parsing -------------------------------------------------------------------


def load_results_file(path: str | Path) -> ResultsFile:
    """Read a results JSON written by ``rag-eval run``."""
    path = Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ComparisonError(f"{path}: no such file") from None
    except json.JSONDecodeError as error:
        raise ComparisonError(f"{path}: line {error.lineno}: not valid JSON ({error.msg})") from None
    except UnicodeDecodeError:
        raise ComparisonError(f"{path}: not a text file (a results JSON written by `rag-eval run` is UTF-8)") from None
    except OSError as error:  # a folder, no permission, ...
        raise ComparisonError(f"{path}: cannot read it ({error.strerror or type(error).__name__})") from None
    if not isinstance(document, dict) or document.get("kind") != "rag_eval.results" or "results" not in document:
        raise ComparisonError(f"{path}: not a rag_eval results file (write one with `rag-eval run CONFIG`)")
    try:
        results = Results.from_dict(document["results"])
    except (KeyError, TypeError, ValueError) as error:
        raise ComparisonError(f"{path}: results section is malformed ({type(error).__name__}: {error})") from None
    return ResultsFile(str(path), document, results)


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
        try:
            values[key] = float(value)
        except ValueError:
            raise ConfigError(f"gate {text!r}: {key} must be a number, got {value!r}") from None
    return make_gate(metric, values.get("max_drop", 0.0), values.get("alpha"), where=f"gate {text!r}")


def make_gate(metric: str, max_drop: float = 0.0, alpha: float | None = None, where: str = "gate") -> Gate:
    """Validate the parts of a gate."""
    if not math.isfinite(max_drop) or max_drop < 0:
        raise ConfigError(f"{where}: max_drop must be a number >= 0, got {max_drop}")
    if alpha is not None and not 0 < alpha < 1:
        raise ConfigError(f"{where}: alpha must be between 0 and 1, got {alpha}")
    return Gate(str(parse_metric(metric)), float(max_drop), alpha)


# ---- comparability -------------------------------------------------------------------------


def check_comparable(baseline: ResultsFile, candidate: ResultsFile, metrics: Sequence[str]) -> None:
    """Raise ComparisonError naming what differs, if anything does."""
    b, c = baseline, candidate
    if b.fingerprint != c.fingerprint:
        b_name = b.document.get("dataset", {}).get("name")
        c_name = c.document.get("dataset", {}).get("name")
        raise ComparisonError(
            f"incomparable results: different datasets (baseline {b.path}: {b_name} fingerprint {b.fingerprint}; "
            f"candidate {c.path}: {c_name} fingerprint {c.fingerprint}); rerun the baseline on the same dataset"
        )
    for option in SEMANTIC_OPTIONS:
        bv, cv = b.results.options.get(option), c.results.options.get(option)
        if bv != cv:
            raise ComparisonError(
                f"incomparable results: different metric semantics: {option} is {bv!r} in the baseline {b.path} "
                f"and {cv!r} in the candidate {c.path}"
            )
    for metric in metrics:
        for side in (b, c):
            if metric not in side.results.values:
                have = ", ".join(side.results.metric_names)
                raise ComparisonError(
                    f"incomparable results: {side.path} has no {metric} (it has {have}); "
                    "gate only metrics both runs computed, with the same cutoffs"
                )
    b_depth, c_depth = b.document.get("top_k"), c.document.get("top_k")
    if isinstance(b_depth, int) and isinstance(c_depth, int) and b_depth != c_depth:
        # A metric that looks deeper than one of the runs retrieved measures different things on each side.
        for metric in metrics:
            k = parse_metric(metric).k
            if (b_depth if k is None else min(k, b_depth)) != (c_depth if k is None else min(k, c_depth)):
                raise ComparisonError(
                    f"incomparable results: different metric semantics: {metric} looks at the top "
                    f"{k or 'all'} but the baseline {b.path} retrieved top_k={b_depth} and the candidate "
                    f"{c.path} top_k={c_depth}; gate a cutoff both runs reach (e.g. @{min(b_depth, c_depth)})"
                )
    if set(b.results.query_ids) != set(c.results.query_ids):
        only_b = sorted(set(b.results.query_ids) - set(c.results.query_ids))
        only_c = sorted(set(c.results.query_ids) - set(b.results.query_ids))
        raise ComparisonError(
            "incomparable results: different query sets "
            f"({len(only_b)} only in the baseline, e.g. {only_b[:3]}; {len(only_c)} only in the candidate, e.g. {only_c[:3]})"
        )


# ---- the comparison ------------------------------------------------------------------------


def compare(
    baseline: ResultsFile,
    candidate: ResultsFile,
    gates: Sequence[Gate],
    *,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> Verdict:
    """Compare ``candidate`` with ``baseline`` on every gate's metric."""
    from rag_eval import stats

    if not gates:
        raise ConfigError("no gates given; e.g. --gate ndcg@10:max_drop=0.01")
    if not 0 < confidence < 1:
        raise ConfigError(f"confidence must be between 0 and 1, got {confidence}")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 1:
        raise ConfigError(f"resamples must be a positive integer, got {n_resamples!r}")
    check_comparable(baseline, candidate, [g.metric for g in gates])
    order = list(baseline.results.query_ids)
    c_index = {q: i for i, q in enumerate(candidate.results.query_ids)}
    rows = []
    deltas: dict[str, dict[str, float]] = {}
    for gate in gates:
        b_values = baseline.results.values[gate.metric]
        c_values = candidate.results.values[gate.metric][[c_index[q] for q in order]]
        # Queries left out (no relevant document) are NaN on both sides: pair the rest.
        both = ~np.isnan(b_values) & ~np.isnan(c_values)
        sign = 1.0 if parse_metric(gate.metric).higher_is_better else -1.0
        if not both.any():
            raise ComparisonError(
                f"{gate.metric}: no query has a value in both results (every query was left out of the mean); "
                "nothing to compare"
            )
        paired = stats.compare_paired(
            b_values[both], c_values[both], confidence=confidence, n_resamples=n_resamples, seed=seed
        )
        deltas[gate.metric] = {q: float(d) for q, d in zip(np.array(order)[both], (c_values - b_values)[both])}
        rows.append((gate, paired, sign))
    with_alpha = [i for i, (gate, _, _) in enumerate(rows) if gate.alpha is not None]
    adjusted = dict(zip(with_alpha, stats.holm([rows[i][1].p_permutation for i in with_alpha]))) if with_alpha else {}
    results = []
    for i, (gate, paired, sign) in enumerate(rows):
        drop = -sign * paired.mean_delta  # > 0 means the candidate is worse
        p_adj = adjusted.get(i)
        too_large = drop > gate.max_drop + 1e-12  # float noise must not fail an exact-limit drop
        significant = gate.alpha is None or (p_adj is not None and p_adj < gate.alpha)
        passed = not (too_large and significant)
        if not too_large:
            reason = f"drop {max(drop, 0.0) + 0.0:.4f} within max_drop {gate.max_drop:g}"
        elif not significant:
            reason = f"drop {drop:.4f} exceeds max_drop {gate.max_drop:g} but is not significant (p={p_adj:.4f} ≥ alpha {gate.alpha:g})"
        else:
            reason = f"dropped {drop:.4f} > max_drop {gate.max_drop:g}" + (
                f", significant (p={p_adj:.4f} < alpha {gate.alpha:g})" if gate.alpha is not None else ""
            )
        wins, ties, losses = (paired.wins, paired.ties, paired.losses) if sign > 0 else (paired.losses, paired.ties, paired.wins)
        results.append(
            GateResult(
                gate=gate,
                baseline=baseline.results.aggregate[gate.metric],
                candidate=candidate.results.aggregate[gate.metric],
                mean_delta=paired.mean_delta,
                ci_low=paired.ci_low,
                ci_high=paired.ci_high,
                p_permutation=paired.p_permutation,
                p_t_test=paired.p_t_test,
                p_adjusted=p_adj,
                wins=wins,
                ties=ties,
                losses=losses,
                n=paired.n,
                passed=passed,
                reason=reason,
            )
        )
    return Verdict(baseline, candidate, results, confidence, deltas)


def gates_from_config(gates: Mapping[str, Any]) -> list[Gate]:
    """Gates from a config's ``regression.gates`` mapping (validated GateSpec objects or dicts)."""
    out = []
    for metric, spec in gates.items():
        data = spec.model_dump() if hasattr(spec, "model_dump") else dict(spec or {})
        out.append(make_gate(metric, data.get("max_drop", 0.0), data.get("alpha"), where=f"regression.gates.{metric}"))
    return out
