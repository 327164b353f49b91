"""Every layout trec_eval reads is read by the fast reader: any blanks between fields, blank lines, fields after a
run's tag; the line-by-line reader is left to name a problem's line.

trec_eval separates fields by runs of white space (its own results.test has a tab and two spaces before each
score, results.trunc has words after the tag). The fast reader (rag_eval._scoring.engine.fast_reader) takes
these layouts itself: the tests call it directly, so that a file handed over to the line reader fails them,
and compare every query id, doc id and value with the line reader's (``line.split()``, as trec_eval).
"""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from rag_eval._core.errors import InputFormatError
from rag_eval._scoring import engine
from rag_eval._scoring.engine import fast_reader, line_reader
from rag_eval._scoring.engine.layout import TREC_QRELS, TREC_RUN


def rows(table):
    queries = [table.query_keys[c] for c in table.query_codes.tolist()]
    return list(zip(queries, table.docs.tolist(), [v.hex() for v in table.values.tolist()]))


def both_readers(path, layout):
    """The fast reader's rows (it must take the file) and the line reader's."""
    return rows(fast_reader.read_fast(path, layout)), rows(line_reader.read_lines(path, layout))


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(fast_reader, "_CHUNK_BYTES", 197)  # many chunks: layouts across their edges


@pytest.mark.parametrize("content", [
    "q1\tQ0\ta\t1\t  2.5\tt\nq1\tQ0\tb\t2\t  1.5\tt\n",  # trec_eval's results.test: a tab and two spaces
    "q1  Q0   a 1\t\t2.5 t\nq1 Q0 b  2 1.5   t\n",  # runs of spaces and tabs
    "  q1 Q0 a 1 2.5 t\n\tq1 Q0 b 2 1.5 t\n",  # blanks before the first field
    "q1 Q0 a 1 2.5 t   \nq1 Q0 b 2 1.5 t\t\n",  # blanks after the last
    "\n\nq1 Q0 a 1 2.5 t\n   \n\t\nq1 Q0 b 2 1.5 t\n\n",  # blank lines, some of blanks only
    "q1 Q0 a 1 2.5 t more junk at\nq1 Q0 b 2 1.5 t end of lines.\n",  # trec_eval's results.trunc
    "q1\x0bQ0\x0ca 1 2.5 t\nq1 Q0 b 2 1.5\x0c\x0bt\n",  # \v and \f are blanks too
    "q1  Q0 a 1 2.5 t\r\nq1 Q0 b 2  1.5 t\r\n",  # Windows line ends
    "q1 Q0 a 1 2.5 t\nq1  Q0 b 2 1.5 t",  # no newline after the last line
    "\ufeff  q1 Q0 a 1 2.5 t\n\nq1 Q0 b 2 1.5 t\n",  # a byte-order mark, then blanks
])
def test_irregular_run_layouts_are_read_by_the_fast_reader(tmp_path, content):
    path = tmp_path / "r.run"
    path.write_bytes(content.encode())
    fast, slow = both_readers(path, TREC_RUN)
    assert fast == slow == [("q1", "a", (2.5).hex()), ("q1", "b", (1.5).hex())]


@pytest.mark.parametrize("seed", range(10))
def test_random_blanks_and_blank_lines_across_chunk_edges(tmp_path, small_chunks, seed):
    rng = random.Random(seed)
    blanks = [" ", "\t", "  ", " \t ", "\x0b", "\x0c", "\t  "]
    lines = []
    for q in range(rng.randint(1, 8)):
        for d in range(rng.randint(1, 25)):
            fields = [f"q{q}é", "Q0", f"doc-{d}-{'x' * rng.randint(0, 20)}", str(d + 1),
                      rng.choice([repr(rng.uniform(-5, 5)), f"{rng.uniform(0, 9):.4f}", str(rng.randint(0, 9)),
                                  f"{rng.uniform(0, 1):.3e}"]), "run"]
            if rng.random() < 0.2:
                fields += ["extra"] * rng.randint(1, 3)
            line = rng.choice(["", "", " ", "\t"]) + "".join(f + rng.choice(blanks) for f in fields[:-1]) + fields[-1]
            lines.append(line + rng.choice(["", "", " ", "\t "]))
            if rng.random() < 0.1:
                lines.append(rng.choice(["", " ", "\t\t", "  \x0c"]))
    rng.shuffle(lines)
    path = tmp_path / "r.run"
    path.write_text("\n".join(lines) + rng.choice(["", "\n"]), encoding="utf-8")
    fast, slow = both_readers(path, TREC_RUN)
    assert fast == slow


def test_trec_eval_test_files_are_read_by_the_fast_reader(trec_eval_test):
    for name, layout in (("results.test", TREC_RUN), ("results.trunc", TREC_RUN), ("qrels.test", TREC_QRELS),
                         ("qrels.rel_level", TREC_QRELS)):
        fast, slow = both_readers(trec_eval_test / name, layout)
        assert fast == slow, name


