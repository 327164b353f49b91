"""``adapter: pgvector`` against a real PostgreSQL + pgvector: the embedded server pgserver ships, started once here.

Every number is checked against what rag_eval's own ``dense`` adapter computes over the same
vectors (exact mode), or against numpy over the rows this test wrote (read-only mode).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

import numpy as np
import pytest
import yaml

pytest.importorskip("psycopg", reason="adapter pgvector needs psycopg (pip install '.[pgvector]')")
pytest.importorskip("pgvector", reason="adapter pgvector needs pgvector (pip install '.[pgvector]')")
pytest.importorskip("pgserver", reason="the embedded server needs pgserver (pip install '.[pgvector]')")
# One embedded server for the module: under -n its tests stay on one worker.
pytestmark = pytest.mark.xdist_group("pgvector")

import psutil  # noqa: E402  (pgserver's dependency)
import psycopg  # noqa: E402

from rag_eval._core.errors import RetrieverError  # noqa: E402
from rag_eval._retrievers import registry  # noqa: E402
from rag_eval._retrievers.external import embedded_postgres  # noqa: E402
from rag_eval._retrievers.external.embedded_postgres import EmbeddedPostgres  # noqa: E402
from rag_eval._retrievers.external.pgvector import PgvectorRetriever  # noqa: E402
from rag_eval._retrievers.external.pgvector_params import redact  # noqa: E402
from rag_eval.cli import main  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
DATASET = REPO / "datasets" / "ocean_facts.yaml"
MODEL = {"model": "all-MiniLM-L6-v2", "device": "cpu", "show_progress": False}
TOP_K = 10


def postmasters(data_dir: Path) -> list[psutil.Process]:
    """Live PostgreSQL servers whose data folder is ``data_dir`` (zombies are dead and not counted)."""
    found = []
    for process in psutil.process_iter(["name", "cmdline", "status"]):
        try:
            if process.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if str(data_dir.resolve()) in " ".join(process.info["cmdline"] or []):
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def ranked(scores: dict[str, float]) -> list[str]:
    """rag_eval's ranking rule: score descending, ties by id descending (UTF-8 bytes)."""
    return [unit for unit, _ in sorted(scores.items(), key=lambda kv: (kv[1], kv[0].encode()), reverse=True)]


# --------------------------------------------------------------------------- shared set-up


@pytest.fixture(scope="module")
def ocean() -> tuple[dict, dict]:
    data = yaml.safe_load(DATASET.read_text())
    corpus = {p["id"]: {"text": p["text"], "title": p.get("title", "")} for p in data["corpus"]}
    queries = {q["id"]: q["text"] for q in data["queries"]}
    return corpus, queries


@pytest.fixture(scope="module")
def scratch():
    """Where the servers' data folders go: outside pytest's own temporary folders.

    As root, pgserver runs PostgreSQL as a user ``pgserver`` and opens the folders above the data for it;
    pytest closes ``pytest-of-root`` again (mode 700) whenever another pytest session starts, which would
    leave a running server unable to reach its own folder.
    """
    folder = Path(tempfile.mkdtemp(prefix="rag-eval-pgvector-test-"))
    folder.chmod(0o755)  # open, as a home's cache usually is not: the data stays in the cache (see the relocation test)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def fresh(scratch: Path) -> Path:
    """A new, empty cache folder of the test's own (open to others, so the server keeps its data in it)."""
    folder = Path(tempfile.mkdtemp(dir=scratch))
    folder.chmod(0o755)
    return folder


@pytest.fixture(scope="module")
def cache(scratch) -> Path:
    return fresh(scratch)


@pytest.fixture(scope="module")
def server(cache):
    """The embedded server of ``cache`` (the one every retriever with this cache_dir joins), and its URI."""
    handle = EmbeddedPostgres(cache / "pgvector")
    uri = handle.start()
    yield uri
    handle.stop()
    assert postmasters(cache / "pgvector") == [], "the embedded server outlived the module"


