"""The extension API: what a plug-in author imports (pinned; tests/test_public_api.py holds it).

A retriever or a chunker needs no import from rag_eval at all (any class with
``index``/``search``, or ``chunk``, plugs in); these names are for authors who want the
types, the parameter checking of the built-ins, or the building blocks of the scale path:

- the retriever seam: :class:`Retriever`, :data:`Corpus`, :data:`Queries`, :data:`Ranking`,
  :func:`passage_text` (the text a built-in retriever indexes: title and text);
- :func:`retriever_factory`: mark a function (not a class) as a factory a config may name;
- :class:`AdapterParams`: the base of a retriever's pydantic ``Params`` model, checked by
  ``rag-eval validate`` without building the retriever (docs/plugins.md);
- :class:`Chunk`: what a chunker returns, a span ``[start, end)`` of a document with its text;
  :func:`build_chunker`: a ``chunking:`` entry of a config as a chunker, to cut documents in Python;
- :func:`chunker_function`: mark a function (not a class) as a chunker a config may name;
- :func:`encode_on_ray`, :class:`EmbeddingStore`, :class:`ExecutionSpec`: encoding a corpus on a
  Ray cluster into rag_eval's per-passage embedding store, without a config (docs/scale.md);
- :class:`JudgeGrade` and :func:`judge_factory`: what a judge returns for each passage, and the mark a
  judge factory function needs before a judge config may name it (docs/judging.md);
- :func:`config_corpus`: the passages a run config's dataset gives its retrievers, for a factory that
  fills a store with exactly those (docs/integrations.md);
- :class:`EmbeddingBridge`: rag_eval's encoder and embedding cache (the numbers of ``adapter: dense``)
  as a LangChain, LlamaIndex or Haystack embedder, to fill a team's store with the same vectors
  (docs/integrations.md).

Everything else in the package is private (its modules live in packages whose names start
with ``_``) and may change in any release; docs/architecture.md says how the package is laid out.
"""

from __future__ import annotations

from rag_eval._core.spans import Chunk
from rag_eval._data.config.execution import ExecutionSpec
from rag_eval._data.datasets.model import passage_text
from rag_eval._execution.ray_engine import encode_on_ray
from rag_eval._models.chunking import build_chunker
from rag_eval._models.chunking.custom import chunker_function
from rag_eval._models.embeddings.store import EmbeddingStore
from rag_eval._models.judges.base import JudgeGrade, judge_factory
from rag_eval._retrievers.base import Corpus, Queries, Ranking, Retriever
from rag_eval._retrievers.external.embedding_bridge import EmbeddingBridge
from rag_eval._retrievers.params import AdapterParams
from rag_eval._retrievers.registry import retriever_factory
from rag_eval._run.corpus_of import config_corpus

__all__ = [  # sorted; tests/test_public_api.py pins it
    "AdapterParams",
    "Chunk",
    "Corpus",
    "EmbeddingBridge",
    "EmbeddingStore",
    "ExecutionSpec",
    "JudgeGrade",
    "Queries",
    "Ranking",
    "Retriever",
    "build_chunker",
    "chunker_function",
    "config_corpus",
    "encode_on_ray",
    "judge_factory",
    "passage_text",
    "retriever_factory",
]
