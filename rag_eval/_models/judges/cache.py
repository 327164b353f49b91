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
key, with one warning, and is started afresh (atomically) when the first new answer is written;
a damaged line (a process killed while appending) is skipped with one warning. A cache that
cannot be read or written is never an error: the judge asks the endpoint instead.

Answers are appended with one ``write`` each (``O_APPEND``), so two judges sharing the file keep
whole lines; a lock orders the threads of one judge.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rag_eval._core.atomic import atomic_write_bytes

NAMESPACE = "rag_eval.judge"
FORMAT = 1
FILE_NAME = "llm-answers.jsonl"
FOLDER = "judges"
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
    """Answers by key, read once from the file under ``folder`` and appended to as they come."""

    def __init__(self, folder: str | os.PathLike[str], warn: Callable[[str], None] | None = None) -> None:
        self.path = Path(folder) / FOLDER / FILE_NAME
        self._warn = warn or _warn
        self._entries: dict[str, CachedAnswer] = {}
        self._lock = threading.Lock()
        self._restart = False  # the file is not ours: replaced whole on the first write
        self._needs_newline = False  # the file ends inside a line (a cut-off append)
        self._writable = True
        self._load()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> CachedAnswer | None:
        """The answer kept under ``key``, or None."""
        return self._entries.get(key)

    def put(self, key: str, entry: CachedAnswer, *, model: str, prompt_version: str) -> None:
        """Keep ``entry`` under ``key`` (in memory, and appended to the file when it can be written)."""
        record = {"key": key, "model": model, "prompt_version": prompt_version, **asdict(entry)}
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            self._entries[key] = entry
            if not self._writable:
                return
            try:
                self._append(line)
            except OSError as error:
                self._writable = False
                self._warn(f"judge cache {self.path}: cannot be written ({error.strerror or error}); "
                           "answers of this run are not kept (set params.cache_dir to a writable folder)")

    # ------------------------------------------------------------------ internals

    def _append(self, line: bytes) -> None:
        if self._restart or not self.path.exists():
            first = (json.dumps(header()) + "\n").encode("utf-8")
            atomic_write_bytes(self.path, first + line)  # makes the folder too
            self._restart = self._needs_newline = False
            return
        with open(self.path, "ab") as handle:  # O_APPEND: each write lands whole at the end
            handle.write((b"\n" if self._needs_newline else b"") + line)
        self._needs_newline = False

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
            parsed = _entry(text)
            if parsed is None:
                damaged += 1
                first_damaged = first_damaged or number
                continue
            key, entry = parsed
            self._entries[key] = entry
        if damaged:
            self._warn(f"judge cache {self.path}: {damaged} damaged line{'s' if damaged > 1 else ''} skipped (first: "
                       f"line {first_damaged}); those answers are asked again")


def _is_header(text: bytes) -> bool:
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and value.get("namespace") == NAMESPACE and value.get("format") == FORMAT


def _entry(text: bytes) -> tuple[str, CachedAnswer] | None:
    """``(key, answer)`` of one line, or None when the line is not a whole, well-typed entry."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    key, answer, grade = value.get("key"), value.get("answer"), value.get("grade")
    tokens = (value.get("prompt_tokens"), value.get("completion_tokens"))
    seconds = value.get("seconds")
    if not (isinstance(key, str) and len(key) == 64 and isinstance(answer, str)):
        return None
    if grade is not None and (isinstance(grade, bool) or grade not in (0, 1, 2, 3)):
        return None
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in tokens):
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
        return None
    prompt_tokens, completion_tokens = (int(n) for n in tokens if isinstance(n, int))
    return key, CachedAnswer(answer, None if grade is None else int(grade), prompt_tokens, completion_tokens,
                             float(seconds))


def _warn(message: str) -> None:
    warnings.warn(message, JudgeCacheWarning, stacklevel=3)


class JudgeCacheWarning(UserWarning):
    """The answer cache could not be used as it is (its file is not ours, damaged, or cannot be written)."""
