"""``execute`` + ``write_outputs``: results files checked against pytrec_eval, retriever failures named.

pytrec_eval runs in a fresh process per evaluation (tests/_pytrec.py): it keeps global state
between evaluators and was seen to hang when several are built in one process.
"""

from __future__ import annotations

import itertools
import json
import math
import platform
import sys
import uuid
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from _pytrec import pytrec_values, read_trec_run
from conftest import REPO

from rag_eval._commands.outputs import write_outputs
from rag_eval._core.errors import EvaluationError, RetrieverError
from rag_eval._data.config.schema import load_config
from rag_eval._data.datasets import load_yaml_query_set
from rag_eval._run.execute import execute
from rag_eval._run.results_file import RESULTS_SCHEMA_VERSION

OCEAN = REPO / "datasets" / "ocean_facts.yaml"
SEED = ["pacific-largest", "atlantic-separates", "sahara-hot-desert", "indian-third"]

# rag_eval metric -> (pytrec_eval measure to ask for, key in its answer)
TREC_NAMES = {
    "ndcg@1": ("ndcg_cut.1", "ndcg_cut_1"),
    "ndcg@4": ("ndcg_cut.4", "ndcg_cut_4"),
    "ndcg@10": ("ndcg_cut.10", "ndcg_cut_10"),
    "ndcg": ("ndcg", "ndcg"),
    "precision@5": ("P.5", "P_5"),
    "recall@10": ("recall.10", "recall_10"),
    "map@10": ("map_cut.10", "map_cut_10"),
    "map": ("map", "map"),
    "mrr@10": ("recip_rank", "recip_rank"),  # the run holds top_k = 10 documents, so no cut is lost
    "hit_rate@10": ("success.10", "success_10"),
    "r_precision": ("Rprec", "Rprec"),
}

def pytrec_eval_per_query(judgements: dict, run_file: Path, measures: list[str]) -> dict:
    qrels = {q: {d: int(g) for d, g in docs.items()} for q, docs in judgements.items()}
    return pytrec_values(qrels, read_trec_run(run_file), measures)


def write_config(folder: Path, **overrides) -> Path:
    config = {
        "name": "ocean-test",
        "dataset": {"path": str(OCEAN)},
        "retrievers": [
            {"label": "seed-ranking", "adapter": "static", "params": {"rankings": {"q-largest-ocean": SEED}}},
            {"label": "bm25", "adapter": "bm25", "params": {"k1": 1.2, "b": 0.75, "stemmer": "english", "stopwords": "english"}},
        ],
        "top_k": 10,
        "metrics": list(TREC_NAMES),
        "main_metric": "ndcg@4",
        "output": "out",
    }
    config.update(overrides)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def ocean_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ocean")
    config = load_config(write_config(folder))
    run = execute(config, progress=False)
    written = write_outputs(run)
    return run, written, folder / "out"


# ---- what is written -------------------------------------------------------------------------------


def test_writes_report_results_and_run_files(ocean_run):
    _, written, out = ocean_run
    names = sorted(p.name for p in out.iterdir() if p.name != ".rag_eval.json")  # the set's manifest
    assert names == ["bm25.json", "bm25.run", "per-query.csv", "plot-at-k.svg", "plot-deltas.svg", "plot-means.svg",
                     "report.html", "report.md", "seed-ranking.json", "seed-ranking.run"]
    assert sorted(p.name for p in written) == names
    assert json.loads((out / ".rag_eval.json").read_text())["files"] == names
    assert all(p.parent == out for p in written)


