"""Plots: valid, deterministic, hand-written SVG that draws the numbers of the run (rag_eval._report.plots).

The drawing tests read the SVG back as a reader would: the axis scale comes from the tick labels and
their positions, and every drawn coordinate is mapped back through it to the number it stands for.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from itertools import pairwise

import numpy as np
import pytest
from conftest import REPO, results_from_columns

from rag_eval._compare.decision import MeanRow, wins_ties_losses
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
from rag_eval._report.format import fmt, signed
from rag_eval._report.plots import (
    build_plots,
    means_with_ci_svg,
    metric_at_k_svg,
    per_query_deltas_svg,
    plot_lines,
    sensitivity_svg,
)
from rag_eval._report.plots.axes import line_style, nice_ticks, tick_text
from rag_eval._report.plots.deltas import MAX_VERTICES, step_corners
from rag_eval._report.plots.svg import fit, text_width
from rag_eval._run.execute import execute
from rag_eval._scoring.results import Results
from rag_eval._scoring.stats import bootstrap_ci

SVG = "{http://www.w3.org/2000/svg}"
NAN = float("nan")


def results(values: dict[str, list[float]], qids: tuple[str, ...] = ("q1", "q2", "q3", "q4")) -> Results:
    return results_from_columns(values, qids)


# a: mean 0.5 over 3 defined queries (q4 left out); b: 0.625; c: 0.25.
HAND = {
    "a": results({"ndcg@10": [0.0, 1.0, 0.5, NAN]}),
    "b": results({"ndcg@10": [0.5, 1.0, 0.25, 0.75]}),
    "c": results({"ndcg@10": [0.25, 0.25, 0.25, 0.25]}),
}


# ---- reading the SVG back ------------------------------------------------------------------------------


def svg_root(text: str) -> ET.Element:
    root = ET.fromstring(text)  # well-formed XML, or this raises
    assert root.tag == f"{SVG}svg"
    return root


def content(node: ET.Element) -> str:
    return "".join(node.itertext())


def texts(text: str | ET.Element) -> list[str]:
    """Every text drawn (each a <text> element: text stays text)."""
    root = svg_root(text) if isinstance(text, str) else text
    return [content(node) for node in root.iter(f"{SVG}text")]


def groups(text: str, cls: str) -> dict[str, ET.Element]:
    """``{data-label: group}`` of the groups of class ``cls`` (rows, panels, series)."""
    return {node.get("data-label", ""): node for node in svg_root(text).iter(f"{SVG}g") if node.get("class") == cls}


def of_class(node: ET.Element, cls: str) -> list[ET.Element]:
    return [child for child in node.iter() if child.get("class") == cls]


def axis(node: ET.Element, cls: str) -> tuple[list[float], list[float]]:
    """(tick values, their pixel positions) read from the tick labels of class ``ytick`` or ``xtick``."""
    ticks = of_class(node, cls)
    return [float(content(t)) for t in ticks], [float(t.get("y" if cls == "ytick" else "x", "nan")) for t in ticks]


def inverse(node: ET.Element, cls: str):
    """Pixel -> value through the axis the tick labels describe, and the value of half a pixel."""
    values, pixels = axis(node, cls)
    assert len(values) >= 2
    per_pixel = (values[-1] - values[0]) / (pixels[-1] - pixels[0])
    for value, pixel in zip(values, pixels):  # every tick on the same straight line: a linear axis
        assert value == pytest.approx(values[0] + (pixel - pixels[0]) * per_pixel, abs=abs(per_pixel) * 0.1)
    return (lambda pixel: values[0] + (pixel - pixels[0]) * per_pixel), abs(per_pixel) / 2


def marker_centres(node: ET.Element) -> list[tuple[float, float]]:
    """Centres of the markers (class mk): a circle's cx/cy, or the start ``M x y`` of a path."""
    centres = []
    for mark in of_class(node, "mk"):
        if mark.tag == f"{SVG}circle":
            centres.append((float(mark.get("cx", "nan")), float(mark.get("cy", "nan"))))
        else:
            x, y = re.match(r"M(-?[\d.]+) (-?[\d.]+)", mark.get("d", "")).groups()
            centres.append((float(x), float(y)))
    return centres


