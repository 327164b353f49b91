"""Calibration of a model's grades against a person's, where both graded the same (query, unit).

Pure (no I/O). The pairs come from two judgement sheets (rag_eval._data.judging.sheet): a row of the
people's sheet graded by a person (``human`` or ``llm+verified``) and the row of the same query and
unit in the model's sheet graded by a model (a judge's ``<kind>:<name>``). For each model source:

- the **confusion matrix** ``matrix[i][j]``: pairs the person graded ``categories[i]`` and the model
  ``categories[j]`` (the categories: 0-3 and any other grade seen, sorted);
- **weighted Cohen's kappa** with quadratic weights, ``w_ij = (g_i - g_j)^2``:
  ``kappa = 1 - sum(w * O) / sum(w * E)``, ``O`` the observed proportions, ``E`` the product of the two
  marginals (what two graders who agree only by chance would show). 1: complete agreement; 0: as by
  chance; below 0: worse. Undefined (NaN) when ``sum(w * E)`` is 0 (both gave one same grade to all);
- exact agreement, and how often the model graded higher or lower (leniency);
- **Kendall's tau-b** between the variants' values of the main metric under the people's and under
  the model's grades (:func:`variant_agreement`): do the two sets of labels rank the retrievers alike?
  tau-b counts concordant minus discordant pairs of variants, divided by the geometric mean of the
  pairs not tied on each side; undefined with fewer than 2 variants or when one side ties them all.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag_eval._compare.label_sources import score_run_on
from rag_eval._core.errors import InputFormatError
from rag_eval._core.messages import shown
from rag_eval._core.spans import parse_chunk_id
from rag_eval._data.datasets import Dataset
from rag_eval._data.datasets.model import is_model_source
from rag_eval._data.judging.merge import REPLACE, Counts, Line, check_lines, grades_after, plan
from rag_eval._data.judging.sheet import HUMAN, VERIFIED, SheetRow
from rag_eval._scoring.evaluate import evaluate
from rag_eval._scoring.metrics.measures import parse_metric

__all__ = [
    "Calibration",
    "Overlap",
    "Pair",
    "VariantAgreement",
    "calibrate",
    "confusion_matrix",
    "kendall_tau_b",
    "overlap",
    "run_variant_agreement",
    "variant_agreement",
    "weighted_kappa",
]

SCALE = (0.0, 1.0, 2.0, 3.0)


@dataclass(frozen=True)
class Pair:
    """One (query, unit) graded by a person (``human``) and by a model (``model``, from ``source``)."""

    query_id: str
    unit: str
    human: float
    model: float
    source: str


@dataclass(frozen=True)
class Overlap:
    """The pairs of two sheets, and the graded rows that have no counterpart (or no fitting source)."""

    pairs: tuple[Pair, ...]
    human_graded: int  # rows the people's sheet has graded by a person
    model_graded: int  # rows the model's sheet has graded by a model
    human_not_person: int  # graded rows of the people's sheet whose source is a model's (left out)
    model_not_model: int  # graded rows of the model's sheet whose source is a person's (left out)

    @property
    def sources(self) -> list[str]:
        """The model sources of the pairs, sorted."""
        return sorted({pair.source for pair in self.pairs})

    def of(self, source: str) -> list[Pair]:
        """The pairs whose model grade came from ``source``."""
        return [pair for pair in self.pairs if pair.source == source]


def overlap(human_rows: Iterable[SheetRow], model_rows: Iterable[SheetRow]) -> Overlap:
    """The (query, unit) keys graded by a person in ``human_rows`` and by a model in ``model_rows``."""
    people: dict[tuple[str, str], SheetRow] = {}
    not_person = 0
    for row in human_rows:
        if row.grade is None:
            continue
        if row.source in (HUMAN, VERIFIED):
            people[row.key] = row
        else:
            not_person += 1
    pairs, model_graded, not_model = [], 0, 0
    for row in model_rows:
        if row.grade is None:
            continue
        if not is_model_source(row.source):
            not_model += 1
            continue
        model_graded += 1
        person = people.get(row.key)
        if person is not None and person.grade is not None:
            pairs.append(Pair(row.query_id, row.unit, float(person.grade), float(row.grade), row.source))
    return Overlap(tuple(pairs), len(people), model_graded, not_person, not_model)


def categories_of(pairs: Iterable[Pair]) -> list[float]:
    """The grades the matrix shows: 0-3 and every other grade of the pairs, sorted."""
    seen = set(SCALE)
    for pair in pairs:
        seen.update((pair.human, pair.model))
    return sorted(seen)


def confusion_matrix(pairs: Sequence[Pair], categories: Sequence[float]) -> list[list[int]]:
    """``matrix[i][j]``: pairs graded ``categories[i]`` by the person and ``categories[j]`` by the model."""
    index = {grade: i for i, grade in enumerate(categories)}
    matrix = [[0] * len(categories) for _ in categories]
    for pair in pairs:
        matrix[index[pair.human]][index[pair.model]] += 1
    return matrix


def weighted_kappa(matrix: Sequence[Sequence[int]], categories: Sequence[float]) -> float:
    """Cohen's kappa with quadratic weights ``(g_i - g_j)^2`` of a confusion matrix; NaN when undefined."""
    observed = np.asarray(matrix, dtype=np.float64)
    n = observed.sum()
    if n == 0:
        return math.nan
    grades = np.asarray(categories, dtype=np.float64)
    weights = (grades[:, None] - grades[None, :]) ** 2
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / n
    chance = float((weights * expected).sum())
    if chance == 0:
        return math.nan
    return 1.0 - float((weights * observed).sum()) / chance


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b of two equally long sequences (ties on either side accounted); NaN when undefined."""
    if len(x) != len(y):
        raise ValueError(f"kendall_tau_b: {len(x)} values against {len(y)}")
    concordant = discordant = tied_x = tied_y = 0
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                continue  # tied on both sides: in neither denominator term
            if dx == 0:
                tied_x += 1
            elif dy == 0:
                tied_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    # n0 - n1 = pairs not tied in x = concordant + discordant + tied only in y; likewise for y.
    not_tied_x = concordant + discordant + tied_y
    not_tied_y = concordant + discordant + tied_x
    if not_tied_x == 0 or not_tied_y == 0:
        return math.nan
    return (concordant - discordant) / math.sqrt(not_tied_x * not_tied_y)


@dataclass(frozen=True)
class Calibration:
    """One model source's agreement with the people on the pairs both graded (module docstring)."""

    source: str
    n: int
    categories: tuple[float, ...]
    matrix: tuple[tuple[int, ...], ...]
    kappa: float
    agree: int
    model_higher: int
    model_lower: int
    mean_human: float
    mean_model: float


