"""The passage-embedding cache: keys, integrity checks, and the dense adapter's use of it."""

from __future__ import annotations

import json
import os
import time
import warnings
from pathlib import Path

import _models
import numpy as np
import pytest

from rag_eval.errors import RetrieverError
from rag_eval.retrievers import embedding_cache as ec
from rag_eval.retrievers import models, registry
from rag_eval.retrievers.embedding_cache import EmbeddingCache, EmbeddingCacheWarning

CORPUS = {
    "a": {"title": "Pacific", "text": "the pacific is the largest ocean"},
    "b": {"title": "", "text": "the atlantic ocean is salt water"},
    "c": {"title": "Reef", "text": "coral reef fish live in warm sea"},
    "d": {"title": "", "text": "a whale is a deep sea mammal"},
}
QUERIES = {"q1": "largest ocean", "q2": "whale"}


# --------------------------------------------------------------------------- the store itself


def test_round_trip_and_manifest(tmp_path):
    cache = EmbeddingCache(tmp_path)
    array = np.arange(12, dtype=np.float32).reshape(4, 3) / 7
    cache.save("k1", ["a", "b", "c", "d"], array, {"model": "m"})
    array_path, manifest_path = cache.paths("k1")
    manifest = json.loads(manifest_path.read_text())
    assert manifest["shape"] == [4, 3] and manifest["dtype"] == "float32" and manifest["doc_ids"] == list("abcd")
    assert manifest["sha256"] == __import__("hashlib").sha256(array.tobytes()).hexdigest()
    assert manifest["model"] == "m"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a clean hit or a plain miss never warns
        np.testing.assert_array_equal(cache.load("k1", list("abcd")), array)
        assert cache.load("other", list("abcd")) is None
    assert sorted(p.name for p in array_path.parent.iterdir()) == ["k1.json", "k1.npy"]  # no temp files left


def _saved(tmp_path) -> tuple[EmbeddingCache, Path, Path]:
    cache = EmbeddingCache(tmp_path)
    cache.save("k", ["a", "b"], np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32))
    return (cache, *cache.paths("k"))


def test_truncated_array_is_rejected_with_a_warning(tmp_path):
    cache, array_path, _ = _saved(tmp_path)
    data = array_path.read_bytes()
    array_path.write_bytes(data[: len(data) - 5])
    with pytest.warns(EmbeddingCacheWarning, match="unreadable array"):
        assert cache.load("k", ["a", "b"]) is None


def test_flipped_byte_fails_the_checksum(tmp_path):
    cache, array_path, _ = _saved(tmp_path)
    data = bytearray(array_path.read_bytes())
    data[-1] ^= 0x01  # same size, still a valid .npy, different number
    array_path.write_bytes(bytes(data))
    with pytest.warns(EmbeddingCacheWarning, match="checksum mismatch"):
        assert cache.load("k", ["a", "b"]) is None


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda m: m.write_text("{not json"), "unreadable manifest"),
        (lambda m: m.unlink(), "array without a manifest"),
        (lambda m: m.write_text(json.dumps({**json.loads(m.read_text()), "shape": [2, 5]})), "manifest shape|array is"),
        (lambda m: m.write_text(json.dumps({**json.loads(m.read_text()), "doc_ids": ["b", "a"]})), "doc ids differ"),
        (lambda m: m.write_text(json.dumps({**json.loads(m.read_text()), "key": "x"})), "key does not match"),
    ],
)
def test_damaged_manifest_is_rejected(tmp_path, damage, message):
    cache, _, manifest_path = _saved(tmp_path)
    damage(manifest_path)
    with pytest.warns(EmbeddingCacheWarning, match=message):
        assert cache.load("k", ["a", "b"]) is None


def test_missing_array_with_manifest(tmp_path):
    cache, array_path, _ = _saved(tmp_path)
    array_path.unlink()
    with pytest.warns(EmbeddingCacheWarning, match="array file missing"):
        assert cache.load("k", ["a", "b"]) is None


