"""Regression checks in the library: gates, statistics, comparability, the comparison
report and the pytest helper.

The small cases are built by hand (tests/regression_fixtures/helpers.py writes results
documents with chosen per-query values) so that every expected number can be derived
on paper; the p-values of the real ocean-facts runs are checked against scipy.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from regression_fixtures import helpers
from scipy import stats as sps

from rag_eval._commands.verdict_text import verdict_lines
from rag_eval._compare.regression import (
    Gate,
    PairedValues,
    ResultsFile,
    compare,
    decide,
    gates_from_config,
    load_results_file,
    make_gate,
    pair_by_query,
    parse_gate,
    parse_gates,
)
from rag_eval._core.errors import ComparisonError, ConfigError, InputFormatError
from rag_eval._report.comparison import render_comparison, render_verdict_summary
from rag_eval._scoring import stats
from rag_eval.cli import main

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "regression_fixtures"


RESAMPLES = 2000


@pytest.fixture(autouse=True)
def _no_job_summary(monkeypatch):
    # Never append to a real CI job summary while testing.
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def as_file(document, path="doc.json") -> ResultsFile:
    return ResultsFile.from_document(path, document)


def test_the_comparison_is_imported_from_one_place_and_its_steps_each_have_a_module():
    # The steps live apart (issue 19: one job a module); rag_eval._compare.regression names them all.
    from rag_eval._compare import comparable, gate_results, gates, paired, regression

    assert all(hasattr(regression, name) for name in regression.__all__)
    assert regression.parse_gate is gates.parse_gate and regression.Gate is gates.Gate
    assert regression.check_comparable is comparable.check_comparable
    assert regression.pair_by_query is paired.pair_by_query and regression.PairedValues is paired.PairedValues
    assert regression.decide is gate_results.decide and regression.GateResult is gate_results.GateResult
    for module in (comparable, gate_results, gates, paired, regression):
        assert len(Path(module.__file__).read_text(encoding="utf-8").splitlines()) < 400, module.__name__


# ---- the hand-made case ------------------------------------------------------------------
#
# Four queries, values chosen as multiples of 1/4 so every sum is exact in binary floating point.
#
#            ndcg@3 (B -> C)   recall@3 (B -> C)   mrr@10 (B -> C)
#   qa       1.00 -> 0.50      1.0 -> 0.5          1 -> 0.50
#   qb       0.75 -> 0.50      0.5 -> 0.5          1 -> 0.50
#   qc       0.50 -> 0.25      0.5 -> 0.5          1 -> 0.50
#   qd       0.25 -> 0.50      0.0 -> 0.5          1 -> 0.75
#
#   ndcg@3 deltas  -1/2, -1/4, -1/4, +1/4: mean -3/16 = -0.1875; wins 1, ties 0, losses 3.
#     Sign flips: the sum is ±1/2 plus three ±1/4, i.e. ±1/2 + {-3/4 (1 way), -1/4 (3), 1/4 (3), 3/4 (1)}.
#     |sum| >= 3/4 for 1/2+3/4 (1), 1/2+1/4 (3), -1/2-3/4 (1), -1/2-1/4 (3): 8 of 16, so p = 0.5 exactly.
#   recall@3 deltas -1/2, 0, 0, +1/2: mean 0; wins 1, ties 2, losses 1; every pattern has |sum| >= 0: p = 1.
#   mrr@10 deltas -1/2, -1/2, -1/2, -1/4: mean -7/16 = -0.4375; wins 0, ties 0, losses 4.
#     |sum| = 7/4 only when every sign is the same: 2 of 16 patterns, p = 0.125.

BASE = {
    "qa": {"ndcg@3": 1.0, "recall@3": 1.0, "mrr@10": 1.0},
    "qb": {"ndcg@3": 0.75, "recall@3": 0.5, "mrr@10": 1.0},
    "qc": {"ndcg@3": 0.5, "recall@3": 0.5, "mrr@10": 1.0},
    "qd": {"ndcg@3": 0.25, "recall@3": 0.0, "mrr@10": 1.0},
}
CAND = {
    "qa": {"ndcg@3": 0.5, "recall@3": 0.5, "mrr@10": 0.5},
    "qb": {"ndcg@3": 0.5, "recall@3": 0.5, "mrr@10": 0.5},
    "qc": {"ndcg@3": 0.25, "recall@3": 0.5, "mrr@10": 0.5},
    "qd": {"ndcg@3": 0.5, "recall@3": 0.5, "mrr@10": 0.75},
}
TEXTS = {
    "qa": "Which ocean | sea is *largest*?",
    "qb": "What is the deepest point?",
    "qc": "Which desert is the driest?",
    "qd": "Which sea has no coastline?",
}
# qa, the worst regression: in the top 3 the candidate loses d3 (grade 1) and gains d6 (grade 1);
# d1 (grade 2) is relevant and in the top 3 on both sides; d4 is unjudged.
RANK_BASE = {
    "qa": [["d1", 3.0, 2], ["d3", 2.0, 1], ["d2", 1.0, 0], ["d4", 0.5, None]],
    "qb": [["d7", 2.0, 1], ["d8", 1.0, 0]],
    "qc": [["d9", 1.0, 2]],
    "qd": [["d2", 1.0, 0]],
}
RANK_CAND = {
    "qa": [["d2", 3.0, 0], ["d6", 2.0, 1], ["d1", 1.0, 2], ["d3", 0.5, 1]],
    "qb": [["d8", 2.0, 0], ["d7", 1.0, 1]],
    "qc": [["d2", 1.0, 0], ["d9", 0.5, 2]],
    "qd": [["d5", 1.0, 3]],
}


def hand_documents():
    base = helpers.results_document(BASE, label="old", query_texts=TEXTS, rankings=RANK_BASE)
    cand = helpers.results_document(CAND, label="new", query_texts=TEXTS, rankings=RANK_CAND)
    return base, cand


def hand_pair(base_edits=None, cand_edits=None):
    """The hand-made pair as ResultsFiles; ``*_edits``: {key: value} set at the documents' top level first."""
    base, cand = hand_documents()
    base.update(base_edits or {})
    cand.update(cand_edits or {})
    return as_file(base, "old.json"), as_file(cand, "new.json")


def column(table, metric):
    return np.array([table[q][metric] for q in ("qa", "qb", "qc", "qd")])


