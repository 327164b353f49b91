"""Bad inputs to ``rag-eval run`` and ``rag-eval validate``: configs, query sets, corpora, collections, rankings.

Each case writes its files into a fresh workspace and names the file and the place
(line and column, line, or field path) the message must contain. For every case and
command: exit code 2, no traceback, every line of stderr a one-line problem naming
that file and place; for ``run`` also exactly one line, nothing on stdout, and the
output folder (an explicit ``output:`` holding an earlier file) byte for byte as it was.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from rag_eval.cli import main

# An earlier rag_eval's report (no manifest: recognised by its generated heading, so a run may replace it).
EARLIER = "# RAG Evaluation: tiny\n\n## \N{BOOKS} What was evaluated\n\nan earlier run's file\r\n\u00e9\n".encode()
PASSAGES = [{"id": "d1", "text": "alpha beta"}, {"id": "d2", "text": "gamma delta"}]
QUERIES = [{"id": "q1", "text": "alpha", "judgements": {"d1": 2, "d2": 0}}]
BILLION_LAUGHS = "x0: &x0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"x{i}: &x{i} [" + ", ".join([f"*x{i - 1}"] * 9) + "]\n" for i in range(1, 9)
)
DEEP_YAML = "[" * 20_000 + "]" * 20_000 + "\n"
DEEP_JSON = "[" * 20_000 + "]" * 20_000 + "\n"


@dataclass(frozen=True)
class Case:
    """A bad input: ``make(ws, monkeypatch)`` writes it and returns (config, file named, place named)."""

    name: str
    make: Callable[[Path, pytest.MonkeyPatch], tuple[Path, Path | str, str]]
    commands: tuple[str, ...] = ("run", "validate")


# ---- the workspace -------------------------------------------------------------------------------------------


def config_dict(**overrides) -> dict:
    config = {
        "name": "bad-input",
        "dataset": {"path": "../data/set.yaml"},
        "retrievers": [{"label": "fixed", "adapter": "static", "params": {"rankings": {"q1": ["d1", "d2"]}}}],
        "metrics": ["ndcg@10"],
        "output": "../out",
    }
    config.update(overrides)
    return config


def write(path: Path, data: str | bytes | dict | list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    elif isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def config(ws: Path, **overrides) -> Path:
    return write(ws / "configs" / "run.yaml", config_dict(**overrides))


def config_text(ws: Path, text: str) -> Path:
    """A config whose YAML is written by hand on line :data:`APPENDED` (after a valid config's keys)."""
    return write(ws / "configs" / "run.yaml", yaml.safe_dump(config_dict(), sort_keys=False) + text)


APPENDED = len(yaml.safe_dump(config_dict(), sort_keys=False).splitlines()) + 1


def query_set_text(ws: Path, text: str | bytes) -> tuple[Path, Path]:
    return config(ws), write(ws / "data" / "set.yaml", text)


def with_corpus(ws: Path, name: str, content: str | bytes) -> tuple[Path, Path]:
    corpus = write(ws / "data" / name, content)
    write(ws / "data" / "set.yaml", {"name": "tiny", "corpus": name, "queries": QUERIES})
    return config(ws), corpus


def beir(ws: Path, files: dict[str, str | bytes | None]) -> tuple[Path, Path]:
    """A BEIR folder with ``files`` ({path in the folder: content, or None for a folder}) replaced."""
    root = ws / "data" / "beir"
    write(root / "corpus.jsonl", "".join(json.dumps({"_id": p["id"], "text": p["text"]}) + "\n" for p in PASSAGES))
    write(root / "queries.jsonl", '{"_id": "q1", "text": "alpha"}\n')
    write(root / "qrels" / "test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t2\n")
    for name, content in files.items():
        if content is None:
            (root / name).unlink()
            (root / name).mkdir()
        else:
            write(root / name, content)
    return config(ws, dataset={"path": "../data/beir", "format": "beir"}), root


def trec(ws: Path, qrels: str | bytes = "q1 0 d1 2\n", queries: str | bytes = "q1\talpha\n") -> Path:
    write(ws / "data" / "qrels.txt", qrels)
    write(ws / "data" / "topics.tsv", queries)
    write(ws / "data" / "docs.tsv", "d1\talpha beta\nd2\tgamma delta\n")
    dataset = {"format": "trec", "qrels": "../data/qrels.txt", "queries": "../data/topics.tsv", "corpus": "../data/docs.tsv"}
    return config(ws, dataset=dataset)


def cranfield(ws: Path, qry: bytes = b".I 1\n.W\nalpha\n", qrel: str = "1 1 1\n") -> tuple[Path, Path]:
    root = ws / "data" / "cran"
    write(root / "cran.all.1400", ".I 1\n.T\nA\n.W\nalpha beta\n.I 2\n.T\nB\n.W\ngamma\n")
    write(root / "cran.qry", qry)
    write(root / "cranqrel", qrel)
    return config(ws, dataset={"path": "../data/cran", "format": "cranfield"}), root


def static_file(ws: Path, name: str, content: str | bytes) -> tuple[Path, Path]:
    ranking = write(ws / "runs" / name, content)
    retrievers = [{"label": "fixed", "adapter": "static", "params": {"path": f"../runs/{name}"}}]
    return config(ws, retrievers=retrievers), ranking


def deny_read(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """Tests run as root, which reads anything: the permission check answers as for a user."""
    real = os.access
    monkeypatch.setattr("rag_eval._core.files.os.access", lambda p, mode: os.fspath(p) != os.fspath(path) and real(p, mode))


def fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    return path


# ---- the cases -----------------------------------------------------------------------------------------------


def _config_missing(ws, mp):
    config(ws)
    return ws / "configs" / "none.yaml", ws / "configs" / "none.yaml", "no such file; expected a YAML run config"


def _config_folder(ws, mp):
    path = ws / "configs" / "run.yaml"
    path.mkdir(parents=True)
    return path, path, "is a folder, expected a YAML run config"


def _config_fifo(ws, mp):
    path = fifo(ws / "configs" / "run.yaml")
    return path, path, "is a FIFO (named pipe), expected a YAML run config"


def _config_dev_zero(ws, mp):
    return Path("/dev/zero"), "/dev/zero", "is a character device, expected a YAML run config"


def _config_unreadable(ws, mp):
    path = config(ws)
    deny_read(mp, path)
    return path, path, "permission denied"


def _config_too_large(ws, mp):
    path = config(ws)
    mp.setattr("rag_eval._data.config.schema.MAX_CONFIG_BYTES", 50)
    return path, path, "over the 50 bytes limit for a YAML run config"


def _config_not_utf8(ws, mp):
    path = write(ws / "configs" / "run.yaml", yaml.safe_dump(config_dict()).encode() + b"# caf\xe9\n")
    return path, path, f"line {len(yaml.safe_dump(config_dict()).splitlines()) + 1}, column 6: not UTF-8 text"


def _config_syntax(ws, mp):
    path = config_text(ws, "top_k: [1, 2\n")
    return path, path, f"line {APPENDED + 1}, column 1: invalid YAML: expected ',' or ']', but got '<stream end>'"


def _config_billion_laughs(ws, mp):
    path = write(ws / "configs" / "run.yaml", BILLION_LAUGHS + yaml.safe_dump(config_dict()))
    return path, path, "line 6, column 10: invalid YAML: alias *x4 expands"


def _config_merge_bomb(ws, mp):
    lines = ["m0: &m0 {k: 1}"] + [f"m{i}: &m{i} {{<<: [*m{i - 1}, *m{i - 1}], k{i}: 1}}" for i in range(1, 40)]
    path = write(ws / "configs" / "run.yaml", "\n".join(lines) + "\n" + yaml.safe_dump(config_dict()))
    return path, path, "invalid YAML: alias *m"


def _config_recursive_alias(ws, mp):
    path = config_text(ws, "cache_dir: &c [*c]\n")
    return path, path, f"line {APPENDED}, column 16: invalid YAML: alias *c refers to a collection that contains it"


def _config_deep(ws, mp):
    path = write(ws / "configs" / "run.yaml", DEEP_YAML)
    return path, path, "line 1, column 101: invalid YAML: nested more than 100 levels deep"


def _config_duplicate_key(ws, mp):
    path = config_text(ws, "metrics: [recall@5]\n")
    return path, path, f"line {APPENDED}, column 1: invalid YAML: key 'metrics' appears twice"


def _config_huge_integer(ws, mp):
    path = config_text(ws, "top_k: " + "7" * 5000 + "\n")
    return path, path, f"line {APPENDED}, column 8: invalid YAML: cannot read"


def _config_label_path(ws, mp):
    path = config(ws, retrievers=[{"label": "../../evil", "adapter": "bm25"}])
    return path, path, "retrievers[0](../../evil).label: a label names the files"


def _config_label_newline(ws, mp):
    path = config(ws, retrievers=[{"label": "two\nlines", "adapter": "bm25"}])
    return path, path, "retrievers[0]('two\\nlines').label: a label names the files"


def _config_name_control(ws, mp):
    path = config(ws, name="run\x1b[31m")
    return path, path, "name: a name is one line of printable text"


def _config_seed_negative(ws, mp):
    regression = {"baseline": "base.json", "gates": {"ndcg@10": {}}, "seed": -1}
    path = config(ws, regression=regression)
    return path, path, "regression.seed: must be >= 0 (numpy refuses negative seeds) (got -1)"


def _config_resamples_huge(ws, mp):
    regression = {"baseline": "base.json", "gates": {"ndcg@10": {}}, "resamples": 10**12}
    path = config(ws, regression=regression)
    return path, path, (
        "regression.resamples: must be from 100 to 1,000,000 (more does not change the printed digits, and costs "
        "memory) (got 1000000000000)"
    )


def _set_missing(ws, mp):
    path = config(ws, dataset={"path": "../data/nowhere.yaml"})
    return path, ws / "data" / "nowhere.yaml", "no such file; expected a YAML query set"


def _set_fifo(ws, mp):
    target = fifo(ws / "data" / "set.yaml")
    return config(ws), target, "is a FIFO (named pipe), expected a YAML query set"


def _set_dev_zero(ws, mp):
    return config(ws, dataset={"path": "/dev/zero", "format": "yaml"}), "/dev/zero", "is a character device"


def _set_unreadable(ws, mp):
    path, target = query_set_text(ws, yaml.safe_dump({"corpus": PASSAGES, "queries": QUERIES}))
    deny_read(mp, target)
    return path, target, "permission denied; make the YAML query set readable"


def _set_not_utf8(ws, mp):
    path, target = query_set_text(ws, b"corpus: [{id: d1, text: caf\xe9}]\nqueries: []\n")
    return path, target, "line 1, column 28: not UTF-8 text (byte 0xe9"


def _set_alias_bomb(ws, mp):
    path, target = query_set_text(ws, BILLION_LAUGHS + yaml.safe_dump({"corpus": PASSAGES, "queries": QUERIES}))
    return path, target, "line 6, column 10: invalid YAML: alias *x4 expands"


def _set_deep(ws, mp):
    path, target = query_set_text(ws, "corpus: " + DEEP_YAML)
    return path, target, "invalid YAML: nested more than 100 levels deep"


def _set_date_id(ws, mp):
    path, target = query_set_text(ws, "corpus: [{id: d1, text: a}]\nqueries:\n  - {id: 2024-03-01, text: x, judgements: {d1: 1}}\n")
    return path, target, "queries[0].id: an id must be text; YAML read this unquoted value as a date: quote it (got the date 2024-03-01)"


def _set_float_id(ws, mp):
    path, target = query_set_text(ws, "corpus: [{id: 1.10, text: a}]\nqueries:\n  - {id: q1, text: x, judgements: {d1: 1}}\n")
    return path, target, "corpus[0].id: an id must be text; this one was read as a decimal number"


def _set_nul_id(ws, mp):
    path, target = query_set_text(ws, 'corpus: [{id: d1, text: a}]\nqueries:\n  - {id: "q\\0", text: x, judgements: {d1: 1}}\n')
    return path, target, "queries[0]('q\\x00').id: an id holds the control character U+0000 at position 2"


# A lone surrogate (YAML's "\ud800" escape without its other half) is not UTF-8 text: before, each of these passed
# validate and `run` failed writing its report (exit 3). Any YAML text holding one is refused where it is read.
def _set_surrogate_passage_id(ws, mp):
    path, target = query_set_text(ws, 'corpus: [{id: "d\\ud800", text: a}]\nqueries: [{id: q1, text: x}]\n')
    return path, target, "line 1, column 15: invalid YAML: 'd\\ud800' holds a lone surrogate U+D800 at position 2"


def _set_surrogate_passage_text(ws, mp):
    path, target = query_set_text(ws, 'corpus: [{id: d1, text: "sea \\ud800"}]\nqueries: [{id: q1, text: x}]\n')
    return path, target, "line 1, column 25: invalid YAML: 'sea \\ud800' holds a lone surrogate U+D800 at position 5"


def _set_surrogate_query_text(ws, mp):
    path, target = query_set_text(ws, 'corpus: [{id: d1, text: a}]\nqueries: [{id: q1, text: "\\udfff?"}]\n')
    return path, target, "line 2, column 26: invalid YAML: '\\udfff?' holds a lone surrogate U+DFFF at position 1"


def _set_surrogate_tag(ws, mp):
    path, target = query_set_text(ws, 'corpus: [{id: d1, text: a}]\nqueries: [{id: q1, text: x, tags: ["\\udfff"]}]\n')
    return path, target, "line 2, column 36: invalid YAML: '\\udfff' holds a lone surrogate U+DFFF at position 1"


def _config_surrogate_report_title(ws, mp):  # (the dataset's name and bm25's stop words crashed alike)
    return config(ws, report={"title": "t\ud800"}), "configs/run.yaml", "holds a lone surrogate U+D800 at position 2"


def _corpus_jsonl_surrogate_text(ws, mp):
    return (*with_corpus(ws, "c.jsonl", '{"id": "d1", "text": "sea \\ud800"}\n{"id": "d2", "text": "b"}\n'),
            "c.jsonl:1: passage 'd1': 'text' holds a lone surrogate U+D800 at position 5")


def _beir_query_surrogate_text(ws, mp):
    return (*beir(ws, {"queries.jsonl": '{"_id": "q1", "text": "alpha \\udfff"}\n'}),
            "queries.jsonl:1: query 'q1': 'text' holds a lone surrogate U+DFFF at position 7")


def _set_grade_overflow(ws, mp):
    path, target = query_set_text(ws, "corpus: [{id: d1, text: a}]\nqueries:\n  - {id: q1, text: x, judgements: {d1: 1" + "0" * 400 + "}}\n")
    return path, target, "queries[0](q1).judgements.d1: a grade is a finite number such as 2, 0.5 or -1; this one is too large"


def _set_grade_quoted(ws, mp):
    path, target = query_set_text(ws, "corpus: [{id: d1, text: a}]\nqueries:\n  - {id: q1, text: x, judgements: {d1: '2'}}\n")
    return path, target, "queries[0](q1).judgements.d1: a grade is a finite number such as 2, 0.5 or -1, written without quotes"


def _set_unknown_key(ws, mp):
    path, target = query_set_text(ws, yaml.safe_dump({"corpus": PASSAGES, "queries": [dict(QUERIES[0], judgement={})]}))
    return path, target, "queries[0](q1).judgement: unknown key; did you mean 'judgements'?"


def _set_judges_unknown_doc(ws, mp):
    path, target = query_set_text(ws, yaml.safe_dump({"corpus": PASSAGES, "queries": [dict(QUERIES[0], judgements={"zz": 1})]}))
    return path, target, "queries[0](q1).judgements.zz: passage 'zz' is not in the corpus"


def _corpus_folder(ws, mp):
    (ws / "data" / "docs.tsv").mkdir(parents=True)
    write(ws / "data" / "set.yaml", {"corpus": "docs.tsv", "queries": QUERIES})
    return config(ws), ws / "data" / "docs.tsv", "is a folder, expected a corpus file"


def _corpus_tsv_not_utf8(ws, mp):
    path, corpus = with_corpus(ws, "docs.tsv", b"d1\talpha\nd2\tgam\xffma\n")
    return path, corpus, "line 2, column 7: not UTF-8 text (byte 0xff"


def _corpus_json_not_utf8(ws, mp):
    path, corpus = with_corpus(ws, "docs.json", b'[{"id": "d1", "text": "a\x80"}]')
    return path, corpus, "line 1, column 25: not UTF-8 text (byte 0x80"


def _corpus_json_deep(ws, mp):
    path, corpus = with_corpus(ws, "docs.json", DEEP_JSON)
    return path, corpus, "line 1: invalid JSON: nested more than 500 levels deep"


def _corpus_jsonl_line_deep(ws, mp):
    path, corpus = with_corpus(ws, "docs.jsonl", '{"_id": "d1", "text": "a"}\n' + DEEP_JSON)
    return path, corpus, ":2: invalid JSON: nested more than 500 levels deep"


def _corpus_jsonl_bad_line(ws, mp):
    path, corpus = with_corpus(ws, "docs.jsonl", '{"_id": "d1", "text": "a"}\n{"_id": "d2", "text": }\n')
    return path, corpus, ":2: invalid JSON: Expecting value (column 23)"


def _corpus_not_gzip(ws, mp):
    path, corpus = with_corpus(ws, "docs.jsonl.gz", '{"_id": "d1", "text": "a"}\n')
    return path, corpus, "not a valid gzip file"


def _corpus_truncated_gzip(ws, mp):
    data = gzip.compress(b"".join(json.dumps({"_id": f"d{i}", "text": "x"}).encode() + b"\n" for i in range(1, 500)))
    path, corpus = with_corpus(ws, "docs.jsonl.gz", data[: len(data) // 2])
    return path, corpus, "not a valid gzip file"


def _corpus_csv_columns(ws, mp):
    path, corpus = with_corpus(ws, "docs.csv", "doc,body\nd1,alpha\n")
    return path, corpus, ":1: a CSV corpus needs a header row with columns id and text"


def _corpus_id_control(ws, mp):
    path, corpus = with_corpus(ws, "docs.tsv", "d1\talpha\nd\x012\tgamma\n")
    return path, corpus, ":2: an id holds the control character U+0001 at position 2"


def _corpus_fifo(ws, mp):
    corpus = fifo(ws / "data" / "docs.jsonl")
    write(ws / "data" / "set.yaml", {"corpus": "docs.jsonl", "queries": QUERIES})
    return config(ws), corpus, "is a FIFO (named pipe), expected a corpus file"


def _beir_qrels_folder(ws, mp):
    path, root = beir(ws, {"qrels/test.tsv": None})
    return path, root / "qrels" / "test.tsv", "is a folder, expected a BEIR qrels file of split 'test'"


def _beir_queries_array(ws, mp):
    path, root = beir(ws, {"queries.jsonl": '{"_id": "q1", "text": "alpha"}\n["q2", "beta"]\n'})
    return path, root / "queries.jsonl", ":2: expected a JSON object with _id and text, got list"


def _beir_queries_string(ws, mp):
    path, root = beir(ws, {"queries.jsonl": '{"_id": "q1", "text": "alpha"}\n"just a string"\n'})
    return path, root / "queries.jsonl", ":2: expected a JSON object with _id and text, got 'just a string'"


def _beir_corpus_not_utf8(ws, mp):
    path, root = beir(ws, {"corpus.jsonl": b'{"_id": "d1", "text": "a"}\n{"_id": "d2", "text": "\xfe"}\n'})
    return path, root / "corpus.jsonl", "line 2, column 24: not UTF-8 text (byte 0xfe"


def _beir_grade_underscore(ws, mp):
    path, root = beir(ws, {"qrels/test.tsv": "query-id\tcorpus-id\tscore\nq1\td1\t1_0\n"})
    return path, root / "qrels" / "test.tsv", ":2: query 'q1': doc 'd1': grade '1_0': a grade is a finite number"


def _beir_grade_overflow(ws, mp):
    path, root = beir(ws, {"qrels/test.tsv": "query-id\tcorpus-id\tscore\nq1\td1\t1e999\n"})
    return path, root / "qrels" / "test.tsv", ":2: query 'q1': doc 'd1': grade '1e999'"


def _trec_qrels_nul(ws, mp):
    return trec(ws, qrels="q1 0 d1 2\nq1 0 d2\x00 1\n"), ws / "data" / "qrels.txt", ":2: an id holds the control character U+0000"


def _trec_qrels_fields(ws, mp):
    return trec(ws, qrels="q1 0 d1 2\nq1 d2 1\n"), ws / "data" / "qrels.txt", ":2: expected 4 fields 'qid iter doc_id grade', found 3"


def _trec_qrels_cr_only(ws, mp):
    path = trec(ws, qrels=b"q1 0 d1 2\rq1 0 d2 1\rq1 0 d1 x\r")
    return path, ws / "data" / "qrels.txt", ":3: query 'q1': doc 'd1': grade 'x'"


def _trec_queries_unreadable(ws, mp):
    path = trec(ws)
    deny_read(mp, ws / "data" / "topics.tsv")
    return path, ws / "data" / "topics.tsv", "permission denied; make the queries file readable"


def _trec_queries_no_tab(ws, mp):
    return trec(ws, queries="q1\talpha\nq2 beta\n"), ws / "data" / "topics.tsv", ":2: expected 'id<TAB>text'"


def _cranfield_queries_not_utf8(ws, mp):
    path, root = cranfield(ws, qry=b".I 1\n.W\nalpha \xc3\n")
    return path, root / "cran.qry", "line 3, column 7: not UTF-8 text"


def _cranfield_bad_code(ws, mp):
    path, root = cranfield(ws, qrel="1 1 1\n1 2 one\n")
    return path, root / "cranqrel", ":2: query '1': doc '2': grade 'one'"


def _ranking_deep(ws, mp):
    path, ranking = static_file(ws, "fixed.json", '{"q1": ' + DEEP_JSON + "}")
    return path, ranking, "line 1: invalid JSON: nested more than 500 levels deep"


def _ranking_not_utf8(ws, mp):
    path, ranking = static_file(ws, "fixed.json", b'{"q1": ["d1",\n "d\xe92"]}')
    return path, ranking, "line 2, column 4: not UTF-8 text"


def _ranking_fifo(ws, mp):
    ranking = fifo(ws / "runs" / "fixed.run")
    retrievers = [{"label": "fixed", "adapter": "static", "params": {"path": "../runs/fixed.run"}}]
    return config(ws, retrievers=retrievers), ranking, "is a FIFO (named pipe), expected a TREC run file"


def _ranking_folder(ws, mp):
    (ws / "runs" / "fixed.json").mkdir(parents=True)
    retrievers = [{"label": "fixed", "adapter": "static", "params": {"path": "../runs/fixed.json"}}]
    return config(ws, retrievers=retrievers), ws / "runs" / "fixed.json", "is a folder, expected a JSON ranking file"


def _ranking_nan(ws, mp):
    path, ranking = static_file(ws, "fixed.json", '{"q1": {"d1": NaN}}')
    return path, ranking, "query 'q1', doc 'd1': score nan is not a finite number"


# Looked up in the dataset by validate too (before, only run found these, after the other retrievers had run).
def _ranking_unknown_doc(ws, mp):
    path, ranking = static_file(ws, "fixed.run", "q1 Q0 d1 1 2.0 t\nq1 Q0 nope 2 1.0 t\n")
    return path, ranking, "query 'q1' ranks doc 'nope', which is not in the corpus"


def _ranking_no_query(ws, mp):
    path, ranking = static_file(ws, "fixed.run", "Q-1 Q0 d1 1 2.0 t\n")
    return path, ranking, "none of its 1 queries is in the query set (it has 'Q-1'; the query set has 'q1')"


def _ranking_control_id(ws, mp):
    path, ranking = static_file(ws, "fixed.json", '{"q1": ["d1\\u0000"]}')
    return path, ranking, "query 'q1': doc id: an id holds the control character U+0000 at position 3"


def _ranking_unreadable(ws, mp):
    path, ranking = static_file(ws, "fixed.json", '{"q1": ["d1"]}')
    deny_read(mp, ranking)
    return path, ranking, "permission denied; make the JSON ranking file readable"



CASES = [
    Case("config missing", _config_missing),
    Case("config is a folder", _config_folder),
    Case("config is a FIFO", _config_fifo),
    Case("config is /dev/zero", _config_dev_zero),
    Case("config unreadable", _config_unreadable),
    Case("config over the size limit", _config_too_large),
    Case("config not UTF-8", _config_not_utf8),
    Case("config YAML syntax", _config_syntax),
    Case("config billion laughs", _config_billion_laughs),
    Case("config merge-key bomb", _config_merge_bomb),
    Case("config recursive alias", _config_recursive_alias),
    Case("config nested 20000 deep", _config_deep),
    Case("config duplicate key", _config_duplicate_key),
    Case("config integer of 5000 digits", _config_huge_integer),
    Case("config label with a path", _config_label_path),
    Case("config label with a newline", _config_label_newline),
    Case("config name with an escape", _config_name_control),
    Case("config seed -1", _config_seed_negative),
    Case("config resamples 10**12", _config_resamples_huge),
    Case("query set missing", _set_missing),
    Case("query set is a FIFO", _set_fifo),
    Case("query set is /dev/zero", _set_dev_zero),
    Case("query set unreadable", _set_unreadable),
    Case("query set not UTF-8", _set_not_utf8),
    Case("query set billion laughs", _set_alias_bomb),
    Case("query set nested 20000 deep", _set_deep),
    Case("query id a YAML date", _set_date_id),
    Case("passage id a YAML float", _set_float_id),
    Case("query id with NUL", _set_nul_id),
    Case("passage id with a lone surrogate", _set_surrogate_passage_id),
    Case("passage text with a lone surrogate", _set_surrogate_passage_text),
    Case("query text with a lone surrogate", _set_surrogate_query_text),
    Case("query tag with a lone surrogate", _set_surrogate_tag),
    Case("corpus JSONL text with a lone surrogate", _corpus_jsonl_surrogate_text),
    Case("config report title with a lone surrogate", _config_surrogate_report_title),
    Case("BEIR query text with a lone surrogate", _beir_query_surrogate_text),
    Case("grade too large for a float", _set_grade_overflow),
    Case("grade in quotes", _set_grade_quoted),
    Case("query set unknown key", _set_unknown_key),
    Case("judgement of a passage not in the corpus", _set_judges_unknown_doc),
    Case("corpus is a folder", _corpus_folder),
    Case("corpus TSV not UTF-8", _corpus_tsv_not_utf8),
    Case("corpus JSON not UTF-8", _corpus_json_not_utf8),
    Case("corpus JSON nested 20000 deep", _corpus_json_deep),
    Case("corpus JSONL line nested 20000 deep", _corpus_jsonl_line_deep),
    Case("corpus JSONL invalid line", _corpus_jsonl_bad_line),
    Case("corpus .gz not gzip", _corpus_not_gzip),
    Case("corpus .gz truncated", _corpus_truncated_gzip),
    Case("corpus CSV without id and text", _corpus_csv_columns),
    Case("corpus id with a control character", _corpus_id_control),
    Case("corpus is a FIFO", _corpus_fifo),
    Case("BEIR qrels is a folder", _beir_qrels_folder),
    Case("BEIR queries line is an array", _beir_queries_array),
    Case("BEIR queries line is a string", _beir_queries_string),
    Case("BEIR corpus not UTF-8", _beir_corpus_not_utf8),
    Case("BEIR grade 1_0", _beir_grade_underscore),
    Case("BEIR grade 1e999", _beir_grade_overflow),
    Case("TREC qrels id with NUL", _trec_qrels_nul),
    Case("TREC qrels three fields", _trec_qrels_fields),
    Case("TREC qrels CR-only line ends", _trec_qrels_cr_only),
    Case("TREC queries unreadable", _trec_queries_unreadable),
    Case("TREC queries line without a tab", _trec_queries_no_tab),
    Case("Cranfield queries not UTF-8", _cranfield_queries_not_utf8),
    Case("Cranfield code not a number", _cranfield_bad_code),
    Case("ranking JSON nested 20000 deep", _ranking_deep),
    Case("ranking JSON not UTF-8", _ranking_not_utf8),
    Case("ranking is a FIFO", _ranking_fifo),
    Case("ranking is a folder", _ranking_folder),
    Case("ranking score NaN", _ranking_nan),
    Case("ranking id with NUL", _ranking_control_id),
    Case("ranking of a doc not in the corpus", _ranking_unknown_doc),
    Case("ranking naming no query of the set", _ranking_no_query),
    Case("ranking unreadable", _ranking_unreadable),
]

RUNS = [(case, command) for case in CASES for command in case.commands]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A workspace with a valid query set and an output folder holding an earlier run's file."""
    write(tmp_path / "data" / "set.yaml", {"name": "tiny", "corpus": PASSAGES, "queries": QUERIES})
    write(tmp_path / "out" / "report.md", EARLIER)
    return tmp_path


def test_the_table_is_wide_and_every_case_distinct():
    assert len(CASES) >= 35
    assert len({case.name for case in CASES}) == len(CASES)
    assert len({case.make for case in CASES}) == len(CASES)


def test_the_workspace_itself_is_valid(ws, capsys):
    assert main(["validate", str(config(ws))]) == 0
    assert ": OK: dataset tiny (1 queries, 2 passages" in capsys.readouterr().out


@pytest.mark.parametrize("case, command", RUNS, ids=[f"{command}: {case.name}" for case, command in RUNS])
def test_bad_input_exit_2_one_line_naming_file_and_place(ws, monkeypatch, capsys, case, command):
    path, named, place = case.make(ws, monkeypatch)
    before = snapshot(ws / "out")
    code = main([command, str(path), "--no-progress"] if command == "run" else [command, str(path)])
    captured = capsys.readouterr()
    assert code == 2, captured
    assert "Traceback" not in captured.err
    lines = captured.err.splitlines()
    assert captured.err.endswith("\n") and all(line.strip() for line in lines)
    matching = [line for line in lines if str(named) in line and place in line]
    assert matching, f"no line names {named} and {place!r}: {captured.err}"
    if command == "run":
        assert captured.out == ""
        assert len(lines) == 1 and lines[0].startswith("rag-eval: error: ")
        # An explicit output folder stays exactly as it was: the earlier file, nothing added.
        assert snapshot(ws / "out") == before == {"report.md": EARLIER}
    else:
        assert lines[-1] in ("rag-eval: 1 problem found", f"rag-eval: {len(lines) - 1} problems found")
