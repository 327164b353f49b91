"""report.html's drill-down data: each query's ranked units with their grades, and the passages' texts (pure).

Rankings and grades are read from each retriever's results document (rag_eval._run.results_file: the
ranked units and grades the results file holds and ``rag-eval compare`` reads), cut to the page's depth.
Shapes (in :attr:`RunData.data`, sizes chosen for 10,000 queries x 12 variants, docs/report.md):

- ``units``: every unit id once; per query its *entries* (``en`` counts), the units any retriever ranked
  in its embedded top, then (passages) the relevant units no ranking holds; per entry its grade (``eg``:
  0 unjudged, a hole, else 1 + its place in ``grades``, digits of width ``gw``) and its unit number
  (``eu``, digits of width ``uw``; :func:`rag_eval._report.html.data.digits`);
- ``rk[r]``: retriever r's rankings, entry numbers as digits of width ``rw``, ``rn[r]`` their lengths;
  ``rl``: None when every ranking fits the page's depth, else ``[width, [per retriever: each ranking's own
  length, digits of width]]`` (what the legend counts as retrieved);
- ``utext``: passage texts, one per unit for the first ``len(utext)`` units (the units are numbered so
  that those with a text come first), cut to ``report.passage_chars`` and given rank by rank over all
  queries (every query's first units before any second ones) until :data:`TEXT_BUDGET` characters.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rag_eval._report.format import one_line, shorten
from rag_eval._report.html.data import TEXT_BUDGET, RunData, digits, width_for
from rag_eval._run.results_file import results_document

if TYPE_CHECKING:
    from rag_eval._run.outcome import RunOutcome

__all__ = ["add_entries", "encode_units", "passage_texts", "ranked_units", "text_order"]

Ranked = Sequence[Mapping[str, Sequence[Any]]]


def ranked_units(run: RunOutcome) -> list[dict[str, list[Any]]]:
    """Per retriever ``{qid: [[unit id, score, grade or None], ...]}``, as its results file ranks them."""
    return [results_document(run, o)["rankings"] for o in run.outcomes]


def _grade(value: Any) -> float | int:
    value = float(value)
    return int(value) if value.is_integer() else value


def add_entries(built: RunData, ranked: Ranked) -> tuple[list[list[int]], list[list[list[int]]]]:
    """Each query's entries (``en``, ``eg``; units numbered in ``built.units``) and each ranking's top ``depth``
    (``rk``, ``rn``).

    Returns per query the unit numbers of its entries, and per retriever and query its entry numbers.
    """
    data, run = built.data, built.run
    passages = data["kind"] == "passages"
    depth = data["depth"]
    number = built.units.add
    counts: list[int] = []
    grades: list[int] = []  # per entry: 0 unjudged, else 1 + the grade's place in ``table``
    table: dict[Any, int] = {}

    def graded(grade: Any) -> int:
        if grade is None:
            return 0
        known = table.get(grade)
        if known is None:
            known = table[grade] = len(table) + 1
        return known

    rankings: list[list[list[int]]] = [[] for _ in ranked]
    lengths: list[list[int]] = [[] for _ in ranked]  # how many units each ranking holds in all
    entry_units: list[list[int]] = []
    for qid in data["qids"]:
        local: dict[str, int] = {}
        these: list[int] = []
        for r, by_query in enumerate(ranked):
            numbers = []
            full = by_query.get(qid, ())
            lengths[r].append(len(full))
            for unit, _, grade in full[:depth]:
                entry = local.get(unit)
                if entry is None:
                    entry = local[unit] = len(these)
                    these.append(number(unit))
                    grades.append(graded(grade))
                numbers.append(entry)
            rankings[r].append(numbers)
        if passages:  # the relevant passages no ranking holds: the ideal order and the "not retrieved" list
            relevant = [(unit, g) for unit, g in run.dataset.judgements.get(qid, {}).items() if g > 0 and unit not in local]
            for unit, grade in sorted(relevant, key=lambda item: (-item[1], item[0])):
                local[unit] = len(these)
                these.append(number(unit))
                grades.append(graded(grade))
        counts.append(len(these))
        entry_units.append(these)
    width = width_for(max(counts, default=1) - 1)
    data.update({"en": counts, "rw": width, "gw": width_for(len(table))})
    data["grades"] = [_grade(g) for g in table]
    data["eg"] = digits(grades, data["gw"])
    data["rn"] = [digits([len(n) for n in per_query], 1) for per_query in rankings]
    data["rk"] = ["".join(digits(n, width) for n in per_query) for per_query in rankings]
    # The rankings' own lengths, only where one is longer than the page holds (else each is its ``rn``).
    longest = max((n for per in lengths for n in per), default=0)
    full_width = width_for(longest)
    data["rl"] = None if longest <= depth else [full_width, [digits(per, full_width) for per in lengths]]
    return entry_units, rankings


def text_order(entry_units: Sequence[Sequence[int]], rankings: Sequence[Sequence[Sequence[int]]]) -> Iterator[int]:
    """Every (query, entry) as ``query number * 2**20 + entry number``, in the order texts are given.

    Rank by rank: every query's first units (of every retriever) before any query's second, so that
    the budget leaves no query's top units without text; then the entries no ranking holds.
    """
    seen: set[int] = set()
    depth = max((len(n) for per_query in rankings for n in per_query), default=0)
    for rank in range(depth):
        for q in range(len(entry_units)):
            for per_query in rankings:
                numbers = per_query[q]
                if rank < len(numbers):
                    key = (q << 20) + numbers[rank]
                    if key not in seen:
                        seen.add(key)
                        yield key
    for q, these in enumerate(entry_units):
        yield from (key for key in ((q << 20) + e for e in range(len(these))) if key not in seen)


def passage_texts(built: RunData, entry_units: Sequence[Sequence[int]], order: Iterator[int]) -> list[int]:
    """``utext``: the passages' texts in ``order`` (:func:`text_order`) until the budget is spent.

    Returns the numbering of the units that puts those with a text first (see :func:`encode_units`).
    """
    data, run = built.data, built.run
    corpus = run.dataset.corpus
    limit = data["chars"]
    ids = built.units.items
    given: dict[int, str] = {}
    for key in order:
        unit = entry_units[key >> 20][key & 0xFFFFF]
        if unit in given:
            continue
        passage = corpus.get(ids[unit]) or {}
        text = shorten(one_line(str(passage.get("text") or "")), limit)
        if built.texts_used + len(text) > TEXT_BUDGET:
            break  # spent: the units after this one show their id only
        given[unit] = text
        built.texts_used += len(text)
    first = list(given)
    numbering = first + [u for u in range(len(ids)) if u not in given]
    data["utext"] = [given[u] for u in first]
    built.texts_left_out = len(ids) - len(first)
    data["textsLeftOut"] = built.texts_left_out
    return numbering


def encode_units(built: RunData, entry_units: Sequence[Sequence[int]], numbering: Sequence[int] | None = None) -> None:
    """``units`` in the order ``numbering`` gives (unit numbers as listed; None: as numbered) and ``eu``, ``uw``."""
    ids = built.units.items
    if numbering is None:
        numbering = range(len(ids))
    new = [0] * len(ids)
    for position, unit in enumerate(numbering):
        new[unit] = position
    width = width_for(max(len(ids) - 1, 0))
    built.data["units"] = [ids[u] for u in numbering]
    built.data["eu"] = "".join(digits([new[u] for u in these], width) for these in entry_units)
    built.data["uw"] = width
