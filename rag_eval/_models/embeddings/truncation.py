"""How many passages an encoder silently cuts: token counts against the model's maximum sequence length.

A sentence-transformers model reads at most ``max_seq_length`` tokens (256 for
all-MiniLM-L6-v2) and drops the rest without a word, so an 800-token chunk is
scored on its first third. The count uses the model's own fast tokenizer
(``tokenizer.json``, read by the ``tokenizers`` package: no torch, no download)
with its special tokens, as the encoder sees the text (``max_seq_length`` counts them
too). Chunk sizes and the report's chunk lengths count text tokens only
(rag_eval._models.chunking.tokenizers), so the summary also says how many special
tokens the encoder adds: the warning's "longest 403" is "401 tokens of text" there.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rag_eval._core.errors import RagEvalError
from rag_eval._models.embeddings.fast_tokens import same_tokens
from rag_eval._models.embeddings.incremental import encode_missing
from rag_eval._models.embeddings.store import EmbeddingStore, namespace_key, text_key
from rag_eval._models.files import file_digest

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


class TokenCounter:
    """Token counts of texts as the model's own tokenizer makes them (special tokens included).

    Picklable (the Ray engine sends one to each encoder actor; the tokenizer and the store
    are made where it is used). With ``cache_dir``, each text's count is kept in the
    per-passage store, keyed by the tokenizer file's hash and the text, so a rerun tokenises
    only new texts: re-tokenising a whole corpus took longer than encoding the one passage edited.
    """

    def __init__(self, folder: Path | None, configured: int | None = None, cache_dir: Path | None = None) -> None:
        self.tokenizer_file = folder / "tokenizer.json" if folder is not None else None
        self.limit = model_max_length(folder, configured) if folder is not None else None
        self.cache_dir = cache_dir
        self._tokenizer: Any = None
        self._store: Any = None
        self._loaded = False
        self._memo: dict[str, int] = {}  # recorded counts, when there is no store to keep them
        self._trusted: bool | None = None  # whether recorded counts agree with this counter's own

    @property
    def available(self) -> bool:
        """Whether counts can be made: a known limit and a tokenizer file that loads."""
        return self._load() is not None

    @property
    def special_tokens(self) -> int | None:
        """Tokens the tokenizer adds to every text ([CLS] and [SEP]: 2), counted in :meth:`lengths`; None: unknown."""
        tokenizer = self._load()
        if tokenizer is None:
            return None
        return len(tokenizer.encode("").ids)  # an empty text is its special tokens only

    def lengths(self, texts: Sequence[str]) -> np.ndarray | None:
        """The token count of each text (int64), or None when the tokenizer is unknown or unreadable.

        Texts whose counts were recorded (:meth:`record`) are not tokenised again.
        """
        if self._load() is None:
            return None

        texts = list(texts)
        if self._memo:
            known = [self._memo.get(text) for text in texts]
            fresh = iter(self._counts([text for text, length in zip(texts, known) if length is None]).tolist())
            return np.asarray([next(fresh) if length is None else length for length in known], dtype=np.int64)
        counts, _ = encode_missing(texts, self._count_column, self._store, write_every=_BATCH)
        if counts.ndim != 2 or not counts.shape[1]:
            return np.zeros(len(texts), dtype=np.int64)
        return counts[:, 0].astype(np.int64)

    def record(self, texts: Sequence[str], lengths: np.ndarray, tokenizer_json: str | None) -> None:
        """Keep counts an encoder made as a by-product (``Encoder.last_token_lengths``), if they are this counter's.

        ``tokenizer_json``: the tokenizer that counted them (``Encoder.counting_tokenizer``). They are
        kept only when it is this counter's tokenizer.json in every part that makes tokens
        (transformers may rewrite the normalizer from tokenizer_config.json, say, and such counts
        would differ on some texts only), and when they agree with this counter's own on the
        longest texts of the first call.
        """
        if self._load() is None or not len(texts):
            return
        if self._trusted is None:
            sample = sorted(range(len(texts)), key=lambda i: -len(texts[i]))[:8]
            own = self._counts([texts[i] for i in sample])
            self._trusted = same_tokens(self._tokenizer.to_str(), tokenizer_json) and own.tolist() == [
                int(lengths[i]) for i in sample
            ]
        if not self._trusted:
            return
        if self._store is None:
            self._memo.update(zip(texts, (int(length) for length in lengths)))
            return

        column = np.asarray(lengths, dtype=np.float32).reshape(-1, 1)
        for start in range(0, len(texts), _BATCH):
            self._store.put([text_key(text) for text in texts[start : start + _BATCH]], column[start : start + _BATCH])

    def _counts(self, texts: list[str]) -> np.ndarray:
        """Token counts (int64) by this counter's own tokenizer (loaded)."""
        if not texts:
            return np.empty(0, dtype=np.int64)
        return self._count_column(texts)[:, 0].astype(np.int64)

    def _count_column(self, batch: list[str]) -> np.ndarray:
        tokenizer = self._load()
        # encode_batch_fast (tokenizers >= 0.21) skips the character offsets, which a count does not need.
        encode = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)
        lengths = [len(encoding.ids) for encoding in encode(batch)]
        return np.asarray(lengths, dtype=np.float32).reshape(-1, 1)  # float32 holds counts exactly up to 2**24

    def _load(self) -> Any:
        if self._loaded:
            return self._tokenizer
        self._loaded = True
        if self.limit is None or self.tokenizer_file is None or not self.tokenizer_file.is_file():
            return None
        try:
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(self.tokenizer_file))
        except Exception:  # an unreadable or foreign tokenizer file: no report, never a failed run
            return None
        tokenizer.no_truncation()
        tokenizer.no_padding()
        if self.cache_dir is not None:
            try:
                namespace = namespace_key(f"tokenizer:{file_digest(self.tokenizer_file)}", {"kind": "token_lengths"})
                self._store = EmbeddingStore(self.cache_dir, namespace)
            except (OSError, RagEvalError):
                self._store = None  # no cache then: counted afresh, as without one
        self._tokenizer = tokenizer
        return tokenizer

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_tokenizer": None, "_store": None, "_loaded": False, "_memo": {}}