def points(node: ET.Element) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in (p.split(",") for p in node.get("points", "").split())]


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


def test_drawing_a_run_never_imports_a_plotting_library():
    # matplotlib made unimportable (None in sys.modules): any import of it, however deep, would raise.
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from rag_eval._data.config.schema import load_config\n"
        "from rag_eval._run.execute import execute\n"
        "from rag_eval._report.plots import build_plots\n"
        f"run = execute(load_config({str(REPO / 'configs' / 'ocean_facts.yaml')!r}), progress=False)\n"
        "built = build_plots(run, 'ndcg@4', None)\n"
        "print(len(built.files), sorted(m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'plotly', 'bokeh', "
        "'seaborn', 'pygal') and sys.modules[m] is not None))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "3 []"


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


def test_values_equal_in_python_but_two_variants_are_two_series():
    """1, 1.0 and True are equal in Python (and 1.0 was shown as 1): the series of x=1 took the means of x=1.0,
    and the sensitivity table lost a row. They read as their variants' labels say: 1, 1.0, true."""
    variants = {"a": {"params.x": 1, "params.y": 0}, "b": {"params.x": 1.0, "params.y": 0},
                "c": {"params.x": True, "params.y": 0}}
    points = sweep_points(HAND, "ndcg@10", variants)
    assert [(p.label, p.series, p.mean) for p in points["params.y"]] == [
        ("a", "params.x=1", 0.5), ("b", "params.x=1.0", 0.625), ("c", "params.x=true", 0.25)]


# ---- drawing: the means -------------------------------------------------------------------------------


def test_means_svg_holds_every_label_and_number():
    rows = [MeanRow("b", 0.625, 0.375, 0.875, 4), MeanRow("a+x", 0.5, 0.0, 1.0, 3)]
    svg = means_with_ci_svg(rows, "ndcg@10", baseline="a+x")
    drawn = groups(svg, "row")
    assert list(drawn) == ["b", "a+x"]  # the rows' own order: best first
    assert texts(drawn["b"]) == ["b", "0.6250 [0.3750, 0.8750]"]
    assert texts(drawn["a+x"]) == ["a+x (baseline)", "0.5000 [0.0000, 1.0000]"]
    assert "mean ndcg@10 with 95% bootstrap CI" in texts(svg)
    assert sum(len(of_class(row, "mk")) for row in drawn.values()) == 2


def test_means_whiskers_and_dots_map_back_to_the_rows():
    rows = mean_rows(HAND, "ndcg@10")
    svg = means_with_ci_svg(rows, "ndcg@10", baseline="a")
    to_value, half_pixel = inverse(svg_root(svg), "xtick")
    drawn = groups(svg, "row")
    for row in rows:
        (whisker,) = of_class(drawn[row.label], "ci")
        assert to_value(float(whisker.get("x1"))) == pytest.approx(row.low, abs=half_pixel)
        assert to_value(float(whisker.get("x2"))) == pytest.approx(row.high, abs=half_pixel)
        ((x, y),) = marker_centres(drawn[row.label])
        assert to_value(x) == pytest.approx(row.mean, abs=half_pixel)
        assert y == float(whisker.get("y1"))  # on its own row
    # The baseline's mean runs down the chart as a dashed line.
    (line,) = of_class(svg_root(svg), "baseline-mean")
    assert to_value(float(re.match(r"M(-?[\d.]+)", line.get("d")).group(1))) == pytest.approx(0.5, abs=half_pixel)
    # Rows from top to bottom in the rows' order (best first).
    ys = [marker_centres(drawn[row.label])[0][1] for row in rows]
    assert ys == sorted(ys)


