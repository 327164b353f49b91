"""Decision statistics over the variants of a run, and their markdown, on hand-made Results.

Every number is checked against a hand computation or scipy directly: exact permutation
p-values by enumerating all sign patterns here, Holm by hand, bootstrap CIs by
scipy.stats.bootstrap, power by solving the noncentral t directly.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import results_from_columns
from scipy import stats as sps

from rag_eval._compare.context_size import mean_context_size
from rag_eval._compare.decision import decide_run
from rag_eval._compare.power import minimum_detectable_difference
from rag_eval._compare.segments import query_tags, segment_table
from rag_eval._data.datasets.model import Query
from rag_eval._report.decision import decision_lines
from rag_eval._scoring.evaluate import evaluate
from rag_eval._scoring.results import Results

M = "ndcg@10"
QIDS = tuple(f"q{i}" for i in range(1, 9))
A = np.array([0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.3, 0.4])
B = A + [0.1, 0.2, 0.1, 0.3, 0.1, 0.2, 0.15, 0.05]  # better than A on every query
C = A + [0.1, -0.1, 0.05, 0.0, 0.0, 0.02, 0.1, -0.05]  # mixed
D = B + [0.01, -0.01, 0.02, -0.01, 0.0, 0.0, 0.01, -0.01]  # B with a little noise, mean +0.00125


def res(values, qids=QIDS, metric=M) -> Results:
    return results_from_columns({metric: list(values)}, qids)


def exact_p(deltas) -> float:
    """Two-sided sign-flip p-value by enumerating every pattern (independent of rag_eval._scoring.stats)."""
    d = np.asarray(deltas, dtype=np.float64)
    observed = abs(d.sum())
    hits = sum(abs(np.dot(signs, d)) >= observed - 1e-12 for signs in itertools.product((1, -1), repeat=d.size))
    return hits / 2**d.size


def holm_by_hand(p):
    order = sorted(range(len(p)), key=lambda i: p[i])
    out, running = [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        out[i] = running
    return out


def scipy_ci(values, seed=0, n_resamples=2000):
    r = sps.bootstrap((np.asarray(values),), np.mean, n_resamples=n_resamples, method="percentile",
                      confidence_level=0.95, rng=np.random.default_rng(seed))
    return r.confidence_interval.low, r.confidence_interval.high


RUN = {"a": res(A), "b": res(B), "c": res(C), "d": res(D)}


def test_ranking_means_and_cis():
    decision = decide_run(RUN, M, "a", n_resamples=2000)
    assert [v.label for v in decision.variants] == ["d", "b", "c", "a"]
    assert decision.best == "d" and decision.baseline == "a" and decision.baseline_declared
    for v, values in zip(decision.variants, (D, B, C, A)):
        assert v.mean == pytest.approx(values.mean(), abs=1e-15)
        assert (v.ci_low, v.ci_high) == pytest.approx(scipy_ci(values), abs=1e-15)
        assert v.n == 8


@pytest.mark.parametrize("order", [("tie", "a", "d"), ("d", "tie", "a"), ("a", "d", "tie")])
def test_a_variant_that_only_ties_the_declared_baseline_ranks_after_it(order):
    """Equal means kept config order: a swept parameter with no effect (b when k1 is 0) made "Ship bm25.b-0.0"
    or "Ship bm25.b-0.75" by the order of the grid. The declared baseline now comes first among equals."""
    run = {"a": res(A), "d": res(D), "tie": res(D)}
    decision = decide_run({label: run[label] for label in order}, M, "d", n_resamples=2000)
    assert [v.label for v in decision.variants] == ["d", "tie", "a"] and decision.best == "d"


def test_deltas_p_values_holm_and_wins_against_the_declared_baseline():
    decision = decide_run(RUN, M, "a", n_resamples=2000)
    raw = {label: exact_p(RUN[label].values[M] - A) for label in ("b", "c", "d")}
    # by hand: B - A all positive: 2 of 256 patterns; D - A too
    assert raw["b"] == raw["d"] == 2 / 256
    adjusted = dict(zip(raw, holm_by_hand(list(raw.values()))))
    for label in ("b", "c", "d"):
        v = decision.variant(label)
        assert v.p_raw == raw[label]
        assert v.p_holm == pytest.approx(adjusted[label], abs=1e-15)
        assert v.delta == pytest.approx((RUN[label].values[M] - A).mean(), abs=1e-15)
    assert decision.variant("b").p_holm == pytest.approx(3 * 2 / 256)  # smallest of 3, tied with d
    assert (decision.variant("c").wins, decision.variant("c").ties, decision.variant("c").losses) == (4, 2, 2)
    assert (decision.variant("b").wins, decision.variant("b").ties, decision.variant("b").losses) == (8, 0, 0)
    base = decision.variant("a")
    assert base.delta is None and base.p_holm is None and base.wins is None


def test_indistinguishable_from_the_best():
    decision = decide_run(RUN, M, "a", n_resamples=2000)
    raw = {label: exact_p(RUN[label].values[M] - D) for label in ("b", "c", "a")}
    adjusted = dict(zip(raw, holm_by_hand(list(raw.values()))))
    for label in ("b", "c", "a"):
        assert decision.variant(label).p_vs_best_holm == pytest.approx(adjusted[label], abs=1e-15)
        assert decision.variant(label).indistinguishable_from_best == (adjusted[label] >= 0.05)
    # B and D differ by noise only; C and A are worse on (almost) every query
    assert decision.indistinguishable == ["b"]
    assert decision.variant("d").indistinguishable_from_best and decision.variant("d").p_vs_best_holm is None


def test_without_a_baseline_the_best_is_the_reference():
    decision = decide_run({"a": res(A), "c": res(C), "b": res(B)}, M, n_resamples=2000)
    assert decision.baseline == "b" and not decision.baseline_declared
    raw = [exact_p(C - B), exact_p(A - B)]  # c: 1 zero delta -> 4/256; a: 2/256
    assert raw == [4 / 256, 2 / 256]
    assert decision.variant("c").p_holm == pytest.approx(holm_by_hand(raw)[0])
    assert decision.variant("c").p_holm == decision.variant("c").p_vs_best_holm
    assert decision.indistinguishable == []  # both Holm-adjusted 4/256 < 0.05
    # power from the baseline's differences to the runner-up (c)
    assert decision.power.other == "c" and decision.power.n == 8
    assert decision.power.sd == pytest.approx(np.std(C - B, ddof=1), abs=1e-15)


def test_left_out_queries_are_not_paired_and_not_averaged():
    b = B.copy()
    b[2] = np.nan  # q3 has no relevant document for b's metric variant (policy skip)
    decision = decide_run({"a": res(A), "b": res(b)}, M, "a", n_resamples=2000)
    v = decision.variant("b")
    keep = ~np.isnan(b)
    assert v.n == 7 and v.mean == pytest.approx(b[keep].mean(), abs=1e-15)
    assert v.n_paired == 7 and v.delta == pytest.approx((b[keep] - A[keep]).mean(), abs=1e-15)
    assert v.p_raw == exact_p(b[keep] - A[keep]) == 2 / 128


def test_lower_is_better_metric_flips_best_and_wins(monkeypatch):
    from rag_eval._scoring.metrics import measures

    monkeypatch.setitem(measures.FAMILIES, "ndcg", dataclasses.replace(measures.FAMILIES["ndcg"], higher_is_better=False))
    decision = decide_run({"a": res(A), "b": res(B)}, M, "a", n_resamples=2000)
    assert decision.best == "a"
    v = decision.variant("b")
    assert (v.wins, v.ties, v.losses) == (0, 0, 8) and v.delta == pytest.approx((B - A).mean())


def test_the_plots_draw_the_verdicts_own_means_cis_and_differences():
    """One computation: the means plot's rows and the deltas plot's points are the verdict's (same seed, same pairing)."""
    from rag_eval._compare.variants import mean_rows, sorted_deltas

    decision = decide_run(RUN, M, "a", n_resamples=10_000, seed=0)
    rows = mean_rows(RUN, M)
    assert [r.label for r in rows] == [v.label for v in decision.variants]
    for row in rows:
        v = decision.variant(row.label)
        assert (row.mean, row.low, row.high, row.n) == (v.mean, v.ci_low, v.ci_high, v.n)
    deltas = sorted_deltas(RUN, M, "a")
    assert deltas["b"].tolist() == sorted((B - A).tolist())
    assert float(np.mean(deltas["c"])) == pytest.approx(decision.variant("c").delta, abs=1e-15)


