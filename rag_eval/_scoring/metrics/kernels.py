"""Vectorised ranking kernels: every query at once, float64, no rounding.

Input is a :class:`RankedJudgedRun`, the run already sorted into trec_eval's
order and joined with the judgements; each kernel returns one float64 value per
query. The kernels know nothing of files, dicts, policies or metric names: each
family's record (rag_eval._scoring.metrics.measures) names its kernel, and the
evaluator calls it from there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

GAINS = ("linear", "exponential")
T = TypeVar("T")


@dataclass(frozen=True)
class RankedJudgedRun:
    """A run sorted per query (score desc, doc id desc) and joined with judgements.

    Rows of ``row_*`` are grouped by query index (ascending) and within a query
    by rank. ``judgement_*`` rows hold every judgement of the judged queries.
    """

    n_queries: int
    row_query: np.ndarray  # int64, query index of each retrieved document
    row_pos: np.ndarray  # int64, 0-based rank within the query
    row_grade: np.ndarray  # float64, grade of the document, NaN when unjudged
    judgement_query: np.ndarray  # int64, query index of each judgement
    judgement_grade: np.ndarray  # float64


@dataclass
class KernelContext:
    """Arrays shared by several kernels, computed on first use."""

    data: RankedJudgedRun
    gain: str = "linear"
    relevance_threshold: float = 1.0
    _cache: dict = field(default_factory=dict)

    def cached(self, key: str, compute: Callable[[], T]) -> T:
        """``compute()``, computed once per key."""
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def per_query_sum(self, weights: np.ndarray, query: np.ndarray | None = None) -> np.ndarray:
        """Sum ``weights`` per query (rows of the run unless ``query`` is given)."""
        index = self.data.row_query if query is None else query
        return np.bincount(index, weights=weights, minlength=self.data.n_queries).astype(np.float64, copy=False)

    # ---- shared arrays -------------------------------------------------------------

    @property
    def row_gain(self) -> np.ndarray:
        return self.cached("row_gain", lambda: gain_values(self.data.row_grade, self.gain))

    @property
    def row_discount(self) -> np.ndarray:
        return self.cached("row_discount", lambda: 1.0 / log2_rank(self.data.row_pos + 1))

    @property
    def row_relevant(self) -> np.ndarray:
        # NaN (unjudged) compares False: unjudged documents are not relevant.
        return self.cached("row_relevant", lambda: self.data.row_grade >= self.relevance_threshold)

    @property
    def num_relevant(self) -> np.ndarray:
        """Judged documents with grade >= threshold, per query (trec_eval num_rel)."""
        return self.cached(
            "num_relevant",
            lambda: self.per_query_sum(
                (self.data.judgement_grade >= self.relevance_threshold).astype(np.float64),
                self.data.judgement_query,
            ),
        )

    @property
    def ideal(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(query, 0-based ideal position, gain) of every judgement with gain > 0."""

        def compute():
            gains = gain_values(self.data.judgement_grade, self.gain)
            keep = gains > 0
            query, gains = self.data.judgement_query[keep], gains[keep]
            query, gains = sort_desc_within_groups(query, gains, self.data.n_queries)
            return query, positions_within_groups(query, self.data.n_queries), gains

        return self.cached("ideal", compute)

    @property
    def cumulative_relevant(self) -> np.ndarray:
        """Number of relevant documents at or above each row's rank, per query."""

        def compute():
            rel = self.row_relevant.astype(np.int64)
            total = np.cumsum(rel)
            starts = group_starts(self.data.row_query, self.data.n_queries)
            before = np.concatenate(([0], total))[starts]
            return total - before[self.data.row_query]

        return self.cached("cumulative_relevant", compute)

    def has_relevant(self, graded: bool) -> np.ndarray:
        """Per query: whether it has something relevant to find, so that a metric needing one is defined.

        ``graded``: something with gain > 0 (nDCG's ideal ranking is not empty); else a judgement
        with grade >= the relevance threshold (the binary metrics).
        """
        if graded:
            query, _, _ = self.ideal
            return np.bincount(query, minlength=self.data.n_queries) > 0
        return self.num_relevant > 0


