"""``adapter: lancedb`` against the real engine: an embedded LanceDB database in a tmp folder.

What is held, with numbers derived apart from the adapter:
- managed exact search gives ``dense``'s exact ranking on ocean-facts (same ids, same order, scores
  within 1e-5: LanceDB's dot distance is ``1 - q·v``, turned back), a second index() reuses the table,
  and the ivf_pq and ivf_hnsw_sq indexes record the exact reference;
- read-only: a table a team filled itself (sentence chunks of documents, its own sentence-transformers
  vectors, an ``id`` column and a ``metadata`` struct with doc_id/start/end) maps to spans whose scores are
  numpy's dot products; an edited document is reported (stale, relocated); nothing is written;
- ``managed_collections`` and ``rag-eval clean`` see only rag_eval's tables;
- bad input through the CLI: exit 2, one line naming params.<field>, no output folder;
- ``rag-eval run`` on ocean-facts: per-query ndcg of lancedb equals dense's.
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from conftest import skip_module_without

for _needed in ("lancedb", "pyarrow"):
    skip_module_without(_needed, f"adapter lancedb needs {_needed} (pip install lancedb pyarrow)")

from rag_eval import cli  # noqa: E402
from rag_eval._data.datasets import load_dataset  # noqa: E402
from rag_eval._data.datasets.model import passage_text  # noqa: E402
from rag_eval._models import files  # noqa: E402
from rag_eval._retrievers import registry  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
OCEAN = REPO / "datasets" / "ocean_facts.yaml"
TOP_K = 10

# A team's documents, cut by the team into sentences (its own chunking), and the dataset's later edit of them.
DOCUMENTS = {
    "pacific": "The Pacific Ocean is the largest ocean. Its Challenger Deep is the deepest known point. "
    "The Ring of Fire circles its edges.",
    "atlantic": "The Atlantic Ocean separates Europe and America. The Mid-Atlantic Ridge runs down its middle.",
    "deserts": "The Sahara Desert is the largest hot desert. Antarctica is the largest cold desert.",
}
EDITED = {
    "pacific": DOCUMENTS["pacific"],
    # the second sentence rewritten: its chunk no longer exists (stale)
    "atlantic": "The Atlantic Ocean separates Europe and America. A ridge of volcanoes splits the seabed.",
    # a sentence put in front: every chunk of the document moved (relocated)
    "deserts": "Deserts receive little rain. " + DOCUMENTS["deserts"],
}
TEAM_QUERIES = {"t1": "which ocean is the biggest", "t2": "where is the deepest point", "t3": "cold desert"}


def sentences(documents: dict[str, str]) -> list[dict[str, Any]]:
    """The team's chunks: each sentence with its document and offsets."""
    chunks = []
    for doc, text in documents.items():
        start = 0
        for part in text.split(". "):
            piece = part if part.endswith(".") else part + "."
            at = text.index(piece, start)
            chunks.append({"doc_id": doc, "start": at, "end": at + len(piece), "text": piece})
            start = at + len(piece)
    return chunks


def ranked(ranking: dict[str, float]) -> list[str]:
    """rag_eval's order: score descending, ties by id descending."""
    by_id = sorted(ranking.items(), key=lambda kv: kv[0].encode(), reverse=True)
    return [unit for unit, _ in sorted(by_id, key=lambda kv: -kv[1])]


def table_checksum(uri: Path, name: str) -> tuple[int, int, str]:
    """(rows, version, sha256 of every row) of a table, read by a connection of the test's own."""
    import lancedb
    table = lancedb.connect(str(uri)).open_table(name)
    rows = sorted(table.to_arrow().to_pylist(), key=lambda row: row["id"])
    return len(rows), table.version, hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()


def folder_bytes(path: Path) -> dict[str, str]:
    """sha256 of every file under ``path``."""
    return {
        str(file.relative_to(path)): hashlib.sha256(file.read_bytes()).hexdigest()
        for file in sorted(path.rglob("*")) if file.is_file()
    }


def vectors_column(matrix: np.ndarray) -> Any:
    import pyarrow as pa
    return pa.FixedSizeListArray.from_arrays(pa.array(np.ascontiguousarray(matrix, dtype=np.float32).ravel()), matrix.shape[1])


# --------------------------------------------------------------------------- shared set-up


