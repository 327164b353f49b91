"""Each run row's rank within its query, by the ranking rule, for all queries at once.

The rule (rag_eval._core.ranking: score descending, ties by doc id descending in bytes,
as trec_eval) applied vectorised: a run already grouped by query in descending
score order needs only its ties put in order; any other line order takes one sort
of packed (query, score, row) keys.
"""

from __future__ import annotations

import threading

import numpy as np

from rag_eval._core.errors import EvaluationError
from rag_eval._core.ranking import id_rank, order_in_groups
from rag_eval._scoring.engine.flat_table import FlatTable

_FIXED_WIDTH_CHARS = 1 << 22  # byte_order_keys copies str ids to one fixed width up to this many characters


class RunRanker:
    """Ranks rows of a run within their queries by the rule, in two steps.

    tests/test_kernels.py checks these ranks against ``ranking.ranked_ids``.

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
        except BaseException as error:
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
    # Scaled as floats where the range and the factor are finite; else (a range past the largest float, a range
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
    order = order_in_groups(group, run.values[members], byte_order_keys(run, members))
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
        within = order_in_groups(segment, scores[tied_at], doc_rank)  # equal scores: doc id descending
        new_place = np.empty(tied_at.size, dtype=np.int64)
        new_place[within] = tied_at  # segments are runs of consecutive positions
        moved = np.flatnonzero(tied[at])
        place = at.copy()
        place[moved] = new_place[np.searchsorted(tied_at, at[moved])]
    return place - group_first


def byte_order_keys(table: FlatTable, rows: np.ndarray) -> np.ndarray:
    """Rank of each row's doc id in ascending byte order (UTF-8, as C's strcmp) among ``rows``.

    This is the tie-break of rag_eval._core.ranking (equal scores: id descending), done on
    many rows at once; tests/test_kernels.py checks it against ``ranking.ranked_ids``.
    """
    if table.packed_docs is not None:
        return table.packed_docs.byte_rank(rows)
    # Comparing str by code point is the same as comparing their UTF-8 bytes.
    ids = table.docs[rows]
    if ids.size and ids.size * max(map(len, ids)) > _FIXED_WIDTH_CHARS:
        return id_rank(ids)  # long ids: no fixed-width copy of them all at the longest's width
    if ids.size and "\x00" in "".join(ids):
        # A fixed-width numpy str drops trailing NULs ('d\x00' would tie with 'd'): compare exactly.
        # (A run's doc ids given as dicts are not checked for NULs; these rows are the ones ranked.)
        return id_rank(ids)
    _, rank = np.unique(ids.astype(str), return_inverse=True)
    return rank.ravel().astype(np.int64)
