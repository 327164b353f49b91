"""The results file (rag_eval/_run/results_file.py): strict JSON, validated on load, built once.

Strictness is checked with a JSON parser that refuses NaN and Infinity, as JavaScript's
JSON.parse, jq and most other languages' parsers do.
"""

from __future__ import annotations

import importlib.util
import json
import math
import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_eval._core.errors import InputFormatError, RetrieverError
from rag_eval._data.config.schema import load_config
from rag_eval._run.checks import check_ranking
from rag_eval._run.execute import execute
from rag_eval._run.results_file import (
    SNIPPET_CHARS,
    SNIPPET_RANKS,
    ResultsFile,
    load_results_file,
    results_document,
    results_json,
    snippet,
)
from rag_eval.cli import main

REPO = Path(__file__).resolve().parents[1]
OCEAN = REPO / "datasets" / "ocean_facts.yaml"
FIXTURES = Path(__file__).resolve().parent / "regression_fixtures"


def strict_loads(text: str):
    def refuse(name):
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


PLUGIN = textwrap.dedent(
    """
    import datetime
    import math
    from pathlib import Path

    class Odd:
        '''Scores every passage; describes itself with values JSON has no word for.'''

        def __init__(self, weight=1.0):
            self.weight = weight

        def index(self, corpus):
            self.docs = sorted(corpus)

        def search(self, queries, top_k):
            return {q: {d: float(i) for i, d in enumerate(self.docs[:top_k])} for q in queries}

        def describe(self):
            return {"weight": self.weight, "limit": math.inf, "when": datetime.date(2024, 5, 1),
                    "dims": (384, 768), "where": Path("/models/x"), "ok": 1.5}
    """
)


@pytest.fixture
def odd_run(tmp_path, monkeypatch):
    (tmp_path / "odd_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    config = {
        "name": "strict-json",
        "dataset": {"path": str(OCEAN)},
        "retrievers": [{"label": "odd", "adapter": "odd_plugin:Odd", "params": {"weight": float("nan")}}],
        "metrics": ["ndcg@10", "recall@5"],
        "top_k": 12,
        "output": "out",
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))  # weight: .nan in YAML
    assert ".nan" in path.read_text()
    return path


def test_results_file_is_strict_json_with_null_for_what_json_cannot_hold(odd_run, capsys):
    assert main(["run", str(odd_run), "--no-progress"]) == 0
    text = (odd_run.parent / "out" / "odd.json").read_text()
    document = strict_loads(text)  # no bare NaN / Infinity anywhere
    retriever = document["retriever"]
    assert retriever["params"] == {"weight": None}
    assert {k: retriever["description"][k] for k in ("weight", "limit", "when", "dims", "where", "ok")} == {
        "weight": None, "limit": None, "when": "2024-05-01", "dims": [384, 768], "where": "/models/x", "ok": 1.5,
    }
    assert document["config"]["resolved"]["retrievers"][0]["params"] == {"weight": None}


def test_results_json_refuses_nan_as_a_guard():
    with pytest.raises(ValueError):
        results_json({"x": math.nan})
    assert results_json({"x": None, "y": 1.5}) == '{\n  "x": null,\n  "y": 1.5\n}\n'


def test_run_results_round_trip_through_the_file(tmp_path, capsys):
    out = tmp_path / "ocean"
    assert main(["run", str(REPO / "configs" / "ocean_facts.yaml"), "--output", str(out), "--no-progress"]) == 0
    config = load_config(REPO / "configs" / "ocean_facts.yaml")
    run = execute(config, progress=False)
    for outcome in run.outcomes:
        loaded = load_results_file(out / f"{outcome.label}.json")
        assert loaded.label == outcome.label and loaded.top_k == 10
        assert loaded.fingerprint == run.dataset.fingerprint and loaded.dataset_name == "ocean-facts"
        assert loaded.results.query_ids == outcome.results.query_ids
        for name, column in outcome.results.values.items():
            np.testing.assert_array_equal(loaded.results.values[name], column)  # NaN where NaN, bit for bit
        assert loaded.results.aggregate == outcome.results.aggregate
        # Rankings as [doc, score, grade or None], in rank order; grades from the dataset.
        for qid, entries in loaded.rankings.items():
            judged = run.dataset.judgements.get(qid, {})
            # trec_eval's order: score descending, ties by doc id descending.
            expected = sorted(outcome.ranking[qid].items(), key=lambda item: (item[1], item[0]), reverse=True)
            assert [(d, s) for d, s, _ in entries] == expected
            assert all(g == judged.get(d) for d, _, g in entries)


