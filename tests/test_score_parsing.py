"""Every number the TREC reader accepts is parsed exactly as Python's float() parses it.

The fast reader parses scores and grades vectorised (rag_eval._scoring.engine.fast_numbers): plain
decimals a word at a time, up to 19 significant digits with an exact integer rounding step, and
exponents; only rare forms go through float() one by one. These properties compare its result,
bit for bit (the sign of a zero included), with float() on the forms the reader accepts: Python's
repr of any double (16 and 17 significant digits), fixed and exponent formats, signs, leading
zeros, ``.5`` and ``5.``, upper-case ``E``, and decimals closest to the midpoints between two
doubles, where a rounding step off by one would show. They also check that the reader refuses
what it refused before, and that a file of such numbers reads the same through either reader.
"""

from __future__ import annotations

import math
import struct
from decimal import Decimal, localcontext

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rag_eval._core.errors import InputFormatError
from rag_eval._scoring import engine
from rag_eval._scoring.engine import fast_numbers, fast_reader, line_reader
from rag_eval._scoring.engine.fast_numbers import NotANumber, parse_tokens
from rag_eval._scoring.engine.layout import TREC_RUN

finite = st.floats(allow_nan=False, allow_infinity=False)
# Scores as retrievers give them: BM25 and cosine scores are float32, fusion scores small doubles.
scores = st.one_of(
    finite,
    st.floats(-1e3, 1e3, allow_nan=False).map(lambda x: float(np.float32(x))),
    st.floats(-1.0, 1.0, allow_nan=False),
    st.floats(1e-12, 1e-3, allow_nan=False),
    st.integers(-(2**63), 2**63).map(float),
)


def bits(value: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", value))[0]


def assert_exact(tokens: list[bytes], values: np.ndarray) -> None:
    assert len(values) == len(tokens)
    for token, value in zip(tokens, values.tolist()):
        assert bits(value) == bits(float(token)), (token, value, float(token))


@st.composite
def written(draw) -> bytes:
    """A double written in one of the ways files hold numbers."""
    x = draw(scores)
    form = draw(st.sampled_from(["repr", "fixed", "exp", "EXP", "g", "plus", "int"]))
    if form == "repr":
        text = repr(x)
    elif form == "fixed":
        if abs(x) >= 1e22:
            text = repr(x)
        else:
            text = f"{x:.{draw(st.integers(0, 24))}f}"
    elif form in ("exp", "EXP"):
        text = f"{x:.{draw(st.integers(0, 20))}e}"
        if form == "EXP":
            text = text.upper().replace("E+", "E")
    elif form == "g":
        text = f"{x:.{draw(st.integers(1, 20))}g}"
    elif form == "plus":
        text = f"{x:+.{draw(st.integers(0, 18))}f}" if abs(x) < 1e22 else f"{x:+.17e}"
    else:
        text = str(int(x)) if abs(x) < 1e30 else repr(x)
    return text.encode()


@st.composite
def decimals(draw) -> bytes:
    """``[sign]digits[.digits][e[sign]digits]`` of any shape: leading zeros, ``.5``, ``5.``, 25 digits."""
    sign = draw(st.sampled_from(["", "", "-", "+"]))
    whole = draw(st.text("0123456789", max_size=21))
    fraction = draw(st.text("0123456789", max_size=24))
    dot = draw(st.booleans()) or not whole
    if not whole and not fraction:
        whole = "0"
    exponent = ""
    if draw(st.integers(0, 3)) == 0:
        exponent = draw(st.sampled_from("eE")) + draw(st.sampled_from(["", "-", "+"])) + str(draw(st.integers(0, 40)))
    return f"{sign}{whole}{'.' if dot else ''}{fraction if dot else ''}{exponent}".encode()


@st.composite
def near_midpoints(draw) -> bytes:
    """The decimals of 15 to 20 significant digits nearest the midpoint between a double and the next one:
    where correct rounding is decided by the last digit."""
    x = abs(draw(st.one_of(st.floats(1e-10, 1e16), st.floats(1e-300, 1e300))))
    if x == 0 or math.isinf(x):
        x = 1.0
    with localcontext() as context:
        context.prec = 800
        middle = (Decimal(x) + Decimal(math.nextafter(x, math.inf))) / 2
        digits = draw(st.integers(15, 20))
        context.prec = digits
        context.rounding = draw(st.sampled_from(["ROUND_HALF_EVEN", "ROUND_DOWN", "ROUND_UP"]))
        near = +middle
    sign = draw(st.sampled_from(["", "-"]))
    if draw(st.booleans()) and 1e-4 < x < 1e15:
        return f"{sign}{near:f}".encode()
    return f"{sign}{near:e}".encode()


@st.composite
def around_powers_of_two(draw) -> bytes:
    """Decimals of 16 to 21 digits at and around a power of two, where the ulp halves below it."""
    power = math.ldexp(1.0, draw(st.integers(-40, 62)))
    below, above = math.nextafter(power, 0), math.nextafter(power, math.inf)
    with localcontext() as context:
        context.prec = 800
        candidates = [Decimal(power), (Decimal(power) + Decimal(below)) / 2, (Decimal(power) + Decimal(above)) / 2,
                      (3 * Decimal(power) + Decimal(below)) / 4, (Decimal(power) + 3 * Decimal(below)) / 4]
        value = draw(st.sampled_from(candidates))
        context.prec = draw(st.integers(16, 21))
        context.rounding = draw(st.sampled_from(["ROUND_HALF_EVEN", "ROUND_DOWN", "ROUND_UP"]))
        value = +value
    return (f"{value:f}" if draw(st.booleans()) and 1e-6 < power < 1e18 else f"{value:e}").encode()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(written(), decimals(), near_midpoints(), around_powers_of_two()), min_size=1, max_size=60))
