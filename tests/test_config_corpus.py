"""rag_eval.extend.config_corpus: the passages a config's dataset gives its retrievers, read as a run reads them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rag_eval import RagEvalError
from rag_eval.extend import config_corpus

REPO = Path(__file__).resolve().parents[1]


def test_the_corpus_of_the_ocean_facts_config_is_its_query_sets_corpus_list():
    listed = yaml.safe_load((REPO / "datasets" / "ocean_facts.yaml").read_text(encoding="utf-8"))["corpus"]
    corpus = config_corpus(REPO / "configs" / "ocean_facts.yaml")
    assert len(corpus) == len(listed) == 37
    for passage in listed:
        assert corpus[str(passage["id"])] == {"title": passage.get("title") or "", "text": passage["text"]}


def test_a_config_whose_dataset_is_missing_is_one_error(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({
        "dataset": {"path": "nowhere.yaml"}, "metrics": ["ndcg@10"], "output": "out",
        "retrievers": [{"label": "s", "adapter": "static", "params": {"rankings": {}}}],
    }))
    with pytest.raises(RagEvalError, match="nowhere.yaml"):
        config_corpus(config)
