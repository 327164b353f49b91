"""The model's fast tokenizer called in Rust directly: the same token ids as transformers, as numpy arrays.

transformers' fast tokenizer wraps a ``tokenizers.Tokenizer``: each call sets the Rust
tokenizer's truncation and padding, calls its ``encode_batch``, then turns every encoding
into Python lists and the lists into tensors, all under the GIL. On an H200 host with 16 cores
that Python side held encoding to ~2,500 passages/s, while the Rust tokenizer alone made
15,000/s. :class:`RustTokens` is that Rust tokenizer, loaded from the model folder's
``tokenizer.json`` and set up once as transformers sets it up for the call
sentence-transformers makes (``padding=True, truncation="longest_first", max_length=...``):
the same truncation (length, side, strategy), special tokens (the post-processor of
``tokenizer.json``), padding (token, type id, side) and ``split_special_tokens``. Its
``encode_batch_fast`` releases the GIL; padding and attention masks are made in numpy.

It is used only where it was checked: :func:`rust_tokens` compares the file's tokenizer with
the one transformers built (normalizer, pre-tokenizer, model, post-processor, added tokens:
transformers may rewrite some from ``tokenizer_config.json``, and sentence-transformers adds a
lower-casing normalizer for ``do_lower_case``), and each backend compares the token ids,
type ids and attention masks with the transformers tokenizer's on :data:`TOKEN_PROBES`
before using it (tests/test_token_ids.py compares every passage of three corpora). Imports
numpy only; ``tokenizers`` when one is built.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rag_eval._models.embeddings.pipeline import PROBES

#: Texts the Rust path is checked on against transformers before it is used: the export probes and
#: what differs between tokenizers (spaces at the ends, control and zero-width characters, the special
#: tokens written out, case folding, scripts without spaces, a word too long for WordPiece, long texts).
TOKEN_PROBES = (
    *PROBES,
    "  leading and trailing spaces  ",
    "tab\tand\nnewlines\r\nand\u00a0no-break space",
    "[CLS] [SEP] [PAD] [MASK] [UNK] <s> </s> <pad> written out",
    "zero\u200bwidth, soft\u00adhyphen, nul \x00 bell \x07 and \ufeff",
    "ÅNGSTRÖM İstanbul ǅungla ﬁnance Straße ΣΊΣΥΦΟΣ",
    "emoji 😀👍🏽 flags 🇫🇷🇯🇵 and 👨‍👩‍👧 families",
    "한국어 문장, العربية، हिन्दी वाक्य, ภาษาไทย",
    "x" * 400,
    " ".join(f"word{i} and another-token, {i * 7} times" for i in range(200)),
)

#: (query, passage) pairs the cross-encoder's Rust path is checked on: longest-first truncation of pairs.
PAIR_PROBES = tuple(
    (query, passage)
    for query in ("", "what is the largest ocean?", TOKEN_PROBES[-1][:1500])
    for passage in (TOKEN_PROBES[2], TOKEN_PROBES[4], TOKEN_PROBES[-1], TOKEN_PROBES[7])
)

# The parts of a tokenizer (``tokenizers`` JSON) that make tokens; truncation and padding are set per call.
_TOKEN_PARTS = ("normalizer", "pre_tokenizer", "model", "post_processor", "added_tokens")


def same_tokens(mine: str, theirs: str | None) -> bool:
    """Whether two tokenizers (``tokenizers`` JSON) make the same tokens: truncation and padding aside."""
    if theirs is None:
        return False
    try:
        a, b = json.loads(mine), json.loads(theirs)
    except ValueError:
        return False
    return all(a.get(part) == b.get(part) for part in _TOKEN_PARTS)


@dataclass
class TokenArrays:
    """A batch of tokenised texts, padded as transformers pads them (int64, one row per text).

    ``counts``: each text's token count before truncation (special tokens included), when asked for.
    """

    input_ids: np.ndarray
    attention_mask: np.ndarray
    token_type_ids: np.ndarray | None = None
    counts: np.ndarray | None = None

    def features(self) -> dict[str, np.ndarray]:
        """The model's inputs by name (``token_type_ids`` only when the model takes them)."""
        found = {"input_ids": self.input_ids, "attention_mask": self.attention_mask}
        if self.token_type_ids is not None:
            found["token_type_ids"] = self.token_type_ids
        return found

    @property
    def width(self) -> int:
        """Tokens per row (the longest text of the batch)."""
        return int(self.input_ids.shape[1])


