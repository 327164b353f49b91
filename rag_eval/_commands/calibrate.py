"""``rag-eval judgements calibrate HUMAN_SHEET MODEL_SHEET [--config CONFIG]``: a model's grades against people's.

Reads two judgement sheets (rag_eval._data.judging.sheet): the people's and the model's grades of the same
(query, unit) rows, e.g. one pool copied, one copy graded by ``rag-eval judge`` and the other by people.
For each model source it prints the pairs both graded, quadratic-weighted Cohen's kappa, exact agreement,
how often the model graded higher or lower, and the confusion matrix (rag_eval._compare.calibration).

With ``--config`` it also runs the config's retrievers (nothing written) and ranks them by the main
metric twice, the pairs graded as the people graded them and as the model did (in a dataset of
documents, spans and documents graded as ``judgements merge`` would merge them), with
Kendall's tau-b between the two rankings; and it warns about a retriever that ranks with the model that
gave the grades (rag_eval._compare.label_sources.same_model_warnings).

Exit codes: 0 done; 2 bad input (a sheet that cannot be read, no pair to compare, a pair whose query or
passage the config's dataset lacks).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from rag_eval._compare.calibration import (
    Calibration,
    Overlap,
    Pair,
    VariantAgreement,
    calibrate,
    overlap,
    run_variant_agreement,
    variant_agreement,
)
from rag_eval._compare.hole_flips import percent
from rag_eval._compare.label_sources import SameModel, same_model_warnings
from rag_eval._core.errors import InputFormatError, RetrieverError
from rag_eval._core.messages import shown
from rag_eval._core.plugin_output import plugin_output_to_stderr
from rag_eval._data.config.schema import LoadedConfig, load_config
from rag_eval._data.datasets import Dataset
from rag_eval._data.judging.sheet import read_sheet
from rag_eval._report.format import fmt_grade
from rag_eval._run.checks import RetrieverRunError
from rag_eval._run.execute import execute
from rag_eval._run.holes_record import evaluation_options
from rag_eval._run.outcome import RunOutcome


def main(args: argparse.Namespace, say: Callable[[str], None]) -> int:
    """Print the calibration of ``args.model``'s grades against ``args.human``'s; 0 when done."""
    human_rows, model_rows = read_sheet(args.human), read_sheet(args.model)
    found = overlap(human_rows, model_rows)
    if not found.pairs:
        raise InputFormatError(
            f"{args.human}, {args.model}: no (query, unit) is graded by a person (source human or llm+verified) in "
            f"{args.human} and by a model (source <kind>:<name>) in {args.model} ({found.human_graded} and "
            f"{found.model_graded} such rows); grade the same rows in both, e.g. copies of one rag-eval pool sheet"
        )
    run = _run(args.config) if getattr(args, "config", None) else None
    # Every line is made before the first is printed: a pair the config's dataset lacks is refused
    # with nothing half-said.
    lines = [_counts_line(args.human, args.model, found)]
    graded = _graded_by_source(model_rows)
    for source in found.sources:
        pairs = found.of(source)
        lines += calibration_lines(calibrate(pairs, source))
        if run is not None:
            lines += _ranking_lines(run, pairs, args.config, args.human, args.model)
    if run is not None:
        descriptions = {outcome.label: outcome.description for outcome in run.outcomes}
        lines += [warning_line(warning) for warning in same_model_warnings(descriptions, graded.items())]
    for line in lines:
        say(line)
    return 0


def _graded_by_source(rows: Sequence[object]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in rows:
        if getattr(row, "grade", None) is not None:
            source = str(getattr(row, "source", ""))
            counts[source] = counts.get(source, 0) + 1
    return counts


def _counts_line(human: str, model: str, found: Overlap) -> str:
    parts = [f"calibration: {len(found.pairs):,} (query, unit) pairs graded by a person in {human} "
             f"({found.human_graded:,} such rows) and by a model in {model} ({found.model_graded:,})"]
    if found.human_not_person:
        parts.append(f"{found.human_not_person:,} rows of {human} graded by a model left out")
    if found.model_not_model:
        parts.append(f"{found.model_not_model:,} rows of {model} graded by a person left out")
    return "; ".join(parts)


def calibration_lines(found: Calibration) -> list[str]:
    """The lines of one model source: kappa, agreement, leniency, then the confusion matrix."""
    kappa = "undefined (every pair has one same grade on both sides)" if found.kappa != found.kappa else (
        f"{found.kappa:.4f}")
    lines = [
        f"{found.source}: {found.n:,} pairs; weighted kappa (quadratic) {kappa}; exact agreement {found.agree:,} "
        f"({percent(found.agree / found.n)}); the model graded higher on {found.model_higher:,}, lower on "
        f"{found.model_lower:,} (mean grade {found.mean_model:.2f} against the people's {found.mean_human:.2f})",
        "  confusion (rows: the people's grade, columns: the model's):",
    ]
    labels = [fmt_grade(grade) for grade in found.categories]
    width = max(5, *(len(label) for label in labels), *(len(f"{n:,}") for row in found.matrix for n in row))
    lines.append("  " + " " * 7 + "".join(label.rjust(width + 1) for label in labels))
    for label, row in zip(labels, found.matrix):
        lines.append("  " + label.rjust(7) + "".join(f"{n:,}".rjust(width + 1) for n in row))
    return lines


def _run(config_path: str) -> RunOutcome:
    """The config's retrievers run (nothing written), as rag-eval pool runs them."""
    config: LoadedConfig = load_config(config_path)
    try:
        with plugin_output_to_stderr():  # a plug-in's prints must not mix with the lines
            run = execute(config, progress=False)
    except RetrieverRunError as error:
        raise RetrieverError(f"{config.path}: {error}", problems=error.problems) from error
    return run


