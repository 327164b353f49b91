"""The fast paths of evaluate_evidence against independent references, on messy generated data.

- Chunk ids' byte order as integers (rag_eval._scoring.evidence.chunk_order) against the ids
  themselves, encoded and compared: doc ids with '#', '-', digits, spaces and UTF-8, offsets
  whose decimal strings begin one another ("1", "10", "100").
- Each block's rows sorted among themselves (rag_eval._scoring.evidence.blocks) against a sort of
  all rows by (block, key), for blocks of every length class.
- Spans read as given (tuples, lists, named tuples, numpy numbers), and bad items refused with
  the messages they had.
- Repeated spans found per query and by one sort of all rows (huge offsets), naming the same items.
- evaluate_evidence against the plain-Python loop of benchmarks/bench_evidence_vs_python.py
  (written from docs/semantics.md, sharing no code with rag_eval): per-query values, means and
  the ranking itself (span_grades lists the spans in rank order).
"""

from __future__ import annotations

import importlib.util
import random
from collections import namedtuple
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_eval import evaluate_evidence
from rag_eval._core.errors import InputFormatError
from rag_eval._core.spans import chunk_id
from rag_eval._scoring.evidence import span_grades
from rag_eval._scoring.evidence.blocks import order_within_blocks, sort_within_blocks
from rag_eval._scoring.evidence.chunk_order import chunk_order, decimal_rank
from rag_eval._scoring.evidence.tables import read_spans

SETTINGS = {"deadline": None, "database": None, "suppress_health_check": [HealthCheck.too_slow], "max_examples": 150}


def _bench():
    # The one plain-Python reference: the benchmark quotes its speed-ups for the numbers checked here.
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_evidence_vs_python.py"
    spec = importlib.util.spec_from_file_location("bench_evidence_vs_python", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BENCH = _bench()

# Doc ids whose chunk ids sort unlike the ids ('a' < 'a!' but 'a!#' < 'a#'), that begin one another with
# and without '#', with digits and '-' that meet the offsets, spaces and UTF-8 of 1 to 4 bytes.
DOC_ID = st.one_of(
    st.sampled_from(["a", "a!", "a#1", "a#1-2", "a#10", "b-2", "b", "é", "日本", "😀", "x y", "1", "10", "d#"]),
    st.text(alphabet="ab#-0129 é日😀", min_size=1, max_size=6),
)
# Offsets whose decimal strings begin one another, and larger ones.
OFFSET = st.one_of(st.sampled_from([0, 1, 2, 9, 10, 11, 19, 100, 101, 110, 999, 1000, 2**62]), st.integers(0, 10**7))


def _id_order(ids: list[str]) -> list[int]:
    return sorted(range(len(ids)), key=lambda i: ids[i].encode("utf-8"))


# ---- chunk ids' byte order as integers ------------------------------------------------------------


@settings(**SETTINGS)
@given(docs=st.lists(DOC_ID, min_size=1, max_size=6, unique=True), data=st.data())
def test_chunk_order_is_the_byte_order_of_the_chunk_ids(docs, data):
    rows = data.draw(st.lists(st.tuples(st.integers(0, len(docs) - 1), OFFSET, OFFSET), min_size=1, max_size=40,
                              unique=True))
    doc = np.array([d for d, _, _ in rows], dtype=np.int64)
    start = np.array([s for _, s, _ in rows], dtype=np.int64)
    end = np.array([e for _, _, e in rows], dtype=np.int64)
    key = chunk_order(doc, start, end, docs)
    used = {docs[d] for d, _, _ in rows}
    begins = any(b.startswith(a + "#") for a in used for b in used if a != b)
    assert (key is None) == begins
    if key is not None:
        ids = [chunk_id(docs[d], s, e) for d, s, e in rows]
        assert sorted(range(len(rows)), key=lambda i: int(key[i])) == _id_order(ids)


@settings(**SETTINGS)
@given(values=st.lists(OFFSET, max_size=60))
def test_decimal_rank_is_the_order_of_the_decimal_strings(values):
    rank, n = decimal_rank(np.array(values, dtype=np.int64))
    strings = sorted({str(v) for v in values})
    assert n == len(strings)
    assert rank.tolist() == [strings.index(str(v)) for v in values]


def test_decimal_rank_of_offsets_far_apart_uses_a_sort():
    values = [2**62, 7, 70, 2**62 + 1, 7]  # too far apart for a table of every offset
    rank, n = decimal_rank(np.array(values, dtype=np.int64))
    strings = sorted({str(v) for v in values})
    assert (rank.tolist(), n) == ([strings.index(str(v)) for v in values], 4)


# ---- each block sorted among its rows -----------------------------------------------------------------


@settings(**SETTINGS)
@given(
    sizes=st.lists(st.one_of(st.integers(0, 5), st.integers(6, 70), st.just(600)), max_size=30),
    data=st.data(),
    floats=st.booleans(),
)
def test_sorting_within_blocks_is_a_sort_by_block_then_key(sizes, data, floats):
    n = sum(sizes)
    # Many ties. Drawn from a seed: Hypothesis drawing up to 18,000 integers one by one took most of the test's time.
    values = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))).integers(-3, 4, size=n)
    key = values.astype(np.float64 if floats else np.int64)
    block = np.repeat(np.arange(len(sizes)), sizes)
    stable = order_within_blocks(key, np.array(sizes, dtype=np.int64), stable=True)
    assert stable.tolist() == np.lexsort((key, block)).tolist()
    order = order_within_blocks(key, np.array(sizes, dtype=np.int64))
    assert sorted(order.tolist()) == list(range(n))
    assert (block[order] == block).all()  # rows stay in their block
    assert key[order].tolist() == key[np.lexsort((key, block))].tolist()
    assert sort_within_blocks(key, np.array(sizes, dtype=np.int64)).tolist() == key[np.lexsort((key, block))].tolist()