@pytest.fixture(scope="module")
def ocean(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """ocean-facts, a cache folder shared by every retriever here, and dense's exact top 10 (the reference)."""
    dataset = load_dataset({"path": str(OCEAN)})
    queries = {qid: query.text for qid, query in dataset.queries.items()}
    cache = tmp_path_factory.mktemp("lancedb-cache")
    dense = registry.build("dense", {"cache_dir": str(cache), "show_progress": False, "device": "cpu"})
    dense.index(dataset.corpus)
    return {"corpus": dataset.corpus, "queries": queries, "cache": cache, "dense": dense.search(queries, TOP_K)}


def build(ocean: dict[str, Any], **params: Any) -> Any:
    return registry.build("lancedb", {"cache_dir": str(ocean["cache"]), "show_progress": False, "device": "cpu", **params})


def run_once(ocean: dict[str, Any], **params: Any) -> tuple[Any, dict[str, dict[str, float]], dict[str, Any]]:
    retriever = build(ocean, **params)
    try:
        retriever.index(ocean["corpus"])
        ranking = retriever.search(ocean["queries"], TOP_K)
        return retriever, ranking, retriever.describe()
    finally:
        retriever.close()


def assert_equals_dense(ranking: dict[str, dict[str, float]], dense: dict[str, dict[str, float]]) -> float:
    """Same ids in the same order for every query, scores within 1e-5; returns the largest score difference."""
    assert ranking.keys() == dense.keys()
    worst = 0.0
    for qid, expected in dense.items():
        assert ranked(ranking[qid]) == ranked(expected), qid
        worst = max([worst] + [abs(ranking[qid][unit] - score) for unit, score in expected.items()])
    assert worst < 1e-5
    return worst


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory, ocean: dict[str, Any]) -> dict[str, Any]:
    """A LanceDB folder filled as a team would: its chunks, its own vectors, an id column, a metadata struct."""
    import lancedb
    import pyarrow as pa
    from sentence_transformers import SentenceTransformer

    uri = tmp_path_factory.mktemp("team-lancedb")
    model = SentenceTransformer(str(files.resolve_model("all-MiniLM-L6-v2", "test").path), device="cpu")
    chunks = sentences(DOCUMENTS)
    vectors = model.encode([c["text"] for c in chunks], normalize_embeddings=True).astype(np.float32)
    query_vectors = model.encode(list(TEAM_QUERIES.values()), normalize_embeddings=True).astype(np.float32)
    db = lancedb.connect(str(uri))

    def table(matrix: np.ndarray) -> Any:
        return pa.table({
            "id": [f"chunk-{row}" for row in range(len(matrix))],
            "vector": vectors_column(matrix),
            "text": [c["text"] for c in chunks][: len(matrix)],
            "metadata": [{"doc_id": c["doc_id"], "start": c["start"], "end": c["end"]} for c in chunks][: len(matrix)],
        })

    db.create_table("docs", table(vectors))
    # beside it: an 8-dimensional table (the wrong model), and one with rag_eval's prefix that rag_eval did not make
    db.create_table("small", table(np.full((2, 8), 0.1, dtype=np.float32)))
    db.create_table("rag_eval_not_ours", table(vectors[:2]))
    db.create_table("void", schema=table(vectors[:1]).schema)  # the team's columns, no row
    return {"uri": uri, "chunks": chunks, "vectors": vectors, "query_vectors": query_vectors}


# --------------------------------------------------------------------------- managed


def test_managed_exact_equals_dense_and_is_reused(ocean, tmp_path):
    import lancedb
    import pyarrow as pa
    uri = tmp_path / "lance"
    first, ranking, info = run_once(ocean, uri=str(uri))
    worst = assert_equals_dense(ranking, ocean["dense"])
    database = info["database"]
    assert database["reused"] is False
    assert database["points"] == len(ocean["corpus"]) == 37
    assert database["dimension"] == 384 and database["metric"] == "dot" and database["vector_indexes"] == []
    assert database["client_version"] == version("lancedb") and database["index"] == {"kind": "exact"}
    assert database["ingest_rows_per_s"] > 0 and info["latency"]["queries"] == len(ocean["queries"])
    assert info["mapping"]["mapped"] == info["mapping"]["hits"] == len(ocean["queries"]) * TOP_K
    name = first.collection_name
    assert name.startswith("rag_eval_")

    second, again, info2 = run_once(ocean, uri=str(uri))
    assert info2["database"]["reused"] is True and second.collection_name == name
    assert again == ranking  # the very numbers, from the stored vectors
    # what a managed table holds: Arrow columns, the vectors as rag_eval encoded them, the fingerprint on the field
    table = lancedb.connect(str(uri)).open_table(name)
    assert table.schema.field("vector").type == pa.list_(pa.float32(), 384)
    rows = {row["rag_eval_id"]: row for row in table.to_arrow().to_pylist()}
    first_id = sorted(ocean["corpus"])[0]
    assert rows[first_id]["text"] == passage_text(ocean["corpus"][first_id])
    assert table.schema.field("vector").metadata[b"rag_eval_fingerprint"].decode().startswith(name[len("rag_eval_"):])
    print(f"\nlancedb folder: ingest {database['ingest_rows_per_s']} rows/s, p50 {info['latency']['p50_ms']} ms, "
          f"p95 {info['latency']['p95_ms']} ms, max |score - dense| {worst:.2e}")


