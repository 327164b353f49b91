"""A plug-in that fails in an unusual way, or writes below ``sys.stdout``, is still one line and exit 2.

- whatever a plug-in raises that is not KeyboardInterrupt (asyncio.CancelledError, a BaseException
  subclass of its own) is its failure: one line naming the config and the retriever, exit 2, never a
  traceback and exit 1 ("a gate failed"); such an exception escaping anywhere else is exit 3;
- an exception whose ``__str__`` raises is named by its type, exit 2, not an internal error;
- a ``describe()`` that returns a cycle (or nests without end) is one line, exit 2;
- ``describe()`` errors name the config, as index() and search() errors do;
- what a plug-in writes to fd 1 (os.write, a child process, sys.__stdout__, at import too) reaches
  stderr: ``rag-eval run``'s stdout holds its result lines only.

Each plug-in module gets a name of its own: a module is imported once per process.
"""

from __future__ import annotations

import csv
import importlib
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from rag_eval import cli
from rag_eval._core import plugins as plugin_rules
from rag_eval.cli import main

REPO = Path(__file__).resolve().parents[1]
OCEAN = REPO / "datasets" / "ocean_facts.yaml"

PLUGS = '''
import asyncio
import os
import subprocess
import sys


class Stop(BaseException):
    """A BaseException of the plug-in's own, as some async and RPC libraries define."""


class BadStr(Exception):
    def __str__(self):
        raise ValueError("str failed")


class Base:
    def __init__(self, mode: str = "ok"):
        self.mode = mode

    def index(self, corpus):
        pass

    def search(self, queries, top_k):
        return {qid: {"pacific-largest": 1.0} for qid in queries}


class CancelSearch(Base):
    def search(self, queries, top_k):
        raise asyncio.CancelledError("request cancelled")


class StopIndex(Base):
    def index(self, corpus):
        raise Stop("custom stop")


class CancelInit(Base):
    def __init__(self):
        raise asyncio.CancelledError("init cancelled")


class CancelDescribe(Base):
    def describe(self):
        raise asyncio.CancelledError("describe cancelled")


class InterruptSearch(Base):
    def search(self, queries, top_k):
        raise KeyboardInterrupt


class BadStrSearch(Base):
    def search(self, queries, top_k):
        raise BadStr()


class BadStrInit(Base):
    def __init__(self):
        raise BadStr()


class SelfRef(Base):
    def describe(self):
        d = {"model": "m"}
        d["d"] = d
        return d


class Deep(Base):
    def describe(self):
        d = {}
        for _ in range(5000):
            d = {"x": d}
        return d


class RaisingDescribe(Base):
    def describe(self):
        raise ValueError("describe broke")


class ClosesStdout(Base):
    def search(self, queries, top_k):
        sys.stdout.close()  # during plug-in code sys.stdout was sys.stderr itself: this closed rag-eval's stderr
        return {qid: {"pacific-largest": float("nan")} for qid in queries}


class AsyncSearch(Base):
    async def search(self, queries, top_k):
        return {qid: {"pacific-largest": 1.0} for qid in queries}


class LeavesAWriter(Base):
    def search(self, queries, top_k):
        import threading
        import time

        def write():  # not a daemon: still writing while rag-eval prints its lines and ends
            end = time.monotonic() + 1.0
            while time.monotonic() < end:
                os.write(1, b"THREAD-FD1\\n")
                print("THREAD-PRINT")
                time.sleep(0.0002)

        threading.Thread(target=write, name="writer").start()
        return super().search(queries, top_k)


class Noisy(Base):
    def index(self, corpus):
        print("PRINTED-IN-INDEX")
        os.write(1, b"FD1-IN-INDEX\\n")

    def search(self, queries, top_k):
        subprocess.run(["echo", "CHILD-IN-SEARCH"], check=True)
        sys.__stdout__.write("DUNDER-IN-SEARCH\\n")  # left in its buffer: flushed later, still to stderr
        os.system("echo SYSTEM-IN-SEARCH")
        return super().search(queries, top_k)
'''

NOISE = ("PRINTED-IN-INDEX", "FD1-IN-INDEX", "CHILD-IN-SEARCH", "DUNDER-IN-SEARCH", "SYSTEM-IN-SEARCH", "AT-IMPORT")

CHUNKERS = '''
import asyncio

from rag_eval.extend import chunker_function


class BadStr(Exception):
    def __str__(self):
        raise RuntimeError("no str")


@chunker_function
def nasty(text, mode="cancel"):
    if mode == "cancel":
        raise asyncio.CancelledError("chunk cancelled")
    raise BadStr()
'''

