"""Query sets, graded judgements and corpora, from the formats they come in.

Formats: rag_eval's own YAML query set (corpus inline or in a YAML, JSONL, CSV or
TSV file), a BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv), TREC
qrels with a queries file and a corpus file, and the Cranfield collection. A
``grade_map`` turns collection codes into gains (Cranfield: code 1 is best).

Loading checks everything and collects every problem before raising, so that
``rag-eval validate`` can list them all: duplicate ids, judgements of documents
missing from the corpus, non-numeric grades, empty query texts, no judgements.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import math
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from rag_eval.errors import DatasetError

FORMATS = ("yaml", "beir", "trec", "cranfield")


@dataclass(frozen=True)
class Query:
    """One question of a query set."""

    id: str
    text: str
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Dataset:
    """Queries, their graded judgements and the corpus they judge."""

    name: str
    queries: dict[str, Query]
    judgements: dict[str, dict[str, float]]
    corpus: dict[str, dict[str, str]]
    source: str = ""
    notes: tuple[str, ...] = ()
    description: str = ""

    @cached_property
    def fingerprint(self) -> str:
        """sha256 of queries, judgements and corpus in a canonical form (first 16 hex)."""
        digest = hashlib.sha256()
        for chunk in _canonical_chunks(self):
            digest.update(chunk)
        return digest.hexdigest()[:16]

    @property
    def judged_query_ids(self) -> list[str]:
        """Queries that have judgements (the ones that can be scored)."""
        return [q for q in self.queries if self.judgements.get(q)]

    @property
    def unjudged_query_ids(self) -> list[str]:
        """Queries without any judgement: listed in reports, never scored."""
        return [q for q in self.queries if not self.judgements.get(q)]

    def query_texts(self) -> dict[str, str]:
        """``{qid: text}`` for every query, as retrievers receive them."""
        return {q.id: q.text for q in self.queries.values()}

    def summary(self) -> dict[str, Any]:
        """Counts for reports and results files."""
        return {
            "name": self.name,
            "source": self.source,
            "fingerprint": self.fingerprint,
            "queries": len(self.queries),
            "judged_queries": len(self.judged_query_ids),
            "passages": len(self.corpus),
            "judgements": sum(len(j) for j in self.judgements.values()),
            "notes": list(self.notes),
        }


def _canonical_chunks(dataset: Dataset) -> Iterator[bytes]:
    yield b"queries\0"
    for qid in sorted(dataset.queries):
        yield f"{qid}\0{dataset.queries[qid].text}\0".encode()
    yield b"judgements\0"
    for qid in sorted(dataset.judgements):
        for doc in sorted(dataset.judgements[qid]):
            yield f"{qid}\0{doc}\0{float(dataset.judgements[qid][doc])!r}\0".encode()
    yield b"corpus\0"
    for doc in sorted(dataset.corpus):
        passage = dataset.corpus[doc]
        yield f"{doc}\0{passage.get('title', '')}\0{passage.get('text', '')}\0".encode()


@dataclass
class Problems:
    """Collects every problem found while loading; raises them together."""

    items: list[str] = field(default_factory=list)

    def add(self, message: str) -> None:
        self.items.append(message)

    def raise_if_any(self) -> None:
        if self.items:
            raise DatasetError(_summarise(self.items), problems=list(self.items))


def _summarise(items: list[str]) -> str:
    if len(items) == 1:
        return items[0]
    return f"{items[0]} (and {len(items) - 1} more problem{'s' if len(items) > 2 else ''}; `rag-eval validate` lists all)"


# ---- entry point -------------------------------------------------------------------


def load_dataset(spec: Mapping[str, Any], base: Path | None = None) -> Dataset:
    """Load a dataset described by a config's ``dataset`` section.

    ``spec`` keys: ``format`` (yaml | beir | trec | cranfield, inferred when
    absent), ``path``, and per format ``split``, ``qrels``, ``queries``,
    ``corpus``, ``grade_map``, ``name``. Relative paths resolve against ``base``.
    """
    base = base or Path.cwd()
    fmt = spec.get("format") or _infer_format(spec, base)
    grade_map = _grade_map(spec.get("grade_map"))
    if fmt == "yaml":
        dataset = load_yaml_query_set(_path(spec["path"], base), grade_map=grade_map)
    elif fmt == "beir":
        dataset = load_beir(_path(spec["path"], base), split=spec.get("split", "test"), grade_map=grade_map)
    elif fmt == "trec":
        dataset = load_trec(
            qrels=_path(spec["qrels"], base),
            queries=_path(spec["queries"], base),
            corpus=_path(spec["corpus"], base),
            grade_map=grade_map,
        )
    elif fmt == "cranfield":
        dataset = load_cranfield(_path(spec["path"], base), grade_map=grade_map)
    else:
        raise DatasetError(f"dataset format {fmt!r} is unknown; use one of {', '.join(FORMATS)}")
    if spec.get("name"):
        dataset = Dataset(
            str(spec["name"]), dataset.queries, dataset.judgements, dataset.corpus, dataset.source, dataset.notes,
            dataset.description,
        )
    return dataset


def _infer_format(spec: Mapping[str, Any], base: Path) -> str:
    if "qrels" in spec:
        return "trec"
    path = _path(spec.get("path", ""), base)
    if path.is_dir():
        if (path / "corpus.jsonl").exists():
            return "beir"
        if (path / "cranqrel").exists():
            return "cranfield"
    return "yaml"


def _path(value: Any, base: Path) -> Path:
    path = Path(str(value)).expanduser()
    return path if path.is_absolute() else Path(os.path.normpath(base / path))


def _grade_map(raw: Any) -> dict[float, float] | None:
    if raw is None:
        return None
    try:
        return {float(k): float(v) for k, v in dict(raw).items()}
    except (TypeError, ValueError):
        raise DatasetError(f"grade_map must map numeric codes to numeric gains, got {raw!r}") from None


def _exists(path: Path, what: str) -> Path:
    if not path.exists():
        raise DatasetError(f"{path}: no such file ({what})")
    return path


# ---- rag_eval's YAML query set ------------------------------------------------------


def load_yaml_query_set(path: Path, grade_map: Mapping[float, float] | None = None) -> Dataset:
    """A YAML query set: ``name``, ``corpus`` (inline list or a file), ``queries``."""
    from rag_eval.config.loader import load_yaml

    data = load_yaml(_exists(path, "query set"))
    problems = Problems()
    if not isinstance(data, Mapping):
        raise DatasetError(f"{path}: a query set is a mapping with keys name, corpus, queries")
    unknown = sorted(set(data) - {"name", "description", "corpus", "queries"})
    if unknown:
        problems.add(f"{path}: unknown key(s) {', '.join(unknown)}; a query set has name, description, corpus, queries")
    raw_corpus = data.get("corpus")
    if isinstance(raw_corpus, str):
        corpus_path = _path(raw_corpus, path.parent)
        corpus = load_corpus_file(corpus_path, problems)
        corpus_label = str(corpus_path)
    elif isinstance(raw_corpus, list):
        corpus = _corpus_from_records(raw_corpus, str(path), problems)
        corpus_label = f"{path} (corpus)"
    else:
        raise DatasetError(f"{path}: 'corpus' must be a list of passages or a path to a corpus file")
    queries: dict[str, Query] = {}
    judgements: dict[str, dict[str, float]] = {}
    raw_queries = data.get("queries")
    if not isinstance(raw_queries, list) or not raw_queries:
        raise DatasetError(f"{path}: 'queries' must be a non-empty list of queries (id, text, judgements)")
    for n, item in enumerate(raw_queries, start=1):
        where = f"{path}: queries[{n}]"
        if not isinstance(item, Mapping):
            problems.add(f"{where}: expected a mapping with id, text, judgements")
            continue
        extra = sorted(set(item) - {"id", "text", "tags", "judgements"})
        if extra:
            problems.add(f"{where}: unknown key(s) {', '.join(extra)}; a query has id, text, tags, judgements")
        qid = _id(item.get("id"))
        if qid is None:
            problems.add(f"{where}: missing 'id'")
            continue
        where = f"{path}: query {qid!r}"
        if qid in queries:
            problems.add(f"{where}: duplicate query id")
            continue
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            problems.add(f"{where}: empty query text; give each query a 'text'")
            text = ""
        tags = item.get("tags") or []
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            problems.add(f"{where}: 'tags' must be a list of strings")
            tags = []
        queries[qid] = Query(qid, text, tuple(tags))
        raw_judgements = item.get("judgements") or {}
        if not isinstance(raw_judgements, Mapping):
            problems.add(f"{where}: 'judgements' must map doc ids to grades, e.g. {{doc-a: 3}}")
            continue
        for doc, grade in raw_judgements.items():
            _add_judgement(judgements, qid, _id(doc) or str(doc), grade, where, problems, grade_map)
    _check_against_corpus(judgements, corpus, corpus_label, str(path), problems)
    problems.raise_if_any()
    name = str(data.get("name") or path.stem)
    return Dataset(name, queries, judgements, corpus, str(path), description=str(data.get("description") or "").strip())


def _add_judgement(
    judgements: dict[str, dict[str, float]],
    qid: str,
    doc: str,
    grade: Any,
    where: str,
    problems: Problems,
    grade_map: Mapping[float, float] | None,
) -> None:
    value = _grade(grade)
    if value is None:
        problems.add(f"{where}: doc {doc!r}: grade {grade!r} is not a number")
        return
    if grade_map is not None:
        if value not in grade_map:
            problems.add(f"{where}: doc {doc!r}: grade {grade!r} is not in grade_map {sorted(grade_map)}")
            return
        value = grade_map[value]
    per_query = judgements.setdefault(qid, {})
    if doc in per_query:
        problems.add(f"{where}: doc {doc!r} is judged twice")
        return
    per_query[doc] = value


def _check_against_corpus(
    judgements: Mapping[str, Mapping[str, float]],
    corpus: Mapping[str, Any],
    corpus_label: str,
    source: str,
    problems: Problems,
) -> None:
    if not any(judgements.values()):
        problems.add(f"{source}: no query has any judgement; judge at least one passage per query")
    if not corpus:
        problems.add(f"{corpus_label}: the corpus is empty")
        return
    for qid, docs in judgements.items():
        for doc in docs:
            if doc not in corpus:
                problems.add(f"{source}: query {qid!r} judges doc {doc!r}, which is not in the corpus {corpus_label}")


def _id(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (str, int)):
        text = str(value).strip()
        return text or None
    return None


def _grade(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


# ---- corpora -------------------------------------------------------------------------


def load_corpus_file(path: Path, problems: Problems | None = None) -> dict[str, dict[str, str]]:
    """A corpus in YAML, JSON Lines, CSV or TSV (``id<TAB>text``), by suffix."""
    own = problems is None
    problems = problems or Problems()
    _exists(path, "corpus")
    suffix = "".join(path.suffixes[-2:]) if path.suffix == ".gz" else path.suffix
    if suffix in (".yaml", ".yml"):
        from rag_eval.config.loader import load_yaml

        data = _passage_records(load_yaml(path))
        if not isinstance(data, list):
            raise DatasetError(f"{path}: a YAML corpus is a list of passages (id, text, title)")
        corpus = _corpus_from_records(data, str(path), problems)
    elif suffix == ".json" and isinstance(records := _json_document(path), list):
        # A whole JSON document: a list of passages, {"corpus": [...]} or {id: text}.
        corpus = _corpus_from_records(records, str(path), problems)
    elif suffix.startswith(".jsonl") or suffix == ".json":
        corpus = _corpus_from_records(_read_jsonl(path), str(path), problems, line_numbers=True)
    elif suffix.startswith(".csv"):
        with _open_text(path) as handle:
            rows = list(csv.DictReader(handle))
        if rows and not {"id", "text"} <= set(rows[0]):
            raise DatasetError(f"{path}: a CSV corpus needs columns id and text (title optional)")
        corpus = _corpus_from_records(rows, str(path), problems, line_numbers=True, first_line=2)
    else:  # .tsv, .docs, ...: id<TAB>text
        corpus = _corpus_from_records(_read_tsv_pairs(path, ("id", "text")), str(path), problems, line_numbers=True)
    if own:
        problems.raise_if_any()
    return corpus


def _passage_records(data: Any) -> Any:
    """A corpus document as a list of records: ``[...]``, ``{corpus: [...]}`` or ``{id: text | {title, text}}``."""
    if isinstance(data, Mapping) and "corpus" in data:
        data = data["corpus"]
    if isinstance(data, Mapping):
        # {"id": k, "text": v} for anything that is not a mapping: a null or a number is then reported, not a crash.
        data = [{"id": k, **v} if isinstance(v, Mapping) else {"id": k, "text": v} for k, v in data.items()]
    return data


def _json_document(path: Path) -> Any:
    """A ``.json`` corpus parsed as one document; None when it is JSON Lines (one object per line)."""
    try:
        with _open_text(path) as handle:
            data = json.load(handle)
    except json.JSONDecodeError:
        return None  # several values: JSON Lines
    if isinstance(data, Mapping) and ("text" in data or "_id" in data):
        return None  # a single JSON Lines record
    return _passage_records(data)


def _corpus_from_records(
    records: Iterable[Any], source: str, problems: Problems, line_numbers: bool = False, first_line: int = 1
) -> dict[str, dict[str, str]]:
    corpus: dict[str, dict[str, str]] = {}
    for n, record in enumerate(records, start=first_line):
        where = f"{source}:{n}" if line_numbers else f"{source}: corpus[{n}]"
        if not isinstance(record, Mapping):
            problems.add(f"{where}: expected a passage with id and text")
            continue
        doc = _id(record.get("id", record.get("_id")))
        if doc is None:
            problems.add(f"{where}: passage without an id")
            continue
        if doc in corpus:
            problems.add(f"{where}: duplicate passage id {doc!r}")
            continue
        text = record.get("text")
        if not isinstance(text, str):
            problems.add(f"{where}: passage {doc!r} has no text")
            text = ""
        passage = {"text": text, "title": str(record.get("title") or "")}
        metadata = record.get("metadata")
        if metadata:
            passage["metadata"] = metadata
        corpus[doc] = passage
    return corpus


def _open_text(path: Path):
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig", newline="")
    # utf-8-sig: a byte-order mark (Excel's CSV, some JSONL exports) is not part of the first id.
    return path.open(encoding="utf-8-sig", newline="")


def _read_jsonl(path: Path) -> Iterator[Any]:
    with _open_text(path) as handle:
        for n, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as error:
                raise DatasetError(f"{path}:{n}: not valid JSON ({error.msg} at column {error.colno})") from None


def _read_tsv_pairs(path: Path, names: tuple[str, str]) -> Iterator[dict[str, str]]:
    with _open_text(path) as handle:
        for n, line in enumerate(handle, start=1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            key, sep, value = line.partition("\t")
            if not sep:
                raise DatasetError(f"{path}:{n}: expected '{names[0]}<TAB>{names[1]}'")
            yield {names[0]: key.strip(), names[1]: value}


# ---- queries files -------------------------------------------------------------------


def load_queries_file(path: Path, problems: Problems) -> dict[str, Query]:
    """Queries as JSON Lines (``_id``/``id``, ``text``) or TSV (``id<TAB>text``)."""
    _exists(path, "queries")
    suffix = path.suffixes[-2] if path.suffix == ".gz" and len(path.suffixes) > 1 else path.suffix
    records = _read_jsonl(path) if suffix in (".jsonl", ".json") else _read_tsv_pairs(path, ("id", "text"))
    queries: dict[str, Query] = {}
    for n, record in enumerate(records, start=1):
        qid = _id(record.get("id", record.get("_id")))
        text = record.get("text")
        if qid is None:
            problems.add(f"{path}:{n}: query without an id")
            continue
        if qid in queries:
            problems.add(f"{path}:{n}: duplicate query id {qid!r}")
            continue
        if not isinstance(text, str) or not text.strip():
            problems.add(f"{path}:{n}: query {qid!r} has an empty text")
            text = ""
        queries[qid] = Query(qid, text)
    return queries


def _read_qrels_rows(path: Path, columns: int | None = None) -> Iterator[tuple[int, str, str, str]]:
    """(line, qid, doc, grade) from TREC qrels (4 columns), BEIR TSV (3) or Cranfield (3)."""
    with _open_text(path) as handle:
        for n, line in enumerate(handle, start=1):
            fields = line.split()
            if not fields:
                continue
            if n == 1 and fields[0] == "query-id":
                continue  # BEIR header
            if len(fields) == 4 and columns in (None, 4):
                yield n, fields[0], fields[2], fields[3]
            elif len(fields) == 3 and columns in (None, 3):
                yield n, fields[0], fields[1], fields[2]
            else:
                want = "qid iter doc_id grade" if columns == 4 else "qid doc_id grade"
                raise DatasetError(f"{path}:{n}: expected '{want}', found {len(fields)} fields")


def _judgements_from_rows(
    rows: Iterable[tuple[int, str, str, str]], path: Path, problems: Problems, grade_map: Mapping[float, float] | None
) -> dict[str, dict[str, float]]:
    judgements: dict[str, dict[str, float]] = {}
    for n, qid, doc, grade in rows:
        _add_judgement(judgements, qid, doc, grade, f"{path}:{n}: query {qid!r}", problems, grade_map)
    return judgements


def _restrict_queries(
    queries: dict[str, Query], judgements: Mapping[str, Any], qrels_path: Path, queries_path: Path, problems: Problems
) -> tuple[dict[str, Query], tuple[str, ...]]:
    missing = [q for q in judgements if q not in queries]
    for qid in missing[:20]:
        problems.add(f"{qrels_path}: query {qid!r} is judged but not in the queries file {queries_path}")
    kept = {q: queries[q] for q in queries if q in judgements}
    dropped = len(queries) - len(kept)
    notes = (f"{dropped} queries of {queries_path.name} have no judgements in {qrels_path.name} and are not part of this split",) if dropped else ()
    return kept, notes


def load_beir(path: Path, split: str = "test", grade_map: Mapping[float, float] | None = None) -> Dataset:
    """A BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv.

    Only the queries judged in the split are kept (that is what the split means);
    the number left out is recorded in the dataset notes.
    """
    problems = Problems()
    qrels_path = _exists(path / "qrels" / f"{split}.tsv", f"BEIR qrels of split {split!r}")
    corpus = load_corpus_file(_exists(path / "corpus.jsonl", "BEIR corpus"), problems)
    queries_path = path / "queries.jsonl"
    queries = load_queries_file(queries_path, problems)
    judgements = _judgements_from_rows(_read_qrels_rows(qrels_path, 3), qrels_path, problems, grade_map)
    queries, notes = _restrict_queries(queries, judgements, qrels_path, queries_path, problems)
    _check_against_corpus(judgements, corpus, str(path / "corpus.jsonl"), str(qrels_path), problems)
    problems.raise_if_any()
    return Dataset(f"{path.name}/{split}", queries, judgements, corpus, str(path), notes)


def load_trec(
    qrels: Path, queries: Path, corpus: Path, grade_map: Mapping[float, float] | None = None
) -> Dataset:
    """TREC qrels (``qid iter doc grade``) with a queries file and a corpus file."""
    problems = Problems()
    corpus_docs = load_corpus_file(corpus, problems)
    query_set = load_queries_file(queries, problems)
    judgements = _judgements_from_rows(_read_qrels_rows(_exists(qrels, "qrels"), 4), qrels, problems, grade_map)
    query_set, notes = _restrict_queries(query_set, judgements, qrels, queries, problems)
    _check_against_corpus(judgements, corpus_docs, str(corpus), str(qrels), problems)
    problems.raise_if_any()
    return Dataset(qrels.stem, query_set, judgements, corpus_docs, str(qrels), notes)


# ---- Cranfield -------------------------------------------------------------------------


CRANFIELD_GRADE_MAP = {1.0: 4.0, 2.0: 3.0, 3.0: 2.0, 4.0: 1.0, -1.0: 0.0}


def load_cranfield(path: Path, grade_map: Mapping[float, float] | None = None) -> Dataset:
    """The Cranfield 1400 collection (cran.all.1400, cran.qry, cranqrel).

    cranqrel numbers queries by their position in cran.qry (1..225), not by the
    ``.I`` field. Codes: 1 = complete answer ... 4 = minimum interest, -1 = none;
    without a ``grade_map`` the default maps them to gains 4, 3, 2, 1, 0.
    """
    problems = Problems()
    docs_path = _exists(path / "cran.all.1400", "Cranfield documents")
    corpus: dict[str, dict[str, str]] = {}
    for doc_id, fields in _read_smart(docs_path):
        if doc_id in corpus:
            problems.add(f"{docs_path}: duplicate passage id {doc_id!r} (.I {doc_id})")
            continue
        corpus[doc_id] = {"text": fields.get("W", ""), "title": fields.get("T", "")}
    queries_path = _exists(path / "cran.qry", "Cranfield queries")
    queries: dict[str, Query] = {}
    for n, (number, fields) in enumerate(_read_smart(queries_path), start=1):
        text = fields.get("W", "")
        if not text.strip():
            problems.add(f"{queries_path}: query {str(n)!r} (.I {number}): empty query text")
        queries[str(n)] = Query(str(n), text)
    qrels_path = _exists(path / "cranqrel", "Cranfield judgements")
    judgements = _judgements_from_rows(
        _read_qrels_rows(qrels_path, 3), qrels_path, problems, grade_map or CRANFIELD_GRADE_MAP
    )
    for qid in judgements:
        if qid not in queries:
            problems.add(
                f"{qrels_path}: query {qid!r} is judged but {queries_path.name} has {len(queries)} queries "
                "(cranqrel numbers queries by their position in cran.qry)"
            )
    _check_against_corpus(judgements, corpus, str(path / "cran.all.1400"), str(qrels_path), problems)
    problems.raise_if_any()
    note = "grades: cranqrel codes mapped to gains " + ", ".join(
        f"{int(k)}->{v:g}" for k, v in (grade_map or CRANFIELD_GRADE_MAP).items()
    )
    return Dataset("cranfield", queries, judgements, corpus, str(path), (note,))


def _read_smart(path: Path) -> list[tuple[str, dict[str, str]]]:
    """SMART-format records: ``.I id`` then fields ``.T .A .B .W`` with text lines."""
    records: list[tuple[str, dict[str, str]]] = []
    current: dict[str, list[str]] = {}
    field_name = None
    doc_id = None
    with _open_text(path) as handle:
        for line in handle:
            line = line.rstrip("\r\n")
            if line.startswith(".I"):
                if doc_id is not None:
                    records.append((doc_id, {k: " ".join(" ".join(v).split()) for k, v in current.items()}))
                doc_id, current, field_name = line[2:].strip(), {}, None
            elif len(line) >= 2 and line[0] == "." and line[1].isalpha() and line[2:].strip() == "":
                field_name = line[1]
                current.setdefault(field_name, [])
            elif field_name is not None:
                current[field_name].append(line)
    if doc_id is not None:
        records.append((doc_id, {k: " ".join(" ".join(v).split()) for k, v in current.items()}))
    return records
