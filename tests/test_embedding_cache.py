"""The dense adapter's use of the per-passage embedding store, and the model identity it is keyed by.

The store itself (format, damage, concurrency) is tested in test_embedding_store.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import warnings
from pathlib import Path

import _models
import numpy as np
import pytest
from _shards import shorten_every_vector

from rag_eval._core.errors import RetrieverError
from rag_eval._models import files as models
from rag_eval._retrievers import embedding_cache as ec
from rag_eval._retrievers import registry
from rag_eval._retrievers.dense import DenseRetriever
from rag_eval._retrievers.embedding_cache import EmbeddingCacheWarning

CORPUS = {
    "a": {"title": "Pacific", "text": "the pacific is the largest ocean"},
    "b": {"title": "", "text": "the atlantic ocean is salt water"},
    "c": {"title": "Reef", "text": "coral reef fish live in warm sea"},
    "d": {"title": "", "text": "a whale is a deep sea mammal"},
}
QUERIES = {"q1": "largest ocean", "q2": "whale"}


# --------------------------------------------------------------------------- the cache folder


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


def test_a_forged_hash_memo_does_not_serve_another_models_embeddings(tmp_path, monkeypatch):
    """file_hashes.json edited so model A's files carry model B's hashes: A's run still equals a cold run of A."""
    model_a = _models.copy_model(_models.tiny_bi_encoder(), tmp_path / "a")
    model_b = _models.copy_model(_models.tiny_bi_encoder(seed=1), tmp_path / "b")
    sizes = {p.relative_to(model_a): p.stat().st_size for p in model_a.rglob("*") if p.is_file()}
    if sizes != {p.relative_to(model_b): p.stat().st_size for p in model_b.rglob("*") if p.is_file()}:
        pytest.skip("the two tiny models' files differ in size")
    cache = tmp_path / "cache"
    monkeypatch.setattr(models, "_memo", {})
    cold = run_dense(model_a, tmp_path / "cold", use_cache=False).search(QUERIES, 4)
    monkeypatch.setattr(models, "_memo", {})  # the runs below are new processes: their hashes go to the memo file
    run_dense(model_b, cache).search(QUERIES, 4)  # B's embeddings in the store, B's hashes in the memo
    run_dense(model_a, cache)
    memo = cache / "file_hashes.json"
    text = memo.read_text()
    entries = _memo_entries(memo)
    forged = 0
    for path in model_a.rglob("*"):  # the memo is keyed by resolved paths
        key, twin = str(path.resolve()), str((model_b / path.relative_to(model_a)).resolve())
        if key in entries and entries[key][5] != entries[twin][5]:
            text = text.replace(entries[key][5], entries[twin][5])  # A's file now "hashes" to B's
            forged += 1
    assert forged  # the weights at least
    memo.write_text(text)
    monkeypatch.setattr(models, "_memo", {})  # the next run, a new process
    retriever = run_dense(model_a, cache)
    assert retriever.model_identity() == models.model_identity(model_a, None)
    assert retriever.search(QUERIES, 4) == cold


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


def _memo_entries(memo: Path) -> dict:
    """The path -> [stamp..., sha256] entries of a hash memo file, whatever its layout."""
    raw = json.loads(memo.read_text())
    return raw.get("entries", raw) if isinstance(raw, dict) else {}


