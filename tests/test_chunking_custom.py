"""Custom chunkers by import string: found beside the config, checked before any call, errors in one line."""

from __future__ import annotations

import json
import textwrap
import uuid
from pathlib import Path

import pytest

from rag_eval._core.errors import ConfigError
from rag_eval._models.chunking import build_chunker, check_chunker

SOURCE = '''
from rag_eval.extend import chunker_function

CALLS = []

@chunker_function
def by_line(text):
    """Offsets of every line."""
    CALLS.append(text)
    start = 0
    for line in text.split("\\n"):
        if line.strip():
            yield (start, start + len(line))
        start += len(line) + 1

@chunker_function
def as_strings(text, width=4):
    return [text[i : i + width] for i in range(0, len(text), width - 1)]

@chunker_function
def numpy_offsets(text):
    import numpy as np
    starts = np.array([0, 11], dtype=np.int64)
    return list(zip(starts, starts + np.array([10, 11])))

@chunker_function
def bool_offsets(text):
    return [(False, 3)]

@chunker_function
def bad_offsets(text):
    return [(0, 3), (5, 2)]

@chunker_function
def past_the_end(text):
    return [(0, len(text) + 1)]

@chunker_function
def twice(text):
    return [(0, 2), (0, 2)]

@chunker_function
def missing_string(text):
    return ["zzz"]

@chunker_function
def raises(text):
    raise ValueError("no\\nchunks today")

@chunker_function
def exits(text):
    raise SystemExit(3)

@chunker_function
def returns_none(text):
    return None

@chunker_function
def returns_text(text):
    return text

@chunker_function
def strange_item(text):
    return [3.5]

@chunker_function
def nothing(text):
    return []

@chunker_function
def first_word_of_a(text):
    return [(0, 1)] if text.startswith("a") else []

class Paragraphs:
    """A class: built once with params, chunk(text) per document."""
    def __init__(self, separator="\\n\\n"):
        self.separator = separator

    def chunk(self, text):
        start = 0
        for part in text.split(self.separator):
            if part.strip():
                yield text.index(part, start), text.index(part, start) + len(part)
            start += len(part) + len(self.separator)

class NoChunk:
    pass

class BrokenInit:
    def __init__(self):
        raise RuntimeError("cannot build")

    def chunk(self, text):
        return []

NOT_CALLABLE = 42
'''

DOC = "first line\nsecond line\n\nthird"


@pytest.fixture
def module(tmp_path: Path) -> tuple[str, Path]:
    """A module of chunkers beside a 'config' in tmp_path, under a name no other test imported."""
    name = f"my_chunkers_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(SOURCE), encoding="utf-8")
    return name, tmp_path


def chunk(module, attr, params=None, doc=DOC):
    name, base = module
    spec = {"method": f"{name}:{attr}"}
    if params is not None:
        spec["params"] = params
    return build_chunker("mine", spec, base).chunk({"d": doc})


def error_of(module, attr, params=None, doc=DOC, call=None):
    with pytest.raises(ConfigError) as error:
        if call is None:
            chunk(module, attr, params, doc)
        else:
            name, base = module
            call("mine", {"method": f"{name}:{attr}", **({"params": params} if params else {})}, base)
    message = str(error.value)
    assert "\n" not in message
    return message.replace(module[0], "M")


def test_a_function_returning_offsets(module):
    chunks = chunk(module, "by_line")
    expected = [(0, 10, "first line"), (11, 22, "second line"), (24, 29, "third")]
    assert [(c.start, c.end, c.text) for c in chunks] == expected


def test_strings_are_located_in_order_and_params_are_passed(module):
    chunks = chunk(module, "as_strings", {"width": 5}, doc="abcdefghij")
    assert [(c.start, c.end, c.text) for c in chunks] == [(0, 5, "abcde"), (4, 9, "efghi"), (8, 10, "ij")]
    # in repeating text a string is placed at its FIRST occurrence after the previous start:
    # "bcabc" (meant at 4) is found at 1. Offsets, not strings, when text repeats (docs/chunking.md)
    chunks = chunk(module, "as_strings", {"width": 5}, doc="abcabcabc")
    assert [(c.start, c.end, c.text) for c in chunks] == [(0, 5, "abcab"), (1, 6, "bcabc"), (2, 3, "c")]


