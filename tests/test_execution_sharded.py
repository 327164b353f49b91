"""Sharded exact search (rag_eval._execution.sharded) equals local exact search, bit for bit, ties included."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_eval._core.scores import inner_products
from rag_eval._core.topk import top_k_blockwise
from rag_eval._execution.sharded import merge_top_k, search_shard, shard_bounds


def fsum_scores(queries: np.ndarray, passages: np.ndarray) -> np.ndarray:
    """The definition of a score, cell by cell: float32 of the correctly rounded sum of exact products."""
    q, p = queries.astype(np.float64), passages.astype(np.float64)
    out = np.array([[np.float32(math.fsum((q[i] * p[j]).tolist())) for j in range(len(p))] for i in range(len(q))])
    return (out.reshape(len(q), len(p)) + np.float32(0.0)).astype(np.float32)


def sharded(queries: np.ndarray, passages: np.ndarray, k: int, cuts: list[int], block_size: int = 65536):
    """Search each shard [cuts[i], cuts[i+1]) alone, then merge: what the Ray engine does."""
    parts = [
        search_shard(queries, passages[start:stop], start, k, block_size) for start, stop in itertools.pairwise(cuts)
    ]
    return merge_top_k(parts, k)


def unit_rows(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    rows = rng.standard_normal(shape).astype(np.float32)
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


# --------------------------------------------------------------------------- the score of a pair


def test_inner_products_are_the_fsum_definition_on_random_vectors():
    rng = np.random.default_rng(3)
    for dim in (1, 3, 17, 384):
        queries, passages = rng.standard_normal((6, dim)), rng.standard_normal((40, dim))
        queries, passages = queries.astype(np.float32), passages.astype(np.float32)
        np.testing.assert_array_equal(inner_products(queries, passages), fsum_scores(queries, passages))


def test_inner_products_near_a_float32_rounding_boundary_use_the_definition():
    # 1 + 2**-24 lies half way between two float32 values; the two 2**-53 products decide the side.
    # Summed left to right in float64 they vanish (round half to even, twice): float32 1.0.
    # Exactly, the sum is 1 + 2**-24 + 2**-52, above half way: float32 1 + 2**-23.
    queries = np.array([[1.0, 2.0**-24, 2.0**-53, 2.0**-53]], dtype=np.float32)
    passages = np.array([[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, -1.0, -1.0]], dtype=np.float32)
    left_to_right = ((1.0 + 2.0**-24) + 2.0**-53) + 2.0**-53
    assert np.float32(left_to_right) == np.float32(1.0)  # what an unlucky summation order gives
    got = inner_products(queries, passages)
    assert got.tolist() == [[float(np.float32(1.0 + 2.0**-23)), 1.0]]
    np.testing.assert_array_equal(got, fsum_scores(queries, passages))


def test_inner_products_zero_is_positive_and_non_finite_inputs_do_not_crash():
    zero = inner_products(np.array([[-1.0, 0.0]], np.float32), np.array([[0.0, 5.0]], np.float32))
    assert zero.tolist() == [[0.0]] and not np.signbit(zero[0, 0])  # -1*0 + 0*5: -0.0 from BLAS, +0.0 here
    odd = inner_products(np.array([[np.nan, 1.0], [np.inf, 1.0]], np.float32), np.array([[1.0, 1.0]], np.float32))
    assert math.isnan(odd[0, 0]) and odd[1, 0] == np.inf


def test_inner_products_do_not_depend_on_the_split_nor_on_blas_threads():
    rng = np.random.default_rng(11)
    queries, passages = unit_rows(rng, (70, 384)), unit_rows(rng, (3000, 384))
    whole = inner_products(queries, passages)
    # Slices of the passages, single query rows and single passages (BLAS's matrix-vector path).
    np.testing.assert_array_equal(inner_products(queries, passages[1234:1301]), whole[:, 1234:1301])
    np.testing.assert_array_equal(inner_products(queries[5:6], passages), whole[5:6])
    np.testing.assert_array_equal(inner_products(queries, passages[7:8]), whole[:, 7:8])
    threadpoolctl = pytest.importorskip("threadpoolctl", reason="threadpoolctl sets the BLAS thread count")
    with threadpoolctl.threadpool_limits(1):
        np.testing.assert_array_equal(inner_products(queries, passages), whole)
    # The plain float32 product this replaces does change cells between such splits (why it is not used).
    plain = queries @ passages.T
    changed = sum(
        not np.array_equal(part, plain[:, a:b])
        for a, b, part in ((a, b, queries @ passages[a:b].T) for a, b in ((0, 1), (7, 8), (1234, 1301), (0, 5)))
    )
    assert changed > 0 or not np.array_equal(queries[5:6] @ passages.T, plain[5:6])


def test_inner_products_reject_mismatched_widths():
    with pytest.raises(ValueError, match=r"same width"):
        inner_products(np.zeros((2, 3), np.float32), np.zeros((4, 5), np.float32))


# --------------------------------------------------------------------------- sharded == local


@pytest.mark.parametrize("shards", [1, 2, 7, 500])
def test_sharded_search_equals_local_exact_search_on_real_valued_vectors(shards):
    rng = np.random.default_rng(shards)
    queries, passages = unit_rows(rng, (30, 64)), unit_rows(rng, (500, 64))
    want_rows, want_scores = top_k_blockwise(queries, passages, 10)
    cuts = [start for start, _ in shard_bounds(500, shards)] + [500]
    rows, scores = sharded(queries, passages, 10, cuts)
    np.testing.assert_array_equal(rows, want_rows)
    np.testing.assert_array_equal(scores, want_scores)  # the same bits, not just close
    assert scores.dtype == np.float32 and rows.dtype == np.int64


def test_ties_across_shard_borders_keep_the_greater_rows():
    # The same vector in rows 2, 3 (shard 0), 4 (shard 1) and 9 (shard 2): with k=2 the tie rule
    # (score desc, then row = doc id desc) keeps rows 9 and 4 although shard 0 holds two of them.
    rng = np.random.default_rng(5)
    passages = unit_rows(rng, (10, 8)) * np.float32(0.5)
    best = unit_rows(rng, (1, 8))[0]
    passages[[2, 3, 4, 9]] = best
    queries = best[None, :]
    rows, scores = sharded(queries, passages, 2, [0, 4, 8, 10])
    assert rows.tolist() == [[9, 4]]
    assert scores[0, 0] == scores[0, 1]
    np.testing.assert_array_equal(rows, top_k_blockwise(queries, passages, 2)[0])
    rows, _ = sharded(queries, passages, 3, [0, 4, 8, 10])
    assert rows.tolist() == [[9, 4, 3]]


def test_every_row_tied_across_shards_of_one_row():
    queries = np.ones((2, 3), dtype=np.float32)
    passages = np.ones((6, 3), dtype=np.float32)
    rows, scores = sharded(queries, passages, 4, list(range(7)))
    assert rows.tolist() == [[5, 4, 3, 2]] * 2 and scores.tolist() == [[3.0] * 4] * 2


@st.composite
def split_problems(draw):
    n_passages = draw(st.integers(1, 40))
    dim = draw(st.integers(1, 6))
    n_queries = draw(st.integers(1, 5))
    k = draw(st.integers(1, 45))
    seed = draw(st.integers(0, 2**32 - 1))
    dyadic = draw(st.booleans())  # few distinct values: ties everywhere, inside shards and across borders
    inner = sorted(draw(st.sets(st.integers(1, n_passages - 1), max_size=n_passages - 1)) if n_passages > 1 else [])
    block_size = draw(st.integers(1, 50))
    return n_passages, dim, n_queries, k, seed, dyadic, [0, *inner, n_passages], block_size


@settings(max_examples=150, deadline=None)
@given(split_problems())
def test_any_split_gives_local_exact_search(problem):
    n_passages, dim, n_queries, k, seed, dyadic, cuts, block_size = problem
    rng = np.random.default_rng(seed)
    if dyadic:
        passages = (rng.integers(-2, 3, size=(n_passages, dim)) / 2).astype(np.float32)
        queries = (rng.integers(-2, 3, size=(n_queries, dim)) / 2).astype(np.float32)
        passages[rng.integers(0, n_passages, size=n_passages // 2)] = passages[0]  # duplicates anywhere
    else:
        passages = rng.standard_normal((n_passages, dim)).astype(np.float32)
        queries = rng.standard_normal((n_queries, dim)).astype(np.float32)
    want_rows, want_scores = top_k_blockwise(queries, passages, k)
    rows, scores = sharded(queries, passages, k, cuts, block_size)
    np.testing.assert_array_equal(rows, want_rows)
    np.testing.assert_array_equal(scores, want_scores)
    assert rows.shape == (n_queries, min(k, n_passages))


def test_empty_shards_merge_like_absent_ones():
    rng = np.random.default_rng(2)
    queries, passages = unit_rows(rng, (3, 4)), unit_rows(rng, (5, 4))
    empty = search_shard(queries, passages[:0], 0, 3)
    assert empty[0].shape == (3, 0)
    rows, scores = merge_top_k([empty, search_shard(queries, passages, 0, 3), empty], 3)
    want_rows, want_scores = top_k_blockwise(queries, passages, 3)
    np.testing.assert_array_equal(rows, want_rows)
    np.testing.assert_array_equal(scores, want_scores)


def test_merge_and_shard_arguments_are_checked():
    part = (np.zeros((2, 1), np.int64), np.zeros((2, 1), np.float32))
    with pytest.raises(ValueError, match="at least one shard"):
        merge_top_k([], 3)
    with pytest.raises(ValueError, match=r"k must be an integer >= 1, got 0"):
        merge_top_k([part], 0)
    with pytest.raises(ValueError, match=r"2 query rows, got \(3, 1\)"):
        merge_top_k([part, (np.zeros((3, 1), np.int64), np.zeros((3, 1), np.float32))], 3)
    with pytest.raises(ValueError, match=r"first_row must be an integer >= 0, got -1"):
        search_shard(np.zeros((1, 2), np.float32), np.zeros((1, 2), np.float32), -1, 1)


def test_shard_bounds_cover_every_row_once():
    assert shard_bounds(10, 3) == [(0, 3), (3, 6), (6, 10)]
    assert shard_bounds(2, 5) == [(0, 1), (1, 2)]
    assert shard_bounds(0, 4) == [(0, 0)]
    with pytest.raises(ValueError):
        shard_bounds(5, 0)


def test_importing_rag_eval_and_the_engines_does_not_import_ray():
    code = (
        "import sys, rag_eval, rag_eval._execution.sharded, rag_eval._execution.ray_engine, rag_eval._execution.ray_cluster\n"
        "heavy = sorted(m for m in ('ray', 'torch', 'pandas', 'pyarrow') if m in sys.modules)\n"
        "print(heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
