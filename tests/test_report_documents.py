"""The run report of a dataset of documents: counts, chunkings, metric tables, chunks with their evidence in bold.

The run is built by hand: two short documents with accents, an emoji, CJK and markdown
characters; evidence at both edges of a document, one span that no retriever covers
and a query judged by document only; a retriever reading a chunking of overlapping
20-character windows and one returning its own (overlapping) spans, which has no
chunk-level metrics. Results come from rag_eval.evaluate_evidence, as the runner makes them.
After an intended change to the renderer, regenerate the golden file and read the diff:

    RAG_EVAL_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_report_documents.py
"""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_report import check_golden, rendered_lines, section, table_problems

from rag_eval._core.spans import Chunk, EvidenceSpan, chunk_id
from rag_eval._data.config.schema import LoadedConfig, RunConfig
from rag_eval._data.datasets import Dataset, Query
from rag_eval._models.chunking import summarize_chunks
from rag_eval._models.embeddings.truncation import truncation_warning
from rag_eval._report.emphasis import cut_window, marked_text
from rag_eval._report.markdown import render_run_report
from rag_eval._run.documents import computable_metrics, own_spans_record
from rag_eval._run.outcome import ChunkingRecord, RetrieverOutcome, RunOutcome
from rag_eval._scoring.evidence import evaluate_evidence

G, N = "guide.md", "notes/b|1.txt"  # the second id holds a pipe: it must stay inside its table cell
DOCUMENTS = {
    G: "Café crème à Paris 🌊. Le port de 東京 est *grand* | très `grand`. Fin.",
    N: "Évidence au début, puis du texte au milieu, et la fin ici.",
}


def quoted(doc: str, quote: str, grade: float = 1.0) -> EvidenceSpan:
    start = DOCUMENTS[doc].index(quote)
    return EvidenceSpan(doc, start, start + len(quote), grade)


EVIDENCE = {
    # At the start of one document (grade 2) and at the end of the other.
    "q-cafe": (quoted(G, "Café crème", 2.0), quoted(N, "la fin ici.")),
    # CJK and markdown characters: *, |, backticks.
    "q-tokyo": (quoted(G, "東京 est *grand* | très `grand`"),),
    # Covered by no retrieved chunk.
    "q-miss": (quoted(N, "Évidence au début"),),
}
DOCUMENT_JUDGEMENTS = {"q-doc": {G: 1.0}}
GRADES = {"q-cafe": {G: 2.0, N: 1.0}, "q-tokyo": {G: 1.0}, "q-miss": {N: 1.0}, "q-doc": {G: 1.0}}
QUERIES = {
    qid: Query(qid, text)
    for qid, text in [
        ("q-cafe", "Où est le café ?"),
        ("q-tokyo", "東京の港は？"),
        ("q-miss", "What is at the start?"),
        ("q-doc", "Judged by document only"),
        ("q-none", "Never judged"),
    ]
}


def windows(doc: str, size: int = 20, step: int = 15) -> list[Chunk]:
    """Fixed windows of ``size`` characters, overlapping by ``size - step``."""
    text, chunks, start = DOCUMENTS[doc], [], 0
    while True:
        end = min(start + size, len(text))
        chunks.append(Chunk(doc, start, end, text[start:end]))
        if end == len(text):
            return chunks
        start += step


CHUNKS = windows(G) + windows(N)
# Given in no particular order: the report ranks them (score desc, ties by chunk id desc).
SPANS = {
    "fixed": {
        "q-cafe": [(G, 0, 20, 2.0), (N, 45, 58, 2.0), (G, 15, 35, 1.0)],
        "q-tokyo": [(N, 0, 20, 0.5), (G, 30, 50, 3.0), (G, 45, 65, 2.5)],
        "q-miss": [(G, 0, 20, 1.0)],
        "q-doc": [(G, 60, 68, 1.0)],
        "q-none": [],
    },
    "own": {
        "q-cafe": [(G, 0, 5, 0.9), (N, 40, 58, 0.8)],
        "q-tokyo": [(G, 33, 40, 0.7), (G, 35, 68, 0.6)],  # overlapping spans
        "q-miss": [],
        "q-doc": [(G, 0, 68, 1.0)],  # a whole document, longer than passage_chars
        "q-none": [],
    },
}
TRUNCATION = {"max_seq_length": 4, "truncated": 3, "passages": 9, "share": 3 / 9, "longest_tokens": 6,
              "special_tokens": 2}
