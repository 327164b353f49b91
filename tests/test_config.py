"""Run configs: YAML read purely, validated strictly, every problem named with its field path."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from rag_eval._core.errors import ConfigError, RagEvalError
from rag_eval._core.yaml_loader import MAX_ALIAS_NODES, MAX_NESTING, load_yaml
from rag_eval._data.config.labels import LABEL_RULE
from rag_eval._data.config.partial import partial_config
from rag_eval._data.config.schema import RunConfig, folder_name, load_config
from rag_eval._run.build import build_retriever
from rag_eval._run.plan import load_config_dataset
from rag_eval._scoring.stats import MAX_RESAMPLES, MIN_RESAMPLES
from rag_eval.cli import main

REPO = Path(__file__).resolve().parents[1]

QUERY_SET = {
    "name": "tiny",
    "corpus": [{"id": "d1", "text": "alpha beta"}, {"id": "d2", "text": "gamma delta"}],
    "queries": [{"id": "q1", "text": "alpha", "judgements": {"d1": 2, "d2": 0}}],
}


def write(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
    return path


def valid(**overrides) -> dict:
    config = {
        "name": "tiny-run",
        "dataset": {"path": "../data/tiny.yaml"},
        "retrievers": [{"label": "bm25", "adapter": "bm25", "params": {"k1": 1.2, "b": 0.75}}],
        "metrics": ["ndcg@10", "recall@10"],
    }
    config.update(overrides)
    return config


@pytest.fixture
def project(tmp_path) -> Path:
    """tmp/project/{configs,data}: the config refers to the data relative to itself."""
    write(tmp_path / "project" / "data" / "tiny.yaml", QUERY_SET)
    return tmp_path / "project"


def problems(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as excinfo:
        load_config(path)
    return excinfo.value.problems


# ---- paths ---------------------------------------------------------------------------------------


def test_paths_resolve_against_the_config_file_not_the_cwd(project, tmp_path, monkeypatch):
    run_file = write(project / "runs" / "fixed.run", "q1 Q0 d2 1 5.0 x\nq1 Q0 d1 2 4.0 x\n")
    config_path = write(
        project / "configs" / "run.yaml",
        valid(retrievers=[{"label": "fixed", "adapter": "static", "params": {"path": "../runs/fixed.run"}}]),
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config = load_config(config_path)
    assert config.resolve("../data/tiny.yaml") == project / "data" / "tiny.yaml"
    dataset = load_config_dataset(config)
    assert dataset.judgements == {"q1": {"d1": 2.0, "d2": 0.0}}
    retriever = build_retriever(config.model.retrievers[0], config)
    assert retriever.path == str(run_file)
    assert retriever.search({"q1": "alpha"}, 10) == {"q1": {"d2": 5.0, "d1": 4.0}}
    # Default output folder: reports/<name> beside configs/.
    assert config.output_dir == project / "reports" / "tiny-run"


def test_output_relative_to_the_config(project):
    config = load_config(write(project / "configs" / "run.yaml", valid(output="../out/here")))
    assert config.output_dir == project / "out" / "here"
    absolute = load_config(write(project / "configs" / "abs.yaml", valid(output=str(project / "abs"))))
    assert absolute.output_dir == project / "abs"


def test_defaults_are_the_documented_semantics(project):
    model = load_config(write(project / "configs" / "run.yaml", valid())).model
    assert model.top_k == 100
    assert model.evaluation.model_dump() == {
        "gain": "linear", "aggregation": "macro", "no_relevant": "skip", "relevance_threshold": 1.0,
        "judged_only": False, "min_evidence_fraction": 0.0, "tokenizer": "words",
    }
    assert model.report.detailed_queries == 20
    assert model.primary_metric == "ndcg@10"


def test_metric_names_are_canonical(project):
    model = load_config(write(project / "configs" / "run.yaml", valid(metrics=["ndcg_cut_10", "P_5", "ndcg@3"]))).model
    assert model.metrics == ["ndcg@10", "precision@5", "ndcg@3"]


# ---- strictness ------------------------------------------------------------------------------------


def test_unknown_top_level_key_with_hint(project):
    path = write(project / "configs" / "run.yaml", valid(top_kk=5))
    assert problems(path) == [
        (f"{path}: top_kk: unknown key; did you mean 'top_k'? allowed: cache_dir, chunking, dataset, evaluation, execution, main_metric, "
        "metrics, name, output, regression, report, retrievers, reuse_rankings, sweep, top_k")
    ]


def test_unknown_nested_keys_name_their_field_path(project):
    config = valid(evaluation={"gian": "linear"})
    config["retrievers"][0]["parms"] = {"k1": 1.0}
    path = write(project / "configs" / "run.yaml", config)
    assert problems(path) == [
        f"{path}: retrievers[0](bm25).parms: unknown key; did you mean 'params'? allowed: adapter, chunker, label, params",
        (f"{path}: evaluation.gian: unknown key; did you mean 'gain'? allowed: aggregation, gain, "
         "judged_only, min_evidence_fraction, no_relevant, relevance_threshold, tokenizer"),
    ]


@pytest.mark.parametrize(
    "field, value, expected",
    [
        ("top_k", "ten", "top_k: Input should be a valid integer (got 'ten')"),
        # YAML's `yes` and a quoted number are not silently turned into integers.
        ("top_k", True, "top_k: Input should be a valid integer (got True)"),
        ("top_k", "10", "top_k: Input should be a valid integer (got '10')"),
        ("top_k", 0, "top_k: Input should be greater than or equal to 1 (got 0)"),
        ("metrics", "ndcg@10", "metrics: Input should be a valid list (got 'ndcg@10')"),
        ("evaluation", {"gain": "quadratic"}, "evaluation.gain: Input should be 'linear' or 'exponential' (got 'quadratic')"),
        ("evaluation", {"relevance_threshold": 0}, "evaluation.relevance_threshold: Input should be greater than 0 (got 0)"),
        ("report", {"detailed_queries": True}, "report.detailed_queries: Input should be a valid integer (got True)"),
    ],
)
def test_wrong_types_are_errors_with_field_path(project, field, value, expected):
    path = write(project / "configs" / "run.yaml", valid(**{field: value}))
    assert problems(path) == [f"{path}: {expected}"]


def test_unknown_adapter_with_hint(project):
    path = write(project / "configs" / "run.yaml", valid(retrievers=[{"label": "lexical", "adapter": "bm52"}]))
    (problem,) = problems(path)
    assert problem.startswith(f"{path}: retrievers[0](lexical).adapter: unknown adapter 'bm52'; did you mean 'bm25'? ")
    assert "static" in problem and "'package.module:Class'" in problem


def test_bad_metric_with_hint(project):
    path = write(project / "configs" / "run.yaml", valid(metrics=["ndcg@10", "ndgc@5"]))
    (problem,) = problems(path)
    assert problem.startswith(f"{path}: metrics: unknown metric 'ndgc@5' (did you mean 'ndcg@5'?)")


def test_dataset_needs_a_location(project):
    path = write(project / "configs" / "run.yaml", valid(dataset={"format": "trec", "qrels": "q.txt"}))
    assert problems(path) == [f"{path}: dataset: a TREC dataset needs qrels, queries and corpus; missing queries, corpus"]


def test_label_rules(project):
    retrievers = [{"label": "a b", "adapter": "bm25"}, {"label": "x", "adapter": "bm25"}, {"label": "x", "adapter": "static"}]
    path = write(project / "configs" / "run.yaml", valid(retrievers=retrievers))
    # Both at once (issue 20): the labels' uniqueness is checked across retrievers even when one label is wrong.
    problem, repeated = problems(path)
    assert problem == f"{path}: retrievers[0](a b).label: {LABEL_RULE} (got 'a b')"
    assert repeated == f"{path}: retrievers: retriever labels must be unique; repeated: x"
    path = write(project / "configs" / "run2.yaml", valid(retrievers=retrievers[1:]))
    (problem,) = problems(path)
    assert "retriever labels must be unique; repeated: x" in problem


@pytest.mark.parametrize("label", ["seed\n", "seed\r\n", "\nseed", "se\ned"])
def test_a_label_with_a_line_break_is_refused(project, label):
    # Issue 20, item 13: `$` in the label pattern matched before a final newline, so "seed\n" passed
    # and named files with a newline in them (and blank lines in the run file).
    path = write(project / "configs" / "run.yaml", valid(retrievers=[{"label": label, "adapter": "bm25"}]))
    (problem,) = problems(path)
    assert problem.startswith(f"{path}: retrievers[0]") and problem.endswith(f"{LABEL_RULE} (got {label!r})")


def test_the_label_rule_matches_the_whole_text():
    from rag_eval._data.config.labels import LABEL_MAX, is_label

    assert is_label("bm25.k1-0.9.b-0.4") and is_label("a" * LABEL_MAX)
    assert not is_label("a" * (LABEL_MAX + 1)) and not is_label("seed\n") and not is_label("") and not is_label(".x")


def test_all_problems_are_collected_in_one_error(project):
    config = valid(top_kk=5, metrics=["ndcg@10", "ndgc@5"], retrievers=[{"label": "lexical", "adapter": "bm52"}])
    path = write(project / "configs" / "run.yaml", config)
    with pytest.raises(ConfigError) as excinfo:
        load_config(path)
    found = excinfo.value.problems
    assert len(found) == 3
    assert [p.split(": ")[1] for p in found] == ["retrievers[0](lexical).adapter", "metrics", "top_kk"]
    assert str(excinfo.value) == found[0] + " (and 2 more; `rag-eval validate` lists all)"


def test_duplicate_key_in_config_is_an_error(project):
    path = write(project / "configs" / "run.yaml", "metrics: [ndcg@10]\ntop_k: 10\nmetrics: [recall@5]\n")
    with pytest.raises(ConfigError) as excinfo:
        load_config(path)
    assert str(excinfo.value) == (
        f"{path}: line 3, column 1: invalid YAML: key 'metrics' appears twice in one mapping (first on line 1)"
    )


def test_yaml_merge_keys_may_still_override(tmp_path):
    path = write(tmp_path / "m.yaml", "base: &b {k1: 1.0, b: 0.5}\nbm25:\n  <<: *b\n  k1: 2.0\n")
    assert load_yaml(path) == {"base": {"k1": 1.0, "b": 0.5}, "bm25": {"k1": 2.0, "b": 0.5}}


def test_malformed_yaml_has_line_and_column(tmp_path):
    path = write(tmp_path / "bad.yaml", "dataset:\n  path: [x\nmetrics: [a]\n")
    with pytest.raises(ConfigError) as excinfo:
        load_config(path)
    assert str(excinfo.value) == f"{path}: line 3, column 8: invalid YAML: expected ',' or ']', but got ':'"


@pytest.mark.parametrize("text", ["", "- a\n- b\n", "just a string\n"])
def test_config_must_be_a_mapping(tmp_path, text):
    path = write(tmp_path / "c.yaml", text)
    with pytest.raises(ConfigError) as excinfo:
        load_config(path)
    assert str(excinfo.value).startswith(f"{path}: a run config is a mapping")


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError) as excinfo:
        load_config(tmp_path / "none.yaml")
    assert str(excinfo.value) == f"{tmp_path / 'none.yaml'}: no such file; expected a YAML run config"


# ---- rag-eval validate ------------------------------------------------------------------------------


def test_validate_lists_all_problems_exit_2(project, capsys):
    config = valid(top_kk=5, metrics=["ndcg@10", "ndgc@5"], retrievers=[{"label": "lexical", "adapter": "bm52"}])
    path = write(project / "configs" / "run.yaml", config)
    assert main(["validate", str(path)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 4
    assert "unknown adapter 'bm52'; did you mean 'bm25'?" in lines[0]
    assert "unknown metric 'ndgc@5'" in lines[1]
    assert "top_kk: unknown key; did you mean 'top_k'?" in lines[2]
    assert lines[3] == "rag-eval: 3 problems found"
    assert captured.out == ""


def test_validate_checks_dataset_and_retriever_parameters_together(project, capsys):
    config = valid(
        dataset={"path": "../data/missing.yaml"},
        retrievers=[
            {"label": "lexical", "adapter": "bm25", "params": {"stemer": "english"}},
            {"label": "fixed", "adapter": "static", "params": {"path": "nope.run"}},
        ],
    )
    path = write(project / "configs" / "run.yaml", config)
    assert main(["validate", str(path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        f"{project / 'data' / 'missing.yaml'}: no such file; expected a YAML query set",
        (f"{path}: retriever 'lexical': adapter 'bm25' has no parameter 'stemer' (did you mean 'stemmer'?); its parameters: "
        "k1, b, delta, method, stemmer, stopwords, lowercase, include_title, show_progress"),
        f"{path}: retriever 'fixed': static: {project / 'configs' / 'nope.run'}: no such file",
        "rag-eval: 3 problems found",
    ]


def test_validate_valid_config_exit_0(project, capsys):
    path = write(project / "configs" / "run.yaml", valid())
    assert main(["validate", str(path)]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    from rag_eval._data.datasets import load_yaml_query_set

    fingerprint = load_yaml_query_set(project / "data" / "tiny.yaml").fingerprint
    assert captured.out.startswith(f"{path}: OK: dataset tiny (1 queries, 2 passages, fingerprint {fingerprint})")


def test_validate_example_config(capsys):
    repo = Path(__file__).resolve().parents[1]
    assert main(["validate", os.fspath(repo / "configs" / "ocean_facts.yaml")]) == 0
    assert ": OK: dataset ocean-facts (10 queries, 37 passages" in capsys.readouterr().out


def test_validate_lists_dataset_problems_even_when_the_config_is_invalid(project, capsys):
    path = write(project / "configs" / "run.yaml", valid(dataset={"path": "../data/missing.yaml"}, top_kk=5))
    assert main(["validate", str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        (f"{path}: top_kk: unknown key; did you mean 'top_k'? allowed: cache_dir, chunking, dataset, evaluation, execution, main_metric, "
        "metrics, name, output, regression, report, retrievers, reuse_rankings, sweep, top_k"),
        f"{project / 'data' / 'missing.yaml'}: no such file; expected a YAML query set",
        "rag-eval: 2 problems found",
    ]
    # A config that cannot be read at all gives its one problem, once.
    broken = write(project / "configs" / "broken.yaml", "dataset: [\n")
    assert main(["validate", str(broken)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and err[0].startswith(f"{broken}: line ") and err[1] == "rag-eval: 1 problem found"


def _planted(project: Path) -> Path:
    """A config and its dataset with ten independent problems of different kinds (issue 20)."""
    data = project / "data"
    write(data / "docs.yaml", {
        "name": "docs",
        "documents": "docs.jsonl",
        "queries": [{"id": "q1", "text": "alpha", "evidence": [{"doc": "d1", "quote": "alpha beta"}]}],
    })
    (data / "docs.jsonl").write_text('{"id": "d1", "text": "alpha beta gamma"}\n{"id": "d2", "txt": "oops"}\n')
    return write(project / "configs" / "planted.yaml", {
        "name": "planted",
        "dataset": {"path": "../data/docs.yaml"},
        "top_kk": 5,                                                      # 1. unknown top-level key
        "chunking": {
            "fixed-20": {"method": "fixed", "size": 20, "overlap": 30},  # 2. a chunker's parameters
        },
        "retrievers": [
            {"label": "bad label", "adapter": "bm25"},                    # 3. a label
            {"label": "lexical", "adapter": "bm25", "params": {"stemer": "english"}, "chunker": "fixed-20"},  # 4.
            {"label": "chunked", "adapter": "bm25", "chunker": "nochunker"},  # 5. a chunker that does not exist
        ],
        "metrics": ["doc_ndcg@10", "ndgc@5"],                             # 6. a metric name
        "evaluation": {"gain": "quadratic"},                              # 7. an evaluation option
        "regression": {
            "baseline": "base.json",                                      # 8. a baseline that is not there
            "gates": {"doc_ndcg@10": {"max_drop": -1}},                  # 9. a gate's limit
        },
    })                                                                    # 10. the dataset's second line


def test_validate_lists_every_independent_problem_in_one_run(project, capsys):
    # Issue 20: these took four runs of `validate` to see (the checks across sections, the retrievers', the
    # chunkers' and the baseline's waited for the config to be valid); one run lists them all now.
    path = _planted(project)
    assert main(["validate", str(path)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    planted = [
        f"{path}: top_kk: unknown key; did you mean 'top_k'?",
        f"{path}: chunking.fixed-20.overlap: 30 must be less than size (20)",
        f"{path}: retrievers[0](bad label).label: {LABEL_RULE}",
        f"{path}: retriever 'lexical': adapter 'bm25' has no parameter 'stemer' (did you mean 'stemmer'?)",
        f"{path}: retrievers[2](chunked).chunker: no chunker 'nochunker' in chunking; chunkers: fixed-20",
        f"{path}: metrics: unknown metric 'ndgc@5' (did you mean 'ndcg@5'?)",
        f"{path}: evaluation.gain: Input should be 'linear' or 'exponential' (got 'quadratic')",
        f"{path}: regression.baseline: {path.parent / 'base.json'}: no such file",
        f"{path}: regression.gates.doc_ndcg@10.max_drop: Input should be greater than or equal to 0 (got -1)",
        f"{project / 'data' / 'docs.jsonl'}:2: ",
    ]
    for start in planted:
        assert sum(line.startswith(start) for line in lines) == 1, (start, lines)
    assert len(lines) == len(planted) + 1
    assert lines[-1] == f"rag-eval: {len(planted)} problems found"
    assert captured.out == ""


def test_the_checks_across_sections_list_every_problem_beside_the_sections_own(project):
    # A pydantic model validator runs only once every field is valid, and stops at its first problem:
    # here each check across sections says its problem beside the unknown key, and beside each other.
    config = valid(
        top_kk=5,
        main_metric="map",
        retrievers=[
            {"label": "a", "adapter": "bm25", "chunker": "nope"},
            {"label": "a", "adapter": "bm25"},
        ],
        regression={"baseline": "b.json", "gates": {"ndcg@5": {}, "ndgc@10": {}}, "retriever": "zz"},
    )
    path = write(project / "configs" / "run.yaml", config)
    found = problems(path)
    assert [p.split(": ")[1] for p in found] == [
        "top_kk", "retrievers", "retrievers[0](a).chunker", "main_metric", "regression.gates.ndcg@5",
        "regression.gates.ndgc@10", "regression.retriever",
    ]
    assert found[1].endswith("retriever labels must be unique; repeated: a")
    assert found[2].endswith("no chunker 'nope' in chunking; chunkers: none: add a `chunking:` section")
    assert found[3].endswith("main_metric map is not among metrics ['ndcg@10', 'recall@10']")
    assert found[4].endswith("regression gate ndcg@5 is not among metrics ['ndcg@10', 'recall@10']")
    assert "unknown metric 'ndgc@10'" in found[5]
    assert found[6].endswith("regression.retriever 'zz' is not a retriever label")
    # The model alone (valid sections) raises every problem across them too, not the first one only.
    del config["top_kk"]
    with pytest.raises(ValidationError) as excinfo:
        RunConfig.model_validate(config)
    assert len(excinfo.value.errors()) == 6


def test_a_problem_that_depends_on_another_waits_for_it(project, capsys):
    # What cannot be told until another problem is fixed is not guessed: the parameters of a retriever whose
    # adapter is unknown, whether main_metric is among metrics when one metric is misspelt (it may be the
    # misspelling), and a reference to a retriever whose label is wrong.
    config = valid(
        metrics=["ndcg@10", "ndgc@5"],
        main_metric="ndcg@5",
        retrievers=[{"label": "lexical", "adapter": "bm52", "params": {"stemer": "english"}}, {"label": "a b", "adapter": "bm25"}],
        regression={"baseline": "b.json", "gates": {"ndcg@5": {}}, "retriever": "a b"},
    )
    path = write(project / "configs" / "run.yaml", config)
    # A baseline that run would read (validate reads it too: a broken one is a problem of its own).
    (project / "configs" / "b.json").write_bytes((REPO / "reports" / "ocean-facts" / "bm25.json").read_bytes())
    assert main(["validate", str(path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(": ")[1] for line in lines[:-1]] == ["retrievers[0](lexical).adapter", "retrievers[1](a b).label", "metrics"]
    assert lines[-1] == "rag-eval: 3 problems found"


def test_two_unknown_metrics_and_two_bad_chunker_names_are_said_at_once(project):
    path = write(project / "configs" / "run.yaml", valid(
        metrics=["ndcg@10", "mapp", "ndgc@3"], chunking={"": {"method": "fixed", "size": 5}, " ": {"method": "fixed"}},
    ))
    found = problems(path)
    assert [p.split(": ")[1] for p in found] == ["metrics", "metrics", "chunking"]
    assert "unknown metric 'mapp'" in found[0] and "unknown metric 'ndgc@3'" in found[1]
    assert found[2] == (
        f"{path}: chunking: chunker names '', ' ': a chunker's name is one line of printable text, at most 80 "
        "characters (retrievers name it with chunker:)"
    )


def test_a_name_without_a_folder_is_said_beside_the_other_problems(project):
    path = write(project / "configs" / "run.yaml", valid(name="...", top_kk=5))
    found = problems(path)
    assert len(found) == 2 and found[0].startswith(f"{path}: top_kk: unknown key")
    assert found[1] == (
        f"{path}: name: '...' has no letter or digit to name the default output folder reports/<name>; "
        "give 'output:' (or --output), or a name with letters or digits"
    )


def test_partial_config_keeps_the_parts_valid_alone(project):
    path = write(project / "configs" / "run.yaml", valid(
        top_kk=5,
        metrics=["ndcg@10", "ndgc@5", "ndcg_cut_10"],
        retrievers=[{"label": "ok", "adapter": "bm25"}, {"label": "bad", "adapter": "bm52"}],
        chunking={"good": {"method": "fixed", "size": 5}, "": {"method": "fixed"}, "odd": "not a mapping"},
        evaluation={"gain": "quadratic", "no_relevant": "error"},
        regression={"baseline": "b.json", "gates": {"ndcg@10": {"max_drop": -1}}, "resamples": 5},
        cache_dir="../cache",
    ))
    config = partial_config(path)
    assert config is not None and config.left_out == frozenset()
    model = config.model
    assert model.dataset.path == "../data/tiny.yaml"
    assert [spec.label for spec in model.retrievers] == ["ok"]
    assert model.metrics == ["ndcg@10"]
    assert list(model.chunking) == ["good"]
    assert (model.evaluation.gain, model.evaluation.no_relevant) == ("linear", "error")
    assert (model.regression.baseline, model.regression.gates, model.regression.resamples) == ("b.json", {}, 10_000)
    assert model.cache_dir == "../cache"
    broken = write(project / "configs" / "broken.yaml", valid(dataset={"path": "x.yaml", "formt": "beir"}))
    assert partial_config(broken).left_out == frozenset({"dataset"})
    assert partial_config(write(project / "configs" / "list.yaml", "- a\n")) is None
    assert partial_config(project / "configs" / "none.yaml") is None


def test_trec_dataset_with_grade_map_from_yaml(project):
    data = project / "data"
    (data / "qrels.txt").write_text("q1 0 d1 1\nq1 0 d2 -1\n")
    (data / "topics.tsv").write_text("q1\talpha\n")
    (data / "docs.tsv").write_text("d1\talpha beta\nd2\tgamma\n")
    dataset = {"format": "trec", "qrels": "../data/qrels.txt", "queries": "../data/topics.tsv",
               "corpus": "../data/docs.tsv", "grade_map": {1: 4, 2: 3, 3: 2, 4: 1, -1: 0}}
    config = load_config(write(project / "configs" / "run.yaml", valid(dataset=dataset)))
    assert config.model.dataset.grade_map == {1.0: 4.0, 2.0: 3.0, 3.0: 2.0, 4.0: 1.0, -1.0: 0.0}
    assert load_config_dataset(config).judgements == {"q1": {"d1": 4.0, "d2": 0.0}}


# ---- YAML that explodes: alias bombs, recursion, nesting (issue 10) --------------------------------------

# The full "billion laughs": 9 aliases of 9 aliases ... nine levels deep, 10^9 leaves from 700 bytes.
BILLION_LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{b}: &{b} [*{a}, *{a}, *{a}, *{a}, *{a}, *{a}, *{a}, *{a}, *{a}]\n" for a, b in zip("abcdefgh", "bcdefghi")
)


def test_billion_laughs_config_is_refused_at_the_alias_in_well_under_a_second(project):
    # Before: PyYAML built the shared structure, and validating or dumping params expanded it
    # (a 495-byte variant wrote a 407 MB results file; this one hung at 3.8 GB).
    text = BILLION_LAUGHS + yaml.safe_dump(valid())
    path = write(project / "configs" / "bomb.yaml", text)
    started = time.perf_counter()
    with pytest.raises(ConfigError) as excinfo:
        load_config(path)
    assert time.perf_counter() - started < 2.0
    # Nodes added by aliases: b 90, c 819, d 7,380, e 66,429 (74,718); the first *e of line 6 adds 66,430 more.
    assert str(excinfo.value) == (
        f"{path}: line 6, column 8: invalid YAML: alias *e expands the document's aliases past "
        f"{MAX_ALIAS_NODES:,} nodes (an alias bomb?); write the repeated parts out or repeat less"
    )


def test_alias_bomb_in_retriever_params_is_refused_before_anything_runs(project, capsys):
    # The case: the bomb sits in params, which the results file used to dump in full.
    anchors = "".join(
        f"      x{i}: &x{i} [*x{i - 1}, *x{i - 1}, *x{i - 1}, *x{i - 1}, *x{i - 1}, *x{i - 1}]\n" for i in range(1, 9)
    )
    text = (
        "name: bomb\ndataset: {path: ../data/tiny.yaml}\nmetrics: [ndcg@10]\nretrievers:\n"
        "  - label: fixed\n    adapter: static\n    params:\n      rankings: {q1: [d1]}\n"
        "      x0: &x0 [lol, lol, lol, lol, lol, lol]\n" + anchors
    )
    path = write(project / "configs" / "bomb.yaml", text)
    # x1..x5 add 67,170 nodes; the first *x5 of line x6 (55,987 more) passes the limit.
    line = text.splitlines().index("      x6: &x6 [*x5, *x5, *x5, *x5, *x5, *x5]") + 1
    assert main(["run", str(path), "--output", str(project / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"rag-eval: error: {path}: line {line}, column 16: invalid YAML: alias *x5 expands the document's aliases "
        f"past {MAX_ALIAS_NODES:,} nodes (an alias bomb?); write the repeated parts out or repeat less\n"
    )
    assert not (project / "out").exists()


def test_merge_key_bomb_is_refused(tmp_path):
    # `<<: [*a, *a]` doubles at each level when PyYAML flattens the merges: 2^40 keys from 2 KB.
    lines = ["l0: &l0 {k: 1}"] + [f"l{i}: &l{i} {{<<: [*l{i - 1}, *l{i - 1}], k{i}: 1}}" for i in range(1, 40)]
    path = write(tmp_path / "merge.yaml", "\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=r"line \d+, column \d+: invalid YAML: alias \*l\d+ expands"):
        load_yaml(path)


@pytest.mark.parametrize("text", ["a: &a [1, *a]\n", "a: &a {b: *a}\n"])
def test_recursive_alias_is_refused(tmp_path, text):
    path = write(tmp_path / "loop.yaml", text)
    with pytest.raises(ConfigError) as excinfo:
        load_yaml(path)
    assert str(excinfo.value).startswith(
        f"{path}: line 1, column 11: invalid YAML: alias *a refers to a collection that contains it"
    )


@pytest.mark.parametrize("text", ["[" * 20_000 + "]" * 20_000, "a: " + "{b: " * 20_000 + "1" + "}" * 20_000])
def test_yaml_nested_20000_deep_is_one_line_not_recursion_error(tmp_path, text):
    path = write(tmp_path / "deep.yaml", text)
    with pytest.raises(ConfigError) as excinfo:
        load_config(path)
    assert f"{path}: line 1, column " in str(excinfo.value)
    assert str(excinfo.value).endswith(f"invalid YAML: nested more than {MAX_NESTING} levels deep; flatten the structure")


def test_nesting_through_aliases_counts(tmp_path):
    deep = "[" * 60 + "]" * 60
    path = write(tmp_path / "deep.yaml", f"a: &a {deep}\nb: &b [[[[*a]]]]\nc: {'[' * 40}*b{']' * 40}\n")
    with pytest.raises(ConfigError, match=r"line 3, column 44: invalid YAML: alias \*b nests the document more than"):
        load_yaml(path)


def test_ordinary_anchors_still_load(tmp_path):
    text = "base: &b {k1: 1.2, b: 0.75}\nretrievers:\n  - {label: a, params: *b}\n  - {label: b, params: {<<: *b, b: 0.5}}\n"
    assert load_yaml(write(tmp_path / "ok.yaml", text))["retrievers"] == [
        {"label": "a", "params": {"k1": 1.2, "b": 0.75}},
        {"label": "b", "params": {"k1": 1.2, "b": 0.5}},
    ]


@pytest.mark.parametrize(
    "value, expected",
    [
        ("1" * 5000, "invalid YAML: cannot read '" + "1" * 56 + "... as an integer (Exceeds the limit (4300 digits)"),
        ("2024-02-30", "invalid YAML: cannot read '2024-02-30' as a date (day is out of range for month)"),
    ],
)
def test_scalars_python_cannot_build_are_located(tmp_path, value, expected):
    path = write(tmp_path / "c.yaml", f"name: x\ntop_k: {value}\n")
    with pytest.raises(ConfigError) as excinfo:
        load_yaml(path)
    assert str(excinfo.value).startswith(f"{path}: line 2, column 8: {expected}")


YAML11 = "as text, not as a number: in YAML 1.1 a number with an exponent needs a dot and a sign in the exponent"


@pytest.mark.parametrize(
    "value, advice",
    [("1e3", "write 1000 or 1.0e+3"), ("1E2", "write 100 or 1.0e+2"), ("1e-3", "write 1.0e-3")],
)
def test_a_number_yaml_reads_as_text_is_explained_not_blamed_on_quotes(project, value, advice):
    # YAML 1.1 reads an unquoted 1e3 or 1.0e308 as a string; the message said "written without quotes".
    path = write(project / "configs" / "run.yaml", valid(top_k=12345)).resolve()
    path.write_text(path.read_text().replace("top_k: 12345", f"top_k: {value}"))
    assert problems(path) == [f"{path}: top_k: YAML reads {value} {YAML11}; {advice}"]


def test_a_grade_yaml_reads_as_text_is_explained(project):
    config = write(project / "configs" / "run.yaml", valid()).resolve()
    data = project / "data" / "tiny.yaml"
    data.write_text(data.read_text().replace("d1: 2", "d1: 1.0e308"))
    assert "d1: 1.0e308" in data.read_text()
    with pytest.raises(RagEvalError) as excinfo:
        load_config_dataset(load_config(config))
    assert str(excinfo.value) == f"{data}: queries[0](q1).judgements.d1: YAML reads 1.0e308 {YAML11}; write 1.0e+308"
    # Quoted, the same text is a string on purpose: the message about quotes is then the right one.
    data.write_text(data.read_text().replace("d1: 1.0e308", "d1: '1.0e308'"))
    with pytest.raises(RagEvalError, match=r"written without quotes \(got '1\.0e308'\)$"):
        load_config_dataset(load_config(config))
    # Written as YAML 1.1 reads a float, it is one; and an unquoted 1e3 where text is wanted stays text.
    data.write_text(data.read_text().replace("d1: '1.0e308'", "d1: 2.5e+0"))
    assert load_config_dataset(load_config(config)).judgements["q1"]["d1"] == 2.5
    assert load_yaml(write(project / "ids.yaml", "id: 1e3\n")) == {"id": "1e3"}


@pytest.mark.parametrize("written, number", [("1_000", 1000), ("0x1F", 31), ("+5", 5)])
def test_an_id_yaml_reads_as_another_number_is_refused_not_renamed(project, written, number):
    """YAML 1.1 reads 1_000 as 1000, 0x1F as 31: before, such an id was silently renamed, and no longer matched
    the run files or the other tools that name it as written. (010, 007 and 12:30, octal and base 60, are refused
    wherever they stand: test_octal_and_base_60_integers_are_refused_where_the_yaml_is_read.)"""
    config = write(project / "configs" / "run.yaml", valid()).resolve()
    data = project / "data" / "tiny.yaml"
    data.write_text(data.read_text().replace("d1: 2", f"{written}: 2"))
    with pytest.raises(RagEvalError) as excinfo:
        load_config_dataset(load_config(config))
    assert f": an id must be text; YAML read {written} as the number {number}, which is not how it is written: " \
           f"quote it ('{written}') (got {written})" in str(excinfo.value)
    # Where a number is wanted it is the number YAML reads; an id written as its own digits is kept as them.
    assert load_yaml(write(project / "n.yaml", f"top_k: {written}\n")) == {"top_k": number}
    data.write_text(data.read_text().replace(f"{written}: 2", "42: 2").replace("id: d1", "id: 42"))
    assert load_config_dataset(load_config(config)).judgements["q1"] == {"42": 2.0, "d2": 0.0}


# ---- the config file itself ---------------------------------------------------------------------------------


def test_config_that_is_a_fifo_is_refused_without_opening_it(tmp_path):
    fifo = tmp_path / "run.yaml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError) as excinfo:
        load_config(fifo)  # before: blocked forever in open()
    assert str(excinfo.value) == f"{fifo}: is a FIFO (named pipe), expected a YAML run config (a regular file)"


def test_dev_zero_as_config_is_refused():
    with pytest.raises(ConfigError) as excinfo:
        load_config("/dev/zero")  # before: read until MemoryError
    assert str(excinfo.value) == "/dev/zero: is a character device, expected a YAML run config (a regular file)"


def test_unreadable_config(project, monkeypatch):
    path = write(project / "configs" / "run.yaml", valid())
    # Tests run as root, which reads anything: make the permission check answer as for a user.
    monkeypatch.setattr("rag_eval._core.files.os.access", lambda p, mode: os.fspath(p) != os.fspath(path))
    with pytest.raises(ConfigError) as excinfo:
        load_config(path)
    assert str(excinfo.value) == f"{path}: permission denied; make the YAML run config readable"


def test_config_over_the_size_limit(project, monkeypatch):
    path = write(project / "configs" / "run.yaml", valid())
    monkeypatch.setattr("rag_eval._data.config.schema.MAX_CONFIG_BYTES", 100)
    with pytest.raises(ConfigError) as excinfo:
        load_config(path)
    assert str(excinfo.value).startswith(f"{path}: is {path.stat().st_size} bytes, over the 100 bytes limit for a YAML")


def test_config_with_a_byte_order_mark_loads(project):
    path = project / "configs" / "run.yaml"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\xef\xbb\xbf" + yaml.safe_dump(valid()).encode())
    assert load_config(path).model.name == "tiny-run"


def test_config_not_utf8_names_line_and_column(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_bytes(b"name: ok\nmetrics: [ndcg@10]\ntitle: caf\xe9\n")
    with pytest.raises(ConfigError) as excinfo:
        load_config(path)
    assert str(excinfo.value) == (
        f"{path}: line 3, column 11: not UTF-8 text (byte 0xe9: invalid continuation byte); save the file as UTF-8"
    )


# ---- names are labels, labels are file names ------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, folder",
    [
        ("../../../x", "x"),
        ("/etc/cron.d/evil", "etc-cron.d-evil"),
        ("Ocean facts: v2/BM25", "Ocean-facts-v2-BM25"),
        ("a..b", "a.b"),
        (".hidden", "hidden"),
        ("küste", "küste"),
    ],
)
def test_default_output_folder_is_a_safe_name_under_reports(project, name, folder):
    # Before: reports/<name> with the name as a path: ../../../x wrote outside the project.
    config = load_config(write(project / "configs" / "run.yaml", valid(name=name)))
    assert config.output_dir == project / "reports" / folder
    assert config.output_dir.parent == project / "reports"
    assert folder_name(name) == folder
    assert config.name == name  # the report still shows the name as written


@pytest.mark.parametrize("name", ["...", "\N{GRINNING FACE}\N{GRINNING FACE}", "..", "-", "/", "\N{BOOKS}.\N{BOOKS}"])
def test_a_name_with_nothing_left_for_a_folder_name_needs_an_output(project, name):
    # Before: every such name became reports/run, so two configs wrote over each other's results.
    path = write(project / "configs" / "run.yaml", valid(name=name))
    assert folder_name(name) == ""
    assert problems(path) == [
        f"{path}: name: {name!r} has no letter or digit to name the default output folder reports/<name>; "
        "give 'output:' (or --output), or a name with letters or digits"
    ]
    assert load_config(write(project / "configs" / "run.yaml", valid(name=name, output="../out"))).name == name
    assert load_config(path, output="elsewhere").name == name


def test_a_config_file_name_with_nothing_left_for_a_folder_name_needs_a_name_or_an_output(project):
    config = {key: value for key, value in valid().items() if key != "name"}
    path = write(project / "configs" / "\N{GRINNING FACE}.yaml", config)
    assert problems(path) == [
        f"{path}: the config file's name '\N{GRINNING FACE}' has no letter or digit to name the default output "
        "folder reports/<name>; give 'name:' with letters or digits, or 'output:' (or --output)"
    ]
    assert load_config(write(path, {**config, "name": "smile"})).output_dir == project / "reports" / "smile"


def test_the_default_output_folder_does_not_depend_on_the_current_folder(project, monkeypatch):
    # Before: `cd configs && rag-eval run run.yaml` wrote configs/reports/tiny-run, the absolute path reports/tiny-run.
    path = write(project / "configs" / "run.yaml", valid())
    expected = project / "reports" / "tiny-run"
    assert load_config(path).output_dir == expected
    monkeypatch.chdir(project / "configs")
    assert load_config("run.yaml").output_dir == Path("..", "reports", "tiny-run")  # relative, as given
    assert load_config("./run.yaml").output_dir.resolve() == expected
    monkeypatch.chdir(project)
    assert load_config(Path("configs", "run.yaml")).output_dir == Path("reports", "tiny-run")
    monkeypatch.chdir(project / "data")
    assert load_config(Path("..", "configs", "run.yaml")).output_dir == Path("..", "reports", "tiny-run")


def test_an_output_given_on_the_command_line_is_relative_to_the_current_folder(project, monkeypatch):
    path = write(project / "configs" / "run.yaml", valid(output="ignored"))
    monkeypatch.chdir(project / "data")
    config = load_config(Path("..", "configs", "run.yaml"), output="out")
    assert config.output_dir == Path("out")  # printed as short as it was typed
    assert config.model.output == os.path.join("..", "data", "out")  # recorded relative to the config, as output:
    assert load_config(path, output=str(project / "abs")).output_dir == project / "abs"


def test_explicit_output_chooses_any_folder(project, tmp_path):
    config = load_config(write(project / "configs" / "run.yaml", valid(name="../x", output=str(tmp_path / "elsewhere"))))
    assert config.output_dir == tmp_path / "elsewhere"


@pytest.mark.parametrize("name", ["two\nlines", "tab\there", "nul\x00", "   "])
def test_name_must_be_one_printable_line(project, name):
    path = write(project / "configs" / "run.yaml", valid(name=name))
    (problem,) = problems(path)
    assert problem == f"{path}: name: a name is one line of printable text (it titles the report) (got {name!r})"


@pytest.mark.parametrize("label", ["../x", "a/b", "a\\b", "..", ".hidden", "a\nb", "nul\x00", "/abs", "x" * 81, ""])
def test_labels_that_are_not_safe_file_names_are_refused(project, label):
    path = write(project / "configs" / "run.yaml", valid(retrievers=[{"label": label, "adapter": "bm25"}]))
    (problem,) = problems(path)
    shown_label = label if label.isprintable() and 0 < len(label) <= 40 else None
    prefix = f"retrievers[0]({shown_label})" if shown_label else "retrievers[0]"
    assert problem.startswith(f"{path}: {prefix}")
    assert problem.split(": ", 2)[2].startswith(f"{LABEL_RULE} (got ")
    assert "\n" not in problem and "\x00" not in problem


def test_a_label_with_a_newline_keeps_validate_one_line_per_problem(project, capsys):
    path = write(project / "configs" / "run.yaml", valid(retrievers=[{"label": "a\nb", "adapter": "bm25"}]))
    assert main(["validate", str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{path}: retrievers[0]('a\\nb').label: {LABEL_RULE} (got 'a\\nb')",
        "rag-eval: 1 problem found",
    ]


# ---- regression limits ------------------------------------------------------------------------------------------


def regression(**overrides) -> dict:
    return {"baseline": "base.json", "gates": {"ndcg@10": {"max_drop": 0.01}}, **overrides}


@pytest.mark.parametrize(
    "field, value, expected",
    [
        ("seed", -1, "regression.seed: must be >= 0 (numpy refuses negative seeds) (got -1)"),
        ("resamples", 10**12, f"regression.resamples: must be from {MIN_RESAMPLES:,} to {MAX_RESAMPLES:,} (more does "
                              "not change the printed digits, and costs memory) (got 1000000000000)"),
        ("resamples", 99, f"regression.resamples: must be from {MIN_RESAMPLES:,} to {MAX_RESAMPLES:,} (more does not "
                          "change the printed digits, and costs memory) (got 99)"),
        ("confidence", 1.0, "regression.confidence: must be between 0 and 1 (exclusive) (got 1.0)"),
    ],
)
def test_regression_seed_and_resamples_are_bounded(project, field, value, expected):
    path = write(project / "configs" / "run.yaml", valid(regression=regression(**{field: value})))
    assert problems(path) == [f"{path}: {expected}"]


def test_regression_limits_are_those_of_the_statistics(project):
    for resamples in (MIN_RESAMPLES, MAX_RESAMPLES):
        path = write(project / "configs" / "run.yaml", valid(regression=regression(resamples=resamples, seed=2**40)))
        assert load_config(path).model.regression.resamples == resamples


def test_two_gates_on_one_metric_under_two_spellings_are_refused(project):
    # They were counted as two gates; `rag-eval validate` now says so before anything runs.
    regression = {"baseline": "b.json", "gates": {"ndcg@10": {"max_drop": 0.1}, "ndcg_cut_10": {}}}
    path = write(project / "configs" / "run.yaml", valid(regression=regression)).resolve()
    assert problems(path) == [
        f"{path}: regression.gates: 'ndcg@10' and 'ndcg_cut_10' both gate ndcg@10 (the same metric); "
        "keep one gate per metric"
    ]


@pytest.mark.parametrize("name", ["", " ", "two\nlines"])
def test_a_chunker_name_is_one_line_of_printable_text(project, name):
    path = write(project / "configs" / "run.yaml", valid(chunking={name: {"method": "fixed", "size": 10}}))
    assert problems(path) == [
        f"{path}: chunking: chunker name {name!r}: a chunker's name is one line of printable text, at most 80 "
        "characters (retrievers name it with chunker:)"
    ]


def test_the_config_package_keeps_one_job_a_module():
    # Issue 19: the run config's sections, the checks across them, its loading and its partial form for
    # `validate` each have a module; none grows back into the 600-line schema that held them all.
    import rag_eval._data.config as package

    folder = Path(package.__file__).parent
    sizes = {path.name: len(path.read_text(encoding="utf-8").splitlines()) for path in folder.glob("*.py")}
    assert {"schema.py", "sections.py", "regression.py", "sweep_spec.py", "consistency.py", "partial.py"} <= set(sizes)
    assert max(sizes.values()) < 400, sizes


@pytest.mark.parametrize("main, better", [("idcg@10", "ndcg@10"), ("idcg", "ndcg")])
def test_a_main_metric_of_the_judgements_alone_is_refused(project, main, better):
    # The attack: main_metric idcg@10 "shipped" one of two retrievers on equal values, the ideal ranking's DCG.
    config = valid(metrics=["ndcg@10", main], main_metric=main)
    found = problems(write(project / "configs" / "run.yaml", config))
    assert [p.split(": ", 1)[1] for p in found] == [
        f"main_metric: main_metric {main} is the DCG of the ideal ranking, the same for every retriever, so it "
        f"cannot rank them; decide on {better}"
    ]
    write(project / "configs" / "ok.yaml", valid(metrics=["ndcg@10", "judged@10"], main_metric="judged@10"))
    assert load_config(project / "configs" / "ok.yaml").model.main_metric == "judged@10"  # it depends on the ranking


def test_a_query_set_given_as_the_config_is_said_in_one_line(project):
    # The first-day attack: `rag-eval validate datasets/ocean_facts.yaml` printed six schema errors.
    path = project / "data" / "tiny.yaml"
    with pytest.raises(ConfigError) as excinfo:
        load_config(path)
    assert str(excinfo.value) == (
        f"{path}: this is a query set (it has queries), not a run config; a run config names it under "
        "`dataset: {path: ...}` beside retrievers and metrics (configs/ocean_facts.yaml is one)"
    )


def test_validate_checks_a_query_set_given_alone(project, capsys):
    """The hint "`rag-eval validate` lists all" after a query set's first problem (judgements merge, run) used to
    lead to "this is a query set, not a run config": validate now lists the query set's problems itself."""
    path = project / "data" / "tiny.yaml"
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{path}: OK: query set tiny (1 queries, 2 passages, fingerprint ")
    assert out.split("fingerprint ")[1].rstrip(")\n") == load_config_dataset(
        load_config(write(project / "configs" / "run.yaml", valid()))).fingerprint
    path.write_text("corpus:\n  - {id: a, text: x}\n  - {id: a, text: y}\n  - {id: yes, text: z}\n"
                    "queries:\n  - {id: q1, text: x, judgements: {a: '1'}}\n")
    assert main(["validate", str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{path}: corpus[1](a).id: duplicate passage id 'a' (first at corpus[0])",
        f"{path}: corpus[2].id: an id must be text, not true/false (YAML reads an unquoted yes, no, on or off so "
        "too): quote it (got True)",
        f"{path}: queries[0](q1).judgements.a: a grade is a finite number such as 2, 0.5 or -1, written without "
        "quotes (got '1')",
        "rag-eval: 3 problems found",
    ]


def test_a_utf16_pair_written_as_two_yaml_escapes_is_one_character(tmp_path):
    """JSON joins "\\ud83d\\ude00" into one emoji; PyYAML kept the two halves, and the text was refused as holding
    a lone surrogate "without its other half" although both halves were there. A half alone is still refused."""
    path = write(tmp_path / "set.yaml", 'corpus: [{id: p1, text: "emoji \\ud83d\\ude00 here"}]\n'
                                        "queries:\n  - {id: q1, text: x, judgements: {p1: 1}}\n")
    assert load_yaml(path) == {"corpus": [{"id": "p1", "text": "emoji \U0001F600 here"}],
                               "queries": [{"id": "q1", "text": "x", "judgements": {"p1": 1}}]}
    with pytest.raises(ConfigError, match=r"half.yaml: line 1, column 4: invalid YAML: 'x \\udfff\\ud83d' holds a lone "
                                          r"surrogate U\+DFFF at position 3, which is not UTF-8 text"):
        load_yaml(write(tmp_path / "half.yaml", 'a: "x \\udfff\\ud83d"\n'))  # the halves in the wrong order


@pytest.mark.parametrize("written, number, base", [("010", 8, "octal"), ("007", 7, "octal"), ("-01", -1, "octal"),
                                                   ("00", 0, "octal"), ("12:30", 750, "base 60"),
                                                   ("1:0", 60, "base 60")])
def test_octal_and_base_60_integers_are_refused_where_the_yaml_is_read(tmp_path, written, number, base):
    """010 was the id 8, the grade 8, top_k 8, a grade_map's 8, a relevance threshold 8, a plug-in's 8, without a
    word (a TREC qrels file reads 010 as 10). One rule, at the loader: both readings said, the line and column named."""
    path = write(tmp_path / "n.yaml", f"top_k: {written}\n")
    with pytest.raises(ConfigError) as excinfo:
        load_yaml(path)
    assert str(excinfo.value) == (f"{path}: line 1, column 8: invalid YAML: YAML 1.1 reads {written} as the number "
                                  f"{number} ({base}); write {number}, or quote it if it is text ('{written}')")
    assert load_yaml(write(tmp_path / "q.yaml", f"id: '{written}'\nk: 0\nz: -0\n08: 08\n")) == {
        "id": written, "k": 0, "z": 0, "08": "08"}  # quoted it is text; 0 is 0; 08 is no octal number (text)
