"""The LLM judge's answer cache: every answer kept under sha256(model, prompt version, query text, passage text).

One JSON Lines file, ``<cache_dir>/judges/llm-answers.jsonl``. Its first line is a header that
says what the file is::

    {"namespace": "rag_eval.judge", "format": 1, "holds": "..."}

and each further line one answer::

    {"key": "<sha256 hex>", "model": "...", "prompt_version": "...", "answer": "##final score: 2",
     "grade": 2, "prompt_tokens": 312, "completion_tokens": 6, "seconds": 0.41}

``grade`` is null for an answer the parser could not read even after the reminder. The LLM judge
neither writes nor uses such an entry (an answer cut short by ``max_tokens`` would otherwise be
reused forever): a rerun asks again. ``rag-eval generate`` keeps its answers here with a null grade
(they hold questions, not grades). A request that failed (no answer) is never kept.

An entry is trusted only under a header of this namespace and format. A file whose header is
not that (another program's file, an older format, a damaged first line) is a miss for every
key, with one warning, and is started afresh (atomically) when the first new answer is written.
An entry is also trusted only when it proves itself:

- its line is whole and well typed (``model`` and ``prompt_version`` strings included);
- under a prompt version whose parser the cache was given (the LLM judge's: its own
  :func:`rag_eval._models.judges.prompt.parse_grade`, the function that reads a fresh answer),
  its ``grade`` is the one the parser reads in its ``answer`` (a grade edited by hand is not);
- its ``model`` and ``prompt_version`` are those the key was made of (checked on lookup, where
  they are known: :meth:`AnswerCache.get` with ``model`` and ``prompt_version``).

Any other line is damaged: skipped with one warning (one for the file's lines as it is read, one
for the entries a lookup finds edited), its answer asked again. A file that held a damaged line
is rewritten compactly (the header and the last good line of each key) with the first new
answer, or when the judge has asked what it needed (:meth:`AnswerCache.compact`), atomically, so the
warning is not repeated by a later run; a file with none is only appended to. A cache that cannot be read or written is never an error: the judge asks the
endpoint instead.

Answers are appended with one ``write`` each (``O_APPEND``), so two judges sharing the file keep
whole lines; a lock orders the threads of one judge. Appends take a shared ``flock`` on the
folder and a rewrite an exclusive one, reading the file again under it, so a rewrite never drops
an answer another judge appended since this one read the file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rag_eval._core.atomic import atomic_write_bytes

NAMESPACE = "rag_eval.judge"
FORMAT = 1
FILE_NAME = "llm-answers.jsonl"
FOLDER = "judges"
#: Reads the grade in an answer (None: no grade), e.g. :func:`rag_eval._models.judges.prompt.parse_grade`.
GradeParser = Callable[[str], int | None]
_HOLDS = "answers of the LLM judge, keyed by sha256 of [model, prompt version, query text, passage text]"


def answer_key(model: str, prompt_version: str, query: str, passage: str) -> str:
    """The cache key of one question: sha256 of the JSON list ``[model, prompt_version, query, passage]``."""
    # A JSON list, not a joined string: ("a b", "c") and ("a", "b c") must not share a key.
    text = json.dumps([model, prompt_version, query, passage], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedAnswer:
    """One answer as kept: the model's text, its grade (None: unreadable), the tokens and seconds it cost."""

    answer: str
    grade: int | None
    prompt_tokens: int
    completion_tokens: int
    seconds: float


def header() -> dict[str, Any]:
    """The first line of a cache file."""
    return {"namespace": NAMESPACE, "format": FORMAT, "holds": _HOLDS}