def test_a_class_is_built_once_with_params(module):
    chunks = chunk(module, "Paragraphs", {"separator": "\n"})
    assert [c.text for c in chunks] == ["first line", "second line", "third"]
    name, base = module
    chunker = build_chunker("mine", {"method": f"{name}:Paragraphs"}, base)
    assert [c.text for c in chunker.chunk({"d": DOC})] == ["first line\nsecond line", "third"]
    assert chunker.describe() == {
        "method": f"{name}:Paragraphs", "size": None, "overlap": None, "unit": None, "tokenizer": "words",
        "library": "custom", "params": {},
    }


def test_numpy_integer_offsets_are_offsets_and_kept_as_ints(module):
    """A chunker computing with numpy returns np.int64 offsets: refused before ("start np.int64(0) is not an
    integer offset") while evaluate_evidence accepted them; the chunks keep Python ints (ids, JSON)."""
    chunks = chunk(module, "numpy_offsets")
    assert [(c.start, c.end, c.text) for c in chunks] == [(0, 10, "first line"), (11, 22, "second line")]
    assert all(type(c.start) is int and type(c.end) is int for c in chunks)
    assert json.dumps([[c.start, c.end] for c in chunks]) == "[[0, 10], [11, 22]]"
    assert error_of(module, "bool_offsets") == (
        "chunking.mine: chunker 'M:bool_offsets' gave document 'd' the span [False, 3): start False is not an "
        "integer offset"
    )


def test_bad_offsets_name_chunker_document_and_span(module):
    assert error_of(module, "bad_offsets") == (
        "chunking.mine: chunker 'M:bad_offsets' gave document 'd' the span [5, 2): "
        "end 2 is not after start 5; a span is [start, end) with end > start"
    )
    assert error_of(module, "past_the_end") == (
        "chunking.mine: chunker 'M:past_the_end' gave document 'd' the span [0, 30): "
        "end 30 is past the end of the document (29 characters)"
    )
    assert error_of(module, "twice") == (
        "chunking.mine: chunker 'M:twice' gave document 'd' the span [0, 2) twice; "
        "a chunk id names its document and offsets, so each span may appear once"
    )


def test_bad_return_values(module):
    assert error_of(module, "missing_string") == (
        "chunking.mine: chunker 'M:missing_string': chunk 0 of document 'd' ('zzz') does not occur in the document "
        "at or after offset 0; chunk strings must be exact substrings in document order "
        "(or return (start, end) offsets)"
    )
    assert error_of(module, "returns_none") == (
        "chunking.mine: chunker 'M:returns_none' returned NoneType for document 'd'; "
        "return an iterable of (start, end) pairs or of chunk strings"
    )
    returned_text = error_of(module, "returns_text")
    assert returned_text.startswith("chunking.mine: chunker 'M:returns_text' returned str for document 'd'")
    assert error_of(module, "strange_item") == (
        "chunking.mine: chunker 'M:strange_item': chunk 0 of document 'd' is float; "
        "a chunk is a (start, end) pair or the chunk's text"
    )


def test_what_the_chunker_raises_becomes_one_line(module):
    assert error_of(module, "raises") == (
        "chunking.mine: chunker 'M:raises' failed on document 'd': ValueError: no chunks today"
    )
    assert error_of(module, "exits") == (
        "chunking.mine: chunker 'M:exits' failed on document 'd': SystemExit(3); a plug-in must raise an exception, "
        "not exit the process"
    )
    assert error_of(module, "BrokenInit") == (
        "chunking.mine: chunker 'M:BrokenInit': M.BrokenInit() raised RuntimeError: cannot build"
    )


