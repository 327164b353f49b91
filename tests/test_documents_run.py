"""`rag-eval run` on a dataset with documents, end to end through rag_eval.cli.main.

A tiny dataset (accents, emoji, CJK; evidence as quotes and offsets; document judgements)
is run with bm25 over a fixed chunking, bm25 over whole documents and a plug-in that returns
its own spans. Every number the results files hold is recomputed by the slow reference of
tests/documents_fixtures/reference.py from the ranked spans of the written .run files, and the
plug-in's spans are also scored by hand. Then: each chunking is cut once however many
retrievers read it; bad input exits 2 with one line and writes nothing; a dense encoder's
truncated chunks are counted with the `tokenizers` package and warned about.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from documents_fixtures import reference as ref
from documents_fixtures.reference import CAFE, DOCUMENTS, TOKYO

from rag_eval.cli import main

REPO = Path(__file__).resolve().parents[1]

METRICS = [
    "evidence_recall@3", "evidence_precision@3", "evidence_iou@3", "evidence_recall@80chars",
    "evidence_precision@12tokens", "doc_ndcg@3", "ndcg@3",
]
CHUNK_LEVEL = ["ndcg@3"]
TOP_K = 4

# The plug-in's answer: tuples and dicts, out of rank order, a tie, a span in a document the query does not
# judge, spans at both document edges, and 5 spans for q-dessert (top_k = 4 keeps the best 4).
CAFE_END = len(DOCUMENTS[CAFE])
OWN_SPANS = {
    "q-dessert": [
        (CAFE, 0, 15, 0.9),
        {"doc": CAFE, "start": 10, "end": 60, "score": 0.9},  # ties with [0, 15): "café.md#10-60" ranks first
        (TOKYO, 0, 11, 0.95),  # best score, but q-dessert does not judge 東京.txt
        {"doc": CAFE, "start": CAFE_END - 23, "end": CAFE_END, "score": 0.5},
        (CAFE, 0, CAFE_END, 0.1),  # the fifth: cut by top_k
    ],
    "q-capital": [(TOKYO, 0, 5, 2.0), {"doc": TOKYO, "start": 12, "end": 43, "score": 1.0}],
    "q-bears": [],
    "q-fuji": [(TOKYO, 66, 76, 1.0)],
    "q-unjudged": [{"doc": CAFE, "start": CAFE_END - 23, "end": CAFE_END, "score": 0.25}],  # listed, not scored
}
OWN_PLUGIN = f'''
"""A retriever with its own chunker: it answers with spans, some as tuples, some as dicts."""

SPANS = {OWN_SPANS!r}


class OwnSpans:
    def index(self, corpus):
        self.documents = {{doc: passage["text"] for doc, passage in corpus.items()}}

    def search(self, queries, top_k):
        return {{q: list(SPANS[q]) for q in queries if q in SPANS}}
'''
CONFIG = {
    "chunking": {"words-6": {"method": "fixed", "size": 6, "overlap": 2}},
    "retrievers": [
        {"label": "bm25-words", "adapter": "bm25", "chunker": "words-6"},
        {"label": "bm25-documents", "adapter": "bm25"},
        {"label": "own", "adapter": "own_spans:OwnSpans"},
    ],
    "top_k": TOP_K,
    "metrics": METRICS,
    "main_metric": "evidence_recall@3",
}
WORD_CHUNKS = [(doc, start, end) for doc, text in DOCUMENTS.items() for start, end in ref.fixed_word_windows(text, 6, 2)]
WHOLE_DOCUMENTS = [(doc, 0, len(text)) for doc, text in DOCUMENTS.items()]
OWN_NOTE = (
    "retriever 'own' returns its own spans: chunk-level ndcg@3 not computed (they need a chunking to build the ideal "
    "ranking from); document and evidence metrics are"
)


def run_cli(capsys, *args: object) -> tuple[int, str, str]:
    code = main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The three retrievers run once; (output folder, exit code, stdout, stderr)."""
    import contextlib
    import io

    folder = tmp_path_factory.mktemp("documents")
    ref.write_dataset(folder)
    (folder / "own_spans.py").write_text(OWN_PLUGIN, encoding="utf-8")
    config = ref.write_config(folder, CONFIG)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["run", str(config), "--output", str(folder / "out"), "--no-progress"])
    return folder / "out", code, out.getvalue(), err.getvalue()


def results(out: Path, label: str) -> dict:
    return json.loads((out / f"{label}.json").read_text(encoding="utf-8"))


def test_run_exits_0_and_writes_every_file(run):
    out, code, stdout, stderr = run
    assert code == 0 and stderr == ""
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "bm25-documents.docs.trec", "bm25-documents.json", "bm25-documents.run", "bm25-words.docs.trec",
        "bm25-words.json", "bm25-words.run", "documents.qrels", "own.docs.trec", "own.json", "own.run", "per-query.csv",
        "plot-at-k.svg", "plot-deltas.svg", "plot-means.svg", "report.html", "report.md",
    ]
    lines = stdout.splitlines()
    assert lines[-1] == f"report: {out / 'report.md'}"
    for label in ("bm25-words", "bm25-documents", "own"):
        value = results(out, label)["results"]["aggregate"]["evidence_recall@3"]
        assert any(line.startswith(f"{label}\tevidence_recall@3\t{value:.4f}") for line in lines)