def test_wins_ties_losses_by_hand_in_either_direction(monkeypatch):
    from rag_eval._compare.decision import wins_ties_losses
    from rag_eval._scoring.metrics import measures

    deltas = np.array([0.1, -0.2, 0.0, 0.3, 1e-13])  # 1e-13: within win_tie_loss's tolerance, a tie
    assert wins_ties_losses(deltas, M) == (2, 2, 1)
    monkeypatch.setitem(measures.FAMILIES, "ndcg", dataclasses.replace(measures.FAMILIES["ndcg"], higher_is_better=False))
    assert wins_ties_losses(deltas, M) == (1, 2, 2)


def test_bad_arguments():
    with pytest.raises(ValueError, match="at least 2 variants"):
        decide_run({"a": res(A)}, M)
    with pytest.raises(ValueError, match="baseline 'zz' is not one of the variants: a, b"):
        decide_run({"a": res(A), "b": res(B)}, M, "zz")


def test_power_of_the_decision_matches_a_direct_noncentral_t_solution():
    decision = decide_run(RUN, M, "a", n_resamples=2000)
    power = decision.power
    assert (power.baseline, power.other, power.n) == ("a", "d", 8)
    sd, n = np.std(D - A, ddof=1), 8
    crit = sps.t.ppf(0.975, n - 1)
    lo, hi = 0.0, 10 * sd  # bisection on the power function, written independently
    for _ in range(200):
        mid = (lo + hi) / 2
        nc = mid * math.sqrt(n) / sd
        if sps.nct.sf(crit, n - 1, nc) + sps.nct.cdf(-crit, n - 1, nc) < 0.8:
            lo = mid
        else:
            hi = mid
    assert power.mde == pytest.approx(lo, rel=1e-9)