def test_keys_change_with_every_input():
    fp = ec.corpus_fingerprint(["a", "b"], ["x", "y"])
    assert fp != ec.corpus_fingerprint(["a", "b"], ["x", "y!"])
    assert fp != ec.corpus_fingerprint(["a", "c"], ["x", "y"])
    assert fp != ec.corpus_fingerprint(["ab"], ["xy"]) != ec.corpus_fingerprint(["a"], ["bxy"])
    options = {"passage_prefix": "", "normalize": True, "max_seq_length": None}
    key = ec.cache_key("m1", options, fp)
    assert key == ec.cache_key("m1", dict(reversed(list(options.items()))), fp)  # order-free
    assert key != ec.cache_key("m2", options, fp)
    assert key != ec.cache_key("m1", {**options, "passage_prefix": "p: "}, fp)
    assert key != ec.cache_key("m1", {**options, "normalize": False}, fp)


def test_default_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("RAG_EVAL_CACHE_DIR", str(tmp_path / "x"))
    assert ec.default_cache_dir() == tmp_path / "x"
    monkeypatch.delenv("RAG_EVAL_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert ec.default_cache_dir() == tmp_path / "xdg" / "rag_eval"


# --------------------------------------------------------------------------- model identity


def test_model_identity_follows_content_and_is_memoised(tmp_path, monkeypatch):
    folder = tmp_path / "model"
    (folder / "1_Pooling").mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"\x00" * 1000)
    (folder / "1_Pooling" / "config.json").write_text('{"mean": true}')
    (folder / "README.md").write_text("docs")
    memo = tmp_path / "memo.json"

    hashed: list[str] = []
    real = models._sha256_file
    monkeypatch.setattr(models, "_sha256_file", lambda p: hashed.append(Path(p).name) or real(p))
    monkeypatch.setattr(models, "_memo", {})

    first = models.model_identity(folder, memo)
    assert sorted(hashed) == ["config.json", "model.safetensors"]  # README does not count
    hashed.clear()
    assert models.model_identity(folder, memo) == first and hashed == []  # in-process memo
    monkeypatch.setattr(models, "_memo", {})
    assert models.model_identity(folder, memo) == first and hashed == []  # memo file, a new process

    (folder / "README.md").write_text("other docs")
    assert models.model_identity(folder, memo) == first
    (folder / "model.safetensors").write_bytes(b"\x00" * 999 + b"\x01")  # same size, new content
    os.utime(folder / "model.safetensors", ns=(1, 1))  # and a different mtime, as any rewrite gives
    changed = models.model_identity(folder, memo)
    assert changed != first and hashed == ["model.safetensors"]
    (folder / "1_Pooling" / "config.json").write_text('{"cls": true}')
    assert models.model_identity(folder, memo) not in (first, changed)


def _rewrite_keeping_size_and_mtime(path: Path, content: bytes) -> None:
    """New bytes in place, then the old modification time put back (as `cp -p` or a restore would)."""
    before = os.stat(path)
    assert len(content) == before.st_size
    deadline = time.monotonic() + 2
    while True:  # ctime has the kernel's clock tick as resolution: make sure it moves
        time.sleep(0.02)
        with open(path, "r+b") as handle:
            handle.write(content)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        after = os.stat(path)
        if after.st_ctime_ns != before.st_ctime_ns or time.monotonic() > deadline:
            break
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)


def test_new_weights_with_the_same_size_and_mtime_are_rehashed(tmp_path, monkeypatch):
    folder = tmp_path / "model"
    folder.mkdir()
    weights = folder / "model.safetensors"
    weights.write_bytes(b"\x00" * 1000)
    memo = tmp_path / "memo.json"
    monkeypatch.setattr(models, "_memo", {})
    first = models.model_identity(folder, memo)
    _rewrite_keeping_size_and_mtime(weights, b"\x00" * 999 + b"\x01")
    changed = models.model_identity(folder, memo)
    assert changed != first  # (size, mtime) alone would have served the old hash
    monkeypatch.setattr(models, "_memo", {})  # a new process reading the memo file
    assert models.model_identity(folder, memo) == changed
    fresh = models.model_identity(folder, None)
    monkeypatch.setattr(models, "_memo", {})
    assert fresh == models.model_identity(folder, None) == changed