def test_passages_hold_the_text_of_the_top_ranked_passages_only(tmp_path, capsys):
    out = tmp_path / "ocean"
    assert main(["run", str(REPO / "configs" / "ocean_facts.yaml"), "--output", str(out), "--no-progress"]) == 0
    corpus = {p["id"]: p["text"] for p in yaml.safe_load(OCEAN.read_text())["corpus"]}
    document = json.loads((out / "bm25.json").read_text())
    top = {doc for entries in document["rankings"].values() for doc, _, _ in entries[:SNIPPET_RANKS]}
    assert set(document["passages"]) == top
    for doc, text in document["passages"].items():
        full = " ".join(corpus[doc].split())
        assert text == (full if len(full) <= SNIPPET_CHARS else full[: SNIPPET_CHARS - 1].rstrip() + "…")
        assert len(text) <= SNIPPET_CHARS
    loaded = load_results_file(out / "bm25.json")
    assert loaded.passages["pacific-largest"] == {"text": "The Pacific Ocean is the largest ocean."}


def test_snippet():
    assert snippet("  a\nb\tc ") == "a b c"
    assert snippet("x" * 70) == "x" * 59 + "…"
    assert snippet("word " * 20, limit=12) == "word word w…"
    assert snippet(" " * 500 + "late words", limit=5) == "late…"  # white space beyond the prefix it reads first


@settings(max_examples=400, deadline=None)
@given(
    text=st.lists(
        st.sampled_from(["a", "é", "語", " ", "\n", "\t", "\u3000", "\u00a0", "x" * 7, " " * 40]), max_size=60
    ).map("".join),
    limit=st.sampled_from([1, 2, 5, 12, 60]),
)
def test_snippet_reads_a_prefix_and_cuts_as_the_whole_text_would(text, limit):
    # snippet() normalises only a prefix when that already runs past the limit: the same text as here.
    whole = " ".join(text.split())
    assert snippet(text, limit) == (whole if len(whole) <= limit else whole[: limit - 1].rstrip() + "…")


def test_a_results_file_without_passages_still_loads(tmp_path):
    spec = importlib.util.spec_from_file_location("helpers", FIXTURES / "helpers.py")
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    document = helpers.results_document({"q1": {"ndcg@10": 0.5}, "q2": {"ndcg@10": None}})
    assert "passages" not in document
    path = tmp_path / "old.json"
    path.write_text(json.dumps(document))
    loaded = load_results_file(path)
    assert loaded.passages == {} and loaded.results.aggregate["ndcg@10"] == 0.5
    assert math.isnan(loaded.results.value("ndcg@10", "q2"))


def test_the_run_document_is_built_once_and_validates(tmp_path):
    config = load_config(REPO / "configs" / "ocean_facts.yaml")
    run = execute(config, progress=False)
    outcome = run.outcomes[0]
    first = results_document(run, outcome)
    assert results_document(run, outcome) is first
    checked = ResultsFile.from_document("x.json", first, results=outcome.results)
    assert checked.results is outcome.results and checked.label == outcome.label


@pytest.mark.parametrize(
    "score, message",
    [
        (math.inf, "score is inf; scores must be finite numbers"),
        (-math.inf, "score is -inf; scores must be finite numbers"),
        (10**400, "score 1000000000000000000000000000000000000000... (401 characters) is too large for a float64"),
    ],
)
def test_infinite_or_overflowing_scores_are_refused(score, message):
    with pytest.raises(RetrieverError) as raised:
        check_ranking("mine", {"q1": {"d1": score}}, {"q1": "text"}, {"d1": {"text": "t"}}, 10)
    assert str(raised.value) == f"retriever 'mine': query 'q1', doc 'd1': {message}" + (
        "; return scores a float can hold" if "too large" in message else ""
    )


