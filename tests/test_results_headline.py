"""What `rag-eval run` prints: each retriever's headline value, and beside it why the mean is
what it is when that is not obvious (unanswered queries scored 0, the no_relevant choice);
progress bars that name the retriever and the stage running.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from rag_eval._data.config.schema import load_config
from rag_eval._data.datasets.query_set import load_yaml_query_set
from rag_eval._run.execute import execute
from rag_eval.cli import main

REPO = Path(__file__).resolve().parents[1]

# q1: relevant d1 (grade 2); q2: judged, nothing relevant (grade 0 only); q3: relevant d3.
TINY = {
    "name": "tiny",
    "corpus": [{"id": f"d{i}", "text": f"passage {i}"} for i in range(1, 5)],
    "queries": [
        {"id": "q1", "text": "first", "judgements": {"d1": 2, "d2": 0}},
        {"id": "q2", "text": "second", "judgements": {"d2": 0}},
        {"id": "q3", "text": "third", "judgements": {"d3": 1}},
    ],
}


def tiny_config(tmp_path: Path, no_relevant: str, rankings: dict) -> Path:
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(TINY, sort_keys=False))
    config = {
        "dataset": {"path": "tiny.yaml"},
        "retrievers": [
            {"label": "replay", "adapter": "static", "params": {"rankings": rankings}},
        ],
        "metrics": ["ndcg@3"],
        "top_k": 3,
        "evaluation": {"no_relevant": no_relevant},
        "output": "out",
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def headline(capsys) -> str:
    return capsys.readouterr().out.splitlines()[0]


def test_ocean_facts_seed_ranking_says_why_its_mean_is_low(tmp_path, capsys):
    out = tmp_path / "ocean"
    assert main(["run", str(REPO / "configs" / "ocean_facts.yaml"), "--output", str(out), "--no-progress"]) == 0
    lines = capsys.readouterr().out.splitlines()
    results = json.loads((out / "seed-ranking.json").read_text())["results"]
    unanswered = results["unanswered_queries"]
    assert len(unanswered) == 9 and results["num_queries"] == 10
    value = results["aggregate"]["ndcg@4"]
    assert lines[0] == f"seed-ranking\tndcg@4\t{value:.4f}\t(9 of 10 judged queries unanswered, scored 0)"
    assert f"{value:.4f}" == "0.0985"
    assert lines[1].startswith("bm25\tndcg@4\t") and lines[1].count("\t") == 2  # answered everything: no note


def test_skip_names_the_queries_left_out_and_what_trec_eval_does(tmp_path, capsys):
    # q1: d1 first -> 1.0; q3: d3 second behind d4 -> 1/log2(3); q2 left out: mean of the two.
    path = tiny_config(tmp_path, "skip", {"q1": ["d1"], "q2": ["d2"], "q3": ["d4", "d3"]})
    assert main(["run", str(path), "--no-progress"]) == 0
    mean = (1.0 + 1 / math.log2(3)) / 2
    assert headline(capsys) == (
        f"replay\tndcg@3\t{mean:.4f}\t(1 judged query with no relevant passage left out of the mean "
        "(no_relevant: skip; trec_eval scores them 0))"
    )


def test_zero_says_the_queries_scored_0(tmp_path, capsys):
    path = tiny_config(tmp_path, "zero", {"q1": ["d1"], "q2": ["d2"], "q3": ["d4", "d3"]})
    assert main(["run", str(path), "--no-progress"]) == 0
    mean = (1.0 + 0.0 + 1 / math.log2(3)) / 3
    assert headline(capsys) == (
        f"replay\tndcg@3\t{mean:.4f}\t(1 judged query with no relevant passage scored 0 (no_relevant: zero))"
    )


def test_unanswered_and_left_out_together(tmp_path, capsys):
    # q3 unanswered (scored 0, in the mean); q2 unanswered too but left out: it is not counted as unanswered.
    path = tiny_config(tmp_path, "skip", {"q1": ["d1"]})
    assert main(["run", str(path), "--no-progress"]) == 0
    assert headline(capsys) == (
        "replay\tndcg@3\t0.5000\t(1 of 2 judged queries unanswered, scored 0; 1 judged query with no relevant "
        "passage left out of the mean (no_relevant: skip; trec_eval scores them 0))"
    )


def test_progress_bar_names_the_retriever_and_the_stage(tmp_path, capsys):
    path = tiny_config(tmp_path, "skip", {"q1": ["d1"]})
    execute(load_config(path), progress=True)
    err = capsys.readouterr().err
    for stage in ("index", "search", "evaluate"):
        assert f"replay: {stage}" in err, err
    assert "retriever 1 of 1" in err
    assert "3/3" in err  # three steps per retriever, all done


@pytest.mark.parametrize("policy", ["skip", "zero"])
def test_nothing_is_said_when_every_query_counts_as_usual(tmp_path, capsys, policy):
    tiny = dict(TINY, queries=[q for q in TINY["queries"] if q["id"] != "q2"])
    path = tiny_config(tmp_path, policy, {"q1": ["d1"], "q3": ["d3"]})
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(tiny, sort_keys=False))
    assert main(["run", str(path), "--no-progress"]) == 0
    assert headline(capsys) == "replay\tndcg@3\t1.0000"


def test_no_query_with_a_value_prints_n_a_and_a_report_without_a_decision(tmp_path, capsys):
    # The attack's case: two retrievers, a relevance threshold above every grade (2), so each query is left out.
    # Before: `run` ended in an internal error (exit 3) after all the retrieval work, and wrote nothing.
    path = tiny_config(tmp_path, "skip", {"q1": ["d1"], "q3": ["d3"]})
    config = yaml.safe_load(path.read_text())
    config["retrievers"].append({"label": "other", "adapter": "static", "params": {"rankings": {"q1": ["d2", "d1"]}}})
    config["evaluation"]["relevance_threshold"] = 3  # binary metrics (mrr) need a grade of 3: none has one
    config["metrics"] = ["mrr@3"]
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    assert main(["run", str(path), "--no-progress"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[:3] for line in lines[:2]] == [["replay", "mrr@3", "n/a"], ["other", "mrr@3", "n/a"]]
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    decision = report.split("## 🏁 Decision", 1)[1].split("\n## ", 1)[0]
    assert "No decision: no variant has a value of `mrr@3` for any query" in decision
    assert "Ship" not in decision


def test_a_retriever_none_of_whose_units_fits_the_budget_says_so_in_its_headline(tmp_path, capsys):
    # The first-day attack: "bm25-md evidence_recall@1000tokens 0.0000" with no note, where report.md explained it.
    # The ocean documents have 312 to 666 characters: none fits 300 characters whole; 200-character chunks do.
    lengths = sorted(len(t) for t in load_yaml_query_set(REPO / "datasets" / "ocean_documents.yaml").documents.values())
    assert lengths[0] > 300
    config = yaml.safe_load((REPO / "configs" / "ocean_documents.yaml").read_text())
    config["dataset"]["path"] = str(REPO / "datasets" / "ocean_documents.yaml")
    config["chunking"] = {"recursive-200c": config["chunking"]["recursive-200c"]}
    config["retrievers"] = [r for r in config["retrievers"] if r["label"] in ("bm25-recursive-200c", "bm25-documents")]
    config.update(metrics=["evidence_recall@300chars", "evidence_recall@3"], main_metric="evidence_recall@300chars",
                  output=str(tmp_path / "out"))
    path = tmp_path / "docs.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    assert main(["run", str(path), "--no-progress"]) == 0
    lines = dict(line.split("\t", 1) for line in capsys.readouterr().out.splitlines()[:2])
    assert lines["bm25-documents"].startswith("evidence_recall@300chars\t0.0000\t(no unit it retrieved fits the "
                                              "budget on any query: 0 by the budget, not by the ranking")
    assert "budget" not in lines["bm25-recursive-200c"]
