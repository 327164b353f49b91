"""The two built-in adapters without a model: ``static`` (replay a ranking) and ``bm25`` (bm25s).

BM25 values are computed by hand below with the formula bm25s documents for its
"lucene" variant (Kamphuis et al., ECIR 2020, as in Lucene >= 8, which drops the
constant (k1 + 1) factor):

    score(q, d) = sum over query terms t of idf(t) * tf / (tf + k1 * (1 - b + b * |d| / avgdl))
    idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))          (robertson: ln((N - df + 0.5) / (df + 0.5)), floored at 0)
"""

from __future__ import annotations

import json
import math

import pytest

from rag_eval._core.errors import RetrieverError
from rag_eval._retrievers import registry
from rag_eval._retrievers.bm25 import BM25Retriever
from rag_eval._retrievers.static import StaticRetriever

# ---- static -------------------------------------------------------------------------------------

CORPUS = {d: {"text": d, "title": ""} for d in ("a", "b", "c", "d1", "d2", "d3")}


def test_static_is_registered_and_describes_itself():
    retriever = registry.build("static", {"rankings": {"q1": ["a"]}})
    assert isinstance(retriever, StaticRetriever)
    assert retriever.describe() == {"source": "inline", "queries": 1}


def test_static_inline_list_keeps_the_order_given():
    retriever = StaticRetriever(rankings={"q1": ["d3", "d1", "d2"], 7: ["a"]})
    retriever.index(CORPUS)
    # The first document gets the highest score; YAML integer ids become strings.
    assert retriever.search({"q1": "x", "7": "y", "q-none": "z"}, top_k=10) == {
        "q1": {"d3": 3.0, "d1": 2.0, "d2": 1.0},
        "7": {"a": 1.0},
        "q-none": {},
    }
    assert retriever.search({"q1": "x"}, top_k=2) == {"q1": {"d3": 3.0, "d1": 2.0}}


def test_static_inline_scores_cut_at_top_k_in_trec_eval_order():
    # c first; a and b tie at the cutoff: trec_eval ranks the larger doc id first, so b stays.
    retriever = StaticRetriever(rankings={"q1": {"a": 1.0, "b": 1.0, "c": 2.0}})
    retriever.index(CORPUS)
    assert retriever.search({"q1": "x"}, top_k=2) == {"q1": {"c": 2.0, "b": 1.0}}


def test_static_replays_a_trec_run_file_ignoring_the_rank_column(tmp_path):
    path = tmp_path / "external.run"
    # Ranks contradict the scores on purpose: trec_eval (and rag_eval) rank by score.
    path.write_text("q1 Q0 d1 1 1.5 sys\nq1 Q0 d2 2 3.25 sys\nq2 Q0 a 1 -0.5 sys\n")
    retriever = StaticRetriever(path=str(path))
    retriever.index(CORPUS)
    assert retriever.search({"q1": "", "q2": ""}, 10) == {"q1": {"d2": 3.25, "d1": 1.5}, "q2": {"a": -0.5}}
    assert retriever.describe() == {"source": str(path), "queries": 2}


@pytest.mark.parametrize(
    "content, expected",
    [
        ({"q1": ["b", "a"]}, {"q1": {"b": 2.0, "a": 1.0}}),
        ({"q1": {"a": 0.25, "b": 0.75}}, {"q1": {"b": 0.75, "a": 0.25}}),
    ],
)
def test_static_replays_a_json_file(tmp_path, content, expected):
    path = tmp_path / "ranking.json"
    path.write_text(json.dumps(content))
    retriever = StaticRetriever(path=str(path))
    retriever.index(CORPUS)
    assert retriever.search({"q1": ""}, 10) == expected


def test_static_refuses_a_doc_not_in_the_corpus(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"q1": ["a", "zzz"]}))
    retriever = StaticRetriever(path=str(path))
    retriever.index(CORPUS)
    with pytest.raises(RetrieverError) as excinfo:
        retriever.search({"q1": ""}, 10)
    assert str(excinfo.value) == f"static: {path}: query 'q1' ranks doc 'zzz', which is not in the corpus"


