"""A run's outputs: rendered from the run, named by its plan, written into the output folder as one set.

Nothing is written until every retriever has run and been evaluated; the report, the
results files and the run files then replace the previous set as a whole
(rag_eval/_core/output_folder.py), so a failed or killed run leaves the old complete set
and a finished one the new complete set.
"""

from __future__ import annotations

from pathlib import Path

from rag_eval._core.output_folder import replace_output_set
from rag_eval._core.output_manifest import MANIFEST
from rag_eval._core.trec import format_qrels, format_run
from rag_eval._report.html import render_html_report
from rag_eval._report.markdown import render_run_report
from rag_eval._report.plots import build_plots
from rag_eval._report.tables_csv import per_query_csv
from rag_eval._run.inputs import check_outputs_are_not_inputs
from rag_eval._run.outcome import RunOutcome
from rag_eval._run.plan import (
    COMPARISON,
    DOCUMENT_QRELS,
    PER_QUERY_CSV,
    REPORT,
    REPORT_HTML,
    RunPlan,
    document_run_name,
    plan_run,
    results_name,
    run_name,
)
from rag_eval._run.results_file import results_document, results_json
from rag_eval._scoring.evidence import collapse_to_documents


def write_outputs(run: RunOutcome, comparison: str | None = None) -> list[Path]:
    """Render everything first, then replace the output folder's set of files as one step; returns the paths.

    ``comparison``: the text of comparison.md (a run with a regression section). The new set is
    staged in full beside the folder and swapped in at once (rag_eval/_core/output_folder.py):
    after a failure (disk full, no permission, the output folder is a file) or a kill at any
    moment, the folder holds exactly the previous set or the new one. Files of the previous set
    that this run does not write (a retriever removed from the config) disappear; files the user
    keeps in the folder stay. A second run writing into the same folder is refused, and so is a
    set that would replace one of the run's inputs (rag_eval/_run/inputs.py) or a file rag_eval
    did not write (:func:`rag_eval._core.output_folder.check_replaceable`).
    """
    plan = plan_run(run.config, comparison=comparison is not None, documents=run.dataset.has_documents)
    files = render_outputs(run, plan, comparison)
    # `rag-eval run` checked this before retrieving; checked again for callers of the API, and for
    # links made meanwhile. The files a user put in the folder are guarded by replace_output_set.
    check_outputs_are_not_inputs(run.config, [*files, MANIFEST])
    out_dir = run.config.output_dir
    # By name: every output lies directly in out_dir (a label cannot hold a "/").
    replace_output_set(out_dir, {name: text.encode("utf-8") for name, text in files.items()}, run.config.path)
    return [out_dir / name for name in files]


def render_outputs(run: RunOutcome, plan: RunPlan, comparison: str | None = None) -> dict[str, str]:
    """``{file name: text}`` of every output of ``run``, each name taken from ``plan``."""
    files: dict[str, str] = {}
    for outcome in run.outcomes:
        files[results_name(outcome.label)] = results_json(results_document(run, outcome))
        files[run_name(outcome.label)] = format_run(outcome.ranking, tag=outcome.label)
        if outcome.spans is not None:  # the MaxP document run: trec_eval on it with documents.qrels gives doc_ metrics
            files[document_run_name(outcome.label)] = format_run(collapse_to_documents(outcome.spans), tag=outcome.label)
    if plan.documents:
        files[DOCUMENT_QRELS] = format_qrels(run.dataset.judgements)
    plots = None
    if plan.plots:
        plots = build_plots(run, run.config.model.primary_metric, run.config.baseline_label)
        files.update(plots.files)
    files[PER_QUERY_CSV] = per_query_csv(run)
    files[REPORT] = render_run_report(run, plots)
    # After report.md, whose decision section the page shows as it is (the tests behind it run once).
    files[REPORT_HTML] = render_html_report(run, plots, files[REPORT])
    if comparison is not None:
        files[COMPARISON] = comparison
    unplanned = sorted(set(files) - set(plan.outputs))
    if unplanned:  # a bug: the output folder was checked for the planned names only
        raise RuntimeError(f"the run's outputs {unplanned} are not in its plan {plan.outputs}")
    return files
