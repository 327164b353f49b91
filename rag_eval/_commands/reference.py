"""The configuration reference (docs/config.md), generated from the config models.

The reference is rendered from the pydantic models of :mod:`rag_eval._data.config.schema`
(every field with its type, default, constraints and description) and from the
built-in retriever classes, so it cannot promise a key or a limit that validation
does not have. ``tests/test_docs.py`` checks that docs/config.md is exactly this
module's output; regenerate it with::

    python -m rag_eval._commands.reference > docs/config.md

``rag-eval schema`` prints the same text (``--format json``: the JSON Schema of a
run config, for editors and other tools).

A field's description is its pydantic ``Field(description=...)``; until a field has
one, :data:`FIELD_NOTES` supplies it (the tests refuse a note that duplicates a
field's own description, so each text has one home). Importing this module is
cheap: pydantic, the models and the retrievers load only when a function runs.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
import types
import typing
from collections.abc import Iterator
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, TypeGuard

from pydantic import BaseModel

from rag_eval._data.config.adapters import BUILTIN
from rag_eval._data.config.schema import RunConfig

if TYPE_CHECKING:
    from pydantic import BaseModel

GENERATED_NOTE = (
    "<!-- Generated from rag_eval/_data/config/schema.py by rag_eval/_commands/reference.py: do not edit by hand.\n"
    "     Regenerate: python -m rag_eval._commands.reference > docs/config.md  (or: rag-eval schema > docs/config.md) -->"
)

TOP = "top level"

# Descriptions of fields that have no Field(description=...) yet, keyed "Model.field".
FIELD_NOTES: dict[str, str] = {
    # RunConfig
    "RunConfig.dataset": "Where the queries, judgements and corpus come from.",
    "RunConfig.retrievers": "The retrievers to run and compare on the same queries.",
    "RunConfig.metrics": "The metrics to compute, e.g. `[ndcg@10, recall@100, mrr@10]`; trec_eval names such as "
    "`ndcg_cut_10` or `P_5` are accepted and stored under the canonical name. Their definitions: "
    "[semantics.md](semantics.md).",
    "RunConfig.main_metric": "The metric of the decision, the terminal summary, the report's per-query table and "
    "its worked derivations; one of `metrics`. Not set: when the retrievers read differently cut units (several "
    "chunkers, or whole documents beside chunks) the first budget metric of `metrics` "
    "(`evidence_recall@1000tokens`: equal context for every unit size); otherwise, or without a budget metric, the "
    "first nDCG metric of `metrics`, else the first metric. A cut-off metric over units of different sizes favours "
    "the larger units: the decision says so, and by how much context, in its first lines.",
    "RunConfig.top_k": "How many documents each retriever returns per query (chunks, for a retriever with a "
    "`chunker`: document metrics then see the documents of these chunks); only these are ranked and evaluated.",
    "RunConfig.evaluation": "What the numbers mean: gain, aggregation, queries without relevant documents, "
    "relevance threshold.",
    "RunConfig.report": "What the markdown report shows.",
    "RunConfig.output": "The folder that receives `report.md`, each retriever's results (`<label>.json`) and TREC "
    "run file (`<label>.run`); relative to the config file. `rag-eval run --output DIR` overrides it. Not set: "
    "`reports/<name>` beside the config file's folder, `<name>` reduced to letters, digits and `. _ + -`.",
    "RunConfig.cache_dir": "A folder for computed passage embeddings, reused by later runs; given to every "
    "retriever that takes a `cache_dir` parameter and does not set one in its `params`. Relative to the config "
    "file. Not set: each retriever's own default (`dense`: `$RAG_EVAL_CACHE_DIR`, else `~/.cache/rag_eval`).",
    "RunConfig.regression": "Compare a retriever's results with a committed baseline and fail on a drop; "
    "see [ci.md](ci.md).",
    # DatasetSpec
    "DatasetSpec.format": "`yaml`: a query set file written for rag_eval (queries, judgements and a corpus of "
    "passages, or documents with evidence spans: [documents.md](documents.md), in one "
    "file); `beir`: a BEIR folder (`corpus.jsonl`, `queries.jsonl`, `qrels/<split>.tsv`); `trec`: three files "
    "named by `qrels`, `queries` and `corpus`; `cranfield`: the Cranfield 1400 folder (`cran.all.1400`, "
    "`cran.qry`, `cranqrel`); `chroma`: the chunking-evaluation layout of Chroma's report (`corpora/*.md` "
    "documents and `questions.csv` with evidence offsets). Not set: `trec` when `qrels` is given, `beir` for a "
    "folder holding `corpus.jsonl`, `cranfield` for a folder holding `cranqrel`, `chroma` for a folder holding "
    "`corpora/` and `questions.csv`, else `yaml`.",
    "DatasetSpec.path": "The query set file (`yaml`) or the dataset folder (`beir`, `cranfield`, `chroma`); "
    "relative to the config file. Needed by every format but `trec`.",
    "DatasetSpec.split": "`beir` only: the qrels file `qrels/<split>.tsv` to read. Only the queries judged in it "
    "are evaluated.",
    "DatasetSpec.qrels": "`trec` only: the judgements, TREC qrels lines `qid iter doc_id grade`.",
    "DatasetSpec.queries": "`trec` only: the queries, as JSON Lines (`_id` or `id`, and `text`) for a `.jsonl` "
    "or `.json` file, else as TSV lines `id<TAB>text`.",
    "DatasetSpec.corpus": "`trec` only: the passages to search.",
    "DatasetSpec.grade_map": "Maps the collection's relevance codes to the grades rag_eval uses, e.g. "
    "`{1: 4, 2: 3, 3: 2, 4: 1, -1: 0}` for Cranfield, whose code 1 is the best; a code missing from the map is an "
    "error. Not set: grades are used as written (`cranfield`: the mapping just shown).",
    "DatasetSpec.name": "The dataset's name in reports. Not set: taken from the files (a BEIR folder and its "
    "split, the qrels file's name, or the query set's own `name`).",
    # RetrieverSpec
    "RetrieverSpec.adapter": "Which retriever: a built-in name (see [Built-in adapters](#built-in-adapters)), a "
    "name an installed package registers in the entry-point group `rag_eval.retrievers`, or an import string "
    "`package.module:Class` naming your own class.",
    "RetrieverSpec.params": "The adapter's own parameters (for the built-in ones, see below).",
    # EvaluationSpec
    "EvaluationSpec.gain": "The gain of a grade g in DCG: `linear` = g (trec_eval), `exponential` = 2^g - 1.",
    "EvaluationSpec.aggregation": "The dataset value of nDCG: `macro` = the mean of the per-query values; `micro` "
    "= the sum of DCG over the sum of IDCG. Every other metric is a mean.",
    "EvaluationSpec.no_relevant": "A judged query with no relevant document: `skip` leaves it out of that "
    "metric's mean and lists it; `zero` scores it 0 and averages it (trec_eval); `error` stops the run.",
    "EvaluationSpec.relevance_threshold": "The lowest grade that counts as relevant for the binary metrics "
    "(precision, recall, MRR, MAP, R-precision, hit rate); trec_eval's `-l`. nDCG uses the grades themselves.",
    # ReportSpec
    "ReportSpec.detailed_queries": "How many queries the report works through in detail (ranking, grades, DCG "
    "and IDCG): every judged query when there are at most this many, else this many with the lowest main metric "
    "(averaged over the retrievers).",
    "ReportSpec.passage_chars": "Passage texts in the report's tables are cut to at most this many characters.",
    "ReportSpec.title": "The report's title. Not set: `RAG Evaluation: <name>`.",
    # RegressionSpec
    "RegressionSpec.baseline": "The baseline results file (a `<label>.json` written by `rag-eval run`), relative "
    "to the config file.",
    "RegressionSpec.gates": "One gate per metric, keyed by the metric name; each metric must be in `metrics`.",
    "RegressionSpec.retriever": "The label of the retriever to compare. Not set: the only retriever, or the one "
    "labelled like the baseline's.",
    "RegressionSpec.confidence": "Confidence level of the bootstrap interval of the mean change.",
    # GateSpec
    "GateSpec.max_drop": "The gate fails when the metric's mean per-query change (queries paired by id) is worse "
    "than the baseline by more than this; a drop of exactly `max_drop` passes.",
    "GateSpec.alpha": "When set, the gate fails only if, in addition, the paired permutation test gives p < "
    "`alpha` (Holm-corrected across the gates that set one).",
}

# Prose after a section's docstring: rules that span fields (validators), examples.
MODEL_NOTES: dict[str, str] = {
    "RunConfig": "Retriever labels must be unique within the config, `main_metric` and every regression gate must be among "
    "`metrics`, and `regression.retriever` must be one of the labels.",
    "EvaluationSpec": "Definitions and worked examples: [semantics.md](semantics.md).",
    "DatasetSpec": "A `trec` dataset needs `qrels`, `queries` and `corpus`; every other format needs `path`.",
    "RegressionSpec": "Example: `gates: {ndcg@10: {max_drop: 0.01}, recall@10: {max_drop: 0.02, alpha: 0.05}}`.",
}

# The name shown for a mapping's keys in section headings, keyed "Model.field".
KEY_NAMES: dict[str, str] = {"RegressionSpec.gates": "<metric>"}

EXAMPLE = """\
name: my-search
dataset:
  path: ../datasets/ocean_facts.yaml     # relative to this file
