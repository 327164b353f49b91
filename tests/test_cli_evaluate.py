"""`rag-eval evaluate`: output formats, values equal to trec_eval's, and bad input.

Expected numbers come from trec_eval's own output files (out.test.aq, .aqc, .aql
in shared/datasets/trec_eval_test) or are worked out by hand in a comment.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rag_eval._scoring.metrics.measures import valid_metric_names
from rag_eval.cli import main

# trec_eval name -> rag_eval's canonical name, as printed by rag-eval.
MEASURES = {
    "ndcg": "ndcg",
    "ndcg_cut_10": "ndcg@10",
    "map": "map",
    "map_cut_100": "map@100",
    "P_5": "precision@5",
    "recall_100": "recall@100",
    "recip_rank": "mrr",
    "Rprec": "r_precision",
    "success_1": "hit_rate@1",
}


def trec_eval_output(path: Path) -> dict[tuple[str, str], str]:
    """(measure, topic) -> value as trec_eval printed it (4 decimals)."""
    out = {}
    for line in path.read_text().splitlines():
        measure, topic, value = re.split(r"\s+", line.strip())
        if measure in MEASURES:
            out[(MEASURES[measure], topic)] = value
    return out


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["evaluate", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def metric_args(names) -> list[str]:
    return [arg for name in names for arg in ("-m", name)]


# ---- output against trec_eval ----------------------------------------------------


def test_text_format_matches_trec_eval_digit_for_digit(trec_eval_test, capsys):
    expected = trec_eval_output(trec_eval_test / "out.test.aq")
    code, out, err = run_cli(
        capsys, "--qrels", str(trec_eval_test / "qrels.test"), "--run", str(trec_eval_test / "results.test"),
        *metric_args(MEASURES), "--per-query",
    )
    assert code == 0 and err == f"rag-eval: read {trec_eval_test / 'qrels.test'} as TREC qrels\n"
    lines = out.splitlines()
    rows = [line.split("\t") for line in lines]
    assert all(len(row) == 3 for row in rows), lines
    # per-query rows first, then one "all" row per metric, in the order asked for.
    assert [row[1] for row in rows] == ["301"] * 9 + ["302"] * 9 + ["303"] * 9 + ["all"] * 9
    assert [row[0] for row in rows[-9:]] == list(MEASURES.values())
    assert {(m, q): v for m, q, v in rows} == expected


def test_text_format_without_per_query_prints_only_all_rows(trec_eval_test, capsys):
    expected = trec_eval_output(trec_eval_test / "out.test.aq")
    code, out, _ = run_cli(
        capsys, "--qrels", str(trec_eval_test / "qrels.test"), "--run", str(trec_eval_test / "results.test"),
        "-m", "ndcg", "-m", "P_5",
    )
    assert code == 0
    assert out == f"ndcg\tall\t{expected[('ndcg', 'all')]}\nprecision@5\tall\t{expected[('precision@5', 'all')]}\n"
    assert expected[("ndcg", "all")] == "0.4021"  # SEMANTICS.md / SOURCE.md quote this value


def test_json_format_shape_and_values(trec_eval_test, capsys):
    expected = trec_eval_output(trec_eval_test / "out.test.aq")
    args = ["--qrels", str(trec_eval_test / "qrels.test"), "--run", str(trec_eval_test / "results.test"),
            *metric_args(MEASURES), "--format", "json"]

    code, out, err = run_cli(capsys, *args)
    assert code == 0 and err.splitlines() == [f"rag-eval: read {trec_eval_test / 'qrels.test'} as TREC qrels"]
    data = json.loads(out)
    assert list(data) == ["aggregate", "left_out", "unanswered_queries", "unjudged_queries"]
    assert (data["left_out"], data["unanswered_queries"], data["unjudged_queries"]) == ({}, [], [])
    assert list(data["aggregate"]) == list(MEASURES.values())
    for name, value in data["aggregate"].items():
        assert isinstance(value, float)
        assert f"{value:.4f}" == expected[(name, "all")], name

    code, out, _ = run_cli(capsys, *args, "--per-query")
    data = json.loads(out)
    assert code == 0 and list(data) == ["aggregate", "per_query", "left_out", "unanswered_queries", "unjudged_queries"]
    assert list(data["per_query"]) == ["301", "302", "303"]
    for qid, values in data["per_query"].items():
        assert list(values) == list(MEASURES.values())
        for name, value in values.items():
            assert f"{value:.4f}" == expected[(name, qid)], (name, qid)
    # JSON keeps full precision: the mean of the per-query values, not of rounded ones.
    for name in MEASURES.values():
        mean = sum(data["per_query"][q][name] for q in data["per_query"]) / 3
        assert math.isclose(data["aggregate"][name], mean, rel_tol=1e-14, abs_tol=1e-15)


def test_graded_qrels_with_relevance_threshold_match_trec_eval_l2(trec_eval_test, capsys):
    expected = trec_eval_output(trec_eval_test / "out.test.aql")
    code, out, _ = run_cli(
        capsys, "--qrels", str(trec_eval_test / "qrels.rel_level"), "--run", str(trec_eval_test / "results.test"),
        *metric_args(MEASURES), "--per-query", "--relevance-threshold", "2", "--no-relevant", "zero",
    )
    assert code == 0
    assert {(m, q): v for m, q, v in (line.split("\t") for line in out.splitlines())} == expected
    assert expected[("ndcg@10", "all")] == "0.2656"  # quoted in SOURCE.md


def test_truncated_run_with_trailing_fields_matches_trec_eval_c(trec_eval_test, capsys):
    # results.trunc has junk after the tag on some lines (trec_eval ignores it) and no
    # topic 302; `trec_eval -c` scores 302 as 0 and keeps it in the mean (out.test.aqc).
    expected = trec_eval_output(trec_eval_test / "out.test.aqc")
    code, out, err = run_cli(
        capsys, "--qrels", str(trec_eval_test / "qrels.test"), "--run", str(trec_eval_test / "results.trunc"),
        *metric_args(MEASURES), "--per-query",
    )
    assert code == 0, err
    got = {(m, q): v for m, q, v in (line.split("\t") for line in out.splitlines())}
    assert got == expected
    assert got[("map", "302")] == "0.0000"


def test_markdown_format(trec_eval_test, capsys):
    code, out, _ = run_cli(
        capsys, "--qrels", str(trec_eval_test / "qrels.test"), "--run", str(trec_eval_test / "results.test"),
        "-m", "ndcg", "--format", "markdown",
    )
    assert code == 0
    assert "| ndcg | 0.4021 |" in out.splitlines()


# ---- options on a hand example -------------------------------------------------


@pytest.fixture
def small(tmp_path) -> tuple[Path, Path]:
    # q1: a (grade 2) ranked 2nd behind x (unjudged); q2: nothing relevant; q3 (run only): unjudged.
    qrels = tmp_path / "small.qrels"
    qrels.write_text("q1 0 a 2\nq1 0 b 0\nq2 0 c 0\n")
    run = tmp_path / "small.run"
    run.write_text("q1 Q0 x 1 3.0 t\nq1 Q0 a 2 2.5 t\nq2 Q0 c 1 1.0 t\nq3 Q0 a 1 1.0 t\n")
    return qrels, run


def test_no_relevant_and_gain_options(small, capsys):
    qrels, run = small
    base = ["--qrels", str(qrels), "--run", str(run), "-m", "ndcg", "--format", "json", "--per-query"]
    # q1: DCG = g/log2(3), IDCG = g -> nDCG = 1/log2(3) with either gain.
    one_third = 1 / math.log2(3)

    code, out, _ = run_cli(capsys, *base)
    data = json.loads(out)
    assert code == 0
    assert data["aggregate"]["ndcg"] == pytest.approx(one_third, rel=1e-14)  # q2 skipped
    assert data["per_query"]["q2"]["ndcg"] is None
    assert set(data["per_query"]) == {"q1", "q2"}  # q3 has no judgements

    code, out, _ = run_cli(capsys, *base, "--no-relevant", "zero", "--gain", "exponential")
    data = json.loads(out)
    assert data["aggregate"]["ndcg"] == pytest.approx(one_third / 2, rel=1e-14)
    assert data["per_query"]["q2"]["ndcg"] == 0.0

    code, out, err = run_cli(capsys, *base, "--no-relevant", "error")
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and "q2" in err and "Traceback" not in err


def test_queries_left_out_unanswered_or_unjudged_are_listed(tmp_path, capsys):
    """README: skipped queries are "left out of the mean (and listed)". q2 has no relevant
    document (left out of ndcg and precision, not of judged), q2 and q3 were not answered
    (q3 scores 0), q9 has no judgements (ignored). Text: on stderr, stdout as trec_eval's."""
    qrels = tmp_path / "q"
    qrels.write_text("q1 0 d1 1\nq2 0 d1 0\nq3 0 d5 1\n")
    run = tmp_path / "r"
    run.write_text("q1 Q0 d1 1 1 t\nq9 Q0 d1 1 1 t\n")
    base = ["--qrels", str(qrels), "--run", str(run), "-m", "ndcg", "-m", "P@1", "-m", "judged@1"]
    code, out, err = run_cli(capsys, *base)
    assert code == 0
    assert out == "ndcg\tall\t0.5000\nprecision@1\tall\t0.5000\njudged@1\tall\t0.3333\n"
    assert err.splitlines() == [
        f"rag-eval: read {qrels} as TREC qrels",
        "rag-eval: 1 judged query with no relevant document left out of the mean of ndcg, precision@1 "
        "(no_relevant: skip): q2",
        "rag-eval: 2 judged queries the run did not answer, scored 0 (unless left out above): q2, q3",
        "rag-eval: 1 run query without judgements, ignored: q9",
    ]
    code, out, err = run_cli(capsys, *base, "--format", "json")
    data = json.loads(out)
    assert code == 0 and err.splitlines() == [f"rag-eval: read {qrels} as TREC qrels"]
    assert data["left_out"] == {"ndcg": ["q2"], "precision@1": ["q2"]}
    assert (data["unanswered_queries"], data["unjudged_queries"]) == (["q2", "q3"], ["q9"])
    # no_relevant zero: nothing left out, q2 scores 0 (trec_eval's mean).
    code, out, err = run_cli(capsys, *base, "--no-relevant", "zero")
    assert out.splitlines()[0] == f"ndcg\tall\t{1 / 3:.4f}"
    assert err.splitlines()[1] == "rag-eval: 2 judged queries the run did not answer, scored 0: q2, q3"


