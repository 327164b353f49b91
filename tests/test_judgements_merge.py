"""`rag-eval judgements merge`: graded sheets back into the hand-built query sets of tests/pool_fixtures.py.

The loop end to end (pool, grade in the test, merge, reload with rag_eval's loader, pool and run again),
the YAML text after each merge compared in full with the text expected (every comment and line of the
file kept, the new judgements where they belong), conflicts refused, kept or replaced, a query set
edited during the merge left as the other writer saved it, and bad sheets refused with one located
line per problem and nothing written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pool_fixtures import DOCUMENT_SET, GS, PASSAGES, document_folder, passage_folder, run_cli

from rag_eval._core.errors import DatasetError
from rag_eval._data.config.schema import load_config
from rag_eval._data.datasets.query_set import load_yaml_query_set
from rag_eval._data.judging import merge, merge_file
from rag_eval._data.judging.sheet import SheetRow, read_sheet, write_sheet
from rag_eval._run.execute import execute

# The graded rows of the passage pool (priority -> grade, source, annotator, time); 6..10 stay ungraded.
PASSAGE_GRADES = {
    1: (2, "human", "ana", "2026-11-27T10:00:00+00:00"),  # q2 d
    2: (0, "llm:qwen2.5:0.5b", "", ""),  # q2 a
    3: (1, "llm+verified", "", ""),  # q2 b
    4: (0, "human", "", ""),  # q2 e
    5: (1, "human", "", ""),  # q1 d
}
PASSAGES_MERGED = PASSAGES.replace(
    "      b: 0\n\n",
    "      b: 0\n      d: {grade: 1, source: human}\n\n",
).replace(
    "    judgements: {c: 1, 東京: 0}   # flow style\n",
    "    judgements: {c: 1, 東京: 0, d: {grade: 2, source: human, annotator: ana, time: '2026-11-27T10:00:00+00:00'}, "
    "a: {grade: 0, source: llm:qwen2.5:0.5b}, b: {grade: 1, source: llm+verified}, e: {grade: 0, source: human}} "
    "# flow style\n",
)
# The graded rows of the document pool; 3 (東京.txt whole, q-dessert) and 6 (GS whole, q-install) stay ungraded.
DOCUMENT_GRADES = {
    1: (0, "human", "", ""),  # q-dessert GS whole: a document judgement 0
    2: (0, "llm:qwen", "", ""),  # q-dessert 東京.txt [11, 25) graded 0: 東京.txt has no grade: judged 0
    4: (1, "llm+verified", "", ""),  # q-capital GS whole: 1
    5: (2, "human", "", ""),  # q-capital GS [0, 20): evidence graded 2
    7: (2, "human", "", ""),  # q-install GS [0, 20): evidence (a new evidence list)
    8: (0, "human", "", ""),  # q-install café.md [36, 52) graded 0: café.md judged 0 (a new judgements map)
}
DOCUMENT_MERGED = """\
# Documents judged by evidence; comments must survive.
name: doc-holes
documents: docs
queries:
  - id: q-dessert
    text: Which dessert does the café serve?
    evidence:
      - doc: café.md
        quote: crème brûlée   # the answer
    judgements:
      Getting%20Started.md: {grade: 0, source: human}
      東京.txt: {grade: 0, source: llm:qwen}
  - id: q-capital
    text: What is the capital of Japan?
    evidence:
      - {doc: 東京.txt, start: 0, end: 11, grade: 2}
      - {doc: Getting%20Started.md, start: 0, end: 20, grade: 2, source: human}
    judgements:
      café.md: 0
      Getting%20Started.md: {grade: 1, source: llm+verified}

  - id: q-install
    text: How do I install it?
    judgements:
      café.md: {grade: 0, source: human}
    evidence:
      - {doc: Getting%20Started.md, start: 0, end: 20, grade: 2, source: human}
