"""``rag-eval judgements check [--fix]``: evidence judgements against edited documents.

Every offset below is counted by hand in the texts beside it (code points, not bytes:
"🐻‍❄️" is four code points, U+1F43B U+200D U+2744 U+FE0F; "e\u0301" is two), never taken
from rag_eval's output. SHA-256 values are computed with hashlib, the independent reference.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rag_eval import cli
from rag_eval._core.errors import DatasetError
from rag_eval._core.spans import EvidenceSpan
from rag_eval._data.datasets import load_yaml_query_set
from rag_eval._data.judging import anchor
from rag_eval._data.judging.anchor import EvidenceItem, Found, check_item
from rag_eval._data.judging.evidence_file import read_evidence_file

# The documents as edited. Before the edit, guide.md was
#   "Intro.\nThe cat sat on the mat.\nBirds fly south in winter.\nFish swim.\n"
#   Intro.\n 0-7 | The cat sat on the mat. 7-30 | \n 30 | Birds fly south in winter. 31-57 | \n 57 | Fish swim. 58-68
# and a preface was inserted, a word added, the last line deleted:
#   Preface added.\n 0-15 | Intro.\n 15-22 | The cat sat on the mat. 22-45 | \n 45 |
#   Birds fly south in late winter. 46-77 | \n 77; 78 in all.
GUIDE = "Preface added.\nIntro.\nThe cat sat on the mat.\nBirds fly south in late winter.\n"
# Before: "🐻‍❄️ bears.\nThe Cafe\u0301 opens at nine.\n" (bears. at 5-11). Now "Polar " is prepended and the
# sentence re-typed in lower case over two lines:
#   Polar 0-6 (with its space) | 🐻‍❄️ 6-10 | space 10 | bears. 11-17 | \n 17 |
#   "the cafe\u0301 opens\n  at nine." 18-44 (t h e 3, space 4, c a f e U+0301 9, space 10, opens 15, \n 16,
#   two spaces 18, at 20, space 21, nine. 26)
NOTES = "Polar 🐻‍❄️ bears.\nthe cafe\u0301 opens\n  at nine.\n"
NOTES_ID = "文書/東京%20notes.md"  # the file "文書/東京 notes.md": a space in a file name is %20 in its id
STABLE = "Nothing changes here."  # Nothing 0-7, changes 8-15


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


QUERY_SET = f"""\
# Judged against the March version of the documents.
name: edited
documents: docs          # a folder of .md/.txt files
queries:
  - id: q-cat            # the cat
    text: Where did the cat sit?
    evidence:
      # moved: a preface was inserted above it
      - {{doc: guide.md, start: 7, end: 30, text: "The cat sat on the mat."}}
      - doc: guide.md
        quote: Intro.
  - id: q-birds
    text: Where do birds fly?
    evidence:
      - doc: guide.md
        start: 31
        end: 57
        text: Birds fly south in winter.   # changed: "late" was added
        grade: 2
  - id: q-fish
    text: Do fish swim?
    evidence:
      - doc: guide.md
        quote: Fish swim.                    # gone: the line was deleted
      - doc: guide.md
        start: 58
        end: 68
        sha256: {sha("Fish swim.")}
  - id: q-café
    text: When does the café open?
    evidence:
      - doc: "{NOTES_ID}"
        quote: "The Cafe\\u0301 opens at nine."   # re-typed: case and line breaks
      - {{doc: "{NOTES_ID}", start: 5, end: 11, text: bears.}}
      - {{doc: stable.txt, start: 0, end: 7, sha256: {sha("Nothing").upper()}}}
      - {{doc: stable.txt, start: 8, end: 15}}