@pytest.mark.parametrize("call", [build_chunker, check_chunker])
def test_not_a_chunker_is_refused_before_any_call(module, call):
    assert error_of(module, "NOT_CALLABLE", call=call) == (
        "chunking.mine.method: 'M:NOT_CALLABLE' is an object of type int, not a chunker function or class, "
        "so it was not called; a chunker is a function f(text, **params) marked with @rag_eval.extend.chunker_function, "
        "or a class C(**params) with a chunk(text) method, returning (start, end) pairs or chunk strings "
        "(see docs/chunking.md)"
    )
    assert error_of(module, "NoChunk", call=call).startswith(
        "chunking.mine.method: class M.NoChunk has no chunk(text) method; a chunker is a function"
    )
    assert error_of(module, "by_line", {"width": 3}, call=call) == (
        "chunking.mine.params: chunker 'M:by_line': got an unexpected keyword argument 'width'; it takes: text"
    )


def test_check_imports_but_never_calls(module):
    name, base = module
    check_chunker("mine", {"method": f"{name}:by_line"}, base)
    import importlib

    assert importlib.import_module(name).CALLS == []


@pytest.mark.parametrize(
    ("method", "message"),
    [
        ("shutil:rmtree",
         "chunking.mine.method: 'shutil:rmtree' is the standard-library function shutil.rmtree, not a chunker, "
         "so it was not called; a chunker is a function"),
        ("os:system",
         "chunking.mine.method: 'os:system' is the built-in function posix.system, not a chunker function or class, "
         "so it was not called"),
        ("os", None),
    ],
)
def test_dangerous_or_wrong_objects_are_never_called(method, message, tmp_path):
    if message is None:  # no ':' -> not an import string: an unknown method
        with pytest.raises(ConfigError, match=r"^chunking\.mine\.method: unknown method 'os'"):
            build_chunker("mine", {"method": method}, tmp_path)
        return
    victim = tmp_path / "victim"
    victim.mkdir()
    with pytest.raises(ConfigError) as error:
        build_chunker("mine", {"method": method}, tmp_path).chunk({"d": str(victim)})
    assert str(error.value).startswith(message)
    assert victim.is_dir()


def test_a_missing_module_or_attribute(tmp_path, module):
    with pytest.raises(ConfigError) as error:
        build_chunker("mine", {"method": "no_such_chunkers:split"}, tmp_path)
    message = str(error.value)
    assert message.startswith(
        "chunking.mine.method: chunker 'no_such_chunkers:split': no module named 'no_such_chunkers'; "
        f"looked in the config's folder {str(tmp_path.resolve())!r}, then sys.path: "
    )
    assert message.endswith("put no_such_chunkers.py beside the config, or install the package that provides it")
    assert error_of(module, "nothing_here") == (
        "chunking.mine.method: chunker 'M:nothing_here': module 'M' has no attribute 'nothing_here'"
    )


def test_unknown_keys_of_a_custom_chunker(module):
    name, base = module
    with pytest.raises(ConfigError) as error:
        build_chunker("mine", {"method": f"{name}:by_line", "size": 10}, base)
    assert str(error.value) == (
        "chunking.mine.size: unknown key; a custom chunker takes: method, tokenizer, params"
    )


def test_a_chunker_that_gives_no_chunk_for_any_document_is_refused(module):
    name, base = module
    seam = ("a chunker is a function f(text, **params) marked with @rag_eval.extend.chunker_function, or a class "
            "C(**params) with a chunk(text) method, returning (start, end) pairs or chunk strings (see docs/chunking.md)")
    documents = {"d1": "one", "d2": "two", "d3": "three", "blank": "  \n"}
    with pytest.raises(ConfigError) as error:
        build_chunker("mine", {"method": f"{name}:nothing"}, base).chunk(documents)
    assert str(error.value) == (
        f"chunking.mine: chunker '{name}:nothing' produced no chunks for any of the 3 documents; {seam}"
    )
    with pytest.raises(ConfigError) as error:
        build_chunker("mine", {"method": f"{name}:nothing"}, base).chunk({"d": "text"})
    assert str(error.value) == f"chunking.mine: chunker '{name}:nothing' produced no chunks for the only document; {seam}"
    # no chunk for SOME documents is a chunker's right (a filter); documents without text give none anyway
    chunks = build_chunker("mine", {"method": f"{name}:first_word_of_a"}, base).chunk({"x": "b", "y": "a b"})
    assert [(c.doc, c.start, c.end) for c in chunks] == [("y", 0, 1)]
    assert build_chunker("mine", {"method": f"{name}:nothing"}, base).chunk({"blank": " ", "empty": ""}) == []


