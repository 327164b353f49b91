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

Which library, and why
----------------------
Four libraries were compared on the 1.4 MB chroma corpus (5 markdown files,
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

- semantic-text-splitter (chosen): offsets exact for every splitter and sizer, on the
  corpus and on emoji/ZWJ/flag/CJK/combining/CRLF text; Unicode segmentation (UAX #29
  sentences and words, grapheme clusters) rather than a hand list of separators, so CJK
  sentences end at 。; a CommonMark parser for markdown; overlap; sizes in characters,
  any Python token counter, or a ``tokenizers`` tokenizer, without torch. One wheel, no
  dependencies. Its price: sizing by a Python counter calls it many times (3 s for the
  corpus with the word tokenizer; a model tokenizer is slower still), and its levels
  are fixed: no custom separator list.
- semchunk: exact and fast, one dependency (tqdm), but recursive splitting only: no
  sentence packing, no markdown, no separators.
- chonkie: fast, but TokenChunker rebuilds offsets by decoding tokens, so every chunk is
  misplaced with an uncased WordPiece tokenizer (all-MiniLM-L6-v2); its "word" tokenizer
  splits on spaces only; RecursiveChunker has no overlap; sentences come from a fixed
  delimiter list; markdown recipes are downloaded from the Hugging Face Hub. Pulls httpx,
  tenacity, tokie, chonkie-core and numpy>=2.
- langchain-text-splitters: ``add_start_index`` locates chunks with ``str.find`` from an
  offset computed in the length function's unit, so token-sized chunks with overlap get
  wrong offsets (337 of 1,167); MarkdownHeaderTextSplitter returns no offsets; pulls
  langchain-core, langsmith, httpx, requests, websockets, zstandard and more.

Glue kept small on top of it: ``fixed`` windows (no library cuts N-token windows at a
tokenizer's own offsets; see rag_eval._models.chunking.methods) and markdown heading sections
(markdown-it-py, a CommonMark parser, finds the heading lines).
"""

from __future__ import annotations

from rag_eval._models.chunking.chunker import Chunker, build_chunker, check_chunker, summarize_chunks
from rag_eval._models.chunking.params import BUILTIN_METHODS

__all__ = ["BUILTIN_METHODS", "Chunker", "build_chunker", "check_chunker", "summarize_chunks"]