# ---- the numbers of a loaded file hold together ------------------------------------------------------

CORRUPTED = "this file was edited or corrupted: regenerate it with rag-eval run"


def _helpers():
    spec = importlib.util.spec_from_file_location("helpers", FIXTURES / "helpers.py")
    helpers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    return helpers


def _micro_document(per_query, aggregate_ndcg):
    helpers = _helpers()
    document = helpers.results_document(per_query, options={**helpers.DEFAULT_OPTIONS, "aggregation": "micro"})
    document["results"]["aggregate"]["ndcg@4"] = aggregate_ndcg
    return document


MICRO_ROWS = {  # nDCG@4 = DCG@4 / IDCG@4 per query; q3 has nothing relevant (left out, IDCG 0)
    "q1": {"ndcg@4": 0.5, "dcg@4": 1.0, "idcg@4": 2.0},
    "q2": {"ndcg@4": 1.0, "dcg@4": 3.0, "idcg@4": 3.0},
    "q3": {"ndcg@4": None, "dcg@4": 0.0, "idcg@4": 0.0},
}


def test_micro_ndcg_is_checked_against_the_files_dcg_and_idcg():
    # Micro: (1 + 3) / (2 + 3) = 0.8, where the macro mean would be 0.75.
    assert ResultsFile.from_document("m.json", _micro_document(MICRO_ROWS, 0.8)).results.aggregate["ndcg@4"] == 0.8
    with pytest.raises(InputFormatError) as raised:
        ResultsFile.from_document("m.json", _micro_document(MICRO_ROWS, 0.75))
    assert str(raised.value) == (
        "m.json: results.aggregate.ndcg@4: 0.75 is not sum dcg@4 / sum idcg@4 over the queries in the mean "
        f"(aggregation: micro), 0.8; {CORRUPTED}"
    )


def test_micro_ndcg_without_dcg_and_idcg_is_checked_only_for_its_bounds():
    # The per-query nDCG values do not determine sum DCG / sum IDCG: nothing to recompute it from.
    rows = {q: {"ndcg@4": row["ndcg@4"]} for q, row in MICRO_ROWS.items()}
    assert ResultsFile.from_document("m.json", _micro_document(rows, 0.8)).results.aggregate["ndcg@4"] == 0.8
    with pytest.raises(InputFormatError, match=r"aggregate\.ndcg@4: 1\.2 is impossible: every ndcg@4 lies in \[0, 1\]"):
        ResultsFile.from_document("m.json", _micro_document(rows, 1.2))


def test_aggregates_within_rounding_and_a_rounded_perfect_ndcg_load():
    helpers = _helpers()
    # 0.1 + 0.2 + 0.4 summed in another order than the writer's: equal within 1e-9, not bit for bit.
    document = helpers.results_document({"a": {"mrr@10": 0.1}, "b": {"mrr@10": 0.2}, "c": {"mrr@10": 0.4}})
    document["results"]["aggregate"]["mrr@10"] = (0.4 + 0.2 + 0.1) / 3
    assert ResultsFile.from_document("r.json", document).results.aggregate["mrr@10"] == (0.4 + 0.2 + 0.1) / 3
    # A perfect ranking's nDCG may be 1 plus a rounding error (DCG multiplies by 1/log2, IDCG divides).
    rounded = helpers.results_document({"a": {"ndcg@3": 1.0000000000000002}})
    assert ResultsFile.from_document("r.json", rounded).results.aggregate["ndcg@3"] == 1.0000000000000002
    document["results"]["aggregate"]["mrr@10"] *= 1 + 1e-8  # past the tolerance
    with pytest.raises(InputFormatError, match=r"aggregate\.mrr@10: .* is not the mean of the per-query values"):
        ResultsFile.from_document("r.json", document)


def test_an_aggregate_with_no_value_to_average_must_be_null():
    document = _helpers().results_document({"a": {"ndcg@3": None}, "b": {"ndcg@3": None}})
    assert math.isnan(ResultsFile.from_document("n.json", document).results.aggregate["ndcg@3"])
    document["results"]["aggregate"]["ndcg@3"] = 0.5
    with pytest.raises(InputFormatError) as raised:
        ResultsFile.from_document("n.json", document)
    assert str(raised.value) == (
        f"n.json: results.aggregate.ndcg@3: is 0.5 but no query has a value to average (it would be null); {CORRUPTED}"
    )


