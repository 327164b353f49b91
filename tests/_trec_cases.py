"""Random collections for the property tests of bpref, judged-only and the holes (hypothesis strategies).

Ids are any UTF-8 text a TREC file can hold: no white space (fields are separated by it), no
control character and no lone surrogate (rag_eval refuses both, docs/semantics.md "Ids"); any
script, any length. Queries may be judged and answered, judged only, or answered only, and the
documents of each dict come in the order drawn, so that no test relies on input order.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck
from hypothesis import strategies as st

ID_CHARACTERS = st.characters(codec="utf-8", exclude_categories=("Cc", "Cs", "Zs", "Zl", "Zp")).filter(
    lambda c: not c.isspace()
)
# Not starting with U+FEFF: written first in a file, it reads as the file's byte-order mark, which every
# reader drops (docs/semantics.md, "Ids"); anywhere else in an id it is kept.
IDS = st.one_of(
    st.text(ID_CHARACTERS, min_size=1, max_size=12).filter(lambda text: not text.startswith("\ufeff")),
    st.sampled_from(["d1", "d10", "d9", "D3", "a"]),
)
# Few distinct values so that ties are frequent; -0.0 ties with 0.0. Scores that float32 holds exactly:
# trec_eval keeps a score in a C float (docs/semantics.md, "Equal to trec_eval", point 6).
TIED_SCORES = st.sampled_from([2.0, 1.5, 1.0, 0.5, 0.0, -0.0, -1.0])
FLOAT32_SCORES = st.one_of(TIED_SCORES, st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False, width=32))
# trec_eval reads integer grades; -1 is its "in the pool, not judged"; pytrec_eval crashes on -2 and below.
TREC_GRADES = st.integers(-1, 4)
FLOAT_GRADES = st.one_of(
    st.sampled_from([0.5, 0.9, 0.3, 0.0, 1.0, 2.0, -0.5, -3.0]),
    st.floats(-1.0, 3.0, allow_nan=False).map(lambda g: round(g, 3)),
)
SETTINGS = {"deadline": None, "database": None, "suppress_health_check": [HealthCheck.too_slow]}


@st.composite
def collection(draw, grades=TREC_GRADES, scores=FLOAT32_SCORES, max_queries: int = 8, max_docs: int = 14):
    """(judgements, run) as ``{qid: {doc: grade}}`` and ``{qid: {doc: score}}``; at least one judged query."""
    docs = draw(st.lists(IDS, unique=True, min_size=1, max_size=max_docs))
    qids = draw(st.lists(IDS, unique=True, min_size=1, max_size=max_queries))
    judgements: dict[str, dict[str, float]] = {}
    run: dict[str, dict[str, float]] = {}
    for i, qid in enumerate(qids):
        kind = "both" if i == 0 else draw(st.sampled_from(["both"] * 5 + ["judged", "answered"]))
        if kind != "answered":
            judged = draw(st.lists(st.sampled_from(docs), unique=True, min_size=1, max_size=len(docs)))
            judgements[qid] = {d: draw(grades) for d in judged}
        if kind != "judged":
            retrieved = draw(st.lists(st.sampled_from(docs), unique=True, min_size=1, max_size=len(docs)))
            run[qid] = {d: draw(scores) for d in retrieved}
    return judgements, run


def trec_safe(judgements: dict) -> dict:
    """``judgements`` with a grade 0 for the first document of each query whose grades are all negative.

    trec_eval reads out of bounds computing bpref for such a query (m_bpref.c sums ``rel_levels[0]``, an
    array of max grade + 1 = 0 entries): pytrec_eval was seen to crash (SIGSEGV) on
    ``{"q": {"d": -1}}`` asked for map and bpref together. The comparisons with it therefore avoid that
    case; the slow references of the tests cover it.
    """
    safe = {}
    for qid, judged in judgements.items():
        if max(judged.values()) < 0:
            first = next(iter(judged))
            judged = {**judged, first: 0}
        safe[qid] = judged
    return safe


def trec_order(ranking: dict[str, float]) -> list[str]:
    """The ranking rule, slowly: score descending, ties by doc id descending in UTF-8 bytes."""
    by_doc = sorted(ranking, key=lambda d: d.encode("utf-8"), reverse=True)
    return sorted(by_doc, key=lambda d: -ranking[d])


def trec_lines(judgements: dict, run: dict) -> tuple[list[str], list[str]]:
    """(qrels lines, run lines) of TREC files; the run's rank column is deliberately wrong (1 everywhere)."""
    qrels = [f"{q} 0 {d} {g}" for q, judged in judgements.items() for d, g in judged.items()]
    lines = [f"{q}\tQ0\t{d}\t1\t{s!r}\tRUN" for q, ranking in run.items() for d, s in ranking.items()]
    return qrels, lines


def write_lines(path: Path, lines: list[str]) -> Path:
    """``lines`` as a UTF-8 text file."""
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path
