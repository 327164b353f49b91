"""Query sets, judgements and corpora: every format, every check, the fingerprint.

Expected values are read off the files written in each test (or, for the shared
collections, counted independently from the raw files or taken from their
SOURCE.md), never from rag_eval's own output.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml
from conftest import REPO, shared_dataset
from peak_memory import run_with_peak

from rag_eval._core.errors import DatasetError, RagEvalError
from rag_eval._data.datasets import Dataset, load_beir, load_cranfield, load_dataset, load_trec, load_yaml_query_set
from rag_eval._data.datasets.corpus import load_corpus_file
from rag_eval._data.datasets.values import GRADE_FORM as GRADE
from rag_eval.cli import main

# ---- helpers -----------------------------------------------------------------------------------

PASSAGES = [
    {"id": "p1", "title": "Pacific", "text": "The Pacific Ocean is the largest ocean."},
    {"id": "p2", "title": "Atlantic", "text": "The Atlantic, a wide ocean, separates Europe and America."},
    {"id": "p3", "title": "", "text": 'Text with "quotes", a comma and a | pipe.'},
]

QUERIES = [
    {"id": "q1", "text": "Which ocean is the largest?", "tags": ["oceans", "size"], "judgements": {"p1": 3, "p2": 0.5}},
    {"id": "q2", "text": "What separates Europe and America?", "judgements": {"p2": 2, "p3": 0}},
]


def write_yaml(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def query_set(tmp_path: Path, corpus=None, queries=None, name="tiny", file="set.yaml") -> Path:
    data = {"name": name, "corpus": PASSAGES if corpus is None else corpus, "queries": QUERIES if queries is None else queries}
    return write_yaml(tmp_path / file, data)


def assert_tiny(dataset: Dataset, tags: bool = True) -> None:
    """What QUERIES and PASSAGES say, checked field by field (BEIR and TREC have no tags)."""
    assert list(dataset.queries) == ["q1", "q2"]
    assert dataset.queries["q1"].text == "Which ocean is the largest?"
    assert dataset.queries["q1"].tags == (("oceans", "size") if tags else ())
    assert dataset.queries["q2"].tags == ()
    assert dataset.judgements == {"q1": {"p1": 3.0, "p2": 0.5}, "q2": {"p2": 2.0, "p3": 0.0}}
    assert all(isinstance(g, float) for j in dataset.judgements.values() for g in j.values())
    assert dataset.corpus["p1"] == {"text": "The Pacific Ocean is the largest ocean.", "title": "Pacific"}
    assert dataset.corpus["p3"]["text"] == 'Text with "quotes", a comma and a | pipe.'
    assert dataset.corpus["p3"]["title"] == ""
    assert len(dataset.corpus) == 3


def problems_of(excinfo) -> list[str]:
    return list(excinfo.value.problems)


# ---- the YAML query set -------------------------------------------------------------------------


def test_yaml_query_set_with_inline_corpus(tmp_path):
    path = query_set(tmp_path)
    dataset = load_yaml_query_set(path)
    assert_tiny(dataset)
    assert dataset.name == "tiny"
    assert dataset.judged_query_ids == ["q1", "q2"]
    assert dataset.unjudged_query_ids == []
    assert dataset.summary()["judgements"] == 4
    assert dataset.query_texts() == {"q1": "Which ocean is the largest?", "q2": "What separates Europe and America?"}


def _write_corpus(path: Path, fmt: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "yaml":
        write_yaml(path, PASSAGES)
    elif fmt == "yaml-mapping":  # {id: {title, text}} form
        write_yaml(path, {p["id"]: {"title": p["title"], "text": p["text"]} for p in PASSAGES})
    elif fmt == "jsonl":
        path.write_text("".join(json.dumps({"_id": p["id"], "title": p["title"], "text": p["text"]}) + "\n" for p in PASSAGES))
    elif fmt == "json":  # one JSON document: a list of passages
        path.write_text(json.dumps(PASSAGES, indent=2))
    elif fmt == "json-lines":  # JSON Lines under a .json name
        path.write_text("".join(json.dumps(p) + "\n" for p in PASSAGES))
    elif fmt == "csv":
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=["id", "title", "text"])
            writer.writeheader()
            writer.writerows(PASSAGES)
    elif fmt == "csv-bom":  # Excel writes a byte-order mark
        with path.open("w", newline="", encoding="utf-8-sig") as handle:
            writer = csv.DictWriter(handle, fieldnames=["id", "title", "text"])
            writer.writeheader()
            writer.writerows(PASSAGES)


@pytest.mark.parametrize(
    "fmt, name",
    [("yaml", "corpus.yaml"), ("yaml-mapping", "corpus.yml"), ("jsonl", "corpus.jsonl"), ("json", "corpus.json"),
     ("json-lines", "corpus.json"), ("csv", "corpus.csv"), ("csv-bom", "corpus.csv")],
)
def test_corpus_in_its_own_file_relative_to_the_query_set(tmp_path, fmt, name):
    _write_corpus(tmp_path / "data" / "corpora" / name, fmt)
    path = write_yaml(tmp_path / "data" / "sets" / "set.yaml", {"name": "tiny", "corpus": f"../corpora/{name}", "queries": QUERIES})
    dataset = load_yaml_query_set(path)
    assert_tiny(dataset)
    # The same content gives the same fingerprint whatever the corpus format.
    inline = load_yaml_query_set(query_set(tmp_path / "inline"))
    assert dataset.fingerprint == inline.fingerprint


def test_corpus_mapping_with_a_passage_without_text_is_reported(tmp_path):
    (tmp_path / "corpus.yaml").write_text("d1: first text\nd2: null\nd3: {title: T}\n")
    path = write_yaml(tmp_path / "set.yaml", {"corpus": "corpus.yaml", "queries": [{"id": "q", "text": "x", "judgements": {"d1": 1}}]})
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    corpus = tmp_path / "corpus.yaml"
    assert problems_of(excinfo) == [f"{corpus}: corpus[1]: passage 'd2' has no text", f"{corpus}: corpus[2]: passage 'd3' has no text"]


def test_load_dataset_spec_resolves_against_base_and_renames(tmp_path):
    query_set(tmp_path / "sets")
    dataset = load_dataset({"path": "sets/set.yaml", "name": "renamed"}, base=tmp_path)
    assert dataset.name == "renamed"
    assert_tiny(dataset)


def test_unjudged_query_is_listed_not_dropped(tmp_path):
    queries = QUERIES + [{"id": "q3", "text": "A question nobody judged"}]
    dataset = load_yaml_query_set(query_set(tmp_path, queries=queries))
    assert dataset.judged_query_ids == ["q1", "q2"]
    assert dataset.unjudged_query_ids == ["q3"]
    assert "q3" in dataset.query_texts()


# ---- BEIR ---------------------------------------------------------------------------------------


def make_beir(root: Path, header: bool = True, crlf: bool = True, qrels_rows=None) -> Path:
    (root / "qrels").mkdir(parents=True)
    with (root / "corpus.jsonl").open("w") as f:
        for p in PASSAGES:
            f.write(json.dumps({"_id": p["id"], "title": p["title"], "text": p["text"], "metadata": {}}) + "\n")
    with (root / "queries.jsonl").open("w") as f:
        for q in QUERIES:
            f.write(json.dumps({"_id": q["id"], "text": q["text"], "metadata": {}}) + "\n")
        f.write(json.dumps({"_id": "q-train", "text": "a training query", "metadata": {}}) + "\n")
    end = "\r\n" if crlf else "\n"
    rows = qrels_rows or [("q1", "p1", "3"), ("q1", "p2", "0.5"), ("q2", "p2", "2"), ("q2", "p3", "0")]
    lines = (["query-id\tcorpus-id\tscore"] if header else []) + ["\t".join(r) for r in rows]
    (root / "qrels" / "test.tsv").write_bytes((end.join(lines) + end).encode())
    return root


@pytest.mark.parametrize("header, crlf", [(True, True), (False, False), (True, False)])
def test_beir_folder(tmp_path, header, crlf):
    root = make_beir(tmp_path / "tinybeir", header=header, crlf=crlf)
    dataset = load_dataset({"path": str(root)})  # format inferred from corpus.jsonl
    assert_tiny(dataset, tags=False)
    assert dataset.name == "tinybeir/test"
    # The training query is not part of the test split; that is recorded, not hidden.
    assert "q-train" not in dataset.queries
    assert len(dataset.notes) == 1 and "1 queries" in dataset.notes[0] and "test.tsv" in dataset.notes[0]


def test_beir_missing_split_names_the_file(tmp_path):
    root = make_beir(tmp_path / "b")
    with pytest.raises(DatasetError) as excinfo:
        load_beir(root, split="dev")
    assert str(root / "qrels" / "dev.tsv") in str(excinfo.value)


def test_beir_judged_query_missing_from_queries_file(tmp_path):
    root = make_beir(tmp_path / "b", qrels_rows=[("q1", "p1", "1"), ("q9", "p2", "1")])
    with pytest.raises(DatasetError) as excinfo:
        load_beir(root)
    assert "'q9'" in str(excinfo.value) and "queries.jsonl" in str(excinfo.value)


# ---- TREC ---------------------------------------------------------------------------------------


def make_trec(root: Path, qrels_lines: list[str]) -> dict[str, str]:
    root.mkdir(parents=True, exist_ok=True)
    (root / "qrels.txt").write_text("".join(line + "\n" for line in qrels_lines))
    (root / "topics.tsv").write_text("".join(f"{q['id']}\t{q['text']}\n" for q in QUERIES))
    (root / "docs.tsv").write_text("".join(f"{p['id']}\t{p['text']}\n" for p in PASSAGES))
    return {"format": "trec", "qrels": "qrels.txt", "queries": "topics.tsv", "corpus": "docs.tsv"}


def test_trec_qrels_queries_and_corpus(tmp_path):
    spec = make_trec(tmp_path, ["q1 0 p1 3", "q1 0 p2 0.5", "q2\t0\tp2\t2", "q2 0 p3 0"])
    dataset = load_dataset(spec, base=tmp_path)
    assert dataset.judgements == {"q1": {"p1": 3.0, "p2": 0.5}, "q2": {"p2": 2.0, "p3": 0.0}}
    assert dataset.queries["q2"].text == "What separates Europe and America?"
    assert dataset.corpus["p3"]["text"] == 'Text with "quotes", a comma and a | pipe.'
    assert dataset.notes == ()


def test_grade_map_turns_codes_into_gains(tmp_path):
    # A Cranfield-like scale: code 1 is best; -1 means "no interest".
    spec = make_trec(tmp_path, ["q1 0 p1 1", "q1 0 p2 4", "q2 0 p2 2", "q2 0 p3 -1"])
    spec["grade_map"] = {1: 4, 2: 3, 3: 2, 4: 1, -1: 0}
    dataset = load_dataset(spec, base=tmp_path)
    assert dataset.judgements == {"q1": {"p1": 4.0, "p2": 1.0}, "q2": {"p2": 3.0, "p3": 0.0}}


def test_grade_outside_grade_map_is_an_error(tmp_path):
    spec = make_trec(tmp_path, ["q1 0 p1 1", "q2 0 p2 7"])
    spec["grade_map"] = {1: 4, -1: 0}
    with pytest.raises(DatasetError) as excinfo:
        load_dataset(spec, base=tmp_path)
    message = str(excinfo.value)
    assert "qrels.txt:2" in message and "'q2'" in message and "'p2'" in message and "'7'" in message


# ---- Cranfield ----------------------------------------------------------------------------------


def make_cranfield(root: Path, qrels: str, queries=(("001", "first question"), ("365", "last question"))) -> Path:
    root.mkdir(parents=True)
    (root / "cran.all.1400").write_text(
        ".I 1\n.T\nfirst title\n.A\nsomeone\n.B\nj. ae. 1\n.W\nfirst title\nbody one .\n"
        ".I 2\n.T\nsecond\n.A\n.B\n.W\nbody\ntwo\n"
    )
    (root / "cran.qry").write_bytes("".join(f".I {n}\r\n.W\r\n{t}\r\n" for n, t in queries).encode())
    (root / "cranqrel").write_text(qrels)
    return root


def test_cranfield_numbers_queries_by_position_and_maps_codes(tmp_path):
    root = make_cranfield(tmp_path / "cran", "1 1 1 \n1 2 -1 \n2 2 4 \n2 1 2 ")
    dataset = load_dataset({"path": str(root)})  # inferred from cranqrel
    assert dataset.name == "cranfield"
    # .I 365 is the 2nd query in cran.qry, so cranqrel calls it query 2.
    assert dataset.queries["2"].text == "last question"
    assert dataset.queries["1"].text == "first question"
    # code 1 (complete answer) -> 4, 2 -> 3, 4 -> 1, -1 -> 0
    assert dataset.judgements == {"1": {"1": 4.0, "2": 0.0}, "2": {"2": 1.0, "1": 3.0}}
    assert dataset.corpus["1"] == {"title": "first title", "text": "first title body one ."}
    assert dataset.corpus["2"]["text"] == "body two"


def test_cranfield_documents_numbered_after_a_tab(tmp_path):
    """`.I<TAB>1`: white space separates the field; the tab was read into the id (refused) once only spaces around
    an id were removed."""
    root = make_cranfield(tmp_path / "cran", "1 1 1 \n1 2 -1 \n2 2 4 \n2 1 2 ")
    spaced = load_dataset({"path": str(root)})
    cran = root / "cran.all.1400"
    cran.write_text(cran.read_text().replace(".I 1\n", ".I\t1\n").replace(".I 2\n", ".I  2 \n"))
    assert load_dataset({"path": str(root)}).fingerprint == spaced.fingerprint


def test_cranfield_judged_query_beyond_cran_qry_is_an_error(tmp_path):
    root = make_cranfield(tmp_path / "cran", "1 1 1\n3 2 2\n")
    with pytest.raises(DatasetError) as excinfo:
        load_cranfield(root)
    assert "'3'" in str(excinfo.value) and "cranqrel" in str(excinfo.value)


def test_shared_cranfield():
    path = shared_dataset("cranfield")
    dataset = load_cranfield(path)
    assert len(dataset.queries) == 225
    assert len(dataset.corpus) == 1400
    assert sum(len(j) for j in dataset.judgements.values()) == 1837

    # Independently: the 225th ".I" of cran.qry is ".I 365" and its text is query "225".
    text = (path / "cran.qry").read_text()
    blocks = text.replace("\r\n", "\n").split(".I ")[1:]
    assert len(blocks) == 225
    number, _, rest = blocks[224].partition("\n")
    assert number.strip() == "365"
    assert dataset.queries["225"].text == " ".join(rest.split(".W", 1)[1].split())

    # Gains: code c -> 5 - c for c in 1..4, -1 -> 0, row by row from the raw file.
    rows = [line.split() for line in (path / "cranqrel").read_text().splitlines() if line.strip()]
    assert len(rows) == 1837
    expected = {1: 4.0, 2: 3.0, 3: 2.0, 4: 1.0, -1: 0.0}
    for qid, doc, code in rows:
        assert dataset.judgements[qid][doc] == expected[int(code)]
    codes = Counter(int(code) for _, _, code in rows)
    gains = Counter(g for j in dataset.judgements.values() for g in j.values())
    assert codes == {-1: 225, 1: 128, 2: 387, 3: 734, 4: 363}  # SOURCE.md
    assert gains == {0.0: 225, 4.0: 128, 3.0: 387, 2.0: 734, 1.0: 363}
    assert any("1->4" in note and "-1->0" in note for note in dataset.notes)


# ---- shared BEIR / TREC collections ----------------------------------------------------------------


def test_shared_scifact():
    dataset = load_beir(shared_dataset("scifact"), split="test")
    assert (len(dataset.queries), len(dataset.corpus)) == (300, 5183)
    assert sum(len(j) for j in dataset.judgements.values()) == 339
    assert set(dataset.judgements) == set(dataset.queries)
    assert all(g == 1.0 for j in dataset.judgements.values() for g in j.values())
    # qrels/test.tsv has a header and CRLF ends: the first row after the header is "1<TAB>31715818<TAB>1".
    assert dataset.judgements["1"] == {"31715818": 1.0}
    assert any("809" in note for note in dataset.notes)


def test_shared_msmarco_dl19_subset():
    dataset = load_dataset({"path": str(shared_dataset("msmarco_dl19_subset"))})
    assert len(dataset.queries) == 43
    assert len(dataset.corpus) == 5000
    assert sum(len(j) for j in dataset.judgements.values()) == 4102
    assert Counter(g for j in dataset.judgements.values() for g in j.values()) == {1.0: 1601, 2.0: 1804, 3.0: 697}
    # 7 of the 50 queries have no judgements: recorded in the notes.
    assert len(dataset.notes) == 1 and dataset.notes[0].startswith("7 queries of queries.jsonl")


def test_shared_nfcorpus_trec_form():
    root = shared_dataset("nfcorpus")
    dataset = load_trec(root / "test.2-1-0.qrel", root / "test.titles.queries", root / "test.docs")
    assert len(dataset.queries) == 323
    assert len(dataset.corpus) == 3162
    assert Counter(g for j in dataset.judgements.values() for g in j.values()) == {1.0: 11758, 2.0: 576}
    assert dataset.corpus["MED-10"]["text"].startswith("statin breast cancer survival nationwide cohort study finland")
    assert dataset.notes and dataset.notes[0].startswith("2 queries of test.titles.queries")


# ---- checks on load -------------------------------------------------------------------------------


def test_duplicate_query_id(tmp_path):
    path = query_set(tmp_path, queries=QUERIES + [{"id": "q1", "text": "again", "judgements": {"p1": 1}}])
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == [f"{path}: queries[2](q1).id: duplicate query id 'q1' (first at queries[0])"]


def test_duplicate_passage_id(tmp_path):
    corpus = PASSAGES + [{"id": "p2", "text": "another text"}]
    path = query_set(tmp_path, corpus=corpus)
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == [f"{path}: corpus[3](p2).id: duplicate passage id 'p2' (first at corpus[1])"]


def test_duplicate_passage_id_in_jsonl_names_the_line(tmp_path):
    root = make_beir(tmp_path / "b")
    with (root / "corpus.jsonl").open("a") as f:
        f.write(json.dumps({"_id": "p1", "title": "", "text": "dup"}) + "\n")
    with pytest.raises(DatasetError) as excinfo:
        load_beir(root)
    assert problems_of(excinfo) == [f"{root / 'corpus.jsonl'}:4: duplicate passage id 'p1'"]


def test_duplicate_query_id_in_queries_file(tmp_path):
    root = make_beir(tmp_path / "b")
    with (root / "queries.jsonl").open("a") as f:
        f.write(json.dumps({"_id": "q2", "text": "again"}) + "\n")
    with pytest.raises(DatasetError) as excinfo:
        load_beir(root)
    assert problems_of(excinfo) == [f"{root / 'queries.jsonl'}:4: duplicate query id 'q2'"]


def test_judgement_of_a_doc_not_in_the_corpus(tmp_path):
    queries = [{"id": "q1", "text": "x", "judgements": {"p1": 1, "p404": 2}}]
    path = query_set(tmp_path, queries=queries)
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == [
        f"{path}: queries[0](q1).judgements.p404: passage 'p404' is not in the corpus {path} (corpus)"
    ]


def test_judgement_of_a_doc_not_in_a_corpus_file(tmp_path):
    _write_corpus(tmp_path / "corpus.jsonl", "jsonl")
    path = write_yaml(tmp_path / "set.yaml", {"corpus": "corpus.jsonl", "queries": [{"id": "q1", "text": "x", "judgements": {"d9": 1}}]})
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert str(excinfo.value) == (
        f"{path}: queries[0](q1).judgements.d9: passage 'd9' is not in the corpus {tmp_path / 'corpus.jsonl'}"
    )


def test_judgement_of_a_doc_not_in_a_trec_corpus(tmp_path):
    spec = make_trec(tmp_path, ["q1 0 p1 1", "q2 0 zz 1"])
    with pytest.raises(DatasetError) as excinfo:
        load_dataset(spec, base=tmp_path)
    assert str(excinfo.value) == (
        f"{tmp_path / 'qrels.txt'}:2: query 'q2' judges doc 'zz', which is not in the corpus {tmp_path / 'docs.tsv'}; "
        "check the doc id, or add the passage to the corpus"
    )


def test_a_judged_query_not_in_the_queries_file_is_named_with_its_line(tmp_path):
    spec = make_trec(tmp_path, ["q1 0 p1 1", "q1 0 p2 0", "qX 0 p1 1", "qX 0 p2 1"])
    with pytest.raises(DatasetError) as excinfo:
        load_dataset(spec, base=tmp_path)
    assert str(excinfo.value).startswith(
        f"{tmp_path / 'qrels.txt'}:3: query 'qX' is judged but not in the queries file {tmp_path / 'topics.tsv'}; "
        "add it there, or remove its judgements")


def test_non_numeric_grade(tmp_path):
    queries = [{"id": "q1", "text": "x", "judgements": {"p1": "high"}}, {"id": "q2", "text": "y", "judgements": {"p2": 1}}]
    path = query_set(tmp_path, queries=queries)
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == [f"{path}: queries[0](q1).judgements.p1: {GRADE} (got 'high')"]


@pytest.mark.parametrize(
    "bad, got",
    [(".nan", " (got nan)"), (".inf", " (got inf)"), ("true", " (got True)"), ("null", ""),
     ('"2"', ", written without quotes (got '2')"), ("1" + "0" * 400, "; this one is too large for a float (got 1000")],
)
def test_grade_must_be_a_finite_number(tmp_path, bad, got):
    path = tmp_path / "set.yaml"
    path.write_text(
        "corpus: [{id: p1, text: a}, {id: p2, text: b}]\n"
        f"queries:\n  - {{id: q1, text: x, judgements: {{p1: {bad}, p2: 1}}}}\n"
    )
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo)[0].startswith(f"{path}: queries[0](q1).judgements.p1: {GRADE}{got}")


def test_non_numeric_grade_in_trec_qrels_names_line(tmp_path):
    spec = make_trec(tmp_path, ["q1 0 p1 1", "q2 0 p2 high"])
    with pytest.raises(DatasetError) as excinfo:
        load_dataset(spec, base=tmp_path)
    assert str(excinfo.value) == f"{tmp_path / 'qrels.txt'}:2: query 'q2': doc 'p2': grade 'high': {GRADE}"


@pytest.mark.parametrize("text", ["", "   ", None])
def test_empty_query_text(tmp_path, text):
    queries = [{"id": "q1", "text": text, "judgements": {"p1": 1}}, QUERIES[1]]
    path = query_set(tmp_path, queries=queries)
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    got = "" if text is None else f" (got {text!r})"
    assert problems_of(excinfo) == [f"{path}: queries[0](q1).text: empty query text; give each query a 'text'{got}"]


def test_empty_query_text_in_queries_file(tmp_path):
    root = make_beir(tmp_path / "b")
    with (root / "queries.jsonl").open("a") as f:
        f.write(json.dumps({"_id": "q5", "text": " "}) + "\n")
    with pytest.raises(DatasetError) as excinfo:
        load_beir(root)
    assert problems_of(excinfo) == [f"{root / 'queries.jsonl'}:4: query 'q5' has an empty text"]


def test_query_set_without_any_judgement(tmp_path):
    queries = [{"id": "q1", "text": "x"}, {"id": "q2", "text": "y", "judgements": {}}]
    path = query_set(tmp_path, queries=queries)
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == [f"{path}: no query has any judgement; judge at least one passage per query"]


def test_a_passage_judged_twice_in_yaml_is_an_error(tmp_path):
    # PyYAML alone keeps the last value silently; SEMANTICS.md makes it an error.
    path = tmp_path / "set.yaml"
    path.write_text(
        "corpus: [{id: p1, text: a}, {id: p2, text: b}]\n"
        "queries:\n"
        "  - id: q1\n"
        "    text: x\n"
        "    judgements:\n"
        "      p1: 3\n"
        "      p2: 1\n"
        "      p1: 0\n"
    )
    with pytest.raises(RagEvalError) as excinfo:
        load_yaml_query_set(path)
    message = str(excinfo.value)
    assert message.startswith(f"{path}: line 8, column 7: ")
    assert "'p1'" in message and "line 6" in message


def test_a_passage_judged_twice_in_qrels_is_an_error(tmp_path):
    spec = make_trec(tmp_path, ["q1 0 p1 1", "q1 0 p2 1", "q1 0 p1 2"])
    with pytest.raises(DatasetError) as excinfo:
        load_dataset(spec, base=tmp_path)
    assert str(excinfo.value) == f"{tmp_path / 'qrels.txt'}:3: query 'q1': doc 'p1' is judged twice"


ALL_PROBLEMS_CORPUS = [
    {"id": "p1", "text": "one"},
    {"id": "p2", "text": "two"},
    {"id": "p1", "text": "one again"},  # duplicate passage id
]
ALL_PROBLEMS_QUERIES = [
    {"id": "q1", "text": "first", "judgements": {"p1": 2, "ghost": 1}},  # doc not in the corpus
    {"id": "q1", "text": "duplicate", "judgements": {"p2": 1}},  # duplicate query id
    {"id": "q2", "text": "", "judgements": {"p2": 1}},  # empty text
    {"id": "q3", "text": "third", "judgements": {"p2": "very"}},  # non-numeric grade
]


def expected_all_problems(path: Path) -> list[str]:
    return [
        f"{path}: corpus[2](p1).id: duplicate passage id 'p1' (first at corpus[0])",
        f"{path}: queries[0](q1).judgements.ghost: passage 'ghost' is not in the corpus {path} (corpus)",
        f"{path}: queries[1](q1).id: duplicate query id 'q1' (first at queries[0])",
        f"{path}: queries[2](q2).text: empty query text; give each query a 'text' (got '')",
        f"{path}: queries[3](q3).judgements.p2: {GRADE} (got 'very')",
    ]


def test_every_problem_is_collected(tmp_path):
    path = query_set(tmp_path, corpus=ALL_PROBLEMS_CORPUS, queries=ALL_PROBLEMS_QUERIES)
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == expected_all_problems(path)
    # The message names the first problem and counts the others.
    assert str(excinfo.value).startswith(f"{path}: corpus[2](p1).id: duplicate passage id 'p1' (first at corpus[0]) (and 4 more")


def test_validate_lists_every_dataset_problem(tmp_path, capsys):
    path = query_set(tmp_path / "data", corpus=ALL_PROBLEMS_CORPUS, queries=ALL_PROBLEMS_QUERIES)
    config = write_yaml(
        tmp_path / "run.yaml",
        {"dataset": {"path": "data/set.yaml"}, "retrievers": [{"label": "s", "adapter": "static", "params": {"rankings": {}}}],
         "metrics": ["ndcg@10"]},
    )
    assert main(["validate", str(config)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == expected_all_problems(path) + ["rag-eval: 5 problems found"]


def test_no_judgements_and_other_problems_together(tmp_path):
    queries = [{"id": "q1", "text": ""}, {"id": "q1", "text": "dup"}]
    path = query_set(tmp_path, queries=queries)
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == [
        f"{path}: queries[0](q1).text: empty query text; give each query a 'text' (got '')",
        f"{path}: queries[1](q1).id: duplicate query id 'q1' (first at queries[0])",
        f"{path}: no query has any judgement; judge at least one passage per query",
    ]


def test_missing_query_set_file(tmp_path):
    with pytest.raises(DatasetError) as excinfo:
        load_dataset({"path": "nowhere.yaml"}, base=tmp_path)
    assert str(excinfo.value) == f"{tmp_path / 'nowhere.yaml'}: no such file; expected a YAML query set"


# ---- fingerprint ------------------------------------------------------------------------------------


def _fingerprint(tmp_path: Path, name: str, corpus=None, queries=None, **extra) -> str:
    data = {"name": "tiny", "corpus": corpus or PASSAGES, "queries": queries or QUERIES, **extra}
    return load_yaml_query_set(write_yaml(tmp_path / name, data)).fingerprint


def test_fingerprint_is_stable_across_loads_and_processes(tmp_path):
    path = query_set(tmp_path)
    first = load_yaml_query_set(path).fingerprint
    assert len(first) == 16 and int(first, 16) >= 0
    assert load_yaml_query_set(path).fingerprint == first
    # Another interpreter (other hash seed, other dict history) computes the same value.
    code = "import sys; from pathlib import Path; from rag_eval._data.datasets import load_yaml_query_set; print(load_yaml_query_set(Path(sys.argv[1])).fingerprint)"
    out = subprocess.run([sys.executable, "-c", code, str(path)], check=False, capture_output=True, text=True,
                         timeout=60, cwd=REPO, env={"PYTHONHASHSEED": "123", "PATH": ""})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == first


def test_fingerprint_ignores_order_and_presentation(tmp_path):
    base = _fingerprint(tmp_path, "a.yaml")
    assert _fingerprint(tmp_path, "b.yaml", corpus=list(reversed(PASSAGES)), queries=list(reversed(QUERIES))) == base
    # Integer 3 and float 3.0 are the same grade.
    queries = [dict(QUERIES[0], judgements={"p1": 3.0, "p2": 0.5}), QUERIES[1]]
    assert _fingerprint(tmp_path, "c.yaml", queries=queries) == base
    # Tags and the description do not change what is scored.
    queries = [dict(QUERIES[0], tags=["other"]), QUERIES[1]]
    assert _fingerprint(tmp_path, "d.yaml", queries=queries, description="words") == base


def test_fingerprint_changes_with_content(tmp_path):
    base = _fingerprint(tmp_path, "base.yaml")
    changed_text = [dict(QUERIES[0], text="Which ocean is the biggest?"), QUERIES[1]]
    changed_grade = [dict(QUERIES[0], judgements={"p1": 2, "p2": 0.5}), QUERIES[1]]
    changed_float_grade = [dict(QUERIES[0], judgements={"p1": 3, "p2": 0.6}), QUERIES[1]]
    changed_passage = [dict(PASSAGES[0], text="The Pacific Ocean is the largest ocean!"), *PASSAGES[1:]]
    changed_title = [dict(PASSAGES[0], title="Pacific Ocean"), *PASSAGES[1:]]
    changed_judged_doc = [dict(QUERIES[0], judgements={"p1": 3, "p3": 0.5}), QUERIES[1]]
    prints = {
        "text": _fingerprint(tmp_path, "t.yaml", queries=changed_text),
        "grade": _fingerprint(tmp_path, "g.yaml", queries=changed_grade),
        "float grade": _fingerprint(tmp_path, "f.yaml", queries=changed_float_grade),
        "passage": _fingerprint(tmp_path, "p.yaml", corpus=changed_passage),
        "title": _fingerprint(tmp_path, "ti.yaml", corpus=changed_title),
        "judged doc": _fingerprint(tmp_path, "j.yaml", queries=changed_judged_doc),
    }
    assert base not in prints.values()
    assert len(set(prints.values())) == len(prints)


# ---- every input file read safely (issue 10) ----------------------------------------------------------

BOM = b"\xef\xbb\xbf"


def deny_read(monkeypatch, path: Path) -> None:
    """Tests run as root, which reads anything: make the permission check answer as for a user."""
    real = os.access
    monkeypatch.setattr("rag_eval._core.files.os.access", lambda p, mode: os.fspath(p) != os.fspath(path) and real(p, mode))


def raises(call, *args, **kwargs) -> str:
    with pytest.raises(DatasetError) as excinfo:
        call(*args, **kwargs)
    message = str(excinfo.value)
    assert "\n" not in message
    return message


def test_unreadable_query_set_and_corpus(tmp_path, monkeypatch):
    path = query_set(tmp_path)
    deny_read(monkeypatch, path)
    assert raises(load_yaml_query_set, path) == f"{path}: permission denied; make the YAML query set readable"
    spec = make_trec(tmp_path / "trec", ["q1 0 p1 1"])
    corpus = tmp_path / "trec" / "docs.tsv"
    deny_read(monkeypatch, corpus)
    assert raises(load_dataset, spec, base=tmp_path / "trec") == f"{corpus}: permission denied; make the corpus file readable"


def test_unreadable_when_opening_fails_anyway(tmp_path, monkeypatch):
    # The permission check passed but open() fails (a race, an ACL): still one line.
    spec = make_trec(tmp_path, ["q1 0 p1 1"])
    qrels = tmp_path / "qrels.txt"
    real_open = Path.open

    def failing_open(self, *args, **kwargs):
        if self == qrels:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", failing_open)
    assert raises(load_dataset, spec, base=tmp_path) == f"{qrels}: cannot be read (Permission denied)"


def test_folder_where_a_file_is_expected(tmp_path):
    root = make_beir(tmp_path / "b")
    (root / "qrels" / "test.tsv").unlink()
    (root / "qrels" / "test.tsv").mkdir()
    qrels = root / "qrels" / "test.tsv"
    assert raises(load_beir, root) == f"{qrels}: is a folder, expected a BEIR qrels file of split 'test' (a regular file)"
    spec = make_trec(tmp_path / "t", ["q1 0 p1 1"])
    (tmp_path / "t" / "docs.tsv").unlink()
    (tmp_path / "t" / "docs.tsv").mkdir()
    assert raises(load_dataset, spec, base=tmp_path / "t") == (
        f"{tmp_path / 't' / 'docs.tsv'}: is a folder, expected a corpus file (a regular file)"
    )


def test_fifo_and_dev_zero_as_query_set_or_corpus(tmp_path):
    fifo = tmp_path / "set.yaml"
    os.mkfifo(fifo)
    # Before: open() blocked forever on the FIFO, /dev/zero was read until MemoryError.
    assert raises(load_yaml_query_set, fifo) == f"{fifo}: is a FIFO (named pipe), expected a YAML query set (a regular file)"
    path = write_yaml(tmp_path / "s2.yaml", {"corpus": "/dev/zero", "queries": QUERIES})
    assert raises(load_yaml_query_set, path) == "/dev/zero: is a character device, expected a corpus file (a regular file)"
    os.mkfifo(tmp_path / "corpus.jsonl")
    path = write_yaml(tmp_path / "s3.yaml", {"corpus": "corpus.jsonl", "queries": QUERIES})
    assert raises(load_yaml_query_set, path) == (
        f"{tmp_path / 'corpus.jsonl'}: is a FIFO (named pipe), expected a corpus file (a regular file)"
    )


@pytest.mark.parametrize(
    "name, content, place",
    [
        ("corpus.jsonl", b'{"_id": "p1", "text": "ok"}\n{"_id": "p2", "text": "caf\xe9"}\n', "line 2, column 27"),
        ("corpus.tsv", b"p1\tok\np2\tcaf\xe9 au lait\n", "line 2, column 7"),
        ("corpus.json", b'[\n  {"id": "p1", "text": "ok"},\n  {"id": "p2", "text": "\xff"}\n]\n', "line 3, column 25"),
        ("corpus.csv", b"id,text\np1,ok\np2,\xc3\n", "line 3, column 4"),
    ],
)
def test_corpus_not_utf8_names_line_and_column(tmp_path, name, content, place):
    (tmp_path / name).write_bytes(content)
    path = write_yaml(tmp_path / "set.yaml", {"corpus": name, "queries": [{"id": "q", "text": "x", "judgements": {"p1": 1}}]})
    message = raises(load_yaml_query_set, path)
    assert message.startswith(f"{tmp_path / name}: {place}: not UTF-8 text (byte 0x")
    assert message.endswith("; save the file as UTF-8")


def test_beir_corpus_not_utf8_far_into_the_file(tmp_path):
    root = make_beir(tmp_path / "b")
    lines = [json.dumps({"_id": f"x{i}", "text": "word " * 50}) for i in range(20_000)]  # past the 8 KiB decode chunks
    (root / "corpus.jsonl").write_bytes(("\n".join(lines) + "\n").encode() + b'{"_id": "bad", "text": "\x80"}\n')
    message = raises(load_beir, root)
    assert message.startswith(f"{root / 'corpus.jsonl'}: line 20001, column 25: not UTF-8 text (byte 0x80: invalid start byte)")


def test_gzip_corpus_loads_and_a_gz_that_is_not_gzip_is_one_line(tmp_path):
    import gzip

    good = tmp_path / "corpus.jsonl.gz"
    with gzip.open(good, "wt", encoding="utf-8") as handle:
        handle.write("".join(json.dumps({"_id": p["id"], "title": p["title"], "text": p["text"]}) + "\n" for p in PASSAGES))
    assert_tiny(load_yaml_query_set(write_yaml(tmp_path / "good.yaml", {"corpus": good.name, "queries": QUERIES})))
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_text('{"_id": "p1", "text": "plain text"}\n')
    path = write_yaml(tmp_path / "bad.yaml", {"corpus": bad.name, "queries": QUERIES})
    assert raises(load_yaml_query_set, path) == (
        f"{bad}: not a valid gzip file (Not a gzipped file (b'{{\"')); a .gz name needs gzip content"
    )
    truncated = tmp_path / "cut.jsonl.gz"
    truncated.write_bytes(good.read_bytes()[:-12])
    path = write_yaml(tmp_path / "cut.yaml", {"corpus": truncated.name, "queries": QUERIES})
    assert raises(load_yaml_query_set, path).startswith(f"{truncated}: not a valid gzip file (")


def test_gzip_content_under_a_plain_name_says_so(tmp_path):
    import gzip

    (tmp_path / "corpus.jsonl").write_bytes(gzip.compress(b'{"_id": "p1", "text": "x"}\n'))
    path = write_yaml(tmp_path / "set.yaml", {"corpus": "corpus.jsonl", "queries": QUERIES})
    assert "(the file is gzip-compressed: name it .gz)" in raises(load_yaml_query_set, path)


def test_csv_passage_over_128_kib_loads(tmp_path):
    # Before: _csv.Error "field larger than field limit (131072)" as a traceback.
    long_text = "ocean " * 40_000  # 240,000 characters
    with (tmp_path / "corpus.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerows([["id", "title", "text"], ["p1", "Long", long_text], ["p2", "", "short"]])
    path = write_yaml(tmp_path / "set.yaml", {"corpus": "corpus.csv", "queries": [{"id": "q", "text": "x", "judgements": {"p1": 1}}]})
    dataset = load_yaml_query_set(path)
    assert dataset.corpus["p1"] == {"text": long_text, "title": "Long"}
    assert dataset.corpus["p2"]["text"] == "short"
    assert csv.field_size_limit() == 131072  # the process-wide limit is put back


def test_csv_without_id_and_text_columns(tmp_path):
    (tmp_path / "corpus.csv").write_text("doc,body\np1,x\n")
    path = write_yaml(tmp_path / "set.yaml", {"corpus": "corpus.csv", "queries": QUERIES})
    assert raises(load_yaml_query_set, path) == (
        f"{tmp_path / 'corpus.csv'}:1: a CSV corpus needs a header row with columns id and text (title optional)"
    )


@pytest.mark.parametrize("line, got", [("[1, 2]", "[1, 2]"), ('"q9 a string"', "'q9 a string'"), ("42", "42")])
def test_beir_queries_line_that_is_not_an_object(tmp_path, line, got):
    # Before: AttributeError: 'list' object has no attribute 'get'.
    root = make_beir(tmp_path / "b")
    with (root / "queries.jsonl").open("a") as f:
        f.write(line + "\n")
    shown = "list" if line.startswith("[") else got
    assert problems_of_call(load_beir, root) == [
        f"{root / 'queries.jsonl'}:4: expected a JSON object with _id and text, got {shown}"
    ]


def problems_of_call(call, *args, **kwargs) -> list[str]:
    with pytest.raises(DatasetError) as excinfo:
        call(*args, **kwargs)
    return list(excinfo.value.problems)


@pytest.mark.parametrize(
    "grade, reason",
    [
        ("1_0", GRADE),  # float() reads "1_0" as 10; trec_eval's atof as 1
        ("1e999", f"{GRADE}; this one is too large for a float"),
        ("9" * 400, f"{GRADE}; this one is too large for a float"),
        ("nan", GRADE),
        ("inf", GRADE),
        ("٣", GRADE),  # an Arabic-Indic digit: float() takes it
    ],
)
def test_qrels_grade_must_be_a_plain_number_with_its_line(tmp_path, grade, reason):
    spec = make_trec(tmp_path, ["q1 0 p1 1", f"q2 0 p2 {grade}"])
    assert raises(load_dataset, spec, base=tmp_path) == f"{tmp_path / 'qrels.txt'}:2: query 'q2': doc 'p2': grade {grade!r}: {reason}"


def test_yaml_grade_too_large_for_a_float(tmp_path):
    # Before: OverflowError: int too large to convert to float.
    path = tmp_path / "set.yaml"
    path.write_text("corpus: [{id: p1, text: a}]\nqueries:\n  - {id: q1, text: x, judgements: {p1: 1" + "0" * 400 + "}}\n")
    (problem,) = problems_of_call(load_yaml_query_set, path)
    assert problem.startswith(f"{path}: queries[0](q1).judgements.p1: {GRADE}; this one is too large for a float (got 1000")


def test_cr_only_line_endings_load_with_line_numbers(tmp_path):
    # Files from old Mac tools end lines with a lone CR: each CR is a line end, as in an editor.
    (tmp_path / "qrels.txt").write_bytes(b"q1 0 p1 3\rq1 0 p2 0.5\rq2 0 p2 2\rq2 0 p3 0\r")
    (tmp_path / "topics.tsv").write_bytes("".join(f"{q['id']}\t{q['text']}\r" for q in QUERIES).encode())
    (tmp_path / "docs.tsv").write_bytes("".join(f"{p['id']}\t{p['text']}\r" for p in PASSAGES).encode())
    spec = {"format": "trec", "qrels": "qrels.txt", "queries": "topics.tsv", "corpus": "docs.tsv"}
    dataset = load_dataset(spec, base=tmp_path)
    assert dataset.judgements == {"q1": {"p1": 3.0, "p2": 0.5}, "q2": {"p2": 2.0, "p3": 0.0}}
    assert dataset.queries["q2"].text == "What separates Europe and America?"
    assert dataset.corpus["p3"]["text"] == 'Text with "quotes", a comma and a | pipe.'
    (tmp_path / "qrels.txt").write_bytes(b"q1 0 p1 3\rq1 0 p2 0.5\rq2 0 p2 1_0\r")
    assert raises(load_dataset, spec, base=tmp_path) == f"{tmp_path / 'qrels.txt'}:3: query 'q2': doc 'p2': grade '1_0': {GRADE}"


def test_cr_only_file_not_utf8_counts_cr_lines(tmp_path):
    (tmp_path / "docs.tsv").write_bytes(b"p1\ta\rp2\tb\rp3\t\xff\r")
    path = write_yaml(tmp_path / "set.yaml", {"corpus": "docs.tsv", "queries": QUERIES})
    assert raises(load_yaml_query_set, path).startswith(f"{tmp_path / 'docs.tsv'}: line 3, column 4: not UTF-8 text")


@pytest.mark.parametrize(
    "value, expected",
    [
        ("2024-01-15", "an id must be text; YAML read this unquoted value as a date: quote it (got the date 2024-01-15)"),
        ("1.10", ("an id must be text; this one was read as a decimal number, which loses how it was written "
                 "(1.10 reads as 1.1): quote it (got 1.1)")),
        ("yes", "an id must be text, not true/false (YAML reads an unquoted yes, no, on or off so too): quote it "
                "(got True)"),
        ("[a, b]", "an id must be text, not a list"),
        ('"q\\0x"', ("an id holds the control character U+0000 at position 2; ids are one line of text without tabs "
                    "or control characters (got 'q\\x00x')")),
        ('"q\\tx"', ("an id holds the control character U+0009 at position 2; ids are one line of text without tabs "
                    "or control characters (got 'q\\tx')")),
        ('""', "an id is empty; ids are one line of text without tabs or control characters (got '')"),
    ],
)
def test_query_id_must_be_text_without_control_characters(tmp_path, value, expected):
    # Before: a date or float id gave "missing 'id'", a NUL was kept inside the id.
    path = tmp_path / "set.yaml"
    path.write_text(f"corpus: [{{id: p1, text: a}}]\nqueries:\n  - {{id: {value}, text: x, judgements: {{p1: 1}}}}\n")
    (problem,) = problems_of_call(load_yaml_query_set, path)
    assert problem.startswith(f"{path}: queries[0")
    assert problem.split(".id: ", 1)[1] == expected


def test_white_space_around_an_id_other_than_spaces_is_not_removed(tmp_path):
    """Every white space was stripped from an id's ends: a tab (a control character, refused inside an id) and a
    no-break space vanished, so two ids read as one. Spaces alone are removed; a tab is refused; a no-break space
    is part of the id, compared exactly."""
    path = tmp_path / "set.yaml"
    path.write_text('corpus: [{id: " p1 ", text: a}, {id: "p1\\u00a0", text: b}]\n'
                    'queries:\n  - {id: q1, text: x, judgements: {p1: 1, "p1\\u00a0": 0}}\n')
    dataset = load_yaml_query_set(path)
    assert list(dataset.corpus) == ["p1", "p1\u00a0"] and dataset.judgements == {"q1": {"p1": 1.0, "p1\u00a0": 0.0}}
    path.write_text('corpus: [{id: "\\tp1", text: a}]\nqueries:\n  - {id: q1, text: x, judgements: {p1: 1}}\n')
    assert problems_of_call(load_yaml_query_set, path)[0] == (
        f"{path}: corpus[0]('\\tp1').id: an id holds the control character U+0009 at position 1; ids are one line of "
        "text without tabs or control characters (got '\\tp1')")


def test_integer_ids_are_kept_as_their_digits(tmp_path):
    path = tmp_path / "set.yaml"
    path.write_text("corpus: [{id: 7, text: a}]\nqueries:\n  - {id: 12, text: x, judgements: {7: 1}}\n")
    dataset = load_yaml_query_set(path)
    assert list(dataset.queries) == ["12"] and dataset.judgements == {"12": {"7": 1.0}}


@pytest.mark.parametrize(
    "name, content, expected",
    [
        ("docs.tsv", "p1\tok\np\x01x\tbad\n", ":2: an id holds the control character U+0001 at position 2"),
        ("docs.jsonl", '{"_id": "p1", "text": "ok"}\n{"_id": "p\\u0000", "text": "x"}\n',
         ":2: passage id: an id holds the control character U+0000 at position 2"),
    ],
)
def test_control_characters_in_corpus_ids(tmp_path, name, content, expected):
    (tmp_path / name).write_text(content)
    path = write_yaml(tmp_path / "set.yaml", {"corpus": name, "queries": [{"id": "q", "text": "x", "judgements": {"p1": 1}}]})
    (problem,) = problems_of_call(load_yaml_query_set, path)
    assert problem.startswith(f"{tmp_path / name}{expected}")


def test_nul_in_a_qrels_id_is_refused(tmp_path):
    # Before: 'p1\0' was a different id from 'p1' here, and the same one in C tools.
    spec = make_trec(tmp_path, ["q1 0 p1 1", "q2 0 p2\x00 1"])
    assert raises(load_dataset, spec, base=tmp_path) == (
        f"{tmp_path / 'qrels.txt'}:2: an id holds the control character U+0000 at position 3; ids are one line of text "
        "without tabs or control characters"
    )


def test_non_breaking_space_stays_inside_a_qrels_id(tmp_path):
    # trec_eval splits fields on ASCII whitespace only; str.split() would cut the id in two ("found 5 fields").
    spec = make_trec(tmp_path, ["q1 0 p1 1", "q2 0 p\u00a0two 2"])
    (tmp_path / "docs.tsv").write_text("p1\tone\np\u00a0two\ttwo\n")
    assert load_dataset(spec, base=tmp_path).judgements == {"q1": {"p1": 1.0}, "q2": {"p\u00a0two": 2.0}}


def test_byte_order_mark_is_stripped_in_every_text_format(tmp_path):
    # Before (qrels, TSV, YAML): the BOM became part of the first id, silently.
    (tmp_path / "qrels.txt").write_bytes(BOM + b"q1 0 p1 3\nq2 0 p2 2\n")
    (tmp_path / "topics.tsv").write_bytes(BOM + b"q1\tfirst\nq2\tsecond\n")
    (tmp_path / "docs.tsv").write_bytes(BOM + b"p1\tone\np2\ttwo\n")
    spec = {"format": "trec", "qrels": "qrels.txt", "queries": "topics.tsv", "corpus": "docs.tsv"}
    dataset = load_dataset(spec, base=tmp_path)
    assert list(dataset.queries) == ["q1", "q2"] and list(dataset.corpus) == ["p1", "p2"]
    assert dataset.judgements == {"q1": {"p1": 3.0}, "q2": {"p2": 2.0}}
    (tmp_path / "set.yaml").write_bytes(BOM + yaml.safe_dump({"corpus": "docs.json", "queries": QUERIES[:1]}).encode())
    (tmp_path / "docs.json").write_bytes(BOM + json.dumps(PASSAGES).encode())
    assert list(load_yaml_query_set(tmp_path / "set.yaml").corpus) == ["p1", "p2", "p3"]
    root = make_beir(tmp_path / "b")
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        (root / name).write_bytes(BOM + (root / name).read_bytes())
    beir = load_beir(root)
    assert list(beir.queries) == ["q1", "q2"] and next(iter(beir.corpus)) == "p1"
    assert beir.judgements["q1"] == {"p1": 3.0, "p2": 0.5}


@pytest.mark.parametrize("name", ["corpus.json", "corpus.jsonl"])
def test_json_nested_20000_deep_is_one_line(tmp_path, name):
    # Before: RecursionError.
    (tmp_path / name).write_text("[" * 20_000 + "]" * 20_000 + "\n")
    path = write_yaml(tmp_path / "set.yaml", {"corpus": name, "queries": QUERIES})
    message = raises(load_yaml_query_set, path)
    place = f"{tmp_path / name}:1" if name.endswith("jsonl") else f"{tmp_path / name}: line 1"
    assert message == f"{place}: invalid JSON: nested more than 500 levels deep (column 501); flatten the structure"


def test_query_set_alias_bomb_is_refused_fast(tmp_path):
    # Before: an 820-byte query set hung `run`.
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{b}: &{b} [*{a}, *{a}, *{a}, *{a}, *{a}, *{a}, *{a}, *{a}, *{a}]\n" for a, b in zip("abcdefgh", "bcdefghi")
    )
    path = tmp_path / "set.yaml"
    path.write_text(bomb + "corpus: [{id: p1, text: a}]\nqueries:\n  - {id: q1, text: x, judgements: {p1: 1}, tags: *i}\n")
    assert raises(load_yaml_query_set, path).startswith(f"{path}: line 6, column 8: invalid YAML: alias *e expands")


def test_query_set_over_the_size_limit(tmp_path, monkeypatch):
    path = query_set(tmp_path)
    monkeypatch.setattr("rag_eval._data.datasets.query_set.MAX_DOCUMENT_BYTES", 64)
    assert raises(load_yaml_query_set, path).startswith(f"{path}: is {path.stat().st_size} bytes, over the 64 bytes limit")


def test_query_set_schema_unknown_keys_with_hint(tmp_path):
    path = write_yaml(tmp_path / "set.yaml", {"corpus": [{"id": "p1", "txt": "a"}], "querys": QUERIES})
    assert problems_of_call(load_yaml_query_set, path) == [
        f"{path}: querys: unknown key; did you mean 'queries'? allowed: corpus, description, documents, name, queries",
        f"{path}: corpus[0](p1).text: required field is missing",
        f"{path}: corpus[0](p1).txt: unknown key; did you mean 'text'? allowed: id, metadata, text, title",
        f"{path}: queries: required field is missing",
    ]


def test_query_set_corpus_of_the_wrong_kind(tmp_path):
    path = write_yaml(tmp_path / "set.yaml", {"corpus": {"p1": "a"}, "queries": QUERIES})
    assert problems_of_call(load_yaml_query_set, path) == [f"{path}: corpus: Input should be a valid list (got dict)"]


def test_a_judged_id_with_a_newline_keeps_the_message_on_one_line(tmp_path):
    path = tmp_path / "set.yaml"
    path.write_text('corpus: [{id: d1, text: a}]\nqueries:\n  - {id: q1, text: x, judgements: {"a\\nb": 1, d1: 1}}\n')
    assert problems_of_call(load_yaml_query_set, path) == [
        (f"{path}: queries[0](q1).judgements['a\\nb']: an id holds the control character U+000A at position 2; "
        "ids are one line of text without tabs or control characters (got 'a\\nb')")
    ]


# ---- issue 20: ids a TREC file cannot hold, binary files, a missing collection -----------------------------


@pytest.mark.parametrize("where", ["corpus", "query", "judgement"])
def test_an_id_holding_a_space_is_refused_naming_the_file_and_the_id(tmp_path, where):
    """Before: 'd1 9' was accepted, and the .run file rag_eval wrote read back as doc 'd1' (nDCG 1.0 became 0.24)."""
    corpus = [dict(p) for p in PASSAGES]
    queries = [dict(q) for q in QUERIES]
    if where == "corpus":
        corpus[0]["id"] = "d1 9"
    elif where == "query":
        queries[0]["id"] = "q 1"
    else:
        queries[1]["judgements"] = {"p2 x": 1}
    path = query_set(tmp_path, corpus=corpus, queries=queries)
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    place, value = {"corpus": ("corpus[0](d1 9).id", "d1 9"), "query": ("queries[0](q 1).id", "q 1"),
                    "judgement": ("queries[1](q2).judgements['p2 x']", "p2 x")}[where]
    assert problems_of(excinfo)[0] == (
        f"{path}: {place}: an id holds a space at position {value.index(' ') + 1}; ids are written to TREC files, "
        "whose fields are separated by white space: write it without spaces (a documents folder writes the space of "
        f"a file name as %20) (got {value!r})"
    )


@pytest.mark.parametrize("name", ["corpus.jsonl", "docs.tsv"])
def test_a_corpus_file_id_holding_a_space_is_refused_naming_its_line(tmp_path, name):
    path = tmp_path / name
    if name.endswith(".jsonl"):
        path.write_text('{"_id": "p1", "text": "a"}\n{"_id": "d1 9", "text": "b"}\n')
    else:
        path.write_text("p1\ta\nd1 9\tb\n")
    with pytest.raises(DatasetError) as excinfo:
        load_corpus_file(path)
    assert str(excinfo.value).startswith(f"{path}:2: ")
    assert "an id holds a space at position 3" in str(excinfo.value) and "'d1 9'" in str(excinfo.value)


def test_a_passage_that_reads_as_a_chunk_of_another_is_refused_as_documents(tmp_path):
    """as_documents: true cuts passages into chunks <doc>#<start>-<end>: 'a#0-5' would name two things."""
    root = tmp_path / "beir"
    make_beir(root)
    with (root / "corpus.jsonl").open("a") as handle:
        handle.write(json.dumps({"_id": "p1#0-5", "text": "Pacific"}) + "\n")
    assert "p1#0-5" in load_dataset({"format": "beir", "path": str(root)}).corpus  # a passage dataset: no chunks
    with pytest.raises(DatasetError) as excinfo:
        load_dataset({"format": "beir", "path": str(root), "as_documents": True})
    assert str(excinfo.value) == (
        f"{root}: as_documents: document id 'p1#0-5' reads as the chunk [0, 5) of document 'p1' (a chunk id is "
        "<document>#<start>-<end>), so a ranking that names it could mean either; rename one of the two passages"
    )


