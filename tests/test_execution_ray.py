"""The Ray engine gives local execution's numbers: same rows, same scores, same run file; a killed worker leaves no hole.

The streamed corpus reader (no Ray) is tested first; the Ray tests share the session's local
cluster (2 CPUs, tests/conftest.py), started once for every Ray test of the suite.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_eval._core.errors import DatasetError, RetrieverError
from rag_eval._core.topk import top_k_blockwise
from rag_eval._core.trec import format_run
from rag_eval._data.config.execution import ExecutionSpec
from rag_eval._data.datasets.corpus import load_corpus_file
from rag_eval._data.datasets.model import passage_text
from rag_eval._execution.corpus_stream import byte_ranges, read_range
from rag_eval._execution.ray_cluster import actor_plan
from rag_eval._models.embeddings.store import EmbeddingStore, text_key

NAMESPACE = "test-namespace"
PREFIX = "passage: "


# --------------------------------------------------------------------------- a deterministic fake encoder


def fake_vector(text: str) -> np.ndarray:
    """8 values in {-1, -0.5, 0, 0.5, 1} from the text's hash: ties between passages are common."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    return ((np.frombuffer(digest[:8], dtype=np.uint8) % 5).astype(np.float32) - 2) / 2


class HashEncoder:
    """Encodes by hashing; with ``crash_marker``, the first actor to reach its ``crash_on_call``-th batch dies."""

    def __init__(self, crash_marker: str | None, crash_on_call: int, store_dir: str | None) -> None:
        self.crash_marker, self.crash_on_call, self.store_dir, self.calls = crash_marker, crash_on_call, store_dir, 0

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        if self.crash_marker and self.calls == self.crash_on_call:
            try:
                fd = os.open(self.crash_marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass  # another actor died already: one kill per test
            else:
                shards = len(list(Path(self.store_dir or ".").glob("*.emb")))
                os.write(fd, str(shards).encode())
                os.close(fd)
                os._exit(1)  # the worker process dies mid-encoding, as a killed node would
        return np.stack([fake_vector(text) for text in texts])


class HashFactory:
    """Picklable encoder factory (what encode_on_ray sends to each actor)."""

    def __init__(self, crash_marker: str | None = None, crash_on_call: int = 0, store_dir: str | None = None) -> None:
        self.args = (crash_marker, crash_on_call, store_dir)

    def __call__(self) -> HashEncoder:
        return HashEncoder(*self.args)


# --------------------------------------------------------------------------- a small BEIR corpus


def corpus_lines(twice: bool = True) -> list[str]:
    records = []
    for n in range(57):
        text = f"passage {n} about {'tides' if n % 3 else 'kelp'} and {'ж' * (n % 4)} currents"
        record = {"_id": f"d{n:02d}", "text": text}
        if n % 2:
            record["title"] = f"  Title {n % 5} "
        records.append(record)
    if twice:
        records[10]["text"] = records[20]["text"] = "the same text twice"  # one key for two rows
        records[20].pop("title", None)
        records[10].pop("title", None)
    records.append({"_id": 7, "title": "", "text": "a numeric id"})  # ids as the loader reads them: "7"
    records.append({"id": "x\u00e9", "text": "an id in 'id', not '_id'", "metadata": {}})
    return [json.dumps(r, ensure_ascii=bool(i % 2)) for i, r in enumerate(records)]


def write_corpus(path: Path, twice: bool = True) -> Path:
    lines = corpus_lines(twice)
    lines.insert(5, "   ")  # blank lines are skipped, as the loader does
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode("utf-8") + b"\n")  # BOM, CRLF
    return path


def local_rows(path: Path) -> tuple[list[str], list[str]]:
    """Doc ids (sorted) and texts exactly as the local dense retriever encodes them."""
    corpus = load_corpus_file(path)
    doc_ids = sorted(corpus)
    return doc_ids, [PREFIX + passage_text(corpus[d]) for d in doc_ids]


def run_text(doc_ids: list[str], rows: np.ndarray, scores: np.ndarray) -> str:
    """The run file the dense retriever would write for these search results."""
    run = {
        f"q{q}": {doc_ids[i]: float(s) for i, s in zip(rows[q].tolist(), scores[q].tolist())} for q in range(len(rows))
    }
    return format_run(run)


def rows_in_shards(store: EmbeddingStore) -> int:
    """Keys over all shard files, from each header's count: equal to len(store) when no key is stored twice."""
    total = 0
    for shard in store.shard_paths():
        with open(shard, "rb") as handle:
            head = handle.read(12)
            total += json.loads(handle.read(int.from_bytes(head[8:12], "little")))["count"]
    return total