def test_stale_embeddings_are_not_served_for_new_weights_of_the_same_size(tmp_path, monkeypatch):
    model = _models.copy_model(_models.tiny_bi_encoder(), tmp_path / "model")
    other = _models.tiny_bi_encoder(seed=1)
    weights = next(model.rglob("model.safetensors"))
    replacement = next(other.rglob("model.safetensors")).read_bytes()
    if len(replacement) != weights.stat().st_size:
        pytest.skip("the two tiny models' weight files differ in size")
    monkeypatch.setattr(models, "_memo", {})
    before = run_dense(model, tmp_path / "cache", use_cache=True).search(QUERIES, 4)
    _rewrite_keeping_size_and_mtime(weights, replacement)
    monkeypatch.setattr(models, "_memo", {})  # the next run, a new process
    retriever = run_dense(model, tmp_path / "cache", use_cache=True)
    assert retriever.describe()["cache"] == "miss"
    after = retriever.search(QUERIES, 4)
    assert after != before


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("which", ["manifest", "array"])
def test_a_fifo_in_the_cache_is_rejected_not_opened(tmp_path, which):
    cache = EmbeddingCache(tmp_path)
    ids = ["a", "b"]
    cache.save("k", ids, np.ones((2, 3), dtype=np.float32))
    target = cache.paths("k")[0 if which == "array" else 1]
    target.unlink()
    os.mkfifo(target)
    with pytest.warns(EmbeddingCacheWarning, match=f"{which if which == 'manifest' else 'array file'} is a FIFO"):
        assert cache.load("k", ids) is None  # returns at once: a FIFO opened for reading would block
    cache.save("k", ids, np.ones((2, 3), dtype=np.float32))  # and the entry is rebuilt over it
    assert cache.load("k", ids).tolist() == [[1.0] * 3] * 2


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_as_hash_memo_or_model_file_does_not_hang(tmp_path, monkeypatch):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    memo = tmp_path / "memo.json"
    os.mkfifo(memo)
    monkeypatch.setattr(models, "_memo", {})
    assert len(models.model_identity(folder, memo)) == 64  # the memo is ignored, not read
    os.mkfifo(folder / "weights.bin")
    with pytest.raises(RetrieverError, match=r"model file .*weights.bin is a FIFO \(named pipe\), not a regular file"):
        models.model_identity(folder, None)


# --------------------------------------------------------------------------- through the dense adapter


class Counter:
    """Counts model loads and encode() calls made by the dense adapter."""

    def __init__(self, monkeypatch):
        self.loads = 0
        self.encoded: list[int] = []
        real = models.load_sentence_transformer

        def loader(*args, **kwargs):
            self.loads += 1
            model = real(*args, **kwargs)
            encode = model.encode

            def counting_encode(texts, *a, **k):
                self.encoded.append(len(texts))
                return encode(texts, *a, **k)

            model.encode = counting_encode
            return model

        monkeypatch.setattr(models, "load_sentence_transformer", loader)


@pytest.fixture(scope="module")
def tiny():
    return _models.tiny_bi_encoder()


def run_dense(tiny_dir, cache_dir, corpus=CORPUS, **params):
    retriever = registry.build(
        "dense",
        {"model": str(tiny_dir), "cache_dir": str(cache_dir), "show_progress": False, "device": "cpu", **params},
    )
    retriever.index(corpus)
    return retriever