def test_long_lists_of_queries_show_the_first_five_and_the_count(tmp_path, capsys):
    qrels = tmp_path / "q"
    qrels.write_text("".join(f"q{i:02d} 0 d 1\n" for i in range(12)))
    run = tmp_path / "r"
    run.write_text("q00 Q0 d 1 1 t\n" + "".join(f"u{i} Q0 d 1 1 t\n" for i in range(7)))
    code, _, err = run_cli(capsys, "--qrels", str(qrels), "--run", str(run), "-m", "ndcg")
    assert code == 0
    assert err.splitlines()[1:] == [
        "rag-eval: 11 judged queries the run did not answer, scored 0: q01, q02, q03, q04, q05, ... (11 in all)",
        "rag-eval: 7 run queries without judgements, ignored: u0, u1, u2, u3, u4, ... (7 in all)",
    ]


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize(
    "qrels, gain, problem",
    [
        ("q1 0 d1 1e308\nq1 0 d2 1e308\nq1 0 d3 1e308\n", "linear",
         "its ideal DCG is infinite, as its gains (grades up to 1e+308) add up past the largest float64 "
         "(about 1.8e308); use smaller grades"),
        ("q0 0 d1 1\nq1 0 d1 1100\n", "exponential",
         "its ideal DCG is infinite, as with exponential gain, 2^1100 - 1 is past the largest float64 "
         "(about 1.8e308); use grades up to 1023 with exponential gain, or linear gain"),
    ],
)
def test_gains_too_large_for_a_float_are_refused_naming_the_query(tmp_path, capfd, fmt, qrels, gain, problem):
    """Not 'ndcg 0.0000, idcg inf' (nor a crash on JSON, nor a numpy warning): trec_eval cannot
    score such grades either. A subprocess, so that a RuntimeWarning would show on stderr."""
    (tmp_path / "g").write_text(qrels)
    (tmp_path / "r").write_text("q0 Q0 d1 1 1 t\nq1 Q0 d1 1 1 t\n")
    done = subprocess.run(
        [sys.executable, "-m", "rag_eval.cli", "evaluate", "--qrels", "g", "--run", "r", "-m", "ndcg", "-m", "idcg",
         "--gain", gain, "--format", fmt],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"rag-eval: error: judgements: query 'q1': ndcg cannot be computed: {problem} "
        "(trec_eval cannot score such grades either)\n"
    )


