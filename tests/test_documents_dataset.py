"""Datasets with documents: documents inline, in JSONL or a folder; evidence spans; every span problem; the fingerprint.

Offsets are counted by hand in the texts below (code points, not bytes: "É" is 2
bytes in UTF-8, "🍮" 4, "東" 3), never taken from rag_eval's own output.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from rag_eval._core.errors import DatasetError
from rag_eval._core.spans import EvidenceSpan
from rag_eval._data.datasets import Dataset, load_dataset, load_yaml_query_set
from rag_eval._data.datasets.evidence import document_grades, occurrences, resolve_quote
from rag_eval.cli import main

REPO = Path(__file__).resolve().parents[1]

# "Émile 🍮 ate crème brûlée in 東京." -- counted: Émile 0-5, space 5, 🍮 6, space 7, ate 8-11,
# space 11, crème 12-17, space 17, brûlée 18-24, space 24, in 25-27, space 27, 東京 28-30, "." 30; 31 in all.
MENU = "Émile 🍮 ate crème brûlée in 東京."
# "la" at 0, 3 and 6; "The end." at 10-18.
NOTES = "la la la. The end."
DOCUMENTS = [
    {"id": "menu.md", "title": "Menu", "text": MENU},
    {"id": "notes.txt", "text": NOTES},
]
QUERIES = [
    {
        "id": "q-dessert",
        "text": "What did Émile eat?",
        "evidence": [
            {"doc": "menu.md", "quote": "crème brûlée", "grade": 2},
            {"doc": "menu.md", "start": 28, "end": 30},
        ],
    },
    {
        "id": "q-end",
        "text": "How does it end?",
        "judgements": {"notes.txt": 3, "menu.md": 0},
        "evidence": [{"doc": "notes.txt", "start": 10, "end": 18}],
    },
    {"id": "q-open", "text": "Not judged yet"},
]


def write_yaml(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def document_set(tmp_path: Path, documents=None, queries=None, file="set.yaml", **extra) -> Path:
    data = {"name": "menus", "documents": DOCUMENTS if documents is None else documents,
            "queries": QUERIES if queries is None else queries, **extra}
    return write_yaml(tmp_path / file, data)


def problems_of(excinfo) -> list[str]:
    return list(excinfo.value.problems)


def test_the_offsets_counted_by_hand_are_code_points():
    assert len(MENU) == 31 and MENU[12:24] == "crème brûlée" and MENU[28:30] == "東京"
    # Byte offsets would differ: "crème brûlée" is bytes 16-31 of the UTF-8 text (42 bytes).
    assert len(MENU.encode("utf-8")) == 42 and MENU.encode("utf-8").find("crème brûlée".encode()) == 16
    assert NOTES[10:18] == "The end."


# ---- inline documents, evidence, document grades ------------------------------------------------------


def test_inline_documents_with_evidence_and_document_judgements(tmp_path):
    dataset = load_yaml_query_set(document_set(tmp_path))
    assert dataset.has_documents
    assert dataset.documents == {"menu.md": MENU, "notes.txt": NOTES}
    # The quote is resolved to its code-point offsets: 12-24, not the byte offsets 16-31.
    assert dataset.evidence == {
        "q-dessert": (EvidenceSpan("menu.md", 12, 24, 2.0), EvidenceSpan("menu.md", 28, 30, 1.0)),
        "q-end": (EvidenceSpan("notes.txt", 10, 18, 1.0),),
    }
    assert dataset.document_judgements == {"q-end": {"notes.txt": 3.0, "menu.md": 0.0}}
    # Document grades: explicit (3, and 0 for a document without evidence), else the highest evidence grade (2).
    assert dataset.judgements == {"q-dessert": {"menu.md": 2.0}, "q-end": {"notes.txt": 3.0, "menu.md": 0.0}}
    assert dataset.corpus == {"menu.md": {"text": MENU, "title": "Menu"}, "notes.txt": {"text": NOTES, "title": ""}}
    assert dataset.judged_query_ids == ["q-dessert", "q-end"]
    assert dataset.unjudged_query_ids == ["q-open"]
    summary = dataset.summary()
    assert {k: summary[k] for k in ("queries", "judged_queries", "passages", "judgements", "documents",
                                    "document_characters", "evidence_spans", "queries_with_evidence")} == {
        "queries": 3, "judged_queries": 2, "passages": 2, "judgements": 3, "documents": 2,
        "document_characters": 49, "evidence_spans": 3, "queries_with_evidence": 2,
    }


def test_a_passage_dataset_has_no_documents(tmp_path):
    dataset = load_dataset({"path": str(REPO / "datasets" / "ocean_facts.yaml")})
    assert not dataset.has_documents
    assert (dataset.documents, dataset.evidence, dataset.document_judgements) == ({}, {}, {})
    assert "documents" not in dataset.summary() and "evidence_spans" not in dataset.summary()


def test_document_grades_take_the_highest_evidence_grade_unless_judged():
    evidence = {"q": [EvidenceSpan("a", 0, 5, 1.0), EvidenceSpan("a", 9, 12, 2.5), EvidenceSpan("b", 0, 1, 0.5)]}
    grades, conflicts = document_grades(evidence, {"q": {"b": 4.0, "c": 0.0}, "r": {"a": 1.0}})
    assert grades == {"q": {"a": 2.5, "b": 4.0, "c": 0.0}, "r": {"a": 1.0}}
    assert conflicts == []
    grades, conflicts = document_grades(evidence, {"q": {"a": 0.0, "b": -1.0}})
    assert conflicts == [("q", "a", 0.0), ("q", "b", -1.0)]


def test_quote_matching_counts_overlapping_occurrences():
    assert occurrences("aaa", "aa") == (2, [0, 1])
    assert occurrences(NOTES, "la") == (3, [0, 3])
    assert occurrences(MENU, "東京") == (1, [28])
    # No normalisation: a decomposed é (e + U+0301) is not the precomposed é of the text.
    assert occurrences(MENU, "cre\u0301me") == (0, [])


def test_name_from_the_config_keeps_documents_and_evidence(tmp_path):
    document_set(tmp_path)
    dataset = load_dataset({"path": "set.yaml", "name": "renamed"}, base=tmp_path)
    assert dataset.name == "renamed"
    assert dataset.documents["menu.md"] == MENU
    assert dataset.evidence["q-end"] == (EvidenceSpan("notes.txt", 10, 18, 1.0),)


# ---- documents from a JSONL file or a folder ---------------------------------------------------------


def test_documents_from_a_jsonl_file(tmp_path):
    lines = [{"_id": "menu.md", "title": "Menu", "text": MENU}, {"id": "notes.txt", "text": NOTES}]
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines),
                                         encoding="utf-8")
    folder_set = load_yaml_query_set(document_set(tmp_path, documents="docs.jsonl"))
    inline = load_yaml_query_set(document_set(tmp_path / "inline"))
    assert folder_set.documents == inline.documents
    assert folder_set.corpus == inline.corpus
    assert folder_set.evidence == inline.evidence
    assert folder_set.fingerprint == inline.fingerprint


def test_documents_from_a_folder_ids_are_relative_posix_paths(tmp_path):
    docs = tmp_path / "docs"
    (docs / "guides" / "deep").mkdir(parents=True)
    (docs / "menu.md").write_text(MENU, encoding="utf-8")
    (docs / "guides" / "notes.txt").write_text(NOTES, encoding="utf-8")
    # A byte-order mark is not text: offsets count from the character after it.
    (docs / "guides" / "deep" / "bom.md").write_bytes(b"\xef\xbb\xbf" + "東京 tower".encode())
    # Line endings are kept as in the file: "\r\n" is two characters.
    (docs / "crlf.txt").write_bytes(b"one\r\ntwo")
    (docs / "image.png").write_bytes(b"\x89PNG")  # not a document
    (docs / ".hidden.md").write_text("skipped", encoding="utf-8")
    (docs / ".git").mkdir()
    (docs / ".git" / "HEAD.md").write_text("skipped", encoding="utf-8")
    queries = [
        {"id": "q1", "text": "tower?", "evidence": [{"doc": "guides/deep/bom.md", "quote": "tower"}]},
        {"id": "q2", "text": "two?", "evidence": [{"doc": "crlf.txt", "quote": "two"}]},
    ]
    dataset = load_yaml_query_set(document_set(tmp_path, documents="docs", queries=queries))
    assert list(dataset.documents) == ["crlf.txt", "guides/deep/bom.md", "guides/notes.txt", "menu.md"]
    assert dataset.documents["guides/deep/bom.md"] == "東京 tower"
    assert dataset.documents["crlf.txt"] == "one\r\ntwo"
    assert dataset.evidence == {"q1": (EvidenceSpan("guides/deep/bom.md", 3, 8),), "q2": (EvidenceSpan("crlf.txt", 5, 8),)}
    assert dataset.corpus["menu.md"] == {"text": MENU, "title": ""}


def test_a_folder_and_inline_documents_with_the_same_content_share_the_fingerprint(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "menu.md").write_text(MENU, encoding="utf-8")
    (tmp_path / "docs" / "notes.txt").write_text(NOTES, encoding="utf-8")
    untitled = [{"id": "menu.md", "text": MENU}, {"id": "notes.txt", "text": NOTES}]
    from_folder = load_yaml_query_set(document_set(tmp_path, documents="docs"))
    inline = load_yaml_query_set(document_set(tmp_path / "inline", documents=untitled))
    assert from_folder.fingerprint == inline.fingerprint


# ---- every problem, with its place -------------------------------------------------------------------


PROBLEM_DOCUMENTS = DOCUMENTS + [{"id": "notes.txt", "text": "again"}]
PROBLEM_EVIDENCE = [
    {"doc": "menu.md", "start": 12, "end": 40},  # 0: past the end
    {"doc": "menu.md", "start": -1, "end": 5},  # 1: negative
    {"doc": "menu.md", "start": 5, "end": 5},  # 2: end <= start
    {"doc": "menu.md", "start": 3.0, "end": 5},  # 3: not an integer
    {"doc": "menu.md", "start": "3", "end": 5},  # 4: text, not an integer
    {"doc": "menu.md", "quote": "東京 "},  # 5: found 0 times (the text has "東京.")
    {"doc": "notes.txt", "quote": "la"},  # 6: found 3 times
    {"doc": "menu.md", "quote": "cre\u0301me"},  # 7: decomposed accent: 0 times, no normalisation
    {"doc": "menu.md", "quote": "東京", "grade": 0},  # 8: grade 0
    {"doc": "menu.md", "quote": "東京", "grade": -1},  # 9: negative grade
    {"doc": "menu.md", "quote": "東京", "start": 28, "end": 30},  # 10: both
    {"doc": "Menu.md", "start": 0, "end": 1},  # 11: unknown document, by case
    {"doc": "recipes/menu.md", "start": 0, "end": 1},  # 12: unknown document, same file name
    {"doc": "menu.md"},  # 13: neither quote nor offsets
    {"doc": "menu.md", "start": 3},  # 14: end missing
    {"doc": "menu.md", "quote": ""},  # 15: empty quote
    {"doc": "menu.md", "quote": "Émile", "grade": 2},  # 16: valid, in a document judged 0
]


def expected_problems(path: Path) -> list[str]:
    e = f"{path}: queries[0](q1).evidence"
    return [
        f"{path}: documents[2](notes.txt).id: duplicate document id 'notes.txt' (first at documents[1])",
        f"{path}: queries[0](q1).judgements.nots.txt: document 'nots.txt' is not in the documents of {path}; "
        "did you mean 'notes.txt'?",
        f"{e}[0]: document 'menu.md': end 40 is past the end of the document (31 characters); "
        "offsets count code points of the document as loaded, end exclusive",
        f"{e}[1]: document 'menu.md': start -1 is negative; offsets count characters from 0",
        f"{e}[2]: document 'menu.md': end 5 is not after start 5; a span is [start, end) with end > start",
        f"{e}[3]: document 'menu.md': start 3.0 is not an integer offset; "
        "write offsets as whole numbers (code points from the start of the document)",
        f"{e}[4]: document 'menu.md': start '3' is not an integer offset; "
        "write offsets as whole numbers (code points from the start of the document)",
        f"{e}[5]: quote '東京 ' occurs 0 times in document 'menu.md'; quotes match exactly (same characters, case, "
        "spaces and line breaks, no normalisation): copy it from the document; with runs of white space matching any "
        "run it occurs once, at [28, 30) '東京': give this evidence item match: whitespace, or copy the document's "
        "spaces and line breaks",
        f"{e}[6]: quote 'la' occurs 3 times in document 'notes.txt' (first at [0, 2) and [3, 5)); "
        "lengthen the quote until it occurs once, or give start and end",
        f"{e}[7]: quote 'cre\u0301me' occurs 0 times in document 'menu.md'; quotes match exactly (same characters, case, "
        "spaces and line breaks, no normalisation): copy it from the document; nearest passage: [12, 18) 'crème ', "
        "which matches the quote's first 2 characters; then the quote has 'e\u0301me' and the document 'ème brûlée i'",
        f"{e}[8]: grade 0: evidence grades are > 0 (default 1); to say that a document does not answer the query, "
        "give it a document judgement of 0 instead",
        f"{e}[9]: grade -1: evidence grades are > 0 (default 1); to say that a document does not answer the query, "
        "give it a document judgement of 0 instead",
        f"{e}[10]: give either a quote or start and end, not both",
        f"{e}[11]: document 'Menu.md' is not in the documents of {path}; did you mean 'menu.md'?",
        f"{e}[12]: document 'recipes/menu.md' is not in the documents of {path}; did you mean 'menu.md'?",
        f"{e}[13]: give start and end (code-point offsets into the document) or a quote",
        f"{e}[14]: end is missing; a span needs both start and end (end exclusive)",
        f"{e}[15]: quote is empty; copy the evidence text from the document, or give start and end",
        f"{path}: queries[0](q1).judgements.menu.md: document 'menu.md' is judged 0 (not relevant) but holds evidence "
        "for this query (evidence[16]); remove the judgement or the evidence",
    ]


def test_every_span_problem_is_reported_with_its_place(tmp_path):
    queries = [{"id": "q1", "text": "x", "judgements": {"menu.md": 0, "nots.txt": 1}, "evidence": PROBLEM_EVIDENCE}]
    path = document_set(tmp_path, documents=PROBLEM_DOCUMENTS, queries=queries)
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == expected_problems(path)
    assert str(excinfo.value) == (
        f"{path}: documents[2](notes.txt).id: duplicate document id 'notes.txt' (first at documents[1]) "
        "(and 18 more; `rag-eval validate` lists all)"
    )


def test_validate_lists_every_span_problem(tmp_path, capsys):
    queries = [{"id": "q1", "text": "x", "judgements": {"menu.md": 0, "nots.txt": 1}, "evidence": PROBLEM_EVIDENCE}]
    path = document_set(tmp_path / "data", documents=PROBLEM_DOCUMENTS, queries=queries)
    config = write_yaml(tmp_path / "run.yaml", {
        "dataset": {"path": "data/set.yaml"},
        "retrievers": [{"label": "s", "adapter": "static", "params": {"rankings": {}}}],
        "metrics": ["ndcg@10"],
    })
    assert main(["validate", str(config)]) == 2
    assert capsys.readouterr().err.splitlines() == expected_problems(path) + ["rag-eval: 19 problems found"]


def test_an_excluded_document_holding_evidence_is_refused(tmp_path):
    queries = [{"id": "q1", "text": "x", "judgements": {"notes.txt": -1},
                "evidence": [{"doc": "notes.txt", "quote": "The end."}, {"doc": "notes.txt", "start": 0, "end": 2}]}]
    path = document_set(tmp_path, queries=queries)
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == [
        f"{path}: queries[0](q1).judgements.notes.txt: document 'notes.txt' is judged -1 (excluded) but holds evidence "
        "for this query (evidence[0], evidence[1]); remove the judgement or the evidence"
    ]


def test_a_quote_found_many_times_says_the_count(tmp_path):
    queries = [{"id": "q1", "text": "x", "evidence": [{"doc": "big.txt", "quote": "ab"}]}]
    path = document_set(tmp_path, documents=[{"id": "big.txt", "text": "xab" * 1500}], queries=queries)
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == [
        f"{path}: queries[0](q1).evidence[0]: quote 'ab' occurs 1,500 times in document 'big.txt' (first at [1, 3) "
        "and [4, 6)); lengthen the quote until it occurs once, or give start and end"
    ]


def test_corpus_and_documents_are_exclusive(tmp_path):
    path = document_set(tmp_path, corpus=[{"id": "p1", "text": "x"}])
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == [
        f"{path}: give either 'corpus' (passages judged by id) or 'documents' (long texts judged by document and "
        "evidence), not both"
    ]


def test_a_query_set_needs_corpus_or_documents(tmp_path):
    path = write_yaml(tmp_path / "set.yaml", {"queries": [{"id": "q1", "text": "x", "judgements": {"a": 1}}]})
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == [
        f"{path}: a query set needs 'corpus' (passages judged by id) or 'documents' (long texts judged by document "
        "and evidence)"
    ]


def test_evidence_in_a_passage_query_set_is_refused(tmp_path):
    data = {"corpus": [{"id": "p1", "text": "the text"}],
            "queries": [{"id": "q1", "text": "x", "judgements": {"p1": 1}, "evidence": [{"doc": "p1", "quote": "text"}]}]}
    path = write_yaml(tmp_path / "set.yaml", data)
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == [
        f"{path}: queries[0](q1).evidence: evidence spans need documents; give the query set 'documents' instead of "
        "'corpus' (passages have no offsets to point into)"
    ]


def test_no_judgement_and_no_evidence(tmp_path):
    path = document_set(tmp_path, queries=[{"id": "q1", "text": "x"}])
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == [
        f"{path}: no query has any judgement or evidence; give each query evidence spans or document judgements"
    ]


def test_problems_of_a_jsonl_documents_file(tmp_path):
    lines = [json.dumps({"id": "a", "text": "x"}), json.dumps({"id": "a", "text": "y"}), json.dumps({"id": "b"}),
             json.dumps({"id": "n", "text": None}), json.dumps(["not", "a", "record"]),
             json.dumps({"id": "c", "text": "z", "title": 3})]
    (tmp_path / "docs.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    path = document_set(tmp_path, documents="docs.jsonl", queries=[{"id": "q1", "text": "x", "judgements": {"a": 1}}])
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    docs = tmp_path / "docs.jsonl"
    assert problems_of(excinfo) == [
        f"{docs}:2: duplicate document id 'a' (first on line 1)",
        f"{docs}:3: document 'b': 'text' is missing; give each line {{\"id\", \"text\"}} (and an optional \"title\")",
        f"{docs}:4: document 'n': 'text' must be text, got None",
        f"{docs}:5: expected a document {{\"id\", \"text\", \"title\"}}, got list",
        f"{docs}:6: document 'c': 'title' must be text, got 3",
    ]


def test_problems_of_a_documents_folder(tmp_path):
    (tmp_path / "empty").mkdir()
    path = document_set(tmp_path, documents="empty", queries=[{"id": "q1", "text": "x", "judgements": {"a": 1}}])
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == [
        f"{tmp_path / 'empty'}: no .txt or .md files in this folder (or its subfolders); put one document per file"
    ]
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "latin1.txt").write_bytes("café".encode("latin-1"))
    (tmp_path / "bad" / "ok.md").write_text("fine", encoding="utf-8")
    path = document_set(tmp_path, documents="bad", queries=[{"id": "q1", "text": "x", "judgements": {"ok.md": 1}}])
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == [
        f"{tmp_path / 'bad' / 'latin1.txt'}: line 1, column 4: not UTF-8 text (byte 0xe9: unexpected end of data); "
        "save the file as UTF-8"
    ]


def test_a_documents_path_that_is_neither_jsonl_nor_a_folder(tmp_path):
    (tmp_path / "docs.csv").write_text("id,text\n", encoding="utf-8")
    queries = [{"id": "q1", "text": "x", "judgements": {"a": 1}}]
    for name, message in [
        ("docs.csv", "documents are a .jsonl file (one {\"id\", \"text\", \"title\"} per line) or a folder of .txt/.md "
                     "files; rename the file or point at its folder"),
        ("missing", "no such file or folder; documents are a .jsonl file or a folder of .txt/.md files"),
    ]:
        path = document_set(tmp_path, documents=name, queries=queries)
        with pytest.raises(DatasetError) as excinfo:
            load_yaml_query_set(path)
        assert str(excinfo.value) == f"{tmp_path / name}: {message}"


# ---- the fingerprint ---------------------------------------------------------------------------------


def test_passage_fingerprints_are_unchanged():
    # The value before datasets held documents; committed results files (reports/ocean-facts) carry it.
    dataset = load_dataset({"path": str(REPO / "datasets" / "ocean_facts.yaml")})
    assert dataset.fingerprint == "7c74143fce3a6d79"
    stored = json.loads((REPO / "reports" / "ocean-facts" / "bm25.json").read_text(encoding="utf-8"))
    assert stored["dataset"]["fingerprint"] == "7c74143fce3a6d79"


def test_document_fingerprint_is_stable_and_sensitive(tmp_path):
    base = load_yaml_query_set(document_set(tmp_path / "base")).fingerprint
    assert load_yaml_query_set(document_set(tmp_path / "base")).fingerprint == base

    def variant(name: str, documents=None, queries=None) -> str:
        return load_yaml_query_set(document_set(tmp_path / name, documents=documents, queries=queries)).fingerprint

    def edited(change) -> list:
        queries = json.loads(json.dumps(QUERIES))
        change(queries)
        return queries

    # Same content: evidence in another order, a quote or its offsets.
    assert variant("order", queries=edited(lambda q: q[0]["evidence"].reverse())) == base
    as_offsets = edited(lambda q: q[0]["evidence"][0].update({"quote": None}))
    as_offsets[0]["evidence"][0] = {"doc": "menu.md", "start": 12, "end": 24, "grade": 2}
    assert variant("offsets", queries=as_offsets) == base
    # Any change of the evidence or the documents: a new fingerprint.
    changed = {
        "one offset": variant("offset", queries=edited(lambda q: q[1]["evidence"][0].update({"end": 17}))),
        "evidence grade": variant("grade", queries=edited(lambda q: q[0]["evidence"][1].update({"grade": 3}))),
        "document text": variant("text", documents=[DOCUMENTS[0], {"id": "notes.txt", "text": NOTES + " "}]),
        "title": variant("title", documents=[{**DOCUMENTS[0], "title": "Carte"}, DOCUMENTS[1]]),
    }
    assert base not in changed.values()
    assert len(set(changed.values())) == len(changed)


def test_document_fingerprint_differs_from_the_same_texts_as_passages():
    queries = {"q": _query()}
    passages = Dataset("x", queries, {"q": {"a": 1.0}}, {"a": {"text": "t", "title": ""}})
    documents = Dataset("x", queries, {"q": {"a": 1.0}}, {"a": {"text": "t", "title": ""}}, documents={"a": "t"})
    assert passages.fingerprint != documents.fingerprint


def _query():
    from rag_eval._data.datasets import Query

    return Query("q", "question")


def test_an_evidence_grade_that_is_not_a_number_says_it_must_be_above_0(tmp_path):
    # the grade form of judgements ("such as 2, 0.5 or -1") would suggest a grade evidence refuses
    path = tmp_path / "set.yaml"
    path.write_text(
        "documents: [{id: a, text: hello world}]\n"
        "queries:\n"
        "  - {id: q1, text: x, evidence: [{doc: a, start: 0, end: 5, grade: .nan}]}\n"
        "  - {id: q2, text: x, evidence: [{doc: a, start: 0, end: 5, grade: '2'}]}\n"
        "  - {id: q3, text: x, judgements: {a: .nan}}\n",
        encoding="utf-8",
    )
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == [
        f"{path}: queries[0](q1).evidence[0].grade: an evidence grade is a finite number > 0 such as 1, 2 or 0.5 "
        "(default 1) (got nan)",
        f"{path}: queries[1](q2).evidence[0].grade: an evidence grade is a finite number > 0 such as 1, 2 or 0.5 "
        "(default 1), written without quotes (got '2')",
        f"{path}: queries[2](q3).judgements.a: a grade is a finite number such as 2, 0.5 or -1 (got nan)",
    ]


def test_symbolic_links_in_a_documents_folder_are_not_followed(tmp_path):
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "elsewhere.md").write_text("elsewhere", encoding="utf-8")
    (outside / "sub" / "deep.md").write_text("deep", encoding="utf-8")
    docs = tmp_path / "docs"
    (docs / "guides").mkdir(parents=True)
    (docs / "menu.md").write_text(MENU, encoding="utf-8")
    (docs / "guides" / "linked.md").symlink_to(outside / "elsewhere.md")  # a linked file
    (docs / "sub").symlink_to(outside / "sub", target_is_directory=True)  # a linked folder
    (docs / "guides" / "loop").symlink_to(docs, target_is_directory=True)  # a cycle
    (docs / "broken.txt").symlink_to(tmp_path / "missing.txt")
    (docs / "image.png").symlink_to(outside / "elsewhere.md")  # not a document name: not listed
    queries = [{"id": "q1", "text": "x", "judgements": {"menu.md": 1}}]
    dataset = load_yaml_query_set(document_set(tmp_path, documents="docs", queries=queries))
    assert list(dataset.documents) == ["menu.md"]
    assert dataset.notes == (
        f"{docs}: 4 symbolic link(s) not followed (documents are the folder's regular files; copy a linked file in "
        "to include it): broken.txt, guides/linked.md, guides/loop/, sub/",
    )
    # a folder of links only: the error says why nothing was found
    (tmp_path / "links").mkdir()
    (tmp_path / "links" / "a.md").symlink_to(outside / "elsewhere.md")
    path = document_set(tmp_path, documents="links", queries=queries, file="links.yaml")
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == [
        f"{tmp_path / 'links'}: no .txt or .md files in this folder (or its subfolders) (1 symbolic link(s) skipped: "
        "links are not followed); put one document per file"
    ]
    # the documents folder itself may be a link
    (tmp_path / "docs_link").symlink_to(docs, target_is_directory=True)
    linked = load_yaml_query_set(document_set(tmp_path, documents="docs_link", queries=queries, file="l.yaml"))
    assert list(linked.documents) == ["menu.md"]


# ---- issue 20: ids, surrogates, unreadable folders, chunk ids, quotes ---------------------------------------


def test_a_documents_folder_writes_a_space_of_a_file_name_as_percent_20(tmp_path):
    """Before: 'Getting Started.md' was the id, and the .run file written for it read back as 'Getting'."""
    (tmp_path / "docs" / "user guide").mkdir(parents=True)
    (tmp_path / "docs" / "Getting Started.md").write_text("How to start.", encoding="utf-8")
    (tmp_path / "docs" / "user guide" / "a b.txt").write_text("Guide.", encoding="utf-8")
    queries = [{"id": "q1", "text": "x", "judgements": {"Getting%20Started.md": 1},
                "evidence": [{"doc": "user%20guide/a%20b.txt", "quote": "Guide"}]}]
    dataset = load_yaml_query_set(document_set(tmp_path, documents="docs", queries=queries))
    assert list(dataset.documents) == ["Getting%20Started.md", "user%20guide/a%20b.txt"]
    assert dataset.judgements == {"q1": {"Getting%20Started.md": 1.0, "user%20guide/a%20b.txt": 1.0}}


def test_two_files_whose_ids_would_be_the_same_are_refused(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a b.md").write_text("one", encoding="utf-8")
    (tmp_path / "docs" / "a%20b.md").write_text("two", encoding="utf-8")
    path = document_set(tmp_path, documents="docs", queries=[{"id": "q1", "text": "x", "judgements": {"a%20b.md": 1}}])
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == [
        f"{tmp_path / 'docs' / 'a%20b.md'}: its id 'a%20b.md' is also the id of {tmp_path / 'docs' / 'a b.md'} (a "
        "space in a file name is written %20 in its id); rename one of the two files"
    ]


def test_a_file_name_that_is_not_utf8_is_named_with_the_fix(tmp_path):
    """Before: accepted as an id holding a lone surrogate; `run` then failed with UnicodeEncodeError (exit 3)."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "ok.md").write_text("fine", encoding="utf-8")
    with open(os.path.join(os.fsencode(folder), b"caf\xe9.md"), "wb") as handle:
        handle.write(b"coffee")
    path = document_set(tmp_path, documents="docs", queries=[{"id": "q1", "text": "x", "judgements": {"ok.md": 1}}])
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == [
        f"{folder}/caf\\xe9.md: the file name is not UTF-8 text (byte 0xe9), and a document's id is its file name; "
        "rename the file with a UTF-8 name (convmv -f latin1 -t utf8 does it for a folder)"
    ]