def log2_rank(rank: np.ndarray | int) -> np.ndarray:
    """log2(rank + 1) of 1-based ranks: DCG's discount divides the gain at ``rank`` by it (trec_eval's)."""
    return np.log2(np.asarray(rank, dtype=np.float64) + 1.0)


def gain_values(grades: np.ndarray, gain: str) -> np.ndarray:
    """Gain of each grade: ``g`` or ``2**g - 1`` for g > 0, else 0 (NaN -> 0)."""
    positive = np.where(grades > 0, grades, 0.0)  # NaN > 0 is False
    if gain == "linear":
        return positive
    if gain == "exponential":
        with np.errstate(over="ignore"):  # 2**g past float64 is inf: the caller refuses it (rag_eval._scoring.evaluate)
            return np.exp2(positive) - 1.0
    raise ValueError(f"gain must be one of {GAINS}, got {gain!r}")


def sort_desc_within_groups(groups: np.ndarray, values: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """(groups, values) ordered by group ascending, value descending.

    Grades take few distinct values, so each is replaced by its rank and one
    integer sort does the work of a lexsort.
    """
    if values.size == 0:
        return groups.astype(np.int64), values
    low, high = float(values.min()), float(values.max())
    if high - low < 2**20 and bool((values == np.floor(values)).all()):
        # Whole-number grades (the usual case): the grade itself gives the rank, no np.unique.
        span = int(high - low) + 1
        if n_groups * span < 2**62:
            key = groups.astype(np.int64) * span
            key += (high - values).astype(np.int64)
            key.sort()
            return key // span, high - (key % span)
    distinct, rank = np.unique(values, return_inverse=True)
    span = distinct.size
    if n_groups * span >= 2**62:  # pragma: no cover - astronomically many grades
        order = np.lexsort((-values, groups))
        return groups[order].astype(np.int64), values[order]
    key = groups.astype(np.int64) * span + (span - 1 - rank.ravel())
    key.sort()
    return key // span, distinct[span - 1 - key % span]


def group_starts(sorted_groups: np.ndarray, n_groups: int) -> np.ndarray:
    """Index of the first row of each group in an ascending group array."""
    return np.searchsorted(sorted_groups, np.arange(n_groups), side="left")


def positions_within_groups(sorted_groups: np.ndarray, n_groups: int) -> np.ndarray:
    """0-based position of each row inside its group (groups ascending)."""
    starts = group_starts(sorted_groups, n_groups)
    return np.arange(sorted_groups.size, dtype=np.int64) - starts[sorted_groups]


# ---- kernels: each returns one float64 value per query ----------------------------


def _within(ctx: KernelContext, k: int | None) -> np.ndarray | None:
    return None if k is None else ctx.data.row_pos < k


def _masked(values: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    return values if mask is None else np.where(mask, values, 0.0)


def dcg(ctx: KernelContext, k: int | None) -> np.ndarray:
    """Sum of gain / log2(rank + 1) over the top k (all retrieved when k is None)."""
    return ctx.per_query_sum(_masked(ctx.row_gain * ctx.row_discount, _within(ctx, k)))


def idcg(ctx: KernelContext, k: int | None) -> np.ndarray:
    """DCG of the ideal ranking of all judged documents with gain > 0, cut at k."""
    query, pos, gains = ctx.ideal
    contribution = gains / log2_rank(pos + 1)
    if k is not None:
        contribution = np.where(pos < k, contribution, 0.0)
    return ctx.per_query_sum(contribution, query)


def ndcg(ctx: KernelContext, k: int | None) -> np.ndarray:
    """DCG / IDCG; NaN where IDCG is 0 (the caller applies the no_relevant policy)."""
    top, bottom = dcg(ctx, k), idcg(ctx, k)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), np.nan)


def precision(ctx: KernelContext, k: int | None) -> np.ndarray:
    """Relevant in the top k / k (k even if fewer were retrieved)."""
    return ctx.per_query_sum(_masked(ctx.row_relevant.astype(np.float64), _within(ctx, k))) / k


