"""One-line text is chunked in time linear in its length, and chunked as any other text (issue 20, item 7).

semantic-text-splitter looked, for each chunk, at the text up to the end of the line: its cost grew
with the square of a line without line breaks or sentence ends (2 MB took 8.9 s, 50 MB never
finished). rag_eval's splitter (rag_eval._models.chunking.packing) looks at the text up to the
chunk's own end only, so a long line needs no special handling: no piece cut, no chunk ended
early. benchmarks/bench_chunking_long_lines.py and bench_chunking_vs_libraries.py measure the time.
"""

from __future__ import annotations

import itertools
import random
import re
import time

import pytest

from rag_eval._core.tokens import count_words
from rag_eval._models.chunking import build_chunker
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


@pytest.mark.parametrize("name", ["recursive", "sentences", "markdown"])
def test_a_long_line_is_cut_into_the_largest_chunks_of_words_that_fit(name):
    """No chunk ends early: each holds as many whole words as fit (the word after it would not)."""
    spec = SPECS[name]
    text = one_line(400_000)
    chunks = check_chunks(build_chunker("c", spec), text, spec)
    for chunk in chunks[:-1]:
        following = re.compile(r"\s*\S+").match(text, chunk.end)
        assert following is not None
        assert count_words(text[chunk.start : following.end()]) > spec["size"]


def test_overlap_on_a_long_line_is_the_most_trailing_words_that_fit():
    # every word and every comma is one token and a section of its own: the overlap is exactly 20 tokens
    spec = SPECS["recursive"]
    text = one_line(200_000)
    chunks = check_chunks(build_chunker("c", spec), text, spec)
    assert [count_words(text[b.start : a.end]) for a, b in itertools.pairwise(chunks)] == [20] * (len(chunks) - 1)


@pytest.mark.parametrize("name", ["recursive", "sentences", "markdown"])
def test_chunking_time_grows_about_linearly_with_the_length_of_one_line(name):
    """Quadratic: 8 times the text took 64 times as long (8.9 s at 2 MB). A generous bound: 20 times."""
    chunker = build_chunker("c", SPECS[name])
    chunker.chunk({"d": one_line(10_000)})  # tables and patterns built once per process
    seconds = []
    for size in (500_000, 4_000_000):
        text = one_line(size)
        best = float("inf")
        for _ in range(2):  # the better of two: the machine is shared
            started = time.perf_counter()
            chunker.chunk({"d": text})
            best = min(best, time.perf_counter() - started)
        seconds.append(best)
    assert seconds[1] < 20 * seconds[0] + 1.0, seconds


def test_a_long_line_does_not_change_how_the_rest_of_the_document_is_chunked():
    """Paragraphs before and after a 400 kB line are chunked as they are without it."""
    spec = SPECS["recursive"]
    head = "# Title\n\nA first paragraph. It has two sentences.\n\n" + one_line(3_000, seed=5)
    tail = one_line(2_000, seed=6) + "\n\nThe end."
    line = one_line(400_000, seed=3)
    text = head + "\n\n" + line + "\n\n" + tail
    chunks = check_chunks(build_chunker("c", spec), text, spec)
    alone = [(c.start, c.end) for c in build_chunker("c", spec).chunk({"d": head})]
    assert [(c.start, c.end) for c in chunks[: len(alone)]] == alone
    shift = len(head) + 2 + len(line) + 2
    after = [(c.start - shift, c.end - shift) for c in chunks if c.start >= shift]
    assert after == [(c.start, c.end) for c in build_chunker("c", spec).chunk({"d": tail})]
    assert chunks[0].text.startswith("# Title") and chunks[-1].text.endswith("The end.")


def test_a_line_of_clusters_without_spaces_is_cut_between_clusters():
    # no letters: each cluster is a word of its own (UAX #29), packed up to size, never split
    clusters = ["🇫🇷", "👍🏽", "👨\u200d👩\u200d👧", "#\u0301", "☃\ufe0f", "🏳\ufe0f\u200d🌈", "-"]
    rng = random.Random(1)
    text = "".join(rng.choice(clusters) for _ in range(12_000))
    boundaries = {0}
    position = 0
    for match in re.finditer("|".join(re.escape(c) for c in sorted(clusters, key=len, reverse=True)), text):
        assert match.start() == position
        position = match.end()
        boundaries.add(position)
    spec = {"method": "recursive", "size": 500, "unit": "characters"}
    chunks = check_chunks(build_chunker("c", spec), text, spec)
    assert all(c.start in boundaries and c.end in boundaries for c in chunks)
    assert all(len(c.text) > 500 - 6 for c in chunks[:-1])  # filled up to the last cluster that fits (6 at most)


def test_a_long_document_shows_its_progress_as_it_goes(monkeypatch, capfd):
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
    assert sum(updates) == len(text) and len([n for n in updates if n]) > 10  # as it goes, not at the end
    assert "chunking c" in capfd.readouterr().err
    updates.clear()
    with showing_progress(False):  # --no-progress: no bar
        chunker.chunk({"d": text})
    assert updates == [] and capfd.readouterr().err == ""
