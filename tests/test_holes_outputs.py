"""The holes in every output of `rag-eval run`: the results file's ``holes`` section and the report.

A hand-built passage set of two queries, judged a 2, b 1, c 0 (q-é1) and d 1, e 0 (q2), and three
static retrievers (top_k 3) whose rankings put unjudged passages where we choose:

- base:     q-é1 [a, b, c]   q2 [e, d]        no hole;
- surfacer: q-é1 [x·new, a, b]   q2 [e, d, y]   one hole in each top 3: unjudged share 1/3 = 33.3%;
- tail:     q-é1 [a, b, x·new]   q2 [e, d]      one hole in q-é1's top 3: mean share 1/6 = 16.7%.

Every expected value is worked out here by hand with L = 1/log2(3) (the discount of rank 2), the
highest grade of q-é1 being 2 and of q2 being 1 (docs/semantics.md, "The holes"). Then the same
holes are checked on a document dataset: by hand on a tiny one (units: documents and chunks), and on
the ocean-documents example against a brute-force reference of chunk grades.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from conftest import REPO
from regression_fixtures import helpers

from rag_eval._core.errors import RagEvalError
from rag_eval._data.config.schema import load_config
from rag_eval._run.documents import DocumentRun
from rag_eval._run.execute import execute
from rag_eval._run.results_file import load_results_file
from rag_eval._scoring.evidence import collapse_to_documents
from rag_eval._scoring.holes import bounds, unjudged_share
from rag_eval.cli import main

L = 1 / math.log2(3)
Q1, Q2 = "q-é1", "q2"
X = "x·new"  # an unjudged passage with a non-ASCII id

DATASET = {
    "name": "holes-by-hand",
    "corpus": [{"id": doc, "text": f"passage {doc}"} for doc in ("a", "b", "c", "d", "e", X, "y")],
    "queries": [
        {"id": Q1, "text": "first question", "judgements": {"a": 2, "b": 1, "c": 0}},
        {"id": Q2, "text": "second question", "judgements": {"d": 1, "e": 0}},
    ],
}
RANKINGS = {
    "base": {Q1: ["a", "b", "c"], Q2: ["e", "d"]},
    "surfacer": {Q1: [X, "a", "b"], Q2: ["e", "d", "y"]},
    "tail": {Q1: ["a", "b", X], Q2: ["e", "d"]},
}

# By hand: per retriever and query, ndcg@3 (low, high, condensed) and precision@3 (low, high, condensed).
NDCG = {
    "base": {Q1: (1.0, 1.0, 1.0), Q2: (L, L, L)},
    # q-é1: DCG 2L + 1/2 of IDCG 2 + L; x at grade 2: DCG 2 + 2L + 1/2 = IDCG (grades 2, 2, 1); condensed [a, b]: 1.
    # q2: d at rank 2: L; y at grade 1: DCG L + 1/2, IDCG 1 + L (grades 1, 1); condensed [e, d]: L.
    "surfacer": {Q1: ((2 * L + 0.5) / (2 + L), 1.0, 1.0), Q2: (L, (L + 0.5) / (1 + L), L)},
    # q-é1: a, b ideal: 1; x at grade 2 (rank 3): DCG 2 + L + 1, IDCG 2 + 2L + 1/2: the filled hole raises the ideal.
    "tail": {Q1: (1.0, (3 + L) / (2.5 + 2 * L), 1.0), Q2: (L, L, L)},
}
PRECISION = {
    "base": {Q1: (2 / 3, 2 / 3, 2 / 3), Q2: (1 / 3, 1 / 3, 1 / 3)},
    "surfacer": {Q1: (2 / 3, 1.0, 2 / 3), Q2: (1 / 3, 2 / 3, 1 / 3)},
    "tail": {Q1: (2 / 3, 1.0, 2 / 3), Q2: (1 / 3, 1 / 3, 1 / 3)},
}
# Unjudged and judged shares of the top 3, per query.
UNJUDGED = {"base": {Q1: 0.0, Q2: 0.0}, "surfacer": {Q1: 1 / 3, Q2: 1 / 3}, "tail": {Q1: 1 / 3, Q2: 0.0}}
JUDGED = {"base": {Q1: 1.0, Q2: 2 / 3}, "surfacer": {Q1: 2 / 3, Q2: 2 / 3}, "tail": {Q1: 2 / 3, Q2: 2 / 3}}


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values)


def write_project(folder: Path) -> Path:
    """The query set and a run config of the three static retrievers; returns the config's path."""
    (folder / "holes.yaml").write_text(yaml.safe_dump(DATASET, allow_unicode=True), encoding="utf-8")
    config = {
        "name": "holes-by-hand",
        "dataset": {"path": "holes.yaml"},
        "retrievers": [
            {"label": label, "adapter": "static", "params": {"rankings": rankings}}
            for label, rankings in RANKINGS.items()
        ],
        "top_k": 3,
        "metrics": ["ndcg@3", "precision@3", "judged@3"],
        "main_metric": "ndcg@3",
        "report": {"plots": False},
    }
    path = folder / "holes_run.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def out(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("holes")
    config = write_project(folder)
    assert main(["run", str(config), "--output", str(folder / "out"), "--no-progress"]) == 0
    return folder / "out"


