"""report.html, the run's page to explore, tested in a real headless browser (tests/browser.py) and as text.

Runs are made with `rag-eval run` from small configs written into a temporary folder: a passage
dataset of 4 hand-made queries and 126 filler queries (so the table has two pages of 100) with two
static retrievers, a dataset of hostile ids and texts, and the ocean documents with evidence. Every
expected value is derived here from the judgements and rankings written below (nDCG@3 by its
formula, linear gain), never read from the page's data. Query order is the run's: ids in byte order
(trec_eval's); ties in a sorted column keep that order.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import yaml
from browser import (
    browser,  # noqa: F401  (a fixture, session-scoped)
    open_page,  # noqa: F401  (a fixture)
)
from conftest import REPO

from rag_eval._core.output_manifest import MANIFEST
from rag_eval._data.config.schema import load_config
from rag_eval._report.format import one_line, shorten
from rag_eval._run.plan import REPORT_HTML, plan_run
from rag_eval.cli import main

# One browser and the runs it shows, for the module: under -n its tests stay on one worker.
pytestmark = pytest.mark.xdist_group("browser")

# ---- the passage run -----------------------------------------------------------------------------------

HAND = {  # qid: (text, tags, judgements)
    "q-alpha": ("Which ocean is the largest?", ["topic:ocean", "size"], {"d1": 3, "d2": 2, "d3": 0, "d10": 1}),
    "q-bravo": ("Where is the deepest trench?", ["topic:ocean", "depth"], {"d4": 2, "d5": 1}),
    "q-charlie": ("Which desert is the driest?", ["topic:desert"], {"d6": 3, "d7": 0}),
    "q-delta": ("How salty is the Dead Sea?", ["topic:sea", "size"], {"d8": 1, "d1": 0}),
}
RANKINGS = {  # d9 is judged for no query: a hole wherever it is retrieved
    "alpha": {"q-alpha": ["d1", "d2", "d3"], "q-bravo": ["d5", "d9", "d4"], "q-charlie": ["d7", "d6"], "q-delta": ["d8"]},
    "beta": {"q-alpha": ["d2", "d1", "d9"], "q-bravo": ["d4", "d5"], "q-charlie": ["d6"], "q-delta": ["d1", "d8"]},
}
FILLERS = 126
PASSAGE_TEXT = {f"d{i}": f"Passage d{i} says something about the sea, number {i}." for i in range(1, 11)}
PASSAGE_TEXT.update({f"f{i}": f"Filler passage f{i}." for i in range(10)})


def _filler(i: int) -> tuple[str, dict[str, int], list[str], list[str]]:
    """Filler query i: its id, judgements (every unit either retriever ranks is judged), alpha's and beta's ranking."""
    a, b, c = f"f{i % 10}", f"f{(i + 1) % 10}", f"f{(i + 3) % 10}"
    judgements = {a: 1 + i % 3, b: 0, c: 0}
    return f"q-fill-{i:03d}", judgements, [a] if i % 2 == 0 else [b, a], [a] if i % 3 == 0 else [c, a]


def passage_inputs() -> tuple[dict, dict, dict]:
    """``({qid: (text, tags)}, {qid: judgements}, {label: {qid: ranking}})`` of the passage run."""
    queries = {qid: (text, tags) for qid, (text, tags, _) in HAND.items()}
    judgements = {qid: grades for qid, (_, _, grades) in HAND.items()}
    rankings = {label: dict(r) for label, r in RANKINGS.items()}
    for i in range(FILLERS):
        qid, grades, alpha, beta = _filler(i)
        queries[qid] = (f"Filler question number {i}", ["filler"])
        judgements[qid] = grades
        rankings["alpha"][qid] = alpha
        rankings["beta"][qid] = beta
    return queries, judgements, rankings


def ndcg(ranking: list[str], grades: dict[str, int], k: int = 3) -> float:
    """nDCG@k by its formula: linear gain, discount log2(rank + 1), the ideal from every grade > 0."""
    dcg = sum(grades.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranking[:k]))
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:k]
    return dcg / sum(g / math.log2(i + 2) for i, g in enumerate(ideal))


def shown(value: float) -> int:
    """A value as the page and report.md print it (4 decimals), as an integer of ten-thousandths."""
    return int(f"{value:.4f}".replace(".", ""))


def write_run(folder: Path, dataset: dict, config: dict) -> Path:
    """`rag-eval run` on ``dataset`` (a query set) with ``config``; the output folder."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "set.yaml").write_text(yaml.safe_dump(dataset, sort_keys=False), encoding="utf-8")
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump({"dataset": {"path": "set.yaml"}, "output": "out", **config}, sort_keys=False),
                    encoding="utf-8")
    assert main(["run", str(path), "--no-progress"]) == 0
    return folder / "out"


