"""``adapter: qdrant`` against the real engine: qdrant-client's local mode (a tmp folder, and in memory).

What is held, with numbers derived apart from the adapter:
- managed exact search gives ``dense``'s exact ranking on ocean-facts (same ids, same order, scores
  within 1e-5), a second index() reuses the collection, and an hnsw index records the exact reference;
- read-only: a collection a team filled itself (sentence chunks of documents, its own
  sentence-transformers vectors, Cosine distance, payload text/doc_id/start/end) maps to spans whose
  scores are numpy's dot products; an edited document is reported (stale, relocated); nothing is written;
- ``managed_collections`` and ``rag-eval clean`` see only rag_eval's collections;
- bad input through the CLI: exit 2, one line naming params.<field>, no output folder;
- ``rag-eval run`` on ocean-facts: per-query ndcg of qdrant equals dense's.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from conftest import skip_module_without

skip_module_without("qdrant_client", "adapter qdrant needs qdrant-client (pip install qdrant-client)")

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


def points_checksum(path: Path, name: str) -> tuple[int, str]:
    """(points, sha256 of every id, vector and payload) of a local collection, read by a client of the test's own."""
    from qdrant_client import QdrantClient
    client = QdrantClient(path=str(path))
    try:
        points, _ = client.scroll(name, limit=10_000, with_payload=True, with_vectors=True)
        digest = hashlib.sha256()
        for point in sorted(points, key=lambda p: str(p.id)):
            digest.update(json.dumps([str(point.id), point.vector, point.payload], sort_keys=True).encode())
        return len(points), digest.hexdigest()
    finally:
        client.close()


def folder_bytes(path: Path) -> dict[str, str]:
    """sha256 of every file under ``path`` but the lock file a client opens."""
    return {
        str(file.relative_to(path)): hashlib.sha256(file.read_bytes()).hexdigest()
        for file in sorted(path.rglob("*")) if file.is_file() and file.name != ".lock"
    }


# --------------------------------------------------------------------------- shared set-up


