"""rag_eval: retrieval evaluation for RAG, exact to trec_eval.

Importing this package is cheap: it loads numpy, never torch, pandas or a model.
"""

from rag_eval.errors import RagEvalError
from rag_eval.evaluate import EvaluationOptions, evaluate
from rag_eval.evidence import evaluate_evidence
from rag_eval.metrics.measures import Metric, parse_metric, parse_metrics
from rag_eval.results import Results

__version__ = "0.1.0"

__all__ = [  # sorted; tests/test_public_api.py pins it
    "EvaluationOptions",
    "Metric",
    "RagEvalError",
    "Results",
    "evaluate",
    "evaluate_evidence",
    "parse_metric",
    "parse_metrics",
]