@pytest.fixture(scope="module")
def passage_run(tmp_path_factory) -> Path:
    queries, judgements, rankings = passage_inputs()
    dataset = {
        "name": "html-test",
        "corpus": [{"id": pid, "text": text} for pid, text in PASSAGE_TEXT.items()],
        "queries": [{"id": qid, "text": text, "tags": tags, "judgements": judgements[qid]}
                    for qid, (text, tags) in queries.items()],
    }
    config = {
        "name": "html-test",
        "retrievers": [{"label": label, "adapter": "static", "params": {"rankings": r}} for label, r in rankings.items()],
        "top_k": 3,
        "metrics": ["ndcg@3", "recall@3"],
        "main_metric": "ndcg@3",
    }
    return write_run(tmp_path_factory.mktemp("html-passages"), dataset, config)


@pytest.fixture(scope="module")
def expected() -> dict:
    """What the page must show, derived from the inputs: query order, shown nDCG@3 per retriever, baseline."""
    queries, judgements, rankings = passage_inputs()
    order = sorted(queries, key=lambda q: q.encode("utf-8"))
    values = {label: {q: shown(ndcg(rankings[label][q], judgements[q])) for q in order} for label in rankings}
    means = {label: sum(ndcg(rankings[label][q], judgements[q]) for q in order) / len(order) for label in rankings}
    return {"order": order, "values": values, "baseline": max(means, key=means.get), "queries": queries,
            "judgements": judgements, "rankings": rankings}


def rows(page) -> list[str]:
    return page.eval_on_selector_all("#queries-table tbody tr[data-qid]", "rows => rows.map(r => r.dataset.qid)")


def all_rows(page) -> list[str]:
    page.select_option("#page-size", "500")
    return rows(page)


# ---- as text: no browser needed ------------------------------------------------------------------------


def test_a_run_plans_and_writes_report_html(passage_run):
    config = load_config(passage_run.parent / "run.yaml")
    assert REPORT_HTML == "report.html" and REPORT_HTML in plan_run(config).outputs
    assert (passage_run / "report.html").is_file()
    assert "report.html" in json.loads((passage_run / MANIFEST).read_text())["files"]
    report = (passage_run / "report.md").read_text(encoding="utf-8")
    assert "- **Explore:** [report.html](report.html)" in report


def test_the_page_is_self_contained_and_holds_the_decision_without_times(passage_run):
    html = (passage_run / "report.html").read_text(encoding="utf-8")
    assert "http://" not in html and "https://" not in html
    assert re.findall(r'<(?:script|link|img)[^>]*\b(?:src|href)="(?!data:)', html) == []
    assert "<h2 id=\"decision-h\">Decision</h2>" in html
    assert "Index (s)" not in html and "Search (s)" not in html
    report = (passage_run / "report.md").read_text(encoding="utf-8")
    created = re.search(r"^- \*\*Run at:\*\* (.+)$", report, re.MULTILINE).group(1)
    assert created not in html


