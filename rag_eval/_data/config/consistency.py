"""The checks across the sections of a run config, every problem at once.

A retriever's ``chunker`` names a chunker of ``chunking``, labels are unique, ``main_metric``
and every regression gate are among ``metrics``, ``regression.retriever`` and
``sweep.baseline`` name a retriever, and dense settings suit ``execution.engine``. Such a
check reads several sections, so a pydantic model validator would run it only once every
section is valid, and would stop at its first problem: a config with an unknown key and a
retriever naming a missing chunker then took two runs of ``rag-eval validate`` to show both.

These checks read the config as written instead, each taking only the values it needs and
passing over a value that is wrong itself (that value's own problem is listed; a check on it
would only repeat it, or guess): :func:`cross_section_problems` gives all their problems,
valid sections or not. :class:`rag_eval._data.config.schema.RunConfig` raises them when its
sections are valid; :func:`rag_eval._data.config.schema.load_config` lists them beside the
sections' own problems when they are not.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from rag_eval._core.errors import MetricError
from rag_eval._core.messages import did_you_mean
from rag_eval._core.validation import ProblemAt
from rag_eval._data.config.labels import is_label
from rag_eval._data.config.regression import repeated_gate
from rag_eval._scoring.metrics.measures import parse_metric, parse_metrics


def cross_section_problems(data: Mapping[str, Any], *, expanded: bool = True) -> list[ProblemAt]:
    """Every problem across the sections of the config ``data`` (as written), each placed at its field.

    ``expanded``: False while a config's sweep is not expanded yet; references to labels
    (``regression.retriever``, ``sweep.baseline``) are checked after the expansion, which
    creates labels.
    """
    retrievers = data.get("retrievers")
    items = list(enumerate(retrievers)) if isinstance(retrievers, list) else []
    specs = [(position, item) for position, item in items if isinstance(item, Mapping)]
    labels = [item["label"] for _, item in specs if isinstance(item.get("label"), str) and is_label(item["label"])]
    # A reference to a label is checked only when every retriever has a valid one: a reference to a
    # retriever whose label is wrong would be reported as a second problem of that one label.
    every_label = bool(items) and len(labels) == len(items)
    problems = list(_repeated_labels(labels))
    problems += _unknown_chunkers(specs, data.get("chunking", {}))
    execution = data.get("execution")
    if isinstance(execution, Mapping) and execution.get("engine") == "ray":
        for position, item in specs:
            problems += _not_for_ray({"adapter": item.get("adapter"), "params": item.get("params")}, ("retrievers", position))
    metrics = _every_metric(data.get("metrics"))
    problems += _main_metric_problems(data.get("main_metric"), metrics)
    regression = data.get("regression")
    if isinstance(regression, Mapping):
        problems += _gate_problems(regression.get("gates"), metrics)
        retriever = regression.get("retriever")
        if expanded and every_label and isinstance(retriever, str) and retriever not in labels:
            problems.append(
                ProblemAt(("regression", "retriever"), f"regression.retriever {retriever!r} is not a retriever label")
            )
    sweep = data.get("sweep")
    if expanded and every_label and isinstance(sweep, Mapping) and isinstance(sweep.get("baseline"), str):
        problems += _unknown_baseline(sweep["baseline"], labels)
    return problems


def _repeated_labels(labels: Sequence[str]) -> Iterator[ProblemAt]:
    duplicates = sorted({label for label in labels if labels.count(label) > 1})
    if duplicates:
        yield ProblemAt(("retrievers",), f"retriever labels must be unique; repeated: {', '.join(duplicates)}")


def _unknown_chunkers(specs: Sequence[tuple[int, Mapping[str, Any]]], chunking: Any) -> Iterator[ProblemAt]:
    """A retriever's ``chunker`` that names no chunker of ``chunking`` (not checked when chunking is no mapping)."""
    if not isinstance(chunking, Mapping):
        return
    names = [str(name) for name in chunking]
    for position, item in specs:
        chunker = item.get("chunker")
        if isinstance(chunker, str) and chunker not in names:
            # A name that is wrong itself (blank, two lines) is shown quoted, so that the list stays readable.
            listed = [name if name.strip() and name.isprintable() else repr(name) for name in names]
            known = ", ".join(listed) or "none: add a `chunking:` section"
            yield ProblemAt(
                ("retrievers", position, "chunker"),
                f"no chunker {chunker!r} in chunking; {did_you_mean(chunker, names)}chunkers: {known}",
            )


