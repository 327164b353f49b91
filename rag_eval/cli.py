"""The ``rag-eval`` command: a thin shell over the library.

Exit codes (the same for every command, so that CI can tell them apart):

- 0: done; every regression gate passed
- 1: a regression gate failed (only that)
- 2: bad input: a :class:`RagEvalError` (file, config, option, incomparable results,
  a failing plug-in, an output that cannot be written), printed as one line on stderr
- 3: an internal error, i.e. a bug in rag-eval: one line on stderr saying so and where
  the traceback was written (the traceback itself with ``--debug``)
- 130: interrupted (Ctrl-C)

Heavy modules are imported inside the subcommands so that ``rag-eval --help`` stays
fast and never imports torch.
"""

from __future__ import annotations

import argparse
import difflib
import os
import statistics
import sys
import tempfile
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from rag_eval import __version__
from rag_eval._commands import validate as validate_command
from rag_eval._commands.reference import add_schema_command
from rag_eval._commands.runner import execute, write_outputs
from rag_eval._compare import regression
from rag_eval._compare.decision import ALPHA, POWER, minimum_detectable_difference, queries_needed
from rag_eval._compare.regression import make_gate, parse_gates, verdict_for_run
from rag_eval._core import allocator
from rag_eval._core.atomic import atomic_write_text
from rag_eval._core.errors import ComparisonError, ConfigError, RagEvalError, RetrieverError
from rag_eval._core.files import describe_kind
from rag_eval._core.output_folder import check_replaceable, hold_output_folder, read_manifest
from rag_eval._data.config.schema import load_config
from rag_eval._report.comparison import render_comparison, render_verdict_summary
from rag_eval._report.format import exclusion_notes, format_results, mean_notes
from rag_eval._report.incomparable import render_incomparable
from rag_eval._report.markdown import approximation_note
from rag_eval._run.inputs import check_outputs_are_not_inputs, planned_outputs
from rag_eval._run.results_file import load_results_file
from rag_eval._scoring.engine import BEIR_QRELS, prepare, read_judgements, read_run
from rag_eval._scoring.evaluate import EvaluationOptions, passage_metrics, score
from rag_eval._scoring.metrics.measures import parse_metric, parse_metrics
from rag_eval._scoring.stats import MAX_RESAMPLES, MIN_RESAMPLES

EXIT_PASSED = 0
EXIT_REGRESSION = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL_ERROR = 3
EXIT_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code (see the module docstring)."""
    parser = build_parser()
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as stop:  # --help (0), or a usage error already printed as one line (2)
            sys.stdout.flush()
            return stop.code if isinstance(stop.code, int) else EXIT_BAD_INPUT
        handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
        if handler is None:
            parser.print_help()
            sys.stdout.flush()
            return EXIT_BAD_INPUT
    except OSError as error:  # the help into a full disk or a closed pipe
        _error_line(f"cannot write to standard output ({error.strerror or error})")
        return EXIT_BAD_INPUT
    return _run(handler, args)


def _run(handler: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    stdout = sys.stdout
    sys.stdout = _GuardedStdout(stdout)
    try:
        code = handler(args)
        sys.stdout.flush()  # inside the try: a full disk or closed pipe on stdout is reported here
        return code
    except _StdoutError as error:
        _error_line(f"cannot write to standard output ({error})")
        return EXIT_BAD_INPUT
    except RagEvalError as error:
        _error_line(str(error))
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("rag-eval: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except SystemExit as stop:  # user code called sys.exit() where rag-eval did not guard it
        _error_line(
            f"sys.exit({stop.code!r}) was called during `rag-eval {args.command}` (by a plug-in?); "
            "plug-ins must raise an exception instead"
        )
        return EXIT_BAD_INPUT
    except Exception as error:  # noqa: BLE001 (anything else is a bug: one line, exit 3, traceback logged)
        return _internal_error(error, args)
    finally:
        sys.stdout = stdout


class _StdoutError(Exception):
    """Standard output cannot be written (a full disk, a closed pipe): bad input, not a bug."""


class _GuardedStdout:
    """``sys.stdout`` while a command runs: a failed write or flush becomes :class:`_StdoutError`,
    so that it is told apart from an OSError of rag-eval's own (a bug)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as error:
            raise _StdoutError(error.strerror or str(error)) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as error:
            raise _StdoutError(error.strerror or str(error)) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _error_line(message: str) -> None:
    # One line, whatever the message holds: a newline in a label must not split it.
    print(f"rag-eval: error: {' '.join(message.split())}", file=sys.stderr)