def test_the_same_run_gives_the_same_bytes(passage_run, tmp_path):
    first = (passage_run / "report.html").read_bytes()
    config = yaml.safe_load((passage_run.parent / "run.yaml").read_text())
    config["output"] = str(tmp_path / "again")
    (passage_run.parent / "again.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    assert main(["run", str(passage_run.parent / "again.yaml"), "--no-progress"]) == 0
    assert (tmp_path / "again" / "report.html").read_bytes() == first


# ---- in the browser: loading, sorting, filtering -----------------------------------------------------


def test_the_page_loads_from_a_file_with_no_error_and_no_request(passage_run, open_page, expected):  # noqa: F811
    opened = open_page(passage_run / "report.html")
    assert opened.errors == [] and opened.refused == []
    assert all(url.startswith(("file:", "data:")) for url in opened.requested)
    page = opened.page
    assert rows(page) == expected["order"][:100]
    assert page.inner_text("#status") == "Queries 1–100 of 130."
    assert page.locator("figure.plot img").count() == 3  # means, at k, per-query differences: 2 retrievers
    page.click("#page-next")
    assert rows(page) == expected["order"][100:]
    assert page.inner_text("#status") == "Queries 101–130 of 130."


def test_the_table_shows_each_value_and_the_delta_to_the_baseline(passage_run, open_page, expected):  # noqa: F811
    page = open_page(passage_run / "report.html").page
    base = expected["baseline"]
    other = "beta" if base == "alpha" else "alpha"
    row = page.locator('#queries-table tbody tr[data-qid="q-bravo"]')
    cells = row.locator("td").all_inner_texts()
    values = expected["values"]
    a, b = values["alpha"]["q-bravo"], values["beta"]["q-bravo"]
    assert cells[3:5] == [f"{a / 10000:.4f}", f"{b / 10000:.4f}"]
    delta = values[other]["q-bravo"] - values[base]["q-bravo"]
    assert cells[5] == f"{delta / 10000:+.4f}" + (" ▲" if delta > 0 else " ▼" if delta < 0 else " =")


def test_sorting_orders_the_rows_by_the_known_values(passage_run, open_page, expected):  # noqa: F811
    page = open_page(passage_run / "report.html").page
    order, beta = expected["order"], expected["values"]["beta"]
    position = {q: i for i, q in enumerate(order)}
    header = page.get_by_role("button", name="beta", exact=True)
    header.click()
    assert header.locator("xpath=..").get_attribute("aria-sort") == "ascending"
    assert all_rows(page) == sorted(order, key=lambda q: (beta[q], position[q]))
    page.get_by_role("button", name="beta", exact=True).click()
    assert page.get_by_role("button", name="beta", exact=True).locator("xpath=..").get_attribute("aria-sort") == \
        "descending"
    assert rows(page) == sorted(order, key=lambda q: (-beta[q], position[q]))
    base = expected["baseline"]
    other = "beta" if base == "alpha" else "alpha"
    values = expected["values"]
    page.get_by_role("button", name=f"Δ {other}", exact=True).click()
    assert rows(page) == sorted(order, key=lambda q: (values[other][q] - values[base][q], position[q]))
    page.get_by_role("button", name="Query", exact=True).focus()
    page.keyboard.press("Enter")  # a sort header is a button: the keyboard sorts too
    assert rows(page) == sorted(order, key=lambda q: q)
    assert page.get_by_role("button", name="Query", exact=True).locator("xpath=..").get_attribute("aria-sort") == \
        "ascending"


def test_filtering_by_text_and_by_tag(passage_run, open_page, expected):  # noqa: F811
    page = open_page(passage_run / "report.html").page
    queries, order = expected["queries"], expected["order"]
    for needle in ("dead sea", "q-fill-12", "DESERT"):
        page.fill("#search", needle)
        page.press("#search", "Enter")
        assert rows(page) == [q for q in order if needle.lower() in f"{q}\n{queries[q][0]}".lower()], needle
    page.fill("#search", "")
    page.press("#search", "Enter")
    page.select_option("#tag", label="ocean (2)")  # topic:ocean
    assert rows(page) == ["q-alpha", "q-bravo"]
    page.select_option("#tag", label="size (2)")  # the plain tag "size"
    assert rows(page) == ["q-alpha", "q-delta"]
    page.fill("#search", "salty")
    page.press("#search", "Enter")
    assert rows(page) == ["q-delta"]
    assert page.inner_text("#status") == "Queries 1–1 of 1 (filtered from 130)."
    page.select_option("#tag", "-1")
    page.fill("#search", "")
    page.press("#search", "Enter")
    page.check("#holes-only")  # d9 is judged for no query: alpha retrieves it for q-bravo, beta for q-alpha
    assert rows(page) == ["q-alpha", "q-bravo"]


# ---- in the browser: drill-down, side by side, holes ----------------------------------------------------


def panel_units(page, label: str) -> list[tuple[str, str, str]]:
    """``(unit id, data-grade, the grade's text)`` of each ranked unit in ``label``'s panel."""
    found = page.eval_on_selector_all(
        f'#detail-panels .panel[data-retriever="{label}"] table.units tbody tr',
        "rows => rows.map(r => [r.dataset.unit, r.dataset.grade, r.querySelector('.g').textContent])",
    )
    return [tuple(row) for row in found]


def grade_words(grade: int | None) -> tuple[str, str]:
    if grade is None:
        return "unjudged", "? unjudged"
    return str(grade), ("✓ " if grade > 0 else "✗ ") + str(grade)


def test_the_keyboard_opens_a_query_and_esc_closes_it(passage_run, open_page, expected):  # noqa: F811
    page = open_page(passage_run / "report.html").page
    page.locator("#queries-table tbody tr").first.focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    third = expected["order"][2]
    assert page.evaluate("document.activeElement.dataset.qid") == third
    page.keyboard.press("Enter")
    assert page.locator("dialog#detail").get_attribute("open") is not None
    assert page.inner_text("#detail-qid") == third
    page.keyboard.press("Escape")
    assert page.locator("dialog#detail").get_attribute("open") is None
    assert page.evaluate("document.activeElement.dataset.qid") == third


def test_the_drill_down_shows_the_ranked_units_with_their_grades_and_derivation(passage_run, open_page, expected):  # noqa: F811
    page = open_page(passage_run / "report.html", "#q=q-bravo", wait="dialog#detail[open]").page
    judgements, rankings = expected["judgements"]["q-bravo"], expected["rankings"]
    base = expected["baseline"]
    assert page.inner_text("#detail-qid") == "q-bravo"
    units = panel_units(page, base)
    assert units == [(d, *grade_words(judgements.get(d))) for d in rankings[base]["q-bravo"]]
    if base == "alpha":  # d5 (1), d9 (unjudged), d4 (2): DCG@3 = 1 + 0 + 2 / log2(4); IDCG@3 = 2 + 1 / log2(3)
        dcg, idcg = 1 + 2 / 2, 2 + 1 / math.log2(3)
        result = page.locator(f'#detail-panels .panel[data-retriever="{base}"] p.result').inner_text()
        assert result == f"nDCG@3 = DCG@3 / IDCG@3 = {dcg:.4f} / {idcg:.4f} = {dcg / idcg:.4f}"
        hole = page.locator(f'#detail-panels .panel[data-retriever="{base}"] tr[data-unit="d9"]')
        assert hole.get_attribute("class") == "hole" and "? unjudged" in hole.inner_text()


def test_side_by_side_shows_both_rankings(passage_run, open_page, expected):  # noqa: F811
    page = open_page(passage_run / "report.html", "#q=q-alpha", wait="dialog#detail[open]").page
    page.select_option("#pick-a", label="alpha" + (" (baseline)" if expected["baseline"] == "alpha" else ""))
    page.select_option("#pick-b", label="beta" + (" (baseline)" if expected["baseline"] == "beta" else ""))
    judgements, rankings = expected["judgements"]["q-alpha"], expected["rankings"]
    assert page.locator("#detail-panels .panel").count() == 2
    for label in ("alpha", "beta"):
        assert panel_units(page, label) == [(d, *grade_words(judgements.get(d))) for d in rankings[label]["q-alpha"]]
    beside = page.eval_on_selector_all(
        '#detail-panels .panel[data-retriever="alpha"] table.units tbody tr', "rows => rows.map(r => r.lastChild.textContent)"
    )
    beta = rankings["beta"]["q-alpha"]
    assert beside == [str(beta.index(d) + 1) if d in beta else "—" for d in rankings["alpha"]["q-alpha"]]
    # d10 (grade 1) is retrieved by neither: listed under each ranking as relevant and not in the top 3.
    missed = page.eval_on_selector_all("#detail-panels ul.missed li", "items => items.map(i => i.dataset.unit)")
    assert missed == ["d10", "d10"]


# ---- hostile ids and texts ---------------------------------------------------------------------------------

EVIL_QUERIES = {
    "q</script><script>window.__pwned=1</script>": "</script><script>window.__pwned=2</script> “curly” ‘quotes’",
    "q\"'&amp;<img/src=x/onerror=window.__pwned=3>": 'Text <img src=x onerror="window.__pwned=4"> & <b>bold</b>',
    "q\u2028line\u2029para": "A line\u2028separator and a paragraph\u2029separator, <!-- not a comment",
    "q\u202eRTL-\u05e9\u05dc\u05d5\u05dd-😀-🐻\u200d❄️": "Right-to-left \u202eoverride\u202c and שלום and emoji 😀🐻‍❄️",
}
EVIL_PASSAGES = {
    "d</script>": "</script><script>window.__pwned=5</script>",
    "d<img/src=x/onerror=window.__pwned=6>": "<img src=x onerror=window.__pwned=7> & &amp; &lt;",
    "d\"quote'": "He said \"no\" and 'yes' \u2028 then `code` ${x} {{y}}",
    "d😀\u202e": "Emoji 😀 and \u202e reversed",
}
EVIL_TITLE = "Title </title><script>window.__pwned=8</script> & \"quotes\""


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory) -> Path:
    passages = list(EVIL_PASSAGES)
    dataset = {
        "name": "evil </script> & \"name\"",
        "corpus": [{"id": pid, "text": text} for pid, text in EVIL_PASSAGES.items()],
        "queries": [
            {"id": qid, "text": text, "tags": [f"topic:<b>{i}</b>", "emoji:😀"],
             "judgements": {passages[i]: 2, passages[(i + 1) % 4]: 0}}
            for i, (qid, text) in enumerate(EVIL_QUERIES.items())
        ],
    }
    rankings = {qid: [passages[i], passages[(i + 2) % 4], passages[(i + 1) % 4]] for i, qid in enumerate(EVIL_QUERIES)}
    config = {
        "name": "evil",
        "retrievers": [{"label": "evil.one", "adapter": "static", "params": {"rankings": rankings}},
                       {"label": "evil_two", "adapter": "static", "params": {"rankings": {q: r[::-1] for q, r in rankings.items()}}}],
        "top_k": 3,
        "metrics": ["ndcg@3"],
        "report": {"title": EVIL_TITLE, "passage_chars": 40},
    }
    return write_run(tmp_path_factory.mktemp("html-hostile"), dataset, config)