@pytest.mark.parametrize(
    "label, chunking", [("bm25-words", WORD_CHUNKS), ("bm25-documents", WHOLE_DOCUMENTS), ("own", None)]
)
def test_every_value_matches_the_reference_on_the_written_run(run, label, chunking):
    out, *_ = run
    written = ref.read_run(out / f"{label}.run")
    document = results(out, label)["results"]
    metrics = METRICS if chunking is not None else [m for m in METRICS if m not in CHUNK_LEVEL]
    expected = ref.reference_values(metrics, written, chunking=chunking)
    assert document["metrics"] == metrics
    assert document["unjudged_queries"] == ["q-unjudged"]
    assert sorted(document["per_query"]) == sorted(expected)
    for qid, row in expected.items():
        for metric, value in row.items():
            got = document["per_query"][qid][metric]
            assert (got is None) == (value is None), (qid, metric, got, value)
            if value is not None:
                assert got == pytest.approx(value, rel=1e-12, abs=1e-15), (qid, metric)
    for metric in metrics:
        assert document["aggregate"][metric] == pytest.approx(ref.macro(expected, metric), rel=1e-12)
    # Queries without evidence leave the evidence metrics; q-zebra has no relevant document either.
    evidence_left = ["q-fuji", "q-zebra"]
    assert document["left_out"]["evidence_recall@3"] == evidence_left
    assert document["left_out"]["doc_ndcg@3"] == ["q-zebra"]


def test_run_files_hold_chunk_ids_in_the_ranking_rule_order(run):
    out, *_ = run
    words, documents, own = (ref.read_run(out / f"{label}.run") for label in ("bm25-words", "bm25-documents", "own"))
    for written, chunking in ((words, WORD_CHUNKS), (documents, WHOLE_DOCUMENTS)):
        assert written, "bm25 found something"
        for entries in written.values():
            assert {ref.parse_id(chunk) for chunk, _, _ in entries} <= set(chunking)
            assert [chunk for chunk, _, _ in entries] == ref.ranked((c, s) for c, _, s in entries)
            assert [rank for _, rank, _ in entries] == list(range(1, len(entries) + 1))
            assert len(entries) <= TOP_K
    # The plug-in's spans: its 4 best by the rule (the tie broken by chunk id, bytes descending).
    assert {q: [(c, s) for c, _, s in entries] for q, entries in own.items()} == {
        "q-dessert": [(f"{TOKYO}#0-11", 0.95), (f"{CAFE}#10-60", 0.9), (f"{CAFE}#0-15", 0.9),
                      (f"{CAFE}#{CAFE_END - 23}-{CAFE_END}", 0.5)],
        "q-capital": [(f"{TOKYO}#0-5", 2.0), (f"{TOKYO}#12-43", 1.0)],
        "q-fuji": [(f"{TOKYO}#66-76", 1.0)],
        "q-unjudged": [(f"{CAFE}#{CAFE_END - 23}-{CAFE_END}", 0.25)],
    }


def test_own_spans_scored_by_hand(run):
    """q-capital: evidence [0, 11) (grade 2) and [12, 43); spans [0, 5) and [12, 43).

    covered = 5 + 31 = 36 of 42 evidence characters in 36 retrieved: recall 36/42, precision 1,
    IoU 36/(36 + 6). Budget 80 characters: both spans fit (36); 12 tokens: 1 (東京は日本, one word) + 7
    fit. Only 東京.txt is judged: doc nDCG 1.
    q-dessert (evidence [0, 54) grade 2, [55, 111), [42, 63) grade 3: [0, 111), 111 characters):
    the top 3 are 東京.txt [0, 11) (unjudged: covers nothing), [10, 60) and [0, 15): covered 60 of
    111, retrieved 11 + 50 + 15 = 76 characters. The 80-character budget keeps these three (76);
    the fourth (23 more) overflows it.
    Doc nDCG@3: café.md (grade 3) at rank 2 of documents [東京.txt, café.md]: (3 / log2 3) / 3.
    """
    out, *_ = run
    rows = results(out, "own")["results"]["per_query"]
    assert rows["q-capital"] == {
        "evidence_recall@3": 36 / 42, "evidence_precision@3": 1.0, "evidence_iou@3": 36 / 42,
        "evidence_recall@80chars": 36 / 42, "evidence_precision@12tokens": 1.0, "doc_ndcg@3": 1.0,
    }
    assert rows["q-dessert"]["evidence_recall@3"] == pytest.approx(60 / 111)
    assert rows["q-dessert"]["evidence_precision@3"] == pytest.approx(60 / 76)
    assert rows["q-dessert"]["evidence_iou@3"] == pytest.approx(60 / (76 + 111 - 60))
    assert rows["q-dessert"]["evidence_recall@80chars"] == pytest.approx(60 / 111)
    assert rows["q-dessert"]["doc_ndcg@3"] == pytest.approx(1 / math.log2(3))
    # q-bears: nothing returned, scored 0; q-fuji: 東京.txt (judged 1) at rank 1.
    assert rows["q-bears"] == dict.fromkeys(rows["q-bears"], 0.0)
    assert rows["q-fuji"]["doc_ndcg@3"] == 1.0 and rows["q-fuji"]["evidence_recall@3"] is None