def holes_of(out: Path, label: str) -> dict:
    return json.loads((out / f"{label}.json").read_text(encoding="utf-8"))["holes"]


# ---- the results file ------------------------------------------------------------------------------


@pytest.mark.parametrize("label", list(RANKINGS))
def test_results_file_holes_by_hand(out, label):
    document = json.loads((out / f"{label}.json").read_text(encoding="utf-8"))
    holes = document["holes"]
    assert holes["units"] == {"passage": "a retrieved passage with no judgement for the query"}
    assert list(holes["metrics"]) == ["ndcg@3", "precision@3", "judged@3"]
    for metric, by_hand in (("ndcg@3", NDCG[label]), ("precision@3", PRECISION[label])):
        entry = holes["metrics"][metric]
        assert (entry["unit"], entry["k"], entry["bounded"]) == ("passage", 3, True)
        assert entry["unjudged"] == pytest.approx(mean(UNJUDGED[label].values()), abs=1e-15)
        assert entry["judged"] == pytest.approx(mean(JUDGED[label].values()), abs=1e-15)
        # low is the results' own value; high and condensed by hand.
        assert entry["low"] == document["results"]["aggregate"][metric]
        for i, bound in enumerate(("low", "high", "condensed")):
            assert entry[bound] == pytest.approx(mean(v[i] for v in by_hand.values()), abs=1e-12), (metric, bound)
        for qid, (low, high, condensed) in by_hand.items():
            row = entry["per_query"][qid]
            assert document["results"]["per_query"][qid][metric] == pytest.approx(low, abs=1e-12)
            assert row["high"] == pytest.approx(high, abs=1e-12)
            assert row["condensed"] == pytest.approx(condensed, abs=1e-12)
            assert row["unjudged"] == pytest.approx(UNJUDGED[label][qid], abs=1e-15)
            assert row["judged"] == pytest.approx(JUDGED[label][qid], abs=1e-15)
    # judged@3's own value is the judged share the holes section records.
    assert holes["metrics"]["judged@3"]["judged"] == pytest.approx(document["results"]["aggregate"]["judged@3"])


def test_the_surfacer_top_3_is_one_third_unjudged(out):
    """The brief's example: one unjudged passage in each query's top 3: 33.3%; nDCG@3 by hand at both bounds."""
    entry = holes_of(out, "surfacer")["metrics"]["ndcg@3"]
    assert entry["unjudged"] == pytest.approx(1 / 3)
    assert entry["low"] == pytest.approx(0.6503007850328437, abs=1e-12)  # ((2L + 1/2) / (2 + L) + L) / 2
    assert entry["high"] == pytest.approx(0.8467132018086354, abs=1e-12)  # (1 + (L + 1/2) / (1 + L)) / 2
    assert entry["condensed"] == pytest.approx((1 + L) / 2, abs=1e-12)