def test_hand_case_numbers():
    base, cand = hand_pair()
    gates = [make_gate("ndcg@3", 0.5), make_gate("recall@3", 0.5), make_gate("mrr@10", 0.5)]
    verdict = compare(base, cand, gates, n_resamples=RESAMPLES)
    ndcg, recall, mrr = verdict.gates
    assert (ndcg.baseline, ndcg.candidate, ndcg.mean_delta) == (0.625, 0.4375, -0.1875)
    assert (ndcg.wins, ndcg.ties, ndcg.losses, ndcg.n) == (1, 0, 3, 4)
    assert ndcg.p_permutation == 0.5
    assert (recall.mean_delta, recall.wins, recall.ties, recall.losses, recall.p_permutation) == (0.0, 1, 2, 1, 1.0)
    assert recall.p_t_test == pytest.approx(1.0)
    assert (mrr.mean_delta, mrr.wins, mrr.ties, mrr.losses, mrr.p_permutation) == (-0.4375, 0, 0, 4, 0.125)
    # Without alpha nothing is Holm-adjusted.
    assert all(g.p_adjusted is None for g in verdict.gates)
    # The paired t-test is scipy's ttest_rel on the per-query values.
    for g in verdict.gates:
        metric = g.gate.metric
        expected = sps.ttest_rel(column(CAND, metric), column(BASE, metric)).pvalue
        assert g.p_t_test == pytest.approx(expected, rel=1e-12, abs=1e-15)
    # By hand for ndcg@3: deviations from -3/16 are -5/16, -1/16, -1/16, 7/16, squares sum 76/256 = 19/64,
    # variance 19/192, se^2 = 19/768, t^2 = (9/256) / (19/768) = 27/19; p = 2 P(T_3 <= -sqrt(27/19)).
    assert ndcg.p_t_test == pytest.approx(2 * sps.t.cdf(-np.sqrt(27 / 19), 3), rel=1e-12)
    # The per-query deltas behind the verdict.
    assert verdict.deltas["ndcg@3"] == {"qa": -0.5, "qb": -0.25, "qc": -0.25, "qd": 0.25}


def test_gate_at_the_exact_limit_passes_and_just_below_fails():
    base, cand = hand_pair()
    at_limit = compare(base, cand, [make_gate("ndcg@3", max_drop=0.1875)], n_resamples=RESAMPLES)
    assert at_limit.passed and at_limit.gates[0].reason == "drop 0.1875 within max_drop 0.1875"
    below = compare(base, cand, [make_gate("ndcg@3", max_drop=0.1874)], n_resamples=RESAMPLES)
    assert not below.passed
    assert below.failure_lines() == ["ndcg@3: dropped 0.1875 > max_drop 0.1874"]


def test_float_noise_does_not_fail_a_drop_equal_to_max_drop():
    # 0.3 - 0.2 is 0.09999999999999998 in binary; the drop of 0.1 must still be "at the limit".
    base = as_file(helpers.results_document({"q1": {"ndcg@10": 0.3}, "q2": {"ndcg@10": 0.3}}))
    cand = as_file(helpers.results_document({"q1": {"ndcg@10": 0.2}, "q2": {"ndcg@10": 0.2}}))
    assert compare(base, cand, [make_gate("ndcg@10", 0.1)], n_resamples=RESAMPLES).passed
    assert not compare(base, cand, [make_gate("ndcg@10", 0.0999)], n_resamples=RESAMPLES).passed


def test_alpha_gate_passes_a_large_but_not_significant_drop():
    base, cand = hand_pair()
    verdict = compare(base, cand, [make_gate("ndcg@3", max_drop=0.01, alpha=0.05)], n_resamples=RESAMPLES)
    (g,) = verdict.gates
    # drop 0.1875 > 0.01, but p = 0.5 (one gate: Holm leaves it as is) >= 0.05.
    assert g.p_adjusted == 0.5
    assert verdict.passed
    assert "not significant" in g.reason and "p=0.5000" in g.reason


def test_alpha_gate_fails_a_significant_drop():
    base, cand = hand_pair()
    verdict = compare(base, cand, [make_gate("mrr@10", max_drop=0.1, alpha=0.2)], n_resamples=RESAMPLES)
    (g,) = verdict.gates
    assert g.p_adjusted == 0.125 and not g.passed
    assert g.reason == "dropped 0.4375 > max_drop 0.1, significant (p=0.1250 < alpha 0.2)"


def test_holm_correction_over_the_gates_with_alpha():
    base, cand = hand_pair()
    gates = [
        make_gate("ndcg@3", 0.0, alpha=0.2),
        make_gate("mrr@10", 0.0, alpha=0.2),
        make_gate("recall@3", 0.0),  # no alpha: not part of the family
    ]
    verdict = compare(base, cand, gates, n_resamples=RESAMPLES)
    ndcg, mrr, recall = verdict.gates
    # Raw p: ndcg 0.5, mrr 0.125. Holm with m = 2: the smallest (mrr) x 2 = 0.25,
    # the next (ndcg) x 1 = 0.5, kept >= 0.25.
    assert (ndcg.p_adjusted, mrr.p_adjusted, recall.p_adjusted) == (0.5, 0.25, None)
    assert [ndcg.p_adjusted, mrr.p_adjusted] == helpers.holm_by_hand([ndcg.p_permutation, mrr.p_permutation])
    # mrr alone (raw p 0.125 < 0.2) would fail; corrected (0.25 >= 0.2) it passes.
    assert mrr.passed and ndcg.passed and recall.passed
    assert verdict.passed


def test_holm_on_real_runs_matches_hand_computation(ocean_runs):
    base = load_results_file(ocean_runs / "bm25.json")
    cand = load_results_file(ocean_runs / "seed-ranking.json")
    metrics = ["ndcg@1", "ndcg@3", "ndcg@10", "recall@10", "mrr@10"]
    verdict = compare(base, cand, [make_gate(m, 0.0, alpha=0.05) for m in metrics], n_resamples=RESAMPLES)
    raw = [g.p_permutation for g in verdict.gates]
    assert [g.p_adjusted for g in verdict.gates] == pytest.approx(helpers.holm_by_hand(raw), abs=0, rel=1e-15)


def test_statistics_on_real_runs_match_scipy(ocean_runs):
    """p (t-test) = scipy.stats.ttest_rel and p (permutation) = scipy's exact permutation test,
    both on the per-query values read straight from the two JSON files."""
    base_doc = json.loads((ocean_runs / "bm25.json").read_text())
    cand_doc = json.loads((ocean_runs / "seed-ranking.json").read_text())
    qids = sorted(base_doc["results"]["per_query"])
    verdict = compare(
        load_results_file(ocean_runs / "bm25.json"),
        load_results_file(ocean_runs / "seed-ranking.json"),
        [make_gate(m) for m in ("ndcg@4", "ndcg@10", "recall@10")],
        n_resamples=RESAMPLES,
    )
    for g in verdict.gates:
        b = np.array([base_doc["results"]["per_query"][q][g.gate.metric] for q in qids])
        c = np.array([cand_doc["results"]["per_query"][q][g.gate.metric] for q in qids])
        assert g.n == len(qids) == 10
        assert g.mean_delta == pytest.approx(float(np.mean(c - b)), rel=1e-12)
        assert g.p_t_test == pytest.approx(sps.ttest_rel(c, b).pvalue, rel=1e-10)
        exact = sps.permutation_test(
            (c, b), lambda x, y: np.mean(x - y), permutation_type="samples", n_resamples=np.inf
        ).pvalue
        assert g.p_permutation == pytest.approx(exact, rel=1e-12)
        assert (g.wins, g.ties, g.losses) == (
            int(np.sum(c - b > 1e-12)), int(np.sum(np.abs(c - b) <= 1e-12)), int(np.sum(c - b < -1e-12))
        )
        assert g.ci_low <= g.mean_delta <= g.ci_high


