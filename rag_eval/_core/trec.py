"""TREC run text (``qid Q0 doc_id rank score tag``) and qrels text (``qid 0 doc_id grade``).

Reading TREC (and BEIR) files is the evaluation engine's job (rag_eval._scoring.engine):
the reader turns a file into columns for the join. Formatting a run needs none of
that, so it lives here, on its own, for the runner's ``.run`` files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rag_eval._core.errors import InputFormatError
from rag_eval._core.ids import any_unwritable, shown_id, stored_id_problem
from rag_eval._core.ranking import ranked


def format_run(run: Mapping[str, Mapping[str, float]], tag: str = "rag_eval") -> str:
    """``{qid: {doc_id: score}}`` as TREC run text, each query ranked by rag_eval._core.ranking.

    An id that a TREC file cannot hold as one field (white space, a control character) raises
    InputFormatError naming it: written, it would be read back as another id (rag_eval._core.ids).
    """
    _check_fields(run, (doc for docs in run.values() for doc in docs))
    lines = []
    for qid in sorted(run):
        for rank, (doc, score) in enumerate(ranked(run[qid]), start=1):
            lines.append(f"{qid}\tQ0\t{doc}\t{rank}\t{score!r}\t{tag}\n")
    return "".join(lines)


def format_qrels(judgements: Mapping[str, Mapping[str, float]]) -> str:
    """``{qid: {doc_id: grade}}`` as TREC qrels text, sorted; integral grades written as integers (trec_eval's form).

    Ids are checked as :func:`format_run` checks them.
    """
    _check_fields(judgements, (doc for docs in judgements.values() for doc in docs))
    lines = []
    for qid in sorted(judgements):
        for doc in sorted(judgements[qid]):
            grade = float(judgements[qid][doc])
            shown = str(int(grade)) if grade.is_integer() else repr(grade)
            lines.append(f"{qid}\t0\t{doc}\t{shown}\n")
    return "".join(lines)


def _check_fields(queries: Iterable[str], docs: Iterable[str]) -> None:
    """Every id can be written as one TREC field (one scan; the Python search only when one cannot)."""
    queries, docs = list(queries), list(docs)
    if not any_unwritable(queries) and not any_unwritable(docs):
        return
    for kind, ids in (("query id", queries), ("doc id", docs)):
        for value in ids:
            problem = stored_id_problem(value)
            if problem is not None:
                raise InputFormatError(
                    f"{kind} {shown_id(value)} {problem}: a TREC file separates fields by white space and cannot hold it"
                )
