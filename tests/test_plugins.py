"""Plug-ins: a user's class by import string, an installed package's entry point, loud failures."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rag_eval.errors import RetrieverError
from rag_eval.retrievers import registry

PLUGIN_PKG = Path(__file__).resolve().parent / "plugin_pkg"

CORPUS = {
    "d1": {"title": "Pacific", "text": "the pacific ocean is the largest ocean"},
    "d2": {"title": "", "text": "the atlantic ocean"},
    "d3": {"title": "", "text": "coral reef"},
}


@pytest.fixture
def forget_modules():
    """Drop modules a test imported from tmp_path, so no test sees another's copy."""
    names: list[str] = []
    yield names
    for name in list(sys.modules):
        if any(name == n or name.startswith(n + ".") for n in names):
            del sys.modules[name]
    importlib.invalidate_caches()


def write_module(folder: Path, name: str, source: str) -> None:
    (folder / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")


def test_users_own_class_by_import_string(tmp_path, monkeypatch, forget_modules):
    write_module(
        tmp_path,
        "my_team_search",
        """
        class LengthRetriever:
            '''Prefers short passages; needs nothing from rag_eval.'''

            def __init__(self, penalty=1.0):
                self.penalty = penalty

            def index(self, corpus):
                self.lengths = {d: len(p["text"].split()) for d, p in corpus.items()}

            def search(self, queries, top_k):
                ranked = sorted(self.lengths.items(), key=lambda kv: (kv[1], kv[0]))[:top_k]
                return {q: {d: -self.penalty * n for d, n in ranked} for q in queries}
        """,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    forget_modules.append("my_team_search")
    retriever = registry.build("my_team_search:LengthRetriever", {"penalty": 2.0})
    retriever.index(CORPUS)
    assert retriever.search({"q": "anything"}, 2) == {"q": {"d3": -4.0, "d2": -6.0}}

    with pytest.raises(RetrieverError, match=r"has no parameter 'penalt' \(did you mean 'penalty'\?\)"):
        registry.build("my_team_search:LengthRetriever", {"penalt": 1})
    with pytest.raises(RetrieverError, match="module 'my_team_search' has no attribute 'Nope'"):
        registry.build("my_team_search:Nope")
    # and it composes: a hybrid of the user's class and itself
    fused = registry.build(
        "hybrid",
        {"retrievers": [{"adapter": "my_team_search:LengthRetriever"}, {"adapter": "my_team_search:LengthRetriever"}]},
    )
    fused.index(CORPUS)
    assert fused.search({"q": "?"}, 1) == {"q": {"d3": pytest.approx(2 / 61)}}


def test_a_plugin_whose_import_raises_fails_loudly(tmp_path, monkeypatch, forget_modules):
    write_module(tmp_path, "broken_search", "import json\nraise RuntimeError('GPU driver 999 required')\n")
    write_module(tmp_path, "methodless_search", "class Half:\n    def index(self, corpus):\n        pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    forget_modules.extend(["broken_search", "methodless_search"])
    with pytest.raises(RetrieverError) as caught:
        registry.build("broken_search:Retriever")
    assert "importing 'broken_search' failed: RuntimeError: GPU driver 999 required" in str(caught.value)
    assert isinstance(caught.value.__cause__, RuntimeError)
    with pytest.raises(RetrieverError, match="has no search\\(\\) method"):
        registry.build("methodless_search:Half")
    with pytest.raises(RetrieverError, match="cannot import module 'no_such_module_xyz'"):
        registry.build("no_such_module_xyz:Thing")


@pytest.fixture(scope="module")
def installed_plugin(tmp_path_factory):
    """tests/plugin_pkg installed with pip into a private folder (no network: no deps, no isolation)."""
    root = tmp_path_factory.mktemp("plugin")
    source = shutil.copytree(PLUGIN_PKG, root / "src")  # pip builds in place: keep the repo clean
    target = root / "site"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
         "--disable-pip-version-check", "--quiet", "--target", str(target), str(source)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return target


@pytest.fixture
def plugin_on_path(installed_plugin, monkeypatch, forget_modules):
    monkeypatch.syspath_prepend(str(installed_plugin))
    importlib.invalidate_caches()
    forget_modules.append("rag_eval_fake_plugin")
    return installed_plugin


def test_installed_package_is_found_through_its_entry_point(plugin_on_path):
    assert {"fake-keyword", "fake-broken"} <= set(registry.known_names())
    retriever = registry.build("fake-keyword", {"boost": 0.5})
    retriever.index(CORPUS)
    assert retriever.search({"q": "ocean"}, 5) == {"q": {"d1": 1.0, "d2": 0.5}}
    assert registry.resolve("fake-keyword").__module__ == "rag_eval_fake_plugin"
    with pytest.raises(RetrieverError, match="did you mean 'fake-keyword'"):
        registry.build("fake-keywords")


def test_installed_package_with_a_broken_entry_point_fails_loudly(plugin_on_path):
    with pytest.raises(RetrieverError) as caught:
        registry.build("fake-broken")
    message = str(caught.value)
    assert "plug-in retriever 'fake-broken'" in message
    assert "rag_eval_fake_plugin.broken:BrokenRetriever" in message
    assert "ImportError: rag_eval_fake_plugin.broken needs the library 'libfake'" in message
    assert isinstance(caught.value.__cause__, ImportError)


def test_entry_points_are_gone_without_the_package():
    assert "fake-keyword" not in registry.known_names()


@pytest.mark.parametrize(
    "name, guess",
    [("dens", "dense"), ("bm52", "bm25"), ("cross-encoder", "cross_encoder"), ("hybird", "hybrid")],
)
def test_unknown_adapter_names_get_a_suggestion(name, guess):
    with pytest.raises(RetrieverError) as caught:
        registry.build(name)
    assert f"unknown adapter {name!r}; did you mean {guess!r}?" in str(caught.value)
    assert "import string" in str(caught.value)
