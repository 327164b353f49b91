"""``judgements merge`` on files: read the sheet and the query set, plan (rag_eval/_data/judging/merge.py), edit
the YAML tree (rag_eval/_data/judging/yaml_edit.py), check, write.

Before anything is written, the new text is parsed and compared with the old text's data changed by
the same edits: the round-trip writer has limits (a comment where it does not expect one), and a
text that would say anything else is refused. Then it is loaded with rag_eval's query-set loader and
every merged grade read back from it (a difference is a bug, and is never written). The file is replaced atomically; if its bytes changed since they were read
(someone saved it during the merge), the merge is refused and the file left as that person saved it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_eval._core.atomic import atomic_writer
from rag_eval._core.errors import DatasetError, RagEvalError
from rag_eval._core.files import MAX_DOCUMENT_BYTES, read_bytes
from rag_eval._core.yaml_loader import parse_yaml
from rag_eval._data.datasets import Dataset
from rag_eval._data.datasets.query_set import load_yaml_query_set
from rag_eval._data.judging import yaml_edit
from rag_eval._data.judging.merge import (
    Counts,
    Edits,
    Line,
    MergeRefused,
    check_lines,
    graded_lines,
    plan,
    raw_id,
)
from rag_eval._data.judging.sheet import read_sheet

YAML_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Merged:
    """What a merge did: its counts, whether the file was written, and how many other lines the writer changed."""

    counts: Counts
    written: bool
    reformatted: int = 0  # lines outside the merged ones that the YAML writer could not keep as they were


def merge_sheet(sheet: str, query_set: str, resolve: str | None = None) -> Merged:
    """Merge the graded rows of ``sheet`` into ``query_set`` (see rag_eval/_data/judging/merge.py).

    ``resolve``: None (conflicts refused), ``"keep"`` or ``"replace"``. Raises :class:`MergeRefused`
    (every problem or conflict in ``problems``) or another RagEvalError; nothing is written then.
    """
    rows = read_sheet(sheet)
    target = _query_set_path(query_set)
    read_bytes(target, "YAML query set", MAX_DOCUMENT_BYTES, DatasetError)  # the file checks, one line each
    original = target.read_bytes()
    text = _decode(target, original)
    body = text.removeprefix("\ufeff")
    dataset = load_yaml_query_set(target, text=body)
    lines, ungraded = graded_lines(sheet, rows)
    problems = check_lines(lines, dataset)
    if problems:
        raise MergeRefused(_refused(problems, f"{len(problems)} rows of {sheet} cannot be merged"), problems=problems)
    counts = Counts(ungraded=ungraded)
    edits, conflicts = plan(lines, dataset, resolve, counts)
    if conflicts:
        summary = (f"{len(conflicts)} grade{'s' if len(conflicts) > 1 else ''} of {sheet} conflict with {query_set}; "
                   "nothing written: rerun with --resolve keep (keep the query set's grades) or --resolve replace "
                   "(take the sheet's)")
        raise MergeRefused(summary, problems=conflicts)
    if not counts.changed:
        return Merged(counts, written=False)
    try:
        document = yaml_edit.load(text)
    except Exception as error:  # noqa: BLE001 (rag_eval's loader read it: a YAML the round-trip parser refuses)
        raise DatasetError(f"{query_set}: cannot be rewritten with its comments ({type(error).__name__}: "
                           f"{' '.join(str(error).split())[:200]}); merge by hand") from None
    untouched = document.dump() if not document.exact else text
    expected = parse_yaml(body, target, DatasetError)  # the same edits on the data a plain parser reads
    apply(expected, edits)
    apply(document.tree, edits)
    new_text = document.dump()
    _check_faithful(target, new_text.removeprefix("\ufeff"), expected, text, untouched)
    _check(target, new_text.removeprefix("\ufeff"), edits)
    _write(target, original, new_text)
    reformatted = 0 if document.exact else yaml_edit.changed_lines(text, untouched)
    return Merged(counts, written=True, reformatted=reformatted)


def apply(tree: Any, edits: Edits) -> None:
    """Make ``edits`` in the round-trip tree of the query set (the order keeps evidence indices valid)."""
    queries = {raw_id(item.get("id")): item for item in tree["queries"] if hasattr(item, "get")}
    for (qid, unit), line in edits.judgements.items():
        query = queries[qid]
        judgements = query.get("judgements")
        if judgements is None:
            if line is None:
                continue
            judgements = yaml_edit.block_map()
            if "judgements" in query:
                query["judgements"] = judgements
            else:
                yaml_edit.append(query, judgements, key="judgements")
        key = next((key for key in judgements if raw_id(key) == unit), None)
        if line is None:
            if key is not None:
                _remove(query, "judgements", key)
        elif key is not None:
            judgements[key] = _judgement(line)
        else:
            yaml_edit.append(judgements, _judgement(line), key=unit)
    for (qid, index), line in edits.regraded.items():
        _regrade(queries[qid]["evidence"][index], line)
    for qid, index in sorted(edits.removed, key=lambda item: (str(item[0]), -item[1])):
        _remove(queries[qid], "evidence", index)
    for line in edits.added:
        query = queries[line.row.query_id]
        evidence = query.get("evidence")
        if evidence is None:
            evidence = yaml_edit.block_seq()
            if "evidence" in query:
                query["evidence"] = evidence
            else:
                yaml_edit.append(query, evidence, key="evidence")
        yaml_edit.append(evidence, _evidence(line))


def _remove(query: Any, name: str, key: Any) -> None:
    """Remove an item of the query's ``judgements`` or ``evidence``; the last one takes the key with it."""
    if len(query[name]) == 1:
        yaml_edit.delete(query, name)
    else:
        yaml_edit.delete(query[name], key)