def test_dcg_is_unbounded_above_but_never_negative_nor_left_out():
    helpers = _helpers()
    assert ResultsFile.from_document("d.json", helpers.results_document({"a": {"dcg@4": 7.5}})).results
    with pytest.raises(InputFormatError) as raised:
        ResultsFile.from_document("d.json", helpers.results_document({"a": {"dcg@4": -1.0}}))
    assert str(raised.value) == f"d.json: results.per_query.a.dcg@4: -1.0 is impossible: every dcg@4 lies >= 0; {CORRUPTED}"
    document = helpers.results_document({"a": {"dcg@4": None}, "b": {"dcg@4": 1.0}})
    with pytest.raises(InputFormatError) as raised:
        ResultsFile.from_document("d.json", document)
    assert str(raised.value) == (
        "d.json: results.left_out.dcg@4[0]: dcg@4 has a value for every query, so none is left out of its mean; "
        + CORRUPTED
    )


@pytest.mark.parametrize("evaluation", [{"aggregation": "micro"}, {"aggregation": "micro", "no_relevant": "zero"}])
def test_files_a_run_writes_hold_together(tmp_path, evaluation):
    config_path = tmp_path / "micro.yaml"
    config = yaml.safe_load((REPO / "configs" / "ocean_facts.yaml").read_text())
    config["dataset"]["path"] = str(OCEAN)
    config["evaluation"] = {**config.get("evaluation", {}), **evaluation}
    config.pop("output", None)
    config_path.write_text(yaml.safe_dump(config))
    run = execute(load_config(config_path), progress=False)
    for outcome in run.outcomes:
        document = json.loads(results_json(results_document(run, outcome)))
        loaded = ResultsFile.from_document("run.json", document)  # the checks recompute every aggregate
        assert loaded.results.options["aggregation"] == "micro"
        assert loaded.results.aggregate["ndcg@4"] == outcome.results.aggregate["ndcg@4"]


# ---- one rule for the writer and the check; one strict JSON parser ------------------------------------------


@pytest.mark.parametrize("aggregation", ["macro", "micro"])
def test_the_check_recomputes_each_aggregate_bit_for_bit_with_the_evaluators_rule(aggregation):
    """The check and the evaluator share rag_eval._scoring.metrics.aggregation: the same values in the same order give
    the same bits (the tolerance is for files written on other machines, not for a second copy of the rule)."""
    from rag_eval import evaluate
    from rag_eval._scoring.consistency import check_numbers
    from rag_eval._scoring.metrics.aggregation import dataset_value
    from rag_eval._scoring.metrics.measures import parse_metric

    judgements = {"q1": {"a": 3, "b": 1, "c": 2}, "q2": {"d": 1, "e": 2}, "q3": {"f": 0}}
    run = {"q1": {"a": 0.9, "c": 0.3, "x": 0.5}, "q2": {"e": 0.1, "d": 0.7, "y": 0.4}, "q3": {"f": 0.2}}
    results = evaluate(judgements, run, ["ndcg@2", "dcg@2", "idcg@2", "recall@2"], aggregation=aggregation)
    section = results.to_dict()
    check_numbers(section["metrics"], section["options"], section["per_query"], section["left_out"],
                  section["aggregate"])
    rows = section["per_query"].values()

    def column(name):
        return np.array([np.nan if row[name] is None else row[name] for row in rows])

    for name in section["metrics"]:
        recomputed = dataset_value(parse_metric(name), column(name), aggregation, lambda part: column(str(part)))
        assert recomputed == results.aggregate[name]
    # By hand, q1 ranks a (3), x (unjudged), c: DCG@2 = 3, IDCG@2 = 3 + 2/log2(3); q2 ranks d (1), y, e:
    # DCG@2 = 1, IDCG@2 = 2 + 1/log2(3); q3 has nothing relevant (left out of nDCG).
    dcg, idcg = [3.0, 1.0], [3 + 2 / math.log2(3), 2 + 1 / math.log2(3)]
    expected = sum(dcg) / sum(idcg) if aggregation == "micro" else (dcg[0] / idcg[0] + dcg[1] / idcg[1]) / 2
    assert results.aggregate["ndcg@2"] == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": ' + "1" * 5000 + "}", "r.json: invalid JSON: a number is too long to read (Exceeds the limit (4300 "
                                      "digits) for integer string conversion"),
        ("[" * 3000 + "]" * 3000, "r.json: arrays or objects nested too deeply to parse (more than 500 levels at line 1, "
                                  "column 501); a results file is a few levels deep"),
        ('{"a": [1, {"b": -Infinity}]}', "r.json: a[1].b: -Infinity is not JSON (strict parsers reject it); results "
                                         "files write null for a missing value and hold no infinite number"),
        ('{"a": {"b c": NaN}}', 'r.json: a["b c"]: NaN is not JSON (strict parsers reject it)'),
        ("{\n  \"a\": 1,\n}", "r.json: line 3, column 1: not valid JSON (Expecting property name enclosed in double "
                                "quotes)"),
    ],
)
def test_results_files_are_parsed_by_the_one_strict_json_parser(tmp_path, text, message):
    (tmp_path / "r.json").write_text(text)
    with pytest.raises(InputFormatError) as raised:
        load_results_file(tmp_path / "r.json")
    assert str(raised.value).removeprefix(f"{tmp_path}/").startswith(message), str(raised.value)
    assert "\n" not in str(raised.value)


