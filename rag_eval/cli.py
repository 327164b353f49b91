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
import warnings
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any

from rag_eval import __version__
from rag_eval._commands.arguments import build_parser
from rag_eval._commands.exit_codes import (
    EXIT_BAD_INPUT,
    EXIT_INTERNAL_ERROR,
    EXIT_INTERRUPTED,
    EXIT_PASSED,
    EXIT_REGRESSION,
)
from rag_eval._commands.failures import GuardedStdout, StdoutError, internal_error_line
from rag_eval._commands.process_end import (
    discard_stdout,
    end_despite_threads,
    lingering_threads,
    skip_final_collections,
)
from rag_eval._core.errors import RagEvalError
from rag_eval._core.plugin_output import plugin_output_to_stderr, reserve_standard_streams, stdout_to_stderr

__all__ = [
    "COMMANDS",
    "EXIT_BAD_INPUT",
    "EXIT_INTERNAL_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_PASSED",
    "EXIT_REGRESSION",
    "build_parser",
    "console_main",
    "main",
]

# Each command's work is done by one module of rag_eval._commands, imported (importlib) when that command
# runs: the one dynamic import of the package (docs/architecture.md, held by tests/test_architecture.py).
COMMANDS = {
    "evaluate": "evaluate",
    "run": "run",
    "validate": "validate",
    "compare": "compare",
    "schema": "reference",
    "clean": "clean",
    "pool": "pool",
    "judge": "judge",
    "judgements": "judgements",
    "generate": "generate",
}
# Commands whose process has nothing left to do once main() returns: no atexit work, no
# files open for writing, output on stdout/stderr only.
_QUICK_EXIT_COMMANDS = frozenset({"evaluate"})
# How long threads that are not daemons (a plug-in's poller, a client never closed) may keep the
# process alive once the command is done and its outputs are written, before it exits without them.


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code (see the module docstring)."""
    parser = build_parser()
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as stop:  # --help (0), or a usage error already printed as one line (2)
            sys.stdout.flush()
            return stop.code if isinstance(stop.code, int) else EXIT_BAD_INPUT
        if args.command is None:
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
        with _own_warnings_as_lines():
            code = HANDLERS[args.command](command, args)
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
    except BaseException as error:  # noqa: BLE001 (anything else is a bug: one line, exit 3, traceback logged)
        # BaseException: asyncio.CancelledError or another one that is not an Exception would otherwise end the
        # process with a traceback and exit 1, which CI reads as "a gate failed". Plug-in calls report theirs.
        print(internal_error_line(error, debug=getattr(args, "debug", False), version=__version__), file=sys.stderr)
        return EXIT_INTERNAL_ERROR
    finally:
        sys.stdout = stdout


def _error_line(message: str) -> None:
    # One line, whatever the message holds: a newline in a label must not split it.
    print(f"rag-eval: error: {' '.join(message.split())}", file=sys.stderr)


def _warning(message: str) -> None:
    print(f"rag-eval: warning: {message}", file=sys.stderr)


@contextlib.contextmanager
def _own_warnings_as_lines() -> Iterator[None]:
    """rag_eval's own warnings (a damaged cache entry, a read-only cache folder) as one ``rag-eval: warning:``
    line each, not Python's ``file.py:45: EmbeddingCacheWarning: ...`` and a line of source; a library's
    warnings are shown as Python shows them."""
    shown = warnings.showwarning

    def show(message: Any, category: Any, filename: Any, lineno: Any, file: Any = None, line: Any = None) -> None:
        if str(getattr(category, "__module__", "")).startswith("rag_eval."):
            _warning(" ".join(str(message).split()))
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown


def _cmd_evaluate(command: ModuleType, args: argparse.Namespace) -> int:
    semantics = {
        "gain": args.gain,
        "aggregation": args.aggregation,
        "no_relevant": args.no_relevant,
        "relevance_threshold": args.relevance_threshold,
        "judged_only": args.judged_only,
    }
    done = command.evaluate_files(
        args.qrels, args.run, args.metrics, semantics=semantics, output_format=args.format, per_query=args.per_query
    )
    for note in done.notes:
        print(f"rag-eval: {note}", file=sys.stderr)
    sys.stdout.write(done.text)
    return EXIT_PASSED


def _cmd_run(command: ModuleType, args: argparse.Namespace) -> int:
    # stdout holds the result lines, which scripts read: whatever else is written while the run works (a
    # plug-in's print, os.write(1, ...) or child process, in index() or search() or at import) goes to stderr.
    with plugin_output_to_stderr(last=True) as stdout:
        results = GuardedStdout(stdout)  # a closed pipe or a full disk is one line, exit 2

        def say(line: str) -> None:
            print(line, file=results)

        done = command.run_config(
            args.config,
            say=say,
            warn=_warning,
            output=args.output,
            progress=False if args.no_progress else None,
            summary=_summary_path(args),
        )
        results.flush()  # inside the block: its failure is reported, not swallowed when the block closes
    return EXIT_PASSED if done.verdict is None or done.verdict.passed else EXIT_REGRESSION


def _summary_path(args: argparse.Namespace) -> str | None:
    return args.summary or os.environ.get("GITHUB_STEP_SUMMARY") or None


def _cmd_validate(command: ModuleType, args: argparse.Namespace) -> int:
    with plugin_output_to_stderr():  # a plug-in module's import-time output must not mix with the summary
        problems, summary = command.validate_config(args.config)
    if problems:
        for problem in problems:
            print(problem, file=sys.stderr)
        print(f"rag-eval: {len(problems)} problem{'s' if len(problems) > 1 else ''} found", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(summary)
    return EXIT_PASSED


def _cmd_clean(command: ModuleType, args: argparse.Namespace) -> int:
    command.clean_config(args.config, print, dry_run=args.dry_run)
    return EXIT_PASSED


def _cmd_lines(command: ModuleType, args: argparse.Namespace) -> int:
    """A command that prints lines and says its exit code itself (pool, judge, judgements)."""
    code: int = command.main(args, print)
    return code


def _cmd_compare(command: ModuleType, args: argparse.Namespace) -> int:
    verdict = command.compare_results(
        args.baseline,
        args.candidate,
        say=print,
        variant=args.variant,
        baseline_variant=args.baseline_variant,
        gates=args.gate,
        report=args.report,
        summary=_summary_path(args),
        confidence=args.confidence,
        resamples=args.resamples,
        seed=args.seed,
        on_holes=args.on_holes,
    )
    return EXIT_PASSED if verdict.passed else EXIT_REGRESSION


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
    which threads it left. Whatever they print meanwhile goes to stderr. Otherwise the objects
    alive at the end are left out of the teardown's garbage collections
    (:func:`rag_eval._commands.process_end.skip_final_collections`: about 1 s after a torch model ran).
    """
    reserve_standard_streams()  # started with stdout or stderr closed (>&-): /dev/null, not a crash
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
        stdout_to_stderr()  # the command's lines are out: a lingering thread's output must not follow them
        threading.Thread(target=end_despite_threads, args=(code,), name="rag-eval-exit", daemon=True).start()
    skip_final_collections()
    sys.exit(code)


# What each command prints and which exit code it ends with (its arguments: rag_eval._commands.arguments).
HANDLERS = {
    "evaluate": _cmd_evaluate,
    "run": _cmd_run,
    "validate": _cmd_validate,
    "compare": _cmd_compare,
    "schema": _cmd_schema,
    "clean": _cmd_clean,
    "pool": _cmd_lines,
    "judge": _cmd_lines,
    "judgements": _cmd_lines,
    "generate": _cmd_lines,
}


if __name__ == "__main__":  # pragma: no cover
    console_main()