def test_hostile_text_cannot_end_the_data_block(hostile_run):
    html = (hostile_run / "report.html").read_text(encoding="utf-8")
    block = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.DOTALL).group(1)
    assert not set(block) & {"<", ">", "&", "\u2028", "\u2029"}
    data = json.loads(block)
    assert sorted(data["qids"]) == sorted(EVIL_QUERIES)
    assert set(data["units"]) == set(EVIL_PASSAGES)
    assert html.count("</script>") == 2  # the data block's end and the script's end: nothing else closes one


def test_hostile_ids_and_texts_are_shown_as_text(hostile_run, open_page):  # noqa: F811
    opened = open_page(hostile_run / "report.html")
    page = opened.page
    assert page.title() == EVIL_TITLE
    assert sorted(rows(page)) == sorted(EVIL_QUERIES)
    texts = page.eval_on_selector_all(
        "#queries-table tbody tr", "rows => rows.map(r => [r.dataset.qid, r.cells[0].textContent, r.cells[1].textContent])"
    )
    assert all(cell == qid and text == EVIL_QUERIES[qid] for qid, cell, text in texts)
    tags = page.eval_on_selector_all(
        "#queries-table tbody tr", "rows => rows.map(r => [r.dataset.qid, [...r.querySelectorAll('.tag')].map(t => t.textContent)])"
    )
    assert all(sorted(shown) == ["emoji: 😀", f"topic: <b>{list(EVIL_QUERIES).index(qid)}</b>"] for qid, shown in tags)
    for qid in EVIL_QUERIES:
        # By the row's data-qid, exactly: Playwright's has_text matches normalised substrings, and
        # these ids differ only in characters it normalises.
        page.evaluate(
            "qid => [...document.querySelectorAll('#queries-table tbody tr')].find(r => r.dataset.qid === qid).focus()",
            qid,
        )
        page.keyboard.press("Enter")
        assert page.inner_text("#detail-qid") == qid
        shown_units = page.eval_on_selector_all(
            "#detail-panels .panel table.units tbody tr",
            "rows => rows.map(r => [r.dataset.unit, r.querySelector('code').textContent, "
            "(r.querySelector('.unit-text') || {}).textContent])",
        )
        assert shown_units and all(
            unit == code and text == shorten(one_line(EVIL_PASSAGES[unit]), 40) for unit, code, text in shown_units
        )
        # The dialog's close event comes as a task after the key and hands focus back to this row:
        # wait for it, or it could land after the next row is focused and take the next Enter.
        page.evaluate(
            "() => { window.__closed = new Promise(done => "
            "document.getElementById('detail').addEventListener('close', () => setTimeout(done), {once: true})); }"
        )
        page.keyboard.press("Escape")
        page.evaluate("() => window.__closed")
        assert page.evaluate("() => document.activeElement.dataset.qid") == qid
    assert page.evaluate("window.__pwned") is None
    # Only the plots are images; no element came out of a text.
    assert page.locator("img").count() == page.locator("figure.plot img").count()
    assert page.locator("#queries b, #detail b, #queries-table script").count() == 0
    assert opened.errors == [] and opened.refused == []


