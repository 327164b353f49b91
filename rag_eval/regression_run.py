"""Regression check inside ``rag-eval run``: the config's ``regression`` section."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag_eval.errors import ConfigError
from rag_eval.regression import ResultsFile, Verdict, compare, gates_from_config, load_results_file
from rag_eval.results import Results

if TYPE_CHECKING:
    from rag_eval.runner import RunOutcome


def verdict_for_run(run: "RunOutcome") -> Verdict:
    """Compare the run's retriever named by ``regression.retriever`` with the baseline.

    Without a name: the only retriever, or the one whose label matches the baseline's.
    """
    from rag_eval.runner import results_document

    spec = run.config.model.regression
    if spec is None:
        raise ConfigError(f"{run.config.path}: no regression section")
    baseline = load_results_file(run.config.resolve(spec.baseline))
    outcome = _pick(run, spec.retriever, baseline.label)
    document = results_document(run, outcome)
    candidate = ResultsFile(
        str(run.config.output_dir / f"{outcome.label}.json"), document, Results.from_dict(document["results"])
    )
    return compare(
        baseline,
        candidate,
        gates_from_config(spec.gates),
        confidence=spec.confidence,
        n_resamples=spec.resamples,
        seed=spec.seed,
    )


def _pick(run: "RunOutcome", label: str | None, baseline_label: str):
    by_label = {o.label: o for o in run.outcomes}
    if label:
        if label not in by_label:
            raise ConfigError(
                f"{run.config.path}: regression.retriever {label!r} is not a retriever of this run "
                f"({', '.join(by_label)})"
            )
        return by_label[label]
    if len(run.outcomes) == 1:
        return run.outcomes[0]
    if baseline_label in by_label:
        return by_label[baseline_label]
    raise ConfigError(
        f"{run.config.path}: regression: several retrievers ({', '.join(by_label)}) and none is labelled "
        f"{baseline_label!r} like the baseline; name one in regression.retriever"
    )
