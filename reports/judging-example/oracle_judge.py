"""The worked example's judge: it grades as the complete ocean-facts judgements do (a stand-in for a person).

rag_eval's judges receive texts, not ids: this one looks each (query text, passage text) up in
datasets/ocean_facts.yaml, the full set of judgements the example's query set was cut from, and
answers that set's grade (0 where it has none). Real judges are an LLM endpoint or a cross-encoder
(docs/judging.md); a judge that knows the answers makes the example's "after" verdict exact.
"""

from __future__ import annotations

from pathlib import Path

import yaml

FULL = Path(__file__).resolve().parents[2] / "datasets" / "ocean_facts.yaml"


class OracleJudge:
    """Grades from the complete judgements of ocean facts."""

    source = "judge:ocean-facts-oracle"
    description = "the complete ocean-facts judgements"

    def __init__(self) -> None:
        data = yaml.safe_load(FULL.read_text(encoding="utf-8"))
        texts = {p["id"]: p["text"] for p in data["corpus"]}
        titled = {p["id"]: f"{p.get('title') or ''} {p['text']}".strip() for p in data["corpus"]}
        self.grades: dict[tuple[str, str], float] = {}
        self.queries = {q["text"] for q in data["queries"]}
        for query in data["queries"]:
            for passage, grade in (query.get("judgements") or {}).items():
                for text in (texts[passage], titled[passage]):
                    self.grades[(query["text"], text)] = float(grade)

    def judge(self, query: str, passages: list[str]) -> list[float | None]:
        """The full set's grade of each passage for ``query`` (0 where it judged none; None: unknown query)."""
        if query not in self.queries:
            return [None for _ in passages]
        return [self.grades.get((query, passage), 0.0) for passage in passages]