def _internal_error(error: Exception, args: argparse.Namespace) -> int:
    """A bug: one line on stderr; the traceback on stderr with --debug, else in a log file."""

    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    summary = f"{type(error).__name__}: {' '.join(str(error).split())}"[:300]
    if getattr(args, "debug", False):
        sys.stderr.write(text)
        where = "traceback above"
    else:
        try:
            fd, log = tempfile.mkstemp(prefix="rag-eval-crash-", suffix=".log")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(f"rag-eval {_version()}: internal error\ncommand: {' '.join(sys.argv)}\n\n{text}")
            where = f"traceback written to {log}; rerun with --debug to print it"
        except OSError:
            where = "rerun with --debug to print the traceback"
    print(
        f"rag-eval: internal error (a bug in rag-eval, please report it): {summary} ({where})",
        file=sys.stderr,
    )
    return EXIT_INTERNAL_ERROR


def _version() -> str:

    return __version__


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors as one line (the usage is one `--help` away)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {' '.join(message.split())} (see `{self.prog} --help`)\n")

    def _print_message(self, message: str, file: Any = None) -> None:
        # argparse drops an OSError here: the help into a full disk would then exit 0 having printed nothing.
        if message:
            (file or sys.stderr).write(message)


_DEBUG_HELP = "on an internal error, print the full traceback (default: write it to a log file)"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = _Parser(
        prog="rag-eval",
        description="Evaluate retrieval for RAG with trec_eval-exact metrics. Exit codes: 0 done (every gate "
        "passed), 1 a regression gate failed, 2 bad input, 3 internal error (a bug), 130 interrupted.",
    )
    parser.add_argument("--debug", action="store_true", help=_DEBUG_HELP)
    sub = parser.add_subparsers(title="commands", metavar="COMMAND", dest="command")
    for register in _COMMANDS:
        register(sub)
    for command in sub.choices.values():
        # Also accepted after the command; SUPPRESS keeps a --debug given before it.
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=_DEBUG_HELP)
    return parser


# ---- evaluate ------------------------------------------------------------------------


def _add_evaluate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "evaluate",
        help="score a TREC run file against TREC or BEIR qrels",
        description="Score a TREC run (qid Q0 doc_id rank score tag) against TREC qrels (qid iter doc_id grade) "
        "or BEIR qrels (a TSV with the header query-id corpus-id score), told apart by their content; "
        "a line on stderr says which was read. "
        "The rank column is ignored: documents are ranked by score, ties by doc id descending, as trec_eval does.",
    )
    p.add_argument("--qrels", required=True,
                   help="TREC qrels (qid iter doc_id grade) or BEIR qrels (header query-id corpus-id score)")
    p.add_argument("--run", required=True, help="TREC run file: qid Q0 doc_id rank score tag")
    p.add_argument(
        "-m", "--metric", action="append", required=True, dest="metrics",
        help="metric, repeatable: ndcg@10, ndcg, dcg@k, idcg@k, precision@k, recall@k, mrr, mrr@k, map, map@k, "
        "r_precision, hit_rate@k, judged@k (trec_eval names such as ndcg_cut_10 or P_5 work too)",
    )
    p.add_argument("--per-query", "-q", action="store_true", help="also print each query's values")
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    _add_semantics_options(p)
    p.set_defaults(handler=_cmd_evaluate)