def test_static_refuses_rankings_for_none_of_the_queries():
    # A run file written with other query ids (e.g. "PLAIN-1" for "1") must not score 0 in silence.
    retriever = StaticRetriever(rankings={"PLAIN-1": ["a"], "PLAIN-2": ["b"]})
    retriever.index(CORPUS)
    with pytest.raises(RetrieverError) as excinfo:
        retriever.search({"1": "x", "2": "y"}, 10)
    assert str(excinfo.value) == (
        "static: rankings: none of its 2 queries is in the query set (it has 'PLAIN-1', 'PLAIN-2'; "
        "the query set has '1', '2'); check the query ids"
    )
    # Some overlap is fine; the stored queries nobody asked for are counted in the description.
    partly = StaticRetriever(rankings={"1": ["a"], "PLAIN-2": ["b"]})
    partly.index(CORPUS)
    assert partly.search({"1": "x", "2": "y"}, 10) == {"1": {"a": 1.0}, "2": {}}
    assert partly.describe() == {"source": "inline", "queries": 2, "queries_not_in_query_set": 1}


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({}, "static: give exactly one of 'rankings' (inline) or 'path' (a TREC run or JSON file)"),
        (
            {"rankings": {}, "path": "x.run"},
            "static: give exactly one of 'rankings' (inline) or 'path' (a TREC run or JSON file)",
        ),
        ({"rankings": {"q1": ["a", "b", "a"]}}, "static: rankings: query 'q1' lists doc 'a' twice"),
        ({"rankings": {"q1": {"a": "high"}}}, "static: rankings: query 'q1': scores must be numbers"),
        ({"rankings": {"q1": "a b"}}, "static: rankings: query 'q1': expected a list of doc ids or {doc: score}"),
        (
            {"rankings": ["a", "b"]},
            "static: rankings: expected a mapping of query id to a list of doc ids or {doc: score}",
        ),
    ],
)
def test_static_bad_parameters(kwargs, message):
    with pytest.raises(RetrieverError) as excinfo:
        StaticRetriever(**kwargs)
    assert str(excinfo.value) == message


def test_static_missing_and_malformed_files(tmp_path):
    with pytest.raises(RetrieverError) as excinfo:
        StaticRetriever(path=str(tmp_path / "none.run"))
    assert str(excinfo.value) == f"static: {tmp_path / 'none.run'}: no such file"
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('{"q1": ["a",\n  ]}')
    with pytest.raises(RetrieverError) as excinfo:
        StaticRetriever(path=str(bad_json))
    assert str(excinfo.value).startswith(f"static: {bad_json}: line 2: invalid JSON")
    bad_run = tmp_path / "bad.run"
    bad_run.write_text("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 t\n")
    with pytest.raises(RetrieverError) as excinfo:
        StaticRetriever(path=str(bad_run))
    assert str(excinfo.value).startswith(f"static: {bad_run}:2: expected 6 fields")
    bad_run.write_text("q1 Q0 my doc 1 0.2 t\n")  # a doc id holding a space: "my" ranked with score 1, before
    with pytest.raises(RetrieverError) as excinfo:
        StaticRetriever(path=str(bad_run))
    assert str(excinfo.value).startswith(f"static: {bad_run}:1: the rank field 'doc' is not a number")


# ---- bm25: a tiny corpus computed by hand ------------------------------------------------------------

TINY = {
    "d1": {"title": "", "text": "ocean ocean wave"},  # |d| = 3
    "d2": {"title": "", "text": "ocean sand"},  # |d| = 2
    "d3": {"title": "", "text": "desert sand sand dune"},  # |d| = 4
}
N, AVGDL = 3, 3.0


def lucene_idf(df: int) -> float:
    return math.log(1 + (N - df + 0.5) / (df + 0.5))


def robertson_idf(df: int) -> float:
    return max(0.0, math.log((N - df + 0.5) / (df + 0.5)))


def tfc(tf: int, length: int, k1: float, b: float) -> float:
    return tf / (tf + k1 * (1 - b + b * length / AVGDL))


def plain_bm25(**params) -> BM25Retriever:
    retriever = BM25Retriever(stemmer=None, stopwords=None, **params)
    retriever.index(TINY)
    return retriever


