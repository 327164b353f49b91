"""``rag-eval compare``: the regression verdict of a candidate results file against a baseline.

Either side may be a run's output folder with the variant to read from it. The verdict is
said line by line (rag_eval/_commands/verdict_text.py); the full report (``--report``) and the
CI job summary (``--summary``) are written beside it, and say why when the two results
cannot be compared. The report shows passage texts from the results files (the short texts
of the passages they ranked on top), so `compare` needs no corpus.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from rag_eval._commands.output_paths import append_summary, check_output, summary_flag, write_report
from rag_eval._commands.verdict_text import incomparable_markdown, verdict_lines
from rag_eval._compare import regression
from rag_eval._compare.hole_flips import ON_HOLES
from rag_eval._compare.regression import Verdict, default_gates, parse_gates
from rag_eval._core.errors import ComparisonError, ConfigError
from rag_eval._core.messages import did_you_mean
from rag_eval._core.output_manifest import read_manifest
from rag_eval._data.config.regression import check_resampling
from rag_eval._report.comparison import render_comparison, render_verdict_summary
from rag_eval._run.plan import results_name
from rag_eval._run.results_file import load_results_file

# The command line's names of the resampling options, checked as a config's regression section is.
RESAMPLING_FLAGS = {"confidence": "--confidence", "resamples": "--resamples", "seed": "--seed"}
# Variants named when a folder's choice is missing or wrong; the rest are counted.
VARIANTS_LISTED = 10


def compare_results(
    baseline: str,
    candidate: str,
    *,
    say: Callable[[str], None],
    variant: str | None = None,
    baseline_variant: str | None = None,
    gates: Sequence[str] = (),
    report: str | None = None,
    summary: str | None = None,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
    on_holes: str = "warn",
) -> Verdict:
    """Compare ``candidate`` with ``baseline`` on ``gates`` (``ndcg@10:max_drop=0.01``; default: ndcg@10).

    ``on_holes``: ``fail`` fails a gate that could flip were the candidate's unjudged results judged
    (rag_eval._compare.hole_flips); ``warn`` says so and keeps the verdict.

    The verdict's lines go to ``say``, then the report and the summary are written (and named).
    Every option and output path is checked before anything is read or written: an output must never
    replace an input. Incomparable results raise ComparisonError once the report and the summary say why.
    """
    check_resampling(confidence, resamples, seed, names=RESAMPLING_FLAGS)
    if on_holes not in ON_HOLES:
        raise ConfigError(f"--on-holes: expected one of {', '.join(ON_HOLES)}, got {on_holes!r}")
    baseline = results_path(baseline, baseline_variant, "baseline", "--baseline-variant")
    candidate = results_path(candidate, variant, "candidate", "--variant")
    inputs = [("baseline", baseline), ("candidate", candidate)]
    if report:
        check_output(report, "--report", inputs)
    if summary:
        check_output(summary, summary_flag(summary), inputs, append=True)
    base, cand = load_results_file(baseline), load_results_file(candidate)
    gated = parse_gates(gates) or default_gates(base)
    try:
        verdict = regression.compare(
            base, cand, gated, confidence=confidence, n_resamples=resamples, seed=seed, on_holes=on_holes
        )
    except ComparisonError as error:
        # The report and the CI job summary say why there is no verdict, instead of staying empty.
        if report:
            write_report(report, incomparable_markdown(base, cand, error, heading=1))
        if summary:
            append_summary(summary, incomparable_markdown(base, cand, error, heading=3))
        raise
    say_verdict(verdict, say, report=report, summary=summary)
    return verdict


def say_verdict(verdict: Verdict, say: Callable[[str], None], *, report: str | None, summary: str | None) -> None:
    """The verdict's lines, then the report and the job summary written, each named once it is."""
    for line in verdict_lines(verdict):
        say(line)
    if report:
        passages = {**verdict.baseline.passages, **verdict.candidate.passages}
        write_report(report, render_comparison(verdict, passages))
        say(f"report: {report}")
    if summary:
        append_summary(summary, render_verdict_summary(verdict))
        say(f"summary: {summary}")


def results_path(path: str, variant: str | None, role: str, flag: str) -> str:
    """The results file of ``variant`` in a run's output folder, or ``path`` itself when it is a file.

    A folder holds one ``<label>.json`` per retriever (every variant of a sweep); its manifest
    lists them, and the message names them when the choice is missing or wrong. A folder of one
    retriever's results needs no ``variant``.
    """
    folder = Path(path)
    if not folder.is_dir():
        if variant is not None:
            raise ConfigError(
                f"{flag} {variant}: the {role} {path} is a results file, not a run's output folder; give the folder "
                "that holds <label>.json for each variant, or leave out the flag"
            )
        return path
    manifest = read_manifest(folder)
    labels = sorted(name.removesuffix(".json") for name in (manifest.files if manifest else ()) if name.endswith(".json"))
    if not labels:
        raise ConfigError(
            f"{role} {path}: is a folder, expected a results file (or the output folder of `rag-eval run`, whose "
            f".rag_eval.json lists its <label>.json files, with {flag})"
        )
    listed = ", ".join(labels[:VARIANTS_LISTED]) + (
        f", ... ({len(labels)} in all)" if len(labels) > VARIANTS_LISTED else ""
    )
    if variant is None:
        if len(labels) == 1:  # one retriever's results: no choice to make
            return str(folder / results_name(labels[0]))
        raise ConfigError(f"{role} {path}: a run's output folder holds several results; choose one with {flag} "
                          f"(it has {listed})")
    if variant not in labels:
        raise ConfigError(f"{flag} {variant}: no such variant in {path}; {did_you_mean(variant, labels)}it has {listed}")
    return str(folder / results_name(variant))