def _add_semantics_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gain", choices=("linear", "exponential"), default="linear",
                   help="nDCG gain: grade (trec_eval) or 2^grade - 1 (default: linear)")
    p.add_argument("--aggregation", choices=("macro", "micro"), default="macro",
                   help="dataset nDCG: mean of per-query values, or sum DCG / sum IDCG (default: macro)")
    p.add_argument("--no-relevant", choices=("skip", "zero", "error"), default="skip",
                   help="a judged query with no relevant document: leave out of the mean, score 0 "
                   "(trec_eval), or fail (default: skip)")
    p.add_argument("--relevance-threshold", type=float, default=1.0,
                   help="grade at or above which a document is relevant for binary metrics (trec_eval -l; default 1)")


def _cmd_evaluate(args: argparse.Namespace) -> int:

    # This process is ours and its work is numpy on large arrays: reuse freed memory instead of
    # taking a page fault on every fresh temporary (rag_eval._core.allocator). Only here: other
    # commands load models and libraries whose allocation pattern this would not suit.
    allocator.keep_freed_memory()
    metrics = passage_metrics(
        parse_metrics(args.metrics),
        "evaluate scores a TREC run as it is: run a config with a dataset of documents (rag-eval run), or score "
        "the document run <label>.docs.trec that rag-eval run writes against documents.qrels with the plain metric",
    )
    options = EvaluationOptions(args.gain, args.aggregation, args.no_relevant, args.relevance_threshold)
    judgements, layout = read_judgements(args.qrels)
    # Once joined, the tables are freed (del), before the metrics need memory.
    joined = prepare(judgements, read_run(args.run))
    del judgements
    results = score(joined, metrics, options)
    text = format_results(results, args.format, per_query=args.per_query)
    # Said once everything has been read (an error stays the only line on stderr), never on stdout.
    detail = " (TSV with header query-id corpus-id score)" if layout is BEIR_QRELS else ""
    print(f"rag-eval: read {args.qrels} as {layout.name}{detail}", file=sys.stderr)
    if args.format != "json":  # json lists them in the document; text keeps stdout as trec_eval prints it
        for note in exclusion_notes(results):
            print(f"rag-eval: {note}", file=sys.stderr)
    sys.stdout.write(text)
    return 0


# ---- run / validate ---------------------------------------------------------------------


def _add_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run the retrievers of a YAML config, evaluate them and write a markdown report",
        description="Run every retriever of CONFIG over its query set, evaluate, and write report.md, "
        "<label>.json results and <label>.run TREC run files into the config's output folder.",
    )
    p.add_argument("config", help="run config (YAML)")
    p.add_argument("--output", help="output folder (overrides the config's 'output')")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    p.add_argument("--summary", help="with a regression section: write the verdict as markdown for a CI job "
                   "summary (default: $GITHUB_STEP_SUMMARY when set; appended)")
    p.set_defaults(handler=_cmd_run)


def _cmd_run(args: argparse.Namespace) -> int:

    # --output is validated with the rest of the config, in place of its output:, not patched in.
    config = load_config(args.config, output=args.output or None)
    regression = config.model.regression
    baseline = None
    summary = args.summary or os.environ.get("GITHUB_STEP_SUMMARY") or None
    if regression is not None:

        baseline_path = config.resolve(regression.baseline)
        if summary:
            _check_output(summary, "--summary", [("config", args.config), ("baseline", baseline_path)], append=True)
        baseline = load_results_file(baseline_path)  # loaded once, before any retrieval: fail early

    # Refused before any retrieval, and before anything is created: outputs that would replace
    # one of the run's inputs (its config, dataset, a retriever's file, the baseline).
    outputs = planned_outputs(config, comparison=regression is not None)
    check_outputs_are_not_inputs(config, outputs)
    # The output folder is checked and locked before any retrieval: a refused folder, a user's
    # file in the way, or a second run into it fails at once, not after the retrievers have worked.
    with hold_output_folder(config.output_dir, config.path):
        check_replaceable(config.output_dir, outputs)
        try:
            run = execute(config, progress=False if args.no_progress else None)
        except RetrieverError as error:
            if str(error).startswith("retriever "):  # a retriever's failure: say which config holds it
                raise RetrieverError(f"{config.path}: {error}", problems=error.problems) from error
            raise
        for outcome in run.outcomes:  # said at once (the report repeats them): e.g. chunks the encoder cut
            for warning in outcome.warnings:
                print(f"rag-eval: warning: {warning}", file=sys.stderr)
        verdict = None
        extra = {}
        if regression is not None:

            # Compared before anything is written: incomparable results leave no output behind,
            # but the CI job summary says why.
            try:
                verdict = verdict_for_run(run, baseline)
            except ComparisonError as error:
                if summary:
                    _append_summary(summary, _incomparable_markdown(baseline, None, error, heading=3))
                raise
            # Chunk texts of a document dataset come from the results files (the corpus holds whole documents).
            shown = (
                {**verdict.baseline.passages, **verdict.candidate.passages}
                if run.dataset.has_documents
                else run.dataset.corpus
            )
            extra["comparison.md"] = render_comparison(verdict, shown)
        written = write_outputs(run, extra)
    _print_headlines(run)
    report = next(p for p in written if p.name == "report.md")
    print(f"report: {report}")
    if verdict is None:
        return EXIT_PASSED
    print(f"comparison: {report.parent / 'comparison.md'}")
    return _emit_verdict(verdict, None, summary)


