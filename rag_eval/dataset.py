"""The dataset loaders under their first name: ``from rag_eval.dataset import load_dataset`` keeps working.

Everything lives in :mod:`rag_eval.datasets` (one module per job); this module
re-exports its public names.
"""

from __future__ import annotations

from rag_eval.datasets import (
    CRANFIELD_GRADE_MAP,
    FORMATS,
    Dataset,
    Problems,
    Query,
    QuerySetFile,
    load_beir,
    load_corpus_file,
    load_cranfield,
    load_dataset,
    load_queries_file,
    load_trec,
    load_yaml_query_set,
)

__all__ = [
    "CRANFIELD_GRADE_MAP",
    "FORMATS",
    "Dataset",
    "Problems",
    "Query",
    "QuerySetFile",
    "load_beir",
    "load_corpus_file",
    "load_cranfield",
    "load_dataset",
    "load_queries_file",
    "load_trec",
    "load_yaml_query_set",
]
