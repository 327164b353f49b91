"""`rag-eval pool`: the unjudged units of the retrievers' top K, as a sheet, on hand-built datasets.

Two static retrievers with fixed rankings over a passage query set and over a folder of documents
(ids with UTF-8, a file name with a space, stored as %20), so that every row, its priority and its
note are derived by hand below. Then: the same pool from results files, the Label Studio and Argilla
exports parsed back, and bad arguments refused before anything runs or is written.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from pool_fixtures import (
    COMMANDS,
    EXPECTED_DOCUMENT_POOL,
    PASSAGE_CONFIG,
    PASSAGES,
    document_folder,
    expected_document_rows,
    expected_passage_rows,
    passage_folder,
    run_cli,
)

from rag_eval._data.datasets import Dataset, Query
from rag_eval._data.judging.exports import argilla_settings, label_studio_config, record_id
from rag_eval._data.judging.sheet import read_sheet, write_sheet
from rag_eval._run.pool import Ranked, pool


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_passage_pool_is_the_one_derived_by_hand(tmp_path, capsys, suffix):
    config = passage_folder(tmp_path)
    code, out, err = run_cli(capsys, "pool", config, "--depth", 3, "--output", tmp_path / f"pool{suffix}", "--no-progress")
    assert (code, err) == (0, "")
    assert out == (f"pool: 10 units to judge for 3 queries (unjudged in the top 3 of 2 retrievers); written to "
                   f"{tmp_path / f'pool{suffix}'}\n")
    assert read_sheet(tmp_path / f"pool{suffix}") == expected_passage_rows()


def test_a_document_pool_pools_chunks_of_unjudged_documents_and_whole_documents(tmp_path, capsys):
    config = document_folder(tmp_path)
    code, out, err = run_cli(capsys, "pool", config, "--depth", 3, "--output", tmp_path / "pool.jsonl", "--no-progress")
    assert (code, err) == (0, "")
    assert out.startswith("pool: 8 units to judge for 3 queries (unjudged in the top 3 of 2 retrievers)")
    assert read_sheet(tmp_path / "pool.jsonl") == expected_document_rows()


def test_results_files_give_the_same_pool_and_a_shared_label_is_told_apart_by_its_file(tmp_path, capsys):
    config = passage_folder(tmp_path)
    code, _, err = run_cli(capsys, "run", config, "--no-progress")
    assert (code, err) == (0, "")
    results = [tmp_path / "out" / "r1.json", tmp_path / "out" / "r2.json"]
    code, out, _ = run_cli(capsys, "pool", config, "--depth", 3, "--output", tmp_path / "p.csv", "--results", *results)
    assert code == 0 and out.startswith("pool: 10 units to judge for 3 queries")
    assert read_sheet(tmp_path / "p.csv") == expected_passage_rows()
    # Past the retrievers' top_k: said, and each whole ranking pooled (r1's 4th, e for q1, joins).
    code, out, _ = run_cli(capsys, "pool", config, "--depth", 9, "--output", tmp_path / "p9.csv", "--results", results[0],
                           results[0])
    first = out.splitlines()[0]
    assert first == "note: --depth 9 is past the retrievers' top_k 4: their whole rankings were pooled"
    rows = read_sheet(tmp_path / "p9.csv")
    assert [(row.query_id, row.doc) for row in rows] == [("q2", "d"), ("q2", "a"), ("q2", "e"), ("q1", "c"),
                                                          ("q1", "d"), ("q1", "e"), ("q3", "e")]
    assert rows[0].note == f"surfaced by r1 ({results[0]}) at rank 1"


def test_the_exports_parse_back_to_the_rows(tmp_path, capsys):
    config = passage_folder(tmp_path)
    studio, argilla = tmp_path / "tasks.json", tmp_path / "records.jsonl"
    code, out, _ = run_cli(capsys, "pool", config, "--depth", 3, "--output", tmp_path / "p.csv", "--label-studio", studio,
                           "--argilla", argilla, "--no-progress")
    assert code == 0 and out.rstrip().endswith(f"Label Studio tasks: {studio}; Argilla records: {argilla}")
    rows = expected_passage_rows()
    tasks = json.loads(studio.read_text(encoding="utf-8"))
    assert [task["data"] for task in tasks] == [
        {"query": row.query_text, "text": row.text, "query_id": row.query_id, "doc": row.doc, "start": None, "end": None,
                  "priority": row.priority, "id": record_id(row)}  # never the note: who surfaced it is not shown
        for row in rows
    ]
    records = [json.loads(line) for line in argilla.read_text(encoding="utf-8").splitlines()]
    assert records == [
        {"id": record_id(row), "query": row.query_text, "text": row.text, "query_id": row.query_id, "doc": row.doc,
         "priority": row.priority}
        for row in rows
    ]
    assert len({record["id"] for record in records}) == 10
    # The labelling config shows the task's query and text and offers the passage set's grades 0..2.
    view = ET.fromstring(label_studio_config(2))
    assert [text.get("value") for text in view.iter("Text")] == ["$query", "$text"]
    assert [choice.get("value") for choice in view.iter("Choice")] == ["0", "1", "2"]
    assert argilla_settings(2)["questions"] == [{"name": "grade", "type": "rating", "values": [0, 1, 2]}]


def test_the_argilla_records_of_spans_carry_offsets(tmp_path, capsys):
    config = document_folder(tmp_path)
    argilla = tmp_path / "records.jsonl"
    code, _, _ = run_cli(capsys, "pool", config, "--depth", 3, "--output", tmp_path / "p.csv", "--argilla", argilla,
                         "--no-progress")
    assert code == 0
    records = [json.loads(line) for line in argilla.read_text(encoding="utf-8").splitlines()]
    assert [(r["doc"], r.get("start"), r.get("end")) for r in records] == [
        (doc, start, end) for _, doc, start, end, _ in EXPECTED_DOCUMENT_POOL
    ]
    assert records[1]["text"] == "富士山は東京から見えます。\n"


def test_the_pool_function_counts_shares_and_dedups():
    dataset = Dataset("t", {"q": Query("q", "text"), "r": Query("r", "other")}, {"q": {"x": 1, "y": -1}, "r": {"x": 0}},
                      {doc: {"text": doc.upper()} for doc in ("x", "y", "z", "w")})
    found = pool(dataset, [Ranked("A", {"q": ["x", "y", "z", "w"], "r": ["z"]}), Ranked("B", {"q": ["w", "z"]})], depth=4)
    # q: A's top 4 holds z and w unjudged (y's -1 is a grade), 2/4; B's holds w and z, 2/4. r: A's z, 1/4.
    assert found.shares == {"q": 0.5, "r": 0.25}
    assert [(row.query_id, row.doc, row.priority, row.note) for row in found.rows] == [
        ("q", "w", 1, "surfaced by B at rank 1, A at rank 4"),
        ("q", "z", 2, "surfaced by B at rank 2, A at rank 3"),
        ("r", "z", 3, "surfaced by A at rank 1"),
    ]


def test_nothing_to_judge_writes_an_empty_sheet(tmp_path, capsys):
    config = passage_folder(tmp_path)
    text = PASSAGE_CONFIG.replace("{q1: [a, c, d, e], q2: [d, a, e], q3: [e]}", "{q1: [a, b]}").replace(
        "{q1: [d, a, é-1], q2: [東京, c, b], q3: [a, e, b]}", "{q2: [c]}")
    config.write_text(text, encoding="utf-8")
    code, out, _ = run_cli(capsys, "pool", config, "--depth", 4, "--output", tmp_path / "p.csv", "--no-progress")
    assert code == 0
    assert out == (f"pool: nothing to judge: every unit in the top 4 of 2 retrievers is judged on 'holes'; written to "
                   f"{tmp_path / 'p.csv'}\n")
    assert read_sheet(tmp_path / "p.csv") == []


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--output", "{t}/p.txt"], r"{t}/p.txt: a judgement sheet is .csv or .jsonl, not .txt"),
        (["--output", "{t}/p.csv", "--argilla", "{t}/a.json"], r"--argilla {t}/a.json: write it as a .jsonl file"),
        (["--output", "{t}/p.csv", "--label-studio", "{t}/out/r1.json", "--results", "{t}/out/r1.json"],
         r"--label-studio {t}/out/r1.json: is the results file"),
        (["--output", "{t}/p.csv", "--results", "{t}/nothing.json"], r"{t}/nothing.json"),
    ],
)
def test_bad_arguments_exit_2_with_one_line_and_write_nothing(tmp_path, capsys, extra, message):
    config = passage_folder(tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "r1.json").write_text("{}", encoding="utf-8")
    args = [part.replace("{t}", str(tmp_path)) for part in extra]
    code, out, err = run_cli(capsys, "pool", config, "--no-progress", *args)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("rag-eval: error: ")
    assert message.replace("{t}", str(tmp_path)) in err
    assert not (tmp_path / "p.csv").exists()


def test_results_of_another_dataset_are_refused_naming_the_file(tmp_path, capsys):
    config = passage_folder(tmp_path)
    code, _, _ = run_cli(capsys, "run", config, "--no-progress")
    assert code == 0
    # The query set loses passage d: r1's results rank it.
    (tmp_path / "holes.yaml").write_text(PASSAGES.replace("  - {id: d, text: Delta 🌊}\n", ""), encoding="utf-8")
    code, _, err = run_cli(capsys, "pool", config, "--output", tmp_path / "p.csv", "--results", tmp_path / "out" / "r1.json")
    assert code == 2
    assert err == (f"rag-eval: error: {tmp_path / 'out' / 'r1.json'}: query 'q1': passage 'd' is not in the corpus of "
                   "'holes'; pool results written on this config's dataset\n")
    assert not (tmp_path / "p.csv").exists()


def test_the_cli_dispatches_pool_and_judgements():
    assert {name: COMMANDS.get(name) for name in ("pool", "judgements")} == {"pool": "pool", "judgements": "judgements"}


# ---- an existing --output: rag-eval replaces only its own sheet, and keeps every grade in it


def test_an_output_that_is_not_a_sheet_is_never_replaced(tmp_path, capsys):
    config = passage_folder(tmp_path)
    notes = tmp_path / "notes.csv"
    notes.write_text("my notes, typed by hand\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "pool", config, "--output", notes, "--no-progress")
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err.startswith(f"rag-eval: error: --output {notes}: the file there is not a judgement sheet (")
    assert err.rstrip().endswith("nothing written: rag-eval replaces only a sheet it can read, so give another file "
                                 "name, or move that file away")
    assert notes.read_text(encoding="utf-8") == "my notes, typed by hand\n"
    tasks = tmp_path / "tasks.json"
    tasks.write_text('{"my": "settings"}', encoding="utf-8")
    code, _, err = run_cli(capsys, "pool", config, "--output", tmp_path / "p.csv", "--label-studio", tasks, "--no-progress")
    assert code == 2 and f"--label-studio {tasks}: the file there is not Label Studio tasks rag-eval pool wrote" in err
    assert tasks.read_text(encoding="utf-8") == '{"my": "settings"}' and not (tmp_path / "p.csv").exists()


def test_pooling_again_into_a_graded_sheet_keeps_its_grades(tmp_path, capsys):
    config = passage_folder(tmp_path)
    sheet = tmp_path / "pool.csv"
    assert run_cli(capsys, "pool", config, "--depth", 3, "--output", sheet, "--no-progress")[0] == 0
    rows = read_sheet(sheet)
    rows[0] = rows[0].graded(2, "human", "ana")  # q2 d
    rows[4] = rows[4].graded(1, "llm:m", "judge", note="##final score: 1")  # q1 d
    write_sheet(sheet, rows)
    code, out, err = run_cli(capsys, "pool", config, "--depth", 3, "--output", sheet, "--no-progress")
    assert (code, err) == (0, "") and out.rstrip().endswith(f"written to {sheet} (2 grades of the sheet there kept)")
    assert read_sheet(sheet) == rows  # the same pool: every row as it was, graded ones with their grades


def test_pooling_again_never_drops_a_grade_that_is_not_merged(tmp_path, capsys):
    """q3's b is pooled at depth 3 (r2, rank 3), not at depth 2: a grade given to it would be lost, unless merged."""
    config = passage_folder(tmp_path)
    sheet = tmp_path / "pool.csv"
    assert run_cli(capsys, "pool", config, "--depth", 3, "--output", sheet, "--no-progress")[0] == 0
    rows = read_sheet(sheet)
    assert (rows[9].query_id, rows[9].doc) == ("q3", "b")
    rows[9] = rows[9].graded(1, "human")
    write_sheet(sheet, rows)
    before = sheet.read_bytes()
    code, out, err = run_cli(capsys, "pool", config, "--depth", 2, "--output", sheet, "--no-progress")
    assert (code, out) == (2, "") and err == (
        f"rag-eval: error: --output {sheet}: holds 1 graded row that the new pool would drop, not merged into the "
        f"dataset (first: query 'q3', unit 'b'); nothing written: merge them first (rag-eval judgements merge {sheet} "
        "--into <query set>), or write the pool to another file\n"
    )
    assert sheet.read_bytes() == before
    # Merged, the grade is in the query set: the new pool may drop the row (b is judged for q3 now).
    assert run_cli(capsys, "judgements", "merge", sheet, "--into", tmp_path / "holes.yaml")[0] == 0
    code, out, _ = run_cli(capsys, "pool", config, "--depth", 2, "--output", sheet, "--no-progress")
    assert code == 0 and all(row.grade is None for row in read_sheet(sheet))
    # A sheet that grades b otherwise than the query set now does (a person re-graded it: 2, merged 1) holds a
    # grade the query set does not: it is kept, not dropped. (Before, any judged unit counted as merged.)
    rows[9] = rows[9].graded(2, "human", "ana")
    write_sheet(sheet, rows)
    before = sheet.read_bytes()
    code, out, err = run_cli(capsys, "pool", config, "--depth", 2, "--output", sheet, "--no-progress")
    assert (code, out) == (2, "") and "holds 1 graded row that the new pool would drop, not merged" in err
    assert sheet.read_bytes() == before