def test_chunking_records(run):
    out, *_ = run
    words = results(out, "bm25-words")["chunking"]
    assert (words["name"], words["kind"], words["title"]) == ("words-6", "chunker", "words-6")
    assert {k: words["description"][k] for k in ("method", "size", "overlap", "unit", "tokenizer")} == {
        "method": "fixed", "size": 6, "overlap": 2, "unit": "tokens", "tokenizer": "words",
    }
    lengths = [end - start for _, start, end in WORD_CHUNKS]
    assert words["summary"]["chunks"] == len(WORD_CHUNKS) == 19
    assert words["summary"]["documents"] == 3
    assert words["summary"]["mean_chars"] == pytest.approx(sum(lengths) / len(lengths))
    assert (words["summary"]["min_chars"], words["summary"]["max_chars"]) == (min(lengths), max(lengths))
    assert words["fingerprint"] == ref.fingerprint(WORD_CHUNKS)
    whole = results(out, "bm25-documents")["chunking"]
    assert (whole["name"], whole["kind"], whole["title"]) == (None, "documents", "whole documents")
    assert whole["summary"]["chunks"] == 3 and whole["fingerprint"] == ref.fingerprint(WHOLE_DOCUMENTS)
    own = results(out, "own")["chunking"]
    returned = {ref.parse_id(c) for entries in ref.read_run(out / "own.run").values() for c, _, _ in entries}
    assert (own["name"], own["kind"], own["fingerprint"]) == (None, "own", None)
    assert own["summary"]["chunks"] == len(returned) == 7


def test_notes_say_chunk_level_metrics_are_not_computed_for_own_spans(run):
    out, *_ = run
    own = results(out, "own")
    assert "ndcg@3" not in own["results"]["aggregate"]
    assert own["notes"] == [OWN_NOTE]
    assert results(out, "bm25-words")["notes"] == [] and results(out, "bm25-documents")["notes"] == []
    report = (out / "report.md").read_text(encoding="utf-8")
    assert f"- {OWN_NOTE}\n" in report
    assert "| own | the retriever's own spans | – |" in report  # the chunk-level table's cell


@pytest.mark.parametrize("label", ["bm25-words", "bm25-documents", "own"])
def test_rankings_carry_chunk_grades(run, label):
    """Each retrieved chunk: [id, score, grade]; grade = highest evidence grade overlapped, 0 if none, None if
    the query does not judge the chunk's document (q-unjudged judges nothing)."""
    out, *_ = run
    evidence, grades = ref.evidence_of(), ref.document_grades()
    rankings = results(out, label)["rankings"]
    written = ref.read_run(out / f"{label}.run")
    assert sorted(rankings) == sorted(q["id"] for q in ref.QUERIES)
    for qid, entries in rankings.items():
        assert [(c, s) for c, s, _ in entries] == [(c, s) for c, _, s in written.get(qid, [])]
        expected = [ref.chunk_grade(evidence.get(qid, []), grades.get(qid, {}), ref.parse_id(c)) for c, _, _ in entries]
        assert [g for _, _, g in entries] == expected, qid
    if label == "own":
        assert [g for _, _, g in rankings["q-dessert"]] == [None, 3.0, 2.0, 0.0]


@pytest.mark.parametrize("label", ["bm25-words", "bm25-documents", "own"])
def test_results_files_hold_the_text_of_each_ranked_chunk(run, label):
    """`compare` shows these snippets beside regressed queries: whole documents and own spans need them too."""
    out, *_ = run
    document = results(out, label)
    ranked_ids = {chunk for entries in document["rankings"].values() for chunk, _, _ in entries}
    expected = {}
    for chunk in ranked_ids:
        doc, start, end = ref.parse_id(chunk)
        text = " ".join(DOCUMENTS[doc][start:end].split())
        expected[chunk] = text if len(text) <= 60 else text[:59].rstrip() + "…"
    assert document["passages"] == expected


def test_min_evidence_fraction_grades_chunks_by_the_share_of_each_evidence_span_they_hold(tmp_path, capsys):
    """With 0.5, a chunk counts an evidence span only when it holds half of it or more: chunk grades in the
    rankings and chunk-level nDCG follow; document and evidence metrics do not change."""
    ref.write_dataset(tmp_path)
    (tmp_path / "own_spans.py").write_text(OWN_PLUGIN, encoding="utf-8")
    body = {**CONFIG, "retrievers": CONFIG["retrievers"][:1], "evaluation": {"min_evidence_fraction": 0.5}}
    config = ref.write_config(tmp_path, body)
    code, _, err = run_cli(capsys, "run", config, "--output", tmp_path / "out", "--no-progress")
    assert (code, err) == (0, "")
    document = results(tmp_path / "out", "bm25-words")
    written = ref.read_run(tmp_path / "out" / "bm25-words.run")
    expected = ref.reference_values(METRICS, written, chunking=WORD_CHUNKS, fraction=0.5)
    assert document["results"]["options"]["min_evidence_fraction"] == 0.5
    for qid, row in expected.items():
        got = document["results"]["per_query"][qid]
        assert {m: v is None for m, v in got.items()} == {m: v is None for m, v in row.items()}, qid
        assert {m: v for m, v in got.items() if v is not None} == pytest.approx(
            {m: v for m, v in row.items() if v is not None}, rel=1e-12
        ), qid
    evidence, grades = ref.evidence_of(), ref.document_grades()
    for qid, entries in document["rankings"].items():
        spans = [ref.parse_id(chunk) for chunk, _, _ in entries]
        assert [g for _, _, g in entries] == [
            ref.chunk_grade(evidence.get(qid, []), grades.get(qid, {}), span, 0.5) for span in spans
        ]
    # The fraction matters here: some retrieved chunk overlaps evidence by less than half of it.
    assert any(
        ref.chunk_grade(evidence.get(q, []), grades.get(q, {}), ref.parse_id(c))
        != ref.chunk_grade(evidence.get(q, []), grades.get(q, {}), ref.parse_id(c), 0.5)
        for q, entries in written.items() for c, _, _ in entries
    )


