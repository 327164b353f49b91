"""report.html at scale: its size, the time to write it, and its load time in headless Chromium.

Generates a synthetic run outcome (default 10,000 queries x 12 variants, passages, 4 metrics, tags),
renders report.html as `rag-eval run` does (rag_eval._commands.outputs.render_outputs), and loads it
from a file:// URL in the operating system's Chromium (/usr/bin/chromium, driven by Playwright; no
browser is downloaded), several rounds in fresh pages: navigation start to the per-query table
rendered (the page sets ``data-ready`` on <html> and marks ``report-ready`` with performance.mark).
Prints a markdown table with the size and min / median of each time.

    .venv/bin/python benchmarks/bench_report_html.py                # 10,000 x 12, 7 rounds
    .venv/bin/python benchmarks/bench_report_html.py --queries 1000 --variants 3 --rounds 3

The data is generated deterministically (seed 20240611): per query a pool of 30 passages of its own
plus 4 of 2,000 shared ones, 15 judgements (grades 0-3, about half of the judged ones relevant), each
variant's top 10 drawn from the pool by the passages' relevance plus variant noise, so the variants
overlap as a sweep's do; query texts of 6-12 words; passages of 18-30 words; tags topic:<one of 8> and
difficulty:<easy|hard>.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
SEED = 20240611
METRICS = ["ndcg@10", "recall@10", "mrr@10", "map@10"]
WORDS = ["ocean", "current", "salt", "river", "delta", "glacier", "shelf", "trench", "basin", "ridge", "plate", "coast", "tide", "wave", "reef", "island", "lagoon", "estuary", "storm", "monsoon", "climate", "rain", "desert", "dune", "sand", "wind", "heat", "ice", "pole", "arctic", "fjord", "strait", "harbor", "port", "ship", "chart", "depth", "floor", "volcano", "crater", "magma", "lava", "basalt", "mineral", "fossil", "sediment", "layer"]
TOPICS = ("oceans", "seas", "deserts", "climate", "geology", "ice", "coasts", "weather")
LAUNCH_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
CHROMIUM = "/usr/bin/chromium"


def _words(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def synthetic_run(folder: Path, queries: int = 10_000, variants: int = 12) -> Any:
    """A RunOutcome of ``variants`` static retrievers over ``queries`` synthetic queries, evaluated as a run does.

    The config (written into ``folder``) names a tiny dataset file to pass validation; the Dataset of the
    outcome is built here, and each variant's ranking is scored by rag_eval's evaluate() with its holes,
    as rag_eval._run.passages does.
    """
    from rag_eval._data.config.schema import load_config
    from rag_eval._data.datasets.model import Dataset, Query
    from rag_eval._run.holes_record import evaluation_options, passage_holes
    from rag_eval._run.outcome import RetrieverOutcome, RunOutcome
    from rag_eval._scoring.evaluate import evaluate

    rng = random.Random(SEED)
    folder.mkdir(parents=True, exist_ok=True)
    labels = [f"variant-{i:02d}" for i in range(1, variants + 1)]
    (folder / "tiny.yaml").write_text(yaml.safe_dump({
        "name": "synthetic", "corpus": [{"id": "p", "text": "x"}],
        "queries": [{"id": "q", "text": "x", "judgements": {"p": 1}}],
    }), encoding="utf-8")
    config_path = folder / "synthetic.yaml"
    config_path.write_text(yaml.safe_dump({
        "name": "synthetic-10k",
        "dataset": {"path": "tiny.yaml"},
        "retrievers": [{"label": label, "adapter": "static", "params": {"rankings": {"q": ["p"]}}} for label in labels],
        "top_k": 10,
        "metrics": METRICS,
        "main_metric": METRICS[0],
        "output": "out",
    }, sort_keys=False), encoding="utf-8")
    config = load_config(config_path)

    shared = [f"shared-{i:04d}" for i in range(2000)]
    corpus: dict[str, dict[str, str]] = {pid: {"text": _words(rng, 18, 30)} for pid in shared}
    query_map: dict[str, Query] = {}
    judgements: dict[str, dict[str, float]] = {}
    pools: dict[str, list[tuple[str, float]]] = {}
    for n in range(queries):
        qid = f"q{n:05d}"
        tags = (f"topic:{rng.choice(TOPICS)}", f"difficulty:{rng.choice(('easy', 'hard'))}")
        query_map[qid] = Query(qid, _words(rng, 6, 12).capitalize() + "?", tags)
        own = [f"{qid}-p{j:02d}" for j in range(30)]
        for pid in own:
            corpus[pid] = {"text": _words(rng, 18, 30)}
        pool = own + rng.sample(shared, 4)
        relevance = {pid: rng.random() for pid in pool}
        judged = sorted(pool, key=lambda p: -relevance[p] + rng.random() * 0.6)[:15]
        judgements[qid] = {pid: float(min(3, int(relevance[pid] * 4 * rng.uniform(0.7, 1.1)))) for pid in judged}
        pools[qid] = [(pid, relevance[pid]) for pid in pool]
    dataset = Dataset("synthetic", query_map, judgements, corpus, source="synthetic (benchmarks/bench_report_html.py)")

    model = config.model
    options = model.evaluation.passage_options()
    outcomes = []
    for i, label in enumerate(labels):
        noise = 0.25 + 0.03 * i
        vrng = random.Random(SEED + i)
        ranking = {}
        for qid, pool in pools.items():
            scored = sorted(((rel + vrng.gauss(0, noise), pid) for pid, rel in pool), reverse=True)[:10]
            ranking[qid] = {pid: round(score, 4) for score, pid in scored}
        results = evaluate(judgements, ranking, model.metrics, **options)
        holes = passage_holes(judgements, ranking, results, model.top_k, evaluation_options(options))
        spec = next(s for s in model.retrievers if s.label == label)
        outcomes.append(RetrieverOutcome(spec, {"source": "synthetic"}, ranking, results, {}, holes=holes))
    return RunOutcome(config, dataset, outcomes, created="2024-06-11T00:00:00+00:00")


def write_report(run: Any, folder: Path) -> tuple[Path, float, str]:
    """Every output of ``run`` as `rag-eval run` renders them, written into ``folder``.

    Returns report.html's path, the seconds all outputs took, and the text of report.md.
    """
    from rag_eval._commands.outputs import render_outputs
    from rag_eval._run.plan import REPORT, REPORT_HTML, plan_run

    plan = plan_run(run.config, comparison=False, documents=False)
    started = time.perf_counter()
    files = render_outputs(run, plan)
    seconds = time.perf_counter() - started
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder / REPORT_HTML, seconds, files[REPORT]


def html_only_seconds(run: Any, report: str, rounds: int = 3) -> float:
    """The fewest seconds of ``rounds`` renderings of report.html alone (plots drawn once before, as a run has them)."""
    from rag_eval._report.html import render_html_report
    from rag_eval._report.plots import build_plots

    plots = build_plots(run, run.config.model.primary_metric, run.config.baseline_label)
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        render_html_report(run, plots, report)
        best = min(best, time.perf_counter() - started)
    return best


INTERACTIONS = """() => {
    const took = action => { const started = performance.now(); action(); return performance.now() - started; };
    const search = document.getElementById('search');
    return {
        sort: took(() => document.querySelector('button.sort[data-sort="val:1"]').click()),
        filter: took(() => { search.value = 'q0001'; search.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter'})); }),
        open: took(() => document.querySelector('#queries-table tbody tr').click()),
    };
}"""


def load_times(path: Path, rounds: int) -> list[dict[str, float]]:
    """Per round, in a fresh page: ms from navigation start to the table built and to its first frame, to
    DOMContentLoaded; then ms a sort, a text filter and opening a query take (each handled synchronously)."""
    from playwright.sync_api import sync_playwright

    url = path.resolve().as_uri()
    times = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            for _ in range(rounds):
                page = browser.new_page()
                page.goto(url, wait_until="load")
                page.wait_for_selector("html[data-ready]", timeout=60_000)
                page.wait_for_function("performance.getEntriesByName('report-painted').length > 0")
                measured = page.evaluate(
                    """() => {
                        const nav = performance.getEntriesByType('navigation')[0];
                        const mark = name => performance.getEntriesByName(name)[0].startTime;
                        return {ready: mark('report-ready'), painted: mark('report-painted'),
                                dom: nav.domContentLoadedEventEnd};
                    }"""
                )
                measured.update(page.evaluate(INTERACTIONS))
                times.append(measured)
                page.close()
        finally:
            browser.close()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--variants", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="write the run's files here (default: a temporary folder)")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} not found: install Debian's chromium package (scripts/install_browser.sh)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as temporary:
        work = Path(temporary)
        started = time.perf_counter()
        run = synthetic_run(work / "config", args.queries, args.variants)
        generated = time.perf_counter() - started
        path, render_s, report = write_report(run, args.keep or work / "out")
        html_s = html_only_seconds(run, report)
        size = path.stat().st_size
        times = load_times(path, args.rounds)
    def both(key: str) -> str:
        values = [t[key] for t in times]
        return f"{min(values):.0f} / {statistics.median(values):.0f}"

    print(f"<!-- synthetic run generated and evaluated in {generated:.1f} s; all outputs rendered in {render_s:.1f} s; "
          f"{args.rounds} rounds, each in a fresh page; ms as min / median -->")
    print("| queries x variants | report.html | render it, best of 3 (s) | table built (ms) | first frame after (ms) | "
          "DOMContentLoaded (ms) | sort (ms) | text filter (ms) | open a query (ms) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {args.queries:,} x {args.variants} | {size / 2**20:.2f} MiB ({size:,} bytes) | {html_s:.2f} | "
          f"{both('ready')} | {both('painted')} | {both('dom')} | {both('sort')} | {both('filter')} | {both('open')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
