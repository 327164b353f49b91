"""rag_eval: retrieval evaluation for RAG, exact to trec_eval.

The public API is this module's ``__all__``; plug-in authors import from :mod:`rag_eval.extend`,
and a pytest suite from :mod:`rag_eval.testing`. Everything else is private (packages named
``_core``, ``_scoring``, ...: docs/architecture.md).

Importing this package is cheap: it loads numpy, never torch, pandas or a model.
"""

from rag_eval._core.errors import RagEvalError
from rag_eval._core.ranking import ranked_ids
from rag_eval._scoring.evaluate import EvaluationOptions, evaluate
from rag_eval._scoring.evidence import evaluate_evidence
from rag_eval._scoring.metrics.measures import Metric, parse_metric, parse_metrics
from rag_eval._scoring.results import Results, combined_dataframe

__version__ = "0.1.0"

__all__ = [  # sorted; tests/test_public_api.py pins it
    "EvaluationOptions",
    "Metric",
    "RagEvalError",
    "Results",
    "combined_dataframe",
    "evaluate",
    "evaluate_evidence",
    "parse_metric",
    "parse_metrics",
    "ranked_ids",
]