# ---- each chunking cut once ---------------------------------------------------------------------------------

COUNTING_CHUNKERS = '''
"""Custom chunkers that log each call (one line per document) beside this file."""
from pathlib import Path

from rag_eval.extend import chunker_function

LOG = Path(__file__).with_name("calls.log")


@chunker_function
def halves(text):
    with LOG.open("a", encoding="utf-8") as log:
        log.write(f"halves {len(text)}\\n")
    middle = len(text) // 2
    return [(0, middle), (middle, len(text))]


class Sentences:
    """Built once per run; returns each sentence's text (the string form of a custom chunker's answer)."""

    def __init__(self, end=". "):
        self.end = end
        with LOG.open("a", encoding="utf-8") as log:
            log.write("Sentences()\\n")

    def chunk(self, text):
        with LOG.open("a", encoding="utf-8") as log:
            log.write(f"sentences {len(text)}\\n")
        out, start = [], 0
        while (stop := text.find(self.end, start)) >= 0:
            out.append(text[start : stop + 1])
            start = stop + len(self.end)
        return out + [text[start:]]
'''


def halves(text: str) -> list[tuple[int, int]]:
    middle = len(text) // 2
    return [(0, middle), (middle, len(text))]


def test_each_chunking_is_cut_once_however_many_retrievers_read_it(tmp_path, capsys):
    ref.write_dataset(tmp_path)
    (tmp_path / "counting.py").write_text(COUNTING_CHUNKERS, encoding="utf-8")
    config = ref.write_config(tmp_path, {
        "chunking": {
            "halves": {"method": "counting:halves"},
            "sentences": {"method": "counting:Sentences", "params": {"end": ". "}},
        },
        "retrievers": [
            {"label": "a", "adapter": "bm25", "chunker": "sentences"},
            {"label": "b", "adapter": "bm25", "chunker": "halves"},
            {"label": "c", "adapter": "bm25", "chunker": "sentences", "params": {"k1": 1.2}},  # other scores
        ],
        "metrics": ["evidence_recall@3", "ndcg@3"],
    })
    code, _, err = run_cli(capsys, "run", config, "--output", tmp_path / "out", "--no-progress")
    assert code == 0 and err == ""
    lengths = sorted(len(text) for text in DOCUMENTS.values())
    calls = (tmp_path / "calls.log").read_text(encoding="utf-8").splitlines()
    assert calls.count("Sentences()") == 1
    assert sorted(int(line.split()[1]) for line in calls if line.startswith("sentences ")) == lengths
    assert sorted(int(line.split()[1]) for line in calls if line.startswith("halves ")) == lengths
    records = {label: results(tmp_path / "out", label)["chunking"] for label in "abc"}
    halves_chunks = [(doc, s, e) for doc, text in DOCUMENTS.items() for s, e in halves(text)]
    assert records["b"]["fingerprint"] == ref.fingerprint(halves_chunks)
    assert records["a"] == records["c"] and records["a"]["fingerprint"] != records["b"]["fingerprint"]
    timings = {label: results(tmp_path / "out", label)["timings"] for label in "abc"}
    assert timings["a"]["chunk_s"] > 0 and timings["b"]["chunk_s"] > 0
    assert timings["c"]["chunk_s"] == 0.0  # its chunks were cut once, for a: the time is a's
    assert records["a"]["summary"]["chunks"] == sum(len(text.split(". ")) for text in DOCUMENTS.values()) == 7


# ---- bad input: exit 2, one line, nothing written -----------------------------------------------------------

BAD_PLUGIN = '''
import math
from pathlib import Path

import numpy as np


class Bad:
    def __init__(self, answer):
        self.answer = answer

    def index(self, corpus):
        with open(Path(__file__).with_name("index.log"), "a") as log:
            log.write("index\\n")

    def search(self, queries, top_k):
        if self.answer == "nan":
            return {"q-dessert": [("café.md", 0, 10, math.nan)]}
        if self.answer == "numpy":
            return {"q-dessert": [("café.md", np.int64(0), np.int64(15), np.float32(0.5))]}
        return self.answer
'''


def bad_run(tmp_path, capsys, body, *, dataset=None, plugin=BAD_PLUGIN):
    """Run a config in tmp_path; returns (exit code, stdout, stderr); tmp_path/out must not exist after."""
    if dataset is None:
        ref.write_dataset(tmp_path)
    else:
        (tmp_path / "dataset.yaml").write_text(dataset, encoding="utf-8")
    (tmp_path / "bad.py").write_text(plugin, encoding="utf-8")
    config = ref.write_config(tmp_path, {"metrics": ["evidence_recall@3"], **body})
    return run_cli(capsys, "run", config, "--output", tmp_path / "out", "--no-progress"), config


def plugin_answer(answer) -> dict:
    return {"retrievers": [{"label": "bad", "adapter": "bad:Bad", "params": {"answer": answer}}]}


PASSAGES = """\
name: tiny-passages
corpus:
  - {id: p1, text: The Pacific is the largest ocean.}
  - {id: p2, text: The Atlantic is the second largest.}
queries:
  - {id: q1, text: largest ocean, judgements: {p1: 1}}
"""
WHERE = "retriever 'bad': query 'q-dessert', span"