@example([b"5.0938262939453125", b"-0.0", b"+0", b"0e0", b".5", b"5.", b"00012.50", b"1E5", b"2.5E+2"])
@example([b"9007199254740993", b"9007199254740993.0", b"0.30000000000000004", b"1.7976931348623157e308"])
@example([b"2.2250738585072014e-308", b"4.9406564584124654e-324", b"1e-400", b"123456789012345678901234567890"])
def test_numbers_are_parsed_exactly_as_float_parses_them(tokens):
    too_large = [t for t in tokens if math.isinf(float(t))]  # 2e308: refused (the line reader says why)
    tokens = [t for t in tokens if not math.isinf(float(t))]
    if tokens:
        assert_exact(tokens, parse_tokens(tokens))
    for token in too_large:
        with pytest.raises(NotANumber):
            parse_tokens([token])


@settings(max_examples=100, deadline=None)
@given(st.lists(scores, min_size=1, max_size=200))
def test_python_reprs_are_exact_and_never_parsed_one_by_one(doubles):
    """repr() of any double written without an exponent (1e-4 <= |x| < 1e16, as repr writes them) is parsed
    vectorised: float() is called only for a value within a few ulps of a power of two that the first estimate
    put in the binade above. (Reprs with an exponent, |x| < 1e-4, are exact too, through float(): the first
    test of this module covers them.)"""
    tokens = [repr(x).encode() for x in doubles if x == 0 or 1e-4 <= abs(x) < 1e16]
    if not tokens:
        return
    calls: list[bytes] = []
    original = fast_numbers.number_or_none

    def counted(token: bytes) -> float | None:
        calls.append(token)
        return original(token)

    fast_numbers.number_or_none = counted
    try:
        values = parse_tokens(tokens)
    finally:
        fast_numbers.number_or_none = original
    assert_exact(tokens, values)
    assert all(near_a_power_of_two(float(token)) for token in calls), calls


def near_a_power_of_two(x: float) -> bool:
    fraction, _ = math.frexp(abs(x))  # in [0.5, 1)
    return fraction - 0.5 < 2.0**-50 or 1.0 - fraction < 2.0**-50


@pytest.mark.parametrize("bad", [
    b"1_0", b"0x1p3", b"1.2.3", b"--1", b".", b"-", b"+", b"e5", b"1e", b"1e+", b"1.5e-", b"1e5e5", b"1..2",
    b"1,5", b"\xc2\xbd", b"one", b"1d5", b"1.0f", b"+-1", b"1e--5", b".e1", b"-.e1", b"0.1.",
])
def test_what_is_not_a_number_is_refused(bad):
    with pytest.raises(NotANumber):
        parse_tokens([b"1.5", bad, b"2"])


@pytest.mark.parametrize("token", [b"inf", b"-Infinity", b"nan", b"NaN", b"+inf", b"1e999", b"-1e999"])
def test_infinities_and_nans_are_parsed_as_strtod_does(token):
    """(The reader then refuses them as scores: trec_eval cannot rank by them.)"""
    if token.endswith(b"999"):
        with pytest.raises(NotANumber):  # too large for a float64: named as such by the line reader
            parse_tokens([token])
        return
    value = parse_tokens([token])[0]
    assert (math.isnan(value) and math.isnan(float(token))) or value == float(token)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(written(), st.sampled_from([" ", "\t", "  ", "\t  ", " \t"])), min_size=1, max_size=40))
def test_a_run_of_such_scores_reads_the_same_through_both_readers(tmp_path_factory, rows):
    """A run file of these scores, in any blanks, read by the fast reader (no line reader involved) and by the
    line-by-line reader: the same values, bit for bit."""
    finite_rows = [(t, sep) for t, sep in rows if math.isfinite(float(t)) and abs(float(t)) < 1.7e308]
    if not finite_rows:
        return
    path = tmp_path_factory.mktemp("run") / "r.run"
    lines = (f"q1 Q0 d{i}{sep}{i + 1}{sep}".encode() + token + b" tag\n" for i, (token, sep) in enumerate(finite_rows))
    path.write_bytes(b"".join(lines))
    fast = fast_reader.read_fast(path, TREC_RUN)
    slow = line_reader.read_lines(path, TREC_RUN)
    assert_exact([t for t, _ in finite_rows], fast.values)
    assert [bits(v) for v in fast.values.tolist()] == [bits(v) for v in slow.values.tolist()]


def test_a_score_too_large_for_a_double_is_named_with_its_line(tmp_path):
    path = tmp_path / "r.run"
    path.write_text("q1 Q0 a 1 2.5 t\nq1 Q0 b 2 1e999 t\n")
    with pytest.raises(InputFormatError, match=r"r.run:2: score '1e999' is too large for a float64"):
        engine.read_run(path)
