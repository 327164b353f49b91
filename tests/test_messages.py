"""The message toolkit (rag_eval._core.messages): one wording for each small rule, checked by hand."""

from __future__ import annotations

import datetime

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from rag_eval._core.errors import RetrieverError
from rag_eval._core.messages import (
    CLOSE_MATCH_LIMIT,
    VALIDATE_LISTS_ALL,
    close_match,
    did_you_mean,
    error_line,
    first_and_more,
    shown,
    some_of,
    summarise,
)
from rag_eval._core.validation import PARAMETER_VOICE, ProblemAt, pydantic_problems, validation_problems


def test_first_and_more_counts_the_rest_with_thousands_and_an_optional_hint():
    assert first_and_more(["a"]) == "a"
    assert first_and_more(["a", "b"]) == "a (and 1 more)"
    assert first_and_more(["a", "b", "c"], hint="see the log") == "a (and 2 more; see the log)"
    # more were found than kept: the total counts
    assert first_and_more(["a", "b"], count=12_345) == "a (and 12,344 more)"
    assert summarise(["x", "y"]) == f"x (and 1 more; {VALIDATE_LISTS_ALL})"


def test_some_of_names_the_first_few_and_counts_the_rest():
    assert some_of(["a", "b"], 3) == "a, b"
    assert some_of(["a", "b", "c"], 3) == "a, b, c"
    assert some_of(["a", "b", "c", "d", "e"], 2) == "a, b, ... (3 more)"
    assert some_of([str(i) for i in range(1_003)], 2) == "0, 1, ... (1,001 more)"
    assert some_of([], 3) == ""


def test_close_match_prefers_the_same_name_in_another_case_then_difflib():
    assert close_match("BM25", ["dense", "bm25"]) == "bm25"
    assert close_match("bm52", ["dense", "bm25", "static"]) == "bm25"
    assert close_match("zzzz", ["dense", "bm25"]) is None
    assert close_match("bm25", ["bm25"]) == "bm25"  # equal: difflib's ratio 1.0
    assert did_you_mean("ndgc", ["ndcg", "map"]) == "did you mean 'ndcg'? "
    assert did_you_mean("qqqq", ["ndcg", "map"]) == ""


def test_close_match_past_the_limit_only_looks_for_a_case_variant():
    many = [f"doc-{i}" for i in range(CLOSE_MATCH_LIMIT + 1)]
    assert close_match("doc-1x", many) is None  # difflib would say doc-1; too many to compare
    assert close_match("DOC-7", many) == "doc-7"


def test_shown_is_short_and_on_one_line():
    assert shown("a\nb") == "'a\\nb'"
    assert shown("x" * 100) == "'" + "x" * 56 + "..."  # 60 characters in all
    assert len(shown("x" * 100)) == 60
    assert shown("x" * 100, limit=10) == "'xxxxxx..."
    assert shown({"a": 1}) == "dict"
    assert shown(datetime.date(2026, 1, 2)) == "the date 2026-01-02"


def test_close_match_takes_the_same_file_in_another_folder_before_difflib():
    assert close_match("a.md", ["docs/a.md", "b.md"]) == "docs/a.md"
    assert close_match("old/x.md", ["new/y.md", "new/x.md", "alt/x.md"]) == "alt/x.md"  # the first sorted
    assert close_match("DOCS/A.MD", ["docs/a.md", "a.md"]) == "docs/a.md"  # case first
    many = [f"folder/doc-{i}.md" for i in range(CLOSE_MATCH_LIMIT + 1)]
    assert close_match("other/doc-7.md", many) == "folder/doc-7.md"  # no difflib needed: found past the limit


def test_error_line_is_the_type_and_the_first_line_clipped():
    assert error_line(ValueError("first line\nsecond line")) == "ValueError: first line"
    assert error_line(KeyError()) == "KeyError"
    assert error_line(OSError("  \n ")) == "OSError"
    assert error_line(RuntimeError("x" * 200), limit=10) == "RuntimeError: xxxxxxx..."


class _Inner(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    label: str = ""
    size: int = Field(description="the largest chunk")
    name: str = "x"


class _Outer(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    items: list[_Inner]
    mode: str | list[str] = "a"


class _Checked(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    low: int = 0
    high: int = 1
    child: dict[str, int] = Field(default_factory=dict)

    @field_validator("child")
    @classmethod
    def _nested_check(cls, value: dict[str, int]) -> dict[str, int]:
        if value:  # a nested adapter's check (a RetrieverError): its own params.x path, and a whole problem
            raise RetrieverError("x", problems=["params.k1: must be >= 0, got -1", "adapter 'bm25' has no parameter 'k'"])
        return value

    @model_validator(mode="after")
    def _ordered(self) -> _Checked:
        if self.low > self.high:
            raise ProblemAt(("low",), f"{self.low} must not exceed high ({self.high}); lower low")
        return self


OUTER = {"items": [{"label": "first", "size": "9"}, {"nme": 1}], "mode": 5}


def _errors(model: type[BaseModel], raw: dict) -> ValidationError:
    try:
        model.model_validate(raw)
    except ValidationError as error:
        return error
    raise AssertionError("valid")


def test_one_formatter_in_the_file_voice():
    assert pydantic_problems(_errors(_Outer, OUTER), OUTER, _Outer) == [
        "items[0](first).size: Input should be a valid integer (got '9')",
        "items[1].size: required field is missing (the largest chunk)",
        "items[1].nme: unknown key; did you mean 'name'? allowed: label, name, size",  # sorted
        "mode: Input should be a valid string or a valid list (got 5)",  # the union's branches, one line
    ]
    assert validation_problems("set.yaml", _errors(_Outer, {"items": {}}), {"items": {}}, _Outer) == [
        "set.yaml: items: Input should be a valid list (got dict)",
    ]


def test_one_formatter_in_the_parameter_voice():
    problems = pydantic_problems(
        _errors(_Outer, {**OUTER, "moed": 1}), {**OUTER, "moed": 1}, _Outer, root="params", voice=PARAMETER_VOICE,
        unknown_top_key=lambda key, known: f"no parameter {key!r}; its parameters: {', '.join(known)}",
    )
    assert problems == [
        "no parameter 'moed'; its parameters: items, mode",  # said first
        "params.items[0](first).size: must be a valid integer, got '9'",
        "params.items[1].size: required field is missing (the largest chunk)",
        "params.items[1].nme: unknown key; did you mean 'name'? allowed: label, size, name",  # declared order
        "params.mode: must be a valid string or a valid list, got 5",
    ]


def test_whole_problems_and_problems_placed_by_the_model():
    raw = {"low": 3, "high": 2}
    assert pydantic_problems(_errors(_Checked, raw), raw, _Checked, root="params", voice=PARAMETER_VOICE) == [
        "params.low: 3 must not exceed high (2); lower low",
    ]
    raw = {"child": {"a": 1}}
    assert pydantic_problems(_errors(_Checked, raw), raw, _Checked, root="params", voice=PARAMETER_VOICE) == [
        "params.child.params.k1: must be >= 0, got -1",
        "params.child: adapter 'bm25' has no parameter 'k'",
    ]
