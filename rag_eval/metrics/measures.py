"""Metrics: one record per metric family, and names parsed once into small frozen objects.

Everything rag_eval knows about a metric family lives in its :class:`Family`
record below: how it takes a cutoff, whether it is graded, whether it needs a
relevant document to be defined, its direction, trec_eval's name for it, the
other spellings accepted, and what it means. Parsers, reports, gates and results
read these records; nothing else lists metric names.

``parse_metric("nDCG@10")`` returns ``Metric("ndcg", 10)`` whose ``str`` is the
canonical ``"ndcg@10"``. That string keys results JSON, report columns and
regression gates, so two spellings of one metric can never become two columns.
trec_eval's own names (``ndcg_cut_10``, ``P_5``, ``recip_rank``, ``Rprec``,
``success_1``, ``map_cut_100``) are accepted as aliases.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Iterable, Literal

from rag_eval.errors import MetricError

Cutoff = Literal["required", "optional", "none"]


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
    bounded: bool = True  # every value lies in [0, 1] (False for DCG and IDCG, sums of gains: >= 0 only)


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("ndcg", "optional", True, True, True, "ndcg", "ndcg_cut", ("ndcg_cut",),
               "normalised discounted cumulative gain (trec_eval ndcg / ndcg_cut.k)"),
        Family("dcg", "optional", True, False, True, None, None, (),
               "discounted cumulative gain of the ranking", bounded=False),
        Family("idcg", "optional", True, False, True, None, None, (),
               "DCG of the ideal ranking of all judged relevant documents", bounded=False),
        Family("precision", "required", False, True, True, None, "P", ("p", "prec"),
               "relevant in top k / k (trec_eval P_k)"),
        Family("recall", "required", False, True, True, None, "recall", ("r",),
               "relevant in top k / all relevant (trec_eval recall_k)"),
        Family("mrr", "optional", False, True, True, "recip_rank", None, ("recip_rank", "rr"),
               "1 / rank of the first relevant document (trec_eval recip_rank)"),
        Family("map", "optional", False, True, True, "map", "map_cut", ("ap", "map_cut"),
               "average precision (trec_eval map / map_cut_k)"),
        Family("r_precision", "none", False, True, True, "Rprec", None, ("rprec",),
               "precision at rank R = number of relevant (trec_eval Rprec)"),
        Family("hit_rate", "required", False, True, True, None, "success", ("success", "hits", "hit"),
               "1 if any relevant document is in the top k (trec_eval success_k)"),
        Family("judged", "required", False, False, True, None, None, (),
               "share of the top k that has any judgement (ir_measures Judged@k)"),
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
    """One metric: a family name and an optional rank cutoff ``k``."""

    name: str
    k: int | None = None

    def __str__(self) -> str:
        return self.name if self.k is None else f"{self.name}@{self.k}"

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
    def description(self) -> str:
        """One line saying what the metric measures."""
        return self.family.description

    @property
    def trec_eval_name(self) -> str | None:
        """trec_eval's name for this metric (``ndcg_cut_10``, ``P_5``), or None when it has none."""
        family = self.family
        if self.k is None:
            return family.trec_name
        return None if family.trec_cutoff_name is None else f"{family.trec_cutoff_name}_{self.k}"


def valid_metric_names() -> list[str]:
    """Human-readable list of the accepted metric forms."""
    forms = []
    for family in FAMILIES.values():
        if family.cutoff == "required":
            forms.append(f"{family.name}@k")
        elif family.cutoff == "optional":
            forms.extend([family.name, f"{family.name}@k"])
        else:
            forms.append(family.name)
    return forms


def parse_metric(text: str | Metric) -> Metric:
    """Parse a metric name such as ``ndcg@10``, ``P_5`` or ``recip_rank``.

    Raises :class:`MetricError` listing the valid names when ``text`` is unknown
    or malformed (a missing, non-integer or non-positive cutoff).
    """
    if isinstance(text, Metric):
        return text
    if not isinstance(text, str):
        raise MetricError(f"metric names are strings, got {text!r}; valid: {', '.join(valid_metric_names())}")
    raw = text
    stripped = text.strip()
    family_text, at, cutoff_text = stripped.partition("@")
    cutoff: str | None = cutoff_text if at else None
    if not at:
        prefix, underscore, suffix = stripped.rpartition("_")
        if underscore and prefix.lower() in _UNDERSCORE_CUTOFF:
            family_text, cutoff = prefix, suffix
    # Checked before lower(), which maps a few other letters onto ASCII (the Kelvin sign '\u212a' becomes 'k').
    name = _SPELLINGS.get(family_text.lower()) if family_text.isascii() else None
    if name is None:
        raise MetricError(_unknown(raw))
    family = FAMILIES[name]
    k: int | None = None
    if cutoff is not None:
        if family.cutoff == "none":
            raise MetricError(f"metric {raw!r}: {name} takes no cutoff; write {name!r}")
        if not _ASCII_INTEGER.fullmatch(cutoff):
            raise MetricError(_bad_cutoff(raw, name, cutoff))
        k = int(cutoff)
        if k <= 0:
            raise MetricError(f"metric {raw!r}: cutoff must be a positive integer, got {k}")
    elif family.cutoff == "required":
        raise MetricError(f"metric {raw!r}: {name} needs a cutoff; write e.g. {name}@10")
    return Metric(name, k)


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
    guesses = difflib.get_close_matches(head, list(_SPELLINGS), n=1)
    hint = f" (did you mean {_valid_form(_SPELLINGS[guesses[0]], cutoff if at else '')!r}?)" if guesses else ""
    return f"unknown metric {raw!r}{hint}; valid: {', '.join(valid_metric_names())}"


def _valid_form(name: str, cutoff: str) -> str:
    """A suggestion that parses as written: ``ndcg``, ``r_precision``, ``precision@5`` or ``precision@k``.

    A family that needs a cutoff is never suggested alone ('precision' would be refused in turn);
    the user's own cutoff is kept when it is a valid one.
    """
    family = FAMILIES[name]
    if family.cutoff != "required":
        return name
    return f"{name}@{cutoff if cutoff.isascii() and cutoff.isdigit() and int(cutoff) > 0 else 'k'}"