@pytest.mark.parametrize("largest", [10, 2**40, 2**50, 2**62 - 1])  # one sort, ten batches of runs, blocks
def test_tied_runs_are_ordered_by_key_descending(largest):
    from rag_eval._scoring.evidence.ranks import _descending_within_runs

    rng = np.random.default_rng(7)
    run = np.repeat(np.arange(40_000), rng.integers(1, 4, size=40_000))
    key = rng.integers(0, largest, size=run.size, dtype=np.int64)
    key[::97] = largest - 1
    np.testing.assert_array_equal(_descending_within_runs(run, key), np.lexsort((-key, run)))


# ---- spans read as given ----------------------------------------------------------------------------


SCORE = st.one_of(st.floats(-1e6, 1e6, allow_nan=False), st.integers(-10**6, 10**6))


@settings(**SETTINGS)
@given(
    lists=st.dictionaries(
        st.text(alphabet="q é日 ", min_size=1, max_size=4),
        st.lists(st.tuples(DOC_ID, st.integers(0, 2**62), st.integers(1, 2**62), SCORE), max_size=6),
        min_size=1, max_size=4,
    ),
    as_lists=st.booleans(),
    numpy_numbers=st.booleans(),
)
def test_spans_are_read_as_given(lists, as_lists, numpy_numbers):
    def item(doc, start, end, score):
        if numpy_numbers:
            start, end, score = np.int64(start), np.int64(end), np.float64(score)
        return [doc, start, end, score] if as_lists else (doc, start, end, score)

    data = {q: [item(*i) for i in items] for q, items in lists.items()}
    columns = read_spans(data, "spans")
    flat = [i for items in lists.values() for i in items]
    assert columns.query_keys == list(lists)
    assert columns.docs == [d for d, _, _, _ in flat]
    assert columns.start.tolist() == [s for _, s, _, _ in flat]
    assert columns.end.tolist() == [e for _, _, e, _ in flat]
    assert columns.value.tolist() == [float(v) for _, _, _, v in flat]
    assert columns.start.flags.writeable and columns.value.dtype == np.float64


def test_named_tuples_are_read_as_tuples():
    span = namedtuple("span", "doc start end score")
    columns = read_spans({"q": [span("d", 3, 9, 0.5), ("e", 0, 4, 2)]}, "spans")
    assert (columns.docs, columns.start.tolist(), columns.end.tolist(), columns.value.tolist()) == (
        ["d", "e"], [3, 0], [9, 4], [0.5, 2.0])


