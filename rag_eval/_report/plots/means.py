"""The means plot: a dot-and-whisker chart (forest plot) of each variant's mean and 95% bootstrap CI.

One row per variant in the order given (:func:`rag_eval._compare.variants.mean_rows`: best first), the
label on the left (cut with an ellipsis past its column, whole in a tooltip), the numbers on the right,
the baseline drawn as a diamond with its mean as a dashed line down the chart, so that which intervals
reach the baseline's mean reads at a glance. It draws the rows' own numbers and computes none.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rag_eval._compare.decision import MeanRow
from rag_eval._report.format import fmt
from rag_eval._report.plots.axes import AXIS, PALETTE, Scale, marker, nice_ticks, tick_text, x_grid
from rag_eval._report.plots.svg import BOLD, document, esc, num, text, text_width

__all__ = ["means_with_ci_svg"]

WIDTH, MIN_PLOT_W, MAX_LABELS_W = 760.0, 360.0, 300.0
PAD = 16.0
ROW = 24.0
TOP = 78.0
COLOUR, BASELINE_COLOUR = PALETTE[0], PALETTE[1]
BASELINE_SUFFIX = " (baseline)"


def means_with_ci_svg(rows: Sequence[MeanRow], metric: str = "metric", baseline: str | None = None) -> str:
    """Each variant's mean (dot) and 95% CI (whisker), one row each in the given order, best at the top.

    The numbers are written beside each row (``0.6250 [0.3750, 0.8750]``); the baseline's row is
    marked ``(baseline)``, drawn as a diamond, and its mean as a dashed line across the rows.
    """
    numbers = [f"{fmt(r.mean)} [{fmt(r.low)}, {fmt(r.high)}]" for r in rows]
    labels_w = min(MAX_LABELS_W, max([text_width(r.label + BASELINE_SUFFIX, 12 * BOLD) if r.label == baseline
                               else text_width(r.label, 12) for r in rows] + [60.0]))
    numbers_w = max([text_width(n, 11) for n in numbers] + [text_width("mean [95% CI]", 11)])
    # Wider than WIDTH where long labels would squeeze the plot under MIN_PLOT_W (the viewBox scales it back).
    width = max(WIDTH, PAD + labels_w + 14 + MIN_PLOT_W + 18 + numbers_w + PAD)
    left = PAD + labels_w + 14
    right = width - PAD - numbers_w - 18
    bottom = TOP + ROW * max(len(rows), 1)
    ends = [v for r in rows for v in (r.low, r.mean, r.high) if math.isfinite(v)]
    ticks = nice_ticks(min(ends, default=0.0), max(ends, default=1.0))
    scale = Scale(ticks[0], ticks[-1], left, right)

    body = [text(PAD, 26, f"Mean {metric} by variant, with 95% bootstrap CIs, best first", size=15, weight="bold",
                 width=width - 2 * PAD)]
    body += _key(PAD, 50, baseline is not None and any(r.label == baseline for r in rows))
    body.append(text(width - PAD, TOP - 8, "mean [95% CI]", size=11, anchor="end", fill=AXIS))
    for i in range(0, len(rows), 2):  # banded rows: the eye follows a row from its label to its dot
        body.append(f'<rect x="{num(PAD)}" y="{num(TOP + i * ROW)}" width="{num(width - 2 * PAD)}" '
                    f'height="{num(ROW)}" fill="#f4f4f4"/>')
    body += x_grid([(scale(t), w) for t, w in zip(ticks, tick_text(ticks))], TOP, bottom)
    body.append(f'<path d="M{num(left)} {num(bottom)}H{num(right)}" stroke="{AXIS}"/>')
    base_row = next((r for r in rows if r.label == baseline), None)
    if base_row is not None:
        x = scale(base_row.mean)
        body.append(f'<path class="baseline-mean" d="M{num(x)} {num(TOP)}V{num(bottom)}" stroke="{BASELINE_COLOUR}" '
                    f'stroke-dasharray="5 3"/>')
    for i, (row, written) in enumerate(zip(rows, numbers)):
        body.append(_row(row, written, TOP + (i + 0.5) * ROW, scale, labels_w, width, row.label == baseline))
    body.append(text((left + right) / 2, bottom + 38, f"mean {metric} with 95% bootstrap CI", anchor="middle",
                     cls="axis-label"))
    desc = f"Means of {metric} with 95% bootstrap CIs, best first: " + "; ".join(
        f"{r.label}{BASELINE_SUFFIX if r.label == baseline else ''} {n} over {r.n} queries"
        for r, n in zip(rows, numbers)
    ) if rows else f"No variant has a value of {metric}."
    return document(width, bottom + 54, f"Mean {metric} with 95% bootstrap CIs", desc, body)


def _row(row: MeanRow, written: str, y: float, scale: Scale, labels_w: float, width: float, is_baseline: bool) -> str:
    """One variant's row: its label, whisker with caps, dot (diamond for the baseline) and numbers."""
    colour = BASELINE_COLOUR if is_baseline else COLOUR
    parts = [text(PAD + labels_w, y, row.label, anchor="end", width=labels_w, middle=True,
                  weight="bold" if is_baseline else None, suffix=BASELINE_SUFFIX if is_baseline else "",
                  cls="label")]
    if math.isfinite(row.low) and math.isfinite(row.high):
        low, high = scale(row.low), scale(row.high)
        parts.append(f'<line class="ci" x1="{num(low)}" y1="{num(y)}" x2="{num(high)}" y2="{num(y)}" '
                     f'stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<path d="M{num(low)} {num(y - 5)}v10M{num(high)} {num(y - 5)}v10" stroke="{colour}" '
                     'stroke-width="1.5"/>')
    parts.append(marker("diamond" if is_baseline else "circle", scale(row.mean), y, colour, size=4.5))
    parts.append(text(width - PAD, y, written, size=11, anchor="end", middle=True, cls="numbers"))
    return f'<g class="row" data-label="{esc(row.label)}">{"".join(parts)}</g>'


def _key(x: float, y: float, with_baseline: bool) -> list[str]:
    """The key under the title: what the dot, the whisker and the baseline's marks mean."""
    out = ['<g class="key">', marker("circle", x + 5, y, COLOUR, size=4.5), text(x + 14, y, "mean", size=11, middle=True)]
    x += 14 + text_width("mean", 11) + 18
    out.append(f'<path d="M{num(x)} {num(y)}h28M{num(x)} {num(y - 5)}v10M{num(x + 28)} {num(y - 5)}v10" '
               f'stroke="{COLOUR}" stroke-width="1.8"/>')
    out.append(text(x + 36, y, "95% bootstrap confidence interval", size=11, middle=True))
    x += 36 + text_width("95% bootstrap confidence interval", 11) + 18
    if with_baseline:
        out.append(marker("diamond", x + 5, y, BASELINE_COLOUR, size=4.5))
        out.append(f'<path d="M{num(x + 16)} {num(y - 7)}v14" stroke="{BASELINE_COLOUR}" stroke-dasharray="3 2"/>')
        out.append(text(x + 24, y, "baseline and its mean", size=11, middle=True))
    out.append("</g>")
    return out
