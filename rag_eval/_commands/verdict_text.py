"""A regression verdict as the lines a CI log shows, and as markdown where there is no verdict.

One line per gate (tab-separated, for grep and cut), the queries behind a failed gate, a gate that
could flip were the candidate's unjudged results judged, what the query set can detect (its power),
what an approximate index cost each side, then the verdict.
"""

from __future__ import annotations

from rag_eval._compare.hole_flips import GateHoles
from rag_eval._compare.power import Power
from rag_eval._compare.regression import GateResult, Verdict
from rag_eval._report.comparison import MICRO_VALUES
from rag_eval._report.decision import POWER_TARGET
from rag_eval._report.format import beyond_range, fmt_mde, signed
from rag_eval._report.incomparable import render_incomparable
from rag_eval._report.markdown import approximation_note
from rag_eval._run.results_file import ResultsFile
from rag_eval._scoring.metrics.measures import parse_metric

# Regressed queries named under a failed gate; the rest are counted (comparison.md lists them all).
REGRESSED_LISTED = 10


def verdict_lines(verdict: Verdict) -> list[str]:
    """Every line ``rag-eval compare`` (and ``run`` with a regression section) prints about a verdict."""
    lines = []
    for result in verdict.gates:
        lines.append(_gate_line(result))
        if not result.passed:  # name the queries behind a failed gate, worst first, so a CI log says where to look
            lines.append(_regressed_line(verdict.regressed_queries(result.gate.metric)))
        holes = verdict.gate_holes(result.gate.metric)
        if holes is not None and holes.could_flip:
            lines.append(holes_line(holes, verdict.on_holes))
    if verdict.on_holes == "fail" and verdict.candidate.holes is None:
        lines.append(
            "holes\t-\tthe candidate's results file records no usable holes (none, or not matching its results), so no gate "
            "can be checked against them; rerun `rag-eval run` to record them"
        )
    lines += [line for result in verdict.gates if (line := power_line(verdict, result.gate.metric))]
    micro = [r.gate.metric for r in verdict.gates if parse_metric(r.gate.metric).micro_parts is not None]
    if micro and verdict.baseline.results.options.get("aggregation") == "micro":
        # A micro value is not the mean of the per-query values the tests pair: say so where the numbers are read.
        lines.append(f"micro\t{', '.join(micro)}\t{MICRO_VALUES}")
    lines += _approximation_lines(verdict)
    lines.append(
        f"verdict: {'PASS' if verdict.passed else 'FAIL'} ({len(verdict.failed)} of {len(verdict.gates)} gates failed)"
    )
    return lines


def _gate_line(result: GateResult) -> str:
    status = "PASS" if result.passed else "FAIL"
    p_text = f"p {result.p_permutation:.4f}" + (
        f" (Holm {result.p_adjusted:.4f})" if result.p_adjusted is not None else ""
    )
    return (
        f"{status}\t{result.gate.metric}\tbaseline {result.baseline:.4f}\tcandidate {result.candidate:.4f}\t"
        f"delta {result.mean_delta:+.4f} [{signed(result.ci_low)}, {signed(result.ci_high)}]\t{p_text}\t{result.reason}"
    )


def holes_line(holes: GateHoles, on_holes: str) -> str:
    """``holes<TAB>metric<TAB>could flip: 14% of the candidate's top 10 is unjudged; ...``: a gate in doubt."""
    effect = "the gate fails" if on_holes == "fail" else "the verdict stands"
    return f"holes\t{holes.metric}\t{holes.flip_text()}: {holes.flip_detail()} (on_holes: {on_holes}: {effect})"


def _regressed_line(regressed: list[tuple[str, float]]) -> str:
    listed = ", ".join(f"{q} ({d:+.4f})" for q, d in regressed[:REGRESSED_LISTED])
    more = f", and {len(regressed) - REGRESSED_LISTED} more" if len(regressed) > REGRESSED_LISTED else ""
    return f"  regressed queries ({len(regressed)}): {listed or 'none'}{more}"


def gate_power(verdict: Verdict, metric: str) -> Power:
    """What the paired queries of ``metric`` can detect (the record the report's power line reads too)."""
    return Power.of(verdict.baseline.label, verdict.candidate.label, list(verdict.deltas.get(metric, {}).values()))


def power_line(verdict: Verdict, metric: str) -> str:
    """``power<TAB>metric<TAB>...``: the difference these paired queries find 80% of the time; "" when there is
    no noise to size it against (fewer than two queries, or every query moved alike)."""
    power = gate_power(verdict, metric)
    needed = power.queries_for(POWER_TARGET)
    if power.n < 2 or not power.mde > 0 or needed is None:
        return ""
    if beyond_range(power.mde, metric):  # past the metric's range: even the largest difference is found less often
        return (f"power\t{metric}\twith {power.n:,} queries even the largest difference {metric} can show (1) is found "
                f"less than {power.power:.0%} of the time (paired t-test, alpha {power.alpha:g}); finding "
                f"{POWER_TARGET:g} {power.power:.0%} of the time would need {needed:,} queries")
    # The MDE is the difference found with the power asked for, not a floor (as the report's power line says).
    return (
        f"power\t{metric}\twith {power.n:,} queries a difference of {fmt_mde(power.mde)} is found "
        f"{power.power:.0%} of the time, smaller ones less often (paired t-test, alpha {power.alpha:g}); finding "
        f"{POWER_TARGET:g} as often would need {needed:,} queries"
    )


def _approximation_lines(verdict: Verdict) -> list[str]:
    """``approximation<TAB>side<TAB>...``: what an approximate index cost each side, so that a drop can be
    told apart from a worse model (the run measured it against exact search on a sample of queries)."""
    lines = []
    for side, results in (("baseline", verdict.baseline), ("candidate", verdict.candidate)):
        note = approximation_note(results.document.retriever.description.get("approximation"))
        if note:
            lines.append(f"approximation\t{side}\t{note}")
    return lines


def incomparable_markdown(baseline: ResultsFile, candidate: ResultsFile | None, error: Exception, heading: int) -> str:
    """Why there is no verdict, as markdown for the report or the CI job summary (``heading``: its level)."""
    return render_incomparable(
        str(error),
        baseline=(baseline.label, baseline.path),
        candidate=None if candidate is None else (candidate.label, candidate.path),
        heading=heading,
    )
