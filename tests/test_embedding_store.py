"""The per-passage embedding store and encode_missing: exact round trips, damage, retries, concurrency."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

from rag_eval._models.embeddings.incremental import encode_missing
from rag_eval._models.embeddings.keys import PackedKeys
from rag_eval._models.embeddings.store import EmbeddingCacheWarning, EmbeddingStore, namespace_key, text_key

TEXTS = [f"passage number {i} about the ocean" for i in range(10)]
# magic (8) + length (4) + the header JSON (~120 bytes with its sha256), padded to a multiple of 64
HEADER = 192


def fake_vector(text: str, dim: int = 6) -> np.ndarray:
    """A vector that depends on the text only (so any two encodings of a text agree bit for bit)."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(dim).astype(np.float32)


class FakeEncoder:
    """Counts the texts it encodes; raises after ``fail_after`` calls (a run killed mid-encoding)."""

    def __init__(self, fail_after: int | None = None) -> None:
        self.calls: list[int] = []
        self.fail_after = fail_after

    def __call__(self, texts: list[str]) -> np.ndarray:
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise KeyboardInterrupt("killed")
        self.calls.append(len(texts))
        return np.stack([fake_vector(t) for t in texts])


def expected(texts) -> np.ndarray:
    return np.stack([fake_vector(t) for t in texts])


def store_at(tmp_path: Path, namespace: str = "ns") -> EmbeddingStore:
    return EmbeddingStore(tmp_path, namespace)


def batch_shard(tmp_path: Path, texts, namespace: str = "ns") -> Path:
    """The shard a batch of texts is written to, named independently: sha256 of the sorted hex keys."""
    name = hashlib.sha256("\n".join(sorted(text_key(t) for t in texts)).encode()).hexdigest()
    return tmp_path / "passages" / namespace / f"{name}.emb"


# --------------------------------------------------------------------------- keys


def test_text_key_is_the_sha256_of_the_exact_utf8():
    assert text_key("passage: é") == hashlib.sha256("passage: é".encode()).hexdigest()
    assert text_key("a") != text_key("a ") != text_key(" a")
    assert len(text_key("\ud800")) == 64  # a lone surrogate (valid in JSON) still has a key


def test_namespace_key_covers_model_and_every_option():
    options = {"kind": "passage", "normalize": True, "max_seq_length": None, "backend": "torch"}
    key = namespace_key("m1", options)
    assert key == namespace_key("m1", dict(reversed(list(options.items()))))  # order-free
    assert (
        len(
            {
                key,
                namespace_key("m2", options),
                namespace_key("m1", {**options, "normalize": False}),
                namespace_key("m1", {**options, "backend": "onnx"}),
                namespace_key("m1", {**options, "kind": "query"}),
                namespace_key("m1", {**options, "max_seq_length": 128}),
            }
        )
        == 6
    )


# --------------------------------------------------------------------------- the store


def test_round_trip_is_exact_bytes_and_survives_reopening(tmp_path):
    keys = [text_key(t) for t in TEXTS[:4]]
    vectors = np.array(
        [[0.1, -0.0, 1e-45, 3.4e38], [np.pi, -np.e, 1 / 3, 2**-20], [1, 2, 3, 4], [-1e-38, 0.5, 0.25, 7]],
        dtype=np.float32,
    )
    store = store_at(tmp_path)
    store.put(keys, vectors)
    wanted = [keys[2], text_key("never stored"), keys[0], keys[3], keys[1]]
    for reader in (store, store_at(tmp_path)):  # this instance, then a fresh one (a new process)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a clean read never warns
            got, found = reader.get(wanted)
        assert found.tolist() == [True, False, True, True, True]
        assert got.dtype == np.float32 and got.shape == (5, 4)
        assert got[[0, 2, 3, 4]].tobytes() == vectors[[2, 0, 3, 1]].tobytes()  # bit for bit, -0.0 and denormal too
        assert got[1].tolist() == [0.0] * 4
        assert len(reader) == 4
    shard = batch_shard(tmp_path, TEXTS[:4])
    assert store.shard_paths() == [shard]
    assert sorted(os.listdir(shard.parent)) == [shard.name]  # no temporary files left
    assert shard.stat().st_size == HEADER + 4 * 32 + 4 * 4 * 4  # header block, keys, vectors