def _ranking_lines(run: RunOutcome, pairs: Sequence[Pair], config: str, sheet: str, model_sheet: str) -> list[str]:
    dataset: Dataset = run.dataset
    main = run.config.model.primary_metric
    if len(run.outcomes) < 2:
        return [f"  variants: not ranked: {config} has {len(run.outcomes)} retriever; Kendall's tau needs 2 or more"]
    if dataset.has_documents:  # spans and documents graded as a merge of the sheet would grade them
        return ranking_lines(run_variant_agreement(run, pairs, main, {"human": sheet, "model": model_sheet}))
    for pair in pairs:
        if pair.query_id not in dataset.queries:
            raise InputFormatError(f"{sheet}: query {shown(pair.query_id)} is not in the dataset of {config}; "
                                   "calibrate sheets pooled from this config's dataset")
        if pair.unit not in dataset.corpus:
            raise InputFormatError(f"{sheet}: query {shown(pair.query_id)}: passage {shown(pair.unit)} is not in the "
                                   f"corpus of {config}; calibrate sheets pooled from this config's dataset")
    options = evaluation_options(run.config.model.evaluation.passage_options())
    agreement = variant_agreement(
        dataset.judgements, pairs, {o.label: o.ranking for o in run.outcomes}, main,
        gain=options.gain, aggregation=options.aggregation, no_relevant=options.no_relevant,
        relevance_threshold=options.relevance_threshold, judged_only=options.judged_only,
    )
    return ranking_lines(agreement)


def ranking_lines(agreement: VariantAgreement) -> list[str]:
    """Kendall's tau-b line, the best variant on each side, then each variant's two values."""
    tau = "undefined (one side ties every variant)" if agreement.tau != agreement.tau else f"{agreement.tau:.4f}"
    same = "the same" if agreement.best_human == agreement.best_model else "NOT the same"
    lines = [
        f"  variants ranked by {agreement.metric}: Kendall's tau-b {tau} over {len(agreement.labels)} variants; best "
        f"under the people's grades {agreement.best_human}, under the model's {agreement.best_model} ({same})",
    ]
    for label, human, model in zip(agreement.labels, agreement.human, agreement.model):
        lines.append(f"    {label}: {human:.4f} (people) {model:.4f} (model)")
    return lines


def warning_line(found: SameModel) -> str:
    """One retriever that ranks with the model behind a source of the sheet."""
    return (f"warning: retriever {found.retriever!r} ranks with {found.model}, the model behind {found.source}, which "
            f"gave {found.grades:,} of the model sheet's grades: it is judged by its own taste; judge it with another "
            "model, or with people")