"""


def graded(path: Path, grades: dict, out: Path) -> Path:
    rows = [row.graded(*grades[row.priority]) if row.priority in grades else row for row in read_sheet(path)]
    write_sheet(out, rows)
    return out


def sheet(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def judged_at_3(tmp_path: Path, capsys, config: Path) -> dict[str, float]:
    code, _, err = run_cli(capsys, "run", config, "--no-progress")
    assert (code, err) == (0, "")
    return {label: json.loads((tmp_path / "out" / f"{label}.json").read_text())["results"]["aggregate"]["judged@3"]
            for label in ("r1", "r2")}


def test_pool_merge_rerun_on_passages(tmp_path, capsys):
    config = passage_folder(tmp_path)
    query_set = tmp_path / "holes.yaml"
    # Before: judged@3 over the judged queries q1, q2, q4 (q4 unanswered: 0).
    #   r1: q1 [a c d] 1/3, q2 [d a e] 0, q4 0 -> 1/9;   r2: q1 [d a é-1] 1/3, q2 [東京 c b] 2/3, q4 0 -> 1/3
    assert judged_at_3(tmp_path, capsys, config) == pytest.approx({"r1": 1 / 9, "r2": 1 / 3}, abs=1e-12)
    assert run_cli(capsys, "pool", config, "--depth", 3, "--output", tmp_path / "pool.csv", "--no-progress")[0] == 0
    filled = graded(tmp_path / "pool.csv", PASSAGE_GRADES, tmp_path / "graded.csv")
    code, out, err = run_cli(capsys, "judgements", "merge", filled, "--into", query_set)
    assert (code, err) == (0, "")
    assert out == f"merged {filled} into {query_set}: 5 judgements added; 5 ungraded rows skipped\n"
    assert query_set.read_text(encoding="utf-8") == PASSAGES_MERGED
    dataset = load_yaml_query_set(query_set)
    assert dataset.judgements == {
        "q1": {"a": 2, "b": 0, "d": 1}, "q2": {"c": 1, "東京": 0, "d": 2, "a": 0, "b": 1, "e": 0}, "q4": {"a": 1},
    }
    # After: r1 q1 [a c d] 2/3, q2 [d a e] 3/3, q4 0 -> 5/9; r2 q1 [d a é-1] 2/3, q2 [東京 c b] 3/3, q4 0 -> 5/9.
    assert judged_at_3(tmp_path, capsys, config) == pytest.approx({"r1": 5 / 9, "r2": 5 / 9}, abs=1e-12)
    # The next pool holds what was left ungraded, q1 first (its share is now 1/3; q3 still has no judgement).
    assert run_cli(capsys, "pool", config, "--depth", 3, "--output", tmp_path / "again.csv", "--no-progress")[0] == 0
    assert [(row.query_id, row.doc, row.priority) for row in read_sheet(tmp_path / "again.csv")] == [
        ("q1", "c", 1), ("q1", "é-1", 2), ("q3", "e", 3), ("q3", "a", 4), ("q3", "b", 5),
    ]
    # Merging the same sheet again changes nothing: every graded row is already there.
    before = query_set.read_bytes()
    code, out, _ = run_cli(capsys, "judgements", "merge", filled, "--into", query_set)
    assert code == 0
    assert out == (f"nothing to merge from {filled} into {query_set} (5 rows already in the query set); "
                   "5 ungraded rows skipped; the file is unchanged\n")
    assert query_set.read_bytes() == before


def merged_in_memory(query_set, sheet_path, resolve=None):
    """What `judgements merge` will write, as calibrate scores it (merge.grades_after): before the file changes."""
    before = load_yaml_query_set(query_set)
    lines, _ = merge.graded_lines(sheet_path, read_sheet(sheet_path))
    edits, _ = merge.plan(lines, before, resolve, merge.Counts())
    return merge.grades_after(before, edits)


def assert_same_grades(in_memory, query_set):
    after = load_yaml_query_set(query_set)
    assert in_memory.judgements == after.judgements and in_memory.document_judgements == after.document_judgements
    assert in_memory.evidence == after.evidence


def test_pool_merge_on_documents(tmp_path, capsys):
    config = document_folder(tmp_path)
    query_set = tmp_path / "qs.yaml"
    assert run_cli(capsys, "pool", config, "--depth", 3, "--output", tmp_path / "pool.jsonl", "--no-progress")[0] == 0
    filled = graded(tmp_path / "pool.jsonl", DOCUMENT_GRADES, tmp_path / "graded.jsonl")
    in_memory = merged_in_memory(query_set, filled)
    code, out, err = run_cli(capsys, "judgements", "merge", filled, "--into", query_set)
    assert (code, err) == (0, "")
    assert_same_grades(in_memory, query_set)
    assert out == f"merged {filled} into {query_set}: 4 judgements added, 2 evidence spans added; 2 ungraded rows skipped\n"
    assert query_set.read_text(encoding="utf-8") == DOCUMENT_MERGED
    dataset = load_yaml_query_set(query_set)
    assert dataset.document_judgements == {
        "q-dessert": {GS: 0, "東京.txt": 0}, "q-capital": {"café.md": 0, GS: 1}, "q-install": {"café.md": 0},
    }
    assert {qid: [(s.doc, s.start, s.end, s.grade) for s in spans] for qid, spans in dataset.evidence.items()} == {
        "q-dessert": [("café.md", 23, 35, 1.0)],
        "q-capital": [("東京.txt", 0, 11, 2.0), (GS, 0, 20, 2.0)],
        "q-install": [(GS, 0, 20, 2.0)],
    }
    # Every unit of the retrievers' top 3 now has a grade (the two ungraded rows' documents got one from others).
    code, out, _ = run_cli(capsys, "pool", config, "--depth", 3, "--output", tmp_path / "again.csv", "--no-progress")
    assert code == 0 and out.startswith("pool: nothing to judge")
    run = execute(load_config(config), progress=False)
    assert {o.label: o.results.aggregate["doc_ndcg@3"] for o in run.outcomes}["whole"] == pytest.approx(
        # q-dessert: GS 0, café 1, 東京 0 -> (1/log2 3) / 1; q-capital: 東京 2, GS 1 -> (2 + 1/log2 3) / (2 + 1/log2 3)
        # (café 0); q-install: GS 2 (its evidence) -> 1. Mean over 3.
        (1 / 1.5849625007211563 + 1 + 1) / 3
    )


PASSAGE_CONFLICTS = """\
query_id,doc,grade,source
q1,a,1,human
q1,b,0,human
q2,c,2,llm:qwen
q1,e,2,human
"""


def test_conflicts_are_listed_and_refused_then_kept_or_replaced(tmp_path, capsys):
    passage_folder(tmp_path)
    query_set = tmp_path / "holes.yaml"
    conflicts = sheet(tmp_path / "c.csv", PASSAGE_CONFLICTS)
    code, out, err = run_cli(capsys, "judgements", "merge", conflicts, "--into", query_set)
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"{conflicts}:2: query 'q1', passage 'a': the query set grades it 2, the sheet 1",
        f"{conflicts}:4: query 'q2', passage 'c': the query set grades it 1, the sheet 2",
        f"rag-eval: error: 2 grades of {conflicts} conflict with {query_set}; nothing written: rerun with --resolve keep "
        "(keep the query set's grades) or --resolve replace (take the sheet's)",
    ]
    assert query_set.read_text(encoding="utf-8") == PASSAGES
    code, out, err = run_cli(capsys, "judgements", "merge", conflicts, "--into", query_set, "--resolve", "keep")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"kept: {conflicts}:2: query 'q1', passage 'a': the query set grades it 2, the sheet 1",
        f"kept: {conflicts}:4: query 'q2', passage 'c': the query set grades it 1, the sheet 2",
        f"merged {conflicts} into {query_set}: 1 judgement added, 2 conflicts kept as the query set has it, "
        "1 row already in the query set",
    ]
    assert load_yaml_query_set(query_set).judgements["q1"] == {"a": 2, "b": 0, "e": 2}
    in_memory = merged_in_memory(query_set, conflicts, merge.REPLACE)
    code, out, _ = run_cli(capsys, "judgements", "merge", conflicts, "--into", query_set, "--resolve", "replace")
    assert code == 0
    assert_same_grades(in_memory, query_set)
    assert out.splitlines()[-1] == f"merged {conflicts} into {query_set}: 2 grades replaced, 2 rows already in the query set"
    text = query_set.read_text(encoding="utf-8")
    # The values replaced in place, each line's comment kept (one space before it: the line grew past its column).
    assert "      a: {grade: 1, source: human} # the answer\n      b: 0\n      e: {grade: 2, source: human}\n\n" in text
    assert "    judgements: {c: {grade: 2, source: llm:qwen}, 東京: 0} # flow style\n" in text
    assert load_yaml_query_set(query_set).judgements["q2"] == {"c": 2, "東京": 0}


DOCUMENT_CONFLICTS = """\
query_id,doc,start,end,grade,source
q-capital,café.md,0,7,1,human
q-dessert,café.md,7,36,0,llm:qwen
q-dessert,café.md,,,2,human
q-capital,東京.txt,0,11,1,human
"""


def test_document_conflicts_and_what_replace_removes(tmp_path, capsys):
    document_folder(tmp_path)
    query_set = tmp_path / "qs.yaml"
    conflicts = sheet(tmp_path / "c.csv", DOCUMENT_CONFLICTS)
    code, _, err = run_cli(capsys, "judgements", "merge", conflicts, "--into", query_set)
    assert code == 2
    assert err.splitlines()[:-1] == [
        f"{conflicts}:2: query 'q-capital', document 'café.md' [0, 7): the sheet grades it 1 but the query set judges "
        "the document 0; replace removes that judgement",
        f"{conflicts}:3: query 'q-dessert', document 'café.md' [7, 36): the sheet grades it 0 but the query set has "
        "evidence in it ([23, 35) grade 1); replace removes that evidence",
        f"{conflicts}:4: query 'q-dessert', document 'café.md': its evidence grades it 1, the sheet 2",
        f"{conflicts}:5: query 'q-capital', document '東京.txt' [0, 11): the query set's evidence grades it 2, the sheet 1",
    ]
    assert err.splitlines()[-1].startswith(f"rag-eval: error: 4 grades of {conflicts} conflict with {query_set}")
    assert query_set.read_text(encoding="utf-8") == DOCUMENT_SET
    in_memory = merged_in_memory(query_set, conflicts, merge.REPLACE)
    code, out, _ = run_cli(capsys, "judgements", "merge", conflicts, "--into", query_set, "--resolve", "replace")
    assert code == 0
    assert_same_grades(in_memory, query_set)
    assert out.splitlines()[-1] == f"merged {conflicts} into {query_set}: 4 grades replaced, 2 contradicted grades removed"
    assert query_set.read_text(encoding="utf-8") == """\
