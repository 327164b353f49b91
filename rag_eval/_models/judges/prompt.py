"""The LLM judge's prompt (graded 0-3, in the style of TREC's assessor prompts) and its strict answer parser.

The scale is the one TREC Deep Learning and the TREC 2024 RAG track grade passages on, as the
UMBRELA assessor (Upadhyay et al., 2024, arXiv:2406.06519, reproducing Thomas et al.'s Bing
prompt, SIGIR 2024) words it for a model:

- 0: the passage has nothing to do with the query;
- 1: related to the query's topic, but it does not answer the query;
- 2: answers the query in part, or the answer is unclear or hidden among unrelated text;
- 3: dedicated to the query, and holds the exact answer.

The model answers on one line ``##final score: N`` (UMBRELA's format). :func:`parse_grade` reads
the answer strictly: exactly one grade 0, 1, 2 or 3 in that format, with no other number on the
rest of its line (words may follow: ``##final score: 2 (partly)``; the same grade written twice
counts once); anything else (no such line, two different grades, ``2.5``, ``2/3``, ``10``,
``0 to 3``) is no grade, never a 0. The judge then asks once more, the question followed by :data:`REMINDER`, and reports a second
unreadable answer as a failure.

:data:`PROMPT_VERSION` names this text in the answer cache's key: edit the prompt, change the
version, and no answer given to the old prompt is reused.
"""

from __future__ import annotations

import re

#: Part of every cached answer's key: change it whenever SYSTEM, TEMPLATE or REMINDER change.
PROMPT_VERSION = "graded-0-3-v1"

SYSTEM = "You are a search quality rater. You judge how well a passage answers a search query."

TEMPLATE = """\
Grade how relevant the passage is to the query on an integer scale from 0 to 3:
0 = the passage has nothing to do with the query.
1 = the passage is related to the topic of the query but does not answer it.
2 = the passage partly answers the query, or the answer is unclear or hidden among unrelated information.
3 = the passage is dedicated to the query and contains the exact answer.

Give 1 when the passage is about the topic but not about what the query asks, 2 when it holds something \
important for the whole query together with other information, and 3 only when it is entirely about \
what the query asks. Give 0 when none of these applies.

Query: {query}
Passage: {passage}

Think about the intent behind the query, how well the passage matches that intent, and how \
trustworthy the passage is; then decide on one final grade. Answer with one line in exactly this \
format, without any reasoning:
##final score: N
where N is 0, 1, 2 or 3."""

#: Added to the question when its first answer held no readable grade, for the one retry. It names the
#: scale but lists no answer line: a model that copies the first line it sees must not be handed a "0".
REMINDER = "Now reply with your grade on one line: ##final score: followed by the number 0, 1, 2 or 3 that you chose."

# "##final score: 2" (any case, spaces around ":" and after "##", markdown stars around the grade).
_ANSWER = re.compile(r"#{2,}\s*final\s+score\s*:\s*\**\s*(\d+(?:[./]\d+)?)([^\n]*)", re.IGNORECASE)
_GRADES = {"0": 0, "1": 1, "2": 2, "3": 3}


def messages(query: str, passage: str) -> list[dict[str, str]]:
    """The chat messages that ask for one (query, passage) grade."""
    # The template is cut at its placeholders, not formatted: a query or passage holding "{", "}" or
    # "{passage}" must be sent as it is.
    before, _, rest = TEMPLATE.partition("{query}")
    middle, _, after = rest.partition("{passage}")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": before + query + middle + passage + after}]


def reminder(query: str, passage: str) -> list[dict[str, str]]:
    """The retry after an unreadable answer: the same question with :data:`REMINDER` after it, in one turn.

    Not a second turn after the unreadable answer: small models repeat their last answer, and some
    chat templates refuse two user turns in a row.
    """
    asked = messages(query, passage)
    asked[-1] = {"role": "user", "content": asked[-1]["content"] + "\n\n" + REMINDER}
    return asked


def parse_grade(answer: str) -> int | None:
    """The grade of ``answer`` (0-3), or None when it holds no single readable grade (see the module docstring)."""
    found = set()
    for match in _ANSWER.finditer(answer):
        number, rest = match.groups()
        if any(char.isdigit() for char in rest):
            return None  # "0 to 3", "2, 3", "1 or 2": the scale echoed or two grades, not one
        found.add(number)
    if len(found) != 1:
        return None
    return _GRADES.get(found.pop())