class RustTokens:
    """The model's ``tokenizers.Tokenizer`` set up as transformers calls it: ids, type ids and masks in numpy.

    Safe to call from several threads at once: it is configured once and never changed
    afterwards (a transformers tokenizer changes its Rust tokenizer on every call, which is
    why that one refuses concurrent calls).
    """

    def __init__(
        self,
        tokenizer: Any,
        *,
        source: str,
        max_length: int | None,
        pad_id: int,
        pad_type_id: int,
        pad_left: bool,
        type_ids: bool,
    ) -> None:
        self.tokenizer = tokenizer
        #: Where the tokenizer came from, for the encoder's description.
        self.source = source
        self.max_length = max_length
        self.pad_id = pad_id
        self.pad_type_id = pad_type_id
        self.pad_left = pad_left
        self.type_ids = type_ids  # the model takes token_type_ids
        self.specials = tokenizer.num_special_tokens_to_add(False)
        # The type id every token of a single text gets, when the post-processor gives them all one
        # (BERT: 0): filled in numpy instead of read from each encoding's list, under the GIL.
        self.single_type_id = single_type_id(tokenizer.to_str())
        # encode_batch_fast (tokenizers >= 0.21) skips the character offsets, which no caller here reads.
        self._encode = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)

    def to_str(self) -> str:
        """The tokenizer as ``tokenizers`` JSON (what counted the tokens, for the truncation report)."""
        return str(self.tokenizer.to_str())

    def encodings(self, items: Sequence[str] | Sequence[tuple[str, str]]) -> list[Any]:
        """The Rust encodings of ``items`` (texts, or (query, passage) pairs), truncated; the GIL is released."""
        return list(self._encode(list(items)))

    def encode(self, items: Sequence[str] | Sequence[tuple[str, str]], *, count: bool = False) -> TokenArrays:
        """``items`` tokenised and padded to the longest (``padding=True``), as the transformers tokenizer returns them."""
        pairs = bool(items) and not isinstance(items[0], str)
        return self.arrays(self.encodings(items), count=count, pairs=pairs)

    def arrays(self, encodings: Sequence[Any], *, count: bool = False, pairs: bool = True) -> TokenArrays:
        """Padded arrays of ``encodings``; ``count``: also each one's token count before truncation.

        ``pairs``: whether they encode (query, passage) pairs, whose type ids differ by part (read
        from each encoding); single texts take the post-processor's one type id where it has one.
        """
        rows = len(encodings)
        lengths = np.fromiter(map(len, encodings), dtype=np.int64, count=rows)  # len() makes no list
        width = int(lengths.max(initial=0))
        columns = np.arange(width)
        mask = columns >= (width - lengths)[:, None] if self.pad_left else columns < lengths[:, None]
        input_ids = np.full((rows, width), self.pad_id, dtype=np.int64)
        type_ids = None
        constant = None if pairs else self.single_type_id
        read_types = self.type_ids and constant is None
        if self.type_ids:
            type_ids = np.where(mask, self.pad_type_id if constant is None else constant, self.pad_type_id)
            type_ids = type_ids.astype(np.int64)
        # Row by row from each encoding's list: measured faster than one flat array scattered by the mask
        # (the lists are made under the GIL; this is most of the Python time per text).
        for row, (encoding, length) in enumerate(zip(encodings, lengths.tolist())):
            span = slice(width - length, width) if self.pad_left else slice(0, length)
            input_ids[row, span] = encoding.ids
            if read_types and type_ids is not None:
                type_ids[row, span] = encoding.type_ids
        counts = self.untruncated(encodings, lengths) if count else None
        return TokenArrays(input_ids, mask.astype(np.int64), type_ids, counts)

    def untruncated(self, encodings: Sequence[Any], lengths: np.ndarray) -> np.ndarray:
        """Each encoding's token count before truncation, from the pieces truncation moved out.

        Truncation (stride 0) puts the tokens past the limit into ``overflowing`` pieces, each
        with the special tokens added again: the count is the kept tokens plus every piece's,
        less its repeated special tokens. Only rows at the limit can have been cut.
        """
        counts = lengths.copy()
        if self.max_length is None:
            return counts
        for row in np.flatnonzero(lengths >= self.max_length).tolist():
            counts[row] += sum(len(piece) - self.specials for piece in encodings[row].overflowing)
        return counts

    def lists(self, items: Sequence[str] | Sequence[tuple[str, str]]) -> dict[str, list[list[int]]]:
        """Unpadded token ids (and type ids when the model takes them), as lists: the exported graphs' input."""
        encodings = self.encodings(items)
        found = {"input_ids": [encoding.ids for encoding in encodings]}
        if self.type_ids:
            found["token_type_ids"] = [encoding.type_ids for encoding in encodings]
        return found