def test_results_file_is_self_describing(ocean_run):
    run, _, out = ocean_run
    doc = json.loads((out / "bm25.json").read_text())
    assert doc["schema_version"] == RESULTS_SCHEMA_VERSION == 1
    assert doc["kind"] == "rag_eval.results"
    assert doc["created"] == run.created
    # The resolved config: every field with its default filled in.
    resolved = doc["config"]["resolved"]
    assert resolved == run.config.model.model_dump(mode="json")
    assert resolved["evaluation"] == {"gain": "linear", "aggregation": "macro", "no_relevant": "skip", "relevance_threshold": 1.0,
                                       "judged_only": False, "min_evidence_fraction": 0.0, "tokenizer": "words"}
    assert resolved["report"]["detailed_queries"] == 20
    assert doc["config"]["path"] == str(run.config.path)
    # Dataset: counted from the YAML file itself, fingerprint from a fresh load.
    raw = yaml.safe_load(OCEAN.read_text())
    assert doc["dataset"]["fingerprint"] == load_yaml_query_set(OCEAN).fingerprint
    assert doc["dataset"]["queries"] == len(raw["queries"]) == 10
    assert doc["dataset"]["passages"] == len(raw["corpus"]) == 37
    assert doc["dataset"]["judgements"] == sum(len(q["judgements"]) for q in raw["queries"]) == 63
    # Retriever: its parameters and its own description (library and version).
    retriever = doc["retriever"]
    assert retriever["label"] == "bm25" and retriever["adapter"] == "bm25"
    assert retriever["params"] == {"k1": 1.2, "b": 0.75, "stemmer": "english", "stopwords": "english"}
    assert retriever["description"]["library"] == f"bm25s {metadata.version('bm25s')}"
    assert retriever["description"]["k1"] == 1.2 and retriever["description"]["method"] == "lucene"
    assert retriever["description"]["class"] == "rag_eval._retrievers.bm25:BM25Retriever"
    # Package versions.
    packages = doc["packages"]
    assert packages["python"] == platform.python_version()
    for name in ("numpy", "pandas", "bm25s"):
        assert packages[name] == metadata.version(name)
    assert packages["rag-eval"] == metadata.version("rag-eval-trec")  # the distribution's name (pyproject.toml)
    assert doc["top_k"] == 10
    assert set(doc["timings"]) == {"index_s", "search_s", "evaluate_s"}
    assert doc["query_texts"]["q-largest-ocean"] == "Which ocean is the largest?"
    seed = json.loads((out / "seed-ranking.json").read_text())
    assert seed["dataset"]["fingerprint"] == doc["dataset"]["fingerprint"]
    assert seed["retriever"]["description"] == {"class": "rag_eval._retrievers.static:StaticRetriever", "source": "inline", "queries": 1}


def test_seed_ranking_values_by_hand(ocean_run):
    _, _, out = ocean_run
    results = json.loads((out / "seed-ranking.json").read_text())["results"]
    per_query = results["per_query"]
    assert sorted(per_query) == sorted(q["id"] for q in yaml.safe_load(OCEAN.read_text())["queries"])
    # Grades in rank order 3, 2, 0, 1; ideal 3, 2, 1 (the other judged passages are 0).
    dcg = 3 + 2 / math.log2(3) + 0 + 1 / math.log2(5)
    idcg = 3 + 2 / math.log2(3) + 1 / 2
    assert per_query["q-largest-ocean"]["ndcg@4"] == pytest.approx(dcg / idcg, abs=1e-15)
    assert round(dcg, 4) == 4.6925 and round(idcg, 4) == 4.7619 and round(dcg / idcg, 4) == 0.9854
    # Nothing was retrieved for the 9 other judged queries: 0, and they stay in the mean.
    assert all(per_query[q]["ndcg@4"] == 0.0 for q in per_query if q != "q-largest-ocean")
    assert results["aggregate"]["ndcg@4"] == pytest.approx(dcg / idcg / 10, abs=1e-15)
    assert sorted(results["unanswered_queries"]) == sorted(q for q in per_query if q != "q-largest-ocean")
    assert (out / "seed-ranking.run").read_text().splitlines() == [
        f"q-largest-ocean\tQ0\t{doc}\t{rank}\t{float(5 - rank)!r}\tseed-ranking" for rank, doc in enumerate(SEED, start=1)
    ]