@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
))
def test_results_json_is_the_same_json_as_the_standard_library_writes(document):
    """Laid out its own way (a list of scalars on one line), read back it is json.dumps's document exactly."""
    text = results_json({"doc": document})
    assert json.loads(text) == json.loads(json.dumps({"doc": document}, indent=2, allow_nan=False))
    assert text.endswith("\n")


def _laid_out(value, level=0):
    """The documented layout, written plainly: a list of scalars or of lists of scalars on one line, the rest indented."""
    def flat(item):
        return not isinstance(item, dict) and (
            not isinstance(item, list) or not any(isinstance(part, (list, dict)) for part in item))

    inner = "  " * (level + 1)
    if isinstance(value, dict) and value:
        items = [f"{inner}{json.dumps(k)}: {_laid_out(v, level + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + "  " * level + "}"
    if isinstance(value, list) and value and not all(flat(item) for item in value):
        return "[\n" + ",\n".join(inner + _laid_out(v, level + 1) for v in value) + "\n" + "  " * level + "]"
    return json.dumps(value, separators=(", ", ": "))


@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=25,
))
def test_results_json_puts_on_one_line_exactly_the_lists_of_scalars_and_of_lists_of_scalars(document):
    """The layout itself (the test above checks only the JSON read back): the type-based fast path of
    rag_eval._core.files must give the bytes of the rule written plainly."""
    assert results_json({"doc": document}) == _laid_out({"doc": document}) + "\n"


@given(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
       | st.floats(width=32).filter(math.isfinite).map(np.float32).map(np.float64))
def test_each_scalar_is_written_as_json_dumps_writes_it(value):
    """Byte for byte (-0.0, 5e-324, 2**70, "\u2028", numpy's float64), also as the one item of a list."""
    written = json.dumps(value)
    assert results_json({"v": value, "l": [value]}) == '{\n  "v": ' + written + ',\n  "l": [' + written + "]\n}\n"


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, np.float64("nan")])
def test_a_value_json_cannot_hold_is_refused_when_written(value):
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        results_json({"v": {"q": value}})


def test_results_json_puts_each_ranking_on_one_line():
    text = results_json({"rankings": {"q 1": [["d\u00e9", 1.5, 2], ["d2", 0.5, None]]}, "n": [1, [2, {"a": 1}]]})
    assert text == (
        '{\n  "rankings": {\n    "q 1": [["d\\u00e9", 1.5, 2], ["d2", 0.5, null]]\n  },\n'
        '  "n": [\n    1,\n    [\n      2,\n      {\n        "a": 1\n      }\n    ]\n  ]\n}\n'
    )