@pytest.mark.parametrize(
    "body, message",
    [
        (plugin_answer({"q-dessert": [[CAFE, 100, 150, 1.0]]}),
         f"{WHERE} 0 ('café.md', 100, 150): end 150 is past the end of the document (141 characters)"),
        (plugin_answer({"q-dessert": [[CAFE, 10, 10, 1.0]]}),
         f"{WHERE} 0 ('café.md', 10, 10): end 10 is not after start 10; a span is [start, end) with end > start"),
        (plugin_answer({"q-dessert": [[CAFE, 20, 10, 1.0]]}),
         f"{WHERE} 0 ('café.md', 20, 10): end 10 is not after start 20; a span is [start, end) with end > start"),
        (plugin_answer({"q-dessert": [["cafe.md", 0, 10, 1.0]]}),
         f"{WHERE} 0 ('cafe.md', 0, 10): document 'cafe.md' is not in the dataset; did you mean 'café.md'?"),
        (plugin_answer({"q-dessert": [[[CAFE], 0, 10, 1.0]]}),
         f"{WHERE} 0 (['café.md'], 0, 10): the document id is list; give the id as a string"),
        (plugin_answer({"q-dessert": [[CAFE, 0, 10, 1.0], {"doc": CAFE, "start": 0, "end": 10, "score": 0.5}]}),
         f"{WHERE} 1 ('café.md', 0, 10): the same span is returned twice for this query; return each span once"),
        (plugin_answer("nan"), f"{WHERE} 0 ('café.md', 0, 10): score is NaN"),
        # Spans may mix forms across queries (a document id is the whole document, a chunk id its span);
        # a key that is neither is named.
        (plugin_answer({"q-dessert": [[CAFE, 0, 10, 1.0]], "q-capital": {"tokyo?": 1.0}}),
         "retriever 'bad': query 'q-capital': 'tokyo?' is neither a document of the dataset nor a chunk id "
         "<document>#<start>-<end> of one; return document ids, chunk ids or (doc_id, start, end, score) spans"),
        (plugin_answer({"q-capital": {"nowhere.md#0-5": 1.0}, "q-dessert": [[CAFE, 0, 10, 1.0]]}),
         "retriever 'bad': query 'q-capital': 'nowhere.md#0-5' is neither a document of the dataset nor a chunk id "
         "<document>#<start>-<end> of one; return document ids, chunk ids or (doc_id, start, end, score) spans"),
        (plugin_answer({"q-dessert": [[CAFE, 0, 10]]}),
         f"{WHERE} 0: is list of 3; give (doc_id, start, end, score) or {{doc, start, end, score}}"),
        (plugin_answer({"q-dessert": [{"doc": CAFE, "start": 0, "score": 1.0}]}),
         f"{WHERE} 0: misses end; give (doc_id, start, end, score) or {{doc, start, end, score}}"),
    ],
    ids=["outside", "empty", "reversed", "unknown-doc", "list-doc", "twice", "nan", "mixed", "mixed-dict-first", "three-fields",
         "dict-missing"],
)
def test_bad_own_spans_and_chunker_names_exit_2_with_one_line(tmp_path, capsys, body, message):
    (code, out, err), config = bad_run(tmp_path, capsys, body)
    assert (code, out) == (2, "")
    assert err == f"rag-eval: error: {config}: {message}\n"  # the config that holds the retriever, then what it did
    assert not (tmp_path / "out").exists()


def test_an_answer_mixing_documents_and_chunk_ids_is_read_the_same_in_any_key_order(tmp_path, capsys):
    """Only the first key of each query's dict was looked at: a document id first made the chunk id after it
    "not in the corpus" (exit 2), the chunk id first gave a run. An answer is a set: both orders give the run."""
    written = []
    for order, answer in enumerate(({f"{CAFE}#0-15": 1.0, CAFE: 0.5}, {CAFE: 0.5, f"{CAFE}#0-15": 1.0})):
        folder = tmp_path / str(order)
        folder.mkdir()
        (code, _, err), _ = bad_run(folder, capsys, plugin_answer({"q-dessert": answer}))
        assert (code, err) == (0, "")
        written.append(ref.read_run(folder / "out" / "bad.run"))
    assert written[0] == written[1] == {"q-dessert": [(f"{CAFE}#0-15", 1, 1.0), (f"{CAFE}#0-141", 2, 0.5)]}


def test_numpy_offsets_and_scores_are_numbers(tmp_path, capsys):
    """A pipeline built on numpy returns np.int64 offsets: exact integers, taken as such."""
    (code, _, err), _ = bad_run(tmp_path, capsys, plugin_answer("numpy"))
    assert (code, err) == (0, "")
    assert ref.read_run(tmp_path / "out" / "bad.run") == {"q-dessert": [(f"{CAFE}#0-15", 1, 0.5)]}
    # evidence of q-dessert: [0, 111) (quote, sentence and the overlap), 15 of them covered by 15 characters
    assert results(tmp_path / "out", "bad")["results"]["per_query"]["q-dessert"]["evidence_recall@3"] == 15 / 111


PASSAGE_PROBLEMS = [
    # issue 20, item 21: a BEIR-like passage collection can be chunked: the message names `as_documents: true`
    "retriever 'bm25' names chunker 'words', but the dataset 'tiny-passages' has passages, not documents; "
    "chunkers cut documents: set `as_documents: true` under `dataset:` (each passage is read as a document), "
    "give a dataset with documents, or remove `chunker`",
    "metric evidence_recall@3 needs a dataset with documents (and evidence spans), but the dataset "
    "'tiny-passages' has passages; use passage metrics such as ndcg@10",
    "metric doc_ndcg@5 needs a dataset with documents, but the dataset 'tiny-passages' has passages; use passage "
    "metrics such as ndcg@10, or set `as_documents: true` under `dataset:` (each passage is read as a document)",
]


