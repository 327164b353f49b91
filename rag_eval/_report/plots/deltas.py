"""The deltas plot: small multiples, one panel per variant, of its sorted per-query differences to the baseline.

One line per variant on shared axes is unreadable past a handful (17 variants x 472 queries was a 618 KB
tangle), so each variant gets its own panel on a shared y axis: its differences, sorted worst first,
as a step line over the share of paired queries; the part worse than the baseline hatched, the part
better shaded, the mean difference dashed, and the mean and wins/ties/losses written in the panel.

The step line is drawn from the sorted differences themselves: runs of equal values are one step,
and past :data:`MAX_VERTICES` corners a panel keeps the first and last corner of each of 98 columns
(the values are sorted, so the line between them stays inside the true one's range in that column:
the shape is kept to a column's width, 2.4 px of a 236 px panel). Every corner kept is a (query position, difference)
of the data; the worse / equal / better split is where wins_ties_losses puts it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from rag_eval._compare.decision import wins_ties_losses
from rag_eval._core.errors import MetricError
from rag_eval._report.format import signed
from rag_eval._report.plots.axes import AXIS, PALETTE, Scale, nice_ticks, polyline, x_grid, y_grid
from rag_eval._report.plots.svg import document, esc, num, text, text_width, wrap
from rag_eval._scoring.stats import win_tie_loss

__all__ = ["MAX_VERTICES", "per_query_deltas_svg", "step_corners"]

MAX_VERTICES = 200
PAD, LEFT = 16.0, 62.0
PANEL_H, HEAD, GAP_X, GAP_Y = 112.0, 38.0, 30.0, 30.0
WORSE, BETTER, LINE = PALETTE[1], PALETTE[0], "#333333"
# Hatched: the worse part differs from the better one by more than its colour.
_HATCH = (f'<pattern id="worse-hatch" width="5" height="5" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
          f'<rect width="5" height="5" fill="{WORSE}" fill-opacity="0.12"/>'
          f'<path d="M0 0V5" stroke="{WORSE}" stroke-width="1.6"/></pattern>')


def per_query_deltas_svg(deltas_by_label: Mapping[str, Sequence[float] | np.ndarray], metric: str = "metric",
                         baseline: str = "baseline") -> str:
    """One panel per variant: its per-query differences to ``baseline``, sorted worst first (left: losses).

    The panels share the y axis ("``metric`` minus ``baseline``"); the x axis is the share of the
    variant's paired queries. Each panel writes the mean difference and W/T/L (queries better /
    equal / worse than the baseline, in the metric's direction).
    """
    series = {label: np.asarray(d, dtype=np.float64) for label, d in deltas_by_label.items()}
    stats = {label: (_mean_text(d), "W/T/L {}/{}/{}".format(*_counts(d, metric))) for label, d in series.items()}
    # Three columns at most: a panel keeps room for its label and numbers at the size the report shows it.
    columns = 1 if len(series) <= 1 else 2 if len(series) <= 4 else 3
    panel_w = {1: 560.0, 2: 340.0, 3: 236.0}[columns]
    # The mean and W/T/L share a line where both fit, else W/T/L gets its own.
    one_line = all(text_width(m, 11) + text_width(c, 11) + 12 <= panel_w for m, c in stats.values())
    head = HEAD if one_line else HEAD + 15
    width = PAD + LEFT + columns * panel_w + (columns - 1) * GAP_X + PAD
    lines = wrap(
        "One panel per variant: its per-query differences, sorted worst first, as a step line; hatched: worse "
        f"than {baseline}, shaded: better, dashed: the mean difference. W/T/L: queries better / equal / worse.",
        width - 2 * PAD, 11)
    top = 52 + 15 * len(lines)
    rows = max(1, math.ceil(len(series) / columns))
    pitch = head + PANEL_H + GAP_Y
    height = top + rows * pitch + 30
    values = [v for d in series.values() for v in (d.min(), d.max(), d.mean()) if d.size]
    ticks = nice_ticks(min([0.0, *values]), max([0.0, *values]), count=4)
    scale = Scale(ticks[0], ticks[-1], head + PANEL_H, head)  # panel coordinates: y grows downward

    body = [text(PAD, 26, f"Per-query differences in {metric} to {baseline}, sorted worst first", size=15,
                 weight="bold", width=width - 2 * PAD)]
    body += [text(PAD, 46 + 15 * i, line, size=11, fill=AXIS) for i, line in enumerate(lines)]
    grid_bottom = top + rows * pitch - GAP_Y
    body.append(text(PAD + 4, (top + grid_bottom) / 2, f"{metric} minus {baseline}", rotate=True,
                     anchor="middle", middle=True, width=grid_bottom - top, cls="axis-label"))
    labels = list(series)
    for i, label in enumerate(labels):
        row, column = divmod(i, columns)
        x, y = PAD + LEFT + column * (panel_w + GAP_X), top + row * pitch
        parts = [text(0, 14, label, weight="bold", width=panel_w, cls="panel-label"),
                 text(0, 30, stats[label][0], size=11, cls="mean"),
                 text(panel_w if one_line else 0, 30 if one_line else 45, stats[label][1], size=11,
                      anchor="end" if one_line else "start", cls="wtl")]
        parts += _plot(series[label], metric, panel_w, head, scale, ticks, column == 0, i + columns >= len(labels))
        body.append(f'<g class="panel" data-label="{esc(label)}" transform="translate({num(x)} {num(y)})">'
                    + "".join(parts) + "</g>")
    body.append(text(PAD + LEFT + (width - PAD - LEFT - PAD) / 2, height - 12, "queries, sorted by difference",
                     anchor="middle", cls="axis-label", suffix=" (share of the variant's paired queries)"))
    desc = f"Per-query differences in {metric} to {baseline}, sorted worst first, one panel per variant: " + "; ".join(
        f"{label}: {stats[label][0]}, {_counts_text(d, metric)} of {d.size} paired queries"
        for label, d in series.items()
    ) if series else f"No variant to compare with {baseline}."
    return document(width, height, f"Per-query differences in {metric} to {baseline}", desc, body, defs=_HATCH)


def _plot(deltas: np.ndarray, metric: str, w: float, top: float, scale: Scale, ticks: list[float], y_labels: bool,
          x_labels: bool) -> list[str]:
    """A panel's plot, in its own coordinates from ``top``: grid, worse and better areas, step line, mean line."""
    better, equal, worse = _counts(deltas, metric)
    n = deltas.size
    parts = y_grid(scale, ticks, 0, w, labels=y_labels)
    parts += x_grid([(w * share, f"{round(share * 100)}%" if share in (0, 0.5, 1) else "")
                     for share in (0, 0.25, 0.5, 0.75, 1)], top, top + PANEL_H, labels=x_labels)
    if n:
        xs = Scale(0.0, float(n), 0.0, w)
        corners = step_corners(deltas, boundaries=(worse, worse + equal))
        to_pixels = [(xs(position), scale(value)) for position, value in corners]
        zero = scale(0.0)
        if worse:  # worst first: the first `worse` queries, closed along zero
            cut = next(i for i, (position, _) in enumerate(corners) if position == worse)
            points = [(0.0, zero), *to_pixels[: cut + 1], (xs(worse), zero)]
            parts.append(f'<polygon class="worse" points="{_points(points)}" fill="url(#worse-hatch)"/>')
        if better:
            start = worse + equal
            cut = max(i for i, (position, _) in enumerate(corners) if position == start)
            points = [(xs(start), zero), *to_pixels[cut:], (w, zero)]
            parts.append(f'<polygon class="better" points="{_points(points)}" fill="{BETTER}" fill-opacity="0.28"/>')
        parts.append(f'<path d="M0 {num(zero)}H{num(w)}" stroke="{AXIS}" stroke-width="1.2"/>')
        parts.append(polyline(to_pixels, cls="steps", fill="none", stroke=LINE, stroke_width="1.5",
                              stroke_linejoin="round"))
        parts.append(f'<path class="mean-line" d="M0 {num(scale(float(deltas.mean())))}H{num(w)}" stroke="#000" '
                     'stroke-dasharray="5 3"/>')
    parts.append(f'<rect x="0" y="{num(top)}" width="{num(w)}" height="{num(PANEL_H)}" fill="none" stroke="{AXIS}" '
                 'stroke-width="0.8"/>')
    return parts


