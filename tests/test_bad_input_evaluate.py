"""`rag-eval evaluate` on bad input: exit code 2 and one line on stderr that says what and where.

Each case writes a qrels file and a run file (one of them bad, or replaced by a
special file) and runs the command in-process. The error must be the only line on
stderr, hold no traceback, and name the file and, for a problem inside a file,
the line.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from peak_memory import run_with_peak

from rag_eval.cli import main

GOOD_QRELS = "q1 0 a 1\nq1 0 b 0\n"
GOOD_RUN = "q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\n"

Maker = Callable[[Path], None]


def text(content: str | bytes) -> Maker:
    data = content.encode("utf-8") if isinstance(content, str) else content
    return lambda path: path.write_bytes(data)


def fifo(path: Path) -> None:
    os.mkfifo(path)


def folder(path: Path) -> None:
    path.mkdir()


def symlink_loop(path: Path) -> None:
    path.symlink_to(path)


def unreadable(path: Path) -> None:
    path.write_text(GOOD_QRELS)
    path.chmod(0)


def missing(path: Path) -> None:
    pass


# (case, which file is bad, how to make it, expected message: a regex; QRELS / RUN stand for the paths)
CASES = [
    ("qrels: too few fields", "qrels", text("q1 0 a 1\nq1 0 b\n"),
     r"QRELS:2: expected 4 fields 'qid iter doc_id grade', found 3"),
    ("qrels: too many fields", "qrels", text("q1 0 a 1 extra\n"), r"QRELS:1: expected 4 fields .*found 5"),
    ("run: too few fields", "run", text("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0\n"), r"RUN:2: expected 6 fields .*found 5"),
    ("run: three fields", "run", text("q1 a 2.0\n"),
     r"RUN:1: expected 6 fields 'qid Q0 doc_id rank score tag', found 3"),
    # A doc id holding a space shifts the fields after it: trec_eval would read "my" as the doc and "1" as its score.
    ("run: a doc id with a space (7 fields)", "run", text("q1 Q0 other 1 0.9 t\nq1 Q0 my doc 2 0.2 t\n"),
     r"RUN:2: the rank field 'doc' is not a number; a TREC run line is 'qid Q0 doc_id rank score tag', "
     r"so a doc id cannot hold a space"),
    ("run: a doc id with a space, no rank (6 fields)", "run", text("q1 Q0 my doc 0.2 t\n"),
     r"RUN:1: the rank field 'doc' is not a number"),
    ("run: rank ending in a letter", "run", text("q1 Q0 a 1 0.9 t\nq1 Q0 b 2nd 0.2 t\n"),
     r"RUN:2: the rank field '2nd' is not a number"),
    ("qrels: grade not a number", "qrels", text("q1 0 a 1\nq1 0 b high\n"), r"QRELS:2: grade 'high' is not a number"),
    ("run: score not a number", "run", text("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 lots t\n"),
     r"RUN:2: score 'lots' is not a number"),
    ("qrels: grade nan", "qrels", text("q1 0 a 1\nq1 0 b nan\n"), r"QRELS:2: grade is nan; it must be a finite number"),
    ("run: score NaN", "run", text("q1 Q0 a 1 NaN t\n"), r"RUN:1: score is NaN; it must be a finite number"),
    ("qrels: grade inf", "qrels", text("q1 0 a inf\n"), r"QRELS:1: grade is inf; it must be a finite number"),
    # An infinite score cannot be ranked against another one (trec_eval) nor written to strict JSON.
    ("run: score inf", "run", text("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 inf t\n"),
     r"RUN:2: score is inf; it must be a finite number"),
    ("run: score -Infinity", "run", text("q1 Q0 a 1 -Infinity t\n"),
     r"RUN:1: score is -Infinity; it must be a finite number"),
    ("qrels: grade 1e999", "qrels", text("q1 0 a 1\nq1 0 b 1e999\n"),
     r"QRELS:2: grade '1e999' is too large for a float64"),
    ("run: score -1e999", "run", text("q1 Q0 a 1 -1e999 t\n"), r"RUN:1: score '-1e999' is too large for a float64"),
    ("qrels: grade 1_0", "qrels", text("q1 0 a 1\nq1 0 b 1_0\n"), r"QRELS:2: grade '1_0' is not a number"),
    ("run: hexadecimal score", "run", text("q1 Q0 a 1 0x1p3 t\n"), r"RUN:1: score '0x1p3' is not a number"),
    ("run: two dots", "run", text("q1 Q0 a 1 1.2.3 t\n"), r"RUN:1: score '1.2.3' is not a number"),
    ("qrels: duplicate doc", "qrels", text("q1 0 a 1\nq2 0 a 1\nq1 0 a 0\n"),
     r"QRELS:3: query 'q1' lists doc 'a' again \(first on line 1\)"),
    ("run: duplicate doc", "run", text("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\nq1 Q0 a 3 0.5 t\n"),
     r"RUN:3: query 'q1' lists doc 'a' again \(first on line 1\)"),
    ("qrels: NUL in a doc id", "qrels", text(b"q1 0 a\x00 1\n"),
     r"QRELS:1: doc id 'a\\x00' holds the control character U\+0000"),
    ("run: NUL in a query id", "run", text(b"q\x001 Q0 a 1 2.0 t\n"),
     r"RUN:1: query id 'q\\x001' holds the control character U\+0000"),
    ("run: DEL in a doc id", "run", text(b"q1 Q0 a\x7f 1 2.0 t\n"),
     r"RUN:1: doc id 'a\\x7f' holds the control character U\+007F"),
    ("qrels: CR-only line endings", "qrels", text("q1 0 a 1\rq1 0 b 0\r"), r"QRELS:1: a carriage return .*CR-only"),
    ("qrels: not UTF-8", "qrels", text(b"q1 0 caf\xe9 1\n"), r"QRELS:1: not UTF-8 text \(byte 0xe9 at column 9"),
    ("run: binary garbage", "run", text(bytes(range(256)) * 4),
     r"RUN:1: query id '\\x00\\x01\\x02.*holds the control character U\+0000 at position 1"),
    ("run: a NUL-filled file", "run", text(b"\x00" * 4096),
     r"RUN:1: query id '(\\x00){60}'\.\.\. \(4096 characters\) holds the control character U\+0000"),
    ("qrels: empty", "qrels", text(""), r"QRELS: holds no judgements; expected lines 'qid iter doc_id grade'"),
    ("qrels: only blank lines", "qrels", text("\n  \n\t\n"), r"QRELS: holds no judgements"),
    ("qrels: BEIR header, two columns", "qrels", text("query-id\tcorpus-id\tscore\nq1\ta\n"),
     r"QRELS:2: expected 3 fields 'query-id corpus-id score', found 2"),
    ("qrels: a FIFO", "qrels", fifo, r"QRELS: is a FIFO \(named pipe\), expected a qrels file"),
    ("run: a folder", "run", folder, r"RUN: is a folder, expected a TREC run file"),
    ("run: missing", "run", missing, r"RUN: no such file; expected a TREC run file"),
    ("qrels: a symlink loop", "qrels", symlink_loop, r"QRELS: cannot be opened \(a symbolic link loop\)"),
    ("qrels: unreadable", "qrels", unreadable, r"QRELS: permission denied"),
]


@pytest.mark.parametrize("which, make, expected", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_bad_file(tmp_path, capsys, which, make, expected):
    if make is unreadable and os.geteuid() == 0:
        pytest.skip("root reads a file whatever its mode")
    qrels, run = tmp_path / "judged.qrels", tmp_path / "ranked.run"
    text(GOOD_QRELS)(qrels) if which == "run" else make(qrels)
    text(GOOD_RUN)(run) if which == "qrels" else make(run)
    code = main(["evaluate", "--qrels", str(qrels), "--run", str(run), "-m", "ndcg@10"])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    pattern = expected.replace("QRELS", re.escape(str(qrels))).replace("RUN", re.escape(str(run)))
    assert re.search(pattern, err), err


def test_dev_zero_is_refused_without_reading_it(tmp_path, capsys):
    run = tmp_path / "ranked.run"
    run.write_text(GOOD_RUN)
    code = main(["evaluate", "--qrels", "/dev/zero", "--run", str(run), "-m", "ndcg"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    expected = "rag-eval: error: /dev/zero: is a character device, expected a qrels file (a regular file)"
    assert err.splitlines() == [expected]


@pytest.mark.parametrize("metric, expected", [
    ("ndgc@10", r"unknown metric 'ndgc@10' \(did you mean 'ndcg@10'\?\)"),
    ("ndcg@0", r"positive integer"),
    ("P_x", r"unknown metric|not an integer|positive integer"),
    ("ndcg@1.5", r"not an integer"),
])
def test_bad_metric(tmp_path, capsys, metric, expected):
    qrels, run = tmp_path / "judged.qrels", tmp_path / "ranked.run"
    qrels.write_text(GOOD_QRELS)
    run.write_text(GOOD_RUN)
    code = main(["evaluate", "--qrels", str(qrels), "--run", str(run), "-m", metric])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert re.search(expected, err), err


def test_the_cases_are_many_and_distinct():
    assert len(CASES) >= 25
    assert len({case[0] for case in CASES}) == len({str(case[2:]) for case in CASES}) == len(CASES)


@pytest.mark.parametrize("bom_in", ["qrels", "run", "both"])
def test_a_bom_is_not_an_error_and_not_part_of_the_first_id(tmp_path, capsys, bom_in):
    """Regression: the BOM became part of the first query id (nDCG 0.3155 instead of 1.0)."""
    qrels, run = tmp_path / "judged.qrels", tmp_path / "ranked.run"
    # q1: a (grade 1) first; q2: c (grade 2) first, d (grade 1) second: both ideal.
    qrels_text, run_text = "q1 0 a 1\nq2 0 c 2\nq2 0 d 1\n", "q1 Q0 a 1 3 t\nq2 Q0 c 1 2 t\nq2 Q0 d 2 1 t\n"
    qrels.write_bytes((b"\xef\xbb\xbf" if bom_in in ("qrels", "both") else b"") + qrels_text.encode())
    run.write_bytes((b"\xef\xbb\xbf" if bom_in in ("run", "both") else b"") + run_text.encode())
    code = main(["evaluate", "--qrels", str(qrels), "--run", str(run), "-m", "ndcg", "--format", "json", "-q"])
    out, _ = capsys.readouterr()
    assert code == 0
    data = json.loads(out)
    assert sorted(data["per_query"]) == ["q1", "q2"]
    assert math.isclose(data["aggregate"]["ndcg"], 1.0, rel_tol=1e-15)


def run_measured(args: list[str], folder: Path) -> tuple[int, str, str, float]:
    """(exit code, stdout, stderr, peak memory in MiB) of ``rag-eval ARGS`` in a process of its own."""
    with (folder / "out.txt").open("w") as out, (folder / "err.txt").open("w") as err:
        code, peak = run_with_peak(args, folder, out, err)
    return code, (folder / "out.txt").read_text(), (folder / "err.txt").read_text(), peak


@pytest.mark.parametrize("which", ["run", "qrels"])
def test_a_2gb_file_of_nul_bytes_is_refused_without_reading_it(tmp_path, which):
    """Before: MemoryError (exit 3) or gigabytes of memory before the message. A sparse file: no disk used."""
    nul = tmp_path / "nul"
    with nul.open("wb") as handle:
        handle.truncate(2 << 30)
    good = tmp_path / ("ranked.run" if which == "qrels" else "judged.qrels")
    good.write_text(GOOD_RUN if which == "qrels" else GOOD_QRELS)
    qrels, run = (nul, good) if which == "qrels" else (good, nul)
    code, out, err, peak = run_measured(["evaluate", "--qrels", str(qrels), "--run", str(run), "-m", "ndcg@10"], tmp_path)
    assert code == 2 and out == ""
    assert peak < 400, f"{peak:.0f} MiB: the file was read"  # (the interpreter and numpy: about 50 MiB)
    lines = [line for line in err.splitlines() if not line.startswith("rag-eval: read ")]
    assert lines == [
        f"rag-eval: error: {nul}:1: query id {chr(0) * 60!r}... (more than 1,048,576 characters) holds the control "
        "character U+0000 at position 1; ids may not hold control characters"
    ]


def test_files_that_share_no_query_are_refused_not_scored_0(tmp_path, capsys):
    # The first-day attack: SciFact's judgements against an NFCorpus run printed "ndcg@10 all 0.0000", exit 0.
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text(GOOD_QRELS + "q2 0 c 1\n")
    run.write_text("PLAIN-1 Q0 a 1 2.0 t\nPLAIN-2 Q0 b 1 1.0 t\n")
    assert main(["evaluate", "--qrels", str(qrels), "--run", str(run), "-m", "ndcg@10"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == (
        f"rag-eval: error: {run}: none of its 2 queries is judged in {qrels} (2 judged queries; e.g. run query "
        "'PLAIN-1', judged query 'q1'): the files share no query id; check that they come from the same dataset\n")
    # One query in common is a run to score (the other judged query scores 0, as trec_eval -c does).
    run.write_text("q1 Q0 a 1 2.0 t\nPLAIN-2 Q0 b 1 1.0 t\n")
    assert main(["evaluate", "--qrels", str(qrels), "--run", str(run), "-m", "ndcg@10"]) == 0
    assert capsys.readouterr().out == "ndcg@10\tall\t0.5000\n"