def calibrate(pairs: Sequence[Pair], source: str) -> Calibration:
    """The confusion matrix, quadratic-weighted kappa and leniency of ``pairs`` (all of one model source)."""
    categories = categories_of(pairs)
    matrix = confusion_matrix(pairs, categories)
    n = len(pairs)
    return Calibration(
        source=source,
        n=n,
        categories=tuple(categories),
        matrix=tuple(tuple(row) for row in matrix),
        kappa=weighted_kappa(matrix, categories),
        agree=sum(1 for p in pairs if p.model == p.human),
        model_higher=sum(1 for p in pairs if p.model > p.human),
        model_lower=sum(1 for p in pairs if p.model < p.human),
        mean_human=float(np.mean([p.human for p in pairs])) if pairs else math.nan,
        mean_model=float(np.mean([p.model for p in pairs])) if pairs else math.nan,
    )


@dataclass(frozen=True)
class VariantAgreement:
    """The variants' values of ``metric`` under the people's and the model's grades, and Kendall's tau-b."""

    metric: str
    labels: tuple[str, ...]
    human: tuple[float, ...]
    model: tuple[float, ...]
    tau: float

    @property
    def best_human(self) -> str | None:
        """The best variant under the people's grades (in the metric's direction; the first of equals)."""
        return _best(self.metric, self.labels, self.human)

    @property
    def best_model(self) -> str | None:
        """The best variant under the model's grades."""
        return _best(self.metric, self.labels, self.model)


def _best(metric: str, labels: Sequence[str], values: Sequence[float]) -> str | None:
    parsed = parse_metric(metric)
    defined = [(parsed.best_first_key(value), i) for i, value in enumerate(values) if not math.isnan(value)]
    return labels[min(defined)[1]] if defined else None


