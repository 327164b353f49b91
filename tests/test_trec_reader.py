"""The numpy TREC reader against a plain line-by-line reader, on random files.

The fast reader cuts a file into chunks of lines and parses numbers eight bytes
at a time; these tests force many small chunks (and so the two-thread path) and
compare every query id, doc id and value with ``line.split()`` + ``float()``.
"""

from __future__ import annotations

import os
import random

import numpy as np
import pytest

from rag_eval._core import trec
from rag_eval._core.errors import InputFormatError
from rag_eval._scoring import engine
from rag_eval._scoring.engine import fast_reader, line_reader, reader
from rag_eval._scoring.engine.packed_ids import PackedIds


def reference(path, value_index):
    rows = []
    with open(path, "rb") as handle:
        for line in handle:
            fields = line.split()
            if fields:
                rows.append((fields[0].decode(), fields[2].decode(), float(fields[value_index])))
    return rows


def as_rows(table):
    queries = [table.query_keys[c] for c in table.query_codes.tolist()]
    return list(zip(queries, table.docs.tolist(), table.values.tolist()))


def same(a, b):
    assert len(a) == len(b)
    for (qa, da, va), (qb, db, vb) in zip(a, b):
        assert (qa, da) == (qb, db)
        assert va == vb and np.signbit(va) == np.signbit(vb), (qa, da, va, vb)


def number_text(rng: random.Random, finite: bool = False) -> str:
    kind = rng.random()
    if kind < 0.35:
        return f"{rng.uniform(-50, 50):.{rng.randint(0, 6)}f}"
    if kind < 0.5:
        return repr(rng.uniform(-1e3, 1e3))  # 17 significant digits: the slow path
    if kind < 0.65:
        return str(rng.randint(-(10**9), 10**9))
    if kind < 0.75:
        special = ["0", "-0", "-0.0", "+1.5", ".5", "5.", "-.25", "1e-3", "2.5E+2", "00012.50"]
        return rng.choice(special if finite else special + ["inf", "-inf"])
    if kind < 0.85:
        return f"{rng.uniform(0, 1):.{rng.randint(7, 14)}f}"  # 9..16 characters
    return f"{rng.uniform(-1e6, 1e6):.{rng.randint(0, 3)}f}"


IDS = ["d1", "D1", "doc-7", "é", "naïve-ü", "x" * 17, "a" * 8, "b" * 9, "1234567", "q"]


def random_id(rng: random.Random, prefix: str) -> str:
    if rng.random() < 0.3:
        return rng.choice(IDS) + str(rng.randint(0, 3))
    return f"{prefix}{rng.randint(0, 10 ** rng.randint(1, 12))}"


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(fast_reader, "_CHUNK_BYTES", 257)  # the reader's internals: many small chunks


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("sep", [" ", "\t"])
def test_run_matches_line_reader(tmp_path, small_chunks, seed, sep):
    rng = random.Random(seed)
    lines = []
    for _ in range(rng.randint(1, 30)):
        qid = random_id(rng, "q")
        docs = {random_id(rng, "d") for _ in range(rng.randint(1, 12))}
        for rank, doc in enumerate(sorted(docs), start=1):
            lines.append(sep.join([qid, "Q0", doc, str(rank), number_text(rng, finite=True), "tag"]))  # inf: refused
    # a query's lines may come back later (a second block of the same query)
    path = tmp_path / "r.run"
    path.write_text("\n".join(lines) + ("\n" if seed % 2 else ""), encoding="utf-8")
    expected = reference(path, 4)
    if len({(q, d) for q, d, _ in expected}) != len(expected):
        pytest.skip("random ids repeated a pair")
    same(as_rows(engine.read_run(path)), expected)


