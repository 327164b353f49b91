"""A run never writes over one of its inputs (rag_eval._run.inputs).

The attack: a static retriever reading ``sub/st.json`` with ``output: sub`` had that file
replaced by its results; ``regression.baseline: out/bm.json`` with ``output: out`` had the
baseline replaced by the candidate on every run. Each case is now refused before any
retrieval: exit 2, one line naming the output file and the input, every file as it was.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from rag_eval._commands.outputs import write_outputs
from rag_eval._core.errors import ConfigError
from rag_eval._core.output_manifest import MANIFEST, read_manifest
from rag_eval._data.config.schema import load_config
from rag_eval._run.execute import execute
from rag_eval._run.inputs import check_outputs_are_not_inputs
from rag_eval._run.plan import plan_run
from rag_eval.cli import main

QUERY_SET = {
    "name": "tiny",
    "corpus": [{"id": "d1", "text": "alpha beta"}, {"id": "d2", "text": "gamma delta"}],
    "queries": [{"id": "q1", "text": "alpha", "judgements": {"d1": 2, "d2": 0}}],
}
# A plug-in that leaves a mark when it indexes: a refused run must not get that far.
MARKING_PLUGIN = (
    "import pathlib\n"
    "class Marking:\n"
    "    def __init__(self, path=None):\n"
    "        self.path = path\n"
    "    def index(self, corpus):\n"
    "        (pathlib.Path(__file__).parent / 'indexed.mark').write_text('indexed')\n"
    "    def search(self, queries, top_k):\n"
    "        return {'q1': {'d1': 1.0}}\n"
)
FIX = "choose another output folder (output: or --output), or keep that input under another name or elsewhere"


def write(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
    return path


def config(folder: Path, **overrides) -> Path:
    data = {
        "name": "inputs",
        "dataset": {"path": "tiny.yaml"},
        "retrievers": [{"label": "st", "adapter": "static", "params": {"rankings": {"q1": ["d1"]}}}],
        "metrics": ["ndcg@10"],
        "output": "out",
    }
    data.update(overrides)
    return write(folder / "run.yaml", data)


@pytest.fixture
def ws(tmp_path, monkeypatch) -> Path:
    write(tmp_path / "tiny.yaml", QUERY_SET)
    write(tmp_path / "marking_plugin.py", MARKING_PLUGIN)
    monkeypatch.chdir(tmp_path)  # paths are given relative, as a user types them
    return tmp_path


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def refused(capsys, path: Path, expected: str, folder: Path) -> None:
    before = files(folder)
    assert main(["run", str(path.relative_to(folder)), "--no-progress"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"rag-eval: error: {expected}\n"
    assert files(folder) == before  # the input byte for byte, nothing written, nothing indexed
    assert not (folder / "indexed.mark").exists()


def test_a_static_retrievers_file_is_not_replaced_by_the_results(ws, capsys):
    # The attack: params {path: sub/st.json} and output: sub.
    write(ws / "sub" / "st.json", '{"q1": {"d1": 1.0}}\n')
    path = config(ws, retrievers=[{"label": "st", "adapter": "static", "params": {"path": "sub/st.json"}}], output="sub")
    expected = (
        f"{Path('sub', 'st.json')}: this run would write over its own input {Path('sub', 'st.json')}, "
        f"a file of retriever 'st' (retrievers[0].params.path); {FIX}"
    )
    refused(capsys, path, expected, ws)


def test_the_regression_baseline_is_not_replaced_by_the_candidate(ws, capsys):
    # The attack: regression.baseline out/bm.json with output: out, retriever bm.
    retrievers = [{"label": "bm", "adapter": "static", "params": {"rankings": {"q1": ["d1"]}}}]
    config(ws, retrievers=retrievers)
    assert main(["run", "run.yaml", "--no-progress"]) == 0
    capsys.readouterr()
    regression = {"baseline": "out/bm.json", "gates": {"ndcg@10": {"max_drop": 0}}}
    path = config(ws, retrievers=retrievers, regression=regression)
    expected = (
        f"{Path('out', 'bm.json')}: this run would write over its own input {Path('out', 'bm.json')}, "
        f"the regression baseline (regression.baseline); {FIX}"
    )
    refused(capsys, path, expected, ws)


def test_a_baseline_kept_in_the_output_folder_under_another_name_stays_allowed(ws, capsys):
    retrievers = [{"label": "bm", "adapter": "static", "params": {"rankings": {"q1": ["d1"]}}}]
    config(ws, retrievers=retrievers)
    assert main(["run", "run.yaml", "--no-progress"]) == 0
    (ws / "out" / "baseline.json").write_bytes((ws / "out" / "bm.json").read_bytes())
    baseline = (ws / "out" / "baseline.json").read_bytes()
    regression = {"baseline": "out/baseline.json", "gates": {"ndcg@10": {"max_drop": 0}}}
    config(ws, retrievers=retrievers, regression=regression)
    assert main(["run", "run.yaml", "--no-progress"]) == 0
    assert "verdict: PASS" in capsys.readouterr().out
    assert (ws / "out" / "baseline.json").read_bytes() == baseline
    manifest = read_manifest(ws / "out")
    assert manifest is not None and "baseline.json" not in manifest.files  # the user's, kept by every swap


def test_the_config_reached_through_a_link_in_the_output_folder_is_refused(ws, capsys):
    path = config(ws)
    (ws / "out").mkdir()
    (ws / "out" / "report.md").symlink_to(path)  # report.md would be written where the link points: the config
    expected = f"{Path('out', 'report.md')}: this run would write over its own input run.yaml, the run's config; {FIX}"
    refused(capsys, path, expected, ws)


def test_a_hard_link_to_a_dataset_file_is_the_same_file(ws, capsys):
    (ws / "out").mkdir()
    os.link(ws / "tiny.yaml", ws / "out" / "st.run")
    expected = (
        f"{Path('out', 'st.run')}: this run would write over its own input tiny.yaml, "
        f"the dataset file (dataset.path); {FIX}"
    )
    refused(capsys, config(ws), expected, ws)


@pytest.mark.parametrize("key, name", [("qrels", "report.md"), ("queries", "st.json"), ("corpus", "st.run")])
def test_trec_dataset_files_are_inputs(ws, capsys, key, name):
    trec = {"qrels": "qrels.txt", "queries": "queries.tsv", "corpus": "corpus.tsv"}
    trec[key] = f"out/{name}"
    # Valid files (queries and corpus read by suffix: .json as JSON Lines, others as TSV): without the check the run
    # would succeed and replace the dataset's file with its output.
    content = {"qrels": "q1 0 d1 1\n", "queries": "q1\talpha\n", "corpus": "d1\talpha beta\nd2\tgamma\n"}
    if trec[key].endswith(".json"):
        content[key] = '{"_id": "q1", "text": "alpha"}\n'
    for slot, value in trec.items():
        write(ws / value, content[slot])
    expected = (
        f"{Path('out', name)}: this run would write over its own input {Path('out', name)}, "
        f"the dataset file (dataset.{key}); {FIX}"
    )
    refused(capsys, config(ws, dataset={"format": "trec", **trec}), expected, ws)


def test_a_plugins_file_parameter_and_a_nested_retrievers_file_are_inputs(ws, capsys):
    write(ws / "out" / "m.json", "the plug-in's own data\n")
    path = config(ws, retrievers=[{"label": "m", "adapter": "marking_plugin:Marking", "params": {"path": "out/m.json"}}])
    expected = (
        f"{Path('out', 'm.json')}: this run would write over its own input {Path('out', 'm.json')}, "
        f"a file of retriever 'm' (retrievers[0].params.path); {FIX}"
    )
    refused(capsys, path, expected, ws)
    (ws / "out" / "m.json").rename(ws / "out" / "h.run")
    child = {"adapter": "static", "params": {"path": "out/h.run"}}
    hybrid = {"label": "h", "adapter": "hybrid", "params": {"retrievers": [child, child]}}
    expected = (
        f"{Path('out', 'h.run')}: this run would write over its own input {Path('out', 'h.run')}, "
        f"a file of retriever 'h' (retrievers[0].params.retrievers[0].params.path); {FIX}"
    )
    refused(capsys, config(ws, retrievers=[hybrid]), expected, ws)


def test_a_stored_ranking_is_data_not_paths(ws, capsys):
    """Document ids in a static ranking are not looked up as files, even one that names an output file."""
    corpus = [{"id": "out/st.json", "text": "alpha"}, {"id": "d2", "text": "gamma"}]
    write(ws / "tiny.yaml", {**QUERY_SET, "corpus": corpus, "queries": [{"id": "q1", "text": "alpha",
                                                                          "judgements": {"out/st.json": 1}}]})
    config(ws, retrievers=[{"label": "st", "adapter": "static", "params": {"rankings": {"q1": ["out/st.json"]}}}])
    for _ in range(2):  # the second run finds out/st.json, written by the first
        assert main(["run", "run.yaml", "--no-progress"]) == 0
    assert capsys.readouterr().out.splitlines()[-2:] == ["st\tndcg@10\t1.0000", f"report: {Path('out', 'report.md')}"]


def test_write_outputs_checks_again(ws):
    """An API caller (or a link made while the retrievers ran) is refused at the write as well."""
    loaded = load_config(config(ws))
    run = execute(loaded, progress=False)
    (ws / "out").mkdir()
    (ws / "out" / "st.json").symlink_to(ws / "tiny.yaml")
    with pytest.raises(ConfigError) as excinfo:
        write_outputs(run)
    assert str(excinfo.value) == (
        f"{ws / 'out' / 'st.json'}: this run would write over its own input {ws / 'tiny.yaml'}, "
        f"the dataset file (dataset.path); {FIX}"
    )
    assert (ws / "tiny.yaml").read_text() == yaml.safe_dump(QUERY_SET, sort_keys=False)


def test_the_planned_outputs_are_the_files_a_run_writes(ws, capsys):
    retrievers = [
        {"label": "bm", "adapter": "static", "params": {"rankings": {"q1": ["d1"]}}},
        {"label": "other", "adapter": "static", "params": {"rankings": {"q1": ["d2"]}}},
    ]
    config(ws, retrievers=retrievers)
    assert main(["run", "run.yaml", "--no-progress"]) == 0
    (ws / "base.json").write_bytes((ws / "out" / "bm.json").read_bytes())
    regression = {"baseline": "base.json", "gates": {"ndcg@10": {"max_drop": 0}}, "retriever": "bm"}
    path = config(ws, retrievers=retrievers, regression=regression)
    assert main(["run", "run.yaml", "--no-progress"]) == 0
    capsys.readouterr()
    written = set(os.listdir(ws / "out"))
    planned = plan_run(load_config(path), comparison=True).outputs
    assert sorted(planned) == sorted(written) == sorted(
        [MANIFEST, "report.md", "report.html", "comparison.md", "bm.json", "bm.run", "other.json", "other.run",
         "per-query.csv", "plot-at-k.svg", "plot-deltas.svg", "plot-means.svg"]
    )
    check_outputs_are_not_inputs(load_config(path), planned)  # the baseline beside the config is no output


def test_validate_reports_what_run_would_refuse_about_its_outputs(tmp_path, capsys):
    import shutil

    shutil.copy(Path(__file__).resolve().parents[1] / "datasets" / "ocean_facts.yaml", tmp_path / "ocean_facts.yaml")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "st.json").write_text('{"q-largest-ocean": ["pacific-largest"]}')
    (tmp_path / "sub" / "report.md").write_text("mine")
    (tmp_path / "c.yaml").write_text(
        "name: vt\ndataset: {path: ocean_facts.yaml}\n"
        "retrievers: [{label: st, adapter: static, params: {path: sub/st.json}}]\n"
        "metrics: [ndcg@4]\noutput: sub\n"
    )
    assert main(["validate", str(tmp_path / "c.yaml")]) == 2
    err = capsys.readouterr().err
    assert "this run would write over its own input" in err and "st.json" in err
    assert "report.md: not recognisably written by rag_eval" in err
    assert err.endswith("rag-eval: 2 problems found\n")
    assert (tmp_path / "sub" / "report.md").read_text() == "mine"


def test_an_output_folder_inside_the_documents_folder_is_refused_before_anything_runs(tmp_path):
    from rag_eval.cli import main

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Alpha beta gamma.\n", encoding="utf-8")
    (tmp_path / "qs.yaml").write_text(
        "documents: docs\nqueries:\n  - {id: q1, text: beta, evidence: [{doc: a.md, quote: beta}]}\n", encoding="utf-8"
    )
    config = tmp_path / "cfg.yaml"
    config.write_text(
        "dataset: {path: qs.yaml}\nretrievers: [{label: bm25, adapter: bm25}]\nmetrics: [evidence_recall@1]\n"
        "output: docs/reports\n",
        encoding="utf-8",
    )
    assert main(["run", str(config), "--no-progress"]) == 2
    assert sorted(p.name for p in docs.iterdir()) == ["a.md"]  # nothing written into the documents
    from rag_eval._commands.validate import validate_config

    problems, _ = validate_config(config)
    assert problems == [
        f"{tmp_path / 'docs' / 'reports'}: the output folder is inside {docs}, the documents folder of "
        f"{tmp_path / 'qs.yaml'} (documents:), which is read whole: the next run would read this run's report as a "
        "document; choose an output folder outside it (output: or --output)"
    ]
