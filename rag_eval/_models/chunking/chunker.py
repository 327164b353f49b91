"""A named chunker: documents in, checked chunks out, and a description for results and reports."""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from rag_eval._core.errors import ConfigError, DatasetError
from rag_eval._core.plugins import config_folder
from rag_eval._core.spans import Chunk, span_problem
from rag_eval._core.tokens import count_words
from rag_eval._core.versions import package_version
from rag_eval._models.chunking import custom
from rag_eval._models.chunking.methods import BUILDERS
from rag_eval._models.chunking.packing import Advance
from rag_eval._models.chunking.params import ChunkerParams, CustomParams, MarkdownParams, parse_spec
from rag_eval._models.chunking.tokenizers import WORDS, Tokenizer, load_tokenizer
from rag_eval._models.progress import NoBar, tqdm_disable

# Characters of text (all documents together) from which chunking shows a progress bar: about a
# second of the slowest method; less is over before a bar would be read.
PROGRESS_MIN_CHARS = 2_000_000

# (doc id, text, advance): the spans of one document; advance (when given) hears the characters done
SpansOf = Callable[[str, str, Advance | None], list[tuple[Any, Any]]]


class Chunker:
    """Cuts documents into :class:`~rag_eval._core.spans.Chunk` s with exact, checked offsets.

    Built by :func:`build_chunker`. ``chunk`` is deterministic: the same documents give the
    same chunks, ordered by document id, then start, then end.
    """

    def __init__(
        self,
        name: str,
        params: ChunkerParams,
        tokenizer: Tokenizer,
        spans: SpansOf,
        library: str,
    ) -> None:
        self.name = name
        self.params = params
        self.tokenizer = tokenizer
        self._spans = spans
        self._library = library

    @property
    def method(self) -> str:
        """``fixed``, ``recursive``, ``sentences``, ``markdown`` or the custom chunker's import string."""
        return self.params.method

    def chunk(self, documents: Mapping[str, str]) -> list[Chunk]:
        """Every chunk of ``documents`` (``{doc id: text}``); empty or whitespace-only documents give none.

        A chunker that gives no chunk for any document with text is refused (never useful).
        Each chunk is checked: ``end > start``, inside its document, not repeated, and
        ``documents[doc][start:end] == chunk.text``; a ConfigError names the chunker, the
        document and the offsets otherwise. Long texts (:data:`PROGRESS_MIN_CHARS` and more)
        show a progress bar in characters, advanced piece by piece within a long document,
        unless the run has no progress (rag_eval._models.progress).
        """
        chunks: list[Chunk] = []
        with_text = 0
        names = sorted(documents)
        total = sum(len(text) for text in documents.values() if isinstance(text, str))
        with _progress_bar(total, self.name) as bar:
            for doc in names:
                text = documents[doc]
                if not isinstance(text, str):
                    raise DatasetError(f"document {doc!r} is {type(text).__name__}, not a text; chunking needs str")
                done = bar.n
                if text.strip():
                    with_text += 1
                    _check_encodable(doc, text)
                    found = self._spans(doc, text, bar.update)
                    chunks.extend(self._checked(doc, text, found))
                bar.update(done + len(text) - bar.n)  # what the method did not report (a custom chunker's)
        if with_text and not chunks:
            # a custom chunker that returns nothing (a filter too strict, a generator never consumed):
            # every retriever reading it would retrieve nothing, and every score would be 0
            which = "the only document" if with_text == 1 else f"any of the {with_text:,} documents"
            raise ConfigError(
                f"chunking.{self.name}: chunker {self.method!r} produced no chunks for {which}; "
                f"{custom.SEAM if isinstance(self.params, CustomParams) else 'check its parameters'}"
            )
        return chunks

    def _checked(self, doc: str, text: str, found: Iterable[tuple[Any, Any]]) -> list[Chunk]:
        seen: set[tuple[int, int]] = set()
        out = []
        for start, end in found:
            problem = span_problem(start, end, len(text))
            if problem is not None:
                raise ConfigError(
                    f"chunking.{self.name}: chunker {self.method!r} gave document {doc!r} the span "
                    f"[{start!r}, {end!r}): {problem}"
                )
            start, end = int(start), int(end)  # a numpy integer is kept as Python's (chunk ids, JSON)
            if (start, end) in seen:
                raise ConfigError(
                    f"chunking.{self.name}: chunker {self.method!r} gave document {doc!r} the span [{start}, {end}) "
                    "twice; a chunk id names its document and offsets, so each span may appear once"
                )
            seen.add((start, end))
            # the text IS the slice
            out.append(Chunk(doc, start, end, text[start:end]))
        out.sort(key=lambda c: (c.start, c.end))
        return out

    def count_tokens(self, text: str) -> int:
        """Tokens in ``text`` by this chunker's tokenizer (no special tokens)."""
        return self.tokenizer.count(text)

    def describe(self) -> dict[str, Any]:
        """JSON-ready: method, size, overlap, unit, tokenizer, library (name and version), and method extras."""
        params = self.params
        info: dict[str, Any] = {
            "method": params.method,
            "size": getattr(params, "size", None),
            "overlap": getattr(params, "overlap", None),
            "unit": getattr(params, "unit", None),
        }
        info.update(self.tokenizer.describe())
        info["library"] = self._library
        if isinstance(params, MarkdownParams):
            info["heading_level"] = params.heading_level
        if isinstance(params, CustomParams):
            info["params"] = dict(params.params)
        return info

    def summarize(self, chunks: list[Chunk]) -> dict[str, Any]:
        """:func:`summarize_chunks` with this chunker's tokenizer."""
        return summarize_chunks(chunks, self.count_tokens)

    def __repr__(self) -> str:
        return f"Chunker({self.name!r}, {self.describe()!r})"