@pytest.mark.parametrize("content", [
    "q1 Q0 a 1 2.5 t\r\nq1 Q0 b 2 1.5 t\r\n",  # CRLF
    "\nq1 Q0 a 1 2.5 t\n\nq1  Q0 b 2 1.5 t\n",  # blank lines, two spaces
    "  q1 Q0 a 1 2.5 t\nq1 Q0 b 2 1.5 t extra fields\n",  # leading blanks, fields after the tag
    "q1 Q0 a 1 2.5 t \nq1 Q0 b 2 1.5\tt\n",  # trailing blank
])
def test_irregular_layouts_read_like_trec_eval(tmp_path, content):
    path = tmp_path / "r.run"
    path.write_bytes(content.encode())
    same(as_rows(engine.read_run(path)), [("q1", "a", 2.5), ("q1", "b", 1.5)])


def test_qrels_and_numbers_at_chunk_edges(tmp_path, small_chunks):
    rng = random.Random(3)
    lines = [f"{random_id(rng, 'q')} 0 {random_id(rng, 'd')}{i} {number_text(rng, finite=True)}" for i in range(400)]
    path = tmp_path / "q.qrels"
    path.write_text("\n".join(lines) + "\n")
    table = engine.read_qrels(path)
    same(as_rows(table), reference(path, 3))


def test_number_parser_is_exact_on_many_random_numbers(tmp_path):
    rng = random.Random(11)
    texts = [number_text(rng, finite=True) for _ in range(20000)]
    texts += [
        f"{rng.randint(0, 10**k)}.{rng.randint(0, 10**j):0{j}d}" for k in range(9) for j in range(1, 9) for _ in range(20)
    ]
    path = tmp_path / "q.qrels"
    path.write_text("".join(f"q 0 d{i} {t}\n" for i, t in enumerate(texts)))
    values = engine.read_qrels(path).values
    for text, value in zip(texts, values.tolist()):
        want = float(text)
        assert value == want and np.signbit(value) == np.signbit(want), text


@pytest.mark.parametrize("bad, message", [
    ("1_0", r"r.run:2: score '1_0' is not a number"),
    ("0x1p3", "is not a number"),
    ("1.2.3", "is not a number"),
    ("--1", "is not a number"),
    (".", "is not a number"),
])
def test_malformed_numbers_are_errors(tmp_path, bad, message):
    path = tmp_path / "r.run"
    path.write_text(f"q1 Q0 a 1 2.0 t\nq1 Q0 b 2 {bad} t\n")
    with pytest.raises(InputFormatError, match=message):
        engine.read_run(path)


def test_duplicate_found_by_the_fast_reader_names_the_line(tmp_path, small_chunks):
    lines = [f"q{i % 7} Q0 d{i} 1 {i}.5 t" for i in range(300)] + ["q3 Q0 d10 1 0.5 t"]
    path = tmp_path / "r.run"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputFormatError, match=r"r.run:301: query 'q3' lists doc 'd10' again \(first on line 11\)"):
        engine.read_run(path)


def test_packed_ids_round_trip_in_memory_proportional_to_the_ids():
    ids = ["", "a", "abcdefgh", "abcdefghi", "naïve", "x" * 40, "<dbpedia:Oceanic_Airlines>"]
    packed = PackedIds.from_strings(ids)
    # one word per id of up to 8 bytes, as many as needed for longer ones: 1+1+1+2+1+5+4
    assert packed.words.size == 15
    assert packed.decode().tolist() == ids
    assert PackedIds.from_strings(["a", "bb"]).narrow


def _record_lookups(monkeypatch, pairs) -> list[tuple[int, int]]:
    """(needle keys, haystack keys) of every block the join looks up, as pairs.find_pairs chose them."""
    seen: list[tuple[int, int]] = []
    original = pairs._find_pairs_block

    def recording(needles, haystack, lo):
        seen.append((needles.index.keys.size, haystack.index.keys.size))
        return original(needles, haystack, lo)

    monkeypatch.setattr(pairs, "_find_pairs_block", recording)
    return seen