# ---- segments ------------------------------------------------------------------------------


def test_query_tags_accepts_strings_and_mappings():
    assert query_tags(("topic:billing", "urgent", "kind: numeric")) == {
        "topic": ("billing",), "tag": ("urgent",), "kind": ("numeric",)}
    assert query_tags({"topic": "billing", "kind": ["a", "b"]}) == {"topic": ("billing",), "kind": ("a", "b")}
    assert query_tags(()) == {}


def test_segment_table_by_hand():
    tags = {"q1": ("topic:billing",), "q2": ("topic:billing", "urgent"), "q3": {"topic": "shipping"},
            "q4": ("topic:shipping",), "q5": ("urgent",)}
    a = A.copy()
    a[1] = np.nan  # a leaves q2 out
    tables = segment_table({"a": res(a), "b": res(B)}, M, tags)
    assert [t.key for t in tables] == ["tag", "topic"]
    (urgent,) = tables[0].segments
    assert (urgent.value, urgent.count) == ("urgent", 2)
    assert urgent.means == {"a": pytest.approx(0.6), "b": pytest.approx((0.5 + 0.7) / 2)}
    billing, shipping = tables[1].segments
    assert (billing.value, billing.count, shipping.value, shipping.count) == ("billing", 2, "shipping", 2)
    assert billing.means == {"a": pytest.approx(0.2), "b": pytest.approx((0.3 + 0.5) / 2)}
    assert shipping.means == {"a": pytest.approx(0.45), "b": pytest.approx((0.5 + 0.8) / 2)}


# ---- context size --------------------------------------------------------------------------


DOCS = {"d1": "one two three four five six", "d2": "alpha, beta gamma"}


def test_mean_context_size_of_the_top_k():
    spans = {
        # listed out of rank order; the tie at 0.5 goes to the larger chunk id (d2#0-11 > d1#0-7)
        "q1": [("d1", 0, 7, 0.5), ("d1", 8, 18, 0.9), ("d2", 0, 11, 0.5)],
        "q2": [("d2", 7, 17, 0.3)],
    }
    size = mean_context_size(spans, DOCS, ["q1", "q2", "q3"], k=2)
    # q1: "three four" (10 chars, 2 tokens) + "alpha, beta" (11, 3: alpha , beta); q2: "beta gamma" (10, 2); q3: none
    assert size.chars == pytest.approx((10 + 11 + 10) / 3)
    assert size.tokens == pytest.approx((2 + 3 + 2) / 3)
    assert mean_context_size(spans, DOCS, ["q1"], k=1).chars == 10.0


# ---- markdown ------------------------------------------------------------------------------


def _outcome(label, results, spans=None, index_s=1.5, search_s=0.25):
    return SimpleNamespace(label=label, results=results, timings={"index_s": index_s, "search_s": search_s},
                           spans=spans, description={})


def _run(outcomes, tags=None, documents=None, top_k=10):
    queries = {q: Query(q, "text", tuple((tags or {}).get(q, ()))) for q in QIDS}
    return SimpleNamespace(
        outcomes=outcomes,
        dataset=SimpleNamespace(queries=queries, documents=documents or {}),
        config=SimpleNamespace(model=SimpleNamespace(top_k=top_k)),
    )


