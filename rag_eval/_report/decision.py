"""The decision section of a run report with several retrievers (pure: a RunOutcome in, markdown lines out).

A verdict table (every variant ranked by the main metric, with its CI, its paired difference
to the baseline with a Holm-corrected p-value, wins/ties/losses and its costs), a sentence
naming the variants the data cannot separate from the best, the power line, and one table
per tag key. The numbers come from :mod:`rag_eval._compare.decision`, :mod:`rag_eval._compare.segments`
and :mod:`rag_eval._compare.context_size`; rounding happens here only.

:func:`decision_lines` is called from :func:`rag_eval._report.markdown.render_run_report`.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rag_eval._compare.context_size import ContextSize, mean_context_size
from rag_eval._compare.decision import Decision, VariantDecision, decide_run, defined_values
from rag_eval._compare.hole_flips import DecisionFlip, decision_flips, percent, unjudged_by_label
from rag_eval._compare.power import Power
from rag_eval._compare.segments import SegmentTable, segment_table
from rag_eval._compare.variants import sweep_points, value_text
from rag_eval._report.format import (
    beyond_range,
    code_span,
    escape_cell,
    escape_inline,
    fmt,
    fmt_mde,
    fmt_p,
    signed,
)
from rag_eval._scoring.metrics.measures import parse_metric

if TYPE_CHECKING:
    from rag_eval._run.holes_section import MetricHoles
    from rag_eval._run.outcome import RunOutcome

__all__ = ["POWER_TARGET", "context_sizes", "decision_lines", "nothing_read", "render_decision"]

# The difference the power line asks about ("detecting 0.01 would need M queries").
POWER_TARGET = 0.01


def decision_lines(
    run: RunOutcome,
    main: str,
    baseline: str | None = None,
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> list[str]:
    """The decision section of ``run``'s report (empty when the run has fewer than 2 retrievers).

    ``main``: the main metric; ``baseline``: the declared baseline label (sweep or config), else
    the best mean is the reference. ``n_resamples`` / ``seed``: of the bootstrap and permutation tests.
    """
    # A retriever without the main metric (chunk-level, for one returning its own spans) has nothing to rank.
    outcomes = [o for o in run.outcomes if main in o.results.values]
    if len(outcomes) < 2:
        return []
    results = {o.label: o.results for o in outcomes}
    if not any(defined_values(res, main).size for res in results.values()):
        return [
            "## 🏁 Decision", "",
            f"No decision: no variant has a value of {code_span(main)} for any query (each query was left out, "
            "e.g. for having no relevant document at the relevance threshold); decide on another metric, or "
            "check the judgements' grades against `evaluation.relevance_threshold`.", "",
        ]
    if baseline is not None and baseline not in results:
        baseline = None
    decision = decide_run(results, main, baseline, n_resamples=n_resamples, seed=seed)
    timings = {o.label: (o.timings.get("index_s", math.nan), o.timings.get("search_s", math.nan))
               for o in outcomes}
    tags = {qid: query.tags for qid, query in run.dataset.queries.items()}
    segments = segment_table(results, main, tags)
    latencies = {o.label: o.description["latency"] for o in outcomes if isinstance(o.description.get("latency"), Mapping)}
    holes = {o.label: getattr(o, "holes", None) for o in outcomes}  # outcomes built by hand may have none
    contexts = context_sizes(run, main)
    lines = render_decision(
        decision, timings, contexts, segments, latencies,
        unjudged=unjudged_by_label(holes, decision.metric), flips=decision_flips(decision, holes),
    )
    budgets = [m for m in getattr(run.config.model, "metrics", ()) if parse_metric(m).budget_unit is not None]
    warnings = [w for w in (unit_size_warning(decision.metric, contexts, budgets),
                            nothing_fits_warning(decision.metric, contexts, _retrieving(outcomes)),
                            micro_note(decision, results)) if w]
    # The decision's first lines: what to ship and why, then any warning about the metric, before the table.
    lines[1:1] = ["", verdict_line(decision, contexts)] + [line for w in warnings for line in ("", w)]
    return lines + sensitivity_lines(run, main)


def micro_note(decision: Decision, results: Mapping[str, Any]) -> str:
    """Under ``aggregation: micro``, for nDCG: the decision ranks by per-query means (what its paired tests compare),
    the Summary by total DCG / total IDCG; said, and said loudly when the two put another variant first."""
    metric = parse_metric(decision.metric)
    aggregate = {label: res.aggregate.get(decision.metric) for label, res in results.items()}
    if metric.micro_parts is None or any(res.options.get("aggregation") != "micro" for res in results.values()):
        return ""
    ranked = [v.label for v in decision.variants]
    finite = {label: value for label, value in aggregate.items() if value is not None and math.isfinite(value)}
    by_micro = sorted(finite, key=lambda label: (metric.best_first_key(finite[label]), ranked.index(label)))
    note = (f"Aggregation is micro: this decision ranks the variants by the mean of their per-query "
            f"{code_span(decision.metric)} (what the paired tests compare), while the Summary's values are total DCG / "
            "total IDCG, which weigh queries with more relevant documents more")
    if by_micro and by_micro[0] != decision.best:
        return (f"> ⚠️ **{note}: there {escape_inline(by_micro[0])} comes first "
                f"({fmt(finite[by_micro[0]])} against {fmt(finite.get(decision.best, math.nan))}).** Decide which "
                "one your users meet: per query (this decision), or per relevant document (set aggregation: macro "
                "to have both agree).")
    return f"{note}; here both put {escape_inline(decision.best)} first."


# Rows of a tag key's table in report.md: the values with the most queries (report.html filters by any tag).
MAX_SEGMENT_ROWS = 30

# A variant tied with the best is shipped instead of it when it costs at most this share of the best's cost.
CLEAR_SAVING = 0.9


def verdict_line(decision: Decision, contexts: Mapping[str, ContextSize]) -> str:
    """What to ship and why, in one paragraph: the best, or the cheapest variant the data cannot separate from it.

    The rule: the variants statistically indistinguishable from the best (paired permutation test against
    it, Holm-corrected) are equally good as far as the queries can tell, so the cheapest of them is shipped:
    the smallest mean context (what the generator reads), known for chunked retrievers; without contexts the
    best is shipped and the table's costs are left to the reader (timings vary between runs of the same
    config, and the report must not). Ties keep the rank order. Its difference to the reference follows.
    """
    metric = code_span(decision.metric)
    best = decision.variant(decision.best)
    tied = [best] + [decision.variant(label) for label in decision.indistinguishable]

    def cost(v: VariantDecision) -> tuple[float, int]:
        # Context only: it is part of the run's result, so the same run gives the same verdict; timings
        # vary from run to run (a report must be reproducible byte for byte), so they never decide.
        size = contexts.get(v.label)
        return (size.tokens if size is not None and math.isfinite(size.tokens) else math.inf), v.rank

    cheapest = min(tied, key=cost)
    # A saving too small to matter does not outweigh the best mean: switch only for a clear saving.
    choice = cheapest if cost(cheapest)[0] <= CLEAR_SAVING * cost(best)[0] else best
    name = f"**{escape_inline(choice.label)}**"
    if len(tied) == 1:
        why = (f"the highest mean {metric} ({fmt(best.mean)} [{fmt(best.ci_low)}, {fmt(best.ci_high)}]), better "
               f"than every other variant (paired permutation tests against it, Holm-corrected, p < {decision.alpha:g})")
    elif choice is best and not contexts:
        why = (f"the highest mean {metric} ({fmt(best.mean)}); {len(tied) - 1} other variant"
               f"{'s' if len(tied) > 2 else ''} cannot be told from it, so cost may decide (report.md's table "
               "gives each variant's index and search time)")
    elif choice is best:
        why = (f"the highest mean {metric} ({fmt(best.mean)}); {len(tied) - 1} other variant"
               f"{'s' if len(tied) > 2 else ''} cannot be told from it, none of them clearly cheaper in context "
               f"(by {1 - CLEAR_SAVING:.0%} or more)")
    else:
        size = contexts.get(choice.label)
        what = (f"{size.tokens:,.0f} tokens of context per query against {contexts[best.label].tokens:,.0f}"
                if size is not None and best.label in contexts else "the least context")
        why = (f"the best mean {metric} is {escape_inline(best.label)}'s ({fmt(best.mean)}), but the queries cannot "
               f"tell {len(tied) - 1} variant{'s' if len(tied) > 2 else ''} from it, and {name} is the cheapest of "
               f"them ({what}) at {fmt(choice.mean)}")
    text = f"**Ship {escape_inline(choice.label)}**: {why}."
    if choice.label != decision.baseline and decision.baseline_declared and choice.delta is not None:
        significant = choice.p_holm is not None and choice.p_holm < decision.alpha
        better = parse_metric(decision.metric).best_first_key(choice.delta) < parse_metric(decision.metric).best_first_key(0.0)
        verdict = ("better than" if better else "worse than") if significant else "not shown different from"
        text += (f" Against the baseline {escape_inline(decision.baseline)}: {signed(choice.delta)} "
                 f"({verdict} it, p {fmt_p(choice.p_holm) if choice.p_holm is not None else 'n/a'} Holm).")
    return text


# A cut-off metric is said to favour larger units when the compared variants' contexts differ by this factor.
UNEVEN_CONTEXT = 1.5


def unit_size_warning(metric: str, contexts: Mapping[str, ContextSize], budgets: Sequence[str]) -> str:
    """The warning that a cut-off metric over units of different sizes favours the larger ones ("" when not).

    Said when ``metric`` counts chunks (no budget) and the compared variants' mean contexts (characters of
    the chunks the metric reads) differ by :data:`UNEVEN_CONTEXT` or more; names a budget metric of the run
    (``budgets``) to decide on instead, or how to add one.
    """
    if parse_metric(metric).budget_unit is not None or len(contexts) < 2:
        return ""
    sizes = {label: size for label, size in contexts.items() if math.isfinite(size.chars)}
    if len(sizes) < 2:
        return ""
    small = min(sizes, key=lambda label: sizes[label].chars)
    large = max(sizes, key=lambda label: sizes[label].chars)
    low, high = sizes[small].chars, sizes[large].chars
    if high < UNEVEN_CONTEXT * max(low, 1.0):
        return ""
    ratio = "" if low <= 0 else f", {high / low:.1f}x"
    what = next(iter(sizes.values())).chunks
    fix = (f"{code_span(budgets[0])}, a budget metric of this run, compares them at equal context: set "
           f"`main_metric: {budgets[0]}` to decide on it" if budgets else
           "a budget metric compares them at equal context: add one such as `evidence_recall@1000tokens` to "
           "`metrics` and set it as `main_metric`")
    return (f"> ⚠️ **{code_span(metric)} favours larger units.** It counts {what} whatever their size, and "
            f"the variants read from {low:,.0f} characters ({escape_inline(small)}) to {high:,.0f} "
            f"({escape_inline(large)}{ratio}) per query; {fix}.")


def nothing_fits_warning(metric: str, contexts: Mapping[str, ContextSize], retrieving: Collection[str]) -> str:
    """The warning that a budget metric read nothing of some variants ("" when it read something of each).

    A variant of ``retrieving`` (those that retrieved something) whose units are all longer than the budget
    (whole documents under 1,000 tokens) has no unit that fits on any query: its value is 0 by the budget,
    whatever it retrieved.
    """
    parsed = parse_metric(metric)
    if parsed.budget_unit is None:
        return ""
    empty = _unread(contexts, retrieving)
    if not empty:
        return ""
    names = ", ".join(escape_inline(label) for label in empty)
    one = len(empty) == 1
    return (f"> ⚠️ **{names} read{'s' if one else ''} nothing {next(iter(contexts.values())).what}.** No unit "
            f"{'it' if one else 'they'} retrieved fits the budget on any query (the units are longer), so "
            f"{code_span(metric)} is 0 by the budget, not by the ranking; compare {'it' if one else 'them'} on a "
            "larger budget, or cut the documents into chunks.")


def nothing_read(run: RunOutcome, main: str) -> set[str]:
    """Labels of the retrievers that retrieved something but of which ``main``, a budget metric, reads nothing:
    every unit longer than the budget (empty for a cut-off metric or a dataset without documents)."""
    if parse_metric(main).budget_unit is None or not run.dataset.has_documents:
        return set()
    return set(_unread(context_sizes(run, main), _retrieving(run.outcomes)))


def _unread(contexts: Mapping[str, ContextSize], retrieving: Collection[str]) -> list[str]:
    """The labels of ``retrieving`` (those that retrieved something) of which the metric read no character."""
    return [label for label, size in contexts.items() if size.chars == 0 and label in retrieving]


def _retrieving(outcomes: Sequence[Any]) -> set[str]:
    """Labels of the outcomes that retrieved at least one span for some query."""
    return {o.label for o in outcomes if o.spans and any(o.spans.values())}


def sensitivity_lines(run: RunOutcome, main: str) -> list[str]:
    """For a sweep: one table per varied parameter, the main metric's mean by its value (rows: the other values).

    The same numbers as the sensitivity plots (rag_eval._compare.variants.sweep_points), readable without them.
    """

    variants = getattr(run.config, "variants", None) or {}
    results = {o.label: o.results for o in run.outcomes if main in o.results.values}
    lines: list[str] = []
    templates = getattr(run.config, "variant_templates", None) or {}
    for param, points in sweep_points(results, main, variants, templates).items():
        values = sorted({value_text(p.value) for p in points}, key=_order)
        series = list(dict.fromkeys(p.series for p in points))
        cell = {(p.series, value_text(p.value)): fmt(p.mean) for p in points}
        lines += [
            f"**{escape_inline(main)} by {code_span(param)}** (mean over the judged queries; a row per value of the "
            "other swept parameters)",
            "",
            "| Other values | " + " | ".join(escape_cell(v) for v in values) + " |",
            "|---|" + "---:|" * len(values),
        ]
        for name in series:
            lines.append(f"| {escape_cell(name)} | " + " | ".join(cell.get((name, v), "–") for v in values) + " |")
        lines.append("")
    return (["### Sensitivity", "", *lines]) if lines else []


def _order(text: str) -> tuple[int, float, str]:
    try:
        return (0, float(text), text)
    except ValueError:
        return (1, 0.0, text)


def context_sizes(run: RunOutcome, main: str) -> dict[str, ContextSize]:
    """Mean context size of the top k of every retriever with spans (document datasets).

    k is the main metric's cutoff when it counts chunks, else the run's top_k (a budget
    metric such as ``evidence_recall@512tokens`` has no chunk count): :meth:`Metric.ranks_shown`.
    """
    metric = parse_metric(main)
    unit = metric.budget_unit
    k = metric.k if unit is not None and metric.k is not None else metric.ranks_shown(run.config.model.top_k)
    cache: dict[tuple[str, int, int], int] = {}  # chunks shared by variants of one chunking are counted once
    return {
        o.label: mean_context_size(o.spans, run.dataset.documents, o.results.query_ids, k, cache, unit)
        for o in run.outcomes
        if o.spans is not None
    }


def render_decision(
    decision: Decision,
    timings: Mapping[str, tuple[float, float]],
    contexts: Mapping[str, ContextSize],
    segments: Sequence[SegmentTable] = (),
    latencies: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    unjudged: Mapping[str, MetricHoles] | None = None,
    flips: Sequence[DecisionFlip] = (),
) -> list[str]:
    """Markdown lines: verdict table, who ties with the best, power, segments.

    ``latencies``: per variant, the query latency its database or service answered with
    (rag_eval._retrievers.external.latency); the table gains p50 / p95 and QPS columns when any has one.
    ``unjudged``: per variant, the holes of the decision's metric (rag_eval._run.holes_section); the table
    gains an "Unjudged top k" column when any variant has them. ``flips``: the variants that could become
    the best were their holes judged (rag_eval._compare.hole_flips.decision_flips), said under the table.
    """
    latencies = latencies or {}
    unjudged = unjudged or {}
    metric = decision.metric
    reference = "baseline" if decision.baseline_declared else "best"
    pct = f"{decision.confidence * 100:g}%"
    with_context = bool(contexts)
    size = next(iter(contexts.values())) if contexts else None
    what = size.what if size else None
    holes_k = next(iter(unjudged.values())).k if unjudged else None
    header = f"| Rank | Variant | {metric} [{pct} CI] | Δ vs {reference} | p (Holm) | W/T/L | MDE vs {reference} |"
    rule = "|---:|---|---:|---:|---:|---|---:|"
    if holes_k is not None:  # before the costs: the timing columns stay last (the example report's test reads them)
        header += f" Unjudged top {holes_k} |"
        rule += "---:|"
    header += " Index (s) | Search (s) |"
    rule += "---:|---:|"
    if with_context:
        header += f" Context {what} (tokens / chars) |"
        rule += "---:|"
    if latencies:
        header += " Latency p50 / p95 (ms) | QPS |"
        rule += "---:|---:|"
    lines = ["## 🏁 Decision", "", header, rule]
    for v in decision.variants:
        label = escape_cell(v.label) + (f" ({reference})" if v.label == decision.baseline else "")
        if v.label == decision.best:
            label = f"**{label}**"
        delta = "–" if v.delta is None else signed(v.delta)
        p = "–" if v.p_holm is None else fmt_p(v.p_holm)
        wtl = "–" if v.wins is None else f"{v.wins}/{v.ties}/{v.losses}"
        index_s, search_s = timings.get(v.label, (math.nan, math.nan))
        row = (f"| {v.rank} | {label} | {fmt(v.mean)} [{fmt(v.ci_low)}, {fmt(v.ci_high)}] | {delta} | {p} | {wtl} | "
               f"{_mde_cell(v.power_vs_baseline, metric)} |")
        if holes_k is not None:
            entry = unjudged.get(v.label)
            row += " – |" if entry is None else f" {percent(entry.unjudged_share)} |"
        row += f" {_seconds(index_s)} | {_seconds(search_s)} |"
        if with_context:
            size = contexts.get(v.label)
            row += " – |" if size is None else f" {size.tokens:.0f} / {size.chars:.0f} |"
        if latencies:
            row += _latency_cells(latencies.get(v.label))
        lines.append(row)
    lines += ["", _explanation(decision, reference, pct, size.chunks if size else None, holes_k), "", _tie_sentence(decision)]
    if flips:
        lines += ["", "**The decision could flip** were the holes judged (the best taken as measured):", ""]
        lines += [f"- {escape_inline(flip.detail())}." for flip in flips]
    power = power_line(decision)
    if power:
        lines += ["", power]
    for table in segments:
        lines += ["", *_segment_lines(table, decision)]
    return lines + [""]


def _seconds(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.3f}"


def _latency_cells(latency: Mapping[str, Any] | None) -> str:
    """`` p50 / p95 | QPS |`` of a variant asked through a database or service; dashes for one rag_eval searched."""
    if not latency or not isinstance(latency.get("p50_ms"), (int, float)):
        return " – | – |"
    qps = latency.get("qps")
    return f" {latency['p50_ms']:.2f} / {latency['p95_ms']:.2f} | {qps:,.1f} |" if qps else \
        f" {latency['p50_ms']:.2f} / {latency['p95_ms']:.2f} | – |"


def _explanation(decision: Decision, reference: str, pct: str, what: str | None, holes_k: int | None = None) -> str:
    reference_text = (f"the declared baseline {escape_inline(decision.baseline)}" if reference == "baseline"
                      else f"the best mean ({escape_inline(decision.best)})")
    text = (f"Ranked by the mean of {decision.metric} over the queries each variant scored, with a {pct} percentile "
            f"bootstrap interval (none from a single query). Δ: mean per-query difference to {reference_text}, over the queries both scored; "
            "p: paired permutation test, Holm-corrected over every variant compared; W/T/L: queries better / equal "
            f"/ worse than the {reference}; MDE: the difference that variant's comparison with the "
            f"{reference} finds 80% of the time (paired t-test, alpha {decision.alpha:g}, power 0.8, from that pair's "
            "own per-query differences; smaller ones are found less often).")
    if holes_k is not None:
        text += (f" Unjudged: mean share of the top {holes_k} nobody judged (counted as not relevant; the summary's "
                 "Holes table gives the bounds).")
    if what is not None:
        text += f" Context: mean size of {what} per query (word tokens / characters)."
    return text


def _tie_sentence(decision: Decision) -> str:
    best = escape_inline(decision.best)
    others = decision.indistinguishable
    alpha = f"{decision.alpha:g}"
    if not others:
        return (f"Only {best} is significantly best: every other variant is worse by a paired permutation test "
                f"against it (Holm-corrected, p < {alpha}).")
    names = "; ".join(_tie_detail(decision.variant(label), decision.metric) for label in others)
    return (f"Statistically indistinguishable from the best ({best}): {names} (paired permutation test against "
            f"{best}, Holm-corrected, p ≥ {alpha}; each pair's detectable difference from its own per-query "
            "differences).")


def _tie_detail(variant: VariantDecision, metric: str) -> str:
    """``b (0.0123 behind; this pair finds a difference of 0.0456 80% of the time)``: the gap and the pair's own power."""
    name = escape_inline(variant.label)
    power = variant.power_vs_best
    if power is None or power.n < 2 or math.isnan(power.mde):
        return f"{name} (too few paired queries to say what the pair can detect)"
    gap = f"{fmt(abs(power.mean_difference))} {'behind' if power.mean_difference else 'apart'}"
    if power.mde == 0.0:  # every per-query difference equal: none at all, or one shift of every query
        same = "equal to the best on every query" if power.mean_difference == 0 else "the same difference on every query"
        return f"{name} ({gap}; {same})"
    if beyond_range(power.mde, metric):
        return f"{name} ({gap}; this pair finds even a difference of 1 less than {power.power:.0%} of the time)"
    return f"{name} ({gap}; this pair finds a difference of {fmt_mde(power.mde)} {power.power:.0%} of the time)"


