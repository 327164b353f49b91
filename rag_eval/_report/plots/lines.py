"""Line charts: the main metric at each cutoff k, and the main metric against one swept parameter.

Both are a few series over a few x positions, so one chart with a legend beside it reads well; each
series has its own marker and (past six) dash as well as colour (rag_eval._report.plots.axes.line_style).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from rag_eval._compare.variants import SweepPoint, value_text
from rag_eval._report.format import fmt
from rag_eval._report.plots.axes import AXIS, Scale, legend, line_style, marker, nice_ticks, polyline, x_grid, y_grid
from rag_eval._report.plots.svg import document, esc, num, text, text_width

__all__ = ["metric_at_k_svg", "sensitivity_svg"]

WIDTH, PAD, LEFT, TOP = 760.0, 16.0, 70.0, 54.0
LEGEND_W = 250.0
MIN_PLOT_H = 280.0


def metric_at_k_svg(curves: Mapping[str, Mapping[int, float]], family: str = "metric@k") -> str:
    """One line per variant: the metric at each cutoff k (log-scaled k axis, ticks at the cutoffs)."""
    ks = sorted({k for curve in curves.values() for k in curve})
    # Cutoffs grow by factors (1, 2, 3, 5, 10, 20, ...): a log axis spaces them evenly enough to read.
    position = {k: math.log10(k) if k > 0 else 0.0 for k in ks}
    series = [(label, [(position[k], v) for k, v in sorted(curve.items())]) for label, curve in curves.items()]
    desc = f"{family} at k = {', '.join(map(str, ks))}: " + "; ".join(
        f"{label} {' / '.join(fmt(curve[k]) if k in curve else 'n/a' for k in ks)}" for label, curve in curves.items()
    )
    return _chart(f"{family} at each cutoff k, per variant", desc, "k", family, series,
                  [(position[k], str(k)) for k in ks], legend_title="variant", always_legend=True)


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
    grouped: dict[str, list[SweepPoint]] = {}
    for p in points:
        grouped.setdefault(p.series, []).append(p)
    series = [(name, sorted((float(categories.index(value_text(p.value))), p.mean) for p in members))
              for name, members in grouped.items()]
    desc = f"Mean {metric} against {param}, one line per combination of the other varied values: " + "; ".join(
        f"{name}: " + ", ".join(f"{value_text(p.value)} {fmt(p.mean)}" for p in sorted(
            members, key=lambda p: categories.index(value_text(p.value))))
        for name, members in grouped.items()
    )
    return _chart(f"Mean {metric} against {param}", desc, param, f"mean {metric}", series,
                  list(enumerate(categories)), legend_title="other values", always_legend=False, pad_x=True)


def _chart(title: str, desc: str, x_label: str, y_label: str, series: Sequence[tuple[str, list[tuple[float, float]]]],
           x_ticks: Sequence[tuple[float, str]], legend_title: str, always_legend: bool, pad_x: bool = False) -> str:
    """A line chart: ``series`` of (x, y) in data units over ``x_ticks`` (x, label), a legend beside it when asked."""
    with_legend = bool(series) and (always_legend or len(series) > 1)
    # The legend as wide as its longest label needs, up to LEGEND_W (past it labels are cut, whole in tooltips).
    legend_w = min(LEGEND_W, max([text_width(name, 11) + 32 for name, _ in series] + [110.0]))
    right = WIDTH - PAD - (legend_w + 20 if with_legend else 10)
    plot_h = max(MIN_PLOT_H, 17.0 * len(series) + 30)
    bottom = TOP + plot_h
    ys = [y for _, points in series for _, y in points if math.isfinite(y)]
    ticks = nice_ticks(min(ys, default=0.0), max(ys, default=1.0))
    y_scale = Scale(ticks[0], ticks[-1], bottom, TOP)
    xs = [x for x, _ in x_ticks] or [0.0, 1.0]
    low, high = min(xs), max(xs)
    if high == low:
        low, high = low - 1, high + 1
    # Categories get half a step of room at either end; a continuous axis (log k) a little.
    margin = 0.5 if pad_x else (high - low) * 0.04
    x_scale = Scale(low - margin, high + margin, LEFT, right)
    room = (right - LEFT) / max(len(x_ticks), 1) - 6  # a category label never reaches its neighbour

    body = [text(PAD, 26, title, size=15, weight="bold", width=WIDTH - 2 * PAD)]
    body += y_grid(y_scale, ticks, LEFT, right)
    body += x_grid([(x_scale(x), label) for x, label in x_ticks], TOP, bottom, width=room)
    body.append(f'<rect x="{num(LEFT)}" y="{num(TOP)}" width="{num(right - LEFT)}" height="{num(plot_h)}" '
                f'fill="none" stroke="{AXIS}" stroke-width="0.8"/>')
    for i, (name, points) in enumerate(series):
        style = line_style(i)
        drawn = [(x_scale(x), y_scale(y)) for x, y in points if math.isfinite(y)]
        dash = {"stroke_dasharray": style.dash} if style.dash else {}
        parts = [polyline(drawn, fill="none", stroke=style.colour, stroke_width="2", stroke_linejoin="round", **dash)]
        parts += [marker(style.marker, x, y, style.colour) for x, y in drawn]
        body.append(f'<g class="series" data-label="{esc(name)}">{"".join(parts)}</g>')
    body.append(text((LEFT + right) / 2, bottom + 38, x_label, anchor="middle", cls="axis-label",
                     width=right - LEFT))
    body.append(text(PAD + 6, (TOP + bottom) / 2, y_label, rotate=True, anchor="middle", middle=True,
                     cls="axis-label", width=plot_h))
    if with_legend:
        body += legend(right + 20, TOP + 4, legend_w, [(name, line_style(i)) for i, (name, _) in enumerate(series)],
                       title=legend_title)
    return document(WIDTH, bottom + 54, title, desc, body)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
