"""The ``rag-eval`` command line's arguments: every command, its options and their help (argparse only).

Kept apart from :mod:`rag_eval.cli`, which parses with this parser, calls the command and prints.
Importing this module loads no config schema, pydantic, YAML or torch: ``rag-eval --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

from rag_eval._commands.exit_codes import EXIT_BAD_INPUT
from rag_eval._scoring.evaluate import NO_RELEVANT_POLICIES
from rag_eval._scoring.metrics.aggregation import AGGREGATIONS
from rag_eval._scoring.metrics.kernels import GAINS
from rag_eval._scoring.stats import MAX_RESAMPLES, MIN_RESAMPLES

_SUMMARY_HELP = "(default: $GITHUB_STEP_SUMMARY when set; appended)"
_DEBUG_HELP = "on an internal error, print the full traceback (default: write it to a log file)"


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
    for add in (
        _add_evaluate, _add_run, _add_validate, _add_compare, _add_schema, _add_clean, _add_pool, _add_judge,
        _add_judgements, _add_generate,
    ):
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
    p.add_argument(
        "--qrels",
        required=True,
        help="TREC qrels (qid iter doc_id grade) or BEIR qrels (header query-id corpus-id score)",
    )
    p.add_argument("--run", required=True, help="TREC run file: qid Q0 doc_id rank score tag")
    p.add_argument(
        "-m",
        "--metric",
        action="append",
        required=True,
        dest="metrics",
        help="metric, repeatable: ndcg@10, ndcg, dcg@k, idcg@k, precision@k, recall@k, mrr, mrr@k, map, map@k, "
        "r_precision, bpref, hit_rate@k, judged@k (trec_eval names such as ndcg_cut_10 or P_5 work too)",
    )
    p.add_argument("--per-query", "-q", action="store_true", help="also print each query's values")
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    p.add_argument(
        "--gain", choices=GAINS, default="linear", help="nDCG gain: grade (trec_eval) or 2^grade - 1 (default: linear)"
    )
    p.add_argument(
        "--aggregation",
        choices=AGGREGATIONS,
        default="macro",
        help="dataset nDCG: mean of per-query values, or sum DCG / sum IDCG (default: macro)",
    )
    p.add_argument(
        "--no-relevant",
        choices=NO_RELEVANT_POLICIES,
        default="skip",
        help="a judged query with no relevant document: leave out of the mean, score 0 "
        "(trec_eval), or fail (default: skip)",
    )
    p.add_argument(
        "--relevance-threshold",
        type=float,
        default=1.0,
        help="grade at or above which a document is relevant for binary metrics (trec_eval -l; default 1)",
    )
    p.add_argument(
        "--judged-only",
        action="store_true",
        help="score the condensed list: remove the documents without a judgement (or with a negative grade) "
        "from each ranking first (trec_eval -J)",
    )


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
    p.add_argument(
        "--summary",
        help=f"with a regression section: write the verdict as markdown for a CI job summary {_SUMMARY_HELP}",
    )


def _add_validate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate",
        help="check a config, its dataset and its retrievers without retrieving (or a query set alone); lists "
        "every problem",
    )
    p.add_argument("config", help="run config (YAML), or a YAML query set")


def _add_clean(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "clean",
        help="remove the collections rag_eval created in the databases a config names (never any other)",
    )
    p.add_argument("config", help="run config (YAML) whose database retrievers to clean")
    p.add_argument("--dry-run", action="store_true", help="list what would be removed, remove nothing")


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
    p.add_argument(
        "--variant",
        metavar="LABEL",
        help="the candidate's retriever (a sweep variant) when CANDIDATE is a run's output folder",
    )
    p.add_argument(
        "--baseline-variant",
        metavar="LABEL",
        help="the baseline's retriever when BASELINE is a run's output folder (the same folder may hold both)",
    )
    p.add_argument(
        "--gate",
        action="append",
        default=[],
        metavar="METRIC[:max_drop=X][,alpha=A]",
        help="a gate, repeatable, e.g. ndcg@10:max_drop=0.01 or ndcg@10:max_drop=0,alpha=0.05 "
        "(default: ndcg@10:max_drop=0 when the results have ndcg@10)",
    )
    p.add_argument("--report", help="write the full comparison report (markdown) to this file")
    p.add_argument("--summary", help=f"write the verdict as markdown for a CI job summary {_SUMMARY_HELP}")
    # Parsed here; their limits are checked by the command, as the config's regression section is.
    p.add_argument(
        "--confidence", type=_number, default=0.95, help="bootstrap confidence level, between 0 and 1 (default 0.95)"
    )
    p.add_argument(
        "--resamples",
        type=_whole_number,
        default=10_000,
        help=f"bootstrap / permutation resamples, from {MIN_RESAMPLES:,} to {MAX_RESAMPLES:,} (default 10,000)",
    )
    p.add_argument("--seed", type=_whole_number, default=0, help="random seed for the resampling, >= 0 (default 0)")
    p.add_argument(
        "--on-holes",
        choices=("warn", "fail"),
        default="warn",
        help="a gate that could flip were the candidate's unjudged results judged (its pass/fail differs between "
        "them as misses and at the highest grade): warn (default) says so, fail fails the gate (exit 1)",
    )


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


def _add_schema(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "schema",
        help="print the configuration reference (markdown, as docs/config.md) or the config's JSON Schema",
        description="Print every key a run config may hold, with its type, default, limits and meaning. "
        "The output is docs/config.md; --format json prints the JSON Schema instead.",
    )
    p.add_argument("--format", choices=("markdown", "json"), default="markdown", help="default: markdown")


def _add_pool(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "pool",
        help="the unjudged passages and spans in the top K of a run's retrievers: a judgement sheet to fill",
        description="Run CONFIG's retrievers (or read --results files) and write the units nobody judged in "
        "their top K, deduplicated, the queries whose verdict could flip first, with their text (docs/judging.md).",
    )
    p.add_argument("config", help="run config (YAML)")
    p.add_argument("--depth", type=_whole_number, default=10, help="pool the top K of each retriever (default 10)")
    p.add_argument("--output", required=True, help="the judgement sheet to write: .csv or .jsonl")
    p.add_argument("--results", nargs="+", metavar="FILE",
                   help="pool these results files (written by rag-eval run on this config's dataset) instead of running")
    p.add_argument("--label-studio", metavar="FILE", help="also write the pool as a Label Studio import (JSON)")
    p.add_argument("--argilla", metavar="FILE", help="also write the pool as an Argilla import (JSON Lines)")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")


def _add_judge(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "judge",
        help="grade the rows of a judgement sheet with a judge (an LLM endpoint, a cross-encoder, a plug-in)",
        description="Fill the empty grades of SHEET with JUDGE's grades, each with its provenance "
        "(llm:<model>), cached so that a rerun asks nothing again (docs/judging.md).",
    )
    p.add_argument("sheet", help="a judgement sheet (.csv or .jsonl, as rag-eval pool writes it)")
    p.add_argument("--judge", required=True, metavar="YAML", help="the judge's config (YAML): adapter and params")
    p.add_argument("--output", required=True, help="the graded sheet to write (.csv or .jsonl)")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")


def _add_judgements(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("judgements", help="merge graded sheets into a query set, check judgements against edited documents")
    actions = p.add_subparsers(title="actions", metavar="ACTION", dest="action", required=True)
    merge = actions.add_parser(
        "merge", help="merge a graded sheet into a query set (atomically, keeping its comments and order)"
    )
    merge.add_argument("sheet", help="a graded judgement sheet (.csv or .jsonl)")
    merge.add_argument("--into", required=True, metavar="QUERY_SET", help="the query set (YAML) to merge into")
    merge.add_argument("--resolve", choices=("keep", "replace"),
                       help="a grade that conflicts with the query set's: keep the query set's, or replace it "
                       "(default: refuse, listing the conflicts)")
    check = actions.add_parser(
        "check", help="list each evidence judgement as valid, moved, changed or gone against the documents"
    )
    check.add_argument("query_set", help="the query set (YAML) whose evidence to check")
    check.add_argument("--fix", action="store_true", help="write the re-anchored (moved) evidence back")
    convert = actions.add_parser(
        "convert", help="chunk-id judgements of another tool (with the chunks' texts) as evidence spans"
    )
    convert.add_argument("chunks", help="qrels of chunk ids (TREC or BEIR) with a chunk-text file beside (see docs)")
    convert.add_argument("--texts", required=True, help="chunk id -> text (JSON Lines: {\"id\", \"text\"})")
    convert.add_argument("--documents", required=True, metavar="QUERY_SET",
                         help="the query set (YAML) holding the documents the chunks were cut from")
    convert.add_argument("--output", required=True, help="the query set (YAML) to write, with evidence spans")
    calibrate = actions.add_parser(
        "calibrate", help="a model's grades against people's on the rows both graded: kappa, confusion, Kendall's tau"
    )
    calibrate.add_argument("human", metavar="HUMAN_SHEET", help="a sheet graded by people (.csv or .jsonl)")
    calibrate.add_argument("model", metavar="MODEL_SHEET", help="the same rows graded by a judge (.csv or .jsonl)")
    calibrate.add_argument("--config", help="also rank this config's retrievers under each set of grades "
                           "(Kendall's tau) and warn about one that ranks with the judge's model")


def _add_generate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "generate",
        help="synthetic questions from a query set's documents through a judge endpoint, each with a checked quote",
        description="Ask an OpenAI-compatible endpoint for questions about the documents of QUERY_SET, each with a "
        "quoted evidence span that must occur exactly once, keep those a retriever finds again (round trip), and "
        "write them as queries tagged origin: synthetic (docs/judging.md).",
    )
    p.add_argument("query_set", help="the query set (YAML) whose documents to ask about")
    p.add_argument("--judge", required=True, metavar="YAML", help="the endpoint's config (YAML), as for rag-eval judge")
    p.add_argument("--output", required=True, help="the query set (YAML) to write, with the synthetic queries")
    p.add_argument("--per-document", type=_whole_number, default=2, help="questions asked per document (default 2)")
    p.add_argument("--round-trip", metavar="CONFIG",
                   help="keep a question only if this config's first retriever finds its evidence in its top k")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