retrievers:
  - label: bm25
    adapter: bm25
    params: {k1: 1.2, b: 0.75}
  - label: mine
    adapter: my_package.search:MyRetriever
top_k: 10
metrics: [ndcg@10, recall@10, mrr@10]
evaluation:
  no_relevant: zero
output: ../reports/my-search
"""

_SIMPLE_TYPES: dict[Any, str] = {
    str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null", PurePath: "path", Path: "path",
}
_RST_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")


def render_config_reference() -> str:
    """docs/config.md: every config section and field, then the built-in adapters' parameters."""

    sections = list(_sections(RunConfig))
    anchors = {model: _anchor(path) for path, model in sections}
    out = [
        GENERATED_NOTE,
        "",
        "# Configuration reference",
        "",
        (
            "A run config is a YAML file given to `rag-eval run CONFIG` (and checked, without retrieving "
            "anything, by `rag-eval validate CONFIG`). Paths in it are relative to the config file's folder."
        ),
        "",
        *_strictness_lines(RunConfig),
        "",
        "```yaml",
        EXAMPLE.rstrip("\n"),
        "```",
        "",
        "Sections: " + ", ".join(f"[{'top level' if p == TOP else f'`{p}`'}](#{_anchor(p)})" for p, _ in sections)
        + ", [built-in adapters](#built-in-adapters).",
    ]
    for path, model in sections:
        heading = "Top level" if path == TOP else f"`{path}`"
        out += ["", f'<a id="{_anchor(path)}"></a>', "", f"## {heading}", ""]
        out += _model_prose(model)
        out += _field_table(model, anchors)
    out += ["", '<a id="built-in-adapters"></a>', "", "## Built-in adapters", ""]
    out += _adapters(anchors)
    return "\n".join(out) + "\n"


