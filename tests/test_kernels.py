"""The kernels' sorting helpers against plain numpy references (lexsort, first occurrence), and the
engine's vectorised ranking against the one ranking rule (rag_eval._core.ranking)."""

import math
import random

import numpy as np
import pytest

from rag_eval._core import ranking
from rag_eval._core.trec import format_run
from rag_eval._scoring.engine import from_nested, prepare, read_run
from rag_eval._scoring.engine.packed_ids import PackedIds
from rag_eval._scoring.engine.ranks import RunRanker, byte_order_keys
from rag_eval._scoring.metrics.kernels import sort_desc_within_groups


def _reference(groups: np.ndarray, values: np.ndarray):
    order = np.lexsort((-values, groups))
    return groups[order], values[order]


@pytest.mark.parametrize(
    "values",
    [
        np.array([1.0, 3.0, 2.0, 3.0, 1.0, 7.0, 15.0, 0.5]),  # a fraction: the general path
        np.array([1.0, 3.0, 2.0, 3.0, 1.0, 7.0, 15.0, 4.0]),  # whole numbers: the grade is the rank
        np.array([-2.0, 3.0, 0.0, 3.0, 1.0, 2**21, 1.0, 4.0]),  # whole, but too wide a span
        np.array([1e-300, 3.0, 2.0, 3.0, 1.0, 7.0, 15.0, 4.0]),
    ],
)
def test_sort_desc_within_groups_matches_lexsort(values):
    groups = np.array([2, 0, 1, 0, 2, 1, 0, 2])
    got_groups, got_values = sort_desc_within_groups(groups, values, n_groups=3)
    want_groups, want_values = _reference(groups, values)
    np.testing.assert_array_equal(got_groups, want_groups)
    np.testing.assert_array_equal(got_values, want_values)
    assert got_groups.dtype == np.int64 and got_values.dtype == np.float64


def test_sort_desc_within_groups_random_whole_and_fractional_grades():
    rng = np.random.default_rng(7)
    for fractional in (False, True):
        groups = rng.integers(0, 50, size=2000)
        values = rng.integers(1, 6, size=2000).astype(float)
        if fractional:
            values[::7] += 0.25
        got = sort_desc_within_groups(groups, values, n_groups=50)
        want = _reference(groups, values)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


# ---- the engine's ranking is rag_eval._core.ranking's rule ---------------------------------------

# Scores that tie, that differ in the last bit only (the sort's scaled keys cannot tell them
# apart: the exact tie-break must), -0.0 with 0.0, and extremes that stretch the scaling; HUGE makes the
# range of scores overflow a float64, so that they are ordered by their bits (infinite scores are refused).
HARD_SCORES = [1.0, float(np.nextafter(1.0, 2.0)), float(np.nextafter(1.0, 0.0)), 0.0, -0.0, 2.5, 2.5, -3.0,
               1e300, -1e300, 5e-324]
HUGE = [1.7e308, -1.7e308, float(np.nextafter(1.7e308, 0.0))]


def _random_run(rng: random.Random, n_queries: int, long_ids: bool, huge: bool) -> dict[str, dict[str, float]]:
    scores = HARD_SCORES + HUGE if huge else HARD_SCORES
    alphabet = "aAzZ09é東😀#<>:/"
    run = {}
    for q in range(n_queries):
        docs = set()
        while len(docs) < rng.randint(1, 25):
            stem = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
            docs.add(("shared/prefix/" * rng.randint(0, 5) if long_ids else "") + stem)
        run[f"q{q}"] = {d: rng.choice(scores) if rng.random() < 0.5 else float(rng.randint(0, 4)) for d in docs}
    return run


def _lines_in_order(text: str, order: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True)
    if order == "shuffled":
        rng.shuffle(lines)
    elif order == "reversed":
        lines.reverse()
    return "".join(lines)