class AnswerCache:
    """Answers by key, read once from the file under ``folder`` and appended to as they come.

    ``parsers``: ``{prompt version: the parser of its answers}``; an entry recorded under one of those
    versions is used only when its grade is the one the parser reads in its answer.
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        warn: Callable[[str], None] | None = None,
        *,
        parsers: Mapping[str, GradeParser] | None = None,
    ) -> None:
        self.path = Path(folder) / FOLDER / FILE_NAME
        self._warn = warn or _warn
        self._parsers = dict(parsers or {})
        self._entries: dict[str, _Kept] = {}
        self._lock = threading.Lock()
        self._restart = False  # the file is not ours: replaced whole on the first write
        self._compact = False  # the file holds damaged lines: rewritten without them on the first write
        self._needs_newline = False  # the file ends inside a line (a cut-off append)
        self._writable = True
        self._edited: dict[str, tuple[str, str]] = {}  # key -> the (model, prompt version) it was made of
        self._load()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str, *, model: str | None = None, prompt_version: str | None = None) -> CachedAnswer | None:
        """The answer kept under ``key``, or None.

        With ``model`` and ``prompt_version`` (those ``key`` was made of), an entry that records others
        was edited: it is not used (said once, as a damaged entry) and is dropped when the file is next written.
        """
        with self._lock:
            kept = self._entries.get(key)
            if kept is None:
                return None
            if (model is None or kept.model == model) and (prompt_version is None or kept.prompt_version == prompt_version):
                return kept.answer
            first = not self._edited
            del self._entries[key]
            self._edited[key] = (kept.model if model is None else model,
                                 kept.prompt_version if prompt_version is None else prompt_version)
            self._compact = True
        if first:
            self._warn(f"judge cache {self.path}: 1 damaged entry skipped (its model or prompt version is not the one "
                       "its key was made of: edited); its answer is asked again, and the entry dropped")
        return None

    def put(self, key: str, entry: CachedAnswer, *, model: str, prompt_version: str) -> None:
        """Keep ``entry`` under ``key`` (in memory, and written to the file when it can be)."""
        record = {"key": key, "model": model, "prompt_version": prompt_version, **asdict(entry)}
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            self._entries[key] = _Kept(entry, model, prompt_version)
            self._edited.pop(key, None)
            if not self._writable:
                return
            try:
                if self._restart or self._compact or not self.path.exists():
                    self._rewrite(key, line)
                else:
                    self._append(line)
            except OSError as error:
                self._writable = False
                self._warn(f"judge cache {self.path}: cannot be written ({error.strerror or error}); "
                           "answers of this run are not kept (set params.cache_dir to a writable folder)")

    def compact(self) -> None:
        """Rewrite the file now without the damaged lines it held, so a later run does not warn of them again.

        Called once a judge has asked what it needed: a run whose every answer was cached writes
        nothing else, and the damaged lines would otherwise stay (and be warned of) until an answer
        is written. A file that is not ours is left alone until an answer is written into it.
        """
        with self._lock:
            if not self._compact or self._restart or not self._writable:
                return
            try:
                self._rewrite(None, None)
            except OSError as error:
                self._writable = False
                self._warn(f"judge cache {self.path}: cannot be written ({error.strerror or error}); "
                           "its damaged lines stay (set params.cache_dir to a writable folder)")

    # ------------------------------------------------------------------ internals

    def _append(self, line: bytes) -> None:
        # O_APPEND: each write lands whole at the end
        with _folder_lock(self.path.parent, exclusive=False), open(self.path, "ab") as handle:
            handle.write((b"\n" if self._needs_newline else b"") + line)
        self._needs_newline = False

    def _rewrite(self, key: str | None, line: bytes | None) -> None:
        """The file replaced (atomically) by its header, the last good line of each key, and ``line`` (if any).

        The file is read again under the exclusive lock: what another judge appended since this one read
        it is kept. A file not ours (or unreadable) is started afresh.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _folder_lock(self.path.parent, exclusive=True):
            try:
                raw = self.path.read_bytes()
            except FileNotFoundError:
                raw = b""
            except OSError:
                raw = b""  # unreadable: started afresh, as before
            lines = raw.split(b"\n")
            good: dict[str, bytes] = {}
            if _is_header(lines[0]):
                for text in lines[1:]:
                    parsed = self._entry(text)
                    if parsed is None:
                        continue
                    found, kept = parsed
                    if self._edited.get(found) not in (None, (kept.model, kept.prompt_version)):
                        continue  # an entry this judge found edited (one appended since, correct, is kept)
                    good.pop(found, None)  # the last line of a key wins, in the place it was written
                    good[found] = text.strip()
            if key is not None and line is not None:
                good.pop(key, None)
                good[key] = line.rstrip(b"\n")
            first = json.dumps(header()).encode("utf-8")
            atomic_write_bytes(self.path, b"\n".join([first, *good.values()]) + b"\n")  # makes the folder too
        self._restart = self._compact = self._needs_newline = False
        self._edited.clear()

    def _load(self) -> None:
        try:
            raw = self.path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):  # nothing kept yet (writing says if it cannot be)
            return
        except OSError as error:
            self._restart = True
            self._warn(f"judge cache {self.path}: cannot be read ({error.strerror or error}); every answer is asked "
                       "again and the file is started afresh")
            return
        lines = raw.split(b"\n")
        self._needs_newline = not raw.endswith(b"\n")
        if not _is_header(lines[0]):
            self._restart = True
            self._warn(f"judge cache {self.path}: line 1 is not the header of a rag_eval judge cache (namespace "
                       f"{NAMESPACE!r}, format {FORMAT}); its answers are not used, and the file is started afresh")
            return
        damaged = 0
        first_damaged = 0
        for number, text in enumerate(lines[1:], start=2):
            if not text.strip():
                continue
            parsed = self._entry(text)
            if parsed is None:
                damaged += 1
                first_damaged = first_damaged or number
                continue
            key, kept = parsed
            self._entries[key] = kept
        if damaged:
            self._compact = True
            self._warn(f"judge cache {self.path}: {damaged} damaged line{'s' if damaged > 1 else ''} skipped (first: "
                       f"line {first_damaged}); those answers are asked again, and the damaged lines dropped when the "
                       "next answer is written")

    def _entry(self, text: bytes) -> tuple[str, _Kept] | None:
        """``(key, entry)`` of one line, or None when the line is damaged (not whole and well typed, or a grade
        its own answer does not give under its prompt version's parser)."""
        parsed = _entry(text)
        if parsed is None:
            return None
        key, kept = parsed
        parse = self._parsers.get(kept.prompt_version)
        if parse is not None and parse(kept.answer.answer) != kept.answer.grade:
            return None
        return key, kept


