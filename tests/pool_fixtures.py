"""Hand-built datasets and fixed rankings shared by tests/test_pool.py and tests/test_judgements_merge.py.

A passage query set and a folder of documents (UTF-8 ids, a file name with a space: ``%20``), two static
retrievers each, and the pools derived from them by hand (the derivations are in the comments).
"""

from __future__ import annotations

from pathlib import Path

from rag_eval import cli
from rag_eval._data.judging.sheet import SheetRow

COMMANDS = dict(cli.COMMANDS)  # as rag_eval/cli.py has it, before the fixture below fills it in

PASSAGES = """\
# Hand-judged test set: comments must survive a merge.
name: holes
corpus:
  - {id: a, text: "Alpha, the \\"first\\" passage"}
  - {id: b, text: Bravo}
  - id: c
    text: |
      Charlie spans
      two lines
  - {id: d, text: Delta 🌊}
  - {id: e, text: Echo}
  - {id: é-1, text: É with an accent}
  - {id: 東京, text: Tokyo in kanji}
queries:
  # the first query
  - id: q1
    text: Which passage is first?
    judgements:
      a: 2   # the answer
      b: 0

  - id: q2
    text: Where is Tokyo?
    judgements: {c: 1, 東京: 0}   # flow style

  - id: q3
    text: A question nobody judged yet
  - id: q4
    text: Nobody answers this one
    judgements: {a: 1}
# trailing comment
"""
PASSAGE_CONFIG = """\
dataset: {path: holes.yaml}
retrievers:
  - label: r1
    adapter: static
    params: {rankings: {q1: [a, c, d, e], q2: [d, a, e], q3: [e]}}
  - label: r2
    adapter: static
    params: {rankings: {q1: [d, a, é-1], q2: [東京, c, b], q3: [a, e, b]}}
top_k: 4
metrics: [ndcg@3, judged@3]
output: out
"""
TEXT = {"a": 'Alpha, the "first" passage', "b": "Bravo", "c": "Charlie spans\ntwo lines\n", "d": "Delta 🌊", "e": "Echo",
        "é-1": "É with an accent"}
QUERY = {"q1": "Which passage is first?", "q2": "Where is Tokyo?", "q3": "A question nobody judged yet"}

# By hand, depth 3. Judged: q1 {a, b}, q2 {c, 東京}, q3 nothing, q4 {a} (no retriever answers it).
#   r1 q1 [a c d]: c, d unjudged: 2/3     r2 q1 [d a é-1]: d, é-1: 2/3      -> q1's share 2/3
#   r1 q2 [d a e]: all three: 3/3         r2 q2 [東京 c b]: b: 1/3           -> q2's share 1
#   q3 has no judgement: its rows come after those of the judged queries, whatever its share.
# So q2 first, then q1, then q3. In a query, by best rank, then by the number of retrievers, then by id:
#   q2: d (r1 @1), a (r1 @2), b (r2 @3) and e (r1 @3): "b" < "e"
#   q1: d (r2 @1, r1 @3), c (r1 @2), é-1 (r2 @3)
#   q3: e (r1 @1, r2 @2) before a (r2 @1, one retriever), then b (r2 @3)
EXPECTED_PASSAGE_POOL = [
    ("q2", "d", "surfaced by r1 at rank 1"),
    ("q2", "a", "surfaced by r1 at rank 2"),
    ("q2", "b", "surfaced by r2 at rank 3"),
    ("q2", "e", "surfaced by r1 at rank 3"),
    ("q1", "d", "surfaced by r2 at rank 1, r1 at rank 3"),
    ("q1", "c", "surfaced by r1 at rank 2"),
    ("q1", "é-1", "surfaced by r2 at rank 3"),
    ("q3", "e", "surfaced by r1 at rank 1, r2 at rank 2"),
    ("q3", "a", "surfaced by r2 at rank 1"),
    ("q3", "b", "surfaced by r2 at rank 3"),
]

