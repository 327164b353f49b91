"""A tiny document dataset (accents, emoji, CJK) and a slow reference of SEMANTICS.md's document metrics.

The reference works on sets of (document, character) pairs and plain loops, written from
the definitions in SEMANTICS.md ("Documents, chunks and evidence"), and shares no code
with rag_eval._scoring.evidence: the end-to-end tests compare what `rag-eval run` wrote with it.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

CAFE, TOKYO, BEARS = "café.md", "東京.txt", "polar-🐻.md"
DOCUMENTS = {
    CAFE: "Crème brûlée 🍮 is a French dessert with a caramel top. The café on the corner sells crème brûlée every "
    "morning. Coffee there costs two euros.",
    TOKYO: "東京は日本の首都です。 Tokyo is the capital of Japan 🗼 and its largest city. Mount Fuji 🗻 is visible from "
    "Tokyo on clear days.",
    BEARS: "Polar bears 🐻‍❄️ hunt seals on sea ice. Penguins 🐧 live in the south, not with polar bears.",
}


def find_once(doc: str, quote: str) -> tuple[int, int]:
    """Offsets of ``quote``, which must occur exactly once (as the dataset's quotes must)."""
    text = DOCUMENTS[doc]
    start = text.find(quote)
    assert start >= 0 and text.find(quote, start + 1) < 0, quote
    return start, start + len(quote)


DESSERT_QUOTE = "Crème brûlée 🍮 is a French dessert with a caramel top."
CAPITAL_QUOTE = "Tokyo is the capital of Japan 🗼"
BEARS_QUOTE = "Polar bears 🐻‍❄️ hunt seals"
# Offsets written into the YAML as numbers: the café sentence, and a span overlapping the quote's end.
CAFE_SENTENCE = find_once(CAFE, "The café on the corner sells crème brûlée every morning.")
DESSERT_OVERLAP = find_once(CAFE, "caramel top. The café")

QUERIES: list[dict[str, Any]] = [
    {
        "id": "q-dessert",
        "text": "crème brûlée caramel dessert",
        "evidence": [
            {"doc": CAFE, "quote": DESSERT_QUOTE, "grade": 2},
            {"doc": CAFE, "start": CAFE_SENTENCE[0], "end": CAFE_SENTENCE[1]},
            {"doc": CAFE, "start": DESSERT_OVERLAP[0], "end": DESSERT_OVERLAP[1], "grade": 3},
        ],
    },
    {
        "id": "q-capital",
        "text": "capital of Japan Tokyo 首都",
        "evidence": [
            {"doc": TOKYO, "quote": CAPITAL_QUOTE},
            {"doc": TOKYO, "start": 0, "end": 11, "grade": 2},  # 東京は日本の首都です。
        ],
    },
    {
        "id": "q-bears",
        "text": "polar bears hunt seals",
        "evidence": [{"doc": BEARS, "quote": BEARS_QUOTE}],
        "judgements": {CAFE: 0},
    },
    {"id": "q-fuji", "text": "mount fuji", "judgements": {TOKYO: 1}},  # a document judgement, no evidence
    {"id": "q-zebra", "text": "zebra stripes", "judgements": {BEARS: 0}},  # judged, nothing relevant
    {"id": "q-unjudged", "text": "coffee euros"},  # no judgements: listed, never scored
]


def write_dataset(folder: Path, documents: Mapping[str, str] = DOCUMENTS, queries: Sequence[Mapping] = QUERIES,
                  name: str = "tiny-documents") -> Path:
    """The dataset as an inline YAML query set in ``folder``; returns its path."""
    path = folder / "dataset.yaml"
    data = {
        "name": name,
        "documents": [{"id": doc, "text": text} for doc, text in documents.items()],
        "queries": [dict(query) for query in queries],
    }
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def write_config(folder: Path, body: Mapping[str, Any], name: str = "config.yaml") -> Path:
    """A config file in ``folder`` whose dataset is ``folder/dataset.yaml``."""
    path = folder / name
    config = {"name": "documents-e2e", "dataset": {"path": "dataset.yaml"}, **body}
    path.write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


# ---- evidence as the tests know it (quotes resolved here, independently of the loader) ----------------------


def evidence_of(queries: Sequence[Mapping] = QUERIES, documents: Mapping[str, str] = DOCUMENTS):
    """``{qid: [(doc, start, end, grade)]}`` with quotes located by str.find."""
    out: dict[str, list[tuple[str, int, int, float]]] = {}
    for query in queries:
        spans = []
        for item in query.get("evidence", []):
            if "quote" in item:
                text = documents[item["doc"]]
                start = text.find(item["quote"])
                assert start >= 0 and text.find(item["quote"], start + 1) < 0
                end = start + len(item["quote"])
            else:
                start, end = item["start"], item["end"]
            spans.append((item["doc"], start, end, float(item.get("grade", 1))))
        if spans:
            out[query["id"]] = spans
    return out


def document_grades(queries: Sequence[Mapping] = QUERIES, documents: Mapping[str, str] = DOCUMENTS):
    """``{qid: {doc: grade}}``: the explicit judgement, else the highest evidence grade in the document."""
    evidence = evidence_of(queries, documents)
    grades: dict[str, dict[str, float]] = {}
    for query in queries:
        qid = query["id"]
        graded: dict[str, float] = {}
        for doc, _, _, grade in evidence.get(qid, []):
            graded[doc] = max(graded.get(doc, grade), grade)
        graded.update({doc: float(grade) for doc, grade in query.get("judgements", {}).items()})
        if graded:
            grades[qid] = graded
    return grades


# ---- chunkings ---------------------------------------------------------------------------------------------

WORD = re.compile(r"\w+|[^\w\s]")


def fixed_word_windows(text: str, size: int, overlap: int) -> list[tuple[int, int]]:
    """SEMANTICS/chunking: windows of ``size`` word tokens (\\w+ or one other non-space character), every
    ``size - overlap`` tokens, each from its first token's start to its last token's end."""
    tokens = [match.span() for match in WORD.finditer(text)]
    windows = []
    first = 0
    while first < len(tokens):
        last = min(first + size, len(tokens)) - 1
        windows.append((tokens[first][0], tokens[last][1]))
        if last == len(tokens) - 1:
            break
        first += size - overlap
    return windows


def fingerprint(chunks: Iterable[tuple[str, int, int]]) -> str:
    """sha256 (16 hex) of the sorted ``doc NUL start NUL end`` lines: the cuts, nothing else."""
    lines = "".join(f"{doc}\0{start}\0{end}\n" for doc, start, end in sorted(chunks))
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()[:16]


# ---- run files ---------------------------------------------------------------------------------------------


def parse_id(chunk: str) -> tuple[str, int, int]:
    """``<doc>#<start>-<end>`` -> (doc, start, end); the document id may itself hold '#'."""
    doc, _, offsets = chunk.rpartition("#")
    start, _, end = offsets.partition("-")
    return doc, int(start), int(end)


def read_run(path: Path) -> dict[str, list[tuple[str, int, float]]]:
    """``{qid: [(chunk id, rank, score), ...]}`` in file order, from a TREC run file."""
    out: dict[str, list[tuple[str, int, float]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        qid, q0, chunk, rank, score, _tag = line.split("\t")  # tab-separated: ids may hold spaces
        assert q0 == "Q0"
        out.setdefault(qid, []).append((chunk, int(rank), float(score)))
    return out


def ranked(entries: Iterable[tuple[str, float]]) -> list[str]:
    """SEMANTICS ranking: score descending, ties by id descending comparing UTF-8 bytes."""
    return [chunk for chunk, _ in sorted(entries, key=lambda e: (e[1], e[0].encode("utf-8")), reverse=True)]


# ---- the metrics, from the definitions ------------------------------------------------------------------------


def _chars(spans: Iterable[tuple]) -> set[tuple[str, int]]:
    return {(span[0], i) for span in spans for i in range(span[1], span[2])}


def evidence_metrics(evidence: Sequence[tuple], spans: Sequence[tuple[str, int, int]]) -> dict[str, float] | None:
    """recall, precision, IoU of the characters of ``evidence`` covered by ``spans`` (None: no evidence)."""
    if not evidence:
        return None
    wanted = _chars(evidence)
    covered = len(wanted & _chars(spans))
    length = sum(end - start for _, start, end in spans)
    return {
        "recall": covered / len(wanted),
        "precision": covered / length if length else 0.0,
        "iou": covered / (length + len(wanted) - covered),
    }


def within_budget(spans: Sequence[tuple[str, int, int]], budget: int, unit: str = "chars",
                  documents: Mapping[str, str] = DOCUMENTS) -> list[tuple[str, int, int]]:
    """The best spans whose lengths (characters, or word tokens) together fit ``budget``; the first that
    overflows ends the list."""
    kept, used = [], 0
    for doc, start, end in spans:
        text = documents[doc][start:end]
        used += len(text) if unit == "chars" else len(WORD.findall(text))
        span = (doc, start, end)
        if used > budget:
            break
        kept.append(span)
    return kept


def ndcg(gains: Sequence[float], ideal: Sequence[float], k: int) -> float | None:
    """nDCG@k, linear gain, discount 1/log2(rank + 1); None when the ideal DCG is 0."""
    def dcg(values: Sequence[float]) -> float:
        return sum(g / math.log2(rank + 2) for rank, g in enumerate(values[:k]))

    best = dcg(sorted((g for g in ideal if g > 0), reverse=True))
    return None if best == 0 else dcg([max(g, 0.0) for g in gains]) / best


def doc_ndcg(grades: Mapping[str, float], spans: Sequence[tuple[str, int, int]], k: int) -> float | None:
    """MaxP: each document at the rank of its best chunk, then nDCG@k with document grades."""
    documents: list[str] = []
    for doc, _, _ in spans:
        if doc not in documents:
            documents.append(doc)
    return ndcg([grades.get(doc, 0.0) for doc in documents], list(grades.values()), k)


def chunk_grade(evidence: Sequence[tuple], grades: Mapping[str, float], span: tuple[str, int, int],
                fraction: float = 0.0) -> float | None:
    """The highest grade of the evidence spans the chunk overlaps by at least ``fraction`` of the evidence
    span's length (and by one character at least); 0 if none; None: the query does not judge the document."""
    doc, start, end = span
    if doc not in grades:
        return None
    shared = [
        g for d, s, e, g in evidence
        if d == doc and (overlap := min(e, end) - max(s, start)) > 0 and overlap >= fraction * (e - s)
    ]
    return max(shared, default=0.0)


def chunk_ndcg(evidence: Sequence[tuple], grades: Mapping[str, float], spans: Sequence[tuple[str, int, int]],
               chunking: Iterable[tuple[str, int, int]], k: int, fraction: float = 0.0) -> float | None:
    """nDCG@k with chunk grades; the ideal ranking from every chunk of the chunking."""
    gains = [chunk_grade(evidence, grades, span, fraction) or 0.0 for span in spans]
    ideal = [chunk_grade(evidence, grades, chunk, fraction) or 0.0 for chunk in chunking]
    return ndcg(gains, ideal, k)


def reference_values(
    metrics: Sequence[str],
    run: Mapping[str, Sequence[tuple[str, int, float]]],
    *,
    chunking: Iterable[tuple[str, int, int]] | None = None,
    queries: Sequence[Mapping] = QUERIES,
    documents: Mapping[str, str] = DOCUMENTS,
    fraction: float = 0.0,
) -> dict[str, dict[str, float | None]]:
    """Per judged query, every metric of ``metrics`` on the ranked spans of ``run`` (a read_run answer)."""
    evidence, grades = evidence_of(queries, documents), document_grades(queries, documents)
    chunks = list(chunking) if chunking is not None else None
    out: dict[str, dict[str, float | None]] = {}
    for qid in grades:
        spans = [parse_id(chunk) for chunk, _, _ in run.get(qid, [])]
        row: dict[str, float | None] = {}
        for name in metrics:
            family, _, cut = name.partition("@")
            budget = re.fullmatch(r"(\d+)(chars|tokens)", cut)
            if budget:
                kept = within_budget(spans, int(budget[1]), budget[2], documents)
                values = evidence_metrics(evidence.get(qid, []), kept)
                row[name] = None if values is None else values[family.removeprefix("evidence_")]
                continue
            k = int(cut)
            if family.startswith("evidence_"):
                values = evidence_metrics(evidence.get(qid, []), spans[:k])
                row[name] = None if values is None else values[family.removeprefix("evidence_")]
            elif family == "doc_ndcg":
                row[name] = doc_ndcg(grades[qid], spans, k)
            elif family == "ndcg":
                assert chunks is not None
                row[name] = chunk_ndcg(evidence.get(qid, []), grades[qid], spans, chunks, k, fraction)
            else:
                raise AssertionError(f"no reference for {name}")
        out[qid] = row
    return out


def macro(per_query: Mapping[str, Mapping[str, float | None]], metric: str) -> float:
    """Mean over the queries with a value (no_relevant: skip)."""
    values = [row[metric] for row in per_query.values() if row[metric] is not None]
    return sum(values) / len(values)
