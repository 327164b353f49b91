"""The evaluation engine: judgements and runs as columns, ranked and joined for the metric kernels.

Everything outside this package uses only the names below; the modules inside
are free to change (they are tuned for speed and memory, see benchmarks/README.md):

- reading files: :func:`read_qrels`, :func:`read_run`, :func:`read_judgements`
  (TREC or BEIR qrels, told apart by content; returns the :class:`Layout` read,
  e.g. :data:`BEIR_QRELS`). Every problem is one :class:`~rag_eval._core.errors.InputFormatError`
  line naming the file and the line.
- in-memory data: :func:`from_nested` (``{qid: {doc_id: value}}``),
  :func:`from_dataframe`, and back with :func:`to_nested`. Ids follow the rule of
  rag_eval._core.ids in every path, files or dicts, except the doc ids of a run given as dicts,
  which cannot change a number unless judged (see :func:`from_nested`).
- :func:`prepare` (judgements, run) -> :class:`JoinedRun`, whose ``ranked`` field is
  the kernels' input (:class:`~rag_eval._scoring.metrics.kernels.RankedJudgedRun`).
- :class:`FlatTable`: the type the readers return and :func:`prepare` takes.

Inside: ``reader`` (the TREC/BEIR reader's entry points), ``layout`` (the line formats),
``fast_reader`` (the numpy reader, any layout trec_eval reads), ``line_reader`` (the line-by-line
reader that names a problem's line), ``file_stamp`` (a file changed while read), ``fast_numbers``
(vectorised number parsing, exact as float() and strtod, 17-digit reprs included), ``packed_ids`` (ids of any length as packed UTF-8 words), ``flat_table``
(the columns), ``tables`` (building and checking them from dicts and DataFrames),
``pairs`` (hashing and matching (query, doc) pairs), ``ranks`` (the ranking rule,
vectorised) and ``join`` (:func:`prepare`).

Formatting a run as TREC text stays in rag_eval._core.trec: it turns dicts into lines and
needs none of this machinery (columns, packed ids, the join).
"""

from rag_eval._scoring.engine.flat_table import FlatTable
from rag_eval._scoring.engine.join import JoinedRun, prepare
from rag_eval._scoring.engine.layout import BEIR_QRELS, Layout
from rag_eval._scoring.engine.reader import read_judgements, read_qrels, read_run
from rag_eval._scoring.engine.tables import from_dataframe, from_nested, to_nested

__all__ = [
    "BEIR_QRELS",
    "FlatTable",
    "JoinedRun",
    "Layout",
    "from_dataframe",
    "from_nested",
    "prepare",
    "read_judgements",
    "read_qrels",
    "read_run",
    "to_nested",
]
