"""Documents of a dataset: a JSON Lines file or a folder of text files (inline ones come with the query set).

- JSON Lines: one ``{"id" | "_id", "text", "title"?}`` object per line.
- A folder: every ``.txt`` and ``.md`` file under it, read recursively (names starting
  with ``.`` skipped), in the sorted order of their ids; a document's id is its path
  relative to the folder in POSIX form (``guides/setup.md``), each space written ``%20``
  (``Getting Started.md`` is ``Getting%20Started.md``, as in a URL). Its title is what
  ``dataset.titles`` says (:mod:`rag_eval._data.datasets.titles`): by default a ``.md`` file's
  front matter title or first ``# heading``, else none; or the file's name; or none at all.
  Ids are written to TREC files, whose fields are separated by white space: an id
  holding a space could not be read back (rag_eval._core.ids). A file whose id would be
  another file's (``a b.md`` next to ``a%20b.md``), or whose name is not UTF-8, is a
  problem naming it.
  Symbolic links inside the folder, to files or to folders, are not followed (the
  folder itself may be one): the documents are the regular files of the tree, so a
  link cycle or a link out of the tree cannot add documents, and links never give one
  text two ids. Each skipped link is listed in the dataset's notes (shown by reports),
  never dropped silently. A subfolder that cannot be listed (permission denied) is a
  problem, never skipped: its documents would be missing from every ranking.

A document id that reads as the chunk id of another document (``a`` and ``a#0-5``,
rag_eval._core.spans) is refused wherever documents are loaded (:func:`chunk_id_clashes`):
a stored ranking that names ``a#0-5`` could not say which of the two it means.

A document's text is exactly what offsets count in: a file is read as UTF-8 with a
leading byte-order mark removed (so offset 0 is the character after the BOM) and
its line endings kept as they are (no ``\\r\\n`` translation). Every problem is
collected with its file (and line) before raising.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path

from rag_eval._core.errors import DatasetError
from rag_eval._core.files import MAX_DOCUMENT_BYTES, read_text
from rag_eval._core.ids import id_problem
from rag_eval._core.messages import shown, some_of
from rag_eval._core.spans import parse_chunk_id
from rag_eval._data.datasets.corpus import json_lines, record_id
from rag_eval._data.datasets.model import Problems
from rag_eval._data.datasets.titles import AUTO, FILE_NAME, NONE, document_title, front_matter_note
from rag_eval._data.datasets.values import id_from_value, text_problem

# Symbolic links named in the dataset's note at most; and files whose front matter title could not be read.
_LINKS_LISTED = 20
_UNREAD_LISTED = 20

DOCUMENT_SUFFIXES = (".md", ".txt")
# {doc id: {"text": ..., "title": ...}}: the shape of a corpus entry.
Documents = dict[str, dict[str, str]]


def load_documents(path: Path, problems: Problems, notes: list[str] | None = None, titles: str = AUTO) -> Documents:
    """The documents of ``path``: a folder of .txt/.md files or a .jsonl file; problems go to ``problems``.

    ``notes`` receives what the dataset's notes should say (symbolic links of a folder, skipped; front
    matter whose title could not be read). ``titles``: where titles come from (``auto``, ``file_name``,
    ``none``; :mod:`rag_eval._data.datasets.titles`); ``file_name`` with a .jsonl file is a DatasetError.
    """
    if path.is_dir():
        return documents_from_folder(path, problems, notes, titles)
    if not path.exists():
        raise DatasetError(f"{path}: no such file or folder; documents are a .jsonl file or a folder of .txt/.md files")
    if path.suffix.lower() not in (".jsonl", ".json"):
        raise DatasetError(
            f"{path}: documents are a .jsonl file (one {{\"id\", \"text\", \"title\"}} per line) or a folder "
            "of .txt/.md files; rename the file or point at its folder"
        )
    if titles == FILE_NAME:
        raise DatasetError(
            f"{path}: dataset.titles: file_name titles each document by the name of its file, and the documents of "
            "a .jsonl file have no file of their own; in the config's dataset section set titles: auto (each "
            "line's \"title\") or titles: none"
        )
    return documents_from_json_lines(path, problems, titles)


def documents_from_json_lines(path: Path, problems: Problems, titles: str = AUTO) -> Documents:
    """``{id: {"text", "title"}}`` from a JSON Lines file; a bad record or a repeated id is a problem.

    ``titles``: ``none`` leaves every title empty (the ``"title"`` fields are still checked); otherwise each
    line's ``"title"`` is used as written.
    """
    documents: Documents = {}
    first_line: dict[str, int] = {}
    for n, record in json_lines(path, "documents file"):
        where = f"{path}:{n}"
        if not isinstance(record, dict):
            problems.add(f"{where}: expected a document {{\"id\", \"text\", \"title\"}}, got {shown(record)}")
            continue
        try:
            raw_id = record_id(record)
        except ValueError as failure:
            problems.add(f"{where}: document id: {failure}")
            continue
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
        # A whole-document retriever, a chunker or a tokenizer would fail on a text that is not UTF-8.
        field, problem = next(((f, p) for f, v in (("text", text), ("title", title or "")) if (p := text_problem(v))),
                              ("", None))
        if problem is not None:  # reported, and the document kept: judgements naming it are not a second problem
            problems.add(f"{where}: document {doc!r}: '{field}' {problem}")
        documents[doc] = {"text": text, "title": "" if titles == NONE else title or ""}
    for doc, other in chunk_id_clashes(first_line):
        problems.add(f"{path}:{first_line[doc]}: {chunk_id_clash(doc, other)}; rename one of the two")
    if not documents and not problems.count:
        problems.add(f"{path}: no documents; write one JSON object per line with id and text")
    return documents


def documents_from_folder(
    folder: Path, problems: Problems, notes: list[str] | None = None, titles: str = AUTO
) -> Documents:
    """``{id: {"text", "title"}}`` of every .txt/.md file under ``folder``, sorted by id.

    A file's id is its relative POSIX path, each space written ``%20`` (:func:`folder_document_id`).
    Its title is as ``titles`` says (:func:`rag_eval._data.datasets.titles.document_title`); a note
    naming the files whose front matter title could not be read goes to ``notes``.
    Symbolic links inside ``folder`` are not followed (see the module's docstring); a note
    naming them goes to ``notes``. A subfolder that cannot be listed is a problem.
    """
    found: list[tuple[str, Path]] = []
    links: list[str] = []
    unreadable: list[OSError] = []
    # os.walk skips a folder it cannot list unless told: each one is a problem (its documents would be missing).
    for root, dirs, files in os.walk(folder, onerror=unreadable.append):  # never descends a linked folder
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
    for failure in unreadable:
        place = failure.filename if failure.filename is not None else folder
        reason = "permission denied" if isinstance(failure, PermissionError) else (failure.strerror or type(failure).__name__)
        problems.add(f"{shown_path(str(place))}: cannot list this folder ({reason}); its documents would be missing: "
                     "make it readable, or move it out of the documents folder")
    if links and notes is not None:
        notes.append(f"{folder}: {len(links)} symbolic link(s) not followed (documents are the folder's regular "
                     f"files; copy a linked file in to include it): {some_of(sorted(links), _LINKS_LISTED)}")
    documents: Documents = {}
    paths: dict[str, Path] = {}
    for relative, path in sorted(found):
        try:
            relative.encode("utf-8")
        except UnicodeEncodeError as failure:  # os gives undecodable bytes of a name as lone surrogates
            byte = os.fsencode(relative[failure.start])[0]
            problems.add(
                f"{shown_path(str(path))}: the file name is not UTF-8 text (byte 0x{byte:02x}), and a document's id "
                "is its file name; rename the file with a UTF-8 name (convmv -f latin1 -t utf8 does it for a folder)"
            )
            continue
        problem = id_problem(relative)
        if problem is not None:
            problems.add(f"{path}: the file name cannot be a document id: it {problem}; rename the file")
            continue
        doc = folder_document_id(relative)
        if doc in paths:
            problems.add(
                f"{path}: its id {doc!r} is also the id of {paths[doc]} (a space in a file name is written %20 in its "
                "id); rename one of the two files"
            )
            continue
        paths[doc] = path
    unread: list[tuple[str, str]] = []  # (file, why its front matter title could not be read)
    for doc, path in sorted(paths.items()):
        try:
            text = read_text(path, "document", MAX_DOCUMENT_BYTES, DatasetError)
        except DatasetError as failure:
            problems.add(str(failure))
            continue
        relative = path.relative_to(folder).as_posix()
        title, why = document_title(text, relative, titles)
        if why is not None:
            unread.append((relative, why))
        documents[doc] = {"text": text, "title": title}
    if unread and notes is not None:
        notes.append(front_matter_note(str(folder), unread, _UNREAD_LISTED))
    for doc, other in chunk_id_clashes(paths):
        problems.add(f"{paths[doc]}: {chunk_id_clash(doc, other)}; rename one of the two files")
    if not found and not unreadable:
        skipped = f" ({len(links)} symbolic link(s) skipped: links are not followed)" if links else ""
        problems.add(f"{folder}: no .txt or .md files in this folder (or its subfolders){skipped}; "
                     "put one document per file")
    return documents


def folder_document_id(relative: str) -> str:
    """The id of the file at ``relative`` (a POSIX path inside a documents folder): the path, each space ``%20``.

    A space cannot be part of an id (a TREC file would split the id there, rag_eval._core.ids); ``%20``
    is how a URL writes it, so the id still reads as the file's name.
    """
    return relative.replace(" ", "%20")


def chunk_id_clashes(ids: Collection[str]) -> list[tuple[str, str]]:
    """``(id, document)`` for each id of ``ids`` that reads as a chunk id ``<document>#<start>-<end>`` of
    another id of ``ids`` (``a#0-5`` and ``a``): sorted, empty when none does.

    A stored ranking naming ``a#0-5`` would then mean two things: the document ``a#0-5``, or the first
    five characters of ``a`` (rag_eval._run.own_spans reads it as the first when it is a document).
    """
    known = ids if isinstance(ids, (set, frozenset, dict)) else set(ids)
    clashes = []
    for doc in known:
        if "#" in doc:  # (a cheap test first: most ids hold no '#')
            parsed = parse_chunk_id(doc)
            if parsed is not None and parsed[0] in known:
                clashes.append((doc, parsed[0]))
    return sorted(clashes)


def chunk_id_clash(doc: str, other: str) -> str:
    """Why document id ``doc`` cannot be next to document ``other`` (a pair of :func:`chunk_id_clashes`)."""
    parsed = parse_chunk_id(doc)
    assert parsed is not None
    return (
        f"document id {doc!r} reads as the chunk [{parsed[1]}, {parsed[2]}) of document {other!r} (a chunk id is "
        "<document>#<start>-<end>), so a ranking that names it could mean either"
    )


def shown_path(path: str) -> str:
    """A path for a one-line message: bytes that are not UTF-8 shown as ``\\xe9``, never printed raw."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")