METRICS = [
    "doc_ndcg@3",
    "evidence_recall@3",
    "evidence_precision@3",
    "evidence_iou@3",
    "evidence_recall@30chars",
    "ndcg@3",
    "recall@3",
]


def document_run(**overrides) -> RunOutcome:
    raw = {
        "name": "documents",
        "dataset": {"path": "../datasets/documents.yaml"},
        "chunking": {"fixed-20": {"method": "fixed", "size": 20, "overlap": 5, "unit": "chars"}},
        "retrievers": [
            {"label": "fixed", "adapter": "bm25", "chunker": "fixed-20"},
            {"label": "own", "adapter": "static", "params": {"path": "runs/own.run"}},
        ],
        "metrics": METRICS,
        "main_metric": "evidence_recall@3",
        "top_k": 3,
        "report": {"detailed_queries": 10, "passage_chars": 24},
    }
    raw.update(overrides)
    config = LoadedConfig(Path("configs/x/documents.yaml"), raw, RunConfig.model_validate(raw))
    dataset = Dataset(
        "documents",
        dict(QUERIES),
        {q: dict(g) for q, g in GRADES.items()},
        {doc: {"text": text} for doc, text in DOCUMENTS.items()},
        "datasets/documents.yaml",
        documents=dict(DOCUMENTS),
        evidence=dict(EVIDENCE),
        document_judgements=dict(DOCUMENT_JUDGEMENTS),
    )
    outcomes = []
    for spec in config.model.retrievers:
        spans = {q: list(items) for q, items in SPANS[spec.label].items()}
        own = spec.chunker is None
        metrics, left = computable_metrics(config.model.metrics, own)
        results = evaluate_evidence(
            {q: list(e) for q, e in EVIDENCE.items()},
            spans,
            metrics,
            document_judgements=DOCUMENT_JUDGEMENTS,
            chunks=None if own else CHUNKS,
            documents=DOCUMENTS,
            **config.model.evaluation.document_options(),
        )
        ranking = {q: {chunk_id(d, s, e): score for d, s, e, score in items} for q, items in spans.items()}
        if own:
            record = own_spans_record(spans, DOCUMENTS)
            description: dict[str, Any] = {"class": "plugins:OwnSpans"}
            notes = [f"retriever 'own' returns its own spans: chunk-level {', '.join(left)} not computed"]
        else:
            description = {"class": "rag_eval._retrievers.bm25:BM25Retriever", "truncation": TRUNCATION}
            chunking = {"method": "fixed", "size": 20, "overlap": 5, "unit": "chars", "library": "hand 1.0"}
            record = ChunkingRecord(
                "fixed-20", "chunker", chunking, summarize_chunks(CHUNKS, lambda t: len(t.split())), "f" * 16
            )
            notes = [str(truncation_warning("fixed", TRUNCATION, "chunks"))]  # as the runner notes it
        outcomes.append(
            RetrieverOutcome(
                spec, description, ranking, results, {"index_s": 0.5, "search_s": 0.25},
                chunking=record, spans=spans, notes=notes,
            )
        )  # fmt: skip
    return RunOutcome(config, dataset, outcomes, created="2025-01-02T03:04:05+00:00")


@pytest.fixture(scope="module")
def report() -> str:
    return render_run_report(document_run())


def lines_of(markdown: str) -> list[str]:
    return markdown.split("\n")