@pytest.mark.parametrize(
    "body, problem",
    [
        ({"chunking": {"words": {"method": "fixed", "size": 5}},
          "retrievers": [{"label": "bm25", "adapter": "bm25", "chunker": "words"}], "metrics": ["ndcg@3"]},
         PASSAGE_PROBLEMS[0]),
        ({"retrievers": [{"label": "bm25", "adapter": "bm25"}], "metrics": ["ndcg@3", "evidence_recall@3"]},
         PASSAGE_PROBLEMS[1]),
        ({"retrievers": [{"label": "bm25", "adapter": "bm25"}], "metrics": ["doc_ndcg@5"]}, PASSAGE_PROBLEMS[2]),
    ],
    ids=["chunker", "evidence-metric", "doc-metric"],
)
def test_documents_only_features_on_a_passage_dataset_exit_2(tmp_path, capsys, body, problem):
    (code, out, err), config = bad_run(tmp_path, capsys, body, dataset=PASSAGES)
    assert (code, out) == (2, "")
    assert err == f"rag-eval: error: {config}: {problem}\n"
    assert not (tmp_path / "out").exists()
    code, out, err = run_cli(capsys, "validate", config)
    assert (code, out) == (2, "")
    assert err == f"{config}: {problem}\nrag-eval: 1 problem found\n"


def test_the_suggested_as_documents_makes_the_chunker_and_doc_metrics_run(tmp_path, capsys):
    """The fix the messages above name works: the same config with `as_documents: true` runs."""
    (tmp_path / "dataset.yaml").write_text(PASSAGES, encoding="utf-8")
    config = ref.write_config(tmp_path, {
        "chunking": {"words": {"method": "fixed", "size": 5}},
        "retrievers": [{"label": "bm25", "adapter": "bm25", "chunker": "words"}],
        "metrics": ["doc_ndcg@5"],
    })
    config.write_text(config.read_text(encoding="utf-8").replace(
        "dataset:\n  path: dataset.yaml\n", "dataset:\n  path: dataset.yaml\n  as_documents: true\n"), encoding="utf-8")
    assert "as_documents: true" in config.read_text(encoding="utf-8")
    code, _, err = run_cli(capsys, "run", config, "--output", tmp_path / "out", "--no-progress")
    assert (code, err) == (0, "")


def test_validate_lists_every_passage_dataset_problem_at_once(tmp_path, capsys):
    _, config = bad_run(tmp_path, capsys, {
        "chunking": {"words": {"method": "fixed", "size": 5}},
        "retrievers": [{"label": "bm25", "adapter": "bm25", "chunker": "words"}],
        "metrics": ["ndcg@3", "evidence_recall@3", "doc_ndcg@5"],
    }, dataset=PASSAGES)
    code, out, err = run_cli(capsys, "validate", config)
    assert (code, out) == (2, "")
    assert err.splitlines() == [f"{config}: {problem}" for problem in PASSAGE_PROBLEMS] + ["rag-eval: 3 problems found"]
    code, out, err = run_cli(capsys, "run", config, "--output", tmp_path / "out", "--no-progress")
    assert (code, out) == (2, "")
    assert err == f"rag-eval: error: {config}: {PASSAGE_PROBLEMS[0]} (and 2 more)\n"
    assert not (tmp_path / "out").exists()


def test_an_unknown_chunker_is_named_with_a_did_you_mean_by_run_and_validate(tmp_path, capsys):
    (code, out, err), config = bad_run(tmp_path, capsys, {
        "chunking": {"words": {"method": "fixed", "size": 5}},
        "retrievers": [{"label": "bm25", "adapter": "bm25", "chunker": "word"}],
    })
    assert (code, out) == (2, "")
    problem = (
        f"{config}: retrievers[0](bm25).chunker: no chunker 'word' in chunking; did you mean 'words'? chunkers: words"
    )
    assert err == f"rag-eval: error: {problem}\n"
    assert not (tmp_path / "out").exists()
    code, out, err = run_cli(capsys, "validate", config)
    assert (code, out) == (2, "")
    assert err == f"{problem}\nrag-eval: 1 problem found\n"


RAISING_CHUNKER = '''
from rag_eval.extend import chunker_function


@chunker_function
def boom(text):
    raise ValueError("no chunks for you")
'''


def test_a_raising_custom_chunker_stops_the_run_before_any_retriever_works(tmp_path, capsys):
    """The chunkings are cut before the first retriever indexes: a broken chunker costs no retrieval."""
    (tmp_path / "boom.py").write_text(RAISING_CHUNKER, encoding="utf-8")
    body = {
        "chunking": {"boom": {"method": "boom:boom"}},
        "retrievers": [
            {"label": "bad", "adapter": "bad:Bad", "params": {"answer": {}}},  # indexes first: it logs the call
            {"label": "bm25", "adapter": "bm25", "chunker": "boom"},
        ],
    }
    (code, out, err), config = bad_run(tmp_path, capsys, body)
    assert (code, out) == (2, "")
    assert err == (
        f"rag-eval: error: {config}: chunking.boom: chunker 'boom:boom' failed on document 'café.md': "
        "ValueError: no chunks for you\n"
    )
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "index.log").exists()  # the plug-in writes it on index(): never called
    code, out, _ = run_cli(capsys, "validate", config)  # validate calls no chunker: it cannot know
    assert code == 0 and out.startswith(f"{config}: OK: dataset tiny-documents (6 queries, 3 documents,")