@pytest.mark.parametrize("label", ["seed-ranking", "bm25"])
def test_per_query_values_equal_pytrec_eval_on_the_written_run(ocean_run, tmp_path, label):
    run, _, out = ocean_run
    doc = json.loads((out / f"{label}.json").read_text())
    measures = sorted({asked for asked, _ in TREC_NAMES.values()})
    reference = pytrec_eval_per_query(run.dataset.judgements, out / f"{label}.run", measures)
    per_query = doc["results"]["per_query"]
    assert set(per_query) == set(run.dataset.judgements)
    compared = 0
    for qid, values in per_query.items():
        for metric, (_, key) in TREC_NAMES.items():
            # trec_eval scores only the queries in the run; an unanswered judged query scores 0 (trec_eval -c).
            expected = reference[qid][key] if qid in reference else 0.0
            assert values[metric] == pytest.approx(expected, rel=1e-12, abs=1e-12), (label, qid, metric)
            compared += 1
    assert compared == 10 * len(TREC_NAMES)
    for metric in TREC_NAMES:
        column = [values[metric] for values in per_query.values()]
        assert doc["results"]["aggregate"][metric] == pytest.approx(sum(column) / len(column), rel=1e-12)


def test_run_file_is_in_trec_eval_order_and_cut_at_top_k(ocean_run):
    run, _, out = ocean_run
    lines = [line.split("\t") for line in (out / "bm25.run").read_text().splitlines()]
    assert all(len(fields) == 6 and fields[1] == "Q0" and fields[5] == "bm25" for fields in lines)
    by_query: dict[str, list[tuple[int, float, str]]] = {}
    for qid, _, doc, rank, score, _ in lines:
        by_query.setdefault(qid, []).append((int(rank), float(score), doc))
        assert doc in run.dataset.corpus
    for qid, rows in by_query.items():
        assert [r for r, _, _ in rows] == list(range(1, len(rows) + 1))
        assert len(rows) <= 10
        assert all(a[1] >= b[1] for a, b in itertools.pairwise(rows))
        ranking = run.outcomes[1].ranking[qid]
        assert {d: s for _, s, d in rows} == ranking  # scores written with full precision


# ---- retrievers that misbehave ----------------------------------------------------------------------

USER_MODULE = '''
import math

class Base:
    def __init__(self, **params):
        self.params = params
    def index(self, corpus):
        self.docs = sorted(corpus)
    def search(self, queries, top_k):
        return {q: {self.docs[0]: 1.0} for q in queries}

class BadDoc(Base):
    def search(self, queries, top_k):
        return {q: {"not-a-passage": 2.0} for q in queries}

class NanScore(Base):
    def search(self, queries, top_k):
        return {q: {self.docs[0]: math.nan} for q in queries}

class TextScore(Base):
    def search(self, queries, top_k):
        return {q: {self.docs[0]: "high"} for q in queries}

class NumericTextScore(Base):
    def search(self, queries, top_k):
        return {q: {self.docs[0]: "1.0"} for q in queries}

class BoolScore(Base):
    def search(self, queries, top_k):
        return {q: {self.docs[0]: True} for q in queries}

class InfScore(Base):
    def search(self, queries, top_k):
        return {q: {self.docs[0]: -math.inf} for q in queries}

class NumpyScores(Base):
    def search(self, queries, top_k):
        import numpy as np
        return {q: {self.docs[0]: np.float32(2.5), self.docs[1]: np.int64(1)} for q in queries}

class AddsPassage(Base):
    def index(self, corpus):
        corpus["new"] = {"text": "injected"}

class EditsPassage(Base):
    def index(self, corpus):
        corpus[sorted(corpus)[0]]["text"] = "changed"

class AddsQuery(Base):
    def search(self, queries, top_k):
        queries["q-new"] = "injected"
        return {}

class ReadsLikeADict(Base):
    """Every read a dict offers, on the corpus and the queries, as built-in retrievers do."""
    def index(self, corpus):
        assert len(corpus) == len(list(corpus)) == len(corpus.keys()) == 5 and "d1" in corpus and "d9" not in corpus
        texts = [p.get("text") or "" for p in corpus.values()] + [p["text"] for _, p in corpus.items()]
        assert dict(corpus)["d1"]["text"] == corpus.get("d1")["text"] == corpus.copy()["d1"]["text"]
        own = {doc: dict(passage) for doc, passage in corpus.items()}  # a changeable copy is the plug-in's own
        own["d1"]["text"] = "mine"
        self.docs = sorted(corpus)
        self.texts = texts
    def search(self, queries, top_k):
        assert dict(queries) == {q: queries[q] for q in queries.keys()}
        return {q: {self.docs[0]: 1.0} for q in queries}

class RaisesInSearch(Base):
    def search(self, queries, top_k):
        raise RuntimeError("backend down\\nTraceback-like second line")

class RaisesInIndex(Base):
    def index(self, corpus):
        raise ValueError("cannot index")

class RaisesInInit(Base):
    def __init__(self):
        raise RuntimeError("no GPU here")

class Unasked(Base):
    def search(self, queries, top_k):
        return {"q-never-asked": {self.docs[0]: 1.0}}

class NotAMapping(Base):
    def search(self, queries, top_k):
        return [(q, self.docs[0]) for q in queries]

class AllTied(Base):
    """Every passage with the same score: the runner cuts at top_k in trec_eval order."""
    def search(self, queries, top_k):
        return {q: {d: 1.0 for d in self.docs} for q in queries}

class Described(Base):
    def describe(self):
        import pathlib
        return {"model": "my-model", "weights": pathlib.Path("/models/w.bin")}

class NoSearch:
    def index(self, corpus):
        pass

CALLS = []

class Recording(Base):
    def index(self, corpus):
        CALLS.append("index")
        super().index(corpus)
'''