def power_line(decision: Decision) -> str:
    """What the comparisons with the reference can detect: one pair's figure, or the range over the pairs.

    Each variant's comparison has its own noise (the sd of its per-query differences), so one pair's
    minimum detectable difference is never stated for all: with several pairs the line gives the range,
    the table's MDE column each pair's figure.
    """
    pairs = [v.power_vs_baseline for v in decision.variants
             if v.power_vs_baseline is not None and v.power_vs_baseline.n >= 2
             and v.power_vs_baseline.mde > 0 and not math.isnan(v.power_vs_baseline.mde)]
    bounded = parse_metric(decision.metric).family.bounded
    if len(pairs) >= 2 and len({fmt_mde(p.mde, bounded) for p in pairs}) > 1:  # a range where the printed ones differ
        return _power_range_line(decision, pairs)
    return _one_pair_power_line(decision)


def _power_range_line(decision: Decision, pairs: Sequence[Power]) -> str:
    bounded = parse_metric(decision.metric).family.bounded
    low = min(pairs, key=lambda p: p.mde)
    high = max(pairs, key=lambda p: p.mde)
    n_low, n_high = low.queries_for(POWER_TARGET), high.queries_for(POWER_TARGET)
    reference = "baseline" if decision.baseline_declared else "best"
    queries = sorted({p.n for p in pairs})
    n_text = f"{queries[0]:,}" if len(queries) == 1 else f"{queries[0]:,} to {queries[-1]:,}"
    return (f"Power (paired t-test, alpha {low.alpha:g}, power {low.power:g}): with {n_text} paired queries, the "
            f"smallest difference in {decision.metric} a comparison with the {reference} can detect ranges from "
            f"{fmt_mde(low.mde, bounded)} ({escape_inline(low.other)}, sd of its per-query differences {fmt(low.sd)}) "
            f"to {fmt_mde(high.mde, bounded)} ({escape_inline(high.other)}, sd {fmt(high.sd)}); the MDE column gives "
            "each pair. "
            f"Detecting {POWER_TARGET:g} would need from {_count(n_low)} to {_count(n_high)} queries.")


