"""The message toolkit (rag_eval._core.messages): one wording for each small rule, checked by hand."""

from __future__ import annotations

import datetime

from rag_eval._core.messages import (
    CLOSE_MATCH_LIMIT,
    VALIDATE_LISTS_ALL,
    close_match,
    did_you_mean,
    first_and_more,
    shown,
    summarise,
)


def test_first_and_more_counts_the_rest_with_thousands_and_an_optional_hint():
    assert first_and_more(["a"]) == "a"
    assert first_and_more(["a", "b"]) == "a (and 1 more)"
    assert first_and_more(["a", "b", "c"], hint="see the log") == "a (and 2 more; see the log)"
    # more were found than kept: the total counts
    assert first_and_more(["a", "b"], count=12_345) == "a (and 12,344 more)"
    assert summarise(["x", "y"]) == f"x (and 1 more; {VALIDATE_LISTS_ALL})"


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