BAD_CHUNKERS = '''
from rag_eval.extend import chunker_function


@chunker_function
def outside(text):
    return [(0, len(text) + 5)]


class Refuses:
    def __init__(self, n=1):
        raise RuntimeError("cannot build")

    def chunk(self, text):
        return []
'''


@pytest.mark.parametrize(
    "chunker, message",
    [
        ({"method": "fixed", "size": "8"}, "chunking.c.size: must be a valid integer, got '8'"),
        ({"method": "fixed", "size": 8, "overlap": 8},
         "chunking.c.overlap: 8 must be less than size (8); lower overlap or raise size"),
        ({"method": "chunkers:outside"},
         "chunking.c: chunker 'chunkers:outside' gave document 'café.md' the span [0, 146): end 146 is past the end "
         "of the document (141 characters)"),
        ({"method": "chunkers:Refuses"},
         "chunking.c: chunker 'chunkers:Refuses': chunkers.Refuses() raised RuntimeError: cannot build"),
    ],
    ids=["size-type", "overlap", "offsets", "constructor"],
)
def test_chunking_problems_name_the_config_file_and_the_chunker(tmp_path, capsys, chunker, message):
    (tmp_path / "chunkers.py").write_text(BAD_CHUNKERS, encoding="utf-8")
    body = {"chunking": {"c": chunker}, "retrievers": [{"label": "bm25", "adapter": "bm25", "chunker": "c"}]}
    (code, out, err), config = bad_run(tmp_path, capsys, body)
    assert (code, out) == (2, "")
    assert err == f"rag-eval: error: {config}: {message}\n"
    assert not (tmp_path / "out").exists()


def test_spans_from_a_retriever_that_reads_a_chunker_are_refused_naming_the_fix(tmp_path, capsys):
    body = {"chunking": {"words": {"method": "fixed", "size": 5}},
            "retrievers": [{"label": "bad", "adapter": "bad:Bad", "chunker": "words",
                            "params": {"answer": {"q-dessert": [[CAFE, 0, 10, 1.0]]}}}]}
    (code, out, err), config = bad_run(tmp_path, capsys, body)
    assert (code, out) == (2, "")
    assert err == (
        f"rag-eval: error: {config}: retriever 'bad' reads chunker 'words' but search() returned spans (lists of (doc_id, start, "
        "end, score)); with a chunker it answers {qid: {chunk_id: score}} with the ids index() was given: remove "
        "`chunker` to score its own spans\n"
    )


def test_own_spans_with_only_chunk_level_metrics_is_refused_naming_the_retriever(tmp_path, capsys):
    body = {**plugin_answer({"q-dessert": [[CAFE, 0, 10, 1.0]]}), "metrics": ["ndcg@3", "recall@3"]}
    (code, out, err), config = bad_run(tmp_path, capsys, body)
    assert (code, out) == (2, "")
    assert err == (
        f"rag-eval: error: {config}: retriever 'bad' returns its own spans, and every metric of the config is "
        "chunk-level (ndcg@3, recall@3), which needs a chunking to build the ideal ranking from; add document or "
        "evidence metrics (e.g. doc_ndcg@3, evidence_recall@3)\n"
    )
    assert not (tmp_path / "out").exists()


# ---- whole documents: one tie rule for the cut and the order ------------------------------------------------


def test_whole_documents_cut_to_top_k_by_the_chunk_id_tie_rule(tmp_path, capsys):
    """Tied documents 'guide' and 'guide!2' with top_k 1: the run names chunk ids, and by the rule
    'guide#0-28' > 'guide!2#0-31' (bytes: '#' 0x23 > '!' 0x21), so the kept document is 'guide'.
    ('!' rather than a space since issue 20, item 1: ids with white space are refused.)"""
    documents = {"guide": "Install the pump, then wait.", "guide!2": "Install the filter, then rinse."}
    queries = [{"id": "q", "text": "install", "evidence": [{"doc": "guide!2", "quote": "Install the filter"}]}]
    ref.write_dataset(tmp_path, documents, queries)
    (tmp_path / "bad.py").write_text(BAD_PLUGIN, encoding="utf-8")
    config = ref.write_config(tmp_path, {
        **plugin_answer({"q": {"guide": 1.0, "guide!2": 1.0}}), "top_k": 1, "metrics": ["evidence_recall@1"],
    })
    code, _, err = run_cli(capsys, "run", config, "--output", tmp_path / "out", "--no-progress")
    assert (code, err) == (0, "")
    assert ref.ranked([("guide#0-28", 1.0), ("guide!2#0-31", 1.0)])[0] == "guide#0-28"
    assert ref.read_run(tmp_path / "out" / "bad.run") == {"q": [("guide#0-28", 1, 1.0)]}
    assert results(tmp_path / "out", "bad")["results"]["per_query"]["q"]["evidence_recall@1"] == 0.0


# ---- truncation by a dense encoder ---------------------------------------------------------------------------