@pytest.mark.parametrize("order", ["sorted", "shuffled", "reversed"])
@pytest.mark.parametrize("long_ids", [False, True])
@pytest.mark.parametrize("huge", [False, True])  # scores scaled as floats, or ordered by their bits
@pytest.mark.parametrize("n_queries", [3, 40])
def test_engine_ranks_equal_ranking_rule(tmp_path, order, long_ids, huge, n_queries):
    """The engine's ranks (vectorised, for all queries at once) against ranking.ranked_ids, query by query,
    for a run read from a file in any line order and for the same run given as dicts."""
    rng = random.Random(f"{order}-{long_ids}-{huge}-{n_queries}")
    run = _random_run(rng, n_queries, long_ids, huge)
    path = tmp_path / "r.run"
    path.write_text(_lines_in_order(format_run(run), order, rng), encoding="utf-8")
    for table in (read_run(path), from_nested(run, "run")):
        ranks = RunRanker(table).ranks(np.arange(len(table)))
        for row, (code, doc) in enumerate(zip(table.query_codes.tolist(), table.docs.tolist())):
            qid = table.query_keys[code]
            assert ranks[row] == ranking.ranked_ids(run[qid]).index(doc), (qid, doc)


@pytest.mark.parametrize("order", ["sorted", "shuffled"])
@pytest.mark.parametrize("long_ids", [False, True])
def test_prepare_ranks_every_judged_document_by_the_rule(tmp_path, order, long_ids):
    """Through the engine's interface: every document judged (its grade names it), prepare() gives
    each its rank by ranking.ranked_ids, for a file in any line order and for dicts in any order or
    in rank order (the dict join)."""
    rng = random.Random(f"prepare-{order}-{long_ids}")
    run = _random_run(rng, 30, long_ids, huge=False)
    names = {}
    judgements = {q: {d: names.setdefault((q, d), len(names) + 1.0) for d in docs} for q, docs in run.items()}
    doc_of = {grade: key for key, grade in names.items()}
    path = tmp_path / "r.run"
    path.write_text(_lines_in_order(format_run(run), order, rng), encoding="utf-8")
    in_rank_order = {q: dict(ranking.ranked(docs)) for q, docs in run.items()}
    for table in (read_run(path), from_nested(run, "run"), from_nested(in_rank_order, "run")):
        joined = prepare(from_nested(judgements, "judgements"), table)
        ranked = joined.ranked
        assert ranked.row_grade.size == len(names)
        for query, pos, grade in zip(ranked.row_query.tolist(), ranked.row_pos.tolist(), ranked.row_grade.tolist()):
            qid, doc = doc_of[grade]
            assert joined.query_ids[query] == qid
            assert pos == ranking.ranked_ids(run[qid]).index(doc), (qid, doc)


@pytest.mark.parametrize("scores", [
    [0.0, 5e-324, 1e-323, 1.5e-323],  # a range of a few subnormals: the scaling factor overflows
    [1e308, -1e308, 0.0, 1.0],  # a range past the largest float
    [7.0],  # every score equal
    [1.0, float(np.nextafter(1.0, 2.0)), float(np.nextafter(1.0, 0.0))],  # one bit apart
])
def test_engine_ranks_equal_ranking_rule_at_extreme_score_ranges(scores):
    rng = random.Random(7)
    run = {f"q{q}": {f"d{d}": rng.choice(scores) for d in range(rng.randint(2, 30))} for q in range(20)}
    shuffled = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    rng.shuffle(shuffled)
    as_given = {}
    for q, d, s in shuffled:  # the same run, its rows in no order: the sorting path
        as_given.setdefault(q, {})[d] = s
    as_given = {q: as_given[q] for q in rng.sample(list(as_given), len(as_given))}
    table = from_nested(as_given, "run")
    ranks = RunRanker(table).ranks(np.arange(len(table)))
    for row, (code, doc) in enumerate(zip(table.query_codes.tolist(), table.docs.tolist())):
        qid = table.query_keys[code]
        assert ranks[row] == ranking.ranked_ids(run[qid]).index(doc), (qid, doc)


