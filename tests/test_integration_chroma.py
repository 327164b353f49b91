"""``adapter: chroma`` against a real Chroma (embedded folder, and a ``chroma run`` server).

Managed: the collection rag_eval fills gives the ranking of rag_eval's own exact ``dense`` search
(same model, same vectors) on ocean_facts, scores equal up to float32 rounding; it is reused by
the next run and refilled after a killed run; only rag_eval's marked collections are listed.
Read-only: a team's collection of paragraph chunks of ocean_documents (Chroma's default l2 space,
the team's own ids, doc_id/start/end metadata) maps to evidence spans; a stale and a moved chunk
are counted; nothing is written. Bad input exits 2 with one line and writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import yaml
from conftest import skip_module_without

if TYPE_CHECKING:
    from chromadb.config import Settings

skip_module_without("chromadb", "adapter chroma needs the chromadb package (pip install chromadb)")


from rag_eval._data.datasets import load_dataset  # noqa: E402
from rag_eval._retrievers import registry  # noqa: E402
from rag_eval._retrievers.external.chroma import FINGERPRINT_KEY  # noqa: E402
from rag_eval.cli import main  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
FACTS = REPO / "datasets" / "ocean_facts.yaml"
DOCUMENTS = REPO / "datasets" / "ocean_documents.yaml"
MODEL = {"device": "cpu", "show_progress": False}
FACTS_TOP_K = 20


def settings() -> Settings:
    # The adapter's own settings: one process shares a folder's Chroma system only with equal settings.
    from chromadb.config import Settings
    return Settings(anonymized_telemetry=False)


def write_config(folder: Path, retrievers: list[dict], dataset: Path, top_k: int, metrics: list[str], cache: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "name": "chroma-test",
        "dataset": {"path": str(dataset)},
        "cache_dir": str(cache),
        "retrievers": retrievers,
        "top_k": top_k,
        "metrics": metrics,
        "output": "out",
    }
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def run_cli(config: Path) -> int:
    return main(["run", str(config), "--no-progress"])


def ranked(results_file: Path) -> dict[str, list[tuple[str, float]]]:
    """Each query's (unit, score) in rank order, from a results file's rankings ([unit, score, grade] rows)."""
    rankings = json.loads(results_file.read_text())["rankings"]
    return {qid: [(row[0], row[1]) for row in rows] for qid, rows in rankings.items()}


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# --------------------------------------------------------------------------- managed


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One embedding cache for the module: each text is encoded once, whichever test asks first."""
    return tmp_path_factory.mktemp("chroma-cache")


