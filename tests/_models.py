"""Test helpers: tiny local models (random weights) and a toy first-stage retriever.

The tiny models are real sentence-transformers / transformers folders, so the
adapters' whole loading path runs; they are built once per test process (a few
seconds, mostly importing torch) in a temporary folder removed at exit.
Nothing here touches the network: HF offline mode is switched on at import.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# Every lowercase word tokenises (into letters) with this vocabulary, so random
# weights still give each text its own embedding.
_WORDS = [
    "the", "a", "of", "and", "is", "in", "ocean", "pacific", "atlantic", "indian", "largest", "deep", "sea", "water",
    "whale", "coral", "reef", "salt", "tide",
]
_VOCAB = (
    ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    + _WORDS
    + list("abcdefghijklmnopqrstuvwxyz0123456789")
    + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz0123456789"]
)

_root: Path | None = None
_built: dict[str, Path] = {}


def _workdir() -> Path:
    global _root
    if _root is None:
        _root = Path(tempfile.mkdtemp(prefix="rag_eval_tiny_models_"))
        atexit.register(shutil.rmtree, _root, True)
    return _root


def _bert_parts(folder: Path, seed: int):
    import torch
    from transformers import BertConfig, BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(_VOCAB) + "\n", encoding="utf-8")
    # Positional: transformers 4 names it vocab_file, transformers 5 vocab.
    tokenizer = BertTokenizerFast(str(folder / "vocab.txt"), do_lower_case=True)
    # A wide initialiser spreads the random embeddings, so distinct texts get
    # clearly distinct vectors and rankings have no accidental near-ties.
    config = BertConfig(
        vocab_size=len(_VOCAB),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        initializer_range=0.2,
    )
    torch.manual_seed(seed)
    return config, tokenizer


def tiny_bi_encoder(seed: int = 0) -> Path:
    """Folder of a 32-dim sentence-transformers bi-encoder (BERT, 2 layers, mean pooling)."""
    name = f"bi-{seed}"
    if name not in _built:
        from sentence_transformers import SentenceTransformer
        from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
        from transformers import BertModel

        raw = _workdir() / f"{name}-raw"
        config, tokenizer = _bert_parts(raw, seed)
        BertModel(config).save_pretrained(raw)
        tokenizer.save_pretrained(raw)
        transformer = Transformer(str(raw), max_seq_length=64)
        model = SentenceTransformer(modules=[transformer, Pooling(32, pooling_mode="mean")], device="cpu")
        folder = _workdir() / name
        model.save(str(folder))
        _built[name] = folder
    return _built[name]


def tiny_cross_encoder(seed: int = 0) -> Path:
    """Folder of a BERT sequence classifier with one output (a cross-encoder), random weights."""
    name = f"ce-{seed}"
    if name not in _built:
        from transformers import BertForSequenceClassification

        folder = _workdir() / name
        config, tokenizer = _bert_parts(folder, seed)
        config.num_labels = 1
        BertForSequenceClassification(config).save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        _built[name] = folder
    return _built[name]


def copy_model(folder: Path, target: Path) -> Path:
    """A private copy of a model folder (for tests that modify files)."""
    shutil.copytree(folder, target)
    return target


class OverlapRetriever:
    """Toy first stage: score = number of distinct query words in the passage.

    Deterministic and dependency-free, so cross-encoder and hybrid tests do not
    rely on the bm25 adapter. Used through the import string ``_models:OverlapRetriever``.
    """

    def __init__(self, scale: float = 1.0, cache_dir: str | None = None):
        self.scale = scale
        self.cache_dir = cache_dir  # recorded so tests can see what a parent passed down
        self.docs: dict[str, set[str]] = {}
        self.calls: list[int] = []

    def index(self, corpus):
        from rag_eval._data.datasets.model import passage_text

        self.docs = {doc_id: set(passage_text(p).lower().split()) for doc_id, p in corpus.items()}

    def search(self, queries, top_k):
        self.calls.append(top_k)
        out = {}
        for qid, text in queries.items():
            words = set(text.lower().split())
            scored = {d: self.scale * len(words & toks) for d, toks in self.docs.items() if words & toks}
            best = sorted(scored.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[:top_k]
            out[qid] = dict(best)
        return out


class FixedRetriever:
    """Returns the ranking it was given (``run: {qid: {doc: score}}``), cut at top_k."""

    def __init__(self, run: dict):
        self.run = run
        self.calls: list[int] = []

    def index(self, corpus):
        self.indexed = set(corpus)

    def search(self, queries, top_k):
        self.calls.append(top_k)
        out = {}
        for q in queries:
            ranked = sorted(self.run.get(q, {}).items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
            out[q] = dict(ranked[:top_k])
        return out


class GreedyRetriever:
    """Returns its whole ranking (``run: {qid: {doc: score}}``) whatever ``top_k`` asks for.

    Lets tests check that a parent cuts a child that returns more than asked.
    """

    def __init__(self, run: dict):
        self.run = run

    def index(self, corpus):
        pass

    def search(self, queries, top_k):
        return {q: dict(self.run.get(q, {})) for q in queries}
