"""The LLM judge's answer cache read and written directly (no endpoint needed): an entry is used only when
its grade is the one its own answer gives (the judge's parser, :func:`prompt.parse_grade`) and its recorded
model and prompt version are its key's; damaged lines are dropped, atomically, when the next answer is written
or when the judge has asked what it needed.

The same attacks through ``rag-eval judge`` and the real llama.cpp server: tests/test_judges.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from rag_eval._core import atomic
from rag_eval._models.judges import cache, prompt
from rag_eval._models.judges.cache import AnswerCache, CachedAnswer

MODEL = "judge-model"
VERSION = prompt.PROMPT_VERSION
OTHER_VERSION = "question-quote-v1"  # rag-eval generate's answers share the file, with a null grade
PARSERS = {VERSION: prompt.parse_grade}


def key(query: str, passage: str = "p", model: str = MODEL, version: str = VERSION) -> str:
    return cache.answer_key(model, version, query, passage)


def entry(query: str, answer: str, grade: int | None, **fields: Any) -> dict[str, Any]:
    record = {"key": key(query), "model": MODEL, "prompt_version": VERSION, "answer": answer, "grade": grade,
              "prompt_tokens": 10, "completion_tokens": 3, "seconds": 0.25}
    return {**record, **fields}


def write(folder: Path, *lines: dict[str, Any] | str, ending: str = "\n") -> Path:
    path = folder / cache.FOLDER / cache.FILE_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    texts = [json.dumps(cache.header())] + [line if isinstance(line, str) else json.dumps(line) for line in lines]
    path.write_text("\n".join(texts) + ending, encoding="utf-8")
    return path


def opened(folder: Path) -> tuple[AnswerCache, list[str]]:
    said: list[str] = []
    return AnswerCache(folder, warn=said.append, parsers=PARSERS), said


def hit(answers: AnswerCache, query: str) -> CachedAnswer | None:
    return answers.get(key(query), model=MODEL, prompt_version=VERSION)


def file_keys(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == cache.header()
    return [json.loads(line)["key"] for line in lines[1:]]


# --------------------------------------------------------------------------- defect 1: a grade its answer contradicts


def test_a_grade_its_own_answer_contradicts_is_not_used_and_said_once_as_damaged(tmp_path):
    """The attack: "grade": 3 written on an entry whose answer is "##final score: 2" was used as a 3."""
    write(tmp_path, entry("good", "##final score: 2", 2), entry("edited", "##final score: 2", 3),
          entry("edited too", "##final score: 0 (unrelated)", 1))
    answers, said = opened(tmp_path)
    good = hit(answers, "good")
    assert good is not None and good.grade == 2 and good.answer == "##final score: 2"
    assert hit(answers, "edited") is None and hit(answers, "edited too") is None
    assert len(said) == 1 and "2 damaged lines skipped (first: line 3)" in said[0] and "asked again" in said[0]


def test_the_grade_used_is_the_one_the_judges_parser_reads_in_the_answer(tmp_path):
    """Answers the parser reads with words after the grade, or the reminder's answer, stay valid (no mass invalidation)."""
    answers_given = {"plain": ("##final score: 3", 3), "words": ("##final score: 1 (on topic only)", 1),
                     "stars": ("## Final Score: **0**", 0), "not a grade": ("##final", None)}
    write(tmp_path, *(entry(q, answer, grade) for q, (answer, grade) in answers_given.items()))
    answers, said = opened(tmp_path)
    assert said == []
    for query, (answer, grade) in answers_given.items():
        found = hit(answers, query)
        assert found is not None and found.grade == grade == prompt.parse_grade(answer)


def test_an_entry_whose_recorded_model_or_prompt_version_was_edited_is_not_used(tmp_path):
    write(tmp_path, entry("model", "##final score: 2", 2, model="another-model"),
          entry("version", "##final score: 2", 2, prompt_version="graded-0-3-v0"),
          entry("good", "##final score: 1", 1))
    answers, said = opened(tmp_path)
    assert said == []  # the key is a hash: only a lookup, knowing the model and version, can tell
    assert hit(answers, "model") is None and hit(answers, "version") is None
    assert hit(answers, "model") is None  # asked twice in one run: still said once
    assert len(said) == 1 and "1 damaged entry" in said[0] and "model or prompt version" in said[0]
    found = hit(answers, "good")
    assert found is not None and found.grade == 1


