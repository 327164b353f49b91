"""The markdown report: its content, valid GitHub tables whatever the text, and golden files.

Golden files (tests/golden/*.md) are rendered from hand-built RunOutcomes with a
fixed timestamp; rendering is pure, so they never change unless the renderer
does. After an intended change, regenerate them and read the diff:

    RAG_EVAL_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_report.py
"""

from __future__ import annotations

import builtins
import math
import os
import re
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from rag_eval._data.config.schema import LoadedConfig, RunConfig, load_config
from rag_eval._data.datasets import Dataset, Query, load_yaml_query_set
from rag_eval._report.format import code_span, escape_cell, escape_inline
from rag_eval._report.markdown import render_run_report
from rag_eval._run.execute import execute
from rag_eval._run.outcome import RetrieverOutcome, RunOutcome
from rag_eval._scoring.evaluate import evaluate

GOLDEN = Path(__file__).resolve().parent / "golden"
CREATED = "2025-01-02T03:04:05+00:00"

# ---- a small GitHub-flavoured-markdown table checker ------------------------------------------------

DELIMITER = re.compile(r"^\|(\s*:?-+:?\s*\|)+$")


def cells(row: str) -> int:
    """Cells of a table row as GFM splits it: at every '|' without a backslash right before it.

    Even inside a code span, and even after another backslash: cmark-gfm's cell rule is
    ``(escaped_char | [^|\\r\\n])*`` matched longest, and markdown-it's escapedSplit looks only at
    the character before the pipe.
    """
    pipes = 0
    previous = ""
    for ch in row:
        if ch == "|" and previous != "\\":
            pipes += 1
        previous = ch
    return pipes - 1


def table_problems(markdown: str) -> list[str]:
    """Every table row must have as many cells as its header, and a table ends at a blank line."""
    problems = []
    lines = markdown.split("\n")
    i = 0
    tables = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("|") and i + 1 < len(lines) and DELIMITER.match(lines[i + 1]):
            tables += 1
            if i > 0 and lines[i - 1].strip():
                problems.append(f"line {i + 1}: a table must follow a blank line")
            width = cells(line)
            if cells(lines[i + 1]) != width:
                problems.append(f"line {i + 2}: delimiter row has {cells(lines[i + 1])} cells, header {width}")
            j = i + 2
            while j < len(lines) and lines[j].startswith("|"):
                row = lines[j]
                if not row.rstrip().endswith("|") or row.rstrip().endswith("\\|"):
                    problems.append(f"line {j + 1}: row does not end with an unescaped '|': {row!r}")
                if cells(row) != width:
                    problems.append(f"line {j + 1}: {cells(row)} cells, header has {width}: {row!r}")
                j += 1
            if j < len(lines) and lines[j].strip():
                problems.append(f"line {j + 1}: text right after a table row (a broken row?): {lines[j]!r}")
            i = j
        else:
            if line.startswith("|"):
                problems.append(f"line {i + 1}: a '|' line outside any table: {line!r}")
            i += 1
    if tables == 0:
        problems.append("no table at all")
    return problems


def test_the_checker_catches_broken_tables():
    good = "| a | b |\n|---|---:|\n| 1 | x \\| y |\n"
    assert table_problems(good) == []
    assert table_problems("| a | b |\n|---|---|\n| 1 | x | y |\n")  # an unescaped pipe
    assert table_problems("| a | b |\n|---|---|\n| 1 | first\nsecond |\n")  # a newline
    assert table_problems("| a | b |\n|---|---|\n| 1 | ends with \\|\n")  # the last pipe escaped
    assert cells("| a \\\\| b |") == 1  # GFM: the backslash right before the pipe escapes it all the same
    assert cells("| `a\\|b` | c |") == 2  # inside a code span too


# ---- the ocean-facts example ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ocean_report(tmp_path_factory) -> str:
    """configs/ocean_facts.yaml, plus a static ranking that puts the awkward passages in tables."""
    out = tmp_path_factory.mktemp("ocean-report")
    config = load_config(REPO / "configs" / "ocean_facts.yaml")
    extra = yaml.safe_load(
        """
        label: awkward
        adapter: static
        params:
          rankings:
            q-deepest-point: [average-depths, sahara-name, challenger-deep]
        """
    )
    raw = dict(config.raw, retrievers=[*config.raw["retrievers"], extra], output=str(out))
    config = LoadedConfig(config.path, raw, RunConfig.model_validate(raw))
    run = execute(config, progress=False)
    return render_run_report(run)


