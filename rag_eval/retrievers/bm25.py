"""BM25 through the bm25s library (sparse matrices, no Java, no server)."""

from __future__ import annotations

from typing import Any, Mapping

from rag_eval.errors import RetrieverError
from rag_eval.retrievers.base import passage_text

METHODS = ("robertson", "lucene", "atire", "bm25l", "bm25+")


class BM25Retriever:
    """Okapi BM25 over title + text.

    Parameters: ``k1`` (1.5), ``b`` (0.75), ``delta`` (0.5, for bm25l / bm25+),
    ``method`` (lucene | robertson | atire | bm25l | bm25+), ``stemmer`` (a Snowball
    language such as "english", or null for none), ``stopwords`` ("english", a
    list of words, or null), ``lowercase`` (true), ``include_title`` (true).
    Documents that match no query term are not returned (their score would be 0).
    """

    def __init__(
        self,
        k1: float = 1.5,
        b: float = 0.75,
        delta: float = 0.5,
        method: str = "lucene",
        stemmer: str | None = "english",
        stopwords: str | list[str] | None = "english",
        lowercase: bool = True,
        include_title: bool = True,
        show_progress: bool = False,
    ) -> None:
        if method not in METHODS:
            raise RetrieverError(f"bm25: method {method!r} is not one of {', '.join(METHODS)}")
        if k1 < 0 or not 0 <= b <= 1:
            raise RetrieverError(f"bm25: need k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}")
        self.params = {
            "k1": k1, "b": b, "delta": delta, "method": method, "stemmer": stemmer,
            "stopwords": stopwords, "lowercase": lowercase, "include_title": include_title,
        }
        self.show_progress = show_progress
        self._stem = _stemmer(stemmer)
        self._model = None
        self._doc_ids: list[str] = []

    def _tokenize(self, texts: list[str], return_ids: bool):
        import bm25s

        return bm25s.tokenize(
            texts,
            lower=self.params["lowercase"],
            stopwords=self.params["stopwords"] or [],
            stemmer=self._stem,
            return_ids=return_ids,
            show_progress=False,
        )

    def index(self, corpus: Mapping[str, Mapping[str, str]]) -> None:
        """Tokenise and index every passage."""
        import bm25s

        self._doc_ids = list(corpus)
        texts = [
            passage_text(p) if self.params["include_title"] else (p.get("text") or "") for p in corpus.values()
        ]
        model = bm25s.BM25(
            k1=self.params["k1"], b=self.params["b"], delta=self.params["delta"], method=self.params["method"]
        )
        model.index(self._tokenize(texts, return_ids=True), show_progress=self.show_progress)
        self._model = model

    def search(self, queries: Mapping[str, str], top_k: int) -> dict[str, dict[str, float]]:
        """Top ``top_k`` passages per query by BM25 score (score > 0 only)."""
        if self._model is None:
            raise RetrieverError("bm25: search() called before index()")
        qids = list(queries)
        if not qids:
            return {}
        k = min(top_k, len(self._doc_ids))
        tokens = self._tokenize([queries[q] for q in qids], return_ids=False)
        out: dict[str, dict[str, float]] = {q: {} for q in qids}
        # Queries made only of unknown or stop words would match nothing: skip them.
        vocab = self._model.vocab_dict
        known = [i for i, toks in enumerate(tokens) if any(t in vocab for t in toks)]
        if not known:
            return out
        docs, scores = self._model.retrieve(
            [[t for t in tokens[i] if t in vocab] for i in known], k=k, show_progress=self.show_progress
        )
        for row, i in enumerate(known):
            ranked = out[qids[i]]
            for doc_index, score in zip(docs[row].tolist(), scores[row].tolist()):
                if score > 0:
                    ranked[self._doc_ids[doc_index]] = float(score)
        return out

    def describe(self) -> dict[str, Any]:
        """Library, version and every BM25 parameter."""
        import bm25s

        return {"library": f"bm25s {bm25s.__version__}", **self.params}


def _stemmer(language: str | None):
    if not language:
        return None
    try:
        import Stemmer
    except ImportError:
        raise RetrieverError("bm25: stemming needs PyStemmer (pip install PyStemmer), or set stemmer: null") from None
    try:
        return Stemmer.Stemmer(language).stemWords
    except KeyError:
        raise RetrieverError(
            f"bm25: no Snowball stemmer for {language!r}; use one of {', '.join(Stemmer.algorithms())} or null"
        ) from None
