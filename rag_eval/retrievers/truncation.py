"""How many passages an encoder silently cuts: token counts against the model's maximum sequence length.

A sentence-transformers model reads at most ``max_seq_length`` tokens (256 for
all-MiniLM-L6-v2) and drops the rest without a word, so an 800-token chunk is
scored on its first third. The count uses the model's own fast tokenizer
(``tokenizer.json``, read by the ``tokenizers`` package: no torch, no download)
with its special tokens, as the encoder sees the text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

# Texts tokenised per call: bounds the memory of the encodings held at once.
_BATCH = 4096


def model_max_length(folder: Path, configured: int | None = None) -> int | None:
    """The encoder's maximum sequence length: ``configured``, else the model folder's, else None.

    sentence-transformers reads ``sentence_bert_config.json``'s ``max_seq_length``; a folder
    without one falls back to the tokenizer's ``model_max_length`` when it is a real limit.
    """
    if configured is not None:
        return configured
    for name, key in (("sentence_bert_config.json", "max_seq_length"), ("tokenizer_config.json", "model_max_length")):
        try:
            value = json.loads((folder / name).read_text(encoding="utf-8")).get(key)
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1_000_000:
            return value
    return None


def truncation_report(
    folder: Path | None, texts: Sequence[str], configured: int | None = None, cache_dir: Path | None = None
) -> dict[str, Any] | None:
    """``{"max_seq_length", "truncated", "passages", "share", "longest_tokens"}``, or None when unknown.

    None when the model has no folder, no ``tokenizer.json`` or no known limit (the
    count would be a guess, and the report says nothing rather than something wrong).
    With ``cache_dir``, each text's token count is kept in the per-passage store (keyed
    by the tokenizer file's hash and the text), so a rerun tokenises only new texts:
    re-tokenising a whole corpus took longer than encoding the one passage edited.
    """
    if folder is None or not texts:
        return None
    limit = model_max_length(folder, configured)
    tokenizer_file = folder / "tokenizer.json"
    if limit is None or not tokenizer_file.is_file():
        return None
    try:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(tokenizer_file))
    except Exception:  # an unreadable or foreign tokenizer file: no report, never a failed run
        return None
    tokenizer.no_truncation()
    tokenizer.no_padding()

    def count(batch: list[str]) -> np.ndarray:
        lengths = [len(encoding.ids) for encoding in tokenizer.encode_batch(batch)]
        return np.asarray(lengths, dtype=np.float32).reshape(-1, 1)  # float32 holds counts exactly up to 2**24

    from rag_eval.embeddings.store import EmbeddingStore, encode_missing, namespace_key
    from rag_eval.errors import RagEvalError

    store = None
    if cache_dir is not None:
        from rag_eval.retrievers.models import file_digest

        try:
            namespace = namespace_key(f"tokenizer:{file_digest(tokenizer_file)}", {"kind": "token_lengths"})
            store = EmbeddingStore(cache_dir, namespace)
        except (OSError, RagEvalError):
            store = None  # no cache then: counted afresh, as without one
    counts, _ = encode_missing(list(texts), count, store, write_every=_BATCH)
    lengths = counts[:, 0] if counts.ndim == 2 and counts.shape[1] else np.zeros(len(texts), dtype=np.float32)
    truncated = int(np.count_nonzero(lengths > limit))
    return {
        "max_seq_length": limit,
        "truncated": truncated,
        "passages": len(texts),
        "share": truncated / len(texts),
        "longest_tokens": int(lengths.max(initial=0)),
    }


def truncation_warning(label: str, report: dict[str, Any] | None, what: str = "passages") -> str | None:
    """One line for stderr and the report when some passages are cut, else None."""
    if not report or not report.get("truncated"):
        return None
    return (
        f"retriever {label!r}: {report['truncated']:,} of {report['passages']:,} {what} "
        f"({report['share']:.1%}) are longer than the model's {report['max_seq_length']} tokens "
        f"(longest {report['longest_tokens']:,}) and the encoder reads only their start; "
        "use smaller chunks or a model with a longer max_seq_length"
    )