def test_a_line_without_its_model_or_prompt_version_is_damaged(tmp_path):
    bare = {name: value for name, value in entry("bare", "##final score: 2", 2).items() if name != "model"}
    write(tmp_path, bare, entry("number", "##final score: 2", 2, prompt_version=1))
    answers, said = opened(tmp_path)
    assert hit(answers, "bare") is None and hit(answers, "number") is None
    assert len(said) == 1 and "2 damaged lines skipped" in said[0]


def test_the_answers_of_another_prompt_are_not_read_with_the_judges_parser(tmp_path):
    """rag-eval generate keeps its answers in the same file with a null grade: not the judge's to check."""
    question = entry("doc", "1. Which ocean is the largest? ##final score: 2", None, prompt_version=OTHER_VERSION,
                     key=key("doc", version=OTHER_VERSION))
    write(tmp_path, question)
    answers, said = opened(tmp_path)
    found = answers.get(key("doc", version=OTHER_VERSION))
    assert said == [] and found is not None and found.grade is None


def test_what_the_judge_writes_is_read_back_as_a_hit(tmp_path):
    answers, _ = opened(tmp_path)
    for grade in (0, 1, 2, 3):
        answers.put(key(f"q{grade}"), CachedAnswer(f"##final score: {grade}", grade, 5, 2, 0.1), model=MODEL,
                    prompt_version=VERSION)
    again, said = opened(tmp_path)
    assert said == [] and len(again) == 4
    assert [getattr(hit(again, f"q{grade}"), "grade", None) for grade in (0, 1, 2, 3)] == [0, 1, 2, 3]


# --------------------------------------------------------------------------- defect 2: damaged lines dropped


def test_damaged_lines_are_dropped_when_the_next_answer_is_written_and_the_warning_is_not_repeated(tmp_path):
    cut = json.dumps(entry("cut", "##final score: 1", 1))[:40]  # a process killed while appending
    path = write(tmp_path, entry("good", "##final score: 2", 2), cut, entry("edited", "##final score: 2", 3),
                 "not json at all", entry("other", "1. A question?", None, prompt_version=OTHER_VERSION,
                                          key=key("other", version=OTHER_VERSION)),
                 entry("good 2", "##final score: 0", 0), ending="")
    answers, said = opened(tmp_path)
    assert len(said) == 1 and "3 damaged lines skipped (first: line 3)" in said[0]
    answers.put(key("edited"), CachedAnswer("##final score: 1", 1, 10, 3, 0.2), model=MODEL, prompt_version=VERSION)
    answers.put(key("cut"), CachedAnswer("##final score: 1", 1, 10, 3, 0.2), model=MODEL, prompt_version=VERSION)
    # Rewritten compactly: the header, every good entry (another prompt's too), the new answers; no damaged line.
    assert file_keys(path) == [key("good"), key("other", version=OTHER_VERSION), key("good 2"), key("edited"),
                               key("cut")]
    assert sorted(os.listdir(path.parent)) == [cache.FILE_NAME]  # no temporary file left
    again, said_again = opened(tmp_path)
    assert said_again == []  # the next run: nothing damaged, nothing said
    assert [getattr(hit(again, q), "grade", None) for q in ("good", "edited", "cut", "good 2")] == [2, 1, 1, 0]


def test_an_edited_entry_is_dropped_when_its_answer_is_asked_again(tmp_path):
    path = write(tmp_path, entry("model", "##final score: 2", 2, model="another-model"),
                 entry("good", "##final score: 1", 1))
    answers, said = opened(tmp_path)
    assert hit(answers, "model") is None and len(said) == 1
    answers.put(key("model"), CachedAnswer("##final score: 3", 3, 10, 3, 0.2), model=MODEL, prompt_version=VERSION)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    assert [(line["key"], line["model"], line["grade"]) for line in lines] == [(key("good"), MODEL, 1),
                                                                               (key("model"), MODEL, 3)]
    again, said_again = opened(tmp_path)
    found = hit(again, "model")
    assert said_again == [] and found is not None and found.grade == 3


