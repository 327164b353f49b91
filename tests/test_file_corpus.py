"""A corpus kept on disk (FileCorpus) reads as the same corpus the loader holds in memory, for any file.

The reference is the loader in memory (rag_eval._data.datasets.corpus.load_corpus_file): same ids in
the same order, the same passages, the same dataset fingerprint and ranking-cache digest, the
same problems refused; and what only a file on disk can do wrong (changing under a run) is said.
"""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_eval._core.errors import DatasetError
from rag_eval._data.datasets import load_dataset
from rag_eval._data.datasets.corpus import load_corpus_file
from rag_eval._data.datasets.file_corpus import FileCorpus
from rag_eval._data.datasets.model import Problems
from rag_eval._retrievers.corpus_digest import corpus_digest

MESSY_IDS = st.one_of(
    st.sampled_from(["https://example.org/a?b=1#frag", "<dbpedia:Pacific_Ocean>", "docs/guide.md#3-9", "1", "😀"]),
    # No ASCII space: ids read from a dataset hold none (a TREC file would split them there, rag_eval._core.ids).
    st.text(
        alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"), blacklist_characters=" "),
        min_size=1, max_size=300,
    ).filter(lambda text: text.strip() == text and text.strip()),
)
PASSAGE = st.fixed_dictionaries(
    {"_id": MESSY_IDS, "text": st.text(max_size=200)},
    optional={"title": st.one_of(st.none(), st.text(max_size=30)), "metadata": st.dictionaries(st.text(max_size=5), st.integers(), max_size=2)},
)


def _write(path: Path, records: list[dict], *, bom: bool = False, crlf: bool = False, blanks: bool = False) -> Path:
    end = "\r\n" if crlf else "\n"
    lines = []
    for n, record in enumerate(records):
        lines.append(json.dumps(record, ensure_ascii=n % 2 == 0))  # escaped and raw UTF-8 both
        if blanks and n % 3 == 0:
            lines.append("   ")
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + (end.join(lines) + end).encode("utf-8"))
    return path


def _index(path: Path) -> FileCorpus:
    problems = Problems()
    corpus = FileCorpus.index(path, problems)
    problems.raise_if_any()
    return corpus


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    records=st.lists(PASSAGE, min_size=1, max_size=12, unique_by=lambda record: record["_id"]),
    bom=st.booleans(),
    crlf=st.booleans(),
    blanks=st.booleans(),
)
def test_a_file_corpus_reads_as_the_corpus_in_memory(tmp_path_factory, records, bom, crlf, blanks):
    path = _write(tmp_path_factory.mktemp("c") / "corpus.jsonl", records, bom=bom, crlf=crlf, blanks=blanks)
    memory = load_corpus_file(path)
    disk = _index(path)
    assert list(disk) == list(memory) and len(disk) == len(memory)  # file order
    assert [dict(passage) for passage in disk.values()] == list(memory.values())
    assert [(doc, dict(passage)) for doc, passage in disk.items()] == list(memory.items())
    for doc in reversed(list(memory)):  # looked up at random
        assert doc in disk and dict(disk[doc]) == memory[doc]
    assert "no such id" not in disk and 3 not in disk and disk.get("no such id") is None
    assert disk.sorted_ids() == sorted(memory)
    queries = {"q": "x"}
    assert corpus_digest(disk, queries) == corpus_digest(memory, queries)  # ranking-cache keys do not change


def test_a_beir_folder_streamed_has_the_fingerprint_and_counts_of_the_one_in_memory(tmp_path):
    records = [{"_id": "<dbpedia:Pacific_Ocean>", "title": "Pacific", "text": "The largest ocean."},
               {"_id": "https://example.org/a?b=1#frag", "text": "Salt water."},
               {"_id": "x" * 2000, "title": None, "text": "Long id, é 日本 😀"}]
    _write(tmp_path / "corpus.jsonl", records, bom=True, crlf=True)
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "which ocean"}) + "\n", encoding="utf-8")
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\t<dbpedia:Pacific_Ocean>\t2\n")
    memory = load_dataset({"path": str(tmp_path)})
    disk = load_dataset({"path": str(tmp_path)}, stream_corpus=True)
    assert isinstance(disk.corpus, FileCorpus) and isinstance(memory.corpus, dict)
    assert disk.fingerprint == memory.fingerprint  # baselines compare across engines
    assert {**disk.summary(), "notes": []} == {**memory.summary(), "notes": []}
    assert disk.notes == (*memory.notes, "corpus read from disk as needed (corpus.jsonl)")