QUERIES = np.stack([fake_vector(f"query {n}") for n in range(6)])


# --------------------------------------------------------------------------- streamed reading (no Ray)


@settings(max_examples=40, deadline=None)
@given(range_bytes=st.integers(1, 400), gz=st.booleans())
def test_byte_ranges_read_every_passage_once_as_the_loader_does(tmp_path_factory, range_bytes, gz):
    folder = tmp_path_factory.mktemp("corpus")
    path = write_corpus(folder / "corpus.jsonl")
    if gz:
        path = folder / "corpus.jsonl.gz"
        path.write_bytes(gzip.compress((folder / "corpus.jsonl").read_bytes()))
    doc_ids, texts = [], []
    for start, stop in byte_ranges(path, range_bytes):
        for ids, batch in read_range(path, start, stop, PREFIX, batch=4):
            doc_ids += ids
            texts += batch
    corpus = load_corpus_file(path)
    assert doc_ids == list(corpus)  # file order, every passage once, whatever the cut
    assert texts == [PREFIX + passage_text(corpus[d]) for d in corpus]
    assert doc_ids.count("7") == 1 and "x\u00e9" in doc_ids


def test_a_bad_line_is_named_by_file_and_byte_offset(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b'{"_id": "a", "text": "fine"}\n{"_id": "b", "text": }\n{"_id": "c"}\n')
    with pytest.raises(DatasetError, match=r"corpus.jsonl: line at byte 29: invalid JSON: Expecting value"):
        list(read_range(path, 0, path.stat().st_size))
    with pytest.raises(DatasetError, match=r"corpus.jsonl: line at byte 52: passage 'c' has no text"):
        list(read_range(path, 50, path.stat().st_size))


def test_actor_plan_uses_gpus_when_the_cluster_has_them():
    spec = ExecutionSpec(engine="ray")
    assert actor_plan(spec, {"CPU": 16.0, "GPU": 4.0}) == (4, 1.0)
    assert actor_plan(spec, {"CPU": 8.0}) == (7, 0.0)  # one CPU left for reading
    assert actor_plan(ExecutionSpec(engine="ray", num_gpus_per_actor=0.5), {"CPU": 8.0, "GPU": 2.0}) == (4, 0.5)
    with pytest.raises(RetrieverError, match=r"num_gpus_per_actor is 1 but the Ray cluster has 0 GPUs"):
        actor_plan(ExecutionSpec(engine="ray", num_gpus_per_actor=1.0), {"CPU": 8.0})


def test_execution_spec_refuses_unknown_keys_and_bad_addresses():
    with pytest.raises(ValueError, match="actor"):
        ExecutionSpec.model_validate({"engine": "ray", "actor": 2})
    with pytest.raises(ValueError, match=r"ray://head:10001, got 'ray start'"):
        ExecutionSpec(engine="ray", address="ray start")


def test_ray_keys_without_engine_ray_are_refused_not_ignored():
    with pytest.raises(ValueError, match=r"actors, shards are read only with engine: ray; add engine: ray, or remove them"):
        ExecutionSpec.model_validate({"engine": "local", "actors": 4, "shards": 2})
    with pytest.raises(ValueError, match=r"address is read only with engine: ray; add engine: ray, or remove it"):
        ExecutionSpec.model_validate({"address": "auto"})
    dumped = ExecutionSpec.model_validate({"engine": "local"}).model_dump()  # every default written out
    assert ExecutionSpec.model_validate(dumped).engine == "local"


# --------------------------------------------------------------------------- on a local Ray cluster


@pytest.fixture(scope="module")
def ray_cluster(ray_cluster):
    """The session's cluster, with this module's fake encoders sent to the workers."""
    # The fake encoder lives in this test module, which workers cannot import by name: send it by value.
    ray_cluster.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield ray_cluster
    ray_cluster.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def spec(**overrides) -> ExecutionSpec:
    settings = {"engine": "ray", "actors": 1, "batch_size": 8, "shards": 3, **overrides}
    return ExecutionSpec(**settings)


