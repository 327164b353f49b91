"""Markdown for a regression check that found the results incomparable (pure).

`rag-eval compare --report/--summary` and a CI job summary then say why no gate was
evaluated, instead of staying empty.
"""

from __future__ import annotations

from rag_eval._report.format import code_span, escape_cell


def render_incomparable(
    reason: str,
    *,
    baseline: tuple[str, str],
    candidate: tuple[str, str] | None = None,
    heading: int = 3,
) -> str:
    """Why two results files were not compared: ``baseline`` / ``candidate`` are ``(label, path)``.

    ``heading`` 1 for a report file, 3 for a CI job summary (beside other steps' sections).
    """
    title = "Regression check" if heading == 1 else "rag-eval regression check"
    why = reason.removeprefix("incomparable results: ")
    b_label, b_path = baseline
    sides = f"Baseline {code_span(b_label)} ({code_span(b_path)}) vs candidate " + (
        f"{code_span(candidate[0])} ({code_span(candidate[1])})" if candidate else "of this run"
    )
    lines = [
        f"{'#' * heading} {title}: ⚠️ INCOMPARABLE",
        "",
        f"{sides}: the results cannot be compared, so no gate was evaluated (exit code 2).",
        "",
        f"**Why:** {escape_cell(why)}",
        "",
        ("Compare results computed on the same dataset, with the same evaluation settings, metrics and "
        "retrieval depth: rerun the baseline or the candidate so that they match."),
    ]
    return "\n".join(lines) + "\n"