def test_golden_document_report(report):
    check_golden("report_documents.md", report)


def test_tables_stay_valid(report):
    assert table_problems(report) == []


def test_ids_and_evidence_text_render_exactly(report):
    report = "\n".join(line for line in report.splitlines() if not line.startswith("- **Explore:** "))  # its one link
    lines = rendered_lines(report, frozenset({"strong_open", "strong_close", "softbreak"}))
    assert lines.count("notes/b|1.txt") == 3  # the Document cells of the three chunks of the notes
    # The evidence with *, | and backticks, shown as it is and without the bold markers.
    assert [line for line in lines if "grand" in line] == [
        "de 東京 est *grand* |",
        "d* | très `grand`. F",
        "est *grand* | très…",
    ]
    assert "notes/b|1.txt [0, 17): “Évidence au début”" in lines


def test_header_counts_documents_and_evidence_instead_of_passages(report):
    header = section(report, "## 📚 What was evaluated", "## ")
    # 68 + 58 characters; 2 + 1 + 1 evidence spans in 3 queries; grades of 4 judged queries: 2 + 1 + 1 + 1.
    assert (
        "- **Queries:** 5 (4 with judgements, 3 with evidence), **documents:** 2 (126 characters), "
        "**evidence spans:** 4, **document grades:** 5"
    ) in lines_of(header)
    assert "**passages:**" not in report
    assert "- Offsets are characters (code points) of a document, `[start, end)`, end excluded." in header
    assert "(one shared character is enough)" in header
    assert "ideal ranking built from all judged passages" not in report  # the passage semantics do not apply


def test_chunking_table_and_truncation_warning(report):
    chunking = section(report, "**Chunking**", "**Semantics**")
    rows = [line for line in lines_of(chunking) if line.startswith("| ")]
    assert rows == [
        # issue 20, item 21: each token count says whose tokens it counts
        "| Retriever | Chunking | Method | Size | Overlap | Unit | Chunks | Mean length (tokens: the chunker's "
        "tokenizer, no special tokens) | Truncated by the encoder (the model's tokens, with its special tokens) |",
        # 9 chunks: 4 of 20 characters and one of 8 in the guide, 3 of 20 and one of 13 in the notes.
        "| fixed | fixed-20 | fixed (hand 1.0) | 20 | 5 | chars | 9 | 17.9 chars (8–20), 4.6 tokens (max 6) "
        "| 33.3% (3 of 9 over 4 tokens) |",
        # Own spans: 5 distinct spans of 5, 18, 7, 33 and 68 characters (mean 26.2), of 1, 7, 2, 12 and 22
        # word tokens (mean 8.8): "東京 est" is 2 tokens, the whole guide 22 ("🌊", ".", "*", "|", "`" one each).
        "| own | the retriever's own spans | the retriever's own | – | – | – | 5 (distinct spans returned) "
        "| 26.2 chars (5–68), 8.8 tokens (max 22) | – |",
    ]
    warning = (
        "⚠️ retriever 'fixed': 3 of 9 chunks (33.3%) are longer than the model's 4 tokens (longest 6: 4 tokens of "
        "text and the 2 special tokens the encoder adds) and the encoder reads only their start; use smaller chunks "
        "or a model with a longer max\\_seq\\_length"
    )
    assert warning in lines_of(chunking)
    assert report.count("are longer than the model's") == 1  # not repeated among the summary's notes


def test_whole_documents_and_no_truncation_column():
    run = document_run()
    run.outcomes[0].chunking = ChunkingRecord(
        None, "documents", {"method": "whole documents"}, summarize_chunks([Chunk(G, 0, 68, DOCUMENTS[G])])
    )
    for outcome in run.outcomes:
        outcome.description.pop("truncation", None)
    chunking = section(render_run_report(run), "**Chunking**", "**Semantics**")
    assert ("| Retriever | Chunking | Method | Size | Overlap | Unit | Chunks | Mean length (tokens: the chunker's "
            "tokenizer, no special tokens) |") in chunking
    assert (
        "| fixed | whole documents | whole documents | – | – | – | 1 | 68.0 chars (68–68), 22.0 tokens (max 22) |"
    ) in chunking
    assert "⚠️" not in chunking