@pytest.mark.parametrize("depth", [25, 5])
def test_results_survive_hash_collisions(tmp_path, monkeypatch, depth):
    """Every match is confirmed on the ids, so even a hash that collides always is exact. Depth 25: the
    judgements are looked up in the run (fewer judgements than run lines); depth 5: the other way round."""
    from rag_eval import evaluate
    from rag_eval._scoring.engine import pairs

    rng = random.Random(5)
    qrels = {f"q{q}": {f"d{rng.randint(0, 40)}": rng.randint(0, 3) for _ in range(15)} for q in range(20)}
    run = {f"q{q}": {f"d{d}": float(rng.randint(0, 9)) for d in rng.sample(range(40), depth)} for q in range(22)}
    judged, lines = sum(map(len, qrels.values())), sum(map(len, run.values()))
    assert (judged < lines) == (depth == 25)
    (tmp_path / "q").write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    (tmp_path / "r").write_text(trec.format_run(run))
    metrics = ["ndcg@10", "map", "mrr", "recall@20", "precision@5"]
    expected = evaluate(qrels, run, metrics)

    def colliding(table, kind, rows=None):
        n = table.values.size if rows is None else len(rows)
        return np.zeros(n, dtype=np.uint64)

    monkeypatch.setattr(pairs, "doc_hashes", colliding)
    monkeypatch.setattr(PackedIds, "hashes", lambda self, rows=None: np.zeros(len(self) if rows is None else len(rows),
                                                                            dtype=np.uint64))
    in_memory = evaluate(qrels, run, metrics)
    lookups = _record_lookups(monkeypatch, pairs)
    from_files = evaluate(engine.read_qrels(tmp_path / "q"), engine.read_run(tmp_path / "r"), metrics)
    assert lookups and {needles for needles, _ in lookups} == {min(judged, lines)}  # the shorter side is sought
    for name in expected.aggregate:
        assert in_memory.aggregate[name] == expected.aggregate[name]
        assert from_files.aggregate[name] == expected.aggregate[name]
        assert np.array_equal(from_files.values[name], expected.values[name], equal_nan=True)

    (tmp_path / "dup").write_text("q1 Q0 a 1 2 t\nq1 Q0 b 2 1 t\nq1 Q0 a 3 0.5 t\n")
    with pytest.raises(InputFormatError, match=r"dup:3: query 'q1' lists doc 'a' again"):
        engine.read_run(tmp_path / "dup")


@pytest.mark.parametrize("seed", range(6))
def test_dict_runs_in_rank_order_take_the_fast_join_and_agree(tmp_path, seed):
    """Runs given as dicts in descending score order (as retrievers return them) are joined
    through the dicts themselves; ties, missing queries and unretrieved judgements included."""
    from rag_eval import evaluate

    rng = random.Random(seed)
    docs = ["a", "b", "B", "d10", "d9", "é", "zz", "d1", "x", "y"]
    qrels = {f"q{q}": {d: rng.randint(0, 3) for d in rng.sample(docs, rng.randint(1, 6))} for q in range(12)}
    run = {}
    for q in range(14):
        if rng.random() < 0.15:
            continue
        chosen = rng.sample(docs, rng.randint(1, len(docs)))
        scores = {d: float(rng.choice([3, 2, 2, 1, 1, 1, 0, -0.0])) for d in chosen}
        run[f"q{q}"] = dict(sorted(scores.items(), key=lambda item: -item[1]))  # rank order, ties as they come
    shuffled = {q: dict(rng.sample(list(r.items()), len(r))) for q, r in run.items()}  # forces the general join
    metrics = ["ndcg@3", "ndcg", "map", "mrr", "precision@2", "recall@5", "r_precision"]
    fast = evaluate(qrels, run, metrics, no_relevant="zero")
    general = evaluate(qrels, shuffled, metrics, no_relevant="zero")
    for name in fast.aggregate:
        assert fast.aggregate[name] == general.aggregate[name], name
        assert np.array_equal(fast.values[name], general.values[name], equal_nan=True), name


