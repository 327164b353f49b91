"""Alias expansion is bounded by the bytes it adds, not only by nodes (issue 20, item 5).

A 1 MB config with 5,000 aliases of a 200 KB string passed the node limit (5,000 nodes) and
wrote a 2 GB results file (4 GB RSS): each alias is one node, but every reader of the result
(validation, the results file's params) expands it to 200 KB.
"""

from __future__ import annotations

import time

import pytest
import yaml

from rag_eval._core.errors import ConfigError
from rag_eval._core.yaml_loader import MAX_ALIAS_BYTES, load_yaml
from rag_eval.cli import main


def test_aliases_of_a_long_string_are_refused_by_the_bytes_they_add(tmp_path):
    long = "x" * 200_000
    aliases = ", ".join(["*big"] * 5_000)
    path = tmp_path / "bomb.yaml"
    path.write_text(f"big: &big {long}\nmany: [{aliases}]\n", encoding="utf-8")
    started = time.perf_counter()
    with pytest.raises(ConfigError) as error:
        load_yaml(path)
    assert time.perf_counter() - started < 5.0
    # 16 MiB / 200,000 bytes: the 84th alias passes the limit; it starts at column 8 + 6 * 83 of line 2.
    column = 8 + 6 * (MAX_ALIAS_BYTES // 200_000)
    assert str(error.value) == (
        f"{path}: line 2, column {column}: invalid YAML: alias *big expands the document's aliases past "
        f"{MAX_ALIAS_BYTES:,} bytes of text (an alias bomb?); write the repeated parts out or repeat less"
    )


def test_aliases_inside_collections_count_every_scalar_they_reach(tmp_path):
    # keys and values, reached through two levels of aliases: 64 x 3 x 100 KB = 19.2 MB
    text = (
        f"a: &a\n  k: {'y' * 50_000}\n  ? {'z' * 50_000}\n  : 1\n"  # a key longer than 1024: the explicit form
        "b: &b [*a, *a, *a]\n"
        "c: [" + ", ".join(["*b"] * 64) + "]\n"
    )
    path = tmp_path / "nested.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^.*nested\.yaml: line 6, column \d+: invalid YAML: alias \*b expands "
                                          r"the document's aliases past [\d,]+ bytes of text"):
        load_yaml(path)


def test_ordinary_anchors_still_load(tmp_path):
    text = "common: &common {k1: 1.2, b: 0.75, note: " + "n" * 1000 + "}\na: *common\nb: {<<: *common, k1: 0.9}\n"
    path = tmp_path / "ok.yaml"
    path.write_text(text, encoding="utf-8")
    loaded = load_yaml(path)
    assert loaded["a"] == loaded["common"] and loaded["b"]["k1"] == 0.9


def test_the_config_of_the_attack_exits_2_with_one_line_and_writes_nothing(tmp_path, capsys):
    (tmp_path / "set.yaml").write_text(
        "corpus: [{id: d1, text: a}]\nqueries: [{id: q1, text: a, judgements: {d1: 1}}]\n", encoding="utf-8"
    )
    params = {"rankings": {"q1": ["d1"]}}
    text = (
        "dataset: {path: set.yaml}\nmetrics: [ndcg@10]\n"
        f"note: &big {'x' * 200_000}\n"
        "retrievers:\n  - label: s\n    adapter: static\n    params:\n"
        f"      {yaml.safe_dump(params, default_flow_style=True).strip()[1:-1]}\n"
        "      pad: [" + ", ".join(["*big"] * 5_000) + "]\n"
    )
    path = tmp_path / "run.yaml"
    path.write_text(text, encoding="utf-8")
    for command in (["validate", str(path)], ["run", str(path), "--output", str(tmp_path / "out"), "--no-progress"]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert f"{path}: line 9, column " in err.splitlines()[0]
        assert "invalid YAML: alias *big expands the document's aliases past" in err.splitlines()[0]
        assert err.count("\n") <= 2 and "Traceback" not in err, err
    assert not (tmp_path / "out").exists()