# Documents judged by evidence; comments must survive.
name: doc-holes
documents: docs
queries:
  - id: q-dessert
    text: Which dessert does the café serve?
    judgements:
      café.md: {grade: 2, source: human}
  - id: q-capital
    text: What is the capital of Japan?
    evidence:
      - {doc: 東京.txt, start: 0, end: 11, grade: 1, source: human}
      - {doc: café.md, start: 0, end: 7, grade: 1, source: human}

  - id: q-install
    text: How do I install it?
"""


def test_a_query_set_edited_during_the_merge_is_left_as_the_other_writer_saved_it(tmp_path, capsys, monkeypatch):
    passage_folder(tmp_path)
    query_set = tmp_path / "holes.yaml"
    rows = sheet(tmp_path / "s.csv", "query_id,doc,grade\nq1,e,1\n")
    theirs = PASSAGES.replace("# the first query", "# the first query, edited meanwhile")
    check = merge_file._check

    def someone_saves(target, text, edits):  # between reading the file and replacing it
        check(target, text, edits)
        query_set.write_text(theirs, encoding="utf-8")

    monkeypatch.setattr(merge_file, "_check", someone_saves)
    code, out, err = run_cli(capsys, "judgements", "merge", rows, "--into", query_set)
    assert (code, out) == (2, "")
    assert err == (f"rag-eval: error: {query_set}: the query set changed while the merge ran (saved by someone "
                   "else?); nothing written: merge again\n")
    assert query_set.read_text(encoding="utf-8") == theirs
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".holes")] == []  # no temporary file left


BAD = """\
query_id,doc,start,end,grade,source,text
q9,a,,,1,human,
q1,zz,,,1,human,
q1,d,,,5,human,
q1,e,,,-1,human,
q1,c,,,1,Human,
q1,é-1,,,1,human,something else
q1,d,0,3,1,human,
q2,d,,,,,
q2,e,,,1,human,"Echo"
"""


def test_bad_rows_are_each_one_located_line_and_nothing_is_written(tmp_path, capsys):
    passage_folder(tmp_path)
    query_set = tmp_path / "holes.yaml"
    bad = sheet(tmp_path / "bad.csv", BAD)
    code, out, err = run_cli(capsys, "judgements", "merge", bad, "--into", query_set)
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"{bad}:2: query 'q9' is not in the query set; the sheet must be pooled from this query set",
        f"{bad}:3: passage 'zz' is not in the corpus",
        f"{bad}:4: grade 5 is outside the query set's scale 0-2 (0: not relevant, 2: its highest grade); correct the grade",
        f"{bad}:5: grade -1 is outside the query set's scale 0-2 (0: not relevant, 2: its highest grade); correct the grade",
        f"{bad}:6: source 'Human' is not a provenance; write human, llm+verified or <kind>:<name> such as llm:qwen2.5",
        f"{bad}:7: the row's text differs from the text of passage 'é-1' in the query set (edited since the pool?); "
        "pool again, or empty the row's text cell",
        f"{bad}:8: a passage query set has no offsets; leave start and end empty",
        f"rag-eval: error: 7 rows of {bad} cannot be merged; nothing written (each listed above)",
    ]
    assert query_set.read_text(encoding="utf-8") == PASSAGES
    # One problem: one line. A near miss is named.
    one = sheet(tmp_path / "one.jsonl", json.dumps({"query_id": "q1", "doc": "é-2", "grade": 1}) + "\n")
    code, out, err = run_cli(capsys, "judgements", "merge", one, "--into", query_set)
    assert code == 2
    assert err == f"rag-eval: error: {one}:1: passage 'é-2' is not in the corpus; did you mean 'é-1'?\n"


@pytest.mark.parametrize(
    ("rows", "into", "message"),
    [
        ("query_id,doc,grade\nq1,e,1\n", "holes.json", "--into {t}/holes.json: merge writes into a YAML query set"),
        ("query_id,doc,grade\nq1,e,1\n", "missing.yaml", "{t}/missing.yaml: no such file"),
        ("query_id,doc\nq1,e\n", "holes.yaml", "{t}/s.csv:1: the header has no column grade"),
    ],
)
def test_bad_files_exit_2_with_one_line(tmp_path, capsys, rows, into, message):
    passage_folder(tmp_path)
    bad = sheet(tmp_path / "s.csv", rows)
    code, out, err = run_cli(capsys, "judgements", "merge", bad, "--into", tmp_path / into)
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1 and message.replace("{t}", str(tmp_path)) in err
    assert (tmp_path / "holes.yaml").read_text(encoding="utf-8") == PASSAGES


def test_a_sheet_that_contradicts_itself_is_refused(tmp_path, capsys):
    document_folder(tmp_path)
    rows = sheet(tmp_path / "s.csv", "query_id,doc,start,end,grade,source\nq-install,café.md,,,0,human\n"
                                     "q-install,café.md,7,36,2,human\n")
    code, _, err = run_cli(capsys, "judgements", "merge", rows, "--into", tmp_path / "qs.yaml")
    assert code == 2
    assert err == (f"rag-eval: error: {rows}:3: query 'q-install': the sheet grades document 'café.md' 0 on {rows}:2 and "
                   "gives it evidence here; grade the document or its spans, not both ways\n")


def test_a_bom_and_crlf_query_set_keeps_both(tmp_path, capsys):
    passage_folder(tmp_path)
    query_set = tmp_path / "holes.yaml"
    query_set.write_bytes(b"\xef\xbb\xbf" + PASSAGES.replace("\n", "\r\n").encode("utf-8"))
    rows = sheet(tmp_path / "s.csv", "query_id,doc,grade,source\nq1,e,1,llm:smol lm\n")
    code, _, err = run_cli(capsys, "judgements", "merge", rows, "--into", query_set)
    assert (code, err) == (0, "")
    expected = PASSAGES.replace("      b: 0\n\n", "      b: 0\n      e: {grade: 1, source: llm:smol lm}\n\n")
    assert query_set.read_bytes() == b"\xef\xbb\xbf" + expected.replace("\n", "\r\n").encode("utf-8")


def test_the_loader_reads_provenance_and_refuses_a_bad_one(tmp_path):
    query_set = tmp_path / "q.yaml"
    base = "corpus:\n  - {id: a, text: A}\nqueries:\n  - id: q\n    text: t\n    judgements:\n      a: "
    query_set.write_text(base + "{grade: 2, source: 'llm:m', annotator: ana, time: 2026-01-02T03:04:05Z}\n")
    assert load_yaml_query_set(query_set).judgements == {"q": {"a": 2.0}}
    for value, message in [
        ("{grade: 2}", "a judgement written as a mapping needs grade and source"),
        ("{grade: 2, source: robot}", "source 'robot' is not a provenance"),
        ("{grade: 2, source: human, by: x}", "unknown key 'by'"),
    ]:
        query_set.write_text(base + value + "\n")
        with pytest.raises(DatasetError, match=message):
            load_yaml_query_set(query_set)


def test_rows_written_by_a_judge_merge_with_their_provenance(tmp_path, capsys):
    passage_folder(tmp_path)
    query_set = tmp_path / "holes.yaml"
    rows = [SheetRow("q3", "e", grade=1, source="llm:qwen", annotator="judge-v1", time="2026-11-27T12:00:00Z"),
            SheetRow("q3", "a")]
    write_sheet(tmp_path / "s.jsonl", rows)
    code, out, _ = run_cli(capsys, "judgements", "merge", tmp_path / "s.jsonl", "--into", query_set)
    assert code == 0 and out.endswith("1 judgement added; 1 ungraded row skipped\n")
    assert ("    text: A question nobody judged yet\n    judgements:\n      e: {grade: 1, source: llm:qwen, annotator: "
            "judge-v1, time: '2026-11-27T12:00:00Z'}\n  - id: q4\n") in query_set.read_text(encoding="utf-8")
    assert load_yaml_query_set(query_set).judgements["q3"] == {"e": 1.0}


def test_a_layout_the_writer_cannot_keep_is_said_and_changed_least(tmp_path, capsys):
    query_set = sheet(tmp_path / "q.yaml", "name: rf\ndescription: a plain scalar\n  written over two lines\ncorpus:\n"
                                            "- {id: a, text: A}\n- {id: b, text: B}\nqueries:\n- id: q\n  text: t\n"
                                            "  judgements: {a: 1}\n")
    rows = sheet(tmp_path / "s.csv", "query_id,doc,grade\nq,b,0\n")
    code, out, _ = run_cli(capsys, "judgements", "merge", rows, "--into", query_set)
    assert code == 0
    assert out == (f"merged {rows} into {query_set}: 1 judgement added; note: the YAML writer also rewrote 2 other lines "
                   "(comments and order kept, the layout differs)\n")
    # The two lines of the description became one; the sequences keep their dash at the key's column.
    assert query_set.read_text(encoding="utf-8") == (
        "name: rf\ndescription: a plain scalar written over two lines\ncorpus:\n- {id: a, text: A}\n- {id: b, text: B}\n"
        "queries:\n- id: q\n  text: t\n  judgements: {a: 1, b: {grade: 0, source: human}}\n"
    )


def test_a_file_the_writer_would_change_is_refused(tmp_path, capsys):
    # ruamel.yaml writes the block mapping after a commented flow mapping as "- id: b text: B": the text would no
    # longer say what it said. The new text is compared with the old data changed by the merge: refused.
    text = ("# head comment\nname: x   # eol\ncorpus:\n# before a\n- {id: a, text: A}   # a's\n\n- id: b\n  text: B\n"
            "queries:\n- id: q\n  text: t\n  judgements: {a: 1}\n# tail\n")
    query_set = sheet(tmp_path / "q.yaml", text)
    rows = sheet(tmp_path / "s.csv", "query_id,doc,grade\nq,b,0\n")
    code, out, err = run_cli(capsys, "judgements", "merge", rows, "--into", query_set)
    assert (code, out) == (2, "")
    assert err == (f"rag-eval: error: {query_set}: the YAML writer cannot rewrite this file without changing what it says "
                   "(near line 7); nothing written: add the judgements by hand, or move the comments around them\n")
    assert query_set.read_text(encoding="utf-8") == text


def test_a_file_name_with_a_space_is_pointed_to_its_id(tmp_path, capsys):
    document_folder(tmp_path)
    rows = sheet(tmp_path / "s.csv", "query_id,doc,start,end,grade\nq-install,Getting Started.md,0,20,2\n"
                                     "q-install,東京.txt,20,40,1\n")
    code, _, err = run_cli(capsys, "judgements", "merge", rows, "--into", tmp_path / "qs.yaml")
    assert code == 2
    assert err.splitlines() == [
        f"{rows}:2: document 'Getting Started.md' is not in the documents; did you mean 'Getting%20Started.md'?",
        f"{rows}:3: document '東京.txt': end 40 is past the end of the document (25 characters)",
        f"rag-eval: error: 2 rows of {rows} cannot be merged; nothing written (each listed above)",
    ]


@pytest.mark.parametrize("doc", ["yes", "off", "010"])
def test_a_judged_id_yaml_11_reads_otherwise_is_written_quoted(tmp_path, capsys, doc):
    """Before: `judgements: {yes: ...}` was written (YAML 1.2 text, YAML 1.1 true), and the merge refused the file,
    blaming comments it does not have."""
    query_set = tmp_path / "qs.yaml"
    query_set.write_text(f'corpus:\n  - {{id: "{doc}", text: "the answer"}}\n  - {{id: other, text: nothing}}\n'
                         "queries:\n  - {id: q1, text: answer}\n  - {id: q0, text: other, judgements: {other: 1}}\n",
                         encoding="utf-8")
    rows = sheet(tmp_path / "s.csv", f"query_id,doc,grade,source\nq1,{doc},1,human\n")
    code, out, err = run_cli(capsys, "judgements", "merge", rows, "--into", query_set)
    assert (code, err) == (0, "") and out.endswith("1 judgement added\n")
    written = query_set.read_text(encoding="utf-8")
    assert any(f"  - {{id: q1, text: answer, judgements: {{{quoted}: {{grade: 1, source: human}}}}}}\n" in written
               for quoted in (f'"{doc}"', f"'{doc}'"))  # (ruamel quotes what YAML 1.2 reads otherwise itself)
    assert load_yaml_query_set(query_set).judgements["q1"] == {doc: 1.0}
