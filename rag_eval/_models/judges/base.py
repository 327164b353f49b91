"""The judge seam: ``judge(query, passages) -> grades``, what a grade carries, and the registry of judges.

A judge is any object with a method::

    judge(query: str, passages: list[str]) -> list[JudgeGrade]

that grades several passages of ONE query in one call (a batch), in order. A grade is 0 to 3 (the
graded scale of TREC's assessors: 0 nothing to do with the query ... 3 dedicated to it, with the
exact answer), or None when the judge could not grade that passage; it is never a 0 in place of a
failure. A plug-in may return plain numbers (or None) instead of :class:`JudgeGrade`. Optional:

- ``source``: the provenance written into the judgement sheet (``llm:<model>``,
  ``cross_encoder:<name>``); default ``judge:<module.Class>``; never ``human`` or ``llm+verified``
  (those say a person graded);
- ``description``: who graded, for the sheet's ``annotator`` (default: the class's name);
- ``judge_batches(batches)``: many queries' batches at once (the LLM judge sends them concurrently).

Built in: ``llm`` (any OpenAI-compatible chat endpoint) and ``cross_encoder`` (a local
cross-encoder's score against thresholds). A config names a judge as retrievers are named: a
built-in name, a plug-in of the entry-point group ``rag_eval.judges``, or an import string
``package.module:Class`` looked up with the config's folder first (:mod:`rag_eval._core.plugins`).
Naming is not calling: an import string must resolve to a CLASS with a callable ``judge``
attribute, or to a function marked with :func:`judge_factory`; anything else (``os:system``) is
refused before anything is called. :func:`check` validates the parameters without calling
anything; only :func:`build` instantiates.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from rag_eval._core.errors import RagEvalError
from rag_eval._core.masking import without_userinfo
from rag_eval._core.messages import close_match, did_you_mean, first_and_more
from rag_eval._core.plugins import error_cause, import_target, object_kind, qualified_name
from rag_eval._core.validation import PARAMETER_VOICE, pydantic_problems
from rag_eval._data.judging.grades import provenance_problem
from rag_eval._data.judging.sheet import HUMAN, VERIFIED

#: The grades a judge gives: the graded scale 0-3.
LOWEST, HIGHEST = 0.0, 3.0
ENTRY_POINT_GROUP = "rag_eval.judges"
#: Attribute that marks a function as a judge factory a config may name (see :func:`judge_factory`).
FACTORY_MARKER = "rag_eval_judge_factory"
#: Sources a judge may not claim: they say a person graded.
PERSON_SOURCES = frozenset({HUMAN, VERIFIED})

BUILTIN: dict[str, str] = {
    "llm": "rag_eval._models.judges.llm:LlmJudge",
    "cross_encoder": "rag_eval._models.judges.cross_encoder:CrossEncoderJudge",
}

SEAM = ("a judge is a class with a judge(query, passages) method returning one grade (0-3, or None when it "
        "failed) per passage, or a factory function marked with @rag_eval.extend.judge_factory (docs/judging.md)")


class JudgeError(RagEvalError):
    """A judge could not be named, built or reached, or answered what no grade can be read from."""


@dataclass(frozen=True)
class JudgeGrade:
    """One passage's grade (0-3; None: the judge failed, and ``error`` says why), with what it cost.

    ``explanation`` is the judge's own reason (the model's answer, the cross-encoder's score);
    ``prompt_tokens`` and ``completion_tokens`` come from the endpoint's ``usage``; ``seconds`` is
    the time of the requests that produced it (a cached answer: the time it took when asked);
    ``cached`` says it was read from the cache (nothing was sent); ``requests`` how many requests
    were sent for it (retries and the reminder included).
    """

    grade: float | None
    explanation: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    cached: bool = False
    requests: int = 0
    error: str = ""


class Judge(Protocol):
    """What the judge command calls (see the module docstring)."""

    def judge(self, query: str, passages: list[str]) -> list[JudgeGrade]:
        """One grade per passage of ``query``, in order."""
        ...


class JudgeParams(BaseModel):
    """Base of a built-in judge's parameter model: unknown keys are errors, YAML types are not coerced."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def judge_factory(function: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a function (not a class) as a judge factory a config may name; without the mark it is refused."""
    setattr(function, FACTORY_MARKER, True)
    return function


# --------------------------------------------------------------------------- the registry