@pytest.fixture(scope="module")
def dense(cache, ocean):
    """rag_eval's own exact search: the reference. Also fills the embedding cache every retriever here reads."""
    corpus, queries = ocean
    retriever = registry.build("dense", {**MODEL, "cache_dir": str(cache)})
    retriever.index(corpus)
    ranking = retriever.search(queries, TOP_K)
    query_vectors = retriever._encode_cached(list(queries.values()), "query")[0]
    return retriever, ranking, dict(zip(queries, query_vectors))


def pgvector(cache: Path, **params) -> PgvectorRetriever:
    return registry.build("pgvector", {**MODEL, "cache_dir": str(cache), **params})


@pytest.fixture(scope="module")
def managed_exact(server, cache, ocean, dense):
    corpus, queries = ocean
    retriever = pgvector(cache)
    try:
        retriever.index(corpus)
        ranking = retriever.search(queries, TOP_K)
        yield retriever, ranking
    finally:
        retriever.close()


# --------------------------------------------------------------------------- managed mode


def test_managed_exact_ranks_as_dense_does(managed_exact, dense, ocean):
    retriever, ranking = managed_exact
    _, reference, query_vectors = dense
    for qid, scores in reference.items():
        assert ranked(ranking[qid]) == ranked(scores), qid
        assert max(abs(ranking[qid][unit] - score) for unit, score in scores.items()) < 1e-5
        # The database's own order (ties by passage id descending in SQL) is already rag_eval's.
        assert [hit.id for hit in retriever.query(query_vectors[qid], TOP_K)] == ranked(scores)
    info = retriever.describe()["database"]
    assert info["reused"] is False and info["points"] == len(ocean[0]) and info["dimension"] == 384
    assert info["index"] == {"kind": "exact", "opclass": "vector_ip_ops", "operator": "<#>"}
    assert info["server"] == "embedded (pgserver)" and info["server_version"] and info["pgvector_version"]
    assert retriever.describe()["latency"]["queries"] == len(ocean[1])


def test_exact_is_a_sequential_scan(managed_exact, dense):
    retriever, _ = managed_exact
    plan = retriever.plan(next(iter(dense[2].values())), TOP_K)
    assert any(node.startswith("Seq Scan on rag_eval_") for node in plan), plan
    assert not any("Index" in node for node in plan), plan
    assert retriever.describe()["database"]["plan"] == plan


def test_a_second_index_reuses_the_table_without_copying(managed_exact, server, cache, ocean, dense):
    first, ranking = managed_exact
    name = first.collection_name
    with psycopg.connect(server, autocommit=True) as conn:
        before = conn.execute(
            f"SELECT to_regclass(%s)::oid, (SELECT created FROM rag_eval_collections WHERE name = %s), "
            f"(SELECT string_agg(xmin::text, ',' ORDER BY rag_eval_id) FROM \"{name}\")",
            (name, name),
        ).fetchone()
    again = pgvector(cache)
    try:
        again.index(ocean[0])
        assert again.collection_name == name
        assert again.reused_collection is True and again.ingest_s is None
        assert again.search(ocean[1], TOP_K) == ranking
    finally:
        again.close()
    with psycopg.connect(server, autocommit=True) as conn:
        after = conn.execute(
            f"SELECT to_regclass(%s)::oid, (SELECT created FROM rag_eval_collections WHERE name = %s), "
            f"(SELECT string_agg(xmin::text, ',' ORDER BY rag_eval_id) FROM \"{name}\")",
            (name, name),
        ).fetchone()
    assert after == before  # same table, same marker row, same row versions: nothing was written again


def test_a_changed_passage_makes_a_new_table_and_drop_removes_it(managed_exact, server, cache, ocean):
    first, _ = managed_exact
    corpus = dict(ocean[0])
    corpus["pacific-largest"] = {
        "text": "The Pacific Ocean is the largest and deepest ocean.",
        "title": "Pacific Ocean",
    }
    changed = pgvector(cache)
    try:
        changed.index(corpus)
        assert changed.collection_name != first.collection_name and changed.reused_collection is False
        listed = changed.managed_collections()
        assert {first.collection_name, changed.collection_name} <= set(listed)
        assert "rag_eval_collections" not in listed
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute("CREATE TABLE rag_eval_not_ours (id int)")  # the prefix alone does not make it ours
            text = conn.execute(
                f'SELECT text FROM "{changed.collection_name}" WHERE rag_eval_id = %s', ("pacific-largest",)
            ).fetchone()[0]
        assert text == "Pacific Ocean The Pacific Ocean is the largest and deepest ocean."  # title and text, as encoded
        assert "rag_eval_not_ours" not in changed.managed_collections()
        changed.drop(changed.collection_name)
        assert changed.collection_shape(changed.collection_name) is None
        assert changed.stored_fingerprint(changed.collection_name) is None
        assert changed.collection_name not in changed.managed_collections()
        with pytest.raises(RetrieverError, match="drops only the tables it created"):
            changed.drop("team_chunks")
    finally:
        changed.close()


