"""The static retriever's stored rankings read safely: every bad file or value is one line (issue 10).

The replay itself (order, ties, cut-off, corpus checks) is tested in test_static_bm25.py;
here: files that are not regular, unreadable, not UTF-8, nested too deeply, with a BOM,
and ids and scores that break the id rule or are not finite numbers.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rag_eval._core.errors import RetrieverError
from rag_eval._retrievers.static import StaticRetriever

ID_RULE = "ids are one line of text without tabs or control characters"


def refused(**kwargs) -> str:
    with pytest.raises(RetrieverError) as excinfo:
        StaticRetriever(**kwargs)
    message = str(excinfo.value)
    assert "\n" not in message
    return message


# ---- the file ----------------------------------------------------------------------------------------


def test_folder_fifo_and_device_are_named(tmp_path):
    folder = tmp_path / "rankings.json"
    folder.mkdir()
    assert refused(path=str(folder)) == f"static: {folder}: is a folder, expected a JSON ranking file (a regular file)"
    fifo = tmp_path / "run.trec"
    os.mkfifo(fifo)
    # Before: the TREC reader opened the FIFO and blocked forever.
    assert refused(path=str(fifo)) == f"static: {fifo}: is a FIFO (named pipe), expected a TREC run file (a regular file)"
    assert refused(path="/dev/zero") == "static: /dev/zero: is a character device, expected a TREC run file (a regular file)"


def test_unreadable_file(tmp_path, monkeypatch):
    path = tmp_path / "rankings.json"
    path.write_text('{"q1": ["a"]}')
    monkeypatch.setattr("rag_eval._core.files.os.access", lambda p, mode: os.fspath(p) != os.fspath(path))
    assert refused(path=str(path)) == f"static: {path}: permission denied; make the JSON ranking file readable"


def test_json_over_the_size_limit(tmp_path, monkeypatch):
    path = tmp_path / "rankings.json"
    path.write_text('{"q1": ["a", "b", "c"]}')
    monkeypatch.setattr("rag_eval._core.files.MAX_DOCUMENT_BYTES", 10)
    assert refused(path=str(path)).startswith(f"static: {path}: is 23 bytes, over the 10 bytes limit for a JSON ranking")


def test_json_not_utf8_names_line_and_column(tmp_path):
    path = tmp_path / "rankings.json"
    path.write_bytes(b'{"q1":\n  ["caf\xe9"]}')
    assert refused(path=str(path)) == (
        f"static: {path}: line 2, column 8: not UTF-8 text (byte 0xe9: invalid continuation byte); save the file as UTF-8"
    )


def test_json_nested_20000_deep(tmp_path):
    # Before: RecursionError from json.loads.
    path = tmp_path / "rankings.json"
    path.write_text('{"q1": ' + "[" * 20_000 + "]" * 20_000 + "}")
    assert refused(path=str(path)) == (
        f"static: {path}: line 1: invalid JSON: nested more than 500 levels deep (column 507); flatten the structure"
    )


def test_json_number_too_long_to_read(tmp_path):
    path = tmp_path / "rankings.json"
    path.write_text('{"q1": {"a": ' + "9" * 5000 + "}}")
    assert refused(path=str(path)).startswith(f"static: {path}: invalid JSON: a number is too long to read (")


def test_json_with_a_byte_order_mark(tmp_path):
    path = tmp_path / "rankings.json"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"q1": ["a", "b"]}')
    assert StaticRetriever(path=str(path)).rankings == {"q1": {"a": 2.0, "b": 1.0}}


# ---- ids and scores ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rankings, message",
    [
        ({"q\x00": ["a"]}, f"query id: an id holds the control character U+0000 at position 2; {ID_RULE} (got 'q\\x00')"),
        ({"q1": ["a\nb"]}, f"query 'q1': doc id: an id holds the control character U+000A at position 2; {ID_RULE} (got 'a\\nb')"),
        ({"q1": {"a\tb": 1.0}}, f"query 'q1': doc id: an id holds the control character U+0009 at position 2; {ID_RULE}"),
        ({"q1": [1.5]}, "query 'q1': doc id: an id must be text; this one was read as a decimal number"),
        ({"q1": [""]}, f"query 'q1': doc id: an id is empty; {ID_RULE} (got '')"),
        ({"q1": {"a": float("nan")}}, "query 'q1', doc 'a': score nan is not a finite number"),
        ({"q1": {"a": float("inf")}}, "query 'q1', doc 'a': score inf is not a finite number"),
        ({"q1": {"a": 10**400}}, "query 'q1', doc 'a': score 1000000000000000000000000000000000000000 is not a finite"),
        ({"q1": {"a": True}}, "query 'q1': scores must be numbers"),
        ({"q1": {"a": "1_0"}}, "query 'q1': scores must be numbers"),
        ({"q1": {"a": 1, " a ": 2}}, "query 'q1' scores doc 'a' twice"),
        ({1: ["a"], "1": ["b"]}, "query '1' appears twice"),
    ],
)
def test_ids_follow_the_id_rule_and_scores_are_finite(rankings, message):
    assert refused(rankings=rankings).startswith(f"static: rankings: {message}")


def test_integer_ids_and_numeric_score_strings_are_read():
    retriever = StaticRetriever(rankings={7: [12, "b"], "q2": {"a": "0.5", "b": -2}})
    assert retriever.rankings == {"7": {"12": 2.0, "b": 1.0}, "q2": {"a": 0.5, "b": -2.0}}


def test_ids_with_punctuation_and_any_length_are_kept_exactly(tmp_path):
    long_id = "reports/2024/q3.pdf#p12#c7" + "x" * 2000
    path = tmp_path / "rankings.json"
    path.write_text(json.dumps({"<dbpedia:Oceanic_Airlines>": [long_id, "caf\u00e9 \u00a0id"]}, ensure_ascii=False))
    assert StaticRetriever(path=str(path)).rankings == {
        "<dbpedia:Oceanic_Airlines>": {long_id: 2.0, "caf\u00e9 \u00a0id": 1.0}
    }


def test_missing_file_message_is_unchanged(tmp_path: Path):
    assert refused(path=str(tmp_path / "none.run")) == f"static: {tmp_path / 'none.run'}: no such file"


@pytest.mark.parametrize("score", ["inf", "-inf", "Infinity"])
def test_an_infinite_score_in_a_run_file_is_refused_naming_its_line(tmp_path, score):
    """As `rag-eval evaluate` does (docs/semantics.md): an infinite score cannot be ranked against another."""
    path = tmp_path / "stored.run"
    path.write_text(f"q1 Q0 a 1 2.0 t\nq1 Q0 b 2 {score} t\n")
    assert refused(path=str(path)) == f"static: {path}:2: score is {score}; it must be a finite number"