def test_means_axis_has_round_ticks_covering_every_interval():
    rows = [MeanRow("x", 0.9610, 0.9437, 0.9765, 472), MeanRow("y", 0.6591, 0.6177, 0.7007, 472)]
    values, _ = axis(svg_root(means_with_ci_svg(rows, "evidence_recall@5")), "xtick")
    assert values[0] <= 0.6177 and values[-1] >= 0.9765
    steps = {round(b - a, 9) for a, b in pairwise(values)}
    assert len(steps) == 1 and _is_round(steps.pop())


def test_long_labels_are_cut_with_an_ellipsis_and_kept_whole_in_a_tooltip():
    long = "dense." + "very-long-parameter-" * 12 + "end"
    rows = [MeanRow(long, 0.5, 0.4, 0.6, 10), MeanRow("short", 0.4, 0.3, 0.5, 10)]
    svg = means_with_ci_svg(rows, "ndcg@10")
    row = groups(svg, "row")[long]
    (label,) = of_class(row, "label")
    shown = content(label)
    assert "…" in shown and shown.startswith("dense.") and shown.endswith("end")  # both ends kept
    tooltips = [content(node) for node in row.iter(f"{SVG}title")]
    assert tooltips == [long]
    # The label ends left of the plot: its estimated width fits between the margin and its right edge.
    (whisker,) = of_class(row, "ci")
    assert text_width(shown, 12) <= float(label.get("x")) - 16 + 0.5
    assert float(label.get("x")) < float(whisker.get("x1"))


def test_fit_keeps_short_text_and_cuts_long_text_to_its_width():
    assert fit("bm25", 100, 12) == "bm25"
    cut = fit("dense.size-800.overlap-50", 80, 12)
    assert cut.count("…") == 1 and text_width(cut, 12) <= 80
    assert cut[0] == "d" and cut[-1] == "0"


# ---- drawing: the deltas ------------------------------------------------------------------------------


def test_deltas_svg_draws_one_panel_per_variant_with_its_mean_and_counts():
    deltas = sorted_deltas(HAND, "ndcg@10", "b")
    svg = per_query_deltas_svg(deltas, "ndcg@10", "b")
    panels = groups(svg, "panel")
    assert list(panels) == ["a", "c"]
    assert "ndcg@10 minus b" in texts(svg)
    assert any(t.startswith("queries, sorted by difference") for t in texts(svg))
    for label, values in deltas.items():
        panel = panels[label]
        assert content(of_class(panel, "panel-label")[0]) == label
        (mean,) = of_class(panel, "mean")
        assert content(mean) == f"mean Δ {signed(float(np.mean(values)))}"
        (counts,) = of_class(panel, "wtl")
        assert content(counts) == "W/T/L {}/{}/{}".format(*wins_ties_losses(values, "ndcg@10"))
    # a - b: -0.5, 0, 0.25: one worse, one equal, one better.
    assert content(of_class(panels["a"], "wtl")[0]) == "W/T/L 1/1/1"
    assert content(of_class(panels["a"], "mean")[0]) == "mean Δ -0.0833"


def test_deltas_step_line_maps_back_to_every_sorted_difference():
    deltas = sorted_deltas(HAND, "ndcg@10", "b")
    svg = per_query_deltas_svg(deltas, "ndcg@10", "b")
    panels = groups(svg, "panel")
    to_value, half_pixel = inverse(panels["a"], "ytick")  # the first panel holds the shared axis' labels
    for label, values in deltas.items():
        (line,) = of_class(panels[label], "steps")
        corners = points(line)
        (frame,) = [r for r in panels[label].iter(f"{SVG}rect") if r.get("fill") == "none"]
        width, n = float(frame.get("width")), len(values)
        assert corners[0][0] == 0 and corners[-1][0] == pytest.approx(width)
        # The step line's height in the middle of query i's step is that query's difference.
        for i, value in enumerate(values):
            middle = (i + 0.5) * width / n
            heights = [y for (x0, y), (x1, _) in pairwise(corners) if x0 <= middle <= x1 and x0 != x1]
            assert heights and to_value(heights[0]) == pytest.approx(value, abs=half_pixel)
        (mean_line,) = of_class(panels[label], "mean-line")
        mean_y = float(re.match(r"M0 (-?[\d.]+)", mean_line.get("d")).group(1))
        assert to_value(mean_y) == pytest.approx(float(np.mean(values)), abs=half_pixel)


