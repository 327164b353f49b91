"""Documents' titles: where a document's title comes from, and which units of a corpus carry one.

Every chunk of a document is indexed with its document's title (as BEIR feeds passages:
title + text, :func:`rag_eval._data.datasets.model.passage_text`), and a whole-document retriever
indexes the document's title with its text. The config's ``dataset.titles`` says where titles come
from (:data:`TITLE_SOURCES`):

- ``auto`` (the default): what the source says. A ``.md`` file's YAML front matter ``title``
  (a block opened by a ``---`` line at the very start of the file and closed by a ``---`` or ``...``
  line), else its first level-1 ATX heading when that is its first non-blank line (after the front
  matter, if any): ``# Title``. A ``.txt`` file has no title. A ``.jsonl`` line's ``"title"`` and an
  inline document's ``title`` are used as written, as they always were.
- ``file_name``: the file's name without its suffix, as written (``Getting Started.md`` is
  ``Getting Started``), for documents that are files (a folder, the chroma layout).
- ``none``: no document has a title, even where the source gives one (a like-for-like comparison
  with a baseline that indexes text alone).

Only a level-1 heading titles a document: it is markdown's title of the document (one per
document, markdownlint MD025 and MD041), while a lower heading names a section, and titling every
chunk of the document with one section's name would mislead the retriever. A setext heading
(``Title`` underlined with ``===``) is not read: give such a file front matter, or use ``file_name``.

A title read from a file is one line: stripped, each run of white space one space, cut to its first
:data:`MAX_TITLE_CHARS` characters. A source that gives an empty title gives none, and the next source
is tried. The document's text is never changed: front matter and heading stay in it, so that evidence
offsets keep pointing where they did.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath
from typing import Any

import yaml

from rag_eval._core.ids import joined_pairs, surrogate_problem
from rag_eval._core.messages import some_of

AUTO, FILE_NAME, NONE = "auto", "file_name", "none"
TITLE_SOURCES = (AUTO, FILE_NAME, NONE)
# A title is a label, not a passage: a longer one (a first line that is a whole paragraph) is cut.
MAX_TITLE_CHARS = 200
MARKDOWN_SUFFIXES = (".md",)

# CommonMark: up to three spaces of indentation, one '#', then white space or the end of the line.
_LEVEL_1 = re.compile(r" {0,3}#(?:[ \t]+(.*))?$")
# An optional closing sequence of '#', preceded by white space (or standing alone).
_CLOSING = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
_FENCE, _FENCE_ENDS = "---", ("---", "...")


def one_line(raw: str) -> str:
    """``raw`` as a title: stripped, each run of white space one space, at most :data:`MAX_TITLE_CHARS` characters."""
    return " ".join(raw.split())[:MAX_TITLE_CHARS].rstrip()


def file_title(name: str) -> str:
    """The title ``file_name`` gives the file named ``name``: its name without the last suffix, as written."""
    return one_line(PurePosixPath(name).stem)


def markdown_title(text: str) -> tuple[str, str | None]:
    """``(title, problem)`` of a markdown document: its front matter's ``title``, else its first heading.

    ``problem``: why a front matter's title could not be read (not YAML, not a mapping, a title that is
    not text), for the dataset's notes; the first heading is then tried. ``("", None)``: no title.
    """
    lines = text.split("\n")  # "\r\n" endings: each line keeps its "\r", stripped below
    rest, problem = 0, None
    title = ""
    if lines and lines[0].rstrip() == _FENCE:
        end = next((n for n in range(1, len(lines)) if lines[n].rstrip() in _FENCE_ENDS), None)
        if end is not None:  # without a closing line, the first '---' is a thematic break, not front matter
            title, problem = _front_matter_title("\n".join(line.rstrip("\r") for line in lines[1:end]))
            rest = end + 1
    if title:
        return title, None
    first = next((line for line in lines[rest:] if line.strip()), "")
    return heading_title(first.rstrip("\r")), problem


def heading_title(line: str) -> str:
    """The text of ``line`` when it is a level-1 ATX heading (``# Title``, ``# Title #``), else ``""``."""
    match = _LEVEL_1.match(line)
    if match is None:
        return ""
    content = (match.group(1) or "").strip()
    return one_line(_CLOSING.sub("", content))


def _front_matter_title(block: str) -> tuple[str, str | None]:
    """``(title, problem)`` of a front matter's YAML ``block``.

    Read with PyYAML's BaseLoader: every scalar stays the text written (``title: 2024`` is ``2024``,
    ``title: No`` is ``No``, never a number or a boolean), and nothing is constructed but strings,
    lists and mappings. Only the top-level ``title`` is read, so aliases are never expanded.
    """
    try:
        data = yaml.load(block, Loader=yaml.BaseLoader)  # noqa: S506 (BaseLoader builds only str, list, dict)
    except (yaml.YAMLError, RecursionError) as failure:
        mark = getattr(failure, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""  # +1: 1-based, +1: the opening '---'
        return "", f"its front matter is not YAML{where}"
    if data is None or data == "":
        return "", None
    if not isinstance(data, dict):
        return "", "its front matter is not a mapping of keys (title: ...)"
    raw = data.get("title")
    if raw is None:
        return "", None
    if not isinstance(raw, str):
        return "", "its front matter's title is not text"
    raw = joined_pairs(raw)  # (read by BaseLoader, not rag_eval's loader: the same rule here)
    problem = surrogate_problem(raw)
    if problem is not None:
        return "", f"its front matter's title {problem}"
    return one_line(raw), None


def document_title(text: str, name: str, titles: str) -> tuple[str, str | None]:
    """``(title, problem)`` of the document file ``name`` (a path or a file name) holding ``text``, as ``titles`` says.

    ``problem``: a front matter whose title could not be read (:func:`markdown_title`), for the notes.
    """
    if titles == NONE:
        return "", None
    if titles == FILE_NAME:
        return file_title(name), None
    if not name.lower().endswith(MARKDOWN_SUFFIXES):
        return "", None
    return markdown_title(text)


def front_matter_note(where: str, unread: list[tuple[str, str]], listed: int) -> str:
    """The dataset's note on the files whose front matter title could not be read: ``unread`` holds
    ``(file, problem)`` pairs (:func:`markdown_title`'s problems), at most ``listed`` of them named."""
    named = [f"{file} ({problem})" for file, problem in unread]
    return (
        f"{where}: {len(unread)} document(s) open with front matter whose title could not be read, so their first "
        f"heading (if any) titles them; fix the front matter, or set dataset.titles: file_name: {some_of(named, listed)}"
    )


def untitled_units(corpus: Mapping[str, Mapping[str, Any]], ids: Iterable[str] | None = None) -> list[str]:
    """The ids of ``corpus`` (or of ``ids`` in it) whose unit has no title, in their order.

    A title of white space alone is none: :func:`rag_eval._data.datasets.model.passage_text` indexes such a
    unit by its text alone, and so does every chunk of its document.
    """
    keys = corpus if ids is None else ids
    return [key for key in keys if not str((corpus.get(key) or {}).get("title") or "").strip()]


def check_titles_option(value: Any) -> str:
    """``value`` when it is one of :data:`TITLE_SOURCES`; else ValueError saying which are."""
    if value not in TITLE_SOURCES:
        raise ValueError(f"titles must be one of {', '.join(TITLE_SOURCES)}, got {value!r}")
    return str(value)


__all__ = [
    "AUTO",
    "FILE_NAME",
    "MAX_TITLE_CHARS",
    "NONE",
    "TITLE_SOURCES",
    "check_titles_option",
    "document_title",
    "file_title",
    "front_matter_note",
    "heading_title",
    "markdown_title",
    "one_line",
    "untitled_units",
]
