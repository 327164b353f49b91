"""Numbers YAML 1.1 reads otherwise than they look: ``1e3`` as text, ``1_000`` as the integer 1000.

:class:`NumberAsText` is the str that remembers the first, so a message can say why; apart from the
loader (:mod:`rag_eval._core.yaml_loader`), which makes these strings, only messages
(:mod:`rag_eval._core.messages`) look at the type. :class:`IntAsWritten` is the int that remembers
how the second was written, so that an id written ``1_000`` or ``0x1F`` is refused, not silently
renamed 1000 or 31 (rag_eval._data.datasets.values.id_from_value). (Octal and base 60, ``010`` and
``1:30``, are refused by the loader itself, wherever they stand.)
"""

from __future__ import annotations

import re

# A number with an exponent that YAML 1.1 (PyYAML) reads as text: its floats need a dot and a
# signed exponent, so 1e3 and 1.0e308 are strings while 1.0e+3 is a float.
EXPONENT_NUMBER = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE][-+]?[0-9]+", re.ASCII)


class NumberAsText(str):
    """An unquoted scalar such as ``1e3`` that YAML 1.1 read as text although it reads as a number.

    It is an ordinary ``str`` everywhere (``1e3`` may be an id); only messages look at the
    type, to say why a number field got text and how to write the number (:meth:`advice`).
    """

    __slots__ = ()

    def advice(self) -> str:
        """Why YAML read this as text, and the same number written so that YAML reads a number."""
        mantissa, _, exponent = self.lower().partition("e")
        if "." not in mantissa:
            mantissa += ".0"
        if exponent[:1] not in "+-":
            exponent = "+" + exponent
        forms = [f"{mantissa}e{exponent}"]
        value = float(self)
        if value.is_integer() and abs(value) < 1e16:  # whole and exact: plain digits read best
            forms.insert(0, str(int(value)))
        return (
            f"YAML reads {self} as text, not as a number: in YAML 1.1 a number with an exponent needs a dot "
            f"and a sign in the exponent; write {' or '.join(forms)}"
        )


class IntAsWritten(int):
    """An unquoted integer that YAML 1.1 read as a number written otherwise: ``1_000`` (1000), ``0x1F`` (31),
    ``+5`` (5), ``-0`` (0).

    An ordinary ``int`` everywhere, its repr included (``top_k: 1_000`` is 1000, a sweep's label says 1000);
    ``written`` is the scalar as it stands in the file, which messages show (rag_eval._core.messages.shown).
    """

    written: str

    def __new__(cls, value: int, written: str) -> IntAsWritten:
        number = super().__new__(cls, value)
        number.written = written
        return number

    def __reduce__(self) -> tuple[type[IntAsWritten], tuple[int, str]]:
        # copy, deepcopy and pickle (a plug-in copying its parameters, Ray shipping them) rebuild it from both
        return (IntAsWritten, (int(self), self.written))
