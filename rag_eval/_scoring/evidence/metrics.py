"""Evidence metrics of every query at once: characters of evidence covered by the retrieved spans.

For a query with evidence E (the union of its evidence spans, per document) and the
spans R it reads (its top k, or its best spans that fit a budget), docs/semantics.md says:

- covered = characters of E inside at least one span of R
- |E| = characters of the evidence, and the context = sum of the lengths of R (a span counted as
  often as retrieved)

and each family's kernel (rag_eval._scoring.metrics.evidence_kernels, named by its record) turns
these three counts into its value: recall, precision, IoU. Grades play no part.

All evidence and all spans lie on one line (rag_eval._scoring.evidence.intervals), one segment
per (query, document) that holds evidence; spans of other documents can cover nothing and only
add their lengths. Each cutoff costs a mask, a running maximum and two
binary searches over the spans that lie in evidence documents.
"""

from __future__ import annotations

import numpy as np

from rag_eval._core.errors import InputFormatError
from rag_eval._scoring.evidence.intervals import Measure, intersect, on_one_line, union
from rag_eval._scoring.evidence.ranks import RankedSpans
from rag_eval._scoring.metrics.evidence_kernels import EvidenceCounts
from rag_eval._scoring.metrics.measures import Metric


class EvidenceMetrics:
    """Covered characters and context sizes of the ranked spans, for any cutoff or budget."""

    def __init__(
        self,
        ranked: RankedSpans,
        evidence_query: np.ndarray,
        evidence_doc: np.ndarray,
        evidence_start: np.ndarray,
        evidence_end: np.ndarray,
        n_docs: int,
        token_lengths: np.ndarray | None = None,
    ) -> None:
        self.ranked = ranked
        n = ranked.n_queries
        self.n_docs = n_docs
        pair_key = evidence_query * n_docs + evidence_doc
        self.pairs, pair_of = np.unique(pair_key, return_inverse=True)
        ends = [evidence_end.max(initial=0), ranked.end.max(initial=0)]
        self.width = int(max(ends)) + 1
        if (self.pairs.size + 1) * self.width >= 2**62:  # pragma: no cover - beyond any real collection
            raise InputFormatError(
                "evidence: too many (query, document) pairs with offsets this large to lay on one line"
            )
        start, end = on_one_line(pair_of.ravel(), evidence_start, evidence_end, self.width)
        order = np.argsort(start, kind="stable")
        first, self.evidence_start, self.evidence_end = union(start[order], end[order])
        self.evidence_piece_query = evidence_query[order][first]
        self.measure = Measure(self.evidence_start, self.evidence_end)
        self.evidence_chars = np.bincount(
            self.evidence_piece_query, weights=self.evidence_end - self.evidence_start, minlength=n
        )
        # Retrieved spans in a (query, document) that holds evidence: the only ones that can cover any.
        hit, pair = _rows_in_pairs(self.pairs, n_docs, ranked)
        hit_start, hit_end = on_one_line(pair, ranked.start[hit], ranked.end[hit], self.width)
        order = np.argsort(hit_start, kind="stable")
        self.hit_start, self.hit_end = hit_start[order], hit_end[order]
        self.hit_query, self.hit_pos = ranked.query[hit][order], ranked.pos[hit][order]
        self.char_total = np.cumsum(ranked.length)  # characters of the ranked spans up to each row
        self.token_total = None if token_lengths is None else np.cumsum(token_lengths)
        self._covered: dict[tuple[int, str | None], np.ndarray] = {}

    # ---- what a query reads -------------------------------------------------------------

    def context(self, k: int, unit: str | None) -> np.ndarray:
        """Spans each query reads: its top k, or the most of its best spans whose lengths fit a budget of k."""
        counts = self.ranked.counts
        if unit is None:
            # A cutoff past int64 (evidence_recall@9223372036854775808 parses) reads every span, as any k >= the
            # longest ranking does: clamp it to that, so that numpy never converts the int.
            return np.minimum(counts, min(k, int(counts.max(initial=0))))
        total = self.char_total if unit == "chars" else self.token_total
        if total is None:
            raise ValueError(f"no lengths in {unit} were given")  # the caller checks first (api)
        # A budget of at least every span's length together fits everything: clamp it there, so that before + k
        # below stays an int64 for any budget (2^63 chars parses).
        k = min(k, int(total[-1]) if total.size else 0)
        first = self.ranked.first
        before = np.where(first > 0, total[np.maximum(first - 1, 0)], 0) if total.size else np.zeros_like(first)
        # Lengths are >= 0, so the running total is sorted: the spans that fit are a prefix of the query's.
        fits = np.searchsorted(total, before + k, side="right") - first
        return np.clip(fits, 0, counts)

    def context_chars(self, reads: np.ndarray) -> np.ndarray:
        """Sum of the lengths (characters) of the spans each query reads."""
        first, total = self.ranked.first, self.char_total
        if total.size == 0:
            return np.zeros(reads.shape, dtype=np.float64)
        last = np.maximum(first + reads - 1, 0)
        before = np.where(first > 0, total[np.maximum(first - 1, 0)], 0)
        return np.where(reads > 0, total[np.minimum(last, total.size - 1)] - before, 0).astype(np.float64)

    def covered_pieces(self, reads: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(first hit, start, end) of the union of the spans each query reads, within evidence documents."""
        keep = self.hit_pos < reads[self.hit_query]
        start, end = self.hit_start[keep], self.hit_end[keep]  # still sorted: a mask keeps the order
        first, start, end = union(start, end)
        return np.flatnonzero(keep)[first], start, end

    def covered(self, reads: np.ndarray, key: tuple[int, str | None]) -> np.ndarray:
        """Characters of each query's evidence inside the spans it reads (cached per cutoff)."""
        if key not in self._covered:
            first, start, end = self.covered_pieces(reads)
            inside = self.measure.within(start, end)
            self._covered[key] = np.bincount(
                self.hit_query[first], weights=inside, minlength=self.ranked.n_queries
            ).astype(np.float64)
        return self._covered[key]

    # ---- the metrics --------------------------------------------------------------------

    def values(self, metric: Metric) -> tuple[np.ndarray, np.ndarray]:
        """(per-query value, defined): the family's kernel on the counts; NaN and False for a query without evidence."""
        if metric.k is None or not metric.is_evidence:
            raise ValueError(f"not an evidence metric with a cutoff: {metric}")  # parse_metric guarantees both
        reads = self.context(metric.k, metric.unit)
        counts = EvidenceCounts(self.covered(reads, (metric.k, metric.unit)), self.evidence_chars, self.context_chars(reads))
        defined = counts.evidence > 0
        return np.where(defined, metric.family.kernel(counts), np.nan), defined

    def coverage(self, reads: np.ndarray) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
        """((query, doc, start, end) of covered evidence, the same of evidence no span read covers)."""
        _, start, end = self.covered_pieces(reads)
        covered = intersect(start, end, self.evidence_start, self.evidence_end)
        missed = intersect(start, end, self.evidence_start, self.evidence_end, keep_b_only=True)
        return self._off_line(*covered), self._off_line(*missed)

    def _off_line(self, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, ...]:
        pair = start // self.width
        key = self.pairs[pair]
        offset = pair * self.width
        return key // self.n_docs, key % self.n_docs, start - offset, end - offset


_ROWS = 1 << 18  # ranked rows looked up at once: their temporaries stay in the CPU's cache


def _rows_in_pairs(pairs: np.ndarray, n_docs: int, ranked: RankedSpans) -> tuple[np.ndarray, np.ndarray]:
    """(ranked rows whose (query, document) is one of ``pairs``, the index of that pair).

    ``pairs`` holds query * n_docs + doc, sorted. A query's evidence lies in a few documents:
    each row is compared with its query's pairs, one pair at a time, a pass per pair of the query
    with the most (one binary search per row when some query has evidence in many documents).
    """
    if pairs.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    pair_query = pairs // n_docs
    pair_doc = pairs - pair_query * n_docs
    first = np.searchsorted(pair_query, np.arange(ranked.n_queries + 1))  # query q's pairs: first[q]..first[q+1]
    count = np.diff(first)
    most = int(count.max(initial=0))
    found: list[tuple[np.ndarray, np.ndarray]] = []
    for low in range(0, ranked.query.size, _ROWS):
        query, doc = ranked.query[low : low + _ROWS], ranked.doc[low : low + _ROWS]
        if most > 8:
            key = query * n_docs + doc
            where = np.minimum(np.searchsorted(pairs, key), pairs.size - 1)
            where[pairs[where] != key] = -1
        else:
            base, size = first[query], count[query]
            where = np.full(query.size, -1, dtype=np.int64)
            for j in range(most):
                candidate = np.minimum(base + j, pairs.size - 1)
                match = (pair_doc[candidate] == doc) & (size > j)  # a query's pairs are distinct: one match at most
                where[match] = candidate[match]
        hit = np.flatnonzero(where >= 0)
        found.append((hit + low, where[hit]))
    if not found:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    return np.concatenate([h for h, _ in found]), np.concatenate([w for _, w in found])
