"""What every plot's axes share: round ("nice") ticks, linear scales, gridlines, series styles, markers, legends.

Series are told apart by marker shape and dash as well as colour (Okabe & Ito's palette, safe for the
common colour-vision deficiencies), so that a plot printed in grey or seen without red-green still reads.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rag_eval._report.plots.svg import num, text

__all__ = [
    "GRID",
    "PALETTE",
    "Scale",
    "Style",
    "legend",
    "line_style",
    "marker",
    "nice_ticks",
    "polyline",
    "tick_text",
    "x_grid",
    "y_grid",
]

# Okabe-Ito without its yellow, too pale for a thin line on white.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
MARKERS = ("circle", "square", "triangle", "diamond", "triangle-down", "cross")
DASHES = ("", "6 3", "2 2", "8 3 2 3")
GRID = "#e3e3e3"
AXIS = "#6b6b6b"


@dataclass(frozen=True)
class Style:
    """How one series is drawn: colour, dash pattern (empty: solid) and marker shape."""

    colour: str
    dash: str
    marker: str


def line_style(position: int) -> Style:
    """The style of the series at ``position``: marker and dash alone tell the first 24 apart, colour adds to it.

    Markers cycle by 6 and dashes change every 6 series, so two series never share marker and dash
    below 24; colours cycle by 7, prime to 6, so (colour, marker, dash) repeat only after 168.
    """
    return Style(PALETTE[position % len(PALETTE)], DASHES[position // len(MARKERS) % len(DASHES)],
                 MARKERS[position % len(MARKERS)])


@dataclass(frozen=True)
class Scale:
    """A linear map from data values (``low``..``high``) to pixels (``start``..``end``)."""

    low: float
    high: float
    start: float
    end: float

    def __call__(self, value: float) -> float:
        return self.start + (value - self.low) * (self.end - self.start) / (self.high - self.low)


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering ``low``..``high``: steps of 1, 2, 2.5 or 5 times a power of ten, about ``count``.

    The first and last ticks are the axis ends. Equal ends are widened (a constant still gets an axis).
    """
    if not (math.isfinite(low) and math.isfinite(high)):
        low, high = 0.0, 1.0
    low, high = min(low, high), max(low, high)
    if high - low < 1e-12:
        pad = max(abs(low) * 0.05, 0.05)
        low, high = low - pad, high + pad
    raw = (high - low) / max(count, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw * (1 - 1e-9))
    first = math.floor(low / step + 1e-9)
    last = math.ceil(high / step - 1e-9)
    decimals = _decimals(step)
    return [round(i * step, decimals) + 0.0 for i in range(first, last + 1)]


def _decimals(step: float) -> int:
    """The fewest decimals that write ``step`` (and so every multiple of it) exactly enough: 0.25 -> 2, 5 -> 0."""
    for decimals in range(0, 10):
        if abs(round(step, decimals) - step) < step * 1e-6:
            return decimals
    return 10


def tick_text(ticks: Sequence[float]) -> list[str]:
    """Tick values as written: every tick with the decimals of the step (0, 0.25, 0.5 as 0.00, 0.25, 0.50)."""
    decimals = _decimals(abs(ticks[1] - ticks[0])) if len(ticks) > 1 and ticks[1] != ticks[0] else 0
    written = [f"{tick:.{decimals}f}" for tick in ticks]
    return [w[1:] if w.startswith("-") and float(w) == 0 else w for w in written]  # no "-0.00"


def y_grid(scale: Scale, ticks: Sequence[float], left: float, right: float, labels: bool = True) -> list[str]:
    """Horizontal gridlines at ``ticks``, each labelled left of ``left`` when ``labels``."""
    out = []
    for tick, written in zip(ticks, tick_text(ticks)):
        y = scale(tick)
        out.append(f'<path d="M{num(left)} {num(y)}H{num(right)}" stroke="{GRID}"/>')
        if labels:
            out.append(text(left - 6, y, written, size=11, anchor="end", cls="ytick", middle=True, fill=AXIS))
    return out


def x_grid(positions: Iterable[tuple[float, str]], top: float, bottom: float, labels: bool = True,
           width: float | None = None) -> list[str]:
    """Vertical gridlines at pixel ``positions`` (x, label), each label under ``bottom`` (cut to ``width``)."""
    out = []
    for x, written in positions:
        out.append(f'<path d="M{num(x)} {num(top)}V{num(bottom)}" stroke="{GRID}"/>')
        if labels and written:
            out.append(text(x, bottom + 15, written, size=11, anchor="middle", cls="xtick", width=width, fill=AXIS))
    return out


def polyline(points: Sequence[tuple[float, float]], **attributes: str) -> str:
    """A ``<polyline>`` through pixel ``points``; ``attributes`` with ``_`` for ``-`` (stroke_width), cls for class."""
    attrs = "".join(f' {"class" if name == "cls" else name.replace("_", "-")}="{value}"'
                    for name, value in attributes.items())
    return f'<polyline points="{" ".join(f"{num(x)},{num(y)}" for x, y in points)}"{attrs}/>'


def marker(shape: str, x: float, y: float, colour: str, size: float = 3.6) -> str:
    """One marker centred on (x, y), class ``mk``: a circle, or a path that starts at its centre (``M x y``).

    Filled shapes get a white rim so that markers on top of each other stay apart.
    """
    cx, cy, r = num(x), num(y), size
    filled = f'fill="{colour}" stroke="#fff" stroke-width="0.8"'
    if shape == "circle":
        return f'<circle class="mk" cx="{cx}" cy="{cy}" r="{num(r)}" {filled}/>'
    if shape == "cross":
        d = f"M{cx} {cy}m{num(-r)} {num(-r)}l{num(2 * r)} {num(2 * r)}m0 {num(-2 * r)}l{num(-2 * r)} {num(2 * r)}"
        return f'<path class="mk" d="{d}" stroke="{colour}" stroke-width="2" fill="none"/>'
    relative = {
        "square": f"m{num(-r * 0.9)} {num(-r * 0.9)}h{num(r * 1.8)}v{num(r * 1.8)}h{num(-r * 1.8)}z",
        "triangle": f"m0 {num(-r * 1.2)}l{num(r * 1.1)} {num(r * 1.9)}h{num(-r * 2.2)}z",
        "triangle-down": f"m0 {num(r * 1.2)}l{num(r * 1.1)} {num(-r * 1.9)}h{num(-r * 2.2)}z",
        "diamond": f"m0 {num(-r * 1.3)}l{num(r * 1.1)} {num(r * 1.3)}l{num(-r * 1.1)} {num(r * 1.3)}"
                   f"l{num(-r * 1.1)} {num(-r * 1.3)}z",
    }[shape]
    return f'<path class="mk" d="M{cx} {cy}{relative}" {filled}/>'


def legend(x: float, y: float, width: float, entries: Sequence[tuple[str, Style]], title: str = "") -> list[str]:
    """A legend box at (x, y): per entry a line sample in its dash with its marker, and its label cut to ``width``."""
    out = ['<g class="legend">']
    row = y
    if title:
        out.append(text(x, row + 4, title, size=11, weight="bold", width=width))
        row += 18
    for label, style in entries:
        dash = f' stroke-dasharray="{style.dash}"' if style.dash else ""
        out.append(f'<g class="entry"><path d="M{num(x)} {num(row)}h24" stroke="{style.colour}" stroke-width="2"'
                   f'{dash}/>{marker(style.marker, x + 12, row, style.colour)}'
                   f'{text(x + 30, row, label, size=11, width=width - 30, middle=True)}</g>')
        row += 17
    out.append("</g>")
    return out