def test_deltas_areas_split_worse_from_better_where_the_counts_do():
    deltas = {"v": np.array([-0.5, -0.25, 0.0, 0.0, 0.5])}
    svg = per_query_deltas_svg(deltas, "ndcg@10", "base")
    panel = groups(svg, "panel")["v"]
    (frame,) = [r for r in panel.iter(f"{SVG}rect") if r.get("fill") == "none"]
    width = float(frame.get("width"))
    (worse,), (better,) = of_class(panel, "worse"), of_class(panel, "better")
    assert max(x for x, _ in points(worse)) == pytest.approx(2 / 5 * width, abs=0.05)  # two worse queries
    assert min(x for x, _ in points(better)) == pytest.approx(4 / 5 * width, abs=0.05)  # then two ties, one better
    assert 'fill="url(#worse-hatch)"' in svg and "<pattern" in svg  # a pattern, not colour alone


def test_seventeen_variants_of_472_queries_stay_small_and_keep_their_shape():
    rng = np.random.default_rng(7)
    deltas = {f"variant-{i:02d}.size-{200 * (i % 3 + 1)}": np.sort(rng.normal(0, 0.2, 472).round(4))
              for i in range(17)}
    svg = per_query_deltas_svg(deltas, "ndcg@10", "base")
    assert len(svg.encode("utf-8")) < 150_000
    panels = groups(svg, "panel")
    assert list(panels) == list(deltas)
    to_value, half_pixel = inverse(panels["variant-00.size-200"], "ytick")
    for label, values in deltas.items():
        corners = points(of_class(panels[label], "steps")[0])
        assert len(corners) <= MAX_VERTICES
        drawn = [to_value(y) for _, y in corners]
        # Thinned, never invented: every corner is a difference of the data, the worst and best kept.
        assert all(np.min(np.abs(values - v)) <= half_pixel for v in drawn)
        assert drawn[0] == pytest.approx(values[0], abs=half_pixel)
        assert drawn[-1] == pytest.approx(values[-1], abs=half_pixel)
        assert content(of_class(panels[label], "mean")[0]) == f"mean Δ {signed(float(values.mean()))}"


def test_step_corners_by_hand():
    # Runs: -1 (queries 0-1), 0 (2), 0.5 (3-5): two corners per run.
    assert step_corners(np.array([-1.0, -1.0, 0.0, 0.5, 0.5, 0.5])) == [
        (0, -1.0), (2, -1.0), (2, 0.0), (3, 0.0), (3, 0.5), (6, 0.5)]
    values = np.arange(1000, dtype=np.float64)  # 2000 exact corners
    kept = step_corners(values, boundaries=(333,), max_vertices=50)
    exact = step_corners(values, max_vertices=10**9)
    assert len(kept) <= 52 and kept[0] == exact[0] and kept[-1] == exact[-1]
    assert set(kept) <= set(exact) and kept == sorted(kept)  # a subsequence of the exact corners
    assert (333, 332.0) in kept and (333, 333.0) in kept  # both corners at a boundary


def test_deltas_svg_of_a_lower_is_better_metric_counts_in_its_direction(monkeypatch):
    import dataclasses

    from rag_eval._scoring.metrics import measures

    monkeypatch.setitem(measures.FAMILIES, "ndcg", dataclasses.replace(measures.FAMILIES["ndcg"], higher_is_better=False))
    deltas = sorted_deltas(HAND, "ndcg@10", "b")  # c - b, largest increase first: 0, -0.25, -0.5, -0.75
    panel = groups(per_query_deltas_svg(deltas, "ndcg@10", "b"), "panel")["c"]
    assert content(of_class(panel, "wtl")[0]) == "W/T/L 3/1/0"
    assert not of_class(panel, "worse") and of_class(panel, "better")


