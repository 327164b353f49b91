"""``rag-eval run``: what it writes, and how it refuses bad input.

Bad input: exit code 2, exactly one line on stderr, no traceback, and the output
folder exactly as it was (no report, no results, no half-written or temporary file).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from rag_eval.cli import main

OCEAN = REPO / "datasets" / "ocean_facts.yaml"
# An older rag_eval's report (no manifest: recognised by its generated heading, so a run may replace it).
OLD_REPORT = "# an older report\n\n## \N{BOOKS} What was evaluated\n\nkept | byte for byte \r\n\u00e9\n"


def rag_eval_executable() -> str:
    candidates = [REPO / ".venv" / "bin" / "rag-eval", Path(sys.executable).parent / "rag-eval"]
    for candidate in candidates:
        if candidate.is_file():
            return str(candidate)
    found = shutil.which("rag-eval")
    if not found:
        pytest.skip("the rag-eval console script is not installed")
    return found


def write_config(folder: Path, **overrides) -> Path:
    config = {
        "name": "cli-test",
        "dataset": {"path": str(OCEAN)},
        "retrievers": [
            {
                "label": "seed-ranking",
                "adapter": "static",
                "params": {"rankings": {"q-largest-ocean": ["pacific-largest", "atlantic-separates", "sahara-hot-desert", "indian-third"]}},
            }
        ],
        "metrics": ["ndcg@4", "recall@10"],
        "top_k": 10,
        "output": "out",
    }
    config.update(overrides)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def workspace(tmp_path) -> Path:
    """A config folder whose output folder already holds a report from an earlier run."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.md").write_bytes(OLD_REPORT.encode())
    return tmp_path


# ---- success ------------------------------------------------------------------------------------------


def test_run_writes_outputs_and_prints_the_main_metric(tmp_path, capsys):
    config = write_config(tmp_path)
    assert main(["run", str(config), "--no-progress"]) == 0
    captured = capsys.readouterr()
    out = tmp_path / "out"
    # .rag_eval.json: the manifest of the set (rag_eval._core.output_folder)
    assert sorted(p.name for p in out.iterdir()) == [
        ".rag_eval.json", "per-query.csv", "plot-at-k.svg", "plot-means.svg", "report.html", "report.md",
        "seed-ranking.json", "seed-ranking.run",
    ]
    # nDCG@4 of q-largest-ocean by hand (grades 3, 2, 0, 1; ideal 3, 2, 1), the 9 other queries score 0.
    ndcg = (3 + 2 / math.log2(3) + 1 / math.log2(5)) / (3 + 2 / math.log2(3) + 1 / 2)
    assert captured.out.splitlines() == [
        f"seed-ranking\tndcg@4\t{ndcg / 10:.4f}\t(9 of 10 judged queries unanswered, scored 0)",
        f"report: {out / 'report.md'}",
    ]
    assert captured.err == ""
    doc = json.loads((out / "seed-ranking.json").read_text())
    assert doc["results"]["per_query"]["q-largest-ocean"]["ndcg@4"] == pytest.approx(ndcg, abs=1e-15)
    assert "**nDCG@4** = DCG@4 / IDCG@4 = 4.6925 / 4.7619 = **0.9854**" in (out / "report.md").read_text()


def test_output_option_overrides_the_config(tmp_path, capsys):
    config = write_config(tmp_path / "conf")
    target = tmp_path / "elsewhere"
    assert main(["run", str(config), "--output", str(target), "--no-progress"]) == 0
    assert (target / "report.md").is_file() and not (tmp_path / "conf" / "out").exists()
    doc = json.loads((target / "seed-ranking.json").read_text())
    assert doc["config"]["resolved"]["output"] == str(target.resolve())


