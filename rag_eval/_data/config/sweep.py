"""A config's ``sweep`` section expanded into plain retrievers (and the chunkers they read).

Everything downstream (runner, reports, results files) sees a sweep as more retrievers:
:func:`expand_sweep` turns each grid entry into the cartesian product of its values, one
retriever per combination, labelled from the values that vary (``bm25.k1-0.9.b-0.4``), plus
the explicitly listed variants. Varied chunker parameters generate chunker entries; variants
that need the same chunker spec share one entry, so the runner cuts that chunking once.

It works on a config already validated once (``RunConfig`` with the sweep unexpanded), and
returns the data of the expanded config, which :func:`rag_eval._data.config.schema.load_config`
validates again exactly as a hand-written config.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rag_eval._core.errors import ConfigError
from rag_eval._core.messages import did_you_mean
from rag_eval._data.config.labels import LABEL_MAX, LABEL_RULE, is_label


class _Config(Protocol):
    """What the sweep reads of a validated config (:class:`rag_eval._data.config.schema.RunConfig`)."""

    @property
    def sweep(self) -> Any: ...

    @property
    def retrievers(self) -> Sequence[Any]: ...

    @property
    def chunking(self) -> Mapping[str, Any]: ...

# A value's text in a label: runs of characters a label may not hold become one "-".
_UNSAFE_IN_LABEL = re.compile(r"[^A-Za-z0-9._+-]+")


@dataclass
class Expansion:
    """The expanded config data, and what the sweep generated."""

    data: dict[str, Any]
    # label -> the varied values of that variant, keyed "params.k1" / "chunking.size".
    variants: dict[str, dict[str, Any]] = field(default_factory=dict)
    # label -> the retriever (template) it varies: two grids over the same parameters stay apart in reports.
    templates: dict[str, str] = field(default_factory=dict)
    summary: str = ""


def value_text(value: Any) -> str:
    """A value as it reads in a label: numbers as written (0.9 -> ``0.9``), text slugged.

    Floats use Python's shortest round-trip form, which is the YAML text for plain
    decimals (``0.75``; ``0.10`` reads back as ``0.1``); booleans are ``true`` / ``false``;
    lists and mappings their compact JSON, slugged.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, (int, float)):
        return repr(value)  # a sign kept: k1--1 and k1-1 are two variants
    if isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    slug = _UNSAFE_IN_LABEL.sub("-", text).strip("-")
    return re.sub(r"\.{2,}", ".", slug) or "x"


def expand_sweep(model: _Config, data: Mapping[str, Any], path: Path) -> Expansion:
    """The data of ``model``'s config with its sweep expanded into retrievers and chunkers.

    ``data`` is the raw config the model was validated from (plain retrievers are kept as
    written). ConfigError, one line naming the file and the ``sweep`` field, for: a grid
    entry or variant naming no retriever of ``retrievers``, chunking values for a retriever
    that reads no chunker, more variants than ``max_variants``, a label that collides or is
    too long or has no valid form.
    """
    sweep = model.sweep
    assert sweep is not None  # the caller expands only configs with a sweep
    templates = {spec.label: position for position, spec in enumerate(model.retrievers)}
    raw_retrievers: Sequence[Any] = data["retrievers"]
    for where, name in [
        *((f"sweep.grid[{i}].retriever", entry.retriever) for i, entry in enumerate(sweep.grid)),
        *((f"sweep.variants[{i}].retriever", entry.retriever) for i, entry in enumerate(sweep.variants)),
    ]:
        if name not in templates:
            raise ConfigError(
                f"{path}: {where}: no retriever {name!r} in retrievers; {did_you_mean(name, templates)}a sweep varies a retriever of "
                f"`retrievers`, named by its label: {', '.join(templates)}"
            )
    count = sum(_size(entry) for entry in sweep.grid) + len(sweep.variants)
    if count > sweep.max_variants:
        raise ConfigError(
            f"{path}: sweep: the sweep expands to {count} variants, more than max_variants {sweep.max_variants}; "
            "try fewer values, or raise sweep.max_variants"
        )

    chunking: dict[str, dict[str, Any]] = {name: dict(spec) for name, spec in model.chunking.items()}
    by_spec = {_canonical(spec): name for name, spec in chunking.items()}
    generated: dict[str, list[dict[str, Any]]] = {label: [] for label in templates}
    variants: dict[str, dict[str, Any]] = {}
    templates_of: dict[str, str] = {}
    where_label: dict[str, str] = {}

    def add(
        template: str, where: str, label: str, params: dict[str, Any], chunks: dict[str, Any], varied: dict
    ) -> None:
        if not is_label(label):
            raise ConfigError(
                f"{path}: {where}: the variant label {label!r} is not valid: {LABEL_RULE}; shorten the retriever's "
                "label or the varied values, or list the variant under sweep.variants with a label of its own"
            )
        if label in where_label:
            raise ConfigError(
                f"{path}: {where}: the variant label {label!r} is generated twice (first by {where_label[label]}); "
                "vary values that read differently in a label, or list one under sweep.variants with its own label"
            )
        where_label[label] = where
        spec = model.retrievers[templates[template]]
        entry = dict(raw_retrievers[templates[template]])
        entry.update(label=label, params={**spec.params, **params})
        if chunks:
            entry["chunker"] = _chunker_for(spec.chunker, chunks, varied, chunking, by_spec, path, where)
        generated[template].append(entry)
        variants[label] = varied
        templates_of[label] = template

    for i, entry in enumerate(sweep.grid):
        where = f"sweep.grid[{i}]({entry.retriever})"
        if entry.chunking:
            _check_reads_chunker(path, f"sweep.grid[{i}]", entry.retriever, model.retrievers[templates[entry.retriever]])
        axes = [("params", key, values) for key, values in entry.params.items()]
        axes += [("chunking", key, values) for key, values in entry.chunking.items()]
        for combination in itertools.product(*(values for _, _, values in axes)):
            chosen = [(section, key, value) for (section, key, _), value in zip(axes, combination, strict=True)]
            varied = {f"{s}.{k}": v for (s, k, v), (_, _, values) in zip(chosen, axes, strict=True) if len(values) > 1}
            label = ".".join([entry.retriever] + [f"{k.split('.', 1)[1]}-{value_text(v)}" for k, v in varied.items()])
            params = {k: v for s, k, v in chosen if s == "params"}
            chunks = {k: v for s, k, v in chosen if s == "chunking"}
            add(entry.retriever, where, label, params, chunks, varied)

    for i, listed in enumerate(sweep.variants):
        where = f"sweep.variants[{i}]({listed.label})"
        if listed.chunking:
            _check_reads_chunker(path, f"sweep.variants[{i}]", listed.retriever, model.retrievers[templates[listed.retriever]])
        varied = {f"params.{k}": v for k, v in listed.params.items()}
        varied.update({f"chunking.{k}": v for k, v in listed.chunking.items()})
        add(listed.retriever, where, listed.label, dict(listed.params), dict(listed.chunking), varied)

    in_grid = {entry.retriever for entry in sweep.grid}
    retrievers: list[Any] = []
    for position, spec in enumerate(model.retrievers):
        if spec.label in where_label and spec.label not in in_grid:
            raise ConfigError(
                f"{path}: {where_label[spec.label]}: the variant label {spec.label!r} is also the label of "
                f"retrievers[{position}]; give the variant another label"
            )
        if spec.label not in in_grid:  # a grid's template is replaced by its variants
            retrievers.append(raw_retrievers[position])
        retrievers.extend(generated[spec.label])
    expanded = {**data, "retrievers": retrievers}
    if chunking != dict(model.chunking):
        expanded["chunking"] = chunking
    return Expansion(expanded, variants, templates_of, _summary(sweep.grid, len(sweep.variants), count, chunking, model))