def section(markdown: str, start: str, end_prefix: str) -> str:
    """The text from the line ``start`` up to the next line starting with ``end_prefix``."""
    lines = markdown.split("\n")
    first = lines.index(start)
    rest = next((i for i in range(first + 1, len(lines)) if lines[i].startswith(end_prefix)), len(lines))
    return "\n".join(lines[first:rest])


def test_ocean_facts_seed_derivation(ocean_report):
    query = section(ocean_report, "### q-largest-ocean: “Which ocean is the largest?”", "### ")
    seed = section(query, "#### seed-ranking", "#### ")
    assert "| 1 | The Pacific Ocean is the largest ocean. (`pacific-largest`) | 3 |" in seed
    assert "| 3 | The Sahara Desert is the largest hot desert. (`sahara-hot-desert`) | 0 |" in seed
    assert "DCG@4 = 3.0000 + 1.2619 + 0.0000 + 0.4307 = **4.6925**" in seed
    assert "Ideal order (all judged passages with grade > 0, best first, cut at 4): [3, 2, 1]" in seed
    assert "IDCG@4 = 3.0000 + 1.2619 + 0.5000 = **4.7619**" in seed
    assert "**nDCG@4** = DCG@4 / IDCG@4 = 4.6925 / 4.7619 = **0.9854**" in seed
    # The per-query table agrees (0.98544 rounds to 0.9854, not the seed's 0.9855).
    row = next(line for line in ocean_report.split("\n") if line.startswith("| q-largest-ocean |"))
    assert row.split(" | ")[2] == "0.9854"


def test_ocean_facts_report_tables_are_valid(ocean_report):
    assert table_problems(ocean_report) == []


def test_ocean_facts_awkward_passages_stay_in_their_cells(ocean_report):
    awkward = section(
        section(ocean_report, "### q-deepest-point: “What is the deepest point in the ocean?”", "### "),
        "#### awkward",
        "#### ",
    )
    lines = awkward.split("\n")
    start = lines.index("| Rank | Passage | Grade |") + 2
    rows = lines[start : lines.index("", start)]
    assert len(rows) == 3
    assert rows[0] == (
        "| 1 | Average depth by ocean: Pacific \\| about 4,000 m; Indian \\| about 3,700 m; "
        "Atlantic \\| about 3,600 m; Arctic \\| about 1,200… (`average-depths`) | 1 |"
    )
    assert rows[1] == (
        '| 2 | The name Sahara comes from the Arabic word \\*sahra\\*, which simply means "desert". '
        "(`sahara-name`) | unjudged |"
    )
    assert rows[2].startswith("| 3 | The Challenger Deep") and rows[2].endswith("(`challenger-deep`) | 3 |")
    assert all(cells(row) == 3 for row in rows)


def test_ocean_facts_header_and_summary(ocean_report):
    fingerprint = load_yaml_query_set(REPO / "datasets" / "ocean_facts.yaml").fingerprint
    assert ocean_report.startswith("# RAG Evaluation: ocean-facts\n")
    assert f"fingerprint `{fingerprint}`" in ocean_report
    assert "- **Queries:** 10 (10 with judgements), **passages:** 37, **judgements:** 63" in ocean_report
    assert '| bm25 | bm25 | {"b": 0.75, "k1": 1.2, "stemmer": "english", "stopwords": "english"} |' in ocean_report
    summary = section(ocean_report, "## 📊 Summary", "## ")
    header = "| Retriever | ndcg@1 | ndcg@3 | ndcg@4 | ndcg@5 | ndcg@10 | recall@10 | mrr@10 | dcg@4 | idcg@4 |"
    assert header in summary
    # seed-ranking: nDCG@4 0.98544 on one query, 0 on nine: 0.098544 -> 0.0985.
    assert "| seed-ranking | 0.1000 | " in summary and " | 0.0985 | " in summary
    # One relevant passage, found: singular.
    sea = section(ocean_report, "### q-sea-no-coastline: “Which sea has no coastline?”", "### ")
    assert "(1 of 1 relevant passage in the top 4, the first at rank 1; " in sea


# ---- a report built from hand-made data ---------------------------------------------------------------