def test_a_chunking_without_chunks_has_no_mean_length():
    run = document_run()
    run.outcomes[1].chunking = own_spans_record({}, DOCUMENTS)  # a retriever that returned nothing at all
    chunking = section(render_run_report(run), "**Chunking**", "**Semantics**")
    assert (
        "| own | the retriever's own spans | the retriever's own | – | – | – | 0 (distinct spans returned) | – | – |"
        in (chunking)
    )


def test_summary_separates_comparable_metrics_from_chunk_level(report):
    summary = section(report, "## 📊 Summary", "## ")
    lines = lines_of(summary)
    comparable = lines.index(
        "| Retriever | Chunking | doc_ndcg@3 | evidence_recall@3 | evidence_precision@3 | evidence_iou@3 "
        "| evidence_recall@30chars |"
    )
    assert lines[comparable + 2].startswith("| fixed | fixed-20 | ")
    fixed = lines[comparable + 2].split(" | ")
    own = lines[comparable + 3].split(" | ")
    # evidence_recall@3 over q-cafe, q-tokyo, q-miss (q-doc has no evidence: left out): fixed (1 + 1 + 0) / 3,
    # own (16/21 + 1 + 0) / 3; the best is bold.
    assert f"{(16 / 21 + 1) / 3:.4f}" == "0.5873"
    assert fixed[3] == "**0.6667**" and own[3] == "0.5873"
    assert own[1] == "the retriever's own spans"
    assert (
        "**Chunk level**: not comparable across chunkings, because each chunking's ideal ranking is built from "
        "its own chunks (docs/semantics.md); compare these only between retrievers that read the same chunking."
    ) in lines
    chunk_table = lines.index("| Retriever | Chunking | ndcg@3 | recall@3 |")
    assert lines[chunk_table + 3] == "| own | the retriever's own spans | – | – |"
    assert not lines[chunk_table + 2].count("**")  # no "best" across chunkings
    assert (
        "– = not computed for own (ndcg@3, recall@3): it returns its own spans, and chunk-level metrics need a "
        "chunking to build the ideal ranking from."
    ) in summary
    assert (
        "Left out of evidence_recall@3, evidence_precision@3, evidence_iou@3, evidence_recall@30chars: "
        "1 query with no evidence span (q-doc)." in summary
    )
    assert "Not scored: 1 query without judgements (q-none)." in summary
    assert "own retrieved nothing for 1 judged query; it scores 0 in every mean it enters." in summary
    assert "- retriever 'own' returns its own spans: chunk-level ndcg@3, recall@3 not computed" in lines


def test_per_query_table_says_what_na_and_dash_mean():
    run = document_run(main_metric="ndcg@3")
    per_query = section(render_run_report(run), "## 🔎 Per query: ndcg@3", "## ")
    assert "| q-doc | Judged by document only | n/a | – |" in per_query
    assert "n/a = no relevant chunk for the query (left out of the mean)." in per_query
    assert "– = ndcg@3 not computed for this retriever (see the summary)." in per_query


