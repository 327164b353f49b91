"""Results -> text (trec_eval style), JSON or a markdown table, for the terminal."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from rag_eval._run.outcome import RetrieverOutcome, RunOutcome
from rag_eval._scoring.metrics.measures import parse_metric
from rag_eval._scoring.results import Results

# Decimals of a value in reports (computations never round; only rendering does).
DECIMALS = 4


def format_results(results: Results, fmt: str, per_query: bool = False, decimals: int = 4) -> str:
    """Render ``results`` as ``text``, ``json`` or ``markdown``.

    text: ``metric<TAB>qid<TAB>value`` lines, per-query rows first and ``all`` last,
    values to ``decimals`` places as trec_eval prints them; json keeps full precision and
    lists the queries the means leave out or score 0 (``left_out``: ``{metric: [qid]}``,
    ``unanswered_queries``, ``unjudged_queries``), which text and markdown leave to
    :func:`exclusion_notes` (stderr, so that stdout stays trec_eval's format).
    """
    if fmt == "json":
        data: dict[str, Any] = {"aggregate": {k: _json_value(v) for k, v in results.aggregate.items()}}
        if per_query:
            data["per_query"] = {
                qid: {name: _json_value(results.values[name][i]) for name in results.metric_names}
                for i, qid in enumerate(results.query_ids)
            }
        data["left_out"] = {name: list(ids) for name, ids in results.left_out.items() if ids}
        data["unanswered_queries"] = list(results.unanswered_queries)
        data["unjudged_queries"] = list(results.unjudged_queries)
        return json.dumps(data, indent=2, allow_nan=False) + "\n"
    if fmt == "markdown":
        return _markdown(results, per_query, decimals)
    if fmt == "text":
        return _text(results, per_query, decimals)
    raise ValueError(f"unknown format {fmt!r}")


def exclusion_notes(results: Results, shown: int = 5) -> list[str]:
    """One line per kind of query that a mean leaves out, scores 0 or ignores, with a count and the first ids.

    Judged queries without a relevant document (left out of the mean, policy skip; one
    line per set of metrics that leaves out the same queries), judged queries the run did
    not answer (scored 0 and kept in the mean, where not left out) and queries of the run without judgements
    (ignored). Empty when every judged query was answered and scored.
    """
    notes = []
    by_ids: dict[tuple[str, ...], list[str]] = {}
    for name in results.metric_names:
        ids = tuple(results.left_out.get(name, ()))
        if ids:
            by_ids.setdefault(ids, []).append(name)
    for ids, names in by_ids.items():
        notes.append(
            f"{count_queries(len(ids), 'judged')} with no relevant document left out of the mean of {', '.join(names)} "
            f"(no_relevant: skip): {_first(ids, shown)}"
        )
    if results.unanswered_queries:
        ids = results.unanswered_queries
        unless = " (unless left out above)" if by_ids else ""
        notes.append(f"{count_queries(len(ids), 'judged')} the run did not answer, scored 0{unless}: {_first(ids, shown)}")
    if results.unjudged_queries:
        ids = results.unjudged_queries
        notes.append(f"{count_queries(len(ids), 'run')} without judgements, ignored: {_first(ids, shown)}")
    return notes


def _first(ids: tuple[str, ...], shown: int) -> str:
    listed = ", ".join(ids[:shown])
    return listed if len(ids) <= shown else f"{listed}, ... ({len(ids)} in all)"


def _text(results: Results, per_query: bool, decimals: int) -> str:
    lines = []
    if per_query:
        for i, qid in enumerate(results.query_ids):
            for name in results.metric_names:
                value = results.values[name][i]
                if not math.isnan(value):
                    lines.append(f"{name}\t{qid}\t{value:.{decimals}f}")
    for name in results.metric_names:
        lines.append(f"{name}\tall\t{_fmt(results.aggregate[name], decimals)}")
    return "\n".join(lines) + "\n"


def _markdown(results: Results, per_query: bool, decimals: int) -> str:
    names = results.metric_names
    out = ["| metric | value |", "|---|---:|"]
    out += [f"| {name} | {_fmt(results.aggregate[name], decimals)} |" for name in names]
    if per_query:
        out += ["", "| query | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
        for i, qid in enumerate(results.query_ids):
            cells = [_fmt(results.values[name][i], decimals) for name in names]
            out.append(f"| {escape_cell(qid)} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def mean_notes(
    results: Results,
    metric: str,
    judgements: Mapping[str, Mapping[str, Any]],
    evidence: Mapping[str, Any] | None = None,
) -> list[str]:
    """Why ``metric``'s mean is what it is, where that is not obvious: one short phrase per reason.

    Judged queries the retriever answered with nothing (scored 0, kept in the mean) and
    judged queries without a relevant passage, which the ``no_relevant`` choice leaves
    out (skip) or scores 0 (zero): the same ranking then gives another mean than
    trec_eval's (skip) or than the default's (zero). ``evidence`` ({qid: spans}) tells which
    queries an evidence metric can score.
    """

    parsed = parse_metric(metric)
    # What a query lacks to be scored, by the metric's level: evidence, a relevant document, or a relevant passage.
    lacking = "evidence" if parsed.is_evidence else "relevant " + (
        "document" if parsed.is_document_level else "chunk" if "min_evidence_fraction" in results.options else "passage"
    )
    left_out = set(results.left_out.get(metric, ()))
    in_mean = [q for q in results.query_ids if q not in left_out]
    notes = []
    unanswered = [q for q in results.unanswered_queries if q not in left_out]
    if unanswered:
        notes.append(f"{len(unanswered)} of {count_queries(len(in_mean), 'judged')} unanswered, scored 0")
    if left_out:
        notes.append(
            f"{count_queries(len(left_out), 'judged')} with no {lacking} left out of the mean "
            "(no_relevant: skip; trec_eval scores them 0)"
        )
    elif results.options.get("no_relevant") == "zero" and parsed.uses_relevance:
        threshold = float(results.options.get("relevance_threshold", 1.0))
        if parsed.is_evidence:  # an evidence metric needs evidence, whatever the document grades say
            none = [q for q in results.query_ids if not (evidence or {}).get(q)]
        else:  # the metric's own notion of relevant (its record)
            none = [q for q in results.query_ids
                    if not any(parsed.is_relevant(g, threshold) for g in judgements.get(q, {}).values())]
        if none:
            notes.append(f"{count_queries(len(none), 'judged')} with no {lacking} scored 0 (no_relevant: zero)")
    return notes


def _fmt(value: float, decimals: int) -> str:
    return "n/a" if math.isnan(value) else f"{value:.{decimals}f}"


def _json_value(value: float) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def escape_cell(text: str) -> str:
    """``text`` as markdown that renders as ``text``, in a GitHub table cell or anywhere in a line.

    A backslash before ASCII punctuation shows that character as it is, so ``a|b`` is written
    ``a\\|b``: GFM keeps ``\\|`` inside the cell and renders ``|``. Every character that could
    start markup is escaped (emphasis, code, links, HTML, headings, strikethrough, entity
    references such as ``&amp;``, GitHub's ``$`` math). Runs of whitespace become one space:
    a line break would end the table row.
    """
    text = _shown_bidi(str(text).replace("\\", "\\\\"))
    text = " ".join(text.split())
    for ch in "|*_`[]<>#~&$":
        text = text.replace(ch, "\\" + ch)
    return text


_LINE_ENDING = re.compile(r"\r\n|\r|\n")
# Bidirectional embeddings, overrides and isolates: written as they are, one in an id reorders the rest of
# the table row on screen (a label after it reads backwards), so they are shown by their code point.
_BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")


def _shown_bidi(text: str) -> str:
    return _BIDI_CONTROLS.sub(lambda found: f"<U+{ord(found.group()):04X}>", text)
_BACKTICKS = re.compile(r"`+")


def code_span(text: str, in_table: bool = False) -> str:
    """``text`` (an id, a label, a path) as a markdown code span whose rendered text is ``text``.

    Nothing can be escaped inside a code span (a backslash is shown as it is), so the fence is
    one backtick longer than the longest run of backticks in ``text``; a space pads each side when
    ``text`` starts or ends with a backtick, or starts and ends with a space, because renderers
    strip one space from each side of such a span. In a table cell (``in_table``) GFM ends the
    cell at any ``|`` without a backslash before it, inside a code span too, and removes that
    backslash before rendering: each ``|`` is written ``\\|`` there. A line ending (never in an
    id) becomes the space a code span would render it as.
    """
    text = _shown_bidi(_LINE_ENDING.sub(" ", str(text)))
    if not text:
        return ""
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    padded = text[0] == "`" or text[-1] == "`" or (text[0] == " " and text[-1] == " " and text.strip(" ") != "")
    if in_table:
        text = text.replace("|", "\\|")
    pad = " " if padded else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def semantics_phrases(options: Mapping[str, Any], skipped: str) -> tuple[str, str, str]:
    """How the report words the gain, the no_relevant policy (``skipped``: its skip wording) and the mean."""
    gain = options.get("gain", "linear")
    gain_text = (
        "gain = grade (linear, as trec_eval)" if gain == "linear" else "gain = 2^grade - 1 (exponential, Burges et al.)"
    )
    policy = {
        "skip": skipped,
        "zero": "scored 0 and kept in the mean (as trec_eval)",
        "error": "an error",
    }.get(options.get("no_relevant", "skip"), options.get("no_relevant"))
    aggregation = (
        "mean of per-query values (macro)"
        if options.get("aggregation", "macro") == "macro"
        else "nDCG: sum of DCG / sum of IDCG over queries (micro); other metrics: mean of per-query values"
    )
    return gain_text, str(policy), aggregation


def means_sentence(results: Results) -> str:
    """How the summary's dataset values are formed, and to how many decimals (no final period)."""
    micro = results.options.get("aggregation") == "micro"
    means = (
        "nDCG: sum of DCG / sum of IDCG over judged queries (micro); other metrics: macro means"
        if micro
        else "Macro means over judged queries"
    )
    return f"{means}, {DECIMALS} decimals"


def count_queries(n: int, adjective: str = "") -> str:
    """``1 query``, ``9 judged queries``: a count with its noun."""
    return f"{n} {adjective + ' ' if adjective else ''}quer{'y' if n == 1 else 'ies'}"


def select_detailed_queries(run: RunOutcome, main: str, limit: int) -> tuple[list[str], bool]:
    """All judged queries up to ``limit``; beyond that the ``limit`` worst by the mean of ``main``.

    Worst in the metric's direction (the lowest mean, or the highest for a lower-is-better
    metric), ties by query id; a query no retriever has a value for comes last.
    """
    if not run.outcomes:
        return [], False
    query_ids = list(run.outcomes[0].results.query_ids)
    if len(query_ids) <= limit:
        return query_ids, False

    columns = [o.results.values[main] for o in run.outcomes if main in o.results.values]
    metric = parse_metric(main)

    def worst_first(index: int) -> tuple[bool, float, str]:
        values = [column[index] for column in columns]
        values = [v for v in values if not math.isnan(v)]
        if not values:
            return True, 0.0, query_ids[index]
        return False, -metric.best_first_key(sum(values) / len(values)), query_ids[index]

    order = sorted(range(len(query_ids)), key=worst_first)
    return [query_ids[i] for i in order[:limit]], True


def detail_intro(run: RunOutcome, main: str, chosen: Sequence[str], worst: bool) -> str:
    """The sentence that says which queries the detailed section shows (see select_detailed_queries)."""
    if not worst:
        return "Every judged query."
    # Chosen by the mean over the retrievers that have ``main``: say so, and over which.
    labels = [escape_inline(o.label) for o in run.outcomes if main in o.results.values]
    if not labels:  # no retriever has the main metric (a document dataset's own-spans retrievers): ids decide
        return f"The first {len(chosen)} of {count_queries(len(run.outcomes[0].results.query_ids), 'judged')} by id."
    by = f"{main} of {labels[0]}" if len(labels) == 1 else f"mean {main} over {_and(labels)}"
    end = "lowest" if parse_metric(main).higher_is_better else "highest"  # the worst end, in the metric's direction
    return (
        f"The {len(chosen)} of {count_queries(len(run.outcomes[0].results.query_ids), 'judged')} with the {end} "
        f"{by}, {end} first."
    )


def fmt(value: float | None) -> str:
    """A metric value as printed everywhere in reports."""
    return "n/a" if value is None or math.isnan(value) else f"{value:.{DECIMALS}f}"


def one_line(text: str) -> str:
    """``text`` with every run of white space (line breaks too) as one space, trimmed."""
    return " ".join(str(text).split())


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the cut marked with an ellipsis (report cells and quotes)."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def fmt_grade(grade: float) -> str:
    """Grades as written by the judge: 3, not 3.0; 0.5 stays 0.5."""
    return f"{grade:g}"


def escape_inline(text: str) -> str:
    """Text outside tables: same escaping (markdown characters, no line breaks)."""
    return escape_cell(text)


def signed(value: float) -> str:
    """A delta with its sign: +0.0123 / -0.0456."""
    return "n/a" if value is None or math.isnan(value) else f"{value:+.4f}"


def fmt_mde(value: float | None, bounded: bool = False) -> str:
    """A minimum detectable difference: as :func:`fmt`, or '< 0.0001' when positive but printed as 0.0000
    (a pair whose differences barely vary detects tiny differences, not none), or '> 1' past the range of a
    ``bounded`` metric (values in [0, 1]: no difference can be that large)."""
    if value is not None and 0.0 < value < 0.5 * 10.0**-DECIMALS:
        return f"< {10.0**-DECIMALS:.{DECIMALS}f}"
    if bounded and value is not None and value > 1.0:
        return "> 1"
    return fmt(value)


def beyond_range(mde: float, metric: str) -> bool:
    """Whether ``mde`` is larger than any difference ``metric`` can show (its values lie in [0, 1])."""
    return bool(parse_metric(metric).family.bounded) and mde > 1.0


def fmt_p(value: float) -> str:
    """p-values: 4 decimals, or '< 0.0001'."""
    if value is None or math.isnan(value):
        return "n/a"
    return "< 0.0001" if value < 0.0001 else f"{value:.4f}"




def _and(names: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


# More retrievers than this: the detailed queries show two of them (report.md stays a summary; report.html has all).
DETAILED_RETRIEVERS = 3


def detailed_outcomes(run: RunOutcome, main: str) -> list[RetrieverOutcome]:
    """The retrievers whose chunks the detailed queries show: all up to :data:`DETAILED_RETRIEVERS`; beyond that
    the reference (the declared baseline, else the first retriever) and the best by mean ``main``."""
    outcomes = list(run.outcomes)
    if len(outcomes) <= DETAILED_RETRIEVERS:
        return outcomes
    baseline = getattr(run.config, "baseline_label", None)
    reference = next((o for o in outcomes if o.label == baseline), outcomes[0])
    metric = parse_metric(main)

    def key(outcome: RetrieverOutcome) -> tuple[bool, float]:
        values = outcome.results.values.get(main)
        defined = [] if values is None else [v for v in values if not math.isnan(v)]
        return (True, 0.0) if not defined else (False, metric.best_first_key(sum(defined) / len(defined)))

    best = min(outcomes, key=key)  # min keeps config order among equals
    return [reference] if best is reference else [reference, best]


def detailed_outcomes_note(run: RunOutcome, main: str, shown: Sequence[RetrieverOutcome], what: str) -> list[str]:
    """The line saying which retrievers' ``what`` the detailed queries show, when not all (else nothing)."""
    if len(shown) == len(run.outcomes):
        return []
    names = " and ".join(escape_inline(o.label) for o in shown)
    return [f"With {len(run.outcomes)} retrievers, {what} of {names} are shown (the reference and the best by mean "
            f"{escape_inline(main)}); report.html shows every retriever, two side by side.", ""]