def config_json_schema() -> dict[str, Any]:
    """The JSON Schema of a run config (pydantic's), for editors and other tools."""

    return RunConfig.model_json_schema()


def undocumented_fields() -> list[str]:
    """``Model.field`` of every config field with no description at all (the tests want none)."""

    return [
        f"{model.__name__}.{name}"
        for _, model in _sections(RunConfig)
        for name, field in model.model_fields.items()
        if not _description(model, name, field)
    ]


def stale_notes() -> list[str]:
    """Keys of :data:`FIELD_NOTES` naming no field, or a field that now has its own description."""

    fields = {f"{m.__name__}.{n}": f for _, m in _sections(RunConfig) for n, f in m.model_fields.items()}
    return [key for key in FIELD_NOTES if key not in fields or fields[key].description]


# ---- walking the models ------------------------------------------------------------------


def _sections(root: type[BaseModel]) -> Iterator[tuple[str, type[BaseModel]]]:
    """(YAML path, model) of the root and of every model nested in it, depth first, in field order."""
    seen: set[type[BaseModel]] = set()

    def walk(path: str, model: type[BaseModel]) -> Iterator[tuple[str, type[BaseModel]]]:
        if model in seen:
            return
        seen.add(model)
        yield path, model
        for name, field in model.model_fields.items():
            prefix = name if path == TOP else f"{path}.{name}"
            for sub_path, nested in _nested_models(field.annotation, prefix, f"{model.__name__}.{name}"):
                yield from walk(sub_path, nested)

    yield from walk(TOP, root)