def test_an_unmarked_table_is_written_again(ocean, tmp_path):
    import lancedb
    import pyarrow as pa
    uri = tmp_path / "lance"
    first, _, _ = run_once(ocean, uri=str(uri))
    db = lancedb.connect(str(uri))  # as a run killed before the marker: the rows without the fingerprint
    db.drop_table(first.collection_name)
    db.create_table(first.collection_name, pa.table({"vector": vectors_column(np.zeros((37, 384))), "rag_eval_id": ["x"] * 37}))
    _, ranking, info = run_once(ocean, uri=str(uri))
    assert info["database"]["reused"] is False and info["database"]["points"] == 37
    assert_equals_dense(ranking, ocean["dense"])


@pytest.mark.parametrize(
    ("index", "built"),
    [
        ({"kind": "ivf_pq", "num_partitions": 2, "num_sub_vectors": 48, "nprobes": 2, "attribution_sample": 5}, "IvfPq"),
        ({"kind": "ivf_hnsw_sq", "num_partitions": 1, "m": 8, "ef": 50, "attribution_sample": 5}, "IvfHnswSq"),
    ],
)
def test_ivf_indexes_are_approximate_and_record_the_exact_reference(ocean, tmp_path, index, built):
    retriever, ranking, info = run_once(ocean, uri=str(tmp_path / "lance"), index=index)
    assert retriever.approximate() is True
    reference = retriever.exact_reference
    assert reference is not None and len(reference) == 5
    for qid, exact in reference.items():  # the exact top 10 over the same vectors: dense's, numbers included
        assert ranked(exact) == ranked(ocean["dense"][qid])
        assert max(abs(exact[unit] - s) for unit, s in ocean["dense"][qid].items()) < 1e-6
    database = info["database"]
    assert [row["type"] for row in database["vector_indexes"]] == [built]
    assert database["index"]["kind"] == index["kind"] and database["index"]["attribution_sample"] == 5
    assert all(len(units) == TOP_K for units in ranking.values())


# --------------------------------------------------------------------------- read-only


def test_read_only_maps_a_teams_chunks_to_spans_and_reports_the_stale(ocean, team):
    before = table_checksum(team["uri"], "docs"), folder_bytes(team["uri"])
    corpus = {doc: {"text": text, "title": ""} for doc, text in EDITED.items()}
    chunks = team["chunks"]
    retriever = build(ocean, mode="read_only", uri=str(team["uri"]), collection="docs",
                      map={"doc_id": "doc_id", "start": "start", "end": "end"})
    try:
        retriever.index(corpus)
        ranking = retriever.search(TEAM_QUERIES, len(chunks))
        info = retriever.describe()
    finally:
        retriever.close()
    shift = len("Deserts receive little rain. ")
    stale = [row for row, c in enumerate(chunks) if c["text"] == "The Mid-Atlantic Ridge runs down its middle."]
    assert len(stale) == 1
    for qid, row in zip(TEAM_QUERIES, team["query_vectors"]):
        scores = team["vectors"] @ row  # numpy's dot products of the team's unit vectors
        expected = {}
        for index, chunk in enumerate(chunks):
            if index in stale:
                continue
            start = chunk["start"] + (shift if chunk["doc_id"] == "deserts" else 0)
            expected[f"{chunk['doc_id']}#{start}-{start + len(chunk['text'])}"] = float(scores[index])
        assert ranked(ranking[qid]) == ranked(expected)
        assert max(abs(ranking[qid][unit] - s) for unit, s in expected.items()) < 1e-5
    mapping = info["mapping"]
    deserts = sum(c["doc_id"] == "deserts" for c in chunks)
    assert mapping["hits"] == len(TEAM_QUERIES) * len(chunks) == 21
    assert mapping["stale"] == len(TEAM_QUERIES) * 1
    assert mapping["relocated"] == len(TEAM_QUERIES) * deserts == 6
    assert mapping["mapped"] == mapping["hits"] - mapping["stale"]
    assert {row["hit"] for row in mapping["examples"]["stale"]} == {f"chunk-{stale[0]}"}  # Hit.id: the id column
    assert info["database"]["metric"] == "dot" and info["database"]["points"] == len(chunks)
    # read-only wrote nothing: the same rows and version, the same bytes in the folder
    assert (table_checksum(team["uri"], "docs"), folder_bytes(team["uri"])) == before