def _print_headlines(run: Any) -> None:
    """``label<TAB>metric<TAB>value`` per retriever, then why the mean is what it is, when that is not obvious."""

    main_metric = run.config.model.primary_metric
    for outcome in run.outcomes:
        if main_metric not in outcome.results.aggregate:  # chunk-level, for a retriever returning its own spans
            print(f"{outcome.label}\t{main_metric}\tn/a\t(not computed: the retriever returns its own spans)")
            continue
        value = outcome.results.aggregate[main_metric]
        notes = mean_notes(outcome.results, main_metric, run.dataset.judgements, run.dataset.evidence)
        line = f"{outcome.label}\t{main_metric}\t{value:.4f}"
        print(line + (f"\t({'; '.join(notes)})" if notes else ""))


def _add_validate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate",
        help="check a config, its dataset and its retrievers without retrieving; lists every problem",
    )
    p.add_argument("config", help="run config (YAML)")
    p.set_defaults(handler=_cmd_validate)


def _cmd_validate(args: argparse.Namespace) -> int:

    problems, summary = validate_command.validate_config(args.config)
    if problems:
        for problem in problems:
            print(problem, file=sys.stderr)
        print(f"rag-eval: {len(problems)} problem{'s' if len(problems) > 1 else ''} found", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(summary)
    return 0


# ---- compare --------------------------------------------------------------------------------


def _add_compare(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="regression verdict: a candidate results file against a baseline (exit 0 pass, 1 fail, 2 incomparable)",
        description="Compare two results files written by `rag-eval run` on the same dataset. "
        "Exit code 0: every gate passes; 1: a gate fails; 2: bad input or incomparable results "
        "(--report and --summary then say why); 3: internal error.",
    )
    p.add_argument("baseline", help="baseline results JSON, or a run's output folder with --baseline-variant")
    p.add_argument("candidate", help="candidate results JSON, or a run's output folder with --variant")
    p.add_argument("--variant", metavar="LABEL",
                   help="the candidate's retriever (a sweep variant) when CANDIDATE is a run's output folder")
    p.add_argument("--baseline-variant", metavar="LABEL",
                   help="the baseline's retriever when BASELINE is a run's output folder (the same folder may hold both)")
    p.add_argument(
        "--gate", action="append", default=[], metavar="METRIC[:max_drop=X][,alpha=A]",
        help="a gate, repeatable, e.g. ndcg@10:max_drop=0.01 or ndcg@10:max_drop=0,alpha=0.05 "
        "(default: ndcg@10:max_drop=0 when the results have ndcg@10)",
    )
    p.add_argument("--report", help="write the full comparison report (markdown) to this file")
    p.add_argument("--summary", help="write the verdict as markdown for a CI job summary "
                   "(default: $GITHUB_STEP_SUMMARY when set; appended)")
    p.add_argument("--confidence", type=_confidence, default=0.95,
                   help="bootstrap confidence level, between 0 and 1 (default 0.95)")
    # The limits of the statistics, shared with the config's regression.resamples (cheap: scipy loads later).

    p.add_argument("--resamples", type=_resamples, default=10_000,
                   help=f"bootstrap / permutation resamples, from {MIN_RESAMPLES:,} to {MAX_RESAMPLES:,} "
                   "(default 10,000)")
    p.add_argument("--seed", type=_seed, default=0, help="random seed for the resampling, >= 0 (default 0)")
    p.set_defaults(handler=_cmd_compare)


def _confidence(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}") from None
    if not 0 < value < 1:  # also refuses nan
        raise argparse.ArgumentTypeError(f"confidence must be between 0 and 1 (exclusive), got {text}")
    return value


def _resamples(text: str) -> int:

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not MIN_RESAMPLES <= value <= MAX_RESAMPLES:
        raise argparse.ArgumentTypeError(
            f"resamples must be from {MIN_RESAMPLES:,} to {MAX_RESAMPLES:,} (more does not change the printed "
            f"digits, and costs memory), got {_short(text)}"
        )
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"seed must be >= 0 (numpy refuses negative seeds), got {text}")
    return value