@pytest.mark.parametrize("label", list(RANKINGS))
def test_holes_agree_with_the_engine_on_the_written_rankings(out, label):
    """The section equals rag_eval._scoring.holes run on the rankings and grades the file itself holds."""
    document = json.loads((out / f"{label}.json").read_text(encoding="utf-8"))
    run = {q: {doc: score for doc, score, _ in rows} for q, rows in document["rankings"].items()}
    judgements = {q["id"]: q["judgements"] for q in DATASET["queries"]}
    for metric in ("ndcg@3", "precision@3"):
        found = bounds(judgements, run, metric)
        entry = document["holes"]["metrics"][metric]
        assert entry["high"] == pytest.approx(found.dataset_high, abs=1e-15)
        for qid, (_, high) in found.per_query.items():
            assert entry["per_query"][qid]["high"] == pytest.approx(high, abs=1e-15)
    share = unjudged_share(judgements, run, 3)
    for qid, value in share.per_query.items():
        assert document["holes"]["metrics"]["ndcg@3"]["per_query"][qid]["unjudged"] == value


def test_results_file_reads_back_its_holes(out):
    record = load_results_file(out / "tail.json").holes
    assert record is not None
    entry = record.get("ndcg@3")
    assert entry.unjudged_share == pytest.approx(1 / 6) and entry.k == 3 and entry.unit == "passage"
    assert entry.high_by_query()[Q1] == pytest.approx((3 + L) / (2.5 + 2 * L), abs=1e-12)
    assert record.get("NDCG_cut_3") is entry  # any accepted spelling


def test_a_file_without_holes_still_loads(out, tmp_path):
    document = json.loads((out / "tail.json").read_text(encoding="utf-8"))
    del document["holes"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    loaded = load_results_file(path)
    assert loaded.holes is None and loaded.results.aggregate["ndcg@3"] == pytest.approx((1 + L) / 2)


def test_a_stale_holes_entry_is_not_used(out, tmp_path):
    """A metric removed from the results after the run: its holes entry no longer holds together, so it is not used."""
    document = json.loads((out / "tail.json").read_text(encoding="utf-8"))
    results = document["results"]
    results["metrics"].remove("precision@3")
    del results["aggregate"]["precision@3"]
    for row in results["per_query"].values():
        del row["precision@3"]
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    record = load_results_file(path).holes
    assert record.get("precision@3") is None and record.get("ndcg@3") is not None


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda h: h["metrics"]["ndcg@3"].__setitem__("unjudged", 1.5), "holes.metrics.ndcg@3.unjudged"),
        (lambda h: h["metrics"]["ndcg@3"].__setitem__("k", 0), "holes.metrics.ndcg@3.k"),
        (lambda h: h["metrics"]["ndcg@3"].__setitem__("judged", 0.9), "holes.metrics.ndcg@3.unjudged"),
        (lambda h: h["metrics"]["ndcg@3"].__setitem__("unit", "page"), "holes.metrics.ndcg@3.unit"),
    ],
    ids=["share-above-1", "k-0", "shares-add-past-1", "unit"],
)
def test_a_malformed_holes_section_is_refused_naming_the_field(out, tmp_path, capsys, edit, field):
    document = json.loads((out / "tail.json").read_text(encoding="utf-8"))
    edit(document["holes"])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(RagEvalError) as error:
        load_results_file(path)
    assert str(error.value).startswith(f"{path}: {field}") and "\n" not in str(error.value)
    assert main(["compare", str(out / "base.json"), str(path), "--gate", "ndcg@3"]) == 2
    captured = capsys.readouterr()
    assert field in captured.err and "Traceback" not in captured.err


# ---- the report ----------------------------------------------------------------------------------


