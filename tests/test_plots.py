"""Plots: valid, deterministic SVG that draws the numbers of the run (rag_eval._report.plots)."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from conftest import REPO, results_from_columns

from rag_eval._compare.decision import MeanRow
from rag_eval._compare.variants import (
    SweepPoint,
    at_k_curves,
    at_k_cutoffs,
    choose_baseline,
    mean_rows,
    sorted_deltas,
    sweep_points,
)
from rag_eval._data.config.schema import load_config
from rag_eval._report import plots
from rag_eval._report.plots import (
    build_plots,
    means_with_ci_svg,
    metric_at_k_svg,
    per_query_deltas_svg,
    plot_lines,
    sensitivity_svg,
)
from rag_eval._run.execute import execute
from rag_eval._scoring.results import Results
from rag_eval._scoring.stats import bootstrap_ci

SVG = "{http://www.w3.org/2000/svg}"
XLINK_HREF = "{http://www.w3.org/1999/xlink}href"
NAN = float("nan")


def results(values: dict[str, list[float]], qids: tuple[str, ...] = ("q1", "q2", "q3", "q4")) -> Results:
    return results_from_columns(values, qids)


# a: mean 0.5 over 3 defined queries (q4 left out); b: 0.625; c: 0.25.
HAND = {
    "a": results({"ndcg@10": [0.0, 1.0, 0.5, NAN]}),
    "b": results({"ndcg@10": [0.5, 1.0, 0.25, 0.75]}),
    "c": results({"ndcg@10": [0.25, 0.25, 0.25, 0.25]}),
}


def svg_root(text: str) -> ET.Element:
    root = ET.fromstring(text)
    assert root.tag == f"{SVG}svg"
    return root


def texts(text: str) -> list[str]:
    """Every text drawn (svg.fonttype none keeps text as <text> elements)."""
    return ["".join(node.itertext()) for node in svg_root(text).iter(f"{SVG}text")]


def group(text: str, gid: str) -> ET.Element:
    (found,) = [node for node in svg_root(text).iter(f"{SVG}g") if node.get("id") == gid]
    return found


def marker_count(text: str, gid: str) -> int:
    """Points drawn by a line with markers: one <use> of the marker per point."""
    return sum(1 for node in group(text, gid).iter(f"{SVG}use") if node.get(XLINK_HREF, "").startswith("#m"))


@pytest.fixture(scope="module")
def ocean_run():
    return execute(load_config(REPO / "configs" / "ocean_facts.yaml"), progress=False)


@pytest.fixture(scope="module")
def documents_run():
    return execute(load_config(REPO / "configs" / "ocean_documents.yaml"), progress=False)


def test_importing_rag_eval_does_not_import_matplotlib():
    code = (
        "import sys, rag_eval, rag_eval._report.plots, rag_eval._report.tables_csv, rag_eval._scoring.results; "
        "print(sorted(m for m in ('matplotlib', 'pandas') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "[]"


# ---- the data drawn --------------------------------------------------------------------------------


def test_mean_rows_leave_out_nan_and_use_the_seeded_bootstrap():
    rows = mean_rows(HAND, "ndcg@10")
    assert [r.label for r in rows] == ["b", "a", "c"]  # best first
    a = rows[1]
    assert (a.mean, a.n) == (0.5, 3)
    assert (a.low, a.high) == bootstrap_ci(np.array([0.0, 1.0, 0.5]), confidence=0.95, n_resamples=10_000, seed=0)
    assert (rows[2].low, rows[2].high) == (0.25, 0.25)  # constant values: the CI is the value itself


def test_baseline_is_the_declared_one_else_the_best_mean():
    assert choose_baseline(HAND, "ndcg@10", "c") == "c"
    assert choose_baseline(HAND, "ndcg@10", None) == "b"
    assert choose_baseline(HAND, "ndcg@10", "not-a-label") == "b"


def test_deltas_are_paired_by_query_and_sorted():
    deltas = sorted_deltas(HAND, "ndcg@10", "b")
    assert list(deltas) == ["a", "c"]
    # a - b on q1..q3 (q4 is left out for a): -0.5, 0, 0.25 -> sorted.
    assert deltas["a"].tolist() == [-0.5, 0.0, 0.25]
    assert deltas["c"].tolist() == [-0.75, -0.5, -0.25, 0.0]  # 0.25 - (0.5, 1, 0.25, 0.75)


def test_plots_read_the_direction_of_the_metric_record(monkeypatch):
    """Every built-in metric is higher-is-better; a lower-is-better record turns best, worst and wins around."""
    import dataclasses

    from rag_eval._scoring.metrics import measures

    monkeypatch.setitem(measures.FAMILIES, "ndcg", dataclasses.replace(measures.FAMILIES["ndcg"], higher_is_better=False))
    # Means: a 0.5, b 0.625, c 0.25: the lowest is now the best.
    assert [r.label for r in mean_rows(HAND, "ndcg@10")] == ["c", "a", "b"]
    assert choose_baseline(HAND, "ndcg@10", None) == "c"
    deltas = sorted_deltas(HAND, "ndcg@10", "b")  # worst first: the largest increases first
    assert deltas["a"].tolist() == [0.25, 0.0, -0.5]
    assert deltas["c"].tolist() == [0.0, -0.25, -0.5, -0.75]
    # c - b: three decreases (better now) and one tie; a - b: one of each.
    assert plots._wins(deltas["c"], "ndcg@10") == "3 better, 1 equal, 0 worse"
    assert plots._wins(deltas["a"], "ndcg@10") == "1 better, 1 equal, 1 worse"


def test_wins_are_counted_in_the_direction_of_the_metric():
    deltas = sorted_deltas(HAND, "ndcg@10", "b")
    assert plots._wins(deltas["c"], "ndcg@10") == "0 better, 1 equal, 3 worse"
    assert plots._wins(np.array([]), "ndcg@10") == "0 better, 0 equal, 0 worse"


def test_at_k_cutoffs():
    assert at_k_cutoffs(10) == [1, 2, 3, 5, 10]
    assert at_k_cutoffs(1) == [1]
    assert at_k_cutoffs(7) == [1, 2, 3, 5, 7]
    assert at_k_cutoffs(100) == [1, 2, 3, 5, 10, 20, 50, 100]


def test_at_k_curves_of_a_passage_run_equal_the_run_own_numbers(ocean_run):
    family, curves = at_k_curves(ocean_run, "ndcg@4")
    assert family == "ndcg@k"
    assert list(curves) == ["seed-ranking", "bm25"]
    for outcome in ocean_run.outcomes:
        assert sorted(curves[outcome.label]) == [1, 2, 3, 5, 10]
        for k in (1, 3, 5, 10):  # the cutoffs the config itself computed: the same numbers exactly
            assert curves[outcome.label][k] == outcome.results.aggregate[f"ndcg@{k}"]


def test_at_k_curves_of_a_document_run_equal_the_run_own_numbers(documents_run):
    _, evidence = at_k_curves(documents_run, "evidence_recall@400chars")  # a budget is drawn by chunk count
    _, documents = at_k_curves(documents_run, "doc_ndcg@3")
    _, chunks = at_k_curves(documents_run, "ndcg@3")
    for outcome in documents_run.outcomes:
        aggregate = outcome.results.aggregate
        assert evidence[outcome.label][1] == aggregate["evidence_recall@1"]
        assert evidence[outcome.label][3] == aggregate["evidence_recall@3"]
        assert documents[outcome.label][3] == aggregate["doc_ndcg@3"]
        assert chunks[outcome.label][3] == aggregate["ndcg@3"]  # whole documents and chunkings alike


def test_no_at_k_curve_for_a_family_without_cutoff(ocean_run):
    assert at_k_curves(ocean_run, "r_precision") is None


def test_sweep_points_group_by_the_other_varied_values():
    variants = {"a": {"params.k1": 0.9, "params.b": 0.4}, "b": {"params.k1": 1.2, "params.b": 0.4},
                "c": {"params.k1": 0.9, "params.b": 0.75}}
    points = sweep_points(HAND, "ndcg@10", variants)
    assert list(points) == ["params.k1", "params.b"]
    assert points["params.k1"] == [
        SweepPoint("a", 0.9, "params.b=0.4", 0.5),
        SweepPoint("b", 1.2, "params.b=0.4", 0.625),
        SweepPoint("c", 0.9, "params.b=0.75", 0.25),
    ]
    assert [p.series for p in points["params.b"]] == ["params.k1=0.9", "params.k1=1.2", "params.k1=0.9"]


# ---- drawing ----------------------------------------------------------------------------------------


def test_means_svg_holds_every_label_and_number():
    rows = [MeanRow("b", 0.625, 0.375, 0.875, 4), MeanRow("a+x", 0.5, 0.0, 1.0, 3)]
    svg = means_with_ci_svg(rows, "ndcg@10", baseline="a+x")
    drawn = texts(svg)
    assert "b  0.6250 [0.3750, 0.8750]" in drawn
    assert "a+x (baseline)  0.5000 [0.0000, 1.0000]" in drawn
    assert "mean ndcg@10 with 95% bootstrap CI" in drawn
    assert marker_count(svg, "means") == 2


def test_deltas_svg_draws_one_point_per_paired_query():
    svg = per_query_deltas_svg(sorted_deltas(HAND, "ndcg@10", "b"), "ndcg@10", "b")
    assert marker_count(svg, "deltas-a") == 3 and marker_count(svg, "deltas-c") == 4
    assert {"ndcg@10 minus b", "queries, sorted by difference", "a", "c"} <= set(texts(svg))


def test_at_k_svg_ticks_are_the_cutoffs():
    svg = metric_at_k_svg({"bm25": {1: 0.5, 3: 0.6, 10: 0.7}, "dense": {1: 0.4, 3: 0.65, 10: 0.8}}, "ndcg@k")
    drawn = texts(svg)
    assert {"1", "3", "10", "k", "ndcg@k", "bm25", "dense"} <= set(drawn)
    assert marker_count(svg, "at-k-bm25") == 3


def test_sensitivity_svg_spaces_numbers_in_order_and_names_series():
    points = [SweepPoint("x", 800, "overlap=0", 0.3), SweepPoint("y", 200, "overlap=0", 0.2),
              SweepPoint("z", 400.0, "overlap=0.5", 0.25)]
    svg = sensitivity_svg("chunking.size", points, "ndcg@10")
    drawn = texts(svg)
    ticks = [t for t in drawn if t in {"200", "400", "800"}]
    assert ticks == ["200", "400", "800"]  # increasing; 400.0 shown as 400
    assert {"chunking.size", "mean ndcg@10", "overlap=0", "overlap=0.5"} <= set(drawn)
    assert marker_count(svg, "sweep-overlap=0") == 2


def test_svg_is_deterministic_and_undated():
    rows = mean_rows(HAND, "ndcg@10")
    first, second = means_with_ci_svg(rows, "ndcg@10"), means_with_ci_svg(rows, "ndcg@10")
    assert first == second
    assert "<dc:date>" not in first and "<dc:creator>" in first  # metadata: a fixed creator, no date
    points = [SweepPoint("a", "model-a", "all", 0.5), SweepPoint("b", "model-b", "all", 0.25)]
    assert sensitivity_svg("params.model", points) == sensitivity_svg("params.model", points)


def test_labels_with_dollars_are_text_not_math():
    svg = metric_at_k_svg({"$a$": {1: 0.5}}, "ndcg@k")
    assert "$a$" in texts(svg)


# ---- a run's plots ------------------------------------------------------------------------------------


def test_run_plots_of_the_ocean_run(ocean_run):
    built = build_plots(ocean_run, "ndcg@4", None)
    assert list(built.files) == ["plot-means.svg", "plot-deltas.svg", "plot-at-k.svg"]
    for svg in built.files.values():
        svg_root(svg)
    # bm25 has the best mean, so it is the baseline; every number of the means plot is the run's own.
    means = {row.label: row for row in built.data["plot-means.svg"]}
    for outcome in ocean_run.outcomes:
        assert means[outcome.label].mean == pytest.approx(outcome.results.aggregate["ndcg@4"], abs=1e-15)
    assert list(built.data["plot-deltas.svg"]) == ["seed-ranking"]
    assert next(t for t in texts(built.files["plot-means.svg"]) if "(baseline)" in t).startswith("bm25 (baseline)  ")
    assert plots.run_plots(ocean_run, "ndcg@4", None) == built.files  # deterministic end to end


def test_sweep_plots_come_from_the_config_variants(ocean_run, monkeypatch):
    monkeypatch.setattr(ocean_run.config, "variants",
                        {"seed-ranking": {"params.k1": 0.9}, "bm25": {"params.k1": 1.2}}, raising=False)
    built = build_plots(ocean_run, "ndcg@4", "seed-ranking")
    assert "plot-sweep-params.k1.svg" in built.files
    assert [(p.value, p.label) for p in built.data["plot-sweep-params.k1.svg"]] == [(0.9, "seed-ranking"),
                                                                                    (1.2, "bm25")]
    assert list(built.data["plot-deltas.svg"]) == ["bm25"]  # the declared baseline


def test_plot_lines_link_each_plot_with_its_text_equivalent():
    names = ["plot-means.svg", "plot-at-k.svg", "plot-sweep-params.k1.svg"]
    assert plot_lines(names, {"plot-at-k.svg": "ndcg@k at k = 1, 3: bm25 0.5000 / 0.6000"}) == [
        "- [Means with 95% CIs](plot-means.svg): the same numbers as the verdict table",
        "- [Metric at k](plot-at-k.svg): ndcg@k at k = 1, 3: bm25 0.5000 / 0.6000",
        "- [Sensitivity to params.k1](plot-sweep-params.k1.svg): the same numbers as the sensitivity table",
    ]


def test_at_k_text_equivalent_holds_the_curve(ocean_run):
    built = build_plots(ocean_run, "ndcg@4", None)
    bm25 = next(o for o in ocean_run.outcomes if o.label == "bm25").results.aggregate
    assert built.texts["plot-at-k.svg"].startswith("ndcg@k at k = 1, 2, 3, 5, 10: seed-ranking ")
    assert f"bm25 {bm25['ndcg@1']:.4f} / " in built.texts["plot-at-k.svg"]


def test_past_ten_lines_each_line_still_looks_different() -> None:
    from rag_eval._report.plots import _line_style

    styles = [tuple(sorted(_line_style(i, "o").items())) for i in range(40)]
    assert len(set(styles)) == 40
    assert _line_style(3, ".") == {"color": "C3", "linestyle": "-", "marker": "."}
    assert _line_style(13, ".") == {"color": "C3", "linestyle": "--", "marker": "s"}
    curves = {f"v{i:02d}": {1: 0.1 * (i % 7), 10: 0.5} for i in range(12)}
    svg = metric_at_k_svg(curves, "ndcg@k")
    assert svg.count("stroke-dasharray") >= 2  # the 11th and 12th lines (and their legend entries) are dashed