DOCUMENTS = {
    "Getting Started.md": "Getting started: install rag-eval, then run it.\n",
    "café.md": "# Café\nThe café serves crème brûlée.\nIt opens at 8.\n",
    "東京.txt": "東京は日本の首都です。富士山は東京から見えます。\n",
}
GS = "Getting%20Started.md"  # the folder's file "Getting Started.md"
DOCUMENT_SET = """\
# Documents judged by evidence; comments must survive.
name: doc-holes
documents: docs
queries:
  - id: q-dessert
    text: Which dessert does the café serve?
    evidence:
      - doc: café.md
        quote: crème brûlée   # the answer
  - id: q-capital
    text: What is the capital of Japan?
    evidence:
      - {doc: 東京.txt, start: 0, end: 11, grade: 2}
    judgements:
      café.md: 0

  - id: q-install
    text: How do I install it?
"""
DOCUMENT_CONFIG = """\
dataset: {path: qs.yaml}
retrievers:
  - label: chunks
    adapter: static
    params:
      rankings:
        q-dessert: ["café.md#7-36", "東京.txt#11-25", "Getting%20Started.md#0-48"]
        q-capital: ["東京.txt#0-11", "café.md#0-7", "Getting%20Started.md#0-20"]
        q-install: ["Getting%20Started.md#0-20", "café.md#36-52"]
  - label: whole
    adapter: static
    params:
      rankings:
        q-dessert: [Getting%20Started.md, café.md, 東京.txt]
        q-capital: [東京.txt, Getting%20Started.md]
        q-install: [Getting%20Started.md]
top_k: 3
metrics: [doc_ndcg@3, evidence_recall@3]
output: out
"""
# By hand, depth 3. A chunk is unjudged when its document has no grade for the query. The chunk
# Getting%20Started.md#0-48 covers the whole document (48 characters): it is the document, the same
# unit as the `whole` retriever's.
#   q-dessert (judged: café.md): chunks [café ✓, 東京[11,25) ✗, GS whole ✗] 2/3; whole [GS ✗, café ✓, 東京 ✗] 2/3
#   q-capital (judged: 東京.txt by evidence, café.md by its 0): chunks [✓ ✓ GS[0,20) ✗] 1/3; whole [✓ GS ✗] 1/3
#   q-install: no judgement, last.
EXPECTED_DOCUMENT_POOL = [
    ("q-dessert", GS, None, None, "surfaced by whole at rank 1, chunks at rank 3"),
    ("q-dessert", "東京.txt", 11, 25, "surfaced by chunks at rank 2"),
    ("q-dessert", "東京.txt", None, None, "surfaced by whole at rank 3"),
    ("q-capital", GS, None, None, "surfaced by whole at rank 2"),
    ("q-capital", GS, 0, 20, "surfaced by chunks at rank 3"),
    ("q-install", GS, None, None, "surfaced by whole at rank 1"),  # a tie at rank 1: the whole document first
    ("q-install", GS, 0, 20, "surfaced by chunks at rank 1"),
    ("q-install", "café.md", 36, 52, "surfaced by chunks at rank 2"),
]
DOCUMENT_QUERY = {"q-dessert": "Which dessert does the café serve?", "q-capital": "What is the capital of Japan?",
                  "q-install": "How do I install it?"}


def run_cli(capsys, *args: object) -> tuple[int, str, str]:
    code = cli.main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def passage_folder(folder: Path) -> Path:
    (folder / "holes.yaml").write_text(PASSAGES, encoding="utf-8")
    (folder / "config.yaml").write_text(PASSAGE_CONFIG, encoding="utf-8")
    return folder / "config.yaml"


def document_folder(folder: Path) -> Path:
    (folder / "docs").mkdir()
    for name, text in DOCUMENTS.items():
        (folder / "docs" / name).write_text(text, encoding="utf-8", newline="")
    (folder / "qs.yaml").write_text(DOCUMENT_SET, encoding="utf-8")
    (folder / "config.yaml").write_text(DOCUMENT_CONFIG, encoding="utf-8")
    return folder / "config.yaml"


def expected_passage_rows() -> list[SheetRow]:
    return [
        SheetRow(query_id=qid, doc=doc, query_text=QUERY[qid], text=TEXT[doc], priority=n, note=note)
        for n, (qid, doc, note) in enumerate(EXPECTED_PASSAGE_POOL, start=1)
    ]


def expected_document_rows() -> list[SheetRow]:
    rows = []
    for n, (qid, doc, start, end, note) in enumerate(EXPECTED_DOCUMENT_POOL, start=1):
        text = DOCUMENTS[doc.replace("%20", " ")]
        rows.append(SheetRow(query_id=qid, doc=doc, query_text=DOCUMENT_QUERY[qid], start=start, end=end,
                             text=text if start is None else text[start:end], priority=n, note=note))
    return rows


