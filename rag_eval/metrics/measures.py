"""Metric names, parsed once into small frozen objects.

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
from typing import Iterable

from rag_eval.errors import MetricError

# name -> (cutoff: "required" | "optional" | "none", depends on relevance?, description)
_FAMILIES: dict[str, tuple[str, bool, str]] = {
    "ndcg": ("optional", True, "normalised discounted cumulative gain (trec_eval ndcg / ndcg_cut.k)"),
    "dcg": ("optional", False, "discounted cumulative gain of the ranking"),
    "idcg": ("optional", False, "DCG of the ideal ranking of all judged relevant documents"),
    "precision": ("required", True, "relevant in top k / k (trec_eval P_k)"),
    "recall": ("required", True, "relevant in top k / all relevant (trec_eval recall_k)"),
    "mrr": ("optional", True, "1 / rank of the first relevant document (trec_eval recip_rank)"),
    "map": ("optional", True, "average precision (trec_eval map / map_cut_k)"),
    "r_precision": ("none", True, "precision at rank R = number of relevant (trec_eval Rprec)"),
    "hit_rate": ("required", True, "1 if any relevant document is in the top k (trec_eval success_k)"),
    "judged": ("required", False, "share of the top k that has any judgement (ir_measures Judged@k)"),
}

_ALIASES = {
    "ndcg_cut": "ndcg",
    "p": "precision",
    "prec": "precision",
    "r": "recall",
    "recip_rank": "mrr",
    "rr": "mrr",
    "ap": "map",
    "map_cut": "map",
    "rprec": "r_precision",
    "success": "hit_rate",
    "hits": "hit_rate",
    "hit": "hit_rate",
}

# Higher is better for every metric rag_eval computes; kept as data so that
# regression checks read the direction from the metric, never from the user.
_HIGHER_IS_BETTER = {name: True for name in _FAMILIES}

# trec_eval spellings with the cutoff after an underscore: P_5, ndcg_cut_10, ...
_TREC_CUTOFF_RE = re.compile(r"^(p|recall|success|map_cut|ndcg_cut)_(.+)$")


@dataclass(frozen=True, order=True)
class Metric:
    """One metric: a family name and an optional rank cutoff ``k``."""

    name: str
    k: int | None = None

    def __str__(self) -> str:
        return self.name if self.k is None else f"{self.name}@{self.k}"

    @property
    def uses_relevance(self) -> bool:
        """True when the metric is undefined for a query without relevant documents."""
        return _FAMILIES[self.name][1]

    @property
    def higher_is_better(self) -> bool:
        """Direction of improvement, from the metric's definition."""
        return _HIGHER_IS_BETTER[self.name]

    @property
    def is_graded(self) -> bool:
        """True for the gain-based family (nDCG, DCG, IDCG); False for binary metrics."""
        return self.name in ("ndcg", "dcg", "idcg")

    @property
    def description(self) -> str:
        """One line saying what the metric measures."""
        return _FAMILIES[self.name][2]


def valid_metric_names() -> list[str]:
    """Human-readable list of the accepted metric forms."""
    forms = []
    for name, (cutoff, _, _) in _FAMILIES.items():
        if cutoff == "required":
            forms.append(f"{name}@k")
        elif cutoff == "optional":
            forms.extend([name, f"{name}@k"])
        else:
            forms.append(name)
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
    lowered = text.strip().lower()
    trec = _TREC_CUTOFF_RE.match(lowered)
    if trec:
        family_text, cutoff_text = trec.group(1), trec.group(2)
    else:
        family_text, at, cutoff_text = lowered.partition("@")
        cutoff_text = cutoff_text if at else None
    family = _ALIASES.get(family_text, family_text)
    if family not in _FAMILIES:
        raise MetricError(_unknown(raw))
    mode = _FAMILIES[family][0]
    k: int | None = None
    if cutoff_text is not None:
        if mode == "none":
            raise MetricError(f"metric {raw!r}: {family} takes no cutoff; write {family!r}")
        try:
            k = int(cutoff_text)
        except ValueError:
            raise MetricError(f"metric {raw!r}: cutoff {cutoff_text!r} is not an integer; write e.g. {family}@10") from None
        if k <= 0:
            raise MetricError(f"metric {raw!r}: cutoff must be a positive integer, got {k}")
    elif mode == "required":
        raise MetricError(f"metric {raw!r}: {family} needs a cutoff; write e.g. {family}@10")
    return Metric(family, k)


def parse_metrics(texts: Iterable[str | Metric]) -> tuple[Metric, ...]:
    """Parse several names, keeping their order and dropping exact repeats."""
    seen: dict[Metric, None] = {}
    for text in texts:
        seen.setdefault(parse_metric(text), None)
    if not seen:
        raise MetricError(f"no metrics given; valid: {', '.join(valid_metric_names())}")
    return tuple(seen)


def _unknown(raw: str) -> str:
    head = raw.strip().split("@")[0].lower()
    guesses = difflib.get_close_matches(head, list(_FAMILIES) + list(_ALIASES), n=1)
    hint = f" (did you mean {_ALIASES.get(guesses[0], guesses[0])!r}?)" if guesses else ""
    return f"unknown metric {raw!r}{hint}; valid: {', '.join(valid_metric_names())}"