CORPUS = {
    "pacific": {"title": "Pacific", "text": "The Pacific Ocean is the largest ocean."},
    "atlantic": {"title": "", "text": "The Atlantic Ocean separates Europe and America."},
    "depths": {"title": "", "text": "Average depth: Pacific | 4,000 m; Indian | 3,700 m"},
    "name": {
        "title": "",
        "text": "From *sahra* with `code`, _under_, [link](http://x), <b>bold</b> # no heading \\ end",
    },
    "multi": {"title": "", "text": "First line\nsecond line\n\n| not | a | row |"},
    "odd|id`x": {"title": "", "text": "A passage whose id has a pipe and a backtick."},
}
QUERIES = {
    "q-ocean": Query("q-ocean", "Which ocean is the largest?", ("oceans",)),
    "q|pipe": Query("q|pipe", "A query | with a pipe\nand *stars*"),
    "q-zero": Query("q-zero", "Nothing relevant here"),
    "q-missed": Query("q-missed", "What is deep?"),
    "q-unjudged": Query("q-unjudged", "Never judged"),
}
JUDGEMENTS = {
    "q-ocean": {"pacific": 3.0, "atlantic": 2.0, "depths": 1.0, "name": 0.0},
    "q|pipe": {"multi": 2.0, "odd|id`x": 1.0},
    "q-zero": {"name": 0.0, "atlantic": 0.0},
    "q-missed": {"depths": 2.0, "pacific": 1.0},
}
RANKINGS = {
    "alpha": {
        "q-ocean": {"pacific": 3.0, "atlantic": 2.0, "name": 1.0},
        "q|pipe": {"multi": 2.0, "odd|id`x": 2.0},  # a tie: "odd|id`x" > "multi" in byte order, so it ranks first
        "q-zero": {"name": 1.0},
        "q-missed": {},
        "q-unjudged": {"pacific": 1.0},
    },
    "beta": {
        "q-ocean": {"atlantic": 5.0, "depths": 4.0, "pacific": 3.0},
        "q|pipe": {"multi": 1.0},
        "q-zero": {},
        "q-missed": {"atlantic": 2.0, "name": 1.0},
        "q-unjudged": {},
    },
}
DESCRIPTIONS = {
    "alpha": {"class": "rag_eval._retrievers.static:StaticRetriever", "source": "runs/alpha.run", "queries": 5},
    "beta": {"class": "rag_eval._retrievers.bm25:BM25Retriever", "library": "bm25s 0.0.0", "method": "lucene"},
}


def hand_run(**overrides) -> RunOutcome:
    raw = {
        "name": "golden",
        "dataset": {"path": "../datasets/golden.yaml"},
        "retrievers": [
            {"label": "alpha", "adapter": "static", "params": {"path": "runs/alpha.run"}},
            {"label": "beta", "adapter": "bm25", "params": {"k1": 0.9, "b": 0.4}},
        ],
        "metrics": ["ndcg@3", "recall@3", "precision@2", "mrr@3", "dcg@3", "judged@3"],
        "main_metric": "ndcg@3",
        "top_k": 3,
        "report": {"detailed_queries": 2, "passage_chars": 40},
    }
    raw.update(overrides)
    config = LoadedConfig(Path("configs/does-not-exist/golden.yaml"), raw, RunConfig.model_validate(raw))
    judgements = {q: j for q, j in JUDGEMENTS.items() if q in QUERIES}
    dataset = Dataset(
        "golden *set*", dict(QUERIES), judgements, dict(CORPUS), "datasets/golden.yaml", ("a note with a | pipe",)
    )
    outcomes = []
    for spec in config.model.retrievers:
        ranking = RANKINGS[spec.label]
        results = evaluate(judgements, ranking, config.model.metrics, **config.model.evaluation.passage_options())
        timings = {"index_s": 0.5, "search_s": 0.25, "evaluate_s": 0.001}
        outcomes.append(RetrieverOutcome(spec, DESCRIPTIONS[spec.label], ranking, results, timings))
    return RunOutcome(config, dataset, outcomes, created=CREATED)