def test_numbers_any_array_takes_are_read_as_before():
    # Decimal converts to a float (array('d') takes it); a numpy int is an offset.
    columns = read_spans({"q": [("d", np.int32(3), 9, Decimal("0.5")), ("e", 0, 2**63 - 1, 2)]}, "spans")
    assert columns.start.tolist() == [3, 0] and columns.end.tolist() == [9, 2**63 - 1]
    assert columns.value.tolist() == [0.5, 2.0]


@pytest.mark.parametrize(
    ("spans", "message"),
    [
        # A dict keyed 0..3 iterates as (0, 1, 2, 3): still read as a dict, and refused for its keys.
        ({"q": [("d", 0, 5, 1.0), {0: "d", 1: 0, 2: 5, 3: 1.0}]},
         "spans: query 'q', item 1: the dict has no 'doc' and 'start' and 'end' and 'score' key; give {doc, start, "
         "end, score} or (doc_id, start, end, score), got {0: 'd', 1: 0, 2: 5, 3: 1.0}"),
        ({"q": [("d", 0, 5, 1.0), (x for x in ("d", 5, 9, 1.0))]},
         "spans: query 'q', item 1: expected (doc_id, start, end, score), got generator"),
        ({"q": [("d", 0, 5, 1.0), ("d", 5, 9, 1.0, "extra")]},
         "spans: query 'q', item 1: expected (doc_id, start, end, score), got 5 values ('d', 5, 9, 1.0, 'extra')"),
        ({"q": [("d", 0, 5, 1.0), ("d", np.True_, 9, 1.0)]},
         "spans: query 'q', item 1 (doc 'd'): start np.True_ is not an integer offset"),
        ({"q": [("d", 0, 2**63, 1.0)]}, "spans: query 'q', item 0 (doc 'd'): end 9223372036854775808 is too large"),
        ({"q": [("d", 0, 5, 1.0), ("d", 5, 9, np.True_)]},
         "spans: query 'q', item 1 (doc 'd'): score np.True_ is not a number"),
        ({"q": [("d", 0, 5, 1.0), ("d", 5, 9, None)]},
         "spans: query 'q', item 1 (doc 'd'): score None is not a number"),
    ],
)
def test_bad_items_are_refused_as_before(spans, message):
    with pytest.raises(InputFormatError) as raised:
        evaluate_evidence({"q": [("d", 0, 5)]}, spans, ["evidence_recall@1"])
    assert str(raised.value).startswith(message), str(raised.value)


# ---- repeated spans ---------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", ["short rankings", "one long ranking", "huge offsets"])
def test_a_repeated_span_is_named_whichever_way_it_is_found(shape):
    base = 2**61 if shape == "huge offsets" else 0  # keys past int64: three sort keys
    spans = {f"q{i}": [("d", base + i, base + i + 5, 1.0)] for i in range(3)}
    if shape == "one long ranking":  # blocks of very different lengths
        spans["q1"] = [("e", i, i + 1, 0.5) for i in range(3000)]
    spans["q2"] = [("d", base + 7, base + 9, 0.5), ("e", 1, 4, 0.4), ("d", base + 7, base + 9, 0.3)]
    with pytest.raises(InputFormatError) as raised:
        evaluate_evidence({"q0": [("d", 0, 5)]}, spans, ["evidence_recall@1"])
    shown = chunk_id("d", base + 7, base + 9)
    assert str(raised.value) == (
        f"spans: query 'q2', item 2: span '{shown}' is listed twice (also item 0); each span appears once in a "
        "query's ranking"
    )


# ---- evaluate_evidence against the plain-Python loop ------------------------------------------------


CONTEXTS = [(1, None), (3, None), (10, None), (1000, None), (40, "chars"), (400, "chars")]
NAMES = [f"evidence_{m}@{k}{unit or ''}" for k, unit in CONTEXTS for m in ("recall", "precision", "iou")]


