"""Read YAML purely (safe_load) and safely: bounded size, nesting and alias expansion.

Every YAML file a run reads (the config, a query set, a YAML corpus) goes through
:func:`load_yaml`, so each gets the same one-line errors: the file checks of
:mod:`rag_eval.files` (a folder, a FIFO, /dev/zero, an unreadable or oversized
file, text that is not UTF-8), syntax errors with line and column, a key repeated
in one mapping, and the two ways a tiny YAML file can explode:

- an alias bomb ("billion laughs"): aliases that refer to anchors holding aliases
  multiply. PyYAML builds them as shared objects, so the load itself is cheap, but
  whatever walks the result afterwards (validation, writing params to a results
  file) expands them: a 495-byte config once produced a 407 MB results file. The
  nodes that aliases add when expanded are counted while the document is composed
  and refused past :data:`MAX_ALIAS_NODES`, and so are the bytes of the scalars (keys
  and values) they reach, past :data:`MAX_ALIAS_BYTES`: 5,000 aliases of one 200 KB
  string are only 5,000 nodes, but a 1 MB config wrote a 2 GB results file with them.
  An alias inside its own anchor (a recursive structure, which no reader can expand)
  is refused too.
- deep nesting: 20,000 nested brackets overflow Python's stack in the composer.
  Nesting, counted through aliases, is refused past :data:`MAX_NESTING` levels.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any, NoReturn

import yaml
from yaml.events import AliasEvent, CollectionStartEvent
from yaml.nodes import CollectionNode, MappingNode, Node

from rag_eval._core.errors import ConfigError, RagEvalError
from rag_eval._core.files import MAX_CONFIG_BYTES, read_text
from rag_eval._core.ids import SURROGATE_FIX, joined_pairs, surrogate_problem
from rag_eval._core.messages import shown
from rag_eval._core.yaml_numbers import EXPONENT_NUMBER, IntAsWritten, NumberAsText

# Nodes (scalars, sequences, mappings, keys included) that aliases may add to one document
# when expanded. Anchors for shared parameters add tens; an alias bomb adds billions.
MAX_ALIAS_NODES = 100_000
# UTF-8 bytes of scalar text that aliases may add to one document when expanded: as much as
# the largest config file holds (files.MAX_CONFIG_BYTES). Shared parameters add a few hundred.
MAX_ALIAS_BYTES = MAX_CONFIG_BYTES
# Nesting levels of one document. Configs and query sets nest fewer than ten; Python's
# stack (and every recursive reader of the result) gives out at a few hundred.
MAX_NESTING = 100

# An integer YAML 1.1 reads otherwise than it looks: a leading 0 (octal) or a colon (base 60).
_SURPRISING_INT = re.compile(r"[-+]?0[0-9_]+|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+", re.ASCII)

def load_yaml(
    path: str | Path,
    what: str = "YAML file",
    max_bytes: int | None = MAX_CONFIG_BYTES,
    error: type[RagEvalError] = ConfigError,
) -> Any:
    """Parse one YAML file; every problem raises ``error`` as one line naming the file and place.

    ``what`` names the file in messages ("no such file; expected a query set"),
    ``max_bytes`` bounds its size. A key repeated in one mapping is an error:
    plain ``safe_load`` would keep the last value silently (a query judging the
    same passage twice, two ``metrics:`` keys in a config).
    """
    path = Path(path)
    return parse_yaml(read_text(path, what, max_bytes, error), path, error)


def parse_yaml(text: str, source: str | Path, error: type[RagEvalError] = ConfigError) -> Any:
    """Parse YAML ``text`` read from ``source`` (named in errors) with the limits of this module."""

    try:
        return yaml.load(text, Loader=_safe_loader())  # a SafeLoader: no arbitrary objects
    except yaml.MarkedYAMLError as failure:
        mark = failure.problem_mark or failure.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "somewhere"
        problem = " ".join((failure.problem or failure.context or "invalid YAML").split())
        raise error(f"{source}: {where}: invalid YAML: {problem}") from None
    except yaml.YAMLError as failure:
        raise error(f"{source}: invalid YAML: {' '.join(str(failure).split())}") from None
    except RecursionError:  # a path the nesting limit does not cover; never a traceback
        raise error(f"{source}: invalid YAML: nested too deeply; at most {MAX_NESTING} levels") from None


@lru_cache(maxsize=1)
def _safe_loader() -> type:
    def _refuse(problem: str, mark: Any) -> NoReturn:
        raise yaml.composer.ComposerError(None, None, problem, mark)

    class SafeBoundedLoader(yaml.SafeLoader):
        """SafeLoader refusing repeated keys, alias bombs, recursive aliases and deep nesting."""

        def __init__(self, stream: Any) -> None:
            super().__init__(stream)
            self._depth = 0
            self._alias_nodes = 0
            self._alias_bytes = 0
            # Expanded (nodes, depth, bytes) of each aliased node, by id: each anchor is measured once.
            self._measured: dict[int, tuple[int, int, int]] = {}

        def compose_node(self, parent: Node | None, index: Any) -> Node | None:
            event = self.peek_event()
            if isinstance(event, AliasEvent):
                node = super().compose_node(parent, index)  # raises for an undefined alias
                if node is not None:
                    self._check_alias(event, node)
                return node
            self._depth += 1
            try:
                if self._depth > MAX_NESTING and isinstance(event, CollectionStartEvent):
                    _refuse(
                        f"nested more than {MAX_NESTING} levels deep; flatten the structure",
                        event.start_mark,
                    )
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

        def _check_alias(self, event: AliasEvent, node: Node) -> None:
            if isinstance(node, CollectionNode) and node.end_mark is None:
                # The anchored collection is still open: the alias is inside it.
                _refuse(
                    f"alias *{event.anchor} refers to a collection that contains it "
                    "(a recursive structure); write the data out without the cycle", event.start_mark,
                )
            size, depth, text_bytes = self._measure(node)
            self._alias_nodes += size
            self._alias_bytes += text_bytes
            if self._alias_nodes > MAX_ALIAS_NODES:
                _refuse(
                    f"alias *{event.anchor} expands the document's aliases past {MAX_ALIAS_NODES:,} "
                    "nodes (an alias bomb?); write the repeated parts out or repeat less", event.start_mark,
                )
            if self._alias_bytes > MAX_ALIAS_BYTES:
                _refuse(
                    f"alias *{event.anchor} expands the document's aliases past {MAX_ALIAS_BYTES:,} bytes of text "
                    "(an alias bomb?); write the repeated parts out or repeat less", event.start_mark,
                )
            if self._depth + depth > MAX_NESTING:
                _refuse(
                    f"alias *{event.anchor} nests the document more than {MAX_NESTING} levels deep; "
                    "flatten the structure", event.start_mark,
                )

        def _measure(self, node: Node) -> tuple[int, int, int]:
            """(nodes, levels, UTF-8 bytes of its scalars) of ``node`` with every alias inside it expanded."""
            known = self._measured.get(id(node))
            if known is not None:
                return known
            size, depth, text_bytes = 1, 0, 0
            if isinstance(node, MappingNode):
                children = [child for pair in node.value for child in pair]
            elif isinstance(node, CollectionNode):
                children = list(node.value)
            else:
                children = []
                if isinstance(node.value, str):
                    text_bytes = len(node.value.encode("utf-8", "surrogatepass"))
            for child in children:
                child_size, child_depth, child_bytes = self._measure(child)
                size += child_size
                text_bytes += child_bytes
                depth = max(depth, child_depth)
                if size > MAX_ALIAS_NODES or text_bytes > MAX_ALIAS_BYTES:
                    break  # already too much: the caller refuses it
            result = (size, depth + 1 if children or isinstance(node, CollectionNode) else depth, text_bytes)
            self._measured[id(node)] = result
            return result

    def construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # keys merged in with << may be overridden, as YAML allows
            key = loader.construct_object(key_node, deep=deep)
            try:
                first = seen.get(key)
            except TypeError:
                continue  # an unhashable key: SafeLoader reports it
            if first is not None:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {shown(key)} appears twice in one mapping (first on line {first + 1})",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark.line
        return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)

    def located(construct: Any, kind: str) -> Any:
        # int('1' * 5000) and date(2024, 2, 30) raise ValueError without a place: give them the node's.
        def construct_scalar(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
            try:
                return construct(loader, node)
            except ValueError as failure:
                reason = " ".join(str(failure).split(";")[0].split())
                raise yaml.constructor.ConstructorError(
                    None, None, f"cannot read {shown(node.value)} as {kind} ({reason}); "
                    "quote it to keep it as text", node.start_mark,
                ) from None

        return construct_scalar

    def construct_str(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
        value = yaml.SafeLoader.construct_yaml_str(loader, node)
        value = joined_pairs(value)  # "\ud83d\ude00" is one emoji, as JSON reads it
        problem = surrogate_problem(value)
        if problem is not None:  # not text: every later step that writes it as UTF-8 would fail (exit 3)
            raise yaml.constructor.ConstructorError(
                None, None, f"{shown(value)} {problem}; {SURROGATE_FIX}", node.start_mark,
            )
        # style None: written without quotes. A quoted '1e3' is text on purpose.
        if node.style is None and EXPONENT_NUMBER.fullmatch(value):
            return NumberAsText(value)
        return value

    def construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
        value = yaml.SafeLoader.construct_yaml_int(loader, node)
        if _SURPRISING_INT.fullmatch(node.value):
            # 010 is 8 (octal) and 1:30 is 90 (base 60) in YAML 1.1: nobody means that in a grade, a threshold, a
            # top_k or an id. Refused wherever it stands, with both readings.
            base = "base 60" if ":" in node.value else "octal"
            raise yaml.constructor.ConstructorError(
                None, None, f"YAML 1.1 reads {node.value} as the number {value} ({base}); write {value}, or quote it "
                f"if it is text ('{node.value}')", node.start_mark,
            )
        # 1_000, 0x1F, +5: the numbers they look like, remembered as written so that an id written so is refused
        return IntAsWritten(value, node.value) if str(value) != node.value else value

    SafeBoundedLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    SafeBoundedLoader.add_constructor("tag:yaml.org,2002:str", construct_str)
    for tag, construct, kind in (
        ("tag:yaml.org,2002:int", construct_int, "an integer"),
        ("tag:yaml.org,2002:timestamp", yaml.SafeLoader.construct_yaml_timestamp, "a date"),
    ):
        SafeBoundedLoader.add_constructor(tag, located(construct, kind))
    return SafeBoundedLoader