def test_report_holes_table_one_row_per_retriever(out):
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "**Holes** (ndcg@3 over each retriever's top 3; a hole is a retrieved passage nobody judged" in report
    tables = helpers.assert_tables_well_formed(report)
    table = next(t for t in tables if t[0][:2] == ["Retriever", "Unjudged top 3"])
    assert table[0] == [
        "Retriever", "Unjudged top 3", "Judged top 3", "ndcg@3, holes as misses", "at the highest grade", "judged only"
    ]
    expected = {
        label: [f"{mean(v[i] for v in NDCG[label].values()):.4f}" for i in range(3)] for label in RANKINGS
    }
    assert table[1:] == [
        ["base", "0%", "83.3%", *expected["base"]],  # judged (1 + 2/3) / 2: q2 retrieved two
        ["surfacer", "33.3%", "66.7%", *expected["surfacer"]],
        ["tail", "16.7%", "66.7%", *expected["tail"]],
    ]
    assert expected["surfacer"] == ["0.6503", "0.8467", "0.8155"] and expected["tail"] == ["0.8155", "0.7981", "0.8155"]


def test_decision_table_unjudged_column_and_could_flip(out):
    report = (out / "report.md").read_text(encoding="utf-8")
    decision = report.split("## 🏁 Decision")[1].split("\n## ")[0]
    (table, *_) = helpers.assert_tables_well_formed(decision)
    assert table[0][:8] == ["Rank", "Variant", "ndcg@3 [95% CI]", "Δ vs best", "p (Holm)", "W/T/L", "MDE vs best",
                            "Unjudged top 3"]
    assert table[0][-2:] == ["Index (s)", "Search (s)"]
    # base and tail tie at (1 + L) / 2; the config's order breaks the tie.
    assert [(row[1], row[7]) for row in table[1:]] == [
        ("**base (best)**", "0%"), ("tail", "16.7%"), ("surfacer", "33.3%"),
    ]
    # surfacer's mean at its high bound, (1 + (L + 1/2) / (1 + L)) / 2 = 0.8467, beats base's 0.8155; tail's
    # (0.9652 + L) / 2 = 0.7981 does not.
    assert "**The decision could flip** were the holes judged (the best taken as measured):" in decision
    flips = [line for line in decision.splitlines() if line.startswith("- ")]
    assert flips == [
        "- 33.3% of surfacer's top 3 is unjudged; with its holes at the highest grade its mean would be 0.8467, "
        "better than the best's (base, 0.8155)."
    ]


# ---- documents: chunks and documents as the units ---------------------------------------------------

DOCUMENTS = {
    "name": "holes-documents",
    "documents": [
        {"id": "d1", "text": "The Pacific Ocean is the largest ocean."},
        {"id": "d2", "text": "The Sahara is a hot desert."},
        {"id": "d3", "text": "Oceans cover most of the Earth."},
    ],
    "queries": [
        {
            "id": "q1",
            "text": "Which ocean is the largest?",
            "evidence": [{"doc": "d1", "quote": "The Pacific Ocean is the largest ocean.", "grade": 2}],
            "judgements": {"d2": 0},
        }
    ],
}