JUDGES = '''
import asyncio


class BadStr(Exception):
    def __str__(self):
        raise RuntimeError("no str")


class Nasty:
    source = "keyword:overlap"

    def __init__(self, mode: str = "cancel"):
        self.mode = mode

    def judge(self, query, passages):
        if self.mode == "cancel":
            raise asyncio.CancelledError("judge cancelled")
        raise BadStr()
'''

DOCUMENTS = {
    "name": "two-docs",
    "documents": [
        {"id": "a.md", "title": "Alpha", "text": "The Pacific Ocean is the largest ocean.\n\nZebras have stripes."},
        {"id": "b.md", "title": "Beta", "text": "The Atacama Desert is the driest desert."},
    ],
    "queries": [
        {"id": "q1", "text": "Which ocean is the largest?",
         "evidence": [{"doc": "a.md", "quote": "The Pacific Ocean is the largest ocean."}]},
    ],
}


def new_module(folder: Path, prefix: str, source: str) -> str:
    """Write ``source`` as the module ``<prefix>_<uuid>`` in ``folder`` (a name no other test imported); its name."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    (folder / f"{name}.py").write_text(source, encoding="utf-8")
    return name


@pytest.fixture
def plugs(tmp_path: Path) -> Any:
    """The folder of the configs, holding the plug-in module ``plugs_<uuid>`` (its name returned)."""
    name = new_module(tmp_path, "plugs", PLUGS)
    yield name
    sys.modules.pop(name, None)
    importlib.invalidate_caches()


def write_config(folder: Path, retriever: dict[str, Any], **extra: Any) -> Path:
    config = {
        "name": "plugin-failures",
        "dataset": {"path": str(OCEAN)},
        "retrievers": [{"label": "mine", **retriever}],
        "metrics": ["ndcg@4"],
        "top_k": 5,
        "output": "out",
        **extra,
    }
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, list[str]]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err.splitlines()


def failed_run(config: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """``rag-eval run config``: exit 2, exactly one line on stderr (returned), nothing on stdout, no output."""
    code, out, err = run_cli(["run", str(config), "--no-progress"], capsys)
    assert (code, out) == (2, ""), (code, out, err)
    assert len(err) == 1, err
    assert not (config.parent / "out").exists()
    return err[0]


# ---- 2. BaseException that is not an Exception ----------------------------------------------------------


@pytest.mark.parametrize(
    "cls, says",
    [
        ("CancelSearch", " ({mod}:CancelSearch) failed in search(): CancelledError: request cancelled"),
        ("StopIndex", " ({mod}:StopIndex) failed in index(): Stop: custom stop"),
        ("CancelInit", ": adapter '{mod}:CancelInit': {mod}.CancelInit() raised CancelledError: init cancelled"),
        ("CancelDescribe", " ({mod}:CancelDescribe): describe() raised CancelledError: describe cancelled; "
                           "describe() must return a dict (or None)"),
    ],
)
def test_a_base_exception_from_a_retriever_is_one_line_and_exit_2(tmp_path, plugs, capsys, cls, says):
    config = write_config(tmp_path, {"adapter": f"{plugs}:{cls}"})
    assert failed_run(config, capsys) == f"rag-eval: error: {config}: retriever 'mine'" + says.format(mod=plugs)


def test_a_base_exception_from_a_hybrid_child_is_one_line_and_exit_2(tmp_path, plugs, capsys):
    children = [{"adapter": f"{plugs}:Base"}, {"adapter": f"{plugs}:CancelSearch"}]
    config = write_config(tmp_path, {"adapter": "hybrid", "params": {"retrievers": children}})
    assert failed_run(config, capsys) == (
        f"rag-eval: error: {config}: retriever 'mine' (hybrid) failed in search(): CancelledError: request cancelled"
    )


@pytest.mark.parametrize("command", ["run", "validate"])
def test_a_base_exception_at_import_is_one_line_and_exit_2(tmp_path, capsys, command):
    module = new_module(tmp_path, "cancels_at_import", "import asyncio\nraise asyncio.CancelledError('import cancelled')\n")
    config = write_config(tmp_path, {"adapter": f"{module}:R"})
    try:
        code, out, err = run_cli([command, str(config)], capsys)
    finally:
        sys.modules.pop(module, None)
    problem = (f"{config}: retriever 'mine': adapter '{module}:R': importing '{module}' failed: "
               "CancelledError: import cancelled")
    assert (code, out) == (2, "")
    if command == "run":
        assert err == [f"rag-eval: error: {problem}"]
    else:
        assert err == [problem, "rag-eval: 1 problem found"]
    assert not (tmp_path / "out").exists()


def test_a_base_exception_in_a_real_process_is_exit_2_not_a_traceback_and_1(tmp_path, plugs):
    config = write_config(tmp_path, {"adapter": f"{plugs}:CancelSearch"})
    done = _rag_eval(["run", str(config), "--no-progress"], tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [
        f"rag-eval: error: {config}: retriever 'mine' ({plugs}:CancelSearch) failed in search(): "
        "CancelledError: request cancelled"
    ]
    assert not (tmp_path / "out").exists()


def test_ctrl_c_in_a_plugin_still_interrupts(tmp_path, plugs, capsys):
    config = write_config(tmp_path, {"adapter": f"{plugs}:InterruptSearch"})
    code, out, err = run_cli(["run", str(config), "--no-progress"], capsys)
    assert (code, out, err) == (130, "", ["rag-eval: interrupted"])
    assert not (tmp_path / "out").exists()


def test_a_base_exception_escaping_elsewhere_is_an_internal_error_not_exit_1(tmp_path, monkeypatch, capsys):
    class Stop(BaseException):
        pass

    def handler(command: Any, args: Any) -> int:
        raise Stop("escaped")

    monkeypatch.setitem(cli.HANDLERS, "run", handler)
    code, out, err = run_cli(["run", str(tmp_path / "any.yaml")], capsys)
    assert (code, out, len(err)) == (3, "", 1)
    assert err[0].startswith("rag-eval: internal error (a bug in rag-eval, please report it): Stop: escaped (")


def _documents_config(folder: Path, method: str, mode: str) -> Path:
    (folder / "docs.yaml").write_text(yaml.safe_dump(DOCUMENTS), encoding="utf-8")
    return write_config(
        folder, {"adapter": "bm25", "chunker": "mine"}, dataset={"path": "docs.yaml"},
        chunking={"mine": {"method": method, "params": {"mode": mode}}}, metrics=["doc_ndcg@4"],
        reuse_rankings=False,
    )


@pytest.fixture
def chunkers(tmp_path: Path) -> Any:
    name = new_module(tmp_path, "chunkers", CHUNKERS)
    yield name
    sys.modules.pop(name, None)


def test_a_base_exception_from_a_chunker_is_one_line_and_exit_2(tmp_path, chunkers, capsys):
    config = _documents_config(tmp_path, f"{chunkers}:nasty", "cancel")
    assert failed_run(config, capsys) == (
        f"rag-eval: error: {config}: chunking.mine: chunker '{chunkers}:nasty' failed on document 'a.md': "
        "CancelledError: chunk cancelled"
    )


def _judge_inputs(folder: Path, mode: str) -> tuple[Path, Path]:
    module = new_module(folder, "judges", JUDGES)
    judge = folder / "judge.yaml"
    judge.write_text(yaml.safe_dump({"adapter": f"{module}:Nasty", "params": {"mode": mode}}), encoding="utf-8")
    sheet = folder / "sheet.csv"
    with sheet.open("w", newline="", encoding="utf-8") as handle:
        rows = csv.writer(handle)
        rows.writerow(["query_id", "query_text", "doc", "start", "end", "text", "grade", "source", "annotator",
                       "time", "priority", "note"])
        rows.writerow(["q1", "Which ocean is the largest?", "pacific-largest", "", "", "The Pacific Ocean is the "
                       "largest ocean.", "", "", "", "", "1", ""])
    return sheet, judge


def test_a_base_exception_from_a_judge_is_one_line_and_exit_2(tmp_path, capsys):
    sheet, judge = _judge_inputs(tmp_path, "cancel")
    output = tmp_path / "out.csv"
    code, out, err = run_cli(["judge", str(sheet), "--judge", str(judge), "--output", str(output)], capsys)
    assert (code, out, len(err)) == (2, "", 1), err
    assert err[0].startswith("rag-eval: error: ") and err[0].endswith("judge() raised CancelledError: judge cancelled")
    assert not output.exists()


# ---- 3. an exception whose __str__ raises ---------------------------------------------------------------


UNSHOWN = "BadStr (its message could not be shown: str() raised ValueError: str failed)"


def test_an_exception_whose_str_raises_in_search_is_named_by_its_type(tmp_path, plugs, capsys):
    config = write_config(tmp_path, {"adapter": f"{plugs}:BadStrSearch"})
    assert failed_run(config, capsys) == (
        f"rag-eval: error: {config}: retriever 'mine' ({plugs}:BadStrSearch) failed in search(): {UNSHOWN}"
    )


def test_an_exception_whose_str_raises_in_the_constructor_is_named_by_its_type(tmp_path, plugs, capsys):
    config = write_config(tmp_path, {"adapter": f"{plugs}:BadStrInit"})
    assert failed_run(config, capsys) == (
        f"rag-eval: error: {config}: retriever 'mine': adapter '{plugs}:BadStrInit': {plugs}.BadStrInit() raised "
        f"{UNSHOWN}"
    )


def test_an_exception_whose_str_raises_in_a_chunker_is_named_by_its_type(tmp_path, chunkers, capsys):
    config = _documents_config(tmp_path, f"{chunkers}:nasty", "badstr")
    assert failed_run(config, capsys) == (
        f"rag-eval: error: {config}: chunking.mine: chunker '{chunkers}:nasty' failed on document 'a.md': "
        "BadStr (its message could not be shown: str() raised RuntimeError: no str)"
    )


def test_an_exception_whose_str_raises_in_a_judge_is_named_by_its_type(tmp_path, capsys):
    sheet, judge = _judge_inputs(tmp_path, "badstr")
    output = tmp_path / "out.csv"
    code, out, err = run_cli(["judge", str(sheet), "--judge", str(judge), "--output", str(output)], capsys)
    assert (code, out, len(err)) == (2, "", 1), err
    assert err[0].startswith(f"rag-eval: error: {judge}: judge ")
    assert err[0].endswith(": judge() raised BadStr (its message could not be shown: str() raised RuntimeError: no str)")
    assert not output.exists()


def test_the_one_home_of_a_plugin_exception_text_never_raises():
    class Twice(Exception):
        def __str__(self) -> str:
            raise Broken()

    class Broken(Exception):
        def __str__(self) -> str:
            raise RuntimeError("also broken")

    assert plugin_rules.error_cause(Twice()) == "Twice (its message could not be shown: str() raised Broken)"
    assert plugin_rules.error_text(Twice()) == "(its message could not be shown: str() raised Broken)"
    assert plugin_rules.error_cause(ValueError("two\n lines")) == "ValueError: two lines"
    assert plugin_rules.error_cause(ValueError()) == "ValueError"


# ---- 4. describe() returning what is not JSON data ------------------------------------------------------


@pytest.mark.parametrize(
    "cls, problem",
    [
        ("SelfRef", "describe()['d'] is a dict that contains itself (a cycle)"),
        ("Deep", "describe()" + "['x']" * 100 + " is nested more than 100 levels deep"),
    ],
)
def test_a_description_that_is_not_json_data_is_one_line_and_exit_2(tmp_path, plugs, capsys, cls, problem):
    config = write_config(tmp_path, {"adapter": f"{plugs}:{cls}"})
    assert failed_run(config, capsys) == (
        f"rag-eval: error: {config}: retriever 'mine' ({plugs}:{cls}): describe() returned something that is not "
        f"JSON data: {problem}; return plain dicts, lists, strings and numbers"
    )


# ---- 8. describe() errors name the config ---------------------------------------------------------------


def test_a_describe_error_names_the_config_as_index_and_search_errors_do(tmp_path, plugs, capsys):
    config = write_config(tmp_path, {"adapter": f"{plugs}:RaisingDescribe"})
    assert failed_run(config, capsys) == (
        f"rag-eval: error: {config}: retriever 'mine' ({plugs}:RaisingDescribe): describe() raised ValueError: "
        "describe broke; describe() must return a dict (or None)"
    )


# ---- 5. plug-in output below sys.stdout -----------------------------------------------------------------


def _rag_eval(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    return subprocess.run(
        [sys.executable, "-m", "rag_eval", *args], capture_output=True, text=True, timeout=120, check=False,
        env=env, cwd=cwd,
    )


def test_what_a_plugin_writes_below_sys_stdout_goes_to_stderr(tmp_path, plugs):
    source = (tmp_path / f"{plugs}.py").read_text(encoding="utf-8")
    (tmp_path / f"{plugs}.py").write_text('import os\nos.write(1, b"AT-IMPORT\\n")\n' + source, encoding="utf-8")
    config = write_config(tmp_path, {"adapter": f"{plugs}:Noisy"})
    done = _rag_eval(["run", str(config), "--no-progress"], tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split("\t")[:2] for line in lines[:1]] == [["mine", "ndcg@4"]], done.stdout
    assert lines[1:] == [f"report: {tmp_path / 'out' / 'report.md'}"], done.stdout
    for noise in NOISE:
        assert noise in done.stderr.splitlines(), (noise, done.stderr)


def test_validate_keeps_import_time_output_off_its_summary(tmp_path, plugs):
    (tmp_path / f"{plugs}.py").write_text('import os\nos.write(1, b"AT-IMPORT\\n")\n' + PLUGS, encoding="utf-8")
    config = write_config(tmp_path, {"adapter": f"{plugs}:Noisy"})
    done = _rag_eval(["validate", str(config)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{config}: OK: ") and len(done.stdout.splitlines()) == 1, done.stdout
    assert done.stderr.splitlines() == ["AT-IMPORT"]


def test_the_redirect_restores_stdout_and_keeps_the_commands_own_lines_in_order(tmp_path):
    script = textwrap.dedent(
        """
        import os, subprocess, sys
        from rag_eval._core.plugin_output import plugin_output_to_stderr

        print("before")
        try:
            with plugin_output_to_stderr() as results:
                print("result 1", file=results)
                os.write(1, b"noise 1\\n")
                print("noise 2")
                subprocess.run(["echo", "noise 3"], check=True)
                print("result 2", file=results)
                raise RuntimeError("the command failed")
        except RuntimeError:
            pass
        print("after")
        os.write(1, b"after, fd 1\\n")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True,
                          cwd=tmp_path)
    assert done.stdout.splitlines() == ["before", "result 1", "result 2", "after", "after, fd 1"]
    assert done.stderr.splitlines() == ["noise 1", "noise 2", "noise 3"]