def test_bootstrap_ci_is_seeded_and_reproducible(ocean_runs):
    base = load_results_file(ocean_runs / "bm25.json")
    cand = load_results_file(ocean_runs / "seed-ranking.json")
    gates = [make_gate("ndcg@10")]
    first = compare(base, cand, gates, n_resamples=RESAMPLES, seed=7).gates[0]
    again = compare(base, cand, gates, n_resamples=RESAMPLES, seed=7).gates[0]
    other = compare(base, cand, gates, n_resamples=RESAMPLES, seed=8).gates[0]
    assert (first.ci_low, first.ci_high) == (again.ci_low, again.ci_high)
    assert (first.ci_low, first.ci_high) != (other.ci_low, other.ci_high)
    # It is the percentile bootstrap of the per-query deltas, with the given seed and level.
    order = list(base.results.query_ids)
    deltas = np.array([compare(base, cand, gates, n_resamples=RESAMPLES).deltas["ndcg@10"][q] for q in order])
    assert (first.ci_low, first.ci_high) == stats.bootstrap_ci(deltas, confidence=0.95, n_resamples=RESAMPLES, seed=7)
    narrow = compare(base, cand, gates, n_resamples=RESAMPLES, seed=7, confidence=0.5).gates[0]
    assert first.ci_low < narrow.ci_low <= narrow.ci_high < first.ci_high


def test_direction_comes_from_the_metric_definition(monkeypatch):
    """Pretend nDCG were lower-is-better: the same numbers become an improvement."""
    from rag_eval._scoring.metrics import measures

    base, cand = hand_pair()
    gate = [make_gate("ndcg@3", 0.0)]
    assert not compare(base, cand, gate, n_resamples=RESAMPLES).passed
    monkeypatch.setitem(measures.FAMILIES, "ndcg", dataclasses.replace(measures.FAMILIES["ndcg"], higher_is_better=False))
    verdict = compare(base, cand, gate, n_resamples=RESAMPLES)
    (g,) = verdict.gates
    assert verdict.passed and g.mean_delta == -0.1875
    assert (g.wins, g.ties, g.losses) == (3, 0, 1)  # qa, qb, qc went down: wins for a lower-is-better metric
    report = render_comparison(verdict)
    regressed = report.split("**Regressed**")[1].split("**Improved**")[0]
    assert "| qd |" in regressed and "| qa |" not in regressed


def test_queries_left_out_on_both_sides_are_not_paired():
    b = dict(BASE, qe={"ndcg@3": None, "recall@3": None, "mrr@10": None})
    c = dict(CAND, qe={"ndcg@3": None, "recall@3": None, "mrr@10": None})
    verdict = compare(as_file(helpers.results_document(b)), as_file(helpers.results_document(c)),
                      [make_gate("ndcg@3", 0.5)], n_resamples=RESAMPLES)
    (g,) = verdict.gates
    assert g.n == 4 and g.mean_delta == -0.1875 and "qe" not in verdict.deltas["ndcg@3"]


def test_no_paired_query_is_an_error_not_a_crash():
    b = {"q1": {"ndcg@10": None}, "q2": {"ndcg@10": None}}
    with pytest.raises(ComparisonError, match="no query has a value in both"):
        compare(as_file(helpers.results_document(b)), as_file(helpers.results_document(b)), [make_gate("ndcg@10")])


# ---- significance at the boundary: p == alpha ------------------------------------------------
#
# mrr@10 deltas of the hand case: -1/2, -1/2, -1/2, -1/4 (sum -7/4). Of the 16 sign patterns only
# all-minus (-7/4) and all-plus (+7/4) reach |sum| >= 7/4: the next largest is 5/4 (flip the -1/4).
# So p = 2/16 = 0.125, exact in binary, and the gate's alpha can be set to exactly that value.


def test_p_equal_to_alpha_is_not_significant():
    base, cand = hand_pair()
    at = compare(base, cand, [parse_gate("mrr@10:max_drop=0.1,alpha=0.125")], n_resamples=RESAMPLES)
    (g,) = at.gates
    assert g.p_permutation == g.p_adjusted == 0.125 == 2 / 16
    assert at.passed  # p == alpha: not significant, so the large drop does not fail the gate
    assert g.reason == "drop 0.4375 exceeds max_drop 0.1 but is not significant (p=0.1250 ≥ alpha 0.125)"
    assert g.gate.describe() == "drop ≤ 0.1, unless p ≥ 0.125"
    # The smallest alpha above p: significant, the gate fails.
    just_above = make_gate("mrr@10", 0.1, alpha=float(np.nextafter(0.125, 1.0)))
    (g,) = compare(base, cand, [just_above], n_resamples=RESAMPLES).gates
    assert not g.passed and g.reason.startswith("dropped 0.4375 > max_drop 0.1, significant (p=0.1250 < alpha 0.125")


def test_holm_adjusted_p_equal_to_alpha_is_not_significant():
    # Two gates with alpha: Holm doubles the smaller raw p (mrr 0.125 -> 0.25) and keeps ndcg's 0.5.
    base, cand = hand_pair()
    gates = [make_gate("ndcg@3", 0.0, alpha=0.25), make_gate("mrr@10", 0.0, alpha=0.25)]
    verdict = compare(base, cand, gates, n_resamples=RESAMPLES)
    assert [g.p_adjusted for g in verdict.gates] == [0.5, 0.25]
    assert verdict.passed
    above = [make_gate(g.metric, 0.0, alpha=float(np.nextafter(0.25, 1.0))) for g in gates]
    ndcg, mrr = compare(base, cand, above, n_resamples=RESAMPLES).gates
    assert ndcg.passed and not mrr.passed


def test_cli_gate_at_p_equal_to_alpha_passes(tmp_path, capsys):
    base, cand = hand_documents()
    (tmp_path / "old.json").write_text(json.dumps(base))
    (tmp_path / "new.json").write_text(json.dumps(cand))
    args = ["compare", str(tmp_path / "old.json"), str(tmp_path / "new.json"), "--resamples", "200"]
    assert main([*args, "--gate", "mrr@10:max_drop=0.1,alpha=0.125"]) == 0
    assert main([*args, "--gate", "mrr@10:max_drop=0.1,alpha=0.1251"]) == 1
    capsys.readouterr()


