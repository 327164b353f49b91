"""Query sets, judgements and corpora: every format, every check, the fingerprint.

Expected values are read off the files written in each test (or, for the shared
collections, counted independently from the raw files or taken from their
SOURCE.md), never from rag_eval's own output.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from conftest import REPO, shared_dataset
from rag_eval.cli import main
from rag_eval.dataset import Dataset, load_beir, load_cranfield, load_dataset, load_trec, load_yaml_query_set
from rag_eval.errors import DatasetError, RagEvalError

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
    assert problems_of(excinfo) == [f"{corpus}: corpus[2]: passage 'd2' has no text", f"{corpus}: corpus[3]: passage 'd3' has no text"]


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
    assert problems_of(excinfo) == [f"{path}: query 'q1': duplicate query id"]


def test_duplicate_passage_id(tmp_path):
    corpus = PASSAGES + [{"id": "p2", "text": "another text"}]
    path = query_set(tmp_path, corpus=corpus)
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == [f"{path}: corpus[4]: duplicate passage id 'p2'"]


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
    assert problems_of(excinfo) == [f"{path}: query 'q1' judges doc 'p404', which is not in the corpus {path} (corpus)"]


def test_judgement_of_a_doc_not_in_a_corpus_file(tmp_path):
    _write_corpus(tmp_path / "corpus.jsonl", "jsonl")
    path = write_yaml(tmp_path / "set.yaml", {"corpus": "corpus.jsonl", "queries": [{"id": "q1", "text": "x", "judgements": {"d9": 1}}]})
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert str(excinfo.value) == f"{path}: query 'q1' judges doc 'd9', which is not in the corpus {tmp_path / 'corpus.jsonl'}"


def test_judgement_of_a_doc_not_in_a_trec_corpus(tmp_path):
    spec = make_trec(tmp_path, ["q1 0 p1 1", "q2 0 zz 1"])
    with pytest.raises(DatasetError) as excinfo:
        load_dataset(spec, base=tmp_path)
    assert str(excinfo.value) == (
        f"{tmp_path / 'qrels.txt'}: query 'q2' judges doc 'zz', which is not in the corpus {tmp_path / 'docs.tsv'}"
    )


def test_non_numeric_grade(tmp_path):
    queries = [{"id": "q1", "text": "x", "judgements": {"p1": "high"}}, {"id": "q2", "text": "y", "judgements": {"p2": 1}}]
    path = query_set(tmp_path, queries=queries)
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == [f"{path}: query 'q1': doc 'p1': grade 'high' is not a number"]


@pytest.mark.parametrize("bad", [".nan", ".inf", "true", "null"])
def test_grade_must_be_a_finite_number(tmp_path, bad):
    path = tmp_path / "set.yaml"
    path.write_text(
        "corpus: [{id: p1, text: a}, {id: p2, text: b}]\n"
        f"queries:\n  - {{id: q1, text: x, judgements: {{p1: {bad}, p2: 1}}}}\n"
    )
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo)[0].startswith(f"{path}: query 'q1': doc 'p1': grade ")


def test_non_numeric_grade_in_trec_qrels_names_line(tmp_path):
    spec = make_trec(tmp_path, ["q1 0 p1 1", "q2 0 p2 high"])
    with pytest.raises(DatasetError) as excinfo:
        load_dataset(spec, base=tmp_path)
    assert str(excinfo.value) == f"{tmp_path / 'qrels.txt'}:2: query 'q2': doc 'p2': grade 'high' is not a number"


@pytest.mark.parametrize("text", ["", "   ", None])
def test_empty_query_text(tmp_path, text):
    queries = [{"id": "q1", "text": text, "judgements": {"p1": 1}}, QUERIES[1]]
    path = query_set(tmp_path, queries=queries)
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == [f"{path}: query 'q1': empty query text; give each query a 'text'"]


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
        f"{path}: corpus[3]: duplicate passage id 'p1'",
        f"{path}: query 'q1': duplicate query id",
        f"{path}: query 'q2': empty query text; give each query a 'text'",
        f"{path}: query 'q3': doc 'p2': grade 'very' is not a number",
        f"{path}: query 'q1' judges doc 'ghost', which is not in the corpus {path} (corpus)",
    ]


def test_every_problem_is_collected(tmp_path):
    path = query_set(tmp_path, corpus=ALL_PROBLEMS_CORPUS, queries=ALL_PROBLEMS_QUERIES)
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == expected_all_problems(path)
    # The message names the first problem and counts the others.
    assert str(excinfo.value).startswith(f"{path}: corpus[3]: duplicate passage id 'p1' (and 4 more problems")


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
        f"{path}: query 'q1': empty query text; give each query a 'text'",
        f"{path}: query 'q1': duplicate query id",
        f"{path}: no query has any judgement; judge at least one passage per query",
    ]


def test_missing_query_set_file(tmp_path):
    with pytest.raises(DatasetError) as excinfo:
        load_dataset({"path": "nowhere.yaml"}, base=tmp_path)
    assert str(excinfo.value) == f"{tmp_path / 'nowhere.yaml'}: no such file (query set)"


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
    code = "import sys; from pathlib import Path; from rag_eval.dataset import load_yaml_query_set; print(load_yaml_query_set(Path(sys.argv[1])).fingerprint)"
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60, cwd=REPO,
                         env={"PYTHONHASHSEED": "123", "PATH": ""})
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