"""


def write_documents(folder: Path) -> None:
    (folder / "docs" / "文書").mkdir(parents=True)
    (folder / "docs" / "guide.md").write_text(GUIDE, encoding="utf-8")
    (folder / "docs" / "文書" / "東京 notes.md").write_text(NOTES, encoding="utf-8")
    (folder / "docs" / "stable.txt").write_text(STABLE, encoding="utf-8")


def run(argv: list[str], capsys) -> tuple[int, list[str], list[str]]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


@pytest.fixture
def edited(tmp_path: Path) -> Path:
    write_documents(tmp_path)
    path = tmp_path / "set.yaml"
    path.write_text(QUERY_SET, encoding="utf-8")
    return path


EXPECTED_LINES = [
    "queries[0](q-cat).evidence[0]: query 'q-cat', document 'guide.md', [7, 30): moved to [22, 45) "
    "(the same text, found once)",
    "queries[1](q-birds).evidence[0]: query 'q-birds', document 'guide.md', [31, 57): changed (its text is not in "
    "the document; nearest passage [46, 77) 'Birds fly south in late winter.')",
    "queries[2](q-fish).evidence[0]: query 'q-fish', document 'guide.md', quote 'Fish swim.': gone (less than half "
    "of its text is left in the document (its start and end))",
    "queries[2](q-fish).evidence[1]: query 'q-fish', document 'guide.md', [58, 68): changed (the text at its offsets "
    "is not what its sha256 records (a hash cannot be searched for; record text as well to let the span be "
    "re-anchored))",
    f"queries[3](q-café).evidence[0]: query 'q-café', document '{NOTES_ID}', quote 'The Cafe\u0301 opens at nine.': "
    "moved to [18, 44) (found once with white space and case ignored)",
    f"queries[3](q-café).evidence[1]: query 'q-café', document '{NOTES_ID}', [5, 11): moved to [11, 17) "
    "(the same text, found once)",
]


def test_each_stale_judgement_is_listed_with_its_status_and_new_span(edited, capsys):
    code, out, err = run(["judgements", "check", str(edited)], capsys)
    assert err == []
    assert out == [*EXPECTED_LINES,
                   f"{edited}: 9 evidence judgements: 2 valid, 3 moved, 2 changed, 1 gone; 1 given by offsets alone, "
                   "not checkable (record the span's text or sha256 beside start and end)",
                   f"{edited}: rag-eval judgements check --fix writes the 3 moved span(s)"]
    assert code == 1
    assert edited.read_text(encoding="utf-8") == QUERY_SET  # a check writes nothing


def test_fix_writes_the_moved_spans_only_keeping_comments_and_order(edited, capsys):
    code, out, _ = run(["judgements", "check", "--fix", str(edited)], capsys)
    assert out[-2:] == [f"{edited}: wrote the new offsets of 3 moved evidence item(s)",
                        f"{edited}: 3 changed or gone evidence item(s) left as they are: judge them again, or remove them"]
    assert code == 1  # changed and gone remain
    expected = (
        QUERY_SET.replace("{doc: guide.md, start: 7, end: 30,", "{doc: guide.md, start: 22, end: 45,")
        .replace(f'{{doc: "{NOTES_ID}", start: 5, end: 11,', f'{{doc: "{NOTES_ID}", start: 11, end: 17,')
        # The comment keeps its column (in code points): the new quote is 2 shorter, written with U+0301 itself.
        .replace('quote: "The Cafe\\u0301 opens at nine."   #', 'quote: "the cafe\u0301 opens\\n  at nine."     #')
    )
    assert edited.read_text(encoding="utf-8") == expected
    code, out, _ = run(["judgements", "check", str(edited)], capsys)
    assert out[-1] == (f"{edited}: 9 evidence judgements: 5 valid, 0 moved, 2 changed, 1 gone; 1 given by offsets "
                       "alone, not checkable (record the span's text or sha256 beside start and end)")
    assert code == 1


FIXABLE = f"""\
name: fixable
documents: docs
queries:
  # every stale judgement here moved
  - id: q-café
    text: When does the café open?
    evidence:
      - doc: "{NOTES_ID}"
        quote: "The Cafe\\u0301 opens at nine."   # re-typed
        grade: 2
  - id: q-cat
    text: Where did the cat sit?
    evidence:
      - {{doc: guide.md, quote: The cat sat on the mat.}}