# ---- pairing by query id, and the pure decision --------------------------------------------

# 20 queries (> 16: the permutation test samples, so both resampling statistics depend on
# the order of the deltas they are given); values are multiples of 1/8, exact in binary.
MANY_IDS = [f"q{i:02d}" for i in range(20)]
MANY_BASE = {q: {"ndcg@10": (i % 8) / 8, "mrr@10": ((i * 3) % 8) / 8} for i, q in enumerate(MANY_IDS)}
MANY_CAND = {q: {"ndcg@10": ((i * 5) % 8) / 8, "mrr@10": ((i + 1) % 8) / 8} for i, q in enumerate(MANY_IDS)}


def _in_order(table, ids):
    return {q: table[q] for q in ids}


def test_shuffled_query_order_gives_the_same_verdict_and_deltas():
    gates = [make_gate("ndcg@10", 0.0, alpha=0.05), make_gate("mrr@10", 0.01)]
    ordered = compare(
        as_file(helpers.results_document(MANY_BASE)), as_file(helpers.results_document(MANY_CAND)), gates,
        n_resamples=RESAMPLES, seed=3,
    )
    rng = np.random.default_rng(0)
    for _ in range(3):
        b_ids, c_ids = list(rng.permutation(MANY_IDS)), list(rng.permutation(MANY_IDS))
        assert b_ids != MANY_IDS and c_ids != MANY_IDS and b_ids != c_ids
        base = as_file(helpers.results_document(_in_order(MANY_BASE, b_ids)))
        cand = as_file(helpers.results_document(_in_order(MANY_CAND, c_ids)))
        assert list(base.results.query_ids) == b_ids  # the files really list them in these orders
        shuffled = compare(base, cand, gates, n_resamples=RESAMPLES, seed=3)
        # Every number, the CI and the sampled p-value included, is identical; deltas too, in the same order.
        assert shuffled.gates == ordered.gates
        assert {m: list(d.items()) for m, d in shuffled.deltas.items()} == {
            m: list(d.items()) for m, d in ordered.deltas.items()
        }
    # The deltas are candidate - baseline of the same query, whatever the position.
    for i, q in enumerate(MANY_IDS):
        assert ordered.deltas["ndcg@10"][q] == ((i * 5) % 8) / 8 - (i % 8) / 8


def test_pair_by_query_pairs_ids_not_positions():
    base = as_file(helpers.results_document(_in_order(BASE, ["qd", "qb", "qa", "qc"]))).results
    cand = as_file(helpers.results_document(_in_order(CAND, ["qc", "qa", "qd", "qb"]))).results
    paired = pair_by_query("ndcg@3", base, cand)
    assert paired.query_ids == ("qa", "qb", "qc", "qd")
    assert paired.baseline.tolist() == [1.0, 0.75, 0.5, 0.25]
    assert paired.candidate.tolist() == [0.5, 0.5, 0.25, 0.5]
    assert (paired.baseline_value, paired.candidate_value) == (0.625, 0.4375)
    assert paired.deltas() == {"qa": -0.5, "qb": -0.25, "qc": -0.25, "qd": 0.25}


def test_pair_by_query_refuses_mismatched_query_sets():
    base = as_file(helpers.results_document(BASE)).results
    other = dict(CAND)
    other["qz"] = other.pop("qa")
    cand = as_file(helpers.results_document(other)).results
    with pytest.raises(ComparisonError, match=(
        r"^incomparable results: different query sets \(1 only in the baseline, e.g. \['qa'\]; "
        r"1 only in the candidate, e.g. \['qz'\]\)$"
    )):
        pair_by_query("ndcg@3", base, cand)
    twice = dataclasses.replace(base, query_ids=("qa", "qb", "qa", "qd"))
    with pytest.raises(ComparisonError, match="the baseline lists query 'qa' more than once"):
        pair_by_query("ndcg@3", twice, base)


def test_decide_is_pure_and_holds_the_paired_comparison():
    """decide() needs no file: arrays and gates in, GateResults out, each holding its PairedComparison."""
    b = np.array([1.0, 0.75, 0.5, 0.25])
    c = np.array([0.5, 0.5, 0.25, 0.5])
    values = PairedValues("ndcg@3", ("qa", "qb", "qc", "qd"), b, c, 0.625, 0.4375)
    (g,) = decide([make_gate("ndcg@3", 0.1, alpha=0.5)], [values], n_resamples=RESAMPLES, seed=1)
    assert g.comparison == stats.compare_paired(b, c, n_resamples=RESAMPLES, seed=1)
    assert isinstance(g.comparison, stats.PairedComparison)
    assert (g.baseline, g.candidate, g.mean_delta, g.n) == (0.625, 0.4375, -0.1875, 4)
    assert (g.p_permutation, g.p_adjusted) == (0.5, 0.5)  # p == alpha: not significant
    assert g.passed and (g.wins, g.ties, g.losses) == (1, 0, 3)
    # The same numbers as compare() on the files holding these values.
    (from_files,) = compare(*hand_pair(), [make_gate("ndcg@3", 0.1, alpha=0.5)], n_resamples=RESAMPLES, seed=1).gates
    assert from_files == g
    with pytest.raises(ValueError, match="paired"):
        decide([make_gate("mrr@10")], [values])
    with pytest.raises(ConfigError, match="resamples"):
        decide([make_gate("ndcg@3")], [values], n_resamples=10)


# ---- comparability -----------------------------------------------------------------------


def _edit(document, where, value):
    document = copy.deepcopy(document)
    *path, last = where
    node = document
    for key in path:
        node = node[key]
    node[last] = value
    return document


@pytest.mark.parametrize(
    "where, value, message",
    [
        (("dataset", "fingerprint"), "ffffffffffffffff", "different datasets"),
        (("results", "options", "gain"), "exponential", "different metric semantics: gain is 'linear'"),
        (("results", "options", "aggregation"), "micro", "different metric semantics: aggregation"),
        (("results", "options", "no_relevant"), "zero", "different metric semantics: no_relevant"),
        (("results", "options", "relevance_threshold"), 2.0, "different metric semantics: relevance_threshold"),
    ],
)
def test_incomparable_results_name_what_differs(where, value, message):
    base, _ = hand_pair()
    edited = as_file(_edit(hand_documents()[1], where, value), "new.json")
    with pytest.raises(ComparisonError, match=message):
        compare(base, edited, [make_gate("ndcg@3")])


def test_gated_metric_missing_on_one_side():
    base, _ = hand_pair()
    only_ndcg5 = {q: {"ndcg@5": row["ndcg@3"], "recall@3": row["recall@3"]} for q, row in CAND.items()}
    cand = as_file(helpers.results_document(only_ndcg5), "new.json")
    with pytest.raises(ComparisonError, match=r"new\.json has no ndcg@3 \(it has ndcg@5, recall@3\)"):
        compare(base, cand, [make_gate("ndcg@3")])
    # A metric both sides have still compares.
    assert compare(base, cand, [make_gate("recall@3")], n_resamples=RESAMPLES).passed


