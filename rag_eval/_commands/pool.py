"""``rag-eval pool CONFIG --depth K --output FILE``: the unjudged units of the retrievers' top K, as a sheet to fill.

The rankings come from running the config's retrievers (as ``rag-eval run`` does, writing nothing
else), or from ``--results`` files of an earlier run on the config's dataset. Which units are
unjudged, how rows are deduplicated and ordered: rag_eval/_run/pool.py. The sheet is written by
rag_eval/_data/judging/sheet.py, the Label Studio and Argilla imports by
rag_eval/_data/judging/exports.py. Every output is checked before any retrieval and written atomically.

An existing ``--output`` is replaced only when it is a judgement sheet (an earlier pool, graded or not):
its grades are kept on the new pool's rows of the same unit and text, and a graded row the new pool
drops must be judged in the dataset by now (merged); otherwise nothing is written (exit 2). A
``--label-studio`` or ``--argilla`` file is replaced only when it is such an import; any other file,
a folder or a FIFO is refused before anything runs.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from rag_eval._commands.output_paths import check_output
from rag_eval._core.errors import ConfigError, InputFormatError, RetrieverError
from rag_eval._core.messages import shown
from rag_eval._core.plugin_output import plugin_output_to_stderr
from rag_eval._core.ranking import ranked_ids
from rag_eval._data.config.schema import LoadedConfig, load_config
from rag_eval._data.datasets import Dataset
from rag_eval._data.judging.exports import check_export_replaceable, write_argilla, write_label_studio
from rag_eval._data.judging.sheet import ExistingSheet, SheetRow, existing_sheet, sheet_format, write_sheet
from rag_eval._run.checks import RetrieverRunError
from rag_eval._run.execute import execute
from rag_eval._run.plan import load_config_dataset
from rag_eval._run.pool import Pool, Ranked, pool
from rag_eval._run.results_file import ResultsFile, load_results_file


def main(args: argparse.Namespace, say: Callable[[str], None]) -> int:
    """Pool, write the sheet (and the imports asked for), say one line; 0 when written."""
    outputs = _outputs(args)
    config = load_config(args.config)
    _check_outputs(config, outputs, args.results or [])
    existing = existing_sheet(args.output, "--output")  # anything but a sheet is refused before any retrieval
    for flag, path in outputs[1:]:
        check_export_replaceable(path, flag)
    if args.results:
        dataset = load_config_dataset(config)
        answers, top_k = _from_results(args.results)
    else:
        dataset, answers, top_k = _from_run(config, progress=False if args.no_progress else None)
    found = pool(dataset, answers, args.depth)
    rows, carried = found.rows, 0
    if existing is not None:
        rows, carried = _keep_grades(existing, found, dataset, args.output)
        existing.check_unchanged()
    write_sheet(args.output, rows)
    written = [f"written to {args.output}" + (f" ({carried} grade{'s' if carried != 1 else ''} of the sheet there kept)"
                                               if carried else "")]
    if args.label_studio:
        write_label_studio(args.label_studio, found.rows)
        written.append(f"Label Studio tasks: {args.label_studio}")
    if args.argilla:
        write_argilla(args.argilla, found.rows)
        written.append(f"Argilla records: {args.argilla}")
    if top_k is not None and top_k < args.depth:
        say(f"note: --depth {args.depth} is past the retrievers' top_k {top_k}: their whole rankings were pooled")
    say(summary_line(found, dataset) + "; " + "; ".join(written))
    return 0


def _keep_grades(existing: ExistingSheet, found: Pool, dataset: Dataset, output: str) -> tuple[list[SheetRow], int]:
    """The new pool's rows, each with the grade the sheet already at ``output`` gave its unit (the same text), and
    how many were kept. A graded row of that sheet the new pool drops is fine when the dataset now judges its unit
    with the same grade (it was merged: :func:`_merged`); any other is refused (exit 2): nothing a person or a judge graded is lost."""
    old = {row.key: row for row in existing.graded()}
    rows = []
    for row in found.rows:
        before = old.get(row.key)
        if before is not None and " ".join(before.text.split()) == " ".join(row.text.split()):
            rows.append(replace(row, grade=before.grade, source=before.source, annotator=before.annotator,
                                time=before.time, note=before.note))
            del old[row.key]
        else:
            rows.append(row)
    lost = [row for row in old.values() if not _merged(row, dataset)]
    if lost:
        first = lost[0]
        raise InputFormatError(
            f"--output {output}: holds {len(lost)} graded row{'s' if len(lost) != 1 else ''} that the new pool would "
            f"drop, not merged into the dataset (first: query {shown(first.query_id)}, unit {shown(first.unit)}); "
            f"nothing written: merge them first (rag-eval judgements merge {output} --into <query set>), or write the "
            "pool to another file"
        )
    return rows, len(found.rows) - sum(row.grade is None for row in rows)


def _merged(row: SheetRow, dataset: Dataset) -> bool:
    """Whether the dataset holds ``row``'s grade: its passage judged with that very grade (a sheet that gives
    another grade was not merged: a person may have re-graded it), or, for a span, its document judged."""
    judged = dataset.judgements.get(row.query_id, {})
    if row.doc not in judged:
        return False
    return row.start is not None or row.grade is None or float(judged[row.doc]) == float(row.grade)


def summary_line(found: Pool, dataset: Dataset) -> str:
    """``pool: 7 units to judge for 3 queries (unjudged in the top 5 of 2 retrievers)`` or the line for none."""
    whose = f"the top {found.depth} of {found.retrievers} retriever{'s' if found.retrievers != 1 else ''}"
    if not found.rows:
        return f"pool: nothing to judge: every unit in {whose} is judged on {dataset.name!r}"
    rows, queries = len(found.rows), found.queries
    return (f"pool: {rows} unit{'s' if rows != 1 else ''} to judge for {queries} quer{'ies' if queries != 1 else 'y'} "
            f"(unjudged in {whose})")


def _outputs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """``(flag, path)`` of every file to write, their kinds checked before anything is read."""
    sheet_format(args.output)
    outputs = [("--output", args.output)]
    for flag, path, suffix in (("--label-studio", args.label_studio, ".json"), ("--argilla", args.argilla, ".jsonl")):
        if path:
            if Path(path).suffix.lower() != suffix:
                raise ConfigError(f"{flag} {path}: write it as a {suffix} file (the tool's import format)")
            outputs.append((flag, path))
    return outputs  # never the same file twice: each has its own extension


def _check_outputs(config: LoadedConfig, outputs: list[tuple[str, str]], results: list[str]) -> None:
    """No output may replace an input: the config, the dataset's files, a results file."""
    inputs: list[tuple[str, str | Path]] = [("config", config.path)]
    spec = config.model.dataset
    for key in ("path", "qrels", "queries", "corpus"):
        value = getattr(spec, key)
        if value:
            inputs.append(("dataset", config.resolve(value)))
    inputs += [("results", path) for path in results]
    for flag, path in outputs:
        check_output(path, flag, inputs)


