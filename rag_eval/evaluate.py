"""Run + judgements + metrics -> :class:`Results`, with trec_eval's semantics.

The run is sorted per query by score descending, ties broken by doc id descending
(byte order), exactly as trec_eval does; its rank column, if any, is ignored.
Every judged query enters the mean (a query the retriever did not answer scores
0); queries without judgements are listed, never scored. See SEMANTICS.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain, repeat
from typing import Any, Iterable, Mapping

import numpy as np

from rag_eval.errors import EvaluationError, InputFormatError
from rag_eval.metrics.kernels import GAINS, KernelContext, RankedJudgedRun, compute, has_relevant
from rag_eval.metrics.measures import Metric, parse_metrics
from rag_eval.results import Results
from rag_eval.tables import (
    FlatTable,
    byte_order_keys,
    find_pairs,
    from_dataframe,
    from_nested,
    pack_ids,
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
        kind = _doc_kind(judgements, run)
        index = pair_index(run, kind)  # also rejects a document listed twice for one query
        if bool((as_run_code >= 0).all()):  # the run answered every judged query
            judged_rows, run_rows = find_pairs(index, run, as_run_code, judgements, None)
        else:
            candidates = np.flatnonzero(as_run_code >= 0)
            where, run_rows = find_pairs(index, run, as_run_code[candidates], judgements, candidates)
            judged_rows = candidates[where]
        del as_run_code  # before ranking: it adds to the peak memory
        ranks = trec_ranks(run, run_rows)

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
    missing, empty = float("nan"), {}
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
        # Documents with the same score: trec_eval ranks them by doc id, descending (byte order,
        # which is code point order for str).
        docs = judgements.docs
        for k in tied.tolist():
            s, doc = score[k], docs[rows[k]]
            same_score = [d for d, v in run_dicts[code[k]].items() if v == s]
            ranks[k] += sum(1 for d in same_score if d > doc)
    return rows, ranks


def _doc_kind(judgements: FlatTable, run: FlatTable) -> str:
    """How both tables' doc ids are compared: packed words when one side has them."""
    if judgements.doc_words is None and run.doc_words is None:
        return "str"
    for table in (judgements, run):
        if table.doc_words is None:
            table.doc_words = pack_ids(table.docs)
    return "words"


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
    """0-based rank of each of ``rows`` within its query, in trec_eval's order.

    trec_eval ranks by score descending, ties by doc id descending (byte order).
    Runs written by a retriever usually list each query's documents together and
    by descending score: then only tied rows need sorting. Otherwise the rows are
    sorted first.
    """
    rows = np.asarray(rows, dtype=np.int64)
    codes, scores = run.query_codes, run.values
    if len(run) < 2 or rows.size == 0:
        return np.zeros(rows.size, dtype=np.int64)
    same = codes[1:] == codes[:-1]
    in_order = bool(np.all(~same | (scores[1:] <= scores[:-1])))
    if in_order:
        starts = np.concatenate(([0], np.flatnonzero(~same) + 1))
        group_codes = codes[starts]
        if np.bincount(group_codes).max() <= 1:  # each query's rows are together
            return _ranks_in_order(run, None, same, scores, codes, starts, rows)
    # A real sort: query, then score descending (ties are ordered below).
    order = np.lexsort((-scores, codes))
    sorted_codes, sorted_scores = codes[order], scores[order]
    same = sorted_codes[1:] == sorted_codes[:-1]
    starts = np.concatenate(([0], np.flatnonzero(~same) + 1))
    inverse = np.empty(order.size, dtype=np.int64)
    inverse[order] = np.arange(order.size)
    return _ranks_in_order(run, order, same, sorted_scores, sorted_codes, starts, inverse[rows])


def _ranks_in_order(
    run: FlatTable,
    order: np.ndarray | None,
    same: np.ndarray,
    scores: np.ndarray,
    codes: np.ndarray,
    starts: np.ndarray,
    at: np.ndarray,
) -> np.ndarray:
    """Ranks of positions ``at`` of a sequence grouped by query and by descending score.

    ``codes`` are the queries along the sequence, ``starts`` where each query's
    group begins; ``order`` maps positions of the sequence to rows of ``run``
    (None: the same). Runs of equal scores within a query are put in descending
    doc id order.
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
        doc_rank = byte_order_keys(run, tied_at if order is None else order[tied_at])
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
