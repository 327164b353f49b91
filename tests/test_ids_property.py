"""Ids of any length and content, in any line order, read from real files: rag_eval against trec_eval.

Each example writes a TREC qrels file and a run file whose ids are 1 to 2000 bytes of
any UTF-8 text a TREC field can hold (accents, emoji, CJK, ``#<>:/``, non-ASCII
spaces such as U+00A0 and U+0085, which are not field separators), many sharing
long prefixes (chunk ids such as ``reports/2024/q3.pdf#p12#c7``), with the lines of
both files shuffled. rag_eval reads the files with read_qrels / read_run; pytrec_eval
(trec_eval, compiled) gets the same judgements and rankings as dicts, in a fresh
process (see test_differential.py). Every metric of every query must agree to 1e-9.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_differential import FLOAT32_SCORES, TREC_GRADES, TREC_NAMES, TREC_REQUEST, trec_eval_reference

from rag_eval import evaluate
from rag_eval._scoring.engine import read_qrels, read_run
from rag_eval._scoring.metrics.measures import parse_metrics

pytest.importorskip("pytrec_eval")

# Any character but ASCII whitespace (the field separators), control characters (refused in
# ids, rag_eval._core.ids) and surrogates (not UTF-8).
ID_CHARACTERS = st.characters(
    codec="utf-8", exclude_categories=("Cs",), exclude_characters="".join(map(chr, [*range(33), 127]))
)
PREFIXES = ["", "reports/2024/q3.pdf#p12#c", "<dbpedia:Oceanic_Airlines>", "é東😀", "a" * 40, "\u00a0#:/"]
MAX_ID_BYTES = 2000


@st.composite
def an_id(draw) -> str:
    """1..2000 bytes: a prefix repeated 0..90 times (ids that share long prefixes), then any text."""
    prefix = draw(st.sampled_from(PREFIXES)) * draw(st.integers(0, 90))
    text = prefix + draw(st.text(ID_CHARACTERS, min_size=1, max_size=8))
    text = text.encode("utf-8")[:MAX_ID_BYTES].decode("utf-8", "ignore")
    # Never empty, and never starting with U+FEFF: first in a file, that is the byte-order mark every reader
    # drops (docs/semantics.md, "Ids").
    return text if text and not text.startswith("\ufeff") else "x" + text[: MAX_ID_BYTES // 2]


@st.composite
def collection(draw) -> tuple[dict, dict]:
    """(judgements, run) of a few queries over a shared pool of documents."""
    pool = draw(st.lists(an_id(), min_size=1, max_size=12, unique=True))
    query_ids = draw(st.lists(an_id(), min_size=1, max_size=5, unique=True))
    judgements, run = {}, {}
    for qid in query_ids:
        judged = draw(st.lists(st.sampled_from(pool), unique=True, max_size=8))
        if judged:
            judgements[qid] = {d: draw(TREC_GRADES) for d in judged}
        retrieved = draw(st.lists(st.sampled_from(pool), unique=True, max_size=len(pool)))
        if retrieved:
            run[qid] = {d: draw(FLOAT32_SCORES) for d in retrieved}
    return judgements, run


def write_shuffled(path: Path, lines: list[str], order: list[int]) -> None:
    path.write_text("".join(lines[i] for i in order), encoding="utf-8")


@settings(max_examples=20, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=collection(), level=st.sampled_from([1, 2]), shuffle=st.randoms(use_true_random=False))
def test_long_unicode_ids_in_any_line_order_match_trec_eval(data, level, shuffle):
    judgements, run = data
    assume(judgements and any(run.get(q) for q in judgements))
    qrels_lines = [f"{q} 0 {d} {g}\n" for q, docs in judgements.items() for d, g in docs.items()]
    run_lines = [
        f"{q} Q0 {d} {rank} {s!r} tag\n" for q, docs in run.items() for rank, (d, s) in enumerate(docs.items())
    ]
    qrels_order, run_order = list(range(len(qrels_lines))), list(range(len(run_lines)))
    shuffle.shuffle(qrels_order)
    shuffle.shuffle(run_order)
    with tempfile.TemporaryDirectory() as folder:
        qrels_path, run_path = Path(folder) / "ids.qrels", Path(folder) / "ids.run"
        write_shuffled(qrels_path, qrels_lines, qrels_order)
        write_shuffled(run_path, run_lines, run_order)
        results = evaluate(
            read_qrels(qrels_path), read_run(run_path), TREC_NAMES, no_relevant="zero", relevance_threshold=level
        )
    reference = trec_eval_reference(judgements, run, TREC_REQUEST, level)
    assert set(results.query_ids) == set(judgements)
    for name in TREC_NAMES:
        for qid in results.query_ids:
            # trec_eval -c: a judged query the run did not answer scores 0.
            want = reference[qid][name] if qid in reference else 0.0
            got = results.value(str(parse_metrics([name])[0]), qid)
            assert got == pytest.approx(want, abs=1e-9, rel=0), f"{name} {qid[:60]!r}: {got} != trec_eval {want}"
