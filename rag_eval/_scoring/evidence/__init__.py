"""Documents, chunks and evidence: retrieved spans scored against judgements that survive re-chunking.

- :func:`evaluate_evidence`: evidence metrics (by cutoff and by context budget), document
  metrics by MaxP collapse (``doc_``) and chunk-level metrics, as :class:`~rag_eval._scoring.results.Results`.
- :func:`collapse_to_documents`: a span ranking as a document run (MaxP), for runners and trec_eval.
- :func:`covered_evidence`: per query, the evidence the retrieved spans cover and miss (reports).
- :func:`span_grades`: each retrieved span's chunk grade (results files).

Inside: ``tables`` (inputs as checked columns), ``ranks`` (the ranking rule, vectorised, with
``chunk_order``: chunk ids' byte order as integers, and ``blocks``: each query's rows sorted among themselves),
``intervals`` (union / measure / intersection on one line), ``metrics`` (evidence metrics),
``maxp`` (document and chunk grades, the kernels' input), ``inputs`` (all inputs read once)
and ``api``. Definitions: docs/semantics.md, "Documents, chunks and evidence".
"""

from rag_eval._scoring.evidence.api import (
    EvidenceCoverage,
    collapse_to_documents,
    covered_evidence,
    evaluate_evidence,
    span_grades,
)

__all__ = ["EvidenceCoverage", "collapse_to_documents", "covered_evidence", "evaluate_evidence", "span_grades"]
