"""Decision statistics for a run with several retrievers (a sweep): which wins, by how much, and is it real.

Pure (no I/O, no global random state); the markdown lives in :mod:`rag_eval._report.decision`.

* :func:`decide_run`: per variant the mean of the main metric with a percentile bootstrap CI,
  the paired difference to the baseline (declared, else the best mean) with a permutation
  p-value Holm-corrected over all variants compared, wins/ties/losses, and whether the
  variant is statistically indistinguishable from the best (paired permutation test against
  the best, Holm over those comparisons, adjusted p >= alpha). Pairing is
  :func:`rag_eval._compare.regression.pair_by_query`: by query id, queries left out (NaN) on either
  side are not paired.
* :func:`minimum_detectable_difference` and :func:`queries_needed`: power of the paired
  two-sided t-test, exact under normal differences (noncentral t, see :func:`t_test_power`).
* :func:`segment_table`: each variant's mean per tag value (``topic:billing``).
* :func:`mean_context_size`: the mean size of the top k chunks of a run with spans.
* the pieces the verdict and the plots share (rag_eval._compare.variants): :func:`mean_row` (a
  variant's mean of its defined values with its bootstrap CI), :func:`paired_differences` and
  :func:`wins_ties_losses`.

"Best" and wins follow the metric's own direction, read from its record (a lower-is-better
metric's best is the lowest).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from rag_eval._compare.paired import pair_by_query
from rag_eval._core.errors import ComparisonError
from rag_eval._core.ranking import ranked
from rag_eval._core.spans import chunk_id
from rag_eval._core.tokens import count_words
from rag_eval._scoring import stats
from rag_eval._scoring.metrics.measures import parse_metric

if TYPE_CHECKING:
    from rag_eval._scoring.results import Results

__all__ = [
    "ContextSize",
    "Decision",
    "MeanRow",
    "Power",
    "Segment",
    "SegmentTable",
    "VariantDecision",
    "decide_run",
    "defined_values",
    "mean_context_size",
    "mean_row",
    "minimum_detectable_difference",
    "paired_differences",
    "queries_needed",
    "query_tags",
    "segment_table",
    "t_test_power",
    "wins_ties_losses",
]

ALPHA = 0.05
POWER = 0.8
UNTAGGED_KEY = "tag"  # the key of a plain tag such as "billing" (no "key:value")


# ---- power of the paired t-test -------------------------------------------------------------


def t_test_power(difference: float, sd: float, n: int, alpha: float = ALPHA) -> float:
    """Power of the two-sided paired t-test of n differences with true mean ``difference`` and sd ``sd``.

    With normal differences, ``T = mean / (s / sqrt(n))`` follows a noncentral t distribution with
    ``df = n - 1`` and noncentrality ``nc = difference * sqrt(n) / sd``; the test rejects when
    ``|T| > c`` with ``c = t_{1 - alpha/2, n-1}``, so
    ``power = 1 - F_nct(c; df, nc) + F_nct(-c; df, nc)``. Exact, not the normal approximation.
    """
    if n < 2:
        raise ValueError(f"the paired t-test needs at least 2 queries, got {n}")
    if not sd > 0:
        raise ValueError(f"sd must be > 0, got {sd!r}")
    from scipy import stats as sps

    df = n - 1
    nc = abs(difference) * math.sqrt(n) / sd
    critical = float(sps.t.ppf(1.0 - alpha / 2.0, df))
    return float(sps.nct.sf(critical, df, nc) + sps.nct.cdf(-critical, df, nc))


def _check_levels(alpha: float, power: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if not alpha < power < 1.0:  # a power at or below alpha is reached by a zero difference
        raise ValueError(f"power must be in (alpha, 1), got {power!r}")


def minimum_detectable_difference(deltas: Sequence[float] | np.ndarray, alpha: float = ALPHA,
                                  power: float = POWER) -> float:
    """Smallest true mean difference the paired two-sided t-test detects with probability ``power``.

    ``sd`` is the sample standard deviation (ddof=1) of the observed per-query differences and
    ``n`` their number; the answer is the ``d`` solving ``t_test_power(d, sd, n, alpha) = power``
    (root found by Brent's method; the power grows with ``d``). For large n it approaches the
    normal approximation ``(z_{1-alpha/2} + z_power) * sd / sqrt(n)``. Returns 0.0 when every
    difference is equal (no observed noise), NaN for fewer than 2 differences.
    """
    _check_levels(alpha, power)
    d = np.asarray(deltas, dtype=np.float64)
    if d.ndim != 1 or not np.all(np.isfinite(d)):
        raise ValueError("deltas must be a flat sequence of finite numbers")
    n = int(d.size)
    if n < 2:
        return math.nan
    sd = float(np.std(d, ddof=1))
    if sd == 0.0 or bool(np.all(d == d[0])):
        return 0.0
    from scipy import optimize

    high = 3.0 * sd / math.sqrt(n)
    while t_test_power(high, sd, n, alpha) < power:  # widen the bracket (only for very small n)
        high *= 2.0
    return float(optimize.brentq(lambda x: t_test_power(x, sd, n, alpha) - power, 0.0, high, xtol=1e-14 * high))


def queries_needed(sd: float, difference: float, alpha: float = ALPHA, power: float = POWER) -> int:
    """Smallest number of queries n (>= 2) at which the paired t-test detects ``difference`` with ``power``.

    Starts from the normal approximation ``((z_{1-alpha/2} + z_power) * sd / difference) ** 2`` and
    steps n until ``t_test_power(difference, sd, n, alpha) >= power`` holds at n and not at n - 1.
    ``sd`` 0 (no noise): 2, the fewest a t-test takes.
    """
    _check_levels(alpha, power)
    if not difference != 0 or not math.isfinite(difference):
        raise ValueError(f"difference must be a finite non-zero number, got {difference!r}")
    if not sd >= 0 or not math.isfinite(sd):
        raise ValueError(f"sd must be a finite number >= 0, got {sd!r}")
    if sd == 0.0:
        return 2
    from scipy import stats as sps

    z = float(sps.norm.ppf(1.0 - alpha / 2.0) + sps.norm.ppf(power))
    n = max(2, math.ceil((z * sd / abs(difference)) ** 2))
    while t_test_power(difference, sd, n, alpha) < power:
        n += 1
    while n > 2 and t_test_power(difference, sd, n - 1, alpha) >= power:
        n -= 1
    return n


# ---- what the verdict and the plots share ------------------------------------------------------


@dataclass(frozen=True)
class MeanRow:
    """One variant's mean of its per-query values (queries left out excluded) and its percentile bootstrap CI."""

    label: str
    mean: float
    low: float
    high: float
    n: int


def defined_values(results: Results, metric: str) -> np.ndarray:
    """The per-query values of ``metric`` that are not NaN (a NaN: a query left out of its mean)."""
    values = np.asarray(results.values[metric], dtype=np.float64)
    return values[~np.isnan(values)]


def mean_row(label: str, results: Results, metric: str, *, confidence: float = 0.95, n_resamples: int = 10_000,
             seed: int = 0) -> MeanRow | None:
    """``label``'s mean of ``metric`` with its bootstrap CI (seeded: the same numbers each run); None without values."""
    values = defined_values(results, metric)
    if values.size == 0:
        return None
    low, high = stats.bootstrap_ci(values, confidence=confidence, n_resamples=n_resamples, seed=seed)
    return MeanRow(label, float(values.mean()), low, high, int(values.size))


def paired_differences(metric: str, base: Results, other: Results) -> np.ndarray | None:
    """Per-query ``other - base`` over the queries both scored (rag_eval._compare.regression.pair_by_query,
    sorted by query id); None when no query has a value on both sides."""
    try:
        values = pair_by_query(metric, base, other)
    except ComparisonError:  # no query has a value on both sides: nothing to compare
        return None
    return stats.paired_deltas(values.baseline, values.candidate)


def wins_ties_losses(deltas: np.ndarray, metric: str) -> tuple[int, int, int]:
    """Queries better / equal / worse than the baseline, in the metric's direction (``deltas``: variant - baseline)."""
    wins, ties, losses = stats.win_tie_loss(deltas) if deltas.size else (0, 0, 0)
    return (wins, ties, losses) if parse_metric(metric).higher_is_better else (losses, ties, wins)


# ---- the verdict over variants --------------------------------------------------------------


@dataclass(frozen=True)
class Power:
    """What the query set can detect, from the differences between ``baseline`` and ``other``."""

    baseline: str
    other: str
    n: int
    sd: float
    mde: float  # minimum detectable difference (NaN: fewer than 2 paired queries)
    alpha: float = ALPHA
    power: float = POWER

    @classmethod
    def of(cls, baseline: str, other: str, deltas: Sequence[float] | np.ndarray, alpha: float = ALPHA) -> Power:
        """What the paired differences ``deltas`` (``other - baseline``, one per query) can detect: their
        sample sd (ddof=1) and :func:`minimum_detectable_difference`, both NaN under 2 differences.

        The one constructor: a sweep's decision and a regression verdict's power line both state it.
        """
        d = np.asarray(deltas, dtype=np.float64)
        if d.size < 2:
            return cls(baseline, other, int(d.size), math.nan, math.nan, alpha)
        sd = float(np.std(d, ddof=1))
        return cls(baseline, other, int(d.size), sd, minimum_detectable_difference(d, alpha, POWER), alpha)

    def queries_for(self, difference: float) -> int | None:
        """Queries needed to detect ``difference`` with this sd (None when sd is 0 or undefined)."""
        if not self.sd > 0:
            return None
        return queries_needed(self.sd, difference, self.alpha, self.power)


@dataclass(frozen=True)
class VariantDecision:
    """One variant's line of the verdict.

    ``mean`` is the mean of the variant's per-query values (queries left out excluded) and
    ``ci_low``/``ci_high`` its percentile bootstrap interval. ``delta`` is the mean paired
    difference ``variant - baseline`` over ``n_paired`` queries, ``p_holm`` its Holm-adjusted
    permutation p-value, wins/ties/losses count queries better/equal/worse than the baseline in
    the metric's direction (all None for the baseline itself). ``p_vs_best_holm`` is the
    adjusted p of the paired test against the best (None for the best).
    """

    label: str
    rank: int
    n: int
    mean: float
    ci_low: float
    ci_high: float
    delta: float | None = None
    n_paired: int | None = None
    p_raw: float | None = None
    p_holm: float | None = None
    wins: int | None = None
    ties: int | None = None
    losses: int | None = None
    p_vs_best_holm: float | None = None
    indistinguishable_from_best: bool = False


@dataclass(frozen=True)
class Decision:
    """The verdict of a run: variants ranked best first on ``metric``."""

    metric: str
    baseline: str
    baseline_declared: bool
    best: str
    variants: list[VariantDecision]
    power: Power | None
    alpha: float = ALPHA
    confidence: float = 0.95

    def variant(self, label: str) -> VariantDecision:
        """The line of ``label``."""
        return next(v for v in self.variants if v.label == label)

    @property
    def indistinguishable(self) -> list[str]:
        """Labels other than the best that the data cannot separate from it, in rank order."""
        return [v.label for v in self.variants if v.label != self.best and v.indistinguishable_from_best]


@dataclass(frozen=True)
class _Paired:
    deltas: np.ndarray  # variant - baseline, per paired query
    p: float


def _paired(metric: str, base: Results, other: Results, n_resamples: int, seed: int) -> _Paired | None:
    deltas = paired_differences(metric, base, other)
    if deltas is None:
        return None
    return _Paired(deltas, stats.permutation_test(deltas, n_resamples=n_resamples, seed=seed))


def decide_run(
    results: Mapping[str, Results],
    metric: str,
    baseline: str | None = None,
    *,
    alpha: float = ALPHA,
    confidence: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> Decision:
    """Rank the variants of a run on ``metric`` and test each against the baseline and the best.

    ``results`` maps labels to Results in config order (the order breaks ties in the mean).
    ``baseline``: a declared label, else the best mean. The power line uses the baseline's
    differences to the best-ranked other variant whose differences vary (see :func:`_power`).

    Raises:
        ValueError: with fewer than 2 variants, an unknown baseline, or no variant with a value.
    """
    if len(results) < 2:
        raise ValueError(f"a decision needs at least 2 variants, got {len(results)}")
    if baseline is not None and baseline not in results:
        raise ValueError(f"baseline {baseline!r} is not one of the variants: {', '.join(results)}")
    parsed = parse_metric(metric)
    name = str(parsed)

    summary: dict[str, tuple[int, float, float, float]] = {}
    for label, res in results.items():
        row = mean_row(label, res, name, confidence=confidence, n_resamples=n_resamples, seed=seed)
        summary[label] = (0, math.nan, math.nan, math.nan) if row is None else (row.n, row.mean, row.low, row.high)

    # Best first; a variant without any value goes last; equal means keep config order (sort is stable).
    def rank_key(label: str) -> tuple[bool, float]:
        mean = summary[label][1]
        return (True, 0.0) if math.isnan(mean) else (False, parsed.best_first_key(mean))

    order = sorted(results, key=rank_key)
    best = order[0]
    if math.isnan(summary[best][1]):
        raise ValueError(f"no variant has a value of {name} for any query")
    base = baseline if baseline is not None else best

    vs_base = {lab: _paired(name, results[base], results[lab], n_resamples, seed) for lab in order if lab != base}
    vs_best = {lab: vs_base[lab] if base == best else _paired(name, results[best], results[lab], n_resamples, seed)
               for lab in order if lab != best}
    holm_base = _holm({lab: p.p for lab, p in vs_base.items() if p is not None})
    holm_best = _holm({lab: p.p for lab, p in vs_best.items() if p is not None})

    variants = []
    for rank, lab in enumerate(order, start=1):
        n, mean, low, high = summary[lab]
        line = VariantDecision(label=lab, rank=rank, n=n, mean=mean, ci_low=low, ci_high=high,
                               indistinguishable_from_best=lab == best)
        pair = vs_base.get(lab)
        if pair is not None:
            wins, ties, losses = wins_ties_losses(pair.deltas, name)
            line = replace(line, delta=float(pair.deltas.mean()), n_paired=int(pair.deltas.size), p_raw=pair.p,
                            p_holm=holm_base[lab], wins=wins, ties=ties, losses=losses)
        if lab in holm_best:
            line = replace(line, p_vs_best_holm=holm_best[lab], indistinguishable_from_best=holm_best[lab] >= alpha)
        variants.append(line)

    return Decision(name, base, baseline is not None, best, variants, _power(base, order, vs_base, alpha), alpha,
                    confidence)


def _power(base: str, order: Sequence[str], vs_base: Mapping[str, _Paired | None], alpha: float) -> Power | None:
    """Power from the baseline's differences to the strongest other variant whose differences vary.

    The strongest challenger is the one a team would ship instead; a variant equal to the baseline on
    every query (sd 0, e.g. the same ranking under another label) says nothing about the noise, so the
    next one is used. None when no variant was paired with the baseline.
    """
    candidates = [(lab, pair.deltas) for lab in order if (pair := vs_base.get(lab)) is not None]
    if not candidates:
        return None
    varied = [(lab, d) for lab, d in candidates if d.size >= 2 and not bool(np.all(d == d[0]))]
    other, deltas = (varied or candidates)[0]
    return Power.of(base, other, deltas, alpha)


def _holm(p_by_label: Mapping[str, float]) -> dict[str, float]:
    return dict(zip(p_by_label, stats.holm(list(p_by_label.values()))))


# ---- segments by tag ------------------------------------------------------------------------


def query_tags(tags: Sequence[str] | Mapping[str, object]) -> dict[str, tuple[str, ...]]:
    """A query's tags as ``{key: values}``.

    Accepts a mapping (``{topic: billing}``; a list value gives several values) or strings:
    ``"topic:billing"`` is key ``topic``, value ``billing``; a plain ``"billing"`` is key ``tag``.
    """
    out: dict[str, list[str]] = {}
    if isinstance(tags, Mapping):
        for key, value in tags.items():
            values = value if isinstance(value, (list, tuple)) else [value]
            out.setdefault(str(key), []).extend(str(v) for v in values)
    else:
        for tag in tags:
            key, sep, value = str(tag).partition(":")
            if sep and key.strip() and value.strip():
                out.setdefault(key.strip(), []).append(value.strip())
            else:
                out.setdefault(UNTAGGED_KEY, []).append(str(tag).strip())
    return {key: tuple(dict.fromkeys(values)) for key, values in out.items()}


@dataclass(frozen=True)
class Segment:
    """One tag value: how many of the scored queries carry it, and each variant's mean over them."""

    value: str
    count: int
    means: dict[str, float]  # NaN: the variant has no value for any of these queries


@dataclass(frozen=True)
class SegmentTable:
    """Every value of one tag key."""

    key: str
    segments: list[Segment] = field(default_factory=list)


def segment_table(
    results: Mapping[str, Results],
    metric: str,
    tags: Mapping[str, Sequence[str] | Mapping[str, object]],
) -> list[SegmentTable]:
    """Per tag key (sorted), per value (sorted): the count of queries and each variant's mean of ``metric``.

    Queries are those of the first variant's Results (a run scores the same queries for all);
    a variant's mean leaves out its NaN values, as its overall mean does. A query with several
    values of one key counts under each.
    """
    name = str(parse_metric(metric))
    first = next(iter(results.values()))
    by_key: dict[str, dict[str, list[str]]] = {}
    for qid in first.query_ids:
        for key, values in query_tags(tags.get(qid, ())).items():
            for value in values:
                by_key.setdefault(key, {}).setdefault(value, []).append(qid)
    columns = {}
    for label, res in results.items():
        index = {q: i for i, q in enumerate(res.query_ids)}
        columns[label] = (index, np.asarray(res.values[name], dtype=np.float64))
    tables = []
    for key in sorted(by_key):
        segments = []
        for value in sorted(by_key[key]):
            qids = by_key[key][value]
            means = {}
            for label, (index, column) in columns.items():
                picked = np.array([column[index[q]] for q in qids if q in index], dtype=np.float64)
                picked = picked[~np.isnan(picked)]
                means[label] = float(picked.mean()) if picked.size else math.nan
            segments.append(Segment(value, len(qids), means))
        tables.append(SegmentTable(key, segments))
    return tables


# ---- cost: context size ---------------------------------------------------------------------


@dataclass(frozen=True)
class ContextSize:
    """Mean size over queries of the text of the top ``k`` chunks (characters and word tokens)."""

    k: int
    chars: float
    tokens: float


def mean_context_size(
    spans: Mapping[str, Sequence[tuple[str, int, int, float]]],
    documents: Mapping[str, str],
    query_ids: Sequence[str],
    k: int,
    token_cache: dict[tuple[str, int, int], int] | None = None,
) -> ContextSize:
    """Mean over ``query_ids`` of the summed length of the top ``k`` spans (a query without spans: 0).

    Spans are ordered by the ranking rule (score desc, chunk id desc) before the cut. Tokens are
    :func:`rag_eval._core.tokens.count_words` of ``document[start:end]``; ``token_cache`` (keyed by span)
    lets variants that share a chunking count each chunk once.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if not query_ids:
        return ContextSize(k, math.nan, math.nan)
    cache = {} if token_cache is None else token_cache
    chars = tokens = 0
    for qid in query_ids:
        items = spans.get(qid, ())
        by_id = {chunk_id(doc, start, end): (doc, start, end) for doc, start, end, _ in items}
        top = ranked({chunk_id(doc, start, end): score for doc, start, end, score in items})[:k]
        for cid, _ in top:
            doc, start, end = by_id[cid]
            chars += end - start
            key = (doc, start, end)
            if key not in cache:
                cache[key] = count_words(documents[doc][start:end])
            tokens += cache[key]
    return ContextSize(k, chars / len(query_ids), tokens / len(query_ids))