def test_engine_ranks_rows_asked_for_in_any_order_and_more_than_once():
    run = {"q1": {"a": 1.0, "b": 3.0, "c": 2.0}, "q2": {"d": 0.5, "e": 0.5}}
    table = from_nested({"q2": run["q2"], "q1": run["q1"]}, "run")  # q1's rows not in score order
    rows = np.array([4, 0, 2, 2, 3, 1, 4, 4, 0])
    expected = [ranking.ranked_ids(run[table.query_keys[table.query_codes[r]]]).index(table.docs[r]) for r in rows]
    assert RunRanker(table).ranks(rows).tolist() == expected


def test_byte_order_keys_is_the_rule_tie_break():
    """Ascending byte order of ids, for packed ids (a file) and str ids (dicts): descending, it is the
    order ranking.ranked_ids gives documents with equal scores."""
    rng = random.Random(3)
    ids = list({"".join(rng.choice("aé東😀Zz#/") for _ in range(rng.randint(1, 40))) for _ in range(300)})
    tied = {doc: 1.0 for doc in ids}
    by_rule = ranking.ranked_ids(tied)
    table = from_nested({"q": tied}, "run")
    for rank in (byte_order_keys(table, np.arange(len(ids))),):
        assert [table.docs[i] for i in np.argsort(-rank)] == by_rule
    packed = PackedIds.from_strings(table.docs)
    rank = packed.byte_rank(np.arange(len(ids)))
    assert [table.docs[i] for i in np.argsort(-rank)] == by_rule
    assert by_rule == sorted(ids, key=lambda d: d.encode("utf-8"), reverse=True)


# ---- the discount, the evidence kernels and the dataset value, by hand --------------------------


def test_the_discount_is_log2_of_rank_plus_one():
    from rag_eval._scoring.metrics.kernels import log2_rank

    assert log2_rank(np.arange(1, 5)).tolist() == [1.0, math.log2(3), 2.0, math.log2(5)]
    assert float(log2_rank(7)) == 3.0


def test_evidence_kernels_on_the_golden_counts():
    """docs/semantics.md's golden values: evidence [10,20) and [40,50) (20 characters); the top chunk [0,15)
    covers 5 of them and reads 15; the top 3 cover all 20 and read 60."""
    from rag_eval._scoring.metrics.evidence_kernels import (
        EvidenceCounts,
        evidence_iou,
        evidence_precision,
        evidence_recall,
    )

    counts = EvidenceCounts(np.array([5.0, 20.0, 0.0]), np.array([20.0, 20.0, 20.0]), np.array([15.0, 60.0, 0.0]))
    assert evidence_recall(counts).tolist() == [0.25, 1.0, 0.0]
    assert evidence_precision(counts).tolist() == [5 / 15, 20 / 60, 0.0]  # nothing read: precision 0
    assert evidence_iou(counts).tolist() == [5 / (15 + 15), 20 / 60, 0.0]


def test_the_dataset_value_macro_and_micro_by_hand():
    """q1: DCG 1, IDCG 2 (nDCG 0.5); q2: DCG 3, IDCG 3 (1.0); q3 left out (NaN, no relevant document)."""
    from rag_eval._scoring.metrics.aggregation import dataset_value
    from rag_eval._scoring.metrics.measures import parse_metric

    ndcg = parse_metric("ndcg@10")
    parts = {"dcg@10": np.array([1.0, 3.0, 0.0]), "idcg@10": np.array([2.0, 3.0, 0.0])}
    values = np.array([0.5, 1.0, np.nan])
    assert dataset_value(ndcg, values, "macro", lambda m: parts[str(m)]) == 0.75
    assert dataset_value(ndcg, values, "micro", lambda m: parts[str(m)]) == 4 / 5
    recall = parse_metric("recall@10")  # no micro rule: the macro mean under either aggregation
    assert dataset_value(recall, values, "micro", lambda m: parts[str(m)]) == 0.75
    assert math.isnan(dataset_value(ndcg, np.array([np.nan]), "macro", lambda m: parts[str(m)]))
    assert math.isnan(dataset_value(ndcg, np.array([np.nan]), "micro", lambda m: np.array([0.0])))