@pytest.mark.parametrize("depth", [30, 4])
@pytest.mark.parametrize("block", [1, 3, 64])
def test_files_joined_in_small_blocks_agree_with_the_dict_join(tmp_path, monkeypatch, block, depth):
    """Large inputs are hashed and looked up a block at a time; forcing tiny blocks (and
    judged queries the run never answered) must give the same numbers as the dict join. Depth 30:
    the judgements are looked up in the run; depth 4: the run (the shorter) in the judgements."""
    from rag_eval import evaluate
    from rag_eval._scoring.engine import pairs

    rng = random.Random(block)
    qrels = {f"q{q}": {f"d{rng.randint(0, 60)}": rng.randint(0, 3) for _ in range(12)} for q in range(25)}
    run = {}
    for q in range(28):
        if q % 7 == 3:
            continue  # a judged query without a ranking
        scores = {f"d{d}": float(rng.randint(0, 20)) for d in rng.sample(range(60), depth)}
        run[f"q{q}"] = dict(sorted(scores.items(), key=lambda item: -item[1]))
    judged, lines = sum(map(len, qrels.values())), sum(map(len, run.values()))
    assert (judged < lines) == (depth == 30)
    (tmp_path / "q").write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    (tmp_path / "r").write_text(trec.format_run(run))
    metrics = ["ndcg@10", "ndcg", "map", "mrr", "recall@20", "precision@5", "r_precision"]
    expected = evaluate(qrels, run, metrics, no_relevant="zero")  # the dict join: no pair hashing at all

    monkeypatch.setattr(pairs, "_LOOKUP_BLOCK_ROWS", block)
    monkeypatch.setattr(pairs, "_SCRATCH_ROWS", block)
    lookups = _record_lookups(monkeypatch, pairs)
    from_files = evaluate(
        engine.read_qrels(tmp_path / "q"), engine.read_run(tmp_path / "r"), metrics, no_relevant="zero",
    )
    shorter = min(judged, lines)  # the side sought, a block at a time
    assert lookups == [(shorter, max(judged, lines))] * -(-shorter // block)
    for name in expected.aggregate:
        assert from_files.aggregate[name] == expected.aggregate[name], name
        assert np.array_equal(from_files.values[name], expected.values[name], equal_nan=True), name


# ---- ids of any length and content ------------------------------------------------------


def test_an_id_over_40_bytes_followed_by_a_shorter_one(tmp_path):
    """Regression: the reader packed every line at the widest id's width and read past the chunk (IndexError)."""
    long_id = "a" * 41
    path = tmp_path / "r.run"
    path.write_text(f"q1 Q0 {long_id} 1 2.0 t\nq1 Q0 b 2 1.0 t\n")
    same(as_rows(engine.read_run(path)), [("q1", long_id, 2.0), ("q1", "b", 1.0)])


def test_dbpedia_style_ids_are_read_exactly(tmp_path, small_chunks):
    rng = random.Random(4)
    names = ["Oceanic_Airlines", "Lost_(TV_series)", "Zürich", "東京", "A" * 90, "B"]
    lines = []
    for q in range(40):
        qid = f"INEX_LD-2012{q:04d}" if q % 2 else f"QALD2_te-{q}"
        for rank, name in enumerate(rng.sample(names, 4), start=1):
            lines.append(f"{qid} Q0 <dbpedia:{name}> {rank} {10 - rank}.5 run")
    path = tmp_path / "dbpedia.run"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    same(as_rows(engine.read_run(path)), reference(path, 4))


@pytest.mark.parametrize("seed", range(4))
def test_ids_of_random_lengths_and_unicode_in_any_line_order(tmp_path, small_chunks, seed):
    """Query and doc ids of 1..300 bytes (shared prefixes, accents, emoji, CJK, #<>:/), lines of a
    query scattered over the file: every id, value and query grouping as a plain reader sees them."""
    rng = random.Random(seed)
    alphabet = "ab#<>:/é東😀_-.0"
    prefix = "reports/2024/q3.pdf#p"

    def an_id():
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 60)))
        return (prefix * rng.randint(0, 12) + text)[: rng.randint(1, 300)] or "x"

    queries = list(dict.fromkeys(an_id() for _ in range(12)))
    lines = []
    for qid in queries:
        for doc in dict.fromkeys(an_id() for _ in range(rng.randint(1, 15))):
            lines.append(f"{qid} Q0 {doc} 1 {number_text(rng, finite=True)} t")
    rng.shuffle(lines)
    path = tmp_path / "r.run"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    expected = reference(path, 4)
    table = engine.read_run(path)
    same(as_rows(table), expected)
    assert table.query_keys == list(dict.fromkeys(q for q, _, _ in expected))  # in order of first appearance