def test_ray_run_equals_local_run_bit_for_bit(ray_cluster, tmp_path):
    from rag_eval._execution.ray_engine import encode_on_ray, search_on_ray

    path = write_corpus(tmp_path / "corpus.jsonl")
    doc_ids, texts = local_rows(path)
    store = EmbeddingStore(tmp_path / "cache", NAMESPACE)

    encoded = encode_on_ray(path, HashFactory(), store, spec=spec(), prefix=PREFIX)
    assert encoded.doc_ids == doc_ids
    assert encoded.keys == [text_key(t) for t in texts]
    # Counted as local encoding counts, whichever batches the twice-used text fell in (a fresh store: nothing
    # reused), even when two batches encoded it at the same moment.
    assert encoded.counts == {"passages": 59, "encoded": 58, "reused": 0, "duplicates": 1}
    assert len(store) == len(set(texts)) == 58 == rows_in_shards(store)
    stored, found = store.get(encoded.keys)
    assert found.all()
    np.testing.assert_array_equal(stored, np.stack([fake_vector(t) for t in texts]))

    # Local exact search over the same vectors, as the dense retriever runs it.
    want_rows, want_scores = top_k_blockwise(QUERIES, stored, 10)
    rows, scores = search_on_ray(store, encoded.keys, QUERIES, 10, spec=spec())
    np.testing.assert_array_equal(rows, want_rows)
    np.testing.assert_array_equal(scores, want_scores)
    ties = sum(len(set(r)) < len(r) for r in scores.tolist())
    assert ties >= 3  # the fake vectors put ties inside the top 10, across shard borders too
    assert run_text(encoded.doc_ids, rows, scores) == run_text(doc_ids, want_rows, want_scores)

    # An edited passage re-encodes that passage only: everything else is found in the store.
    path.write_bytes(path.read_bytes().replace(b"passage 3 about", b"passage 3 (edited) about"))
    edited = encode_on_ray(path, HashFactory(), store, spec=spec(batch_size=64), prefix=PREFIX)
    assert edited.counts == {"passages": 59, "encoded": 1, "reused": 57, "duplicates": 1}
    assert len(store) == 59


