"""The keys of the embedding store held packed: 32 raw bytes a key where a 64-digit hex string takes 113.

A key is :func:`rag_eval._models.embeddings.store.text_key`, the sha256 hex of a text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

KEY_BYTES = 32
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


class PackedKeys(Sequence[str]):
    """Store keys held as raw 32-byte digests: 32 bytes a key, where a 64-digit hex str takes 113.

    A sequence of the hex keys (``keys[i]`` is ``text_key(...)``; a slice is PackedKeys again;
    equal to any sequence of the same hex keys), for the driver of a run over millions of
    passages, which holds a key per row while searching. The store reads it without converting.
    """

    __slots__ = ("digests",)

    def __init__(self, digests: np.ndarray) -> None:
        self.digests = np.ascontiguousarray(digests, dtype="S32")

    @classmethod
    def from_hex(cls, keys: Sequence[str]) -> PackedKeys:
        """Packed from hex keys (ValueError for anything that is not 64 hex digits)."""
        return cls(to_digests(keys))

    def __len__(self) -> int:
        return len(self.digests)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return PackedKeys(self.digests[index])
        position = index + len(self.digests) if index < 0 else index
        if not 0 <= position < len(self.digests):
            raise IndexError(f"key {index} of {len(self.digests)}")
        # A slice of one, not digests[i]: numpy strips the trailing zero bytes of an S32 element.
        return self.digests[position : position + 1].tobytes().hex()

    def __iter__(self) -> Any:
        step = 65536  # hex strings made a block at a time, never all at once
        for start in range(0, len(self.digests), step):
            yield from to_hex(self.digests[start : start + step])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PackedKeys):
            return bool(np.array_equal(self.digests, other.digests))
        return isinstance(other, Sequence) and not isinstance(other, str) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PackedKeys({len(self):,} keys)"


def to_digests(keys: Sequence[str]) -> np.ndarray:
    """Hex keys as an (n,) S32 array of raw digests; ValueError for anything that is not 64 hex digits."""
    if isinstance(keys, PackedKeys):
        return keys.digests
    raw = b""
    if all(isinstance(key, str) and len(key) == 64 for key in keys):
        try:
            raw = bytes.fromhex("".join(keys))
        except ValueError:
            pass
    if len(raw) != KEY_BYTES * len(keys):  # fromhex skips spaces: a short result means a bad key too
        bad = next(k for k in keys if not (isinstance(k, str) and len(k) == 64 and set(k) <= _HEX_DIGITS))
        raise ValueError(f"embedding store keys are sha256 hex digests (text_key()), got {bad!r}")
    return np.frombuffer(raw, dtype="S32").copy() if keys else np.empty(0, dtype="S32")


def to_hex(digests: np.ndarray) -> list[str]:
    """An (n,) S32 array of raw digests as hex keys (the inverse of :func:`to_digests`)."""
    raw = digests.tobytes()
    return [raw[i : i + KEY_BYTES].hex() for i in range(0, len(raw), KEY_BYTES)]