def test_different_query_sets():
    base, _ = hand_pair()
    fewer = {q: row for q, row in CAND.items() if q != "qd"}
    cand = as_file(helpers.results_document(fewer), "new.json")
    with pytest.raises(ComparisonError, match=r"different query sets \(1 only in the baseline, e.g. \['qd'\]"):
        compare(base, cand, [make_gate("ndcg@3")])


def test_different_retrieval_depth_matters_only_below_the_cutoff():
    base, cand = hand_pair({"top_k": 100}, {"top_k": 3})
    # ndcg@3 looks at the top 3 on both sides: comparable.
    assert compare(base, cand, [make_gate("ndcg@3", 0.5)], n_resamples=RESAMPLES).passed
    # mrr@10 would look at 10 passages of one run and 3 of the other.
    with pytest.raises(ComparisonError, match=r"mrr@10 looks at the top 10 but the baseline old\.json retrieved "
                       r"top_k=100 and the candidate new\.json top_k=3"):
        compare(base, cand, [make_gate("mrr@10")])
    _, cand = hand_pair(cand_edits={"top_k": 100})
    assert compare(base, cand, [make_gate("mrr@10", 0.5)], n_resamples=RESAMPLES).passed


@pytest.mark.parametrize(
    ("metric", "message"),
    [
        # Without a cutoff the message read "map looks at the top all".
        ("map", "map looks at the whole ranking but the baseline old.json retrieved top_k=100 and the candidate "
         "new.json top_k=3; gate a cutoff both runs reach (e.g. map@3)"),
        ("r_precision", "r_precision looks at the whole ranking but the baseline old.json retrieved top_k=100 and "
         "the candidate new.json top_k=3; rerun both with the same top_k"),
    ],
)
def test_different_depth_without_a_cutoff_is_worded_for_the_whole_ranking(metric, message):
    values = {"qa": 1.0, "qb": 0.5}
    documents = [helpers.results_document({q: {metric: v} for q, v in values.items()}) for _ in range(2)]
    documents[0]["top_k"], documents[1]["top_k"] = 100, 3
    with pytest.raises(ComparisonError) as raised:
        compare(as_file(documents[0], "old.json"), as_file(documents[1], "new.json"), [make_gate(metric)])
    assert str(raised.value) == f"incomparable results: different metric semantics: {message}"