# ---- drawing: the lines -------------------------------------------------------------------------------


def test_at_k_svg_ticks_are_the_cutoffs():
    curves = {"bm25": {1: 0.5, 3: 0.6, 10: 0.7}, "dense": {1: 0.4, 3: 0.65, 10: 0.8}}
    svg = metric_at_k_svg(curves, "ndcg@k")
    root = svg_root(svg)
    assert {"1", "3", "10", "k", "ndcg@k", "bm25", "dense"} <= set(texts(svg))
    series = groups(svg, "series")
    assert len(of_class(series["bm25"], "mk")) == 3
    # k on a log axis: 3 sits log10(3) of the way from 1 to 10.
    ks, xs = axis(root, "xtick")
    assert ks == [1, 3, 10]
    assert (xs[1] - xs[0]) / (xs[2] - xs[0]) == pytest.approx(math.log10(3), abs=0.5 / (xs[2] - xs[0]))
    to_value, half_pixel = inverse(root, "ytick")
    for label, curve in curves.items():
        centres = marker_centres(series[label])
        assert [x for x, _ in centres] == xs
        assert [to_value(y) for _, y in centres] == pytest.approx(list(curve.values()), abs=half_pixel)


def test_sensitivity_svg_spaces_numbers_in_order_and_names_series():
    points_ = [SweepPoint("x", 800, "overlap=0", 0.3), SweepPoint("y", 200, "overlap=0", 0.2),
               SweepPoint("z", 400.0, "overlap=0.5", 0.25)]
    svg = sensitivity_svg("chunking.size", points_, "ndcg@10")
    drawn = texts(svg)
    ticks = [t for t in drawn if t in {"200", "400.0", "800"}]
    assert ticks == ["200", "400.0", "800"]  # increasing; 400.0 shown as its variant's label says it
    assert {"chunking.size", "mean ndcg@10", "overlap=0", "overlap=0.5"} <= set(drawn)
    series = groups(svg, "series")
    assert len(of_class(series["overlap=0"], "mk")) == 2
    root = svg_root(svg)
    _, xs = axis(root, "xtick")
    assert xs[1] - xs[0] == pytest.approx(xs[2] - xs[1])  # evenly spaced
    to_value, half_pixel = inverse(root, "ytick")
    assert [(x, to_value(y)) for x, y in marker_centres(series["overlap=0"])] == [
        (xs[0], pytest.approx(0.2, abs=half_pixel)), (xs[2], pytest.approx(0.3, abs=half_pixel))]


def test_past_ten_lines_each_line_still_looks_different() -> None:
    styles = [line_style(i) for i in range(40)]
    assert len(set(styles)) == 40
    # Not by colour alone: marker and dash tell the first 24 apart without it.
    assert len({(s.marker, s.dash) for s in styles[:24]}) == 24
    curves = {f"v{i:02d}": {1: 0.1 * (i % 7), 10: 0.5} for i in range(12)}
    svg = metric_at_k_svg(curves, "ndcg@k")
    assert svg.count("stroke-dasharray") >= 2 * 6  # the 7th to 12th lines and their legend entries are dashed
    assert len(set(texts(svg)) & set(curves)) == 12  # every line in the legend


# ---- every plot ---------------------------------------------------------------------------------------