def test_a_subfolder_that_cannot_be_listed_is_a_problem(tmp_path, monkeypatch):
    """Before: os.walk skipped it in silence (root lists any folder: the refusal is simulated)."""
    (tmp_path / "docs" / "private").mkdir(parents=True)
    (tmp_path / "docs" / "a.md").write_text("one", encoding="utf-8")
    (tmp_path / "docs" / "private" / "b.md").write_text("two", encoding="utf-8")
    real = os.scandir

    def scandir(path="."):
        if os.fspath(path).endswith("private"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    path = document_set(tmp_path, documents="docs", queries=[{"id": "q1", "text": "x", "judgements": {"a.md": 1}}])
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == [
        f"{tmp_path / 'docs' / 'private'}: cannot list this folder (permission denied); its documents would be missing: "
        "make it readable, or move it out of the documents folder"
    ]


def test_a_lone_surrogate_in_a_jsonl_document_id_is_named_with_its_line_and_fix(tmp_path):
    """Before: accepted; the judgement of 'a' was then told 'did you mean 'a\\udc80'?' (no file, wrong fix)."""
    (tmp_path / "docs.jsonl").write_text('{"id": "a\\udc80", "text": "hello"}\n{"id": "b", "text": "bananas"}\n')
    path = document_set(tmp_path, documents="docs.jsonl", queries=[{"id": "q1", "text": "x", "judgements": {"b": 1}}])
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    assert problems_of(excinfo) == [
        f"{tmp_path / 'docs.jsonl'}:1: document id: an id holds a lone surrogate U+DC80 at position 2, which is not "
        "UTF-8 text; it is half of a UTF-16 pair (an escape \\ud800 to \\udfff without its other half), not a "
        "character: fix the escape (got 'a\\udc80')"
    ]


def test_a_lone_surrogate_in_a_document_text_is_one_line_not_a_crash(tmp_path, capsys):
    """Before: `run` with a whole-document retriever failed with UnicodeEncodeError (exit 3)."""
    (tmp_path / "docs.jsonl").write_text('{"id": "a", "text": "hello \\ud800 world"}\n{"id": "b", "text": "x"}\n')
    document_set(tmp_path, documents="docs.jsonl", queries=[{"id": "q1", "text": "hello", "judgements": {"a": 1}}])
    config = write_yaml(tmp_path / "run.yaml", {"dataset": {"path": "set.yaml"}, "metrics": ["doc_ndcg@10"],
                                                 "retrievers": [{"label": "bm25", "adapter": "bm25"}]})
    code = main(["run", str(config), "--output", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and not (tmp_path / "out").exists()
    assert err == (
        f"rag-eval: error: {tmp_path / 'docs.jsonl'}:1: document 'a': 'text' holds a lone surrogate U+D800 at position "
        "7, which is not UTF-8 text; it is half of a UTF-16 pair (an escape \\ud800 to \\udfff without its other "
        "half), not a character: fix the escape\n"
    )


@pytest.mark.parametrize("source", ["inline", "jsonl"])
def test_a_document_id_that_reads_as_a_chunk_of_another_is_refused(tmp_path, source):
    """Before: 'a' and 'a#0-5' were both loaded; a replayed ranking naming 'a#0-5' scored a chunk of 'a' (1.0 -> 0.0)."""
    documents = [{"id": "a", "text": "alpha beta"}, {"id": "a#0-5", "text": "gamma"}]
    queries = [{"id": "q1", "text": "x", "judgements": {"a#0-5": 1}}]
    if source == "jsonl":
        (tmp_path / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in documents), encoding="utf-8")
        documents, place = "docs.jsonl", f"{tmp_path / 'docs.jsonl'}:2"
    path = document_set(tmp_path, documents=documents, queries=queries)
    if source == "inline":
        place = f"{path}: documents[1](a#0-5).id"
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    # (A documents folder cannot hold such a pair: its ids end in .md or .txt, a chunk id in a digit.)
    assert problems_of(excinfo) == [
        f"{place}: document id 'a#0-5' reads as the chunk [0, 5) of document 'a' (a chunk id is "
        "<document>#<start>-<end>), so a ranking that names it could mean either; rename one of the two"
    ]


WRAPPED = "The Pacific Ocean is the largest\n   and deepest of the oceans.\tIt covers a third of the Earth."


@pytest.mark.parametrize("quote, span", [
    ("largest and deepest of the oceans.", (25, 62)),
    ("  Pacific   Ocean\nis ", (4, 20)),  # the quote's ends: no part of it
    ("oceans. It covers", (55, 72)),
])
def test_a_quote_may_match_runs_of_white_space_when_asked(tmp_path, quote, span):
    queries = [{"id": "q1", "text": "x", "evidence": [{"doc": "d", "quote": quote, "match": "whitespace"}]}]
    dataset = load_yaml_query_set(document_set(tmp_path, documents=[{"id": "d", "text": WRAPPED}], queries=queries))
    (found,) = dataset.evidence["q1"]
    assert (found.start, found.end) == span
    assert " ".join(WRAPPED[found.start : found.end].split()) == " ".join(quote.split())  # exact offsets, text as quoted


def test_white_space_matching_is_opt_in_and_its_misses_show_the_nearest_passage(tmp_path):
    evidence = [
        {"doc": "d", "quote": "largest and deepest"},  # exact (the default): the line break differs
        {"doc": "d", "quote": "largest and deepest", "match": "whitespace"},
        {"doc": "d", "quote": "the largest and shallowest", "match": "whitespace"},
        {"doc": "d", "start": 0, "end": 3, "match": "whitespace"},
    ]
    path = document_set(tmp_path, documents=[{"id": "d", "text": WRAPPED}],
                        queries=[{"id": "q1", "text": "x", "evidence": evidence}])
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    e = f"{path}: queries[0](q1).evidence"
    assert problems_of(excinfo) == [
        f"{e}[0]: quote 'largest and deepest' occurs 0 times in document 'd'; quotes match exactly (same characters, "
        "case, spaces and line breaks, no normalisation): copy it from the document; with runs of white space "
        "matching any run it occurs once, at [25, 47) 'largest\\n   and deepest': give this evidence item match: "
        "whitespace, or copy the document's spaces and line breaks",
        f"{e}[2]: quote 'the largest and shallowest' occurs 0 times in document 'd', even with runs of white space "
        "matching any run of white space (match: whitespace); copy it from the document; nearest passage: [21, 50) "
        "'the largest\\n   and deepest of', which matches the quote's first 16 characters; then the quote has "
        "'shallowest' and the document 'deepest of t'",
        f"{e}[3]: match applies to a quote; remove it, or give a quote instead of start and end",
    ]


def test_checking_a_quote_stops_at_two_occurrences(tmp_path):
    """Before: every overlapping occurrence was counted one by one ('aa' in 5 MB of 'a': 18 s)."""
    import time

    text = "a" * 5_000_000
    started = time.perf_counter()
    with pytest.raises(ValueError, match=r"quote 'aa' occurs at least 2,500,000 times in document 'big' \(first at "
                                         r"\[0, 2\) and \[1, 3\)\)"):
        resolve_quote(text, "aa", "big")
    assert time.perf_counter() - started < 3.0
    assert occurrences("abcabc" * 1000, "abc") == (2000, [0, 3])  # a quote that cannot overlap itself: exact


def test_evidence_problems_of_both_kinds_are_listed_in_one_pass_with_the_items_written(tmp_path):
    """A schema problem in one evidence item (a grade in quotes) hid every problem of the query's other items
    (a quote found twice) until it was fixed: two runs of validate to see two problems. The other items are now
    checked in the same pass, each named by its place in the file."""
    documents = [{"id": "a", "text": "alpha beta gamma alpha"}]
    queries = [
        {"id": "q1", "text": "x", "evidence": [
            {"doc": "a", "start": 0, "end": 5, "grade": "2"},  # a schema problem
            {"doc": "a", "quote": "alpha"},  # found twice
            {"doc": "a", "start": 6, "end": 10},  # fine
            {"doc": "a", "start": 6, "end": 99},  # past the end
        ]},
        {"id": "q2", "text": "y", "evidence": [{"doc": "a", "start": 0, "end": 3, "grade": "x"}]},
    ]
    path = document_set(tmp_path, documents=documents, queries=queries)
    with pytest.raises(DatasetError) as excinfo:
        load_yaml_query_set(path)
    found = [problem.split(": ", 2)[1] for problem in problems_of(excinfo)]
    assert found == ["queries[0](q1).evidence[0].grade", "queries[0](q1).evidence[1]", "queries[0](q1).evidence[3]",
                     "queries[1](q2).evidence[0].grade"], problems_of(excinfo)
    assert "quote 'alpha' occurs at least 2 times" in problems_of(excinfo)[1]
    assert "end 99 is past the end of the document (22 characters)" in problems_of(excinfo)[2]
