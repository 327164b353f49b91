"""``rag-eval judgements convert``: chunk-id judgements (LlamaIndex node ids) to evidence spans.

Offsets counted by hand in the documents below (code points); counts of located and unlocatable
chunks derived by hand from the qrels, one by one, in CASES.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from rag_eval import cli
from rag_eval._core.spans import EvidenceSpan
from rag_eval._data.datasets import load_yaml_query_set
from rag_eval._data.judging.convert import ChunkText, Located, Unlocatable, folded, locate, named_document

# "Install the tool." 0-17 | \n 17 | "Run setup --fast to begin." 18-44 | \n 44 | "Restart afterwards." 45-64 | \n 64
SETUP = "Install the tool.\nRun setup --fast to begin.\nRestart afterwards.\n"
# "Why is it slow?" 0-15 | \n 15 | "Run setup --fast to begin." 16-42 | \n 42 | "It caches results." 43-61 | \n 61
FAQ = "Why is it slow?\nRun setup --fast to begin.\nIt caches results.\n"
# "Le cafe\u0301 ouvre à neuf heures." 0-29 (Le 2, space 3, c a f e U+0301 8, space 9, ouvre 14, space 15, à 16,
# space 17, neuf 21, space 22, heures. 29) | \n 29 | "Fermé le lundi." 30-45 | \n 45
CAFE = "Le cafe\u0301 ouvre à neuf heures.\nFermé le lundi.\n"

QUERY_SET = f"""\
# The team's questions; judgements come from LlamaIndex.
name: manual
documents:
  - id: manual/setup.md
    text: {json.dumps(SETUP)}
  - id: manual/faq.md
    text: {json.dumps(FAQ)}
  - id: notes/café.md
    text: {json.dumps(CAFE, ensure_ascii=False)}
queries:
  - id: q-setup      # how to start
    text: How do I start?

  # French speakers ask too
  - id: q-café
    text: Quand ouvre le café ?
    tags: [fr]
