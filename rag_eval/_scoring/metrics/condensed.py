"""The condensed list (trec_eval ``-J``, ir_measures' judged-only): unjudged documents removed before scoring.

trec_eval -J (form_res_rels.c, ``judged_docs_only_flag``) keeps, of each query's ranking, the
documents whose qrels grade is >= 0, in their order (ties already broken by doc id), and numbers
them 1, 2, ... again: a document nobody judged and one judged with a negative grade (trec_eval's
"in the pool but not judged") both leave the list. The judgements themselves are unchanged, so R,
the ideal DCG and bpref's N stay what they were. Every kernel then reads the condensed ranks.
"""

from __future__ import annotations

from rag_eval._scoring.metrics.kernels import RankedJudgedRun, positions_within_groups


def condense(data: RankedJudgedRun) -> RankedJudgedRun:
    """``data`` with every row whose grade is not >= 0 (NaN: unjudged; negative) removed and ranks renumbered.

    Rows are grouped by query and in rank order (the kernels' layout), so a kept row's new 0-based rank
    is its place among its query's kept rows.
    """
    keep = data.row_grade >= 0  # NaN compares False
    query = data.row_query[keep]
    return RankedJudgedRun(
        n_queries=data.n_queries,
        row_query=query,
        row_pos=positions_within_groups(query, data.n_queries),
        row_grade=data.row_grade[keep],
        judgement_query=data.judgement_query,
        judgement_grade=data.judgement_grade,
    )