def test_an_empty_store_has_no_dim(tmp_path):
    got, found = store_at(tmp_path).get([text_key("x"), text_key("y")])
    assert got.shape == (2, 0) and found.tolist() == [False, False]
    assert len(store_at(tmp_path)) == 0 and store_at(tmp_path).shard_paths() == []


def test_the_same_batch_put_twice_leaves_one_shard(tmp_path):
    keys = [text_key(t) for t in TEXTS[:3]]
    vectors = expected(TEXTS[:3])
    store = store_at(tmp_path)
    store.put(keys, vectors)
    store.put(keys, vectors)  # a retried worker
    store_at(tmp_path).put(keys[::-1], vectors[::-1])  # the same batch in another order, from another process
    assert len(os.listdir(tmp_path / "passages" / "ns")) == 1
    got, found = store_at(tmp_path).get(keys)
    assert found.all() and got.tobytes() == vectors.tobytes()
    assert len(store_at(tmp_path)) == 3


def test_overlapping_shards_count_each_key_once(tmp_path):
    store = store_at(tmp_path)
    store.put([text_key(t) for t in TEXTS[:4]], expected(TEXTS[:4]))
    store.put([text_key(t) for t in TEXTS[2:7]], expected(TEXTS[2:7]))
    assert len(store) == 7 and len(store.shard_paths()) == 2
    got, found = store_at(tmp_path).get([text_key(t) for t in TEXTS[:7]])
    assert found.all() and got.tobytes() == expected(TEXTS[:7]).tobytes()


def test_a_shard_written_by_another_process_after_opening_is_seen(tmp_path):
    reader = store_at(tmp_path)
    assert reader.get([text_key(TEXTS[0])])[1].tolist() == [False]
    store_at(tmp_path).put([text_key(TEXTS[0])], expected(TEXTS[:1]))
    got, found = reader.get([text_key(TEXTS[0])])
    assert found.tolist() == [True] and got.tobytes() == expected(TEXTS[:1]).tobytes()


def test_keys_must_be_sha256_hex(tmp_path):
    store = store_at(tmp_path)
    for bad in ["abc", "g" * 64, " " * 2 + "a" * 62, text_key("x").upper()[:63] + " "]:
        with pytest.raises(ValueError, match="sha256 hex digests"):
            store.get([text_key("ok"), bad])
    with pytest.raises(ValueError, match="3 keys but vectors of shape"):
        store.put([text_key(t) for t in TEXTS[:3]], np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match="plain name"):
        EmbeddingStore(tmp_path, "../escape")


def test_an_unwritable_store_warns_and_the_run_goes_on(tmp_path):
    (tmp_path / "passages").write_text("a file where the folder should be")  # fails even as root
    store = store_at(tmp_path)
    encoder = FakeEncoder()
    with pytest.warns(EmbeddingCacheWarning) as caught:
        got, counts = encode_missing(TEXTS[:3], encoder, store)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2 and "cannot list embedding store" in messages[0] and "Not a directory" in messages[0]
    assert "could not write embedding shard" in messages[1] and "these 3 embeddings are not cached" in messages[1]
    assert counts == {"reused": 0, "encoded": 3, "duplicates": 0}
    assert got.tobytes() == expected(TEXTS[:3]).tobytes()


def test_compact_merges_small_shards_keeping_every_vector(tmp_path):
    store = store_at(tmp_path)
    encode_missing(TEXTS, FakeEncoder(), store, write_every=2)
    assert len(store.shard_paths()) == 5
    assert store.compact(target_rows=100) == 5
    assert len(store.shard_paths()) == 1 and len(store) == 10
    fresh = store_at(tmp_path)
    got, found = fresh.get([text_key(t) for t in TEXTS])
    assert found.all() and got.tobytes() == expected(TEXTS).tobytes()
    assert store.compact(target_rows=100) == 0  # one shard: nothing to merge