def test_judgements_with_blanks_and_blank_lines(tmp_path, small_chunks):
    path = tmp_path / "q.qrels"
    path.write_text("\n  q1 0  a 1\n\nq1\t0\tb\t  0  \n\t\nq2 0 a 2\n" * 3)
    with pytest.raises(InputFormatError, match=r"q.qrels:8: query 'q1' lists doc 'a' again \(first on line 2\)"):
        engine.read_qrels(path)  # (the pairs repeat: found by the fast reader, named by the line reader)
    path.write_text("\n  q1 0  a 1\n\nq1\t0\tb\t  0  \n\t\nq2 0 a 2\n")
    fast, slow = both_readers(path, TREC_QRELS)
    assert fast == slow == [("q1", "a", (1.0).hex()), ("q1", "b", (0.0).hex()), ("q2", "a", (2.0).hex())]


@pytest.mark.parametrize("content, message", [
    ("q1  Q0 a 1 2.5 t\nq1 Q0  b 2 t\n", r"r.run:2: expected 6 fields 'qid Q0 doc_id rank score tag', found 5"),
    ("q1  Q0 a 1 2.5 t\nq1 Q0  b\x01c 2 1.5 t\n", r"r.run:2: doc id 'b\\x01c' holds the control character U\+0001"),
    ("q1  Q0 a 1 2.5 t\nq1 Q0 b 2 1.5\rt\n", r"r.run:2: a carriage return \(\\r\) inside a line"),
    ("q1  Q0 a 1 2.5 t\n\nq1 Q0 b 2 x1.5 t\n", r"r.run:3: score 'x1.5' is not a number"),
    ("q1\tQ0\ta\t1\t  2.5\tt\nq1\tQ0\ta\t2\t  1.5\tt\n", r"r.run:2: query 'q1' lists doc 'a' again \(first on line 1\)"),
])
def test_problems_in_irregular_layouts_are_named_with_their_line(tmp_path, content, message):
    path = tmp_path / "r.run"
    path.write_bytes(content.encode())
    with pytest.raises(InputFormatError, match=message):
        engine.read_run(path)


def test_judgements_take_no_fields_after_the_grade(tmp_path):
    path = tmp_path / "q.qrels"
    path.write_text("q1 0 a 1\nq1  0 b 0 extra\n")
    with pytest.raises(fast_reader.Irregular):
        fast_reader.read_fast(path, TREC_QRELS)
    with pytest.raises(InputFormatError, match=r"q.qrels:2: expected 4 fields 'qid iter doc_id grade', found 5"):
        engine.read_qrels(path)


@pytest.mark.parametrize("content", [
    "q1 Q0 a 1 2.5 t\nq1 Q0 my doc 2 1.5 t\n",  # the usual layout
    "q1 Q0 a 1 2.5 t extra\nq1  Q0 my doc 2 1.5 t\n",  # fields after the tag, runs of blanks
])
def test_a_rank_that_is_not_a_number_is_named_with_its_line(tmp_path, content):
    """trec_eval never reads the rank, but a doc id holding a space shifts the fields after it: "my" would be read
    as the doc and 2 as its score. The fast reader looks at each rank's first and last byte; the line reader names
    the line."""
    path = tmp_path / "r.run"
    path.write_text(content)
    with pytest.raises(fast_reader.Irregular):
        fast_reader.read_fast(path, TREC_RUN)
    with pytest.raises(InputFormatError, match=r"r.run:2: the rank field 'doc' is not a number"):
        engine.read_run(path)


@pytest.mark.parametrize("rank", ["0", "17", "-1", "+3", "1.0", ".5", "1e3", "nan", "1" * 300])
def test_any_number_is_a_rank(tmp_path, rank):
    path = tmp_path / "r.run"
    path.write_text(f"q1 Q0 a {rank} 2.5 t\nq1 Q0 b {rank} 1.5 t\n")
    fast, slow = both_readers(path, TREC_RUN)
    assert fast == slow == [("q1", "a", (2.5).hex()), ("q1", "b", (1.5).hex())]


def test_a_rank_too_large_for_a_float_is_said_so(tmp_path):
    """It was "not a number", with the advice about doc ids holding a space."""
    path = tmp_path / "r.run"
    path.write_text("q1 Q0 a 1e400 2.5 t\n")
    with pytest.raises(InputFormatError, match=r"^.*r.run:1: the rank field '1e400' is too large for a float64 "
                                               r"\(at most about 1\.8e308\)$"):
        engine.read_run(path)