@pytest.fixture(scope="module")
def managed(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> dict:
    """One CLI run of dense and managed chroma over ocean_facts (top 20 of 37 passages)."""
    folder = tmp_path_factory.mktemp("managed")
    retrievers = [
        {"label": "dense", "adapter": "dense", "params": MODEL},
        {"label": "chroma", "adapter": "chroma", "params": MODEL},
    ]
    config = write_config(folder, retrievers, FACTS, FACTS_TOP_K, ["ndcg@10", "recall@20"], cache)
    assert run_cli(config) == 0
    out = folder / "out"
    return {
        "config": config,
        "dense": ranked(out / "dense.json"),
        "chroma": ranked(out / "chroma.json"),
        "description": json.loads((out / "chroma.json").read_text())["retriever"]["description"],
        "results": {label: json.loads((out / f"{label}.json").read_text())["results"] for label in ("dense", "chroma")},
    }


def test_managed_chroma_ranks_exactly_as_dense(managed):
    dense, chroma = managed["dense"], managed["chroma"]
    assert sorted(chroma) == sorted(dense) and len(dense) == 10
    equal_order = sum([doc for doc, _ in chroma[q]] == [doc for doc, _ in dense[q]] for q in dense)
    worst = max(abs(a[1] - b[1]) for q in dense for a, b in zip(chroma[q], dense[q]))
    # 10 of 10 queries in the same order, all 20 passages each; scores = 1 - (1 - dot) in float32.
    assert equal_order == 10, (equal_order, worst)
    assert all(len(chroma[q]) == FACTS_TOP_K for q in chroma)
    assert worst < 2e-6, worst
    assert managed["results"]["chroma"]["aggregate"] == pytest.approx(managed["results"]["dense"]["aggregate"], abs=1e-12)


def test_managed_description_attributes_the_graph_and_measures_latency(managed):
    description = managed["description"]
    database = description["database"]
    assert database["collection"].startswith("rag_eval_") and len(database["collection"]) == len("rag_eval_") + 24
    assert database["reused"] is False and database["points"] == 37 and database["dimension"] == 384
    assert database["space"] == "ip" and database["score"] == "1 - distance"
    assert database["hnsw"] == {"space": "ip", "ef_construction": 400, "ef_search": 400, "max_neighbors": 32}
    assert database["ingest_rows_per_s"] > 0
    # Chroma has no exact mode: the base searched every query exactly too, and the graph cost nothing here.
    approximation = description["approximation"]
    assert approximation["queries"] == 10 and approximation["overlap_min"] == 1.0
    assert approximation["metric_difference"] == 0.0
    assert description["mapping"]["mapped"] == description["mapping"]["hits"] == 10 * FACTS_TOP_K
    latency = description["latency"]
    assert latency["queries"] == 10 and latency["p50_ms"] > 0


def test_second_run_reuses_the_collection_and_a_half_filled_one_is_filled_again(managed, cache):
    corpus = load_dataset({"path": str(FACTS)}).corpus
    params = {**MODEL, "cache_dir": str(cache)}
    again = registry.build("chroma", params)
    try:
        again.index(corpus)
        assert again.reused_collection is True and again.ingest_s is None
        name = again.collection_name
        # A killed run: the collection exists under the name, half filled, without rag_eval's marker.
        client = again.client
        client.delete_collection(name)
        half = client.create_collection(name, embedding_function=None, configuration={"hnsw": {"space": "ip"}})
        half.add(ids=["pacific-largest"], embeddings=[[0.0] * 384], documents=["x"])
    finally:
        again.close()
    refill = registry.build("chroma", params)
    try:
        refill.index(corpus)
        assert refill.reused_collection is False and refill.collection_name == name
        collection = refill.client.get_collection(name, embedding_function=None)
        assert collection.count() == 37 and collection.metadata[FINGERPRINT_KEY]
        got = refill.search({"q": "Which ocean is the largest?"}, 3)["q"]
        assert sorted(got, key=lambda doc: -got[doc]) == [doc for doc, _ in managed["dense"]["q-largest-ocean"][:3]]
    finally:
        refill.close()


def test_managed_collections_lists_only_prefix_and_marker(managed, cache):
    import chromadb
    path = cache / "chroma"
    client = chromadb.PersistentClient(path=str(path), settings=settings())
    try:
        client.create_collection("rag_eval_foreign", embedding_function=None)  # prefix, no marker: not ours
        client.create_collection("team-notes", embedding_function=None, metadata={FINGERPRINT_KEY: "x"})  # no prefix
        retriever = registry.build("chroma", {**MODEL, "cache_dir": str(cache)})
        retriever.connect()
        try:
            assert retriever.managed_collections() == [managed["description"]["database"]["collection"]]
        finally:
            retriever.close()
    finally:
        client.delete_collection("rag_eval_foreign")
        client.delete_collection("team-notes")
        client.close()


@pytest.fixture
def chroma_server(tmp_path: Path):
    """A real Chroma server (``chroma run``) on a free loopback port, stopped after the test."""
    import chromadb
    executable = Path(sys.executable).parent / "chroma"
    if not executable.is_file():
        pytest.skip("the chroma command (chromadb's server) is not installed")
    port = free_port()
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    server = subprocess.Popen(
        [str(executable), "run", "--path", str(tmp_path / "server"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                chromadb.HttpClient(host="127.0.0.1", port=port, settings=settings()).heartbeat()
                break
            except Exception:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail("the chroma server did not start within 30 s")
                time.sleep(0.2)
        yield port
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_managed_on_a_chroma_server_ranks_as_dense(managed, cache, chroma_server):
    dataset = load_dataset({"path": str(FACTS)})
    retriever = registry.build("chroma", {**MODEL, "cache_dir": str(cache), "host": "127.0.0.1", "port": chroma_server})
    try:
        retriever.index(dataset.corpus)
        ranking = retriever.search(dataset.query_texts(), FACTS_TOP_K)
        info = retriever.describe()["database"]
    finally:
        retriever.close()
    assert info["deployment"] == "server" and info["server_version"] and info["points"] == 37
    for qid, expected in managed["dense"].items():
        got = sorted(ranking[qid].items(), key=lambda item: (-item[1], item[0]))
        assert [doc for doc, _ in got] == [doc for doc, _ in expected]
        assert max(abs(a[1] - b[1]) for a, b in zip(got, expected)) < 2e-6


# --------------------------------------------------------------------------- read-only


def paragraphs(text: str) -> list[tuple[int, int]]:
    """[start, end) of each paragraph (text between blank lines, stripped)."""
    spans = []
    for match in re.finditer(r"[^\n](?:.|\n(?!\n))*", text):
        chunk = match.group(0)
        start = match.start() + (len(chunk) - len(chunk.lstrip()))
        end = match.start() + len(chunk.rstrip())
        if end > start:
            spans.append((start, end))
    return spans


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> dict:
    """A team's Chroma folder: paragraph chunks of ocean_documents, encoded by rag_eval's dense model.

    Collection ``team_docs`` (Chroma's default l2 space, ids c000...): documents and doc_id/start/end
    metadata; chunk STALE's stored text was edited after indexing (found nowhere: stale), chunk MOVED's
    offsets are 3 characters off (its text is found once: relocated). ``tiny_dim`` holds 8-dimensional vectors,
    ``empty`` nothing.
    """
    import chromadb
    dataset = load_dataset({"path": str(DOCUMENTS)})
    chunks = {
        f"{doc}#{start}-{end}": {"title": "", "text": text[start:end]}
        for doc, text in dataset.documents.items()
        for start, end in paragraphs(text)
    }
    dense = registry.build("dense", {**MODEL, "cache_dir": str(cache)})
    dense.index(chunks)
    reference = dense.search(dataset.query_texts(), len(chunks))
    rows = dict(zip(dense._doc_ids, dense._embeddings))
    ids = sorted(chunks)
    stale = next(i for i in ids if "almost ten times as salty" in chunks[i]["text"])
    moved = next(i for i in ids if "Gulf Stream is a warm" in chunks[i]["text"])
    folder = tmp_path_factory.mktemp("team") / "chroma"
    client = chromadb.PersistentClient(path=str(folder), settings=settings())
    try:
        collection = client.create_collection("team_docs", embedding_function=None)
        metadatas, documents = [], []
        for unit in ids:
            doc, _, offsets = unit.rpartition("#")
            start, end = (int(x) for x in offsets.split("-"))
            text = chunks[unit]["text"]
            if unit == stale:
                text = text.replace("almost ten times as salty", "nine times saltier")
            if unit == moved:
                start, end = start + 3, end + 3
            metadatas.append({"doc_id": doc, "start": start, "end": end, "source": "team"})
            documents.append(text)
        collection.add(ids=[f"c{n:03d}" for n in range(len(ids))], embeddings=[rows[i] for i in ids],
                       documents=documents, metadatas=metadatas)
        small = client.create_collection("tiny_dim", embedding_function=None)
        small.add(ids=["a"], embeddings=[[0.5] * 8], documents=["x"], metadatas=[{"doc_id": "seas/dead-sea.md"}])
        client.create_collection("empty", embedding_function=None)
        # "holey": the same records, the first two added without doc_id (a one-record sample would refuse it all)
        holey = client.create_collection("holey", embedding_function=None)
        holey.add(ids=[f"c{n:03d}" for n in range(len(ids))], embeddings=[rows[i] for i in ids], documents=documents,
                  metadatas=[{k: v for k, v in m.items() if n > 1 or k != "doc_id"} for n, m in enumerate(metadatas)])
    finally:
        client.close()
    return {"path": folder, "chunks": chunks, "reference": reference, "stale": stale, "moved": moved}


def read_only_params(team: dict, **extra) -> dict:
    return {**MODEL, "mode": "read_only", "path": str(team["path"]), "collection": "team_docs",
            "map": {"doc_id": "doc_id", "start": "start", "end": "end"}, **extra}


def collection_state(path: Path) -> dict:
    import chromadb
    client = chromadb.PersistentClient(path=str(path), settings=settings())
    try:
        state = {}
        for item in client.list_collections():
            collection = client.get_collection(item.name, embedding_function=None)
            got = collection.get(include=["embeddings", "documents", "metadatas"])
            payload = json.dumps(
                [got["ids"], [list(map(float, row)) for row in got["embeddings"]], got["documents"], got["metadatas"]],
                sort_keys=True,
            )
            state[item.name] = (collection.count(), collection.metadata, hashlib.sha256(payload.encode()).hexdigest())
        return state
    finally:
        client.close()


def test_read_only_maps_spans_counts_stale_and_writes_nothing(tmp_path, team, cache):
    before_state = collection_state(team["path"])
    retrievers = [{"label": "team", "adapter": "chroma", "params": read_only_params(team)}]
    top_k = len(team["chunks"])
    config = write_config(tmp_path, retrievers, DOCUMENTS, top_k, ["evidence_recall@3", "doc_ndcg@3"], cache)
    assert run_cli(config) == 0
    document = json.loads((tmp_path / "out" / "team.json").read_text())
    description = document["retriever"]["description"]
    mapping = description["mapping"]
    # Every query sees all 13 chunks: the stale one maps to nothing (10 times), the moved one is relocated (10 times).
    assert mapping["hits"] == 10 * top_k and mapping["stale"] == 10 and mapping["relocated"] == 10
    assert mapping["mapped"] == 10 * (top_k - 1) and mapping["by_way"] == {"spans": 10 * (top_k - 1)}
    assert description["database"]["space"] == "l2" and description["database"]["score"] == "1 - distance / 2"
    assert "approximation" not in description  # a team's collection: no exact reference of ours
    rankings = ranked(tmp_path / "out" / "team.json")
    for qid, expected in team["reference"].items():
        wanted = {unit: score for unit, score in expected.items() if unit != team["stale"]}
        got = dict(rankings[qid])
        assert sorted(got) == sorted(wanted), qid  # the moved chunk is back at its true span
        assert max(abs(got[unit] - wanted[unit]) for unit in wanted) < 2e-6
        assert sorted(got, key=lambda u: (-got[u], u)) == sorted(wanted, key=lambda u: (-wanted[u], u))
    # read_only wrote nothing: same collections, counts, metadata and contents. (Not the same file bytes:
    # Chroma's embedded engine rewrites its own sqlite log and HNSW files when a client merely opens and reads.)
    assert collection_state(team["path"]) == before_state


# --------------------------------------------------------------------------- bad input


def bad_cases(team: dict, tmp: Path) -> dict[str, tuple[dict, str, Path | None]]:
    """name: (params, the start of the error's text after the retriever's prefix, a path that must stay absent/empty)."""
    missing = tmp / "no-such-folder"
    empty = tmp / "empty-folder"
    empty.mkdir(exist_ok=True)
    port = free_port()
    return {
        "missing_path": (read_only_params(team, path=str(missing)),
                         f"chroma: params.path {str(missing)!r} does not exist", missing),
        "not_chroma": (read_only_params(team, path=str(empty)),
                       f"chroma: params.path {str(empty)!r} is not a Chroma folder (no chroma.sqlite3)", empty),
        "missing_collection": (read_only_params(team, collection="nope"),
                               "chroma: collection 'nope' does not exist; params.collection", None),
        "wrong_dimension": (read_only_params(team, collection="tiny_dim", map={"passage_id": "@id"}),
                            "chroma: params.model 'all-MiniLM-L6-v2' gives 384-dimensional vectors, and collection "
                            "'tiny_dim' holds 8-dimensional ones", None),
        "empty_collection": (read_only_params(team, collection="empty"),
                             "chroma: collection 'empty' holds no records", None),
        "absent_field": (read_only_params(team, map={"doc_id": "document", "start": "start", "end": "end"}),
                         "chroma: params.map.doc_id names metadata key 'document', which none of the", None),
        "no_server": (read_only_params(team, path=None, host="127.0.0.1", port=port),
                      f"chroma: no Chroma server answers at 'http://127.0.0.1:{port}'", None),
    }


CASES = ["missing_path", "not_chroma", "missing_collection", "wrong_dimension", "empty_collection", "absent_field",
         "no_server"]


@pytest.mark.parametrize("case", CASES)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(case, tmp_path, team, cache, capsys):
    params, expected, untouched = bad_cases(team, tmp_path)[case]
    params = {key: value for key, value in params.items() if value is not None}
    config = write_config(tmp_path, [{"label": "team", "adapter": "chroma", "params": params}], DOCUMENTS, 5,
                          ["evidence_recall@3"], cache)
    before_team = collection_state(team["path"])
    capsys.readouterr()
    assert run_cli(config) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    assert "retriever 'team' (chroma) failed in " in lines[0]
    assert expected in lines[0], lines[0]
    assert not (tmp_path / "out").exists()  # no output folder, no report, no results
    assert collection_state(team["path"]) == before_team
    if untouched is not None:  # read_only never creates a folder or a database file
        assert not untouched.exists() or list(untouched.iterdir()) == []


def test_bad_params_and_a_missing_collection_through_the_console_script(tmp_path, team, cache):
    executable = Path(sys.executable).parent / "rag-eval"
    if not executable.is_file() and shutil.which("rag-eval") is None:
        pytest.skip("the rag-eval console script is not installed")
    command = str(executable) if executable.is_file() else str(shutil.which("rag-eval"))
    both = {**read_only_params(team), "host": "localhost"}
    for params, expected in [
        (read_only_params(team, collection="nope"), "chroma: collection 'nope' does not exist"),
        (both, "path and host name two places; keep path (a folder) or host (a server)"),
    ]:
        config = write_config(tmp_path, [{"label": "team", "adapter": "chroma", "params": params}], DOCUMENTS, 5,
                              ["evidence_recall@3"], cache)
        done = subprocess.run([command, "run", str(config), "--no-progress"], capture_output=True, text=True,
                              timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        assert done.returncode == 2, done.stderr
        assert done.stdout == "" and done.stderr.count("\n") == 1 and expected in done.stderr, done.stderr
        assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- clean (last: it removes the managed collection)


def test_clean_removes_only_the_managed_collection(managed, cache, capsys):
    import chromadb
    path = cache / "chroma"
    client = chromadb.PersistentClient(path=str(path), settings=settings())
    try:
        client.create_collection("rag_eval_team_copy", embedding_function=None)  # our prefix, not our marker
    finally:
        client.close()
    name = managed["description"]["database"]["collection"]
    capsys.readouterr()
    assert main(["clean", str(managed["config"])]) == 0
    assert f"removed chroma collection {name} ({path})" in capsys.readouterr().out
    client = chromadb.PersistentClient(path=str(path), settings=settings())
    try:
        assert sorted(c.name for c in client.list_collections()) == ["rag_eval_team_copy"]
    finally:
        client.close()


def test_records_without_a_map_field_are_counted_not_the_collection_refused(tmp_path, team, cache):
    retrievers = [{"label": "team", "adapter": "chroma", "params": read_only_params(team, collection="holey")}]
    top_k = len(team["chunks"])
    config = write_config(tmp_path, retrievers, DOCUMENTS, top_k, ["evidence_recall@3"], cache)
    assert run_cli(config) == 0
    mapping = json.loads((tmp_path / "out" / "team.json").read_text())["retriever"]["description"]["mapping"]
    queries = len(mapping["unmapped_by_query"])
    holes = set(sorted(team["chunks"])[:2])  # the records added first, without doc_id
    per_query = 2 + (team["stale"] not in holes)
    # every query gets every record (top_k = all): per query the 2 records without doc_id + the stale one
    assert mapping["hits"] == queries * top_k and mapping["unmapped_by_query"] == {
        q: per_query for q in mapping["unmapped_by_query"]}
    assert mapping["stale"] == queries * (team["stale"] not in holes)
    assert sum("metadata has no 'doc_id'" in row["why"] for row in mapping["examples"]["unmapped"]) >= 2


def test_a_server_that_accepts_and_never_answers_exits_2_within_its_timeout(tmp_path, team, cache, capsys):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    try:
        params = read_only_params(team, path=None, host="127.0.0.1", port=port, timeout=1)
        params = {key: value for key, value in params.items() if value is not None}
        config = write_config(tmp_path, [{"label": "team", "adapter": "chroma", "params": params}], DOCUMENTS, 5,
                              ["evidence_recall@3"], cache)
        capsys.readouterr()
        started = time.perf_counter()
        assert run_cli(config) == 2
        elapsed = time.perf_counter() - started
    finally:
        listener.close()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"chroma: no Chroma server answers at 'http://127.0.0.1:{port}' (no answer within 1 s, params.timeout); " \
        "check params.host and params.port, and that the server runs" in err, err
    assert elapsed < 30, elapsed  # the model loads first; the server itself is given 1 s
    assert not (tmp_path / "out").exists()