def step_corners(sorted_values: np.ndarray, boundaries: Sequence[int] = (),
                 max_vertices: int = MAX_VERTICES) -> list[tuple[int, float]]:
    """The corners ``(query position, value)`` of the step line of ``sorted_values`` (query i spans i..i+1).

    Each run of equal values is one flat step, two corners. Past ``max_vertices`` corners, the first
    and last corner of each of ``max_vertices // 2 - 2`` equal columns of positions are kept, and
    every corner at a position in ``boundaries`` (the worse / equal / better split): a subsequence of
    the exact corners, never a value that is not in the data.
    """
    values = np.asarray(sorted_values, dtype=np.float64)
    n = values.size
    if n == 0:
        return []
    starts = np.concatenate(([0], np.flatnonzero(values[1:] != values[:-1]) + 1))
    ends = np.concatenate((starts[1:], [n]))
    positions = np.stack((starts, ends), axis=1).ravel()  # each run: its start and end corner
    heights = np.repeat(values[starts], 2)
    if positions.size > max_vertices:
        columns = max(max_vertices // 2 - 2, 1)
        column = np.minimum(positions * columns // n, columns - 1)
        first = np.concatenate(([True], column[1:] != column[:-1]))
        last = np.concatenate((column[1:] != column[:-1], [True]))
        keep = first | last | np.isin(positions, list(boundaries))
        positions, heights = positions[keep], heights[keep]
    return [(int(p), float(v)) for p, v in zip(positions, heights)]


def _counts(deltas: np.ndarray, metric: str) -> tuple[int, int, int]:
    """Better / equal / worse than the baseline as the verdict counts them (higher is better for an unknown name)."""
    try:
        return wins_ties_losses(deltas, metric)
    except MetricError:
        return win_tie_loss(deltas) if deltas.size else (0, 0, 0)


def _mean_text(deltas: np.ndarray) -> str:
    """The panel's mean difference as the report writes a difference (+0.0123), n/a without queries."""
    return f"mean Δ {signed(float(deltas.mean())) if deltas.size else 'n/a'}"


def _counts_text(deltas: np.ndarray, metric: str) -> str:
    better, equal, worse = _counts(deltas, metric)
    return f"{better} better, {equal} equal, {worse} worse"


def _points(points: Sequence[tuple[float, float]]) -> str:
    return " ".join(f"{num(x)},{num(y)}" for x, y in points)
