"""Edit a YAML file in place of its text: comments, key order, quoting and indentation kept (ruamel.yaml round trip).

``judgements merge`` adds judgements and evidence to a query set that people wrote by hand. The file
is loaded as a round-trip tree, edited with the helpers below, and dumped. The indentation is not in
the tree, so :func:`load` tries the usual layouts and keeps the one whose dump of the untouched tree
gives the file back byte for byte (:attr:`Document.exact` says whether one did).

ruamel keeps what follows an item (blank lines, the comments before the next item) on the last
scalar of a block collection. Appending after that item would leave them between the item and the
new one; :func:`append` and :func:`delete` move them so that they stay after the block. ``ruamel`` is
imported inside the functions (docs/architecture.md: lazy imports).
"""

from __future__ import annotations

import copy
import functools
import io
from collections import Counter
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

import yaml

# (mapping indent, sequence indent, dash offset): "  - id:" under a key, then the other usual layouts.
LAYOUTS = ((2, 4, 2), (2, 2, 0), (4, 4, 2), (4, 6, 4), (4, 4, 0), (3, 3, 0))


@dataclass
class Document:
    """A round-trip YAML tree and how to dump it as it was written."""

    tree: Any
    layout: tuple[int, int, int]
    exact: bool  # the untouched tree dumps to the original text
    bom: bool
    crlf: bool

    def dump(self) -> str:
        """The tree as YAML text, with the file's layout, byte-order mark and line endings."""
        text = dump(self.tree, self.layout)
        if self.crlf:
            text = text.replace("\n", "\r\n")
        return ("\ufeff" if self.bom else "") + text


def load(text: str) -> Document:
    """``text`` (a YAML file's whole text) as a round-trip tree; raises ruamel's errors on bad YAML."""
    bom = text.startswith("\ufeff")
    body = text[1:] if bom else text
    crlf = "\r\n" in body and body.count("\r\n") == body.count("\n")
    if crlf:
        body = body.replace("\r\n", "\n")
    tree = round_trip_yaml(LAYOUTS[0]).load(body)
    changed: dict[tuple[int, int, int], int] = {}
    for layout in LAYOUTS:
        dumped = dump(tree, layout)
        if dumped == body:
            return Document(tree, layout, True, bom, crlf)
        changed[layout] = changed_lines(body, dumped)
    # None gives the file back (a plain scalar over several lines is joined, say): the one that changes least.
    return Document(tree, min(LAYOUTS, key=lambda layout: changed[layout]), False, bom, crlf)


def changed_lines(before: str, after: str) -> int:
    """How many lines of ``before`` are not in ``after`` (as a multiset: order aside)."""
    return sum((Counter(before.splitlines()) - Counter(after.splitlines())).values())


def scalar(value: Any) -> Any:
    """``value`` as ruamel should write it: a str that ruamel would leave plain and a YAML 1.1 reader (PyYAML,
    which reads query sets) would not read back as that text is double-quoted (``yes``, ``off``, ``010``), and so
    is one holding a line break or spaces at an end; anything else as it is. ruamel writes YAML 1.2, where ``yes``
    is plain text, and quotes itself what YAML 1.2 reads otherwise (``null``, ``2024-01-01``)."""
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString, ScalarString

    if not isinstance(value, str) or isinstance(value, ScalarString):  # a ScalarString keeps the file's quoting
        return value
    if _read_otherwise(value) or "\n" in value or value != value.strip():
        return DoubleQuotedScalarString(value)
    return value


@functools.lru_cache(maxsize=1)
def _resolvers() -> tuple[Any, Any]:
    """PyYAML's (YAML 1.1, what reads query sets) and ruamel's (YAML 1.2, what writes them) resolvers: built once."""
    from ruamel.yaml.resolver import VersionedResolver

    return yaml.resolver.Resolver(), VersionedResolver()


