"""Plots of a run as SVG text: means with CIs, per-query differences, metric@k curves, sweep sensitivity.

Plots are renderers like the markdown report: they draw numbers computed below them
(rag_eval._compare.variants: means with bootstrap CIs, paired differences, the metric@k
curves re-scored from the stored rankings, sweep points) and return SVG text; they
compute nothing and never write files. matplotlib is imported only inside the
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

from rag_eval._compare.decision import MeanRow, wins_ties_losses
from rag_eval._compare.variants import (
    SweepPoint,
    at_k_curves,
    choose_baseline,
    mean_rows,
    sorted_deltas,
    sweep_points,
    value_text,
)
from rag_eval._report.format import fmt
from rag_eval._run.plan import AT_K, DELTAS, MEANS, plot_file_part

if TYPE_CHECKING:
    from rag_eval._run.outcome import RunOutcome

__all__ = [
    "PlotSet",
    "build_plots",
    "means_with_ci_svg",
    "metric_at_k_svg",
    "per_query_deltas_svg",
    "plot_lines",
    "run_plots",
    "sensitivity_svg",
]

# Everything that makes two renderings of the same data differ, fixed: element ids are
# hashes salted with svg.hashsalt (random otherwise), text stays text (glyph paths would
# depend on the font file's version), and "$" is plain text, never mathtext.
_RC: dict[str, Any] = {"svg.hashsalt": "rag_eval", "svg.fonttype": "none", "text.parse_math": False}
_METADATA = {"Date": None, "Creator": "rag_eval"}


@dataclass
class PlotSet:
    """The plots of a run: SVG text by file name, a one-line text equivalent of each, and the data drawn."""

    files: dict[str, str] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)


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
    """One line per variant: its per-query differences to the baseline, sorted worst first (left: losses)."""

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
        if value_text(value) not in categories:
            categories.append(value_text(value))

    def position(value: Any) -> int:
        return categories.index(value_text(value))

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
            f"{label} {_wins(d, main)}" for label, d in deltas.items()
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


def _wins(deltas: np.ndarray, metric: str) -> str:
    wins, ties, losses = wins_ties_losses(deltas, metric)
    return f"{wins} better, {ties} equal, {losses} worse"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
