"""Plug-ins: a user's class by import string, an installed package's entry point, loud failures."""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rag_eval._core.errors import RetrieverError
from rag_eval._core.plugins import config_folder
from rag_eval._data.config import adapters
from rag_eval._retrievers import registry

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
    with pytest.raises(RetrieverError, match="class methodless_search.Half has no search\\(\\) method"):
        registry.build("methodless_search:Half")
    with pytest.raises(RetrieverError, match="no module named 'no_such_module_xyz'; looked in sys.path: "):
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
        capture_output=True, text=True, timeout=300, check=False,
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
    assert {"fake-keyword", "fake-broken"} <= set(adapters.known_names())
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


def test_an_entry_point_may_name_a_factory_function(plugin_on_path):
    # Registered by its package, a function is a retriever factory (an import string naming one is refused).
    retriever = registry.build("fake-factory", {"boost": 0.5})
    retriever.index(CORPUS)
    assert retriever.search({"q": "ocean"}, 5) == {"q": {"d1": 2.0, "d2": 1.0}}
    with pytest.raises(RetrieverError, match="is the function rag_eval_fake_plugin.make_keyword_retriever, not a"):
        registry.resolve("rag_eval_fake_plugin:make_keyword_retriever")


def test_entry_points_are_read_afresh_not_cached(installed_plugin, monkeypatch, forget_modules):
    # A registry that cached the entry points would keep (or never see) an installed plug-in.
    forget_modules.append("rag_eval_fake_plugin")
    assert "fake-keyword" not in adapters.known_names()
    with monkeypatch.context() as patch:
        patch.syspath_prepend(str(installed_plugin))
        importlib.invalidate_caches()
        assert "fake-keyword" in adapters.known_names()
    importlib.invalidate_caches()
    assert "fake-keyword" not in adapters.known_names()
    with pytest.raises(RetrieverError, match="unknown adapter 'fake-keyword'"):
        registry.resolve("fake-keyword")


@pytest.mark.parametrize(
    "name, guess",
    [("dens", "dense"), ("bm52", "bm25"), ("cross-encoder", "cross_encoder"), ("hybird", "hybrid")],
)
def test_unknown_adapter_names_get_a_suggestion(name, guess):
    with pytest.raises(RetrieverError) as caught:
        registry.build(name)
    assert f"unknown adapter {name!r}; did you mean {guess!r}?" in str(caught.value)
    assert "import string" in str(caught.value)


# --------------------------------------------------------------------------- through the CLI

REPO = Path(__file__).resolve().parents[1]
OCEAN = REPO / "datasets" / "ocean_facts.yaml"


def write_config(folder: Path, retrievers: list[dict], **extra) -> Path:
    import yaml

    config = {"name": "plugins", "dataset": {"path": str(OCEAN)}, "retrievers": retrievers,
              "metrics": ["ndcg@10"], "top_k": 5, "output": str(folder / "out"), **extra}
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


COUNTING = """
from pathlib import Path

CALLS = Path(__file__).with_name("calls.txt")


def _log(what):
    with open(CALLS, "a") as handle:
        handle.write(what + "\\n")


class FirstDoc:
    '''Returns the corpus's greatest doc id for every query; logs every call.'''

    def __init__(self, score=1.0):
        _log("init")
        self.score = score

    def index(self, corpus):
        _log("index")
        self.best = max(corpus)

    def search(self, queries, top_k):
        _log("search")
        return {q: {self.best: self.score} for q in queries}
"""


def test_a_module_beside_the_config_is_found_and_validate_calls_nothing(tmp_path, capsys, forget_modules):
    cfg = tmp_path / "configs"
    cfg.mkdir()
    write_module(cfg, "beside_search", COUNTING)
    forget_modules.append("beside_search")
    path = write_config(cfg, [{"label": "mine", "adapter": "beside_search:FirstDoc", "params": {"score": 2.5}}])
    path_before = list(sys.path)

    from rag_eval.cli import main

    assert main(["validate", str(path)]) == 0, capsys.readouterr().err
    assert ": OK: dataset ocean-facts" in capsys.readouterr().out
    assert not (cfg / "calls.txt").exists()  # resolved and checked, never instantiated
    assert sys.path == path_before  # the folder was on sys.path for the import only

    assert main(["run", str(path), "--no-progress"]) == 0, capsys.readouterr().err
    assert (cfg / "calls.txt").read_text().split() == ["init", "index", "search"]
    ranking = json.loads((cfg / "out" / "mine.json").read_text())["rankings"]
    assert len(ranking) == 10
    assert {q: [row[:2] for row in rows] for q, rows in ranking.items()} == {
        q: [["southern-ocean-fifth", 2.5]] for q in ranking  # the corpus's greatest id, with the given score
    }
    assert sys.path == path_before


