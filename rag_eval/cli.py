"""The ``rag-eval`` command: parse, call the command's module in rag_eval._commands, print.

Exit codes (the same for every command, so that CI can tell them apart):

- 0: done; every regression gate passed
- 1: a regression gate failed (only that)
- 2: bad input: a :class:`RagEvalError` (file, config, option, incomparable results,
  a failing plug-in, an output that cannot be written), printed as one line on stderr
- 3: an internal error, i.e. a bug in rag-eval: one line on stderr saying so and where
  the traceback was written (the traceback itself with ``--debug``)
- 130: interrupted (Ctrl-C)

A command's module is imported only when that command runs (:data:`COMMANDS`), so that
``rag-eval --help`` and ``rag-eval evaluate`` stay fast: neither loads pydantic, YAML or torch.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any, NoReturn

from rag_eval import __version__
from rag_eval._commands.failures import GuardedStdout, StdoutError, internal_error_line
from rag_eval._commands.process_end import discard_stdout, end_despite_threads, lingering_threads
from rag_eval._core.errors import RagEvalError
from rag_eval._scoring.evaluate import NO_RELEVANT_POLICIES
from rag_eval._scoring.metrics.aggregation import AGGREGATIONS
from rag_eval._scoring.metrics.kernels import GAINS
from rag_eval._scoring.stats import MAX_RESAMPLES, MIN_RESAMPLES

EXIT_PASSED = 0
EXIT_REGRESSION = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL_ERROR = 3
EXIT_INTERRUPTED = 130

# Each command's work is done by one module of rag_eval._commands, imported (importlib) when that command
# runs: the one dynamic import of the package (docs/architecture.md, held by tests/test_architecture.py).
COMMANDS = {
    "evaluate": "evaluate", "run": "run", "validate": "validate", "compare": "compare", "schema": "reference",
    "clean": "clean",
}
# Commands whose process has nothing left to do once main() returns: no atexit work, no
# files open for writing, output on stdout/stderr only.
_QUICK_EXIT_COMMANDS = frozenset({"evaluate"})
# How long threads that are not daemons (a plug-in's poller, a client never closed) may keep the
# process alive once the command is done and its outputs are written, before it exits without them.
_DEBUG_HELP = "on an internal error, print the full traceback (default: write it to a log file)"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code (see the module docstring)."""
    parser = build_parser()
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as stop:  # --help (0), or a usage error already printed as one line (2)
            sys.stdout.flush()
            return stop.code if isinstance(stop.code, int) else EXIT_BAD_INPUT
        if getattr(args, "handler", None) is None:
            parser.print_help()
            sys.stdout.flush()
            return EXIT_BAD_INPUT
    except OSError as error:  # the help into a full disk or a closed pipe
        _error_line(f"cannot write to standard output ({error.strerror or error})")
        return EXIT_BAD_INPUT
    return _dispatch(args)


def _dispatch(args: argparse.Namespace) -> int:
    """Import the command's module and run its handler; every failure becomes one line and its exit code."""
    stdout = sys.stdout
    sys.stdout = GuardedStdout(stdout)
    try:
        command = importlib.import_module(f"rag_eval._commands.{COMMANDS[args.command]}")
        code = args.handler(command, args)
        sys.stdout.flush()  # inside the try: a full disk or closed pipe on stdout is reported here
        return code
    except StdoutError as error:
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
        print(internal_error_line(error, debug=getattr(args, "debug", False), version=__version__), file=sys.stderr)
        return EXIT_INTERNAL_ERROR
    finally:
        sys.stdout = stdout


def _error_line(message: str) -> None:
    # One line, whatever the message holds: a newline in a label must not split it.
    print(f"rag-eval: error: {' '.join(message.split())}", file=sys.stderr)