# ---- documents: evidence marked inside chunks ------------------------------------------------------------


@pytest.fixture(scope="module")
def document_run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("html-documents")
    config = {
        "name": "html-documents",
        "dataset": {"path": str(REPO / "datasets" / "ocean_documents.yaml")},
        "chunking": {"fixed-40": {"method": "fixed", "size": 40, "overlap": 0}},
        "retrievers": [{"label": "bm25-fixed-40", "adapter": "bm25", "chunker": "fixed-40"},
                       {"label": "bm25-documents", "adapter": "bm25"}],
        "top_k": 10,
        "metrics": ["evidence_recall@3", "evidence_precision@3", "ndcg@3"],
        "main_metric": "evidence_recall@3",
        "output": "out",
    }
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    assert main(["run", str(path), "--no-progress"]) == 0
    return folder / "out"


def test_evidence_is_marked_inside_the_chunks(document_run, open_page):  # noqa: F811
    # After the emoji 🐻‍❄️ of oceans/arctic.md (4 code points, 5 UTF-16 units): the offsets are code points.
    quote = "hunt seals from the sea ice, and depend on it to reach their prey."
    document = yaml.safe_load((REPO / "datasets" / "ocean_documents.yaml").read_text(encoding="utf-8"))
    text = next(d["text"] for d in document["documents"] if d["id"] == "oceans/arctic.md")
    start = text.index(quote)
    opened = open_page(document_run / "report.html", "#q=q-polar-bears", wait="dialog#detail[open]")
    page = opened.page
    page.select_option("#pick-a", "1")  # bm25-documents: whole documents
    arctic = page.locator('#detail-panels .panel[data-retriever="bm25-documents"] tr[data-unit^="oceans/arctic.md#"]')
    assert arctic.count() == 1
    assert arctic.locator("mark").all_inner_texts() == [quote]
    assert arctic.get_attribute("data-grade") == "1"  # the evidence's grade (1 when the quote gives none)
    numbers = page.locator('#detail-panels .panel[data-retriever="bm25-documents"] p.formula').inner_text()
    covered, total, value = re.match(r"evidence recall = ([\d,]+) / ([\d,]+) = (\d\.\d{4});", numbers).groups()
    assert int(total) == len(quote) and int(covered) == len(quote) and value == "1.0000"
    evidence = page.locator("#detail-body ul li").first.inner_text()
    assert evidence.startswith(f"oceans/arctic.md [{start}, {start + len(quote)}) grade 1")
    assert opened.errors == [] and opened.refused == []
