"""Metrics: one record per metric family, and names parsed once into small frozen objects.

Everything rag_eval knows about a metric family lives in its :class:`Family`
record below: how it takes a cutoff, whether it is graded, whether it needs a
relevant document to be defined, its direction, how its per-query values become
the dataset value (:attr:`Family.micro`), the kernel that computes it, trec_eval's
name for it, the other spellings accepted, and what it means. The evaluator,
reports, plots, gates and results files read these records; nothing else lists
metric names or dispatches on them.

``parse_metric("nDCG@10")`` returns ``Metric("ndcg", 10)`` whose ``str`` is the
canonical ``"ndcg@10"``. That string keys results JSON, report columns and
regression gates, so two spellings of one metric can never become two columns.
trec_eval's own names (``ndcg_cut_10``, ``P_5``, ``recip_rank``, ``Rprec``,
``success_1``, ``map_cut_100``, ``bpref``) are accepted as aliases.

Documents, chunks and evidence (docs/semantics.md) add two levels. Any ranking family
takes the prefix ``doc_`` (``doc_ndcg@10``: the metric on the chunk ranking
collapsed to documents, MaxP); the evidence families (``evidence_recall@10``,
``evidence_precision@5``, ``evidence_iou@10``) measure characters of evidence
covered by the top k chunks, or by the best chunks that fit a context budget
(``evidence_recall@2000chars``, ``evidence_recall@512tokens``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from rag_eval._core.errors import MetricError
from rag_eval._core.messages import close_match
from rag_eval._scoring.metrics import evidence_kernels, kernels

Cutoff = Literal["required", "optional", "none"]
Kind = Literal["ranking", "evidence"]
DOC_PREFIX = "doc_"
BUDGET_UNITS = ("chars", "tokens")


# A family's kernel: ranking families take (KernelContext, k) (rag_eval._scoring.metrics.kernels),
# evidence families take EvidenceCounts (rag_eval._scoring.metrics.evidence_kernels); both return
# one float64 value per query.
Kernel = Callable[..., np.ndarray]


@dataclass(frozen=True)
class Micro:
    """How a family aggregates under ``aggregation: micro``: the sum over the queries in its mean of
    one family's per-query values, divided by the sum of another's (nDCG: sum of DCG / sum of IDCG)."""

    numerator: str
    denominator: str


@dataclass(frozen=True)
class Family:
    """What defines one metric family (``ndcg``, ``precision``, ...)."""

    name: str
    cutoff: Cutoff  # whether ``@k`` is required, optional or refused
    graded: bool  # uses gains (nDCG, DCG, IDCG) rather than relevant / not relevant
    needs_relevant: bool  # undefined for a query with nothing relevant (the no_relevant policy applies)
    higher_is_better: bool
    trec_name: str | None  # trec_eval's measure without cutoff; None when trec_eval has no such measure
    trec_cutoff_name: str | None  # trec_eval's measure with cutoff k: ``f"{trec_cutoff_name}_{k}"``
    aliases: tuple[str, ...]  # other accepted spellings (lower case), with or without a cutoff
    description: str
    kernel: Kernel  # computes the per-query values (see Kernel above)
    bounded: bool = True  # every value lies in [0, 1] (False for DCG and IDCG, sums of gains: >= 0 only)
    # "ranking": computed on a ranked list with grades (passages, chunks, or documents with doc_);
    # "evidence": characters of evidence spans covered by retrieved chunks (rag_eval._scoring.evidence).
    kind: Kind = "ranking"
    # The dataset value under aggregation "micro"; None: the mean of the per-query values, as under "macro".
    micro: Micro | None = None
    # A config without main_metric leads with its first metric of this family, at any level (docs/config.md):
    # nDCG, graded and rank-aware, the usual headline of a retrieval evaluation. One family says so.
    main_by_default: bool = False


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("ndcg", "optional", True, True, True, "ndcg", "ndcg_cut", ("ndcg_cut",),
               "normalised discounted cumulative gain (trec_eval ndcg / ndcg_cut.k)", kernels.ndcg,
               micro=Micro("dcg", "idcg"), main_by_default=True),
        Family("dcg", "optional", True, False, True, None, None, (),
               "discounted cumulative gain of the ranking", kernels.dcg, bounded=False),
        Family("idcg", "optional", True, False, True, None, None, (),
               "DCG of the ideal ranking of all judged relevant documents", kernels.idcg, bounded=False),
        Family("precision", "required", False, True, True, None, "P", ("p", "prec"),
               "relevant in top k / k (trec_eval P_k)", kernels.precision),
        Family("recall", "required", False, True, True, None, "recall", ("r",),
               "relevant in top k / all relevant (trec_eval recall_k)", kernels.recall),
        Family("mrr", "optional", False, True, True, "recip_rank", None, ("recip_rank", "rr"),
               "1 / rank of the first relevant document (trec_eval recip_rank)", kernels.mrr),
        Family("map", "optional", False, True, True, "map", "map_cut", ("ap", "map_cut"),
               "average precision (trec_eval map / map_cut_k)", kernels.average_precision),
        Family("r_precision", "none", False, True, True, "Rprec", None, ("rprec",),
               "precision at rank R = number of relevant (trec_eval Rprec)", kernels.r_precision),
        Family("bpref", "none", False, True, True, "bpref", None, (),
               "binary preference: how rarely a relevant document is ranked below a judged non-relevant one; "
               "unjudged documents are ignored (trec_eval bpref)", kernels.bpref),
        Family("hit_rate", "required", False, True, True, None, "success", ("success", "hits", "hit"),
               "1 if any relevant document is in the top k (trec_eval success_k)", kernels.hit_rate),
        Family("judged", "required", False, False, True, None, None, (),
               "share of the top k that has any judgement (ir_measures Judged@k)", kernels.judged),
        Family("evidence_recall", "required", False, True, True, None, None, (),
               "characters of the evidence inside the top k chunks / characters of the evidence",
               evidence_kernels.evidence_recall, kind="evidence"),
        Family("evidence_precision", "required", False, True, True, None, None, (),
               "characters of the evidence inside the top k chunks / sum of the lengths of the top k chunks",
               evidence_kernels.evidence_precision, kind="evidence"),
        Family("evidence_iou", "required", False, True, True, None, None, (),
               "covered evidence / (lengths of the top k chunks + evidence not covered): intersection over union",
               evidence_kernels.evidence_iou, kind="evidence"),
    )
}

# Every accepted spelling (lower case) -> family name.
_SPELLINGS: dict[str, str] = {}
for _family in FAMILIES.values():
    for _spelling in (_family.name, *_family.aliases):
        _SPELLINGS[_spelling] = _family.name
# trec_eval writes the cutoff after an underscore (P_5, ndcg_cut_10): these prefixes may take one.
_UNDERSCORE_CUTOFF = {f.trec_cutoff_name.lower(): f.name for f in FAMILIES.values() if f.trec_cutoff_name}


@dataclass(frozen=True, order=True)
class Metric:
    """One metric: a family name, an optional rank cutoff ``k`` and its level.

    ``doc`` marks a ranking metric computed on documents (MaxP collapse of a chunk
    ranking); ``unit`` ("chars" or "tokens") makes ``k`` a context budget of an
    evidence metric instead of a number of chunks.
    """

    name: str
    k: int | None = None
    doc: bool = False
    unit: str | None = None

    def __str__(self) -> str:
        name = f"{DOC_PREFIX}{self.name}" if self.doc else self.name
        if self.k is None:
            return name
        return f"{name}@{self.k}{self.unit or ''}"

    @property
    def family(self) -> Family:
        """The family record this metric belongs to."""
        return FAMILIES[self.name]

    @property
    def uses_relevance(self) -> bool:
        """True when the metric is undefined for a query without relevant documents."""
        return self.family.needs_relevant

    @property
    def higher_is_better(self) -> bool:
        """Direction of improvement, from the metric's definition."""
        return self.family.higher_is_better

    @property
    def is_graded(self) -> bool:
        """True for the gain-based family (nDCG, DCG, IDCG); False for binary metrics."""
        return self.family.graded

    @property
    def is_document_level(self) -> bool:
        """True for ``doc_`` metrics: the chunk ranking collapsed to documents (MaxP)."""
        return self.doc

    @property
    def is_evidence(self) -> bool:
        """True for the evidence families (characters of evidence covered by chunks)."""
        return self.family.kind == "evidence"

    @property
    def budget_unit(self) -> str | None:
        """"chars" or "tokens" when ``k`` is a context budget, else None (``k`` counts chunks)."""
        return self.unit

    # ---- what the record says, read by the evaluator, reports, plots and results files ----------

    @property
    def rank_cutoff(self) -> int | None:
        """How many ranks the metric reads: ``k`` when it counts ranks; None when it reads the whole
        ranking (no ``k``) or a context budget in chars or tokens (no fixed number of ranks)."""
        return self.k if self.unit is None else None

    def ranks_shown(self, top_k: int) -> int:
        """How many of a ``top_k`` ranking a report shows for this metric: :attr:`rank_cutoff`, at most
        ``top_k``; all ``top_k`` when the metric has no rank cutoff."""
        cutoff = self.rank_cutoff
        return top_k if cutoff is None else min(cutoff, top_k)

    @property
    def micro_parts(self) -> tuple[Metric, Metric] | None:
        """(numerator, denominator) metrics of the micro aggregate (``dcg@10``, ``idcg@10`` for
        ``ndcg@10``), at this metric's cutoff and level; None when micro is the macro mean."""
        micro = self.family.micro
        if micro is None:
            return None
        return replace(self, name=micro.numerator), replace(self, name=micro.denominator)

    def is_relevant(self, grade: float | None, threshold: float) -> bool:
        """Whether a document of ``grade`` counts as relevant for this metric, as its kernel counts it.

        Graded families gain from every grade > 0; binary ones count grades >= the relevance
        ``threshold`` (trec_eval's -l); an unjudged document (None) never counts.
        """
        if grade is None:
            return False
        return grade > 0 if self.is_graded else grade >= threshold

    def best_first_key(self, value: float) -> float:
        """A sort key that puts better values first (``-value``, or ``value`` for a lower-is-better metric)."""
        return -value if self.higher_is_better else value

    def best(self, values: Iterable[float]) -> float:
        """The best of ``values`` in the metric's direction (the largest, or the smallest when lower is better)."""
        return max(values) if self.higher_is_better else min(values)

    @property
    def description(self) -> str:
        """One line saying what the metric measures."""
        text = self.family.description
        if self.doc:
            plain = Metric(self.name, self.k).trec_eval_name
            reference = f"trec_eval {plain} of the collapsed run" if plain else "computed on the collapsed run"
            return (f"{text}, on documents: the chunk ranking collapsed to documents, each at the rank of its "
                    f"best chunk (MaxP; {reference})")
        if self.unit is not None:
            return f"{text}, where the top k chunks are the best chunks that fit a budget of {self.k} {self.unit}"
        return text

    @property
    def trec_eval_name(self) -> str | None:
        """trec_eval's name for this metric (``ndcg_cut_10``, ``P_5``), or None when it has none.

        A ``doc_`` metric has none of its own: ``doc_ndcg@10`` is ``ndcg_cut_10`` of the collapsed run
        (see :attr:`description`).
        """
        family = self.family
        if self.doc or self.unit is not None:
            return None
        if self.k is None:
            return family.trec_name
        return None if family.trec_cutoff_name is None else f"{family.trec_cutoff_name}_{self.k}"


