"""The documents a new user reads say what the code does.

* docs/config.md is generated from the config models; it must equal
  ``render_config_reference()``. When it does not, regenerate it:
  ``.venv/bin/python -m rag_eval._commands.reference > docs/config.md``.
* Every python block of README.md and docs/semantics.md runs, and prints exactly
  the ```text block shown under it.
* The claims the documents make in prose (trec_eval equality and its exceptions, the
  id rule, the strict config checks, links, the README's commands) are checked here
  against the code or against trec_eval itself (pytrec_eval).
"""

from __future__ import annotations

import argparse
import json
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from _pytrec import pytrec_values

import rag_eval
from rag_eval._commands.reference import FIELD_NOTES, render_config_reference, stale_notes, undocumented_fields
from rag_eval._core.ids import id_problem
from rag_eval._data.config.schema import RunConfig
from rag_eval._data.config.sections import EvaluationSpec
from rag_eval.cli import build_parser, main

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
REGENERATE = ".venv/bin/python -m rag_eval._commands.reference > docs/config.md"


def blocks(path: Path) -> list[tuple[str, str]]:
    """(language, body) of every fenced code block, in order."""
    return re.findall(r"^```(\w*)\n(.*?)^```", path.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)


def python_examples(path: Path) -> list[tuple[str, str | None]]:
    """(code, the text block right after it or None) of every python block."""
    found = blocks(path)
    return [
        (body, found[i + 1][1] if i + 1 < len(found) and found[i + 1][0] == "text" else None)
        for i, (language, body) in enumerate(found)
        if language == "python"
    ]


EXAMPLES = [
    pytest.param(path, index, id=f"{path.name}-{index}")
    for path in (README, DOCS / "semantics.md", DOCS / "documents.md")
    for index in range(len(python_examples(path)))
]


# ---- docs/config.md ------------------------------------------------------------------------


def test_config_reference_is_generated_from_the_models():
    text = (DOCS / "config.md").read_text(encoding="utf-8")
    assert text == render_config_reference(), f"docs/config.md is out of date; regenerate it: {REGENERATE}"


def test_every_config_field_is_described_once():
    assert undocumented_fields() == [], "give these fields a Field(description=...) in their model (rag_eval/_data/config/)"
    # A note for a field that has its own description is a second home for the same text.
    assert stale_notes() == [], "remove these keys from FIELD_NOTES in rag_eval/_commands/reference.py"
    assert FIELD_NOTES  # the check above is not vacuous while notes exist


def test_config_reference_lists_every_key_and_its_limits():
    text = render_config_reference()
    for section in ("dataset", "retrievers", "evaluation", "report", "regression", "regression-gates-metric"):
        assert f'<a id="{section}"></a>' in text
    # Every field of every section is a row, with its type and default read from the model.
    assert "| `top_k` | integer, ≥ 1 | `100` |" in text
    assert "| `no_relevant` | one of `skip`, `zero`, `error` | `skip` |" in text
    assert "| `confidence` | number, > 0, < 1 | `0.95` |" in text
    assert "| `retrievers` | list of mapping (see [below](#retrievers)), at least 1 item | **required** |" in text
    assert "### `bm25`" in text and "### `static`" in text and "### `hybrid`" in text


def test_schema_command_prints_the_reference(capsys):
    assert main(["schema"]) == 0
    assert capsys.readouterr().out == render_config_reference()