@pytest.mark.parametrize("file", ["corpus.jsonl", "queries.jsonl"])
def test_a_2gb_file_of_nul_bytes_as_corpus_or_queries_is_refused_at_once(tmp_path, file):
    """Before: read whole (4 GB of memory, 10 s) before 'invalid JSON'. A sparse file: no disk used."""
    root = tmp_path / "beir"
    make_beir(root)
    (root / file).unlink()
    with (root / file).open("wb") as handle:
        handle.truncate(2 << 30)
    config = write_yaml(tmp_path / "run.yaml", {
        "dataset": {"format": "beir", "path": "beir"},
        "retrievers": [{"label": "s", "adapter": "static", "params": {"rankings": {}}}], "metrics": ["ndcg@10"],
    })
    with (tmp_path / "err.txt").open("w") as err:
        code, peak = run_with_peak(["validate", str(config)], tmp_path, subprocess.DEVNULL, err)
    assert code == 2
    what = "BEIR corpus file" if file == "corpus.jsonl" else "BEIR queries file"
    assert (tmp_path / "err.txt").read_text().splitlines() == [
        f"{root / file}: 64 KiB of NUL bytes from byte 0: not a text file (a binary file, or one allocated and never "
        f"written); expected a {what}",
        "rag-eval: 1 problem found",
    ]
    assert peak < 400, f"{peak:.0f} MiB: the file was read"


