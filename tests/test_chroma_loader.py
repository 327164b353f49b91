"""The layout of Chroma's chunking evaluation (corpora/*.md + questions.csv with JSON evidence offsets).

The real set is checked against its SOURCE.md and against the raw files read here with
the csv and json modules; the problems are checked on small folders written per test.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest
import yaml
from conftest import REPO, shared_dataset

from rag_eval._core.errors import DatasetError
from rag_eval._core.spans import EvidenceSpan
from rag_eval._data.datasets import load_dataset
from rag_eval._data.datasets.chroma import load_chroma

# SOURCE.md: "Questions per document: wikitexts 144, pubmed 99, finance 97, state_of_the_union 76, chatlogs 56."
SOURCE_COUNTS = {"wikitexts": 144, "pubmed": 99, "finance": 97, "state_of_the_union": 76, "chatlogs": 56}


@pytest.fixture
def chroma() -> Path:
    return shared_dataset("chroma_chunking")


def test_the_real_set_counts_what_source_md_says(chroma):
    dataset = load_dataset({"format": "chroma", "path": str(chroma)})
    assert len(dataset.queries) == 472
    assert sum(len(spans) for spans in dataset.evidence.values()) == 790
    assert sorted(dataset.documents) == sorted(SOURCE_COUNTS)
    assert Counter(q.tags[0] for q in dataset.queries.values()) == SOURCE_COUNTS
    assert dataset.name == "chroma_chunking"
    assert dataset.notes == ()  # every question has references
    assert dataset.judged_query_ids == list(dataset.queries)
    summary = dataset.summary()
    assert (summary["documents"], summary["evidence_spans"], summary["queries_with_evidence"]) == (5, 790, 472)


def test_every_span_of_the_real_set_reproduces_its_content(chroma):
    dataset = load_chroma(chroma)
    with (chroma / "questions.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 472
    seen: Counter[str] = Counter()
    for row in rows:
        doc = row["corpus_id"]
        seen[doc] += 1
        qid = f"{doc}-{seen[doc]:03d}"  # the documented id rule, recomputed here
        assert dataset.queries[qid].text == row["question"]
        references = json.loads(row["references"])
        assert dataset.evidence[qid] == tuple(EvidenceSpan(doc, r["start_index"], r["end_index"]) for r in references)
        text = (chroma / "corpora" / f"{doc}.md").read_text(encoding="utf-8")
        assert dataset.documents[doc] == text
        for reference, span in zip(references, dataset.evidence[qid]):
            assert dataset.documents[span.doc][span.start:span.end] == reference["content"]
        assert dataset.judgements[qid] == {doc: 1.0}
    assert list(dataset.queries)[:2] == ["state_of_the_union-001", "state_of_the_union-002"]


def test_the_config_of_the_real_set_loads_it(chroma):
    config = yaml.safe_load((REPO / "configs" / "chroma_chunking.yaml").read_text(encoding="utf-8"))
    assert config["dataset"]["format"] == "chroma"
    if not (REPO / "configs" / config["dataset"]["path"]).is_dir():
        pytest.skip(f"the config's dataset path {config['dataset']['path']} is not beside this checkout (CI keeps it "
                    f"at {chroma})")
    dataset = load_dataset(config["dataset"], base=REPO / "configs")
    assert len(dataset.queries) == 472
    # The chunkers the retrievers read are defined in the config.
    assert {r["chunker"] for r in config["retrievers"]} <= set(config["chunking"])


def test_the_format_is_inferred_from_the_layout(chroma):
    assert load_dataset({"path": str(chroma)}).fingerprint == load_chroma(chroma).fingerprint


# ---- small folders: the layout and every problem ---------------------------------------------------------

# "Café 🍮 au lait. 東京は大きい。" -- 東京 at 16-18 (code points).
CAFE = "Café 🍮 au lait. 東京は大きい。"
PLAIN = "one two three"


def make_folder(root: Path, rows: list[list[str]], documents: dict[str, str] | None = None) -> Path:
    (root / "corpora").mkdir(parents=True)
    for name, text in (documents or {"cafe": CAFE, "plain": PLAIN}).items():
        (root / "corpora" / f"{name}.md").write_text(text, encoding="utf-8")
    with (root / "questions.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["question", "references", "corpus_id"])
        writer.writerows(rows)
    return root


def refs(*items: tuple[str, int, int]) -> str:
    return json.dumps([{"content": c, "start_index": s, "end_index": e} for c, s, e in items], ensure_ascii=False)


def test_a_small_folder_with_unicode(tmp_path):
    root = make_folder(tmp_path / "set", [
        ["Where?", refs(("東京", 16, 18)), "cafe"],
        ["Multi-line\nquestion?", refs(("two", 4, 7), ("one", 0, 3)), "plain"],
        ["Which café?", refs(("Café", 0, 4)), "cafe"],
        ["Unanswered?", "[]", "plain"],
    ])
    dataset = load_chroma(root)
    assert list(dataset.queries) == ["cafe-001", "plain-001", "cafe-002", "plain-002"]
    assert dataset.queries["plain-001"].text == "Multi-line\nquestion?"
    assert dataset.queries["plain-001"].tags == ("plain",)
    assert dataset.evidence == {
        "cafe-001": (EvidenceSpan("cafe", 16, 18),),
        "plain-001": (EvidenceSpan("plain", 4, 7), EvidenceSpan("plain", 0, 3)),
        "cafe-002": (EvidenceSpan("cafe", 0, 4),),
    }
    assert dataset.judgements == {"cafe-001": {"cafe": 1.0}, "plain-001": {"plain": 1.0}, "cafe-002": {"cafe": 1.0}}
    assert dataset.unjudged_query_ids == ["plain-002"]
    assert dataset.notes == ("1 question(s) of questions.csv have no references and cannot be scored: "
                             "'plain-002' (row 4)",)
    assert dataset.corpus == {"cafe": {"text": CAFE, "title": ""}, "plain": {"text": PLAIN, "title": ""}}


def test_every_reference_problem_names_its_line_and_row(tmp_path):
    root = make_folder(tmp_path / "set", [
        ["Fine", refs(("東京", 16, 18)), "cafe"],  # line 2
        ["Wrong\ncontent", refs(("東京", 15, 17)), "cafe"],  # lines 3-4
        ["Past the end", refs(("x", 10, 14)), "plain"],  # line 5
        ["Typo", refs(("one", 0, 3)), "plian"],  # line 6: no id (ids count a document's questions)
        ["Reversed", refs(("", 5, 5)), "plain"],  # line 7
        ["Bad JSON", "[{", "plain"],  # line 8
        ["Not offsets", json.dumps([{"content": "one", "start_index": "0", "end_index": 3}]), "plain"],  # line 9
        ["", refs(("one", 0, 3)), "plain"],  # line 10
        ["Missing keys", json.dumps([{"content": "one"}]), "plain"],  # line 11
        ["No content", json.dumps([{"start_index": 0, "end_index": 3}]), "plain"],  # line 12
    ])
    with pytest.raises(DatasetError) as excinfo:
        load_chroma(root)
    csv_path = root / "questions.csv"
    assert list(excinfo.value.problems) == [
        f"{csv_path}:3: row 2 (query 'cafe-002'): references[0]: content '東京' is not the text of document 'cafe' at "
        "[15, 17), which is ' 東'; fix start_index and end_index (code points, end exclusive)",
        f"{csv_path}:5: row 3 (query 'plain-001'): references[0]: start_index/end_index in document 'plain': "
        "end 14 is past the end of the document (13 characters)",
        f"{csv_path}:6: row 4: corpus_id 'plian' names no document corpora/plian.md; did you mean 'plain'? "
        "documents: cafe, plain",
        f"{csv_path}:7: row 5 (query 'plain-002'): references[0]: start_index/end_index in document 'plain': "
        "end 5 is not after start 5; a span is [start, end) with end > start",
        f"{csv_path}:8: row 6 (query 'plain-003'): references: invalid JSON (Expecting property name enclosed in "
        "double quotes); write a JSON list of {\"content\", \"start_index\", \"end_index\"}",
        f"{csv_path}:9: row 7 (query 'plain-004'): references[0]: start_index/end_index in document 'plain': "
        "start '0' is not an integer offset",
        f"{csv_path}:10: row 8 (query 'plain-005'): the question is empty",
        f"{csv_path}:11: row 9 (query 'plain-006'): references[0]: 'start_index' and 'end_index' are missing; "
        "each reference is {\"content\", \"start_index\", \"end_index\"}",
        f"{csv_path}:12: row 10 (query 'plain-007'): references[0]: 'content' is missing; "
        "each reference is {\"content\", \"start_index\", \"end_index\"}",
    ]


def test_missing_parts_of_the_layout(tmp_path):
    with pytest.raises(DatasetError) as excinfo:
        load_chroma(tmp_path)
    assert str(excinfo.value) == (
        f"{tmp_path / 'corpora'}: no such folder; a chroma dataset holds corpora/<document>.md and questions.csv"
    )
    (tmp_path / "corpora").mkdir()
    (tmp_path / "corpora" / "a.md").write_text("text", encoding="utf-8")
    with pytest.raises(DatasetError) as excinfo:
        load_chroma(tmp_path)
    assert str(excinfo.value) == f"{tmp_path / 'questions.csv'}: no such file; expected a questions file"
    (tmp_path / "questions.csv").write_text("question,corpus_id\nq,a\n", encoding="utf-8")
    with pytest.raises(DatasetError) as excinfo:
        load_chroma(tmp_path)
    assert str(excinfo.value) == (
        f"{tmp_path / 'questions.csv'}:1: the header lacks column references; a chroma questions file has columns "
        "question, references, corpus_id"
    )


def test_path_dot_names_the_dataset_after_the_folder(tmp_path, monkeypatch):
    root = make_folder(tmp_path / "chroma-set", [["Where?", refs(("東京", 16, 18)), "cafe"]])
    monkeypatch.chdir(root)
    # Path(".").name is "": the name is the folder's own, as for any other path to it
    assert load_chroma(Path(".")).name == "chroma-set"
    assert load_dataset({"format": "chroma", "path": "."}, base=Path(".")).name == "chroma-set"
    monkeypatch.chdir(root / "corpora")
    assert load_chroma(Path("..")).name == "chroma-set"


# ---- issue 20: ids made from file names ---------------------------------------------------------------------


def test_a_space_in_a_document_file_name_is_percent_20_in_its_id_and_in_query_ids(tmp_path):
    """Before: 'state of union' (and the query ids 'state of union-001') held spaces a .run file cannot hold."""
    root = make_folder(tmp_path / "set", [["Which?", refs(("two", 4, 7)), "state of union"]],
                       documents={"state of union": PLAIN})
    dataset = load_chroma(root)
    assert list(dataset.documents) == ["state%20of%20union"]
    assert list(dataset.queries) == ["state%20of%20union-001"]
    assert dataset.evidence == {"state%20of%20union-001": (EvidenceSpan("state%20of%20union", 4, 7),)}


def test_a_document_whose_id_reads_as_a_chunk_of_another_is_refused(tmp_path):
    root = make_folder(tmp_path / "set", [["Which?", refs(("two", 4, 7)), "plain"]],
                       documents={"plain": PLAIN, "plain#0-3": "one"})
    with pytest.raises(DatasetError) as excinfo:
        load_chroma(root)
    assert list(excinfo.value.problems) == [
        f"{root / 'corpora' / 'plain#0-3.md'}: document id 'plain#0-3' reads as the chunk [0, 3) of document 'plain' "
        "(a chunk id is <document>#<start>-<end>), so a ranking that names it could mean either; rename one of the "
        "two files"
    ]