def test_bm25_hand_computed_lucene_scores():
    got = plain_bm25(k1=1.2, b=0.75).search({"q": "ocean", "q2": "ocean sand", "q3": "dune"}, top_k=10)
    # "ocean": df 2, idf ln(1.6) = 0.4700036292457356
    # d1: tf 2, |d| 3: 2 / (2 + 1.2 * (0.25 + 0.75 * 3/3)) = 2 / 3.2 = 0.625    -> 0.29375226827858475
    # d2: tf 1, |d| 2: 1 / (1 + 1.2 * (0.25 + 0.75 * 2/3)) = 1 / 1.9            -> 0.24737033118196612
    assert math.isclose(lucene_idf(2), math.log(1.6))
    assert got["q"] == {
        "d1": pytest.approx(0.625 * math.log(1.6), rel=1e-6),
        "d2": pytest.approx(math.log(1.6) / 1.9, rel=1e-6),
    }
    assert list(got["q"]) == ["d1", "d2"]
    assert got["q"]["d1"] == pytest.approx(0.29375226827858475, rel=1e-6)
    # "ocean sand": d2 matches both terms (df 2 each) -> 2 * 0.24737 = 0.49474;
    # d3: sand tf 2, |d| 4: 2 / (2 + 1.2 * 1.25) = 2 / 3.5 -> 0.26857350242613464
    assert got["q2"] == {
        "d2": pytest.approx(2 * math.log(1.6) / 1.9, rel=1e-6),
        "d1": pytest.approx(0.625 * math.log(1.6), rel=1e-6),
        "d3": pytest.approx(2 / 3.5 * math.log(1.6), rel=1e-6),
    }
    assert list(got["q2"]) == ["d2", "d1", "d3"]
    # "dune": df 1, idf ln(1 + 2.5/1.5) = ln(8/3); d3: 1 / (1 + 1.5) = 0.4 -> 0.3923317...
    assert got["q3"] == {"d3": pytest.approx(0.4 * math.log(8 / 3), rel=1e-6)}


@pytest.mark.parametrize("k1, b", [(0.9, 0.4), (1.5, 1.0), (2.0, 0.0)])
def test_bm25_k1_and_b_follow_the_formula(k1, b):
    got = plain_bm25(k1=k1, b=b).search({"q": "ocean sand"}, top_k=10)["q"]
    idf = lucene_idf(2)
    expected = {
        "d1": idf * tfc(2, 3, k1, b),
        "d2": idf * (tfc(1, 2, k1, b) + tfc(1, 2, k1, b)),
        "d3": idf * tfc(2, 4, k1, b),
    }
    assert got == {doc: pytest.approx(value, rel=1e-6) for doc, value in expected.items()}


def test_bm25_method_is_passed_on():
    # robertson's idf for "dune" is ln(2.5 / 1.5); lucene's is ln(1 + 2.5 / 1.5).
    lucene = plain_bm25(method="lucene").search({"q": "dune"}, 10)["q"]["d3"]
    robertson = plain_bm25(method="robertson").search({"q": "dune"}, 10)["q"]["d3"]
    k1, b = 1.5, 0.75  # the defaults
    assert lucene == pytest.approx(lucene_idf(1) * tfc(1, 4, k1, b), rel=1e-6)
    assert robertson == pytest.approx(robertson_idf(1) * tfc(1, 4, k1, b), rel=1e-6)
    # robertson's idf of a term in 2 of 3 documents is floored at 0: nothing scores > 0.
    assert plain_bm25(method="robertson").search({"q": "ocean"}, 10) == {"q": {}}


def test_bm25_stemmer_and_stopwords_are_passed_on():
    # Without a stemmer "oceans" matches nothing; with the English stemmer it is "ocean".
    assert plain_bm25().search({"q": "oceans"}, 10) == {"q": {}}
    stemmed = BM25Retriever(stemmer="english", stopwords=None)
    stemmed.index(TINY)
    assert stemmed.search({"q": "oceans"}, 10)["q"] == pytest.approx(plain_bm25().search({"q": "ocean"}, 10)["q"])
    # English stop words: "the" is dropped from queries and passages alike.
    corpus = {"a": {"text": "the the the ocean"}, "b": {"text": "ocean wave"}, "c": {"text": "the sand"}}
    with_stop = BM25Retriever(stemmer=None, stopwords="english")
    with_stop.index(corpus)
    without = BM25Retriever(stemmer=None, stopwords=None)
    without.index(corpus)
    assert with_stop.search({"q": "the"}, 10) == {"q": {}}
    assert set(without.search({"q": "the"}, 10)["q"]) == {"a", "c"}
    # Stop words removed: a is ["ocean"] (1 token), b ["ocean", "wave"] (2), so a ranks first.
    ranked = with_stop.search({"q": "the ocean"}, 10)["q"]
    assert set(ranked) == {"a", "b"} and ranked["a"] > ranked["b"]
    assert next(iter(without.search({"q": "the ocean"}, 10)["q"])) == "a"


