"""Documents of a dataset: a JSON Lines file or a folder of text files (inline ones come with the query set).

- JSON Lines: one ``{"id" | "_id", "text", "title"?}`` object per line.
- A folder: every ``.txt`` and ``.md`` file under it, read recursively (names starting
  with ``.`` skipped), in the sorted order of their ids; a document's id is its path
  relative to the folder in POSIX form (``guides/setup.md``), its title empty.
  Symbolic links inside the folder, to files or to folders, are not followed (the
  folder itself may be one): the documents are the regular files of the tree, so a
  link cycle or a link out of the tree cannot add documents, and links never give one
  text two ids. Each skipped link is listed in the dataset's notes (shown by reports),
  never dropped silently.

A document's text is exactly what offsets count in: a file is read as UTF-8 with a
leading byte-order mark removed (so offset 0 is the character after the BOM) and
its line endings kept as they are (no ``\\r\\n`` translation). Every problem is
collected with its file (and line) before raising.
"""

from __future__ import annotations

import os
from pathlib import Path

from rag_eval._core.errors import DatasetError
from rag_eval._core.files import MAX_DOCUMENT_BYTES, read_text
from rag_eval._core.ids import id_problem
from rag_eval._core.messages import shown, some_of
from rag_eval._data.datasets.corpus import json_lines
from rag_eval._data.datasets.model import Problems
from rag_eval._data.datasets.values import id_from_value

# Symbolic links named in the dataset's note at most.
_LINKS_LISTED = 20

DOCUMENT_SUFFIXES = (".md", ".txt")
# {doc id: {"text": ..., "title": ...}}: the shape of a corpus entry.
Documents = dict[str, dict[str, str]]


def load_documents(path: Path, problems: Problems, notes: list[str] | None = None) -> Documents:
    """The documents of ``path``: a folder of .txt/.md files or a .jsonl file; problems go to ``problems``.

    ``notes`` receives what the dataset's notes should say (symbolic links of a folder, skipped).
    """
    if path.is_dir():
        return documents_from_folder(path, problems, notes)
    if not path.exists():
        raise DatasetError(f"{path}: no such file or folder; documents are a .jsonl file or a folder of .txt/.md files")
    if path.suffix.lower() not in (".jsonl", ".json"):
        raise DatasetError(
            f"{path}: documents are a .jsonl file (one {{\"id\", \"text\", \"title\"}} per line) or a folder "
            "of .txt/.md files; rename the file or point at its folder"
        )
    return documents_from_json_lines(path, problems)


def documents_from_json_lines(path: Path, problems: Problems) -> Documents:
    """``{id: {"text", "title"}}`` from a JSON Lines file; a bad record or a repeated id is a problem."""
    documents: Documents = {}
    first_line: dict[str, int] = {}
    for n, record in json_lines(path, "documents file"):
        where = f"{path}:{n}"
        if not isinstance(record, dict):
            problems.add(f"{where}: expected a document {{\"id\", \"text\", \"title\"}}, got {shown(record)}")
            continue
        raw_id = record.get("id", record.get("_id"))
        try:
            doc = id_from_value(raw_id)
        except ValueError as failure:
            problems.add(f"{where}: document id: {failure} (got {shown(raw_id)})")
            continue
        if doc in first_line:
            problems.add(f"{where}: duplicate document id {doc!r} (first on line {first_line[doc]})")
            continue
        first_line[doc] = n
        text, title = record.get("text"), record.get("title")
        if "text" not in record:
            problems.add(f"{where}: document {doc!r}: 'text' is missing; give each line {{\"id\", \"text\"}} "
                         "(and an optional \"title\")")
            continue
        if not isinstance(text, str):
            problems.add(f"{where}: document {doc!r}: 'text' must be text, got {shown(text)}")
            continue
        if title is not None and not isinstance(title, str):
            problems.add(f"{where}: document {doc!r}: 'title' must be text, got {shown(title)}")
            continue
        documents[doc] = {"text": text, "title": title or ""}
    if not documents and not problems.count:
        problems.add(f"{path}: no documents; write one JSON object per line with id and text")
    return documents


def documents_from_folder(folder: Path, problems: Problems, notes: list[str] | None = None) -> Documents:
    """``{relative posix path: {"text", "title": ""}}`` of every .txt/.md file under ``folder``, sorted by id.

    Symbolic links inside ``folder`` are not followed (see the module's docstring); a note
    naming them goes to ``notes``.
    """
    found: list[tuple[str, Path]] = []
    links: list[str] = []
    for root, dirs, files in os.walk(folder):  # os.walk never descends a linked folder; files are checked below
        here = Path(root)
        kept = []
        for name in dirs:
            if name.startswith("."):  # .git, .cache: not documents
                continue
            if (here / name).is_symlink():
                links.append((here / name).relative_to(folder).as_posix() + "/")
                continue
            kept.append(name)
        dirs[:] = kept
        for name in files:
            if name.startswith(".") or not name.lower().endswith(DOCUMENT_SUFFIXES):
                continue
            path = here / name
            if path.is_symlink():
                links.append(path.relative_to(folder).as_posix())
                continue
            found.append((path.relative_to(folder).as_posix(), path))
    if links and notes is not None:
        notes.append(f"{folder}: {len(links)} symbolic link(s) not followed (documents are the folder's regular "
                     f"files; copy a linked file in to include it): {some_of(sorted(links), _LINKS_LISTED)}")
    documents: Documents = {}
    for doc, path in sorted(found):
        problem = id_problem(doc)
        if problem is not None:
            problems.add(f"{path}: the file name cannot be a document id: it {problem}; rename the file")
            continue
        try:
            documents[doc] = {"text": read_text(path, "document", MAX_DOCUMENT_BYTES, DatasetError), "title": ""}
        except DatasetError as failure:
            problems.add(str(failure))
    if not found:
        skipped = f" ({len(links)} symbolic link(s) skipped: links are not followed)" if links else ""
        problems.add(f"{folder}: no .txt or .md files in this folder (or its subfolders){skipped}; "
                     "put one document per file")
    return documents