def recall(ctx: KernelContext, k: int | None) -> np.ndarray:
    """Relevant in the top k / all judged relevant."""
    hits = ctx.per_query_sum(_masked(ctx.row_relevant.astype(np.float64), _within(ctx, k)))
    return _safe_divide(hits, ctx.num_relevant)


def mrr(ctx: KernelContext, k: int | None) -> np.ndarray:
    """1 / rank of the first relevant document within k, else 0."""
    relevant = ctx.row_relevant
    if k is not None:
        relevant = relevant & (ctx.data.row_pos < k)
    query = ctx.data.row_query[relevant]
    pos = ctx.data.row_pos[relevant]
    out = np.zeros(ctx.data.n_queries, dtype=np.float64)
    # Rows are grouped by query in rank order, so a query's first row is its best rank.
    first = np.ones(query.size, dtype=bool)
    np.not_equal(query[1:], query[:-1], out=first[1:])
    out[query[first]] = 1.0 / (pos[first] + 1.0)
    return out


def average_precision(ctx: KernelContext, k: int | None) -> np.ndarray:
    """Sum of precision at each relevant rank within k / all judged relevant."""
    precision_here = ctx.cumulative_relevant / (ctx.data.row_pos + 1.0)
    weights = np.where(ctx.row_relevant, precision_here, 0.0)
    return _safe_divide(ctx.per_query_sum(_masked(weights, _within(ctx, k))), ctx.num_relevant)


def r_precision(ctx: KernelContext, k: int | None) -> np.ndarray:
    """Relevant in the top R / R, where R is the number of judged relevant."""
    r = ctx.num_relevant
    within = ctx.data.row_pos < r[ctx.data.row_query]
    hits = ctx.per_query_sum(np.where(within & ctx.row_relevant, 1.0, 0.0))
    return _safe_divide(hits, r)


def hit_rate(ctx: KernelContext, k: int | None) -> np.ndarray:
    """1 if any relevant document is in the top k, else 0."""
    hits = ctx.per_query_sum(_masked(ctx.row_relevant.astype(np.float64), _within(ctx, k)))
    return (hits > 0).astype(np.float64)


def judged(ctx: KernelContext, k: int | None) -> np.ndarray:
    """Share of the top k positions holding a judged document (divides by k)."""
    is_judged = (~np.isnan(ctx.data.row_grade)).astype(np.float64)
    return ctx.per_query_sum(_masked(is_judged, _within(ctx, k))) / k


def bpref(ctx: KernelContext, k: int | None) -> np.ndarray:
    """trec_eval's bpref (m_bpref.c): per relevant retrieved document, the share of preferences kept, / R.

    R: judged documents with grade >= threshold; N: judged documents with 0 <= grade < threshold
    (retrieved or not). Unjudged documents and negative grades are skipped, as if absent. A relevant
    document below n judged non-relevant ones adds 1 - min(n, R) / min(N, R) (1 when n = 0); the sum
    is divided by R (0 when R = 0).
    """
    data, threshold = ctx.data, ctx.relevance_threshold
    grade = data.row_grade
    nonrelevant = ((grade >= 0) & (grade < threshold)).astype(np.int64)  # NaN (unjudged) compares False
    total = np.cumsum(nonrelevant)
    starts = group_starts(data.row_query, data.n_queries)
    before = np.concatenate(([0], total))[starts]
    above = (total - nonrelevant - before[data.row_query]).astype(np.float64)  # judged non-relevant ranked above
    judged_nonrelevant = ctx.per_query_sum(
        ((data.judgement_grade >= 0) & (data.judgement_grade < threshold)).astype(np.float64), data.judgement_query
    )
    r = ctx.num_relevant
    row_r = r[data.row_query]
    with np.errstate(invalid="ignore", divide="ignore"):
        kept = 1.0 - np.minimum(above, row_r) / np.minimum(judged_nonrelevant[data.row_query], row_r)
    weights = np.where(ctx.row_relevant, np.where(above > 0, kept, 1.0), 0.0)
    return _safe_divide(ctx.per_query_sum(weights), r)


def _safe_divide(top: np.ndarray, bottom: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), 0.0)