def exponential_run() -> RunOutcome:
    return hand_run(
        retrievers=[{"label": "alpha", "adapter": "static", "params": {"path": "runs/alpha.run"}}],
        evaluation={"gain": "exponential", "no_relevant": "zero"},
        metrics=["ndcg@3", "ndcg", "map"],
        main_metric=None,
        report={"detailed_queries": 10, "passage_chars": 60, "title": "Custom *title* | here"},
    )


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("RAG_EVAL_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"{path} is missing; create it with RAG_EVAL_UPDATE_GOLDEN=1"
    expected = path.read_text(encoding="utf-8")
    assert text == expected, (
        f"{name} differs from the golden file; if intended, regenerate with RAG_EVAL_UPDATE_GOLDEN=1"
    )


def test_golden_two_retrievers():
    check_golden("report_two_retrievers.md", render_run_report(hand_run()))


def test_golden_exponential_single_retriever():
    check_golden("report_exponential.md", render_run_report(exponential_run()))


@pytest.mark.parametrize("name", ["report_two_retrievers.md", "report_exponential.md"])
def test_golden_files_are_valid_markdown_tables(name):
    assert table_problems((GOLDEN / name).read_text(encoding="utf-8")) == []


def test_rendering_is_pure(monkeypatch):
    run = hand_run()
    first = render_run_report(run)

    def no_io(*args, **kwargs):
        raise AssertionError("render_run_report must not open files")

    monkeypatch.setattr(builtins, "open", no_io)
    monkeypatch.setattr(Path, "open", no_io)
    assert render_run_report(run) == first
    # Nothing in the run was changed by rendering.
    assert run.outcomes[0].ranking == RANKINGS["alpha"]
    assert run.dataset.judgements == JUDGEMENTS


def test_header_names_dataset_retrievers_and_semantics():
    report = render_run_report(hand_run())
    dataset = hand_run().dataset
    assert report.startswith("# RAG Evaluation: golden\n")
    assert f"- **Dataset:** golden \\*set\\* (`datasets/golden.yaml`), fingerprint `{dataset.fingerprint}`" in report
    assert "- **Queries:** 5 (4 with judgements), **passages:** 6, **judgements:** 10" in report
    assert "- **Note:** a note with a \\| pipe" in report
    assert "- **Queries without judgements (not scored):** q-unjudged" in report
    assert '| beta | bm25 | {"b": 0.4, "k1": 0.9} | 0.500 | 0.250 | library: bm25s 0.0.0; method: lucene |' in report
    assert '| alpha | static | {"path": "runs/alpha.run"} | 0.500 | 0.250 | source: runs/alpha.run |' in report
    assert "gain = grade (linear, as trec_eval)" in report
    assert "discount 1 / log₂(rank + 1)" in report
    assert "ideal ranking built from all judged passages with grade > 0, retrieved or not" in report
    assert "Ties: equal scores are ordered by passage id, descending" in report
    assert "A judged query with no relevant passage: left out of the mean and listed." in report
    assert "relevant = grade ≥ 1." in report
    exponential = render_run_report(exponential_run())
    assert "gain = 2^grade - 1 (exponential" in exponential
    assert "A judged query with no relevant passage: scored 0 and kept in the mean (as trec_eval)." in exponential
    assert exponential.startswith("# Custom \\*title\\* \\| here\n")


def test_summary_bolds_the_best_and_says_what_was_left_out():
    report = render_run_report(hand_run())
    summary = section(report, "## 📊 Summary", "## ")
    # By hand, over the 3 queries with a relevant passage (q-zero is left out); IDCG@3 of q-ocean
    # [3, 2, 1] = 3 + 2/log2(3) + 1/2, of q|pipe [2, 1] = 2 + 1/log2(3); q-missed scores 0 for both.
    idcg_ocean, idcg_pipe = 3 + 2 / math.log2(3) + 0.5, 2 + 1 / math.log2(3)
    # alpha: q-ocean [3, 2, 0]; q|pipe ranks the tie "odd|id`x" (1) before "multi" (2): [1, 2].
    alpha = ((3 + 2 / math.log2(3)) / idcg_ocean + (1 + 2 / math.log2(3)) / idcg_pipe + 0) / 3
    # beta: q-ocean [2, 1, 3]; q|pipe [2].
    beta = ((2 + 1 / math.log2(3) + 3 / 2) / idcg_ocean + 2 / idcg_pipe + 0) / 3
    assert f"{alpha:.4f}" == "0.5849" and f"{beta:.4f}" == "0.5426"
    rows = {
        line.split(" | ")[0][2:]: line.split(" | ")[1:]
        for line in summary.split("\n")
        if line.startswith(("| alpha", "| beta"))
    }
    assert rows["alpha"][0] == "**0.5849**" and rows["beta"][0] == "0.5426"
    # recall@3: alpha (2/3 + 1 + 0)/3 = 0.5556; beta (1 + 1/2 + 0)/3 = 0.5 -> alpha bold.
    assert rows["alpha"][1] == "**0.5556**" and rows["beta"][1] == "0.5000"
    # precision@2: alpha (2/2 + 2/2 + 0)/3 = 0.6667; beta (2/2 + 1/2 + 0)/3 = 0.5.
    assert rows["alpha"][2] == "**0.6667**" and rows["beta"][2] == "0.5000"
    # mrr@3: alpha (1 + 1 + 0)/3, beta (1 + 1 + 0)/3: a tie, both bold.
    assert rows["alpha"][3] == "**0.6667**" and rows["beta"][3] == "**0.6667**"
    # dcg@3 and judged@3 have no "best": never bold.
    assert not rows["alpha"][4].startswith("**") and not rows["alpha"][5].startswith("**")
    assert "Queries scored: 4." in summary
    assert "Not scored: 1 query without judgements (q-unjudged)." in summary
    assert "Left out of ndcg@3, recall@3, precision@2, mrr@3: 1 query with no relevant passage (q-zero)." in summary
    # alpha's unanswered q-missed enters every mean; beta's unanswered q-zero is left out of the quality metrics.
    assert "alpha retrieved nothing for 1 judged query; it scores 0 and stays in the mean." in summary
    assert "beta retrieved nothing for 1 judged query; it scores 0 in every mean it enters." in summary
    assert "quer(ies)" not in report
    # Beside each main-metric mean, why it is what it is: alpha's 0.5849 counts q-missed as 0 among
    # 3 judged queries, both leave q-zero out.
    header = summary.split("\n")[2]
    assert header.endswith(" | judged@3 | Note on ndcg@3 |")
    left_out = (
        "1 judged query with no relevant passage left out of the mean (no\\_relevant: skip; trec\\_eval scores them 0)"
    )
    assert rows["alpha"][6] == f"1 of 3 judged queries unanswered, scored 0; {left_out} |"
    assert rows["beta"][6] == f"{left_out} |"


def test_summary_notes_are_the_ones_the_terminal_prints(ocean_report):
    """The seed ranking's 0.0985 carries its reason in the report, as `rag-eval run` prints it beside its headline."""
    summary = section(ocean_report, "## 📊 Summary", "## ")
    seed = next(line for line in summary.split("\n") if line.startswith("| seed-ranking |"))
    bm25 = next(line for line in summary.split("\n") if line.startswith("| bm25 |"))
    assert "| ndcg@4 |" in summary and summary.split("\n")[2].endswith(" | idcg@4 | Note on ndcg@4 |")
    # 9 of the 10 judged queries have no stored ranking: nDCG@4 0.98544 / 10 = 0.0985.
    assert " | 0.0985 | " in seed and seed.endswith(" | 9 of 10 judged queries unanswered, scored 0 |")
    assert bm25.endswith(" | 3.4008 | 4.3425 |  |")  # bm25 answered every query: nothing to explain
    assert "seed-ranking retrieved nothing for 9 judged queries; they score 0 and stay in the mean." in summary


def test_no_note_column_when_no_mean_needs_one():
    run = hand_run(retrievers=[{"label": "alpha", "adapter": "static", "params": {"path": "runs/alpha.run"}}])
    run.outcomes[0].results = evaluate(
        {"q-ocean": JUDGEMENTS["q-ocean"]}, {"q-ocean": RANKINGS["alpha"]["q-ocean"]}, run.config.model.metrics
    )
    summary = section(render_run_report(run), "## 📊 Summary", "## ")
    assert (
        "| Retriever | ndcg@3 | recall@3 | precision@2 | mrr@3 | dcg@3 | judged@3 |\n|---|" + "---:|" * 6 + "\n"
        in summary
    )
    assert "Note on" not in summary and "retrieved nothing" not in summary


def test_per_query_table_has_every_judged_query():
    report = render_run_report(hand_run())
    table = section(report, "## 🔎 Per query: ndcg@3", "## ")
    rows = [line for line in table.split("\n") if line.startswith("| q")]
    assert [row.split(" | ")[0] for row in rows] == ["| q-missed", "| q-ocean", "| q-zero", "| q\\|pipe"]
    assert rows[2] == "| q-zero | Nothing relevant here | n/a | n/a |"
    assert rows[3] == "| q\\|pipe | A query \\| with a pipe and \\*stars\\* | 0.8597 | 0.7602 |"


def test_derivations_show_the_worst_queries_beyond_the_limit():
    report = render_run_report(hand_run())  # detailed_queries: 2 of 4 judged queries
    derivations = section(report, "## 🧮 How nDCG@3 was computed", "## ")
    headings = [line for line in derivations.split("\n") if line.startswith("### ")]
    # Mean nDCG@3: q-missed 0, q-ocean (0.895 + 0.7908)/2, q|pipe (0.8597 + 0.7602)/2, q-zero undefined (last).
    assert headings == ["### q-missed: “What is deep?”", "### q\\|pipe: “A query \\| with a pipe and \\*stars\\*”"]
    assert "The 2 of 4 judged queries with the lowest mean ndcg@3 over alpha and beta, lowest first." in derivations
    single = render_run_report(
        hand_run(retrievers=[{"label": "beta", "adapter": "bm25", "params": {}}], report={"detailed_queries": 1})
    )
    # beta alone: q-missed 0, q|pipe 0.7602, q-ocean 0.7908, q-zero n/a -> q-missed.
    assert "The 1 of 4 judged queries with the lowest ndcg@3 of beta, lowest first." in single
    assert [line for line in single.split("\n") if line.startswith("### ")] == ["### q-missed: “What is deep?”"]
    every = render_run_report(hand_run(report={"detailed_queries": 4}))
    headings = [line for line in every.split("\n") if line.startswith("### ")]
    assert len(headings) == 4 and "Every judged query." in every


def test_best_and_worst_follow_the_direction_of_the_metric_record(monkeypatch):
    """Reports read the direction from the record: for a lower-is-better metric the lowest mean is bold and
    the detailed queries are those with the highest values (every built-in metric is higher-is-better today)."""
    import dataclasses

    from rag_eval._scoring.metrics import measures

    run = hand_run()  # scored before the record changes: the numbers are those of the test above
    monkeypatch.setitem(measures.FAMILIES, "ndcg", dataclasses.replace(measures.FAMILIES["ndcg"], higher_is_better=False))
    report = render_run_report(run)
    summary = section(report, "## 📊 Summary", "## ")
    rows = {line.split(" | ")[0][2:]: line.split(" | ")[1:] for line in summary.split("\n")
            if line.startswith(("| alpha", "| beta"))}
    assert rows["alpha"][0] == "0.5849" and rows["beta"][0] == "**0.5426**"  # ndcg@3: now the lowest is best
    assert rows["alpha"][1] == "**0.5556**"  # recall@3 keeps its own direction
    derivations = section(report, "## 🧮 How nDCG@3 was computed", "## ")
    # Mean nDCG@3: q-ocean (0.895 + 0.7908)/2 = 0.843 and q|pipe (0.8597 + 0.7602)/2 = 0.81 are the worst now.
    headings = [line for line in derivations.split("\n") if line.startswith("### ")]
    assert headings == ["### q-ocean: “Which ocean is the largest?”", "### q\\|pipe: “A query \\| with a pipe and \\*stars\\*”"]
    assert "The 2 of 4 judged queries with the highest mean ndcg@3 over alpha and beta, highest first." in derivations


def test_missed_relevant_passages_are_listed():
    report = render_run_report(hand_run())
    missed = section(section(report, "### q-missed: “What is deep?”", "### "), "#### beta", "#### ")
    assert "Relevant passages not in the top 3:" in missed
    assert "*Failed: no relevant passage was found (0 of 2 relevant passages in the top 3; " in missed
    pipe = section(
        section(report, "### q\\|pipe: “A query \\| with a pipe and \\*stars\\*”", "### "), "#### beta", "#### "
    )
    assert (
        "Relevant passage not in the top 3:\n\n- A passage whose id has a pipe and a bac… (``odd|id`x``) (grade 1)"
        in pipe
    )
    assert "- Average depth: Pacific \\| 4,000 m; India… (`depths`) (grade 2)" in missed
    assert "- The Pacific Ocean is the largest ocean. (`pacific`) (grade 1)" in missed
    alpha = section(section(report, "### q-missed: “What is deep?”", "### "), "#### alpha", "#### ")
    assert "Nothing was retrieved for this query: DCG@3 = 0, nDCG@3 = 0.0000." in alpha


def test_weird_text_and_ids_stay_inside_tables():
    report = render_run_report(hand_run(report={"detailed_queries": 10, "passage_chars": 200}))
    assert table_problems(report) == []
    assert "First line second line \\| not \\| a \\| row \\| (`multi`)" in report
    assert "(``odd\\|id`x``) | 1 |" in report  # in a table: GFM drops the backslash before the pipe
    assert "(``odd|id`x``) (grade 1)" in report  # in a list
    assert (
        "From \\*sahra\\* with \\`code\\`, \\_under\\_, \\[link\\](http://x), "
        "\\<b\\>bold\\</b\\> \\# no heading \\\\ end" in report
    )


def derivation_values(report: str) -> dict[tuple[str, str], str]:
    """(query heading, retriever) -> the nDCG printed at the end of its derivation."""
    values = {}
    query = label = None
    for line in report.split("\n"):
        if line.startswith("### "):
            query, label = line[4:].split(": “")[0], None
        elif line.startswith("#### "):
            label = line[5:]
        elif query and line.startswith("**nDCG") and " is undefined" in line:
            values[(query, label)] = "undefined"
        elif query and line.startswith("**nDCG") and " = **" in line:
            values[(query, label)] = line.rsplit("**", 2)[1]
        elif query and line.startswith("Nothing was retrieved"):
            values[(query, label)] = line.split("nDCG")[1].split("= ")[1].split(" ")[0].rstrip(".")
    return values


def per_query_values(report: str, main: str) -> dict[tuple[str, str], str]:
    table = section(report, f"## 🔎 Per query: {main}", "## ").split("\n")
    labels = [c.strip() for c in table[2].split(" | ")[2:]]
    labels[-1] = labels[-1].rstrip(" |")
    values = {}
    for row in table[4:]:
        if not row.startswith("| "):
            break
        parts = [c.strip() for c in row[2:-2].split(" | ")]
        for label, value in zip(labels, parts[2:]):
            values[(parts[0], label)] = value
    return values


@pytest.mark.parametrize(
    "overrides",
    [
        {"report": {"detailed_queries": 10}},
        # Plain trec_eval ndcg: no cutoff, the ideal is built from every relevant passage
        # (q-ocean has 3, more than top_k = 2), so the derivation must not cut it at top_k.
        {"report": {"detailed_queries": 10}, "metrics": ["ndcg", "ndcg@2"], "main_metric": "ndcg", "top_k": 2},
        {"report": {"detailed_queries": 10}, "evaluation": {"no_relevant": "zero", "gain": "exponential"}},
    ],
)
def test_every_derivation_ends_on_the_value_in_the_per_query_table(overrides):
    run = hand_run(**overrides)
    if run.config.model.top_k == 2:  # what the runner would have kept
        from rag_eval._core.ranking import top_k

        for outcome in run.outcomes:
            outcome.ranking = {q: top_k(r, 2) for q, r in outcome.ranking.items()}
            outcome.results = evaluate(JUDGEMENTS, outcome.ranking, run.config.model.metrics)
    report = render_run_report(run)
    main = run.config.model.primary_metric
    derived = derivation_values(report)
    table = per_query_values(report, main)
    assert len(derived) == 2 * 4
    for (query, label), value in derived.items():
        expected = table[(query, label)]
        assert value == expected or (value == "undefined" and expected == "n/a"), (query, label, value, expected)
    if main == "ndcg":
        # q-ocean for alpha, by hand: DCG [3, 2] = 3 + 2/log2(3); IDCG over [3, 2, 1], not cut at 2.
        dcg, idcg = 3 + 2 / math.log2(3), 3 + 2 / math.log2(3) + 1 / 2
        assert derived[("q-ocean", "alpha")] == f"{dcg / idcg:.4f}" == "0.8950"
        assert "## 🧮 How nDCG was computed" in report
        assert "Ideal order (all judged passages with grade > 0, best first, not cut): [3, 2, 1]" in report


def test_summary_says_micro_when_micro():
    report = render_run_report(hand_run(evaluation={"aggregation": "micro"}))
    assert "nDCG: sum of DCG / sum of IDCG over judged queries (micro); other metrics: macro means" in report
    assert "Macro means" not in report


# ---- ids are shown exactly ----------------------------------------------------------------------------

# Ids a real collection holds, and every character that means something to markdown. The report
# once showed `a|b` as `a¦b` and backticks as quotes, so searching it for the real id failed.
AWKWARD_IDS = [
    "a|b", "a`b", "x``y", "`lead", "trail`", "a\\|b", "ends\\", "*_[x](y)<z>#w~&amp;$1$ + 2$",
    "<b>bold</b>", "reports/2024/q3.pdf#p12#c7", "<dbpedia:Oceanic_Airlines>", "~~strike~~", "|",
]


def rendered_lines(markdown: str, markup: frozenset[str] = frozenset()) -> list[str]:
    """The text a GFM renderer shows for each inline run (a paragraph, a heading, a table cell).

    markdown-it-py (CommonMark with GFM tables and strikethrough) parses it; any markup that is
    not a code span or plain text (emphasis, a link, HTML, strikethrough) fails the test, except the
    kinds of token named in ``markup`` (the report's own bold and italics).
    """
    markdown_it = pytest.importorskip("markdown_it")
    parser = markdown_it.MarkdownIt("commonmark").enable(["table", "strikethrough"])
    texts = []
    for token in parser.parse(markdown):
        if token.type != "inline":
            continue
        kinds = {child.type for child in token.children or []}
        assert kinds <= {"text", "text_special", "code_inline"} | markup, (markdown, kinds)
        texts.append("".join(child.content for child in token.children or []))
    return texts


def test_the_renderer_used_here_splits_table_cells_as_github_does():
    # GFM: a '|' with a backslash before it stays in the cell, and the backslash goes, even in code.
    assert rendered_lines("| a | b |\n|---|---|\n| `x\\|y` | p\\|q |\n") == ["a", "b", "x|y", "p|q"]


@pytest.mark.parametrize("doc_id", AWKWARD_IDS)
def test_an_id_renders_as_itself_in_a_table_and_in_a_line(doc_id):
    table = f"| id | text |\n|---|---|\n| {code_span(doc_id, in_table=True)} | {escape_cell(doc_id)} |\n"
    assert rendered_lines(table) == ["id", "text", doc_id, doc_id]
    assert rendered_lines(f"- {code_span(doc_id)} and {escape_inline(doc_id)}") == [f"{doc_id} and {doc_id}"]
    assert table_problems(table) == []


@pytest.mark.parametrize(
    "text, span",
    [
        ("a|b", "`a|b`"),
        ("a`b", "``a`b``"),
        ("x``y", "```x``y```"),
        ("`lead", "`` `lead ``"),  # padded: three backticks in a row would open a longer fence
        (" both ", "`  both  `"),  # padded: renderers strip one space from each side
        ("   ", "`   `"),  # only spaces: nothing is stripped
    ],
)
def test_code_spans_by_hand(text, span):
    assert code_span(text) == span
    assert rendered_lines(f"x {span} y") == [f"x {text} y"]


def test_the_report_shows_ids_exactly():
    report = render_run_report(hand_run(report={"detailed_queries": 10, "passage_chars": 200}))
    report = "\n".join(line for line in report.splitlines() if not line.startswith("- **Explore:** "))  # its one link
    lines = rendered_lines(report, frozenset({"strong_open", "strong_close", "em_open", "em_close", "softbreak"}))
    assert "A passage whose id has a pipe and a backtick. (odd|id`x)" in lines  # the ranking table's cell
    assert "A passage whose id has a pipe and a backtick. (odd|id`x) (grade 1)" in lines  # the missed list
    assert "q|pipe: “A query | with a pipe and *stars*”" in lines  # a heading
    assert "q|pipe" in lines  # the per-query table's first column
    assert not any("¦" in line for line in lines)


def test_retriever_notes_say_how_many_passages_the_embedding_cache_encoded_and_reused():
    from rag_eval._report.markdown import _description_notes

    partial = {"model": "m", "cache": "partial", "passages_encoded": 1, "passages_reused": 5182}
    assert _description_notes(partial) == "model: m; cache: partial (1 passages encoded, 5,182 reused)"
    assert _description_notes({"cache": "off", "passages_encoded": 3, "passages_reused": 0}) == "cache: off"
    assert _description_notes({"cache": "hit"}) == "cache: hit"  # an older results file without the counts


def test_retriever_notes_say_what_an_approximate_index_cost():
    from rag_eval._report.markdown import _description_notes

    cost = {"metric": "ndcg@10", "k": 10, "queries": 300, "overlap_mean": 0.9712, "overlap_min": 0.6,
            "metric_queries": 300, "metric_approx": 0.6512, "metric_exact": 0.653, "metric_difference": -0.0018}
    assert _description_notes({"approximation": cost}) == (
        "approximate index: overlap@10 with exact search 0.9712 (min 0.6000) on 300 queries; "
        "ndcg@10 0.6512 against 0.6530 exact (-0.0018, on 300 judged)"
    )
    assert _description_notes({"approximation": {"k": 10, "queries": 0, "overlap_mean": None}}) == ""


def test_a_reused_ranking_says_its_notes_and_times_are_the_storing_runs():
    # A stranger read "cache: miss (796 passages encoded)" on a run that encoded nothing.
    from rag_eval._report.markdown import _description_notes

    notes = _description_notes({"cache": "miss", "passages_encoded": 796, "passages_reused": 0, "ranking_cache": "hit"})
    assert notes == (
        "cache: miss (796 passages encoded, 0 reused); ranking_cache: hit (times and notes from the run that stored "
        "the ranking)"
    )


def test_bidirectional_controls_in_an_id_are_shown_by_code_point_not_obeyed():
    # The attack: an id holding U+202E (right-to-left override) was written raw into report.md's rows,
    # so the rest of the row read backwards on screen.
    from rag_eval._report.format import code_span, escape_cell

    for control in ("\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069"):
        shown = f"<U+{ord(control):04X}>"
        assert escape_cell(f"q{control}1") == f"q\\{shown[0]}{shown[1:-1]}\\{shown[-1]}1"
        assert code_span(f"q{control}1") == f"`q{shown}1`"
    assert escape_cell("שלום q1") == "שלום q1"  # right-to-left text itself is left as it is
