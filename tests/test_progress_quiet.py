"""`--no-progress` silences every bar, the libraries' own included (issue 20, item 19).

A dense run with ``--no-progress`` still printed sentence-transformers' "Batches" bars and
transformers' "Loading weights" bar on stderr. The run's progress setting now reaches the
encoding libraries (rag_eval._models.progress): show_progress_bar, transformers' and
huggingface_hub's bars.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import _models
import pytest

from rag_eval._models.progress import library_bars, progress_wanted, showing_progress, tqdm_disable
from rag_eval._retrievers.dense import DenseRetriever

REPO = Path(__file__).resolve().parents[1]
CORPUS = {"d1": {"title": "", "text": "the pacific is the largest ocean"}, "d2": {"title": "", "text": "a whale"}}
BARS = ("Batches", "Loading weights", "Encoding", "it/s]", "%|")


def _dense_run(tmp_path: Path) -> None:
    retriever = DenseRetriever(model=str(_models.tiny_bi_encoder()), device="cpu", cache_dir=str(tmp_path / "cache"))
    assert retriever.show_progress is True  # the default: bars, unless the run says no
    retriever.index(CORPUS)
    retriever.search({"q": "largest ocean"}, top_k=2)


def test_a_dense_retriever_inside_a_run_without_progress_prints_no_bar(tmp_path, capfd):
    _models.tiny_bi_encoder()  # built (and its own bars printed) before the capture below
    capfd.readouterr()
    with showing_progress(False):
        _dense_run(tmp_path)
    err = capfd.readouterr().err
    assert not [bar for bar in BARS if bar in err], err


def test_the_settings_of_a_run(tmp_path):
    assert (progress_wanted(True), progress_wanted(False), tqdm_disable()) == (True, False, None)
    with showing_progress(False):
        assert (progress_wanted(True), tqdm_disable()) == (False, True)
        with showing_progress(None):  # nested: the inner run decides
            assert progress_wanted(True) is True
    with showing_progress(True):
        assert (progress_wanted(True), progress_wanted(False), tqdm_disable()) == (True, False, False)


def test_library_bars_are_restored_after_the_block():
    transformers_logging = pytest.importorskip("transformers.utils.logging")
    from huggingface_hub import utils as hub

    assert transformers_logging.is_progress_bar_enabled() and not hub.are_progress_bars_disabled()
    with library_bars(False):
        assert not transformers_logging.is_progress_bar_enabled() and hub.are_progress_bars_disabled()
    assert transformers_logging.is_progress_bar_enabled() and not hub.are_progress_bars_disabled()
    with library_bars(True):
        assert transformers_logging.is_progress_bar_enabled()


def test_rag_eval_run_no_progress_prints_no_bar_of_any_library(tmp_path):
    """The issue's check: stderr of a real dense run (all-MiniLM-L6-v2, empty cache) with --no-progress."""
    config = tmp_path / "run.yaml"
    config.write_text(
        f"dataset: {{path: {REPO / 'datasets' / 'ocean_facts.yaml'}}}\nmetrics: [ndcg@10]\n"
        "retrievers: [{label: dense, adapter: dense, params: {model: all-MiniLM-L6-v2, device: cpu, "
        f"cache_dir: {tmp_path / 'cache'}}}}}]\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "rag_eval", "run", str(config), "--output", str(tmp_path / "out"), "--no-progress"],
        capture_output=True, text=True, timeout=300, cwd=REPO, check=False,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("dense\tndcg@10\t")
    assert done.stderr == "", done.stderr


@pytest.mark.parametrize("flags", [["--no-progress"], []], ids=["no-progress", "stderr-not-a-terminal"])
def test_a_rerun_without_progress_imports_no_bar_library_and_no_integration(tmp_path, flags):
    """--no-progress needs no tqdm (nor the asyncio tqdm.auto pulls in), nor does a run whose stderr is not a
    terminal (tqdm would show no bar there: here a pipe), and a run without integrations never imports their
    modules just to check whether a retriever is one of theirs. Measured on a rerun whose ranking comes from
    the cache: bm25s itself imports tqdm when it runs."""
    config = tmp_path / "run.yaml"
    config.write_text(
        f"dataset: {{path: {REPO / 'datasets' / 'ocean_facts.yaml'}}}\n"
        "retrievers: [{label: bm25, adapter: bm25}]\nmetrics: [ndcg@4]\noutput: out\n",
        encoding="utf-8",
    )
    probe = (
        "import sys\nfrom rag_eval.cli import main\n"
        "try:\n    main(['run', *sys.argv[1:]])\nexcept SystemExit as done:\n    assert not done.code, done\n"
        "names = ('tqdm', 'asyncio', 'bm25s', 'rag_eval._retrievers.external.vector_db',\n"
        "         'rag_eval._retrievers.external.by_text')\n"
        "print(sorted(name for name in names if name in sys.modules))\n"
    )
    env = {**os.environ, "RAG_EVAL_CACHE_DIR": str(tmp_path / "cache")}
    runs = [subprocess.run([sys.executable, "-c", probe, str(config), *flags], capture_output=True, text=True, cwd=tmp_path,
                           env=env, timeout=120, check=False) for _ in range(2)]
    assert all(done.returncode == 0 for done in runs), [done.stderr for done in runs]
    assert runs[0].stdout.splitlines()[-1] == "['asyncio', 'bm25s', 'tqdm']", runs[0].stdout  # bm25 ran
    assert runs[1].stdout.splitlines()[-1] == "[]", runs[1].stdout  # the ranking reused: nothing of the kind