def test_the_largest_gains_a_float_holds_are_scored_exactly(tmp_path, capsys):
    # Exponential gain of 1023 is 2^1023 - 1 ~ 8.99e307: DCG@2 of [1023, 1023] is g + g/log2(3),
    # finite (1.46e308), so nDCG = 1; nDCG@1 of the run [d2 unjudged, d1] is 0.
    (tmp_path / "g").write_text("q1 0 d1 1023\nq1 0 d3 1023\n")
    (tmp_path / "r").write_text("q1 Q0 d1 1 2 t\nq1 Q0 d3 2 1 t\n")
    code, out, _ = run_cli(capsys, "--qrels", str(tmp_path / "g"), "--run", str(tmp_path / "r"),
                           "-m", "ndcg", "-m", "idcg", "--gain", "exponential", "--format", "json")
    data = json.loads(out)["aggregate"]
    assert code == 0 and data["ndcg"] == 1.0
    assert data["idcg"] == (2.0**1023 - 1) * (1 + 1 / math.log2(3))


def test_micro_aggregation_option(tmp_path, capsys):
    # q1: DCG 1/log2(3), IDCG 1; q2: DCG = IDCG = 3. micro = (1/log2(3) + 3) / 4.
    qrels = tmp_path / "q"
    qrels.write_text("q1 0 a 1\nq2 0 b 3\n")
    run = tmp_path / "r"
    run.write_text("q1 Q0 x 1 2 t\nq1 Q0 a 2 1 t\nq2 Q0 b 1 1 t\n")
    code, out, _ = run_cli(capsys, "--qrels", str(qrels), "--run", str(run), "-m", "ndcg", "--aggregation", "micro",
                           "--format", "json")
    assert code == 0
    assert json.loads(out)["aggregate"]["ndcg"] == pytest.approx((1 / math.log2(3) + 3) / 4, rel=1e-14)