def all_kinds(label: str = "a") -> dict[str, str]:
    rows = [MeanRow(label, 0.5, 0.25, 0.75, 4), MeanRow("other", 0.25, 0.0, 0.5, 4)]
    return {
        "means": means_with_ci_svg(rows, "ndcg@10", baseline=label),
        "deltas": per_query_deltas_svg({label: np.array([-0.5, 0.0, 0.25])}, "ndcg@10", "base"),
        "at-k": metric_at_k_svg({label: {1: 0.5, 10: 0.7}, "other": {1: 0.4, 10: 0.6}}, "ndcg@k"),
        "sweep": sensitivity_svg("params.k1", [SweepPoint(label, 0.9, f"b={label}", 0.5),
                                               SweepPoint("other", 1.2, "b=0.75", 0.25)], "ndcg@10"),
    }


def test_svg_is_deterministic_and_undated():
    first, second = all_kinds(), all_kinds()
    assert first == second
    for svg in first.values():
        assert not re.search(r"\d{4}-\d{2}-\d{2}", svg)  # no date anywhere
    points_ = [SweepPoint("a", "model-a", "all", 0.5), SweepPoint("b", "model-b", "all", 0.25)]
    assert sensitivity_svg("params.model", points_) == sensitivity_svg("params.model", points_)


def test_every_svg_scales_and_has_a_title_and_a_text_equivalent():
    for kind, svg in all_kinds().items():
        root = svg_root(svg)
        assert re.fullmatch(r"0 0 [\d.]+ [\d.]+", root.get("viewBox", "")), kind
        assert root.get("role") == "img" and "sans-serif" in root.get("font-family", "")
        title, desc = root.find(f"{SVG}title"), root.find(f"{SVG}desc")
        assert title is not None and content(title) and desc is not None, kind
    desc = content(svg_root(all_kinds()["means"]).find(f"{SVG}desc"))
    assert "a (baseline) 0.5000 [0.2500, 0.7500] over 4 queries" in desc  # the numbers, readable without the plot
    desc = content(svg_root(all_kinds()["deltas"]).find(f"{SVG}desc"))
    assert "a: mean Δ -0.0833, 1 better, 1 equal, 1 worse of 3 paired queries" in desc


HOSTILE = 'x</text><script>alert("&")</script>\'\x00\x1b é 中文 🙂'


def test_hostile_labels_are_escaped_text():
    for kind, svg in all_kinds(HOSTILE).items():
        root = svg_root(svg)  # still well-formed
        assert "<script" not in svg and [node for node in root.iter() if node.tag.endswith("script")] == [], kind
        shown = HOSTILE.replace("\x00", "\ufffd").replace("\x1b", "\ufffd")
        drawn = texts(svg)
        assert any(shown in t for t in drawn) or any(shown in content(t) for t in root.iter(f"{SVG}title")), kind


def test_labels_with_dollars_are_text_not_math():
    svg = metric_at_k_svg({"$a$": {1: 0.5}}, "ndcg@k")
    assert "$a$" in texts(svg)


def test_nice_ticks_are_round_and_cover_the_range():
    for low, high in [(0.6177, 0.9765), (-1.0, 1.0), (0.81, 0.82), (200, 800), (-0.0012, 0.0034), (0.25, 0.25)]:
        ticks = nice_ticks(low, high)
        assert ticks[0] <= low and ticks[-1] >= high and 3 <= len(ticks) <= 12
        steps = {round(b - a, 12) for a, b in pairwise(ticks)}
        assert len(steps) == 1 and _is_round(steps.pop()), (low, high, ticks)
    assert tick_text([0.0, 0.25, 0.5]) == ["0.00", "0.25", "0.50"]
    assert tick_text([-1.0, -0.5, 0.0]) == ["-1.0", "-0.5", "0.0"]


def _is_round(step: float) -> bool:
    """1, 2, 2.5 or 5 times a power of ten."""
    mantissa = step / 10 ** math.floor(math.log10(step))
    return any(mantissa == pytest.approx(m) for m in (1, 2, 2.5, 5, 10))


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
    rows = groups(built.files["plot-means.svg"], "row")
    assert texts(rows["bm25"]) == ["bm25 (baseline)", "{} [{}, {}]".format(*map(fmt, (
        means["bm25"].mean, means["bm25"].low, means["bm25"].high)))]
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