def valid_metric_names() -> list[str]:
    """Human-readable list of the accepted metric forms (``doc_`` and budgets are said in :data:`LEVELS_HINT`)."""
    forms = []
    for family in FAMILIES.values():
        if family.cutoff == "required":
            forms.append(f"{family.name}@k")
        elif family.cutoff == "optional":
            forms.extend([family.name, f"{family.name}@k"])
        else:
            forms.append(family.name)
    return forms


LEVELS_HINT = (
    "prefix doc_ for document level (doc_ndcg@10); evidence metrics also take a budget "
    "(evidence_recall@2000chars, evidence_recall@512tokens)"
)


def parse_metric(text: str | Metric) -> Metric:
    """Parse a metric name: ``ndcg@10``, ``P_5``, ``recip_rank``, ``doc_ndcg@10``, ``evidence_recall@2000chars``.

    Raises :class:`MetricError` (one line, with a suggestion) when ``text`` is unknown
    or malformed: a missing, non-integer or non-positive cutoff, ``doc_`` on an evidence
    metric, a budget on a ranking metric or a budget unit other than chars and tokens.
    """
    if isinstance(text, Metric):
        return text
    if not isinstance(text, str):
        raise MetricError(f"metric names are strings, got {text!r}; valid: {', '.join(valid_metric_names())}")
    raw = text
    stripped = text.strip()
    doc = stripped.isascii() and stripped[: len(DOC_PREFIX)].lower() == DOC_PREFIX
    body = stripped[len(DOC_PREFIX) :] if doc else stripped
    family_text, at, cutoff_text = body.partition("@")
    cutoff: str | None = cutoff_text if at else None
    if not at:
        prefix, underscore, suffix = body.rpartition("_")
        if underscore and prefix.lower() in _UNDERSCORE_CUTOFF:
            family_text, cutoff = prefix, suffix
    # Checked before lower(), which maps a few other letters onto ASCII (the Kelvin sign '\u212a' becomes 'k').
    name = _SPELLINGS.get(family_text.lower()) if family_text.isascii() else None
    if name is None:
        raise MetricError(_unknown(raw))
    family = FAMILIES[name]
    shown = f"{DOC_PREFIX}{name}" if doc else name
    if doc and family.kind != "ranking":
        raise MetricError(
            f"metric {raw!r}: the doc_ prefix applies to ranking metrics (doc_ndcg@10, doc_recall@100); "
            f"{name} already measures characters of documents; write {name}@{_shown_cutoff(cutoff)}"
        )
    unit: str | None = None
    budget = _BUDGET.fullmatch(cutoff) if cutoff is not None else None
    if budget is not None:
        number, word = budget.group(1), budget.group(2).lower()
        if family.kind == "evidence" and word not in BUDGET_UNITS:
            raise MetricError(
                f"metric {raw!r}: budget unit {budget.group(2)!r} is neither 'chars' nor 'tokens'; "
                f"write e.g. {name}@{number}chars or {name}@{number}tokens"
            )
        if word in BUDGET_UNITS:
            if family.kind != "evidence":
                fix = f"{shown}@{number}" if family.cutoff != "none" else shown
                raise MetricError(
                    f"metric {raw!r}: only evidence metrics take a budget in chars or tokens; "
                    f"write {fix!r} or 'evidence_recall@{number}{word}'"
                )
            cutoff, unit = number, word
    k: int | None = None
    if cutoff is not None:
        if family.cutoff == "none":
            raise MetricError(f"metric {raw!r}: {shown} takes no cutoff; write {shown!r}")
        if not _ASCII_INTEGER.fullmatch(cutoff):
            raise MetricError(_bad_cutoff(raw, shown, cutoff))
        k = int(cutoff)
        if k <= 0 and unit is not None:  # a budget of context, not a rank cutoff
            raise MetricError(
                f"metric {raw!r}: the budget must be a positive number of {unit}, got {k}; write e.g. {name}@2000{unit}"
            )
        if k <= 0:
            raise MetricError(f"metric {raw!r}: cutoff must be a positive integer, got {k}")
    elif family.cutoff == "required":
        raise MetricError(f"metric {raw!r}: {shown} needs a cutoff; write e.g. {shown}@10")
    return Metric(name, k, doc, unit)