def _short(text: str, limit: int = 30) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} digits)"


def _cmd_compare(args: argparse.Namespace) -> int:

    args.baseline = _results_path(args.baseline, args.baseline_variant, "baseline", "--baseline-variant")
    args.candidate = _results_path(args.candidate, args.variant, "candidate", "--variant")
    inputs = [("baseline", args.baseline), ("candidate", args.candidate)]
    summary = args.summary or os.environ.get("GITHUB_STEP_SUMMARY") or None
    # Checked before anything is read or written: an output must never replace an input.
    if args.report:
        _check_output(args.report, "--report", inputs)
    if summary:
        _check_output(summary, "--summary", inputs, append=True)
    baseline = load_results_file(args.baseline)
    candidate = load_results_file(args.candidate)
    gates = parse_gates(args.gate) or _default_gates(baseline)
    try:
        verdict = regression.compare(
            baseline, candidate, gates, confidence=args.confidence, n_resamples=args.resamples, seed=args.seed
        )
    except ComparisonError as error:
        # The report and the CI job summary say why there is no verdict, instead of staying empty.
        if args.report:
            _write_report(args.report, _incomparable_markdown(baseline, candidate, error, heading=1))
        if summary:
            _append_summary(summary, _incomparable_markdown(baseline, candidate, error, heading=3))
        raise
    return _emit_verdict(verdict, args.report, summary)


