"""Whether two results files measure the same thing, so that their difference means something.

The same dataset fingerprint, the same metric semantics (gain, aggregation, no_relevant,
relevance threshold, judged-only, cutoffs, and for a gated metric the same effective depth: min(k, top_k)),
the same chunking for chunk-level metrics and the same judged queries. Otherwise the delta
would mislead, and :class:`ComparisonError` says what differs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rag_eval._core.errors import ComparisonError
from rag_eval._run.documents import chunking_text
from rag_eval._run.results_file import ResultsFile
from rag_eval._scoring.metrics.measures import parse_metric

if TYPE_CHECKING:
    from rag_eval._scoring.results import Results

SEMANTIC_OPTIONS = ("gain", "aggregation", "no_relevant", "relevance_threshold", "judged_only")
# An option a results file may leave out, and what its absence means (judged_only is written only when true).
_ABSENT_MEANS = {"judged_only": False}
# Options of document datasets that change only some metrics: compared only when a gated metric reads them.
# min_evidence_fraction makes chunk grades (chunk-level metrics); budget_tokens counts token budgets.
METRIC_OPTIONS = {
    "min_evidence_fraction": lambda m: not (m.is_document_level or m.is_evidence),
    "budget_tokens": lambda m: m.budget_unit == "tokens",
}


def check_comparable(baseline: ResultsFile, candidate: ResultsFile, metrics: Sequence[str]) -> None:
    """Raise ComparisonError naming what differs, if anything does."""
    b, c = baseline, candidate
    if b.fingerprint != c.fingerprint:
        b_name, c_name = b.dataset_name, c.dataset_name
        raise ComparisonError(
            f"incomparable results: different datasets (baseline {b.named}: {b_name} fingerprint {b.fingerprint}; "
            f"candidate {c.named}: {c_name} fingerprint {c.fingerprint}); rerun the baseline on the same dataset"
        )
    for option in SEMANTIC_OPTIONS:
        absent = _ABSENT_MEANS.get(option)
        bv, cv = b.results.options.get(option, absent), c.results.options.get(option, absent)
        if bv != cv:
            raise ComparisonError(
                f"incomparable results: different metric semantics: {option} is {bv!r} in the baseline {b.named} "
                f"and {cv!r} in the candidate {c.named}"
            )
    for option, reads in METRIC_OPTIONS.items():
        bv, cv = b.results.options.get(option), c.results.options.get(option)
        gated = [m for m in metrics if reads(parse_metric(m))]
        if bv != cv and gated:
            raise ComparisonError(
                f"incomparable results: different metric semantics: {option} is {bv!r} in the baseline {b.named} "
                f"and {cv!r} in the candidate {c.named}, and {gated[0]} depends on it"
            )
    for metric in metrics:
        for side in (b, c):
            if metric not in side.results.values:
                have = ", ".join(side.results.metric_names)
                raise ComparisonError(
                    f"incomparable results: {side.named} has no {metric} (it has {have}); "
                    "gate only metrics both runs computed, with the same cutoffs"
                )
    _check_same_chunking(b, c, metrics)
    _check_external_mapping(b, c)
    b_depth, c_depth = b.top_k, c.top_k
    if b_depth is not None and c_depth is not None and b_depth != c_depth:
        # A metric that looks deeper than one of the runs retrieved measures different things on each side.
        for metric in metrics:
            parsed = parse_metric(metric)
            k = parsed.k
            if (b_depth if k is None else min(k, b_depth)) != (c_depth if k is None else min(k, c_depth)):
                reach = min(b_depth, c_depth)
                fix = (
                    f"gate a cutoff both runs reach (e.g. {parsed.name}@{reach})"
                    if parsed.family.cutoff != "none"
                    else "rerun both with the same top_k"
                )
                raise ComparisonError(
                    f"incomparable results: different metric semantics: {metric} looks at "
                    f"{f'the top {k}' if k else 'the whole ranking'} but the baseline {b.named} retrieved "
                    f"top_k={b_depth} and the candidate {c.named} top_k={c_depth}; {fix}"
                )
    check_same_queries(b.results, c.results)


#: Share of hits left unmapped by which the two sides may differ: beyond it a delta measures the mapping.
UNMAPPED_SHARE_TOLERANCE = 0.01


def _check_external_mapping(baseline: ResultsFile, candidate: ResultsFile) -> None:
    """Refuse results of an external index that did not measure the judged dataset like for like.

    A stale index (hits whose offsets no longer hold their text) was searched over other documents
    than the ones judged; and when one side left a larger share of its hits unmapped than the other
    (beyond :data:`UNMAPPED_SHARE_TOLERANCE`), the difference is the mapping's, not the retriever's.
    """
    shares = {}
    for side, results in (("baseline", baseline), ("candidate", candidate)):
        mapping = results.document.retriever.description.get("mapping")
        if not isinstance(mapping, Mapping):
            shares[side] = 0.0
            continue
        stale, hits, unmapped = (mapping.get(key) for key in ("stale", "hits", "unmapped"))
        if isinstance(stale, int) and stale > 0:
            raise ComparisonError(
                f"incomparable results: the {side} {results.named} searched a stale index ({stale} hits name offsets "
                "whose text its document no longer holds); re-index the changed documents and rerun it"
            )
        shares[side] = unmapped / hits if isinstance(hits, int) and hits and isinstance(unmapped, int) else 0.0
    if abs(shares["baseline"] - shares["candidate"]) > UNMAPPED_SHARE_TOLERANCE:
        raise ComparisonError(
            f"incomparable results: {shares['baseline']:.1%} of the baseline's hits ({baseline.named}) and "
            f"{shares['candidate']:.1%} of the candidate's ({candidate.named}) map to no passage of the dataset, so the "
            "difference would measure the mapping; fix the mapping (the report's external section lists the hits)"
        )


def _check_same_chunking(baseline: ResultsFile, candidate: ResultsFile, metrics: Sequence[str]) -> None:
    """Refuse chunk-level metrics across two chunkings: each builds its ideal ranking from its own chunks.

    Document (``doc_``) and evidence metrics are judged on the documents and the evidence, which do
    not change with the chunking: those compare chunkings like for like (docs/semantics.md).
    """
    b, c = baseline.chunking, candidate.chunking
    if b is None and c is None:
        return
    if b is not None and c is not None and b.get("fingerprint") is not None and b.get("fingerprint") == c.get("fingerprint"):
        return
    for metric in metrics:
        parsed = parse_metric(metric)
        if parsed.is_document_level or parsed.is_evidence:
            continue
        raise ComparisonError(
            f"incomparable results: chunk-level {metric} compares different chunkings (baseline {baseline.named}: "
            f"{_chunking_title(b)}; candidate {candidate.named}: {_chunking_title(c)}), and each builds its ideal "
            f"ranking from its own chunks; gate doc_{metric} or evidence metrics (evidence_recall@k), which judge "
            "every chunking by the same documents and evidence"
        )


def _chunking_title(record: Mapping[str, Any] | None) -> str:
    fingerprint = (record or {}).get("fingerprint")
    return chunking_text(record) + (f", fingerprint {fingerprint}" if fingerprint else "")


def check_same_queries(baseline: Results, candidate: Results) -> None:
    """Refuse query sets that differ, or a query listed twice (pairing by id would be ambiguous)."""
    for side, results in (("baseline", baseline), ("candidate", candidate)):
        if len(set(results.query_ids)) != len(results.query_ids):
            twice = sorted(q for q, count in Counter(results.query_ids).items() if count > 1)
            raise ComparisonError(f"incomparable results: the {side} lists query {twice[0]!r} more than once")
    b_ids, c_ids = set(baseline.query_ids), set(candidate.query_ids)
    if b_ids != c_ids:
        only_b, only_c = sorted(b_ids - c_ids), sorted(c_ids - b_ids)
        raise ComparisonError(
            f"incomparable results: different query sets ({len(only_b)} only in the baseline, e.g. {only_b[:3]}; "
            f"{len(only_c)} only in the candidate, e.g. {only_c[:3]})"
        )
