"""The parameters of each chunking method as strict pydantic models, and their one-line errors.

A ``chunking:`` entry is ``{method: <name or 'package.module:function'>, <parameters>}``.
Every problem becomes one line naming ``chunking.<name>.<field>``, what is wrong and the
fix; unknown keys are refused with a did-you-mean, YAML types are not coerced (``"200"``
is not a size, ``yes`` is not an int), and ``overlap`` must be smaller than ``size``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from rag_eval._core.errors import ConfigError
from rag_eval._core.messages import did_you_mean, first_and_more, shown
from rag_eval._core.validation import PARAMETER_VOICE, ProblemAt, pydantic_problems

BUILTIN_METHODS = ("fixed", "recursive", "sentences", "markdown")
# The largest size (and so overlap) a built-in method takes: more than any document holds (a document
# is at most 512 MiB); 2**64 crashed the splitting library rag_eval used before (a 64-bit size).
MAX_SIZE = 1_000_000_000
_IMPORT_FORM = "an import string 'package.module:function'"


def _overlap_too_large(overlap: int, size: int) -> ProblemAt:
    return ProblemAt(("overlap",), f"{overlap} must be less than size ({size}); lower overlap or raise size")


class _Params(BaseModel):
    """Fields every chunker has; unknown keys are errors and values are not coerced."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    method: str = Field(description="fixed, recursive, sentences, markdown, or 'package.module:function'")
    tokenizer: str = Field(
        "words",
        min_length=1,
        description="'words' (rag_eval._core.tokens) or a Hugging Face tokenizer name or folder, loaded offline",
    )


class _SizedParams(_Params):
    size: int = Field(ge=1, le=MAX_SIZE, description="the largest chunk, in `unit`s")
    overlap: int = Field(0, ge=0, description="how much consecutive chunks share, in `unit`s (less than size)")
    unit: Literal["tokens", "characters"] = Field("tokens", description="what size and overlap count")

    @model_validator(mode="after")
    def _overlap_below_size(self) -> _SizedParams:
        if self.overlap >= self.size:
            raise _overlap_too_large(self.overlap, self.size)
        return self


class FixedParams(_SizedParams):
    """``fixed``: windows of ``size`` tokens (or characters), each starting ``size - overlap`` after the last."""


class RecursiveParams(_SizedParams):
    """``recursive``: split at the largest boundary that fits (blank lines, lines, sentences, words, graphemes)."""


class SentencesParams(_SizedParams):
    """``sentences``: whole sentences packed up to ``size``; a longer sentence is split at words."""


class MarkdownParams(_Params):
    """``markdown``: one chunk per heading section; sections longer than ``size`` (when set) are split further."""

    size: int | None = Field(
        None, ge=1, le=MAX_SIZE, description="split sections longer than this (unset: never split)"
    )
    overlap: int = Field(0, ge=0, description="overlap of the pieces of a split section (needs size)")
    unit: Literal["tokens", "characters"] = Field("tokens", description="what size and overlap count")
    heading_level: int = Field(
        6, ge=1, le=6, description="headings of this level or higher (fewer #) start a section; deeper ones do not"
    )

    @model_validator(mode="after")
    def _overlap_needs_size(self) -> MarkdownParams:
        if self.overlap and self.size is None:
            raise ProblemAt(
                ("overlap",),
                "needs size (overlap applies to the pieces of a section split to size); set size or remove overlap",
            )
        if self.size is not None and self.overlap >= self.size:
            raise _overlap_too_large(self.overlap, self.size)
        return self


class CustomParams(_Params):
    """An import-string chunker: ``params`` are passed to it as keyword arguments."""

    params: dict[str, Any] = Field(default_factory=dict, description="keyword arguments for the chunker")


MODELS: dict[str, type[_Params]] = {
    "fixed": FixedParams,
    "recursive": RecursiveParams,
    "sentences": SentencesParams,
    "markdown": MarkdownParams,
}

ChunkerParams = FixedParams | RecursiveParams | SentencesParams | MarkdownParams | CustomParams


def is_import_string(method: str) -> bool:
    """``package.module:function`` form (a custom chunker)."""
    return ":" in method


def parse_spec(name: str, spec: object) -> ChunkerParams:
    """The validated parameters of the chunker ``name``; a ConfigError listing every problem otherwise."""
    where = f"chunking.{name}"
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{where}: must be a mapping {{method: ..., size: ...}}, got {type(spec).__name__}")
    method = spec.get("method")
    if method is None:
        raise ConfigError(f"{where}.method: required; one of {', '.join(BUILTIN_METHODS)}, or {_IMPORT_FORM}")
    if not isinstance(method, str):
        raise ConfigError(f"{where}.method: must be a string, got {shown(method)}")
    if is_import_string(method):
        module, _, attr = method.partition(":")
        if not module.strip() or not attr.strip():
            raise ConfigError(f"{where}.method: {method!r} is not of the form 'package.module:function'")
        model: type[_Params] = CustomParams
    elif method in MODELS:
        model = MODELS[method]
    else:
        hint = did_you_mean(method, BUILTIN_METHODS)
        known = ", ".join(BUILTIN_METHODS)
        if hint:
            raise ConfigError(f"{where}.method: unknown method {method!r}; {hint}known: {known}, or {_IMPORT_FORM}")
        raise ConfigError(
            f"{where}.method: unknown method {method!r}; known: {known}; "
            f"for your own chunker write module:function, e.g. {_import_example(method)!r}"
        )
    try:
        return model.model_validate(dict(spec))  # type: ignore[return-value]
    except ValidationError as error:
        problems = pydantic_problems(
            error, dict(spec), model, root=where, voice=PARAMETER_VOICE, keys_named=f"{_method_of(model)} takes"
        )
    raise ConfigError(first_and_more(problems), problems=problems)


def _import_example(method: str) -> str:
    """An import string built from what was written: ``mychunk`` -> ``mychunk:split``, ``a.b.f`` -> ``a.b:f``."""
    parts = method.strip().split(".")
    if not all(part.isidentifier() for part in parts):
        return "my_chunks:split"
    if len(parts) > 1:  # a dotted path to the function: the colon goes before its name
        return ".".join(parts[:-1]) + ":" + parts[-1]
    return f"{parts[0]}:split"


def _method_of(model: type[BaseModel]) -> str:
    for method, candidate in MODELS.items():
        if candidate is model:
            return f"method {method!r}"
    return "a custom chunker"