def test_the_hash_memo_has_a_header_and_an_edited_or_foreign_one_is_not_trusted(tmp_path, monkeypatch):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"\x00" * 1000)
    memo = tmp_path / "file_hashes.json"
    monkeypatch.setattr(models, "_memo", {})
    cold = models.model_identity(folder, None)
    monkeypatch.setattr(models, "_memo", {})
    assert models.model_identity(folder, memo) == cold
    raw = json.loads(memo.read_text())
    assert (raw["namespace"], raw["version"]) == ("rag_eval.file_hashes", models.MEMO_VERSION)
    assert len(raw["checksum"]) == 64 and list(raw["entries"]) == [str((folder / "model.safetensors").resolve())]
    real_sha = hashlib.sha256(b"\x00" * 1000).hexdigest()
    forged_sha = hashlib.sha256(b"other weights").hexdigest()

    hashed: list[str] = []
    real = models._sha256_file
    monkeypatch.setattr(models, "_sha256_file", lambda p: hashed.append(Path(p).name) or real(p))
    edited = memo.read_text().replace(real_sha, forged_sha)  # the entry edited, the checksum left as it was
    assert edited != memo.read_text()
    entries = _memo_entries(memo)
    foreign = json.dumps({k: [*v[:5], forged_sha] for k, v in entries.items()})  # no header (the old layout)
    for name, text in {"edited entries": edited, "foreign JSON": foreign}.items():
        memo.write_text(text)
        monkeypatch.setattr(models, "_memo", {})  # a new process reading the memo file
        hashed.clear()
        assert models.model_identity(folder, memo) == cold, name
        assert hashed == ["model.safetensors"], name  # hashed again, not taken from the file
        assert [v[5] for v in _memo_entries(memo).values()] == [real_sha], name  # and the memo rebuilt
        monkeypatch.setattr(models, "_memo", {})
        hashed.clear()
        assert models.model_identity(folder, memo) == cold and hashed == [], name  # the rebuilt memo is trusted


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
    described = first.describe()
    assert described["cache"] == "miss" and counter.encoded == [4] and counter.loads == 1
    assert (described["passages_encoded"], described["passages_reused"]) == (4, 0)
    first_run = first.search(QUERIES, 4)

    second = run_dense(tiny, tmp_path)
    described = second.describe()
    assert described["cache"] == "hit" and described["passages_encoded"] == 0 and described["passages_reused"] == 4
    assert counter.encoded == [4, 2] and counter.loads == 1  # only the first run's queries encoded so far
    assert second._embeddings.tobytes() == first._embeddings.tobytes()  # the stored bytes, not a re-encoding
    second_run = second.search(QUERIES, 4)
    # The same queries were encoded by the first run: their embeddings come from the cache too,
    # so the second run never loads the model.
    assert counter.loads == 1 and counter.encoded == [4, 2]
    assert second.describe()["query_cache"] == "hit" and second.describe()["queries_encoded"] == 0
    third = run_dense(tiny, tmp_path)
    third.search({"q-new": "a query never seen", "q1": QUERIES["q1"]}, 4)
    assert counter.loads == 2 and counter.encoded == [4, 2, 1]  # only the new query is encoded, loading the model
    assert third.describe()["query_cache"] == "partial" and third.describe()["queries_encoded"] == 1
    for qid in QUERIES:
        assert second_run[qid] == first_run[qid]
    assert described["cache_namespace"] == first.describe()["cache_namespace"]
    assert [p.suffix for p in Path(described["cache_path"]).iterdir()] == [".emb"]  # one shard of 4 passages


def test_what_invalidates_the_cache(tiny, tmp_path, monkeypatch):
    counter = Counter(monkeypatch)
    base = run_dense(tiny, tmp_path)
    namespace = base.describe()["cache_namespace"]
    edited = {**CORPUS, "c": {"title": "Reef", "text": "coral reefs are made by tiny animals"}}
    other_model = _models.tiny_bi_encoder(seed=1)
    cases = {  # name: corpus, params, expected status, passages encoded, new namespace
        "one passage changed": (edited, {}, "partial", 1, False),
        "one passage added": ({**CORPUS, "e": {"text": "tides"}}, {}, "partial", 1, False),
        "one passage removed": ({k: CORPUS[k] for k in "abc"}, {}, "hit", 0, False),
        "passage prefix": (CORPUS, {"passage_prefix": "passage: "}, "miss", 4, False),  # new texts, same namespace
        "normalisation": (CORPUS, {"normalize": False}, "miss", 4, True),
        "max_seq_length": (CORPUS, {"max_seq_length": 8}, "miss", 4, True),
        "another model": (CORPUS, {"model": str(other_model)}, "miss", 4, True),
        "query prefix only": (CORPUS, {"query_prefix": "query: "}, "hit", 0, False),
        "batch and block size": (CORPUS, {"batch_size": 2, "block_size": 3}, "hit", 0, False),
        "dot similarity on unit vectors": (CORPUS, {"similarity": "dot"}, "hit", 0, False),
    }
    namespaces = {namespace}
    for name, (corpus, params, status, encoded, new_namespace) in cases.items():
        before = sum(counter.encoded)
        described = run_dense(tiny, tmp_path, corpus, **params).describe()
        assert (described["cache"], described["passages_encoded"]) == (status, encoded), name
        assert described["passages_reused"] == len(corpus) - encoded, name
        assert sum(counter.encoded) - before == encoded, name  # what describe() says is what the model did
        assert (described["cache_namespace"] not in namespaces) == new_namespace, name
        namespaces.add(described["cache_namespace"])
    # and each new embedding is itself reused
    assert run_dense(tiny, tmp_path, edited).describe()["cache"] == "hit"


