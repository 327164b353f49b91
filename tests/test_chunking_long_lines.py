"""One-line text is chunked in bounded pieces, near-linear in its length (issue 20, item 7).

semantic-text-splitter's cost grows with the square of a line without line breaks or sentence
ends (2 MB took 8.9 s, 50 MB never finished). rag_eval now hands the library bounded pieces of
such a line only (rag_eval._models.chunking.pieces); documents whose lines are all shorter are
chunked exactly as before. benchmarks/bench_chunking_long_lines.py measures the time.
"""

from __future__ import annotations

import itertools
import random
import re
import time

import pytest

from rag_eval._core.tokens import count_words
from rag_eval._models.chunking import build_chunker, methods, pieces
from rag_eval._models.progress import showing_progress

SPECS = {
    "recursive": {"method": "recursive", "size": 100, "overlap": 20},
    "sentences": {"method": "sentences", "size": 100},
    "markdown": {"method": "markdown", "size": 100},
    "recursive-chars": {"method": "recursive", "size": 300, "overlap": 50, "unit": "characters"},
}


def one_line(size: int, seed: int = 0) -> str:
    """Seeded words and commas: no line break and no sentence end, as extracted PDF or HTML text often is."""
    rng = random.Random(seed)
    vocabulary = ["".join(rng.choices("etaoinshrdlucmfwyp", k=rng.randint(2, 9))) for _ in range(500)]
    words, length = [], 0
    while length < size:
        words.append(rng.choice(vocabulary) + ("," if rng.random() < 0.1 else ""))
        length += len(words[-1]) + 1
    return " ".join(words)[:size]


def check_chunks(chunker, text, spec):
    """Exact offsets, ordered, no chunk over size, every non-space character covered."""
    chunks = chunker.chunk({"d": text})
    covered = bytearray(len(text))
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text and chunk.text == chunk.text.strip()
        size = len(chunk.text) if spec.get("unit") == "characters" else count_words(chunk.text)
        assert size <= spec["size"]
        covered[chunk.start : chunk.end] = b"\1" * (chunk.end - chunk.start)
    assert all(covered[i] or text[i].isspace() for i in range(len(text)))
    return chunks


@pytest.mark.parametrize("name", list(SPECS))
def test_the_library_is_only_ever_called_on_bounded_pieces(name, monkeypatch):
    spec = SPECS[name]
    calls: list[int] = []
    library_spans = methods._library_spans

    def recording(splitter, text):
        calls.append(len(text))
        return library_spans(splitter, text)

    monkeypatch.setattr(methods, "_library_spans", recording)
    text = one_line(1_500_000)
    chunker = build_chunker("c", spec)
    check_chunks(chunker, text, spec)
    limit = pieces.piece_limit(spec["size"], spec.get("unit", "tokens"))
    assert limit is not None and limit < 200_000
    assert max(calls) <= limit and len(text.strip()) <= sum(calls) <= len(text)
    assert len(calls) >= len(text) // limit


def test_chunking_time_grows_about_linearly_with_the_length_of_one_line():
    """Quadratic: 8 times the text took 64 times as long (8.9 s at 2 MB). A generous bound: 20 times."""
    chunker = build_chunker("c", {"method": "recursive", "size": 100, "overlap": 20})
    seconds = []
    for size in (500_000, 4_000_000):
        text = one_line(size)
        started = time.perf_counter()
        chunker.chunk({"d": text})
        seconds.append(time.perf_counter() - started)
    assert seconds[1] < 20 * seconds[0] + 1.0, seconds


def test_documents_with_ordinary_lines_are_chunked_exactly_as_before(monkeypatch):
    """A document is cut only inside a line longer than the limit: shorter lines leave it whole."""
    text = "\n".join(one_line(random.Random(i).randint(200, 8_000), seed=i) for i in range(300))  # ~1.2 MB
    assert len(text) > 1_000_000
    for spec in SPECS.values():
        limit = pieces.piece_limit(spec["size"], spec.get("unit", "tokens"))
        assert limit is not None and max(map(len, text.splitlines())) < limit
        bounded = build_chunker("c", spec).chunk({"d": text})
        monkeypatch.setattr(pieces, "MAX_PIECE_CHUNKS", None)  # the library on the whole text
        whole = build_chunker("c", spec).chunk({"d": text})
        monkeypatch.undo()
        assert bounded == whole


def test_a_long_line_inside_an_ordinary_document_is_cut_and_the_rest_kept():
    spec = SPECS["recursive"]
    line = one_line(400_000, seed=3)
    text = "# Title\n\nA first paragraph. It has two sentences.\n\n" + line + "\n\nThe end."
    chunks = check_chunks(build_chunker("c", spec), text, spec)
    assert chunks[0].text.startswith("# Title") and chunks[-1].text.endswith("The end.")


def test_cuts_prefer_sentence_ends_then_spaces_and_keep_clusters_whole():
    limit = 10_000
    sentences = ("Alpha beta gamma. " * 1200)[: 3 * limit]
    cuts = [start for start, _ in pieces.pieces(sentences, limit)[1:]]
    assert cuts and all(sentences[cut - 2 : cut] == ". " for cut in cuts)
    words = one_line(3 * limit)
    cuts = [start for start, _ in pieces.pieces(words, limit)[1:]]
    assert cuts and all(words[cut - 1] == " " and words[cut] != " " for cut in cuts)
    # no space at all: flags, emoji with skin tones and ZWJ, combining marks stay whole
    clusters = ["🇫🇷", "👍🏽", "👨‍👩‍👧", "e\u0301", "각", "\u1100\u1161\u11a8", "x"]
    rng = random.Random(1)
    text = "".join(rng.choice(clusters) for _ in range(12_000))
    bounds = pieces.pieces(text, limit)
    assert all(end - start <= limit for start, end in bounds) and bounds[-1][1] == len(text)
    boundaries = {0}
    position = 0
    for match in re.finditer("|".join(re.escape(c) for c in sorted(clusters, key=len, reverse=True)), text):
        assert match.start() == position
        position = match.end()
        boundaries.add(position)
    assert all(start in boundaries for start, _ in bounds)


def test_pieces_cover_the_text_in_order():
    for text in ("", "short", one_line(50_000), "\n".join([one_line(30_000)] * 3)):
        bounds = pieces.pieces(text, 8192)
        assert bounds[0][0] == 0 and bounds[-1][1] == len(text)
        assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))
        assert all(end - start <= 8192 for start, end in bounds if "\n" not in text[start:end])


def test_a_long_document_shows_its_progress_piece_by_piece(monkeypatch, capfd):
    import tqdm.auto

    updates: list[int] = []
    original = tqdm.auto.tqdm.update

    def update(self, n=1):
        if not self.disable:
            updates.append(n)
        return original(self, n)

    monkeypatch.setattr(tqdm.auto.tqdm, "update", update)
    text = one_line(2_500_000)
    chunker = build_chunker("c", SPECS["recursive"])
    capfd.readouterr()
    with showing_progress(True):
        chunker.chunk({"d": text})
    assert sum(updates) == len(text) and len([n for n in updates if n]) > 10  # piece by piece, not at the end
    assert "chunking c" in capfd.readouterr().err
    updates.clear()
    with showing_progress(False):  # --no-progress: no bar
        chunker.chunk({"d": text})
    assert updates == [] and capfd.readouterr().err == ""
