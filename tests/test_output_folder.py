"""An output folder's set of files is replaced as a whole (rag_eval._core.output_folder).

The central test kills a process with SIGKILL after every single change on disk that a
write makes (and, nested, after every change the next write makes while repairing), then
checks that the folder holds exactly the old set or the new set, with every file of the
user's, and that the next write leaves exactly the new set and no leftover.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from rag_eval._core import folder_renames, output_folder, output_swap
from rag_eval._core.atomic import atomic_write_bytes
from rag_eval._core.errors import RagEvalError
from rag_eval._core.output_folder import replace_output_set
from rag_eval._core.output_manifest import MANIFEST

OLD = {"report.md": b"old report\n", "one.json": b'{"set": "old"}\n', "one.run": b"q1 Q0 d1 1 1.0 one\n"}
NEW = {"report.md": b"new report\n", "two.json": b'{"set": "new"}\n', "two.run": b"q1 Q0 d2 1 2.0 two\n"}
LATER = {"report.md": b"later report\n", "three.json": b'{"set": "later"}\n'}
# report.md as rag_eval <= 0.1 wrote it (no manifest): a title, then the generated "What was evaluated" heading.
OLDER_REPORT = "# RAG Evaluation: ocean\n\n## \N{BOOKS} What was evaluated\n\n- **Dataset:** ocean\n".encode()
USER = {"baseline.json": b'{"kept": "by the user"}\n', "notes/today.txt": b"my notes\n", "notes/deep/x.bin": b"\0\1"}


def snapshot(folder: Path) -> dict[str, object]:
    """Every entry under ``folder``: file bytes, "<dir>", or a link's target; the manifest by its file list."""
    seen: dict[str, object] = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if path.is_symlink():
            seen[name] = ("->", os.readlink(path))
        elif path.is_dir():
            seen[name] = "<dir>"
        elif name == MANIFEST:
            seen[name] = ("manifest", json.loads(path.read_bytes())["files"])
        else:
            seen[name] = path.read_bytes()
    return seen


def expected(files: dict[str, bytes]) -> dict[str, object]:
    """The snapshot of a folder holding the set ``files`` and the user's entries."""
    seen: dict[str, object] = {name: data for name, data in files.items()}
    seen[MANIFEST] = ("manifest", sorted(files))
    seen.update({"notes": "<dir>", "notes/deep": "<dir>", "link": ("->", "baseline.json")})
    seen.update(USER)
    return dict(sorted(seen.items()))


def add_user_entries(folder: Path) -> None:
    for name, data in USER.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    (folder / "link").symlink_to("baseline.json")


@pytest.fixture
def out(tmp_path) -> Path:
    """``tmp_path/parent/out`` holding the old set and the user's entries."""
    folder = tmp_path / "parent" / "out"
    replace_output_set(folder, OLD)
    add_user_entries(folder)
    assert snapshot(folder) == expected(OLD)
    return folder


def siblings(folder: Path) -> list[str]:
    return sorted(os.listdir(folder.parent))


# ---- what a write leaves ---------------------------------------------------------------------------------


def test_the_new_set_replaces_the_old_and_the_users_files_stay(out):
    inode = (out / "baseline.json").stat().st_ino
    replace_output_set(out, NEW)
    assert snapshot(out) == expected(NEW)  # one.json and one.run, no longer produced, are gone
    assert (out / "baseline.json").stat().st_ino == inode  # the user's file itself, not a copy
    assert siblings(out) == ["out"]  # no lock, no staged or old folder left
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["kind"] == "rag_eval.output_set" and manifest["files"] == ["report.md", "two.json", "two.run"]


def test_a_folder_without_manifest_keeps_every_file_the_new_set_does_not_name(tmp_path):
    """Written by an older rag_eval or by the user: only the names the new set writes are replaced."""
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "report.md").write_bytes(OLDER_REPORT)
    (folder / "old-retriever.json").write_bytes(b'{"kind": "rag_eval.results"}\n')
    replace_output_set(folder, NEW)
    assert (folder / "report.md").read_bytes() == NEW["report.md"]
    assert (folder / "old-retriever.json").read_bytes() == b'{"kind": "rag_eval.results"}\n'
    replace_output_set(folder, LATER)  # now the folder has a manifest: two.* were rag_eval's and go
    assert sorted(os.listdir(folder)) == [MANIFEST, "old-retriever.json", "report.md", "three.json"]


def test_files_appearing_during_the_write_are_kept(out, monkeypatch):
    """A file the user saves into the folder after it was mirrored ends up in the new folder."""

    def late_save(step: str) -> None:
        if step == "notes carried":  # the last user entry mirrored; the swap comes next
            (out / "late.txt").write_bytes(b"saved during the write\n")

    monkeypatch.setattr(output_swap, "_checkpoint", late_save)
    replace_output_set(out, NEW)
    assert (out / "late.txt").read_bytes() == b"saved during the write\n"
    assert siblings(out) == ["out"]


