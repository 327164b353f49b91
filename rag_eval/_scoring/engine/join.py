"""Rank a run by trec_eval's rule and join it with its judgements: the kernels' input.

:func:`prepare` keeps, for every judged document the run retrieved, its query, its
rank and its grade (a :class:`~rag_eval._scoring.metrics.kernels.RankedJudgedRun`), plus the
lists of queries that are judged, unjudged or unanswered. Ranks follow the rule of
rag_eval._core.ranking (score descending, ties by doc id descending in bytes), computed
for all queries at once (engine.ranks); a rank column in a TREC file is ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import chain, repeat

import numpy as np

from rag_eval._core.ranking import outranks
from rag_eval._scoring.engine.flat_table import FlatTable
from rag_eval._scoring.engine.pairs import find_pairs, pair_index
from rag_eval._scoring.engine.ranks import RunRanker
from rag_eval._scoring.engine.tables import pack_doc_ids
from rag_eval._scoring.metrics.kernels import RankedJudgedRun


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


def prepare(judgements: FlatTable, run: FlatTable, keep_unjudged: bool = False) -> JoinedRun:
    """Rank the run in trec_eval order and join it with the judgements.

    Keeps the judged documents the run retrieved (query, rank, grade), the judged
    query ids (sorted as trec_eval sorts topics), the run's queries without
    judgements, and the judged queries the run did not answer. Documents without
    a judgement never change a metric, so they are ranked but not kept, unless
    ``keep_unjudged``: then every document the run retrieved for a judged query is a
    row, an unjudged one with grade NaN (what rag_eval._scoring.holes fills in).
    """
    # Judged queries, in trec_eval's order (byte order of the id).
    # (Built with C-level dict and set calls: there can be hundreds of thousands of queries.)
    judged_keys = sorted(_present_keys(judgements))
    judged_index = dict(zip(judged_keys, range(len(judged_keys))))
    jq = _recode(judgements.query_codes, judgements.query_keys, judged_index)

    run_queries_present = _present_keys(run)
    unjudged = sorted(run_queries_present.difference(judged_index))
    unanswered = sorted(set(judged_keys).difference(run_queries_present))

    # Join on (query, doc): the shorter table's pairs are looked up in the longer's (pairs.find_pairs).
    run_code = dict(zip(run.query_keys, range(len(run.query_keys))))
    query_run_code = np.fromiter(
        map(run_code.get, judgements.query_keys, repeat(-1)), dtype=np.int64, count=len(judgements.query_keys)
    )
    joined = None if keep_unjudged else _join_dicts(judgements, run, query_run_code)
    if joined is not None:
        judged_rows, ranks = joined
        query, grades = jq[judged_rows], judgements.values[judged_rows]
    else:
        # A run out of order is sorted while the pairs are found (a run read from a file: since it was read).
        ranker = run._cache.pop("ranker", None) or RunRanker(run, background=True)
        kind = _doc_kind(judgements, run)
        run_pairs = pair_index(run, kind)  # also rejects a document listed twice for one query
        judged_pairs = pair_index(judgements, kind, "judgements")  # (made when the judgements were read)
        judged_rows, run_rows = find_pairs(run, run_pairs, judgements, judged_pairs, query_run_code)
        if keep_unjudged:
            query, ranks, grades = _every_row(judgements, run, judged_index, ranker, judged_rows, run_rows)
        else:
            query, ranks, grades = jq[judged_rows], ranker.ranks(run_rows), judgements.values[judged_rows]

    n = len(judged_keys)
    query, pos, grade = _sort_by_query_and_rank(query, ranks, grades)
    prepared = RankedJudgedRun(
        n_queries=n,
        row_query=query,
        row_pos=pos,
        row_grade=grade,
        judgement_query=jq,
        judgement_grade=judgements.values,
    )
    return JoinedRun(prepared, judged_keys, unjudged, unanswered)


def _every_row(
    judgements: FlatTable,
    run: FlatTable,
    judged_index: Mapping[str, int],
    ranker: RunRanker,
    judged_rows: np.ndarray,
    run_rows: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(judged query index, rank, grade; NaN when unjudged) of every run row of a judged query."""
    run_query = _recode(run.query_codes, run.query_keys, judged_index)
    rows = np.flatnonzero(run_query >= 0)
    grade = np.full(len(run), np.nan)
    grade[run_rows] = judgements.values[judged_rows]
    return run_query[rows], ranker.ranks(rows), grade[rows]


def _join_dicts(
    judgements: FlatTable, run: FlatTable, query_run_code: np.ndarray
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
    code = query_run_code[judgements.query_codes[rows]]
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
    pack_doc_ids(judgements, "judgements")  # ids from dicts or a DataFrame are packed here
    pack_doc_ids(run, "run")
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


def _recode(codes: np.ndarray, keys: list[str], index: Mapping[str, int]) -> np.ndarray:
    """Map per-row codes into ``keys`` onto positions in ``index`` (-1 if absent)."""
    lookup = np.fromiter(map(index.get, keys, repeat(-1)), dtype=np.int64, count=len(keys))
    return lookup[codes] if codes.size else codes.astype(np.int64)