def test_the_rewrite_keeps_what_another_judge_appended_since_this_one_read_the_file(tmp_path):
    path = write(tmp_path, entry("good", "##final score: 2", 2), "{damaged")
    first, _ = opened(tmp_path)
    second, _ = opened(tmp_path)
    second.put(key("by the second"), CachedAnswer("##final score: 3", 3, 1, 1, 0.1), model=MODEL,
               prompt_version=VERSION)  # compacts
    first.put(key("by the first"), CachedAnswer("##final score: 0", 0, 1, 1, 0.1), model=MODEL,
              prompt_version=VERSION)
    assert file_keys(path) == [key("good"), key("by the second"), key("by the first")]
    third, said = opened(tmp_path)
    assert said == [] and len(third) == 3


def test_compact_drops_damaged_lines_when_every_answer_was_cached(tmp_path):
    """A run that asks nothing (every answer cached) wrote nothing, so its damaged line was warned of on every run."""
    path = write(tmp_path, entry("good", "##final score: 2", 2), "{damaged", entry("good 2", "##final score: 0", 0))
    answers, said = opened(tmp_path)
    assert len(said) == 1 and "1 damaged line skipped (first: line 3)" in said[0]
    assert [getattr(hit(answers, q), "grade", None) for q in ("good", "good 2")] == [2, 0]
    answers.compact()
    assert file_keys(path) == [key("good"), key("good 2")]
    assert sorted(os.listdir(path.parent)) == [cache.FILE_NAME]
    again, said_again = opened(tmp_path)
    assert said_again == [] and len(again) == 2


def test_compact_leaves_a_clean_file_and_a_foreign_file_alone(tmp_path):
    clean = write(tmp_path / "clean", entry("good", "##final score: 2", 2))
    inode, before = clean.stat().st_ino, clean.read_bytes()
    opened(tmp_path / "clean")[0].compact()
    assert clean.stat().st_ino == inode and clean.read_bytes() == before
    foreign = tmp_path / "foreign" / cache.FOLDER / cache.FILE_NAME
    foreign.parent.mkdir(parents=True)
    foreign.write_text('{"something": "else"}\n{damaged\n', encoding="utf-8")
    answers, said = opened(tmp_path / "foreign")
    answers.compact()  # not ours: replaced only when an answer is written into it
    assert foreign.read_text(encoding="utf-8") == '{"something": "else"}\n{damaged\n' and len(said) == 1


def test_a_file_with_no_damaged_line_is_only_appended_to(tmp_path):
    path = write(tmp_path, entry("good", "##final score: 2", 2))
    inode = path.stat().st_ino
    answers, _ = opened(tmp_path)
    answers.put(key("new"), CachedAnswer("##final score: 1", 1, 1, 1, 0.1), model=MODEL, prompt_version=VERSION)
    assert path.stat().st_ino == inode and file_keys(path) == [key("good"), key("new")]


def test_a_rewrite_that_fails_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    """Atomic: a crash while the compacted file is written leaves the old file whole and no temporary file."""
    path = write(tmp_path, entry("good", "##final score: 2", 2), "{damaged")
    before = path.read_bytes()
    answers, said = opened(tmp_path)

    def crash(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", crash)
    answers.put(key("new"), CachedAnswer("##final score: 1", 1, 1, 1, 0.1), model=MODEL, prompt_version=VERSION)
    assert path.read_bytes() == before and sorted(os.listdir(path.parent)) == [cache.FILE_NAME]
    assert len(said) == 2 and "cannot be written" in said[1]
    found = hit(answers, "new")
    assert found is not None and found.grade == 1  # still remembered for this run


@pytest.mark.parametrize("ending", ["\n", ""])
def test_a_foreign_file_is_still_started_afresh_on_the_first_write(tmp_path, ending):
    path = tmp_path / cache.FOLDER / cache.FILE_NAME
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"namespace": "someone.else"}) + "\n" + json.dumps(entry("x", "##final score: 3", 3))
                    + ending)
    answers, said = opened(tmp_path)
    assert hit(answers, "x") is None and len(said) == 1 and "not the header" in said[0]
    answers.put(key("new"), CachedAnswer("##final score: 1", 1, 1, 1, 0.1), model=MODEL, prompt_version=VERSION)
    assert file_keys(path) == [key("new")]