def test_hnsw_is_approximate_and_measured_against_exact(server, cache, ocean, dense):
    reference = dense[1]
    retriever = pgvector(cache, index={"kind": "hnsw", "m": 8, "ef_construction": 32})
    try:
        retriever.index(ocean[0])
        ranking = retriever.search(ocean[1], TOP_K)
        assert retriever.approximate()
        assert retriever.exact_reference is not None
        assert set(retriever.exact_reference) == set(ocean[1])  # attribution_sample 1000 > 10 queries: all
        for qid, scores in reference.items():
            assert ranked(retriever.exact_reference[qid]) == ranked(scores)
        found = sum(len(set(ranking[qid]) & set(reference[qid])) for qid in reference)
        assert found >= 0.9 * sum(len(r) for r in reference.values())  # 37 rows: HNSW finds (nearly) all
        plan = retriever.plan()
        assert plan[-1] == f"Index Scan using {retriever.collection_name}_hnsw", plan
        info = retriever.describe()["database"]["index"]
        assert info == {
            "kind": "hnsw",
            "ef_search": 40,
            "m": 8,
            "ef_construction": 32,
            "opclass": "vector_cosine_ops",
            "operator": "<=>",
        }
        with pytest.raises(RetrieverError, match=r"params\.index\.ef_search 5 is below top_k 10"):
            low = pgvector(cache, index={"kind": "hnsw", "m": 8, "ef_construction": 32, "ef_search": 5})
            try:
                low.index(ocean[0])
                low.search(ocean[1], TOP_K)
            finally:
                low.close()
        # ef_search is read at query time: the same table serves it. The operator class is built in: a new table.
        for params, same in (({"ef_search": 80}, True), ({}, False)):
            other = pgvector(
                cache,
                index={"kind": "hnsw", "m": 8, "ef_construction": 32, **params},
                **({} if same else {"similarity": "dot"}),
            )
            try:
                other.index(ocean[0])
                assert (other.collection_name == retriever.collection_name) is same
                assert other.reused_collection is same
            finally:
                other.close()
    finally:
        retriever.close()


# --------------------------------------------------------------------------- read_only: the team's table

# Rows a team filled: whole passages, one partial span, one moved chunk (relocated) and one stale chunk.
EXTRA = [
    # (doc, start, end, text) -- text None: the document's text at those offsets
    ("challenger-deep", 0, 37, None),
    ("pacific-largest", 0, 10, "the largest ocean"),  # the offsets moved: the text is found further on -> relocated
    ("indian-third", 4, 20, "no such words anywhere here"),  # stale: maps to nothing
]


@pytest.fixture(scope="module")
def team_table(server, ocean, dense):
    """``team_chunks`` as a team fills it: id, body, doc_id column, metadata jsonb {start, end}, embedding, HNSW."""
    corpus = ocean[0]
    retriever, _, query_vectors = dense
    vectors = dict(zip(retriever._doc_ids, retriever._embeddings))
    rows = []
    for doc_id in sorted(corpus):
        text = corpus[doc_id]["text"]
        rows.append((doc_id, 0, len(text), text, vectors[doc_id]))
    qvec = list(query_vectors.values())
    for position, (doc_id, start, end, text) in enumerate(EXTRA):
        body = corpus[doc_id]["text"][start:end] if text is None else text
        rows.append((doc_id, start, end, body, qvec[position]))  # a query's own vector: surely retrieved
    with psycopg.connect(server, autocommit=True) as conn:
        from pgvector.psycopg import register_vector

        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_vector(conn)
        conn.execute(
            "CREATE TABLE team_chunks (id bigint PRIMARY KEY, body text, doc_id text, metadata jsonb, "
            "embedding vector(384))"
        )
        for number, (doc_id, start, end, body, vector) in enumerate(rows):
            conn.execute(
                "INSERT INTO team_chunks VALUES (%s, %s, %s, %s, %s)",
                (number, body, doc_id, json.dumps({"start": start, "end": end, "source": "wiki"}), vector),
            )
        conn.execute("CREATE INDEX team_chunks_hnsw ON team_chunks USING hnsw (embedding vector_cosine_ops)")
        conn.execute("CREATE TABLE team_small (id int PRIMARY KEY, embedding vector(8))")
        conn.execute("INSERT INTO team_small VALUES (1, %s)", (np.ones(8, dtype=np.float32),))
    return rows