def truncation_summary(
    limit: int | None, lengths: np.ndarray | None, special_tokens: int | None = None
) -> dict[str, Any] | None:
    """``{"max_seq_length", "truncated", "passages", "share", "longest_tokens"[, "special_tokens"]}`` or None.

    Counts include the encoder's special tokens, as ``max_seq_length`` does; ``special_tokens``
    (when known) says how many, so a reader can compare with text-token counts. None when the
    limit or the counts are unknown, or there are no texts: the report then says nothing rather
    than something wrong.
    """
    if limit is None or lengths is None or not len(lengths):
        return None
    truncated = int(np.count_nonzero(lengths > limit))
    summary: dict[str, Any] = {
        "max_seq_length": limit,
        "truncated": truncated,
        "passages": len(lengths),
        "share": truncated / len(lengths),
        "longest_tokens": int(lengths.max(initial=0)),
    }
    if special_tokens is not None:
        summary["special_tokens"] = special_tokens
    return summary


def truncation_report(
    folder: Path | None, texts: Sequence[str], configured: int | None = None, cache_dir: Path | None = None
) -> dict[str, Any] | None:
    """The truncation summary of ``texts`` (:func:`truncation_summary`), counted by :class:`TokenCounter`.

    None when the model has no folder, no ``tokenizer.json`` or no known limit.
    """
    if folder is None or not texts:
        return None
    counter = TokenCounter(folder, configured, cache_dir)
    return truncation_summary(counter.limit, counter.lengths(texts), counter.special_tokens)


def truncation_warning(label: str, report: dict[str, Any] | None, what: str = "passages") -> str | None:
    """One line for stderr and the report when some passages are cut, else None."""
    if not report or not report.get("truncated"):
        return None
    longest = f"longest {report['longest_tokens']:,}"
    special = report.get("special_tokens")
    if isinstance(special, int) and special > 0:
        # The chunking table counts text tokens: say both, so 403 here is 401 there.
        longest += (
            f": {report['longest_tokens'] - special:,} tokens of text and the {special} special "
            f"token{'s' if special != 1 else ''} the encoder adds"
        )
    return (
        f"retriever {label!r}: {report['truncated']:,} of {report['passages']:,} {what} "
        f"({report['share']:.1%}) are longer than the model's {report['max_seq_length']} tokens "
        f"({longest}) and the encoder reads only their start; "
        "use smaller chunks or a model with a longer max_seq_length"
    )