@st.composite
def messy_cases(draw):
    """Evidence and spans as docs/semantics.md allows them, as untidy as real data."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    docs = draw(st.lists(DOC_ID, min_size=1, max_size=8, unique=True))
    length = {d: rng.randint(5, 3000) for d in docs}
    scores = draw(st.sampled_from([[0.5, 0.25, 0.0, -0.0, 1.0], [round(rng.random(), 2) for _ in range(50)]]))
    evidence, spans = {}, {}
    for q in range(draw(st.integers(1, 12))):
        qid = "q " * rng.randint(0, 2) + f"{q}é" + "日" * rng.randint(0, 2)
        if rng.random() < 0.85:  # the rest: spans only (unjudged)
            home = rng.sample(docs, min(len(docs), rng.randint(1, 3)))
            items = []
            for _ in range(rng.randint(1, 6)):
                d = rng.choice(home)
                s = rng.randrange(length[d])
                items.append((d, s, rng.randint(s + 1, min(length[d], s + 400)), rng.choice([1, 2, 0.5])))
                if rng.random() < 0.3:  # evidence inside or over other evidence
                    items.append((d, max(0, s - rng.randint(0, 50)), min(length[d], items[-1][2] + rng.randint(0, 50)), 1))
            evidence[qid] = [tuple(e) if rng.random() < 0.5 else list(e) for e in items]
        n = rng.choice([0, 1, 5, 30, 120]) if rng.random() < 0.95 else 700  # now and then one long ranking
        chosen = set()
        for _ in range(n):
            d = rng.choice(docs)
            s = rng.randrange(length[d])
            chosen.add((d, s, rng.randint(s + 1, min(length[d], s + rng.choice([5, 60, 900])))))
        ranking = [(d, s, e, rng.choice(scores)) for d, s, e in chosen]
        rng.shuffle(ranking)
        if ranking or rng.random() < 0.5:
            spans[qid] = ranking
    if not evidence:
        evidence["only"] = [(docs[0], 0, 1)]
    return evidence, spans


@settings(**{**SETTINGS, "max_examples": 60})
@given(case=messy_cases())
def test_evaluate_evidence_equals_the_plain_python_loop(case):
    evidence, spans = case
    results = evaluate_evidence(evidence, spans, NAMES)
    # The reference reads (doc, start, end, grade) tuples; grades play no part.
    reference = BENCH.reference_evidence({q: [(*e[:3], 1) for e in items] for q, items in evidence.items()},
                                         spans, CONTEXTS)
    assert sorted(results.query_ids) == sorted(reference)
    for c, context in enumerate(CONTEXTS):
        for m in range(3):
            name = NAMES[3 * c + m]
            want = [reference[q][context][m] for q in results.query_ids]
            assert results.values[name].tolist() == pytest.approx(want, abs=1e-12, rel=0), name
            assert results.aggregate[name] == pytest.approx(sum(want) / len(want), abs=1e-12, rel=0), name
    # The ranking itself: score descending, ties by chunk id descending in bytes.
    grades = span_grades(evidence, spans)
    for qid, listed in grades.items():
        want_order = sorted(spans.get(qid, []), key=lambda s: (s[3], chunk_id(*s[:3]).encode()), reverse=True)
        assert [i for i, _, _ in listed] == [chunk_id(*s[:3]) for s in want_order]


def test_evidence_in_many_documents():
    # Ten evidence documents (more than the per-pair passes take: one binary search per span instead).
    evidence = {"q": [(f"d{i}", 0, 10) for i in range(10)], "r": [("d0", 0, 4)]}
    spans = {"q": [("d0", 0, 5, 3.0), ("d1", 0, 10, 2.0), ("d9", 5, 20, 1.0), ("x", 0, 50, 0.5)],
             "r": [("d0", 2, 8, 1.0)]}
    results = evaluate_evidence(evidence, spans, ["evidence_recall@3", "evidence_precision@3", "evidence_iou@4"])
    # q: covered 5 + 10 + 5 of 100 characters; context 5 + 10 + 15 (+ 50 at 4). r: [2, 4) of [0, 4), context 6.
    assert results.per_query["q"] == pytest.approx(
        {"evidence_recall@3": 0.2, "evidence_precision@3": 20 / 30, "evidence_iou@4": 20 / (80 + 100 - 20)}, abs=1e-12)
    assert results.per_query["r"] == pytest.approx(
        {"evidence_recall@3": 0.5, "evidence_precision@3": 2 / 6, "evidence_iou@4": 2 / (6 + 4 - 2)}, abs=1e-12)