@pytest.mark.slow
def test_dense_retriever_counts_and_warns_about_chunks_its_encoder_truncates(tmp_path, capsys):
    """The tiny test encoder reads 64 tokens (tokenizer_config.json) and splits words into letters:
    some windows of 20 words are longer than that (2 of 6), no window of 2 is. Counted here with `tokenizers`."""
    pytest.importorskip("sentence_transformers")
    import _models
    from tokenizers import Tokenizer

    model = _models.tiny_bi_encoder()
    assert json.loads((model / "tokenizer_config.json").read_text())["model_max_length"] == 64
    ref.write_dataset(tmp_path)
    dense = {"model": str(model), "use_cache": False, "show_progress": False, "device": "cpu"}
    config = ref.write_config(tmp_path, {
        "chunking": {"long": {"method": "fixed", "size": 20}, "short": {"method": "fixed", "size": 2}},
        "retrievers": [
            {"label": "dense-long", "adapter": "dense", "chunker": "long", "params": dense},
            {"label": "dense-short", "adapter": "dense", "chunker": "short", "params": dense},
        ],
        "metrics": ["evidence_recall@3"],
    })
    code, _, err = run_cli(capsys, "run", config, "--output", tmp_path / "out", "--no-progress")
    assert code == 0
    tokenizer = Tokenizer.from_file(str(model / "tokenizer.json"))
    tokenizer.no_truncation()
    texts = [DOCUMENTS[doc][s:e] for doc in DOCUMENTS for s, e in ref.fixed_word_windows(DOCUMENTS[doc], 20, 0)]
    lengths = [len(tokenizer.encode(text).ids) for text in texts]  # [CLS] and [SEP] included, as the encoder sees
    long = sum(n > 64 for n in lengths)
    assert (long, len(texts)) == (2, 6)
    share = long / len(texts)
    special = len(tokenizer.encode("").ids)  # [CLS] and [SEP]: the warning says them apart (issue 20, item 21)
    assert special == 2
    warning = (
        f"rag-eval: warning: retriever 'dense-long': {long} of {len(texts)} chunks ({share:.1%}) are longer than the "
        f"model's 64 tokens (longest {max(lengths)}: {max(lengths) - special} tokens of text and the 2 special tokens "
        "the encoder adds) and the encoder reads only their start; use smaller chunks or a model with a longer "
        "max_seq_length"
    )
    assert [line for line in err.splitlines() if line.startswith("rag-eval: warning:")] == [warning]
    document = results(tmp_path / "out", "dense-long")
    assert document["retriever"]["description"]["truncation"] == {
        "max_seq_length": 64, "truncated": long, "passages": len(texts), "share": share, "longest_tokens": max(lengths),
        "special_tokens": special,
    }
    assert document["notes"] == [warning.removeprefix("rag-eval: warning: ")]
    short = results(tmp_path / "out", "dense-short")
    assert short["retriever"]["description"]["truncation"]["truncated"] == 0 and short["notes"] == []


def test_validate_looks_a_static_ranking_of_whole_documents_up_in_the_documents(tmp_path, capsys):
    """Without a chunker a static ranking names whole documents: validate looked them up on passage datasets only,
    and said OK to a document that is not in the dataset (run then refused it)."""
    ranking = {"q-coral": ["oceans/nothere.md"]}
    config = tmp_path / "run.yaml"
    config.write_text(json.dumps({
        "dataset": {"path": str(REPO / "datasets" / "ocean_documents.yaml")},
        "retrievers": [{"label": "st", "adapter": "static", "params": {"rankings": ranking}}],
        "metrics": ["doc_ndcg@10"], "output": "out"}))
    code, out, err = run_cli(capsys, "validate", config)
    assert (code, out) == (2, "")
    assert err.splitlines() == [f"{config}: retriever 'st': static: rankings: query 'q-coral' ranks doc "
                                "'oceans/nothere.md', which is not in the corpus", "rag-eval: 1 problem found"]


@pytest.mark.parametrize("chunker, ranked, problem", [
    (None, "oceans/pacific.md#0-99999", "retriever 'st': query 'q-coral', span 0 ('oceans/pacific.md', 0, 99999): "
                                        "end 99999 is past the end of the document (666 characters)"),
    ("c", "oceans/nope.md#0-10", "retriever 'st': static: rankings: query 'q-coral' ranks doc 'oceans/nope.md#0-10', "
                                 "which is not in the corpus"),
])
def test_validate_checks_stored_chunk_ids_as_far_as_the_documents_tell(tmp_path, capsys, chunker, ranked, problem):
    """A stored chunk id past its document's end (no chunker: the retriever's own spans), or of a document not in
    the dataset (with a chunker): validate said OK, run refused. (A chunk id that is not one of the chunker's
    chunks needs the chunking: run finds it.)"""
    spec = {"label": "st", "adapter": "static", "params": {"rankings": {"q-coral": [ranked]}}}
    config = tmp_path / "run.yaml"
    config.write_text(json.dumps({
        "dataset": {"path": str(REPO / "datasets" / "ocean_documents.yaml")},
        "chunking": {"c": {"method": "fixed", "size": 40}},
        "retrievers": [{**spec, "chunker": chunker} if chunker else spec],
        "metrics": ["doc_ndcg@10"], "output": "out"}))
    for command in ("validate", "run"):
        code, out, err = run_cli(capsys, command, config, *(["--no-progress"] if command == "run" else []))
        assert (code, out) == (2, ""), err
        (line, *_) = err.splitlines()
        assert line.startswith((f"{config}: retriever 'st'", f"rag-eval: error: {config}: retriever 'st'")), err
        assert line.endswith(problem.split(": ", 1)[1]), err  # (run adds "(static) failed in search()")