"""

N1 = "6f1c2b7e-4d0a-4c1b-9e3f-000000000001"
N2 = "6f1c2b7e-4d0a-4c1b-9e3f-000000000002"
N4 = "6f1c2b7e-4d0a-4c1b-9e3f-000000000004"
N5 = "6f1c2b7e-4d0a-4c1b-9e3f-000000000005"
N6 = "6f1c2b7e-4d0a-4c1b-9e3f-000000000006"
N7 = "6f1c2b7e-4d0a-4c1b-9e3f-000000000007"
N3 = "manual/faq.md#node-2"  # a chunk id that embeds its document's id
N8 = "manual/setup.md#45-64"  # rag_eval's own chunk id: document and offsets

TEXTS = [
    {"id_": N1, "text": "Install the tool.\nRun setup --fast to begin.", "metadata": {"file_name": "setup.md"}},
    {"id": N2, "text": "Run setup --fast to begin."},  # in setup.md and faq.md; its id names neither
    {"id": N3, "text": "Run setup --fast to begin."},  # the same text; its id names faq.md
    {"id": N4, "text": "LE CAFE\u0301 ouvre à\n  neuf heures."},  # re-joined with other spaces, upper case
    {"id": N5, "text": "This text is in no document."},
    {"id": N7, "text": "Why is it slow?"},
    {"id": N8, "text": "Restart afterwards."},
]

# Each line: what becomes of the chunk, derived by hand.
QRELS = [
    f"q-setup 0 {N1} 2",  # located exactly in setup.md [0, 44)
    f"q-setup 0 {N2} 1",  # unlocatable: in two documents
    f"q-setup 0 {N3} 1",  # located exactly in faq.md [16, 42), the document its id names
    f"q-setup 0 {N7} 0",  # judged 0: not evidence
    f"q-setup 0 {N8} 1",  # located by its id: setup.md [45, 64)
    f"q-café 0 {N4} 3",  # located with white space and case ignored: café.md [0, 29)
    f"q-café 0 {N5} 1",  # unlocatable: in no document
    f"q-café 0 {N6} 1",  # unlocatable: no text
    f"q-café 0 {N1} 1",  # located exactly (once more) in setup.md [0, 44)
]


def run(argv: list[str], capsys) -> tuple[int, list[str], list[str]]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


def write_inputs(folder: Path, qrels: list[str] = QRELS, texts: list[dict] = TEXTS) -> tuple[Path, Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    chunks = folder / "nodes.qrels"
    # Any line order, CRLF endings and a BOM: as a tool on another system writes them.
    chunks.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(reversed(qrels)).encode("utf-8") + b"\r\n")
    text_file = folder / "nodes.jsonl"
    text_file.write_text("\n".join(json.dumps(t, ensure_ascii=False) for t in texts) + "\n", encoding="utf-8")
    query_set = folder / "manual.yaml"
    query_set.write_text(QUERY_SET, encoding="utf-8")
    return chunks, text_file, query_set


def test_llamaindex_node_judgements_become_evidence_spans(tmp_path, capsys):
    chunks, texts, query_set = write_inputs(tmp_path)
    output = tmp_path / "out" / "manual.evidence.yaml"
    code, out, err = run(["judgements", "convert", str(chunks), "--texts", str(texts), "--documents", str(query_set),
                          "--output", str(output)], capsys)
    assert err == []
    assert out == [
        f"{chunks}: query 'q-setup', chunk '{N2}': unlocatable (found in 2 documents (exactly): 'manual/faq.md', "
        "'manual/setup.md'; its id names none of them)",
        f"{chunks}: query 'q-café', chunk '{N5}': unlocatable (found in no document, not even with white space and "
        "case ignored)",
        f"{chunks}: query 'q-café', chunk '{N6}': unlocatable (no text for this chunk id in the chunk-text file)",
        f"{chunks}: 9 judged chunks: 5 located (1 by the offsets in their ids, 3 exactly, 1 with white space and case "
        f"ignored), 3 unlocatable, 1 judged 0 or below (not evidence); wrote 5 evidence spans to {output}",
    ]
    assert code == 1
    dataset = load_yaml_query_set(output)
    assert dataset.evidence == {
        "q-setup": (EvidenceSpan("manual/faq.md", 16, 42, 1.0), EvidenceSpan("manual/setup.md", 0, 44, 2.0),
                    EvidenceSpan("manual/setup.md", 45, 64, 1.0)),
        "q-café": (EvidenceSpan("manual/setup.md", 0, 44, 1.0), EvidenceSpan("notes/café.md", 0, 29, 3.0)),
    }
    assert dataset.documents == {"manual/setup.md": SETUP, "manual/faq.md": FAQ, "notes/café.md": CAFE}
    assert [(q.id, q.text, q.tags) for q in dataset.queries.values()] == [
        ("q-setup", "How do I start?", ()), ("q-café", "Quand ouvre le café ?", ("fr",))]
    written = output.read_text(encoding="utf-8")
    assert written.startswith("# The team's questions; judgements come from LlamaIndex.\n")
    assert "  - id: q-setup      # how to start\n" in written
    # The comment before the second query stays before it, after the evidence appended to the first.
    assert "        end: 64\n\n  # French speakers ask too\n  - id: q-café\n" in written
    assert query_set.read_text(encoding="utf-8") == QUERY_SET  # the input is not changed


def test_a_documents_path_is_rewritten_for_the_output_folder(tmp_path, capsys):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "docs.jsonl").write_text(
        json.dumps({"id": "manual/setup.md", "text": SETUP}) + "\n", encoding="utf-8")
    chunks, texts, query_set = write_inputs(tmp_path / "data", qrels=[f"q1 0 {N1} 1"])
    query_set.write_text("documents: docs.jsonl\nqueries:\n  - {id: q1, text: how to start}\n", encoding="utf-8")
    output = tmp_path / "elsewhere" / "deeper" / "set.yaml"
    code, out, _ = run(["judgements", "convert", str(chunks), "--texts", str(texts), "--documents", str(query_set),
                        "--output", str(output)], capsys)
    assert code == 0
    assert out == [f"{chunks}: 1 judged chunks: 1 located (1 exactly), 0 unlocatable; wrote 1 evidence spans to "
                   f"{output}"]
    assert yaml.safe_load(output.read_text(encoding="utf-8"))["documents"] == "../../data/docs.jsonl"
    assert load_yaml_query_set(output).evidence == {"q1": (EvidenceSpan("manual/setup.md", 0, 44),)}


def test_beir_qrels_and_a_document_judged_0_for_the_query(tmp_path, capsys):
    chunks, texts, query_set = write_inputs(tmp_path)
    chunks.write_text(f"query-id\tcorpus-id\tscore\nq-setup\t{N1}\t1\nq-setup\t{N3}\t2\n", encoding="utf-8")
    query_set.write_text(QUERY_SET.replace("    text: How do I start?\n",
                                           "    text: How do I start?\n    judgements: {manual/faq.md: 0}\n"),
                         encoding="utf-8")
    output = tmp_path / "out.yaml"
    code, out, _ = run(["judgements", "convert", str(chunks), "--texts", str(texts), "--documents", str(query_set),
                        "--output", str(output)], capsys)
    assert out == [
        f"{chunks}: query 'q-setup', chunk '{N3}': located in document 'manual/faq.md', which {query_set} judges 0 "
        "(not relevant) or below for this query; not written: remove the judgement or the chunk's",
        f"{chunks}: 2 judged chunks: 1 located (1 exactly), 0 unlocatable, 1 in a document judged 0 for the query; "
        f"wrote 1 evidence spans to {output}",
    ]
    assert code == 1
    assert load_yaml_query_set(output).evidence == {"q-setup": (EvidenceSpan("manual/setup.md", 0, 44),)}


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("unknown query", "{chunks}: judges 1 query id(s) that {query_set} lacks: 'q-other'; add the queries to the "
                          "query set or remove them from the qrels"),
        ("bad json", "{texts}:2: invalid JSON"),
        ("twice", "{texts}:2: chunk '" + N1 + "' is given twice (first on line 1); give each chunk once"),
        ("no id", "{texts}:1: the chunk's id is missing or not text; give each line {{\"id\", \"text\"}}"),
        ("bad qrels", "{chunks}:1:"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_with_nothing_written(tmp_path, capsys, case, expected):
    qrels = [f"q-other 0 {N1} 1"] if case == "unknown query" else [f"q-setup 0 {N1} 1"]
    chunks, texts, query_set = write_inputs(tmp_path, qrels=qrels)
    if case == "bad json":
        texts.write_text(json.dumps(TEXTS[1]) + "\n{not json\n", encoding="utf-8")
    elif case == "twice":
        texts.write_text(json.dumps(TEXTS[0]) + "\n" + json.dumps({"id": N1, "text": "x"}) + "\n", encoding="utf-8")
    elif case == "no id":
        texts.write_text(json.dumps({"text": "x"}) + "\n", encoding="utf-8")
    elif case == "bad qrels":
        chunks.write_text(f"q-setup 0 {N1}\n", encoding="utf-8")
    output = tmp_path / "out.yaml"
    code, out, err = run(["judgements", "convert", str(chunks), "--texts", str(texts), "--documents", str(query_set),
                          "--output", str(output)], capsys)
    assert (code, out, len(err)) == (2, [], 1)
    assert err[0].startswith("rag-eval: error: " + expected.format(chunks=chunks, texts=texts, query_set=query_set))
    assert not output.exists()


@pytest.mark.parametrize("target", ["chunks", "texts", "query set", "documents file", "another file"])
def test_the_output_never_replaces_an_input_or_a_file_that_is_not_a_query_set(tmp_path, capsys, target):
    """Before, each of these was overwritten with exit 0 (the chunk texts, the qrels, the query set itself)."""
    (tmp_path / "docs.jsonl").write_text(json.dumps({"id": "manual/setup.md", "text": SETUP}) + "\n",
                                         encoding="utf-8")
    chunks, texts, query_set = write_inputs(tmp_path, qrels=[f"q1 0 {N1} 1"])
    query_set.write_text("documents: docs.jsonl\nqueries:\n  - {id: q1, text: how to start}\n", encoding="utf-8")
    notes = tmp_path / "notes.yaml"
    notes.write_text("user content\n", encoding="utf-8")
    output, role = {"chunks": (chunks, "chunk judgements"), "texts": (texts, "--texts"),
                    "query set": (query_set, "--documents query set"),
                    "documents file": (tmp_path / "docs.jsonl", "documents"), "another file": (notes, None)}[target]
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    code, out, err = run(["judgements", "convert", str(chunks), "--texts", str(texts), "--documents", str(query_set),
                          "--output", str(output)], capsys)
    assert (code, out) == (2, [])
    if role is None:
        assert err == [f"rag-eval: error: --output {output}: exists and is not a query set (a YAML mapping with "
                       "queries); rag-eval replaces only a query set there (an earlier output): give another path, "
                       "or move the file away"]
    else:
        assert err == [f"rag-eval: error: --output {output}: is the {role} file {output}, which would be replaced "
                       "by the output; write it to another file"]
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_an_earlier_output_is_replaced(tmp_path, capsys):
    chunks, texts, query_set = write_inputs(tmp_path, qrels=[f"q-setup 0 {N1} 2"])
    output = tmp_path / "judged.yaml"
    argv = ["judgements", "convert", str(chunks), "--texts", str(texts), "--documents", str(query_set),
            "--output", str(output)]
    assert run(argv, capsys)[0] == 0
    first = output.read_bytes()
    assert run(argv, capsys)[0] == 0  # the spans are not appended twice: the output is written from the query set
    assert output.read_bytes() == first
    assert load_yaml_query_set(output).evidence == {"q-setup": (EvidenceSpan("manual/setup.md", 0, 44, 2.0),)}


def test_locate_rules():
    documents = {"a.md": "one two. three", "a.md_v2": "one two. four", "b": "x one two. y"}
    # found in three documents: the chunk id names a.md (followed by '#', not a letter or digit)
    assert locate("a.md#3", ChunkText("one two."), documents) == Located("a.md", 0, 8, "exact")
    assert named_document("a.md_v2#3", documents) == "a.md_v2"  # the longest document id it starts with
    assert named_document("a.mdx", documents) is None  # "a.md" followed by a letter is another name
    # the record's ref_doc_id names one as well
    assert locate("n-9", ChunkText("one two.", doc="b"), documents) == Located("b", 2, 10, "exact")
    assert locate("n-9", ChunkText("one two."), documents) == Unlocatable(
        "found in 3 documents (exactly): 'a.md', 'a.md_v2', 'b'; its id names none of them")
    assert locate("n-9", ChunkText("  "), documents) == Unlocatable("its text is empty")
    # exact before tolerant: exact in b only, tolerant in a.md as well
    assert locate("a.md#1", ChunkText("x one"), {"a.md": "X  ONE", "b": "x one"}) == Located("b", 0, 5, "exact")
    assert locate("n", ChunkText("ab"), {"d": "ab ab"}) == Unlocatable("found more than once in document 'd' (exactly)")


def test_the_quick_test_of_tolerant_matches_skips_no_document_that_matches():
    # re.IGNORECASE matches the Kelvin sign (U+212A) to k, the long s (U+017F) to s, U+0130 to i: so do folded().
    documents = {"kelvin": "0 \u212aelvin  scale", "sun": "the \u017fun", "city": "\u0130stanbul!", "other": "k s i"}
    folded_documents = folded(documents)
    assert locate("n", ChunkText("KELVIN scale"), documents, folded_documents) == Located("kelvin", 2, 15, "tolerant")
    assert locate("n", ChunkText("The SUN"), documents, folded_documents) == Located("sun", 0, 7, "tolerant")
    assert locate("n", ChunkText("istanbul"), documents, folded_documents) == Located("city", 0, 8, "tolerant")


@pytest.mark.parametrize("doc", ["yes", "No", "off", "010", "null", "2024-01-01", "0x1F"])
def test_a_document_id_yaml_11_reads_otherwise_is_written_quoted(tmp_path, capsys, doc):
    """ruamel writes YAML 1.2, where `yes` is text; the query set is read as YAML 1.1, where it is true. Before, the
    span was written `doc: yes` and the round-trip check failed: exit 3 ("the YAML round trip changed more")."""
    query_set = tmp_path / "qs.yaml"
    query_set.write_text(f'documents:\n  - {{id: "{doc}", text: "the answer is here"}}\n'
                         "queries:\n  - {id: q1, text: answer}\n", encoding="utf-8")
    (tmp_path / "c.qrels").write_text("q1 0 c0 2\n")
    (tmp_path / "t.jsonl").write_text('{"id": "c0", "text": "answer is"}\n')
    output = tmp_path / "out.yaml"
    code, _, err = run(["judgements", "convert", str(tmp_path / "c.qrels"), "--texts", str(tmp_path / "t.jsonl"),
                          "--documents", str(query_set), "--output", str(output)], capsys)
    assert (code, err) == (0, [])
    written = output.read_text(encoding="utf-8")
    assert any(f"evidence: [{{doc: {quoted}, start: 4, end: 13, grade: 2}}]" in written
               for quoted in (f'"{doc}"', f"'{doc}'"))  # (ruamel quotes what YAML 1.2 reads otherwise itself)
    assert load_yaml_query_set(output).evidence == {"q1": (EvidenceSpan(doc, 4, 13, 2.0),)}