def single_type_id(tokenizer_json: str) -> int | None:
    """The type id the post-processor gives every token of a single text, or None when it may give several.

    ``TemplateProcessing``: the type ids of its ``single`` template, when they are all one;
    ``BertProcessing`` and ``RobertaProcessing``: 0; no post-processor: 0 (the model's tokens
    have type id 0); any other: None (read from each encoding).
    """
    try:
        processor = json.loads(tokenizer_json).get("post_processor")
    except ValueError:
        return None
    if processor is None:
        return 0
    kind = processor.get("type") if isinstance(processor, dict) else None
    if kind in ("BertProcessing", "RobertaProcessing"):
        return 0
    if kind != "TemplateProcessing":
        return None
    found = {
        part["type_id"]
        for item in processor.get("single") or []
        for part in item.values()
        if isinstance(part, dict) and isinstance(part.get("type_id"), int)
    }
    return found.pop() if len(found) == 1 else None


def rust_tokens(tokenizer: Any, max_length: int | None, type_ids: bool) -> RustTokens | None:
    """A :class:`RustTokens` doing what ``tokenizer`` (a transformers fast tokenizer) does when called with
    ``truncation="longest_first", max_length=max_length, padding=True``, or None when it has no Rust tokenizer.

    The Rust tokenizer is read from ``tokenizer.json`` in the folder the tokenizer was loaded from
    when that file makes the same tokens as the one transformers built, else copied from
    transformers' own (``source`` says which). Check the result against the tokenizer with
    :func:`same_as_transformers` before use.
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or not getattr(tokenizer, "is_fast", False) or tokenizer.pad_token_id is None:
        return None  # a slow (Python) tokenizer, or no padding token: transformers' padding=True would fail too
    from tokenizers import Tokenizer

    built = backend.to_str()
    rust, source = None, "transformers' tokenizer as loaded (no tokenizer.json)"
    file = Path(str(getattr(tokenizer, "name_or_path", "") or "")) / "tokenizer.json"
    try:
        if file.is_file():
            candidate = Tokenizer.from_file(str(file))
            if same_tokens(candidate.to_str(), built):
                rust, source = candidate, str(file)
            else:  # e.g. sentence-transformers' do_lower_case, or tokenizer_config.json's strip_accents
                source = "transformers' tokenizer as loaded (tokenizer.json differs)"
        if rust is None:
            rust = Tokenizer.from_str(built)
    except Exception:  # a tokenizer file this tokenizers release cannot read: the caller keeps transformers
        return None
    rust.no_padding()  # padded in numpy, to the batch's longest (transformers' padding=True)
    if max_length is None or max_length >= 1_000_000_000:  # transformers' "no limit" (VERY_LARGE_INTEGER)
        rust.no_truncation()
        max_length = None
    else:
        rust.enable_truncation(
            max_length, stride=0, strategy="longest_first", direction=getattr(tokenizer, "truncation_side", "right")
        )
    rust.encode_special_tokens = bool(getattr(tokenizer, "split_special_tokens", False))
    return RustTokens(
        rust,
        source=source,
        max_length=max_length,
        pad_id=int(tokenizer.pad_token_id),
        pad_type_id=int(getattr(tokenizer, "pad_token_type_id", 0) or 0),
        pad_left=getattr(tokenizer, "padding_side", "right") == "left",
        type_ids=type_ids,
    )


def same_as_transformers(theirs: dict[str, Any], ours: TokenArrays) -> bool:
    """Whether the transformers tokenizer's padded output (tensors or arrays by name) equals ours, key for key."""
    mine = ours.features()
    if set(theirs) != set(mine):
        return False
    return all(np.array_equal(np.asarray(_numpy(theirs[key])), mine[key]) for key in mine)


def same_lists(theirs: dict[str, Any], ours: dict[str, list[list[int]]], keys: Iterable[str]) -> bool:
    """Whether unpadded token lists agree for every key in ``keys`` (the exported graphs' inputs)."""
    return all(list(map(list, theirs.get(key) or [])) == ours.get(key, []) for key in keys)


def _numpy(value: Any) -> Any:
    to_numpy = getattr(value, "numpy", None)  # a torch tensor on the CPU
    return to_numpy() if callable(to_numpy) else value
