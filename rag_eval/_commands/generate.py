"""``rag-eval generate QUERY_SET --judge JUDGE.yaml --output OUT``: synthetic questions with checked evidence quotes.

Asks the endpoint of JUDGE.yaml (``adapter: llm``) for ``--per-document`` questions about each
document of QUERY_SET, each with a quote of the document that answers it
(:mod:`rag_eval._models.judges.generation`); keeps a question only when its quote occurs exactly
once in the document and, with ``--round-trip CONFIG``, when CONFIG's first retriever finds that
evidence again in its top k (:mod:`rag_eval._run.round_trip`). OUT is QUERY_SET with the kept
questions appended, each tagged ``origin: synthetic`` and judged by its quote (its ``source`` the
model, ``llm:<model>``): the input's own text, comments and queries are kept as they were, and
its documents are referenced as it references them (the path rewritten for OUT's folder) or
copied inline. OUT is checked by rag_eval's own loader before it is written, atomically.

One summary line, then a line per dropped question (at most :data:`DROPPED_SHOWN`). Exit codes:
0 some question was kept and OUT written; 1 none was kept (nothing written); 2 bad input (the query
set, JUDGE.yaml, the round-trip config, the endpoint down or answering what is not a chat
completion): one line, nothing written.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import yaml

from rag_eval._commands.exit_codes import EXIT_PASSED, EXIT_REGRESSION
from rag_eval._commands.output_paths import check_query_set_output
from rag_eval._core.atomic import atomic_write_text
from rag_eval._core.errors import ConfigError, DatasetError
from rag_eval._core.files import MAX_CONFIG_BYTES, MAX_DOCUMENT_BYTES, read_text
from rag_eval._core.messages import shown
from rag_eval._core.yaml_loader import load_yaml
from rag_eval._data.config.schema import load_config
from rag_eval._data.datasets import Dataset
from rag_eval._data.datasets.corpus import resolve_path
from rag_eval._data.datasets.query_set import load_yaml_query_set
from rag_eval._data.judging import yaml_edit
from rag_eval._models.judges.base import JudgeError
from rag_eval._models.judges.cache import JudgeCacheWarning
from rag_eval._models.judges.generation import DROPPED, KEPT, ROUND_TRIP, Generated, Question, QuestionGenerator
from rag_eval._models.judges.llm import LlmJudge
from rag_eval._models.judges.spec import load_judge
from rag_eval._models.progress import showing_progress, tqdm_disable
from rag_eval._retrievers.embedding_cache import default_cache_dir
from rag_eval._run.round_trip import Candidate, RoundTrip, round_trip

#: Dropped questions listed one per line; the rest are counted.
DROPPED_SHOWN = 20
#: The most questions asked per document (the answer's cap is 128 tokens a question, at most 32,768).
MOST_PER_DOCUMENT = 256
#: The tag every synthetic question carries; the report's segment table shows its queries apart.
ORIGIN = {"origin": "synthetic"}


def main(args: argparse.Namespace, say: Callable[[str], None]) -> int:
    """Generate, check, round-trip, write (see the module docstring)."""
    started = time.perf_counter()
    source = Path(args.query_set)
    output = Path(args.output)
    _check_arguments(args)
    dataset = load_yaml_query_set(source)
    if not dataset.has_documents:
        raise DatasetError(f"{source}: has a corpus of passages, not documents; rag-eval generate judges each "
                           "question by a quote of its document: give the query set 'documents:' (docs/documents.md)")
    text = read_text(source, "YAML query set", MAX_DOCUMENT_BYTES, DatasetError)
    documents_value = _documents_value(source, text)
    inputs: list[tuple[str, str | os.PathLike[str]]] = [("query set", source), ("judge config", args.judge)]
    if isinstance(documents_value, str):
        inputs.append(("documents", resolve_path(documents_value, source.parent)))
    if args.round_trip:
        inputs.append(("round-trip config", args.round_trip))
    check_query_set_output(args.output, "--output", inputs)
    config = load_config(args.round_trip) if args.round_trip else None  # refused before anything is asked
    with showing_progress(False if args.no_progress else None), _warnings_as_lines():
        judge = _llm_judge(args.judge)
        generator = QuestionGenerator(judge, args.per_document)
        with _bar(len(dataset.documents)) as progress:
            try:
                generated = generator.generate(
                    dataset.documents, known_questions=[q.text for q in dataset.queries.values()], progress=progress,
                )
            except JudgeError as error:  # the endpoint down, refusing the key, answering no chat completion
                raise JudgeError(f"{args.judge}: {error}") from error
    candidates = _candidates(generated, dataset)
    trip = None
    if config is not None and candidates:
        absolute = str(resolve_path(documents_value, source.parent)) if isinstance(documents_value, str) else None
        trip = round_trip(config, absolute or _inline(dataset), [c for _, c in candidates.values()],
                          name=dataset.name, progress=False if args.no_progress else None)
        for warning in trip.warnings:
            print(f"rag-eval: warning: {warning}", file=sys.stderr)
        _drop_round_trip(generated, candidates, trip)
    kept = [c for _, c in candidates.values() if trip is None or trip.ranks.get(c.qid) is not None]
    if kept:
        written = _output_text(text, source, output, documents_value, kept, generator)
        load_yaml_query_set(output, text=written)  # what is written loads as it will be read
        _check_kept(text, written, len(kept))
        atomic_write_text(output, written)
    say(summary(generated, trip, len(kept), time.perf_counter() - started, str(output) if kept else None))
    for line in dropped_lines(generated):
        say(line)
    return EXIT_PASSED if kept else EXIT_REGRESSION


def summary(generated: Generated, trip: RoundTrip | None, kept: int, seconds: float, output: str | None) -> str:
    """The one line ``rag-eval generate`` ends with."""
    dropped = ", ".join(f"{reason if reason != 'over' else f'over {generated.per_document}'} {generated.count(reason)}"
                        for reason in DROPPED)
    got = len(generated.questions)
    each = f"{generated.per_document} question{'s' if generated.per_document != 1 else ''}"
    parts = [
        f"generate: asked {generated.documents} documents for {each} each with {generated.source}: got {got} "
        f"questions, kept {kept} (dropped: {dropped})",
        f"{len(generated.silent)} answers held no question, {len(generated.refused)} documents refused",
    ]
    if trip is not None:
        asked = len(trip.ranks)
        parts.append(f"round trip: {trip.label!r} found {len(trip.found)} of {asked} in its top {trip.k}")
    tokens = f"{generated.prompt_tokens:,} prompt + {generated.completion_tokens:,} completion tokens"
    parts.append(f"cache hits {generated.cache_hits}, {generated.requests} requests, {tokens}")
    parts.append(f"{seconds:.1f} s")
    parts.append(f"wrote {output}" if output else "nothing written")
    return "; ".join(parts)


def dropped_lines(generated: Generated) -> list[str]:
    """A line per document refused and per question dropped (at most :data:`DROPPED_SHOWN` questions)."""
    lines = [f"refused: document {shown(doc)}: {' '.join(why.split())}" for doc, why in generated.refused]
    dropped = [q for q in generated.questions if q.status != KEPT]
    for question in dropped[:DROPPED_SHOWN]:
        said = f" {shown(question.question)}" if question.question else ""
        quote = f", quote {shown(question.quote)}" if question.quote else ""
        lines.append(f"dropped: document {shown(question.doc)}, question {question.number}{said}{quote}: "
                     f"{question.status} ({question.why})")
    if len(dropped) > DROPPED_SHOWN:
        lines.append(f"... and {len(dropped) - DROPPED_SHOWN} more questions dropped")
    return lines


# ---------------------------------------------------------------------------------------- inputs


def _check_arguments(args: argparse.Namespace) -> None:
    if not 1 <= args.per_document <= MOST_PER_DOCUMENT:
        raise ConfigError(f"--per-document {args.per_document}: ask for 1 to {MOST_PER_DOCUMENT} questions per document")
    if Path(args.output).suffix.lower() not in (".yaml", ".yml"):
        raise ConfigError(f"--output {args.output}: write the query set as a .yaml file")


def _llm_judge(path: str) -> LlmJudge:
    """The LLM judge of ``path``; any other adapter is refused before it is built (a model is never loaded for nothing)."""
    raw = load_yaml(path, "judge config", MAX_CONFIG_BYTES, ConfigError)
    adapter = raw.get("adapter") if isinstance(raw, Mapping) else None
    if isinstance(adapter, str) and adapter.strip() and adapter.strip() != "llm":
        raise ConfigError(f"{path}: adapter: {adapter.strip()!r}: rag-eval generate asks a chat endpoint for "
                          "questions; name one with adapter: llm (params: base_url, model)")
    judge = load_judge(path, cache_dir=default_cache_dir())
    if not isinstance(judge, LlmJudge):  # pragma: no cover - only adapter llm gets here
        raise ConfigError(f"{path}: rag-eval generate needs adapter: llm")
    return judge


def _documents_value(source: Path, text: str) -> str | None:
    """The query set's ``documents:`` when it is a path (a folder or a .jsonl file), else None (inline)."""
    raw = yaml.safe_load(text)  # loaded already by the strict loader: this is the same mapping
    value = raw.get("documents") if isinstance(raw, dict) else None
    return value if isinstance(value, str) else None


