"""The public API is what ``rag_eval.__all__`` lists: pinned, so a change to it is deliberate."""

from __future__ import annotations

import rag_eval

PUBLIC = [
    "EvaluationOptions",
    "Metric",
    "RagEvalError",
    "Results",
    "evaluate",
    "evaluate_evidence",
    "parse_metric",
    "parse_metrics",
]


def test_all_is_pinned_and_sorted():
    assert rag_eval.__all__ == PUBLIC
    assert rag_eval.__all__ == sorted(rag_eval.__all__)


def test_every_public_name_exists_and_is_documented():
    for name in rag_eval.__all__:
        obj = getattr(rag_eval, name)
        assert (obj.__doc__ or "").strip(), f"rag_eval.{name} has no docstring"