# ---- BEIR qrels, told from TREC qrels by their content ----------------------------------


def test_beir_qrels_are_read_and_named_on_stderr_only(trec_eval_test, tmp_path, capsys):
    """The same judgements as BEIR qrels (header, three tab-separated columns) give the same
    numbers as the TREC qrels; which format was read is said on stderr, stdout stays JSON."""
    beir = tmp_path / "test.tsv"
    rows = [line.split() for line in (trec_eval_test / "qrels.test").read_text().splitlines() if line.strip()]
    beir.write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, _, d, g in rows))
    run = str(trec_eval_test / "results.test")
    args = ["--run", run, *metric_args(MEASURES), "--format", "json", "--per-query"]
    code, from_trec, _ = run_cli(capsys, "--qrels", str(trec_eval_test / "qrels.test"), *args)
    assert code == 0
    code, from_beir, err = run_cli(capsys, "--qrels", str(beir), *args)
    assert code == 0
    assert err.splitlines() == [f"rag-eval: read {beir} as BEIR qrels (TSV with header query-id corpus-id score)"]
    assert json.loads(from_beir) == json.loads(from_trec)
    assert f"{json.loads(from_beir)['aggregate']['ndcg']:.4f}" == "0.4021"  # trec_eval's value (out.test.aq)


@pytest.mark.parametrize(
    "content, problem",
    [
        ("query-id\tcorpus-id\tscore\nq1\ta\n", r"beir.tsv:2: expected 3 fields 'query-id corpus-id score', found 2"),
        ("query-id\tcorpus-id\tscore\nq1\ta\thigh\n", r"beir.tsv:2: grade 'high' is not a number"),
        ("query-id\tcorpus-id\nq1\ta\t1\n", r"beir.tsv:1: expected the BEIR qrels header 'query-id corpus-id score'"),
        ("query-id\tcorpus-id\tscore\n", r"beir.tsv: holds no judgements"),
        ("query-id\tcorpus-id\tscore\nq1\ta\t1\nq1\ta\t2\n", r"beir.tsv:3: query 'q1' lists doc 'a' again"),
    ],
)
def test_bad_beir_qrels_are_located(tmp_path, capsys, content, problem):
    qrels, run = tmp_path / "beir.tsv", tmp_path / "ranked.run"
    qrels.write_text(content)
    run.write_text(GOOD_RUN)
    code, out, err = run_cli(capsys, "--qrels", str(qrels), "--run", str(run), "-m", "ndcg")
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert re.search(problem, err), err


def test_a_three_column_file_without_the_beir_header_is_refused_as_trec(tmp_path, capsys):
    qrels, run = tmp_path / "q.tsv", tmp_path / "ranked.run"
    qrels.write_text("q1\ta\t1\n")
    run.write_text(GOOD_RUN)
    code, out, err = run_cli(capsys, "--qrels", str(qrels), "--run", str(run), "-m", "ndcg")
    assert code == 2 and out == ""
    assert err.strip() == f"rag-eval: error: {qrels}:1: expected 4 fields 'qid iter doc_id grade', found 3"