def _not_for_ray(spec: Any, where: tuple[Any, ...]) -> Iterator[ProblemAt]:
    """Dense settings that cannot run with ``execution: {engine: ray}``, nested retrievers included.

    Said by ``validate``: a run would otherwise say it only when the retriever first needs
    to encode or search (never, when every ranking comes from the cache).
    """
    if not isinstance(spec, Mapping) or not isinstance(spec.get("params"), Mapping):
        return
    params = spec["params"]
    if spec.get("adapter") == "dense":
        index = params.get("index")
        if isinstance(index, Mapping) and index.get("kind", "exact") != "exact":
            yield ProblemAt(
                (*where, "params", "index"),
                f"execution engine ray searches exactly, shard by shard; index kind {index.get('kind')!r} runs in "
                "one process: remove index, or use execution engine local",
            )
        if params.get("devices"):
            yield ProblemAt(
                (*where, "params", "devices"),
                "execution engine ray runs one encoder actor per GPU of the cluster; remove devices "
                "(set execution.num_gpus_per_actor instead)",
            )
    for key, value in params.items():
        if isinstance(value, Mapping):
            yield from _not_for_ray(value, (*where, "params", key))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                yield from _not_for_ray(item, (*where, "params", key, i))


def _every_metric(metrics: Any) -> list[str] | None:
    """The canonical names of ``metrics``, as the validated config holds them; None unless every one is valid.

    With a metric that is wrong, whether another name is "among metrics" cannot be told (the
    wrong one may be its misspelling), so the checks that ask wait for it to be fixed.
    """
    if not isinstance(metrics, list) or not all(isinstance(metric, str) for metric in metrics):
        return None
    try:
        return [str(metric) for metric in parse_metrics(metrics)]
    except MetricError:
        return None


def _main_metric_problems(main: Any, metrics: list[str] | None) -> Iterator[ProblemAt]:
    if not isinstance(main, str) or metrics is None:
        return
    try:
        parsed = parse_metric(main)
    except MetricError:
        return  # main_metric's own problem
    canonical = str(parsed)
    if canonical not in metrics:
        yield ProblemAt(("main_metric",), f"main_metric {canonical} is not among metrics {metrics}")
    if parsed.family.name == "idcg":  # the judgements' ideal ranking: the same number for every retriever
        better = canonical.replace("idcg", "ndcg", 1)
        yield ProblemAt(("main_metric",), f"main_metric {canonical} is the DCG of the ideal ranking, the same for "
                                          f"every retriever, so it cannot rank them; decide on {better}")


def _gate_problems(gates: Any, metrics: list[str] | None) -> Iterator[ProblemAt]:
    """A gate on a metric that is not a metric, or not among ``metrics``; two gates on one metric."""
    if not isinstance(gates, Mapping):
        return
    gated = []
    for gate in gates:
        if not isinstance(gate, str):
            continue  # a key that is not text: the section's own problem
        try:
            canonical = str(parse_metric(gate))
        except MetricError as error:
            yield ProblemAt(("regression", "gates", gate), str(error))
            continue
        gated.append((repr(gate), canonical))
        if metrics is not None and canonical not in metrics:
            yield ProblemAt(("regression", "gates", gate), f"regression gate {gate} is not among metrics {metrics}")
    twice = repeated_gate(gated)
    if twice:
        yield ProblemAt(("regression", "gates"), twice)


def _unknown_baseline(baseline: str, labels: Sequence[str]) -> Iterator[ProblemAt]:
    if baseline not in labels:
        listed = ", ".join(labels[:10]) + (f", ... ({len(labels)} in all)" if len(labels) > 10 else "")
        yield ProblemAt(
            ("sweep", "baseline"),
            f"{baseline!r} is not the label of a retriever or variant after expanding the sweep; "
            f"{did_you_mean(baseline, labels)}labels: {listed}",
        )