def _from_run(config: LoadedConfig, progress: bool | None) -> tuple[Dataset, list[Ranked], int]:
    """Run the config's retrievers (nothing written); each one's rankings, best first."""
    try:
        with plugin_output_to_stderr():  # a plug-in's prints must not mix with the summary line
            run = execute(config, progress=progress)
    except RetrieverRunError as error:
        raise RetrieverError(f"{config.path}: {error}", problems=error.problems) from error
    for outcome in run.outcomes:
        for warning in outcome.warnings:
            print(f"rag-eval: warning: {warning}", file=sys.stderr)
    answers = [
        Ranked(outcome.label, {qid: ranked_ids(scores) for qid, scores in outcome.ranking.items()},
               f"{config.path}: retriever {outcome.label!r}")
        for outcome in run.outcomes
    ]
    return run.dataset, answers, config.model.top_k


def _from_results(paths: list[str]) -> tuple[list[Ranked], int | None]:
    """The rankings of results files; a label two files share is told apart by the file's path."""
    files: list[ResultsFile] = [load_results_file(path) for path in paths]
    labels = Counter(results.label for results in files)
    answers = []
    for results in files:
        name = results.label if labels[results.label] == 1 else f"{results.label} ({results.path})"
        rankings = {qid: ranked_ids({doc: score for doc, score, _ in entries})
                    for qid, entries in results.rankings.items()}
        answers.append(Ranked(name, rankings, results.path))
    top_ks = [results.top_k for results in files if results.top_k is not None]
    return answers, min(top_ks) if top_ks else None
