"""The results file (rag_eval/results_file.py): strict JSON, validated on load, built once.

Strictness is checked with a JSON parser that refuses NaN and Infinity, as JavaScript's
JSON.parse, jq and most other languages' parsers do.
"""

from __future__ import annotations

import importlib.util
import json
import math
import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml

from rag_eval.cli import main
from rag_eval.config.schema import load_config
from rag_eval.errors import RetrieverError
from rag_eval.results_file import (
    SNIPPET_CHARS,
    SNIPPET_RANKS,
    ResultsFile,
    load_results_file,
    results_document,
    results_json,
    snippet,
)
from rag_eval.runner import check_ranking, execute

REPO = Path(__file__).resolve().parents[1]
OCEAN = REPO / "datasets" / "ocean_facts.yaml"
FIXTURES = Path(__file__).resolve().parent / "regression_fixtures"


def strict_loads(text: str):
    def refuse(name):
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


PLUGIN = textwrap.dedent(
    """
    import datetime
    import math
    from pathlib import Path

    class Odd:
        '''Scores every passage; describes itself with values JSON has no word for.'''

        def __init__(self, weight=1.0):
            self.weight = weight

        def index(self, corpus):
            self.docs = sorted(corpus)

        def search(self, queries, top_k):
            return {q: {d: float(i) for i, d in enumerate(self.docs[:top_k])} for q in queries}

        def describe(self):
            return {"weight": self.weight, "limit": math.inf, "when": datetime.date(2024, 5, 1),
                    "dims": (384, 768), "where": Path("/models/x"), "ok": 1.5}
    """
)


@pytest.fixture
def odd_run(tmp_path, monkeypatch):
    (tmp_path / "odd_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    config = {
        "name": "strict-json",
        "dataset": {"path": str(OCEAN)},
        "retrievers": [{"label": "odd", "adapter": "odd_plugin:Odd", "params": {"weight": float("nan")}}],
        "metrics": ["ndcg@10", "recall@5"],
        "top_k": 12,
        "output": "out",
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))  # weight: .nan in YAML
    assert ".nan" in path.read_text()
    return path


def test_results_file_is_strict_json_with_null_for_what_json_cannot_hold(odd_run, capsys):
    assert main(["run", str(odd_run), "--no-progress"]) == 0
    text = (odd_run.parent / "out" / "odd.json").read_text()
    document = strict_loads(text)  # no bare NaN / Infinity anywhere
    retriever = document["retriever"]
    assert retriever["params"] == {"weight": None}
    assert {k: retriever["description"][k] for k in ("weight", "limit", "when", "dims", "where", "ok")} == {
        "weight": None, "limit": None, "when": "2024-05-01", "dims": [384, 768], "where": "/models/x", "ok": 1.5,
    }
    assert document["config"]["resolved"]["retrievers"][0]["params"] == {"weight": None}


def test_results_json_refuses_nan_as_a_guard():
    with pytest.raises(ValueError):
        results_json({"x": math.nan})
    assert results_json({"x": None, "y": 1.5}) == '{\n  "x": null,\n  "y": 1.5\n}\n'


def test_run_results_round_trip_through_the_file(tmp_path, capsys):
    out = tmp_path / "ocean"
    assert main(["run", str(REPO / "configs" / "ocean_facts.yaml"), "--output", str(out), "--no-progress"]) == 0
    config = load_config(REPO / "configs" / "ocean_facts.yaml")
    run = execute(config, progress=False)
    for outcome in run.outcomes:
        loaded = load_results_file(out / f"{outcome.label}.json")
        assert loaded.label == outcome.label and loaded.top_k == 10
        assert loaded.fingerprint == run.dataset.fingerprint and loaded.dataset_name == "ocean-facts"
        assert loaded.results.query_ids == outcome.results.query_ids
        for name, column in outcome.results.values.items():
            np.testing.assert_array_equal(loaded.results.values[name], column)  # NaN where NaN, bit for bit
        assert loaded.results.aggregate == outcome.results.aggregate
        # Rankings as [doc, score, grade or None], in rank order; grades from the dataset.
        for qid, entries in loaded.rankings.items():
            judged = run.dataset.judgements.get(qid, {})
            # trec_eval's order: score descending, ties by doc id descending.
            expected = sorted(outcome.ranking[qid].items(), key=lambda item: (item[1], item[0]), reverse=True)
            assert [(d, s) for d, s, _ in entries] == expected
            assert all(g == judged.get(d) for d, _, g in entries)


def test_passages_hold_the_text_of_the_top_ranked_passages_only(tmp_path, capsys):
    out = tmp_path / "ocean"
    assert main(["run", str(REPO / "configs" / "ocean_facts.yaml"), "--output", str(out), "--no-progress"]) == 0
    corpus = {p["id"]: p["text"] for p in yaml.safe_load(OCEAN.read_text())["corpus"]}
    document = json.loads((out / "bm25.json").read_text())
    top = {doc for entries in document["rankings"].values() for doc, _, _ in entries[:SNIPPET_RANKS]}
    assert set(document["passages"]) == top
    for doc, text in document["passages"].items():
        full = " ".join(corpus[doc].split())
        assert text == (full if len(full) <= SNIPPET_CHARS else full[: SNIPPET_CHARS - 1].rstrip() + "…")
        assert len(text) <= SNIPPET_CHARS
    loaded = load_results_file(out / "bm25.json")
    assert loaded.passages["pacific-largest"] == {"text": "The Pacific Ocean is the largest ocean."}


def test_snippet():
    assert snippet("  a\nb\tc ") == "a b c"
    assert snippet("x" * 70) == "x" * 59 + "…"
    assert snippet("word " * 20, limit=12) == "word word w…"


def test_a_results_file_without_passages_still_loads(tmp_path):
    spec = importlib.util.spec_from_file_location("helpers", FIXTURES / "helpers.py")
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    document = helpers.results_document({"q1": {"ndcg@10": 0.5}, "q2": {"ndcg@10": None}})
    assert "passages" not in document
    path = tmp_path / "old.json"
    path.write_text(json.dumps(document))
    loaded = load_results_file(path)
    assert loaded.passages == {} and loaded.results.aggregate["ndcg@10"] == 0.5
    assert math.isnan(loaded.results.value("ndcg@10", "q2"))


def test_the_run_document_is_built_once_and_validates(tmp_path):
    config = load_config(REPO / "configs" / "ocean_facts.yaml")
    run = execute(config, progress=False)
    outcome = run.outcomes[0]
    first = results_document(run, outcome)
    assert results_document(run, outcome) is first
    checked = ResultsFile.from_document("x.json", first, results=outcome.results)
    assert checked.results is outcome.results and checked.label == outcome.label


@pytest.mark.parametrize(
    "score, message",
    [
        (math.inf, "score is inf; scores must be finite numbers"),
        (-math.inf, "score is -inf; scores must be finite numbers"),
        (10**400, "score 1000000000000000000000000000000000000000... (401 characters) is too large for a float64"),
    ],
)
def test_infinite_or_overflowing_scores_are_refused(score, message):
    with pytest.raises(RetrieverError) as raised:
        check_ranking("mine", {"q1": {"d1": score}}, {"q1": "text"}, {"d1": {"text": "t"}}, 10)
    assert str(raised.value) == f"retriever 'mine': query 'q1', doc 'd1': {message}" + (
        "; return scores a float can hold" if "too large" in message else ""
    )