def _check_reads_chunker(path: Path, where: str, label: str, template: Any) -> None:
    """A grid entry or variant that varies chunking needs a retriever that reads a chunker."""
    if template.chunker is None:
        raise ConfigError(
            f"{path}: {where}.chunking: retriever {label!r} reads no chunker; give it "
            "`chunker: <name of a chunker of chunking>` to vary that chunker's parameters"
        )


def _size(entry: Any) -> int:
    return math.prod(len(values) for values in [*entry.params.values(), *entry.chunking.values()])


def _canonical(spec: Mapping[str, Any]) -> str:
    return json.dumps(spec, sort_keys=True, default=repr)


def _chunker_for(
    base: str | None,
    overrides: Mapping[str, Any],
    varied: Mapping[str, Any],
    chunking: dict[str, dict[str, Any]],
    by_spec: dict[str, str],
    path: Path,
    where: str,
) -> str:
    """The name of the chunker ``base`` with ``overrides``: an existing entry with that spec, else a new one."""
    assert base is not None  # checked by the caller
    spec = {**chunking[base], **overrides}
    key = _canonical(spec)
    if key in by_spec:  # the same chunking is cut once, whichever variants read it
        return by_spec[key]
    # Named by its varied values, as the variant is; by all its overrides when none varies.
    shown = {k.split(".", 1)[1]: v for k, v in varied.items() if k.startswith("chunking.")} or overrides
    name = ".".join([base, *(f"{k}-{value_text(v)}" for k, v in shown.items())])
    if name in chunking or len(name) > LABEL_MAX:
        reason = "is already a chunker with other parameters" if name in chunking else f"is over {LABEL_MAX} characters"
        raise ConfigError(
            f"{path}: {where}: the generated chunker name {name!r} {reason}; rename the chunker {base!r} of chunking"
        )
    chunking[name] = spec
    by_spec[key] = name
    return name


def _summary(grid: Sequence[Any], listed: int, count: int, chunking: Mapping[str, Any], model: Any) -> str:
    """``sweep: 6 variants (bm25: 3 k1 x 2 b)`` for ``rag-eval validate``."""
    parts = []
    for entry in grid:
        axes = [f"{len(v)} {k}" for k, v in entry.params.items() if len(v) > 1]
        axes += [f"{len(v)} chunking.{k}" for k, v in entry.chunking.items() if len(v) > 1]
        parts.append(f"{entry.retriever}: {' x '.join(axes) or '1 variant'}")
    if listed:
        parts.append(f"{listed} listed")
    new_chunkers = len(chunking) - len(model.chunking)
    shared = f", {new_chunkers} generated chunking(s)" if new_chunkers else ""
    return f"sweep: {count} variant{'s' if count != 1 else ''} ({'; '.join(parts)}){shared}"
