"""Run + judgements + metrics -> :class:`Results`, with trec_eval's semantics.

Each query's documents are ranked by the rule of rag_eval.ranking (score descending,
ties by doc id descending in bytes, as trec_eval), here vectorised over all queries
(:func:`trec_ranks`); a rank column in the input, if any, is ignored.
Every judged query enters the mean (a query the retriever did not answer scores
0); queries without judgements are listed, never scored. See SEMANTICS.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import chain, repeat
from typing import Any

import numpy as np

from rag_eval.errors import EvaluationError, InputFormatError
from rag_eval.metrics.kernels import GAINS, KernelContext, RankedJudgedRun, compute, has_relevant
from rag_eval.metrics.measures import Metric, parse_metrics
from rag_eval.packed_ids import PackedIds
from rag_eval.ranking import outranks
from rag_eval.results import Results
from rag_eval.tables import (
    FlatTable,
    byte_order_keys,
    find_pairs,
    from_dataframe,
    from_nested,
    pair_index,
)

AGGREGATIONS = ("macro", "micro")
NO_RELEVANT_POLICIES = ("skip", "zero", "error")


@dataclass(frozen=True)
class EvaluationOptions:
    """The choices that change what a number means (printed in every report)."""

    gain: str = "linear"
    aggregation: str = "macro"
    no_relevant: str = "skip"
    relevance_threshold: float = 1.0

    def __post_init__(self) -> None:
        _check_choice("gain", self.gain, GAINS)
        _check_choice("aggregation", self.aggregation, AGGREGATIONS)
        _check_choice("no_relevant", self.no_relevant, NO_RELEVANT_POLICIES)
        threshold = self.relevance_threshold
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not np.isfinite(threshold):
            raise InputFormatError(f"relevance_threshold must be a finite number, got {threshold!r}")
        if threshold <= 0:
            raise InputFormatError(
                f"relevance_threshold must be > 0 (grades <= 0 are never relevant), got {threshold!r}"
            )
        object.__setattr__(self, "relevance_threshold", float(threshold))

    def to_dict(self) -> dict[str, Any]:
        """Plain dict, as stored in results files."""
        return {
            "gain": self.gain,
            "aggregation": self.aggregation,
            "no_relevant": self.no_relevant,
            "relevance_threshold": self.relevance_threshold,
            "discount": "1/log2(rank+1)",
            "ties": "score descending, then doc id descending (trec_eval)",
            "ideal": "all judged documents with grade > 0, retrieved or not",
        }


def evaluate(
    judgements: Mapping | Any,
    run: Mapping | Any,
    metrics: Iterable[str | Metric] | str,
    *,
    gain: str = "linear",
    aggregation: str = "macro",
    no_relevant: str = "skip",
    relevance_threshold: float = 1,
) -> Results:
    """Score ``run`` against ``judgements`` on ``metrics``, per query and overall.

    ``judgements`` is ``{qid: {doc_id: grade}}`` and ``run`` is
    ``{qid: {doc_id: score}}``, or pandas DataFrames with columns qid, doc_id and
    grade / score. Inputs are never mutated. Options are those of SEMANTICS.md.
    """
    options = EvaluationOptions(gain, aggregation, no_relevant, relevance_threshold)
    parsed = parse_metrics([metrics] if isinstance(metrics, str) else metrics)
    return evaluate_tables(_table(judgements, "grade", "judgements"), _table(run, "score", "run"), parsed, options)


@dataclass(frozen=True)
class JoinedRun:
    """A run ranked and joined with its judgements: everything the metrics need.

    Once this exists the tables it came from can go, which is how the command line
    keeps its peak memory down on large files.
    """

    ranked: RankedJudgedRun
    query_ids: list[str]  # judged queries, in trec_eval's order
    unjudged: list[str]  # the run's queries without judgements
    unanswered: list[str]  # judged queries the run did not answer


def evaluate_tables(
    judgements: FlatTable, run: FlatTable, metrics: tuple[Metric, ...], options: EvaluationOptions
) -> Results:
    """:func:`evaluate` on already flattened and checked tables."""
    return score(prepare(judgements, run), metrics, options)


def score(joined: JoinedRun, metrics: tuple[Metric, ...], options: EvaluationOptions) -> Results:
    """Every metric of a :class:`JoinedRun`, per query and over the dataset."""
    query_ids, unjudged, unanswered = joined.query_ids, joined.unjudged, joined.unanswered
    ctx = KernelContext(joined.ranked, gain=options.gain, relevance_threshold=options.relevance_threshold)
    values: dict[str, np.ndarray] = {}
    aggregate: dict[str, float] = {}
    left_out: dict[str, tuple[str, ...]] = {}
    for metric in metrics:
        per_query = compute(ctx, metric)
        defined = has_relevant(ctx, metric) if metric.uses_relevance else np.ones(len(query_ids), dtype=bool)
        if not defined.all():
            missing = tuple(query_ids[i] for i in np.flatnonzero(~defined))
            if options.no_relevant == "error":
                raise EvaluationError(
                    f"metric {metric}: {len(missing)} judged quer{'y has' if len(missing) == 1 else 'ies have'} "
                    f"no relevant document ({', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''}); "
                    "judge a relevant document for each, or set no_relevant to skip or zero"
                )
            if options.no_relevant == "skip":
                per_query = np.where(defined, per_query, np.nan)
                left_out[str(metric)] = missing
            else:
                per_query = np.where(defined, per_query, 0.0)
        values[str(metric)] = per_query
        aggregate[str(metric)] = _aggregate(ctx, metric, per_query, defined, options)
    return Results(
        metrics=metrics,
        query_ids=tuple(query_ids),
        values=values,
        aggregate=aggregate,
        options=options.to_dict(),
        left_out=left_out,
        unjudged_queries=tuple(unjudged),
        unanswered_queries=tuple(unanswered),
    )


def _aggregate(
    ctx: KernelContext, metric: Metric, per_query: np.ndarray, defined: np.ndarray, options: EvaluationOptions
) -> float:
    if options.aggregation == "micro" and metric.name == "ndcg":
        from rag_eval.metrics.kernels import dcg, idcg

        keep = defined if options.no_relevant == "skip" else np.ones_like(defined)
        total_ideal = float(idcg(ctx, metric.k)[keep].sum())
        return float(dcg(ctx, metric.k)[keep].sum() / total_ideal) if total_ideal > 0 else float("nan")
    included = per_query[~np.isnan(per_query)]
    return float(included.mean()) if included.size else float("nan")


def prepare(judgements: FlatTable, run: FlatTable) -> JoinedRun:
    """Rank the run in trec_eval order and join it with the judgements.

    Keeps the judged documents the run retrieved (query, rank, grade), the judged
    query ids (sorted as trec_eval sorts topics), the run's queries without
    judgements, and the judged queries the run did not answer. Documents without
    a judgement never change a metric, so they are ranked but not kept.
    """
    # Judged queries, in trec_eval's order (byte order of the id).
    # (Built with C-level dict and set calls: there can be hundreds of thousands of queries.)
    judged_keys = sorted(_present_keys(judgements))
    judged_index = dict(zip(judged_keys, range(len(judged_keys))))
    jq = _recode(judgements.query_codes, judgements.query_keys, judged_index)

    run_queries_present = _present_keys(run)
    unjudged = sorted(run_queries_present.difference(judged_index))
    unanswered = sorted(set(judged_keys).difference(run_queries_present))

    # Join on (query, doc): each judgement of an answered query looks for its run row.
    run_code = dict(zip(run.query_keys, range(len(run.query_keys))))
    query_run_code = np.fromiter(
        map(run_code.get, judgements.query_keys, repeat(-1)), dtype=np.int64, count=len(judgements.query_keys)
    )
    as_run_code = query_run_code[judgements.query_codes] if len(judgements) else np.empty(0, np.int64)
    joined = _join_dicts(judgements, run, query_run_code, as_run_code)
    if joined is not None:
        judged_rows, ranks = joined
    else:
        ranker = RunRanker(run, background=True)  # a run out of order is sorted while the pairs are found
        kind = _doc_kind(judgements, run)
        index = pair_index(run, kind)  # also rejects a document listed twice for one query
        if bool((as_run_code >= 0).all()):  # the run answered every judged query
            judged_rows, run_rows = find_pairs(index, run, as_run_code, judgements, None)
        else:
            candidates = np.flatnonzero(as_run_code >= 0)
            where, run_rows = find_pairs(index, run, as_run_code[candidates], judgements, candidates)
            judged_rows = candidates[where]
        del as_run_code  # before ranking: it adds to the peak memory
        ranks = ranker.ranks(run_rows)

    n = len(judged_keys)
    query, pos, grade = _sort_by_query_and_rank(jq[judged_rows], ranks, judgements.values[judged_rows])
    prepared = RankedJudgedRun(
        n_queries=n,
        row_query=query,
        row_pos=pos,
        row_grade=grade,
        judgement_query=jq,
        judgement_grade=judgements.values,
    )
    return JoinedRun(prepared, judged_keys, unjudged, unanswered)


def _join_dicts(
    judgements: FlatTable, run: FlatTable, query_run_code: np.ndarray, as_run_code: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """(judgement rows, their ranks) for judgements and a run given as dicts, or None.

    The usual case: the run lists each query's documents by descending score (as a
    retriever returns them). Then each judged document is looked up in its query's
    dict (the dict's own hash table, exact), and its rank is found by binary search
    of its score among the query's scores; no run doc id is hashed or sorted. Only
    tied scores need the doc ids compared. None means: use the general join.
    """
    judged_dicts, run_dicts = judgements._cache.get("dicts"), run._cache.get("dicts")
    if judged_dicts is None or run_dicts is None:
        return None
    codes, values = run.query_codes, run.values
    n = values.size
    if n > 1 and not bool(np.all((codes[1:] != codes[:-1]) | (values[1:] <= values[:-1]))):
        return None  # some query is not in descending score order: sort it (general join)
    none = np.empty(0, dtype=np.int64)
    if n == 0 or not len(judgements):
        return none, none
    lengths = run._cache["lengths"]
    ends = np.cumsum(lengths)
    starts = ends - lengths
    missing = float("nan")
    empty: dict[str, float] = {}
    # The run's score of every judged document; NaN where the run did not retrieve it
    # (run scores are never NaN).
    scores = np.fromiter(
        chain.from_iterable(
            map((run_dicts[code] if code >= 0 else empty).get, judged, repeat(missing))
            for judged, code in zip(judged_dicts, query_run_code.tolist())
        ),
        dtype=np.float64,
        count=len(judgements),
    )
    rows = np.flatnonzero(~np.isnan(scores))
    score = scores[rows]
    code = as_run_code[rows]
    lo, hi = starts[code], ends[code]
    # First row of the query with a score <= the document's (scores descend): its rank.
    for _ in range(int(lengths.max()).bit_length()):
        mid = (lo + hi) >> 1
        right = values[np.minimum(mid, n - 1)] > score
        right &= lo < hi
        lo = np.where(right, mid + 1, lo)
        hi = np.where(right, hi, mid)
    ranks = lo - starts[code]
    tied = np.flatnonzero((lo + 1 < ends[code]) & (values[np.minimum(lo + 1, n - 1)] == score))
    if tied.size:
        # Documents with the same score: the ranking rule orders them by doc id.
        docs = judgements.docs
        for k in tied.tolist():
            s, doc = score[k], docs[rows[k]]
            ranks[k] += sum(1 for d, v in run_dicts[code[k]].items() if v == s and outranks(d, v, doc, s))
    return rows, ranks


def _doc_kind(judgements: FlatTable, run: FlatTable) -> str:
    """How both tables' doc ids are compared: packed UTF-8 when one side has them."""
    if judgements.packed_docs is None and run.packed_docs is None:
        return "str"
    for table in (judgements, run):
        if table.packed_docs is None:
            try:
                table.packed_docs = PackedIds.from_strings(table.docs)
            except ValueError as error:  # a NUL inside an id would match the id without it
                raise InputFormatError(f"{error}; ids may not hold control characters") from None
    return "packed"


def _present_keys(table: FlatTable) -> set[str]:
    """Ids of the queries that have at least one row."""
    if not len(table):
        return set()
    if table._cache.get("all_keys_have_rows"):
        return set(table.query_keys)
    keys = table.query_keys
    return {keys[c] for c in np.flatnonzero(np.bincount(table.query_codes, minlength=len(keys))).tolist()}


def _sort_by_query_and_rank(query: np.ndarray, rank: np.ndarray, grade: np.ndarray):
    """Rows ordered by query, then rank (the order the kernels expect)."""
    if query.size == 0:
        return query.astype(np.int64), rank.astype(np.int64), grade.astype(np.float64)
    rank_span = int(rank.max()) + 1
    row_span = query.size
    if (int(query.max()) + 1) * rank_span * row_span < 2**62:
        # One integer sort of (query, rank, row) keys, in place where possible: at this point
        # of a large evaluation every temporary adds to the peak memory.
        key = query.astype(np.int64)
        key *= rank_span
        key += rank
        key *= row_span
        key += np.arange(row_span)
        key.sort()
        order = key % row_span
        sorted_grade = grade[order]
        del order
        key //= row_span
        sorted_rank = key % rank_span
        key //= rank_span
        return key, sorted_rank, sorted_grade
    order = np.lexsort((rank, query))
    return query[order].astype(np.int64), rank[order].astype(np.int64), grade[order]


def trec_ranks(run: FlatTable, rows: np.ndarray) -> np.ndarray:
    """0-based rank of each of ``rows`` within its query, by the rule of rag_eval.ranking.

    The rule (score descending, ties by doc id descending in bytes, as trec_eval) is
    applied to all queries at once here; tests/test_kernels.py checks these ranks
    against ``ranking.ranked_ids``. See :class:`RunRanker`.
    """
    return RunRanker(run).ranks(rows)


class RunRanker:
    """Ranks rows of a run within their queries (:func:`trec_ranks`), in two steps.

    Runs written by a retriever usually list each query's documents together and by
    descending score: then only tied rows need ordering, and there is nothing to
    prepare. Any other line order takes one sort of packed (query, score, row) keys,
    done when the ranker is made; with ``background`` it runs on a second thread
    (numpy releases the GIL) while the caller does other work, such as the join.
    """

    def __init__(self, run: FlatTable, background: bool = False) -> None:
        self.run = run
        self._sorted: np.ndarray | None = None
        self._score_range: tuple[float, float] = (0.0, 0.0)
        self._thread = None
        self._failure: list[BaseException] = []
        self.in_order = True
        codes, scores = run.query_codes, run.values
        if len(run) < 2:
            return
        self._same = codes[1:] == codes[:-1]
        if bool(np.all(~self._same | (scores[1:] <= scores[:-1]))):
            self._starts = np.concatenate(([0], np.flatnonzero(~self._same) + 1))
            if np.bincount(codes[self._starts]).max() <= 1:  # each query's rows are together
                return
        self.in_order = False
        self._same = None
        n = len(run)
        self._row_bits = max(1, (n - 1).bit_length())
        self._query_bits = max(1, (len(run.query_keys) - 1).bit_length())
        if self._row_bits + self._query_bits > 64:  # pragma: no cover - over 2**32 rows: far past any memory
            raise EvaluationError(f"a run of {n} rows is too large to rank")
        if background and n >= _BACKGROUND_ROWS:
            import threading

            self._thread = threading.Thread(target=self._sort, daemon=True)
            self._thread.start()
        else:
            self._sort()

    def _sort(self) -> None:
        try:
            values = self.run.values
            self._score_range = (float(values.max()), float(values.min()))
            keys = _sort_keys(self.run, self._row_bits, self._query_bits, score_range=self._score_range)
            keys.sort()
            self._sorted = keys
        except BaseException as error:  # noqa: BLE001 - re-raised by ranks(), in the caller's thread
            self._failure.append(error)

    def ranks(self, rows: np.ndarray) -> np.ndarray:
        """0-based rank of each of ``rows`` within its query."""
        rows = np.asarray(rows, dtype=np.int64)
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._failure:
            raise self._failure[0]
        if len(self.run) < 2 or rows.size == 0:
            return np.zeros(rows.size, dtype=np.int64)
        if self.in_order:
            run = self.run
            return _ranks_in_order(run, self._same, run.values, run.query_codes, self._starts, rows)
        if self._sorted is None:  # pragma: no cover - _sort() either sorts or records its failure
            raise RuntimeError("the run's keys were not sorted")
        return _ranks_by_sorting(self.run, self._sorted, self._row_bits, self._query_bits, rows, self._score_range)


_BACKGROUND_ROWS = 1 << 16  # smaller runs are sorted at once: a thread would cost more than it saves


_SIGN = np.uint64(63)
_ONE = np.uint64(1)
_BLOCK_ROWS = 1 << 16  # rows per step where a whole-length temporary would add to the peak memory


def _descending_keys(scores: np.ndarray) -> np.ndarray:
    """uint64 keys whose ascending order is the scores' descending order (equal scores, equal keys)."""
    keys = (scores + 0.0).view(np.uint64)  # a new array; + 0.0 turns -0.0 into 0.0, which ties with it
    flip = keys >> _SIGN
    flip -= _ONE  # negative scores: 0; others: all ones
    flip >>= _ONE
    keys ^= flip  # others: 2**63 - 1 - bits (higher score, smaller key); negatives keep their bits (above)
    return keys


def _sort_keys(
    run: FlatTable, row_bits: int, query_bits: int, rows: np.ndarray | None = None, score_range: tuple | None = None
) -> np.ndarray:
    """Each row's (query code, scaled descending score, row) packed in a uint64, from the high bits down.

    The score takes the bits left, spread over the run's range: a higher score never
    gets a larger key, but close scores may share one. Built a block of rows at a
    time, so that no temporary of the run's length is made. ``rows``: the keys of
    these rows only; ``score_range``: the run's (highest, lowest) score, if known.
    """
    all_scores = run.values
    scores = all_scores if rows is None else all_scores[rows]
    codes = run.query_codes if rows is None else run.query_codes[rows]
    numbers = None if rows is None else rows.astype(np.uint64)
    n = scores.size
    score_bits = 64 - row_bits - query_bits  # >= 0 for fewer than 2**32 rows (codes < rows)
    keys = np.empty(n, dtype=np.uint64)
    high, low = score_range or (float(all_scores.max()), float(all_scores.min()))
    top = float(2 ** min(max(score_bits, 0), 53) - 1)  # a whole number float64 holds exactly
    factor = top / (high - low) if high > low else 0.0  # Python floats: inf, not an error, on overflow
    # Scaled as floats where the range and the factor are finite; else (infinite scores, a range
    # of a few subnormals) by the order of the scores' bits.
    as_floats = score_bits > 0 and bool(np.isfinite(high - low)) and bool(np.isfinite(factor))
    if score_bits > 0 and not as_floats:
        ends = _descending_keys(np.array([high, low]))
        shift = np.uint64(max(0, int(ends[1] - ends[0]).bit_length() - score_bits))
    row_shift, query_shift = np.uint64(row_bits), np.uint64(64 - query_bits)
    for lo in range(0, n, _BLOCK_ROWS):
        hi = min(lo + _BLOCK_ROWS, n)
        if as_floats:
            # (high - score) / range, spread over the bits: every step rounds monotonically.
            part = np.subtract(high, scores[lo:hi])
            part *= factor
            np.minimum(part, top, out=part)
            block = part.astype(np.uint64)
        elif score_bits > 0:
            block = _descending_keys(scores[lo:hi])
            block -= ends[0]
            block >>= shift
        else:
            block = np.zeros(hi - lo, dtype=np.uint64)
        block <<= row_shift
        block |= codes[lo:hi].astype(np.uint64) << query_shift
        block |= np.arange(lo, hi, dtype=np.uint64) if numbers is None else numbers[lo:hi]
        keys[lo:hi] = block
    return keys


def _ranks_by_sorting(
    run: FlatTable, keys: np.ndarray, row_bits: int, query_bits: int, rows: np.ndarray, score_range: tuple
) -> np.ndarray:
    """The ranks of ``rows``, given the run's sorted keys (:func:`_sort_keys`).

    A row's rank is the position of its key less the position of its query's first
    key. Rows whose query and scaled score are the same (tied scores, or scores closer
    than the scaling keeps apart) are put in exact order (score, then doc id
    descending) among themselves.
    """
    n = len(run)
    if rows.size > 1 << row_bits:  # more rows asked for than there are (repeats): a part at a time
        parts = [rows[lo : lo + n] for lo in range(0, rows.size, n)]
        return np.concatenate([_ranks_by_sorting(run, keys, row_bits, query_bits, p, score_range) for p in parts])
    high = np.uint64(64 - query_bits)
    row_shift = np.uint64(row_bits)
    row_mask = (_ONE << row_shift) - _ONE
    # The wanted rows' keys, sorted by one plain sort: their row bits hold their index in
    # ``rows`` while sorting (fewer than 2**row_bits of them), and the row again after it.
    wanted = _sort_keys(run, row_bits, query_bits, rows, score_range)
    wanted &= ~row_mask
    wanted |= np.arange(rows.size, dtype=np.uint64)
    wanted.sort()
    order = (wanted & row_mask).astype(np.int64)
    wanted &= ~row_mask
    wanted |= rows[order].astype(np.uint64)
    at = np.searchsorted(keys, wanted)  # each wanted row's own key: its position
    # Where each query's keys begin: searched once per query (the wanted keys are sorted by query).
    base = (wanted >> high) << high
    new_query = np.ones(base.size, dtype=bool)
    np.not_equal(base[1:], base[:-1], out=new_query[1:])
    query_first = np.searchsorted(keys, base[new_query])[np.cumsum(new_query) - 1]
    ranks = np.empty(rows.size, dtype=np.int64)
    ranks[order] = at - query_first
    # Keys equal but for the row: the sort put them in row order; put them in the rule's order.
    prefix = wanted >> row_shift
    shared = np.zeros(at.size, dtype=bool)
    inner = at > 0
    shared[inner] = keys[at[inner] - 1] >> row_shift == prefix[inner]
    inner = at + 1 < n
    shared[inner] |= keys[at[inner] + 1] >> row_shift == prefix[inner]
    if shared.any():
        tied = order[shared]
        first, place = _places_among_equal_keys(run, keys, row_bits, rows[tied], prefix[shared])
        ranks[tied] = first - query_first[shared] + place
    return ranks


def _places_among_equal_keys(
    run: FlatTable, keys: np.ndarray, row_bits: int, rows: np.ndarray, prefixes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For ``rows`` whose key prefixes (their key without the row bits) other rows share:
    (position in the sorted ``keys`` of their prefix's first key, their place among the
    rows of that prefix by the exact rule: score descending, then doc id descending)."""
    shift = np.uint64(row_bits)
    row_mask = (_ONE << shift) - _ONE
    distinct, which = np.unique(prefixes, return_inverse=True)
    which = which.ravel()
    begin = np.searchsorted(keys, distinct << shift)
    end = np.searchsorted(keys, (distinct << shift) | row_mask, side="right")
    sizes = end - begin
    group_start = np.cumsum(sizes) - sizes  # of each group among the members
    group = np.repeat(np.arange(distinct.size), sizes)
    members_keys = keys[np.repeat(begin - group_start, sizes) + np.arange(group.size)]  # grouped, rows ascending
    members = (members_keys & row_mask).astype(np.int64)
    order = np.lexsort((-byte_order_keys(run, members), _descending_keys(run.values[members]), group))
    place = np.empty(members.size, dtype=np.int64)
    place[order] = np.arange(members.size) - group_start[group]  # groups stay where they were
    # Each row asked for among the members: (group, row) keys are sorted.
    at = np.searchsorted(group.astype(np.uint64) << shift | members_keys & row_mask,
                         which.astype(np.uint64) << shift | rows.astype(np.uint64))
    return begin[which], place[at]


def _ranks_in_order(
    run: FlatTable, same: np.ndarray, scores: np.ndarray, codes: np.ndarray, starts: np.ndarray, at: np.ndarray
) -> np.ndarray:
    """Ranks of rows ``at`` of a run whose rows are grouped by query and by descending score.

    ``same[i]``: rows i and i + 1 have the same query; ``starts``: where each query's
    rows begin. Runs of equal scores within a query are put in descending doc id order.
    """
    start_of = np.zeros(len(run.query_keys), dtype=np.int64)
    start_of[codes[starts]] = starts
    group_first = start_of[codes[at]]
    place = at
    tied_next = same & (scores[1:] == scores[:-1])
    if tied_next.any():
        tied = np.zeros(scores.size, dtype=bool)
        tied[:-1] |= tied_next
        tied[1:] |= tied_next
        tied_at = np.flatnonzero(tied)
        first = np.ones(tied_at.size, dtype=bool)
        first[1:] = ~tied_next[tied_at[:-1]]
        segment = np.cumsum(first) - 1
        doc_rank = byte_order_keys(run, tied_at)
        within = np.lexsort((-doc_rank, segment))  # doc id descending inside each segment
        new_place = np.empty(tied_at.size, dtype=np.int64)
        new_place[within] = tied_at  # segments are runs of consecutive positions
        moved = np.flatnonzero(tied[at])
        place = at.copy()
        place[moved] = new_place[np.searchsorted(tied_at, at[moved])]
    return place - group_first


def _recode(codes: np.ndarray, keys: list[str], index: Mapping[str, int]) -> np.ndarray:
    """Map per-row codes into ``keys`` onto positions in ``index`` (-1 if absent)."""
    lookup = np.fromiter(map(index.get, keys, repeat(-1)), dtype=np.int64, count=len(keys))
    return lookup[codes] if codes.size else codes.astype(np.int64)


def _table(data: Any, value_column: str, what: str) -> FlatTable:
    if isinstance(data, FlatTable):
        return data
    if isinstance(data, Mapping):
        return from_nested(data, what)
    if hasattr(data, "columns") and hasattr(data, "iloc"):
        return from_dataframe(data, value_column, what)
    raise InputFormatError(
        f"{what}: expected {{qid: {{doc_id: {value_column}}}}} or a DataFrame with columns qid, doc_id, "
        f"{value_column}; got {type(data).__name__}"
    )


def _check_choice(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise InputFormatError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