def table_state(uri: str) -> tuple:
    with psycopg.connect(uri, autocommit=True) as conn:
        checksum = conn.execute("SELECT md5(string_agg(t::text, '|' ORDER BY id)) FROM team_chunks t").fetchone()[0]
        tables = conn.execute(
            "SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class WHERE relnamespace = 'public'::regnamespace"
        ).fetchone()[0]
    return checksum, tables


def expected_read_only(rows, query_vectors, corpus, top_k):
    """Numpy over the team's rows, mapped by hand: {qid: {unit: score}}, and how often each odd row is hit."""
    matrix = np.stack([row[4] for row in rows]).astype(np.float64)
    expected, hits = {}, {"relocated": 0, "stale": 0}
    for qid, vector in query_vectors.items():
        scores = matrix @ np.asarray(vector, dtype=np.float64)
        scores /= np.linalg.norm(matrix, axis=1) * np.linalg.norm(vector)  # cosine (similarity: cosine)
        units = {}
        for row in np.argsort(-scores, kind="stable")[:top_k]:
            doc_id, start, end, body, _ = rows[row]
            text = corpus[doc_id]["text"]
            if text[start:end] != body:
                moved = text.find(body)
                if moved < 0:
                    hits["stale"] += 1
                    continue
                hits["relocated"] += 1
                start, end = moved, moved + len(body)
            unit = doc_id if (start, end) == (0, len(text)) else f"{doc_id}#{start}-{end}"
            units.setdefault(unit, float(scores[row]))
        expected[qid] = units
    return expected, hits


READ_ONLY = {
    "mode": "read_only",
    "collection": "team_chunks",
    "text_field": "body",
    "map": {"doc_id": "doc_id", "start": "start", "end": "end"},
}


def test_read_only_maps_spans_counts_stale_rows_and_writes_nothing(
    server, cache, ocean, dense, team_table, monkeypatch
):
    corpus, queries = ocean
    before = table_state(server)
    # The team's server, its socket folder read from the environment as a password would be.
    uri, _, host = server.partition("?host=")
    monkeypatch.setenv("RAG_EVAL_TEST_PGHOST", host)
    retriever = pgvector(cache, dsn=uri + "?host=${RAG_EVAL_TEST_PGHOST}", **READ_ONLY)
    try:
        retriever.index(corpus)
        ranking = retriever.search(queries, TOP_K)
        expected, hits = expected_read_only(team_table, dense[2], corpus, TOP_K)
        for qid in queries:
            assert ranked(ranking[qid]) == ranked(expected[qid]), qid
            assert max(abs(ranking[qid][u] - s) for u, s in expected[qid].items()) < 1e-5
        assert "challenger-deep#0-37" in ranking["q-largest-ocean"]  # a partial span, by its offsets
        moved = corpus["pacific-largest"]["text"].find("the largest ocean")
        assert f"pacific-largest#{moved}-{moved + 17}" in ranking["q-deepest-point"]  # relocated: where the text now is
        mapping = retriever.describe()["mapping"]
        assert hits["relocated"] >= 1 and hits["stale"] >= 1
        assert (mapping["relocated"], mapping["stale"]) == (hits["relocated"], hits["stale"])
        assert mapping["unmapped"] == hits["stale"]
        info = retriever.describe()["database"]
        assert info["dsn"] == uri + "?host=${RAG_EVAL_TEST_PGHOST}"  # as written: an ${ENV} value is never shown
        assert info["server"] == "dsn" and info["index"] == {
            "kind": "exact",
            "opclass": "vector_cosine_ops",
            "operator": "<=>",
        }
        # Exact means a sequential scan, though the team's table has an HNSW index.
        assert not any("Index" in node for node in info["plan"]) and any("Seq Scan" in n for n in info["plan"])
        assert retriever._conn.execute("SHOW transaction_read_only").fetchone()[0] == "on"
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            retriever._conn.execute("DELETE FROM team_chunks")
    finally:
        retriever.close()
    assert table_state(server) == before  # same rows, no table created (no marker table either)


