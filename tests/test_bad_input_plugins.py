"""Bad plug-ins, adapters and parameters through `rag-eval validate` and `rag-eval run`.

Each case is a config in a temporary folder (the dataset is datasets/ocean_facts.yaml,
by absolute path) whose retriever is wrong in one way. Every command that can see the
problem must exit 2 with one line naming it and no traceback. `validate` never calls a
constructor: where only building can tell (a constructor that raises), validate passes
and the constructor is shown not to have run; `run` then fails with exit 2.
Adapters that name dangerous callables (shutil:rmtree, subprocess:getoutput, os:system,
builtins:exec) must be refused without being called, by both commands.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from rag_eval.cli import main

REPO = Path(__file__).resolve().parents[1]
OCEAN = REPO / "datasets" / "ocean_facts.yaml"
MODULES = ("bad_plugs", "bad_plugs_import", "bad_plugs_exit", "bad_plugs_dep")

PLUGS = '''
from pathlib import Path

from pydantic import Field

from rag_eval._retrievers.params import AdapterParams, check_params

HERE = Path(__file__).parent


def _mark(name):
    (HERE / f"called-{name}").touch()  # proves whether user code ran


def make(**params):
    _mark("make")


class NoSearch:
    def index(self, corpus):
        pass


class Base:
    def __init__(self, boost: float = 1.0):
        _mark(type(self).__name__)
        self.boost = boost

    def index(self, corpus):
        self.ids = sorted(corpus)

    def search(self, queries, top_k):
        return {q: {self.ids[0]: self.boost} for q in queries}


class Raises(Base):
    def __init__(self, **params):
        _mark("Raises")
        raise ValueError("the index folder /data/idx is empty")


class Exits(Base):
    def __init__(self, **params):
        _mark("Exits")
        raise SystemExit(3)


class NeedsRun(Base):
    def __init__(self, run):
        _mark("NeedsRun")


class BadDescribe(Base):
    def describe(self):
        raise RuntimeError("model card missing")


class DescribeList(Base):
    def describe(self):
        return ["not", "a", "dict"]


class ListSearch(Base):
    def search(self, queries, top_k):
        return [1, 2]


class GhostDoc(Base):
    def search(self, queries, top_k):
        return {q: {"ghost-doc": 1.0} for q in queries}


class IndexFails(Base):
    def index(self, corpus):
        raise OSError("disk quota exceeded")


class TypedParams(AdapterParams):
    depth: int = Field(10, ge=1, description="candidates per query")


class Typed(Base):
    Params = TypedParams

    def __init__(self, **params):
        self.settings = check_params(TypedParams, params, "typed")
        _mark("Typed")
'''


@dataclass
class Case:
    """One bad retriever spec and what each command must say."""

    name: str
    retriever: dict[str, Any]
    message: str
    validate_sees_it: bool = True  # False: only building can tell (validate must pass, calling nothing)
    extra_files: dict[str, str] = field(default_factory=dict)


CASES = [
    Case("unknown adapter", {"adapter": "bm52"}, "unknown adapter 'bm52'; did you mean 'bm25'?"),
    Case("malformed import string", {"adapter": ":Thing"},
         "adapter ':Thing' is not of the form 'package.module:Class'"),
    Case("module missing", {"adapter": "no_such_module_xyz:Thing"},
         "no module named 'no_such_module_xyz'; looked in the config's folder '{cfg}', then sys.path: "),
    Case("module needs a missing dependency", {"adapter": "bad_plugs_dep:X"},
         "module 'bad_plugs_dep' needs 'libfake_not_installed', which is not installed",
         extra_files={"bad_plugs_dep.py": "import libfake_not_installed\n"}),
    Case("module raises at import", {"adapter": "bad_plugs_import:X"},
         "importing 'bad_plugs_import' failed: RuntimeError: needs CUDA 99",
         extra_files={"bad_plugs_import.py": "raise RuntimeError('needs CUDA 99')\n"}),
    Case("module exits at import", {"adapter": "bad_plugs_exit:X"},
         "importing 'bad_plugs_exit' failed: SystemExit(4); a plug-in must raise an exception, not exit the process",
         extra_files={"bad_plugs_exit.py": "import sys\nsys.exit(4)\n"}),
    Case("attribute missing", {"adapter": "bad_plugs:Nope"}, "module 'bad_plugs' has no attribute 'Nope'"),
    Case("a function, not a class", {"adapter": "bad_plugs:make", "params": {"x": 1}},
         "adapter 'bad_plugs:make' is the function bad_plugs.make, not a retriever class, so it was not called"),
    Case("a module, not a class", {"adapter": "os:path"}, "adapter 'os:path' is the module posixpath, not a retriever"),
    Case("a class without search", {"adapter": "bad_plugs:NoSearch"},
         "class bad_plugs.NoSearch has no search() method; a retriever class needs index(corpus) and search"),
    Case("unknown parameter", {"adapter": "bad_plugs:Base", "params": {"boots": 2}},
         "adapter 'bad_plugs:Base' has no parameter 'boots' (did you mean 'boost'?); its parameters: boost"),
    Case("missing required parameter", {"adapter": "bad_plugs:NeedsRun"},
         "adapter 'bad_plugs:NeedsRun': missing a required argument: 'run'"),
    Case("param of the wrong type (built-in)", {"adapter": "bm25", "params": {"k1": "high"}},
         "retriever 'bad': params.k1: must be a valid number, got 'high'"),
    Case("param out of range (plug-in's own model)", {"adapter": "bad_plugs:Typed", "params": {"depth": 0}},
         "retriever 'bad': params.depth: must be greater than or equal to 1, got 0"),
    Case("unknown parameter of a nested retriever",
         {"adapter": "hybrid",
          "params": {"retrievers": [{"adapter": "bm25"}, {"adapter": "bm25", "params": {"k": 1}}]}},
         "params.retrievers[1]: adapter 'bm25' has no parameter 'k' (did you mean 'k1'?)"),
    Case("constructor raising", {"adapter": "bad_plugs:Raises"},
         "adapter 'bad_plugs:Raises': bad_plugs.Raises() raised ValueError: the index folder /data/idx is empty",
         validate_sees_it=False),
    Case("constructor raising SystemExit", {"adapter": "bad_plugs:Exits"},
         "bad_plugs.Exits() raised SystemExit(3); a plug-in must raise an exception, not exit the process",
         validate_sees_it=False),
    Case("describe() raising", {"adapter": "bad_plugs:BadDescribe"},
         "retriever 'bad' (bad_plugs:BadDescribe): describe() raised RuntimeError: model card missing",
         validate_sees_it=False),
    Case("describe() returning a list", {"adapter": "bad_plugs:DescribeList"},
         "retriever 'bad' (bad_plugs:DescribeList): describe() returned list; it must return a dict (or None)",
         validate_sees_it=False),
    Case("search() returning a list", {"adapter": "bad_plugs:ListSearch"},
         "retriever 'bad': search() returned list, expected {qid: {doc_id: score}}", validate_sees_it=False),
    Case("search() returning a doc not in the corpus", {"adapter": "bad_plugs:GhostDoc"},
         "returned doc 'ghost-doc', which is not in the corpus", validate_sees_it=False),
    Case("index() raising", {"adapter": "bad_plugs:IndexFails"},
         "failed in index(): OSError: disk quota exceeded", validate_sees_it=False),
    # Dangerous callables: refused before anything is called, by validate and by run.
    Case("shutil:rmtree", {"adapter": "shutil:rmtree", "params": {"path": "{victim}"}},
         "adapter 'shutil:rmtree' is the function shutil.rmtree, not a retriever class, so it was not called"),
    Case("subprocess:getoutput", {"adapter": "subprocess:getoutput", "params": {"cmd": "touch {victim}/pwned"}},
         "adapter 'subprocess:getoutput' is the function subprocess.getoutput, not a retriever class"),
    Case("os:system", {"adapter": "os:system", "params": {"command": "touch {victim}/pwned"}},
         "adapter 'os:system' is the built-in function posix.system, not a retriever class"),
    Case("builtins:exec", {"adapter": "builtins:exec", "params": {"source": "open('{victim}/pwned', 'w')"}},
         "adapter 'builtins:exec' is the built-in function builtins.exec, not a retriever class"),
    Case("rmtree nested in hybrid",
         {"adapter": "hybrid", "params": {"retrievers": [{"adapter": "bm25"},
                                                        {"adapter": "shutil:rmtree", "params": {"path": "{victim}"}}]}},
         "params.retrievers[1]: adapter 'shutil:rmtree' is the function shutil.rmtree, not a retriever class"),
]


@pytest.fixture
def project(tmp_path):
    """A config folder holding the plug-in modules, and a folder that must survive."""
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "bad_plugs.py").write_text(textwrap.dedent(PLUGS), encoding="utf-8")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me")
    yield cfg, victim
    for name in list(sys.modules):
        if name.split(".")[0] in MODULES:
            del sys.modules[name]
    importlib.invalidate_caches()


def _fill(value: Any, **names: str) -> Any:
    if isinstance(value, str):
        return value.format(**names)
    if isinstance(value, list):
        return [_fill(v, **names) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, **names) for k, v in value.items()}
    return value


def write_config(cfg: Path, victim: Path, case: Case) -> Path:
    for name, text in case.extra_files.items():
        (cfg / name).write_text(text, encoding="utf-8")
    retriever = {"label": "bad", **_fill(case.retriever, victim=str(victim), cfg=str(cfg))}
    config = {
        "name": "bad-plugin",
        "dataset": {"path": str(OCEAN)},
        "retrievers": [retriever],
        "metrics": ["ndcg@10"],
        "top_k": 5,
        "output": str(cfg.parent / "out"),
    }
    path = cfg / "run.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def assert_untouched(cfg: Path, victim: Path) -> None:
    assert (victim / "precious.txt").read_text() == "keep me"
    assert not (victim / "pwned").exists()
    assert not (cfg / "pwned").exists()
    assert not (cfg.parent / "out" / "report.md").exists()  # nothing half-written


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_validate(case, project, capsys):
    cfg, victim = project
    path = write_config(cfg, victim, case)
    code = main(["validate", str(path)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    assert_untouched(cfg, victim)
    assert not list(cfg.glob("called-*"))  # validate calls no constructor, ever
    if case.validate_sees_it:
        assert code == 2, captured.out
        assert case.message.replace("{cfg}", str(cfg)) in captured.err
        assert captured.err.splitlines()[-1].startswith("rag-eval: ")
    else:
        assert code == 0, captured.err
        assert ": OK: dataset ocean-facts" in captured.out


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_run(case, project, capsys):
    cfg, victim = project
    path = write_config(cfg, victim, case)
    code = main(["run", str(path), "--no-progress"])
    captured = capsys.readouterr()
    assert code == 2, captured.out
    assert "Traceback" not in captured.err + captured.out
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rag-eval: error: "), captured.err
    assert case.message.replace("{cfg}", str(cfg)) in lines[0]
    assert_untouched(cfg, victim)
    if case.validate_sees_it:
        assert not list(cfg.glob("called-*"))  # refused before any user code ran