def test_a_symlinked_output_folder_stays_a_link(tmp_path):
    real = tmp_path / "runs" / "2024"
    replace_output_set(real, OLD)
    link = tmp_path / "latest"
    link.symlink_to(real)
    replace_output_set(link, NEW)
    assert link.is_symlink() and (real / "two.json").read_bytes() == NEW["two.json"]
    assert not (real / "one.json").exists()


# ---- kill -9 at every step -----------------------------------------------------------------------------------


# The killed writes run in children forked from a small process that has imported only rag_eval's
# output modules: forking pytest's own process, which by then holds torch and models, cost 0.1-0.3 s
# a child on 2 cores (these two tests were 20 s of the suite). One JSON line in, one exit status out.
_FORKER = textwrap.dedent(
    """
    import json, os, signal, sys
    from pathlib import Path
    from rag_eval._core import folder_renames, output_swap
    from rag_eval._core.output_folder import replace_output_set

    def write_killed_at(folder, files, at, exchange):
        count = [0]
        def step(name):
            count[0] += 1
            if count[0] == at:
                os.kill(os.getpid(), signal.SIGKILL)
        # fsync matters for a power cut, not for a killed process (the page cache outlives it).
        os.fsync = lambda fd: None
        output_swap._checkpoint = step
        if not exchange:
            folder_renames.renameat2 = lambda: None
        replace_output_set(Path(folder), files)

    for line in sys.stdin:
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:  # the child: never returns into the loop
            code = 0
            try:
                files = {name: bytes.fromhex(data) for name, data in job["files"].items()}
                write_killed_at(job["folder"], files, job["at"], job["exchange"])
            except BaseException:
                code = 3
            os._exit(code)
        print(os.waitpid(pid, 0)[1], flush=True)
    """
)