def _results_path(path: str, variant: str | None, role: str, flag: str) -> str:
    """The results file of ``variant`` in a run's output folder, or ``path`` itself when it is a file.

    A folder holds one ``<label>.json`` per retriever (every variant of a sweep); its manifest
    lists them, and the message names them when the choice is missing or wrong.
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
    labels = sorted(name[: -len(".json")] for name in (manifest.files if manifest else ()) if name.endswith(".json"))
    if not labels:
        raise ConfigError(
            f"{role} {path}: is a folder, expected a results file (or the output folder of `rag-eval run`, whose "
            f".rag_eval.json lists its <label>.json files, with {flag})"
        )
    shown = ", ".join(labels[:10]) + (f", ... ({len(labels)} in all)" if len(labels) > 10 else "")
    if variant is None:
        raise ConfigError(f"{role} {path}: a run's output folder holds several results; choose one with {flag} "
                          f"(it has {shown})")
    if variant not in labels:

        guess = difflib.get_close_matches(variant, labels, n=1)
        hint = f" (did you mean {guess[0]!r}?)" if guess else ""
        raise ConfigError(f"{flag} {variant}: no such variant in {path}{hint}; it has {shown}")
    return str(folder / f"{variant}.json")


def _default_gates(baseline: Any) -> list:

    if baseline.chunking is not None:  # a document dataset: a gate that holds across chunkings
        if "doc_ndcg@10" in baseline.results.values:
            return [make_gate("doc_ndcg@10")]
        raise ConfigError(
            "no --gate given and the results have no doc_ndcg@10; e.g. --gate evidence_recall@5:max_drop=0.01 "
            "(document and evidence metrics compare any two chunkings)"
        )
    if "ndcg@10" in baseline.results.values:
        return [make_gate("ndcg@10")]
    raise ConfigError("no --gate given and the results have no ndcg@10; e.g. --gate ndcg@5:max_drop=0.01")


def _check_output(path: str, flag: str, inputs: Sequence[tuple[str, str | os.PathLike[str]]], append: bool = False) -> None:
    """Refuse an output path that is one of the inputs, a folder, a special file or in an unwritable place."""

    target = Path(path)
    for role, source in inputs:
        if _same_file(target, Path(source)):
            action = "appended to" if append else "replaced by the output"
            raise ConfigError(
                f"{flag} {path}: is the {role} file {source}, which would be {action}; write it to another file"
            )
    try:
        mode = os.stat(target).st_mode
    except (FileNotFoundError, NotADirectoryError):  # not there yet (or under a file: said below)
        mode = None
    except OSError as error:
        raise ConfigError(f"{flag} {path}: cannot be written ({error.strerror or error})") from None
    if mode is not None:
        kind = describe_kind(mode)
        # Appending to a terminal or /dev/stderr is fine; a FIFO would block, a folder cannot be a file.
        if kind is not None and not (append and kind == "a character device"):
            raise ConfigError(f"{flag} {path}: is {kind}; give the path of a file to write")
    folder = target.parent
    while not folder.exists() and folder != folder.parent:  # missing folders are created when writing
        folder = folder.parent
    if not folder.is_dir():
        raise ConfigError(f"{flag} {path}: {folder} is not a folder")
    if append and mode is not None:
        writable = os.access(target, os.W_OK)
    elif folder == target.parent:
        writable = _can_create_in(folder)  # the report is written to a temporary file there, then renamed
    else:
        writable = os.access(folder, os.W_OK | os.X_OK)
    if not writable:
        raise ConfigError(f"{flag} {path}: cannot write there (permission denied or a read-only place)")


def _can_create_in(folder: Path) -> bool:

    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist (yet): compare where they would be
        return a.resolve() == b.resolve()


def _write_report(path: str, text: str) -> None:

    try:
        atomic_write_text(path, text)
    except OSError as error:
        raise ConfigError(f"--report {path}: cannot write the report ({error.strerror or error})") from None


def _append_summary(path: str, text: str) -> None:
    # GitHub's job summary file is shared by the job's steps: append, never replace.
    try:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text + "\n")
    except OSError as error:
        raise ConfigError(f"{path}: cannot write the summary ({error.strerror or error})") from None


def _incomparable_markdown(baseline: Any, candidate: Any, error: Exception, heading: int) -> str:

    return render_incomparable(
        str(error), baseline=(baseline.label, baseline.path), candidate=candidate and (candidate.label, candidate.path),
        heading=heading,
    )


def _emit_verdict(verdict: Any, report_path: str | None, summary_path: str | None) -> int:
    """Print the verdict lines, write the report and the summary; the exit code of the verdict.

    The report shows passage texts from the results files (the short texts of the
    passages they ranked on top), so `compare` needs no corpus.
    """

    for line in _verdict_lines(verdict):
        print(line)
    if report_path:
        passages = {**verdict.baseline.passages, **verdict.candidate.passages}
        _write_report(report_path, render_comparison(verdict, passages))
        print(f"report: {report_path}")
    if summary_path:
        _append_summary(summary_path, render_verdict_summary(verdict))
        print(f"summary: {summary_path}")
    return EXIT_PASSED if verdict.passed else EXIT_REGRESSION


REGRESSED_LISTED = 10


def _verdict_lines(verdict) -> list[str]:

    lines = []
    for g in verdict.gates:
        status = "PASS" if g.passed else "FAIL"
        p_text = f"p {g.p_permutation:.4f}" + (f" (Holm {g.p_adjusted:.4f})" if g.p_adjusted is not None else "")
        lines.append(
            f"{status}\t{g.gate.metric}\tbaseline {g.baseline:.4f}\tcandidate {g.candidate:.4f}\t"
            f"delta {g.mean_delta:+.4f} [{g.ci_low:+.4f}, {g.ci_high:+.4f}]\t{p_text}\t{g.reason}"
        )
        if not g.passed:
            # Name the queries behind a failed gate, worst first, so a CI log says where to look.
            sign = 1.0 if parse_metric(g.gate.metric).higher_is_better else -1.0
            moves = sorted(
                ((q, d) for q, d in verdict.deltas.get(g.gate.metric, {}).items() if sign * d < -1e-12),
                key=lambda item: (sign * item[1], item[0]),
            )
            shown = ", ".join(f"{q} ({d:+.4f})" for q, d in moves[:REGRESSED_LISTED])
            more = f", and {len(moves) - REGRESSED_LISTED} more" if len(moves) > REGRESSED_LISTED else ""
            lines.append(f"  regressed queries ({len(moves)}): {shown or 'none'}{more}")
    lines += [line for g in verdict.gates if (line := _power_line(g.gate.metric, verdict.deltas.get(g.gate.metric, {})))]
    lines += _approximation_lines(verdict)
    lines.append(f"verdict: {'PASS' if verdict.passed else 'FAIL'} ({len(verdict.failed)} of {len(verdict.gates)} gates failed)")
    return lines


def _approximation_lines(verdict: Any) -> list[str]:
    """``approximation<TAB>side<TAB>...``: what an approximate index cost each side, so that a drop can be
    told apart from a worse model (the run measured it against exact search on a sample of queries)."""

    lines = []
    for side, results in (("baseline", verdict.baseline), ("candidate", verdict.candidate)):
        note = approximation_note(results.document.retriever.description.get("approximation"))
        if note:
            lines.append(f"approximation\t{side}\t{note}")
    return lines


def _power_line(metric: str, deltas: Mapping[str, float]) -> str:
    """``power<TAB>metric<TAB>...``: the smallest difference these paired queries can detect (rag_eval._compare.decision)."""

    values = list(deltas.values())
    if len(values) < 2:
        return ""
    mde = minimum_detectable_difference(values, ALPHA, POWER)
    if not mde > 0:  # every query moved alike: no noise to size against
        return ""

    needed = queries_needed(statistics.stdev(values), 0.01, ALPHA, POWER)
    return (
        f"power\t{metric}\twith {len(values)} queries the smallest detectable difference is {mde:.4f} "
        f"(paired t-test, alpha {ALPHA:g}, power {POWER:g}); detecting 0.01 would need {needed:,} queries"
    )


def _add_schema(sub: argparse._SubParsersAction) -> None:

    add_schema_command(sub)


_COMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [
    _add_evaluate, _add_run, _add_validate, _add_compare, _add_schema,
]


# Commands whose process has nothing left to do once main() returns: no atexit work, no
# files open for writing, output on stdout/stderr only.
_QUICK_EXIT_COMMANDS = frozenset({"evaluate"})


def console_main() -> None:
    """Entry point of the ``rag-eval`` script: :func:`main`, then exit.

    After ``evaluate`` the interpreter's teardown (finalising numpy and every module,
    freeing every array one by one) would take about 50 ms, a tenth of evaluating a
    10,000-query run; the output is flushed and the process ends at once instead.
    In-process callers use :func:`main`, which always returns.
    """
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        # main() has reported an unwritable stdout in one line: point it at /dev/null, so
        # that the interpreter's own final flush does not add a second report.
        _discard_stdout()
        sys.exit(code)
    command = [arg for arg in sys.argv[1:3] if arg != "--debug"][:1]  # the command: first, or after --debug
    if command and command[0] in _QUICK_EXIT_COMMANDS:
        os._exit(code)
    sys.exit(code)


def _discard_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


if __name__ == "__main__":  # pragma: no cover
    console_main()