@pytest.mark.parametrize("rank", [".", "1-5", "2024-05", "-", "r1", "0x1", "1e"])
@pytest.mark.parametrize("others", ["1", "nan"])  # the verdict on a line does not depend on the other lines
def test_a_rank_is_refused_by_both_readers_alike(tmp_path, rank, others):
    """The fast reader looked at a rank's first and last byte only ('2024-05' passed), the line reader parsed it:
    a file's verdict depended on whether another line sent it to the line reader. One rule now: the values'."""
    path = tmp_path / "r.run"
    path.write_text(f"q1 Q0 a {rank} 2.5 t\nq1 Q0 b {others} 1.5 t\n")
    with pytest.raises(fast_reader.Irregular):
        fast_reader.read_fast(path, TREC_RUN)
    with pytest.raises(InputFormatError, match=rf"r.run:1: the rank field '{re.escape(rank)}' is not a number"):
        engine.read_run(path)


def test_a_file_of_blank_lines_is_an_empty_run(tmp_path):
    path = tmp_path / "r.run"
    path.write_text("\n  \n\t\n")
    table = engine.read_run(path)
    assert len(table) == 0 and table.query_keys == []


@pytest.mark.parametrize("order", ["as written", "shuffled"])
def test_more_judgements_than_run_lines_with_colliding_hashes(tmp_path, monkeypatch, order):
    """Judgements looked up in a smaller run: the lookup keys take more bits than the run's rows, and a hash that
    every pair shares still gives the exact numbers (every candidate is confirmed on the ids)."""
    from rag_eval import evaluate
    from rag_eval._core import trec
    from rag_eval._scoring.engine import pairs
    from rag_eval._scoring.engine.packed_ids import PackedIds

    rng = random.Random(order)
    qrels = {f"q{q}": {f"d{d}": rng.randint(0, 3) for d in rng.sample(range(400), 150)} for q in range(6)}
    run = {f"q{q}": {f"d{d}": float(rng.randint(0, 30)) for d in rng.sample(range(400), 12)} for q in range(7)}
    (tmp_path / "q").write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    lines = trec.format_run(run).splitlines(keepends=True)
    if order == "shuffled":
        rng.shuffle(lines)
    (tmp_path / "r").write_text("".join(lines))
    metrics = ["ndcg@10", "map", "recall@20", "precision@5"]
    expected = evaluate(qrels, run, metrics, no_relevant="zero")
    assert len(engine.read_qrels(tmp_path / "q")) > 2 * len(engine.read_run(tmp_path / "r"))
    for collide in (False, True):
        if collide:
            def few_bits(self, rows=None):
                n = len(self) if rows is None else len(rows)
                return np.full(n, 1 << 40, dtype=np.uint64)  # all equal above the position bits

            monkeypatch.setattr(PackedIds, "hashes", few_bits)
            monkeypatch.setattr(pairs, "doc_hashes", lambda table, kind, rows=None: few_bits(table.packed_docs, rows))
        got = evaluate(engine.read_qrels(tmp_path / "q"), engine.read_run(tmp_path / "r"), metrics, no_relevant="zero")
        for name in expected.aggregate:
            assert got.aggregate[name] == expected.aggregate[name], (name, collide)
            assert np.array_equal(got.values[name], expected.values[name], equal_nan=True), (name, collide)


@pytest.mark.parametrize("interleaved", [False, True])
def test_query_ids_numbered_exactly_when_every_hash_collides(tmp_path, monkeypatch, small_chunks, interleaved):
    """Query ids of up to 32 bytes are grouped and numbered by their hashes, in each chunk and over the file:
    with a hash that is the same for every id, each step's confirmation on the bytes must catch it."""
    from rag_eval._scoring.engine import packed_ids

    rng = random.Random(interleaved)
    queries = [f"query-é-{q:03d}/t{'x' * rng.randint(0, 12)}" for q in range(30)]
    lines = [f"{q} Q0 doc-{d} {d + 1} {rng.uniform(0, 9)!r} run" for q in queries for d in range(rng.randint(1, 9))]
    if interleaved:
        rng.shuffle(lines)
    path = tmp_path / "r.run"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    expected = rows(line_reader.read_lines(path, TREC_RUN))

    def same_for_all(x):
        x[...] = 7
        return x

    monkeypatch.setattr(packed_ids, "mix", same_for_all)
    table = fast_reader.read_fast(path, TREC_RUN)
    assert rows(table) == expected
    assert table.query_keys == list(dict.fromkeys(q for q, _, _ in expected))


def test_many_ids_decode_to_what_was_packed():
    """Thousands of ids are decoded as one joined text (packed_ids.decode): every id comes back, in order."""
    from rag_eval._scoring.engine.packed_ids import PackedIds

    rng = random.Random(8)
    alphabet = "abcxyz0189-/#é€\u00a0𝄞"
    for longest in (8, 40):
        ids = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, longest // 2))) for _ in range(9000)]
        packed = PackedIds.from_strings(ids)
        assert packed.decode().tolist() == ids
        rows = np.array(rng.sample(range(len(ids)), 5000))
        assert packed.decode(rows).tolist() == [ids[r] for r in rows]
    for width in (8, 16):  # ids that fill their last word, the last one the packed words' last bytes
        ids = [f"{i:0{width}d}" for i in range(5000)]
        assert PackedIds.from_strings(ids).decode().tolist() == ids
