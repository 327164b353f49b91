"""Text into report.html safely: HTML escaping, JSON that cannot end its <script> block, de-duplicated strings.

Ids, labels and texts can be any UTF-8 text: ``</script>``, ``<img onerror=...>``, quotes, ``&``,
U+2028, right-to-left marks. Two routes into the page, each closed to markup:

- text in the HTML around the data (:func:`text`, :func:`attribute`): escaped with ``html.escape``,
  quotes included, so it is character data and never a tag or an attribute's end;
- the data (:func:`script_json`): compact JSON in a ``<script type="application/json">`` block whose
  ``<``, ``>`` and ``&`` are written as ``\\u003c``, ``\\u003e``, ``\\u0026`` (so no ``</script``,
  ``<!--`` or ``<script`` can occur in the block) and U+2028 / U+2029 as escapes (line terminators to
  older JavaScript parsers). ``JSON.parse`` reads back exactly the original text; the page's script
  inserts it with ``textContent`` only.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from typing import Any

__all__ = ["StringTable", "attribute", "csp_hash", "script_json", "text"]

_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                              "\u2029": "\\u2029"})


def text(value: object) -> str:
    """``value`` as HTML character data (``<``, ``>``, ``&`` and quotes escaped)."""
    return html.escape(str(value), quote=True)


def attribute(value: object) -> str:
    """``value`` as the inside of a double-quoted attribute (the same escaping as :func:`text`)."""
    return html.escape(str(value), quote=True)


def script_json(data: Any) -> str:
    """``data`` as compact JSON safe inside ``<script type="application/json">`` (see the module's docstring).

    Non-ASCII text stays as it is (smaller than ``\\uXXXX`` escapes; the file is UTF-8); NaN and
    infinities are refused (the data holds None for a missing value).
    """
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).translate(_SCRIPT_SAFE)


def csp_hash(source: str) -> str:
    """The Content-Security-Policy source ``'sha256-...'`` of an inline ``<script>`` or ``<style>`` body."""
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


class StringTable:
    """Strings stored once: each distinct string gets an index, in the order first added."""

    def __init__(self) -> None:
        self._index: dict[str, int] = {}
        self.items: list[str] = []

    def add(self, value: str) -> int:
        """The index of ``value``, adding it when new."""
        index = self._index.get(value)
        if index is None:
            index = self._index[value] = len(self.items)
            self.items.append(value)
        return index

    def __len__(self) -> int:
        return len(self.items)