# ---- the allocator tuning belongs to evaluate only ---------------------------------------


def test_allocator_is_tuned_by_evaluate_and_no_other_command(tmp_path, capsys, monkeypatch):
    from rag_eval._core import allocator

    calls = []
    monkeypatch.setattr(allocator, "keep_freed_memory", lambda: calls.append(1) or True)
    qrels, run = tmp_path / "judged.qrels", tmp_path / "ranked.run"
    qrels.write_text(GOOD_QRELS)
    run.write_text(GOOD_RUN)
    assert main(["validate", str(tmp_path / "absent.yaml")]) == 2
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 2
    capsys.readouterr()
    assert calls == []
    assert main(["evaluate", "--qrels", str(qrels), "--run", str(run), "-m", "ndcg"]) == 0
    assert calls == [1]


# ---- bad input: exit 2, one line naming file, line and problem ----------------------

GOOD_QRELS = "q1 0 a 1\nq1 0 b 0\n"
GOOD_RUN = "q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\n"


@pytest.mark.parametrize(
    "which, content, line, problem",
    [
        ("qrels", "q1 0 a 1\nq1 0 b\n", 2, r"expected 4 fields.*found 3"),
        ("qrels", "q1 0 a\nq1 0 b 1\n", 1, r"expected 4 fields.*found 3"),
        ("qrels", "q1 0 a 1\nq1 0 b 1 extra\n", 2, r"expected 4 fields.*found 5"),
        ("qrels", "q1 0 a 1 extra\nq1 0 b 1\n", 1, r"expected 4 fields.*found 5"),
        ("qrels", "q1 0 a 1\nq1 0 b high\n", 2, r"grade 'high' is not a number"),
        ("qrels", "q1 0 a 1\nq1 0 b nan\n", 2, r"grade is nan.*finite"),
        ("qrels", "q1 0 a 1\nq2 0 a 1\nq1 0 a 0\n", 3, r"query 'q1' lists doc 'a' again \(first on line 1\)"),
        ("run", "q1 Q0 a 1 2.0 t\nq1 Q0 b 2 t\n", 2, r"expected 6 fields.*found 5"),
        # Five fields with a numeric fifth (the tag is missing): trec_eval refuses it too.
        ("run", "q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0\n", 2, r"expected 6 fields.*found 5"),
        ("run", "q1 Q0 a 1\n", 1, r"expected 6 fields.*found 4"),
        ("run", "q1 Q0 a 1 2.0 t\nq1 Q0 b 2 high t\n", 2, r"score 'high' is not a number"),
        ("run", "q1 Q0 a 1 2.0 t\nq1 Q0 b 2 NaN t\n", 2, r"score is NaN.*finite"),
        ("run", "q1 Q0 a 1 nan t\n", 1, r"score is nan.*finite"),
        ("run", "q1 Q0 a 1 2.0 t\nq2 Q0 a 1 2.0 t\nq1 Q0 a 3 1.0 t\n", 3,
         r"query 'q1' lists doc 'a' again \(first on line 1\)"),
    ],
)
def test_bad_file_gives_one_line_naming_file_line_and_problem(tmp_path, capsys, which, content, line, problem):
    qrels, run = tmp_path / "judged.qrels", tmp_path / "ranked.run"
    qrels.write_text(content if which == "qrels" else GOOD_QRELS)
    run.write_text(content if which == "run" else GOOD_RUN)
    bad = qrels if which == "qrels" else run
    code, out, err = run_cli(capsys, "--qrels", str(qrels), "--run", str(run), "-m", "ndcg@10")
    assert code == 2
    assert out == ""
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    assert f"{bad}:{line}:" in err, err
    assert re.search(problem, err), err


@pytest.mark.parametrize("which", ["qrels", "run"])
def test_missing_file(tmp_path, capsys, which):
    qrels, run = tmp_path / "judged.qrels", tmp_path / "ranked.run"
    qrels.write_text(GOOD_QRELS)
    run.write_text(GOOD_RUN)
    missing = tmp_path / "nowhere" / f"absent.{which}"
    args = ["--qrels", str(missing if which == "qrels" else qrels), "--run", str(missing if which == "run" else run)]
    code, out, err = run_cli(capsys, *args, "-m", "ndcg")
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert str(missing) in err and "no such file" in err