def test_a_plugin_that_closes_sys_stdout_leaves_rag_evals_stderr_open(tmp_path, plugs):
    """Its error line was lost ("lost sys.stderr") and the run ended with exit 1, which CI reads as a gate."""
    config = write_config(tmp_path, {"adapter": f"{plugs}:ClosesStdout"})
    done = _rag_eval(["run", str(config), "--no-progress"], tmp_path)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.splitlines() == [
        f"rag-eval: error: {config}: retriever 'mine': query 'q-largest-ocean', doc 'pacific-largest': score is NaN"
    ]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("command", "adapter", "code"), [("run", "Base", 0), ("validate", "Base", 0),
                                                          ("run", "ClosesStdout", 2)])
def test_a_closed_stdout_is_dev_null_not_an_internal_error(tmp_path, plugs, command, adapter, code):
    """`rag-eval run config.yaml >&-` ended in an internal error (sys.stdout is None) with exit 1."""
    config = write_config(tmp_path, {"adapter": f"{plugs}:{adapter}"})
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    done = subprocess.run(
        [sys.executable, "-m", "rag_eval", command, str(config), *(["--no-progress"] if command == "run" else [])],
        stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=120, check=False, env=env, cwd=tmp_path,
        preexec_fn=lambda: os.close(1),  # noqa: PLW1509 - the child starts with fd 1 closed, as under >&-
    )
    assert done.returncode == code, done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    if code == 0 and command == "run":
        assert (tmp_path / "out" / "report.md").exists() and done.stderr == ""
    if code == 2:
        assert done.stderr.splitlines() == [
            f"rag-eval: error: {config}: retriever 'mine': query 'q-largest-ocean', doc 'pacific-largest': score is NaN"
        ]


def test_an_async_search_is_one_line_without_never_awaited_warnings(tmp_path, plugs):
    """The line was followed by four lines of "RuntimeWarning: coroutine ... was never awaited"."""
    config = write_config(tmp_path, {"adapter": f"{plugs}:AsyncSearch"})
    done = _rag_eval(["run", str(config), "--no-progress"], tmp_path)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.splitlines() == [
        f"rag-eval: error: {config}: retriever 'mine': search() returned coroutine, expected {{qid: {{doc_id: score}}}}"
    ]


def test_a_thread_left_writing_never_reaches_stdout(tmp_path, plugs):
    """Between the end of the run and the process's exit, fd 1 was the real stdout again: a plug-in's thread
    still writing reached it (2 runs of 13 in the attack)."""
    config = write_config(tmp_path, {"adapter": f"{plugs}:LeavesAWriter"})
    for _ in range(3):
        done = _rag_eval(["run", str(config), "--no-progress"], tmp_path)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert len(lines) == 2 and lines[0].startswith("mine\tndcg@4\t") and lines[1].startswith("report: "), lines
        assert "THREAD-FD1" in done.stderr and "THREAD-PRINT" in done.stderr