def test_managed_collections_lists_only_rag_evals_and_clean_removes_only_them(ocean, team, tmp_path):
    import lancedb
    managed, _, _ = run_once(ocean, uri=str(team["uri"]))  # a managed table beside the team's
    retriever = build(ocean, uri=str(team["uri"]))
    retriever.connect()
    try:
        assert retriever.managed_collections() == [managed.collection_name]
    finally:
        retriever.close()
    config = tmp_path / "clean.yaml"
    config.write_text(yaml.safe_dump({
        "dataset": {"path": str(OCEAN)}, "top_k": TOP_K, "metrics": ["ndcg@10"],
        "retrievers": [{"label": "l", "adapter": "lancedb", "params": {"uri": str(team["uri"]), "device": "cpu"}}],
    }))
    assert cli.main(["clean", str(config)]) == 0
    assert sorted(lancedb.connect(str(team["uri"])).list_tables().tables) == ["docs", "rag_eval_not_ours", "small", "void"]


# --------------------------------------------------------------------------- bad input, through the CLI


def write_config(tmp_path: Path, ocean: dict[str, Any], **params: Any) -> Path:
    config = {
        "dataset": {"path": str(OCEAN)}, "top_k": TOP_K, "metrics": ["ndcg@10"], "cache_dir": str(ocean["cache"]),
        "retrievers": [{"label": "l", "adapter": "lancedb", "params": {"device": "cpu", "show_progress": False, **params}}],
        "output": str(tmp_path / "out"),
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


READ_ONLY = {"mode": "read_only", "collection": "docs", "map": {"doc_id": "doc_id", "start": "start", "end": "end"}}


@pytest.mark.parametrize(
    ("case", "params", "words"),
    [
        ("missing table", {**READ_ONLY, "collection": "nope"}, ["'nope' does not exist", "params.collection"]),
        ("wrong dimension", {**READ_ONLY, "collection": "small"}, ["384-dimensional", "8-dimensional", "params.model"]),
        ("absent metadata key", {**READ_ONLY, "map": {"doc_id": "document", "start": "start", "end": "end"}},
         ["params.map.doc_id", "'document'"]),
        ("absent vector column", {**READ_ONLY, "vector_column": "embedding"}, ["params.vector_column", "'embedding'"]),
        ("missing folder", {**READ_ONLY, "uri": "MISSING"}, ["params.uri", "does not exist"]),
        ("a file as folder", {**READ_ONLY, "uri": "FILE"}, ["params.uri", "is a file"]),
        ("read-only field in managed", {"metric": "l2"}, ["params", "metric apply to mode read_only"]),
        ("empty table", {**READ_ONLY, "collection": "void"},
         ["lancedb: none of the", "queries got a hit, so every metric would read 0"]),
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(ocean, team, tmp_path, capsys, case, params, words):
    params = dict(params)
    if params.get("mode") == "read_only":
        params.setdefault("uri", str(team["uri"]))
    if params.get("uri") == "MISSING":
        params["uri"] = str(tmp_path / "missing")
    if params.get("uri") == "FILE":
        (tmp_path / "file").write_text("x")
        params["uri"] = str(tmp_path / "file")
    before = folder_bytes(team["uri"])
    code = cli.main(["run", str(write_config(tmp_path, ocean, **params)), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("rag-eval: error:"), err
    for word in words:
        assert word in err, err
    assert not (tmp_path / "out").exists() and not (tmp_path / "missing").exists()
    assert folder_bytes(team["uri"]) == before


# --------------------------------------------------------------------------- end to end


def test_rag_eval_run_gives_dense_per_query_ndcg(ocean, tmp_path):
    config = yaml.safe_load((REPO / "configs" / "ocean_facts.yaml").read_text())
    config["dataset"]["path"] = str(OCEAN)
    config["cache_dir"] = str(ocean["cache"])
    config["retrievers"] = [
        {"label": "dense", "adapter": "dense", "params": {"device": "cpu"}},
        {"label": "lancedb", "adapter": "lancedb", "params": {"device": "cpu", "uri": str(tmp_path / "l")}},
    ]
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config))
    assert cli.main(["run", str(path), "--output", str(tmp_path / "out"), "--no-progress"]) == 0
    per_query = {
        label: json.loads((tmp_path / "out" / f"{label}.json").read_text())["results"]["per_query"]
        for label in ("dense", "lancedb")
    }
    assert len(per_query["dense"]) == 10 and per_query["lancedb"].keys() == per_query["dense"].keys()
    for qid, row in per_query["dense"].items():
        for metric in config["metrics"]:
            assert per_query["lancedb"][qid][metric] == pytest.approx(row[metric], abs=1e-12), (qid, metric)