def test_a_missing_module_says_where_python_looked(tmp_path, capsys):
    path = write_config(tmp_path, [{"label": "mine", "adapter": "not_beside_anything:Mine"}])
    from rag_eval.cli import main

    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.splitlines()[0]
    assert err.startswith(f"{path}: retriever 'mine': adapter 'not_beside_anything:Mine': no module named ")
    assert f"looked in the config's folder {str(tmp_path.resolve())!r}, then sys.path: {sys.path[0]!r}" in err
    assert "put not_beside_anything.py beside the config" in err


@pytest.mark.parametrize("command", ["validate", "run"])
def test_naming_a_destructive_function_calls_nothing(tmp_path, capsys, command):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("data")
    path = write_config(tmp_path, [
        {"label": "wipe", "adapter": "shutil:rmtree", "params": {"path": str(victim)}},
        {"label": "shell", "adapter": "subprocess:getoutput", "params": {"cmd": f"touch {victim}/pwned"}},
    ])
    from rag_eval.cli import main

    args = [command, str(path)] + (["--no-progress"] if command == "run" else [])
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert (victim / "keep.txt").read_text() == "data" and not (victim / "pwned").exists()
    assert ("retriever 'wipe': adapter 'shutil:rmtree' is the function shutil.rmtree, not a retriever class, "
            "so it was not called") in err
    if command == "validate":  # every problem listed
        assert "retriever 'shell': adapter 'subprocess:getoutput' is the function subprocess.getoutput" in err


def test_a_marked_factory_function_is_a_retriever(tmp_path, forget_modules):
    write_module(tmp_path, "factory_search", COUNTING + """

from rag_eval.extend import retriever_factory


@retriever_factory
def make(score=1.0):
    return FirstDoc(score=score * 2)


def unmarked(score=1.0):
    return FirstDoc(score=score)
""")
    forget_modules.append("factory_search")
    with config_folder(tmp_path):
        registry.check("factory_search:make", {"score": 1.5})
        assert not (tmp_path / "calls.txt").exists()
        retriever = registry.build("factory_search:make", {"score": 1.5})
        assert retriever.score == 3.0
        with pytest.raises(RetrieverError, match="has no parameter 'scor' \\(did you mean 'score'\\?\\)"):
            registry.check("factory_search:make", {"scor": 1})
        with pytest.raises(RetrieverError, match="is the function factory_search.unmarked, not a retriever class"):
            registry.check("factory_search:unmarked")


def test_describe_raising_is_one_line_naming_the_retriever():
    from rag_eval._retrievers.base import describe

    class Broken:
        def describe(self):
            raise KeyError("weights")

    with pytest.raises(RetrieverError) as caught:
        describe(Broken(), label="mine")
    assert str(caught.value) == (
        f"retriever 'mine' ({__name__}:test_describe_raising_is_one_line_naming_the_retriever.<locals>.Broken): "
        "describe() raised KeyError: 'weights'; describe() must return a dict (or None)"
    )

    class Quiet:
        def describe(self):
            return None

    assert describe(Quiet()) == {"class": f"{__name__}:{Quiet.__qualname__}"}


def test_the_documented_example_plugin_runs_end_to_end(tmp_path, capsys, forget_modules):
    """docs/examples/keyword_search.yaml through `rag-eval run`, its numbers checked independently."""
    from rag_eval._data.datasets import load_yaml_query_set
    from rag_eval._scoring.evaluate import evaluate
    from rag_eval.cli import main

    forget_modules.append("keyword_search")
    config = REPO / "docs" / "examples" / "keyword_search.yaml"
    assert main(["validate", str(config)]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["run", str(config), "--output", str(tmp_path / "out"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    results = json.loads((tmp_path / "out" / "keyword.json").read_text())
    assert results["retriever"]["description"]["title_weight"] == 2.0

    # the same plug-in, imported and called by hand, evaluated by the library
    sys.path.insert(0, str(config.parent))
    try:
        module = importlib.import_module("keyword_search")
    finally:
        sys.path.remove(str(config.parent))
    dataset = load_yaml_query_set(OCEAN)
    plugin = module.KeywordRetriever(min_word_length=2, title_weight=2.0)
    plugin.index(dataset.corpus)
    ranking = plugin.search(dataset.query_texts(), 10)
    want = evaluate(dataset.judgements, ranking, ["ndcg@10"]).aggregate["ndcg@10"]
    assert results["results"]["aggregate"]["ndcg@10"] == want
    assert f"keyword\tndcg@10\t{want:.4f}" in out
    assert 0.5 < want < 1.0  # the example really retrieves (ocean facts are easy for keywords)
