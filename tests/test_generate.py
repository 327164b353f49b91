"""``rag-eval generate``: synthetic questions with checked quotes, against a fake endpoint (every count derived by
hand from canned answers) and against a REAL llama.cpp server running SmolLM2-135M-Instruct (the plumbing: the
prompt sent, the parse, the counts, the cache; the tiny model rarely quotes exactly, which is fine).

The fake endpoint answers by the document it is asked about. Six documents, two questions asked of each:

| document | answer | statuses |
|---|---|---|
| notes/été.md | an exact quote; a quote that occurs twice | kept [0, 38); quote twice |
| guide.md | a quote in quotation marks; a paraphrase; a third question | kept [0, 22); quote not found; over 2 |
| blank.md | prose, no question | (an answer with no question) |
| lights/phare-№1.md | a question without quote; a quote in another case | unparseable; kept [24, 45) (tolerant) |
| seasons.md | the real query's question again; a good one | repeated; kept [0, 34) |
| big.md | the endpoint answers 400 | (a document refused) |

So: got 9 questions, kept 4, dropped 1 + 1 + 0 + 1 + 1 + 1; 1 answer held no question, 1 document refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import llm_server
import pytest
import yaml
from llm_server import MODEL_NAME, completion, endpoint, forward_to, free_port

from rag_eval._core.spans import EvidenceSpan
from rag_eval._data.config.schema import load_config
from rag_eval._data.datasets.query_set import load_yaml_query_set
from rag_eval._models.judges import cache, questions
from rag_eval._models.judges.generation import judge_answer, locate, question_key
from rag_eval._report.origins import origin_lines
from rag_eval._run.execute import execute
from rag_eval.cli import main

# One llama.cpp server for the module: under -n its tests stay on one worker.
pytestmark = pytest.mark.xdist_group("llm-server-generate")

#: The fixture that starts the real llama.cpp server, shared with tests/test_judges.py.
llama = llm_server.llama
REPO = Path(__file__).resolve().parents[1]

DOCS = {
    "notes/été.md": "The harbour opens at 6 a.m. every day.\nBoats leave at noon.\nBoats leave at noon.\n",
    "guide.md": "Tickets cost 12 euros. Children under 5 travel free.\nThe ferry crosses the bay in 40 minutes.\n",
    "blank.md": "Nothing to see here.\n",
    "lights/phare-№1.md": "Welcome to the harbour.\nThe lighthouse is red and white.\n",
    "seasons.md": "Ferries run from April to October.\n",
    "big.md": "A document the endpoint refuses.\n",
}
ANSWERS = {
    "notes/été.md": "Q: When does the harbour open?\nQUOTE: The harbour opens at 6 a.m. every day.\n"
                    "Q: When do boats leave?\nQUOTE: Boats leave at noon.",
    "guide.md": '1. **Q:** How much does a ticket cost?\n   **QUOTE:** "Tickets cost 12 euros."\n'
                "Q: How long does the ferry take?\nQUOTE: The ferry takes 40 minutes to cross.\n"
                "Q: Who travels free?\nQUOTE: Children under 5 travel free.",
    "blank.md": "I am sorry, this document has nothing worth asking about.",
    "lights/phare-№1.md": "Q: Is the pier long?\nQ: What colour is the lighthouse?\nQUOTE: the lighthouse is  RED",
    "seasons.md": "Q: how much is a ticket for a  CHILD\nQUOTE: Ferries run from April to October.\n"
                  "Q: When do the ferries run?\nQUOTE: Ferries run from April to October.",
}
REFUSED = "big.md"
# The input's own query (its text is asked again by seasons.md's first question: "repeated").
REAL = {"id": "q-réel-1", "text": "How much is a ticket for a child?",
        "evidence": [{"doc": "guide.md", "quote": "Children under 5 travel free."}]}
KEPT_IDS = ["synthetic:notes/été.md:1", "synthetic:guide.md:1", "synthetic:lights/phare-№1.md:2",
            "synthetic:seasons.md:2"]


def fake(body: dict[str, Any], number: int) -> tuple[int, bytes]:
    """The canned answer of the document the question is about."""
    content = body["messages"][1]["content"]
    for doc, text in DOCS.items():
        if text in content:
            if doc == REFUSED:
                return 400, b'{"error": "context length exceeded"}'
            return 200, completion(ANSWERS[doc])
    return 500, b'{"error": "no such document in the test"}'


def write_query_set(folder: Path, documents: Any = None, name: str = "queries.yaml") -> Path:
    documents = [{"id": doc, "text": text} for doc, text in DOCS.items()] if documents is None else documents
    path = folder / name
    text = yaml.safe_dump({"name": "harbour", "documents": documents, "queries": [REAL]}, allow_unicode=True,
                          sort_keys=False)
    path.write_text("# a query set people wrote\n" + text.replace("- id: q-réel-1\n", "- id: q-réel-1  # as written\n"),
                    encoding="utf-8")
    return path


def write_judge(folder: Path, base_url: str, **params: Any) -> Path:
    path = folder / "judge.yaml"
    path.write_text(yaml.safe_dump({"adapter": "llm", "params": {"base_url": base_url, "model": MODEL_NAME,
                                                                  "backoff": 0.01, **params}}), encoding="utf-8")
    return path


def generate(capsys: pytest.CaptureFixture[str], *args: Any) -> tuple[int, str, str]:
    code = main(["generate", *map(str, args), "--no-progress"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --------------------------------------------------------------------------- against canned answers


def test_canned_answers_give_the_hand_counted_questions_and_a_query_set_that_loads(tmp_path, capsys):
    source = write_query_set(tmp_path)
    output = tmp_path / "out" / "with-synthetic.yaml"
    with endpoint(fake) as server:
        judge = write_judge(tmp_path, server.base_url)
        code, out, err = generate(capsys, source, "--judge", judge, "--output", output, "--per-document", 2)
        assert (code, err) == (0, "")
        assert server.count == 6  # one request per document; the 400 is not tried again
        # What was sent: the documented prompt of each document, at temperature 0, with room for 2 questions.
        assert sorted(json.dumps(b["messages"]) for b in server.bodies) == sorted(
            json.dumps(questions.messages(text, 2)) for text in DOCS.values())  # 4 at a time: in any order
        assert {(b["model"], b["temperature"], b["max_tokens"]) for b in server.bodies} == {(MODEL_NAME, 0, 256)}

    lines = out.splitlines()
    assert lines[0].startswith(
        f"generate: asked 6 documents for 2 questions each with llm:{MODEL_NAME}: got 9 questions, kept 4 (dropped: "
        "quote not found 1, quote twice 1, round trip 0, unparseable 1, repeated 1, over 2 1); 1 answers held no "
        "question, 1 documents refused; cache hits 0, 6 requests, 55 prompt + 15 completion tokens; ")  # 5 x (11 + 3)
    assert lines[0].endswith(f" s; wrote {output}")
    assert lines[1] == "refused: document 'big.md': the endpoint refused the question: 400 '{\"error\": \"context length exceeded\"}'"
    assert lines[2:] == [
        "dropped: document 'notes/été.md', question 2 'When do boats leave?', quote 'Boats leave at noon.': quote "
        "twice (at [39, 59) and [60, 80))",
        "dropped: document 'guide.md', question 2 'How long does the ferry take?', quote 'The ferry takes 40 minutes "
        "to cross.': quote not found (not in the document)",
        "dropped: document 'guide.md', question 3 'Who travels free?', quote 'Children under 5 travel free.': over "
        "(only 2 asked for)",
        "dropped: document 'lights/phare-№1.md', question 1 'Is the pier long?': unparseable (no quote)",
        "dropped: document 'seasons.md', question 1 'how much is a ticket for a CHILD', quote 'Ferries run from "
        "April to October.': repeated (the same question is asked already)",
    ]

    # The output: rag_eval's loader reads it; the real query as it was, the kept ones tagged and judged by their span.
    dataset = load_yaml_query_set(output)
    assert list(dataset.queries) == ["q-réel-1", *KEPT_IDS]
    assert dataset.queries["q-réel-1"].tags == ()
    assert dataset.evidence["q-réel-1"] == (EvidenceSpan("guide.md", 23, 52),)
    assert [dataset.queries[q].text for q in KEPT_IDS] == [
        "When does the harbour open?", "How much does a ticket cost?", "What colour is the lighthouse?",
        "When do the ferries run?"]
    assert {dataset.queries[q].tags for q in KEPT_IDS} == {("origin:synthetic",)}
    assert [dataset.evidence[q] for q in KEPT_IDS] == [
        (EvidenceSpan("notes/été.md", 0, 38),), (EvidenceSpan("guide.md", 0, 22),),
        (EvidenceSpan("lights/phare-№1.md", 24, 45),), (EvidenceSpan("seasons.md", 0, 34),)]
    assert dataset.documents == DOCS  # copied inline, as the input holds them
    written = output.read_text(encoding="utf-8")
    assert written.startswith(source.read_text(encoding="utf-8"))  # the input's text, comments and all, unchanged
    assert "- id: q-réel-1  # as written\n" in written
    raw = yaml.safe_load(written)["queries"]
    # The tolerant match writes the document's own words, which occur exactly once; provenance: the model.
    assert raw[3]["evidence"][0]["quote"] == "The lighthouse is red"
    assert {item["evidence"][0]["source"] for item in raw[1:]} == {f"llm:{MODEL_NAME}"}
    assert {item["evidence"][0]["annotator"] for item in raw[1:]} == {
        f"rag_eval generate, prompt question-quote-v1, {server.base_url}/chat/completions"}


def test_a_rerun_sends_only_what_was_refused(tmp_path, capsys):
    source = write_query_set(tmp_path)
    with endpoint(fake) as server:
        judge = write_judge(tmp_path, server.base_url)
        generate(capsys, source, "--judge", judge, "--output", tmp_path / "a.yaml")
        first = (tmp_path / "a.yaml").read_text(encoding="utf-8")
        code, out, _ = generate(capsys, source, "--judge", judge, "--output", tmp_path / "b.yaml")
        assert code == 0 and server.count == 6 + 1  # only big.md again: a refusal is never kept
        assert "kept 4 (" in out and "cache hits 5, 1 requests, 0 prompt + 0 completion tokens;" in out
    # The same questions, spans and ids (the time of each evidence item aside).
    def without_time(text: str) -> list[Any]:
        queries = yaml.safe_load(text)["queries"]
        for query in queries:
            for item in query["evidence"]:
                item.pop("time", None)
        return queries

    assert without_time((tmp_path / "b.yaml").read_text(encoding="utf-8")) == without_time(first)
    # The cache: the judge's file, one answer per document under (model, prompt version, text, N, cap).
    path = Path(__import__("os").environ["RAG_EVAL_CACHE_DIR"]) / "judges" / "llm-answers.jsonl"
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert lines[0] == cache.header()
    assert sorted(entry["key"] for entry in lines[1:]) == sorted(
        question_key(MODEL_NAME, text, 2, 256) for doc, text in DOCS.items() if doc != REFUSED)
    assert {entry["prompt_version"] for entry in lines[1:]} == {"question-quote-v1"}


def test_the_round_trip_keeps_what_the_first_retriever_finds_in_its_top_k(tmp_path, capsys):
    source = write_query_set(tmp_path)
    # The first retriever replays rankings of chunks; top_k 2. Its evidence spans (above): été [0, 38),
    # guide [0, 22), phare [24, 45), seasons [0, 34).
    replay = {
        KEPT_IDS[0]: ["notes/été.md#0-10"],  # overlaps [0, 38) at rank 1: kept
        KEPT_IDS[1]: ["guide.md#23-52", "guide.md#53-93"],  # the right document, not the span: dropped
        KEPT_IDS[2]: ["seasons.md#0-34", "blank.md#0-5", "lights/phare-№1.md#30-40"],  # rank 3, past top_k: dropped
        KEPT_IDS[3]: ["guide.md#0-8", "seasons.md#33-35"],  # one character in common, rank 2: kept
    }
    config = tmp_path / "round-trip.yaml"
    config.write_text(yaml.safe_dump({
        "dataset": {"path": "queries.yaml"},
        "retrievers": [
            {"label": "replay", "adapter": "static", "params": {"rankings": replay}},
            # Never run by the round trip: it would fail (a document that does not exist).
            {"label": "other", "adapter": "static", "params": {"rankings": {KEPT_IDS[0]: ["no-such.md"]}}},
        ],
        "top_k": 2, "metrics": ["evidence_recall@2"],
    }, allow_unicode=True), encoding="utf-8")
    output = tmp_path / "out.yaml"
    with endpoint(fake) as server:
        judge = write_judge(tmp_path, server.base_url)
        code, out, err = generate(capsys, source, "--judge", judge, "--output", output, "--round-trip", config)
    assert code == 0, err
    summary = out.splitlines()[0]
    assert ("got 9 questions, kept 2 (dropped: quote not found 1, quote twice 1, round trip 2, unparseable 1, "
            "repeated 1, over 2 1)") in summary
    assert "; round trip: 'replay' found 2 of 4 in its top 2;" in summary
    assert ("dropped: document 'guide.md', question 1 'How much does a ticket cost?', quote '\"Tickets cost 12 "
            "euros.\"': round trip ('replay' did not return its evidence in its top 2)") in out.splitlines()
    assert list(load_yaml_query_set(output).queries) == ["q-réel-1", KEPT_IDS[0], KEPT_IDS[3]]


def test_rag_eval_run_on_the_output_reports_the_synthetic_queries_apart(tmp_path, capsys):
    source = write_query_set(tmp_path)
    output = tmp_path / "out.yaml"
    with endpoint(fake) as server:
        code, _, _ = generate(capsys, source, "--judge", write_judge(tmp_path, server.base_url), "--output", output)
    assert code == 0
    # Two retrievers (a report compares them, and shows the means by tag): the real query found by both at rank 1.
    perfect = {"q-réel-1": ["guide.md#23-52"], KEPT_IDS[0]: ["notes/été.md#0-38"], KEPT_IDS[1]: ["guide.md#0-22"],
               KEPT_IDS[2]: ["lights/phare-№1.md#24-45"], KEPT_IDS[3]: ["seasons.md#0-34"]}
    half = {**perfect, KEPT_IDS[0]: ["blank.md#0-5"], KEPT_IDS[1]: ["blank.md#0-5"]}
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({
        "dataset": {"path": "out.yaml"},
        "retrievers": [{"label": "perfect", "adapter": "static", "params": {"rankings": perfect}},
                       {"label": "half", "adapter": "static", "params": {"rankings": half}}],
        "top_k": 1, "metrics": ["evidence_recall@1"], "output": "report",
        "report": {"plots": False},
    }, allow_unicode=True), encoding="utf-8")
    code = main(["run", str(config)])
    assert code == 0, capsys.readouterr().err
    report = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    # The segment table: the 4 synthetic queries' means apart (perfect 1.0; half 2 of 4 found: 0.5).
    table = report.split("**evidence_recall@1 by tag `origin`**")[1].split("\n\n")[1].splitlines()
    assert table[0] == "| Value | Queries | perfect | half |"
    assert table[2] == "| synthetic | 4 | 1.0000 | 0.5000 |"
    assert len(table) == 3  # the real query carries no origin tag: the segment table cannot show it (see below)
    # The summary's mean mixes them: half = (1 real + 2 of 4 synthetic) / 5 = 0.6.
    assert "| half | 0.6000 |" in report

    # The section that reports them apart (rag_eval._report.origins): real 1 of 1 found by both; synthetic 4 and 2 of 4.
    run = execute(load_config(config), progress=False)
    assert origin_lines(run) == [
        "### Real and synthetic queries apart",
        "",
        "The means above are over 5 scored queries: 1 real and 4 synthetic (tagged `origin: synthetic`, written by a "
        "model with `rag-eval generate`). Apart, as macro means over each origin's queries:",
        "",
        "| Retriever | Origin | Queries | evidence_recall@1 |",
        "|---|---|---:|---:|",
        "| perfect | real | 1 | 1.0000 |",
        "| perfect | synthetic | 4 | 1.0000 |",
        "| half | real | 1 | 1.0000 |",
        "| half | synthetic | 4 | 0.5000 |",
        "",
    ]
    assert origin_lines(execute(load_config(REPO / "configs" / "ocean_documents.yaml"), progress=False)) == []


# --------------------------------------------------------------------------- documents by reference


def test_a_documents_folder_is_referenced_from_the_outputs_folder(tmp_path, capsys):
    folder = tmp_path / "corpus"
    for doc, text in DOCS.items():
        (folder / doc).parent.mkdir(parents=True, exist_ok=True)
        (folder / doc).write_text(text, encoding="utf-8")
    (tmp_path / "sets").mkdir()
    source = write_query_set(tmp_path / "sets", "../corpus")
    output = tmp_path / "out" / "deeper" / "synthetic.yaml"
    with endpoint(fake) as server:
        code, _, err = generate(capsys, source, "--judge", write_judge(tmp_path, server.base_url), "--output", output)
    assert code == 0, err
    assert yaml.safe_load(output.read_text(encoding="utf-8"))["documents"] == "../../corpus"
    dataset = load_yaml_query_set(output)
    assert dataset.documents == DOCS and set(dataset.queries) == {"q-réel-1", *KEPT_IDS}


# --------------------------------------------------------------------------- nothing kept, bad input


def test_nothing_kept_is_exit_1_and_nothing_written(tmp_path, capsys):
    source = write_query_set(tmp_path)
    with endpoint(lambda body, n: (200, completion("Q: Why?\nQUOTE: words the document does not hold"))) as server:
        code, out, _ = generate(capsys, source, "--judge", write_judge(tmp_path, server.base_url),
                                "--output", tmp_path / "out.yaml", "--per-document", 1)
    assert code == 1 and not (tmp_path / "out.yaml").exists()
    assert "got 6 questions, kept 0 (dropped: quote not found 6," in out and out.splitlines()[0].endswith("nothing written")


def test_an_endpoint_that_is_down_is_one_line_and_nothing_is_written(tmp_path, capsys):
    source = write_query_set(tmp_path)
    port = free_port()
    judge = write_judge(tmp_path, f"http://127.0.0.1:{port}/v1", retries=1, concurrency=1)
    code, out, err = generate(capsys, source, "--judge", judge, "--output", tmp_path / "out.yaml")
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err.startswith(f"rag-eval: error: {judge}: llm judge: POST http://127.0.0.1:{port}/v1/chat/completions "
                          "could not be reached after 2 tries")
    assert not (tmp_path / "out.yaml").exists()


@pytest.mark.parametrize("reply", [b"<html>not found</html>", b'{"choices": []}'])
def test_an_endpoint_answering_garbage_is_one_line(tmp_path, capsys, reply):
    source = write_query_set(tmp_path)
    with endpoint(lambda body, n: (200, reply)) as server:
        judge = write_judge(tmp_path, server.base_url, concurrency=1)
        code, _, err = generate(capsys, source, "--judge", judge, "--output", tmp_path / "out.yaml")
    assert code == 2 and err.count("\n") == 1 and "answered 200 with no chat completion" in err
    assert not (tmp_path / "out.yaml").exists()


@pytest.mark.parametrize(("case", "message"), [
    ("passages", "has a corpus of passages, not documents; rag-eval generate judges each question by a quote"),
    ("broken", "queries.yaml: "),
    ("cross_encoder", "adapter: 'cross_encoder': rag-eval generate asks a chat endpoint for questions; name one "
                      "with adapter: llm"),
    ("bad param", "judge 'llm' has no parameter 'timeot' (did you mean 'timeout'?)"),
    ("zero", "--per-document 0: ask for 1 to 256 questions per document"),
    ("json", "write the query set as a .yaml file"),
    ("same", "is the query set file"),
    ("not a query set", "out.yaml: exists and is not a query set (a YAML mapping with queries)"),
    ("round trip", "round-trip.yaml"),
])
def test_bad_input_is_one_line_before_anything_is_asked(tmp_path, capsys, case, message):
    source = write_query_set(tmp_path)
    output = tmp_path / "out.yaml"
    extra: list[Any] = []
    with endpoint(fake) as server:
        judge = write_judge(tmp_path, server.base_url, **({"timeot": 3} if case == "bad param" else {}))
        if case == "passages":
            source = REPO / "datasets" / "ocean_facts.yaml"
        elif case == "broken":
            source.write_text("documents: [\n", encoding="utf-8")
        elif case == "cross_encoder":
            judge.write_text("adapter: cross_encoder\nparams: {model: ./nowhere, thresholds: [0, 1, 2]}\n")
        elif case == "zero":
            extra = ["--per-document", 0]
        elif case == "json":
            output = tmp_path / "out.json"
        elif case == "same":
            output = source
        elif case == "not a query set":  # a user's file: replaced with exit 0, before
            output.write_text("user content\n", encoding="utf-8")
        elif case == "round trip":
            extra = ["--round-trip", tmp_path / "round-trip.yaml"]  # no such file
        before = source.read_bytes()
        code, out, err = generate(capsys, source, "--judge", judge, "--output", output, *extra)
        assert server.count == 0
    assert (code, out) == (2, "") and err.count("\n") == 1 and message in err, err
    assert source.read_bytes() == before
    if case == "not a query set":
        assert output.read_text(encoding="utf-8") == "user content\n"
    else:
        assert not (tmp_path / "out.yaml").exists()


# --------------------------------------------------------------------------- the parser and the quote check


@pytest.mark.parametrize(("answer", "entries"), [
    ("Q: a?\nQUOTE: b", [("a?", "b")]),
    ("q1: a?\nquote 1: b\nQ2: c?\nQuote2: d", [("a?", "b"), ("c?", "d")]),
    ("- **Question:** a?\n- **Quote:** b", [("a?", "b")]),
    ("**Q: a?**\n**QUOTE: b**", [("a?", "b")]),
    ("Here you are:\n\n1) Q: a?\n   QUOTE:\n\n   b c\n\nThanks", [("a?", "b c")]),
    ("Q: a?\nA: b", [("a?", "")]),  # an answer, not a quote: unparseable
    ("QUOTE: b\nQ: a?", [("", "b"), ("a?", "")]),
    ("Q: a?\nQ: c?\nQUOTE: d", [("a?", ""), ("c?", "d")]),
    ("Q:    a   long\tquestion?   \nQUOTE:  b  ", [("a long question?", "b")]),
    ("The questions are: what? and why?", []),
])
def test_the_parser_reads_the_documented_format_and_counts_the_rest(answer, entries):
    assert [(e.question, e.quote) for e in questions.parse_questions(answer)] == entries


def test_the_prompt_holds_the_document_as_given_and_asks_for_n():
    text = questions.messages("a {n} and {document} stay", 3)[1]["content"]
    assert "Document:\na {n} and {document} stay\n\nWrite 3 different questions" in text
    assert text.endswith("exactly 3 pairs of lines in this format, and nothing else:\nQ: <the question>\n"
                         "QUOTE: <the exact words from the document that answer it>")


def test_locate_exact_then_tolerant_then_without_quotation_marks():
    document = "Alpha beta.\nGamma  delta.\nalpha beta."
    assert locate(document, "Gamma  delta.").how == "exact"  # type: ignore[union-attr]
    found = locate(document, "gamma delta.")
    assert (found.start, found.end, found.how) == (12, 25, "tolerant")  # type: ignore[union-attr]
    assert locate(document, "Alpha beta.") != ()  # exactly once (case kept): found
    assert locate(document, "ALPHA BETA.") == ((0, 11), (26, 37))  # tolerantly twice: no place without a guess
    assert locate(document, "“Gamma  delta.”").start == 12  # type: ignore[union-attr]
    assert locate(document, "Epsilon") == ()


def test_judge_answer_orders_the_reasons_and_remembers_questions():
    seen = {"an old question"}
    out = judge_answer("d", "one two. three four.", "Q: An  OLD question?\nQUOTE: one two.\nQ: new?\nQUOTE: three "
                       "four.\nQ: more?\nQUOTE: nowhere", 2, seen)
    assert [(q.number, q.status, q.span) for q in out] == [(1, "repeated", None), (2, "kept", (9, 20)),
                                                            (3, "over", None)]
    assert seen == {"an old question", "new"}


# --------------------------------------------------------------------------- against llama.cpp


def test_smollm2_through_a_real_server_the_prompt_the_parse_and_the_counts(llama, tmp_path, capsys):
    data = yaml.safe_load((REPO / "datasets" / "ocean_documents.yaml").read_text(encoding="utf-8"))
    documents = [d for d in data["documents"] if d["id"] in ("oceans/arctic.md", "seas/dead-sea.md")]
    assert len(documents) == 2
    source = write_query_set(tmp_path, documents)
    source.write_text(source.read_text(encoding="utf-8").replace("guide.md", "oceans/arctic.md").replace(
        "Children under 5 travel free.", "The Arctic Ocean is the smallest"), encoding="utf-8")
    with endpoint(forward_to(llama)) as proxy:
        # 256 tokens of a small model on 2 busy cores (another test worker beside it) can take over a minute
        judge = write_judge(tmp_path, proxy.base_url, timeout=300)
        output = tmp_path / "out.yaml"
        code, out, err = generate(capsys, source, "--judge", judge, "--output", output, "--per-document", 2)
        assert code in (0, 1), err
        # The prompt: one request per document, the documented messages, temperature 0.
        assert proxy.count == 2
        assert sorted(json.dumps(b["messages"]) for b in proxy.bodies) == sorted(
            json.dumps(questions.messages(d["text"], 2)) for d in documents)
        assert {(b["temperature"], b["max_tokens"], b["model"]) for b in proxy.bodies} == {(0, 256, MODEL_NAME)}
        # The counts: what the server answered (seen at the proxy), parsed and checked here again.
        by_text = {}
        for body, (status, reply) in zip(proxy.bodies, proxy.replies):
            assert status == 200
            by_text[body["messages"][1]["content"]] = json.loads(reply)
        seen = {"How much is a ticket for a child?".casefold().rstrip("?")}
        expected: list[Any] = []
        silent = 0
        usage = [0, 0]
        for d in documents:
            reply = by_text[questions.messages(d["text"], 2)[1]["content"]]
            usage[0] += reply["usage"]["prompt_tokens"]
            usage[1] += reply["usage"]["completion_tokens"]
            found = judge_answer(d["id"], d["text"], reply["choices"][0]["message"]["content"], 2, seen)
            silent += not found
            expected += found
        kept = sum(q.status == "kept" for q in expected)
        count = {s: sum(q.status == s for q in expected) for s in ("quote not found", "quote twice", "unparseable",
                                                                   "repeated", "over")}
        summary = out.splitlines()[0]
        assert summary.startswith(
            f"generate: asked 2 documents for 2 questions each with llm:{MODEL_NAME}: got {len(expected)} questions, "
            f"kept {kept} (dropped: quote not found {count['quote not found']}, quote twice {count['quote twice']}, "
            f"round trip 0, unparseable {count['unparseable']}, repeated {count['repeated']}, over 2 {count['over']}); "
            f"{silent} answers held no question, 0 documents refused; cache hits 0, 2 requests, "
            f"{usage[0]:,} prompt + {usage[1]:,} completion tokens; ")
        assert usage[0] > 2 * 150  # the server's own count of a prompt holding a whole document
        assert (code == 0) == (kept > 0) == output.exists()

        # The rerun: both answers from the cache, nothing reaches the server.
        code2, out2, _ = generate(capsys, source, "--judge", judge, "--output", tmp_path / "again.yaml",
                                  "--per-document", 2)
        assert proxy.count == 2 and code2 == code
        assert "cache hits 2, 0 requests, 0 prompt + 0 completion tokens;" in out2.splitlines()[0]
