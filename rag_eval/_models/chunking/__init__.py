"""Chunking documents into spans with exact offsets: the ``chunking:`` section of a config.

A config names chunkers, each a method and its parameters; a retriever names the one it reads::

    chunking:
      fixed_200:   {method: fixed, size: 200}
      rec_400:     {method: recursive, size: 400, overlap: 200}
      sent_400:    {method: sentences, size: 400, unit: tokens, tokenizer: all-MiniLM-L6-v2}
      sections:    {method: markdown, size: 800}
      mine:        {method: my_chunks:by_paragraph, params: {min_chars: 50}}

:func:`build_chunker` turns one entry into a :class:`Chunker`; ``Chunker.chunk(documents)``
returns :class:`rag_eval._core.spans.Chunk` s whose text is exactly ``document[start:end]``
(code points, end exclusive). :func:`check_chunker` validates an entry without building it.
docs/chunking.md is the user's guide; rag_eval._models.chunking.methods says what each method does.

How the built-in methods cut
----------------------------
``fixed`` cuts windows over the tokenizer's own offsets; ``recursive``, ``sentences`` and
``markdown`` use rag_eval's splitter (rag_eval._models.chunking.packing): the algorithm of
semantic-text-splitter, the library rag_eval used before, with sizes read from one
tokenization of each document (rag_eval._models.chunking.measure) and Unicode segmentation of
its own (rag_eval._models.chunking.segments); markdown-it-py finds heading sections and the
markdown structure (rag_eval._models.chunking.sections).

Four libraries were compared on the 1.4 MB chroma corpus first (5 markdown files,
shared/datasets/chroma_chunking; one run on 2 shared cores; "bad" = chunks whose offsets
do not reproduce their text; sizes in rag_eval's word tokens unless said):

======================== ==================================== ========= ======= ===========================
library (version)        chunker                              chunks    bad     seconds
======================== ==================================== ========= ======= ===========================
semantic-text-splitter   TextSplitter, words 400/200          1,137     0       3.1
(0.33.1)                 TextSplitter, characters 1600/800    1,510     0       0.06
                         TextSplitter, MiniLM tokens 400/200  1,300     0       19.6
                         MarkdownSplitter, words 800          434       0       0.9
semchunk (4.1.1)         chunk, words 400/200                 2,037     0       0.7
chonkie (1.7.0)          TokenChunker, MiniLM tokens 400/200  1,590     1,590   2.0
                         TokenChunker, "word" 400/200         1,134     0       0.2
                         SentenceChunker, words 400/100       924       0       0.5
                         RecursiveChunker, words 400          966       0       0.2
langchain-text-splitters RecursiveCharacterTextSplitter,      1,167     337     0.9
(1.1.3)                  words 400/200, add_start_index
======================== ==================================== ========= ======= ===========================

semantic-text-splitter was chosen (exact offsets for every splitter and sizer, UAX #29
segmentation, CommonMark markdown, overlap, any tokenizer without torch), but it sized
candidate chunks by tokenizing each of them: 18.6 s for ``recursive 400/200`` with the MiniLM
tokenizer, 6 times semchunk's time; and its time grew with the square of a line without line
breaks. rag_eval's splitter keeps its chunks (the same on the corpus for ``recursive`` and
``sentences``; see docs/chunking.md) at a small part of the time, linear on one-line text:
benchmarks/bench_chunking_vs_libraries.py measures it against semchunk, chonkie,
langchain-text-splitters and semantic-text-splitter, same documents, tokenizer and sizes.
"""

from __future__ import annotations

from rag_eval._models.chunking.chunker import Chunker, build_chunker, check_chunker, summarize_chunks
from rag_eval._models.chunking.params import BUILTIN_METHODS

__all__ = ["BUILTIN_METHODS", "Chunker", "build_chunker", "check_chunker", "summarize_chunks"]
