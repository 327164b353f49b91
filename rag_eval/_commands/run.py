"""``rag-eval run``: plan, execute, write; with a regression section, the verdict against the baseline.

Everything that can be refused is refused before any retrieval: the config, the job summary's
path, the baseline (loaded once), outputs that would replace one of the run's inputs, and the
output folder (checked, then locked for the whole run, so a second run into it fails at once).
Incomparable results leave no output behind, but the CI job summary says why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rag_eval._commands.compare import say_verdict
from rag_eval._commands.output_paths import append_summary, check_output, summary_flag
from rag_eval._commands.outputs import write_outputs
from rag_eval._commands.verdict_text import incomparable_markdown
from rag_eval._compare.regression import Verdict, candidate_label, verdict_for_run
from rag_eval._core.errors import ComparisonError, RetrieverError
from rag_eval._core.output_folder import check_replaceable, hold_output_folder
from rag_eval._data.config.schema import LoadedConfig, load_config
from rag_eval._report.comparison import render_comparison
from rag_eval._report.decision import nothing_read
from rag_eval._report.format import fmt, mean_notes
from rag_eval._run.checks import RetrieverRunError
from rag_eval._run.execute import execute
from rag_eval._run.inputs import check_outputs_are_not_inputs
from rag_eval._run.outcome import RunOutcome
from rag_eval._run.plan import COMPARISON, REPORT, plan_run
from rag_eval._run.results_file import ResultsFile, load_results_file


@dataclass(frozen=True)
class RunDone:
    """A finished run: what it produced, and its verdict when the config has a regression section."""

    run: RunOutcome
    verdict: Verdict | None


def run_config(
    config_path: str,
    *,
    say: Callable[[str], None],
    warn: Callable[[str], None],
    output: str | None = None,
    progress: bool | None = None,
    summary: str | None = None,
) -> RunDone:
    """Run the config at ``config_path`` and write its outputs into its output folder (``output``: instead).

    ``warn`` hears what the retrievers' outcomes warn about as soon as they have run (the report repeats it);
    ``say`` hears each retriever's main metric, where the report and the comparison were written, and the
    verdict's lines. ``summary``: the CI job summary the verdict is appended to.
    """
    # --output is validated with the rest of the config, in place of its output:, not patched in.
    config = load_config(config_path, output=output or None)
    baseline = _baseline(config, config_path, summary)
    plan = plan_run(config)
    # Refused before any retrieval, and before anything is created: outputs that would replace one of
    # the run's inputs (its config, dataset, a retriever's file, the baseline).
    check_outputs_are_not_inputs(config, plan.outputs)
    # The output folder is checked and locked before any retrieval: a refused folder, a user's file in the
    # way, or a second run into it fails at once, not after the retrievers have worked.
    with hold_output_folder(config.output_dir, config.path):
        check_replaceable(config.output_dir, plan.outputs)
        try:
            run = execute(config, progress=progress)
        except RetrieverRunError as error:  # a retriever failed or answered wrong: say which config holds it
            raise RetrieverError(f"{config.path}: {error}", problems=error.problems) from error
        for outcome in run.outcomes:  # e.g. chunks the encoder cut
            for warning in outcome.warnings:
                warn(warning)
        verdict = None if baseline is None else _verdict(run, baseline, summary)
        comparison = None if verdict is None else render_comparison(verdict, _shown_passages(run, verdict))
        write_outputs(run, comparison)
    for line in headline_lines(run):
        say(line)
    say(f"report: {config.output_dir / REPORT}")
    if verdict is not None:
        say(f"comparison: {config.output_dir / COMPARISON}")
        say_verdict(verdict, say, report=None, summary=summary)
    return RunDone(run, verdict)


def _baseline(config: LoadedConfig, config_path: str, summary: str | None) -> ResultsFile | None:
    """The regression baseline, loaded once before any retrieval to fail early; None without a regression section."""
    regression = config.model.regression
    if regression is None:
        return None
    path = config.resolve(regression.baseline)
    if summary:
        check_output(summary, summary_flag(summary), [("config", config_path), ("baseline", path)], append=True)
    baseline = load_results_file(path)
    candidate_label(config, baseline.label)  # a config naming no candidate is refused before any retrieval
    return baseline


def _verdict(run: RunOutcome, baseline: ResultsFile, summary: str | None) -> Verdict:
    """Compared before anything is written: incomparable results leave no output, but the job summary says why."""
    try:
        return verdict_for_run(run, baseline)
    except ComparisonError as error:
        if summary:
            append_summary(summary, incomparable_markdown(baseline, None, error, heading=3))
        raise


def _shown_passages(run: RunOutcome, verdict: Verdict) -> Mapping[str, Any]:
    """The passage texts comparison.md shows: a document dataset's chunk texts come from the results files
    (its corpus holds whole documents)."""
    if run.dataset.has_documents:
        return {**verdict.baseline.passages, **verdict.candidate.passages}
    return run.dataset.corpus


def headline_lines(run: RunOutcome) -> list[str]:
    """``label<TAB>metric<TAB>value`` per retriever, then why the mean is what it is, when that is not obvious."""
    main_metric = run.config.model.primary_metric
    # A budget metric reads nothing of a retriever whose units are all longer than the budget: 0 by the budget.
    unread = nothing_read(run, main_metric)
    lines = []
    for outcome in run.outcomes:
        if main_metric not in outcome.results.aggregate:  # chunk-level, for a retriever returning its own spans
            lines.append(f"{outcome.label}\t{main_metric}\tn/a\t(not computed: the retriever returns its own spans)")
            continue
        value = outcome.results.aggregate[main_metric]
        notes = mean_notes(outcome.results, main_metric, run.dataset.judgements, run.dataset.evidence)
        if outcome.label in unread:
            notes.insert(0, "no unit it retrieved fits the budget on any query: 0 by the budget, not by the ranking")
        line = f"{outcome.label}\t{main_metric}\t{fmt(value)}"  # n/a where no query has a value, as in the report
        lines.append(line + (f"\t({'; '.join(notes)})" if notes else ""))
    return lines