def test_decision_lines_render_the_verdict_power_and_segments():
    tags = {"q1": ("topic:billing",), "q2": ("topic:billing",), "q3": ("topic:shipping",)}
    run = _run([_outcome(label, RUN[label]) for label in ("a", "b", "c", "d")], tags)
    lines = decision_lines(run, M, "a", n_resamples=2000)
    text = "\n".join(lines)
    decision = decide_run(RUN, M, "a", n_resamples=2000)
    d, b = decision.variant("d"), decision.variant("b")
    assert lines[0] == "## 🏁 Decision"
    # first: what to ship. d is best and b cannot be told from it; no contexts, so the cheaper by time (equal
    # here: 1.5 + 0.25 each) keeps the rank order, d; d beats the declared baseline a on every query
    assert lines[2] == (f"**Ship d**: the highest mean `ndcg@10` ({D.mean():.4f}); 1 other variant cannot be told "
                        f"from it, so cost may decide (report.md's table gives each variant's index and search time). Against the baseline a: {(D - A).mean():+.4f} (better than it, "
                        f"p {3 * 2 / 256:.4f} Holm).")
    lines = lines[2:]  # the table and what follows, as before the verdict paragraph
    from rag_eval._compare.power import minimum_detectable_difference, queries_needed

    mde = {label: minimum_detectable_difference(RUN[label].values[M] - A) for label in ("b", "c", "d")}
    assert lines[2] == ("| Rank | Variant | ndcg@10 [95% CI] | Δ vs baseline | p (Holm) | W/T/L | MDE vs baseline | "
                        "Index (s) | Search (s) |")
    assert lines[4] == (f"| 1 | **d** | {D.mean():.4f} [{d.ci_low:.4f}, {d.ci_high:.4f}] | {(D - A).mean():+.4f} | "
                        f"{3 * 2 / 256:.4f} | 8/0/0 | {mde['d']:.4f} | 1.500 | 0.250 |")
    assert lines[5].startswith(f"| 2 | b | {B.mean():.4f} [{b.ci_low:.4f}, {b.ci_high:.4f}] | {(B - A).mean():+.4f} |")
    assert f"| {mde['b']:.4f} | 1.500 |" in lines[5]
    assert lines[7] == f"| 4 | a (baseline) | {A.mean():.4f} [{decision.variant('a').ci_low:.4f}, " \
                       f"{decision.variant('a').ci_high:.4f}] | – | – | – | – | 1.500 | 0.250 |"
    # b's gap to the best and what the b-d pair itself can detect (not another pair's figure)
    mde_b_vs_d = minimum_detectable_difference(B - D)
    assert (f"Statistically indistinguishable from the best (d): b ({abs((B - D).mean()):.4f} behind; this pair "
            f"finds a difference of {mde_b_vs_d:.4f} 80% of the time)") in text
    # three pairs with the baseline, three sds: the line gives the range, each end named with its pair
    low, high = min(mde, key=mde.__getitem__), max(mde, key=mde.__getitem__)
    sd = {label: np.std(RUN[label].values[M] - A, ddof=1) for label in mde}
    assert (f"Power (paired t-test, alpha 0.05, power 0.8): with 8 paired queries, the smallest difference in ndcg@10 "
            f"a comparison with the baseline can detect ranges from {mde[low]:.4f} ({low}, sd of its per-query "
            f"differences {sd[low]:.4f}) to {mde[high]:.4f} ({high}, sd {sd[high]:.4f}); the MDE column gives each "
            f"pair. Detecting 0.01 would need from {queries_needed(sd[low], 0.01):,} to "
            f"{queries_needed(sd[high], 0.01):,} queries.") in text
    segment = text.split("**ndcg@10 by tag `topic`**")[1]
    assert "| Value | Queries | d | b | c | a |" in segment
    assert f"| billing | 2 | {D[:2].mean():.4f} | {B[:2].mean():.4f} | {C[:2].mean():.4f} | {A[:2].mean():.4f} |" \
        in segment


def test_only_one_best_sentence_and_context_column():
    spans = {q: [("d1", 0, 7, 0.5), ("d1", 8, 18, 0.9)] for q in QIDS}
    run = _run([_outcome("a", res(A), spans), _outcome("b", res(B), spans)], documents=DOCS, top_k=10)
    lines = decision_lines(run, M, None, n_resamples=2000)
    text = "\n".join(lines)
    assert lines[2].startswith("**Ship b**: the highest mean `ndcg@10`")
    assert "better than every other variant (paired permutation tests against it, Holm-corrected, p < 0.05)" in lines[2]
    lines = lines[2:]
    assert lines[2].endswith("| Context top 10 (tokens / chars) |")
    # every query: "one two" (7 chars, 2 tokens) + "three four" (10 chars, 2 tokens)
    assert lines[4].endswith("| 0.250 | 4 / 17 |")
    assert "Only b is significantly best" in text


def test_fewer_than_two_retrievers_have_no_decision_section():
    assert decision_lines(_run([_outcome("a", res(A))]), M) == []


def test_power_skips_a_variant_equal_to_the_baseline_on_every_query():
    # "copy" ranks second (same values as the best, config order) but its differences carry no noise
    decision = decide_run({"b": res(B), "copy": res(B), "a": res(A)}, M, n_resamples=2000)
    assert [v.label for v in decision.variants] == ["b", "copy", "a"]
    assert decision.power.other == "a" and decision.power.sd == pytest.approx(np.std(A - B, ddof=1), abs=1e-15)
    only_copy = decide_run({"b": res(B), "copy": res(B)}, M, n_resamples=2000)
    assert only_copy.power.other == "copy" and only_copy.power.mde == 0.0
    text = "\n".join(decision_lines(_run([_outcome("b", res(B)), _outcome("copy", res(B))]), M))
    assert "Power: the per-query differences copy vs b are all equal" in text