def test_parquet_and_pairs_give_the_same_rows(ray_cluster, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rag_eval._execution.ray_engine import encode_on_ray

    path = write_corpus(tmp_path / "corpus.jsonl")
    doc_ids, texts = local_rows(path)
    corpus = load_corpus_file(path)
    table = pa.table(
        {
            "_id": list(corpus),
            "title": [corpus[d]["title"] for d in corpus],
            "text": [corpus[d]["text"] for d in corpus],
        }
    )
    pq.write_table(table, tmp_path / "corpus.parquet", row_group_size=10)
    store = EmbeddingStore(tmp_path / "cache", NAMESPACE)
    from_parquet = encode_on_ray(tmp_path / "corpus.parquet", HashFactory(), store, spec=spec(), prefix=PREFIX)
    assert (from_parquet.doc_ids, from_parquet.keys) == (doc_ids, [text_key(t) for t in texts])
    pairs = [(d, passage_text(corpus[d])) for d in reversed(list(corpus))]
    from_pairs = encode_on_ray(pairs, HashFactory(), store, spec=spec(batch_size=100), prefix=PREFIX)
    assert (from_pairs.doc_ids, from_pairs.keys) == (doc_ids, from_parquet.keys)
    assert from_pairs.counts["encoded"] == 0 and len(store) == 58


def test_a_worker_killed_mid_encoding_is_retried_without_duplicates_or_holes(ray_cluster, tmp_path):
    from rag_eval._execution.ray_engine import encode_on_ray, search_on_ray

    # No text twice here: two actors could encode a shared text at the same moment (harmless, but
    # it would put that key in two shards, and this test counts keys per shard).
    path = write_corpus(tmp_path / "corpus.jsonl", twice=False)
    doc_ids, texts = local_rows(path)
    store = EmbeddingStore(tmp_path / "cache", NAMESPACE)
    marker = tmp_path / "killed"
    factory = HashFactory(str(marker), crash_on_call=3, store_dir=str(store.directory))
    two_actors = spec(actors=2, num_cpus_per_actor=0.5, batch_size=5, max_retries=2)

    encoded = encode_on_ray(path, factory, store, spec=two_actors, prefix=PREFIX)

    assert marker.exists(), "no worker was killed: the test proves nothing"
    assert int(marker.read_text()) >= 2  # batches were already in the store when the worker died
    assert encoded.doc_ids == doc_ids and encoded.keys == [text_key(t) for t in texts]
    assert len(store) == len(texts) == rows_in_shards(store)  # every key once: no duplicates ...
    stored, found = store.get(encoded.keys)
    assert found.all()  # ... and no holes
    np.testing.assert_array_equal(stored, np.stack([fake_vector(t) for t in texts]))
    rows, scores = search_on_ray(store, encoded.keys, QUERIES, 10, spec=spec(shards=7))
    want_rows, want_scores = top_k_blockwise(QUERIES, stored, 10)
    np.testing.assert_array_equal(rows, want_rows)
    np.testing.assert_array_equal(scores, want_scores)


def test_worker_errors_reach_the_driver_as_one_line(ray_cluster, tmp_path):
    from rag_eval._execution.ray_engine import encode_on_ray, search_on_ray

    path = tmp_path / "corpus.jsonl"
    path.write_text('{"_id": "a", "text": "fine"}\n{"_id": "b", "text": 3}\n', encoding="utf-8")
    store = EmbeddingStore(tmp_path / "cache", NAMESPACE)
    with pytest.raises(DatasetError, match=r"corpus.jsonl: line at byte 29: passage 'b' has no text"):
        encode_on_ray(path, HashFactory(), store, spec=spec())
    key = text_key("never encoded")
    with pytest.raises(RetrieverError, match=rf"1 of rows 0..0 have no embedding \(first: row 0, key {key}\); encode"):
        search_on_ray(store, [key], QUERIES, 3, spec=spec(shards=1))


@pytest.mark.slow
def test_bundled_minilm_on_ray_ranks_like_local_encoding(ray_cluster, tmp_path):
    pytest.importorskip("sentence_transformers", reason="the real-model check needs sentence-transformers")
    from rag_eval._execution.ray_engine import encode_on_ray, search_on_ray
    from rag_eval._models import files as models

    model_path = models.resolve_model("all-MiniLM-L6-v2", "dense").path
    factory = MiniLMFactory(str(model_path))
    path = write_corpus(tmp_path / "corpus.jsonl")
    _, texts = local_rows(path)
    store = EmbeddingStore(tmp_path / "cache", NAMESPACE)
    encoded = encode_on_ray(path, factory, store, spec=spec(batch_size=16), prefix=PREFIX)
    local_encoder = factory()
    local = local_encoder.encode(texts)
    stored, found = store.get(encoded.keys)
    assert found.all() and stored.shape == (59, 384)
    # Batches differ between the two runs (padding), so vectors agree to rounding, not bit for bit.
    np.testing.assert_allclose(stored, local, atol=1e-5)
    queries = local_encoder.encode(["what grows in kelp forests", "tides and currents", "a numeric id"])
    rows, _ = search_on_ray(store, encoded.keys, queries, 5, spec=spec())
    np.testing.assert_array_equal(rows, top_k_blockwise(queries, local, 5)[0])


class MiniLMFactory:
    def __init__(self, path: str) -> None:
        self.path = path

    def __call__(self) -> MiniLM:
        return MiniLM(self.path)


class MiniLM:
    def __init__(self, path: str) -> None:
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(path, device="cpu")

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(texts, batch_size=16, normalize_embeddings=True, convert_to_numpy=True)


class CountingEncoder:
    """An encoder that counts tokens while it encodes (as the GPU pipeline does): 1000 + characters."""

    def encode(self, texts):
        self.last_token_lengths = np.asarray([1000 + len(t) for t in texts], dtype=np.int64)
        return np.stack([fake_vector(t) for t in texts])

    def counting_tokenizer(self):
        return "the encoder's tokenizer"


class CountingFactory:
    def __call__(self):
        return CountingEncoder()


class MemoCounter:
    """A token counter (len(text) of its own) that keeps what an encoder of its own tokenizer recorded."""

    def __init__(self):
        self.memo = {}

    def lengths(self, texts):
        return np.asarray([self.memo.get(t, len(t)) for t in texts], dtype=np.int64)

    def record(self, texts, lengths, tokenizer_json):
        if tokenizer_json == "the encoder's tokenizer":
            self.memo.update(zip(texts, lengths.tolist()))


def test_workers_take_the_encoders_token_counts_and_count_only_the_texts_found_in_the_store(ray_cluster, tmp_path):
    from rag_eval._execution.ray_engine import encode_on_ray

    path = write_corpus(tmp_path / "corpus.jsonl")
    doc_ids, texts = local_rows(path)
    store = EmbeddingStore(tmp_path / "cache", NAMESPACE)
    first = encode_on_ray(path, CountingFactory(), store, spec=spec(), prefix=PREFIX, count_tokens=MemoCounter())
    # Every text was encoded in this run: its count is the encoder's (a repeated text's too, from its batch).
    assert first.doc_ids == doc_ids and first.token_lengths.tolist() == [1000 + len(t) for t in texts]
    again = encode_on_ray(path, CountingFactory(), store, spec=spec(), prefix=PREFIX, count_tokens=MemoCounter())
    assert again.counts["encoded"] == 0 and again.token_lengths.tolist() == [len(t) for t in texts]  # counted anew
