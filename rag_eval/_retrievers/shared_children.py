"""Within one run, equal nested retrievers are built, indexed and searched once.

A sweep over a hybrid's fusion (``method``, ``k``, weights) or over a cross-encoder's
re-ranking settings builds the same first-stage retrievers for every variant: the same
bm25 index, the same dense embeddings. Inside :func:`sharing` (the runner opens it for
the whole run), :func:`shared` hands every parent asking for an equal child (same
built-in adapter, same parameters) one :class:`SharedChild`, which indexes a corpus
once and answers a repeated search (same queries, same depth) from memory.

Only built-in adapters are shared (:data:`rag_eval._data.config.adapters.BUILTIN`): a
plug-in may keep state between calls that sharing would change. The memo holds weak
references, so a child is freed as soon as the last variant using it has run (the
runner drops each retriever once it is done), exactly as without sharing.

What a child returns is the same object state either way: bm25 and dense rankings
depend only on the corpus, the queries and the depth, which are all part of the
memo's keys.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from rag_eval._data.config.adapters import BUILTIN
from rag_eval._retrievers.base import describe
from rag_eval._retrievers.corpus_digest import corpus_digest

_MEMO: ContextVar[weakref.WeakValueDictionary[str, SharedChild] | None] = ContextVar("shared_children", default=None)


@contextmanager
def sharing() -> Iterator[None]:
    """Share equal nested retrievers among the parents built inside this block."""
    token = _MEMO.set(weakref.WeakValueDictionary())
    try:
        yield
    finally:
        _MEMO.reset(token)


def shared(adapter: str, params: Mapping[str, Any], build: Callable[[], Any]) -> Any:
    """The child ``build()`` makes, or the equal one already built in this run (see the module docstring)."""

    memo = _MEMO.get()
    if memo is None or adapter not in BUILTIN:
        return build()
    try:
        key = json.dumps([adapter, params], sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return build()  # parameters that are not plain data: not provably equal, so not shared
    child = memo.get(key)
    if child is None:
        child = SharedChild(build())
        memo[key] = child
    return child


class SharedChild:
    """A nested retriever used by several parents: index once per corpus, search once per (queries, depth)."""

    def __init__(self, retriever: Any) -> None:
        self.retriever = retriever
        self._corpus: str | None = None
        self._answers: dict[tuple[str, int], dict[str, dict[str, float]]] = {}
        #: How many index() and search() calls were answered without calling the retriever (tests read it).
        self.reused = {"index": 0, "search": 0}

    def index(self, corpus: Mapping[str, Any]) -> None:
        """Index ``corpus`` unless this child already indexed an equal one."""

        digest = corpus_digest(corpus, {})
        if digest == self._corpus:
            self.reused["index"] += 1
            return
        self._corpus = None  # a failing index() must not leave the old corpus marked as indexed
        self._answers.clear()
        self.retriever.index(corpus)
        self._corpus = digest

    def search(self, queries: Mapping[str, str], top_k: int) -> Any:
        """The retriever's answer; a repeated (queries, top_k) is answered from memory (a fresh copy)."""
        key = (json.dumps(sorted(queries.items()), ensure_ascii=False), top_k)
        answer = self._answers.get(key)
        if answer is None:
            fresh = self.retriever.search(queries, top_k)
            if not _plain(fresh):
                return fresh  # an answer of unusual shape is passed on, never stored
            answer = {qid: dict(docs) for qid, docs in fresh.items()}
            self._answers[key] = answer
        else:
            self.reused["search"] += 1
        return {qid: dict(docs) for qid, docs in answer.items()}  # the parent may change what it gets

    def describe(self) -> Any:
        """The wrapped retriever's description."""

        return describe(self.retriever, None)

    def __getattr__(self, name: str) -> Any:
        # Parents read attributes of their children (e.g. a model's identity for the ranking cache key).
        return getattr(self.retriever, name)


def _plain(answer: Any) -> bool:
    return isinstance(answer, Mapping) and all(isinstance(docs, Mapping) for docs in answer.values())