def test_schema_command_json_is_the_json_schema(capsys):
    assert main(["schema", "--format", "json"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema == RunConfig.model_json_schema()
    assert schema["required"] == ["dataset", "retrievers", "metrics"]
    assert schema["additionalProperties"] is False


# What `rag-eval --help` and `rag-eval evaluate` must not load: the config schema and what it stands on
# (pydantic, YAML), and the heavy libraries. Each command's module is imported only when it runs.
HEAVY_FOR_THE_LIGHT_COMMANDS = ("pydantic", "yaml", "rag_eval._data.config.schema", "torch", "pandas")


@pytest.mark.parametrize("argv", [["--help"], ["evaluate", "--help"], ["schema", "--help"], ["evaluate"]])
def test_help_and_evaluate_load_no_schema_pydantic_yaml_torch_or_pandas(tmp_path, argv):
    if argv == ["evaluate"]:
        (tmp_path / "judged.qrels").write_text("q1 0 a 1\nq1 0 b 0\nq2 0 c 2\n")
        (tmp_path / "ranked.run").write_text("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\nq2 Q0 c 1 1.0 t\n")
        argv = ["evaluate", "--qrels", str(tmp_path / "judged.qrels"), "--run", str(tmp_path / "ranked.run"),
                "-m", "ndcg@10", "-m", "map", "--per-query"]
    code = (
        "import sys\n"
        "from rag_eval.cli import main\n"
        f"code = main({argv!r})\n"
        f"heavy = sorted(m for m in {HEAVY_FOR_THE_LIGHT_COMMANDS!r} if m in sys.modules)\n"
        "print('LOADED', code, heavy)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "LOADED 0 []", (argv, done.stdout, done.stderr)


def test_the_probe_above_sees_the_schema_where_it_is_loaded():
    # Not vacuous: `rag-eval validate` does load the schema (and pydantic) in the same probe.
    code = (
        "import sys\n"
        "from rag_eval.cli import main\n"
        "main(['validate', 'no-such-config.yaml'])\n"
        f"print(sorted(m for m in {HEAVY_FOR_THE_LIGHT_COMMANDS!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert "'rag_eval._data.config.schema'" in done.stdout and "'pydantic'" in done.stdout, done.stdout


def test_config_example_is_a_valid_config():
    (example,) = [body for language, body in blocks(DOCS / "config.md") if language == "yaml"]
    model = RunConfig.model_validate(yaml.safe_load(example))
    assert [r.label for r in model.retrievers] == ["bm25", "mine"]
    assert model.evaluation.no_relevant == "zero"


@pytest.mark.parametrize(
    "change, message",
    [
        ({"top_k": "10"}, "top_k"),
        ({"top_k": True}, "top_k"),  # YAML's `yes`
        ({"tpo_k": 10}, "tpo_k"),
        ({"retrievers": [{"label": "a", "adapter": "bm25"}, {"label": "a", "adapter": "bm25"}]}, "unique"),
        ({"main_metric": "map"}, "main_metric"),
        ({"regression": {"baseline": "b.json", "gates": {"map": {}}}}, "gate"),
        ({"regression": {"baseline": "b.json", "gates": {"ndcg@10": {}}, "retriever": "x"}}, "retriever"),
        ({"dataset": {"format": "trec", "qrels": "q.txt"}}, "queries"),
        ({"dataset": {"format": "beir"}}, "path"),
    ],
)
def test_config_rules_the_reference_states(change, message):
    """docs/config.md: strict types, unknown keys, and the rules that span fields (MODEL_NOTES)."""
    from pydantic import ValidationError

    raw = {"dataset": {"path": "set.yaml"}, "retrievers": [{"label": "a", "adapter": "bm25"}], "metrics": ["ndcg@10"]}
    RunConfig.model_validate(raw)  # the base is valid
    with pytest.raises(ValidationError, match=re.escape(message)):
        RunConfig.model_validate({**raw, **change})


def test_a_whole_number_is_accepted_where_a_number_is_expected():
    assert EvaluationSpec.model_validate({"relevance_threshold": 2}).relevance_threshold == 2.0


# ---- python examples ----------------------------------------------------------------------


@pytest.mark.parametrize("path, index", EXAMPLES)
def test_python_example_prints_what_the_document_shows(path, index, tmp_path, capsys):
    code, shown = python_examples(path)[index]
    assert shown is not None, f"{path.name}: python block {index} has no ```text block with its output after it"
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    runpy.run_path(str(script), run_name="__main__")
    assert capsys.readouterr().out == shown


def test_examples_are_collected():
    assert len(python_examples(README)) == 1
    assert len(python_examples(DOCS / "semantics.md")) >= 8


def test_semantics_evaluation_block_is_a_valid_section():
    (block,) = [body for language, body in blocks(DOCS / "semantics.md") if language == "yaml"]
    spec = EvaluationSpec.model_validate(yaml.safe_load(block)["evaluation"])
    assert spec.no_relevant == "zero"
    # The table of options in semantics.md lists the model's defaults first.
    text = (DOCS / "semantics.md").read_text(encoding="utf-8")
    defaults = EvaluationSpec()
    assert f"| `gain` | `{defaults.gain}`," in text
    assert f"| `aggregation` | `{defaults.aggregation}`," in text
    assert f"| `no_relevant` | `{defaults.no_relevant}`," in text
    assert f"| `relevance_threshold` | `{defaults.relevance_threshold:g}` (any number > 0)" in text


# ---- claims about trec_eval, checked against trec_eval (pytrec_eval) -----------------------

def trec_eval(qrels: dict, run: dict, measures: list[str]) -> dict:
    """pytrec_eval's per-query values, each evaluation in a fresh process (trec_eval keeps global state)."""
    return pytrec_values(qrels, run, measures)


def test_single_precision_ties_are_where_trec_eval_differs():
    """semantics.md: 0.1000000001 and 0.1 tie in trec_eval (C float), not in rag_eval (float64)."""
    qrels, run = {"q1": {"d1": 1, "d2": 0}}, {"q1": {"d1": 0.1000000001, "d2": 0.1}}
    reference = trec_eval(qrels, run, ["ndcg", "P.1"])["q1"]
    assert reference["ndcg"] == pytest.approx(0.6309297535714575, abs=1e-12)  # d2 first: the greater id
    assert reference["P_1"] == 0.0
    ours = rag_eval.evaluate(qrels, run, ["ndcg", "P_1"]).aggregate
    assert ours == {"ndcg": 1.0, "precision@1": 1.0}
    # With scores single precision holds apart, the two agree.
    run = {"q1": {"d1": 0.5000001, "d2": 0.5}}
    assert trec_eval(qrels, run, ["ndcg"])["q1"]["ndcg"] == 1.0 == rag_eval.evaluate(qrels, run, ["ndcg"]).aggregate["ndcg"]


def test_no_relevant_zero_is_trec_eval_minus_c_and_skip_is_not():
    """semantics.md's example: trec_eval -c gives 0.3333, which is `zero`; `skip` gives 0.5."""
    judgements = {"q1": {"a": 1, "b": 0}, "q2": {"x": 0}, "q3": {"c": 2}}
    run = {"q1": {"a": 0.9, "b": 0.8}, "q2": {"x": 0.5}, "q9": {"a": 1.0}}
    reference = trec_eval(judgements, run, ["ndcg_cut.10", "P.1"])
    assert set(reference) == {"q1", "q2"}  # q3 is unanswered: trec_eval -c adds it as 0
    for measure, name in (("ndcg_cut_10", "ndcg@10"), ("P_1", "precision@1")):
        with_c = (reference["q1"][measure] + reference["q2"][measure] + 0.0) / 3
        zero = rag_eval.evaluate(judgements, run, [name], no_relevant="zero")
        assert zero.aggregate[name] == pytest.approx(with_c, abs=1e-12) == pytest.approx(1 / 3)
        assert rag_eval.evaluate(judgements, run, [name]).aggregate[name] == 0.5


# ---- ids -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", ["reports/2024/q3.pdf#p12#c7", "<dbpedia:Oceanic_Airlines>", "x" * 2000, "é", "doc 1", "a:b/c?d=e"]
)
def test_ids_the_docs_allow(value):
    assert id_problem(value) is None


@pytest.mark.parametrize(
    "value, problem",
    [
        ("d1\x00x", "U+0000 at position 3"),
        ("a\tb", "U+0009 at position 2"),
        ("a\nb", "U+000A"),
        ("a\x7f", "U+007F"),
        ("", "is empty"),
    ],
)
def test_ids_the_docs_refuse(value, problem):
    assert problem in id_problem(value)


def test_a_trec_file_with_a_control_character_in_an_id_is_refused(tmp_path, capsys):
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_bytes(b"q1 0 d1\x00x 1\n")
    run.write_bytes(b"q1 Q0 d1 1 1.0 t\n")
    assert main(["evaluate", "--qrels", str(qrels), "--run", str(run), "-m", "ndcg"]) == 2
    assert f"{qrels}:1: doc id 'd1\\x00x' holds the control character U+0000 at position 3" in capsys.readouterr().err


def test_a_byte_order_mark_does_not_become_part_of_the_first_id(tmp_path, capsys):
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_bytes("\ufeffq1 0 d1 1\n".encode())
    run.write_bytes("\ufeffq1 Q0 d1 1 1.0 t\n".encode())
    assert main(["evaluate", "--qrels", str(qrels), "--run", str(run), "-m", "ndcg"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "ndcg\tall\t1.0000"


def test_long_and_unusual_ids_are_evaluated_exactly():
    long_id = "chunk/" + "x" * 3000
    judgements = {"q:1#a": {"<dbpedia:Oceanic_Airlines>": 1, "reports/2024/q3.pdf#p12#c7": 2, long_id: 0}}
    run = {"q:1#a": {long_id: 3.0, "reports/2024/q3.pdf#p12#c7": 2.0, "<dbpedia:Oceanic_Airlines>": 1.0}}
    results = rag_eval.evaluate(judgements, run, ["ndcg", "mrr"])
    # grades in rank order 0, 2, 1; ideal 2, 1: (2/log2(3) + 1/2) / (2 + 1/log2(3))
    assert results.aggregate["ndcg"] == pytest.approx((2 / 1.584962500721156 + 0.5) / (2 + 1 / 1.584962500721156))
    assert results.aggregate["mrr"] == 0.5


# ---- README -------------------------------------------------------------------------------


def test_readme_links_the_repository_docs_not_the_shared_folder():
    text = README.read_text(encoding="utf-8")
    assert "../shared/SEMANTICS.md" not in text and "SEMANTICS.md" not in text
    assert "(docs/semantics.md)" in text and "(docs/config.md)" in text
    # The trec_eval claim names its condition and the default that differs.
    assert "with `no_relevant: zero` every per-query value" in text
    assert "The default, `no_relevant: skip`, differs" in text


def _readme_commands() -> list[str]:
    rows = re.findall(r"^\| `rag-eval (\w+)", README.read_text(encoding="utf-8"), flags=re.MULTILINE)
    assert rows, "README's command table not found"
    return rows


@pytest.mark.parametrize("command", _readme_commands())
def test_readme_commands_exist(command):
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert command in sub.choices


def test_readme_commands_name_files_that_exist():
    bash = [body for language, body in blocks(README) if language == "bash"]
    assert bash == [
        "bash scripts/setup.sh && .venv/bin/rag-eval run configs/ocean_facts.yaml\n",
        ".venv/bin/python -m pytest -n auto\n",
    ]
    assert (REPO / "scripts" / "setup.sh").is_file() and (REPO / "configs" / "ocean_facts.yaml").is_file()
    assert "\n.venv/bin/python -m pytest -n auto ||" in (REPO / ".ci" / "run").read_text()  # CI runs that command


def test_readme_example_run_writes_the_files_it_names(tmp_path, capsys):
    """The README's run command, into a temporary folder: the files it lists appear."""
    from rag_eval._data.config.schema import load_config

    text = README.read_text(encoding="utf-8")
    assert "The report lands in `reports/ocean-facts/report.md`" in text
    config = load_config(REPO / "configs" / "ocean_facts.yaml")
    assert config.output_dir.resolve() == (REPO / "reports" / "ocean-facts").resolve()
    out = tmp_path / "ocean-facts"
    assert main(["run", str(REPO / "configs" / "ocean_facts.yaml"), "--output", str(out), "--no-progress"]) == 0
    for name in ("report.md", "seed-ranking.json", "bm25.json", "seed-ranking.run", "bm25.run"):
        assert name in text and (out / name).is_file(), name
    # semantics.md: the seed query's nDCG@4 is 0.9854 in the report; the headline is 0.0985.
    assert "| q-largest-ocean | Which ocean is the largest? | 0.9854 |" in (out / "report.md").read_text()
    assert "seed-ranking\tndcg@4\t0.0985" in capsys.readouterr().out


# ---- links and configs ----------------------------------------------------------------------


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    explicit = set(re.findall(r'<a id="([^"]+)"></a>', text))
    prose = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    headings = {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", prose, flags=re.MULTILINE)}
    return explicit | headings


@pytest.mark.parametrize("path", [README, *sorted(DOCS.glob("*.md"))], ids=lambda p: p.name)
def test_relative_links_resolve(path):
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    text = re.sub(r"`[^`\n]*`", "", text)  # a code span is not a link, whatever it holds (queries[0](q1))
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        assert linked.exists(), f"{path.name}: link {target} points at nothing"
        if anchor:
            assert anchor in _anchors(linked), f"{path.name}: link {target}: no such anchor in {linked.name}"


EXTERNAL_CONFIGS = [
    "chroma_chunking.yaml", "chroma_chunking_sweep.yaml", "cranfield.yaml", "cranfield_integrations.yaml",
    "cranfield_integrations_hnsw.yaml", "dl19_subset.yaml", "nfcorpus.yaml",
    "scifact.yaml", "scifact_bm25_sweep.yaml", "scifact_chunked.yaml",
]


@pytest.mark.parametrize("name", EXTERNAL_CONFIGS)
def test_configs_that_need_outside_data_say_where_to_get_it(name):
    path = REPO / "configs" / name
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    locations = [raw["dataset"][k] for k in ("path", "qrels", "queries", "corpus") if k in raw["dataset"]]
    assert locations and all(str(p).startswith("../../shared/datasets/") for p in locations)  # outside the repo
    header = path.read_text(encoding="utf-8").split("\nname:")[0]
    assert header.startswith("# Data (not in this repository):")
    assert "relative to this file" in header and "absolute" in header


def test_only_those_configs_point_outside_the_repository():
    outside = sorted(p.name for p in (REPO / "configs").glob("*.yaml") if "../../shared" in p.read_text())
    assert outside == EXTERNAL_CONFIGS


# ---- docs/ci.md's pytest snippet --------------------------------------------------------------


def test_ci_doc_pytest_snippet_runs_in_a_layout_made_as_documented(tmp_path, monkeypatch):
    doc = DOCS / "ci.md"
    config = next(body for language, body in blocks(doc) if language == "yaml" and "regression:" in body)
    (snippet,) = [body for language, body in blocks(doc) if language == "python"]
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "ocean_facts_ci.yaml").write_text(config)
    (tmp_path / "datasets").mkdir()
    shutil.copy(REPO / "datasets" / "ocean_facts.yaml", tmp_path / "datasets")
    made = tmp_path / "baseline-run"
    assert main(["run", str(REPO / "configs" / "ocean_facts.yaml"), "--output", str(made), "--no-progress"]) == 0
    (tmp_path / "reports" / "baselines").mkdir(parents=True)
    shutil.copy(made / "bm25.json", tmp_path / "reports" / "baselines" / "ocean-facts-bm25.json")
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "test_snippet.py"
    script.write_text(snippet)
    namespace = runpy.run_path(str(script))
    namespace["test_search_quality"]()  # passes: the baseline is the same retriever; a failure raises
    assert not (tmp_path / "reports" / "ocean-facts-ci").exists()  # writes nothing by default
