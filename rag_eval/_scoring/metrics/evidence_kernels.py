"""Evidence kernels: an evidence metric of every query at once, from three counts of characters per query.

For the spans a query reads (its top k, or its best spans that fit a budget) and its evidence
(the union of its evidence spans), docs/semantics.md defines, in characters:

- covered: characters of the evidence inside at least one span read;
- evidence: characters of the evidence;
- context: the sum of the lengths of the spans read (a span counted as often as it is read).

Each kernel turns these into the metric's value; a query without evidence divides by 0 and its
value is NaN or inf, which the caller replaces (the ``no_relevant`` policy). Counting the characters
is interval arithmetic, done once per cutoff by rag_eval._scoring.evidence.metrics; the families'
records (rag_eval._scoring.metrics.measures) name these kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EvidenceCounts:
    """Characters per query (float64 arrays of one length): covered evidence, all evidence, context read."""

    covered: np.ndarray
    evidence: np.ndarray
    context: np.ndarray


def evidence_recall(counts: EvidenceCounts) -> np.ndarray:
    """covered / evidence."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return counts.covered / counts.evidence


def evidence_precision(counts: EvidenceCounts) -> np.ndarray:
    """covered / context; 0 where nothing was read (no context to be precise about)."""
    context = counts.context
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(context > 0, counts.covered / np.where(context > 0, context, 1.0), 0.0)


def evidence_iou(counts: EvidenceCounts) -> np.ndarray:
    """covered / (context + evidence not covered): intersection over union."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return counts.covered / (counts.context + counts.evidence - counts.covered)
