"""The question-writing prompt of ``rag-eval generate`` (``question-quote-v1``) and its strict answer parser.

The model reads one document and writes N questions that the document answers, each followed by
the words of the document that answer it, copied exactly::

    Q: How deep is the Challenger Deep?
    QUOTE: the Challenger Deep, about 10,935 metres below sea level

The quote is what makes a synthetic question a judged one: it becomes the question's evidence
span, and only if it occurs exactly once in the document (checked by
:mod:`rag_eval._models.judges.generation`, not here). Asking for the answering words rather than
for offsets follows how people write evidence, and lets the check be exact: a model that
paraphrases is caught, never trusted.

:func:`parse_questions` reads the answer strictly, line by line. A question line is ``Q:`` (or
``QUESTION:``), a quote line ``QUOTE:``, each label in any case, with an optional number
(``Q1:``), an optional list marker before it (``-``, ``*``, ``1.``, ``1)``) and markdown stars
around it (``**Q:**``); a label with nothing after it takes the next non-empty line. Each
question takes the first quote line after it. Every other line is ignored. What cannot be read is
counted, never guessed: a question with no quote before the next question (or the end), and a
quote with no question before it, are each one unreadable entry.

:data:`PROMPT_VERSION` names this text in the answer cache's key: edit the prompt, change the
version, and no answer given to the old prompt is reused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Part of every cached answer's key: change it whenever SYSTEM or TEMPLATE change.
PROMPT_VERSION = "question-quote-v1"

SYSTEM = "You write test questions for a search engine. You copy text exactly."

TEMPLATE = """\
Here is a document.

Document:
{document}

Write {n} different questions that this document answers. Each question must make sense on its \
own, without the document (name what it is about), and ask about a fact stated in the document.

After each question, copy the words of the document that answer it: one sentence or part of a \
sentence, copied exactly as written, character for character, without changing, shortening or \
adding any word.

Answer with exactly {n} pairs of lines in this format, and nothing else:
Q: <the question>
QUOTE: <the exact words from the document that answer it>"""

# "Q:", "Q1:", "- **Question 2:**", "1. QUOTE:", any case; group 1 the label, group 2 what follows it.
_LABEL = re.compile(
    r"^\s*(?:[-*•]\s+|\d+\s*[.)]\s+)?\**\s*(q|question|quote)\s*\d*\s*\**\s*:\s*\**\s*(.*?)\s*$", re.IGNORECASE
)
_QUOTE_MARKS = (('"', '"'), ("'", "'"), ("“", "”"), ("‘", "’"), ("«", "»"), ("`", "`"))


@dataclass(frozen=True)
class Entry:
    """One question the answer gave: its text and quote (either empty when the entry could not be read)."""

    question: str
    quote: str

    @property
    def readable(self) -> bool:
        """Both a question and a quote were given."""
        return bool(self.question) and bool(self.quote)


def messages(document: str, n: int) -> list[dict[str, str]]:
    """The chat messages that ask for ``n`` questions about ``document``."""
    # Cut at the placeholders, not formatted: a document holding "{" or "{n}" must be sent as it is.
    before, _, rest = TEMPLATE.partition("{document}")
    content = before + document + rest.replace("{n}", str(n))
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": content}]


def parse_questions(answer: str) -> list[Entry]:
    """The entries of ``answer``, in order (see the module docstring); an unreadable one has an empty part."""
    labelled = _labelled_lines(answer)
    entries: list[Entry] = []
    question: str | None = None
    for kind, text in labelled:
        if kind == "q":
            if question is not None:  # a question with no quote before the next one
                entries.append(Entry(question, ""))
            question = text
        elif question is None:  # a quote with no question before it
            entries.append(Entry("", text))
        else:
            entries.append(Entry(question, text))
            question = None
    if question is not None:
        entries.append(Entry(question, ""))
    return [Entry(" ".join(entry.question.split()), entry.quote) for entry in entries]


def quote_forms(quote: str) -> list[str]:
    """The quote as written, then (when the model wrapped it in quotation marks) without them: tried in this order."""
    forms = [quote]
    for first, last in _QUOTE_MARKS:
        if len(quote) > 2 and quote.startswith(first) and quote.endswith(last):
            inner = quote[len(first) : len(quote) - len(last)].strip()
            if inner:
                forms.append(inner)
            break
    return forms


def _labelled_lines(answer: str) -> list[tuple[str, str]]:
    """``(kind, text)`` of every labelled line ("q" or "quote"); a label alone takes the next non-empty line."""
    lines = answer.splitlines()
    found: list[tuple[str, str]] = []
    position = 0
    while position < len(lines):
        match = _LABEL.match(lines[position])
        position += 1
        if match is None:
            continue
        kind = "quote" if match.group(1).lower() == "quote" else "q"
        text = match.group(2).rstrip("*").strip()
        if not text:
            while position < len(lines) and not lines[position].strip():
                position += 1
            if position < len(lines) and _LABEL.match(lines[position]) is None:
                text = lines[position].strip()
                position += 1
        found.append((kind, text))
    return found