def test_only_an_uncompressed_json_lines_corpus_stays_on_disk_and_the_notes_say_so(tmp_path):
    (tmp_path / "corpus.tsv").write_text("d1\tSalt water.\nd2\tFresh water.\n", encoding="utf-8")
    (tmp_path / "queries.tsv").write_text("q1\tsalt\n", encoding="utf-8")
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n", encoding="utf-8")
    spec = {"format": "trec", "qrels": "qrels.txt", "queries": "queries.tsv", "corpus": "corpus.tsv"}
    dataset = load_dataset(spec, base=tmp_path, stream_corpus=True)
    assert dataset.corpus == {"d1": {"text": "Salt water.", "title": ""}, "d2": {"text": "Fresh water.", "title": ""}}
    assert dataset.notes[-1].startswith("corpus held in memory: only an uncompressed JSON Lines file (.jsonl)")
    assert "corpus.tsv is not one" in dataset.notes[-1]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"_id": "a", "text": "x"}\n{"_id": "b", "text": \n', r"corpus.jsonl:2: invalid JSON: Expecting value \(column 22\)"),
        (b'{"_id": "a", "text": "x"}\n{"_id": "b"}\n', r"corpus.jsonl:2: passage 'b' has no text"),
        (b'{"_id": "a", "text": "x"}\n{"_id": true, "text": "y"}\n', r"corpus.jsonl:2: passage id: an id must be text"),
        (b'{"_id": "a", "text": "x"}\n\n{"_id": "b", "text": "y"}\n{"_id": "a", "text": "z"}\n',
         r"corpus.jsonl:4: duplicate passage id 'a'"),
        (b'{"_id": "a", "text": "x"}\r{"_id": "b", "text": "y"}\n', r"corpus.jsonl:1: a carriage return ends a line"),
        (b'{"_id": "a", "text": "\xff"}\n', r"corpus.jsonl:1: not UTF-8 text \(column 23\)"),
    ],
)
def test_bad_records_are_refused_with_file_and_line_as_in_memory(tmp_path, content, message):
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(content)
    with pytest.raises(DatasetError, match=message) as disk:
        _index(path)
    if b"\r" not in content and b"\xff" not in content:  # the loader in memory words these two its own way
        with pytest.raises(DatasetError) as memory:
            load_corpus_file(path)
        assert str(disk.value) == str(memory.value)


def test_every_duplicate_is_named_by_its_later_line(tmp_path):
    path = _write(tmp_path / "corpus.jsonl", [{"_id": i, "text": "t"} for i in ["b", "a", "b", "c", "a", "b"]])
    problems = Problems()
    FileCorpus.index(path, problems)
    assert problems.messages == [f"{path}:3: duplicate passage id 'b'", f"{path}:5: duplicate passage id 'a'",
                                 f"{path}:6: duplicate passage id 'b'"]
    with pytest.raises(DatasetError) as memory:
        load_corpus_file(path)
    assert memory.value.problems == problems.messages  # the loader in memory names the same lines


def test_a_file_changed_after_indexing_is_said_not_read_as_other_passages(tmp_path):
    path = _write(tmp_path / "corpus.jsonl", [{"_id": "a", "text": "one"}, {"_id": "b", "text": "two"}])
    corpus = _index(path)
    assert dict(corpus["b"]) == {"text": "two", "title": ""}
    _write(path, [{"_id": "b", "text": "two, longer now"}, {"_id": "a", "text": "one"}])
    os.utime(path, ns=(0, 1))  # whatever the clock: the stamp differs
    with pytest.raises(DatasetError, match=r"corpus.jsonl: the corpus file changed after it was read"):
        corpus["b"]
    with pytest.raises(DatasetError, match=r"changed after it was read at the start of the run; leave it unchanged"):
        list(corpus.values())


def test_a_file_corpus_is_read_only_and_travels_without_its_open_file(tmp_path):
    path = _write(tmp_path / "corpus.jsonl", [{"_id": "a", "text": "one", "title": "T"}])
    corpus = _index(path)
    with pytest.raises(TypeError):
        corpus["a"]["text"] = "changed"  # type: ignore[index]
    with pytest.raises(TypeError):
        corpus["b"] = {}  # type: ignore[index]
    assert dict(pickle.loads(pickle.dumps(corpus))["a"]) == {"text": "one", "title": "T"}
    assert repr(corpus).endswith("corpus.jsonl', 1 passages)")