# --------------------------------------------------------------------------- damage


def _flip(offset_from_end: int):
    def damage(path: Path) -> None:
        data = bytearray(path.read_bytes())
        data[len(data) - offset_from_end] ^= 0x01
        path.write_bytes(bytes(data))

    return damage


def _flip_at(offset: int):
    def damage(path: Path) -> None:
        data = bytearray(path.read_bytes())
        data[offset] ^= 0x01
        path.write_bytes(bytes(data))

    return damage


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


DAMAGE = {
    "a flipped vector byte": (_flip(1), "checksum mismatch"),
    "a flipped key byte": (_flip_at(HEADER + 5), "keys do not match its name"),
    "a flipped header byte": (_flip_at(20), "unreadable header|is not format"),
    "truncated": (lambda p: p.write_bytes(p.read_bytes()[:-80]), r"has 336 bytes, its header says 416 \(truncated or"),
    "appended to": (lambda p: p.write_bytes(p.read_bytes() + b"\0"), "truncated or appended to"),
    "emptied": (lambda p: p.write_bytes(b""), "bad magic bytes"),
    "a FIFO": (_fifo, r"is a FIFO \(named pipe\), not a regular file"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_shard_is_skipped_with_a_warning_and_re_encoded(tmp_path, damage):
    if damage == "a FIFO" and not hasattr(os, "mkfifo"):
        pytest.skip("needs FIFOs")
    first = FakeEncoder()
    _, counts = encode_missing(TEXTS, first, store_at(tmp_path), write_every=4)
    assert first.calls == [4, 4, 2] and counts == {"reused": 0, "encoded": 10, "duplicates": 0}
    shard = batch_shard(tmp_path, TEXTS[4:8])  # 4 texts, 6 dims: 192 + 4 x 32 + 4 x 6 x 4 = 416 bytes
    assert shard.stat().st_size == 416
    do, match = DAMAGE[damage]
    do(shard)

    again = FakeEncoder()
    with pytest.warns(EmbeddingCacheWarning, match=match) as caught:
        got, counts = encode_missing(TEXTS, again, store_at(tmp_path), write_every=4)  # returns: a FIFO is not read
    assert str(shard) in str(caught[0].message) and "re-encoded" in str(caught[0].message)
    assert counts == {"reused": 6, "encoded": 4, "duplicates": 0} and again.calls == [4]
    assert got.tobytes() == expected(TEXTS).tobytes()
    assert shard.is_file() and shard.stat().st_size == 416  # rewritten whole under its name

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the rewritten shard is sound: no warning, nothing encoded
        _, counts = encode_missing(TEXTS, FakeEncoder(), store_at(tmp_path), write_every=4)
    assert counts == {"reused": 10, "encoded": 0, "duplicates": 0}


def test_a_folder_in_a_shards_place_is_skipped_not_removed(tmp_path):
    encode_missing(TEXTS, FakeEncoder(), store_at(tmp_path), write_every=4)
    shard = batch_shard(tmp_path, TEXTS[:4])
    shard.unlink()
    shard.mkdir()
    store = store_at(tmp_path)
    with pytest.warns(EmbeddingCacheWarning) as caught:
        _, counts = encode_missing(TEXTS, FakeEncoder(), store, write_every=4)
    messages = [str(w.message) for w in caught]
    assert counts == {"reused": 6, "encoded": 4, "duplicates": 0}
    assert len(messages) == 2 and "is a folder, not a regular file" in messages[0]
    assert "could not write embedding shard" in messages[1] and "Is a directory" in messages[1]  # still in the way
    assert shard.is_dir() and len(store) == 6


def test_a_damaged_shard_found_after_opening_is_dropped_on_get(tmp_path):
    """Checksums are verified on the first read, not on opening: damage between the two is still caught."""
    store = store_at(tmp_path)
    store.put([text_key(t) for t in TEXTS[:3]], expected(TEXTS[:3]))
    reader = store_at(tmp_path)
    assert len(reader) == 3  # indexed: header and keys read, vectors not yet
    shard = batch_shard(tmp_path, TEXTS[:3])
    data = bytearray(shard.read_bytes())
    data[-1] ^= 0x80
    shard.write_bytes(bytes(data))
    with pytest.warns(EmbeddingCacheWarning, match="checksum mismatch"):
        got, found = reader.get([text_key(t) for t in TEXTS[:3]])
    assert found.tolist() == [False] * 3 and got.shape[0] == 3
    assert len(reader) == 0 and not shard.exists()


# --------------------------------------------------------------------------- encode_missing


def test_encode_missing_encodes_only_distinct_missing_texts(tmp_path):
    store = store_at(tmp_path)
    encode_missing(TEXTS[:5], FakeEncoder(), store)
    texts = [*TEXTS[3:8], TEXTS[7], TEXTS[0], TEXTS[7]]  # 3 stored, 3 new (TEXTS[7] three times)
    encoder = FakeEncoder()
    done: list[int] = []
    got, counts = encode_missing(texts, encoder, store, write_every=2, progress=done.append)
    assert counts == {"reused": 3, "encoded": 3, "duplicates": 2}
    assert encoder.calls == [2, 1] and done == [2, 1]
    assert got.tobytes() == expected(texts).tobytes()
    assert len(store) == 8


def test_without_a_store_every_distinct_text_is_encoded_and_nothing_written(tmp_path):
    encoder = FakeEncoder()
    got, counts = encode_missing([*TEXTS[:3], TEXTS[0]], encoder, None, write_every=2)
    assert counts == {"reused": 0, "encoded": 3, "duplicates": 1} and encoder.calls == [2, 1]
    assert got.tobytes() == expected([*TEXTS[:3], TEXTS[0]]).tobytes()
    empty, counts = encode_missing([], encoder, None)
    assert empty.shape == (0, 0) and counts == {"reused": 0, "encoded": 0, "duplicates": 0}


def test_write_every_may_be_decided_once_something_is_missing(tmp_path):
    # The dense retriever decides it by the device, which needs the model: asked only when encoding.
    asked: list[int] = []

    def every() -> int:
        asked.append(1)
        return 2

    encoder = FakeEncoder()
    encode_missing(TEXTS[:5], encoder, store_at(tmp_path), write_every=every)
    assert asked == [1] and encoder.calls == [2, 2, 1]
    _, counts = encode_missing(TEXTS[:5], FakeEncoder(), store_at(tmp_path), write_every=every)
    assert asked == [1] and counts["encoded"] == 0  # a full hit never asks (never loads a model)
    with pytest.raises(ValueError, match="write_every must be >= 1, got 0"):
        encode_missing(TEXTS[5:6], FakeEncoder(), store_at(tmp_path), write_every=lambda: 0)


def test_a_run_killed_mid_encoding_loses_only_the_batch_in_flight(tmp_path):
    killed = FakeEncoder(fail_after=2)
    with pytest.raises(KeyboardInterrupt):
        encode_missing(TEXTS, killed, store_at(tmp_path), write_every=3)
    assert killed.calls == [3, 3] and len(store_at(tmp_path)) == 6  # two batches written before the kill

    rerun = FakeEncoder()
    got, counts = encode_missing(TEXTS, rerun, store_at(tmp_path), write_every=3)
    assert counts == {"reused": 6, "encoded": 4, "duplicates": 0} and rerun.calls == [3, 1]
    assert got.tobytes() == expected(TEXTS).tobytes()


def test_a_batch_is_written_while_the_next_one_encodes(tmp_path):
    # A shard's fsync can take longer than a GPU takes to encode the next batch: the write must not hold it up.
    store = store_at(tmp_path)
    next_batch_asked = threading.Event()
    real_put, waited = store.put, []

    def slow_put(keys, vectors):
        if not waited:  # the first write finishes only once the encoder has been asked for the next batch
            waited.append(next_batch_asked.wait(timeout=30))
        real_put(keys, vectors)

    store.put = slow_put
    encoder = FakeEncoder()

    def encode(texts):
        if encoder.calls:
            next_batch_asked.set()
        return encoder(texts)

    got, counts = encode_missing(TEXTS, encode, store, write_every=4)
    assert waited == [True], "the second batch was not encoded while the first one was being written"
    assert encoder.calls == [4, 4, 2] and counts == {"reused": 0, "encoded": 10, "duplicates": 0}
    assert got.tobytes() == expected(TEXTS).tobytes() and len(store_at(tmp_path)) == 10


def test_an_encoder_error_still_leaves_every_batch_before_it_written(tmp_path):
    store = store_at(tmp_path)
    real_put = store.put

    def slow_put(keys, vectors):  # still writing when the encoder fails on the next batch
        threading.Event().wait(0.2)
        real_put(keys, vectors)

    store.put = slow_put
    with pytest.raises(KeyboardInterrupt):
        encode_missing(TEXTS, FakeEncoder(fail_after=1), store, write_every=4)
    assert len(store_at(tmp_path)) == 4  # the batch encoded before the failure reached the disk


def test_a_wrong_shape_from_the_encoder_is_an_error(tmp_path):
    with pytest.raises(ValueError, match=r"encode returned shape \(2, 6\) for 3 texts"):
        encode_missing(TEXTS[:3], lambda texts: expected(texts[:2]), store_at(tmp_path))


# --------------------------------------------------------------------------- concurrency


def _writer(root: str, worker: int, batches: list[list[str]]) -> None:
    store = EmbeddingStore(root, "ns")
    for batch in batches:
        store.put([text_key(t) for t in batch], expected(batch))


def test_processes_putting_at_once_leave_every_key_readable(tmp_path):
    texts = [f"text {i}" for i in range(120)]
    batches = [texts[i : i + 8] for i in range(0, 120, 8)]  # 15 batches
    # Each worker writes its own batches and, like a retried worker, two batches another one writes too.
    plans = [batches[w::3] + batches[(w + 1) % 3 :: 3][:2] for w in range(3)]
    context = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    workers = [context.Process(target=_writer, args=(str(tmp_path), w, plan)) for w, plan in enumerate(plans)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [w.exitcode for w in workers] == [0, 0, 0]
    folder = tmp_path / "passages" / "ns"
    assert sorted(os.listdir(folder)) == sorted(batch_shard(tmp_path, b).name for b in batches)  # 15, no temporaries
    store = store_at(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got, found = store.get([text_key(t) for t in texts])
    assert found.all() and len(store) == 120
    assert got.tobytes() == expected(texts).tobytes()


def test_the_shard_header_is_plain_json(tmp_path):
    """Other tools (a Ray reader, a debugging session) can read a shard with a few lines of code."""
    store_at(tmp_path).put([text_key(t) for t in TEXTS[:2]], expected(TEXTS[:2]))
    data = batch_shard(tmp_path, TEXTS[:2]).read_bytes()
    assert data[:8] == b"RAGEMB\x00\x01"
    length = int.from_bytes(data[8:12], "little")
    header = json.loads(data[12 : 12 + length])
    assert header["count"] == 2 and header["dim"] == 6 and header["dtype"] == "<f4" and header["format"] == 2
    assert header["namespace"] == "ns"  # which encoding these vectors are: the name says only which texts
    payload = data[12 + length :]
    assert hashlib.sha256(payload).hexdigest() == header["sha256"]
    keys = sorted(text_key(t) for t in TEXTS[:2])
    assert len(data) == HEADER + 2 * 32 + 2 * 6 * 4 and 12 + length == HEADER
    assert payload[:64] == bytes.fromhex(keys[0]) + bytes.fromhex(keys[1])
    rows = np.frombuffer(payload[64:], dtype="<f4").reshape(2, 6)
    assert rows.tobytes() == expected([t for k, t in sorted((text_key(t), t) for t in TEXTS[:2])]).tobytes()


def test_packed_keys_are_the_hex_keys_at_32_bytes_each(tmp_path: Path) -> None:
    # Keys whose digests end in zero bytes too: numpy drops trailing NULs from an S32 element.
    texts = [f"passage {n}" for n in range(3000)]
    keys = [text_key(text) for text in texts]
    zero_ended = next(n for n in range(100_000) if hashlib.sha256(f"z{n}".encode()).digest().endswith(b"\0"))
    keys.append(text_key(f"z{zero_ended}"))
    packed = PackedKeys.from_hex(keys)
    assert packed.digests.nbytes == 32 * len(keys)
    assert len(packed) == len(keys) and list(packed) == keys and packed == keys
    assert packed[-1] == keys[-1] and packed[-1].endswith("00") and packed[0] == keys[0] and packed[-2] == keys[-2]
    assert packed[10:20] == keys[10:20] and isinstance(packed[10:20], PackedKeys)
    with pytest.raises(IndexError):
        packed[len(keys)]
    with pytest.raises(ValueError, match="sha256 hex digests"):
        PackedKeys.from_hex(["not a key"])
    store = EmbeddingStore(tmp_path, "ns")
    vectors = np.stack([fake_vector(text) for text in texts])
    store.put(keys[:3000], vectors)
    got, found = store.get(packed)  # read as packed, without a hex str per key
    assert found[:3000].all() and not found[3000] and np.array_equal(got[:3000], vectors)


# --------------------------------------------------------------------------- trust: what a shard proves about itself


def test_a_shard_of_another_namespace_under_the_same_name_is_a_miss_with_a_warning(tmp_path):
    """Same texts, another namespace (say max_seq_length 8): same keys, same file name, other vectors: never used."""
    encode_missing(TEXTS, lambda texts: -expected(texts), store_at(tmp_path, "foreign"), write_every=4)
    encode_missing(TEXTS, FakeEncoder(), store_at(tmp_path), write_every=4)
    for batch in (TEXTS[:4], TEXTS[4:8], TEXTS[8:]):  # copied over the same-named shards
        batch_shard(tmp_path, batch).write_bytes(batch_shard(tmp_path, batch, "foreign").read_bytes())

    again = FakeEncoder()
    with pytest.warns(EmbeddingCacheWarning, match="namespace 'foreign', not this store's 'ns'") as caught:
        got, counts = encode_missing(TEXTS, again, store_at(tmp_path), write_every=4)
    assert len(caught) == 3 and all("re-encoded" in str(w.message) for w in caught)
    assert counts == {"reused": 0, "encoded": 10, "duplicates": 0} and again.calls == [4, 4, 2]
    assert got.tobytes() == expected(TEXTS).tobytes()  # this namespace's vectors, not the copies
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # rewritten under their names: sound now
        _, counts = encode_missing(TEXTS, FakeEncoder(), store_at(tmp_path), write_every=4)
    assert counts == {"reused": 10, "encoded": 0, "duplicates": 0}


def _shard_bytes(keys, dim: int, namespace: str = "ns", rows: np.ndarray | None = None) -> bytes:
    """A shard written by hand, well formed in every other way (name, size, checksum)."""
    from rag_eval._models.embeddings.shard_file import shard_header

    digests = np.unique(PackedKeys.from_hex(keys).digests)
    vectors = np.zeros((len(digests), dim), dtype="<f4") if rows is None else rows
    payload = digests.tobytes() + vectors.tobytes()
    return shard_header(len(digests), dim, hashlib.sha256(payload).hexdigest(), namespace) + payload


def test_a_zero_dimension_shard_is_a_miss_and_does_not_break_later_runs(tmp_path):
    encode_missing(TEXTS, FakeEncoder(), store_at(tmp_path), write_every=4)
    zero = batch_shard(tmp_path, TEXTS[:4])
    zero.write_bytes(_shard_bytes([text_key(t) for t in TEXTS[:4]], 0))
    for _ in range(2):  # this run, and the next one
        encoder = FakeEncoder()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got, counts = encode_missing(TEXTS, encoder, store_at(tmp_path), write_every=4)
        assert got.tobytes() == expected(TEXTS).tobytes()
        assert sum(counts.values()) == 10
    messages = [str(w.message) for w in caught]
    assert messages == []  # the first run warned and rewrote the shard; the second finds it sound
    assert zero.stat().st_size == 416


def test_a_shard_of_another_dimension_is_a_miss_whoever_comes_first(tmp_path):
    """Every shard of a namespace holds the model's dimension; one that differs cannot decide the store's."""
    encode_missing(TEXTS, FakeEncoder(), store_at(tmp_path), write_every=4)
    odd = batch_shard(tmp_path, TEXTS[:4])
    odd.write_bytes(_shard_bytes([text_key(t) for t in TEXTS[:4]], 3))
    for _ in range(2):
        encoder = FakeEncoder()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got, counts = encode_missing(TEXTS, encoder, store_at(tmp_path), write_every=4)
        assert got.tobytes() == expected(TEXTS).tobytes(), [str(w.message) for w in caught]
        assert counts["reused"] + counts["encoded"] == 10
    assert odd.stat().st_size == 416  # rewritten with the encoder's dimension


def test_when_most_shards_have_a_wrong_dimension_the_encoders_first_batch_proves_it(tmp_path):
    encode_missing(TEXTS, FakeEncoder(), store_at(tmp_path), write_every=4)
    for batch in (TEXTS[:4], TEXTS[4:8]):  # 8 keys of dim 3 outvote the 2 of dim 6
        batch_shard(tmp_path, batch).write_bytes(_shard_bytes([text_key(t) for t in batch], 3))
    encoder = FakeEncoder()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got, counts = encode_missing(TEXTS, encoder, store_at(tmp_path), write_every=4)
    messages = [str(w.message) for w in caught]
    assert any("have dim 6, most of the store's have dim 3" in m for m in messages), messages
    assert any("its vectors have dim 3, the encoder's 6: they are not this model's" in m for m in messages), messages
    assert got.tobytes() == expected(TEXTS).tobytes()
    assert counts == {"reused": 0, "encoded": 10, "duplicates": 0} and encoder.calls == [2, 4, 4]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every shard now has the encoder's dimension
        got, counts = encode_missing(TEXTS, FakeEncoder(), store_at(tmp_path), write_every=4)
    assert counts == {"reused": 10, "encoded": 0, "duplicates": 0} and got.tobytes() == expected(TEXTS).tobytes()


def test_the_only_shard_of_another_dimension_is_dropped_when_the_models_dimension_is_known(tmp_path):
    """Nothing outvotes the only shard and nothing is missing, so no batch is encoded to contradict it:
    the caller's known dimension (the model's) drops it, with a warning, and its texts are encoded again."""
    encode_missing(TEXTS, FakeEncoder(), store_at(tmp_path), write_every=10)
    (only,) = (tmp_path / "passages" / "ns").iterdir()
    only.write_bytes(_shard_bytes([text_key(t) for t in TEXTS], 5))  # every text, one dimension short
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        got, counts = encode_missing(TEXTS, FakeEncoder(), store_at(tmp_path), write_every=10)
    assert got.shape == (10, 5) and counts["encoded"] == 0  # unknown dimension: the store's word is all there is
    assert store_at(tmp_path).dim() == 5
    encoder = FakeEncoder()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got, counts = encode_missing(TEXTS, encoder, store_at(tmp_path), write_every=10, dim=6)
    messages = [str(w.message) for w in caught]
    assert any(f"shard {only} is unusable: its vectors have dim 5, the encoder's have dim 6; removed it" in m
               for m in messages), messages
    assert got.tobytes() == expected(TEXTS).tobytes()
    assert counts == {"reused": 0, "encoded": 10, "duplicates": 0} and encoder.calls == [10]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # repaired: the next run reuses every vector, silently
        got, counts = encode_missing(TEXTS, FakeEncoder(), store_at(tmp_path), write_every=10, dim=6)
    assert counts["reused"] == 10 and got.tobytes() == expected(TEXTS).tobytes()
    assert store_at(tmp_path).dim() == 6


def test_a_ray_encoding_batch_re_encodes_texts_found_with_another_dimension(tmp_path):
    """The Ray actors' batch: texts found in shards the encoder's dimension contradicts are encoded too."""
    pytest.importorskip("pyarrow", reason="the Ray engine's batches are Arrow tables (pip install '.[ray]')")
    from rag_eval._execution.ray_engine import _EncodeBatches

    class Factory:
        def __call__(self):
            class Encoder:
                def encode(self, texts):
                    return expected(texts)

            return Encoder()

    for batch in (TEXTS[:4], TEXTS[4:8]):  # 8 keys of dim 3 outvote the encoder's 6
        path = batch_shard(tmp_path, batch)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_shard_bytes([text_key(t) for t in batch], 3))
    actor = _EncodeBatches(Factory(), str(tmp_path), "ns")
    rows = {"doc_id": np.array([f"d{i}".encode() for i in range(10)]), "text": np.array([t.encode() for t in TEXTS])}
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        table = actor(rows)
    assert table.column("status").to_pylist() == [2] * 10  # all encoded now
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got, found = store_at(tmp_path).get([text_key(t) for t in TEXTS])
    assert found.all() and got.tobytes() == expected(TEXTS).tobytes()


def test_a_ray_actor_builds_its_encoder_only_at_the_first_text_the_store_lacks(tmp_path):
    """A rerun whose store holds every passage loads no model on the workers; a miss builds it once."""
    pytest.importorskip("pyarrow", reason="the Ray engine's batches are Arrow tables (pip install '.[ray]')")
    from rag_eval._execution.ray_engine import _EncodeBatches

    built = []

    class Factory:
        def __call__(self):
            built.append(1)

            class Encoder:
                def encode(self, texts):
                    return expected(texts)

            return Encoder()

    store_at(tmp_path).put([text_key(t) for t in TEXTS[:6]], expected(TEXTS[:6]))

    def rows(texts):
        doc_ids = [f"d{i}".encode() for i in range(len(texts))]
        return {"doc_id": np.array(doc_ids), "text": np.array([t.encode() for t in texts])}

    actor = _EncodeBatches(Factory(), str(tmp_path), "ns")
    assert actor(rows(TEXTS[:3])).column("status").to_pylist() == [1, 1, 1]
    assert actor(rows(TEXTS[3:6])).column("status").to_pylist() == [1, 1, 1]
    assert built == []  # every text found: no encoder built
    assert actor(rows(TEXTS[5:8])).column("status").to_pylist() == [1, 2, 2]
    assert actor(rows(TEXTS[8:10])).column("status").to_pylist() == [2, 2]
    assert built == [1]  # built at the first miss, then kept
    got, found = store_at(tmp_path).get([text_key(t) for t in TEXTS])
    assert found.all() and got.tobytes() == expected(TEXTS).tobytes()


def test_a_ray_encoding_batch_that_cannot_be_stored_fails_the_run(tmp_path):
    """On Ray the store is how vectors reach the search: a write that fails is an error there (locally, a warning)."""
    pytest.importorskip("pyarrow", reason="the Ray engine's batches are Arrow tables (pip install '.[ray]')")
    from rag_eval._core.errors import RetrieverError
    from rag_eval._execution.ray_engine import _EncodeBatches

    (tmp_path / "passages").write_text("a file where the folder should be")
    actor = _EncodeBatches.__new__(_EncodeBatches)
    actor.store = store_at(tmp_path)
    with warnings.catch_warnings(), pytest.raises(RetrieverError, match="could not write embedding shard .*shared by all"):
        warnings.simplefilter("ignore")
        actor._put([text_key(t) for t in TEXTS[:2]], expected(TEXTS[:2]))