@pytest.mark.parametrize(
    "metric, problem",
    [
        ("ndgc@10", r"unknown metric 'ndgc@10' \(did you mean 'ndcg@10'\?\)"),
        ("ndcg@0", r"positive integer"),
        ("P_0", r"positive integer"),
        ("ndcg@-2", r"positive integer"),
        ("ndcg@1.5", r"not an integer"),
        ("precision", r"needs a cutoff"),
        ("r_precision@5", r"takes no cutoff"),
    ],
)
def test_bad_metric(tmp_path, capsys, metric, problem):
    qrels, run = tmp_path / "judged.qrels", tmp_path / "ranked.run"
    qrels.write_text(GOOD_QRELS)
    run.write_text(GOOD_RUN)
    code, out, err = run_cli(capsys, "--qrels", str(qrels), "--run", str(run), "-m", "ndcg", "-m", metric)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert re.search(problem, err), err
    if metric.startswith("ndgc"):
        for form in valid_metric_names():
            assert form in err


# ---- the installed console script -------------------------------------------------


def console_script() -> Path:
    script = Path(sys.executable).with_name("rag-eval")
    if not script.exists():
        pytest.skip(f"console script not installed next to {sys.executable}")
    return script


def test_console_script_end_to_end(tmp_path):
    script = console_script()
    qrels, run = tmp_path / "judged.qrels", tmp_path / "ranked.run"
    qrels.write_text(GOOD_QRELS)
    run.write_text(GOOD_RUN)
    # a (grade 1) ranked first: nDCG 1, P@5 = 1/5.
    done = subprocess.run(
        [str(script), "evaluate", "--qrels", str(qrels), "--run", str(run), "-m", "ndcg", "-m", "P_5"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ndcg\tall\t1.0000\nprecision@5\tall\t0.2000\n"

    run.write_text("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 lots t\n")
    done = subprocess.run(
        [str(script), "evaluate", "--qrels", str(qrels), "--run", str(run), "-m", "ndcg"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [f"rag-eval: error: {run}:2: score 'lots' is not a number"]


def test_console_script_quick_exit_loses_no_output(tmp_path, capsys):
    """After `evaluate` the script skips the interpreter's teardown: everything printed
    (here several stdout buffers) must still arrive, byte for byte."""
    script = console_script()
    qrels, run = tmp_path / "many.qrels", tmp_path / "many.run"
    qrels.write_text("".join(f"q{i} 0 d{i % 7} {i % 3}\n" for i in range(2000)))
    run.write_text("".join(f"q{i} Q0 d{j} {j + 1} {10 - j} t\n" for i in range(2000) for j in range(5)))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # stdout buffered, as usual
    base = ["evaluate", "--qrels", str(qrels), "--run", str(run), "-m", "ndcg@10", "-m", "map"]
    for argv in (base, [*base, "--per-query"]):  # one line per metric, then several buffers' worth
        assert main(argv) == 0
        expected = capsys.readouterr().out
        done = subprocess.run([str(script), *argv], capture_output=True, text=True, timeout=120, env=env, check=False)
        assert done.returncode == 0, done.stderr
        assert done.stdout == expected
    assert len(expected.encode()) > 4 * 8192


def test_help_and_evaluate_do_not_import_torch(tmp_path):
    """`rag-eval --help`, `rag-eval evaluate --help` and a whole evaluation stay light:
    no torch, sentence-transformers or pandas in the process."""
    qrels, run = tmp_path / "judged.qrels", tmp_path / "ranked.run"
    qrels.write_text(GOOD_QRELS)
    run.write_text(GOOD_RUN)
    probe = (
        "import sys\n"
        "argv = sys.argv[1:]\n"
        "sys.argv = ['rag-eval', *argv]\n"
        "from rag_eval.cli import main\n"
        "try:\n"
        "    code = main(argv)\n"
        "except SystemExit as stop:\n"
        "    code = stop.code\n"
        "heavy = sorted(m for m in ('torch', 'sentence_transformers', 'transformers', 'pandas') if m in sys.modules)\n"
        "print('HEAVY', code, heavy)\n"
    )
    evaluation = ["evaluate", "--qrels", str(qrels), "--run", str(run), "-m", "ndcg"]
    for argv in (["--help"], ["evaluate", "--help"], evaluation):
        done = subprocess.run(
            [sys.executable, "-c", probe, *argv], capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().splitlines()[-1] == "HEAVY 0 []", (argv, done.stdout)