"""


def test_fixed_quotes_reload_with_the_loader_at_the_new_offsets(tmp_path, capsys):
    write_documents(tmp_path)
    path = tmp_path / "set.yaml"
    path.write_text(FIXABLE, encoding="utf-8")
    with pytest.raises(DatasetError, match="occurs 0 times"):
        load_yaml_query_set(path)  # the loader refuses the re-typed quote
    code, out, _ = run(["judgements", "check", "--fix", str(path)], capsys)
    assert code == 0
    assert out[-1] == f"{path}: wrote the new offsets of 1 moved evidence item(s)"
    text = path.read_text(encoding="utf-8")
    assert "  # every stale judgement here moved\n" in text and "   # re-typed\n" in text
    dataset = load_yaml_query_set(path)
    assert dataset.evidence == {
        "q-café": (EvidenceSpan(NOTES_ID, 18, 44, 2.0),),
        "q-cat": (EvidenceSpan("guide.md", 22, 45, 1.0),),
    }
    assert dataset.documents[NOTES_ID][18:44] == "the cafe\u0301 opens\n  at nine."
    assert run(["judgements", "check", str(path)], capsys)[0] == 0


OFFSETS = """\
name: offsets
documents: docs
queries:
  - id: q1
    text: bears?
    evidence:
      - doc: "文書/東京%20notes.md"
        start: 5          # before "Polar " was prepended
        end: 11
        text: BEARS.      # recorded in capitals: found with case ignored
        sha256: {sha}