@pytest.mark.parametrize("fmt", ["beir", "cranfield", "chroma", "trec"])
def test_a_missing_collection_points_at_the_configs_header_comment(tmp_path, fmt):
    """Before: '.../qrels/test.tsv: no such file (folder ... does not exist)', with no word on where to get it."""
    missing = tmp_path / "shared" / "datasets" / "scifact"
    spec = {"format": fmt, "path": str(missing)}
    if fmt == "trec":
        spec = {"format": "trec", "qrels": str(missing / "q.qrel"), "queries": str(missing / "q.tsv"),
                "corpus": str(missing / "docs.tsv")}
    with pytest.raises(DatasetError) as excinfo:
        load_dataset(spec, base=tmp_path)
    message = str(excinfo.value)
    key = "dataset.qrels" if fmt == "trec" else "dataset.path"
    assert message.startswith(f"{missing / 'q.qrel' if fmt == 'trec' else missing}: no such ")
    assert message.endswith(
        "download the collection as the comment at the top of the config says (each config in configs/ names its "
        f"source), or point {key} at your copy (relative to the config, or absolute)"
    )


def test_a_query_set_of_nul_bytes_is_refused_before_it_is_read(tmp_path):
    """Whole-file formats (YAML, JSON) are read into memory: 64 KiB of NULs at the start stop it first."""
    path = tmp_path / "set.yaml"
    with path.open("wb") as handle:
        handle.truncate(300 << 20)  # under the 512 MiB limit of a YAML query set; sparse: no disk used
    with pytest.raises(DatasetError) as excinfo:
        load_dataset({"path": str(path)})
    assert str(excinfo.value) == (
        f"{path}: 64 KiB of NUL bytes from byte 0: not a text file (a binary file, or one allocated and never "
        "written); expected a YAML query set"
    )


