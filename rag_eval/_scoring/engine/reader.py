"""Reading TREC qrels and run files (and BEIR qrels) into columns: fast, with exact error locations.

qrels: ``qid iter doc_id grade``; run: ``qid Q0 doc_id rank score tag``; BEIR
qrels: a header ``query-id corpus-id score``, then ``qid doc_id grade``. As in
trec_eval, fields are separated by ASCII whitespace only (space, tab, \\v, \\f): a
non-breaking space or any other character is part of an id; fields after a run's
tag are ignored. Ids may be of any length and hold any UTF-8 text except control
characters (rag_eval._core.ids). Lines end with \\n or \\r\\n; a carriage return anywhere
else is an error, because trec_eval reads a file with CR-only line endings as one
line. A leading UTF-8 byte-order mark is not part of the content.

Files are parsed with numpy (rag_eval._scoring.engine.fast_reader), whatever the blanks between
fields; a file in which it finds a problem is read line by line (rag_eval._scoring.engine.line_reader),
and that reader names the exact line and what is wrong with it. Numbers are read exactly as
Python's float() reads them (rag_eval._scoring.engine.fast_numbers). The formats themselves are the
layouts of rag_eval._scoring.engine.layout.
"""

from __future__ import annotations

from pathlib import Path

from rag_eval._core.errors import InputFormatError
from rag_eval._core.files import BOM, check_input_file
from rag_eval._scoring.engine.fast_reader import Irregular, read_fast
from rag_eval._scoring.engine.flat_table import FlatTable
from rag_eval._scoring.engine.layout import BEIR_QRELS, TREC_QRELS, TREC_RUN, Layout
from rag_eval._scoring.engine.line_reader import read_lines
from rag_eval._scoring.engine.pairs import check_unique_pairs
from rag_eval._scoring.engine.ranks import RunRanker
from rag_eval._scoring.engine.tables import check_values


def read_qrels(path: str | Path) -> FlatTable:
    """Read a TREC qrels file into judgement columns."""
    return read_table(path, TREC_QRELS)


def read_run(path: str | Path) -> FlatTable:
    """Read a TREC run file into run columns (the rank column is ignored)."""
    return read_table(path, TREC_RUN)


def qrels_layout(path: str | Path) -> Layout:
    """BEIR_QRELS when the file's first line is the BEIR header ``query-id corpus-id score``, else TREC_QRELS."""
    path = check_input_file(path, "qrels file")
    fields: list[bytes] = []
    try:
        with path.open("rb") as handle:
            for _ in range(100):  # the first line that is not blank
                fields = handle.readline(4096).removeprefix(BOM).split()
                if fields or handle.peek(1) == b"":
                    break
    except OSError as failure:
        raise InputFormatError(f"{path}: cannot be read ({failure.strerror or failure})") from None
    return BEIR_QRELS if fields[:1] == [b"query-id"] else TREC_QRELS


def read_judgements(path: str | Path) -> tuple[FlatTable, Layout]:
    """Read TREC or BEIR qrels, whichever the content is (see :func:`qrels_layout`)."""
    layout = qrels_layout(path)
    return read_table(path, layout), layout


def read_table(path: str | Path, layout: Layout) -> FlatTable:
    """Read a file of ``layout`` into a checked :class:`FlatTable`.

    Every problem is an :class:`InputFormatError` of one line naming the file and,
    where there is one, the line.
    """
    path = check_input_file(path, f"{layout.name} file")
    try:
        table = read_fast(path, layout)
    except Irregular:
        table = read_lines(path, layout)  # raises a located error, or reads the irregular layout
    if not len(table):
        if layout.what == "judgements":
            raise InputFormatError(
                f"{path}: holds no judgements; expected lines '{' '.join(layout.columns)}'"
                + (" after the header" if layout.header else "")
            )
        return table
    try:
        check_values(table, layout.what)
        if layout.what == "run":
            # A run out of order is sorted for ranking (engine.ranks) on a second thread from now on,
            # while its pairs are checked and joined; prepare() takes the ranker from the cache.
            table._cache["ranker"] = RunRanker(table, background=True)
        check_unique_pairs(table, layout.what)
    except InputFormatError as error:
        read_lines(path, layout)  # names the line
        raise InputFormatError(f"{path}: {error}") from None

    # A problem found later (a repeated pair, when the run is hashed another way) is named too.
    def locate_error() -> None:
        read_lines(path, layout)

    table.locate_error = locate_error
    return table