def _inline(dataset: Dataset) -> list[dict[str, str]]:
    """The documents as ``[{id, text, title?}]``, in their order."""
    out = []
    for doc, text in dataset.documents.items():
        title = str((dataset.corpus.get(doc) or {}).get("title") or "")
        out.append({"id": doc, "text": text, **({"title": title} if title else {})})
    return out


# ---------------------------------------------------------------------------------------- questions


def _candidates(generated: Generated, dataset: Dataset) -> dict[str, tuple[int, Candidate]]:
    """The kept questions by their new query id ``synthetic:<doc>:<n>`` (``-2``, ``-3`` after an id taken), each with
    its position in ``generated.questions``."""
    taken = set(dataset.queries)
    out: dict[str, tuple[int, Candidate]] = {}
    for position, question in enumerate(generated.questions):
        if question.status != KEPT or question.span is None:
            continue
        base = f"synthetic:{question.doc}:{question.number}"
        qid, n = base, 1
        while qid in taken:
            n += 1
            qid = f"{base}-{n}"
        taken.add(qid)
        start, end = question.span
        quote = dataset.documents[question.doc][start:end]
        out[qid] = (position, Candidate(qid, question.question, question.doc, start, end, quote))
    return out


def _drop_round_trip(generated: Generated, candidates: Mapping[str, tuple[int, Candidate]], trip: RoundTrip) -> None:
    """Mark the questions the retriever did not find again as dropped by the round trip."""
    why = f"{trip.label!r} did not return its evidence in its top {trip.k}"
    for qid, (position, _) in candidates.items():
        if trip.ranks.get(qid) is None:
            question = generated.questions[position]
            generated.questions[position] = Question(**{**question.__dict__, "status": ROUND_TRIP, "why": why})