def _read_otherwise(value: str) -> bool:
    """Whether ruamel writes ``value`` plain and PyYAML reads that back as something else than this text."""
    from ruamel.yaml.nodes import ScalarNode

    text = "tag:yaml.org,2002:str"
    read, written = _resolvers()
    return bool(read.resolve(yaml.ScalarNode, value, (True, False)) != text
                and written.resolve(ScalarNode, value, (True, False)) == text)


def flow_map(items: dict[str, Any]) -> Any:
    """A mapping written on one line, ``{doc: a, start: 3, ...}``, its keys in the order given (text quoted where
    :func:`scalar` says)."""
    from ruamel.yaml.comments import CommentedMap

    node = CommentedMap((scalar(key), scalar(value)) for key, value in items.items())
    node.fa.set_flow_style()
    return node


def block_map() -> Any:
    """An empty mapping written as a block (one key a line)."""
    from ruamel.yaml.comments import CommentedMap

    return CommentedMap()


def block_seq() -> Any:
    """An empty sequence written as a block (one ``- item`` a line)."""
    from ruamel.yaml.comments import CommentedSeq

    return CommentedSeq()


def append(container: Any, value: Any, key: Any = None) -> None:
    """Append ``value`` to a mapping (under ``key``) or a sequence, keeping what followed the last item after it.

    Plain dicts and lists work too (no comments to keep): the same edit on the data a plain parser read.
    """
    trailing = take_trailing(container) if len(container) else None
    if isinstance(container, MutableMapping):
        container[scalar(key)] = scalar(value)
    else:
        container.append(scalar(value))
    if trailing is not None:
        _give_trailing(container, trailing)


def delete(container: Any, key: Any) -> None:
    """Remove an item (a mapping's key or a sequence's index), keeping what followed the last item after the block."""
    last = _last_key(container)
    trailing = take_trailing(container) if last == key else None
    del container[key]
    if trailing is not None and len(container):
        _give_trailing(container, trailing)


def take_trailing(node: Any) -> Any:
    """Remove and return the comment token after ``node``'s last item (deepest first), or None.

    A comment at the end of the last item's own line stays there; only what follows its line moves.
    """
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if not isinstance(node, (CommentedMap, CommentedSeq)) or not len(node) or node.fa.flow_style():
        return None
    last = _last_key(node)
    inner = take_trailing(node[last])
    if inner is not None:
        return inner
    tokens = node.ca.items.get(last)
    slot = 2 if isinstance(node, CommentedMap) else 0
    if not tokens or len(tokens) <= slot or tokens[slot] is None:
        return None
    token = tokens[slot]
    value = token.value
    if value.startswith("#"):  # an end-of-line comment: it stays; what follows its line moves
        own, _, rest = value.partition("\n")
        if not rest:
            return None
        moved = copy.copy(token)
        token.value = own + "\n"
        moved.value = "\n" + rest
        return moved
    tokens[slot] = None
    return token


def _give_trailing(node: Any, token: Any) -> None:
    """Put ``token`` after ``node``'s last item, on its deepest block item."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    last = _last_key(node)
    child = node[last]
    if isinstance(child, (CommentedMap, CommentedSeq)) and len(child) and not child.fa.flow_style():
        _give_trailing(child, token)
        return
    if isinstance(node, CommentedMap):
        node.ca.items[last] = [None, None, token, None]
    else:
        node.ca.items[last] = [token, None]


def _last_key(node: Any) -> Any:
    return next(reversed(node)) if isinstance(node, Mapping) else len(node) - 1


def round_trip_yaml(layout: tuple[int, int, int]) -> Any:
    """ruamel's round-trip YAML with ``layout``'s (mapping, sequence, offset) indentation, never re-wrapping a line."""
    from ruamel.yaml import YAML

    yaml = YAML()  # round trip
    yaml.preserve_quotes = True
    yaml.width = 1 << 30  # never fold a long line that was written on one
    mapping, sequence, offset = layout
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    return yaml


def dump(tree: Any, layout: tuple[int, int, int]) -> str:
    """``tree`` written as YAML with ``layout``'s indentation."""
    out = io.StringIO()
    round_trip_yaml(layout).dump(tree, out)
    return out.getvalue()
