"""SVG written by hand: escaping, coordinates, text that fits its room, and the document around a plot.

Plain string building, no plotting library: the plots must not cost ``rag-eval run`` the import of
one (matplotlib alone took about 0.7 s of a warm run), and bytes built from strings are the same on
every machine. Text stays ``<text>`` (a screen reader and a search find it); its width is estimated
from Helvetica's advance widths with a margin (no font file is read), so that labels are cut with an
ellipsis before they could reach their neighbour, the full label kept in a ``<title>`` tooltip.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

__all__ = [
    "BOLD",
    "FONT",
    "document",
    "esc",
    "fit",
    "num",
    "text",
    "text_width",
    "wrap",
]

# The system's own sans-serif: no font is embedded (bytes, licences), every platform has one of these.
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, 'Liberation Sans', 'DejaVu Sans', sans-serif"
INK = "#1a1a1a"

# Characters XML 1.0 forbids (C0 controls but tab and line breaks, lone surrogates, U+FFFE/FFFF): a label
# holding one would make the whole file unreadable, so it is drawn as U+FFFD instead.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_ENTITIES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"})

# Advance widths of Helvetica (1/1000 em) for printable ASCII, space to tilde; other characters are
# estimated by their East Asian width. System fonts such as DejaVu Sans run wider, hence _MARGIN.
_ASCII_WIDTHS = (
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278,
    556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556,
    1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778,
    667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556,
    333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556,
    556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,
)
_MARGIN = 1.2
ELLIPSIS = "…"
BOLD = 1.1  # bold glyphs run about this much wider


def esc(value: object) -> str:
    """``value`` as XML text or attribute value: ``& < > " '`` escaped, characters XML forbids as U+FFFD."""
    return _NOT_XML.sub("\ufffd", str(value)).translate(_ENTITIES)


def num(value: float) -> str:
    """A coordinate to a tenth of a pixel, without trailing zeros (the same number, the same bytes)."""
    out = f"{value:.1f}".rstrip("0").rstrip(".")
    return "0" if out == "-0" else out


def _char_width(char: str) -> float:
    code = ord(char)
    if 32 <= code <= 126:
        return _ASCII_WIDTHS[code - 32] / 1000
    if unicodedata.combining(char):
        return 0.0
    return 1.0 if unicodedata.east_asian_width(char) in ("W", "F") else 0.62


def text_width(value: str, size: float) -> float:
    """The estimated width in pixels of ``value`` set at ``size`` pixels (on the wide side, by design)."""
    return sum(_char_width(c) for c in value) * size * _MARGIN


def fit(value: str, width: float, size: float) -> str:
    """``value`` if it fits ``width``, else its start and end around an ellipsis (variant labels differ at either end)."""
    if text_width(value, size) <= width:
        return value
    room = width - text_width(ELLIPSIS, size)
    head, tail = "", ""
    # Alternate from the end and the start: "dense.size-800.overlap-50" keeps "dense.s…overlap-50".
    i, j = 0, len(value)
    used = 0.0
    take_tail = True
    while i < j:
        char = value[j - 1] if take_tail else value[i]
        extra = _char_width(char) * size * _MARGIN
        if used + extra > room:
            break
        used += extra
        if take_tail:
            tail = char + tail
            j -= 1
        else:
            head += char
            i += 1
        take_tail = not take_tail
    return head + ELLIPSIS + tail


def wrap(value: str, width: float, size: float) -> list[str]:
    """``value`` broken at spaces into lines of at most ``width`` pixels (a word longer than a line is cut by fit)."""
    lines: list[str] = []
    line = ""
    for word in value.split():
        candidate = f"{line} {word}" if line else word
        if line and text_width(candidate, size) > width:
            lines.append(line)
            line = word
        else:
            line = candidate
    if line or not lines:
        lines.append(line)
    return [fit(one, width, size) for one in lines]


def text(x: float, y: float, value: str, *, size: float = 12, width: float | None = None, anchor: str = "start",
         cls: str | None = None, weight: str | None = None, rotate: bool = False, fill: str | None = None,
         middle: bool = False, suffix: str = "") -> str:
    """A ``<text>`` at (x, y); past ``width`` pixels cut with an ellipsis and wrapped with its full text as a tooltip.

    ``suffix`` is written whole after ``value`` (only ``value`` is cut); ``middle``: y is the middle of the
    line, not its baseline (0.35 em lower: no dominant-baseline, which some renderers ignore); ``rotate``:
    read bottom to top, turned about (x, y).
    """
    em = size * (BOLD if weight == "bold" else 1.0)  # the width of the glyphs, for fitting only
    shown = value if width is None else fit(value, width - text_width(suffix, em), em)
    attrs = [f'x="{num(x)}"', f'y="{num(y)}"']
    if middle:
        attrs.append('dy="0.35em"')
    if size != 12:
        attrs.append(f'font-size="{num(size)}"')
    if anchor != "start":
        attrs.append(f'text-anchor="{anchor}"')
    if weight:
        attrs.append(f'font-weight="{weight}"')
    if fill:
        attrs.append(f'fill="{fill}"')
    if cls:
        attrs.append(f'class="{cls}"')
    if rotate:
        attrs.append(f'transform="rotate(-90 {num(x)} {num(y)})"')
    element = f"<text {' '.join(attrs)}>{esc(shown + suffix)}</text>"
    return element if shown == value else f"<g><title>{esc(value + suffix)}</title>{element}</g>"


def document(width: float, height: float, title: str, desc: str, body: Sequence[str], defs: str = "") -> str:
    """The whole SVG: a viewBox (it scales), its intrinsic size, a ``<title>`` and ``<desc>`` read by screen readers.

    A white ground: the plot stays readable when a viewer shows it on a dark page.
    """
    w, h = num(width), num(height)
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" '
        f'aria-labelledby="plot-title" aria-describedby="plot-desc" font-family="{FONT}" font-size="12" fill="{INK}">\n'
        f'<title id="plot-title">{esc(title)}</title>\n<desc id="plot-desc">{esc(desc)}</desc>\n'
    )
    defs_part = f"<defs>{defs}</defs>\n" if defs else ""
    return head + defs_part + f'<rect width="{w}" height="{h}" fill="#fff"/>\n' + "\n".join(body) + "\n</svg>\n"
