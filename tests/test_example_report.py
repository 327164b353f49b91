"""The committed ocean-facts example (reports/ocean-facts/) is what `rag-eval run` writes today.

The example is regenerated into a temporary copy of the project's layout (the config
and its query set, run from that copy's root as the README's command is run from the
repository's), so that every path in it is the same as in the committed files. Every
committed file must then equal the new one byte for byte, apart from the fields
listed in RUN_DEPENDENT and the marks of a ranking-cache hit (CACHE_HIT); any other
difference (a metric value, a ranking, a word of the report, a file too many or too
few) fails the test. The example run twice, the second time from the ranking cache as
the README says, must give the same files too. After an intended change,
regenerate the example from the repository root and read the diff:

    .venv/bin/rag-eval run configs/ocean_facts.yaml
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pytest
from conftest import REPO

from rag_eval._core.output_manifest import MANIFEST, read_manifest
from rag_eval._run.results_file import load_results_file
from rag_eval.cli import main

EXAMPLE = REPO / "reports" / "ocean-facts"
CONFIG = Path("configs") / "ocean_facts.yaml"
DATASET = Path("datasets") / "ocean_facts.yaml"
FILES = {
    MANIFEST, "report.md", "report.html", "seed-ranking.json", "seed-ranking.run", "bm25.json", "bm25.run",
    "per-query.csv", "plot-at-k.svg", "plot-deltas.svg", "plot-means.svg",
}

# What differs from one run to the next, and nothing else: (files, pattern, replacement, times it
# occurs in each of those files). The counts keep the list honest: a field that moves or
# disappears fails the test instead of silently no longer being normalised.
RUN_DEPENDENT: list[tuple[str, re.Pattern[str], str, int]] = [
    # When the run was made.
    ("report.md", re.compile(r"^- \*\*Run at:\*\* .+$", re.MULTILINE), "- **Run at:** <created>", 1),
    ("*.json", re.compile(r'^  "created": "[^"]+",$', re.MULTILINE), '  "created": "<created>",', 1),
    # How long indexing and searching took: the retrievers table's Index (s) and Search (s)
    # columns (the only cells with 3 decimals; metric values have 4) and the results' timings.
    (
        "report.md",
        re.compile(r"^(\| .+ \| )\d+\.\d{3} \| \d+\.\d{3}( \| [^|\n]* \|)$", re.MULTILINE),
        r"\1<s> | <s>\2",
        2,
    ),
    # ...and the same two columns, last in each row of the decision table (rows start with a rank).
    ("report.md", re.compile(r"^(\| \d+ \| .+ \| )\d+\.\d{3} \| \d+\.\d{3} \|$", re.MULTILINE), r"\1<s> | <s> |", 2),
    (
        "*.json",
        re.compile(r'^  "timings": \{\n(    "[a-z_]+": [0-9.e+-]+,?\n)+  \},$', re.MULTILINE),
        '  "timings": {},',
        1,
    ),
    # Installed versions: Python's and the packages' in the results, bm25s's in BM25's description.
    (
        "*.json",
        re.compile(r'^  "packages": \{\n(    "[^"]+": "[^"]+",?\n)+  \},$', re.MULTILINE),
        '  "packages": {},',
        1,
    ),
    ("report.md", re.compile(r"library: bm25s [^;|\s]+"), "library: bm25s <version>", 1),
    ("bm25.json", re.compile(r'"library": "bm25s [^"]+"'), '"library": "bm25s <version>"', 1),
    # The manifest's id, random for each set written.
    (MANIFEST, re.compile(r'^ "id": "[0-9a-f]{16}",$', re.MULTILINE), ' "id": "<id>",', 1),
]

# What a ranking-cache hit adds, and nothing else (its timings are the stored run's, blanked above):
# the note in the retrievers table and the mark in each results file's description. A second run of
# the README's command hits (the default cache is machine-wide), and so may a fresh clone's first run,
# so these are blanked wherever they occur, as many times as they do (a cold run has none).
CACHE_HIT: list[tuple[str, re.Pattern[str], str]] = [
    (
        "report.md",
        re.compile(r"(?:; )?ranking\\_cache: hit \(times and notes from the run that stored the ranking\)"),
        "",
    ),
    ("*.json", re.compile(r',\n +"ranking_cache": "hit"(?=\n)'), ""),
]


def normalised(name: str, text: str) -> tuple[str, int]:
    """``text`` with its run-dependent fields replaced, and how many replacements were made."""
    made = 0
    for files, pattern, replacement, _ in RUN_DEPENDENT:
        if _applies(files, name):
            text, n = pattern.subn(replacement, text)
            made += n
    for files, pattern, replacement in CACHE_HIT:
        if _applies(files, name):
            text = pattern.sub(replacement, text)
    return text, made


def run_example(root: Path, times: int = 1) -> Path:
    """`rag-eval run configs/ocean_facts.yaml` ``times`` times from ``root``, a copy of the layout; its output folder."""
    for relative in (CONFIG, DATASET):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / relative, root / relative)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAG_EVAL_CACHE_DIR", str(root / ".cache"))  # a cache of its own: only its runs are reused
        patch.chdir(root)  # the README's command runs from the repository root: paths are relative to it
        for _ in range(times):
            assert main(["run", str(CONFIG), "--no-progress"]) == 0
    return root / "reports" / "ocean-facts"


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory) -> Path:
    """The example written into a copy of the layout with an empty cache: its output folder."""
    return run_example(tmp_path_factory.mktemp("example"))


@pytest.fixture(scope="module")
def rerun(tmp_path_factory) -> Path:
    """The example run twice, as a reader following the README does: the second run reuses the stored rankings."""
    return run_example(tmp_path_factory.mktemp("example-rerun"), times=2)


def test_the_example_holds_exactly_the_files_of_a_run(regenerated):
    assert {p.name for p in EXAMPLE.iterdir()} == FILES
    assert {p.name for p in regenerated.iterdir()} == FILES
    # A valid output set: its manifest names the files, so the next run replaces them as a whole.
    manifest = read_manifest(EXAMPLE)
    assert manifest is not None and manifest.files == FILES - {MANIFEST}


@pytest.mark.parametrize("name", sorted(FILES))
def test_regenerating_the_example_gives_the_same_bytes(regenerated, name):
    committed, committed_count = normalised(name, (EXAMPLE / name).read_bytes().decode("utf-8"))
    fresh, fresh_count = normalised(name, (regenerated / name).read_bytes().decode("utf-8"))
    expected = sum(count for files, _, _, count in RUN_DEPENDENT if _applies(files, name))
    assert committed_count == expected, f"{name}: the run-dependent fields moved; update RUN_DEPENDENT"
    assert fresh_count == expected
    assert committed == fresh, (
        f"reports/ocean-facts/{name} is not what `rag-eval run configs/ocean_facts.yaml` writes now; "
        "if the change is intended, regenerate it from the repository root and read the diff"
    )


def _applies(files: str, name: str) -> bool:
    return name == files or (files == "*.json" and name.endswith(".json") and name != MANIFEST)


@pytest.mark.parametrize("name", sorted(FILES))
def test_a_second_run_a_ranking_cache_hit_writes_the_example_too(rerun, name):
    """The README runs the example, and says a second run reuses the rankings: its files are the example still."""
    committed, _ = normalised(name, (EXAMPLE / name).read_bytes().decode("utf-8"))
    again, count = normalised(name, (rerun / name).read_bytes().decode("utf-8"))
    assert count == sum(n for files, _, _, n in RUN_DEPENDENT if _applies(files, name))
    assert again == committed
    if name == "report.md":  # the hit is said, and only there: the notes of the retrievers table
        text = (rerun / name).read_text(encoding="utf-8")
        assert text.count("ranking\\_cache: hit (times and notes from the run that stored the ranking)") == 2


def test_the_normalisation_keeps_every_metric_value():
    """Only the listed fields are blanked: a changed metric value, in the report or the results, is seen."""
    report = (EXAMPLE / "report.md").read_text(encoding="utf-8")
    assert "| seed-ranking | 0.1000 | 0.0895 | 0.0985 |" in report
    changed = report.replace(
        "| seed-ranking | 0.1000 | 0.0895 | 0.0985 |", "| seed-ranking | 0.1000 | 0.0895 | 0.0986 |"
    )
    assert normalised("report.md", changed)[0] != normalised("report.md", report)[0]
    results = (EXAMPLE / "bm25.json").read_text(encoding="utf-8")
    value = json.loads(results)["results"]["aggregate"]["ndcg@4"]
    assert results.count(json.dumps(value)) >= 1
    changed = results.replace(json.dumps(value), json.dumps(value + 1e-12))
    assert normalised("bm25.json", changed)[0] != normalised("bm25.json", results)[0]


def test_the_committed_numbers_are_right():
    """The headline, by hand: the seed ranking is stored for q-largest-ocean only, 9 of 10 queries score 0."""
    seed = load_results_file(EXAMPLE / "seed-ranking.json")
    # Grades in rank order 3, 2, 0, 1; the ideal order 3, 2, 1.
    dcg = 3 + 2 / math.log2(3) + 0 / 2 + 1 / math.log2(5)
    idcg = 3 + 2 / math.log2(3) + 1 / 2
    assert seed.results.aggregate["ndcg@4"] == pytest.approx(dcg / idcg / 10, abs=1e-15)
    assert f"{dcg / idcg / 10:.4f}" == "0.0985"
    assert len(seed.results.unanswered_queries) == 9 and len(seed.results.query_ids) == 10
    report = (EXAMPLE / "report.md").read_text(encoding="utf-8")
    assert (
        "| 0.0985 | 0.0985 | 0.0985 | 0.1000 | 0.1000 | 0.4693 | 4.3425 | 9 of 10 judged queries unanswered, scored 0 |"
        in report
    )


def test_the_committed_files_hold_no_path_of_this_machine():
    for path in EXAMPLE.iterdir():
        text = path.read_text(encoding="utf-8")
        assert str(REPO) not in text and str(Path.home()) not in text, path.name