def test_a_2kb_id_among_200k_lines_takes_memory_in_proportion_to_the_file(tmp_path):
    """Regression: one row per line at the longest id's width (3.7 GiB for this file)."""
    import tracemalloc

    path = tmp_path / "big.run"
    lines = [f"q{i // 100} Q0 d{i * 7919 % 10**7} {i % 100 + 1} {1000 - i % 100}.25 t\n" for i in range(200_000)]
    lines[100_000] = f"q1000 Q0 {'L' * 2048} 1 5.5 t\n"
    path.write_text("".join(lines))
    size = path.stat().st_size  # about 6 MiB
    tracemalloc.start()
    try:
        table = engine.read_run(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert table.docs[100_000] == "L" * 2048 and table.docs[100_001] == f"d{100_001 * 7919 % 10**7}"
    assert table.packed_docs.words.size == 200_000 - 1 + 256  # one word per id, 256 for the long one
    assert peak < 4 * size, f"peak {peak / 2**20:.1f} MiB for a {size / 2**20:.1f} MiB file"


# ---- what a line may hold ------------------------------------------------------------------


@pytest.mark.parametrize("reader, content", [
    (engine.read_qrels, "\ufeffq1 0 a 1\nq1 0 b 0\n"),
    (engine.read_run, "\ufeffq1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\n"),
    (engine.read_run, "\ufeffq1  Q0 a 1 2.0 t\r\nq1 Q0 b 2 1.0 t\r\n"),  # irregular: the line reader
])
def test_a_leading_bom_is_not_part_of_the_first_query_id(tmp_path, reader, content):
    path = tmp_path / "file"
    path.write_bytes(content.encode("utf-8"))
    table = reader(path)
    assert table.query_keys == ["q1"]
    assert table.docs.tolist() == ["a", "b"]


def test_a_non_breaking_space_is_part_of_an_id(tmp_path):
    """Fields are separated by ASCII whitespace only, as in trec_eval."""
    path = tmp_path / "r.run"
    path.write_text("q1 Q0 a\u00a0b 1 2.0 t\nq\u20031 Q0 c 2 1.0 t\n", encoding="utf-8")
    same(as_rows(engine.read_run(path)), [("q1", "a\u00a0b", 2.0), ("q\u20031", "c", 1.0)])
    # Regression: the scan that names a bad line split on Unicode spaces ("found 5 fields").
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 a\u00a0b 1\nq1 0 c 1\nq1 0 c 0\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"q.qrels:3: query 'q1' lists doc 'c' again \(first on line 2\)"):
        engine.read_qrels(qrels)


def test_vertical_tab_and_form_feed_separate_fields_as_in_trec_eval(tmp_path):
    path = tmp_path / "q.qrels"
    path.write_bytes(b"q1\x0b0\x0ca 1\n")
    same(as_rows(engine.read_qrels(path)), [("q1", "a", 1.0)])


@pytest.mark.parametrize("content, message", [
    (b"q1 Q0 a 1 2.0 t\nq1 Q0 b\x00c 2 1.0 t\n", r"r.run:2: doc id 'b\\x00c' holds the control character U\+0000"),
    (b"q1 Q0 a 1 2.0 t\nq\x7f1 Q0 b 2 1.0 t\n", r"r.run:2: query id 'q\\x7f1' holds the control character U\+007F"),
    (b"q1 Q0 a 1 2.0 t\rq1 Q0 b 2 1.0 t\r", r"r.run:1: a carriage return \(\\r\) inside a line.*CR-only"),
    (b"q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1e999 t\n", r"r.run:2: score '1e999' is too large for a float64"),
    (b"q1 Q0 a 1 2.0 t\nq1 Q0 b 2 -1e400 t\n", r"r.run:2: score '-1e400' is too large for a float64"),
    (b"q1 Q0 a 1 2.0 t\nq1 Q0 b 2 \xd9\xa1 t\n", "r.run:2: score '\u0661' is not a number"),
    (b"q1 Q0 a 1 2.0 t\nq1 Q0 \xff 2 1.0 t\n", r"r.run:2: not UTF-8 text \(byte 0xff at column 7"),
])
def test_bad_lines_are_named(tmp_path, content, message):
    path = tmp_path / "r.run"
    path.write_bytes(content)
    with pytest.raises(InputFormatError, match=message):
        engine.read_run(path)


