"""A team's index in the report and in `rag-eval compare`: unmapped and stale hits are shown, and a stale index
is refused as a baseline or candidate (exit 2, one line), end to end through the CLI with a real Qdrant folder.

The team's collection holds three chunks of two documents: one exact span, one whose document was edited
after it was indexed (stale: its text is gone), and one of a document the dataset does not hold (unmapped).
The counts below follow from that by hand: per query 3 hits, 1 mapped, 1 stale, 1 unmapped.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import skip_module_without

skip_module_without("qdrant_client", "needs qdrant-client (pip install '.[qdrant]')")  # imported by the fixture

from rag_eval.cli import main  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
DOCUMENTS = [
    {"id": "reef", "text": "Coral reefs bleach when the water warms. Reefs shelter a quarter of marine species."},
    {"id": "kelp", "text": "Kelp forests grow in cold water. Sea otters keep urchins from eating them."},
]
QUERIES = [
    {"id": "q1", "text": "why do reefs bleach", "evidence": [{"doc": "reef", "quote": "Coral reefs bleach when the water warms."}]},
    {"id": "q2", "text": "what eats kelp", "evidence": [{"doc": "kelp", "quote": "Sea otters keep urchins from eating them."}]},
]
CHUNKS = [
    {"doc_id": "reef", "start": 0, "end": 40, "text": "Coral reefs bleach when the water warms."},  # exact
    {"doc_id": "kelp", "start": 0, "end": 32, "text": "Giant kelp forests grow in cold."},  # edited since: stale
    {"doc_id": "mangrove", "start": 0, "end": 20, "text": "Mangroves trap silt."},  # not in the dataset
]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from qdrant_client import QdrantClient, models

    folder = tmp_path_factory.mktemp("team")
    (folder / "set.yaml").write_text(yaml.safe_dump({"documents": DOCUMENTS, "queries": QUERIES}), encoding="utf-8")
    assert DOCUMENTS[0]["text"][0:40] == CHUNKS[0]["text"]
    client = QdrantClient(path=str(folder / "qdrant"))
    client.create_collection("chunks", vectors_config=models.VectorParams(size=384, distance=models.Distance.DOT))
    vectors = np.random.default_rng(7).normal(size=(3, 384)).astype(np.float32)
    client.upsert("chunks", points=[
        models.PointStruct(id=i, vector=(v / np.linalg.norm(v)).tolist(), payload=c)
        for i, (c, v) in enumerate(zip(CHUNKS, vectors))
    ])
    client.close()
    return folder


def _config(folder: Path, name: str, retriever: dict) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump({
        "name": name, "dataset": {"path": "set.yaml"}, "retrievers": [retriever], "top_k": 3,
        "metrics": ["doc_ndcg@3", "evidence_recall@3"], "output": f"out-{name}", "cache_dir": str(folder / "cache"),
    }), encoding="utf-8")
    return path


def test_the_report_counts_unmapped_and_stale_hits_and_compare_refuses_a_stale_index(setup, capsys):
    team = _config(setup, "team", {"label": "team", "adapter": "qdrant", "params": {
        "mode": "read_only", "path": "qdrant", "collection": "chunks", "model": "all-MiniLM-L6-v2",
        "map": {"doc_id": "doc_id", "start": "start", "end": "end"}}})
    assert main(["run", str(team), "--no-progress"]) == 0
    results = json.loads((setup / "out-team" / "team.json").read_text(encoding="utf-8"))
    mapping = results["retriever"]["description"]["mapping"]
    assert (mapping["hits"], mapping["mapped"], mapping["stale"], mapping["unmapped"]) == (6, 2, 2, 4)
    assert mapping["unmapped_by_query"] == {"q1": 2, "q2": 2}
    database = results["retriever"]["description"]["database"]
    assert (database["collection"], database["points"], database["mode"]) == ("chunks", 3, "read_only")
    report = (setup / "out-team" / "report.md").read_text(encoding="utf-8")
    section = report.split("**External indexes and services**", 1)[1]
    row = next(line for line in section.splitlines() if line.startswith("| team | qdrant"))
    assert "| chunks | 3 |" in row and "| 2 of 6 (spans 2) | 4 | 2 |" in row
    assert "- **team**: 4 hits of 2 queries map to nothing and are not counted: q1 (2), q2 (2)" in report
    assert "- **team**: stale index: 2 hits name offsets whose text the document no longer holds" in report

    dense = _config(setup, "dense", {"label": "dense", "adapter": "dense", "params": {"model": "all-MiniLM-L6-v2"}})
    assert main(["run", str(dense), "--no-progress"]) == 0
    capsys.readouterr()
    code = main(["compare", str(setup / "out-dense" / "dense.json"), str(setup / "out-team" / "team.json"),
                 "--gate", "evidence_recall@3:max_drop=0.5"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith("rag-eval: error: incomparable results: the candidate ") and err.count("\n") == 0
    assert "searched a stale index (2 hits name offsets whose text its document no longer holds)" in err