def test_named_tags_in_a_query_set_give_one_segment_table_per_key(tmp_path):
    import yaml

    from rag_eval import evaluate
    from rag_eval._compare.segments import segment_table
    from rag_eval._data.datasets.query_set import load_yaml_query_set

    path = tmp_path / "set.yaml"
    path.write_text(yaml.safe_dump({
        "corpus": [{"id": "a", "text": "x"}, {"id": "b", "text": "y"}],
        "queries": [
            {"id": "q1", "text": "one", "tags": {"topic": "billing", "kind": ["numeric", "short"]},
             "judgements": {"a": 1}},
            {"id": "q2", "text": "two", "tags": {"topic": "billing"}, "judgements": {"b": 1}},
            {"id": "q3", "text": "three", "tags": {"topic": "login"}, "judgements": {"a": 1}},
        ],
    }), encoding="utf-8")
    dataset = load_yaml_query_set(path)
    assert dataset.queries["q1"].tags == ("kind:numeric", "kind:short", "topic:billing")  # safe_dump sorts keys
    judgements = dataset.judgements
    first = evaluate(judgements, {"q1": {"a": 1.0}, "q2": {"a": 1.0}, "q3": {"a": 1.0}}, ["hit_rate@1"])
    second = evaluate(judgements, {"q1": {"b": 1.0}, "q2": {"b": 1.0}, "q3": {"b": 1.0}}, ["hit_rate@1"])
    tables = segment_table({"A": first, "B": second}, "hit_rate@1", {q: dataset.queries[q].tags for q in dataset.queries})
    shown = {t.key: [(s.value, s.count, s.means) for s in t.segments] for t in tables}
    # A hits q1 and q3 (doc a relevant), B hits q2 only (doc b relevant).
    assert shown == {
        "kind": [("numeric", 1, {"A": 1.0, "B": 0.0}), ("short", 1, {"A": 1.0, "B": 0.0})],
        "topic": [("billing", 2, {"A": 0.5, "B": 0.5}), ("login", 1, {"A": 1.0, "B": 0.0})],
    }


def test_power_statements_follow_each_pair_when_spreads_differ_tenfold():
    """Two challengers of one baseline whose per-query differences vary 10x apart: each sentence about power or
    ties takes its own pair's figure. The MDE scales with the sd (normal approximation, by hand), so the
    noisy pair's detectable difference is about 10x the quiet one's, and a variant far behind the best is
    only called indistinguishable with the (large) detectable difference of its own pair beside it."""
    n = 40
    qids = tuple(f"q{i}" for i in range(n))
    rng = np.random.default_rng(7)
    base = rng.uniform(0.3, 0.6, n)
    unit = rng.standard_normal(n)
    unit = (unit - unit.mean()) / unit.std(ddof=1)  # mean 0, sd exactly 1
    quiet = base + 0.004 + 0.01 * unit  # sd of differences 0.01
    noisy = base + 0.02 + 0.1 * unit[::-1]  # sd 0.1: ten times the spread
    results = {"base": res(base, qids), "quiet": res(quiet, qids), "noisy": res(noisy, qids)}
    decision = decide_run(results, M, "base", n_resamples=2000)
    q, z = decision.variant("quiet").power_vs_baseline, decision.variant("noisy").power_vs_baseline
    assert q.sd == pytest.approx(0.01, rel=1e-9) and z.sd == pytest.approx(0.1, rel=1e-9)
    # normal approximation by hand: (z_0.975 + z_0.8) * sd / sqrt(n) = 2.8016 * sd / sqrt(40); the t-test's
    # exact figure is a little larger at 40 queries
    approx = (1.959964 + 0.841621) / math.sqrt(n)
    assert approx * 0.01 < q.mde < approx * 0.01 * 1.05
    assert approx * 0.1 < z.mde < approx * 0.1 * 1.05
    assert z.mde / q.mde == pytest.approx(10.0, rel=1e-6)  # same n: the MDE is proportional to the sd

    run = _run([_outcome(label, results[label]) for label in results])
    run.dataset.queries = {qid: Query(qid, "text", ()) for qid in qids}
    text = "\n".join(decision_lines(run, M, "base", n_resamples=2000))
    rows = {line.split(" | ")[1].strip("* "): line for line in text.splitlines() if line.startswith("| ") and
            line.split(" | ")[0].strip("| ").isdigit()}
    assert f"| {q.mde:.4f} |" in rows["quiet"] and f"| {z.mde:.4f} |" in rows["noisy"]
    assert (f"ranges from {q.mde:.4f} (quiet, sd of its per-query differences 0.0100) to {z.mde:.4f} "
            "(noisy, sd 0.1000)") in text
    # no sentence claims the quiet pair's figure for the noisy pair
    assert f"differences below {q.mde:.4f}" not in text
    tie = next(line for line in text.splitlines() if line.startswith("Statistically indistinguishable"))
    best = decision.best
    tied = [v for v in decision.variants if v.label != best and v.indistinguishable_from_best]
    assert tied  # the noisy pair cannot separate its variants
    for v in tied:
        own = minimum_detectable_difference(results[v.label].values[M] - results[best].values[M])
        assert f"{v.label} ({abs(v.power_vs_best.mean_difference):.4f} behind; this pair finds a difference " \
               f"of {own:.4f} 80% of the time)" in tie


