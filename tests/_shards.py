"""Embedding store shards damaged on purpose, for the tests of the local and the Ray paths alike."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np


def shorten_every_vector(shard: Path) -> None:
    """The shard rewritten with each vector one dimension short: well formed (checksum, namespace), wrong size."""
    from rag_eval._models.embeddings.shard_file import shard_header

    data = shard.read_bytes()
    length = int.from_bytes(data[8:12], "little")
    header = json.loads(data[12 : 12 + length])
    count, dim = header["count"], header["dim"]
    start = 12 + length
    keys = data[start : start + 32 * count]
    vectors = np.frombuffer(data[start + 32 * count :], dtype="<f4").reshape(count, dim)
    payload = keys + np.ascontiguousarray(vectors[:, : dim - 1]).tobytes()
    shard.write_bytes(shard_header(count, dim - 1, hashlib.sha256(payload).hexdigest(), header["namespace"]) + payload)