def test_a_nul_in_an_id_never_matches_the_id_without_it(tmp_path):
    """Regression: 'a\\x00' was packed like 'a' and matched it (nDCG 1.0 instead of an error)."""
    from rag_eval import evaluate

    path = tmp_path / "r.run"
    path.write_text("q1 Q0 a 1 2.0 t\n")
    with pytest.raises(InputFormatError, match=r"judgements: query 'q1': doc id 'a\\x00' holds the control character U\+0000"):
        evaluate({"q1": {"a\x00": 1}}, engine.read_run(path), ["ndcg"])


@pytest.mark.parametrize("make, what", [
    (lambda p: os.mkfifo(p), "is a FIFO"),
    (lambda p: p.mkdir(), "is a folder"),
    (lambda p: p.symlink_to(p), "symbolic link loop"),
])
def test_special_files_are_refused_without_opening_them(tmp_path, make, what):
    path = tmp_path / "special.run"
    make(path)
    with pytest.raises(InputFormatError, match=f"special.run: .*{what}"):
        engine.read_run(path)


@pytest.mark.parametrize("hashing", ["real", "all equal", "three values"])
def test_factorize_numbers_ids_by_first_appearance_whatever_the_hashes(monkeypatch, hashing):
    """Equal ids get one code, codes in order of first appearance: exact even when hashes collide."""
    rng = random.Random(9)
    pool = ["a", "b", "é", "x" * 9, "x" * 17, "<dbpedia:Oceanic_Airlines>", "q000123", "q000124"] + [
        "reports/2024/q3.pdf#p" + str(i) for i in range(40)
    ]
    ids = [rng.choice(pool) for _ in range(3000)]
    if hashing != "real":
        real = PackedIds.hashes
        width = 1 if hashing == "all equal" else 3
        monkeypatch.setattr(PackedIds, "hashes", lambda self, rows=None: real(self, rows) % np.uint64(width))
    codes, first = PackedIds.from_strings(ids).factorize()
    expected = {}
    for i in ids:
        expected.setdefault(i, len(expected))
    assert codes.tolist() == [expected[i] for i in ids]
    assert [ids[r] for r in first.tolist()] == list(expected)


# ---- issue 20: the TREC files rag_eval writes read back; a file cut short while it is read -------------


@pytest.mark.parametrize("run", [{"q1": {"d1 9": 1.0}}, {"q 1": {"d1": 1.0}}, {"q1": {"d1\tx": 1.0}}])
def test_an_id_a_trec_field_cannot_hold_is_never_written(run):
    """Before: 'd1 9' was written as is and read back as the doc 'd1' with the rank 9 as its score."""
    with pytest.raises(InputFormatError, match=r"id '(d1 9|q 1|d1\\tx)' holds .*a TREC file separates fields"):
        trec.format_run(run)
    with pytest.raises(InputFormatError, match="a TREC file separates fields"):
        trec.format_qrels({qid: {doc: 1 for doc in docs} for qid, docs in run.items()})


def test_written_run_and_qrels_read_back_exactly(tmp_path):
    run = {"q1": {"a\u00a0b": 0.5, "reports/q3.pdf#p12#c7": 0.5, "é": 1.0}, "q2": {"x": 2.0}}
    (tmp_path / "r.run").write_text(trec.format_run(run), encoding="utf-8")
    (tmp_path / "q.qrels").write_text(trec.format_qrels({"q1": {"é": 2, "a\u00a0b": 0}}), encoding="utf-8")
    assert engine.to_nested(engine.read_run(tmp_path / "r.run")) == run
    assert engine.to_nested(engine.read_qrels(tmp_path / "q.qrels")) == {"q1": {"é": 2.0, "a\u00a0b": 0.0}}


