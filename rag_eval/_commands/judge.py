"""``rag-eval judge SHEET --judge JUDGE.yaml --output OUT``: fill a judgement sheet's empty grades with a judge.

Reads the sheet (``rag-eval pool`` writes it), builds the judge JUDGE.yaml names
(:mod:`rag_eval._models.judges.spec`), grades the rows whose grade is empty, grouped by query
(:mod:`rag_eval._models.judges.grading`), and writes the graded sheet to OUT atomically. Prints one
summary line, then the rows that could not be graded, one per line.

Exit codes: 0 every row graded; 1 some rows could not be graded (they stay empty, never 0, and are
listed; OUT is written with the rest, so a CI job notices); 2 bad input (the sheet, the judge's
config, the endpoint down or answering what is not a chat completion): one line, nothing written.

OUT is checked before anything is asked: a folder, a FIFO, the judge's file, a file that is not a
judgement sheet, or a sheet holding a person's grade that the output would not keep is refused (exit
2). OUT may be SHEET itself; when OUT changed on disk while the judge worked (a person saved it),
nothing is written (exit 2), and a rerun takes every answer from the cache.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rag_eval._commands.exit_codes import EXIT_PASSED, EXIT_REGRESSION
from rag_eval._commands.output_paths import check_output
from rag_eval._core.errors import InputFormatError
from rag_eval._core.messages import shown
from rag_eval._core.plugin_output import plugin_output_to_stderr
from rag_eval._data.judging.sheet import (
    ExistingSheet,
    SheetRow,
    existing_sheet,
    graded_by_a_person,
    read_sheet,
    sheet_format,
    write_sheet,
)
from rag_eval._models.judges.cache import JudgeCacheWarning
from rag_eval._models.judges.grading import Graded, grade_rows
from rag_eval._models.judges.spec import load_judge
from rag_eval._models.progress import showing_progress, tqdm_disable
from rag_eval._retrievers.embedding_cache import default_cache_dir

#: Rows that failed listed one per line; the rest are counted.
FAILED_SHOWN = 20


def main(args: argparse.Namespace, say: Callable[[str], None]) -> int:
    """Judge ``args.sheet`` with ``args.judge`` into ``args.output`` (see the module docstring)."""
    sheet_format(args.output)  # a wrong extension is found before any judging
    rows = read_sheet(args.sheet)
    existing = _check_output(args, rows)
    # What the judge plug-in writes to stdout (print, os.write, a child process) goes to stderr: stdout holds the
    # summary and the rows not graded.
    with showing_progress(False if args.no_progress else None), _warnings_as_lines(), plugin_output_to_stderr():
        judge = load_judge(args.judge, cache_dir=default_cache_dir())
        todo = sum(row.grade is None for row in rows)
        with _bar(todo) as progress:
            graded = grade_rows(rows, judge, where=str(args.sheet), judge_where=str(args.judge), progress=progress)
    if existing is not None:
        # Someone saved OUT (the sheet itself, when judged in place) while the judge worked: their edits win. The
        # answers are in the judge's cache, so running the command again costs nothing.
        existing.check_unchanged()
    write_sheet(args.output, graded.rows)
    say(summary(graded, args.output))
    for row, reason in graded.failed[:FAILED_SHOWN]:
        say(f"not graded: query {shown(row.query_id)}, unit {shown(row.unit)}: {' '.join(reason.split())}")
    if len(graded.failed) > FAILED_SHOWN:
        say(f"... and {len(graded.failed) - FAILED_SHOWN} more rows not graded (their grade is left empty in {args.output})")
    return EXIT_REGRESSION if graded.failed else EXIT_PASSED


def _check_output(args: argparse.Namespace, rows: list[SheetRow]) -> ExistingSheet | None:
    """Refuse, before anything is asked, an OUT that is the judge's file, a folder, a FIFO, a file that is not
    a judgement sheet, or a sheet holding a person's grade that the output would not keep; the sheet at OUT."""
    check_output(args.output, "--output", [("judge", args.judge)])
    existing = existing_sheet(args.output, "--output")
    if existing is None:
        return None
    kept = {row.key: row.grade for row in rows if row.grade is not None}
    lost = [row for row in existing.graded() if graded_by_a_person(row) and kept.get(row.key) != row.grade]
    if lost:
        first = lost[0]
        raise InputFormatError(
            f"--output {args.output}: holds {len(lost)} grade{'s' if len(lost) != 1 else ''} given by a person that "
            f"{args.sheet} does not hold (first: query {shown(first.query_id)}, unit {shown(first.unit)}), which "
            "the output would replace; nothing asked or written: write the output to another file"
        )
    return existing


def summary(graded: Graded, output: str) -> str:
    """The one line ``rag-eval judge`` ends with."""
    asked = graded.graded + len(graded.failed)
    tokens = f"{graded.prompt_tokens:,} prompt + {graded.completion_tokens:,} completion tokens"
    return (
        f"judged {asked} rows with {graded.source}: graded {graded.graded}, cache hits {graded.cache_hits}, "
        f"failed {len(graded.failed)} (left empty); {graded.kept} rows already graded kept; {graded.requests} "
        f"requests, {tokens}; {graded.seconds:.1f} s; wrote {output}"
    )


@contextmanager
def _warnings_as_lines() -> Iterator[None]:
    """Every damaged cache file said, even twice in one process; the command line prints each as one
    ``rag-eval: warning:`` line (rag_eval.cli, for all of rag_eval's own warnings)."""
    with warnings.catch_warnings():
        warnings.simplefilter("always", JudgeCacheWarning)
        yield


@contextmanager
def _bar(total: int) -> Iterator[Callable[[int], None] | None]:
    """A progress bar over the rows to judge (tqdm, on stderr), or None when tqdm is missing or bars are off."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        yield None
        return
    bar = tqdm(total=total, desc="judging", unit="row", disable=True if total == 0 else tqdm_disable(), leave=False)
    try:
        yield bar.update
    finally:
        bar.close()

