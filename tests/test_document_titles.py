"""Documents' titles: where they come from (front matter, first heading, the file's name, none), that
the text stays the file's, the config's ``dataset.titles``, and what the report says each retriever indexed.

Every expected title and offset below is read off the file contents written here, by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from test_report import section

from rag_eval._core.errors import ConfigError, DatasetError
from rag_eval._core.spans import EvidenceSpan
from rag_eval._data.config.schema import load_config
from rag_eval._data.datasets import load_dataset, load_yaml_query_set
from rag_eval._data.datasets.chroma import load_chroma
from rag_eval._data.datasets.titles import (
    MAX_TITLE_CHARS,
    file_title,
    heading_title,
    markdown_title,
    one_line,
    untitled_units,
)
from rag_eval._report.indexed_text import (
    carries_titles,
    indexed_text,
    indexed_text_lines,
    title_mix_warning,
    untitled_warning,
)
from rag_eval._retrievers.title_use import IGNORES, OWN_INDEX, PARTLY, PLUG_IN, READS, title_use
from rag_eval.cli import main

FRONT = "---\ntitle: 'MIT: the License'\nauthor: someone\n---\n# Not this heading\nPermission is hereby granted.\n"
HEADING = "# Apache License 2.0\n\nLicensed under the Apache License.\n"
PLAIN = "No heading here.\n# A heading on the second line does not count\n"


def write_folder(folder: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_bytes(content.encode("utf-8"))  # bytes: "\r\n" kept as written
    return folder


def query_set(tmp_path: Path, documents, queries=None) -> Path:
    path = tmp_path / "set.yaml"
    queries = queries or [{"id": "q", "text": "anything", "judgements": {}}]
    path.write_text(yaml.safe_dump({"documents": documents, "queries": queries}, allow_unicode=True), encoding="utf-8")
    return path


def folder_titles(tmp_path: Path, files: dict[str, str | bytes], titles: str = "auto") -> dict[str, str]:
    write_folder(tmp_path / "docs", files)
    first = next(iter(files)).replace(" ", "%20")
    path = query_set(tmp_path, "docs", [{"id": "q", "text": "x", "judgements": {first: 1}}])
    dataset = load_dataset({"path": str(path), "titles": titles})
    return {doc: entry["title"] for doc, entry in dataset.corpus.items()}


# ---- where a title comes from --------------------------------------------------------------------------


def test_front_matter_then_first_heading_then_none(tmp_path):
    files = {"mit.md": FRONT, "apache.md": HEADING, "plain.md": PLAIN, "notes.txt": "# A .txt file has no title\n"}
    assert folder_titles(tmp_path, files) == {
        "apache.md": "Apache License 2.0",
        "mit.md": "MIT: the License",  # the front matter wins over the heading after it; YAML quotes removed
        "notes.txt": "",
        "plain.md": "",  # the heading is not the first non-blank line
    }


def test_the_text_stays_exactly_the_files_and_evidence_offsets_do_not_move(tmp_path):
    write_folder(tmp_path / "docs", {"mit.md": FRONT, "apache.md": HEADING})
    quote = "Permission is hereby granted."
    path = query_set(tmp_path, "docs", [{"id": "q", "text": "x", "evidence": [{"doc": "mit.md", "quote": quote}]}])
    dataset = load_yaml_query_set(path)
    assert dataset.documents == {"apache.md": HEADING, "mit.md": FRONT}
    assert dataset.corpus["mit.md"] == {"text": FRONT, "title": "MIT: the License"}
    # The front matter is 4 lines of 4 + 26 + 16 + 4 characters, the heading line 19: the quote (29 characters)
    # starts at 69, where it starts in the file.
    assert FRONT.index(quote) == 69
    assert dataset.evidence == {"q": (EvidenceSpan("mit.md", 69, 98),)}


def test_crlf_line_endings_and_a_byte_order_mark_before_front_matter(tmp_path):
    files = {
        "bom.md": b"\xef\xbb\xbf---\r\ntitle: Byte order\r\n---\r\nBody.\r\n",
        "crlf.md": b"\r\n# Windows heading   \r\nBody.\r\n",
    }
    write_folder(tmp_path / "docs", files)
    dataset = load_yaml_query_set(query_set(tmp_path, "docs", [{"id": "q", "text": "x", "judgements": {"bom.md": 1}}]))
    assert {doc: entry["title"] for doc, entry in dataset.corpus.items()} == {
        "bom.md": "Byte order",
        "crlf.md": "Windows heading",
    }
    # The BOM is removed (offset 0 is the first '-'), the "\r\n" endings kept.
    assert dataset.documents["bom.md"] == "---\r\ntitle: Byte order\r\n---\r\nBody.\r\n"
    assert dataset.documents["crlf.md"] == "\r\n# Windows heading   \r\nBody.\r\n"


def test_unicode_titles_are_kept_and_white_space_collapsed(tmp_path):
    files = {
        "east.md": "#   Émile 🍮\tà  東京  ###\n",
        "nbsp.md": "---\ntitle: \"Crème\\u00a0brûlée\\n  recette\"\n---\n",
    }
    assert folder_titles(tmp_path, files) == {
        "east.md": "Émile 🍮 à 東京",  # the closing '#'s dropped, every run of white space one space
        "nbsp.md": "Crème brûlée recette",  # a no-break space and a line break are white space too
    }


def test_an_empty_title_gives_none_and_the_next_source_is_tried(tmp_path):
    files = {
        "empty-front.md": "---\ntitle: ''\n---\n# From the heading\n",
        "blank-front.md": "---\ntitle: '   '\n---\nText.\n",
        "empty-heading.md": "#\nText.\n",
        "hash-only.md": "# #\nText.\n",
    }
    assert folder_titles(tmp_path, files) == {
        "blank-front.md": "",
        "empty-front.md": "From the heading",
        "empty-heading.md": "",
        "hash-only.md": "",
    }


def test_titles_none_drops_titles_and_changes_the_fingerprint(tmp_path):
    files = {"mit.md": FRONT, "apache.md": HEADING}
    write_folder(tmp_path / "docs", files)
    path = query_set(tmp_path, "docs", [{"id": "q", "text": "x", "judgements": {"mit.md": 1}}])
    auto = load_dataset({"path": str(path)})
    none = load_dataset({"path": str(path), "titles": "none"})
    assert {doc: entry["title"] for doc, entry in none.corpus.items()} == {"apache.md": "", "mit.md": ""}
    assert none.documents == auto.documents == {"apache.md": HEADING, "mit.md": FRONT}
    # Titles are hashed with the corpus: a cache keyed on the fingerprint never mixes the two.
    assert none.fingerprint != auto.fingerprint
    (tmp_path / "inline").mkdir()
    untitled = load_yaml_query_set(query_set(tmp_path / "inline", [
        {"id": "apache.md", "text": HEADING}, {"id": "mit.md", "text": FRONT},
    ], [{"id": "q", "text": "x", "judgements": {"mit.md": 1}}]))
    assert none.fingerprint == untitled.fingerprint  # no titles: the same bytes, wherever the documents came from


def test_titles_file_name_is_the_name_as_written(tmp_path):
    files = {"Getting Started.md": FRONT, "guides/setup.txt": "Plain text.\n", "v1.2 notes.md": HEADING}
    assert folder_titles(tmp_path, files, "file_name") == {
        "Getting%20Started.md": "Getting Started",  # the id writes a space %20; the title keeps it
        "guides/setup.txt": "setup",
        "v1.2%20notes.md": "v1.2 notes",  # only the last suffix goes
    }


def test_a_title_is_cut_to_its_first_200_characters(tmp_path):
    words = " ".join(f"word{n:03d}" for n in range(40))  # 40 words of 7 characters and a space: 319 characters
    titles = folder_titles(tmp_path, {"long.md": f"# {words}\n", "x.md": "# " + "x" * 250})
    assert MAX_TITLE_CHARS == 200
    # 25 words and their spaces are 200 characters; the 200th, a space, is stripped: 25 words, 199 characters.
    assert titles["long.md"] == " ".join(f"word{n:03d}" for n in range(25)) and len(titles["long.md"]) == 199
    assert titles["x.md"] == "x" * 200


def test_front_matter_that_cannot_be_read_is_noted_and_the_heading_used(tmp_path):
    files = {"broken.md": "---\ntitle: [unclosed\n---\n# Fallback\n", "fine.md": HEADING}
    write_folder(tmp_path / "docs", files)
    dataset = load_yaml_query_set(query_set(tmp_path, "docs", [{"id": "q", "text": "x", "judgements": {"fine.md": 1}}]))
    assert dataset.corpus["broken.md"]["title"] == "Fallback"
    assert dataset.notes == (
        f"{tmp_path / 'docs'}: 1 document(s) open with front matter whose title could not be read, so their first "
        "heading (if any) titles them; fix the front matter, or set dataset.titles: file_name: broken.md (its front "
        "matter is not YAML (line 2))",
    )


@pytest.mark.parametrize(("text", "title"), [
    ("# Title", "Title"),
    ("   # Indented up to three spaces #", "Indented up to three spaces"),
    ("    # Four spaces: code", ""),
    ("#No space", ""),
    ("## A section, not the document", ""),  # level 1 only (docs/documents.md says why)
    ("# C#", "C#"),  # a closing sequence needs white space before it
    ("Title\n=====", ""),  # setext headings are not read
])
def test_which_first_lines_are_a_title(text, title):
    assert markdown_title(text) == (title, None)


@pytest.mark.parametrize(("text", "title"), [
    ("---\ntitle: 2024\n---\n", "2024"),  # YAML scalars stay the text written: not a number
    ("---\ntitle: No\n---\n", "No"),  # nor a boolean
    ("---\n---\n# After empty front matter", "After empty front matter"),
    ("---\nno closing line\n# Heading", ""),  # a lone '---' is a thematic break: the first line is no heading
    ("---\ntitle:\n  - a list\n---\n# Heading", "Heading"),
])
def test_front_matter_values(text, title):
    assert markdown_title(text)[0] == title


def test_a_front_matter_title_holding_a_lone_surrogate_is_noted_and_a_pair_joined():
    """Front matter is read apart from rag_eval's YAML loader: a lone surrogate there became the document's title."""
    assert markdown_title('---\ntitle: "Bad \\ud800 title"\n---\n# Heading\n') == (
        "Heading", "its front matter's title holds a lone surrogate U+D800 at position 5, which is not UTF-8 text")
    assert markdown_title('---\ntitle: "Wave \\ud83c\\udf0a"\n---\n') == ("Wave \U0001F30A", None)


def test_one_line_and_file_title_and_heading_title_by_hand():
    assert one_line("  a\n\tb  ") == "a b"
    assert file_title("docs/Read Me.md") == "Read Me"
    assert heading_title("# Title ##   ") == "Title"


# ---- other sources ---------------------------------------------------------------------------------------


def write_chroma(root: Path, corpora: dict[str, str]) -> Path:
    write_folder(root / "corpora", {f"{name}.md": text for name, text in corpora.items()})
    first = next(iter(corpora))
    (root / "questions.csv").write_text(
        "question,references,corpus_id\n"
        f"What?,\"{json.dumps([{'content': corpora[first][:4], 'start_index': 0, 'end_index': 4}]).replace(chr(34), chr(34) * 2)}\",{first}\n",
        encoding="utf-8",
    )
    return root


def test_the_chroma_layout_takes_titles_too(tmp_path):
    root = write_chroma(tmp_path / "set", {"mit": FRONT, "state of union": "Good evening.\n"})
    assert {d: e["title"] for d, e in load_chroma(root).corpus.items()} == {"mit": "MIT: the License",
                                                                          "state%20of%20union": ""}
    by_name = load_dataset({"format": "chroma", "path": str(root), "titles": "file_name"})
    assert {d: e["title"] for d, e in by_name.corpus.items()} == {"mit": "mit", "state%20of%20union": "state of union"}
    none = load_dataset({"format": "chroma", "path": str(root), "titles": "none"})
    assert {d: e["title"] for d, e in none.corpus.items()} == {"mit": "", "state%20of%20union": ""}
    assert none.documents["mit"] == FRONT
    assert none.evidence == {"mit-001": (EvidenceSpan("mit", 0, 4),)}


def test_jsonl_titles_as_written_or_none_and_file_name_is_refused(tmp_path):
    lines = [{"id": "a", "text": "Alpha.", "title": "  Kept  as written "}, {"id": "b", "text": "Beta."}]
    (tmp_path / "docs.jsonl").write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    path = query_set(tmp_path, "docs.jsonl", [{"id": "q", "text": "x", "judgements": {"a": 1}}])
    auto = load_dataset({"path": str(path)})
    assert auto.corpus == {"a": {"text": "Alpha.", "title": "  Kept  as written "}, "b": {"text": "Beta.", "title": ""}}
    none = load_dataset({"path": str(path), "titles": "none"})
    assert none.corpus == {"a": {"text": "Alpha.", "title": ""}, "b": {"text": "Beta.", "title": ""}}
    with pytest.raises(DatasetError) as error:
        load_dataset({"path": str(path), "titles": "file_name"})
    assert str(error.value) == (
        f"{tmp_path / 'docs.jsonl'}: dataset.titles: file_name titles each document by the name of its file, and the "
        "documents of a .jsonl file have no file of their own; in the config's dataset section set titles: auto "
        "(each line's \"title\") or titles: none"
    )


def test_inline_documents_titles_none_and_file_name(tmp_path):
    path = query_set(tmp_path, [{"id": "a", "text": "Alpha.", "title": "Alpha"}],
                     [{"id": "q", "text": "x", "judgements": {"a": 1}}])
    assert load_dataset({"path": str(path)}).corpus == {"a": {"text": "Alpha.", "title": "Alpha"}}
    assert load_dataset({"path": str(path), "titles": "none"}).corpus == {"a": {"text": "Alpha.", "title": ""}}
    with pytest.raises(DatasetError) as error:
        load_dataset({"path": str(path), "titles": "file_name"})
    assert str(error.value) == (
        f"{path}: documents: dataset.titles: file_name titles each document by the name of its file, and documents "
        "written in the query set have no file of their own; in the config's dataset section set titles: auto (each "
        "document's title) or titles: none"
    )


def write_beir(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(json.dumps({"_id": "p1", "title": "Pacific", "text": "The largest ocean."}) + "\n",
                                       encoding="utf-8")
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "largest ocean"}) + "\n", encoding="utf-8")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tp1\t1\n", encoding="utf-8")
    return root


def test_a_passage_collection_keeps_its_titles_or_drops_them_with_none(tmp_path):
    root = write_beir(tmp_path / "beir")
    assert load_dataset({"path": str(root)}).corpus["p1"]["title"] == "Pacific"
    none = load_dataset({"path": str(root), "titles": "none", "as_documents": True})
    assert none.corpus["p1"]["title"] == "" and none.documents == {"p1": "The largest ocean."}
    with pytest.raises(DatasetError) as error:
        load_dataset({"path": str(root), "titles": "file_name"})  # the format inferred from the folder
    assert str(error.value) == (
        "dataset.titles: file_name titles documents by the names of their files, and a beir corpus has no file per "
        "document; in the config's dataset section set titles: auto (the corpus's own titles) or titles: none"
    )


def test_the_config_checks_the_option(tmp_path):
    config = tmp_path / "c.yaml"
    retrievers = "retrievers: [{label: a, adapter: bm25}]\nmetrics: [ndcg@10]\n"
    config.write_text("dataset: {path: set.yaml}\n" + retrievers, encoding="utf-8")
    assert load_config(config).model.dataset.titles == "auto"
    config.write_text("dataset: {format: beir, path: b, titles: file_name}\n" + retrievers, encoding="utf-8")
    with pytest.raises(ConfigError) as error:
        load_config(config)
    assert str(error.value) == (
        f"{config}: dataset: titles: file_name titles documents by the names of their files, and a beir corpus has "
        "no file per document; set titles: auto (the corpus's own titles) or titles: none"
    )
    config.write_text("dataset: {path: set.yaml, titles: filename}\n" + retrievers, encoding="utf-8")
    with pytest.raises(ConfigError) as error:
        load_config(config)
    assert str(error.value).startswith(f"{config}: dataset.titles: ")
    assert "'auto', 'file_name' or 'none'" in str(error.value)


# ---- which units carry titles, and what the report says -------------------------------------------------


def test_untitled_units():
    corpus = {"a": {"text": "x", "title": "A"}, "b": {"text": "y", "title": "  "}, "c": {"text": "z"}}
    assert untitled_units(corpus) == ["b", "c"]
    assert untitled_units(corpus, ["c", "a"]) == ["c"]


@pytest.mark.parametrize(("adapter", "params", "use"), [
    ("bm25", {}, READS),
    ("bm25", {"include_title": False}, IGNORES),
    ("dense", {"model": "m"}, READS),
    ("cross_encoder", {}, READS),
    ("qdrant", {}, READS),  # managed: rag_eval fills the collection with title + text
    ("qdrant", {"mode": "read_only"}, OWN_INDEX),
    ("static", {"path": "a.run"}, OWN_INDEX),
    ("http", {}, OWN_INDEX),
    ("langchain", {}, OWN_INDEX),
    ("llamaindex", {}, OWN_INDEX),
    ("haystack", {}, OWN_INDEX),
    ("pgvector", {}, READS),
    ("chroma", {"mode": "read_only"}, OWN_INDEX),
    ("lancedb", {"mode": "managed"}, READS),
    ("hybrid", {"retrievers": [{"adapter": "bm25"}, {"adapter": "dense"}]}, READS),
    ("hybrid", {"retrievers": [{"adapter": "bm25", "params": {"include_title": False}}, {"adapter": "dense"}]}, PARTLY),
    ("my_pipeline:Retriever", {}, PLUG_IN),
])
def test_title_use(adapter, params, use):
    assert title_use(adapter, params) == use


@pytest.mark.parametrize(("kind", "use", "titled", "titles", "text"), [
    ("chunker", READS, 3, "auto", "title + chunk text"),
    ("documents", READS, 3, "auto", "title + document text"),
    ("chunker", READS, 2, "auto", "title + chunk text (2 of 3 documents have a title; the others: text alone)"),
    ("chunker", READS, 0, "auto", "text alone (the documents have no titles)"),
    ("documents", READS, 0, "none", "text alone (titles: none)"),
    ("chunker", IGNORES, 3, "auto", "text alone (include_title: false)"),
    ("own", READS, 3, "auto", "as its own index holds it"),
    ("chunker", OWN_INDEX, 3, "auto", "as its own index holds it"),
    ("chunker", PARTLY, 3, "auto", "title + chunk text in some of its fused retrievers, text alone in the others"),
    ("chunker", PLUG_IN, 3, "auto", "title + chunk text, as handed to it (a plug-in may ignore the title)"),
])
def test_indexed_text(kind, use, titled, titles, text):
    assert indexed_text(kind, use, titled, 3, titles) == text


def test_the_mix_warning_names_who_reads_titles_and_who_does_not():
    assert carries_titles("chunker", READS, 2) == "titles"
    assert carries_titles("chunker", IGNORES, 2) == "text"
    assert carries_titles("documents", READS, 0) == "text"
    assert carries_titles("own", READS, 2) is None and carries_titles("chunker", PLUG_IN, 2) is None
    assert title_mix_warning([("a", "titles"), ("b", "titles"), ("own", None)]) is None
    assert title_mix_warning([("a", "text"), ("b", "text")]) is None
    assert title_mix_warning([("a", "titles"), ("b", "text"), ("c", "titles"), ("h", "partly")]) == (
        "Titles: a, c index each chunk or document with its title; b indexes the text alone; h fuses retrievers "
        "that read titles with ones that do not: their comparison is not like for like, since a title adds words every "
        "chunk of its document can match; compare retrievers that read the same text (dataset.titles: none drops the "
        "titles for all)"
    )


def test_untitled_warning():
    assert untitled_warning(["c.md"], 3) == (
        "Titles: 1 of 3 documents have no title, and are indexed by their text alone while the others carry "
        "their title, so documents are not ranked like for like: c.md (give each a title, or set dataset.titles: "
        "file_name or none; docs/documents.md, \"Titles\")"
    )


def hand_run(corpus, outcomes, titles="auto"):
    """The parts of a RunOutcome that indexed_text_lines reads, built by hand."""
    dataset = SimpleNamespace(corpus=corpus, documents={doc: entry["text"] for doc, entry in corpus.items()})
    config = SimpleNamespace(model=SimpleNamespace(dataset=SimpleNamespace(titles=titles)))
    runs = [
        SimpleNamespace(label=label, spec=SimpleNamespace(adapter=adapter, params=params),
                        chunking=SimpleNamespace(kind=kind))
        for label, adapter, params, kind in outcomes
    ]
    return SimpleNamespace(dataset=dataset, config=config, outcomes=runs)


def test_indexed_text_lines_group_retrievers_and_warn_on_a_mix():
    corpus = {"a.md": {"text": "A", "title": "Alpha"}, "b.md": {"text": "B", "title": ""}}
    run = hand_run(corpus, [
        ("chunks", "bm25", {}, "chunker"),
        ("whole", "bm25", {}, "documents"),
        ("plain", "bm25", {"include_title": False}, "chunker"),
        ("mine", "static", {"path": "x.run"}, "documents"),
    ])
    assert indexed_text_lines(run) == [
        "**Text indexed** (what each retriever's index holds for a chunk or a whole document)",
        "",
        "- title + chunk text (1 of 2 documents have a title; the others: text alone): chunks",
        "- title + document text (1 of 2 documents have a title; the others: text alone): whole",
        "- text alone (include\\_title: false): plain",
        "- as its own index holds it: mine",
        "",
        "⚠️ Titles: chunks, whole index each chunk or document with its title; plain indexes the text alone: their "
        "comparison is not like for like, since a title adds words every chunk of its document can match; compare "
        "retrievers that read the same text (dataset.titles: none drops the titles for all)",
        "",
        "⚠️ Titles: 1 of 2 documents have no title, and are indexed by their text alone while the others carry "
        "their title, so documents are not ranked like for like: b.md (give each a title, or set dataset.titles: "
        "file\\_name or none; docs/documents.md, \"Titles\")",
        "",
    ]
    none = hand_run({"a.md": {"text": "A", "title": ""}}, [("chunks", "bm25", {}, "chunker")], titles="none")
    assert indexed_text_lines(none) == [
        "**Text indexed** (what each retriever's index holds for a chunk or a whole document)",
        "",
        "- text alone (titles: none): chunks",
        "",
    ]


# ---- end to end: rag-eval run ----------------------------------------------------------------------------


def test_a_run_reports_the_text_each_retriever_indexed(tmp_path, capsys):
    write_folder(tmp_path / "docs", {
        "mit.md": FRONT,
        "apache.md": HEADING,
        "notes.txt": "Plain notes about licenses, without a title.\n",
    })
    queries = [
        {"id": "q-mit", "text": "permission granted", "evidence": [{"doc": "mit.md", "quote": "Permission is hereby granted."}]},
        {"id": "q-apache", "text": "licensed apache", "evidence": [{"doc": "apache.md", "quote": "Licensed under the Apache License."}]},
    ]
    query_set(tmp_path, "docs", queries)
    config = tmp_path / "run.yaml"
    body = (
        "dataset: {{path: set.yaml{titles}}}\n"
        "chunking:\n  words: {{method: fixed, size: 4, overlap: 0}}\n"
        "retrievers:\n"
        "  - {{label: chunks, adapter: bm25, chunker: words}}\n"
        "  - {{label: whole, adapter: bm25}}\n"
        "metrics: [doc_ndcg@3, evidence_recall@3]\n"
        "top_k: 3\n"
        "report: {{plots: false}}\n"
        "output: {output}\n"
    )
    config.write_text(body.format(titles="", output=tmp_path / "auto"), encoding="utf-8")
    assert main(["run", str(config), "--no-progress"]) == 0
    report = (tmp_path / "auto" / "report.md").read_text(encoding="utf-8")
    indexed = section(report, "**Text indexed** (what each retriever's index holds for a chunk or a whole document)",
                      "**Semantics**")
    # mit.md: its front matter's title; apache.md: its first heading; notes.txt: none.
    assert indexed.split("\n") == [
        "**Text indexed** (what each retriever's index holds for a chunk or a whole document)",
        "",
        "- title + chunk text (2 of 3 documents have a title; the others: text alone): chunks",
        "- title + document text (2 of 3 documents have a title; the others: text alone): whole",
        "",
        "⚠️ Titles: 1 of 3 documents have no title, and are indexed by their text alone while the others carry "
        "their title, so documents are not ranked like for like: notes.txt (give each a title, or set "
        "dataset.titles: file\\_name or none; docs/documents.md, \"Titles\")",
        "",
    ]
    config.write_text(body.format(titles=", titles: none", output=tmp_path / "none"), encoding="utf-8")
    assert main(["run", str(config), "--no-progress"]) == 0
    report = (tmp_path / "none" / "report.md").read_text(encoding="utf-8")
    indexed = section(report, "**Text indexed** (what each retriever's index holds for a chunk or a whole document)",
                      "**Semantics**")
    assert indexed.split("\n") == [
        "**Text indexed** (what each retriever's index holds for a chunk or a whole document)",
        "",
        "- text alone (titles: none): chunks, whole",
        "",
    ]
    capsys.readouterr()


def test_file_name_with_jsonl_documents_exits_2_with_one_line(tmp_path, capsys):
    (tmp_path / "docs.jsonl").write_text(json.dumps({"id": "a", "text": "Alpha."}) + "\n", encoding="utf-8")
    query_set(tmp_path, "docs.jsonl", [{"id": "q", "text": "x", "judgements": {"a": 1}}])
    config = tmp_path / "run.yaml"
    config.write_text("dataset: {path: set.yaml, titles: file_name}\nretrievers: [{label: b, adapter: bm25}]\n"
                      f"metrics: [doc_ndcg@3]\noutput: {tmp_path / 'out'}\n", encoding="utf-8")
    assert main(["run", str(config), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "dataset.titles: file_name titles each document by the name of its file" in err[0]
    assert "set titles: auto (each line's \"title\") or titles: none" in err[0]