TINY_SET = {
    "name": "tiny",
    "corpus": [{"id": f"d{i}", "text": f"passage {i}"} for i in range(1, 6)],
    "queries": [
        {"id": "q1", "text": "first", "judgements": {"d1": 2, "d5": 1}},
        {"id": "q2", "text": "second", "judgements": {"d2": 1}},
        {"id": "q3", "text": "not judged"},
    ],
}


@pytest.fixture(scope="module")
def user_module(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plugins")
    name = f"user_retrievers_{uuid.uuid4().hex[:8]}"
    (folder / f"{name}.py").write_text(USER_MODULE)
    sys.path.insert(0, str(folder))
    yield name
    sys.path.remove(str(folder))
    sys.modules.pop(name, None)


def tiny_config(tmp_path: Path, adapter: str, label: str = "mine", **overrides) -> Path:
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(TINY_SET, sort_keys=False))
    config = {
        "dataset": {"path": "tiny.yaml"},
        "retrievers": [{"label": label, "adapter": adapter}],
        "metrics": ["ndcg@3", "recall@3"],
        "top_k": 3,
        "output": "out",
    }
    config.update(overrides)
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@pytest.mark.parametrize(
    "cls, message",
    [
        ("BadDoc", "retriever 'mine': query 'q1': returned doc 'not-a-passage', which is not in the corpus"),
        ("NanScore", "retriever 'mine': query 'q1', doc 'd1': score is NaN"),
        ("TextScore", "retriever 'mine': query 'q1', doc 'd1': score 'high' (str) is not a number; return an int or a float"),
        ("NumericTextScore", "retriever 'mine': query 'q1', doc 'd1': score '1.0' (str) is not a number; return an int or a float"),
        ("BoolScore", "retriever 'mine': query 'q1', doc 'd1': score True (bool) is not a number; return an int or a float"),
        ("InfScore", "retriever 'mine': query 'q1', doc 'd1': score is -inf; scores must be finite numbers"),
        ("AddsPassage", "retriever 'mine' ({module}:AddsPassage) failed in index(): TypeError: 'mappingproxy' object does not support item assignment"),
        ("EditsPassage", "retriever 'mine' ({module}:EditsPassage) failed in index(): TypeError: 'mappingproxy' object does not support item assignment"),
        ("AddsQuery", "retriever 'mine' ({module}:AddsQuery) failed in search(): TypeError: 'mappingproxy' object does not support item assignment"),
        ("RaisesInSearch", "retriever 'mine' ({module}:RaisesInSearch) failed in search(): RuntimeError: backend down Traceback-like second line"),
        ("RaisesInIndex", "retriever 'mine' ({module}:RaisesInIndex) failed in index(): ValueError: cannot index"),
        ("Unasked", "retriever 'mine': search() answered query 'q-never-asked', which was not asked"),
        ("NotAMapping", "retriever 'mine': search() returned list, expected {{qid: {{doc_id: score}}}}"),
    ],
)
def test_a_misbehaving_retriever_stops_the_run_naming_it(tmp_path, user_module, cls, message):
    config = load_config(tiny_config(tmp_path, f"{user_module}:{cls}"))
    with pytest.raises(RetrieverError) as excinfo:
        execute(config, progress=False)
    assert str(excinfo.value) == message.format(module=user_module)
    assert "\n" not in str(excinfo.value)