def _number(grade: float) -> int | float:
    return int(grade) if grade.is_integer() else grade


def _provenance(line: Line) -> dict[str, Any]:
    out: dict[str, Any] = {"grade": _number(line.grade), "source": line.row.source}
    if line.row.annotator:
        out["annotator"] = line.row.annotator
    if line.row.time:
        out["time"] = line.row.time
    return out


def _judgement(line: Line) -> Any:
    return yaml_edit.flow_map(_provenance(line))


def _evidence(line: Line) -> Any:
    return yaml_edit.flow_map({"doc": line.row.doc, "start": line.row.start, "end": line.row.end, **_provenance(line)})


def _regrade(item: Any, line: Line) -> None:
    """An evidence item's grade and provenance replaced; an annotator or time of the old grade removed."""
    values = _provenance(line)
    for key in ("annotator", "time"):
        if key in item and key not in values:
            yaml_edit.delete(item, key)
    for key, value in values.items():
        if key in item:
            item[key] = value
        else:
            yaml_edit.append(item, value, key=key)


def _check_faithful(target: Path, text: str, expected: Any, original: str, untouched: str) -> None:
    """The new text must read as the old one with the edits, and nothing else (the round-trip writer has limits)."""
    try:
        same = parse_yaml(text, target, DatasetError) == expected
    except DatasetError:
        same = False
    if not same:
        where = next((n for n, (a, b) in enumerate(zip(original.splitlines(), untouched.splitlines()), start=1) if a != b),
                     None)
        near = f" (near line {where})" if where is not None else ""
        raise DatasetError(f"{target}: the YAML writer cannot rewrite this file without changing what it says{near}; "
                           "nothing written: add the judgements by hand, or move the comments around them")


def _check(target: Path, text: str, edits: Edits) -> None:
    """The new text loads, and holds each merged grade (else: a bug, and nothing is written)."""
    try:
        merged = load_yaml_query_set(target, text=text)
    except RagEvalError as error:
        raise RagEvalError(f"{target}: internal error: the merged query set would not load ({error}); nothing "
                           "written, please report it") from None
    wrong = _differences(merged, edits)
    if wrong:
        raise RagEvalError(f"{target}: internal error: the merged query set reads back {wrong}; nothing written, "
                           "please report it")


def _differences(merged: Dataset, edits: Edits) -> str:
    explicit = merged.document_judgements if merged.has_documents else merged.judgements
    for (qid, unit), line in edits.judgements.items():
        got = explicit.get(qid, {}).get(unit)
        if got != (None if line is None else line.grade):
            return f"query {qid!r}, {unit!r}: grade {got}"
    spans = {(qid, span.doc, span.start, span.end, span.grade) for qid, items in merged.evidence.items() for span in items}
    for line in [*edits.added, *edits.regraded.values()]:
        row = line.row
        if (row.query_id, row.doc, row.start, row.end, line.grade) not in spans:
            return f"query {row.query_id!r}: no evidence [{row.start}, {row.end}) of {row.doc!r} graded {line.grade:g}"
    return ""


def _write(target: Path, original: bytes, text: str) -> None:
    """Replace the file atomically, unless someone changed it since it was read."""
    changed = MergeRefused(f"{target}: the query set changed while the merge ran (saved by someone else?); "
                           "nothing written: merge again")
    try:
        with atomic_writer(target) as handle:
            handle.write(text.encode("utf-8"))
            # Checked once the new file is complete, just before it replaces the old one.
            if target.read_bytes() != original:
                raise changed
    except FileNotFoundError:
        raise changed from None
    except OSError as error:
        raise DatasetError(f"{target}: cannot be written ({error.strerror or error}); nothing changed") from None


def _query_set_path(value: str) -> Path:
    path = Path(value)
    if path.suffix.lower() not in YAML_SUFFIXES:
        raise DatasetError(f"--into {value}: merge writes into a YAML query set (.yaml or .yml); convert other "
                           "datasets to one first")
    return path.resolve() if path.is_symlink() else path


def _decode(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DatasetError(f"{path}: not UTF-8 (byte {error.start}); save the query set as UTF-8") from None


def _refused(problems: list[str], summary: str) -> str:
    return problems[0] if len(problems) == 1 else f"{summary}; nothing written (each listed above)"
