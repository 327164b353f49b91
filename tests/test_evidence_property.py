"""evaluate_evidence against a slow reference written from SEMANTICS.md, on random data (hypothesis).

The reference counts characters as Python sets of (document, position), ranks each query's
spans with two stable sorts (score descending, then chunk id descending in bytes), takes the
budgeted context chunk by chunk, builds document and chunk grades from the definitions, and
scores the document and chunk rankings with rag_eval._scoring.evaluate (checked against trec_eval in
test_differential.py). Data: random documents, overlapping, adjacent and repeated evidence,
overlapping and adjacent chunks, spans at document edges, spans in documents without evidence,
empty retrievals, queries without spans or without evidence, and tied scores.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_eval import evaluate, evaluate_evidence
from rag_eval._core.errors import InputFormatError
from rag_eval._core.spans import chunk_id
from rag_eval._core.tokens import count_words
from rag_eval._scoring.evidence import collapse_to_documents, covered_evidence

# Ids whose chunk ids sort differently from the ids themselves ('a' < 'a!' but 'a!#..' < 'a#..'),
# with '#' and '-' inside, and non-ASCII.
DOC_IDS = ["a", "a!", "a#1", "b-2", "é", "d"]
# ...and ids as real data has them: URLs, paths, <dbpedia:X>, chunk-id look-alikes, any UTF-8 of any length.
MESSY_IDS = st.one_of(
    st.sampled_from(["https://example.org/a?b=1#frag", "<dbpedia:Pacific_Ocean>", "docs/guide.md#3-9", "1", "😀"]),
    st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=300),
)
DOC_ID = st.one_of(st.sampled_from(DOC_IDS), MESSY_IDS)
TEXT = st.text(alphabet="ab c.é日,", min_size=1, max_size=40)
SCORES = st.sampled_from([2.0, 1.0, 0.5, 0.0, -0.0, -1.0])
KS = (1, 2, 3, 5, 10)
CHAR_BUDGETS = (1, 5, 10, 20, 50)
TOKEN_BUDGETS = (1, 3, 8)
SETTINGS = {"deadline": None, "database": None, "suppress_health_check": [HealthCheck.too_slow], "max_examples": 100}


@st.composite
def span_in(draw, documents: dict[str, str]):
    doc = draw(st.sampled_from(sorted(documents)))
    length = len(documents[doc])
    start = draw(st.integers(0, length - 1))
    end = draw(st.integers(start + 1, length))
    return doc, start, end


@st.composite
def cases(draw):
    names = draw(st.lists(DOC_ID, min_size=1, max_size=4, unique=True))
    documents = {name: draw(TEXT) for name in names}
    evidence, spans, judgements = {}, {}, {}
    for i in range(draw(st.integers(1, 5))):
        qid = f"q{i}"
        kind = draw(st.sampled_from(["evidence"] * 4 + ["judged only", "spans only"]))
        if kind == "evidence":
            evidence[qid] = [
                (*draw(span_in(documents)), draw(st.sampled_from([1, 2, 0.5])))
                for _ in range(draw(st.integers(1, 4)))
            ]
        if kind != "spans only" and draw(st.booleans()):
            held = {doc for doc, *_ in evidence.get(qid, [])}
            judged = draw(st.lists(st.sampled_from(sorted(documents)), max_size=3, unique=True))
            grades = {d: draw(st.sampled_from([1, 2, 3] if d in held else [0, 1, 2, -1])) for d in judged}
            if grades:
                judgements[qid] = grades
        retrieval = draw(st.sampled_from(["spans"] * 4 + ["empty", "missing"]))
        if retrieval == "spans":
            chosen = draw(st.lists(span_in(documents), min_size=1, max_size=8, unique=True))
            spans[qid] = [(*span, draw(SCORES)) for span in chosen]
        elif retrieval == "empty":
            spans[qid] = []
    return documents, evidence, spans, judgements


# ---- the reference ---------------------------------------------------------------------------


def ranked(items):
    by_id = sorted(items, key=lambda s: chunk_id(*s[:3]).encode("utf-8"), reverse=True)
    return sorted(by_id, key=lambda s: -s[3])


def characters(spans):
    return {(doc, i) for doc, start, end, *_ in spans for i in range(start, end)}


def context(order, k, unit, documents):
    if unit is None:
        return order[:k]
    taken, used = [], 0
    for span in order:
        doc, start, end = span[:3]
        size = end - start if unit == "chars" else count_words(documents[doc][start:end])
        if used + size > k:
            break  # the first chunk that overflows ends the context
        taken.append(span)
        used += size
    return taken


def reference_evidence(evidence, spans, metric, documents):
    name, _, cut = metric.partition("@")
    unit = "chars" if cut.endswith("chars") else "tokens" if cut.endswith("tokens") else None
    k = int(cut.removesuffix("chars").removesuffix("tokens"))
    read = context(ranked(spans), k, unit, documents)
    wanted = characters(evidence)
    covered = len(wanted & characters(read))
    length = sum(end - start for _, start, end, _ in read)
    if name == "evidence_recall":
        return covered / len(wanted)
    if name == "evidence_precision":
        return covered / length if length else 0.0
    return covered / (length + len(wanted) - covered)


def document_grades(evidence, judged):
    grades = {}
    for doc, _, _, grade in evidence:
        grades[doc] = max(grades.get(doc, 0), grade)
    grades.update(judged)
    return grades


def reference_collapse(spans):
    docs = []
    for doc, *_ in ranked(spans):
        if doc not in docs:
            docs.append(doc)
    return {doc: float(len(docs) - i) for i, doc in enumerate(docs)}


def chunk_judgements(evidence, judged, chunks, fraction):
    out = {}
    for doc in document_grades(evidence, judged):
        for c_doc, c_start, c_end in chunks:
            if c_doc != doc:
                continue
            grade = 0
            for e_doc, e_start, e_end, e_grade in evidence:
                overlap = min(c_end, e_end) - max(c_start, e_start)
                if e_doc == doc and overlap > 0 and overlap >= fraction * (e_end - e_start):
                    grade = max(grade, e_grade)
            out[chunk_id(c_doc, c_start, c_end)] = grade
    return out


def same(got: float, want: float) -> bool:
    return (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, abs=1e-12, rel=0)


# ---- the properties --------------------------------------------------------------------------

EVIDENCE_METRICS = (
    [f"evidence_{m}@{k}" for m in ("recall", "precision", "iou") for k in KS]
    + [f"evidence_{m}@{b}chars" for m in ("recall", "precision", "iou") for b in CHAR_BUDGETS]
    + [f"evidence_recall@{b}tokens" for b in TOKEN_BUDGETS]
)


@settings(**SETTINGS)
@given(case=cases(), with_documents=st.booleans(), policy=st.sampled_from(["skip", "zero"]))
def test_evidence_metrics_match_the_reference(case, with_documents, policy):
    documents, evidence, spans, judgements = case
    judged = set(evidence) | set(judgements)
    metrics = EVIDENCE_METRICS if with_documents else [m for m in EVIDENCE_METRICS if "tokens" not in m]
    given = documents if with_documents else None
    if not judged:
        with pytest.raises(InputFormatError, match="nothing to score"):
            evaluate_evidence(evidence, spans, metrics, document_judgements=judgements, documents=given)
        return
    results = evaluate_evidence(evidence, spans, metrics, document_judgements=judgements, documents=given,
                                no_relevant=policy)
    assert results.query_ids == tuple(sorted(judged))
    assert results.unanswered_queries == tuple(sorted(q for q in judged if not spans.get(q)))
    assert results.unjudged_queries == tuple(sorted(q for q, s in spans.items() if s and q not in judged))
    for metric in metrics:
        column = []
        for qid in results.query_ids:
            if qid in evidence:
                want = reference_evidence(evidence[qid], spans.get(qid, []), metric, documents)
            else:
                want = math.nan if policy == "skip" else 0.0
            got = results.value(metric, qid)
            assert same(got, want), f"{metric} {qid}: {got} != reference {want}"
            column.append(want)
        kept = [v for v in column if not math.isnan(v)]
        want_mean = sum(kept) / len(kept) if kept else math.nan
        assert same(results.aggregate[metric], want_mean), metric
        assert set(results.left_out.get(metric, ())) == (
            {q for q in results.query_ids if q not in evidence} if policy == "skip" else set()
        )


@settings(**SETTINGS)
@given(case=cases(), gain=st.sampled_from(["linear", "exponential"]), threshold=st.sampled_from([1, 2]))
def test_document_metrics_are_evaluate_on_the_collapsed_ranking(case, gain, threshold):
    _, evidence, spans, judgements = case
    judged = set(evidence) | set(judgements)
    if not judged:
        return
    names = ["ndcg", "ndcg@3", "precision@2", "recall@3", "map", "mrr", "r_precision", "hit_rate@1", "judged@2"]
    results = evaluate_evidence(evidence, spans, ["doc_" + n for n in names], document_judgements=judgements,
                                gain=gain, relevance_threshold=threshold)
    collapsed = collapse_to_documents(spans)
    for qid, items in spans.items():
        assert collapsed[qid] == reference_collapse(items)
        assert list(collapsed[qid]) == list(reference_collapse(items))
    grades = {q: document_grades(evidence.get(q, []), judgements.get(q, {})) for q in judged}
    grades = {q: g for q, g in grades.items() if g}
    want = evaluate(grades, {q: reference_collapse(s) for q, s in spans.items()}, names, gain=gain,
                    relevance_threshold=threshold)
    assert want.query_ids == results.query_ids
    for name in names:
        for qid in results.query_ids:
            assert same(results.value("doc_" + name, qid), want.value(name, qid)), (name, qid)
        assert same(results.aggregate["doc_" + name], want.aggregate[name])
        assert results.left_out.get("doc_" + name, ()) == want.left_out.get(name, ())


@st.composite
def chunkings(draw, documents):
    """Every chunk of a chunking: windows of a size with an overlap (adjacent when 0), per document."""
    size = draw(st.integers(1, 12))
    step = draw(st.integers(1, size))
    chunks = []
    for doc, text in documents.items():
        for start in range(0, len(text), step):
            chunks.append((doc, start, min(start + size, len(text))))
            if start + size >= len(text):
                break
    return chunks


@settings(**SETTINGS)
@given(data=st.data(), fraction=st.sampled_from([0.0, 0.3, 0.5, 1.0]))
def test_chunk_level_metrics_match_evaluate_on_reference_chunk_grades(data, fraction):
    documents, evidence, _, judgements = data.draw(cases())
    judged = set(evidence) | set(judgements)
    if not judged:
        return
    chunks = data.draw(chunkings(documents))
    spans = {}
    for qid in sorted(judged) + ["unjudged"]:
        picked = data.draw(st.lists(st.sampled_from(chunks), max_size=6, unique=True))
        spans[qid] = [(*c, data.draw(SCORES)) for c in picked]
    names = ["ndcg@5", "dcg@3", "idcg@3", "precision@2", "recall@4", "map", "mrr", "judged@3"]
    results = evaluate_evidence(evidence, spans, names, document_judgements=judgements, chunks=chunks,
                                min_evidence_fraction=fraction)
    grades = {q: chunk_judgements(evidence.get(q, []), judgements.get(q, {}), chunks, fraction) for q in judged}
    run = {q: {chunk_id(*s[:3]): s[3] for s in items} for q, items in spans.items()}
    want = evaluate({q: g for q, g in grades.items() if g}, run, names)
    for name in names:
        for qid in results.query_ids:
            got = results.value(name, qid)
            expected = want.value(name, qid) if qid in want.query_ids else (math.nan if name not in (
                "dcg@3", "idcg@3", "judged@3") else 0.0)
            assert same(got, expected), (name, qid, got, expected)


@settings(**SETTINGS)
@given(case=cases(), k=st.sampled_from(KS))
def test_covered_evidence_partitions_the_evidence(case, k):
    _, evidence, spans, _ = case
    if not evidence:
        return
    coverage = covered_evidence(evidence, spans, k)
    assert set(coverage) == set(evidence)
    for qid, items in evidence.items():
        covered, missed = characters(coverage[qid].covered), characters(coverage[qid].missed)
        wanted = characters(items)
        assert covered == wanted & characters(ranked(spans.get(qid, []))[:k])
        assert missed == wanted - covered
        assert not covered & missed


@pytest.mark.parametrize("sizes", [[3, 1, 4, 1, 5], [2000, 1, 1, 3]])  # rows of a matrix; one very long block: a sort
def test_sorting_within_blocks_is_a_stable_sort_by_block_then_score_descending(sizes):
    import numpy as np

    from rag_eval._scoring.evidence.ranks import _by_score_within_blocks

    rng = np.random.default_rng(3)
    sizes = np.array(sizes)
    score = rng.choice([2.0, 1.0, 0.0, -0.0, -1.5], size=int(sizes.sum()))
    block = np.repeat(np.arange(sizes.size), sizes)
    np.testing.assert_array_equal(_by_score_within_blocks(score, sizes), np.lexsort((-score, block)))
