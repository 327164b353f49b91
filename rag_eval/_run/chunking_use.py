"""Chunkers and document metrics only where the dataset has what they need, said before any retrieval."""

from __future__ import annotations

from rag_eval._core.errors import ConfigError
from rag_eval._core.messages import first_and_more
from rag_eval._data.config.schema import LoadedConfig
from rag_eval._data.datasets import Dataset
from rag_eval._scoring.metrics.measures import parse_metric


def check_chunking_use(config: LoadedConfig, dataset: Dataset) -> None:
    """Refuse chunkers and document metrics where the dataset has no documents, naming the fix.

    On a dataset of documents without any evidence span (passages read as documents), chunk-level
    and evidence metrics are refused: they would score 0 or nothing for every query. With
    ``no_relevant: error``, evidence metrics are refused when a judged query has no evidence.
    Every problem is kept (``rag-eval validate`` lists them all).
    """
    problems = _evidence_problems(config, dataset) if dataset.has_documents else _passage_problems(config, dataset)
    if problems:
        raise ConfigError(first_and_more(problems), problems=problems)


# A passage collection (BEIR, TREC, a YAML corpus) becomes documents with this key: chunkers and doc_ metrics
# then work (evidence metrics do not: passages carry no evidence spans).
_AS_DOCUMENTS = "set `as_documents: true` under `dataset:` (each passage is read as a document)"


def _passage_problems(config: LoadedConfig, dataset: Dataset) -> list[str]:
    problems = [
        f"{config.path}: retriever {spec.label!r} names chunker {spec.chunker!r}, but the dataset {dataset.name!r} has "
        f"passages, not documents; chunkers cut documents: {_AS_DOCUMENTS}, give a dataset with documents, or "
        "remove `chunker`"
        for spec in config.model.retrievers
        if spec.chunker
    ]
    for name in config.model.metrics:
        metric = parse_metric(name)
        if metric.is_evidence:
            problems.append(
                f"{config.path}: metric {name} needs a dataset with documents (and evidence spans), but the dataset "
                f"{dataset.name!r} has passages; use passage metrics such as ndcg@10"
            )
        elif metric.is_document_level:
            problems.append(
                f"{config.path}: metric {name} needs a dataset with documents, but the dataset {dataset.name!r} has "
                f"passages; use passage metrics such as {metric.name}@10, or {_AS_DOCUMENTS}"
            )
    return problems


def _evidence_problems(config: LoadedConfig, dataset: Dataset) -> list[str]:
    problems = []
    with_evidence = {qid for qid, spans in dataset.evidence.items() if spans}
    for name in config.model.metrics:
        metric = parse_metric(name)
        if metric.is_document_level:
            continue
        level = "evidence" if metric.is_evidence else "chunk-level"
        if not with_evidence:
            problems.append(
                f"{config.path}: metric {name}: {level} metrics need evidence spans, and the dataset "
                f"{dataset.name!r} has none (its judgements are on whole documents); use doc_ metrics such as "
                f"doc_{metric.name if not metric.is_evidence else 'ndcg'}@10"
            )
        elif metric.is_evidence and config.model.evaluation.no_relevant == "error":
            missing = [qid for qid in dataset.judged_query_ids if qid not in with_evidence]
            if missing:
                problems.append(
                    f"{config.path}: metric {name} with no_relevant: error: {len(missing)} judged quer"
                    f"{'y has' if len(missing) == 1 else 'ies have'} no evidence span ({', '.join(missing[:3])}"
                    f"{', ...' if len(missing) > 3 else ''}); give each evidence, or set no_relevant to skip or zero"
                )
    return problems