def test_detailed_query_rows_mark_the_evidence_in_bold(report):
    cafe = section(report, "### q-cafe: “Où est le café ?”", "### ")
    assert "Evidence (2 spans, 21 characters): `guide.md` [0, 10) grade 2; `notes/b|1.txt` [47, 58)." in cafe
    fixed = section(cafe, "#### fixed (fixed-20)", "#### ")
    rows = [line for line in lines_of(fixed) if line.startswith("| ")]
    assert rows == [
        "| Rank | Document | Offsets | Score | Evidence | Text |",
        # A tie at 2.0: "notes/b|1.txt#45-58" > "guide.md#0-20", so the notes rank first.
        "| 1 | `notes/b\\|1.txt` | [45, 58) | 2.0000 | 11 | t **la fin ici.** |",  # evidence up to the end
        "| 2 | `guide.md` | [0, 20) | 2.0000 | 10 | **Café crème** à Paris 🌊 |",  # evidence from the start
        "| 3 | `guide.md` | [15, 35) | 1.0000 | 0 | ris 🌊. Le port de 東京 |",
    ]
    assert "Every character of the evidence lies inside the top 3 chunks." in fixed
    # 21 evidence characters, all covered, in 13 + 20 + 20 characters of chunks.
    assert (
        "At the 3 chunks shown: evidence recall = 21 / 21 = **1.0000**; precision = 21 / 53 = **0.3962**; "
        "IoU = 21 / (53 + 0) = **0.3962**."
    ) in fixed
    own = section(cafe, "#### own (the retriever's own spans)", "#### ")
    assert "| 1 | `guide.md` | [0, 5) | 0.9000 | 5 | **Café** |" in own
    assert "| 2 | `notes/b\\|1.txt` | [40, 58) | 0.8000 | 11 | eu, et **la fin ici.** |" in own
    assert "- `guide.md` [5, 10), part of the evidence [0, 10): “crème”" in own
    assert (
        "At the 2 chunks shown: evidence recall = 16 / 21 = **0.7619**; precision = 16 / 23 = **0.6957**; "
        "IoU = 16 / (23 + 5) = **0.5714**."
    ) in own


def test_markdown_characters_in_the_evidence_are_escaped(report):
    tokyo = section(report, "### q-tokyo: “東京の港は？”", "### ")
    assert "| 1 | `guide.md` | [30, 50) | 3.0000 | 17 | de **東京 est \\*grand\\* \\|** |" in tokyo
    assert "| 2 | `guide.md` | [45, 65) | 2.5000 | 17 | **d\\* \\| très \\`grand\\`**. F |" in tokyo
    # Overlapping own spans, the second cut to passage_chars (24) from the start of its evidence, at a space.
    assert "| 2 | `guide.md` | [35, 68), shown [35, 54) | 0.6000 | 27 | **est \\*grand\\* \\| très**… |" in tokyo
    # Overlapping chunks count twice in precision: 7 + 33 characters read for 29 of evidence.
    assert "precision = 29 / 40 = **0.7250**" in tokyo


def test_uncovered_evidence_and_empty_retrievals(report):
    miss = section(report, "### q-miss: “What is at the start?”", "### ")
    assert miss.count("- `notes/b|1.txt` [0, 17): “Évidence au début”") == 2
    own = section(miss, "#### own (the retriever's own spans)", "#### ")
    assert "Nothing was retrieved for this query." in own
    assert (
        "At the 0 chunks shown: evidence recall = 0 / 17 = **0.0000**; precision = **0.0000** (nothing retrieved); "
        "IoU = 0 / (0 + 17) = **0.0000**."
    ) in own
    doc_only = section(report, "### q-doc: “Judged by document only”", "### ")
    assert "Evidence: none (the query is judged by document only)." in doc_only
    assert "| 1 | `guide.md` | [0, 68), shown [0, 21) | 1.0000 | 0 | Café crème à Paris 🌊.… |" in doc_only
    assert (
        "At the 1 chunk shown: no evidence span for this query, so its evidence metrics are left out of the means."
    ) in doc_only