def variant_agreement(
    judgements: Mapping[str, Mapping[str, float]],
    pairs: Sequence[Pair],
    rankings: Mapping[str, Mapping[str, Mapping[str, float]]],
    metric: str,
    **options: Any,
) -> VariantAgreement:
    """Score each ranking on ``metric`` twice: the judgements with every pair's unit graded as the person
    graded it, then as the model did (the other judgements alike in both); tau-b between the two.

    ``rankings``: ``{label: {qid: {unit: score}}}`` (passages); ``options``: evaluate's keyword arguments.
    The value of ``metric`` is its dataset value (``aggregate``); NaN where it has none.
    """
    by_human = {qid: dict(units) for qid, units in judgements.items()}
    by_model = {qid: dict(units) for qid, units in judgements.items()}
    for pair in pairs:
        by_human.setdefault(pair.query_id, {})[pair.unit] = pair.human
        by_model.setdefault(pair.query_id, {})[pair.unit] = pair.model
    human, model = [], []
    for ranking in rankings.values():
        human.append(float(evaluate(by_human, ranking, [metric], **options).aggregate[metric]))
        model.append(float(evaluate(by_model, ranking, [metric], **options).aggregate[metric]))
    return VariantAgreement(metric, tuple(rankings), tuple(human), tuple(model), kendall_tau_b(human, model))


def graded_as(dataset: Dataset, pairs: Sequence[Pair], side: str, sheet: str) -> Dataset:
    """``dataset`` with each pair's unit graded as the person (``side`` "human") or the model ("model") graded it.

    The grades go in as ``rag-eval judgements merge --resolve replace`` would merge them
    (rag_eval._data.judging.merge: a span graded > 0 is evidence, a span graded 0 grades its document
    0 where nothing else does, a whole document its document judgement), in memory. A pair whose query,
    document or span the dataset lacks raises InputFormatError naming ``sheet``.
    """
    rows = []
    for pair in pairs:
        grade, source = (pair.human, HUMAN) if side == "human" else (pair.model, pair.source)
        span = None if pair.unit in dataset.documents or pair.unit in dataset.corpus else parse_chunk_id(pair.unit)
        doc, start, end = span if span is not None else (pair.unit, None, None)
        rows.append(SheetRow(pair.query_id, doc, start=start, end=end, grade=grade, source=source))
    lines = [Line(f"{sheet}, query {shown(row.query_id)}, unit {shown(row.unit)}", row) for row in rows]
    problems = check_lines(lines, dataset)
    if problems:
        more = f" ({len(problems) - 1} more pairs refused as well)" if len(problems) > 1 else ""
        raise InputFormatError(f"{problems[0]}{more}")
    edits, _ = plan(lines, dataset, REPLACE, Counts())
    return grades_after(dataset, edits)


def run_variant_agreement(
    run: Any, pairs: Sequence[Pair], metric: str, sheets: Mapping[str, str]
) -> VariantAgreement:
    """:func:`variant_agreement` for any run (rag_eval._run.outcome.RunOutcome), passages or documents: each
    retriever's ``metric`` (its dataset value) with the pairs graded as the people graded them, then as
    the model did (:func:`graded_as`), scored as the run scored it (label_sources.score_run_on).
    ``sheets``: the sheet each side's grades come from (``{"human": ..., "model": ...}``), named in a refusal.
    """
    values: dict[str, list[float]] = {"human": [], "model": []}
    for side, found in values.items():
        scored = score_run_on(run, graded_as(run.dataset, pairs, side, sheets[side]), [metric])
        for outcome in run.outcomes:
            results = scored.get(outcome.label)
            found.append(float(results.aggregate[metric]) if results is not None and metric in results.aggregate
                         else math.nan)
    labels = tuple(outcome.label for outcome in run.outcomes)
    human, model = values["human"], values["model"]
    defined = [i for i in range(len(labels)) if not (math.isnan(human[i]) or math.isnan(model[i]))]
    tau = kendall_tau_b([human[i] for i in defined], [model[i] for i in defined])  # NaN: a variant left unscored
    return VariantAgreement(metric, labels, tuple(human), tuple(model), tau)