@pytest.fixture(scope="module")
def write_killed() -> Iterator[Callable[[Path, dict[str, bytes], int, bool], int]]:
    """Run one write in a child process SIGKILLed after its ``at``-th change on disk; the child's wait status."""
    forker = subprocess.Popen([sys.executable, "-c", _FORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert forker.stdin is not None and forker.stdout is not None

    def write(folder: Path, files: dict[str, bytes], at: int, exchange: bool) -> int:
        job = {"folder": str(folder), "files": {name: data.hex() for name, data in files.items()}, "at": at, "exchange": exchange}
        forker.stdin.write(json.dumps(job) + "\n")
        forker.stdin.flush()
        return int(forker.stdout.readline())

    yield write
    forker.stdin.close()
    assert forker.wait(timeout=30) == 0


def _steps(folder: Path, files: dict[str, bytes], monkeypatch, exchange: bool) -> list[str]:
    """The changes on disk one write makes, by name, in order."""
    names: list[str] = []
    with monkeypatch.context() as patch:
        patch.setattr(output_swap, "_checkpoint", names.append)
        if not exchange:
            patch.setattr(folder_renames, "renameat2", lambda: None)
        replace_output_set(folder, files)
    return names


def _assert_old_or_new(folder: Path, exchange: bool) -> None:
    if folder.exists():
        assert snapshot(folder) in (expected(OLD), expected(NEW))
        return
    # Only the two-rename fallback has a moment without the folder: the old set then waits aside, complete.
    assert not exchange
    asides = [name for name in siblings(folder) if name.startswith(".out.rag_eval-old-")]
    assert len(asides) == 1 and snapshot(folder.parent / asides[0]) == expected(OLD)


def _copy(folder: Path, to: Path) -> Path:
    """A copy of ``folder``'s parent (the folder, a killed run's leftovers), hard links kept as links."""
    subprocess.run(["cp", "-a", str(folder.parent), str(to)], check=True)
    return to / folder.name


# Kills after which the next write is itself killed at each of its steps: one per kind of leftover
# (a staged folder never swapped in, an old folder whole, an old folder half emptied, no folder).
NESTED_AFTER = {"manifest staged", "exchanged", "old one.json removed", "old set moved aside"}


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2-exchange", "two-renames"])
def test_a_kill_at_any_step_leaves_the_old_or_the_new_set(tmp_path, monkeypatch, exchange, write_killed):
    if exchange and folder_renames.renameat2() is None:
        pytest.skip("renameat2 is not available here")
    # fsync matters for a power cut, not for a killed process (the page cache outlives it): skipped for speed.
    monkeypatch.setattr(os, "fsync", lambda fd: None)

    def fresh(name: str) -> Path:
        folder = tmp_path / name / "out"
        replace_output_set(folder, OLD)
        add_user_entries(folder)
        return folder

    steps = _steps(fresh("count"), NEW, monkeypatch, exchange)
    assert "notes carried" in steps and ("exchanged" in steps) == exchange
    outcomes = set()
    for at, step in enumerate(steps, start=1):
        folder = fresh(f"kill-{at}")
        status = write_killed(folder, NEW, at, exchange)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (step, status)
        _assert_old_or_new(folder, exchange)
        outcomes.add("new" if folder.exists() and snapshot(folder) == expected(NEW) else "old")
        if step in NESTED_AFTER:
            # The next write repairs what was left (the killed run's lock is free): kill it at each of its steps.
            later_steps = _steps(_copy(folder, tmp_path / f"count-{at}"), LATER, monkeypatch, exchange)
            for again, later_step in enumerate(later_steps, start=1):
                copy = _copy(folder, tmp_path / f"kill-{at}-{again}")
                status = write_killed(copy, LATER, again, exchange)
                assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (step, later_step, status)
                if copy.exists():
                    assert snapshot(copy) in (expected(OLD), expected(NEW), expected(LATER)), (step, later_step)
                replace_output_set(copy, LATER)
                assert snapshot(copy) == expected(LATER) and siblings(copy) == ["out"], (step, later_step)
        replace_output_set(folder, LATER)
        assert snapshot(folder) == expected(LATER), step
        assert siblings(folder) == ["out"], step  # staged and old folders, lock file: all gone
    assert outcomes == {"old", "new"}
    assert NESTED_AFTER & set(steps) == ({"manifest staged", "old one.json removed"} | (
        {"exchanged"} if exchange else {"old set moved aside"}))


def test_a_kill_at_any_step_of_a_first_write_leaves_no_folder_or_the_whole_set(tmp_path, monkeypatch, write_killed):
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    steps = _steps(tmp_path / "count" / "out", NEW, monkeypatch, exchange=True)
    assert steps[-1] == "new set in place"
    for at, step in enumerate(steps, start=1):
        folder = tmp_path / f"kill-{at}" / "out"
        status = write_killed(folder, NEW, at, exchange=True)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, step
        assert not folder.exists() if at < len(steps) else sorted(os.listdir(folder)) == [MANIFEST, *sorted(NEW)]
        replace_output_set(folder, LATER)
        assert sorted(os.listdir(folder)) == [MANIFEST, *sorted(LATER)] and siblings(folder) == ["out"], step


# ---- concurrent runs -------------------------------------------------------------------------------------------

HOLDER = textwrap.dedent(
    """
    import sys
    from rag_eval._core.output_folder import hold_output_folder
    with hold_output_folder(sys.argv[1]):
        print("held", flush=True)
        sys.stdin.read()
    """
)


@pytest.fixture
def holder(out):
    """Another process holding the output folder's lock until the test ends."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout.readline() == "held\n"
    yield process
    process.stdin.close()
    process.wait(timeout=30)


def test_a_second_writer_is_refused_naming_the_folder_and_the_process(out, holder):
    with pytest.raises(RagEvalError) as caught:
        replace_output_set(out, NEW)
    assert str(caught.value) == (
        f"{out}: another rag-eval run (pid {holder.pid}) is writing into this output folder; "
        "wait for it to finish or choose another output folder"
    )
    assert snapshot(out) == expected(OLD)


def test_the_lock_is_free_once_its_holder_is_killed(out, holder):
    holder.kill()
    holder.wait(timeout=30)
    replace_output_set(out, NEW)
    assert snapshot(out) == expected(NEW)
    assert siblings(out) == ["out"]


def test_rag_eval_run_is_refused_with_exit_2_while_another_run_writes(out, holder):
    config = out.parent / "run.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": "lock-test",
                "dataset": {"path": str(REPO / "datasets" / "ocean_facts.yaml")},
                "retrievers": [
                    {"label": "seed", "adapter": "static", "params": {"rankings": {"q-largest-ocean": ["pacific-largest"]}}}
                ],
                "metrics": ["ndcg@4"],
                "output": "out",
            }
        )
    )
    cli = [str(Path(sys.executable).parent / "rag-eval"), "run", str(config), "--no-progress"]
    result = subprocess.run(cli, check=False, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stderr == (
        f"rag-eval: error: {out}: another rag-eval run (pid {holder.pid}) is writing into this output folder; "
        "wait for it to finish or choose another output folder\n"
    )
    assert snapshot(out) == expected(OLD)
    holder.stdin.close()
    holder.wait(timeout=30)
    result = subprocess.run(cli, check=False, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert sorted(os.listdir(out)) == [
        MANIFEST, "baseline.json", "link", "notes", "per-query.csv", "plot-at-k.svg", "plot-means.svg", "report.html",
        "report.md", "seed.json", "seed.run",
    ]


# ---- leftovers -----------------------------------------------------------------------------------------------


def test_temporary_files_of_earlier_versions_are_removed(out):
    (out / ".report.md.k3j_x9a2.tmp").write_bytes(b"x" * 1000)  # tempfile.mkstemp's names, rag_eval <= 0.1
    (out / ".seed.json.abcdefgh.tmp").write_bytes(b"{")
    (out / ".draft.txt.abcdefgh.tmp").write_bytes(b"the user's")  # not a name rag_eval writes
    other = out.parent / ".other.rag_eval-new-0123456789abcdef"  # another folder's: not ours to judge
    other.mkdir()
    replace_output_set(out, NEW)
    assert not (out / ".report.md.k3j_x9a2.tmp").exists() and not (out / ".seed.json.abcdefgh.tmp").exists()
    assert (out / ".draft.txt.abcdefgh.tmp").read_bytes() == b"the user's"
    assert other.is_dir()


def test_an_old_folder_holding_a_changed_file_is_kept_and_named(out):
    """A killed run's old folder whose copy of a user file differs from the folder's: never deleted."""
    aside = out.parent / ".out.rag_eval-old-00000000000000aa"
    aside.mkdir()
    (aside / "baseline.json").write_bytes(b"another version\n")
    (aside / "one.json").write_bytes(b"rag_eval's, listed in the manifest\n")
    with pytest.raises(RagEvalError) as caught:
        replace_output_set(out, NEW)
    kept = out.parent / ".out.rag_eval-kept-00000000000000aa"
    assert str(caught.value).startswith(f"{kept}: left by an interrupted or concurrent write into {out}")
    assert sorted(os.listdir(kept)) == ["baseline.json"] and snapshot(out) == expected(OLD)
    replace_output_set(out, NEW)  # the kept folder is the user's now: it no longer stops a run
    assert snapshot(out) == expected(NEW) and (kept / "baseline.json").read_bytes() == b"another version\n"


# ---- failures leave the old set --------------------------------------------------------------------------------


def test_disk_full_while_staging_leaves_the_old_set_byte_for_byte(out, monkeypatch):
    real_fsync = os.fsync
    calls = []

    def failing_fsync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(RagEvalError) as caught:
        replace_output_set(out, NEW)
    assert str(caught.value) == f"{out}: cannot write the outputs: No space left on device"
    assert snapshot(out) == expected(OLD) and siblings(out) == ["out"]


def test_an_output_parent_that_is_a_file_is_one_error(tmp_path):
    (tmp_path / "file").write_text("mine")
    with pytest.raises(RagEvalError, match=r"cannot write the outputs: Not a directory$"):
        replace_output_set(tmp_path / "file" / "out", NEW)
    assert (tmp_path / "file").read_text() == "mine" and sorted(os.listdir(tmp_path)) == ["file"]


def test_a_folder_full_of_someone_elses_files_is_refused(out, monkeypatch):
    monkeypatch.setattr(output_swap, "MAX_USER_ENTRIES", 4)  # baseline.json, link, notes/, today.txt, deep/...
    with pytest.raises(RagEvalError) as caught:
        replace_output_set(out, NEW)
    assert str(caught.value) == (
        f"{out}: holds more than 4 files and folders rag_eval did not write; choose an output folder of its own"
    )
    assert snapshot(out) == expected(OLD) and siblings(out) == ["out"]


def test_an_output_folder_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "out").write_text("mine")
    with pytest.raises(RagEvalError) as caught:
        replace_output_set(tmp_path / "out", NEW)
    assert str(caught.value) == f"{tmp_path / 'out'}: cannot write the outputs: it is a file, expected a folder"
    assert (tmp_path / "out").read_text() == "mine"


@pytest.mark.parametrize(
    "target, why",
    [
        (lambda t: t / "configs", "the config's own folder"),
        (lambda t: t, "{t}, which holds the config's folder"),
        (lambda t: t / "home", "your home folder"),
        (lambda t: Path("/"), "the root folder /"),
        (lambda t: t / "repo", "{t}/repo, which holds .git (a repository)"),
        (lambda t: t / "work", "the current folder"),
        (lambda t: t / "work" / "..", "{t}, which holds the config's folder"),
        (lambda t: t / "work" / "link-to-configs", "the config's own folder"),
    ],
    ids=["config-folder", "config-parent", "home", "root", "repository", "cwd", "dot-dot", "symlink"],
)
def test_dangerous_output_folders_are_refused(tmp_path, monkeypatch, target, why):
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "run.yaml").write_text("name: x\n")
    (tmp_path / "home").mkdir()
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "link-to-configs").symlink_to(tmp_path / "configs")
    monkeypatch.chdir(tmp_path / "work")
    # HOME elsewhere but for the home case: tmp_path, a parent of a home inside it, would be refused for that.
    monkeypatch.setenv("HOME", str(tmp_path / "home") if "home" in why else "/nonexistent/home")
    before = snapshot(tmp_path)
    folder = target(tmp_path)
    with pytest.raises(RagEvalError) as caught:
        replace_output_set(folder, NEW, config_path=tmp_path / "configs" / "run.yaml")
    assert str(caught.value) == (
        f"{folder}: refusing to write the outputs into {why.format(t=tmp_path)}; set 'output:' (or --output) "
        "to a folder of their own, such as reports/<name>"
    )
    assert snapshot(tmp_path) == before


# ---- permissions -------------------------------------------------------------------------------------------------


@pytest.fixture
def umask_022():
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_outputs_get_the_umask_permissions_and_keep_a_changed_mode(tmp_path, umask_022):
    folder = tmp_path / "out"
    replace_output_set(folder, OLD)
    assert [mode(folder / name) for name in sorted(OLD)] == [0o644, 0o644, 0o644]
    assert mode(folder) == 0o755 and mode(folder / MANIFEST) == 0o644
    (folder / "report.md").chmod(0o640)
    folder.chmod(0o750)
    replace_output_set(folder, NEW)
    assert mode(folder / "report.md") == 0o640 and mode(folder / "two.json") == 0o644
    assert mode(folder) == 0o750
    os.umask(0o077)
    replace_output_set(folder, LATER)
    assert mode(folder / "three.json") == 0o600 and mode(folder / "report.md") == 0o640


def test_atomic_writes_get_the_umask_permissions_and_keep_a_replaced_files_mode(tmp_path, umask_022):
    path = tmp_path / "cache" / "k1.json"
    atomic_write_bytes(path, b"one")
    assert mode(path) == 0o644
    path.chmod(0o600)
    atomic_write_bytes(path, b"two")
    assert mode(path) == 0o600 and path.read_bytes() == b"two"
    path.chmod(0o664)
    atomic_write_bytes(path, b"three")
    assert mode(path) == 0o664
    assert sorted(os.listdir(path.parent)) == ["k1.json"]


# ---- through rag-eval run ---------------------------------------------------------------------------------------


def _config(folder: Path, labels: list[str]) -> Path:
    path = folder / "run.yaml"
    retrievers = [
        {"label": label, "adapter": "static", "params": {"rankings": {"q-largest-ocean": ["pacific-largest"]}}}
        for label in labels
    ]
    config = {"name": "set-test", "dataset": {"path": str(REPO / "datasets" / "ocean_facts.yaml")},
              "retrievers": retrievers, "metrics": ["ndcg@4"], "output": "out"}
    path.write_text(yaml.safe_dump(config))
    return path


def test_a_retriever_removed_from_the_config_leaves_no_results_behind(tmp_path, capsys):
    from rag_eval.cli import main

    assert main(["run", str(_config(tmp_path, ["first", "second"])), "--no-progress"]) == 0
    (tmp_path / "out" / "baseline.json").write_bytes(b"the user's baseline\n")
    assert main(["run", str(_config(tmp_path, ["second"])), "--no-progress"]) == 0
    capsys.readouterr()
    assert sorted(os.listdir(tmp_path / "out")) == [
        MANIFEST, "baseline.json", "per-query.csv", "plot-at-k.svg", "plot-means.svg", "report.html", "report.md",
        "second.json", "second.run",
    ]
    assert (tmp_path / "out" / "baseline.json").read_bytes() == b"the user's baseline\n"
    assert sorted(os.listdir(tmp_path)) == ["out", "run.yaml"]


def test_the_lock_is_reentrant_in_one_thread_and_refuses_another(tmp_path):
    import threading

    folder = tmp_path / "out"
    refused: list[str] = []

    def other_thread() -> None:
        try:
            replace_output_set(folder, LATER)
        except RagEvalError as error:
            refused.append(str(error))

    with output_folder.hold_output_folder(folder):
        replace_output_set(folder, NEW)  # the holder itself may write
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
    message = (
        f"{folder}: another rag-eval run (pid {os.getpid()}) is writing into this output folder; "
        "wait for it to finish or choose another output folder"
    )
    assert refused == [message]
    assert sorted(os.listdir(folder)) == [MANIFEST, "report.md", "two.json", "two.run"]
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_rag_eval_run_is_refused_before_any_retrieval_while_another_run_writes(out, holder):
    # A plug-in that leaves a mark when indexing: the refused run must not get that far.
    mark = out.parent / "indexed.mark"
    plugin = out.parent / "marking_plugin.py"
    plugin.write_text(
        "class Marking:\n"
        "    def index(self, corpus):\n"
        f"        open({str(mark)!r}, 'w').close()\n"
        "    def search(self, queries, top_k):\n"
        "        return {}\n"
    )
    config = out.parent / "run.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": "lock-test",
                "dataset": {"path": str(REPO / "datasets" / "ocean_facts.yaml")},
                "retrievers": [{"label": "marking", "adapter": "marking_plugin:Marking"}],
                "metrics": ["ndcg@4"],
                "output": "out",
            }
        )
    )
    cli = [str(Path(sys.executable).parent / "rag-eval"), "run", str(config), "--no-progress"]
    result = subprocess.run(cli, check=False, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "another rag-eval run" in result.stderr
    assert not mark.exists()
    assert snapshot(out) == expected(OLD)


# ---- files rag_eval did not write are never replaced --------------------------------------------------------

# The results file and run file of retriever "bm25" as rag_eval <= 0.1 wrote them (no manifest).
OLDER_RESULTS = b'{\n  "schema_version": 1,\n  "kind": "rag_eval.results",\n  "created": "2026-01-01"\n}\n'
OLDER_RUN = b"q1\tQ0\td1\t1\t2.0\tbm25\nq1\tQ0\td2\t2\t1.0\tbm25\n"
OLDER_COMPARISON = "# Regression check: \N{CROSS MARK} FAIL\n\nndcg@10 dropped\n".encode()
NOT_RECOGNISED = "not recognisably written by rag_eval (the folder has no manifest)"
OLDER_SET = {"report.md": b"new\n", "bm25.json": b"{}\n", "bm25.run": b"", "comparison.md": b"new\n"}


def refusal(path: Path, why: str, *more: str) -> str:
    """The one line refusing ``path``; ``more``: the other files in the way, named in the same line."""
    also = f" (and {len(more)} more in the same folder: {', '.join(more)})" if more else ""
    return (
        f"{path}: {why}, and this run would replace it{also}; move {'them' if more else 'it'} elsewhere or choose "
        "another output folder (output: or --output)"
    )


def test_a_users_file_named_like_an_output_is_refused_where_the_manifest_does_not_list_it(out):
    # Before: two.json, which the user saved, was silently replaced (and deleted by the run after).
    (out / "two.json").write_bytes(b"the user's own two.json\n")
    before = snapshot(out)
    with pytest.raises(RagEvalError) as excinfo:
        replace_output_set(out, NEW)
    why = f"not written by rag_eval (the folder's {MANIFEST} does not list it)"
    assert str(excinfo.value) == refusal(out / "two.json", why)
    assert snapshot(out) == before and siblings(out) == ["out"]


@pytest.mark.parametrize("name", ["report.md", "bm25.json", "bm25.run", "comparison.md"])
def test_a_folder_without_manifest_refuses_to_replace_a_users_file(tmp_path, name):
    # The attack: `mkdir u; echo mine > u/report.md; echo mine > u/a.json; rag-eval run --output u` replaced both.
    folder = tmp_path / "u"
    folder.mkdir()
    (folder / "bm25.json").write_bytes(OLDER_RESULTS)  # so that the run file is judged on its own content
    (folder / name).write_bytes(b"mine\n")
    before = snapshot(folder)
    with pytest.raises(RagEvalError) as excinfo:
        replace_output_set(folder, OLDER_SET)
    assert str(excinfo.value) == refusal(folder / name, NOT_RECOGNISED)
    assert snapshot(folder) == before and sorted(os.listdir(tmp_path)) == ["u"]


def test_a_folder_without_manifest_written_by_an_older_rag_eval_is_replaced(tmp_path):
    folder = tmp_path / "reports"
    folder.mkdir()
    older = {
        "report.md": OLDER_REPORT, "bm25.json": OLDER_RESULTS, "bm25.run": OLDER_RUN, "comparison.md": OLDER_COMPARISON
    }
    for name, data in older.items():
        (folder / name).write_bytes(data)
    (folder / "notes.txt").write_bytes(b"mine\n")
    replace_output_set(folder, OLDER_SET)
    assert {name: (folder / name).read_bytes() for name in OLDER_SET} == OLDER_SET
    assert (folder / "notes.txt").read_bytes() == b"mine\n"


@pytest.mark.parametrize(
    "files, refused",
    [
        # A run file tagged with another name (the user's own system's run).
        ({"bm25.json": OLDER_RESULTS, "bm25.run": b"q1 Q0 d1 1 2.0 Anserini\n"}, "bm25.run"),
        # A run file tagged bm25, but no results file of rag_eval's beside it.
        ({"bm25.run": OLDER_RUN}, "bm25.run"),
        ({"bm25.json": b'{"kind": "something else"}\n', "bm25.run": OLDER_RUN}, ("bm25.json", "bm25.run")),
        # A results-like JSON whose kind is not rag_eval's.
        ({"bm25.json": OLDER_RESULTS.replace(b"rag_eval.results", b"my.results")}, "bm25.json"),
        # A markdown file that is not a generated report, a folder, a link to a report.
        ({"report.md": b"# My notes\n\n## Ideas\n"}, "report.md"),
        ({"comparison.md": b"# Regression check: maybe\n"}, "comparison.md"),
        ({"report.md": None}, "report.md"),
        ({"report.md": "link"}, "report.md"),
    ],
)
def test_what_an_older_rag_eval_did_not_write_is_not_mistaken_for_its_output(tmp_path, files, refused):
    folder = tmp_path / "u"
    folder.mkdir()
    (tmp_path / "elsewhere.md").write_bytes(OLDER_REPORT)
    for name, data in files.items():
        if data is None:
            (folder / name).mkdir()
        elif data == "link":
            (folder / name).symlink_to(tmp_path / "elsewhere.md")
        else:
            (folder / name).write_bytes(data)
    before = snapshot(folder)
    with pytest.raises(RagEvalError) as excinfo:
        replace_output_set(folder, OLDER_SET)
    first, *more = (refused,) if isinstance(refused, str) else refused
    assert str(excinfo.value) == refusal(folder / first, NOT_RECOGNISED, *more)
    assert snapshot(folder) == before


def test_a_file_named_like_the_manifest_that_is_not_one_is_refused(tmp_path):
    folder = tmp_path / "u"
    folder.mkdir()
    (folder / MANIFEST).write_bytes(b'{"my": "settings"}\n')
    with pytest.raises(RagEvalError) as excinfo:
        replace_output_set(folder, NEW)
    assert str(excinfo.value) == (
        f"{folder / MANIFEST}: not a manifest rag_eval wrote, and a run would replace it; move it elsewhere or "
        "choose another output folder (output: or --output)"
    )
    assert sorted(os.listdir(folder)) == [MANIFEST]


def test_a_file_saved_while_the_run_retrieves_is_refused_at_the_write(out):
    """`rag-eval run` checks before retrieving; the write checks again under the lock."""
    with output_folder.hold_output_folder(out):
        output_folder.check_replaceable(out, NEW)
        (out / "two.run").write_bytes(b"saved during the run\n")
        with pytest.raises(RagEvalError, match="two.run: not written by rag_eval"):
            replace_output_set(out, NEW)
    assert (out / "two.run").read_bytes() == b"saved during the run\n"
    assert snapshot(out)["report.md"] == OLD["report.md"]


def test_rag_eval_run_refuses_a_users_files_before_any_retrieval_and_keeps_them(tmp_path, capsys):
    from rag_eval.cli import main

    mark = tmp_path / "indexed.mark"
    (tmp_path / "marking_plugin.py").write_text(
        "class Marking:\n"
        "    def index(self, corpus):\n"
        f"        open({str(mark)!r}, 'w').close()\n"
        "    def search(self, queries, top_k):\n"
        "        return {}\n"
    )
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({
        "name": "users-files", "dataset": {"path": str(REPO / "datasets" / "ocean_facts.yaml")},
        "retrievers": [{"label": "a", "adapter": "marking_plugin:Marking"}], "metrics": ["ndcg@4"],
    }))
    users = tmp_path / "u"
    users.mkdir()
    (users / "report.md").write_bytes(b"mine\n")
    (users / "a.json").write_bytes(b"mine\n")
    assert main(["run", str(config), "--output", str(users), "--no-progress"]) == 2
    captured = capsys.readouterr()
    assert captured.err == "rag-eval: error: " + refusal(users / "a.json", NOT_RECOGNISED, "report.md") + "\n"
    assert not mark.exists()  # refused before the retriever indexed anything
    assert snapshot(users) == {"a.json": b"mine\n", "report.md": b"mine\n"}
    assert sorted(os.listdir(tmp_path)) == ["marking_plugin.py", "run.yaml", "u"]


def test_the_committed_example_folder_is_rag_evals_own(tmp_path):
    """reports/ocean-facts/ has a manifest listing every file a run of configs/ocean_facts.yaml writes."""
    example = REPO / "reports" / "ocean-facts"
    names = ["report.md", "seed-ranking.json", "seed-ranking.run", "bm25.json", "bm25.run"]
    output_folder.check_replaceable(example, names)  # no error: the next run may replace them


# ---- issue 20: what a failed run leaves, and a user's folder where a listed file was ------------------------------


def _failing_config(folder: Path, output: str) -> Path:
    """A config whose only retriever fails once it has run (it names a document the corpus lacks)."""
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump({
        "name": "fails", "dataset": {"path": str(REPO / "datasets" / "ocean_facts.yaml")},
        "retrievers": [{"label": "bad", "adapter": "static", "params": {"rankings": {"q-largest-ocean": ["nope"]}}}],
        "metrics": ["ndcg@4"], "output": output,
    }))
    return path


def test_a_failed_run_creates_no_output_folder_nor_its_parents(tmp_path, capsys):
    from rag_eval.cli import main

    assert main(["run", str(_failing_config(tmp_path, "deep/er/out")), "--no-progress"]) == 2
    assert "which is not in the corpus" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["run.yaml"]  # no deep/er/, no lock file


def test_a_failed_run_keeps_parents_that_existed_or_were_filled_meanwhile(tmp_path, capsys):
    from rag_eval.cli import main

    (tmp_path / "deep").mkdir()
    assert main(["run", str(_failing_config(tmp_path, "deep/er/out")), "--no-progress"]) == 2
    capsys.readouterr()
    assert sorted(os.listdir(tmp_path)) == ["deep", "run.yaml"] and os.listdir(tmp_path / "deep") == []


def test_a_run_after_a_kill_between_the_two_renames_puts_the_old_set_back_first(out, monkeypatch, capsys):
    """Two renames (no atomic exchange): killed between them, there is no folder; the next run restores it
    as soon as it holds the folder's lock, so even a run that then fails leaves the old set in place."""
    from rag_eval.cli import main

    aside = out.with_name(".out.rag_eval-old-0123456789abcdef")
    os.rename(out, aside)  # what a kill after "old set moved aside" leaves
    assert not out.exists()
    assert main(["run", str(_failing_config(out.parent, "out")), "--no-progress"]) == 2
    assert "which is not in the corpus" in capsys.readouterr().err
    assert snapshot(out) == expected(OLD) and siblings(out) == ["out", "run.yaml"]


@pytest.mark.parametrize("kind", ["folder", "link"])
def test_a_users_folder_where_a_listed_file_was_is_refused_before_anything_changes(out, kind):
    """The manifest lists one.json; the user replaced it with a folder (or a link): not rag_eval's to replace."""
    (out / "one.json").unlink()
    if kind == "folder":
        (out / "one.json").mkdir()
        (out / "one.json" / "mine.txt").write_bytes(b"mine\n")
    else:
        (out / "one.json").symlink_to("baseline.json")
    before = snapshot(out)
    with pytest.raises(RagEvalError) as excinfo:
        replace_output_set(out, {**NEW, "one.json": b"{}\n"})
    what = "a folder" if kind == "folder" else "a symbolic link"
    why = f"{what} where the file rag_eval wrote was (the folder's {MANIFEST} lists a file)"
    assert str(excinfo.value) == refusal(out / "one.json", why)
    assert snapshot(out) == before and siblings(out) == ["out"]


def test_rag_eval_run_refuses_a_users_folder_where_a_listed_file_was_before_any_retrieval(tmp_path, capsys):
    from rag_eval.cli import main

    config = _config(tmp_path, ["first"])
    assert main(["run", str(config), "--no-progress"]) == 0
    (tmp_path / "out" / "first.run").unlink()
    (tmp_path / "out" / "first.run").mkdir()
    before = snapshot(tmp_path / "out")
    capsys.readouterr()
    assert main(["run", str(config), "--no-progress"]) == 2
    why = f"a folder where the file rag_eval wrote was (the folder's {MANIFEST} lists a file)"
    assert capsys.readouterr().err == "rag-eval: error: " + refusal(tmp_path / "out" / "first.run", why) + "\n"
    assert snapshot(tmp_path / "out") == before and sorted(os.listdir(tmp_path)) == ["out", "run.yaml"]


def test_a_runs_folder_that_lost_its_manifest_is_replaced_and_the_users_files_stay(tmp_path):
    # The attack: a CI artifact without the hidden .rag_eval.json was refused one file per run (six runs:
    # per-query.csv, then plot-at-k.svg, plot-deltas.svg, ...). rag_eval's own outputs are now recognised.
    from rag_eval.cli import main

    config = tmp_path / "run.yaml"
    (tmp_path / "set.yaml").write_text(yaml.safe_dump({
        "corpus": [{"id": "a", "text": "whales sing"}, {"id": "b", "text": "tides turn"}],
        "queries": [{"id": "q1", "text": "whales", "judgements": {"a": 1}},
                    {"id": "q2", "text": "tides", "judgements": {"b": 2}}],
    }))
    config.write_text(yaml.safe_dump({
        "dataset": {"path": "set.yaml"}, "top_k": 2, "metrics": ["ndcg@2"], "output": "out",
        "retrievers": [{"label": "bm25", "adapter": "bm25"},
                       {"label": "seed", "adapter": "static", "params": {"rankings": {"q1": ["b", "a"]}}}],
    }))
    assert main(["run", str(config), "--no-progress"]) == 0
    out = tmp_path / "out"
    written = sorted(os.listdir(out))
    assert {"per-query.csv", "plot-at-k.svg", "plot-deltas.svg", "plot-means.svg", "report.html"} <= set(written)
    (out / MANIFEST).unlink()
    (out / "notes.txt").write_text("mine\n")
    assert main(["run", str(config), "--no-progress"]) == 0
    assert sorted(os.listdir(out)) == sorted([*written, "notes.txt"]) and (out / "notes.txt").read_text() == "mine\n"

    # Without the manifest again, the user's own CSV and SVG in the outputs' places are both named, in one line.
    (out / MANIFEST).unlink()
    (out / "per-query.csv").write_text("a,b\n1,2\n")
    (out / "plot-means.svg").write_text("<svg><title>my plot</title></svg>\n")
    before = snapshot(out)
    with pytest.raises(RagEvalError) as excinfo:
        output_folder.check_replaceable(out, written)
    assert str(excinfo.value) == (
        f"{out / 'per-query.csv'}: {NOT_RECOGNISED}, and this run would replace it (and 1 more in the same folder: "
        "plot-means.svg); move them elsewhere or choose another output folder (output: or --output)"
    )
    assert snapshot(out) == before


def test_tables_and_plots_are_recognised_only_beside_a_report_of_rag_evals(tmp_path):
    # A CSV starting "variant,qid," or a plot-like SVG alone could be anybody's: a report of rag_eval's vouches.
    from rag_eval._core.old_outputs import written_by_old_rag_eval

    folder = tmp_path / "u"
    folder.mkdir()
    (folder / "per-query.csv").write_text("variant,qid,ndcg@10\nbm25,q1,1.0\n")
    (folder / "plot-means.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg">\n<title id="plot-title">x</title>\n')
    (folder / "report.html").write_text("<!DOCTYPE html>\n<html><head><title>mine</title></head></html>\n")
    assert [written_by_old_rag_eval(folder, n) for n in ("per-query.csv", "plot-means.svg", "report.html")] == [
        False, False, False]
    (folder / "report.md").write_bytes(OLDER_REPORT)
    assert [written_by_old_rag_eval(folder, n) for n in ("per-query.csv", "plot-means.svg", "report.html")] == [
        True, True, False]