def test_cache_off_writes_nothing(tiny, tmp_path):
    retriever = run_dense(tiny, tmp_path / "cache", use_cache=False)
    described = retriever.describe()
    assert described["cache"] == "off" and described["passages_encoded"] == 4 and described["passages_reused"] == 0
    retriever.search(QUERIES, 2)
    assert retriever.describe()["queries_encoded"] == 2 and retriever.describe()["query_cache"] == "off"
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_corrupt_entry_is_detected_and_rebuilt(tiny, tmp_path, monkeypatch, damage):
    counter = Counter(monkeypatch)
    first = run_dense(tiny, tmp_path)
    (shard,) = Path(first.describe()["cache_path"]).iterdir()
    data = bytearray(shard.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data[-3] ^= 0x40
    shard.write_bytes(bytes(data))

    with pytest.warns(EmbeddingCacheWarning, match="re-encoded"):
        rebuilt = run_dense(tiny, tmp_path)
    assert rebuilt.describe()["cache"] == "miss" and counter.encoded == [4, 4]
    np.testing.assert_allclose(rebuilt._embeddings, first._embeddings, atol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert run_dense(tiny, tmp_path).describe()["cache"] == "hit"  # the rewritten shard is sound


# --------------------------------------------------------------------------- per-passage reuse

BIGGER = {f"p{i:02d}": {"title": "", "text": f"{word} {i} of the sea"} for i, word in enumerate(["coral", "whale"] * 6)}


def test_editing_one_passage_encodes_exactly_that_passage(tiny, tmp_path, monkeypatch):
    counter = Counter(monkeypatch)
    first = run_dense(tiny, tmp_path, BIGGER)
    assert first.describe()["passages_encoded"] == 12 and counter.encoded == [12]
    edited = {**BIGGER, "p05": {"title": "", "text": "the deep indian ocean"}}
    rerun = run_dense(tiny, tmp_path, edited)
    described = rerun.describe()
    assert (described["cache"], described["passages_encoded"], described["passages_reused"]) == ("partial", 1, 11)
    assert counter.encoded == [12, 1]
    # The same numbers as encoding the edited corpus from scratch (rows other than p05 are the stored bytes).
    fresh = run_dense(tiny, tmp_path / "other", edited, use_cache=False)
    np.testing.assert_allclose(rerun._embeddings, fresh._embeddings, atol=1e-6)
    kept = [i for i in range(12) if i != 5]  # p05 is row 5 (rows follow sorted ids)
    assert rerun._embeddings[kept].tobytes() == first._embeddings[kept].tobytes()
    ranked, expected = rerun.search(QUERIES, 5), fresh.search(QUERIES, 5)
    for qid in QUERIES:
        assert list(ranked[qid]) == list(expected[qid])
        assert list(ranked[qid].values()) == pytest.approx(list(expected[qid].values()), abs=1e-6)


def test_a_second_chunking_sharing_texts_reuses_their_embeddings(tiny, tmp_path, monkeypatch):
    counter = Counter(monkeypatch)
    run_dense(tiny, tmp_path, CORPUS)
    # Another chunking of the same documents: new ids, three texts in common, one new, one repeated.
    chunked = {
        "doc1#0-31": CORPUS["a"],
        "doc1#31-60": CORPUS["b"],
        "doc2#0-30": CORPUS["c"],
        "doc2#30-80": {"title": "", "text": "a whale and the deep sea"},
        "doc3#0-30": CORPUS["c"],
    }
    described = run_dense(tiny, tmp_path, chunked).describe()
    assert (described["cache"], described["passages_encoded"], described["passages_reused"]) == ("partial", 1, 3)
    assert described["duplicate_passages"] == 1 and counter.encoded == [4, 1]


def test_a_run_killed_while_encoding_resumes_with_only_the_rest(tiny, tmp_path, monkeypatch):
    monkeypatch.setattr(DenseRetriever, "cache_write_every", 5)  # 12 passages: batches of 5, 5, 2
    real = DenseRetriever._encode
    batches: list[int] = []

    def killed_after_two(self, texts):
        if len(batches) == 2:
            raise KeyboardInterrupt("killed")
        batches.append(len(texts))
        return real(self, texts)

    monkeypatch.setattr(DenseRetriever, "_encode", killed_after_two)
    with pytest.raises(KeyboardInterrupt):
        run_dense(tiny, tmp_path, BIGGER)
    assert batches == [5, 5]
    monkeypatch.setattr(DenseRetriever, "_encode", lambda self, texts: batches.append(len(texts)) or real(self, texts))
    resumed = run_dense(tiny, tmp_path, BIGGER)
    described = resumed.describe()
    assert (described["cache"], described["passages_encoded"], described["passages_reused"]) == ("partial", 2, 10)
    assert batches == [5, 5, 2]
    fresh = run_dense(tiny, tmp_path / "other", BIGGER, use_cache=False)
    np.testing.assert_allclose(resumed._embeddings, fresh._embeddings, atol=1e-6)


def test_shards_of_another_namespace_copied_over_ours_are_not_used(tiny, tmp_path):
    """Same texts, max_seq_length 8: the same shard names in another folder; copied over ours, they are refused."""
    ours = run_dense(tiny, tmp_path)
    short = run_dense(tiny, tmp_path, max_seq_length=8)
    ours_folder, short_folder = Path(ours.describe()["cache_path"]), Path(short.describe()["cache_path"])
    assert ours_folder != short_folder
    copied = sorted(p.name for p in short_folder.glob("*.emb"))
    assert copied == sorted(p.name for p in ours_folder.glob("*.emb"))  # same texts, same names
    assert not np.array_equal(ours._embeddings, short._embeddings)
    for name in copied:
        (ours_folder / name).write_bytes((short_folder / name).read_bytes())

    with pytest.warns(EmbeddingCacheWarning, match="belongs to namespace .*, not this store's") as caught:
        again = run_dense(tiny, tmp_path)
    assert all("re-encoded" in str(w.message) for w in caught)
    described = again.describe()
    assert (described["cache"], described["passages_encoded"], described["passages_reused"]) == ("miss", 4, 0)
    np.testing.assert_allclose(again._embeddings, ours._embeddings, atol=1e-6)
    assert again.search(QUERIES, 4).keys() == ours.search(QUERIES, 4).keys()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert run_dense(tiny, tmp_path).describe()["cache"] == "hit"  # rewritten with our vectors


def test_a_zero_dimension_shard_is_a_miss_not_an_error_for_every_later_run(tiny, tmp_path):
    first = run_dense(tiny, tmp_path)
    (shard,) = Path(first.describe()["cache_path"]).glob("*.emb")
    data = shard.read_bytes()
    length = int.from_bytes(data[8:12], "little")
    header = json.loads(data[12 : 12 + length])
    keys = data[12 + length : 12 + length + 32 * header["count"]]
    # The same header with dim 0 and the checksum of what is left (the keys): well formed in every other way.
    text = json.dumps({**header, "dim": 0, "sha256": hashlib.sha256(keys).hexdigest()}).encode()
    padded = -(-(12 + len(text)) // 64) * 64 - 12
    shard.write_bytes(data[:8] + padded.to_bytes(4, "little") + text.ljust(padded, b" ") + keys)
    with pytest.warns(EmbeddingCacheWarning, match="dimension 0"):
        rebuilt = run_dense(tiny, tmp_path)
    assert rebuilt.describe()["cache"] == "miss"
    np.testing.assert_allclose(rebuilt._embeddings, first._embeddings, atol=1e-6)
    assert run_dense(tiny, tmp_path).describe()["cache"] == "hit"


@pytest.mark.parametrize("queries_cached", [True, False])
def test_the_only_passage_shard_of_another_dimension_is_removed_and_re_encoded(tiny, tmp_path, queries_cached):
    """The store's only shard, one dimension short: nothing outvotes it and no passage is missing. The model's
    dimension (witnessed by its cached queries, or by the queries it encodes) has it removed and re-encoded."""
    first = run_dense(tiny, tmp_path)
    cold = first.search(QUERIES, 4)
    (shard,) = Path(first.describe()["cache_path"]).glob("*.emb")
    shorten_every_vector(shard)
    if not queries_cached:
        for folder in (tmp_path / "passages").iterdir():
            if folder != shard.parent:
                for path in folder.iterdir():
                    path.unlink()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = run_dense(tiny, tmp_path)
        ranking = again.search(QUERIES, 4)
    messages = [str(w.message) for w in caught if issubclass(w.category, EmbeddingCacheWarning)]
    assert any(str(shard) in m and "its vectors have dim" in m and "removed it" in m for m in messages), messages
    assert ranking.keys() == cold.keys()
    for qid in cold:
        assert list(ranking[qid]) == list(cold[qid])
        np.testing.assert_allclose(list(ranking[qid].values()), list(cold[qid].values()), atol=1e-6)
    described = again.describe()
    assert described["passages_encoded"] == 4 and described["cache"] == "miss"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # repaired: the next run reads every vector from the store, silently
        third = run_dense(tiny, tmp_path)
        assert third.search(QUERIES, 4) == ranking
    assert third.describe()["cache"] == "hit" and third.describe()["query_cache"] == "hit"
