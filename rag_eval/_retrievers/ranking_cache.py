"""On-disk cache of a built-in retriever's answer, so that re-running a config skips index() and search().

One file per entry, under ``<cache_dir>/rankings/<key>.json``: a JSON header line (namespace
``rag_eval.rankings``, format, key, a checksum, the retriever's ``describe()`` and the index
and search times of the run that computed it), then the answer (``{qid: {doc_id: score}}``) as
one JSON line. The checksum is a sha256 over the header's content (everything but the checksum,
as canonical JSON: the description and timings a report prints are covered too) and the answer
line's bytes as written, so a load checks the answer without writing it out again (a canonical
re-encoding of 300 rankings of 100 took ~25 ms a load). An entry of an earlier format is under
another key (the format is part of it): simply a miss.

The key is a sha256 over everything the answer depends on, conservatively (a stale hit
would print a wrong number; a needless miss only costs time):

- the adapter name and the built object's class, and the resolved parameters (canonical JSON);
- for each component (the retriever and the retrievers nested in a hybrid or a
  cross-encoder): the content hash of its model folder, or of a static retriever's rankings;
- the exact corpus the retriever indexes (ids and every passage field, in the order it
  receives them: the chunks of a chunking, or the passages) and the query texts;
- ``top_k``;
- the versions of Python, rag_eval and the libraries that shape scores (bm25s,
  sentence-transformers, transformers, torch, numpy, ...) and a hash of the source of the
  adapters themselves (a development checkout changes code without changing its version).

Judgements are not part of the key: a ranking does not read them, and the evaluation is
always recomputed. Like the embedding cache, the device (cpu / cuda) is not part of it.

Only the built-in adapters are cached (:data:`rag_eval._data.config.adapters.BUILTIN`), and
only when every nested retriever is built-in too: a plug-in's code can change while its
parameters stay the same. A dense model with no local folder (to be downloaded) has no
content hash and is not cached either.

An entry is written atomically; an entry that cannot be read or fails a check (namespace,
format, key, checksum, shapes, or the run's own checks of a ranking: a document not in the corpus,
a query not asked) is a miss, with a :class:`RankingCacheWarning`, never an error.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag_eval._core.atomic import atomic_write_text
from rag_eval._core.files import describe_kind
from rag_eval._core.versions import package_versions
from rag_eval._data.config.adapters import BUILTIN
from rag_eval._models import files as models
from rag_eval._models.embeddings.options import cache_options
from rag_eval._retrievers.shared_children import SharedChild

# 2: a header line, then the answer line (its bytes checksummed); 3: a namespace, and the checksum
# covers the header's content (description, timings) too.
FORMAT_VERSION = 3
NAMESPACE = "rag_eval.rankings"
FOLDER = "rankings"

# The modules whose source is hashed into every key (relative to the rag_eval package).
_SOURCE_FOLDERS = ("_retrievers",)
# The ranking rule, exact top-k and inner products, and the passage text a built-in indexes.
_SOURCE_FILES = ("_core/ranking.py", "_core/topk.py", "_core/scores.py", "_data/datasets/model.py")


# What may be stored as a score (converted to float only when exactly representable); never a bool.
_SCORES = (int, float, np.integer, np.floating)
_NOT_SCORES = (bool, np.bool_)


class RankingCacheWarning(UserWarning):
    """A stored ranking was unusable (corrupt, partial, mismatched) or could not be written."""


@dataclass(frozen=True)
class CachedRanking:
    """What a hit gives back: the answer, the original description and timings."""

    answer: dict[str, dict[str, float]]
    description: dict[str, Any]
    timings: dict[str, float]


def components(retriever: Any) -> dict[str, Any] | None:
    """The identity of a built retriever and its nested ones, or None when any part is not a built-in.

    Model identities are content hashes of the model folder; nothing is loaded.
    """

    if isinstance(retriever, SharedChild):  # a child shared by several variants of the run: its identity is the child's
        retriever = retriever.retriever
    cls = type(retriever)
    path = f"{cls.__module__}:{cls.__qualname__}"
    adapter = next((name for name, target in BUILTIN.items() if target == path), None)
    if adapter is None or _patched(retriever, cls):
        return None
    entry: dict[str, Any] = {"adapter": adapter, "class": path}
    children: list[Any] = []
    if adapter == "dense":
        if retriever.resolved.path is None:  # would be downloaded: no content to hash without loading it
            return None
        entry["model"] = retriever.model_identity()
    elif adapter == "cross_encoder":
        if retriever.resolved.path is None:
            return None
        entry["model"] = models.model_identity(retriever.resolved.path)
        children = [retriever.first_stage]
    elif adapter == "hybrid":
        children = list(retriever.children)
    elif adapter == "static":
        entry["rankings"] = _sha256(_canonical(retriever.rankings))
    if adapter in ("dense", "cross_encoder"):
        # What changes the numbers beyond the parameters: the export's format, onnxruntime's release for
        # int8. Empty for torch fp32, whose keys stay as they were.
        encoding = cache_options(retriever.options)
        if encoding:
            entry["encoding"] = encoding
    nested = []
    for child in children:
        identity = components(child)
        if identity is None:
            return None
        nested.append(identity)
    if nested:
        entry["children"] = nested
    return entry


def _patched(retriever: Any, cls: type) -> bool:
    """Whether the seam of a built-in was replaced at run time (on the instance or the class): not the built-in then."""
    for name in ("index", "search", "describe"):
        if name in vars(retriever):
            return True
        method = getattr(cls, name, None)
        if getattr(method, "__module__", None) != cls.__module__ or getattr(method, "__qualname__", "") != (
            f"{cls.__qualname__}.{name}"
        ):
            return True
    return False


def ranking_key(
    adapter: str, params: Mapping[str, Any], retriever: Any, inputs: str, top_k: int
) -> str | None:
    """The entry name for one retriever run, or None when it must not be cached.

    ``inputs`` is :func:`corpus_digest` of the corpus it indexes and the queries it answers.
    Anything that cannot be identified (a plug-in, parameters that are not plain JSON, a
    model folder that cannot be read) gives None: the retriever then simply runs.
    """
    try:
        identity = components(retriever)
        if identity is None:
            return None
        payload = {
            "format": FORMAT_VERSION,
            "adapter": adapter,
            "params": json.loads(_canonical(params)),
            "components": identity,
            "inputs": inputs,
            "top_k": top_k,
            "versions": _versions(),
        }
        return _sha256(_canonical(payload))
    except (TypeError, ValueError, OSError):
        return None


class RankingCache:
    """Stored answers under ``directory/rankings``."""

    def __init__(self, directory: str | os.PathLike[str]):
        self.directory = Path(directory).expanduser()
        self.entries = self.directory / FOLDER

    def path(self, key: str) -> Path:
        """The file of an entry."""
        return self.entries / f"{key}.json"

    def load(self, key: str) -> CachedRanking | None:
        """The stored entry for ``key``, or None (a warning says why when an entry exists but is unusable)."""
        path = self.path(key)
        if not os.path.lexists(path):
            return None

        try:
            kind = describe_kind(os.stat(path).st_mode)  # a FIFO would block forever if opened
            if kind:
                return self._reject(path, f"it is {kind}, not a regular file")
            head, answer_line = split_entry(path.read_bytes())
            header = json.loads(head)
            problem = _check_header(header, key, answer_line)
            if problem:
                return self._reject(path, problem)
            answer = json.loads(answer_line)
        except (OSError, ValueError) as error:
            return self._reject(path, f"unreadable ({type(error).__name__}: {error})")
        if plain_answer(answer) != answer:
            return self._reject(path, "its answer is not {qid: {doc_id: score}}")
        return CachedRanking(answer, header["description"], header["timings"])

    def save(
        self, key: str, answer: Mapping[str, Mapping[str, Any]], description: Mapping[str, Any],
        timings: Mapping[str, float],
    ) -> bool:
        """Store an answer atomically; False (with a warning) when it cannot be stored, never an error."""
        plain = plain_answer(answer)
        if plain is None:
            return False
        try:
            description_json = json.loads(json.dumps(dict(description), default=str))
            answer_line = json.dumps(plain, ensure_ascii=False, allow_nan=False)
            header = {
                "namespace": NAMESPACE,
                "format": FORMAT_VERSION,
                "key": key,
                "description": description_json,
                "timings": {name: float(value) for name, value in timings.items()},
            }
            header["checksum"] = entry_checksum(header, answer_line.encode("utf-8"))
            text = entry_text(header, answer_line)
        except (TypeError, ValueError):
            return False

        try:
            self.entries.mkdir(parents=True, exist_ok=True)
            atomic_write_text(self.path(key), text)
        except OSError as error:
            warnings.warn(
                f"could not store the ranking in {self.entries}: {error}; the next run computes it again",
                RankingCacheWarning,
                stacklevel=2,
            )
            return False
        return True

    def discard(self, key: str, problem: str) -> None:
        """An entry that loaded but failed the run's own checks of a ranking: warned like any unusable entry.

        The entry is left in place: the run computes the ranking again and :meth:`save` replaces it.
        """
        self._reject(self.path(key), problem, stacklevel=4)

    def _reject(self, path: Path, problem: str, stacklevel: int = 3) -> CachedRanking | None:
        """Warn that an entry is unusable; None (a miss)."""
        warnings.warn(
            f"stored ranking {path} is unusable: {problem}; running the retriever again and rewriting it",
            RankingCacheWarning,
            stacklevel=stacklevel,
        )
        return None


def plain_answer(answer: Any) -> dict[str, dict[str, float]] | None:
    """``{qid: {doc_id: float}}`` of an answer, or None when it has another shape (spans, odd scores)."""
    if not isinstance(answer, Mapping):
        return None
    plain: dict[str, dict[str, float]] = {}
    for qid, scored in answer.items():
        if not isinstance(qid, str) or not isinstance(scored, Mapping):
            return None
        row: dict[str, float] = {}
        for doc, score in scored.items():
            if not isinstance(doc, str) or isinstance(score, _NOT_SCORES) or not isinstance(score, _SCORES):
                return None  # not stored: the run itself reports (or accepts) it as it always did
            value = float(score)
            if not math.isfinite(value) or value != score:
                return None
            row[doc] = value
        plain[qid] = row
    return plain


def entry_text(header: Mapping[str, Any], answer_line: str) -> str:
    """An entry's text: the header as one JSON line, then the answer line (JSON never holds a raw line break)."""
    return json.dumps(header, ensure_ascii=False, allow_nan=False) + "\n" + answer_line + "\n"