def _nested_models(annotation: Any, path: str, key: str) -> Iterator[tuple[str, type[BaseModel]]]:
    if _is_model(annotation):
        yield path, annotation
        return
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        yield from _nested_models(args[0], path, key)
    elif origin in (list, tuple, set, frozenset):
        for arg in args:
            yield from _nested_models(arg, f"{path}[]", key)
    elif origin is dict and len(args) == 2:
        yield from _nested_models(args[1], f"{path}.{KEY_NAMES.get(key, '<key>')}", key)
    elif _is_union(annotation):
        for arg in args:
            yield from _nested_models(arg, path, key)


def _is_model(annotation: Any) -> TypeGuard[type[BaseModel]]:

    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _is_union(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType)


def _anchor(path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-")


# ---- rendering -------------------------------------------------------------------------


def _strictness_lines(model: type[BaseModel]) -> list[str]:
    """What every section refuses, read from the models' own settings."""
    config = model.model_config
    lines = []
    if config.get("extra") == "forbid":
        lines.append("Unknown keys are errors in every section (with a hint when a known key is close).")
    if config.get("strict"):
        lines.append(
            "Types are strict: `top_k: \"10\"` or `top_k: yes` is an error, not 10 or 1; a whole number is "
            "accepted where a number is expected. An integer YAML 1.1 reads in octal (`010` is 8) or base 60 "
            "(`1:30` is 90) is an error wherever it stands."
        )
    return [" ".join(lines)] if lines else []


def _model_prose(model: type[BaseModel]) -> list[str]:

    out = []
    doc = inspect.getdoc(model) or ""
    first = doc.split("\n\n")[0].replace("\n", " ").strip()
    if first:
        out += [_rst_to_md(first), ""]
    note = MODEL_NOTES.get(model.__name__)
    if note:
        out += [note, ""]
    return out


def _field_table(model: type[BaseModel], anchors: dict[type[BaseModel], str]) -> list[str]:
    rows = ["| key | type | default | description |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        kind = _type_text(field.annotation, anchors)
        limits = _constraints(field.metadata, _unit(field.annotation))
        if limits:
            kind += ", " + limits
        description = _description(model, name, field) or "(undocumented)"
        rows.append(f"| `{name}` | {_cell(kind)} | {_cell(_default_text(field))} | {_cell(description)} |")
    return rows


def _description(model: type[BaseModel], name: str, field: Any) -> str | None:
    return field.description or FIELD_NOTES.get(f"{model.__name__}.{name}")


def _type_text(annotation: Any, anchors: dict[type[BaseModel], str]) -> str:
    """A reader's name for a type: "integer", "one of `a`, `b`", "list of string", a section link."""
    if annotation in _SIMPLE_TYPES:
        return _SIMPLE_TYPES[annotation]
    if annotation is Any:
        return "any value"
    if _is_model(annotation):
        if annotation in anchors:
            return f"mapping (see [below](#{anchors[annotation]}))"
        return "mapping with keys " + ", ".join(f"`{n}`" for n in annotation.model_fields)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return "one of " + ", ".join(f"`{_yaml_scalar(a)}`" for a in args)
    if origin is typing.Annotated:
        text = _type_text(args[0], anchors)
        limits = _constraints(args[1:], _unit(args[0]))
        return f"{text} ({limits})" if limits else text
    if _is_union(annotation):
        return " or ".join(_type_text(a, anchors) for a in args)
    if origin in (list, tuple, set, frozenset):
        inner = _type_text(args[0], anchors) if args else "any value"
        return f"list of {inner}"
    if origin is dict:
        key, value = (_type_text(a, anchors) for a in args) if len(args) == 2 else ("any value", "any value")
        return f"mapping of {key} to {value}"
    return getattr(annotation, "__name__", str(annotation))


def _unit(annotation: Any) -> str:
    """What a length limit counts for this type: items of a collection, else characters."""
    inner = [annotation, *typing.get_args(annotation)] if _is_union(annotation) else [annotation]
    if any(typing.get_origin(a) in (list, tuple, set, frozenset, dict) for a in inner):
        return "items"
    return "characters"


def _constraints(metadata: Any, unit: str) -> str:
    """Limits from pydantic / annotated-types metadata, in words."""
    words = []
    for item in metadata:
        for attr, template in (
            ("gt", "> {}"), ("ge", "≥ {}"), ("lt", "< {}"), ("le", "≤ {}"), ("multiple_of", "a multiple of {}"),
            ("min_length", "at least {} " + unit), ("max_length", "at most {} " + unit), ("pattern", "matching `{}`"),
        ):
            value = getattr(item, attr, None)
            if value is not None:
                text = template.format(value)
                words.append(text[:-1] if value == 1 and text.endswith(unit) else text)  # "1 item"
    return ", ".join(words)


def _default_text(field: Any) -> str:
    if field.is_required():
        return "**required**"
    if field.default_factory is not None:
        value = field.default_factory()
        if _is_model(type(value)):
            return "every key at its default"
    else:
        value = field.default
    if value is None:
        return "not set"
    return f"`{_yaml_value(value)}`"


def _yaml_value(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_yaml_value(k)}: {_yaml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_yaml_value(v) for v in value) + "]"
    return _yaml_scalar(value)


def _yaml_scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value == "":
        return '""'
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _rst_to_md(text: str) -> str:
    """Docstrings use reStructuredText (``x``, :class:`X`); markdown wants `x` and `X`."""
    return _RST_ROLE.sub(r"`\1`", text).replace("``", "`")


# ---- built-in adapters --------------------------------------------------------------------


def _adapters(anchors: dict[type[BaseModel], str]) -> list[str]:


    out = [
        (
            "The `params` each built-in adapter takes. A parameter not listed is an error; a path parameter "
            "(such as `static`'s `path` or a `cache_dir`) is relative to the config file."
        ),
    ]
    for name, target in BUILTIN.items():
        module_name, _, class_name = target.partition(":")
        cls = getattr(importlib.import_module(module_name), class_name)
        out += ["", f"### `{name}`", ""]
        doc = inspect.getdoc(cls) or ""
        for paragraph in doc.split("\n\n"):
            if paragraph.strip():
                out += [_rst_to_md(" ".join(paragraph.split())), ""]
        params = getattr(cls, "Params", None)
        if _is_model(params):
            out += _field_table(params, anchors)
        else:
            out += _signature_table(cls)
    return out


def _signature_table(cls: type) -> list[str]:
    """Parameters of a constructor, for an adapter without a ``Params`` model."""

    rows = ["| parameter | type | default |", "|---|---|---|"]
    for parameter in inspect.signature(cls).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        annotation = parameter.annotation
        kind = "any value" if annotation is parameter.empty else str(annotation).replace("'", "")
        default = "**required**" if parameter.default is parameter.empty else f"`{_yaml_value(parameter.default)}`"
        if parameter.default is None:
            default = "not set"
        rows.append(f"| `{parameter.name}` | {_cell(kind)} | {_cell(default)} |")
    return rows


def main() -> None:
    """``python -m rag_eval._commands.reference``: print docs/config.md."""
    sys.stdout.write(render_config_reference())


if __name__ == "__main__":  # pragma: no cover
    main()