def parse_metrics(texts: Iterable[str | Metric]) -> tuple[Metric, ...]:
    """Parse several names, keeping their order and dropping exact repeats."""
    seen: dict[Metric, None] = {}
    for text in texts:
        seen.setdefault(parse_metric(text), None)
    if not seen:
        raise MetricError(f"no metrics given; valid: {', '.join(valid_metric_names())}")
    return tuple(seen)


# A cutoff is written in ASCII digits: int() alone would also take '٣', '１０', '1_0' and ' 5'.
# The sign is allowed here only so that '@-2' gets the "positive integer" message.
_ASCII_INTEGER = re.compile(r"-?[0-9]+")
# A budget: ASCII digits then a unit word ('2000chars', '512tokens'); the unit is checked after.
_BUDGET = re.compile(r"(-?[0-9]+)([A-Za-z]+)")


def _shown_cutoff(cutoff: str | None) -> str:
    return cutoff if cutoff and cutoff.isascii() and (cutoff[:1].isdigit()) else "10"


def _bad_cutoff(raw: str, name: str, cutoff: str) -> str:
    try:
        value = int(cutoff)  # what Python would have read, to suggest it in ASCII digits
    except ValueError:
        value = 0
    example = f"{name}@{value if value > 0 else 10}"
    if not cutoff.isascii():
        return f"metric {raw!r}: cutoff {cutoff!r} is not written in ASCII digits 0-9; write e.g. {example}"
    return f"metric {raw!r}: cutoff {cutoff!r} is not an integer; write e.g. {example}"