def split_entry(raw: bytes) -> tuple[bytes, bytes]:
    """An entry's header line and answer line (without its line end); ValueError when it is not two lines."""
    head, _, rest = raw.partition(b"\n")
    if not rest.endswith(b"\n") or b"\n" in rest[:-1]:
        raise ValueError("not a header line and an answer line")
    return head, rest[:-1]


def entry_checksum(header: Mapping[str, Any], answer_line: bytes) -> str:
    """The checksum an entry's header holds: sha256 of the header's content and the answer line's bytes.

    The header's content is every field but ``checksum``, as canonical JSON (sorted keys), so an
    edited description or timing fails the check as an edited score does; the answer line is
    hashed as written, never encoded again.
    """
    content = {name: value for name, value in header.items() if name != "checksum"}
    digest = hashlib.sha256()
    digest.update(
        json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
    )
    digest.update(b"\n")
    digest.update(answer_line)
    return digest.hexdigest()


def _check_header(header: Any, key: str, answer_line: bytes) -> str | None:
    if not isinstance(header, dict):
        return "not a JSON object"
    if header.get("namespace") != NAMESPACE:
        return f"its header does not name it a {NAMESPACE} entry"
    missing = [name for name in ("format", "key", "checksum", "description", "timings") if name not in header]
    if missing:
        return f"lacks {', '.join(missing)}"
    if header["format"] != FORMAT_VERSION:
        return f"format {header['format']!r}, expected {FORMAT_VERSION}"
    if header["key"] != key:
        return "its key does not match its file name"
    try:
        checksum = entry_checksum(header, answer_line)
    except (TypeError, ValueError):  # a header holding what JSON cannot re-encode (NaN) is no entry of ours
        return "its header is not plain JSON"
    if header["checksum"] != checksum:
        return "checksum mismatch (the file was modified or partly written)"
    if not isinstance(header["description"], dict):
        return "its description is not a JSON object"
    timings = header["timings"]
    if not isinstance(timings, dict) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in timings.values()
    ):
        return "its timings are not numbers"
    return None


def _versions() -> dict[str, str]:
    versions = dict(package_versions())
    versions["rag_eval_source"] = _source_digest()
    return versions


_SOURCE_DIGEST: str | None = None


def _source_digest() -> str:
    """sha256 of the adapters' source files (read once per process)."""
    global _SOURCE_DIGEST
    if _SOURCE_DIGEST is None:
        package = Path(__file__).resolve().parent.parent
        files = sorted(
            [p for folder in _SOURCE_FOLDERS for p in (package / folder).glob("*.py")]
            + [package / name for name in _SOURCE_FILES]
        )
        digest = hashlib.sha256()
        for path in files:
            digest.update(path.relative_to(package).as_posix().encode("utf-8") + b"\0")
            digest.update(path.read_bytes())
        _SOURCE_DIGEST = digest.hexdigest()
    return _SOURCE_DIGEST


def _canonical(value: Any) -> str:
    # No default=: a value that is not plain JSON raises TypeError, and the retriever is simply not cached.
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
