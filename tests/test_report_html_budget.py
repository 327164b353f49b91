"""report.html works a document query's main metric out over the chunks that metric reads, as report.md does.

A budget (``evidence_recall@60tokens``, ``@300chars``) reads the best chunks that fit it, not the top k; a
cutoff reads the top k. Runs of the repository's ocean documents (BM25 on 40-token chunks and on whole
documents, top 10) are opened in a real headless Chromium (tests/browser.py). Every expected number is
derived here from the run's rankings (its results files), the documents and the quotes of the evidence:
tokens by the rule of docs/semantics.md (a run of word characters or one other non-space character), the
budget's prefix, the evidence's characters inside the chunks read; never read from the page's data.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from browser import (
    browser,  # noqa: F401  (a fixture, session-scoped)
    open_page,  # noqa: F401  (a fixture)
)
from conftest import REPO

from rag_eval.cli import main

pytestmark = pytest.mark.xdist_group("browser")

DATASET = REPO / "datasets" / "ocean_documents.yaml"
LABELS = ("bm25-fixed-40", "bm25-documents")
TOKEN = re.compile(r"\w+|[^\w\s]")


def _run(folder: Path, main_metric: str) -> Path:
    metrics = [main_metric, main_metric.replace("recall", "precision"), "evidence_recall@10"]
    config = {
        "name": "html-budget",
        "dataset": {"path": str(DATASET)},
        "chunking": {"fixed-40": {"method": "fixed", "size": 40, "overlap": 0}},
        "retrievers": [{"label": LABELS[0], "adapter": "bm25", "chunker": "fixed-40"},
                       {"label": LABELS[1], "adapter": "bm25"}],
        "top_k": 10,
        "metrics": list(dict.fromkeys(metrics)),
        "main_metric": main_metric,
        "report": {"detailed_queries": 10},
        "output": "out",
    }
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    assert main(["run", str(path), "--no-progress"]) == 0
    return folder / "out"


def _read(ranking: list[list], documents: dict[str, str], k: int, unit: str | None) -> list[tuple[str, int, int]]:
    """The chunks a metric reads of ``ranking`` (best first): the top k, or the longest prefix that fits k."""
    spans = []
    for unit_id, _score, _grade in ranking:
        doc, offsets = unit_id.rsplit("#", 1)
        start, end = (int(x) for x in offsets.split("-"))
        spans.append((doc, start, end))
    if unit is None:
        return spans[:k]
    used, read = 0, []
    for doc, start, end in spans:
        size = end - start if unit == "chars" else len(TOKEN.findall(documents[doc][start:end]))
        if used + size > k:
            break
        used += size
        read.append((doc, start, end))
    return read


def expected_numbers(out: Path, label: str, k: int, unit: str | None) -> dict[str, tuple[int, int, int, int]]:
    """Per query with evidence: (chunks read, evidence characters covered, evidence characters, characters read)."""
    data = yaml.safe_load(DATASET.read_text(encoding="utf-8"))
    documents = {d["id"]: d["text"] for d in data["documents"]}
    rankings = json.loads((out / f"{label}.json").read_text(encoding="utf-8"))["rankings"]
    numbers = {}
    for query in data["queries"]:
        evidence = set()
        for piece in query.get("evidence", ()):
            start = documents[piece["doc"]].index(piece["quote"])
            evidence |= {(piece["doc"], i) for i in range(start, start + len(piece["quote"]))}
        if not evidence:
            continue
        read = _read(rankings.get(query["id"], []), documents, k, unit)
        inside = {(doc, i) for doc, start, end in read for i in range(start, end)}
        numbers[query["id"]] = (len(read), len(evidence & inside), len(evidence), sum(e - s for _, s, e in read))
    return numbers


def formula(covered: int, total: int, context: int) -> str:
    precision = f"{covered:,} / {context:,} = {covered / context:.4f}" if context else "0.0000 (nothing retrieved)"
    iou = covered / (context + total - covered)
    return (f"evidence recall = {covered:,} / {total:,} = {covered / total:.4f}; precision = {precision}; "
            f"IoU = {covered:,} / ({context:,} + {total - covered:,}) = {iou:.4f}")


def report_line(report: str, qid: str, label: str) -> str | None:
    """report.md's numbers line of ``label`` under the detailed query ``qid``; None when it is not shown."""
    sections = re.split(r"^### ", report, flags=re.MULTILINE)
    section = next((s for s in sections if s.startswith(f"{qid}: ")), None)
    if section is None:
        return None
    parts = re.split(r"^#### ", section, flags=re.MULTILINE)
    part = next((p for p in parts if p.startswith(f"{label} ") or p.startswith(f"{label}\n")), None)
    if part is None:
        return None
    return next(line for line in part.splitlines() if line.startswith("At the "))


@pytest.mark.parametrize(("main_metric", "k", "unit", "what"), [
    ("evidence_recall@60tokens", 60, "tokens", "the chunks that fit 60 tokens"),
    ("evidence_recall@300chars", 300, "chars", "the chunks that fit 300 chars"),
    ("evidence_recall@3", 3, None, "the top 3 chunks"),
])
def test_the_drill_down_works_the_main_metric_out_over_the_chunks_it_reads(
    tmp_path, open_page, main_metric, k, unit, what  # noqa: F811
):
    out = _run(tmp_path, main_metric)
    report = (out / "report.md").read_text(encoding="utf-8")
    checked_budget_cut = False
    compared = 0
    opened = open_page(out / "report.html")
    page = opened.page
    for r, label in enumerate(LABELS):
        numbers = expected_numbers(out, label, k, unit)
        for qid, (n, covered, total, context) in numbers.items():
            page.evaluate("qid => [...document.querySelectorAll('#queries-table tbody tr')]"
                          ".find(row => row.dataset.qid === qid).click()", qid)
            assert page.inner_text("#detail-qid") == qid
            page.select_option("#pick-a", str(r))
            panel = page.locator(f'#detail-panels .panel[data-retriever="{label}"]')
            assert panel.locator("p.formula").inner_text() == formula(covered, total, context), (label, qid)
            assert panel.locator(".derivation h4").inner_text() == \
                f"Evidence in {what} ({n} chunk{'' if n == 1 else 's'} read)", (label, qid)
            # The run's own value beside it: the same number.
            assert panel.locator("p.run-values").inner_text().startswith(
                f"The run's values: {main_metric} {covered / total:.4f};"), (label, qid)
            listed = panel.locator("table.units tbody tr").count()
            assert panel.locator("table.units tbody tr.unread").count() == listed - min(n, listed)
            if unit is not None and n == 0 and listed:
                assert f"Nothing is read: the first chunk alone is larger than {k} {unit}." in panel.inner_text()
            checked_budget_cut |= n < listed
            # report.md's detailed queries work the same query out alike (when it shows this one).
            line = report_line(report, qid, label)
            if line is not None:
                compared += 1
                assert line.startswith(f"At the {n} chunk{'' if n == 1 else 's'} shown: evidence recall = "
                                       f"{covered:,} / {total:,} = **{covered / total:.4f}**"), (label, qid, line)
    assert compared >= 2
    if unit is not None:
        assert checked_budget_cut  # the budget did cut some ranking short of what the page lists
    assert opened.errors == [] and opened.refused == []