def _one_pair_power_line(decision: Decision) -> str:
    power = decision.power
    if power is None:
        return ""
    metric = decision.metric
    pair = f"{escape_inline(power.other)} vs {escape_inline(power.baseline)}"
    settings = f"paired t-test, alpha {power.alpha:g}, power {power.power:g}"
    if power.n < 2 or math.isnan(power.mde):
        queries = "1 paired query" if power.n == 1 else f"{power.n} paired queries"
        return f"Power: {queries} ({pair}) {'is' if power.n == 1 else 'are'} too few to estimate it."
    if power.mde == 0.0:
        return (f"Power: the per-query differences {pair} are all equal, so their variance gives no estimate "
                "of the smallest detectable difference.")
    needed = power.queries_for(POWER_TARGET)
    if beyond_range(power.mde, metric):  # past the metric's range: even the largest difference is found less often
        return (f"Power: with {power.n:,} queries, even the largest difference {metric} can show (1) is found less "
                f"than {power.power:.0%} of the time ({settings}; sd of the per-query differences {pair}: "
                f"{fmt(power.sd)}); finding {POWER_TARGET:g} {power.power:.0%} of the time would need "
                f"{_count(needed)} queries.")
    # The MDE is the difference found with the power asked for, not a floor: smaller ones are found, less often.
    return (f"Power: with {power.n:,} queries, a difference of {fmt_mde(power.mde)} in {metric} is found "
            f"{power.power:.0%} of the time, smaller ones less often ({settings}; sd of the per-query differences "
            f"{pair}: {fmt(power.sd)}); finding {POWER_TARGET:g} as often would need {_count(needed)} queries.")


