"""``rag-eval judgements check QUERY_SET [--fix]``: each evidence judgement valid, moved, changed or gone.

One line per evidence item that is not valid (its place, query, document, old span, status,
new span and why), then one summary line with the counts. Exit 0 when every item is valid
(or, with ``--fix``, when every stale one was moved and is now written), 1 when any is moved,
changed or gone, 2 for bad input. ``--fix`` writes the moved items' new offsets (and, for a
quote or a recorded text found with white space or case ignored, the document's text there)
into the query set, keeping its comments and order (rag_eval._data.judging.rewrite); changed
and gone items are listed for a person to judge again, never guessed. The statuses are
rag_eval._data.judging.anchor's.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rag_eval._core.messages import shown
from rag_eval._data.judging.anchor import (
    CHANGED,
    GONE,
    MOVED,
    STALE,
    UNCHECKED,
    VALID,
    Finding,
    check_item,
    span_sha256,
)
from rag_eval._data.judging.evidence_file import Entry, read_evidence_file
from rag_eval._data.judging.rewrite import rewrite_yaml


def main(args: argparse.Namespace, say: Callable[[str], None]) -> int:
    """Check (and with ``args.fix`` re-anchor) the evidence of ``args.query_set``; the exit code."""
    path = Path(args.query_set)
    read = read_evidence_file(path)
    findings = [(entry, check_item(read.documents, entry.item)) for entry in read.entries]
    for entry, finding in findings:
        if finding.status in STALE:
            say(finding_line(entry, finding))
    counts = Counter(finding.status for _, finding in findings)
    say(f"{path}: {summary(counts)}")
    moved = [(entry, finding) for entry, finding in findings if finding.status == MOVED]
    left = counts[CHANGED] + counts[GONE]
    if not args.fix:
        if moved:
            say(f"{path}: rag-eval judgements check --fix writes the {len(moved):,} moved span(s)")
        return 1 if moved or left else 0
    if moved:
        rewrite_yaml(path, read.content, lambda data: fix(data, moved))
        say(f"{path}: wrote the new offsets of {len(moved):,} moved evidence item(s)")
    if left:
        say(f"{path}: {left:,} changed or gone evidence item(s) left as they are: judge them again, or remove them")
    return 1 if left else 0


def summary(counts: Counter[str]) -> str:
    """``12 evidence judgements: 8 valid, 2 moved, 1 changed, 1 gone`` (and the unchecked ones, if any)."""
    total = sum(counts.values())
    line = (f"{total:,} evidence judgement{'s' if total != 1 else ''}: {counts[VALID]:,} valid, {counts[MOVED]:,} moved, "
            f"{counts[CHANGED]:,} changed, {counts[GONE]:,} gone")
    if counts[UNCHECKED]:
        line += (f"; {counts[UNCHECKED]:,} given by offsets alone, not checkable (record the span's text or sha256 "
                 "beside start and end)")
    return line


def finding_line(entry: Entry, finding: Finding) -> str:
    """``queries[0](q1).evidence[2]: query 'q1', document 'a.md', [3, 9): moved to [12, 18) (why)``."""
    item = finding.item
    old = f"[{item.start}, {item.end})" if item.quote is None else f"quote {shown(item.quote)}"
    status = finding.status
    if finding.status == MOVED and finding.new is not None:
        status = f"moved to [{finding.new[0]}, {finding.new[1]})"
    why = f" ({finding.why})" if finding.why else ""
    return f"{entry.where}: query {entry.qid!r}, document {item.doc!r}, {old}: {status}{why}"


def fix(data: Any, moved: list[tuple[Entry, Finding]]) -> None:
    """Write each moved item's new place into ``data`` (the parsed query set), as the item gives its place.

    Offsets: the new start and end, and the document's text there as ``text`` / its ``sha256``
    where the item records them (a tolerant match found a text that differs in white space or
    case). A quote: the document's text at the new place, so that it is found exactly again.
    """
    for entry, finding in moved:
        item = data["queries"][entry.query]["evidence"][entry.index]
        assert finding.new is not None and finding.new_text is not None  # a moved finding has both
        if entry.item.quote is not None:
            item["quote"] = finding.new_text
            continue
        item["start"], item["end"] = finding.new
        # Only a value that differs is assigned: an assigned one is written in the dumper's quoting, not the file's.
        if entry.item.text is not None and finding.new_text != entry.item.text:
            item["text"] = finding.new_text
        if entry.item.sha256 is not None and span_sha256(finding.new_text) != entry.item.sha256.lower():
            item["sha256"] = span_sha256(finding.new_text)