def test_bm25_stop_words_of_an_unknown_language_are_refused_when_the_parameters_are_checked():
    """Before, bm25s refused "klingon" inside index(), after validate had said OK."""
    with pytest.raises(RetrieverError, match=r"params\.stopwords: bm25s: klingon not recognized\. Only English .* "
                                             r"supported\. Give one of those languages, a list of words, or null"):
        BM25Retriever(stopwords="klingon")
    german = BM25Retriever(stemmer=None, stopwords="German")  # bm25s knows "german": the case is not a language
    german.index({"a": {"text": "der die das meer"}, "b": {"text": "welle"}})
    assert german.search({"q": "der"}, 10) == {"q": {}}  # "der" is a German stop word


def test_bm25_matches_bm25s_called_directly():
    import bm25s
    import Stemmer
    from conftest import REPO

    from rag_eval._data.datasets import load_yaml_query_set

    dataset = load_yaml_query_set(REPO / "datasets" / "ocean_facts.yaml")
    doc_ids = list(dataset.corpus)
    texts = [f"{p['title']} {p['text']}" for p in dataset.corpus.values()]
    stem = Stemmer.Stemmer("english").stemWords
    queries = dataset.query_texts()
    previous = None
    for k1, b in [(1.2, 0.75), (0.6, 0.3), (2.0, 0.9)]:
        ours = BM25Retriever(k1=k1, b=b, stemmer="english", stopwords="english")
        ours.index(dataset.corpus)
        got = ours.search(queries, top_k=5)
        model = bm25s.BM25(k1=k1, b=b, method="lucene")
        model.index(bm25s.tokenize(texts, stopwords="english", stemmer=stem, show_progress=False), show_progress=False)
        for qid, text in queries.items():
            tokens = bm25s.tokenize([text], stopwords="english", stemmer=stem, show_progress=False)
            docs, scores = model.retrieve(tokens, k=5, show_progress=False)
            direct = {doc_ids[i]: float(s) for i, s in zip(docs[0].tolist(), scores[0].tolist()) if s > 0}
            assert got[qid] == pytest.approx(direct, rel=1e-6), (k1, b, qid)
        if previous is not None:
            assert got != previous  # k1 and b change the scores
        previous = got


def test_bm25_describe_and_bad_parameters():
    retriever = BM25Retriever(k1=0.9, b=0.4)
    described = retriever.describe()
    assert described["k1"] == 0.9 and described["b"] == 0.4 and described["method"] == "lucene"
    assert described["stemmer"] == "english" and described["stopwords"] == "english"
    assert described["library"].startswith("bm25s ")
    with pytest.raises(RetrieverError, match="search\\(\\) called before index\\(\\)"):
        BM25Retriever().search({"q": "x"}, 10)


@pytest.mark.parametrize(
    "params, message",
    [
        (
            {"method": "okapi"},
            "bm25: params.method: must be 'robertson', 'lucene', 'atire', 'bm25l' or 'bm25+', got 'okapi'",
        ),
        ({"b": 1.5}, "bm25: params.b: must be less than or equal to 1, got 1.5"),
        ({"k1": -1}, "bm25: params.k1: must be greater than or equal to 0, got -1"),
        ({"k1": "high"}, "bm25: params.k1: must be a valid number, got 'high'"),
        ({"k1": float("nan")}, "bm25: params.k1: must be a finite number, got nan"),
        ({"lowercase": "yes"}, "bm25: params.lowercase: must be a valid boolean, got 'yes'"),
        ({"stopwords": 3}, "bm25: params.stopwords: must be a valid string or a valid list, got 3"),
        ({"stemmer": "klingon"}, "bm25: params.stemmer: no Snowball stemmer for 'klingon'; use one of"),
        ({"stemer": "english"}, "bm25: adapter 'bm25' has no parameter 'stemer' (did you mean 'stemmer'?)"),
    ],
)
def test_bm25_bad_parameters_name_the_field_on_one_line(params, message):
    with pytest.raises(RetrieverError) as caught:
        BM25Retriever(**params)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)
    # the registry checks the same model without building anything (rag-eval validate)
    with pytest.raises(RetrieverError) as checked:
        registry.check("bm25", params)
    assert message.removeprefix("bm25: ") in str(checked.value)