def _count(queries: int | None) -> str:
    """A count of queries as the power lines print it (None: more than any count, sd ~1e300 times the target)."""
    return f"{queries:,}" if queries is not None else "more"


def _mde_cell(power: Power | None, metric: str) -> str:
    if power is None:
        return "–"
    if power.n < 2 or math.isnan(power.mde) or power.mde == 0.0:
        # 0.0: every per-query difference equal, no variance to estimate from (the power line says so); an MDE of
        # 0 would claim the pair finds any difference
        return "n/a"
    return fmt_mde(power.mde, parse_metric(metric).family.bounded)


def _segment_lines(table: SegmentTable, decision: Decision) -> list[str]:
    labels = [v.label for v in decision.variants]
    lines = [
        f"**{decision.metric} by tag {code_span(table.key)}**",
        "",
        "| Value | Queries | " + " | ".join(escape_cell(label) for label in labels) + " |",
        "|---|---:|" + "---:|" * len(labels),
    ]
    shown = table.segments
    if len(shown) > MAX_SEGMENT_ROWS:  # a key such as a user id: one row per query would swamp the report
        kept = sorted(range(len(shown)), key=lambda i: -shown[i].count)[:MAX_SEGMENT_ROWS]
        shown = [shown[i] for i in sorted(kept)]  # the values with the most queries, in value order
    for segment in shown:
        cells = " | ".join(fmt(segment.means[label]) for label in labels)
        lines.append(f"| {escape_cell(segment.value)} | {segment.count} | {cells} |")
    left = len(table.segments) - len(shown)
    if left:
        queries = sum(segment.count for segment in table.segments) - sum(segment.count for segment in shown)
        lines += ["", f"{len(shown)} of the {len(table.segments):,} values of {code_span(table.key)}, those with the "
                      f"most queries; {left:,} more, {queries:,} queries in all, are left out of report.md: report.html "
                      "filters the queries by any tag."]
    return lines
