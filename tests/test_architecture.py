"""The layers of docs/architecture.md, held: every import goes down (or stays in its layer), no cycle.

Every ``import`` counts: at module level, inside functions and under ``TYPE_CHECKING``.
A lazy import (inside a function) is allowed only for the heavy optional libraries listed
in docs/architecture.md; everything else is imported at the top of its module, where the
order can be seen. There is no exception list.
"""

from __future__ import annotations

import ast
import functools
import re
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "rag_eval"
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"

# Bottom to top; a module may import from its own layer and the layers below it.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("core", ("rag_eval._core",)),
    ("scoring", ("rag_eval._scoring",)),
    ("data", ("rag_eval._data",)),
    ("models", ("rag_eval._models",)),
    ("execution", ("rag_eval._execution",)),
    ("retrievers", ("rag_eval._retrievers",)),
    ("run", ("rag_eval._run",)),
    ("compare", ("rag_eval._compare",)),
    ("report", ("rag_eval._report",)),
    ("commands", ("rag_eval._commands",)),
    ("faces", ("rag_eval", "rag_eval.cli", "rag_eval.testing", "rag_eval.extend", "rag_eval.__main__")),
]

# Imported inside functions only: what would make `import rag_eval` or `rag-eval --help` slow or
# need an optional extra. Platform modules (fcntl, msvcrt) are imported where the platform has them.
LAZY_ALLOWED = frozenset(
    {
        "torch", "transformers", "sentence_transformers", "tokenizers", "huggingface_hub", "safetensors",
        "onnx", "onnxruntime", "openvino", "faiss", "ray", "pyarrow", "pandas",
        "bm25s", "Stemmer", "markdown_it", "tqdm", "fcntl", "msvcrt",
        # database clients and frameworks of the integrations (optional extras)
        "psycopg", "pgvector", "pgserver", "qdrant_client", "chromadb", "lancedb", "langchain_core",
        "llama_index", "haystack",
        # judging: YAML rewritten with its comments (judgements merge)
        "ruamel",
    }
)


def _modules() -> dict[str, Path]:
    return {
        ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): path
        for path in PACKAGE.rglob("*.py")
    }


MODULES = _modules()


def _layer(module: str) -> int:
    for index, (_, prefixes) in reversed(list(enumerate(LAYERS))):
        for prefix in prefixes:
            if index == len(LAYERS) - 1 and module == prefix:
                return index
            if index < len(LAYERS) - 1 and (module == prefix or module.startswith(prefix + ".")):
                return index
    raise AssertionError(f"{module} is in no layer of docs/architecture.md; put it in a layer's package")


@functools.cache  # each module parsed once for all the tests below, and not while the tests are collected
def _imports(module: str) -> tuple[tuple[str, int, bool, str], ...]:
    """(imported rag_eval module or outside top-level name, line, inside a function, statement kind)."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inside.update(id(child) for child in ast.walk(node) if child is not node)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for name in names:
            if name == "rag_eval" or name.startswith("rag_eval."):
                while name not in MODULES:
                    name = name.rpartition(".")[0]
            found.append((name, node.lineno, id(node) in inside, type(node).__name__))
    return tuple(found)


@functools.cache
def _graph() -> dict[str, set[str]]:
    """Every import between the package's modules, those inside functions included: module -> imported modules."""
    graph: dict[str, set[str]] = defaultdict(set)
    for module in MODULES:
        for target, *_ in _imports(module):
            if target in MODULES and target != module:
                graph[module].add(target)
    return graph


def test_every_module_sits_in_a_layer_and_imports_only_downward():
    wrong = []
    for module in sorted(MODULES):
        own = _layer(module)
        for target, line, _, _ in _imports(module):
            if target in MODULES and target != module and _layer(target) > own:
                wrong.append(
                    f"{MODULES[module].relative_to(PACKAGE.parent)}:{line}: {module} ({LAYERS[own][0]}) imports "
                    f"{target} ({LAYERS[_layer(target)][0]})"
                )
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


def _cycles() -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(_graph().get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(MODULES):
        if module not in index:
            visit(module)
    return found


def test_no_import_cycle_counting_every_import():
    assert _cycles() == []


def test_the_cycle_finder_sees_a_cycle(monkeypatch):
    # The check above would pass vacuously if the graph were empty or the finder blind.
    graph = _graph()
    assert sum(len(targets) for targets in graph.values()) > 300
    monkeypatch.setitem(graph, "rag_eval._core.errors", graph["rag_eval._core.errors"] | {"rag_eval._core.files"})
    assert ["rag_eval._core.errors", "rag_eval._core.files"] in _cycles()


def test_imports_inside_functions_are_only_of_heavy_optional_libraries():
    lazy = []
    for module in sorted(MODULES):
        for target, line, in_function, _ in _imports(module):
            if in_function and target.split(".")[0] not in LAZY_ALLOWED:
                lazy.append(f"{MODULES[module].relative_to(PACKAGE.parent)}:{line}: {target}")
    assert not lazy, "import these at the top of the module (or add a heavy library to the list):\n" + "\n".join(lazy)


def test_the_document_lists_the_same_layers_and_heavy_libraries():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\w+) \| ([^|]+) \|", text, flags=re.M)
    documented = [(name, tuple(re.findall(r"`([\w.]+)`", packages))) for name, packages in rows if name != "layer"]
    assert documented == list(reversed(LAYERS))
    listed = set(re.findall(r"`([\w]+)`", text.split("## Lazy imports", 1)[1].split("\n## ", 1)[0]))
    assert listed == set(LAZY_ALLOWED)


def test_below_the_faces_everything_is_private_by_name():
    public = [m for m in sorted(MODULES) if _layer(m) < len(LAYERS) - 1 and not m.split(".")[1].startswith("_")]
    assert public == [], "a module below the faces lives in a private package (the public API and rag_eval.extend are the faces)"


def test_the_cli_dispatch_table_names_only_command_modules():
    # rag_eval.cli imports a command's module with importlib when that command runs (the one dynamic
    # import, docs/architecture.md): each must be a module of rag_eval._commands, so the layers still hold.
    tree = ast.parse((PACKAGE / "cli.py").read_text(encoding="utf-8"))
    (table,) = [
        node.value for node in tree.body
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["COMMANDS"]
    ]
    commands = ast.literal_eval(table)
    assert commands and set(commands) >= {"evaluate", "run", "validate", "compare", "schema"}
    for command, module in commands.items():
        assert f"rag_eval._commands.{module}" in MODULES, f"{command}: rag_eval._commands.{module} does not exist"
        assert _layer(f"rag_eval._commands.{module}") == [name for name, _ in LAYERS].index("commands")
    calls = [ast.unparse(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)]
    assert calls.count("importlib.import_module") == 1  # the dispatch, and no other dynamic import in the CLI