def summarize_chunks(chunks: list[Chunk], count_tokens: Callable[[str], int] = count_words) -> dict[str, Any]:
    """Number of chunks and documents, and mean / min / max length in characters and in tokens.

    Means are None when there are no chunks (nothing to average), never 0.
    """
    chars = [c.end - c.start for c in chunks]
    tokens = [count_tokens(c.text) for c in chunks]
    summary: dict[str, Any] = {"chunks": len(chunks), "documents": len({c.doc for c in chunks})}
    for label, values in (("chars", chars), ("tokens", tokens)):
        summary[f"mean_{label}"] = statistics.fmean(values) if values else None
        summary[f"min_{label}"] = min(values) if values else None
        summary[f"max_{label}"] = max(values) if values else None
    return summary


def check_chunker(name: str, spec: Mapping[str, Any], base: Path | None = None) -> None:
    """Validate a ``chunking:`` entry without building it (for ``rag-eval validate``).

    Parameters are checked, a model tokenizer's ``tokenizer.json`` is read (as ``run`` reads it: a file that
    is not a tokenizer is a problem of the config), and a custom chunker is imported and inspected (never called).
    """
    base = Path(base) if base is not None else None
    params = parse_spec(name, spec)
    if params.tokenizer != WORDS:
        load_tokenizer(params.tokenizer, f"chunking.{name}.tokenizer", base)
    if isinstance(params, CustomParams):
        with _config_folder(base):
            obj = custom.resolve(name, params.method)
        custom.check_params(name, params.method, obj, params.params)


def build_chunker(name: str, spec: Mapping[str, Any], base: Path | None = None) -> Chunker:
    """The chunker ``name`` of a config's ``chunking:`` section; ConfigError (one line each) when it is wrong.

    ``base``: the config's folder, where a custom chunker's module and a relative
    tokenizer path are looked for first.
    """
    base = Path(base) if base is not None else None
    params = parse_spec(name, spec)
    tokenizer = load_tokenizer(params.tokenizer, f"chunking.{name}.tokenizer", base)
    if isinstance(params, CustomParams):
        with _config_folder(base):
            obj = custom.resolve(name, params.method)
        call = custom.build(name, params.method, obj, params.params)
        method = params.method

        def custom_spans(doc: str, text: str, advance: Advance | None) -> list[tuple[Any, Any]]:
            return custom.spans(name, method, call, doc, text)

        return Chunker(name, params, tokenizer, custom_spans, "custom")
    span_function = BUILDERS[params.method](params, tokenizer)

    def builtin_spans(doc: str, text: str, advance: Advance | None) -> list[tuple[Any, Any]]:
        return span_function(text, advance)

    return Chunker(name, params, tokenizer, builtin_spans, _library(params.method))


def _library(method: str) -> str:
    libraries = {
        # rag_eval's own splitting over the tokenizer's offsets (rag_eval._models.chunking.packing)
        "fixed": ["rag-eval"],
        "recursive": ["rag-eval"],
        "sentences": ["rag-eval"],
        "markdown": ["rag-eval", "markdown-it-py"],
    }[method]
    return " + ".join(f"{lib} {_version(lib)}" for lib in libraries)


def _version(distribution: str) -> str:
    found = package_version(distribution)
    return "(not installed)" if found is None else found  # None: rag_eval run from a source tree


def _progress_bar(total: int, name: str) -> Any:
    """A tqdm bar of ``total`` characters (``update(n)``, ``n``), disabled when short or when the run has no progress."""
    if total < PROGRESS_MIN_CHARS:
        return NoBar()  # importing tqdm (and asyncio with it) took longer than chunking a small corpus
    from tqdm.auto import tqdm

    disable = tqdm_disable()
    return tqdm(total=total, desc=f"chunking {name}", unit="char", unit_scale=True, disable=disable, leave=False)


def _config_folder(base: Path | None) -> contextlib.AbstractContextManager[None]:
    # None keeps whatever folder a caller already set (the runner builds inside config_folder)
    return config_folder(base) if base is not None else contextlib.nullcontext()


def _check_encodable(doc: str, text: str) -> None:
    """Refuse a lone surrogate (not Unicode text: the Rust splitter and tokenizers cannot take it)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise DatasetError(
            f"document {doc!r} holds a lone surrogate {text[error.start]!r} at offset {error.start}, "
            "which is not Unicode text; fix the document's source"
        ) from None