def test_the_numbers_shown_are_the_evaluated_ones(report):
    """Every detailed query's recall, precision and IoU equal evaluate_evidence's @3 values (4 decimals)."""
    run = document_run()
    pattern = re.compile(
        r"evidence recall = .*\*\*([0-9.]+)\*\*; precision = .*\*\*([0-9.]+)\*\*.*; IoU = .*\*\*([0-9.]+)\*\*"
    )
    checked = 0
    for qid in ("q-cafe", "q-tokyo", "q-miss"):
        query = section(report, next(line for line in lines_of(report) if line.startswith(f"### {qid}:")), "### ")
        for outcome in run.outcomes:
            part = section(
                query, next(line for line in lines_of(query) if line.startswith(f"#### {outcome.label}")), "#### "
            )
            shown = pattern.search(part)
            assert shown is not None, part
            expected = [
                f"{outcome.results.value(name, qid):.4f}"
                for name in ("evidence_recall@3", "evidence_precision@3", "evidence_iou@3")
            ]
            assert list(shown.groups()) == expected, (qid, outcome.label)
            checked += 1
    assert checked == 6


def test_detailed_queries_are_the_worst_beyond_the_limit():
    report = render_run_report(document_run(report={"detailed_queries": 2, "passage_chars": 24}))
    headings = [line for line in lines_of(report) if line.startswith("### ")]
    # Mean evidence_recall@3: q-miss 0, q-cafe (1 + 16/21)/2, q-tokyo 1, q-doc undefined.
    assert headings == ["### q-miss: “What is at the start?”", "### q-cafe: “Où est le café ?”"]
    assert (
        "The 2 of 4 judged queries with the lowest mean evidence_recall@3 over fixed and own, lowest first." in report
    )
    assert "## 🧩 Retrieved chunks and their evidence (top 3)" in report
    assert "How nDCG" not in report


def test_a_main_metric_no_retriever_has_does_not_break_the_report():
    run = document_run(
        retrievers=[{"label": "own", "adapter": "static", "params": {"path": "runs/own.run"}}],
        main_metric="ndcg@3",
        report={"detailed_queries": 1},
    )
    report = render_run_report(run)
    assert "| q-cafe | Où est le café ? | – |" in report
    assert "The first 1 of 4 judged queries by id." in report
    assert table_problems(report) == []


# ---- the text of a chunk ---------------------------------------------------------------------------


def test_a_long_chunk_is_cut_around_its_evidence_at_spaces():
    text = "one two three four five six seven eight nine ten eleven twelve"
    five = (text.index("five"), text.index("five") + 4)
    # 20 characters centred on "five" are [11, 31): "ree four five six se"; each cut moves inward to a space.
    assert cut_window(text, 0, len(text), [five], 20) == (14, 27)
    assert marked_text(text, 14, 27, [five], cut_before=True, cut_after=True) == "…four **five** six…"
    # Without evidence: the start, cut at a space.
    assert cut_window(text, 0, len(text), [], 20) == (0, 18)
    # Short enough: all of it.
    assert cut_window(text, 0, len(text), [five], 100) == (0, len(text))


def test_bold_falls_back_to_html_where_asterisks_would_not_open():
    # '**' between a letter and a quote is not left-flanking: CommonMark would print the asterisks.
    assert marked_text('x"quoted"y', 0, 10, [(1, 9)]) == 'x<b>"quoted"</b>y'
    assert marked_text('a "quoted" b', 0, 12, [(2, 10)]) == 'a **"quoted"** b'
    # Spaces at a mark's edges move outside the bold; newlines become spaces.
    assert marked_text("a\n  b c  \nd", 0, 11, [(1, 7)]) == "a **b c** d"


def strong_runs(cell: str) -> tuple[str, list[str]]:
    """The text a GFM renderer shows for ``cell`` in a table, and the runs it shows in bold."""
    markdown_it = pytest.importorskip("markdown_it")
    parser = markdown_it.MarkdownIt("commonmark").enable(["table"])
    tokens = parser.parse(f"| h |\n|---|\n| {cell} |\n")
    inline = [t for t in tokens if t.type == "inline"][-1]
    shown, runs, bold = "", [], False
    for child in inline.children or []:
        if child.type in ("strong_open", "strong_close") or (
            child.type == "html_inline" and child.content in ("<b>", "</b>")
        ):
            bold = child.type == "strong_open" or child.content == "<b>"
            if bold:
                runs.append("")
            continue
        assert child.type in ("text", "text_special"), (cell, child.type)
        shown += child.content
        if bold:
            runs[-1] += child.content
    return shown, runs


