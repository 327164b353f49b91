"""A run never writes over one of its own inputs.

The files a run reads, as its config names them: the config itself, the dataset's files
(``dataset.path`` when it is a file, ``qrels``, ``queries``, ``corpus``), the regression
baseline, and every string in a retriever's ``params`` (at any depth of mappings, nested
retriever specs included) that names an existing file relative to the config's folder:
the static adapter's ``path``, the ``PATH_PARAMS`` of any adapter, a plug-in's own files.
A file the run would write (report.md, comparison.md, ``<label>.json``, ``<label>.run``,
the manifest) that is one of them, compared as files (``os.stat``: the same device and
inode, so symbolic links, hard links and ``..`` are seen through), is refused before any
retrieval. A baseline kept in the output folder under another name is no output and stays
allowed. Files only a dataset folder or a query set names (a BEIR folder's files, a query
set's ``corpus:`` file) have names no output takes, or are the user's files, which
:func:`rag_eval._core.output_folder.check_replaceable` refuses to replace.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from rag_eval._core.errors import ConfigError, RagEvalError
from rag_eval._core.yaml_loader import load_yaml
from rag_eval._data.config.schema import LoadedConfig

# Strings of a retriever's params looked at as possible paths; past this many (a plug-in given a
# huge mapping of texts) the rest are not: files in the output folder are still protected by the
# manifest rule of rag_eval._core.output_folder.
MAX_PARAM_STRINGS = 10_000
# A query set larger than this is not peeked at for `documents:` (the loader reads and checks it).
MAX_QUERY_SET_BYTES = 64 << 20
_MAX_PATH_CHARS = 4096


def run_inputs(config: LoadedConfig) -> Iterator[tuple[str, Path]]:
    """``(what it is, path)`` of every file the config names as an input (existing or not)."""
    yield "the run's config", config.path
    dataset = config.model.dataset
    for key in ("path", "qrels", "queries", "corpus"):
        value = getattr(dataset, key)
        if value:
            yield f"the dataset file (dataset.{key})", config.resolve(value)
    if config.model.regression is not None:
        yield "the regression baseline (regression.baseline)", config.resolve(config.model.regression.baseline)
    budget = [MAX_PARAM_STRINGS]
    for index, spec in enumerate(config.model.retrievers):
        for place, value in _strings(spec.params, "params", budget):
            try:
                path = config.resolve(value)
            except RuntimeError:  # "~someone" naming no user: not a path
                continue
            yield f"a file of retriever {spec.label!r} (retrievers[{index}].{place})", path


def has_documents(config: LoadedConfig) -> bool:
    """Whether the config's dataset holds documents, told without loading it (a chroma folder,
    ``as_documents``, or a query set with ``documents:``)."""
    dataset = config.model.dataset
    if dataset.as_documents or dataset.format == "chroma":
        return True
    path = config.resolve(dataset.path) if dataset.path else None
    if path is not None and path.is_dir():
        return (path / "corpora").is_dir() and (path / "questions.csv").is_file()
    raw = _query_set(config)
    return isinstance(raw, Mapping) and "documents" in raw


def _query_set(config: LoadedConfig) -> Any:
    """The YAML query set's raw data, or None (not a query set, or unreadable: the loader reports that)."""
    dataset = config.model.dataset
    if not dataset.path or dataset.format not in (None, "yaml"):
        return None
    path = config.resolve(dataset.path)
    if not path.is_file():
        return None

    try:
        return load_yaml(path, "YAML query set", MAX_QUERY_SET_BYTES, ConfigError)
    except (RagEvalError, OSError):
        return None


def input_folders(config: LoadedConfig) -> Iterator[tuple[str, Path]]:
    """``(what it is, folder)`` of every folder the dataset reads whole: a documents folder, a chroma corpus."""
    dataset = config.model.dataset
    if not dataset.path:
        return
    path = config.resolve(dataset.path)
    if path.is_dir():
        if (path / "corpora").is_dir():
            yield "the chroma documents folder (dataset.path/corpora)", path / "corpora"
        return
    raw = _query_set(config)  # its own `documents:` may name a folder, read recursively
    value = raw.get("documents") if isinstance(raw, Mapping) else None
    if isinstance(value, str):
        folder = Path(os.path.normpath(path.parent / Path(value).expanduser()))
        if folder.is_dir():
            yield f"the documents folder of {path} (documents:)", folder


def check_output_outside_input_folders(config: LoadedConfig) -> None:
    """ConfigError when the output folder lies inside a folder the dataset reads whole.

    The next run would read this run's report and results as documents (a changed dataset,
    silently), and write over them: refused before any retrieval.
    """
    output = Path(os.path.realpath(config.output_dir))
    for what, folder in input_folders(config):
        inside = Path(os.path.realpath(folder))
        if output == inside or inside in output.parents:
            raise ConfigError(
                f"{config.output_dir}: the output folder is inside {folder}, {what}, which is read whole: the next "
                "run would read this run's report as a document; choose an output folder outside it (output: or "
                "--output)"
            )


def check_outputs_are_not_inputs(config: LoadedConfig, names: Iterable[str]) -> None:
    """ConfigError, one line naming the output file and the input, when writing ``names`` would replace an input.

    Also refused: an output folder inside a folder the dataset reads whole (:func:`check_output_outside_input_folders`).
    """
    check_output_outside_input_folders(config)
    written: dict[tuple[int, int], Path] = {}
    for name in names:
        output = config.output_dir / name
        try:
            info = os.stat(output)
        except (OSError, ValueError):  # nothing there yet (or a dangling link): it cannot be an existing input
            continue
        written[(info.st_dev, info.st_ino)] = output
    if not written:
        return
    for what, path in run_inputs(config):
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            continue
        same = written.get((info.st_dev, info.st_ino))
        if same is not None:
            raise ConfigError(
                f"{same}: this run would write over its own input {path}, {what}; choose another output "
                "folder (output: or --output), or keep that input under another name or elsewhere"
            )


def _strings(value: Any, place: str, budget: list[int]) -> Iterator[tuple[str, str]]:
    """``(place, text)`` of the strings of ``value`` that could be paths: mapping values, at any depth.

    Lists are entered only for their mappings (nested retriever specs): a list of strings is
    data (a stored ranking's document ids), not a path.
    """
    if isinstance(value, str):
        if budget[0] > 0 and 0 < len(value) <= _MAX_PATH_CHARS and "\0" not in value:
            budget[0] -= 1
            yield place, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(item, f"{place}.{key}", budget)
    elif isinstance(value, list):
        for position, item in enumerate(value):
            if isinstance(item, Mapping):
                yield from _strings(item, f"{place}[{position}]", budget)