def _unknown(raw: str) -> str:
    head, at, cutoff = raw.strip().lower().partition("@")
    prefix = DOC_PREFIX if head.startswith(DOC_PREFIX) else ""
    head = head[len(prefix) :]
    # After doc_, only ranking families are suggested (doc_ on an evidence family is refused).
    names = [s for s in _SPELLINGS if not prefix or FAMILIES[_SPELLINGS[s]].kind == "ranking"]
    guess = close_match(head, names)
    hint = f" (did you mean {prefix + _valid_form(_SPELLINGS[guess], cutoff if at else '')!r}?)" if guess else ""
    return f"unknown metric {raw!r}{hint}; valid: {', '.join(valid_metric_names())}; {LEVELS_HINT}"


def _valid_form(name: str, cutoff: str) -> str:
    """A suggestion that parses as written: ``ndcg``, ``ndcg@10``, ``r_precision``, ``precision@5`` or ``precision@k``.

    A family that needs a cutoff is never suggested alone ('precision' would be refused in turn);
    the user's own cutoff is kept when it is a valid one (a budget of an evidence family too).
    """
    family = FAMILIES[name]
    number = cutoff.isascii() and cutoff.isdigit() and int(cutoff) > 0
    if family.cutoff == "optional":  # 'ndgc@10' means ndcg@10: the user's cutoff is kept where it is one
        return f"{name}@{cutoff}" if number else name
    if family.cutoff != "required":
        return name
    budget = _BUDGET.fullmatch(cutoff)
    valid_budget = budget is not None and budget.group(2) in BUDGET_UNITS and int(budget.group(1)) > 0
    if valid_budget and family.kind == "evidence":
        return f"{name}@{cutoff}"
    return f"{name}@{cutoff if cutoff.isascii() and cutoff.isdigit() and int(cutoff) > 0 else 'k'}"