ALPHABET = st.sampled_from(list("aé東🌊 \n") + list(string.punctuation) + ["…", "«", "»", "—"])


@given(
    text=st.text(ALPHABET, min_size=1, max_size=30),
    cuts=st.lists(st.integers(0, 30), max_size=6, unique=True),
)
def test_the_bold_runs_render_exactly_as_the_evidence(text, cuts):
    """Whatever the characters around and inside the evidence, GFM shows the text, and in bold exactly the evidence."""
    points = sorted(min(c, len(text)) for c in cuts)
    marks: list[tuple[int, int]] = []
    for a, b in zip(points[::2], points[1::2]):
        if b > a and (not marks or a > marks[-1][1]):  # disjoint and not touching, as the report merges them
            marks.append((a, b))
    cell = marked_text(text, 0, len(text), marks)
    assert table_problems(f"| h |\n|---|\n| {cell} |\n") == [] or not cell
    shown, runs = strong_runs(cell)
    spaced = " ".join(text.split())
    assert shown == spaced
    expected = [" ".join(text[a:b].split()) for a, b in marks]
    assert runs == [run for run in expected if run]


def test_a_budget_main_metric_shows_the_chunks_that_fit_and_its_numbers_equal_the_metric():
    """With a budget as the main metric the detailed queries list the chunks the budget reads (not top_k), and
    the worked recall is the budget metric's own value for that query, so one rule decides both."""
    run = document_run(main_metric="evidence_recall@30chars")
    text = render_run_report(run)
    assert "## 🧩 Retrieved chunks and their evidence (within 30 chars)" in text
    detail = text.split("## 🧩 Retrieved chunks")[1]
    cafe = detail.split("### q-cafe")[1].split("\n### ")[0]
    fixed = cafe.split("#### fixed")[1].split("#### own")[0]
    # fixed's ranking for q-cafe: two chunks scored 2.0 (20 and 13 characters) then one of 20; 20 + 13 > 30, so
    # only the first is read
    rows = [line for line in fixed.splitlines() if line.startswith("| 1 ") or line.startswith("| 2 ")]
    assert len(rows) == 1
    outcome = next(o for o in run.outcomes if o.label == "fixed")
    index = list(outcome.results.query_ids).index("q-cafe")
    value = outcome.results.values["evidence_recall@30chars"][index]
    assert "evidence recall = " in fixed and f"= **{value:.4f}**" in fixed
    assert "At the 1 chunk shown" in fixed


def test_with_many_retrievers_the_detail_shows_the_reference_and_the_best():
    from types import SimpleNamespace

    from rag_eval._report.format import detailed_outcomes

    def outcome(label, values):
        return SimpleNamespace(label=label, results=SimpleNamespace(values={"evidence_recall@5": values}))

    outcomes = [outcome("a", [0.1, 0.3]), outcome("b", [0.9, float("nan")]), outcome("c", [0.5, 0.5]),
                outcome("d", [0.9, 0.8])]
    run = SimpleNamespace(outcomes=outcomes, config=SimpleNamespace(baseline_label="c"))
    # means over defined values: a 0.2, b 0.9 (one query), c 0.5, d 0.85: b is the best, c the declared baseline
    assert [o.label for o in detailed_outcomes(run, "evidence_recall@5")] == ["c", "b"]
    run.config.baseline_label = None  # no baseline: the first retriever is the reference
    assert [o.label for o in detailed_outcomes(run, "evidence_recall@5")] == ["a", "b"]
    run.outcomes = outcomes[:3]  # three or fewer: all of them
    assert [o.label for o in detailed_outcomes(run, "evidence_recall@5")] == ["a", "b", "c"]