def test_a_cut_off_metric_over_units_of_different_sizes_is_flagged_first_with_the_context_it_reads():
    # "small" retrieves 7-character chunks, "whole" the whole 27-character document d1 (one two ... six)
    small = {q: [("d1", 0, 7, 0.9)] for q in QIDS}
    whole = {q: [("d1", 0, 27, 0.9)] for q in QIDS}
    metric = "evidence_recall@1"
    run = _run([_outcome("small", res(A, metric=metric), small), _outcome("whole", res(B, metric=metric), whole)],
               documents=DOCS)
    lines = decision_lines(run, metric, n_resamples=2000)
    assert lines[0] == "## 🏁 Decision" and lines[2].startswith("**Ship ")
    assert lines[4] == ("> ⚠️ **`evidence_recall@1` favours larger units.** It counts the top 1 chunks whatever their "
                        "size, and the variants read from 7 characters (small) to 27 (whole, 3.9x) per query; a "
                        "budget metric compares them at equal context: add one such as "
                        "`evidence_recall@1000tokens` to `metrics` and set it as `main_metric`.")
    # with a budget metric in the run, the warning names it
    run.config.model.metrics = ["evidence_recall@1", "evidence_recall@20chars"]
    text = "\n".join(decision_lines(run, metric, n_resamples=2000))
    assert ("`evidence_recall@20chars`, a budget metric of this run, compares them at equal context: set "
            "`main_metric: evidence_recall@20chars` to decide on it.") in text
    # under a budget the context column follows the budget: "whole" (27 chars) does not fit 20 characters
    budget = "evidence_recall@20chars"
    run = _run([_outcome("small", res(A, metric=budget), small), _outcome("whole", res(B, metric=budget), whole)],
               documents=DOCS)
    lines = decision_lines(run, budget, n_resamples=2000)
    assert not any("favours larger units" in line for line in lines)
    assert lines[4].startswith("> ⚠️ **whole reads nothing within 20 chars.**")  # no unit of it fits the budget
    lines = lines[4:]
    assert lines[2].endswith("| Context within 20 chars (tokens / chars) |")
    rows = {line.split(" | ")[1].strip("* ").split(" ")[0]: line for line in lines[4:6]}
    assert rows["small"].endswith("| 2 / 7 |") and rows["whole"].endswith("| 0 / 0 |")


def test_the_default_main_metric_is_a_budget_when_retrievers_read_differently_cut_units():
    from rag_eval._data.config.schema import RunConfig

    base = {"dataset": {"format": "chroma", "path": "x"}, "top_k": 10,
            "metrics": ["evidence_recall@5", "evidence_recall@1000tokens", "doc_ndcg@10"],
            "chunking": {"small": {"method": "fixed", "size": 100}, "large": {"method": "fixed", "size": 400}}}
    two = RunConfig.model_validate({**base, "retrievers": [{"label": "a", "adapter": "bm25", "chunker": "small"},
                                                           {"label": "b", "adapter": "bm25", "chunker": "large"}]})
    assert two.compares_unit_sizes and two.primary_metric == "evidence_recall@1000tokens"
    one = RunConfig.model_validate({**base, "retrievers": [{"label": "a", "adapter": "bm25", "chunker": "small"},
                                                           {"label": "b", "adapter": "dense", "chunker": "small"}]})
    assert not one.compares_unit_sizes and one.primary_metric == "doc_ndcg@10"
    chosen = RunConfig.model_validate({**base, "main_metric": "evidence_recall@5",
                                       "retrievers": [{"label": "a", "adapter": "bm25", "chunker": "small"},
                                                      {"label": "b", "adapter": "bm25", "chunker": "large"}]})
    assert chosen.primary_metric == "evidence_recall@5"


def test_the_verdict_ships_the_cheapest_variant_the_queries_cannot_tell_from_the_best():
    # d is best by a hair over b (mean +0.00125, not significant); b reads 7 characters (2 word tokens) per
    # query, d the 27-character document (6 tokens): b is shipped, and the line says why
    metric = "evidence_recall@30chars"
    small = {q: [("d1", 0, 7, 0.9)] for q in QIDS}
    whole = {q: [("d1", 0, 27, 0.9)] for q in QIDS}
    run = _run([_outcome("b", res(B, metric=metric), small), _outcome("d", res(D, metric=metric), whole)],
               documents=DOCS)
    line = decision_lines(run, metric, n_resamples=2000)[2]
    assert line == (f"**Ship b**: the best mean `evidence_recall@30chars` is d's ({D.mean():.4f}), but the queries "
                    f"cannot tell 1 variant from it, and **b** is the cheapest of them (2 tokens of context per query "
                    f"against 6) at {B.mean():.4f}.")