def test_retrievers_read_the_corpus_and_queries_like_dicts_and_cannot_change_them(tmp_path, user_module):
    """The views are read-only (docs/plugins.md) yet read like dicts; the dataset, and so its
    fingerprint, is the one that was loaded, whatever a plug-in tried."""
    config = load_config(tiny_config(tmp_path, f"{user_module}:ReadsLikeADict"))
    outcome = execute(config, progress=False)
    (retriever,) = outcome.outcomes
    assert outcome.dataset.corpus["d1"] == {"text": "passage 1", "title": ""}
    assert outcome.dataset.fingerprint == load_yaml_query_set(tmp_path / "tiny.yaml").fingerprint
    # d1 alone for every query: q1 (d1 grade 2, d5 grade 1) DCG 2 / IDCG (2 + 1/log2 3); q2 0.
    assert retriever.results.aggregate["ndcg@3"] == pytest.approx(2 / (2 + 1 / math.log2(3)) / 2, rel=1e-15)
    assert set(outcome.dataset.query_texts()) == {"q1", "q2", "q3"}


def test_numpy_scores_are_numbers(tmp_path, user_module):
    config = load_config(tiny_config(tmp_path, f"{user_module}:NumpyScores"))
    (outcome,) = execute(config, progress=False).outcomes
    assert outcome.ranking["q1"] == {"d1": 2.5, "d2": 1.0}
    assert all(type(score) is float for scores in outcome.ranking.values() for score in scores.values())


def test_a_retriever_whose_constructor_raises(tmp_path, user_module):
    path = tiny_config(tmp_path, f"{user_module}:RaisesInInit")
    with pytest.raises(RetrieverError) as excinfo:
        execute(load_config(path), progress=False)
    assert str(excinfo.value) == (
        f"{path}: retriever 'mine': adapter '{user_module}:RaisesInInit': {user_module}.RaisesInInit() raised "
        "RuntimeError: no GPU here"
    )


def test_a_retriever_without_search_or_module(tmp_path, user_module):
    path = tiny_config(tmp_path, f"{user_module}:NoSearch")
    with pytest.raises(RetrieverError, match=r"retriever 'mine': adapter '.*:NoSearch': class .*\.NoSearch has no search\(\) method"):
        execute(load_config(path), progress=False)
    path = tiny_config(tmp_path, "no_such_module_here:Thing")
    with pytest.raises(RetrieverError, match=r"retriever 'mine': adapter 'no_such_module_here:Thing': .*no module named 'no_such_module_here'"):
        execute(load_config(path), progress=False)


def test_runner_cuts_at_top_k_in_trec_eval_order(tmp_path, user_module):
    run = execute(load_config(tiny_config(tmp_path, f"{user_module}:AllTied")), progress=False)
    # All five passages tie at 1.0; trec_eval ranks ties by doc id descending, so d5, d4, d3 survive.
    assert run.outcomes[0].ranking == {q: {"d5": 1.0, "d4": 1.0, "d3": 1.0} for q in ("q1", "q2", "q3")}
    results = run.outcomes[0].results
    # q1: d5 (grade 1) at rank 1, d1 (grade 2) missed: DCG 1, IDCG 2 + 1/log2(3).
    assert results.value("ndcg@3", "q1") == pytest.approx(1 / (2 + 1 / math.log2(3)), abs=1e-15)
    assert results.value("recall@3", "q1") == 0.5
    assert results.value("ndcg@3", "q2") == 0.0
    # q3 has no judgements: not scored, but listed.
    assert results.query_ids == ("q1", "q2")
    assert results.unjudged_queries == ("q3",)


