"""report.html's table and links: long ids, the last row's means and counts, the legend's counts, #q= links.

One passage run of 8 hand-made queries and two static retrievers (top_k 12, main metric recall@10), opened
in a real headless Chromium (tests/browser.py). Its queries: an id of 3,000 characters without a break; ids
with ``#``, ``%``, ``?``, ``=``, ``&``, ``+`` and a non-ASCII letter (an id holds no white space); a query
whose passages are all judged 0 (n/a: left out of the means); one whose ranking holds 12 units (more than
the page keeps); and two whose recalls, 1/3 and 5/6, make the mean of the 4-decimal values differ from the
mean of the exact ones. Every expected number is derived
here from the judgements and rankings below (recall@10 as fractions), never read from the page.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml
from browser import (
    browser,  # noqa: F401  (a fixture, session-scoped)
    open_page,  # noqa: F401  (a fixture)
)

from rag_eval.cli import main

pytestmark = pytest.mark.xdist_group("browser")

LONG = "q-long-" + "x" * 2993
P = [f"p{i}" for i in range(1, 13)]
QUERIES = {  # qid: (tags, judgements, alpha's ranking, beta's ranking)
    LONG: ([], {"p1": 1}, ["p1"], ["p5"]),
    "q#hash%20x?y=1": ([], {"p2": 1}, ["p2"], ["p2"]),
    "q/é&b=c+d": ([], {"p3": 2}, ["p3"], ["p3", "p1"]),
    "q?what": ([], {"p4": 1}, ["p4"], []),
    "q-twelve": ([], {"p1": 1}, P, ["p2"]),
    "q-third": (["pair"], {"p1": 1, "p2": 1, "p3": 1}, ["p1"], ["p2", "p3"]),
    "q-five-sixths": (["pair"], {p: 1 for p in P[:6]}, P[:5], ["p1", "p2"]),
    "q-none": (["pair"], {"p1": 0}, ["p1"], ["p2"]),
}
LABELS = ("alpha", "beta")


def recall(qid: str, r: int) -> Fraction | None:
    """recall@10 of retriever ``r`` for ``qid`` as a fraction; None when no passage is relevant (n/a)."""
    _, judgements, *rankings = QUERIES[qid]
    relevant = {p for p, g in judgements.items() if g > 0}
    if not relevant:
        return None
    return Fraction(len(relevant & set(rankings[r][:10])), len(relevant))


def shown(value: Fraction) -> Fraction:
    """``value`` as the page and report.md print it (4 decimals)."""
    return Fraction(f"{float(value):.4f}")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("html-table")
    dataset = {
        "name": "html-table",
        "corpus": [{"id": p, "text": f"Passage {p} about the sea."} for p in P],
        "queries": [{"id": qid, "text": f"Question {i}", "tags": tags, "judgements": judgements}
                    for i, (qid, (tags, judgements, _, _)) in enumerate(QUERIES.items())],
    }
    (folder / "set.yaml").write_text(yaml.safe_dump(dataset, sort_keys=False), encoding="utf-8")
    config = {
        "name": "html-table",
        "dataset": {"path": "set.yaml"},
        "retrievers": [{"label": label, "adapter": "static",
                        "params": {"rankings": {q: v[2 + r] for q, v in QUERIES.items() if v[2 + r]}}}
                       for r, label in enumerate(LABELS)],
        "top_k": 12,
        "metrics": ["recall@10", "ndcg@10"],
        "main_metric": "recall@10",
        "output": "out",
    }
    (folder / "run.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    assert main(["run", str(folder / "run.yaml"), "--no-progress"]) == 0
    return folder / "out"


def open_query(page, qid: str) -> None:
    page.evaluate("qid => [...document.querySelectorAll('#queries-table tbody tr')]"
                  ".find(row => row.dataset.qid === qid).click()", qid)
    assert page.inner_text("#detail-qid") == qid


def footer(page) -> list[str]:
    return page.eval_on_selector_all("#queries-table tfoot td", "cells => cells.map(c => c.innerText)")


# ---- a long id -------------------------------------------------------------------------------------------


def test_a_long_id_leaves_the_values_in_view_and_is_given_in_full(run, open_page):  # noqa: F811
    opened = open_page(run / "report.html", width=1280)
    page = opened.page
    for label in ("alpha (baseline)", "beta", "Δ beta"):  # alpha has the best mean: the baseline
        box = page.get_by_role("button", name=label, exact=True).bounding_box()
        assert box is not None and box["x"] + box["width"] <= 1280, (label, box)
    cell = page.locator(f'#queries-table tbody tr[data-qid="{LONG}"] td.qid')
    assert cell.bounding_box()["width"] < 640
    assert cell.locator("code").get_attribute("title") == LONG
    table_box = page.locator(".table-box")
    assert page.evaluate("box => box.scrollWidth <= box.clientWidth", table_box.element_handle())
    open_query(page, LONG)
    head = page.locator("#detail .detail-head").bounding_box()
    assert head["height"] < 150  # the heading shows two lines of the id, not the screen
    assert page.locator("#detail-qid").get_attribute("title") == LONG
    assert page.locator("#detail-body details.qid-full code").text_content() == LONG
    assert opened.errors == []


# ---- the last row: exact means, both counts ---------------------------------------------------------------


def test_the_last_row_gives_the_exact_means_and_says_over_how_many(run, open_page):  # noqa: F811
    page = open_page(run / "report.html").page
    values = {label: {q: recall(q, r) for q in QUERIES} for r, label in enumerate(LABELS)}
    defined = {label: [v for v in per.values() if v is not None] for label, per in values.items()}
    exact = {label: sum(v) / len(v) for label, v in defined.items()}
    rounded = {label: sum(map(shown, v)) / len(v) for label, v in defined.items()}
    # The case the row must get right: the mean of the printed values prints otherwise.
    assert f"{float(exact['alpha']):.4f}" != f"{float(rounded['alpha']):.4f}"
    paired = [values["beta"][q] - values["alpha"][q] for q in QUERIES if values["alpha"][q] is not None]
    delta = sum(paired) / len(paired)
    n, total = len(defined["alpha"]), len(QUERIES)
    assert (n, total) == (7, 8)
    cells = footer(page)
    assert cells[0] == f"Mean over the {total} queries (of the exact values, as in report.md)"
    assert cells[1:] == [f"{float(exact['alpha']):.4f}\nover {n} of {total}",
                         f"{float(exact['beta']):.4f}\nover {n} of {total}",
                         f"{float(delta):+.4f}\nover {n} of {total}"]
    # report.md prints the same means.
    report = (run / "report.md").read_text(encoding="utf-8")
    assert f"{float(exact['alpha']):.4f}" in report and f"{float(exact['beta']):.4f}" in report
    # Filtered: the mean of the values shown, with both counts.
    page.select_option("#tag", label="pair (3)")
    pair = [q for q in QUERIES if "pair" in QUERIES[q][0]]
    shown_alpha = [shown(values["alpha"][q]) for q in pair if values["alpha"][q] is not None]
    cells = footer(page)
    assert cells[0] == "Mean of the values shown over the 3 queries filtered"
    assert cells[1] == f"{float(sum(shown_alpha) / len(shown_alpha)):.4f}\nover 2 of 3"


# ---- the legend counts what was retrieved --------------------------------------------------------------------


def test_the_legend_counts_the_units_each_ranking_retrieved(run, open_page):  # noqa: F811
    page = open_page(run / "report.html").page
    open_query(page, "q-five-sixths")
    page.select_option("#pick-a", "0")
    legend = page.locator('#detail-panels .panel[data-retriever="alpha"] p.legend').inner_text()
    assert legend.startswith(f"The {len(QUERIES['q-five-sixths'][2])} units retrieved. ")
    open_query(page, "q-twelve")
    legend = page.locator('#detail-panels .panel[data-retriever="alpha"] p.legend').inner_text()
    assert legend.startswith(f"Top 10 of the {len(P)} retrieved (this page holds each ranking's top 10). ")
    about = page.locator("#about").inner_text()
    assert "of the 12 retrieved" not in about and "at most top_k = 12" in about


# ---- links: #q= -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("qid", ["q#hash%20x?y=1", "q/é&b=c+d", "q?what", "q-third"])
def test_opening_a_query_names_it_in_the_url_and_the_url_opens_it(run, open_page, qid):  # noqa: F811
    page = open_page(run / "report.html").page
    open_query(page, qid)
    fragment = "#q=" + quote(qid, safe="-_.!~*'()")  # encodeURIComponent's escaping
    assert page.url.endswith(fragment)
    again = open_page(run / "report.html", fragment, wait="dialog#detail[open]").page
    assert again.inner_text("#detail-qid") == qid
    again.keyboard.press("Escape")
    again.wait_for_function("() => !location.hash")  # closed: the URL names no query any more


def test_a_link_to_an_unknown_query_says_so(run, open_page):  # noqa: F811
    page = open_page(run / "report.html", "#q=" + quote("q-nowhere?x")).page
    assert page.locator("dialog#detail").get_attribute("open") is None
    note = page.locator("#link-note")
    assert note.is_visible() and note.inner_text() == "The link names no query of this run: q-nowhere?x."