CUT_WHILE_READ = r"""
import os, sys
from rag_eval._scoring.engine.packed_ids import PackedIds
from rag_eval.cli import main

run = sys.argv[1]
real = PackedIds.from_text.__func__
done = []


def cut(cls, text, *args, **kwargs):
    # The first chunk of the run being parsed (the qrels file is tiny): another process cuts the run to a tenth.
    if not done and text.size > 1000:
        done.append(1)
        os.truncate(run, os.path.getsize(run) // 10)
    return real(cls, text, *args, **kwargs)


PackedIds.from_text = classmethod(cut)
sys.exit(main(["evaluate", "--qrels", sys.argv[2], "--run", run, "-m", "ndcg@10"]))
"""


def test_a_run_file_cut_short_while_it_is_read_is_one_line_not_sigbus(tmp_path):
    """Before: the reader mapped the file and the process died of SIGBUS (exit 135 in a shell)."""
    import subprocess
    import sys

    run, qrels = tmp_path / "big.run", tmp_path / "q.qrels"
    lines = [f"q{i // 300} Q0 d{i * 7919 % 10**7} {i % 300 + 1} {1000 - i % 300}.25 t\n" for i in range(300_000)]
    run.write_text("".join(lines))  # about 10 MiB: many chunks, read by two threads
    qrels.write_text("q1 0 d7919 1\n")
    done = subprocess.run([sys.executable, "-c", CUT_WHILE_READ, str(run), str(qrels)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"rag-eval: error: {run}: the file changed while it was read (it had {sum(map(len, lines)):,} bytes); read it "
        "again once it is complete (a file still being written, or rewritten by another process, gives no number)"
    ]


def test_a_file_that_changes_under_the_line_reader_is_refused(tmp_path, monkeypatch):
    """The line reader (files the fast reader hands over) checks the file's size and time after reading, as the
    fast one does."""
    path = tmp_path / "r.run"
    path.write_text("q1  Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\n")

    def hand_over(path, layout):
        raise fast_reader.Irregular

    monkeypatch.setattr(reader, "read_fast", hand_over)  # every layout is the fast reader's now: force the line reader
    real = line_reader._check_id
    appended = []

    def check_and_append(value, kind, where):
        if not appended:  # another process appends a line while the file is read
            appended.append(1)
            with path.open("a") as handle:
                handle.write("q1 Q0 c 3 0.5 t\n")
        return real(value, kind, where)

    monkeypatch.setattr(line_reader, "_check_id", check_and_append)
    with pytest.raises(InputFormatError, match=r"r.run: the file changed while it was read \(it had 33 bytes\)"):
        engine.read_run(path)


def test_a_line_longer_than_a_chunk_is_read_by_the_fast_reader(tmp_path, small_chunks):
    path = tmp_path / "r.run"
    long_id = "L" * 5000  # longer than many chunks of 257 bytes
    path.write_text(f"q1 Q0 a 1 2.0 t\nq1 Q0 {long_id} 2 1.0 t\nq2 Q0 b 1 3.0 t\n")
    same(as_rows(engine.read_run(path)), [("q1", "a", 2.0), ("q1", long_id, 1.0), ("q2", "b", 3.0)])


def test_a_long_line_of_nul_bytes_is_refused_from_its_start(tmp_path):
    """A 2 GB file of NUL bytes is one endless line: its first megabyte names the problem (see also
    test_bad_input_evaluate: the whole file is never read)."""
    path = tmp_path / "r.run"
    path.write_bytes(b"q1 Q0 a 1 2.0 t\n" + b"\0" * (3 << 20))
    with pytest.raises(InputFormatError) as excinfo:
        engine.read_run(path)
    assert str(excinfo.value) == (
        f"{path}:2: query id {chr(0) * 60!r}... (more than 1,048,576 characters) holds the control character U+0000 "
        "at position 1; ids may not hold control characters"
    )