def test_bm25_one_character_tokens_give_no_results_instead_of_crashing():
    # bm25s keeps tokens of two or more word characters: this corpus has no term at all
    # (bm25s itself fails with "max() arg is an empty sequence").
    retriever = BM25Retriever(stemmer=None, stopwords=None)
    retriever.index({"a": {"text": "x y z"}, "b": {"text": "q"}})
    assert retriever.search({"q1": "x", "q2": "y z", "q3": ""}, 10) == {"q1": {}, "q2": {}, "q3": {}}
    # one-character queries against a real vocabulary: no results, the others still work
    retriever.index(TINY)
    got = retriever.search({"one": "a b c", "empty": "", "ocean": "ocean"}, 10)
    assert got["one"] == {} and got["empty"] == {} and list(got["ocean"]) == ["d1", "d2"]


def test_bm25_ties_at_the_cut_off_keep_the_greater_doc_ids():
    # Identical passages score the same; the ranking rule keeps the greater ids at the cut.
    corpus = {doc: {"text": "deep ocean water"} for doc in ("m", "c", "x", "a", "t")}
    corpus["z-other"] = {"text": "desert sand"}
    retriever = BM25Retriever(stemmer=None, stopwords=None)
    retriever.index(corpus)
    for k, want in [(1, ["x"]), (2, ["x", "t"]), (4, ["x", "t", "m", "c"]), (10, ["x", "t", "m", "c", "a"])]:
        assert list(retriever.search({"q": "ocean"}, k)["q"]) == want


def test_bm25_cuts_at_top_k():
    got = plain_bm25().search({"q": "ocean sand"}, top_k=2)["q"]
    assert list(got) == ["d2", "d1"]


# ---- issue 20: a run's .run file replays to the same numbers ------------------------------------------------


def _run(folder, config, label):
    import contextlib
    import io

    import yaml

    from rag_eval.cli import main

    path = folder / f"{label}.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["run", str(path), "--output", str(folder / label), "--no-progress"])
    assert code == 0, err.getvalue()
    return json.loads((folder / label / f"{label}.json").read_text(encoding="utf-8"))


def test_a_folder_with_spaces_in_file_names_replays_its_run_to_the_same_value(tmp_path):
    """Before: 'Getting Started.md' kept its space; the .run file read back as 'Getting' (nDCG 1.0 -> 0.2398)."""
    (tmp_path / "docs").mkdir()
    texts = {"Getting Started.md": "how to get started with the tool", "d1 9.md": "bananas are yellow",
             "other.md": "started tool guide started", "more notes.txt": "get the tool"}
    for name, text in texts.items():
        (tmp_path / "docs" / name).write_text(text, encoding="utf-8")
    (tmp_path / "set.yaml").write_text(json.dumps({"documents": "docs", "queries": [
        {"id": "q1", "text": "get started", "judgements": {"Getting%20Started.md": 2, "more%20notes.txt": 1}},
        {"id": "q2", "text": "yellow bananas", "judgements": {"d1%209.md": 1}},
    ]}), encoding="utf-8")
    metrics = ["doc_ndcg@10", "doc_recall@2"]
    first = _run(tmp_path, {"dataset": {"path": "set.yaml"}, "metrics": metrics,
                            "retrievers": [{"label": "bm25", "adapter": "bm25"}]}, "bm25")
    (tmp_path / "stored.run").write_bytes((tmp_path / "bm25" / "bm25.run").read_bytes())
    replay = _run(tmp_path, {"dataset": {"path": "set.yaml"}, "metrics": metrics,
                             "retrievers": [{"label": "st", "adapter": "static", "params": {"path": "stored.run"}}]}, "st")
    assert first["results"]["aggregate"] == replay["results"]["aggregate"]
    assert first["results"]["aggregate"]["doc_ndcg@10"] > 0.9