@pytest.mark.parametrize("blank", ["\u00a0", "\u3000", "\u2028", "\u0085", "\x1c", " \t "])
def test_a_line_blank_in_unicodes_sense_is_skipped_as_in_memory_and_by_the_workers(tmp_path, blank):
    from rag_eval._execution.corpus_stream import read_range

    path = tmp_path / "corpus.jsonl"
    path.write_text(f'{{"_id": "a", "text": "x"}}\n{blank}\n{{"_id": "b", "text": "y"}}\n', encoding="utf-8")
    memory = load_corpus_file(path)
    assert list(_index(path)) == list(memory) == ["a", "b"]
    assert [doc for ids, _ in read_range(path, 0, path.stat().st_size) for doc in ids] == ["a", "b"]


def test_a_carriage_return_the_loader_would_end_a_line_at_is_refused_not_miscounted(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b'{"_id": "a", "text": "x"}\r\r\n{"_id": "b", "text": "y"}\n')
    with pytest.raises(DatasetError, match=r"corpus.jsonl:1: a carriage return ends a line inside this one"):
        _index(path)
    path.write_bytes(b'{"_id": "a", "text": "x"}\r\n{"_id": "b", "text": "y"}\r')  # a last line ended by a CR
    assert list(_index(path)) == list(load_corpus_file(path)) == ["a", "b"]


def test_copy_gives_every_passage_as_the_read_only_corpus_in_memory_does(tmp_path):
    from rag_eval._run.read_only import read_only_corpus

    path = _write(tmp_path / "corpus.jsonl", [{"_id": "b", "text": "two"}, {"_id": "a", "text": "one", "title": "T"}])
    disk, memory = read_only_corpus(_index(path)).copy(), read_only_corpus(load_corpus_file(path)).copy()
    assert list(disk) == list(memory) and {k: dict(v) for k, v in disk.items()} == {k: dict(v) for k, v in memory.items()}


@pytest.mark.parametrize(("line", "message"), [
    ('{"_id": "a\\ud800", "text": "x"}',
     "passage id: an id holds a lone surrogate U+D800 at position 2, which is not UTF-8 text; it is half of a UTF-16 "
     "pair (an escape \\ud800 to \\udfff without its other half), not a character: fix the escape (got 'a\\ud800')"),
    ('{"_id": "a", "text": "ocean \\udfff deep"}', "passage 'a': 'text' holds a lone surrogate U+DFFF at position 7"),
    ('{"_id": "a", "text": "x", "title": "\\ud83d"}', "passage 'a': 'title' holds a lone surrogate U+D83D at position 1"),
])
def test_a_lone_surrogate_in_a_passage_is_named_in_memory_and_on_disk(tmp_path, line, message):
    """A lone surrogate (a JSON escape without its other half) is not UTF-8 text: kept before, the run then failed
    writing its report (exit 3). Refused where it is read, with the file and line, both ways of reading."""
    (tmp_path / "corpus.jsonl").write_text('{"_id": "b", "text": "y"}\n' + line + "\n")
    (tmp_path / "queries.jsonl").write_text('{"_id": "q", "text": "x"}\n')
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("q\tb\t1\n")
    for stream in (False, True):
        with pytest.raises(DatasetError) as excinfo:
            load_dataset({"path": str(tmp_path)}, stream_corpus=stream)
        assert str(excinfo.value).startswith(f"{tmp_path / 'corpus.jsonl'}:2: {message}"), str(excinfo.value)


@pytest.mark.parametrize("stream", [False, True])
def test_a_record_with_both_id_and_id_that_differ_is_refused(tmp_path, stream):
    """{"id": "a", "_id": "b"} was read as "a" without a word; a judgement of "b" then named a missing passage."""
    (tmp_path / "corpus.jsonl").write_text('{"_id": "b", "id": "b", "text": "y"}\n{"id": "a", "_id": "c", "text": "x"}\n')
    (tmp_path / "queries.jsonl").write_text('{"_id": "q", "text": "x"}\n')
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("q\tb\t1\n")
    with pytest.raises(DatasetError) as excinfo:
        load_dataset({"path": str(tmp_path)}, stream_corpus=stream)
    assert str(excinfo.value).startswith(
        f"{tmp_path / 'corpus.jsonl'}:2: passage id: the record has both id 'a' and _id 'c'; keep one")