def plugin_names() -> dict[str, Any]:
    """Entry points of installed judge plug-ins, by name (read afresh on every call)."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def resolve(name: str) -> Any:
    """The judge class (or registered factory) behind ``name``; nothing is called."""
    if not isinstance(name, str) or not name.strip():
        raise JudgeError(f"adapter must be a judge's name ({', '.join(BUILTIN)}) or 'package.module:Class'")
    if ":" in name:
        module, _, attr = name.partition(":")
        if not module or not attr:
            raise JudgeError(f"judge {name!r} is not of the form 'package.module:Class'")
        return _judge_factory(_imported(name, name), name, registered=False)
    if name in BUILTIN:
        return _judge_factory(_imported(BUILTIN[name], name), name, registered=False)
    plugins = plugin_names()
    if name not in plugins:
        known = sorted(set(BUILTIN) | set(plugins))
        raise JudgeError(f"unknown judge {name!r}; {did_you_mean(name, known)}known: {', '.join(known)}, "
                         "or an import string 'package.module:Class'")
    entry = plugins[name]
    try:
        loaded = entry.load()
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # a broken plug-in must not be hidden
        raise JudgeError(f"plug-in judge {name!r} (entry point {entry.value}) failed to load: {error_cause(error)}") from error
    return _judge_factory(loaded, name, registered=True)


def check(name: str, params: Mapping[str, Any] | None = None) -> Any:
    """Resolve ``name`` and check ``params`` against it WITHOUT calling anything; returns the factory.

    A class with a :class:`JudgeParams` ``Params`` model is validated by the model; any other is
    checked by binding ``params`` to its signature. Every problem is in the error's ``problems``.
    """
    factory = resolve(name)
    params = {} if params is None else params
    if not isinstance(params, Mapping):
        raise JudgeError(f"params must be a mapping, got {type(params).__name__}")
    model = getattr(factory, "Params", None)
    if isinstance(model, type) and issubclass(model, JudgeParams):
        check_params(model, params, name)
        return factory
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return factory  # no signature to check: the call itself reports bad parameters
    try:
        signature.bind(**params)
    except TypeError as error:
        takes = ", ".join(p for p in signature.parameters if p != "self") or "nothing"
        raise JudgeError(f"params: judge {name!r}: {error}; it takes: {takes}") from None
    return factory


def check_params(model: type[JudgeParams], params: Mapping[str, Any], name: str) -> Any:
    """``params`` validated by ``model``; a JudgeError listing every problem (``params.x: ...``) otherwise."""
    try:
        return model.model_validate(dict(params))
    except ValidationError as error:
        problems = pydantic_problems(
            error, dict(params), model, root="params", voice=PARAMETER_VOICE,
            unknown_top_key=lambda key, allowed: _unknown_parameter(name, key, allowed),
        )
    # A URL's user and password never reach a message (``base_url: http://user:pw@host`` is refused, and shown).
    problems = [without_userinfo(problem) for problem in problems]
    raise JudgeError(first_and_more(problems), problems=problems)


def build(name: str, params: Mapping[str, Any] | None = None, *, cache_dir: Path | None = None) -> Any:
    """Check, then instantiate the judge ``name`` with keyword ``params``.

    ``cache_dir`` (the run's default cache folder) is handed to a judge that takes ``cache_dir``
    and was given none. Whatever the constructor raises becomes one JudgeError line.
    """
    params = dict(params or {})
    factory = check(name, params)
    if cache_dir is not None and params.get("cache_dir") is None and _takes(factory, "cache_dir"):
        params["cache_dir"] = str(cache_dir)
    try:
        judge = factory(**params)
    except RagEvalError:
        raise
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # SystemExit, asyncio.CancelledError...: the plug-in failed (rag_eval._core.plugins)
        cause = without_userinfo(error_cause(error))
        raise JudgeError(f"judge {name!r}: {qualified_name(factory)}() raised {cause}") from error
    if not callable(getattr(judge, "judge", None)):
        raise JudgeError(f"judge {name!r}: the factory returned {type(judge).__name__}, which has no judge() method; {SEAM}")
    return judge


# --------------------------------------------------------------------------- using a judge


def source_of(judge: Any) -> str:
    """The provenance a judge's grades carry in a sheet (its ``source``, else ``judge:<module.Class>``)."""
    source = getattr(judge, "source", None)
    if source is None:
        return f"judge:{qualified_name(type(judge))}"
    # The provenance rule of sheets and query sets (one home): a source `merge` would refuse is refused here,
    # before any grade is asked, and a person's source ('human', 'llm+verified') is never a judge's.
    problem = provenance_problem(source) if isinstance(source, str) else f"source {source!r} is not text"
    if problem is None and source in PERSON_SOURCES:
        problem = f"source {source!r} is not a judge's provenance (it says a person graded)"
    if problem is not None:
        raise JudgeError(f"judge {qualified_name(type(judge))}: {problem.split('; write ')[0]}; give the judge's "
                         "source as '<kind>:<name>': a lower-case kind, a colon, a name on one line (llm:qwen2.5)")
    return source


def description_of(judge: Any) -> str:
    """Who graded, for a sheet's ``annotator``: the judge's ``description``, else its class."""
    description = getattr(judge, "description", None)
    return " ".join(description.split()) if isinstance(description, str) and description.strip() else qualified_name(type(judge))


def judge_all(judge: Any, batches: Sequence[tuple[str, list[str]]]) -> list[list[JudgeGrade]]:
    """Each batch ``(query, passages)`` graded: through ``judge_batches`` when the judge has it, else one call each.

    Every answer is checked: one grade per passage, each 0-3 or None; anything else is a JudgeError
    naming the judge (a plug-in's bug is bad input, reported in one line).
    """
    many = getattr(judge, "judge_batches", None)
    if callable(many):
        answers = _called(judge, lambda: list(many([(query, list(passages)) for query, passages in batches])))
        if len(answers) != len(batches):
            raise JudgeError(f"judge {qualified_name(type(judge))}: judge_batches returned {len(answers)} lists for "
                             f"{len(batches)} batches; return one list of grades per batch")
    else:
        answers = [_called(judge, functools.partial(judge.judge, query, list(passages))) for query, passages in batches]
    return [checked_grades(judge, answer, len(passages)) for answer, (_, passages) in zip(answers, batches)]


def checked_grades(judge: Any, answer: Any, count: int) -> list[JudgeGrade]:
    """``answer`` (a judge's return for ``count`` passages) as JudgeGrades, or one JudgeError line."""
    who = f"judge {qualified_name(type(judge))}"
    if isinstance(answer, (str, bytes)) or not isinstance(answer, Sequence):
        raise JudgeError(f"{who}: judge() returned {object_kind(answer)}, not a list of grades; {SEAM}")
    if len(answer) != count:
        raise JudgeError(f"{who}: judge() returned {len(answer)} grades for {count} passages; return one per passage")
    grades = []
    for item in answer:
        raw = item.grade if isinstance(item, JudgeGrade) else item
        value = _number(who, raw)
        if value is not None and not LOWEST <= value <= HIGHEST:
            raise JudgeError(f"{who}: grade {raw!r} is outside {LOWEST:g}-{HIGHEST:g}; return a grade on the 0-3 "
                             "scale, or None when the passage could not be graded")
        grades.append(item if isinstance(item, JudgeGrade) else JudgeGrade(grade=value))
    return grades


# --------------------------------------------------------------------------- internals


def _imported(target: str, name: str) -> Any:
    try:
        return import_target(target, name, what="judge")
    except RagEvalError as error:
        raise JudgeError(str(error)) from None


def _judge_factory(obj: Any, name: str, registered: bool) -> Any:
    """``obj`` when it is a judge class or a registered factory; refused (never called) otherwise."""
    if inspect.isclass(obj):
        if not callable(getattr(obj, "judge", None)):
            raise JudgeError(f"judge {name!r}: class {qualified_name(obj)} has no judge() method; {SEAM}")
        return obj
    if callable(obj) and (registered or getattr(obj, FACTORY_MARKER, False) is True):
        return obj
    raise JudgeError(f"judge {name!r} is {object_kind(obj)}, not a judge class, so it was not called; {SEAM}")


def _takes(factory: Any, key: str) -> bool:
    model = getattr(factory, "Params", None)
    if isinstance(model, type) and issubclass(model, JudgeParams):
        return key in model.model_fields
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False
    return key in parameters or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


def _unknown_parameter(name: str, key: str, allowed: list[str]) -> str:
    guess = close_match(key, allowed)
    hint = f" (did you mean {guess!r}?)" if guess is not None else ""
    return f"judge {name!r} has no parameter {key!r}{hint}; its parameters: {', '.join(allowed) or 'none'}"


def _called(judge: Any, call: Callable[[], Any]) -> Any:
    try:
        return call()
    except RagEvalError:
        raise
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # SystemExit, asyncio.CancelledError...: the plug-in failed (rag_eval._core.plugins)
        raise JudgeError(f"judge {qualified_name(type(judge))}: judge() raised {error_cause(error)}") from error


def _number(who: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        raise JudgeError(f"{who}: {value!r} is not a grade; return numbers 0-3 (or None when a passage could not be "
                         "graded)")
    return float(value)