def test_two_queries_shifted_alike_are_not_called_equal_and_one_query_is_one():
    """A stranger's attack: with 2 queries, r2 behind r1 by 0.2033 on both was described as "equal to the best on
    every query" (its MDE is 0: every difference alike); and 1 query read "1 paired query ... are too few"."""
    qids = ("q1", "q2")
    results = {"r1": res([0.5, 0.7], qids), "r2": res([0.5 - 0.2033, 0.7 - 0.2033], qids),
               "r3": res([0.5, 0.7], qids)}
    run = _run([_outcome(label, results[label]) for label in results])
    run.dataset.queries = {qid: Query(qid, "text", ()) for qid in qids}
    text = "\n".join(decision_lines(run, M, None, n_resamples=2000))
    tie = next(line for line in text.splitlines() if line.startswith("Statistically indistinguishable"))
    assert "r2 (0.2033 behind; the same difference on every query)" in tie
    assert "r3 (0.0000 apart; equal to the best on every query)" in tie
    # The table's MDE column: n/a, as the power line says (it printed 0.0000: "finds any difference")
    rows = [line for line in text.splitlines() if line.startswith(("| 2 |", "| 3 |"))]
    assert len(rows) == 2 and all(row.endswith("| n/a |") or "| n/a |" in row for row in rows), rows
    assert not any("| 0.0000 |" in row.split("|")[7] for row in rows), rows

    one = ("q1",)
    results = {"r1": res([0.5], one), "r2": res([0.3], one)}
    run = _run([_outcome(label, results[label]) for label in results])
    run.dataset.queries = {"q1": Query("q1", "text", ())}
    text = "\n".join(decision_lines(run, M, "r1", n_resamples=2000))
    assert "Power: 1 paired query (r2 vs r1) is too few to estimate it." in text


def test_one_query_has_no_interval_not_a_zero_width_one():
    # The attack's case: one query gave "1.0000 [1.0000, 1.0000]", certainty from a single value.
    one = {"a": res([1.0], ("q1",)), "b": res([0.8597], ("q1",))}
    decision = decide_run(one, M, n_resamples=2000)
    assert [(v.label, v.n, v.mean) for v in decision.variants] == [("a", 1, 1.0), ("b", 1, 0.8597)]
    assert all(math.isnan(v.ci_low) and math.isnan(v.ci_high) for v in decision.variants)
    text = "\n".join(decision_lines(_run([_outcome("a", one["a"]), _outcome("b", one["b"])]), M, n_resamples=2000))
    assert "| 1 | **a (best)** | 1.0000 [n/a, n/a] |" in text and "| 2 | b | 0.8597 [n/a, n/a] |" in text
    # two queries already give an interval, the bootstrap's (scipy's percentile interval, same seed)
    two = decide_run({"a": res([1.0, 0.5], ("q1", "q2")), "b": res([0.8, 0.5], ("q1", "q2"))}, M, n_resamples=2000)
    assert (two.variant("a").ci_low, two.variant("a").ci_high) == pytest.approx(scipy_ci([1.0, 0.5]), abs=1e-12)


def test_a_tag_key_with_a_value_per_query_shows_only_the_values_with_most_queries():
    # The attack's case: a tag per user made one row per query (819 KB of a 832 KB report.md).
    from rag_eval._compare.segments import Segment, SegmentTable
    from rag_eval._report.decision import MAX_SEGMENT_ROWS, _segment_lines

    decision = decide_run({"a": res(A), "b": res(B)}, M, n_resamples=200)
    counts = [1] * 40 + [5, 3, 2]  # 43 values: the three largest and 27 of the 1-query values fit in 30 rows
    segments = [Segment(f"u{i:02d}", n, {"a": 0.5, "b": 0.25}) for i, n in enumerate(counts)]
    lines = _segment_lines(SegmentTable("user", segments), decision)
    rows = [line for line in lines if line.startswith("| u")]
    assert MAX_SEGMENT_ROWS == 30 and len(rows) == 30
    assert [row.split(" | ")[0] for row in rows] == [f"| u{i:02d}" for i in [*range(27), 40, 41, 42]]
    assert lines[-1] == ("30 of the 43 values of `user`, those with the most queries; 13 more, 13 queries in all, "
                         "are left out of report.md: report.html filters the queries by any tag.")
    few = _segment_lines(SegmentTable("user", segments[:30]), decision)
    assert len([line for line in few if line.startswith("| u")]) == 30 and not few[-1].startswith("30 of")