# ---- issue 20, item 2: only a class with chunk() or a function marked as a chunker is ever called ------------

UNMARKED = '''
import pathlib

def writes(text, f="victim.txt"):
    """Any non-stdlib function (torch.save, numpy.save, a helper of the user's own) is not a chunker."""
    pathlib.Path(f).write_text("overwritten", encoding="utf-8")
    return [(0, 1)]
'''


@pytest.mark.parametrize("call", [build_chunker, check_chunker])
def test_a_function_not_marked_as_a_chunker_is_refused_before_any_call(tmp_path, call):
    name = f"unmarked_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(UNMARKED, encoding="utf-8")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious", encoding="utf-8")
    spec = {"method": f"{name}:writes", "params": {"f": str(victim)}}
    with pytest.raises(ConfigError) as error:
        built = call("mine", spec, tmp_path)
        if built is not None:
            built.chunk({"d": "some text"})
    assert str(error.value).replace(name, "M") == (
        "chunking.mine.method: 'M:writes' is the function M.writes, which is not marked as a chunker, so it was not "
        "called; a chunker is a function f(text, **params) marked with @rag_eval.extend.chunker_function, or a class "
        "C(**params) with a chunk(text) method, returning (start, end) pairs or chunk strings (see docs/chunking.md)"
    )
    assert victim.read_text(encoding="utf-8") == "precious"


def test_torch_save_named_as_a_chunker_is_refused_by_validate_and_run(tmp_path, capsys):
    """The attack of issue 20: `method: 'torch:save'` passed validate and `run` overwrote the file."""
    pytest.importorskip("torch")
    from rag_eval.cli import main

    (tmp_path / "victim.txt").write_text("precious", encoding="utf-8")
    (tmp_path / "set.yaml").write_text(
        "documents: [{id: d1, text: 'a b c d'}]\n"
        "queries: [{id: q1, text: a, judgements: {d1: 1}}]\n",
        encoding="utf-8",
    )
    config = tmp_path / "run.yaml"
    config.write_text(
        "dataset: {path: set.yaml}\n"
        "chunking: {c: {method: 'torch:save', params: {f: victim.txt}}}\n"
        "retrievers: [{label: bm25, adapter: bm25, chunker: c}]\n"
        "metrics: [doc_ndcg@10]\n",
        encoding="utf-8",
    )
    for command in (["validate", str(config)], ["run", str(config), "--output", str(tmp_path / "out"), "--no-progress"]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert "chunking.c.method: 'torch:save' is the function torch.serialization.save, which is not marked as a " \
               "chunker, so it was not called" in err, err
        assert err.count("\n") <= 2 and "Traceback" not in err
    assert (tmp_path / "victim.txt").read_text(encoding="utf-8") == "precious"
    assert not (tmp_path / "out").exists()


def test_a_marked_function_is_a_chunker(tmp_path):
    from rag_eval.extend import chunker_function

    @chunker_function
    def halves(text):
        return [(0, len(text) // 2), (len(text) // 2, len(text))]

    assert getattr(halves, "rag_eval_chunker", None) is True
    name = f"marked_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(
        "from rag_eval.extend import chunker_function\n\n\n@chunker_function\ndef halves(text):\n"
        "    return [(0, len(text) // 2), (len(text) // 2, len(text))]\n",
        encoding="utf-8",
    )
    chunks = build_chunker("mine", {"method": f"{name}:halves"}, tmp_path).chunk({"d": "abcdef"})
    assert [c.text for c in chunks] == ["abc", "def"]