def test_load_results_file_errors(tmp_path):
    # Loading errors are bad input (exit 2), not incomparable results; the wide table is test_bad_input_compare.py.
    with pytest.raises(InputFormatError, match="missing.json: no such file"):
        load_results_file(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(InputFormatError, match="bad.json: line 1, column 2: not valid JSON"):
        load_results_file(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text('{"kind": "something else"}')
    with pytest.raises(InputFormatError, match="not a rag_eval results file"):
        load_results_file(tmp_path / "other.json")
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe\x00\x81")
    with pytest.raises(InputFormatError, match="line 1, column 1: not UTF-8 text"):
        load_results_file(tmp_path / "binary.json")
    with pytest.raises(InputFormatError, match="is a folder, expected a results file"):
        load_results_file(tmp_path)


# ---- gates -------------------------------------------------------------------------------


def test_parse_gate():
    assert parse_gate("ndcg@10:max_drop=0.01") == Gate("ndcg@10", 0.01, None)
    assert parse_gate("NDCG_cut_10: max_drop = 0.02 , alpha=0.05") == Gate("ndcg@10", 0.02, 0.05)
    assert parse_gate("mrr@10") == Gate("mrr@10", 0.0, None)
    for bad, message in [
        ("ndcg@10:drop=0.1", "expected METRIC:max_drop"),
        ("ndcg@10:max_drop=x", "max_drop must be a number"),
        ("ndcg@10:max_drop=-0.1", "max_drop must be a number >= 0"),
        ("ndcg@10:alpha=1.5", "alpha must be between 0 and 1"),
        ("ndgc@10", "gate 'ndgc@10'"),
    ]:
        with pytest.raises(ConfigError, match=message):
            parse_gate(bad)


@pytest.mark.parametrize(
    "text, option",
    [("ndcg@4:max_drop=0.1,max_drop=0.2", "max_drop"), ("ndcg@4:alpha=0.05, alpha = 0.1", "alpha")],
)
def test_an_option_given_twice_is_refused(text, option):
    # The last value used to win silently.
    with pytest.raises(ConfigError) as raised:
        parse_gate(text)
    assert str(raised.value) == f"gate {text!r}: {option} is given twice; give each option once"


def test_two_gates_on_one_metric_are_refused_naming_both_spellings():
    assert parse_gates(["ndcg@4:max_drop=0.1", "mrr@10"]) == [Gate("ndcg@4", 0.1, None), Gate("mrr@10")]
    with pytest.raises(ConfigError) as raised:
        parse_gates(["ndcg@4:max_drop=0.1", "mrr@10", "ndcg_cut_4"])
    assert str(raised.value) == (
        "--gate: 'ndcg@4:max_drop=0.1' and 'ndcg_cut_4' both gate ndcg@4 (the same metric); keep one gate per metric"
    )
    with pytest.raises(ConfigError) as raised:
        gates_from_config({"P_5": {"max_drop": 0.1}, "precision@5": {}})
    assert str(raised.value) == (
        "regression.gates: 'P_5' and 'precision@5' both gate precision@5 (the same metric); keep one gate per metric"
    )
    base, cand = hand_pair()  # through the API: gates that are already parsed
    with pytest.raises(ConfigError) as raised:
        compare(base, cand, [make_gate("ndcg@3"), make_gate("ndcg_cut_3", 0.5)])
    assert str(raised.value) == (
        "gates: ndcg@3 (drop ≤ 0) and ndcg@3 (drop ≤ 0.5) both gate ndcg@3 (the same metric); keep one gate per metric"
    )


def test_cli_refuses_two_gates_on_one_metric(tmp_path, capsys):
    base, cand = hand_documents()
    (tmp_path / "old.json").write_text(json.dumps(base))
    (tmp_path / "new.json").write_text(json.dumps(cand))
    code = main(["compare", str(tmp_path / "old.json"), str(tmp_path / "new.json"), "--gate", "ndcg@3",
                 "--gate", "ndcg_cut_3:max_drop=0.5"])
    assert code == 2
    assert capsys.readouterr().err == (
        "rag-eval: error: --gate: 'ndcg@3' and 'ndcg_cut_3:max_drop=0.5' both gate ndcg@3 (the same metric); "
        "keep one gate per metric\n"
    )


def test_gates_from_config_section():
    from rag_eval._data.config.regression import RegressionSpec

    spec = RegressionSpec.model_validate(
        {"baseline": "b.json", "gates": {"ndcg@10": {"max_drop": 0.01}, "P_5": {"max_drop": 0.1, "alpha": 0.05}}}
    )
    assert gates_from_config(spec.gates) == [Gate("ndcg@10", 0.01, None), Gate("precision@5", 0.1, 0.05)]
    assert (spec.confidence, spec.resamples, spec.seed) == (0.95, 10_000, 0)


def test_compare_refuses_bad_settings():
    base, cand = hand_pair()
    with pytest.raises(ConfigError, match="no gates"):
        compare(base, cand, [])
    with pytest.raises(ConfigError, match="confidence"):
        compare(base, cand, [make_gate("ndcg@3")], confidence=1.5)
    with pytest.raises(ConfigError, match="resamples"):
        compare(base, cand, [make_gate("ndcg@3")], n_resamples=0)


# ---- the comparison report ---------------------------------------------------------------


def hand_report(**kwargs):
    base, cand = hand_pair()
    gates = [make_gate("ndcg@3", 0.25, alpha=0.05), make_gate("recall@3", 0.0), make_gate("mrr@10", 0.1)]
    verdict = compare(base, cand, gates, n_resamples=RESAMPLES)
    return verdict, render_comparison(verdict, **kwargs)


def test_report_verdict_table_first():
    verdict, report = hand_report()
    tables = helpers.assert_tables_well_formed(report)
    assert report.startswith("# Regression check: ❌ FAIL\n")
    first = tables[0]
    assert first[0] == [
        "Metric", "Baseline", "Candidate", "Δ (mean)", "95% CI", "p (permutation)", "p (t-test)", "Gate", "Result",
    ]
    ndcg, _recall, _mrr = verdict.gates
    assert first[1][:4] == ["ndcg@3", "0.6250", "0.4375", "-0.1875"]
    assert first[1][4] == f"[{ndcg.ci_low:+.4f}, {ndcg.ci_high:+.4f}]"
    assert first[1][5] == "0.5000 (Holm 0.5000)"
    assert first[1][6] == f"{sps.ttest_rel(column(CAND, 'ndcg@3'), column(BASE, 'ndcg@3')).pvalue:.4f}"
    assert first[1][7:] == ["drop ≤ 0.25, unless p ≥ 0.05", "✅ pass"]
    assert first[2][:4] == ["recall@3", "0.5000", "0.5000", "+0.0000"] and first[2][8] == "✅ pass"
    assert first[3][:4] == ["mrr@10", "1.0000", "0.5625", "-0.4375"] and first[3][8] == "❌ fail"
    assert first[3][5] == "0.1250"
    # The verdict table comes before every other section.
    assert report.index("| Metric | Baseline |") < report.index("## Wins, ties and losses")


def test_report_wins_ties_losses_counted_by_hand():
    _, report = hand_report()
    tables = helpers.assert_tables_well_formed(report)
    wtl = next(t for t in tables if t[0][0] == "Metric" and t[0][2] == "Improved")
    assert wtl[1:] == [
        ["ndcg@3", "4", "1", "0", "3"],
        ["recall@3", "4", "1", "2", "1"],
        ["mrr@10", "4", "0", "0", "4"],
    ]


def test_report_movers_with_texts():
    _, report = hand_report()
    section = report.split("## ndcg@3: queries that moved most")[1].split("## ndcg@3: worst regressions")[0]
    regressed, improved = section.split("**Improved**")
    tables = [helpers.assert_tables_well_formed(part)[0] for part in (regressed, improved)]
    # Worst first; qb and qc both lost 0.25 and are ordered by id.
    assert [row[0] for row in tables[0][1:]] == ["qa", "qb", "qc"]
    assert tables[0][1] == ["qa", r"Which ocean \| sea is \*largest\*?", "1.0000", "0.5000", "-0.5000"]
    assert tables[1][1:] == [["qd", "Which sea has no coastline?", "0.2500", "0.5000", "+0.2500"]]
    # recall@3 moved on two queries: one each way; mrr@10 has no improvement.
    recall = report.split("## recall@3: queries that moved most")[1].split("## recall@3: worst")[0]
    assert "**Regressed** (1 shown)" in recall and "**Improved** (1 shown)" in recall
    mrr = report.split("## mrr@10: queries that moved most")[1]
    assert "**Improved** (0 shown)\n\nNone." in mrr


def test_report_side_by_side_marks_lost_and_gained():
    _, report = hand_report(passages={"d1": {"text": "Pacific | the largest"}})
    section = report.split("## ndcg@3: worst regressions side by side (top 3)")[1].split("## recall@3")[0]
    qa = section.split("### qa: ")[1].split("### qb")[0]
    assert qa.startswith(r"“Which ocean \| sea is \*largest\*?”")
    (table,) = helpers.assert_tables_well_formed(qa)
    assert table[0] == ["Rank", "Baseline", "Grade", "Candidate", "Grade"]
    # Top 3 only (d3 at rank 4 of the candidate and d4 at rank 4 of the baseline are cut).
    assert table[1:] == [
        ["1", r"`d1` Pacific \| the largest", "2", "`d2`", "0"],
        ["2", "**`d3`** (lost)", "1", "**`d6`** (gained)", "1"],
        ["3", "`d2`", "0", r"`d1` Pacific \| the largest", "2"],
    ]
    assert "Relevant passages lost from the top 3: `d3`. Gained: `d6`." in qa
    # The three worst regressions get a side-by-side view, the improved query none.
    assert [part.split(":")[0] for part in section.split("### ")[1:]] == ["qa", "qb", "qc"]
    qc = section.split("### qc: ")[1]
    assert "(lost)" not in qc and "lost from the top 3: none" in qc  # d9 moved from rank 1 to 2: still in the top 3
    qb = section.split("### qb: ")[1].split("### qc")[0]
    assert "lost from the top 3: none. Gained: none." in qb


def test_report_side_by_side_shows_awkward_ids_exactly():
    # Doc ids and labels with a pipe and backticks were shown with '¦' and quotes.
    rank_base = {**RANK_BASE, "qa": [["d1", 3.0, 2], ["a|b`c", 2.0, 1], ["d2", 1.0, 0]]}
    rank_cand = {**RANK_CAND, "qa": [["d2", 3.0, 0], ["`x`", 2.0, 1], ["d1", 1.0, 2]]}
    base = as_file(helpers.results_document(BASE, label="old|one", query_texts=TEXTS, rankings=rank_base))
    cand = as_file(helpers.results_document(CAND, label="new`one", query_texts=TEXTS, rankings=rank_cand))
    report = render_comparison(compare(base, cand, [make_gate("ndcg@3", 0.5)], n_resamples=RESAMPLES))
    assert "Baseline `old|one` (`doc.json`) vs candidate ``new`one`` (`doc.json`)." in report
    qa = report.split("### qa: ")[1].split("### qb")[0]
    (table,) = helpers.assert_tables_well_formed(qa)
    # In a cell GFM drops the backslash before '|', in a code span too: the cell renders a|b`c.
    assert table[2] == ["2", "**``a\\|b`c``** (lost)", "1", "**`` `x` ``** (gained)", "1"]
    assert "Relevant passages lost from the top 3: ``a|b`c``. Gained: `` `x` ``." in qa
    assert "¦" not in report


def test_report_marks_relevance_as_each_metric_counts_it():
    """With relevance_threshold 2, recall@3 counts only grade >= 2 (d1), while nDCG@3 gains from any grade > 0."""
    options = dict(helpers.DEFAULT_OPTIONS, relevance_threshold=2.0)
    base = as_file(helpers.results_document(BASE, options=options, query_texts=TEXTS, rankings=RANK_BASE))
    cand = as_file(helpers.results_document(CAND, options=options, query_texts=TEXTS, rankings=RANK_CAND))
    verdict = compare(base, cand, [make_gate("ndcg@3"), make_gate("recall@3")], n_resamples=RESAMPLES)
    report = render_comparison(verdict)
    ndcg = report.split("## ndcg@3: worst regressions")[1].split("## recall@3")[0].split("### qb")[0]
    recall = report.split("## recall@3: worst regressions")[1]
    assert "**`d3`** (lost)" in ndcg and "**`d6`** (gained)" in ndcg
    assert "(lost)" not in recall and "(gained)" not in recall
    assert "Relevant passages lost from the top 3: none. Gained: none." in recall


def test_report_says_how_many_movers_it_leaves_out():
    qids = [f"q{i:02d}" for i in range(12)]
    base = as_file(helpers.results_document({q: {"ndcg@10": 1.0} for q in qids}))
    cand = as_file(helpers.results_document({q: {"ndcg@10": 0.5 if q != "q11" else 1.0} for q in qids}))
    report = render_comparison(compare(base, cand, [make_gate("ndcg@10")], n_resamples=RESAMPLES))
    assert "**Regressed** (10 of 11 shown)" in report and "**Improved** (0 shown)" in report
    regressed = report.split("**Regressed**")[1].split("**Improved**")[0]
    assert [row[0] for row in helpers.assert_tables_well_formed(regressed)[0][1:]] == qids[:10]


def test_report_explains_micro_aggregation():
    options = dict(helpers.DEFAULT_OPTIONS, aggregation="micro")
    base = as_file(helpers.results_document(BASE, options=options))
    cand = as_file(helpers.results_document(CAND, options=options))
    report = render_comparison(compare(base, cand, [make_gate("ndcg@3", 0.5)], n_resamples=RESAMPLES))
    assert "Aggregation is micro" in report
    assert "Aggregation is micro" not in render_comparison(compare(*hand_pair(), [make_gate("ndcg@3", 0.5)]))
    # The lines a terminal or CI log shows say it too (only the report did): a micro value is not the mean of the
    # per-query values delta comes from.
    lines = verdict_lines(compare(base, cand, [make_gate("ndcg@3", 0.5), make_gate("recall@3", 0.5)],
                                  n_resamples=RESAMPLES))
    assert [line for line in lines if line.startswith("micro")] == [
        "micro\tndcg@3\tbaseline and candidate are the dataset values (total DCG / total IDCG); delta, its interval "
        "and the test are the mean per-query difference, so delta need not be their difference, nor have its sign"]
    plain = verdict_lines(compare(*hand_pair(), [make_gate("ndcg@3", 0.5)], n_resamples=RESAMPLES))
    assert not any(line.startswith("micro") for line in plain)


def test_report_without_rankings_says_so():
    base, cand = hand_pair({"rankings": {}}, {"rankings": {}})
    verdict = compare(base, cand, [make_gate("ndcg@3")], n_resamples=RESAMPLES)
    assert "The results files hold no rankings" in render_comparison(verdict)


def test_verdict_summary():
    verdict, _ = hand_report()
    summary = render_verdict_summary(verdict)
    assert summary.startswith("### rag-eval regression check: ❌ FAIL\n")
    (table,) = helpers.assert_tables_well_formed(summary)
    assert [row[0] for row in table[1:]] == ["ndcg@3", "recall@3", "mrr@10"]
    assert summary.rstrip().endswith(r"- mrr@10: dropped 0.4375 \> max\_drop 0.1")


# ---- pytest helper and config-driven runs ------------------------------------------------


@pytest.fixture(scope="module")
def ocean_runs(tmp_path_factory):
    """The ocean-facts example (seed ranking and BM25) run into a temporary folder."""
    out = tmp_path_factory.mktemp("ocean")
    assert main(["run", str(REPO / "configs" / "ocean_facts.yaml"), "--output", str(out), "--no-progress"]) == 0
    return out


@pytest.fixture(scope="module")
def bm25_baseline(tmp_path_factory):
    out = tmp_path_factory.mktemp("baseline")
    assert main(["run", str(FIXTURES / "bm25_baseline.yaml"), "--output", str(out), "--no-progress"]) == 0
    return out / "bm25.json"


def test_assert_no_regression_passes_and_returns_the_verdict(bm25_baseline):
    from rag_eval.testing import assert_no_regression

    verdict = assert_no_regression(FIXTURES / "bm25_baseline.yaml", bm25_baseline, gates={"ndcg@10": {"max_drop": 0}})
    (g,) = verdict.gates
    assert verdict.passed and g.mean_delta == 0.0 and (g.wins, g.ties, g.losses) == (0, 10, 0)
    assert g.p_permutation == 1.0 and g.p_t_test == 1.0 and (g.ci_low, g.ci_high) == (0.0, 0.0)


def test_assert_no_regression_lists_the_failed_gates(bm25_baseline, monkeypatch):
    from rag_eval.testing import assert_no_regression

    monkeypatch.syspath_prepend(str(FIXTURES))  # weak_retriever:ReversedBM25
    config = FIXTURES / "weak_candidate.yaml"
    default_output = FIXTURES.parent / "reports" / "regression-candidate"
    with pytest.raises(AssertionError) as raised:
        assert_no_regression(
            config, bm25_baseline, gates={"ndcg@10": {"max_drop": 0.01}, "recall@10": {"max_drop": 0}}
        )
    message = str(raised.value)
    # The expected drop: baseline values from the file, candidate values from running the weak config.
    base = json.loads(bm25_baseline.read_text())["results"]["per_query"]
    weak = _weak_values(config)
    assert all(weak[q] < base[q]["ndcg@10"] for q in base)  # reversing hurts every query here
    drop = np.mean([base[q]["ndcg@10"] - weak[q] for q in base])
    assert message.splitlines() == [
        f"retrieval regression: bm25 vs baseline {bm25_baseline}: 1 of 2 gates failed",
        f"  - ndcg@10: dropped {drop:.4f} > max_drop 0.01",
    ]
    # Reversing the top 10 keeps the same ten passages: recall@10 unchanged, that gate passed.
    assert not default_output.exists()  # write_outputs=False writes nothing


def _weak_values(config):
    """nDCG@10 per query of the reversed BM25 ranking (weak_retriever must be importable)."""
    from rag_eval._data.config.schema import load_config
    from rag_eval._run.execute import execute

    run = execute(load_config(config), progress=False)
    (outcome,) = run.outcomes
    return dict(zip(outcome.results.query_ids, outcome.results.values["ndcg@10"].tolist()))


def test_assert_no_regression_rejects_bad_arguments(bm25_baseline):
    from rag_eval.testing import assert_no_regression

    config = FIXTURES / "bm25_baseline.yaml"
    with pytest.raises(ConfigError, match="give baseline_path"):
        assert_no_regression(config)
    with pytest.raises(ConfigError, match="no gates"):
        assert_no_regression(config, bm25_baseline)
    with pytest.raises(ConfigError, match=r"regression gate ndcg@5 is not among metrics"):
        assert_no_regression(config, bm25_baseline, gates={"ndcg@5": {"max_drop": 0}})
    with pytest.raises(ConfigError, match="retriever 'dense' is not a retriever label"):
        assert_no_regression(config, bm25_baseline, gates={"ndcg@10": {}}, retriever="dense")
    with pytest.raises(ConfigError, match=r"gates\.ndcg@10\.max_dop"):
        assert_no_regression(config, bm25_baseline, gates={"ndcg@10": {"max_dop": 0.1}})


def test_run_with_regression_section_in_process(bm25_baseline, tmp_path, capsys):
    """`rag-eval run` with a regression section: exit 0 against itself, comparison.md written."""
    import yaml

    config = yaml.safe_load((FIXTURES / "bm25_baseline.yaml").read_text())
    config["dataset"]["path"] = str(REPO / "datasets" / "ocean_facts.yaml")
    config["regression"] = {
        "baseline": str(bm25_baseline),
        "gates": {"ndcg@10": {"max_drop": 0.0}, "mrr@10": {"max_drop": 0.0, "alpha": 0.05}},
        "resamples": 500,
    }
    path = tmp_path / "self.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["run", str(path), "--output", str(tmp_path / "out"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    value = json.loads(bm25_baseline.read_text())["results"]["aggregate"]["ndcg@10"]
    assert f"PASS\tndcg@10\tbaseline {value:.4f}\tcandidate {value:.4f}\tdelta +0.0000 [+0.0000, +0.0000]" in out
    assert "verdict: PASS (0 of 2 gates failed)" in out
    report = (tmp_path / "out" / "comparison.md").read_text()
    assert report.startswith("# Regression check: ✅ PASS")
    helpers.assert_tables_well_formed(report)


def test_run_loads_the_baseline_once_and_builds_each_results_document_once(bm25_baseline, tmp_path, capsys,
                                                                          monkeypatch):
    """`rag-eval run` with a regression section: the baseline is read once (before retrieval) and the
    candidate's results document is the one written to disk, built once."""
    import yaml

    from rag_eval._run import results_file

    reads, built = [], []
    real_read, real_rankings = results_file.read_text, results_file.ranking_with_grades
    monkeypatch.setattr(results_file, "read_text", lambda path, *a, **k: reads.append(str(path)) or real_read(path, *a, **k))
    monkeypatch.setattr(results_file, "ranking_with_grades", lambda *a: built.append(1) or real_rankings(*a))
    config = yaml.safe_load((FIXTURES / "bm25_baseline.yaml").read_text())
    config["dataset"]["path"] = str(REPO / "datasets" / "ocean_facts.yaml")
    config["regression"] = {"baseline": str(bm25_baseline), "gates": {"ndcg@10": {"max_drop": 0.0}}, "resamples": 200}
    path = tmp_path / "self.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["run", str(path), "--output", str(tmp_path / "out"), "--no-progress"]) == 0
    capsys.readouterr()
    assert reads == [str(bm25_baseline)]
    assert built == [1]  # one retriever: one document, shared by the verdict and the writer


def test_compare_refuses_resampling_settings_out_of_range():
    base, cand = hand_pair()
    gate = [make_gate("ndcg@3", 1.0)]
    limit = "must be from 100 to 1,000,000 (more does not change the printed digits, and costs memory)"
    for kwargs, message in [
        ({"n_resamples": 10**12}, f"n_resamples: {limit} (got 1000000000000)"),
        ({"n_resamples": 99}, f"n_resamples: {limit} (got 99)"),
        ({"n_resamples": 500.0}, "n_resamples: Input should be a valid integer (got 500.0)"),
        ({"n_resamples": True}, "n_resamples: Input should be a valid integer (got True)"),
        ({"seed": -1}, "seed: must be >= 0 (numpy refuses negative seeds) (got -1)"),
        ({"confidence": 1.0}, "confidence: must be between 0 and 1 (exclusive) (got 1.0)"),
        ({"confidence": float("nan")}, "confidence: must be between 0 and 1 (exclusive) (got nan)"),
    ]:
        with pytest.raises(ConfigError) as raised:
            compare(base, cand, gate, **kwargs)
        assert str(raised.value) == message


def test_all_hand_values_are_exact_in_binary():
    # The hand case relies on exact arithmetic; make that assumption explicit.
    for table in (BASE, CAND):
        for row in table.values():
            for value in row.values():
                assert (value * 4).is_integer()
    assert list(itertools.chain(column(CAND, "ndcg@3") - column(BASE, "ndcg@3"))) == [-0.5, -0.25, -0.25, 0.25]


def test_one_paired_query_gives_no_interval_not_a_zero_width_one():
    """`compare` printed delta -0.3801 [-0.3801, -0.3801] from one query, as if certain; the decision report already
    said n/a. Two queries give the bootstrap's interval."""
    base = as_file(helpers.results_document({"q1": {"ndcg@10": 1.0}}))
    cand = as_file(helpers.results_document({"q1": {"ndcg@10": 0.6199}}))
    verdict = compare(base, cand, [make_gate("ndcg@10")], n_resamples=RESAMPLES)
    (gate,) = verdict.gates
    assert math.isnan(gate.ci_low) and math.isnan(gate.ci_high) and gate.mean_delta == pytest.approx(-0.3801)
    assert "\tdelta -0.3801 [n/a, n/a]\t" in verdict_lines(verdict)[0]
    assert "| -0.3801 | [n/a, n/a] |" in render_comparison(verdict)