@pytest.fixture(scope="module")
def ocean(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """ocean-facts, a cache folder shared by every retriever here, and dense's exact top 10 (the reference)."""
    dataset = load_dataset({"path": str(OCEAN)})
    queries = {qid: query.text for qid, query in dataset.queries.items()}
    cache = tmp_path_factory.mktemp("qdrant-cache")
    dense = registry.build("dense", {"cache_dir": str(cache), "show_progress": False, "device": "cpu"})
    dense.index(dataset.corpus)
    return {"corpus": dataset.corpus, "queries": queries, "cache": cache, "dense": dense.search(queries, TOP_K)}


def build(ocean: dict[str, Any], **params: Any) -> Any:
    return registry.build("qdrant", {"cache_dir": str(ocean["cache"]), "show_progress": False, "device": "cpu", **params})


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
    """A local Qdrant folder filled as a team would: its chunks, its own vectors (Cosine), its payload."""
    from qdrant_client import QdrantClient, models
    from sentence_transformers import SentenceTransformer

    path = tmp_path_factory.mktemp("team-qdrant")
    model = SentenceTransformer(str(files.resolve_model("all-MiniLM-L6-v2", "test").path), device="cpu")
    chunks = sentences(DOCUMENTS)
    vectors = model.encode([c["text"] for c in chunks], normalize_embeddings=True).astype(np.float32)
    query_vectors = model.encode(list(TEAM_QUERIES.values()), normalize_embeddings=True).astype(np.float32)
    client = QdrantClient(path=str(path))
    client.create_collection("docs", vectors_config=models.VectorParams(size=384, distance=models.Distance.COSINE))
    client.upsert("docs", points=[
        models.PointStruct(id=1000 + row, vector=vectors[row].tolist(), payload=chunk) for row, chunk in enumerate(chunks)
    ], wait=True)
    # beside it: an 8-dimensional collection (the wrong model), and one with rag_eval's prefix that rag_eval did not make
    for name, size in (("small", 8), ("rag_eval_not_ours", 384)):
        client.create_collection(name, vectors_config=models.VectorParams(size=size, distance=models.Distance.DOT))
        client.upsert(name, points=[models.PointStruct(id=1, vector=[0.1] * size, payload=chunks[0])], wait=True)
    # "holey": the same points, the first one (the lowest id: what a one-point sample reads) without doc_id; "void": none
    client.create_collection("holey", vectors_config=models.VectorParams(size=384, distance=models.Distance.COSINE))
    client.upsert("holey", points=[
        models.PointStruct(id=1000 + row, vector=vectors[row].tolist(),
                           payload={k: v for k, v in chunk.items() if row or k != "doc_id"})
        for row, chunk in enumerate(chunks)
    ], wait=True)
    client.create_collection("void", vectors_config=models.VectorParams(size=384, distance=models.Distance.COSINE))
    client.close()
    return {"path": path, "chunks": chunks, "vectors": vectors, "query_vectors": query_vectors}


# --------------------------------------------------------------------------- managed


def test_managed_exact_in_a_folder_equals_dense_and_is_reused(ocean, tmp_path):
    from qdrant_client import QdrantClient
    path = tmp_path / "qdrant"
    first, ranking, info = run_once(ocean, path=str(path))
    worst = assert_equals_dense(ranking, ocean["dense"])
    database = info["database"]
    assert database["reused"] is False
    assert database["points"] == len(ocean["corpus"]) == 37
    assert database["distance"] == "Dot" and database["dimension"] == 384 and database["deployment"] == "local folder"
    assert database["client_version"] == version("qdrant-client")
    assert database["ingest_rows_per_s"] > 0 and info["latency"]["queries"] == len(ocean["queries"])
    assert info["mapping"]["mapped"] == info["mapping"]["hits"] == len(ocean["queries"]) * TOP_K
    name = first.collection_name
    assert name.startswith("rag_eval_")

    second, again, info2 = run_once(ocean, path=str(path))
    assert info2["database"]["reused"] is True and second.collection_name == name
    assert again == ranking  # the very numbers, from the stored vectors
    # what a managed point holds: the row number as id, the passage id and text as payload
    client = QdrantClient(path=str(path))
    try:
        point = client.retrieve(name, ids=[0], with_payload=True)[0]
        first_id = sorted(ocean["corpus"])[0]
        assert point.payload == {"rag_eval_id": first_id, "text": passage_text(ocean["corpus"][first_id])}
        assert client.get_collection(name).config.metadata["rag_eval_fingerprint"].startswith(name[len("rag_eval_"):])
    finally:
        client.close()
    print(f"\nqdrant local folder: ingest {database['ingest_rows_per_s']} rows/s, p50 {info['latency']['p50_ms']} ms, "
          f"p95 {info['latency']['p95_ms']} ms, max |score - dense| {worst:.2e}")


def test_in_memory_equals_dense(ocean):
    _, ranking, info = run_once(ocean, location=":memory:")
    assert_equals_dense(ranking, ocean["dense"])
    assert info["database"]["deployment"] == "in memory" and info["database"]["reused"] is False


def test_a_half_filled_collection_is_filled_again(ocean, tmp_path):
    from qdrant_client import QdrantClient, models
    path = tmp_path / "qdrant"
    first, _, _ = run_once(ocean, path=str(path))
    client = QdrantClient(path=str(path))  # as a run killed before the marker: metadata without the fingerprint
    client.delete_collection(first.collection_name)
    client.create_collection(first.collection_name, vectors_config=models.VectorParams(size=384, distance=models.Distance.DOT))
    client.close()
    _, ranking, info = run_once(ocean, path=str(path))
    assert info["database"]["reused"] is False and info["database"]["points"] == 37
    assert_equals_dense(ranking, ocean["dense"])


def test_hnsw_is_approximate_and_records_the_exact_reference(ocean):
    retriever, ranking, info = run_once(ocean, location=":memory:", index={"kind": "hnsw", "m": 8, "attribution_sample": 5})
    assert retriever.approximate() is True
    reference = retriever.exact_reference
    assert reference is not None and len(reference) == 5
    for qid, exact in reference.items():  # the exact top 10 over the same vectors: dense's
        assert ranked(exact) == ranked(ocean["dense"][qid])
    assert info["database"]["index"] == {"kind": "hnsw", "m": 8, "ef_construct": 100, "attribution_sample": 5, "seed": 0}
    assert "local engine" in info["database"]["search"]  # said: local mode scans, the graph is a server's
    assert_equals_dense(ranking, ocean["dense"])


# --------------------------------------------------------------------------- read-only


def test_read_only_maps_a_teams_chunks_to_spans_and_reports_the_stale(ocean, team):
    before = points_checksum(team["path"], "docs"), folder_bytes(team["path"])
    corpus = {doc: {"text": text, "title": ""} for doc, text in EDITED.items()}
    chunks = team["chunks"]
    retriever = build(ocean, mode="read_only", path=str(team["path"]), collection="docs",
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
        scores = team["vectors"] @ row  # the team's cosine: numpy's dot of unit vectors
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
    assert info["database"]["distance"] == "Cosine" and info["database"]["points"] == len(chunks)
    # read-only wrote nothing: the same points and payloads, the same bytes in the folder
    assert (points_checksum(team["path"], "docs"), folder_bytes(team["path"])) == before


def test_managed_collections_lists_only_rag_evals_and_clean_removes_only_them(ocean, team, tmp_path):
    from qdrant_client import QdrantClient
    managed, _, _ = run_once(ocean, path=str(team["path"]))  # a managed collection beside the team's
    retriever = build(ocean, path=str(team["path"]))
    retriever.connect()
    try:
        assert retriever.managed_collections() == [managed.collection_name]
    finally:
        retriever.close()
    config = tmp_path / "clean.yaml"
    config.write_text(yaml.safe_dump({
        "dataset": {"path": str(OCEAN)}, "top_k": TOP_K, "metrics": ["ndcg@10"],
        "retrievers": [{"label": "q", "adapter": "qdrant", "params": {"path": str(team["path"]), "device": "cpu"}}],
    }))
    assert cli.main(["clean", str(config)]) == 0
    client = QdrantClient(path=str(team["path"]))
    try:
        assert sorted(c.name for c in client.get_collections().collections) == ["docs", "holey", "rag_eval_not_ours", "small", "void"]
    finally:
        client.close()


# --------------------------------------------------------------------------- bad input, through the CLI


def write_config(tmp_path: Path, ocean: dict[str, Any], **params: Any) -> Path:
    config = {
        "dataset": {"path": str(OCEAN)}, "top_k": TOP_K, "metrics": ["ndcg@10"], "cache_dir": str(ocean["cache"]),
        "retrievers": [{"label": "q", "adapter": "qdrant", "params": {"device": "cpu", "show_progress": False, **params}}],
        "output": str(tmp_path / "out"),
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


READ_ONLY = {"mode": "read_only", "collection": "docs", "map": {"doc_id": "doc_id", "start": "start", "end": "end"}}


@pytest.mark.parametrize(
    ("case", "params", "words"),
    [
        ("missing collection", {**READ_ONLY, "collection": "nope"}, ["'nope' does not exist", "params.collection"]),
        ("wrong dimension", {**READ_ONLY, "collection": "small"}, ["384-dimensional", "8-dimensional", "params.model"]),
        ("absent payload field", {**READ_ONLY, "map": {"doc_id": "document", "start": "start", "end": "end"}},
         ["params.map.doc_id", "'document'"]),
        ("missing folder", {**READ_ONLY, "path": "MISSING"}, ["params.path", "does not exist"]),
        ("a file as folder", {**READ_ONLY, "path": "FILE"}, ["params.path", "is a file"]),
        ("two places", {"path": "x", "location": ":memory:"}, ["location and path", "keep one"]),
        ("a key in the config", {"url": "http://127.0.0.1:9", "api_key": "secret"}, ["'api_key'", "api_key_env"]),
        ("an unset key variable", {"url": "http://127.0.0.1:9", "api_key_env": "RAG_EVAL_TEST_NO_SUCH_KEY"},
         ["params.api_key_env", "RAG_EVAL_TEST_NO_SUCH_KEY"]),
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(ocean, team, tmp_path, capsys, case, params, words):
    params = dict(params)
    if params.get("mode") == "read_only":
        params.setdefault("path", str(team["path"]))
    if params.get("path") == "MISSING":
        params["path"] = str(tmp_path / "missing")
    if params.get("path") == "FILE":
        (tmp_path / "file").write_text("x")
        params["path"] = str(tmp_path / "file")
    before = folder_bytes(team["path"])
    code = cli.main(["run", str(write_config(tmp_path, ocean, **params)), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("rag-eval: error:"), err
    for word in words:
        assert word in err, err
    assert "secret" not in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "missing").exists()
    assert folder_bytes(team["path"]) == before


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A loopback TCP port that accepts connections and never answers (a hung server)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    listener.close()


def test_an_unreachable_url_exits_2_in_a_real_process(ocean, tmp_path, silent_server):
    config = write_config(tmp_path, ocean, url=silent_server, timeout=1)
    done = subprocess.run([sys.executable, "-m", "rag_eval.cli", "run", str(config), "--no-progress"],
                          capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1 and "params.url" in line and "within 1 s" in line, line
    assert not (tmp_path / "out").exists()


def test_a_server_answering_garbage_exits_2(ocean, tmp_path, capsys):
    class Garbage(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b"<html>not qdrant</html>")

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Garbage)
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        code = cli.main(["run", str(write_config(tmp_path, ocean, url=url, timeout=2)), "--no-progress"])
    finally:
        server.shutdown()
        server.server_close()
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "params.url" in err, err
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- end to end


def test_rag_eval_run_gives_dense_per_query_ndcg(ocean, tmp_path):
    config = yaml.safe_load((REPO / "configs" / "ocean_facts.yaml").read_text())
    config["dataset"]["path"] = str(OCEAN)
    config["cache_dir"] = str(ocean["cache"])
    config["retrievers"] = [
        {"label": "dense", "adapter": "dense", "params": {"device": "cpu"}},
        {"label": "qdrant", "adapter": "qdrant", "params": {"device": "cpu", "path": str(tmp_path / "q")}},
        {"label": "qdrant-memory", "adapter": "qdrant", "params": {"device": "cpu", "location": ":memory:"}},
    ]
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config))
    assert cli.main(["run", str(path), "--output", str(tmp_path / "out"), "--no-progress"]) == 0
    per_query = {
        label: json.loads((tmp_path / "out" / f"{label}.json").read_text())["results"]["per_query"]
        for label in ("dense", "qdrant", "qdrant-memory")
    }
    assert len(per_query["dense"]) == 10
    for label in ("qdrant", "qdrant-memory"):
        assert per_query[label].keys() == per_query["dense"].keys()
        for qid, row in per_query["dense"].items():
            for metric in config["metrics"]:
                assert per_query[label][qid][metric] == pytest.approx(row[metric], abs=1e-12), (label, qid, metric)


def test_a_point_without_a_map_field_is_counted_not_the_collection_refused(ocean, team):
    """The first point lacks doc_id (others hold it): its hits are unmapped with the reason, the rest are ranked."""
    corpus = {doc: {"text": text, "title": ""} for doc, text in EDITED.items()}
    chunks = team["chunks"]
    retriever = build(ocean, mode="read_only", path=str(team["path"]), collection="holey",
                      map={"doc_id": "doc_id", "start": "start", "end": "end"})
    try:
        retriever.index(corpus)
        retriever.search(TEAM_QUERIES, len(chunks))
        mapping = retriever.describe()["mapping"]
    finally:
        retriever.close()
    # every query gets every point: per query 1 stale chunk (as in "docs") + the point without doc_id
    assert mapping["hits"] == len(TEAM_QUERIES) * len(chunks)
    assert mapping["unmapped_by_query"] == {qid: 2 for qid in TEAM_QUERIES}
    assert mapping["stale"] == len(TEAM_QUERIES) and mapping["mapped"] == mapping["hits"] - 2 * len(TEAM_QUERIES)
    assert any("metadata has no 'doc_id'" in row["why"] for row in mapping["examples"]["unmapped"])


def test_an_empty_collection_is_refused(ocean, team, tmp_path, capsys):
    params = {**READ_ONLY, "collection": "void", "path": str(team["path"])}
    code = cli.main(["run", str(write_config(tmp_path, ocean, **params)), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"qdrant: none of the {len(ocean['queries'])} queries got a hit, so every metric would read 0" in err, err
    assert not (tmp_path / "out").exists()
