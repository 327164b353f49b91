"""The ``rag-eval`` command: a thin shell over the library.

Every :class:`RagEvalError` becomes one line on stderr and exit code 2; any other
exception is a bug and keeps its traceback. Heavy modules are imported inside the
subcommands so that ``rag-eval --help`` stays fast and never imports torch.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, Sequence

from rag_eval.errors import RagEvalError

EXIT_BAD_INPUT = 2


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    from rag_eval.allocator import keep_freed_memory

    keep_freed_memory()  # this process is ours: numpy's temporaries reuse memory instead of faulting
    try:
        return handler(args)
    except RagEvalError as error:
        print(f"rag-eval: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("rag-eval: interrupted", file=sys.stderr)
        return 130


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="rag-eval",
        description="Evaluate retrieval for RAG with trec_eval-exact metrics.",
    )
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    for register in _COMMANDS:
        register(sub)
    return parser


# ---- evaluate ------------------------------------------------------------------------


def _add_evaluate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "evaluate",
        help="score a TREC run file against a TREC qrels file",
        description="Score a TREC run (qid Q0 doc_id rank score tag) against TREC qrels (qid iter doc_id grade). "
        "The rank column is ignored: documents are ranked by score, ties by doc id descending, as trec_eval does.",
    )
    p.add_argument("--qrels", required=True, help="TREC qrels file: qid iter doc_id grade")
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
    from rag_eval.evaluate import EvaluationOptions, prepare, score
    from rag_eval.metrics.measures import parse_metrics
    from rag_eval.output import format_results
    from rag_eval.trec import read_qrels, read_run

    metrics = parse_metrics(args.metrics)
    options = EvaluationOptions(args.gain, args.aggregation, args.no_relevant, args.relevance_threshold)
    # No name holds the tables: once joined they are freed, before the metrics need memory.
    joined = prepare(read_qrels(args.qrels), read_run(args.run))
    results = score(joined, metrics, options)
    sys.stdout.write(format_results(results, args.format, per_query=args.per_query))
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
    from pathlib import Path

    from rag_eval.config.schema import load_config
    from rag_eval.runner import execute, write_outputs

    config = load_config(args.config)
    if args.output:
        config.model = config.model.model_copy(update={"output": str(Path(args.output).resolve())})
    regression = config.model.regression
    if regression is not None:
        from rag_eval.regression import load_results_file

        load_results_file(config.resolve(regression.baseline))  # fail before any retrieval
    run = execute(config, progress=False if args.no_progress else None)
    verdict = None
    extra = {}
    if regression is not None:
        from rag_eval.regression_run import verdict_for_run
        from rag_eval.report.comparison import render_comparison

        # Compared before anything is written: incomparable results leave no output behind.
        verdict = verdict_for_run(run)
        extra["comparison.md"] = render_comparison(verdict, run.dataset.corpus)
    written = write_outputs(run, extra)
    main_metric = config.model.primary_metric
    for outcome in run.outcomes:
        value = outcome.results.aggregate[main_metric]
        print(f"{outcome.label}\t{main_metric}\t{value:.4f}")
    report = next(p for p in written if p.name == "report.md")
    print(f"report: {report}")
    if verdict is None:
        return 0
    print(f"comparison: {report.parent / 'comparison.md'}")
    return _emit_verdict(verdict, None, args.summary)


def _add_validate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate",
        help="check a config, its dataset and its retrievers without retrieving; lists every problem",
    )
    p.add_argument("config", help="run config (YAML)")
    p.set_defaults(handler=_cmd_validate)


def _cmd_validate(args: argparse.Namespace) -> int:
    from rag_eval.validate import validate_config

    problems, summary = validate_config(args.config)
    if problems:
        for problem in problems:
            print(problem, file=sys.stderr)
        print(f"rag-eval: {len(problems)} problem{'s' if len(problems) > 1 else ''} found", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(summary)
    return 0


# ---- compare --------------------------------------------------------------------------------

EXIT_REGRESSION = 1


def _add_compare(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="regression verdict: a candidate results file against a baseline (exit 0 pass, 1 fail, 2 incomparable)",
        description="Compare two results files written by `rag-eval run` on the same dataset. "
        "Exit code 0: every gate passes; 1: a gate fails; 2: bad input or incomparable results.",
    )
    p.add_argument("baseline", help="baseline results JSON")
    p.add_argument("candidate", help="candidate results JSON")
    p.add_argument(
        "--gate", action="append", default=[], metavar="METRIC[:max_drop=X][,alpha=A]",
        help="a gate, repeatable, e.g. ndcg@10:max_drop=0.01 or ndcg@10:max_drop=0,alpha=0.05 "
        "(default: ndcg@10:max_drop=0 when the results have ndcg@10)",
    )
    p.add_argument("--report", help="write the full comparison report (markdown) to this file")
    p.add_argument("--summary", help="write the verdict as markdown for a CI job summary "
                   "(default: $GITHUB_STEP_SUMMARY when set; appended)")
    p.add_argument("--confidence", type=float, default=0.95, help="bootstrap confidence level (default 0.95)")
    p.add_argument("--resamples", type=int, default=10_000, help="bootstrap / permutation resamples (default 10000)")
    p.add_argument("--seed", type=int, default=0, help="random seed for the resampling (default 0)")
    p.set_defaults(handler=_cmd_compare)


def _cmd_compare(args: argparse.Namespace) -> int:
    from rag_eval.regression import compare, load_results_file, parse_gate

    baseline = load_results_file(args.baseline)
    candidate = load_results_file(args.candidate)
    gates = [parse_gate(text) for text in args.gate] or _default_gates(baseline)
    verdict = compare(
        baseline, candidate, gates, confidence=args.confidence, n_resamples=args.resamples, seed=args.seed
    )
    return _emit_verdict(verdict, args.report, args.summary)


def _default_gates(baseline) -> list:
    from rag_eval.errors import ConfigError
    from rag_eval.regression import make_gate

    if "ndcg@10" in baseline.results.values:
        return [make_gate("ndcg@10")]
    raise ConfigError("no --gate given and the results have no ndcg@10; e.g. --gate ndcg@5:max_drop=0.01")


def _emit_verdict(verdict, report_path: str | None, summary_path: str | None, passages=None) -> int:
    import os

    from rag_eval.atomic import atomic_write_text
    from rag_eval.report.comparison import render_comparison, render_verdict_summary

    for line in _verdict_lines(verdict):
        print(line)
    if report_path:
        atomic_write_text(report_path, render_comparison(verdict, passages))
        print(f"report: {report_path}")
    summary_target = summary_path or os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_target:
        # GitHub's job summary file is shared by the job's steps: append, never replace.
        try:
            with open(summary_target, "a", encoding="utf-8") as handle:
                handle.write(render_verdict_summary(verdict) + "\n")
        except OSError as error:
            from rag_eval.errors import ConfigError

            raise ConfigError(f"{summary_target}: cannot write the summary ({error.strerror or error})") from None
        print(f"summary: {summary_target}")
    return 0 if verdict.passed else EXIT_REGRESSION


REGRESSED_LISTED = 10


def _verdict_lines(verdict) -> list[str]:
    from rag_eval.metrics.measures import parse_metric

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
    lines.append(f"verdict: {'PASS' if verdict.passed else 'FAIL'} ({len(verdict.failed)} of {len(verdict.gates)} gates failed)")
    return lines


_COMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [_add_evaluate, _add_run, _add_validate, _add_compare]


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
    if len(sys.argv) > 1 and sys.argv[1] in _QUICK_EXIT_COMMANDS:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):  # a closed or broken pipe: let the normal exit report it
            sys.exit(code)
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    console_main()