def test_description_with_non_json_values_is_written(tmp_path, user_module):
    run = execute(load_config(tiny_config(tmp_path, f"{user_module}:Described")), progress=False)
    write_outputs(run)
    doc = json.loads((tmp_path / "out" / "mine.json").read_text())
    assert doc["retriever"]["description"]["model"] == "my-model"
    assert doc["retriever"]["description"]["weights"] == "/models/w.bin"


def test_a_failing_second_retriever_writes_nothing(tmp_path, user_module):
    path = tiny_config(
        tmp_path,
        "static",
        retrievers=[
            {"label": "fine", "adapter": "static", "params": {"rankings": {"q1": ["d1"]}}},
            {"label": "broken", "adapter": f"{user_module}:RaisesInSearch"},
        ],
    )
    with pytest.raises(RetrieverError, match="retriever 'broken'"):
        execute(load_config(path), progress=False)
    assert not (tmp_path / "out").exists()


def test_every_retriever_is_built_before_any_runs(tmp_path, user_module):
    """A bad parameter of the last retriever is reported before the first one indexes anything."""
    path = tiny_config(
        tmp_path,
        "static",
        retrievers=[
            {"label": "first", "adapter": f"{user_module}:Recording"},
            {"label": "second", "adapter": "bm25", "params": {"k1": 1.2, "bee": 0.5}},
        ],
    )
    with pytest.raises(RetrieverError, match="retriever 'second': adapter 'bm25' has no parameter 'bee'"):
        execute(load_config(path), progress=False)
    assert sys.modules[user_module].CALLS == []  # only this test uses Recording


def test_nested_retriever_paths_resolve_against_the_config_folder(tmp_path, monkeypatch):
    # A hybrid of two static retrievers whose run files are named relative to the config.
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "a.run").write_text("q1 Q0 d1 1 2.0 a\nq1 Q0 d2 2 1.0 a\n")
    (tmp_path / "runs" / "b.run").write_text("q1 Q0 d5 1 2.0 b\nq1 Q0 d1 2 1.0 b\n")
    config_path = tiny_config(tmp_path, "hybrid")
    data = yaml.safe_load(config_path.read_text())
    data["retrievers"][0]["params"] = {
        "method": "rrf",
        "k": 60,
        "retrievers": [
            {"adapter": "static", "params": {"path": "runs/a.run"}},
            {"adapter": "static", "params": {"path": "runs/b.run"}},
        ],
    }
    config_path.write_text(yaml.safe_dump(data, sort_keys=False))
    monkeypatch.chdir(REPO)  # the config's folder, not the working directory, anchors the paths
    run = execute(load_config(config_path), progress=False)
    scores = run.outcomes[0].ranking["q1"]
    # RRF by hand: d1 = 1/61 + 1/62, d5 = 1/61, d2 = 1/62.
    assert scores == pytest.approx({"d1": 1 / 61 + 1 / 62, "d5": 1 / 61, "d2": 1 / 62})


def test_grades_whose_gains_overflow_stop_the_run_naming_the_query(tmp_path, user_module):
    """Not `ndcg@3 nan` in the report and Infinity in the results file: one error, nothing written."""
    big = {**TINY_SET, "queries": [{"id": "q1", "text": "first", "judgements": {"d1": 1e308, "d2": 1e308, "d5": 1e308}}]}
    path = tiny_config(tmp_path, f"{user_module}:Base")
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(big, sort_keys=False))
    with pytest.raises(EvaluationError, match=r"^judgements: query 'q1': ndcg@3 cannot be computed: its ideal DCG is infinite"):
        execute(load_config(path), progress=False)
    assert not (tmp_path / "out").exists()