# ---------------------------------------------------------------------------------------- output


def _output_text(
    text: str, source: Path, output: Path, documents_value: str | None, kept: list[Candidate],
    generator: QuestionGenerator,
) -> str:
    """The input's text with the kept questions appended (and its documents' path rewritten for OUT's folder)."""
    try:
        document = yaml_edit.load(text)
    except Exception as error:  # ruamel's own errors: the strict loader read this file, so this is unexpected
        raise DatasetError(f"{source}: cannot be edited as YAML ({' '.join(str(error).split())})") from None
    tree = document.tree
    if documents_value is not None:
        tree["documents"] = _relative_path(resolve_path(documents_value, source.parent), output, documents_value)
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    for candidate in kept:
        node = yaml_edit.block_map()
        node["id"] = yaml_edit.scalar(candidate.qid)
        node["text"] = yaml_edit.scalar(candidate.text)
        node["tags"] = yaml_edit.flow_map(dict(ORIGIN))
        evidence = yaml_edit.block_seq()
        evidence.append(yaml_edit.flow_map({
            "doc": yaml_edit.scalar(candidate.doc), "quote": yaml_edit.scalar(candidate.quote), "source": yaml_edit.scalar(generator.source),
            "annotator": yaml_edit.scalar(generator.description), "time": yaml_edit.scalar(now),
        }))
        node["evidence"] = evidence
        yaml_edit.append(tree["queries"], node)
    return document.dump()


def _check_kept(before: str, after: str, added: int) -> None:
    """The output holds the input's data as it was (its documents' path aside), then ``added`` queries: else a bug."""
    old, new = yaml.safe_load(before), yaml.safe_load(after)
    same = {key: value for key, value in new.items() if key != "queries"} == {
        key: (new["documents"] if key == "documents" and isinstance(value, str) else value)
        for key, value in old.items() if key != "queries"
    }
    if not same or new["queries"][: len(new["queries"]) - added] != old["queries"]:
        raise RuntimeError("rag-eval generate: the query set to write does not hold the input's data as it was")


def _relative_path(target: Path, output: Path, written: str) -> str:
    """``written`` when it names ``target`` from OUT's folder too; else ``target`` relative to it (or absolute)."""
    folder = Path(os.path.abspath(output)).parent
    if resolve_path(written, folder) == Path(os.path.abspath(target)):
        return written
    try:
        return Path(os.path.relpath(os.path.abspath(target), folder)).as_posix()
    except ValueError:  # another drive (Windows): no relative path
        return str(Path(os.path.abspath(target)))


# ---------------------------------------------------------------------------------------- terminal


@contextmanager
def _warnings_as_lines() -> Iterator[None]:
    """Every damaged cache file said, even twice in one process; the command line prints each as one
    ``rag-eval: warning:`` line (rag_eval.cli, for all of rag_eval's own warnings)."""
    with warnings.catch_warnings():
        warnings.simplefilter("always", JudgeCacheWarning)
        yield


@contextmanager
def _bar(total: int) -> Iterator[Callable[[int], None] | None]:
    """A progress bar over the documents (tqdm, on stderr), or None when tqdm is missing or bars are off."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        yield None
        return
    bar = tqdm(total=total, desc="generating", unit="document", disable=True if total == 0 else tqdm_disable(),
               leave=False)
    try:
        yield bar.update
    finally:
        bar.close()
