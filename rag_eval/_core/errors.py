"""One exception tree for every problem a user can fix.

The CLI turns any :class:`RagEvalError` into a single line on stderr and exit
code 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class RagEvalError(Exception):
    """Base of every error caused by the user's input (files, config, names).

    ``problems`` holds every problem found when a check collects several (the
    message names the first and counts the rest); ``rag-eval validate`` lists all.
    """

    def __init__(self, message: str, *, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = list(problems) if problems else [message]


class MetricError(RagEvalError, ValueError):
    """An unknown or malformed metric name, or an invalid metric option."""


class InputFormatError(RagEvalError, ValueError):
    """A qrels, run, query or corpus file (or in-memory equivalent) is malformed."""


class DatasetError(RagEvalError):
    """A query set, its judgements or its corpus are inconsistent."""


class ConfigError(RagEvalError):
    """A run config is malformed, has unknown keys or wrong types."""


class RetrieverError(RagEvalError, ValueError):
    """A retriever could not be built, or returned something invalid."""


class EvaluationError(RagEvalError):
    """Evaluation refused to produce a number (e.g. no_relevant='error')."""


class ComparisonError(RagEvalError):
    """Two results cannot be compared (different dataset, semantics or queries)."""
