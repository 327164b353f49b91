"""How much a run's numbers rest on grades a model gave: metrics without them, and each decision's share.

Pure (no I/O). A grade's ``source`` (rag_eval._data.judging.grades) is a person's (``human``,
``llm+verified``), a model's (a judge's ``<kind>:<name>``, :func:`is_model_source`), or not recorded
(the query set's own grade, counted with the people's).

**Without model labels** ("human-only"): every model-labelled judgement is removed, so the unit it
graded is unjudged again (a miss, like every hole): :func:`human_only_judgements` for passage
judgements, :func:`human_only_dataset` for a dataset of documents (a model's document judgement or
evidence span removed, each document's grade derived again from what is left). A query left with no
judgement is not scored, as any unjudged query.

**The share of a decision's difference that rests on model labels** (:func:`model_share`), between a
reference ``R`` (the declared baseline, else the best mean under all labels) and a variant ``V``, on
the main metric. Let ``P`` be the queries that both score under all labels (the pairs the decision
tests), ``d_q = V_q - R_q`` under all labels and ``h_q`` the same difference without model labels,
0 where a side has no value without them (the query's difference cannot be seen without model
labels). Then, exactly:

    Δ = mean_P d_q = H + M,   H = mean_P h_q (what the people's grades show),
                              M = mean_P (d_q - h_q) (what the model's grades add),
    share = |M| / (|H| + |M|)   (undefined when both are 0: there is no difference to explain)

When H and M point the same way the share is ``M / Δ``: the fraction of the difference that goes
away when the model's grades are taken out. When they point opposite ways (the model's grades pull
against the people's) it is the model's part of everything that moved, and the direction says so.
Removing grades only removes judgements, so a query defined without model labels is defined with
them: ``h_q`` is never taken from outside ``P``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from rag_eval._core.errors import RagEvalError
from rag_eval._core.spans import Chunk, parse_chunk_id
from rag_eval._data.datasets import Dataset
from rag_eval._data.datasets.evidence import document_grades
from rag_eval._data.datasets.model import is_model_source
from rag_eval._scoring.evaluate import evaluate
from rag_eval._scoring.evidence import evaluate_evidence
from rag_eval._scoring.metrics.measures import parse_metric
from rag_eval._scoring.results import Results

__all__ = [
    "LabelCounts",
    "ModelShare",
    "SameModel",
    "decision_shares",
    "evaluate_by_labels",
    "human_only_dataset",
    "human_only_judgements",
    "is_model_source",
    "label_counts",
    "model_names",
    "model_share",
    "reference_label",
    "run_without_model_labels",
    "same_model_warnings",
    "score_run_on",
]


# ---- what the model graded ---------------------------------------------------------------------


@dataclass(frozen=True)
class LabelCounts:
    """How many grades of a dataset a model gave: judgements and evidence spans counted alike.

    ``by_source``: the model sources, each with its count; ``model_only_queries``: the queries every
    grade of which is a model's (not scored at all without model labels).
    """

    total: int
    model: int
    by_source: dict[str, int]
    model_only_queries: tuple[str, ...]


def _grades(dataset: Dataset) -> Iterator[tuple[str, str]]:
    """``(qid, source)`` of every grade the dataset was written with ("" where none is recorded)."""
    if dataset.has_documents:
        for qid, docs in dataset.document_judgements.items():
            sources = dataset.judgement_sources.get(qid, {})
            for doc in docs:
                yield qid, sources.get(doc, "")
        for qid, spans in dataset.evidence.items():
            recorded = dataset.evidence_sources.get(qid, ())
            for i in range(len(spans)):
                yield qid, recorded[i] if i < len(recorded) else ""
        return
    for qid, units in dataset.judgements.items():
        sources = dataset.judgement_sources.get(qid, {})
        for unit in units:
            yield qid, sources.get(unit, "")


def label_counts(dataset: Dataset) -> LabelCounts:
    """The grades of ``dataset`` a model gave, by source, and the queries graded by models only."""
    total = model = 0
    by_source: dict[str, int] = {}
    people: set[str] = set()
    seen: dict[str, None] = {}  # the queries in the dataset's order
    for qid, source in _grades(dataset):
        total += 1
        seen[qid] = None
        if is_model_source(source):
            model += 1
            by_source[source] = by_source.get(source, 0) + 1
        else:
            people.add(qid)
    only = tuple(qid for qid in seen if qid not in people)
    return LabelCounts(total, model, dict(sorted(by_source.items())), only)


def human_only_judgements(
    judgements: Mapping[str, Mapping[str, float]], sources: Mapping[str, Mapping[str, str]]
) -> dict[str, dict[str, float]]:
    """``judgements`` without those a model gave (``sources`` ``{qid: {unit: source}}``); empty queries dropped."""
    kept: dict[str, dict[str, float]] = {}
    for qid, units in judgements.items():
        given = sources.get(qid, {})
        left = {unit: grade for unit, grade in units.items() if not is_model_source(given.get(unit, ""))}
        if left:
            kept[qid] = left
    return kept


def human_only_dataset(dataset: Dataset) -> Dataset:
    """``dataset`` with every model-labelled judgement and evidence span removed (see the module docstring).

    A dataset of documents gets its document grades derived again from the explicit judgements and the
    evidence that are left (rag_eval._data.datasets.evidence.document_grades).
    """
    sources = {qid: {u: s for u, s in units.items() if not is_model_source(s)} for qid, units in
               dataset.judgement_sources.items()}
    if not dataset.has_documents:
        return replace(dataset, judgements=human_only_judgements(dataset.judgements, dataset.judgement_sources),
                       judgement_sources=sources)
    explicit = human_only_judgements(dataset.document_judgements, dataset.judgement_sources)
    evidence: dict[str, tuple[Any, ...]] = {}
    evidence_sources: dict[str, tuple[str, ...]] = {}
    for qid, spans in dataset.evidence.items():
        recorded = dataset.evidence_sources.get(qid, ())
        pairs = [(span, recorded[i] if i < len(recorded) else "") for i, span in enumerate(spans)]
        kept = [(span, source) for span, source in pairs if not is_model_source(source)]
        if kept:
            evidence[qid] = tuple(span for span, _ in kept)
            if any(source for _, source in kept):
                evidence_sources[qid] = tuple(source for _, source in kept)
    judgements, _ = document_grades(evidence, explicit)  # a conflict was refused when the file was loaded
    return replace(dataset, judgements=judgements, document_judgements=explicit, evidence=evidence,
                   judgement_sources=sources, evidence_sources=evidence_sources)


# ---- metrics under each set of labels -------------------------------------------------------------


def evaluate_by_labels(
    judgements: Mapping[str, Mapping[str, float]],
    sources: Mapping[str, Mapping[str, str]],
    rankings: Mapping[str, Mapping[str, Mapping[str, float]]],
    metrics: Sequence[str],
    **options: Any,
) -> dict[str, tuple[Results, Results | None]]:
    """Each retriever's ``(all labels, without model labels)`` Results, by rag_eval's evaluate.

    ``rankings``: ``{label: {qid: {unit: score}}}``; ``options``: evaluate's (gain, no_relevant, ...).
    None where no judgement is left without the model's.
    """
    human = human_only_judgements(judgements, sources)
    out: dict[str, tuple[Results, Results | None]] = {}
    for label, ranking in rankings.items():
        every = evaluate(judgements, ranking, list(metrics), **options)
        out[label] = (every, evaluate(human, ranking, list(metrics), **options) if human else None)
    return out


def run_without_model_labels(run: Any, metrics: Sequence[str]) -> dict[str, Results | None]:
    """Each retriever of a run (rag_eval._run.outcome.RunOutcome) scored on ``metrics`` without model labels.

    Passages: rag_eval's evaluate on the retriever's ranking. Documents: evaluate_evidence on its ranked
    spans, with the chunking it read (chunk-level metrics; none for a retriever's own spans). A metric the
    run did not compute for a retriever, or a token budget counted by a tokenizer other than ``words``, is
    left out. None where no judgement is left.
    """
    return score_run_on(run, human_only_dataset(run.dataset), metrics)


def score_run_on(run: Any, dataset: Dataset, metrics: Sequence[str]) -> dict[str, Results | None]:
    """Each retriever of a run scored on ``metrics`` against the grades of ``dataset``: the run's own dataset
    with other grades (without model labels, or a sheet's grades merged), as run_without_model_labels says.
    """
    evaluation = run.config.model.evaluation
    out: dict[str, Results | None] = {}
    for outcome in run.outcomes:
        wanted = [m for m in metrics if m in outcome.results.values]
        if not dataset.has_documents:
            out[outcome.label] = (evaluate(dataset.judgements, outcome.ranking, wanted, **evaluation.passage_options())
                                  if dataset.judgements and wanted else None)
            continue
        if evaluation.tokenizer != "words":
            wanted = [m for m in wanted if parse_metric(m).budget_unit != "tokens"]
        if not wanted or not (dataset.evidence or dataset.document_judgements):
            out[outcome.label] = None
            continue
        try:
            out[outcome.label] = evaluate_evidence(
                dict(dataset.evidence), outcome.spans or {}, wanted, document_judgements=dataset.document_judgements,
                chunks=_chunks(outcome, dataset), documents=dataset.documents, **evaluation.document_options(),
            )
        except RagEvalError:  # e.g. nothing judged is left that these metrics can read
            out[outcome.label] = None
    return out


def _chunks(outcome: Any, dataset: Dataset) -> list[Chunk] | None:
    """Every chunk of the chunking the retriever read (its ids, as the run indexed them); None for own spans."""
    record = outcome.chunking
    if record is None or record.kind == "own":
        return None
    if record.kind == "documents":
        return [Chunk(doc, 0, len(text), text) for doc, text in dataset.documents.items() if text]
    chunks = []
    for key in outcome.corpus or {}:
        span = parse_chunk_id(key)
        if span is not None:
            doc, start, end = span
            chunks.append(Chunk(doc, start, end, dataset.documents.get(doc, "")[start:end]))
    return chunks


# ---- each decision's share ------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelShare:
    """One decision's difference on ``metric``, split into what people's grades show and what a model's add.

    ``delta`` = ``human`` + ``model`` (the module docstring's Δ = H + M) over ``n`` paired queries, of
    which ``unseen`` have no difference without model labels (a side unscored). ``share`` is
    |M| / (|H| + |M|), None when both are 0. ``direction``: ``holds`` (H has Δ's sign), ``vanishes`` (H is
    0 while Δ is not), ``reverses`` (H has the opposite sign), ``none`` (Δ is 0).
    """

    metric: str
    reference: str
    variant: str
    n: int
    unseen: int
    delta: float
    human: float
    model: float
    share: float | None
    direction: str


def model_share(
    metric: str, reference: str, variant: str, all_labels: tuple[Results, Results],
    human_only: tuple[Results | None, Results | None],
) -> ModelShare | None:
    """The split of ``variant - reference`` on ``metric`` (module docstring); None when no query pairs.

    ``all_labels``: the (reference's, variant's) Results with every grade; ``human_only``: the same without
    model labels (None: nothing left to score).
    """
    every = _values(all_labels[0], metric), _values(all_labels[1], metric)
    paired = sorted(q for q in every[0] if q in every[1] and not (math.isnan(every[0][q]) or math.isnan(every[1][q])))
    if not paired:
        return None
    human = (_values(human_only[0], metric), _values(human_only[1], metric))
    d = np.array([every[1][q] - every[0][q] for q in paired], dtype=np.float64)
    h = np.zeros(len(paired))
    unseen = 0
    for i, q in enumerate(paired):
        ref, var = human[0].get(q, math.nan), human[1].get(q, math.nan)
        if math.isnan(ref) or math.isnan(var):
            unseen += 1
        else:
            h[i] = var - ref
    delta, part_h = float(d.mean()), float(h.mean())
    part_m = float((d - h).mean())
    scale = abs(part_h) + abs(part_m)
    share = None if scale == 0 else abs(part_m) / scale
    return ModelShare(str(parse_metric(metric)), reference, variant, len(paired), unseen, delta, part_h, part_m,
                      share, _direction(delta, part_h))


def _values(results: Results | None, metric: str) -> dict[str, float]:
    if results is None or metric not in results.values:
        return {}
    return dict(zip(results.query_ids, np.asarray(results.values[metric], dtype=np.float64).tolist()))


# Differences closer to 0 than this are 0: a mean of float differences that cancel is seldom exactly 0.
_ZERO = 1e-12


def _direction(delta: float, human: float) -> str:
    if abs(delta) <= _ZERO:
        return "none"
    if abs(human) <= _ZERO:
        return "vanishes"
    return "holds" if (human > 0) == (delta > 0) else "reverses"


def reference_label(results: Mapping[str, Results], metric: str, baseline: str | None = None) -> str | None:
    """The decision's reference: ``baseline`` when it is a label, else the best mean of ``metric`` (config order
    breaks a tie, as rag_eval._compare.decision ranks); None when no retriever has a value."""
    if baseline is not None and baseline in results:
        return baseline
    parsed = parse_metric(metric)
    means = {}
    for label, res in results.items():
        values = _values(res, metric)
        defined = [v for v in values.values() if not math.isnan(v)]
        if defined:
            means[label] = float(np.mean(defined))
    if not means:
        return None
    return min(means, key=lambda label: parsed.best_first_key(means[label]))  # min keeps the first of equals


def decision_shares(
    metric: str, all_labels: Mapping[str, Results], human_only: Mapping[str, Results | None],
    baseline: str | None = None,
) -> list[ModelShare]:
    """The share of every decision of a run: the reference (:func:`reference_label`) against each other retriever."""
    reference = reference_label(all_labels, metric, baseline)
    if reference is None:
        return []
    shares = []
    for label, results in all_labels.items():
        if label == reference:
            continue
        found = model_share(metric, reference, label, (all_labels[reference], results),
                            (human_only.get(reference), human_only.get(label)))
        if found is not None:
            shares.append(found)
    return shares


# ---- a variant judged by its own model --------------------------------------------------------------


@dataclass(frozen=True)
class SameModel:
    """A retriever that ranks with ``model``, the model behind ``source``, which gave ``grades`` of the grades."""

    retriever: str
    model: str
    source: str
    grades: int


_MODEL_KEYS = ("model", "model_path", "model_name")


def model_names(description: Any) -> list[str]:
    """Every model a retriever's description names (``model``, ``model_path``, ``model_name``, at any depth)."""
    found: list[str] = []
    if isinstance(description, Mapping):
        for key, value in description.items():
            if key in _MODEL_KEYS and isinstance(value, str) and value.strip():
                found.append(value)
            else:
                found += model_names(value)
    elif isinstance(description, (list, tuple)):
        for item in description:
            found += model_names(item)
    return list(dict.fromkeys(found))


def _model_key(name: str) -> str:
    """A model's name as both sides may spell it: the last part of a path or hub name, lower-cased."""
    return name.strip().rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1].lower()


def same_model_warnings(descriptions: Mapping[str, Any], sources: Iterable[tuple[str, int]]) -> list[SameModel]:
    """Retrievers whose description names the model of a judge source (``<kind>:<model>``).

    ``sources``: ``(source, how many grades it gave)``. A model re-ranking with its own taste agrees with
    the grades it gave itself, whatever people think: such a comparison is circular.
    """
    judges = [(source, count, _model_key(source.partition(":")[2])) for source, count in sources
              if is_model_source(source)]
    found = []
    for label, description in descriptions.items():
        for name in model_names(description):
            key = _model_key(name)
            for source, count, judge in judges:
                if key and key == judge:
                    found.append(SameModel(label, name, source, count))
    return list(dict.fromkeys(found))