def test_example_config_runs_via_the_console_script(tmp_path):
    out = tmp_path / "ocean"
    result = subprocess.run(
        [rag_eval_executable(), "run", str(REPO / "configs" / "ocean_facts.yaml"), "--output", str(out), "--no-progress"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        ".rag_eval.json", "bm25.json", "bm25.run", "per-query.csv", "plot-at-k.svg", "plot-deltas.svg",
        "plot-means.svg", "report.html", "report.md", "seed-ranking.json", "seed-ranking.run",
    ]
    assert "seed-ranking\tndcg@4\t0.0985\t(9 of 10 judged queries unanswered, scored 0)" in result.stdout.splitlines()
    assert "DCG@4 = 3.0000 + 1.2619 + 0.0000 + 0.4307 = **4.6925**" in (out / "report.md").read_text()


# ---- bad input -------------------------------------------------------------------------------------------


def bad_missing_config(ws: Path) -> tuple[Path, str]:
    return ws / "no-such-config.yaml", f"rag-eval: error: {ws / 'no-such-config.yaml'}: no such file"


def bad_yaml(ws: Path) -> tuple[Path, str]:
    path = ws / "run.yaml"
    path.write_text("dataset:\n  path: x.yaml\nretrievers: [\n  {label: a, adapter: bm25\nmetrics: [ndcg@10]\n")
    return path, f"rag-eval: error: {path}: line 5, column 8: invalid YAML: "


def bad_field(ws: Path) -> tuple[Path, str]:
    path = write_config(ws, top_k="many")
    return path, f"rag-eval: error: {path}: top_k: Input should be a valid integer (got 'many')"


def bad_unknown_key(ws: Path) -> tuple[Path, str]:
    path = write_config(ws, metrcs=["ndcg@10"])
    return path, f"rag-eval: error: {path}: metrcs: unknown key; did you mean 'metrics'?"


def bad_unknown_retriever(ws: Path) -> tuple[Path, str]:
    path = write_config(ws, retrievers=[{"label": "lexical", "adapter": "bm52"}])
    return path, f"rag-eval: error: {path}: retrievers[0](lexical).adapter: unknown adapter 'bm52'; did you mean 'bm25'?"


def bad_missing_dataset(ws: Path) -> tuple[Path, str]:
    path = write_config(ws, dataset={"path": "data/missing.yaml"})
    return path, f"rag-eval: error: {ws / 'data' / 'missing.yaml'}: no such file"


def bad_missing_beir_file(ws: Path) -> tuple[Path, str]:
    beir = ws / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n')
    (beir / "qrels" / "test.tsv").write_text("q1\td1\t1\n")
    path = write_config(ws, dataset={"path": "beir", "format": "beir"})
    return path, f"rag-eval: error: {beir / 'queries.jsonl'}: no such file; expected a BEIR queries file"


def bad_dataset_content(ws: Path) -> tuple[Path, str]:
    data = {"corpus": [{"id": "d1", "text": "x"}], "queries": [{"id": "q1", "text": "x", "judgements": {"d9": 1}}]}
    (ws / "set.yaml").write_text(yaml.safe_dump(data))
    path = write_config(ws, dataset={"path": "set.yaml"})
    return path, f"rag-eval: error: {ws / 'set.yaml'}: queries[0](q1).judgements.d9: passage 'd9' is not in the corpus"


def bad_retriever_params(ws: Path) -> tuple[Path, str]:
    path = write_config(ws, retrievers=[{"label": "lexical", "adapter": "bm25", "params": {"k1": 1.2, "methd": "lucene"}}])
    return path, f"rag-eval: error: {path}: retriever 'lexical': adapter 'bm25' has no parameter 'methd' (did you mean 'method'?)"


def bad_static_file(ws: Path) -> tuple[Path, str]:
    path = write_config(ws, retrievers=[{"label": "fixed", "adapter": "static", "params": {"path": "runs/none.run"}}])
    return path, f"rag-eval: error: {path}: retriever 'fixed': static: {ws / 'runs' / 'none.run'}: no such file"


def bad_retriever_output(ws: Path) -> tuple[Path, str]:
    path = write_config(ws, retrievers=[{"label": "fixed", "adapter": "static", "params": {"rankings": {"q-largest-ocean": ["atlantis"]}}}])
    return path, f"rag-eval: error: {path}: retriever 'fixed' (static) failed in search(): static: rankings: query 'q-largest-ocean' ranks doc 'atlantis'"


BAD_INPUTS = [
    bad_missing_config, bad_yaml, bad_field, bad_unknown_key, bad_unknown_retriever, bad_missing_dataset,
    bad_missing_beir_file, bad_dataset_content, bad_retriever_params, bad_static_file, bad_retriever_output,
]


@pytest.mark.parametrize("make", BAD_INPUTS, ids=[f.__name__[4:] for f in BAD_INPUTS])
def test_bad_input_exit_2_one_line_nothing_written(workspace, capsys, make):
    config, expected = make(workspace)
    before = snapshot(workspace / "out")
    assert main(["run", str(config), "--no-progress"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and captured.err.endswith("\n"), captured.err
    assert lines[0].startswith(expected), lines[0]
    assert "Traceback" not in captured.err
    # The output folder is untouched: the old report byte for byte, nothing new, no temporary files.
    assert snapshot(workspace / "out") == before
    assert (workspace / "out" / "report.md").read_bytes() == OLD_REPORT.encode()


def test_bad_input_through_the_console_script(workspace):
    config, expected = bad_unknown_retriever(workspace)
    before = snapshot(workspace / "out")
    result = subprocess.run([rag_eval_executable(), "run", str(config)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(expected)
    assert "Traceback" not in result.stderr
    assert snapshot(workspace / "out") == before


def test_malformed_yaml_names_line_and_column(workspace, capsys):
    config, _ = bad_yaml(workspace)
    assert main(["run", str(config)]) == 2
    assert capsys.readouterr().err == (
        f"rag-eval: error: {config}: line 5, column 8: invalid YAML: expected ',' or '}}', but got ':'\n"
    )


def test_several_config_problems_still_one_line(workspace, capsys):
    config = write_config(workspace, top_k="many", metrcs=[], retrievers=[{"label": "x", "adapter": "bm52"}])
    assert main(["run", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.rstrip().endswith("(and 2 more; `rag-eval validate` lists all)")


def test_a_retriever_raising_with_a_multi_line_message_still_one_line(workspace, capsys, monkeypatch):
    module = workspace / "multi_line_plugin.py"
    module.write_text(
        "class Loud:\n"
        "    def index(self, corpus):\n"
        "        raise RuntimeError('first line\\n  File \"x.py\", line 1\\nlast line')\n"
        "    def search(self, queries, top_k):\n"
        "        return {}\n"
    )
    monkeypatch.syspath_prepend(str(workspace))
    config = write_config(workspace, retrievers=[{"label": "loud", "adapter": "multi_line_plugin:Loud"}])
    before = snapshot(workspace / "out")
    assert main(["run", str(config)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"rag-eval: error: {config}: retriever 'loud' (multi_line_plugin:Loud) failed in index(): "
        'RuntimeError: first line File "x.py", line 1 last line\n'
    )
    assert snapshot(workspace / "out") == before


def test_nothing_is_created_when_the_output_folder_did_not_exist(tmp_path, capsys):
    config = write_config(tmp_path, retrievers=[{"label": "lexical", "adapter": "bm25", "params": {"k1": -1}}])
    assert main(["run", str(config)]) == 2
    assert "retriever 'lexical': params.k1: must be greater than or equal to 0, got -1" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.yaml"]


def test_unreadable_config_is_one_line(tmp_path, capsys):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: caf\xe9\n".encode("latin-1"))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"rag-eval: error: {path}: line 1, column 10: not UTF-8 text")
    folder = tmp_path / "a-folder.yaml"
    folder.mkdir()
    assert main(["run", str(folder)]) == 2
    assert capsys.readouterr().err == f"rag-eval: error: {folder}: is a folder, expected a YAML run config (a regular file)\n"


def test_output_folder_that_is_a_file_is_one_line(tmp_path, capsys):
    config = write_config(tmp_path)
    (tmp_path / "out").write_text("not a folder")
    assert main(["run", str(config), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("rag-eval: error: ") and "cannot write the outputs" in err
    assert (tmp_path / "out").read_text() == "not a folder"


def test_a_write_failing_midway_leaves_every_old_output(workspace, capsys, monkeypatch):
    """Disk full on the third file: nothing is replaced, no temporary file is left behind."""
    config = write_config(
        workspace,
        retrievers=[
            {"label": "one", "adapter": "static", "params": {"rankings": {"q-largest-ocean": ["pacific-largest"]}}},
            {"label": "two", "adapter": "static", "params": {"rankings": {"q-largest-ocean": ["indian-third"]}}},
        ],
    )
    (workspace / "out" / "one.json").write_text('{\n  "schema_version": 1,\n  "kind": "rag_eval.results",\n  "old": 1\n}\n')
    before = snapshot(workspace / "out")
    real_fsync = os.fsync
    calls = []

    def failing_fsync(fd):
        calls.append(fd)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", failing_fsync)
    assert main(["run", str(config), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot write the outputs: No space left on device" in err
    assert len(calls) == 3
    assert snapshot(workspace / "out") == before


# ---- plug-ins that print, or leave a thread behind (issue 20) --------------------------------------------------

PLUGIN = '''
import threading
import time


def poll():
    while True:  # a poller nobody stops: it prints now and then, during the run and after it
        time.sleep(0.5)
        print("plug-in: poll")


class Printing:
    """Prints while it works, from its own code and from a thread of its own."""

    def index(self, corpus):
        print("plug-in: indexing", len(corpus), "passages")

    def search(self, queries, top_k):
        print("plug-in: searching")
        printer = threading.Thread(target=print, args=("plug-in: a line from a thread",), name="plugin-printer")
        printer.start()
        printer.join()
        return {qid: {"pacific-largest": 1.0} for qid in queries}


class Lingering(Printing):
    """And leaves a thread running (a poller, a client that was never closed)."""

    def index(self, corpus):
        super().index(corpus)
        threading.Thread(target=poll, name="plugin-poller").start()
'''


def plugin_config(tmp_path: Path, name: str) -> Path:
    (tmp_path / "printing_plugin.py").write_text(PLUGIN)
    return write_config(tmp_path, retrievers=[{"label": "plugged", "adapter": f"printing_plugin:{name}"}])


def test_a_plug_ins_prints_go_to_stderr_and_stdout_holds_the_result_lines_only(tmp_path, capsys):
    assert main(["run", str(plugin_config(tmp_path, "Printing")), "--no-progress"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert len(lines) == 2 and lines[0].startswith("plugged\tndcg@4\t"), captured.out
    assert lines[1] == f"report: {tmp_path / 'out' / 'report.md'}"
    for said in ("plug-in: indexing 37 passages", "plug-in: searching", "plug-in: a line from a thread"):
        assert said in captured.err


def test_a_plug_ins_thread_does_not_keep_rag_eval_run_from_exiting(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "rag_eval", "run", str(plugin_config(tmp_path, "Lingering")), "--no-progress"],
        capture_output=True, text=True, timeout=90, check=False, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith("plugged\tndcg@4\t") and lines[1].startswith("report: ")
    assert "plug-in: searching" in result.stderr and "plug-in: poll" in result.stderr
    warning = [line for line in result.stderr.splitlines() if line.startswith("rag-eval: warning:")]
    assert warning == [
        "rag-eval: warning: thread 'plugin-poller' (a plug-in's?) is still running 3 s after rag-eval finished; "
        "exiting without waiting for it"
    ]
    assert (tmp_path / "out" / "report.md").is_file()


@pytest.mark.parametrize("name, owner", [("rag-eval-judge_0", "rag_eval's, waiting on a request"),
                                         ("poller", "a plug-in's?")])
def test_the_lingering_thread_warning_blames_a_plug_in_only_for_threads_not_rag_evals(name, owner):
    # The attack: after Ctrl-C or a failing server, rag_eval's own judge and HTTP workers were called "a plug-in's?".
    script = (
        "import threading, time\n"
        "from rag_eval._commands import process_end\n"
        "process_end.LINGER_S = 0.2\n"
        f"threading.Thread(target=time.sleep, args=(30,), name={name!r}).start()\n"
        "process_end.end_despite_threads(7)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 7
    assert result.stderr == (f"rag-eval: warning: thread {name!r} ({owner}) is still running 0.2 s after rag-eval "
                             "finished; exiting without waiting for it\n")


def test_rag_evals_own_warnings_are_one_line_each(tmp_path, capsys):
    # The attack: a cache_dir that is a file gave Python's "…/ranking_cache.py:123: RankingCacheWarning: …"
    # followed by a line of rag_eval's source, for each warning.
    (tmp_path / "cache").write_text("not a folder\n")
    config = write_config(tmp_path, retrievers=[{"label": "bm25", "adapter": "bm25"}], cache_dir="cache")
    assert main(["run", str(config), "--no-progress"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err and all(line.startswith("rag-eval: warning: ") for line in err), err
    assert any("could not store the ranking in" in line and "the next run computes it again" in line for line in err)
    assert not any("Warning:" in line or ".py:" in line for line in err)


def test_clean_without_a_database_retriever_says_there_is_nothing_to_clean(tmp_path, capsys):
    # The attack: `rag-eval clean` on a config of bm25 and static retrievers printed nothing at all.
    config = write_config(tmp_path, retrievers=[{"label": "bm25", "adapter": "bm25"}])
    for extra in ([], ["--dry-run"]):
        assert main(["clean", str(config), *extra]) == 0
        assert capsys.readouterr().out == (
            "no database retriever in this config: nothing to clean (rag-eval clean removes managed collections)\n")
