"""Plots of a run as SVG text: means with CIs, per-query differences, metric@k curves, sweep sensitivity.

Plots are renderers like the markdown report: they draw numbers computed below them
(rag_eval._compare.variants: means with bootstrap CIs, paired differences, the metric@k
curves re-scored from the stored rankings, sweep points) and return SVG text; they
compute nothing and never write files. The SVG is written by hand (no plotting library:
importing one cost a warm run most of its time), so it is deterministic by construction:
the same data give the same bytes, with no date, and a committed example can be compared
byte for byte. Each SVG carries a ``<title>`` and a ``<desc>`` (its text equivalent).

- :mod:`.svg`: escaping, coordinates, text fitted with an ellipsis, the document;
- :mod:`.axes`: nice ticks, scales, gridlines, series styles, markers, legends;
- :mod:`.means`, :mod:`.deltas`, :mod:`.lines`: the four kinds of plot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from rag_eval._compare.decision import wins_ties_losses
from rag_eval._compare.variants import at_k_curves, choose_baseline, mean_rows, sorted_deltas, sweep_points
from rag_eval._report.format import fmt
from rag_eval._report.plots.deltas import per_query_deltas_svg
from rag_eval._report.plots.lines import metric_at_k_svg, sensitivity_svg
from rag_eval._report.plots.means import means_with_ci_svg
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


@dataclass
class PlotSet:
    """The plots of a run: SVG text by file name, a one-line text equivalent of each, and the data drawn."""

    files: dict[str, str] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)


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


def _wins(deltas: np.ndarray, metric: str) -> str:
    wins, ties, losses = wins_ties_losses(deltas, metric)
    return f"{wins} better, {ties} equal, {losses} worse"