def test_a_budget_that_no_unit_of_a_variant_fits_is_said_first():
    # The attack's case: whole documents under evidence_recall@1000tokens scored 0 on every query and were
    # listed as "worse beyond doubt", while their context column read "0 / 0".
    from rag_eval._compare.context_size import ContextSize
    from rag_eval._report.decision import nothing_fits_warning

    budget = "evidence_recall@1000tokens"
    contexts = {"chunks": ContextSize(1000, 3100.0, 512.0, "tokens"), "docs": ContextSize(1000, 0.0, 0.0, "tokens")}
    assert nothing_fits_warning(budget, contexts, {"chunks", "docs"}) == (
        "> ⚠️ **docs reads nothing within 1,000 tokens.** No unit it retrieved fits the budget on any query (the "
        "units are longer), so `evidence_recall@1000tokens` is 0 by the budget, not by the ranking; compare it "
        "on a larger budget, or cut the documents into chunks.")
    assert nothing_fits_warning(budget, contexts, {"chunks"}) == ""  # docs retrieved nothing: nothing to say
    assert nothing_fits_warning("evidence_recall@5", contexts, {"chunks", "docs"}) == ""  # a cut-off, no budget


def test_a_pair_that_cannot_find_even_the_largest_difference_says_so():
    # Two queries moving apart by 0.5 each way: the MDE (~2.7) is past anything an nDCG can show.
    two = {"a": res([1.0, 0.5], ("q1", "q2")), "b": res([0.5, 1.0], ("q1", "q2"))}
    text = "\n".join(decision_lines(_run([_outcome("a", two["a"]), _outcome("b", two["b"])]), M, "a", n_resamples=200))
    assert minimum_detectable_difference(np.array([-0.5, 0.5])) > 1
    assert "| 2 | b | 0.7500 [" in text and "| 0/0/0 |" not in text
    assert next(line for line in text.splitlines() if line.startswith("| 2 | b |")).split(" | ")[6] == "> 1"
    assert ("Power: with 2 queries, even the largest difference ndcg@10 can show (1) is found less than 80% of the "
            "time (paired t-test, alpha 0.05, power 0.8; sd of the per-query differences b vs a: 0.7071)") in text


def test_under_micro_the_decision_says_when_the_summary_puts_another_variant_first():
    """The Decision shipped Y (per-query mean) while the Summary ranked X first (micro), without a word.
    By hand: q1 has 3 relevant documents (IDCG 1 + 1/log2 3 + 1/2 = 2.1309), q2 one (IDCG 1).
    X: q1 perfect, q2 missed: per query [1, 0], mean 0.5; micro (2.1309 + 0) / (2.1309 + 1) = 0.6806.
    Y: q1 one relevant at rank 1 (DCG 1), q2 perfect: [0.4693, 1], mean 0.7346; micro (1 + 1) / 3.1309 = 0.6388."""
    judgements = {"q1": {"a": 1, "b": 1, "c": 1}, "q2": {"z": 1}}
    runs = {"X": {"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"y": 1.0}},
            "Y": {"q1": {"a": 3.0, "x": 2.0, "w": 1.0}, "q2": {"z": 1.0}}}
    results = {label: evaluate(judgements, run, ["ndcg@10"], aggregation="micro") for label, run in runs.items()}
    ideal = 1 + 1 / math.log2(3) + 0.5
    assert results["X"].aggregate["ndcg@10"] == pytest.approx(ideal / (ideal + 1), rel=1e-12)
    assert results["Y"].aggregate["ndcg@10"] == pytest.approx(2 / (ideal + 1), rel=1e-12)
    run = _run([_outcome(label, results[label]) for label in results])
    run.dataset.queries = {qid: Query(qid, "text", ()) for qid in ("q1", "q2")}
    text = "\n".join(decision_lines(run, "ndcg@10", None, n_resamples=2000))
    assert "**Ship Y**" in text
    assert (f"there X comes first ({ideal / (ideal + 1):.4f} against {2 / (ideal + 1):.4f}).** Decide which one your "
            "users meet") in text


def test_means_and_differences_equal_but_for_rounding_are_equal():
    """[0.3, 0.2, 0.1] and [0.1, 0.2, 0.3] have means 0.19999999999999998 and 0.20000000000000004: the variant
    outranked the declared baseline it ties. Differences of 0.1 computed as 0.09999999999999998 on some queries
    gave an MDE of < 0.0001 ("finds any difference"), where exactly equal ones give n/a."""
    qids = ("q1", "q2", "q3")
    base, other = np.array([0.3, 0.2, 0.1]), np.array([0.1, 0.2, 0.3])
    assert base.mean() != other.mean()  # (the premise: a few ulps apart)
    for order in (("base", "other"), ("other", "base")):
        runs = {"base": res(base, qids), "other": res(other, qids)}
        decision = decide_run({label: runs[label] for label in order}, M, "base", n_resamples=2000)
        assert decision.best == "base" and [v.label for v in decision.variants] == ["base", "other"]
    noisy = [0.09999999999999998, 0.10000000000000009, 0.1, 0.09999999999999998]
    assert minimum_detectable_difference(noisy) == 0.0 == minimum_detectable_difference([0.1] * 4)
    assert minimum_detectable_difference([0.1, 0.1, 0.1, 0.1 + 1e-9]) > 0.0  # a real difference, however small
