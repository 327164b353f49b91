"""Query sets, graded judgements and corpora, from the formats they come in.

Formats: rag_eval's own YAML query set (corpus inline or in a YAML, JSON, JSONL,
CSV or TSV file; or documents inline, in a JSONL file or a folder, with evidence
spans), a BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv), TREC qrels
with a queries file and a corpus file, the Cranfield collection, and the layout of
Chroma's chunking evaluation (corpora/*.md and questions.csv with evidence offsets).
A ``grade_map`` turns collection codes into gains (Cranfield: code 1 is best).

Loading checks everything and collects every problem before raising, so that
``rag-eval validate`` can list them all: duplicate ids, ids that are not text or
hold control characters, judgements of documents missing from the corpus, grades
that are not finite numbers, empty query texts, no judgements. Every file is read
through :mod:`rag_eval.files` (regular file, size limit, BOM, UTF-8 with a place).

Modules: ``model`` (Dataset, Query, Problems), ``values`` (the id and grade rules),
``lines`` (streaming line formats), ``corpus`` (corpus and queries files),
``query_set`` (the YAML query set's pydantic model), ``collections`` (BEIR, TREC,
Cranfield), ``documents`` (documents from a JSONL file or a folder), ``evidence``
(evidence spans: checks, quotes, document grades), ``chroma`` (Chroma's layout),
``titles`` (where a document's title comes from: ``dataset.titles``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rag_eval._core.errors import DatasetError
from rag_eval._core.ids import id_fix, surrogate_problem
from rag_eval._core.messages import VALIDATE_LISTS_ALL, first_and_more
from rag_eval._data.datasets.chroma import is_chroma_folder, load_chroma
from rag_eval._data.datasets.collections import CRANFIELD_GRADE_MAP, load_beir, load_cranfield, load_trec
from rag_eval._data.datasets.corpus import load_corpus_file, load_queries_file, resolve_path
from rag_eval._data.datasets.documents import chunk_id_clash, chunk_id_clashes
from rag_eval._data.datasets.file_corpus import FileCorpus
from rag_eval._data.datasets.model import Dataset, Problems, Query
from rag_eval._data.datasets.query_set import QuerySetFile, load_yaml_query_set
from rag_eval._data.datasets.titles import AUTO, FILE_NAME, NONE, check_titles_option
from rag_eval._data.datasets.values import grade_from_value, text_problem

FORMATS = ("yaml", "beir", "trec", "cranfield", "chroma")


def load_dataset(spec: Mapping[str, Any], base: Path | None = None, stream_corpus: bool = False) -> Dataset:
    """Load a dataset described by a config's ``dataset`` section.

    ``spec`` keys: ``format`` (yaml | beir | trec | cranfield | chroma, inferred when
    absent), ``path``, and per format ``split``, ``qrels``, ``queries``,
    ``corpus``, ``grade_map``, ``name``; ``titles`` (auto | file_name | none, default auto:
    where documents' titles come from, :mod:`rag_eval._data.datasets.titles`). Relative paths
    resolve against ``base``.
    ``stream_corpus``: a BEIR or TREC corpus in JSON Lines stays on disk, only its ids and
    offsets in memory (what the Ray engine runs with); other formats are read as always.
    """
    base = base or Path.cwd()
    fmt = spec.get("format") or _infer_format(spec, base)
    _check_present(spec, fmt, base)
    grade_map = _grade_map(spec.get("grade_map"))
    titles = _titles(spec.get("titles") or AUTO, fmt)
    if fmt == "yaml":
        dataset = load_yaml_query_set(resolve_path(spec["path"], base), grade_map=grade_map, titles=titles)
    elif fmt == "beir":
        dataset = load_beir(
            resolve_path(spec["path"], base), split=spec.get("split", "test"), grade_map=grade_map,
            stream_corpus=stream_corpus,
        )
    elif fmt == "trec":
        dataset = load_trec(
            qrels=resolve_path(spec["qrels"], base),
            queries=resolve_path(spec["queries"], base),
            corpus=resolve_path(spec["corpus"], base),
            grade_map=grade_map,
            stream_corpus=stream_corpus,
        )
    elif fmt == "cranfield":
        dataset = load_cranfield(resolve_path(spec["path"], base), grade_map=grade_map)
    elif fmt == "chroma":
        dataset = load_chroma(resolve_path(spec["path"], base), titles=titles)
    else:
        raise DatasetError(f"dataset format {fmt!r} is unknown; use one of {', '.join(FORMATS)}")
    if titles == NONE:
        dataset = without_titles(dataset)
    if spec.get("as_documents"):
        dataset = passages_as_documents(dataset)
    if spec.get("name"):
        dataset = dataclasses.replace(dataset, name=str(spec["name"]))
    return dataset


# Published collections are not in the repository: a config that reads one says in its first lines where
# to download it (every config in configs/ does). A missing folder points there, not only at the path.
_DOWNLOAD_HINT = (
    "download the collection as the comment at the top of the config says (each config in configs/ names its "
    "source), or point {key} at your copy (relative to the config, or absolute)"
)
_FOLDERS = {
    "beir": "a BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv)",
    "cranfield": "the Cranfield folder (cran.all.1400, cran.qry, cranqrel)",
    "chroma": "a chroma folder (corpora/<document>.md, questions.csv)",
}


def _check_present(spec: Mapping[str, Any], fmt: str, base: Path) -> None:
    """A published collection whose folder is missing: one line naming it and where to get it.

    A folder that exists but lacks a file is left to the loader, which names the file.
    """
    if fmt in _FOLDERS and spec.get("path") is not None:
        path = resolve_path(spec["path"], base)
        if not path.exists():
            raise DatasetError(
                f"{path}: no such folder; expected {_FOLDERS[fmt]}: {_DOWNLOAD_HINT.format(key='dataset.path')}"
            )
    if fmt == "trec":
        for key in ("qrels", "queries", "corpus"):
            if spec.get(key) is None:
                continue
            path = resolve_path(spec[key], base)
            if not path.exists() and not path.parent.exists():
                raise DatasetError(
                    f"{path}: no such file (folder {path.parent} does not exist); expected the TREC {key} file: "
                    + _DOWNLOAD_HINT.format(key=f"dataset.{key}")
                )


def passages_as_documents(dataset: Dataset) -> Dataset:
    """A passage collection read as documents: each passage's text is a document that chunkers can cut.

    Its judgements become document judgements (document metrics by MaxP, ``doc_ndcg@10``); there is
    no evidence, so evidence metrics have nothing to score (the no_relevant policy applies). Titles stay
    titles: each chunk is indexed with its document's title, as BEIR indexes passages.
    """
    if dataset.has_documents:
        return dataset
    documents = {doc: str(passage.get("text") or "") for doc, passage in dataset.corpus.items()}
    # Chunks of these documents get ids <document>#<start>-<end>, which must name one thing; and a document
    # is cut and tokenized as UTF-8 (a lone surrogate, which passages may hold, is not).
    messages = [
        f"{dataset.source}: as_documents: {chunk_id_clash(doc, other)}; rename one of the two passages"
        for doc, other in chunk_id_clashes(documents)
    ]
    for doc, text in documents.items():
        problem = surrogate_problem(doc)
        if problem is not None:
            messages.append(f"{dataset.source}: as_documents: passage id {doc!r} {problem}; {id_fix(problem)}")
        elif (problem := text_problem(text)) is not None:
            messages.append(f"{dataset.source}: as_documents: passage {doc!r}: 'text' {problem}")
    if messages:
        raise DatasetError(first_and_more(messages, hint=VALIDATE_LISTS_ALL), problems=messages)
    judgements = {qid: dict(grades) for qid, grades in dataset.judgements.items()}
    return dataclasses.replace(
        dataset,
        documents=documents,
        document_judgements=judgements,
        notes=(*dataset.notes, "passages read as documents (as_documents: true): chunkers cut each passage's text"),
    )


# Formats whose documents (or passages) are not files of their own: no file name to title them by.
_NO_FILES = ("beir", "trec", "cranfield")


def _titles(raw: Any, fmt: str) -> str:
    """The ``titles`` option, checked against the format (the config checks it too, where the format is written)."""
    try:
        titles = check_titles_option(raw)
    except ValueError as failure:
        raise DatasetError(f"dataset.titles: {failure}") from None
    if titles == FILE_NAME and fmt in _NO_FILES:
        raise DatasetError(
            f"dataset.titles: file_name titles documents by the names of their files, and a {fmt} corpus has no file "
            "per document; in the config's dataset section set titles: auto (the corpus's own titles) or titles: none"
        )
    return titles


def without_titles(dataset: Dataset) -> Dataset:
    """``dataset`` with every title of its corpus empty (``titles: none``): its units are indexed by text alone.

    The fingerprint changes with the titles (they are hashed with the corpus), so no cache keyed on it mixes the
    two. A corpus streamed from disk (the Ray engine) is read by the workers as the file holds it: refused.
    """
    if isinstance(dataset.corpus, FileCorpus):
        raise DatasetError(
            f"{dataset.source}: dataset.titles: none cannot drop the titles of a corpus the Ray engine streams from "
            "disk; write the corpus without titles, or remove titles: none"
        )
    if not any(str(unit.get("title") or "") for unit in dataset.corpus.values()):
        return dataset
    corpus = {unit_id: {**unit, "title": ""} for unit_id, unit in dataset.corpus.items()}
    return dataclasses.replace(dataset, corpus=corpus)


def _infer_format(spec: Mapping[str, Any], base: Path) -> str:
    if "qrels" in spec:
        return "trec"
    path = resolve_path(spec.get("path", ""), base)
    if path.is_dir():
        if (path / "corpus.jsonl").exists():
            return "beir"
        if (path / "cranqrel").exists():
            return "cranfield"
        if is_chroma_folder(path):
            return "chroma"
    return "yaml"


def _grade_map(raw: Any) -> dict[float, float] | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise DatasetError(f"grade_map must map numeric codes to numeric gains, got {raw!r}")
    try:
        return {grade_from_value(k): grade_from_value(v) for k, v in raw.items()}
    except ValueError as failure:
        raise DatasetError(f"grade_map must map numeric codes to numeric gains: {failure}") from None


__all__ = [
    "CRANFIELD_GRADE_MAP",
    "FORMATS",
    "Dataset",
    "Problems",
    "Query",
    "QuerySetFile",
    "load_beir",
    "load_chroma",
    "load_corpus_file",
    "load_cranfield",
    "load_dataset",
    "load_queries_file",
    "load_trec",
    "load_yaml_query_set",
]
