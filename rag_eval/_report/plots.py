"""Plots of a run as SVG text: means with CIs, per-query differences, metric@k curves, sweep sensitivity.

Plots are renderers like the markdown report: they read a run's Results (and, for the
metric@k curves, re-score its stored rankings at other cutoffs with the same options)
and return SVG text; they never write files. matplotlib is imported only inside the
drawing functions, through its object-oriented API (no pyplot: no global figure
state, no GUI backend chosen behind the user's back), so ``import rag_eval`` stays
free of it. The SVG is deterministic: a fixed hash salt for element ids, no date in
the metadata, text kept as ``<text>`` (svg.fonttype none), so two calls give the same
bytes and a committed example can be compared byte for byte.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from rag_eval._compare.regression import pair_by_query
from rag_eval._core.errors import ComparisonError
from rag_eval._core.spans import parse_chunk_id
from rag_eval._report.format import fmt
from rag_eval._run.inputs import AT_K, DELTAS, MEANS, plot_file_part
from rag_eval._scoring.evaluate import evaluate
from rag_eval._scoring.evidence import evaluate_evidence
from rag_eval._scoring.metrics.measures import Metric, parse_metric
from rag_eval._scoring.stats import bootstrap_ci, win_tie_loss

if TYPE_CHECKING:
    from rag_eval._run.outcome import RetrieverOutcome, RunOutcome
    from rag_eval._scoring.results import Results

__all__ = [
    "MeanRow",
    "PlotSet",
    "SweepPoint",
    "at_k_curves",
    "at_k_cutoffs",
    "build_plots",
    "choose_baseline",
    "mean_rows",
    "mean_rows_plain",
    "means_with_ci_svg",
    "metric_at_k_svg",
    "per_query_deltas_svg",
    "plot_lines",
    "run_plots",
    "sensitivity_svg",
    "sorted_deltas",
    "sweep_points",
]

# Everything that makes two renderings of the same data differ, fixed: element ids are
# hashes salted with svg.hashsalt (random otherwise), text stays text (glyph paths would
# depend on the font file's version), and "$" is plain text, never mathtext.
_RC: dict[str, Any] = {"svg.hashsalt": "rag_eval", "svg.fonttype": "none", "text.parse_math": False}
_METADATA = {"Date": None, "Creator": "rag_eval"}
_CONFIDENCE = 0.95
_RESAMPLES = 10_000
_SEED = 0
# The cutoffs of the metric@k curves: these, then top_k itself (one evaluation per variant for all of them).
_CUTOFFS = (1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000)


@dataclass(frozen=True)
class MeanRow:
    """One variant in the means plot: the mean of its per-query values and a 95% bootstrap CI."""

    label: str
    mean: float
    low: float
    high: float
    n: int


@dataclass(frozen=True)
class SweepPoint:
    """One variant in a sensitivity plot: its value of the parameter, its series (the other varied values)."""

    label: str
    value: Any
    series: str
    mean: float


@dataclass
class PlotSet:
    """The plots of a run: SVG text by file name, a one-line text equivalent of each, and the data drawn."""

    files: dict[str, str] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)


# ---- the data drawn ------------------------------------------------------------------------------


def mean_rows(results_by_label: Mapping[str, Results], metric: str) -> list[MeanRow]:
    """Each variant's mean of per-query ``metric`` (queries left out excluded) with a 95% percentile bootstrap CI.

    Ordered best first (ties: the run's order). A variant with no defined value is left out.
    """

    rows = []
    for label, results in results_by_label.items():
        values = _defined(results, metric)
        if values.size == 0:
            continue
        low, high = bootstrap_ci(values, confidence=_CONFIDENCE, n_resamples=_RESAMPLES, seed=_SEED)
        rows.append(MeanRow(label, float(values.mean()), low, high, int(values.size)))
    return sorted(rows, key=lambda row: -row.mean)


def choose_baseline(results_by_label: Mapping[str, Results], metric: str, declared: str | None) -> str | None:
    """The declared baseline when it is a label of the run, else the variant with the best mean (None if none)."""
    if declared is not None and declared in results_by_label:
        return declared
    rows = mean_rows_plain(results_by_label, metric)
    return max(rows, key=lambda label: rows[label]) if rows else None


def mean_rows_plain(results_by_label: Mapping[str, Results], metric: str) -> dict[str, float]:
    """``{label: mean of defined per-query values}`` without CIs (cheap), for variants with any value."""
    means = {}
    for label, results in results_by_label.items():
        values = _defined(results, metric)
        if values.size:
            means[label] = float(values.mean())
    return means


def sorted_deltas(results_by_label: Mapping[str, Results], metric: str, baseline: str) -> dict[str, np.ndarray]:
    """Per-query ``variant - baseline`` of ``metric`` for every other variant, sorted ascending.

    Paired by query id with rag_eval._compare.regression.pair_by_query (queries left out on either
    side are not paired); a variant with no paired query is left out.
    """

    base = results_by_label[baseline]
    out = {}
    for label, results in results_by_label.items():
        if label == baseline:
            continue
        try:
            paired = pair_by_query(metric, base, results)
        except ComparisonError:
            continue
        out[label] = np.sort(paired.candidate - paired.baseline)
    return out


def at_k_cutoffs(top_k: int) -> list[int]:
    """The cutoffs of the metric@k curves: 1, 2, 3, 5, 10, 20, 50, ... below ``top_k``, and ``top_k``."""
    return sorted({k for k in _CUTOFFS if k < top_k} | {top_k})


def at_k_curves(run: RunOutcome, metric: str) -> tuple[str, dict[str, dict[int, float]]] | None:
    """``(family, {label: {k: value}})``: the main metric's family at each cutoff of :func:`at_k_cutoffs`.

    Each variant's stored ranking is scored again at every cutoff with the run's options
    (rag_eval._scoring.evaluate for passages, rag_eval.evaluate_evidence for spans of documents); a
    budget metric (``evidence_recall@2000chars``) is drawn by number of chunks. None when the
    family takes no cutoff (``r_precision``). A variant whose answer cannot give the family
    (own spans for a chunk-level metric) is left out.
    """

    main = parse_metric(metric)
    if main.family.cutoff == "none":
        return None
    metrics = [Metric(main.name, k, main.doc) for k in at_k_cutoffs(run.config.model.top_k)]
    family = str(Metric(main.name, None, main.doc)) + "@k"
    curves = {}
    for outcome in run.outcomes:
        results = _score_at(run, outcome, metrics)
        if results is not None:
            curves[outcome.label] = {m.k: float(results.aggregate[str(m)]) for m in metrics if m.k is not None}
    return family, curves


def _score_at(run: RunOutcome, outcome: RetrieverOutcome, metrics: list[Any]) -> Results | None:
    evaluation = run.config.model.evaluation
    if outcome.spans is None:  # a passage run

        return evaluate(run.dataset.judgements, outcome.ranking, metrics, **evaluation.passage_options())

    chunks = None
    if not (metrics[0].doc or metrics[0].is_evidence):  # chunk level: the ideal ranking needs the whole chunking
        chunks = _chunking(run, outcome)
        if chunks is None:
            return None
    return evaluate_evidence(
        dict(run.dataset.evidence),
        outcome.spans,
        metrics,
        document_judgements=run.dataset.document_judgements,
        chunks=chunks,
        documents=run.dataset.documents,
        **evaluation.document_options(),
    )


def _chunking(run: RunOutcome, outcome: RetrieverOutcome) -> list[tuple[str, int, int]] | None:
    """Every chunk the retriever indexed (its corpus ids name them), None for its own spans."""

    record = outcome.chunking
    if record is None or record.kind == "own":
        return None
    if record.kind == "documents":
        return [(doc, 0, len(text)) for doc, text in run.dataset.documents.items()]
    parsed = [parse_chunk_id(key) for key in (outcome.corpus or {})]
    return None if not parsed or any(p is None for p in parsed) else parsed  # type: ignore[return-value]


def sweep_points(
    results_by_label: Mapping[str, Results],
    metric: str,
    variants: Mapping[str, Mapping[str, Any]],
    templates: Mapping[str, str] | None = None,
) -> dict[str, list[SweepPoint]]:
    """``{parameter: points}`` for each varied parameter: each variant's mean against its value.

    A point's series names the variant's other varied values (``b=0.4``), so a line joins
    variants that differ in this parameter only. When the variants vary more than one
    retriever (``templates``: label -> retriever), the series starts with the retriever
    (``dense: overlap=0``): two grids over the same parameters are two lines, not one.
    """
    means = mean_rows_plain(results_by_label, metric)
    params: list[str] = []
    for varied in variants.values():
        params.extend(p for p in varied if p not in params)
    templates = templates or {}
    several_retrievers = len({templates.get(label) for label in variants}) > 1
    out: dict[str, list[SweepPoint]] = {}
    for param in params:
        points = []
        for label, varied in variants.items():
            if param not in varied or label not in means:
                continue
            series = ", ".join(f"{p}={_text(v)}" for p, v in varied.items() if p != param)
            if several_retrievers:
                series = f"{templates[label]}: {series}" if series else templates[label]
            series = series or "all"
            points.append(SweepPoint(label, varied[param], series, means[label]))
        if points:
            out[param] = points
    return out


# ---- drawing -------------------------------------------------------------------------------------


def means_with_ci_svg(rows: Sequence[MeanRow], metric: str = "metric", baseline: str | None = None) -> str:
    """Horizontal error bars: each variant's mean and 95% CI, best at the top, the numbers written beside."""

    def draw(fig: Any) -> None:
        ax = fig.add_subplot()
        ys = np.arange(len(rows))[::-1]
        means = np.array([r.mean for r in rows])
        errors = np.array([[r.mean - r.low for r in rows], [r.high - r.mean for r in rows]])
        ax.errorbar(means, ys, xerr=errors, fmt="none", capsize=3, ecolor="C0")
        ax.plot(means, ys, "o", color="C0", gid="means")
        # The numbers are in the tick labels: readable without hovering, and never clipped by the axes.
        ax.set_yticks(ys, [
            f"{r.label}{' (baseline)' if r.label == baseline else ''}  {fmt(r.mean)} [{fmt(r.low)}, {fmt(r.high)}]"
            for r in rows
        ])
        ax.set_xlabel(f"mean {metric} with 95% bootstrap CI")
        ax.grid(axis="x", alpha=0.3)

    return _render(draw, height=1.2 + 0.35 * len(rows))


def per_query_deltas_svg(deltas_by_label: Mapping[str, Sequence[float] | np.ndarray], metric: str = "metric",
                         baseline: str = "baseline") -> str:
    """One line per variant: its per-query differences to the baseline, sorted ascending (left: losses)."""

    def draw(fig: Any) -> None:
        ax = fig.add_subplot()
        ax.axhline(0.0, color="black", linewidth=0.8)
        for position, (label, deltas) in enumerate(deltas_by_label.items()):
            values = np.asarray(deltas, dtype=np.float64)
            ax.plot(np.arange(1, values.size + 1), values, linewidth=1, label=label, gid=f"deltas-{label}",
                    **_line_style(position, "."))
        ax.set_xlabel("queries, sorted by difference")
        ax.set_ylabel(f"{metric} minus {baseline}")
        if deltas_by_label:
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the axes: never on a line
        ax.grid(alpha=0.3)

    return _render(draw)


def metric_at_k_svg(curves: Mapping[str, Mapping[int, float]], family: str = "metric@k") -> str:
    """One line per variant: the metric at each cutoff k (log-scaled k axis, ticks at the cutoffs)."""

    def draw(fig: Any) -> None:
        ax = fig.add_subplot()
        ks: set[int] = set()
        for position, (label, curve) in enumerate(curves.items()):
            points = sorted(curve.items())
            ks.update(k for k, _ in points)
            ax.plot([k for k, _ in points], [v for _, v in points], label=label, gid=f"at-k-{label}",
                    **_line_style(position, "o"))
        ax.set_xscale("log")
        ticks = sorted(ks)
        ax.set_xticks(ticks, [str(k) for k in ticks])
        ax.minorticks_off()
        ax.set_xlabel("k")
        ax.set_ylabel(family)
        if curves:
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.grid(alpha=0.3)

    return _render(draw)


def sensitivity_svg(param: str, points: Sequence[SweepPoint], metric: str = "metric") -> str:
    """The metric against one swept parameter; one line per combination of the other varied values.

    The values are evenly spaced along the axis (grid values such as 200, 400, 800 or 0.9, 1.2
    would crowd on a linear axis): numbers in increasing order, other values (model names) in
    the order first met.
    """
    values = [p.value for p in points]
    if all(_is_number(v) for v in values):
        values = sorted(values, key=float)
    categories: list[str] = []
    for value in values:
        if _text(value) not in categories:
            categories.append(_text(value))

    def position(value: Any) -> int:
        return categories.index(_text(value))

    def draw(fig: Any) -> None:
        ax = fig.add_subplot()
        series: dict[str, list[SweepPoint]] = {}
        for p in points:
            series.setdefault(p.series, []).append(p)
        for line, (name, members) in enumerate(series.items()):
            members = sorted(members, key=lambda p: position(p.value))
            ax.plot([position(p.value) for p in members], [p.mean for p in members], label=name,
                    gid=f"sweep-{name}", **_line_style(line, "o"))
        ax.set_xticks(range(len(categories)), categories)
        ax.set_xlabel(param)
        ax.set_ylabel(f"mean {metric}")
        if len(series) > 1:
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.grid(alpha=0.3)

    return _render(draw)


# Matplotlib's ten colours repeat; past them a line differs by its dash and marker as well,
# so that no two lines of a legend look alike (a sweep easily has 12 or more variants).
_DASHES = ("-", "--", ":", "-.")
_MARKERS = ("s", "^", "D", "v")


def _line_style(position: int, marker: str) -> dict[str, str]:
    """Colour, dash and marker of the line at ``position``: ``marker`` and solid for the first ten."""
    cycle = position // 10 % len(_DASHES)
    return {
        "color": f"C{position % 10}",
        "linestyle": _DASHES[cycle],
        "marker": marker if cycle == 0 else _MARKERS[cycle - 1],
    }


def _render(draw: Any, height: float = 4.0) -> str:
    """SVG text of a figure drawn by ``draw(figure)``, with matplotlib's settings pinned for repeatable bytes."""
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(_RC):  # type: ignore[arg-type]  # keys checked by matplotlib itself
        fig = Figure(figsize=(7.0, max(height, 2.5)))
        draw(fig)
        buffer = io.StringIO()
        # bbox_inches="tight": the legends beside the axes and long tick labels are kept, not cut off.
        fig.savefig(buffer, format="svg", metadata=_METADATA, bbox_inches="tight")
    return buffer.getvalue()


# ---- a run's plots and their links ----------------------------------------------------------------



def build_plots(run: RunOutcome, main: str, baseline: str | None = None) -> PlotSet:
    """Every plot of a run, with its text equivalent and the data drawn.

    ``baseline``: the declared one (a label of the run), else the variant with the best mean.
    The sweep plots come from ``run.config.variants`` (``{label: {param: value}}``) when present.
    """

    by_label = {o.label: o.results for o in run.outcomes if main in o.results.values}
    plots = PlotSet()
    rows = mean_rows(by_label, main)
    chosen = choose_baseline(by_label, main, baseline)
    plots.data[MEANS] = rows
    plots.files[MEANS] = means_with_ci_svg(rows, main, chosen)
    plots.texts[MEANS] = f"means of {main} with 95% bootstrap CIs; the same numbers as the verdict table"
    if chosen is not None and len(by_label) > 1:
        deltas = sorted_deltas(by_label, main, chosen)
        plots.data[DELTAS] = deltas
        plots.files[DELTAS] = per_query_deltas_svg(deltas, main, chosen)
        plots.texts[DELTAS] = f"per-query differences in {main} to {chosen}, sorted: " + "; ".join(
            f"{label} {_wins(d)}" for label, d in deltas.items()
        )
    curves = at_k_curves(run, main)
    if curves is not None and curves[1]:
        family, by_k = curves
        plots.data[AT_K] = by_k
        plots.files[AT_K] = metric_at_k_svg(by_k, family)
        ks = sorted({k for curve in by_k.values() for k in curve})
        plots.texts[AT_K] = f"{family} at k = {', '.join(map(str, ks))}: " + "; ".join(
            f"{label} {' / '.join(fmt(curve[k]) for k in ks)}" for label, curve in by_k.items()
        )
    variants = getattr(run.config, "variants", None) or {}
    templates = getattr(run.config, "variant_templates", None) or {}
    for param, points in sweep_points(by_label, main, variants, templates).items():
        name = f"plot-sweep-{plot_file_part(param)}.svg"
        plots.data[name] = points
        plots.files[name] = sensitivity_svg(param, points, main)
        plots.texts[name] = f"mean {main} against {param}; the same numbers as the sensitivity table"
    return plots




def run_plots(run: RunOutcome, main: str, baseline: str | None = None) -> dict[str, str]:
    """``{file name: SVG text}`` of every plot of a run (see :func:`build_plots`)."""
    return build_plots(run, main, baseline).files


_TITLES = {MEANS: "Means with 95% CIs", DELTAS: "Per-query differences to the baseline", AT_K: "Metric at k"}
_DEFAULT_TEXTS = {
    MEANS: "the same numbers as the verdict table",
    DELTAS: "each variant's per-query differences to the baseline, sorted (per-query values: per-query.csv)",
    AT_K: "the main metric's family at each cutoff k, per variant",
}


def plot_lines(names: Sequence[str], texts: Mapping[str, str] | None = None) -> list[str]:
    """Markdown: one list item per plot, a link to its SVG and a one-line text equivalent.

    ``texts`` (:attr:`PlotSet.texts`) gives the numbers; without it a generic line says what is drawn.
    """
    lines = []
    for name in names:
        if name.startswith("plot-sweep-"):
            title = f"Sensitivity to {name[len('plot-sweep-'):-len('.svg')]}"
            default = "the same numbers as the sensitivity table"
        else:
            title, default = _TITLES.get(name, name), _DEFAULT_TEXTS.get(name, "")
        text = (texts or {}).get(name, default)
        lines.append(f"- [{title}]({name}): {text}" if text else f"- [{title}]({name})")
    return lines


# ---- helpers -------------------------------------------------------------------------------------


def _defined(results: Results, metric: str) -> np.ndarray:
    values = np.asarray(results.values[metric], dtype=np.float64)
    return values[~np.isnan(values)]


def _wins(deltas: np.ndarray) -> str:

    wins, ties, losses = win_tie_loss(deltas) if deltas.size else (0, 0, 0)
    return f"{wins} better, {ties} equal, {losses} worse"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _text(value: Any) -> str:
    """A parameter value as shown: 0.5, 200, intfloat/e5-small-v2 (floats that are whole keep no .0)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


