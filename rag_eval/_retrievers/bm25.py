"""BM25 through the bm25s library (sparse matrices, no Java, no server).

Tokens are bm25s's: runs of two or more word characters (``(?u)\\b\\w\\w+\\b``),
lowercased, stop words removed, stemmed. A one-character word is not a token, so a
passage or query made only of such words has no terms: such a query gets no
results, and a corpus without a single term gives no results to any query.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
from pydantic import Field, field_validator

from rag_eval._core.errors import RetrieverError
from rag_eval._core.ranking import id_rank
from rag_eval._core.topk import MAX_CELLS, select_top_k
from rag_eval._data.datasets.model import passage_text
from rag_eval._retrievers.params import AdapterParams, check_params
from rag_eval._retrievers.title_use import IGNORES, READS

ADAPTER = "bm25"


class BM25Params(AdapterParams):
    """Parameters of ``adapter: bm25``."""

    k1: float = Field(1.5, ge=0, allow_inf_nan=False, description="term-frequency saturation")
    b: float = Field(0.75, ge=0, le=1, description="length normalisation, 0 (none) to 1 (full)")
    delta: float = Field(0.5, ge=0, allow_inf_nan=False, description="lower bound of a match (bm25l / bm25+)")
    method: Literal["robertson", "lucene", "atire", "bm25l", "bm25+"] = Field(
        "lucene", description="the BM25 variant"
    )
    stemmer: str | None = Field("english", description='a Snowball language such as "english", or null for none')
    stopwords: str | list[str] | None = Field("english", description='"english", a list of words, or null')
    lowercase: bool = Field(True, description="lowercase before tokenising")
    include_title: bool = Field(True, description="index title + text (false: text only)")
    show_progress: bool = Field(False, description="bm25s progress bars")

    @field_validator("stemmer")
    @classmethod
    def _stemmer_exists(cls, value: str | None) -> str | None:
        _stemmer(value)  # PyStemmer is a small C extension: checking costs nothing
        return value

    @field_validator("stopwords")
    @classmethod
    def _stopwords_known(cls, value: str | list[str] | None) -> str | list[str] | None:
        if isinstance(value, str):
            value = value.lower()  # bm25s knows "german", not "German"
            if value != "english":  # the default is known; any other name asks bm25s
                _stopword_list(value)
        return value


class BM25Retriever:
    """Okapi BM25 over title + text (parameters: :class:`BM25Params`).

    Documents that match no query term are not returned (their score would be 0).
    The top ``top_k`` follow the ranking rule: ties at the cut-off keep the greater doc ids.
    """

    Params = BM25Params

    @classmethod
    def title_use(cls, params: Mapping[str, Any]) -> str:
        """Title + text, unless ``include_title: false`` (rag_eval._retrievers.title_use)."""
        return IGNORES if params.get("include_title") is False else READS

    def __init__(self, **params: Any) -> None:
        settings = check_params(BM25Params, params, ADAPTER)
        self.params = settings.model_dump(exclude={"show_progress"})
        self.show_progress = settings.show_progress
        self._stem = _stemmer(settings.stemmer)
        self._model: Any = None
        self._indexed = False
        self._doc_ids: list[str] = []
        self._id_ranks = np.empty(0, dtype=np.int64)

    def _tokenize(self, texts: list[str], return_ids: bool) -> Any:
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
        self._id_ranks = id_rank(self._doc_ids)
        texts = [
            passage_text(p) if self.params["include_title"] else (p.get("text") or "") for p in corpus.values()
        ]
        tokens = self._tokenize(texts, return_ids=True)
        self._indexed = True
        if not tokens.vocab:
            # No passage has a single term (bm25s would fail on max() of an empty vocabulary):
            # nothing can match, so every query gets no results.
            self._model = None
            return
        model = bm25s.BM25(
            k1=self.params["k1"], b=self.params["b"], delta=self.params["delta"], method=self.params["method"]
        )
        model.index(tokens, show_progress=self.show_progress)
        self._model = model

    def search(self, queries: Mapping[str, str], top_k: int) -> dict[str, dict[str, float]]:
        """Top ``top_k`` passages per query by BM25 score (score > 0 only)."""
        if not self._indexed:
            raise RetrieverError("bm25: search() called before index()")
        qids = list(queries)
        out: dict[str, dict[str, float]] = {q: {} for q in qids}
        if not qids or self._model is None:
            return out
        tokens = self._tokenize([queries[q] for q in qids], return_ids=False)
        # Queries made only of unknown, stop or one-character words match nothing: skip them.
        vocab = self._model.vocab_dict
        known = [(qids[i], [t for t in toks if t in vocab]) for i, toks in enumerate(tokens)]
        known = [(qid, toks) for qid, toks in known if toks]
        rows = max(1, MAX_CELLS // max(1, len(self._doc_ids)))
        for start in range(0, len(known), rows):
            batch = known[start : start + rows]
            scores = np.vstack([self._model.get_scores(toks) for _, toks in batch])
            best = select_top_k(scores, self._id_ranks, top_k)
            for row, (qid, _) in enumerate(batch):
                ranked = out[qid]
                for column in best[row].tolist():
                    score = float(scores[row, column])
                    if score > 0:
                        ranked[self._doc_ids[column]] = score
        return out

    def describe(self) -> dict[str, Any]:
        """Library, version and every BM25 parameter."""
        import bm25s

        return {"library": f"bm25s {bm25s.__version__}", **self.params}


def _stopword_list(language: str) -> Any:
    """bm25s's stop words of ``language`` ("german", "de", ...): bm25s decides what it knows, before indexing."""
    import bm25s.tokenization

    infer = getattr(bm25s.tokenization, "_infer_stopwords", None)  # private: a bm25s without it checks at index()
    if infer is None:
        return None
    try:
        return infer(language)
    except ValueError as error:
        said = " ".join(str(error).split()).split(" Please")[0]  # bm25s's words, without its own advice
        raise RetrieverError(f"bm25s: {said} Give one of those languages, a list of words, or null for none") from None


def _stemmer(language: str | None) -> Any:
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
            f"no Snowball stemmer for {language!r}; use one of {', '.join(Stemmer.algorithms())} or null"
        ) from None
