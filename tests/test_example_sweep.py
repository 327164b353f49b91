"""The committed sweep example (reports/ocean-facts-sweep/) is what `rag-eval run configs/ocean_facts_sweep.yaml`
writes today: the decision report, its plots (SVG, byte for byte), the per-query CSV and every variant's results.

Regenerated as tests/test_example_report.py regenerates the ocean-facts example, with its
normalisation (the run-dependent fields of its RUN_DEPENDENT blanked); the number of blanked fields must agree
between the committed and the fresh files. After an intended change:

    .venv/bin/rag-eval run configs/ocean_facts_sweep.yaml
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO
from test_example_report import normalised

from rag_eval._core.output_manifest import MANIFEST
from rag_eval.cli import main

EXAMPLE = REPO / "reports" / "ocean-facts-sweep"
CONFIG = Path("configs") / "ocean_facts_sweep.yaml"
DATASET = Path("datasets") / "ocean_facts.yaml"
VARIANTS = [f"bm25.k1-{k1}.b-{b}" for k1 in ("0.9", "1.2", "1.5") for b in ("0.4", "0.75")]


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sweep_example")
    for relative in (CONFIG, DATASET):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / relative, root / relative)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAG_EVAL_CACHE_DIR", str(root / ".cache"))  # an empty cache: nothing reused from other runs
        patch.chdir(root)
        assert main(["run", str(CONFIG), "--no-progress"]) == 0
    return root / "reports" / "ocean-facts-sweep"


def test_the_sweep_example_holds_one_results_file_per_variant_and_the_plots():
    names = {p.name for p in EXAMPLE.iterdir()}
    expected = {f"{label}.{ext}" for label in [*VARIANTS, "seed-ranking"] for ext in ("json", "run")}
    expected |= {MANIFEST, "report.md", "report.html", "per-query.csv", "plot-means.svg", "plot-deltas.svg", "plot-at-k.svg",
                 "plot-sweep-params.k1.svg", "plot-sweep-params.b.svg"}
    assert names == expected


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLE.iterdir()) if EXAMPLE.is_dir() else [])
def test_regenerating_the_sweep_example_gives_the_same_bytes(regenerated, name):
    committed, committed_count = normalised(name, (EXAMPLE / name).read_text(encoding="utf-8"))
    fresh, fresh_count = normalised(name, (regenerated / name).read_text(encoding="utf-8"))
    assert committed_count == fresh_count
    assert committed == fresh, (
        f"reports/ocean-facts-sweep/{name} is not what `rag-eval run configs/ocean_facts_sweep.yaml` writes now; "
        "if the change is intended, regenerate it from the repository root and read the diff"
    )


def test_the_csv_and_the_report_agree_with_the_results_files():
    rows = list(csv.DictReader(io.StringIO((EXAMPLE / "per-query.csv").read_text(encoding="utf-8"))))
    report = (EXAMPLE / "report.md").read_text(encoding="utf-8")
    for label in VARIANTS:
        results = json.loads((EXAMPLE / f"{label}.json").read_text(encoding="utf-8"))["results"]
        mine = {row["qid"]: float(row["ndcg@10"]) for row in rows if row["variant"] == label}
        assert mine == {qid: values["ndcg@10"] for qid, values in results["per_query"].items()}
        mean = results["aggregate"]["ndcg@10"]
        assert f"{mean:.4f} [" in report  # its mean, with its interval, in the verdict table
    assert "(baseline)" in report and "Statistically indistinguishable from the best" in report