"""


def test_fixed_offsets_record_the_new_text_and_hash(tmp_path, capsys):
    write_documents(tmp_path)
    path = tmp_path / "set.yaml"
    path.write_text(OFFSETS.format(sha=sha("BEARS.")), encoding="utf-8")
    code, out, _ = run(["judgements", "check", "--fix", str(path)], capsys)
    assert out[0] == (f"queries[0](q1).evidence[0]: query 'q1', document '{NOTES_ID}', [5, 11): moved to [11, 17) "
                      "(found once with white space and case ignored)")
    assert code == 0
    assert path.read_text(encoding="utf-8") == (
        OFFSETS.format(sha=sha("bears."))
        .replace("start: 5 ", "start: 11").replace("end: 11", "end: 17").replace("text: BEARS.", "text: bears.")
    )
    entry = read_evidence_file(path).entries[0]
    assert check_item(read_evidence_file(path).documents, entry.item).status == anchor.VALID
    assert load_yaml_query_set(path).evidence == {"q1": (EvidenceSpan(NOTES_ID, 11, 17),)}


def test_a_bom_and_crlf_line_endings_are_kept(tmp_path, capsys):
    write_documents(tmp_path)
    path = tmp_path / "set.yaml"
    original = FIXABLE.replace("\n", "\r\n").encode("utf-8")
    path.write_bytes(b"\xef\xbb\xbf" + original)
    assert run(["judgements", "check", "--fix", str(path)], capsys)[0] == 0
    written = path.read_bytes()
    assert written.startswith(b"\xef\xbb\xbf")
    assert written.count(b"\r\n") == original.count(b"\r\n") and b"\n" not in written.replace(b"\r\n", b"")


def test_a_file_edited_during_the_fix_is_refused(edited, capsys, monkeypatch):
    from rag_eval._commands import judgements_check

    fix = judgements_check.fix
    someone = QUERY_SET.replace("name: edited", "name: edited by someone else")

    def edit_meanwhile(data, moved):
        edited.write_text(someone, encoding="utf-8")
        fix(data, moved)

    monkeypatch.setattr(judgements_check, "fix", edit_meanwhile)
    code, _, err = run(["judgements", "check", "--fix", str(edited)], capsys)
    assert code == 2
    assert err == [f"rag-eval: error: {edited}: the file changed while rag-eval worked on it; nothing written: run "
                   "the command again"]
    assert edited.read_text(encoding="utf-8") == someone
    assert [p.name for p in edited.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_a_round_trip_that_changes_more_than_the_edit_writes_nothing(edited, capsys, monkeypatch):
    from rag_eval._data.judging import rewrite

    dump = rewrite.dump
    monkeypatch.setattr(rewrite, "dump", lambda tree, layout: dump(tree, layout).replace("cat sit?", "dog sit?"))
    code, _, err = run(["judgements", "check", "--fix", str(edited)], capsys)
    assert code == 3  # a bug of the round trip, not bad input
    assert "the YAML round trip changed more than the edit; nothing written" in err[0]
    assert edited.read_text(encoding="utf-8") == QUERY_SET


def test_a_deleted_document_and_offsets_past_the_end_are_gone(tmp_path, capsys):
    write_documents(tmp_path)
    path = tmp_path / "set.yaml"
    path.write_text(
        "documents: docs\nqueries:\n- id: q 1\n  text: x\n  evidence:\n"
        "  - {doc: old.md, quote: anything}\n"
        "  - {doc: stable.txt, start: 15, end: 22}\n",  # the text is 21 characters
        encoding="utf-8",
    )
    code, out, _ = run(["judgements", "check", str(path)], capsys)
    assert out == [
        "queries[0](q 1).evidence[0]: query 'q 1', document 'old.md', quote 'anything': gone (document 'old.md' is "
        "no longer in the documents)",
        "queries[0](q 1).evidence[1]: query 'q 1', document 'stable.txt', [15, 22): gone ([15, 22) runs past the end "
        "of the document (21 characters))",
        f"{path}: 2 evidence judgements: 0 valid, 0 moved, 0 changed, 2 gone",
    ]
    assert code == 1


def test_a_quote_that_now_occurs_twice_is_changed_not_guessed(tmp_path, capsys):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("abc. abc.", encoding="utf-8")  # "abc." at 0-4 and 5-9
    path = tmp_path / "set.yaml"
    path.write_text("documents: docs\nqueries:\n- {id: q, text: x, evidence: [{doc: a.md, quote: ABC.}]}\n",
                    encoding="utf-8")
    code, out, _ = run(["judgements", "check", "--fix", str(path)], capsys)
    assert out[0] == ("queries[0](q).evidence[0]: query 'q', document 'a.md', quote 'ABC.': changed (its text occurs "
                      "more than once now (at [0, 4) and [5, 9)); no place is chosen without a guess)")
    assert code == 1
    assert "quote: ABC." in path.read_text(encoding="utf-8")


def test_all_valid_exits_0(tmp_path, capsys):
    write_documents(tmp_path)
    path = tmp_path / "set.yaml"
    path.write_text(f"documents: docs\nqueries:\n- id: q\n  text: x\n  evidence:\n"
                    f"  - {{doc: stable.txt, start: 8, end: 15, text: changes, sha256: {sha('changes')}}}\n",
                    encoding="utf-8")
    assert run(["judgements", "check", str(path)], capsys) == (
        0, [f"{path}: 1 evidence judgement: 1 valid, 0 moved, 0 changed, 0 gone"], [])


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("documents: docs\nqueries:\n- {id: q, text: x, evidence: [{doc: stable.txt, quote: x, start: 0, end: 1}]}\n",
         "queries[0](q).evidence[0]: give either a quote or start and end, not both"),
        ("documents: docs\nqueries:\n- {id: q, text: x, evidence: [{doc: stable.txt, start: '0', end: 1}]}\n",
         "queries[0](q).evidence[0]: start '0' is not an integer offset; write offsets as whole numbers"),
        ("documents: docs\nqueries:\n- {id: q, text: x, evidence: [{doc: stable.txt, start: 0, end: 1, sha256: ab}]}\n",
         "queries[0](q).evidence[0]: sha256 'ab' is not 64 hexadecimal digits; give the SHA-256 of the span's text as "
         "UTF-8 (hashlib.sha256(text.encode()).hexdigest()), or remove it"),
        ("documents: docs\nqueries:\n- {id: q, text: x, evidence: [{doc: stable.txt, quote: Nothing, text: N}]}\n",
         "queries[0](q).evidence[0]: text and sha256 record what start and end held; a quote is found in the "
         "document each time it is read: remove them, or give start and end instead of the quote"),
        ("corpus: [{id: p, text: x}]\nqueries: [{id: q, text: x, judgements: {p: 1}}]\n",
         "has a corpus of passages, judged by id; evidence spans need 'documents' (long texts judged by evidence)"),
        ("documents: missing\nqueries: []\n", None),
        ("- just a list\n", "a query set is a mapping with keys name, description, documents, queries"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_with_nothing_written(tmp_path, capsys, text, problem):
    write_documents(tmp_path)
    path = tmp_path / "set.yaml"
    path.write_text(text, encoding="utf-8")
    code, out, err = run(["judgements", "check", "--fix", str(path)], capsys)
    assert (code, out, len(err)) == (2, [], 1)
    missing = f"{tmp_path / 'missing'}: no such file or folder; documents are a .jsonl file or a folder of .txt/.md files"
    assert err[0] == f"rag-eval: error: {path}: {problem}" if problem else err[0] == f"rag-eval: error: {missing}"
    assert path.read_text(encoding="utf-8") == text


def test_stale_evidence_is_what_a_run_reports(edited):
    read = read_evidence_file(edited)
    stale = anchor.stale_evidence(read.documents, [entry.item for entry in read.entries])
    assert [(finding.item.doc, finding.status, finding.new) for finding in stale] == [
        ("guide.md", "moved", (22, 45)), ("guide.md", "changed", (46, 77)), ("guide.md", "gone", None),
        ("guide.md", "changed", None), (NOTES_ID, "moved", (18, 44)), (NOTES_ID, "moved", (11, 17)),
    ]


def test_the_nearest_passage_of_a_changed_text():
    # "Install the tool." 0-17 | \n 17 | "Run setup --slow to begin." 18-44 (" to begin." 34-44) | \n 44
    document = "Install the tool.\nRun setup --slow to begin.\n"
    # a word edited in the middle: the start "Run " (4) and the end " to begin." (10) are 14 of 27 characters
    assert anchor.nearest(document, "Run  setup --fast to begin.") == (18, 44)
    # a typo: the start "Install the t" (13) and the end "l." (2) are 15 of 17 characters
    assert anchor.nearest(document, "Install the t00l.") == (0, 17)
    # nothing but the final "." is left: gone
    assert anchor.nearest(document, "Something else entirely.") is None


def test_a_stale_finding_as_a_results_file_records_it():
    documents = {"d": "xx abc"}
    moved = check_item(documents, EvidenceItem("d", 0, 3, text="abc"))
    assert anchor.finding_record("q", moved) == {
        "query": "q", "doc": "d", "old": [0, 3], "quote": None, "status": "moved", "new": [3, 6],
        "why": "the same text, found once"}
    changed = check_item(documents, EvidenceItem("d", quote="xx abd"))  # "xx ab" (5 of 6) is still there
    assert (changed.status, changed.new) == ("changed", (0, 6))
    assert anchor.finding_record("q", changed)["new"] is None  # a hint, not a new place


# ---- re-anchoring, property -------------------------------------------------------------------------

TEXT = st.text(alphabet="ab \n🐻\u0301é", max_size=40)


def occurrences(text: str, quote: str) -> list[int]:
    """Every start of ``quote`` in ``text``, overlapping ones too: the slow reference."""
    return [i for i in range(len(text) - len(quote) + 1) if text[i : i + len(quote)] == quote]


@settings(max_examples=300, deadline=None)
@given(document=TEXT.filter(bool), inserted=TEXT, data=st.data())
def test_text_inserted_before_a_quote_shifts_its_offsets(document, inserted, data):
    start = data.draw(st.integers(0, len(document) - 1))
    end = data.draw(st.integers(start + 1, len(document)))
    quote = document[start:end]
    assume(occurrences(document, quote) == [start])
    at = data.draw(st.integers(0, start))
    edited = document[:at] + inserted + document[at:]
    shift = len(inserted)
    assume(occurrences(edited, quote) == [start + shift])
    assert anchor.anchor(edited, quote) == Found(start + shift, end + shift, anchor.EXACT)
    finding = check_item({"d": edited}, EvidenceItem("d", start, end, text=quote))
    if shift:
        assert (finding.status, finding.new, finding.new_text) == ("moved", (start + shift, end + shift), quote)
    else:
        assert (finding.status, finding.new) == ("valid", (start, end))
    assert check_item({"d": edited}, EvidenceItem("d", quote=quote)).status == "valid"  # a quote is found anew


@settings(max_examples=200, deadline=None)
@given(words=st.lists(st.text(alphabet="abcXYZé", min_size=1, max_size=5), min_size=1, max_size=6),
       gaps=st.lists(st.sampled_from([" ", "  ", "\n", "\t ", "\n  "]), min_size=6, max_size=6),
       before=st.text(alphabet="0123.,;", max_size=10))
def test_a_quote_retyped_with_other_spaces_and_case_is_found_tolerantly(words, gaps, before):
    quote = " ".join(words)
    retyped = "".join(word.swapcase() + gap for word, gap in zip(words, gaps))[: -len(gaps[len(words) - 1])]
    document = before + "|" + retyped + "|"
    assume(quote not in document)
    found = anchor.anchor(document, quote)
    assert found == Found(len(before) + 1, len(before) + 1 + len(retyped), anchor.TOLERANT)