def _warning(message: str) -> None:
    print(f"rag-eval: warning: {message}", file=sys.stderr)


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors as one line (the usage is one `--help` away)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {' '.join(message.split())} (see `{self.prog} --help`)\n")

    def _print_message(self, message: str, file: Any = None) -> None:
        # argparse drops an OSError here: the help into a full disk would then exit 0 having printed nothing.
        if message:
            (file or sys.stderr).write(message)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every command (their modules are not imported)."""
    parser = _Parser(
        prog="rag-eval",
        description="Evaluate retrieval for RAG with trec_eval-exact metrics. Exit codes: 0 done (every gate "
        "passed), 1 a regression gate failed, 2 bad input, 3 internal error (a bug), 130 interrupted.",
    )
    parser.add_argument("--debug", action="store_true", help=_DEBUG_HELP)
    sub = parser.add_subparsers(title="commands", metavar="COMMAND", dest="command")
    for add in (_add_evaluate, _add_run, _add_validate, _add_compare, _add_schema, _add_clean):
        add(sub)
    for command in sub.choices.values():
        # Also accepted after the command; SUPPRESS keeps a --debug given before it.
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=_DEBUG_HELP)
    return parser



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
    p.add_argument("--gain", choices=GAINS, default="linear",
                   help="nDCG gain: grade (trec_eval) or 2^grade - 1 (default: linear)")
    p.add_argument("--aggregation", choices=AGGREGATIONS, default="macro",
                   help="dataset nDCG: mean of per-query values, or sum DCG / sum IDCG (default: macro)")
    p.add_argument("--no-relevant", choices=NO_RELEVANT_POLICIES, default="skip",
                   help="a judged query with no relevant document: leave out of the mean, score 0 "
                   "(trec_eval), or fail (default: skip)")
    p.add_argument("--relevance-threshold", type=float, default=1.0,
                   help="grade at or above which a document is relevant for binary metrics (trec_eval -l; default 1)")
    p.set_defaults(handler=_cmd_evaluate)


def _cmd_evaluate(command: ModuleType, args: argparse.Namespace) -> int:
    semantics = {"gain": args.gain, "aggregation": args.aggregation, "no_relevant": args.no_relevant,
                 "relevance_threshold": args.relevance_threshold}
    done = command.evaluate_files(args.qrels, args.run, args.metrics, semantics=semantics,
                                  output_format=args.format, per_query=args.per_query)
    for note in done.notes:
        print(f"rag-eval: {note}", file=sys.stderr)
    sys.stdout.write(done.text)
    return EXIT_PASSED



_SUMMARY_HELP = "(default: $GITHUB_STEP_SUMMARY when set; appended)"


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
    p.add_argument("--summary", help=f"with a regression section: write the verdict as markdown for a CI job summary "
                   f"{_SUMMARY_HELP}")
    p.set_defaults(handler=_cmd_run)


def _cmd_run(command: ModuleType, args: argparse.Namespace) -> int:
    results = sys.stdout

    def say(line: str) -> None:
        print(line, file=results)

    # stdout holds the result lines, which scripts read: whatever else is printed while the run
    # works (a plug-in's print in index() or search(), or from a thread of its own) goes to stderr.
    with contextlib.redirect_stdout(sys.stderr):
        done = command.run_config(args.config, say=say, warn=_warning, output=args.output,
                                  progress=False if args.no_progress else None, summary=_summary_path(args))
    return EXIT_PASSED if done.verdict is None or done.verdict.passed else EXIT_REGRESSION


def _summary_path(args: argparse.Namespace) -> str | None:
    return args.summary or os.environ.get("GITHUB_STEP_SUMMARY") or None


def _add_validate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate",
        help="check a config, its dataset and its retrievers without retrieving; lists every problem",
    )
    p.add_argument("config", help="run config (YAML)")
    p.set_defaults(handler=_cmd_validate)


def _cmd_validate(command: ModuleType, args: argparse.Namespace) -> int:
    problems, summary = command.validate_config(args.config)
    if problems:
        for problem in problems:
            print(problem, file=sys.stderr)
        print(f"rag-eval: {len(problems)} problem{'s' if len(problems) > 1 else ''} found", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(summary)
    return EXIT_PASSED



def _add_clean(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "clean",
        help="remove the collections rag_eval created in the databases a config names (never any other)",
    )
    p.add_argument("config", help="run config (YAML) whose database retrievers to clean")
    p.add_argument("--dry-run", action="store_true", help="list what would be removed, remove nothing")
    p.set_defaults(handler=_cmd_clean)


def _cmd_clean(command: ModuleType, args: argparse.Namespace) -> int:
    command.clean_config(args.config, print, dry_run=args.dry_run)
    return EXIT_PASSED


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
    p.add_argument("--summary", help=f"write the verdict as markdown for a CI job summary {_SUMMARY_HELP}")
    # Parsed here; their limits are checked by the command, as the config's regression section is.
    p.add_argument("--confidence", type=_number, default=0.95,
                   help="bootstrap confidence level, between 0 and 1 (default 0.95)")
    p.add_argument("--resamples", type=_whole_number, default=10_000,
                   help=f"bootstrap / permutation resamples, from {MIN_RESAMPLES:,} to {MAX_RESAMPLES:,} "
                   "(default 10,000)")
    p.add_argument("--seed", type=_whole_number, default=0, help="random seed for the resampling, >= 0 (default 0)")
    p.set_defaults(handler=_cmd_compare)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def _whole_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def _cmd_compare(command: ModuleType, args: argparse.Namespace) -> int:
    verdict = command.compare_results(
        args.baseline, args.candidate, say=print, variant=args.variant, baseline_variant=args.baseline_variant,
        gates=args.gate, report=args.report, summary=_summary_path(args), confidence=args.confidence,
        resamples=args.resamples, seed=args.seed,
    )
    return EXIT_PASSED if verdict.passed else EXIT_REGRESSION



def _add_schema(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "schema",
        help="print the configuration reference (markdown, as docs/config.md) or the config's JSON Schema",
        description="Print every key a run config may hold, with its type, default, limits and meaning. "
        "The output is docs/config.md; --format json prints the JSON Schema instead.",
    )
    p.add_argument("--format", choices=("markdown", "json"), default="markdown", help="default: markdown")
    p.set_defaults(handler=_cmd_schema)


def _cmd_schema(command: ModuleType, args: argparse.Namespace) -> int:
    if args.format == "json":
        print(json.dumps(command.config_json_schema(), indent=2))
    else:
        sys.stdout.write(command.render_config_reference())
    return EXIT_PASSED



def console_main() -> None:
    """Entry point of the ``rag-eval`` script: :func:`main`, then exit.

    After ``evaluate`` the interpreter's teardown (finalising numpy and every module,
    freeing every array one by one) would take about 50 ms, a tenth of evaluating a
    10,000-query run; the output is flushed and the process ends at once instead.
    In-process callers use :func:`main`, which always returns.

    Threads that are not daemons and outlive the command (a plug-in's) would keep the process
    alive after its outputs are written, and a CI job waiting on it would hang: they get
    :data:`rag_eval._commands.process_end.LINGER_S` seconds to end, then the process exits with ``code`` all the same, saying
    which threads it left. Whatever they print meanwhile goes to stderr.
    """
    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        # main() has reported an unwritable stdout in one line: point it at /dev/null, so
        # that the interpreter's own final flush does not add a second report.
        discard_stdout()
        sys.exit(code)
    command = [arg for arg in sys.argv[1:3] if arg != "--debug"][:1]  # the command: first, or after --debug
    if command and command[0] in _QUICK_EXIT_COMMANDS:
        os._exit(code)
    if lingering_threads():
        sys.stdout = sys.stderr  # the command's lines are out: a lingering thread's print must not follow them
        threading.Thread(target=end_despite_threads, args=(code,), name="rag-eval-exit", daemon=True).start()
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    console_main()