def test_documents_holes_by_hand(tmp_path):
    """Whole documents ranked d3 (unjudged), d1 (evidence, grade 2), d2 (judged 0): a hole in the top 3.

    doc_ndcg@3 and the chunk-level ndcg@3 (one chunk per document) read the same grades: low 2L / 2 = L,
    with d3 at grade 2: (2 + 2L) / (2 + 2L) = 1, condensed [d1, d2]: 1. evidence_recall@3 (all of the
    evidence is in d1): 1, with the same share and no bounds.
    """
    (tmp_path / "docs.yaml").write_text(yaml.safe_dump(DOCUMENTS), encoding="utf-8")
    config = {
        "name": "holes-documents",
        "dataset": {"path": "docs.yaml"},
        "retrievers": [{"label": "whole", "adapter": "static", "params": {"rankings": {"q1": ["d3", "d1", "d2"]}}}],
        "top_k": 3,
        "metrics": ["doc_ndcg@3", "ndcg@3", "evidence_recall@3"],
        "main_metric": "doc_ndcg@3",
        "report": {"plots": False},
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert main(["run", str(path), "--output", str(tmp_path / "out"), "--no-progress"]) == 0
    holes = json.loads((tmp_path / "out" / "whole.json").read_text())["holes"]
    assert set(holes["units"]) == {"chunk", "document"}
    for metric, unit in (("doc_ndcg@3", "document"), ("ndcg@3", "chunk")):
        entry = holes["metrics"][metric]
        assert (entry["unit"], entry["k"], entry["unjudged"], entry["judged"]) == (unit, 3, 1 / 3, 2 / 3)
        assert entry["low"] == pytest.approx(L, abs=1e-12)
        assert entry["high"] == pytest.approx(1.0, abs=1e-12) and entry["condensed"] == pytest.approx(1.0, abs=1e-12)
    evidence = holes["metrics"]["evidence_recall@3"]
    assert (evidence["unit"], evidence["unjudged"], evidence["bounded"]) == ("chunk", 1 / 3, False)
    assert evidence["low"] == 1.0 and evidence["high"] is None and evidence["per_query"]["q1"]["high"] is None
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    row = next(line for line in report.splitlines() if line.startswith("| whole | 33.3% |"))
    assert row == "| whole | 33.3% | 66.7% | 0.6309 | 1.0000 | 1.0000 |"


def chunk_grades_by_hand(dataset, chunks) -> dict[str, dict[str, float]]:
    """Every chunk of each query's judged documents: the highest grade of the evidence it shares a character with."""
    out: dict[str, dict[str, float]] = {}
    for qid, docs in dataset.judgements.items():
        spans = dataset.evidence.get(qid, ())
        for chunk in chunks:
            if chunk.doc not in docs:
                continue
            grades = [s.grade for s in spans if s.doc == chunk.doc and min(s.end, chunk.end) > max(s.start, chunk.start)]
            out.setdefault(qid, {})[f"{chunk.doc}#{chunk.start}-{chunk.end}"] = max(grades, default=0.0)
    return out


def test_ocean_documents_holes_against_a_brute_force_reference():
    """Every retriever of the ocean-documents example: the chunk-level and document bounds equal
    rag_eval._scoring.holes on judgements built here by brute force, and their low bound is the run's value."""
    config = load_config(REPO / "configs" / "ocean_documents.yaml")
    run = execute(config, progress=False)
    side = DocumentRun(config, run.dataset)
    for outcome in run.outcomes:
        chunks = side.indexed(outcome.spec.chunker).chunks
        graded = chunk_grades_by_hand(run.dataset, chunks)
        collapsed = collapse_to_documents({q: s for q, s in outcome.spans.items() if s})
        for metric, judgements, ranking, plain in (
            ("ndcg@3", graded, outcome.ranking, "ndcg@3"),
            ("doc_ndcg@3", run.dataset.judgements, collapsed, "ndcg@3"),
        ):
            entry = outcome.holes.get(metric)
            found = bounds(judgements, ranking, plain)
            share = unjudged_share(judgements, ranking, 3).per_query
            for i, qid in enumerate(outcome.results.query_ids):
                value = outcome.results.values[metric][i]
                if qid in found.per_query:
                    low, high = found.per_query[qid]
                    assert low == pytest.approx(value, abs=1e-12), (outcome.label, metric, qid)
                    assert entry.high[i] == pytest.approx(high, abs=1e-12), (outcome.label, metric, qid)
                else:
                    assert math.isnan(value) and math.isnan(entry.high[i])
                assert entry.unjudged[i] == share.get(qid, 0.0)
        # Evidence metrics: the chunks of documents not judged for the query, in the top k.
        entry = outcome.holes.get("evidence_recall@3")
        assert not entry.bounded and entry.k == 3
        assert entry.unjudged_share == pytest.approx(outcome.holes.get("ndcg@3").unjudged_share)
