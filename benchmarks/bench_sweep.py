"""A sweep's wall time against the sum of its variants run one by one.

For each config, `rag-eval run` runs the whole sweep once as a process, then each variant alone
(a config holding just that retriever, with the chunker it reads) as its own process; every
process gets an empty cache folder, so nothing is reused from an earlier run and the difference
is the work a sweep shares within one run: loading the dataset, cutting each distinct chunking
once, importing the libraries. Prints a markdown table.

    python benchmarks/bench_sweep.py [--configs ocean_facts_sweep scifact_bm25_sweep ...]

Needs ../shared/datasets for every config but ocean_facts_sweep.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
CONFIGS = ("ocean_facts_sweep", "scifact_bm25_sweep", "chroma_chunking_sweep_bm25")


def run(config: Path, output: Path) -> float:
    """Seconds of one `rag-eval run` process with an empty cache."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", RAG_EVAL_CACHE_DIR=cache)
        started = time.perf_counter()
        subprocess.run(
            [str(REPO / ".venv" / "bin" / "rag-eval"), "run", str(config), "--output", str(output), "--no-progress"],
            check=True, env=env, stdout=subprocess.DEVNULL,
        )
        return time.perf_counter() - started


def variant_configs(name: str, folder: Path) -> tuple[Path, list[Path]]:
    """The sweep's config (paths made absolute) and one config per expanded retriever."""
    from rag_eval._data.config.schema import load_config

    source = REPO / "configs" / f"{name}.yaml"
    if name == "chroma_chunking_sweep_bm25":  # the chroma sweep's bm25 half: its chunkings are the shared work
        source = REPO / "configs" / "chroma_chunking_sweep.yaml"
    raw = yaml.safe_load(source.read_text(encoding="utf-8"))
    raw.pop("output", None)
    raw.pop("cache_dir", None)
    for key in ("path", "qrels", "queries", "corpus"):
        if key in raw["dataset"]:
            raw["dataset"][key] = str((source.parent / raw["dataset"][key]).resolve())
    if name == "chroma_chunking_sweep_bm25":
        raw["retrievers"] = [r for r in raw["retrievers"] if r["label"] == "bm25"]
        raw["sweep"]["grid"] = [g for g in raw["sweep"]["grid"] if g["retriever"] == "bm25"]
    whole = folder / "sweep.yaml"
    whole.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    expanded = load_config(whole).model
    singles = []
    for spec in expanded.retrievers:
        one = expanded.model_dump(mode="json", exclude={"sweep", "output", "regression"})
        one["retrievers"] = [spec.model_dump(mode="json")]
        one["chunking"] = {spec.chunker: expanded.chunking[spec.chunker]} if spec.chunker else {}
        one["main_metric"] = expanded.primary_metric
        path = folder / f"{spec.label}.yaml"
        path.write_text(yaml.safe_dump(one, sort_keys=False), encoding="utf-8")
        singles.append(path)
    return whole, singles


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=CONFIGS)
    args = parser.parse_args()
    print("| sweep | variants | sweep, one run (s) | variants one by one, sum (s) | ratio |")
    print("|---|---:|---:|---:|---:|")
    for name in args.configs:
        with tempfile.TemporaryDirectory() as work:
            folder = Path(work)
            whole, singles = variant_configs(name, folder)
            together = run(whole, folder / "out-sweep")
            apart = sum(run(single, folder / f"out-{single.stem}") for single in singles)
            print(f"| {name} | {len(singles)} | {together:.1f} | {apart:.1f} | {apart / together:.1f}x |")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