@pytest.mark.parametrize("written, read, base, column", [("010", 8, "octal", 39), ("07", 7, "octal", 39),
                                                       ("1:0", 60, "base 60", 39)])
def test_a_grade_yaml_11_reads_otherwise_is_refused(tmp_path, written, read, base, column):
    """010 was the grade 8 (YAML 1.1 octal), 1:0 the grade 60 (base 60), without a word; a TREC qrels file reads
    010 as 10. Refused where the YAML is read (one rule for any number: a grade, a threshold, an id). 0x2 and 1_0
    read as the numbers they look like (2 and 10) and are kept."""
    path = tmp_path / "set.yaml"
    path.write_text(f"corpus: [{{id: a, text: x}}, {{id: b, text: y}}]\n"
                    f"queries:\n  - {{id: q1, text: x, judgements: {{a: {written}, b: 0x2}}}}\n")
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert str(excinfo.value) == (
        f"{path}: line 3, column {column}: invalid YAML: YAML 1.1 reads {written} as the number {read} ({base}); "
        f"write {read}, or quote it if it is text ('{written}')")
    path.write_text(path.read_text().replace(f"a: {written}", "a: 1_0"))
    assert load_yaml_query_set(path).judgements == {"q1": {"a": 10.0, "b": 2.0}}


def test_a_record_whose_id_and__id_give_one_id_is_read(tmp_path):
    (tmp_path / "corpus.jsonl").write_text('{"_id": "1", "id": 1, "text": "x"}\n{"_id": " b", "id": "b", "text": "y"}\n')
    (tmp_path / "queries.jsonl").write_text('{"_id": "q", "text": "x"}\n')
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("q\t1\t1\n")
    assert list(load_dataset({"path": str(tmp_path)}).corpus) == ["1", "b"]