def test_second_run_reads_passages_and_queries_from_the_cache_without_loading_the_model(tiny, tmp_path, monkeypatch):
    counter = Counter(monkeypatch)
    first = run_dense(tiny, tmp_path)
    assert first.describe()["cache"] == "miss" and counter.encoded == [4] and counter.loads == 1
    first_run = first.search(QUERIES, 4)

    second = run_dense(tiny, tmp_path)
    described = second.describe()
    assert described["cache"] == "hit" and described["passages_encoded"] == 0
    assert counter.encoded == [4, 2] and counter.loads == 1  # only the first run's queries encoded so far
    np.testing.assert_array_equal(second._embeddings, first._embeddings)
    second_run = second.search(QUERIES, 4)
    # The same queries were encoded by the first run: their embeddings come from the cache too,
    # so the second run never loads the model.
    assert counter.loads == 1 and counter.encoded == [4, 2]
    assert second.describe()["query_cache"] == "hit"
    third = run_dense(tiny, tmp_path)
    third.search({"q-new": "a query never seen"}, 4)
    assert counter.loads == 2 and counter.encoded == [4, 2, 1]  # a new query is encoded, loading the model
    for qid in QUERIES:
        assert list(second_run[qid]) == list(first_run[qid])
        assert list(second_run[qid].values()) == pytest.approx(list(first_run[qid].values()), abs=1e-6)
    assert described["cache_key"] == first.describe()["cache_key"]
    assert Path(described["cache_path"]).is_file()


def test_what_invalidates_the_cache(tiny, tmp_path, monkeypatch):
    counter = Counter(monkeypatch)
    base = run_dense(tiny, tmp_path)
    key = base.describe()["cache_key"]
    edited = {**CORPUS, "c": {"title": "Reef", "text": "coral reefs are made by tiny animals"}}
    other_model = _models.tiny_bi_encoder(seed=1)
    cases = {
        "one passage changed": (edited, {}, "miss"),
        "one passage added": ({**CORPUS, "e": {"text": "tides"}}, {}, "miss"),
        "passage prefix": (CORPUS, {"passage_prefix": "passage: "}, "miss"),
        "normalisation": (CORPUS, {"normalize": False}, "miss"),
        "max_seq_length": (CORPUS, {"max_seq_length": 8}, "miss"),
        "another model": (CORPUS, {"model": str(other_model)}, "miss"),
        "query prefix only": (CORPUS, {"query_prefix": "query: "}, "hit"),
        "batch and block size": (CORPUS, {"batch_size": 2, "block_size": 3}, "hit"),
        "dot similarity on unit vectors": (CORPUS, {"similarity": "dot"}, "hit"),
    }
    keys = {key}
    for name, (corpus, params, expected) in cases.items():
        encoded_before = len(counter.encoded)
        described = run_dense(tiny, tmp_path, corpus, **params).describe()
        assert described["cache"] == expected, name
        assert (len(counter.encoded) > encoded_before) == (expected == "miss"), name
        if expected == "miss":
            assert described["cache_key"] not in keys, name
            keys.add(described["cache_key"])
        else:
            assert described["cache_key"] == key, name
    # and each new entry is itself reused
    assert run_dense(tiny, tmp_path, edited).describe()["cache"] == "hit"


def test_cache_off_writes_nothing(tiny, tmp_path):
    retriever = run_dense(tiny, tmp_path / "cache", use_cache=False)
    assert retriever.describe()["cache"] == "off" and retriever.describe()["passages_encoded"] == 4
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_corrupt_entry_is_detected_and_rebuilt(tiny, tmp_path, monkeypatch, damage):
    counter = Counter(monkeypatch)
    first = run_dense(tiny, tmp_path)
    array_path = Path(first.describe()["cache_path"])
    data = bytearray(array_path.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data[-3] ^= 0x40
    array_path.write_bytes(bytes(data))

    with pytest.warns(EmbeddingCacheWarning, match="re-encoding"):
        rebuilt = run_dense(tiny, tmp_path)
    assert rebuilt.describe()["cache"] == "miss" and counter.encoded == [4, 4]
    np.testing.assert_allclose(rebuilt._embeddings, first._embeddings, atol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert run_dense(tiny, tmp_path).describe()["cache"] == "hit"  # the rewritten entry is sound
