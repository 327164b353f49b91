"""Exit codes mean one thing each, for every command: 0 done, 1 a regression gate failed
(only that), 2 bad input, 3 an internal error (a bug), 130 interrupted.

A bug prints one line saying so and naming the log file that holds the traceback (the
traceback itself with --debug); a plug-in that calls sys.exit() is a failing plug-in
(exit 2), not the process ending with the plug-in's code; stdout that cannot be written
is one line and exit 2, whatever the command.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from rag_eval import cli
from rag_eval.cli import main

REPO = Path(__file__).resolve().parents[1]
OCEAN = REPO / "datasets" / "ocean_facts.yaml"
SEED = ["pacific-largest", "atlantic-separates", "sahara-hot-desert", "indian-third"]


@pytest.fixture(autouse=True)
def _no_job_summary(monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def write_config(folder: Path, adapter: str = "static", params: dict | None = None) -> Path:
    config = {
        "name": "exit-codes",
        "dataset": {"path": str(OCEAN)},
        "retrievers": [{"label": "mine", "adapter": adapter,
                        "params": {"rankings": {"q-largest-ocean": SEED}} if params is None else params}],
        "metrics": ["ndcg@4"],
        "top_k": 10,
        "output": "out",
    }
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _boom(*args, **kwargs):
    raise RuntimeError("boom\nsecond line of the message")


# ---- internal errors -------------------------------------------------------------------------------


def test_internal_error_is_exit_3_with_one_line_and_the_traceback_in_a_log_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("rag_eval._commands.validate.validate_config", _boom)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # the log goes to tempfile.gettempdir()
    code = main(["validate", str(write_config(tmp_path))])
    err = capsys.readouterr().err
    assert code == cli.EXIT_INTERNAL_ERROR == 3
    (line,) = err.splitlines()
    assert "Traceback" not in err
    match = re.fullmatch(
        r"rag-eval: internal error \(a bug in rag-eval, please report it\): RuntimeError: boom second line of the "
        r"message \(traceback written to (\S+\.log); rerun with --debug to print it\)",
        line,
    )
    assert match, line
    log = Path(match.group(1))
    assert log.parent == tmp_path and log.name.startswith("rag-eval-crash-")
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "RuntimeError: boom" in text and "_boom" in text


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_prints_the_traceback(tmp_path, monkeypatch, capsys, where):
    monkeypatch.setattr("rag_eval._commands.validate.validate_config", _boom)
    config = str(write_config(tmp_path))
    argv = ["--debug", "validate", config] if where == "before" else ["validate", config, "--debug"]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 3
    assert err.startswith("Traceback (most recent call last)") and "in _boom" in err
    assert err.splitlines()[-1].startswith("rag-eval: internal error (a bug in rag-eval, please report it): "
                                           "RuntimeError: boom")
    assert err.splitlines()[-1].endswith("(traceback above)")


def test_an_internal_error_is_never_exit_1(tmp_path, monkeypatch, capsys):
    """In CI, 1 reads as "a gate failed": a crash inside compare must not look like a regression."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("helpers", REPO / "tests" / "regression_fixtures" / "helpers.py")
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    doc = helpers.results_document({"q1": {"ndcg@10": 1.0}, "q2": {"ndcg@10": 0.5}})
    path = tmp_path / "r.json"
    import json

    path.write_text(json.dumps(doc))
    monkeypatch.setattr("rag_eval._compare.regression.compare", _boom)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    assert main(["compare", str(path), str(path)]) == 3
    assert "internal error" in capsys.readouterr().err


def test_keyboard_interrupt_is_130(tmp_path, monkeypatch, capsys):
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr("rag_eval._commands.validate.validate_config", interrupted)
    assert main(["validate", str(write_config(tmp_path))]) == 130
    assert capsys.readouterr().err == "rag-eval: interrupted\n"