@dataclass(frozen=True)
class _Kept:
    """An entry as read: the answer, and the model and prompt version its line records."""

    answer: CachedAnswer
    model: str
    prompt_version: str


@contextlib.contextmanager
def _folder_lock(folder: Path, *, exclusive: bool) -> Iterator[None]:
    """``flock`` on ``folder`` (shared: an append; exclusive: a rewrite); nothing where there is no flock."""
    try:
        import fcntl
    except ImportError:  # Windows: one judge at a time is assumed
        yield
        return
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:  # the folder cannot be opened: the write that follows says why
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # drops the lock


def _is_header(text: bytes) -> bool:
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and value.get("namespace") == NAMESPACE and value.get("format") == FORMAT


def _entry(text: bytes) -> tuple[str, _Kept] | None:
    """``(key, entry)`` of one line, or None when the line is not a whole, well-typed entry."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    key, answer, grade = value.get("key"), value.get("answer"), value.get("grade")
    tokens = (value.get("prompt_tokens"), value.get("completion_tokens"))
    seconds = value.get("seconds")
    model, prompt_version = value.get("model"), value.get("prompt_version")
    if not (isinstance(key, str) and len(key) == 64 and isinstance(answer, str)):
        return None
    if not (isinstance(model, str) and isinstance(prompt_version, str)):
        return None
    if grade is not None and (isinstance(grade, bool) or grade not in (0, 1, 2, 3)):
        return None
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in tokens):
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
        return None
    prompt_tokens, completion_tokens = (int(n) for n in tokens if isinstance(n, int))
    entry = CachedAnswer(answer, None if grade is None else int(grade), prompt_tokens, completion_tokens, float(seconds))
    return key, _Kept(entry, model, prompt_version)


def _warn(message: str) -> None:
    warnings.warn(message, JudgeCacheWarning, stacklevel=3)


class JudgeCacheWarning(UserWarning):
    """The answer cache could not be used as it is (its file is not ours, damaged, or cannot be written)."""