def test_read_only_hnsw_searches_the_tables_own_index(server, cache, ocean, dense, team_table):
    retriever = pgvector(cache, dsn=server, index={"kind": "hnsw", "ef_search": 64}, **READ_ONLY)
    try:
        retriever.index(ocean[0])
        retriever.search(ocean[1], TOP_K)
        assert retriever.plan()[-1] == "Index Scan using team_chunks_hnsw"
        assert retriever._conn.execute("SHOW hnsw.ef_search").fetchone()[0] == "64"  # what the server searches with
        index = retriever.describe()["database"]["index"]
        assert index["ef_search"] == 64 and index["opclass"] == "vector_cosine_ops"
        assert "USING hnsw" in index["table_index"]
        assert retriever.exact_reference is None  # read_only: rag_eval does not hold the table's vectors
    finally:
        retriever.close()
    wrong = pgvector(cache, dsn=server, index={"kind": "ivfflat"}, **READ_ONLY)
    try:
        with pytest.raises(
            RetrieverError, match=r"params\.index\.kind: table public\.team_chunks has no ivfflat index"
        ):
            wrong.index(ocean[0])
            wrong.search(ocean[1], TOP_K)
    finally:
        wrong.close()


def test_read_only_refuses_a_wrong_dimension_and_missing_columns(server, cache, ocean, dense, team_table):
    small = pgvector(cache, dsn=server, mode="read_only", collection="team_small", map={"passage_id": "@id"})
    try:
        small.index(ocean[0])
        with pytest.raises(
            RetrieverError, match="gives 384-dimensional vectors, and collection 'team_small' holds 8-dimensional"
        ):
            small.search(ocean[1], TOP_K)
    finally:
        small.close()
    for params, message in (
        ({"vector_column": "vec"}, r"params\.vector_column: table public\.team_chunks has no column 'vec'"),
        ({"id_column": "chunk_id"}, r"params\.id_column: table public\.team_chunks has no column 'chunk_id'"),
        ({"metadata_column": "meta"}, r"params\.metadata_column: table public\.team_chunks has no column 'meta'"),
    ):
        retriever = pgvector(cache, dsn=server, **READ_ONLY, **params)
        try:
            with pytest.raises(RetrieverError, match=message):
                retriever.index(ocean[0])
        finally:
            retriever.close()


def test_params_are_checked_before_anything_runs():
    problems = {
        "managed names its own columns": ({"vector_column": "v"}, "apply to mode read_only"),
        "read_only builds nothing": (
            {**READ_ONLY, "index": {"kind": "hnsw", "m": 8}},
            "index.m build an index, which mode read_only never does",
        ),
        "a parameter of another kind": ({"index": {"kind": "exact", "probes": 3}}, "applies to kind ivfflat"),
        "pgvector's own bound": ({"index": {"kind": "hnsw", "m": 40}}, "below 2 x m"),
        "probes within lists": ({"index": {"kind": "ivfflat", "lists": 4, "probes": 5}}, "probes 5 exceeds lists 4"),
        "managed probes within the default lists": (
            {"index": {"kind": "ivfflat", "probes": 200}},
            "exceeds index.lists 100",
        ),
    }
    for name, (params, message) in problems.items():
        with pytest.raises(RetrieverError, match=message):
            registry.check("pgvector", {**MODEL, **params})
            pytest.fail(name)
    registry.check("pgvector", {**MODEL, "schema": "search", "dsn": "postgresql://u@h/db"})
    # read_only: the table's own IVFFlat index may have more lists than the default
    registry.check("pgvector", {**MODEL, **READ_ONLY, "index": {"kind": "ivfflat", "probes": 200}})