def test_usage_errors_are_one_line_and_exit_2(capsys):
    assert main(["compare", "only-one.json"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "rag-eval compare: error: the following arguments are required: candidate (see `rag-eval compare --help`)"
    ]
    assert main(["frobnicate"]) == 2
    assert len(capsys.readouterr().err.splitlines()) == 1


def test_help_is_exit_0_and_names_the_exit_codes(capsys):
    assert main(["--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Exit codes: 0 done (every gate passed), 1 a regression gate failed, 2 bad input, 3 internal error" in out
    assert "--debug" in out


# ---- plug-ins that call sys.exit() ----------------------------------------------------------------------


PLUGIN = textwrap.dedent(
    """
    import sys

    class Base:
        def index(self, corpus):
            self.docs = sorted(corpus)

        def search(self, queries, top_k):
            return {q: {self.docs[0]: 1.0} for q in queries}

    class ExitsInIndex(Base):
        def index(self, corpus):
            sys.exit(3)

    class ExitsInSearch(Base):
        def search(self, queries, top_k):
            raise SystemExit("no more")

    class ExitsInDescribe(Base):
        def describe(self):
            sys.exit(0)

    class ExitsInInit(Base):
        def __init__(self):
            sys.exit(1)
    """
)


@pytest.mark.parametrize(
    "cls, message",
    [
        ("ExitsInIndex", "failed in index(): it called sys.exit(3); a plug-in must raise an exception"),
        ("ExitsInSearch", "failed in search(): it called sys.exit('no more'); a plug-in must raise an exception"),
        ("ExitsInDescribe", "describe() raised SystemExit"),
        ("ExitsInInit", "SystemExit(1)"),
    ],
)
def test_a_plugin_calling_sys_exit_is_a_plugin_failure(tmp_path, monkeypatch, capsys, cls, message):
    module = f"exiting_plugin_{cls.lower()}"
    (tmp_path / f"{module}.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    code = main(["run", str(write_config(tmp_path, f"{module}:{cls}", {})), "--no-progress"])
    captured = capsys.readouterr()
    assert code == 2, captured
    (line,) = captured.err.splitlines()
    assert line.startswith("rag-eval: error: ") and "'mine'" in line and message in line, line
    assert not (tmp_path / "out").exists()


def test_a_plugin_calling_sys_exit_does_not_end_the_process_with_its_code(tmp_path):
    (tmp_path / "exiting_plugin_proc.py").write_text(PLUGIN)
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH")]))
    config = write_config(tmp_path, "exiting_plugin_proc:ExitsInIndex", {})
    done = subprocess.run(
        [sys.executable, "-m", "rag_eval.cli", "run", str(config), "--no-progress"],
        capture_output=True, text=True, timeout=120, check=False, env=env, cwd=tmp_path,
    )
    assert done.returncode == 2  # not the plug-in's 3, which would read as an internal error
    assert done.stderr.splitlines() == [
        (f"rag-eval: error: {config}: retriever 'mine' (exiting_plugin_proc:ExitsInIndex) failed in index(): it called "
        "sys.exit(3); a plug-in must raise an exception, not exit the process")
    ]


# ---- stdout that cannot be written, for every command ----------------------------------------------------


def _evaluate_args(tmp: Path) -> list[str]:
    (tmp / "q.qrels").write_text("q1 0 d1 1\n")
    (tmp / "r.run").write_text("q1 Q0 d1 1 2.0 t\n")
    return ["evaluate", "--qrels", "q.qrels", "--run", "r.run", "-m", "ndcg"]


def _compare_args(tmp: Path) -> list[str]:
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location("helpers", REPO / "tests" / "regression_fixtures" / "helpers.py")
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    (tmp / "r.json").write_text(json.dumps(helpers.results_document({"q1": {"ndcg@10": 1.0}})))
    return ["compare", "r.json", "r.json", "--resamples", "100"]


@pytest.mark.parametrize(
    "make_args",
    [
        lambda tmp: ["--help"],
        lambda tmp: ["compare", "--help"],
        lambda tmp: [],
        _evaluate_args,
        lambda tmp: ["validate", str(write_config(tmp))],
        lambda tmp: ["run", str(write_config(tmp)), "--no-progress"],
        _compare_args,
    ],
    ids=["help", "compare-help", "no-command", "evaluate", "validate", "run", "compare"],
)
def test_unwritable_stdout_is_one_line_and_exit_2(tmp_path, make_args):
    args = make_args(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-c", "from rag_eval.cli import console_main; console_main()", *args],
            stdout=full, stderr=subprocess.PIPE, text=True, timeout=120, check=False, env=env, cwd=tmp_path,
        )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    # One error line (evaluate may first say on stderr which qrels format it read).
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert errors == ["rag-eval: error: cannot write to standard output (No space left on device)"]
    assert done.stderr.splitlines()[-1] == errors[0]


@pytest.mark.parametrize(("config", "code"), [("ocean_facts.yaml", 0), ("missing.yaml", 2)])
def test_the_process_ends_with_its_code_and_exit_handlers_and_its_objects_frozen(config, code):
    # The objects alive at the end are left out of the teardown's garbage collections (about 1 s
    # after a torch model ran); exit handlers still run, and the exit code is the command's.
    probe = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print('last exit handler; frozen objects:', gc.get_freeze_count() > 0, flush=True))\n"
        "from rag_eval.cli import console_main\n"
        "sys.argv = ['rag-eval', 'validate', sys.argv[1]]\n"
        "console_main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(REPO / "configs" / config)],
        capture_output=True, text=True, timeout=60, check=False, cwd=REPO,
    )
    assert done.returncode == code, done.stderr
    assert done.stdout.splitlines()[-1] == "last exit handler; frozen objects: True"
