"""The judgement sheet: CSV and JSON Lines round trips of messy values, and one located error per bad row."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_eval._core.errors import InputFormatError
from rag_eval._data.judging.sheet import SheetRow, read_sheet, write_sheet

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)  # any UTF-8: commas, quotes, newlines
ID = TEXT.filter(lambda s: s.strip() != "" and s == s.strip())


@st.composite
def rows(draw):
    out, keys = [], set()
    for _ in range(draw(st.integers(0, 6))):
        span = draw(st.one_of(st.none(), st.tuples(st.integers(0, 50), st.integers(1, 50))))
        start, end = (None, None) if span is None else (span[0], span[0] + span[1])
        grade = draw(st.one_of(st.none(), st.sampled_from([0.0, 1.0, 2.0, 3.0, 0.5])))
        row = SheetRow(
            query_id=draw(ID), doc=draw(ID), query_text=draw(TEXT), start=start, end=end, text=draw(TEXT),
            grade=grade, source="" if grade is None else draw(st.sampled_from(["human", "llm:smol", "llm+verified"])),
            annotator=draw(TEXT), time=draw(TEXT), priority=draw(st.one_of(st.none(), st.integers(1, 99))), note=draw(TEXT),
        )
        if row.key not in keys:
            keys.add(row.key)
            out.append(row)
    return out


@settings(max_examples=60, deadline=None)
@given(rows(), st.sampled_from([".csv", ".jsonl"]))
def test_a_sheet_reads_back_as_written(tmp_path_factory, written, suffix):
    path = tmp_path_factory.mktemp("sheet") / f"s{suffix}"
    assert write_sheet(path, written) == len(written)
    assert read_sheet(path) == written


def test_units_are_passages_or_spans():
    assert SheetRow("q", "doc a").unit == "doc a"
    assert SheetRow("q", "doc a", start=3, end=9).unit == "doc a#3-9"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("query_id,doc\nq1,d1\n", r"s.csv:1: the header has no column grade"),
        ("query_id,doc,grade\nq1,d1,high\n", r"s.csv:2: grade 'high' is not a number"),
        ("query_id,doc,grade,start\nq1,d1,1,4\n", r"s.csv:2: start and end go together"),
        ("query_id,doc,grade\nq1,d1,1\nq1,d1,2\n", r"s.csv:3: .*listed again \(first on line 2\)"),
        ("query_id,doc,grade\nq1,,1\n", r"s.csv:2: doc is empty"),
        ("query_id,doc,grade\nq1,d1\n", r"s.csv:2: 2 cells where the header has 3"),
        ("", r"s.csv: the sheet is empty"),
    ],
)
def test_a_bad_csv_row_is_one_located_error(tmp_path, content, message):
    path = tmp_path / "s.csv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputFormatError, match=message):
        read_sheet(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"query_id": "q", "doc": "d", "grade": 1}\n[1]\n', r"s.jsonl:2: a list, not a JSON object"),
        ('{"query_id": "q", "doc": "d"}\n', r"s.jsonl:1: no grade"),
        ('{"query_id": "q", "doc": "d", "grade": null, "colour": "red"}\n', r"s.jsonl:1: unknown column 'colour'"),
        ('{"query_id": "q", "doc": "d", "grade": 1, "start": 5, "end": 5}\n', r"s.jsonl:1: span \[5, 5\) is empty"),
        ("{oops\n", r"s.jsonl:1: not JSON"),
    ],
)
def test_a_bad_jsonl_row_is_one_located_error(tmp_path, content, message):
    path = tmp_path / "s.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputFormatError, match=message):
        read_sheet(path)


def test_a_grade_typed_by_hand_is_a_humans_and_a_bom_is_not_content(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("\ufeffquery_id,doc,grade\nq1,d1,2\n", encoding="utf-8")
    assert read_sheet(path) == [SheetRow("q1", "d1", grade=2.0, source="human")]


def test_another_extension_is_refused(tmp_path):
    with pytest.raises(InputFormatError, match=r"s.xlsx: a judgement sheet is .csv or .jsonl"):
        write_sheet(tmp_path / "s.xlsx", [])
