"""What text each retriever indexed: title + chunk text, text alone, or what its own index holds.

A line per group of retrievers in the report's Chunking part (rag_eval._report.documents), and a
warning when the retrievers compared do not read the same titles (a title adds words every chunk of
its document can match, so such a comparison is not like for like). Pure: a RunOutcome in, lines out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rag_eval._core.messages import some_of
from rag_eval._data.datasets.titles import NONE, untitled_units
from rag_eval._report.format import escape_inline
from rag_eval._retrievers.title_use import IGNORES, OWN_INDEX, PARTLY, PLUG_IN, title_use

if TYPE_CHECKING:
    from rag_eval._run.outcome import RunOutcome

__all__ = [
    "carries_titles",
    "indexed_text",
    "indexed_text_lines",
    "title_mix_warning",
    "untitled_warning",
]


# ---- what text each retriever indexed ------------------------------------------------------------

OWN_INDEX_TEXT = "as its own index holds it"
# Untitled documents named in the warning at most.
_UNTITLED_LISTED = 5


def indexed_text(kind: str, use: str, titled: int, documents: int, titles: str) -> str:
    """What a retriever's index holds for each unit, in words: ``title + chunk text``, ``text alone (...)``, ...

    ``kind``: its chunking record's kind (``chunker``, ``documents``, ``own``: it returned its own spans);
    ``use``: rag_eval._retrievers.title_use.title_use; ``titled`` of ``documents``: how many documents have a title; ``titles``: the
    config's ``dataset.titles``.
    """
    if kind == "own" or use == OWN_INDEX:
        return OWN_INDEX_TEXT
    if titled == 0:
        return "text alone (titles: none)" if titles == NONE else "text alone (the documents have no titles)"
    if use == IGNORES:
        return "text alone (include_title: false)"
    unit = "chunk text" if kind == "chunker" else "document text"
    text = f"title + {unit}"
    if use == PARTLY:
        text += " in some of its fused retrievers, text alone in the others"
    elif use == PLUG_IN:
        text += ", as handed to it (a plug-in may ignore the title)"
    if titled < documents:
        text += f" ({titled:,} of {documents:,} documents have a title; the others: text alone)"
    return text


def carries_titles(kind: str, use: str, titled: int) -> str | None:
    """Whether a retriever's units carry titles: ``titles``, ``text`` (alone), ``partly``, or None (cannot tell:
    its own index, or a plug-in handed titles it may ignore)."""
    if kind == "own" or use in (OWN_INDEX, PLUG_IN):
        return None
    if titled == 0 or use == IGNORES:
        return "text"
    return "partly" if use == PARTLY else "titles"


def title_mix_warning(carried: Sequence[tuple[str, str | None]]) -> str | None:
    """One line when the retrievers ``(label, carries_titles)`` compared do not read the same titles; else None."""
    groups: dict[str, list[str]] = {}
    for label, carries in carried:
        if carries is not None:
            groups.setdefault(carries, []).append(label)
    if len(groups) < 2:
        return None
    said = {  # (one retriever, several)
        "titles": ("indexes", "index", "each chunk or document with its title"),
        "text": ("indexes", "index", "the text alone"),
        "partly": ("fuses", "fuse", "retrievers that read titles with ones that do not"),
    }
    parts = [
        f"{', '.join(groups[key])} {said[key][0 if len(groups[key]) == 1 else 1]} {said[key][2]}"
        for key in ("titles", "text", "partly")
        if key in groups
    ]
    return (
        f"Titles: {'; '.join(parts)}: their comparison is not like for like, since a title adds words every chunk "
        "of its document can match; compare retrievers that read the same text (dataset.titles: none drops "
        "the titles for all)"
    )


def untitled_warning(untitled: Sequence[str], documents: int) -> str:
    """One line: some documents have a title and ``untitled`` (ids) have none."""
    return (
        f"Titles: {len(untitled):,} of {documents:,} documents have no title, and are indexed by their text alone "
        f"while the others carry their title, so documents are not ranked like for like: "
        f"{some_of(list(untitled), _UNTITLED_LISTED)} (give each a title, or set dataset.titles: file_name or none; "
        "docs/documents.md, \"Titles\")"
    )


def indexed_text_lines(run: RunOutcome) -> list[str]:
    """The "Text indexed" list (retrievers grouped by what their index holds) and its title warnings."""
    outcomes = run.outcomes
    if not outcomes:
        return []
    dataset = run.dataset
    untitled = untitled_units(dataset.corpus, dataset.documents)
    total = len(dataset.documents)
    titled = total - len(untitled)
    titles = run.config.model.dataset.titles
    groups: dict[str, list[str]] = {}
    carried: list[tuple[str, str | None]] = []
    for outcome in outcomes:
        kind = outcome.chunking.kind if outcome.chunking else "documents"
        use = title_use(outcome.spec.adapter, outcome.spec.params)
        groups.setdefault(indexed_text(kind, use, titled, total, titles), []).append(escape_inline(outcome.label))
        carried.append((outcome.label, carries_titles(kind, use, titled)))  # escaped with the whole warning
    lines = ["**Text indexed** (what each retriever's index holds for a chunk or a whole document)", ""]
    lines += [f"- {escape_inline(text)}: {', '.join(labels)}" for text, labels in groups.items()]
    lines.append("")
    warnings = [title_mix_warning(carried)]
    if untitled and titled and any(carries in ("titles", "partly") for _, carries in carried):
        warnings.append(untitled_warning(untitled, total))
    for warning in warnings:
        if warning:
            lines += [f"⚠️ {escape_inline(warning)}", ""]
    return lines