def test_dsn_is_printed_without_its_password():
    assert redact("postgresql://alice:s3cr%40t@db.example.com:5432/rag?sslmode=require") == (
        "postgresql://alice:***@db.example.com:5432/rag?sslmode=require"
    )
    assert redact("host=db user=alice password='a b' dbname=rag") == "host=db user=alice password=*** dbname=rag"
    assert redact("postgresql://db/rag?password=pw&user=u") == "postgresql://db/rag?password=***&user=u"
    assert redact("postgresql://alice@db/rag") == "postgresql://alice@db/rag"


def test_without_pgserver_the_error_names_the_extra(scratch, monkeypatch):
    monkeypatch.setitem(sys.modules, "pgserver", None)  # as if it were not installed
    own_cache = fresh(scratch)
    retriever = pgvector(own_cache)
    with pytest.raises(RetrieverError, match=r'pip install "\.\[pgvector\]" in your rag_eval checkout'):
        retriever.connect()
    retriever.close()
    assert postmasters(own_cache / "pgvector") == []


# --------------------------------------------------------------------------- the CLI: errors, a run, Ctrl-C


def write_config(folder: Path, cache_dir: Path, retrievers: list[dict], output: str = "out") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "name": "pgvector-test",
        "dataset": {"path": str(DATASET)},
        "retrievers": retrievers,
        "top_k": TOP_K,
        "metrics": ["ndcg@10", "recall@10"],
        "main_metric": "ndcg@10",
        "output": output,
        "cache_dir": str(cache_dir),
    }
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def cli_error(config: Path, capsys) -> str:
    assert main(["run", str(config), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert not (config.parent / "out").exists()
    return err


def test_cli_bad_dsn_and_bad_uri_exit_2_in_one_line_without_the_password(tmp_path, cache, capsys):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    refused = write_config(
        tmp_path / "a",
        cache,
        [
            {
                "label": "pg",
                "adapter": "pgvector",
                "params": {**MODEL, "dsn": f"postgresql://alice:s3cret@127.0.0.1:{port}/rag"},
            }
        ],
    )
    err = cli_error(refused, capsys)
    assert f"params.dsn: cannot connect to postgresql://alice:***@127.0.0.1:{port}/rag:" in err
    assert "check host, port and credentials" in err and "s3cret" not in err
    bad_uri = write_config(
        tmp_path / "b",
        cache,
        [
            {
                "label": "pg",
                "adapter": "pgvector",
                "params": {**MODEL, "dsn": "postgresql://alice:s3cret@db:notaport/rag"},
            }
        ],
    )
    err = cli_error(bad_uri, capsys)
    assert "params.dsn: cannot connect to postgresql://alice:***@db:notaport/rag" in err and "s3cret" not in err
    unset = write_config(
        tmp_path / "c",
        cache,
        [
            {
                "label": "pg",
                "adapter": "pgvector",
                "params": {**MODEL, "dsn": "postgresql://alice:${RAG_EVAL_NO_SUCH_VAR}@db/rag"},
            }
        ],
    )
    err = cli_error(unset, capsys)
    assert "params.dsn reads the environment variable RAG_EVAL_NO_SUCH_VAR, which is not set" in err


def test_cli_a_server_that_never_answers_times_out(tmp_path, cache, capsys):
    with socket.socket() as silent:  # accepts connections (the kernel's backlog), never speaks
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        config = write_config(
            tmp_path,
            cache,
            [
                {
                    "label": "pg",
                    "adapter": "pgvector",
                    "params": {**MODEL, "dsn": f"postgresql://u@127.0.0.1:{port}/db", "connect_timeout": 2},
                }
            ],
        )
        started = time.perf_counter()
        err = cli_error(config, capsys)
        assert time.perf_counter() - started < 20
    assert "params.dsn: cannot connect to" in err and "timeout" in err.lower()


def test_cli_missing_table_exits_2_and_leaves_no_server_running(tmp_path, scratch, capsys):
    own_cache = fresh(scratch)  # its own embedded server, started and stopped by this failing run
    config = write_config(
        tmp_path,
        own_cache,
        [
            {
                "label": "pg",
                "adapter": "pgvector",
                "params": {**MODEL, "mode": "read_only", "collection": "nope", "map": {"passage_id": "@id"}},
            }
        ],
    )
    err = cli_error(config, capsys)
    assert "collection 'nope' does not exist" in err
    assert (own_cache / "pgvector" / "PG_VERSION").exists()  # the server did run
    assert postmasters(own_cache / "pgvector") == []


def copy_embeddings(source: Path, target: Path) -> Path:
    """A new cache folder with the embeddings of ``source`` (no model loads) and no database."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("pgvector"))
    return target


def test_run_end_to_end_matches_dense_per_query(tmp_path, scratch, cache, dense, capsys):
    own_cache = copy_embeddings(cache, fresh(scratch) / "cache")
    config = write_config(
        tmp_path,
        own_cache,
        [
            {"label": "dense", "adapter": "dense", "params": MODEL},
            {"label": "pg", "adapter": "pgvector", "params": MODEL},
            {"label": "pg-hnsw", "adapter": "pgvector", "params": {**MODEL, "index": {"kind": "hnsw"}}},
        ],
    )
    assert main(["run", str(config), "--no-progress"]) == 0, capsys.readouterr().err  # rag-eval run, in this process
    out = tmp_path / "out"
    per_query = {
        label: json.loads((out / f"{label}.json").read_text())["results"]["per_query"]
        for label in ("dense", "pg", "pg-hnsw")
    }
    assert per_query["pg"].keys() == per_query["dense"].keys()
    for qid, metrics in per_query["dense"].items():
        assert per_query["pg"][qid]["ndcg@10"] == pytest.approx(metrics["ndcg@10"], abs=1e-12), qid
    runs = {label: (out / f"{label}.run").read_text().split("\n") for label in ("dense", "pg")}
    assert [line.split()[:4] for line in runs["pg"]] == [line.split()[:4] for line in runs["dense"]]
    doc = json.loads((out / "pg.json").read_text())
    assert "Seq Scan on rag_eval_" in json.dumps(doc)  # the plan, recorded in the results file
    assert postmasters(own_cache / "pgvector") == []  # stopped at the end of the run


def _sigint_as_from_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_ctrl_c_stops_the_embedded_server(tmp_path, scratch):
    own_cache = fresh(scratch)  # cold: encoding comes after the server started, a wide window for Ctrl-C
    config = write_config(tmp_path, own_cache, [{"label": "pg", "adapter": "pgvector", "params": MODEL}])
    process = subprocess.Popen(
        [str(REPO / ".venv" / "bin" / "rag-eval"), "run", str(config), "--no-progress"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        # As from a terminal: SIGINT neither ignored nor blocked. A child inherits both from the test process,
        # where a library loaded by an earlier test may have blocked it (under pytest-xdist the run then never
        # heard the Ctrl-C, and ended 0).
        preexec_fn=_sigint_as_from_a_terminal,
    )
    try:
        deadline = time.monotonic() + 60
        while not postmasters(own_cache / "pgvector"):
            assert process.poll() is None and time.monotonic() < deadline, "the run ended before its server started"
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    here = (signal.getsignal(signal.SIGINT), signal.pthread_sigmask(signal.SIG_BLOCK, []))
    assert process.returncode == 130, f"{err!r}; in the test process SIGINT's handler and the blocked signals: {here}"
    assert "interrupted" in err
    assert postmasters(own_cache / "pgvector") == []
    assert not (tmp_path / "out").exists()


def test_a_server_left_by_a_killed_run_is_adopted_and_stopped(scratch):
    data = fresh(scratch) / "pgvector"
    script = (
        "import os, signal\n"
        "from rag_eval._retrievers.external.embedded_postgres import EmbeddedPostgres\n"
        f"EmbeddedPostgres({str(data)!r}).start()\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"  # killed: no close(), no atexit
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False, cwd=REPO
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert len(postmasters(data)) == 1  # left running, its dead user still listed
    handle = EmbeddedPostgres(data)
    handle.start()
    assert json.loads((data / ".handle_pids.json").read_text()) == [os.getpid()]
    handle.stop()
    deadline = time.monotonic() + 10
    while postmasters(data) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert postmasters(data) == []
    assert embedded_postgres._RUNNING.get(data.resolve()) is None


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="pgserver opens parent folders only as root")
def test_as_root_a_closed_cache_folder_stays_closed_and_the_data_goes_to_a_folder_of_its_own(scratch):
    """pgserver, run as root, would chmod every folder above its data to g+rx,o+rx (/root included): never ours."""
    from rag_eval._retrievers.external.embedded_postgres import EmbeddedPostgres

    closed = Path(tempfile.mkdtemp(dir=scratch))  # mode 700, like /root or /root/.cache
    cache_dir = closed / "cache"
    embedded = EmbeddedPostgres(cache_dir / "pgvector")
    try:
        embedded.start()
        assert embedded.data_dir != cache_dir / "pgvector"
        assert embedded.data_dir.parent.parent == Path(tempfile.gettempdir()).resolve()
        assert (embedded.data_dir / "PG_VERSION").exists()
        assert embedded.describe()["data_dir_instead_of"] == str((cache_dir / "pgvector").resolve())
    finally:
        embedded.stop()
        shutil.rmtree(embedded.data_dir.parent, ignore_errors=True)
    assert stat.S_IMODE(closed.stat().st_mode) == 0o700


# --------------------------------------------------------------------------- secrets, an empty table


def _embedded_parts(server: str) -> tuple[str, str, str]:
    parts = urllib.parse.urlsplit(server)
    host = urllib.parse.parse_qs(parts.query)["host"][0]
    return parts.username or "postgres", parts.path.lstrip("/") or "postgres", host


def test_dsn_passwords_never_reach_the_written_files(tmp_path, server, cache, team_table):
    """All three ways of writing a password: the run connects, and no written file holds it."""
    user, db, host = _embedded_parts(server)
    forms = {
        "uri": (f"postgresql://{user}:pw-uri-41@/{db}?host={host}", "pw-uri-41",
                f"postgresql://{user}:***@/{db}?host={host}"),
        "query": (f"postgresql://{user}@/{db}?host={host}&password=pw-query-42", "pw-query-42",
                  f"postgresql://{user}@/{db}?host={host}&password=***"),
        "key_value": (f"host={host} user={user} password='pw kv 43' dbname={db}", "pw kv 43",
                      f"host={host} user={user} password=*** dbname={db}"),
    }
    for name, (dsn, secret, shown) in forms.items():
        config = write_config(tmp_path / name, cache,
                              [{"label": "pg", "adapter": "pgvector",
                                "params": {**MODEL, **READ_ONLY, "map": {"passage_id": "doc_id"}, "dsn": dsn}}])
        assert main(["run", str(config), "--no-progress"]) == 0, name
        results = tmp_path / name / "out" / "pg.json"
        written = results.read_text()
        assert secret not in written and "pw kv" not in written and "pw-" not in written, name
        document = json.loads(written)
        assert document["retriever"]["params"]["dsn"] == shown, name
        assert document["config"]["resolved"]["retrievers"][0]["params"]["dsn"] == shown, name
        assert document["retriever"]["description"]["database"]["dsn"] == shown, name
        for other in ("report.md", "report.html", "per-query.csv"):  # every file of the set
            text = (tmp_path / name / "out" / other).read_text(encoding="utf-8")
            assert secret not in text and "pw kv" not in text and "pw-" not in text, (name, other)


def test_an_empty_table_is_refused(tmp_path, server, cache, ocean, team_table, capsys):
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute("CREATE TABLE team_void (id bigint PRIMARY KEY, body text, doc_id text, metadata jsonb, "
                     "embedding vector(384))")
    try:
        params = {**MODEL, **READ_ONLY, "collection": "team_void", "dsn": server}
        err = cli_error(write_config(tmp_path, cache, [{"label": "pg", "adapter": "pgvector", "params": params}]),
                        capsys)
        assert f"pgvector: none of the {len(ocean[1])} queries got a hit, so every metric would read 0" in err, err
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute("DROP TABLE team_void")
