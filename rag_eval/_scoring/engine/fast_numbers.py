"""Decimal numbers in a byte buffer, parsed with numpy a word at a time, exactly as strtod.

Used by the fast TREC reader (rag_eval._scoring.engine.fast_reader): ``parse_numbers(u64, base, start, end)``
reads the tokens ``base[start[i]:end[i]]``, giving every one the double Python's ``float()`` (and C's
strtod) gives it. Nearly every number is parsed vectorised; only rare forms (more than 19
significant digits, ``inf``/``nan``, exponents far from 0) are parsed one by one with Python's float,
after the strict check of :func:`number_or_none`. A token that is not a number raises :class:`NotANumber`.

How, for a token ``[sign]digits[.digits][(e|E)[sign]digits]``:

1. Digits. The mantissa's bytes are read as one to three little-endian words ending at its last byte
   (a mantissa of up to 24 characters), the bytes before it set to '0', the dot taken out (the bytes
   before it move up one place) and every byte checked to be a digit (SWAR: a word's eight digits
   combined in three multiply-shift steps). This gives the digits as an integer ``M < 2**64`` and
   the decimal exponent ``F``: the value is ``M / 10**F`` (``F`` less the exponent, if any).
2. The double nearest ``M / 10**F``:

   - ``M < 2**53`` and ``|F| <= 22``: both are exact doubles and one IEEE division (or product) is
     correctly rounded (Clinger's fast path): the double strtod returns.
   - ``M >= 2**53`` (16 to 19 significant digits: Python's ``repr`` writes 17) and ``0 <= F <= 25``:
     ``q = float(M) / 10**F`` is within 4 units in the last place (ulp) of the exact value ``x``.
     With ``q = m * 2**e`` (``m`` its 53-bit integer significand), the exact ``x / 2**e`` is
     ``t = M * 2**k / 5**F`` with ``k = -(F + e)``, and ``R = M * 2**k - m * 5**F = (t - m) * 5**F``
     is an integer smaller than ``2**62`` in size: computed with wrapping 64-bit arithmetic (mod
     ``2**64``) it is exact. Comparing ``2 * R`` with odd multiples of ``5**F`` gives ``t`` rounded to
     the nearest integer, ties to even, exactly: the significand of the correctly rounded double.
     Near a power of two the ulp changes: see :func:`_round_exactly`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

_U64 = np.uint64
_ONE = _U64(1)
_ALL = _U64(2**64 - 1)
_BYTE_INDEX = _U64(0x0001020304050607)  # (1 << 8k) * this >> 56 == k
_ONES = _U64(0x0101010101010101)
_HIGHS = _U64(0x8080808080808080)
_DOTS = _U64(0x2E2E2E2E2E2E2E2E)
_ES = _U64(0x6565656565656565)  # 'e'; (byte | 0x20) folds 'E' onto it
_CASE = _U64(0x2020202020202020)
_ZEROS = _U64(0x3030303030303030)
_SEVENS = _U64(0x7676767676767676)
_LANES = (_U64(0x00FF00FF00FF00FF), _U64(0x0000FFFF0000FFFF), _U64(0x00000000FFFFFFFF))
_KEEP_LOW = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [2**64 - 1], dtype=_U64)  # low k bytes
_POW10 = np.array([10.0**k for k in range(26)])  # exact up to 10**22; 10**23.. rounded (used as estimates)
_POW5 = np.array([5**k for k in range(26)], dtype=_U64)  # exact, 5**25 < 2**59
_INV_POW5 = 1.0 / _POW5.astype(np.float64)  # estimates only
_EXACT = _U64(2**53)  # integers below this are exact in float64
_MAX_DIGITS_WORDS = 3  # mantissas of up to 24 characters are parsed vectorised
_SIGNIFICAND = _U64(2**52 - 1)
_HIDDEN = 2**52
# The largest first group of eight digits that cannot overflow 64 bits: G * 10**16 + (10**16 - 1) < 2**64.
_MAX_TOP_GROUP = _U64((2**64 - 10**16) // 10**16)

# What a grade or score may look like: C's strtod without hexadecimal, and without the
# underscores and non-ASCII digits that Python's float() also takes.
_NUMBER = re.compile(rb"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|(?i:inf|infinity|nan))")


class NotANumber(ValueError):
    """A token is not a number a TREC file may hold (or is too large for a float64)."""


def number_or_none(token: bytes) -> float | None:
    """The value of ``token`` (strtod's), or None when it is not a number or overflows float64."""
    if _NUMBER.fullmatch(token) is None:
        return None
    value = float(token)
    if value in (float("inf"), float("-inf")) and not token.lstrip(b"+-")[:1].isalpha():
        return None  # 1e999: finite digits that float64 cannot hold
    return value


def is_overflow(token: bytes) -> bool:
    """True when ``token`` is a well-formed number too large for a float64 (``1e999``)."""
    return _NUMBER.fullmatch(token) is not None and number_or_none(token) is None


# ---- the entry point ---------------------------------------------------------------------------

# Readable bytes a buffer needs before each token's end (words are read ending at a token's last byte).
FRONT_BYTES = 8 * _MAX_DIGITS_WORDS


def parse_numbers(u64: np.ndarray, base: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The numbers in base[start:end], exactly as strtod (and Python's float) reads them.

    ``u64`` is ``base`` seen as the uint64 word at every byte offset (``u64[i]`` holds bytes
    i..i+7); :data:`FRONT_BYTES` readable bytes must come before each token's end. Raises
    :class:`NotANumber` (its argument: the token's index) for a token that is not one.
    """
    length = end - start
    if not length.size:
        return np.empty(0)
    if int(length.max()) <= 8:
        values, ok = _parse_short_numbers(u64, end, length)
    else:
        values, ok = _parse_decimals(u64, base, start, end)
    if not ok.all():
        rest = np.flatnonzero(~ok)
        done, parsed = _parse_exponents(u64, base, start[rest], end[rest])
        values[rest[done]] = parsed
        for i in rest[~done].tolist():
            value = number_or_none(base[start[i] : end[i]].tobytes())
            if value is None:
                raise NotANumber(int(i))
            values[i] = value
    return values


def parse_tokens(tokens: Sequence[bytes]) -> np.ndarray:
    """:func:`parse_numbers` on a list of tokens (for tests and small inputs)."""
    starts, at = [], FRONT_BYTES
    for token in tokens:
        starts.append(at)
        at += len(token) + 1
    text = b"\0" * FRONT_BYTES + b" ".join(tokens) + b" " + b"\0" * 16
    base = np.frombuffer(text, dtype=np.uint8)
    u64 = np.ndarray((base.size - 7,), dtype="<u8", buffer=base, offset=0, strides=(1,))
    start = np.array(starts, dtype=np.int64)
    end = start + np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    return parse_numbers(u64, base, start, end)


# ---- SWAR helpers ------------------------------------------------------------------------------


def _swar8(v: np.ndarray) -> np.ndarray:
    """Eight digit values, one per byte (first digit in the lowest byte) -> their number."""
    v = v * _U64(10) + (v >> _U64(8))
    v &= _LANES[0]
    v = v * _U64(100) + (v >> _U64(16))
    v &= _LANES[1]
    v = v * _U64(10000) + (v >> _U64(32))
    v &= _LANES[2]
    return v


def _lowest_flagged_byte(flags: np.ndarray) -> np.ndarray:
    """Index of the lowest byte whose high bit is set in ``flags`` (0 when none is)."""
    lowest = flags & (~flags + _ONE)  # the lowest set bit alone
    lowest >>= _U64(7)
    lowest *= _BYTE_INDEX
    lowest >>= _U64(56)
    return lowest.astype(np.int64)


def _bytes_equal(words: np.ndarray, pattern: np.ndarray) -> np.ndarray:
    """High bit of each byte equal to ``pattern``'s byte; exact for the lowest such byte (others may be extra)."""
    x = words ^ pattern
    return (x - _ONES) & ~x & _HIGHS


def _all_digits(v: np.ndarray) -> np.ndarray:
    """Whether every byte of ``v`` (a word of digit values, '0' subtracted) is 0..9."""
    return ((v + _SEVENS | v) & _HIGHS) == 0


# ---- numbers of up to 8 characters -------------------------------------------------------------


def _parse_short_numbers(u64: np.ndarray, end: np.ndarray, length: np.ndarray):
    """Numbers of 1..8 characters ``[sign][digits][.][digits]``: (values, ok).

    Each token is loaded right-aligned into one word (its last character in the
    top byte), the bytes before it set to '0', the dot taken out; the eight
    digits then give an integer M < 10**8 and M / 10**F is one correctly rounded
    division: the double strtod returns.
    """
    r = u64[end - 8]
    junk = ((8 - length) << 3).astype(np.uint64)  # bits below the token
    r >>= junk
    r <<= junk
    r |= _ZEROS >> (_U64(64) - junk)  # the bytes below the token become '0'
    first = (r >> junk) & _U64(0xFF)
    negative = first == _U64(45)
    signed = negative | (first == _U64(43))
    any_sign = bool(signed.any())
    if any_sign:
        r ^= np.where(signed, first ^ _U64(0x30), _U64(0)) << junk  # the sign becomes '0'
    x = r ^ _DOTS
    dots = (x - _ONES) & ~x & _HIGHS  # the high bit of a '.' byte (digits never borrow)
    first_dots = dots[0]
    if bool((dots == first_dots).all()):  # the usual case: one format, "%.4f" or integers
        if first_dots:
            dot = (int(first_dots).bit_length() - 8) // 8  # the byte of its high bit
            above = _U64(((1 << 64) - 1) ^ ((1 << (8 * dot + 8)) - 1)) if dot < 7 else _U64(0)
            r = (r & above) | (((r << _U64(8)) | _U64(0x30)) & ~above)  # bytes below the dot move up
        v = r ^ _ZEROS
        ok = _all_digits(v)  # eight digits 0..9 (a second dot is not)
        ok &= length > (1 if first_dots else 0) + signed  # at least one digit
        if not first_dots:
            ok &= length < 8  # eight characters and no dot: the top digit was shifted out
        values = _swar8(v).astype(np.float64)
        if first_dots:
            values /= _POW10[7 - dot]
    else:
        has_dot = dots != 0
        dot = ((dots >> _U64(7)) * _BYTE_INDEX) >> _U64(56)  # index of the '.' byte (one dot)
        fraction = np.where(has_dot, _U64(7) - dot, _U64(0))
        above = _ALL << ((dot + _ONE) << _U64(3))
        r = (r & above) | (((r << _U64(8)) | _U64(0x30)) & ~above)  # bytes below the dot move up
        v = r ^ _ZEROS
        ok = _all_digits(v)  # eight digits 0..9 (a second dot is not)
        ok &= has_dot | (length < 8)  # eight characters and no dot: the top digit was shifted out
        ok &= length > has_dot.astype(np.int64) + signed  # at least one digit
        values = _swar8(v).astype(np.float64) / _POW10[np.minimum(fraction, 7)]
    if any_sign:
        values = np.where(negative, -values, values)
    return values, ok


# ---- longer numbers ----------------------------------------------------------------------------


def _parse_decimals(u64: np.ndarray, base: np.ndarray, start: np.ndarray, end: np.ndarray):
    """Numbers ``[sign]digits[.digits]`` with a mantissa of up to 24 characters: (values, ok)."""
    digits, scale, negative, ok = _mantissas(u64, base, start, end)
    values, exact = _nearest_doubles(digits, scale, negative)
    ok &= exact
    return values, ok


def _mantissas(u64: np.ndarray, base: np.ndarray, start: np.ndarray, end: np.ndarray):
    """(M, F, negative, ok) of tokens ``[sign]digits[.digits]``: the value is ``M / 10**F``.

    ``ok`` is False where the token is anything else, or longer than 24 characters after its
    sign, or its digits are 2**64 or more (those are left to the caller).
    """
    first = base[start]
    negative = first == 45
    signed = negative | (first == 43)
    length = end - start - signed  # the mantissa's characters, sign left out
    longest = int(length.max()) if length.size else 0
    n_words = min(max(1, -(-longest // 8)), _MAX_DIGITS_WORDS)
    width = 8 * n_words
    ok = (length >= 1) & (length <= width)
    before = np.clip(width - length, 0, width)  # window bytes before the token
    # The words of the window [end - width, end), bytes before the token set to '0'.
    words = []
    most_before = int(before.max())
    for i in range(n_words):
        w = u64[end - (width - 8 * i)]
        if most_before > 8 * i:  # (the words after the first few lie inside every token)
            low = _KEEP_LOW[np.clip(before - 8 * i, 0, 8)]
            w &= ~low
            w |= _ZEROS & low
        words.append(w)
    # The first '.': the lowest byte flagged in the lowest word that has one; -1: none.
    flags = [_bytes_equal(w, _DOTS) for w in words]
    lowest, offset = flags[-1], np.full(end.size, 8 * (n_words - 1), dtype=np.int64)
    for i in range(n_words - 2, -1, -1):
        here = flags[i] != 0
        lowest = np.where(here, flags[i], lowest)
        offset = np.where(here, 8 * i, offset)
    has_dot = lowest != 0
    dot = np.where(has_dot, offset + _lowest_flagged_byte(lowest), -1)
    # Take the dot out: the bytes up to it move up one place (a '0' comes in at the bottom).
    highest_dot = int(dot.max())
    below = _ZEROS
    for i in range(n_words):
        if highest_dot < 8 * i:
            break  # this word and the ones after lie above every dot
        w = words[i]
        moved = (w << _U64(8)) | (below >> _U64(56))
        up_to_dot = _KEEP_LOW[np.clip(dot - 8 * i + 1, 0, 8)]
        below = w
        words[i] = (w & ~up_to_dot) | (moved & up_to_dot)
    value = None
    for i in range(n_words):
        v = words[i] ^ _ZEROS
        ok &= _all_digits(v)  # a second dot, an 'e' or any other byte is not
        group = _swar8(v)
        if value is None:
            if n_words == 3:
                ok &= group <= _MAX_TOP_GROUP  # else the digits may not fit 64 bits
            value = group
        else:
            value = value * _U64(10**8) + group
    ok &= length > has_dot  # at least one digit
    scale = np.where(has_dot, width - 1 - dot, 0)
    return value, scale, negative, ok


def _nearest_doubles(digits: np.ndarray, scale: np.ndarray, negative: np.ndarray):
    """(the double nearest ``digits / 10**scale``, negated where ``negative``; ok) -- see the module docstring.

    ``ok`` is False where this cannot tell the double (the caller parses those with Python).
    """
    floats = digits.astype(np.float64)
    n = digits.size
    lowest, highest = (int(scale.min()), int(scale.max())) if n else (0, 0)
    small = bool((digits < _EXACT).all())
    if small and lowest >= 0 and highest <= 22:
        values = floats / _POW10[scale]  # the usual case: one correctly rounded division
        ok = np.ones(n, dtype=bool)
    elif lowest >= 0 and highest <= 25:  # plain decimals, some of 16 or more digits (repr): all rows exactly
        values, ok = _round_exactly(digits, scale, floats)
        zero = digits == 0
        if bool(zero.any()):
            values[zero] = 0.0
            ok |= zero
    else:
        small = digits < _EXACT
        fast = small & (scale >= -22) & (scale <= 22)
        clipped = np.clip(scale, -22, 22)
        values = np.where(clipped >= 0, floats / _POW10[np.abs(clipped)], floats * _POW10[np.abs(clipped)])
        ok = fast.copy()
        big = np.flatnonzero(~fast & (scale >= 0) & (scale <= 25) & (digits > 0))
        if big.size:
            values[big], ok[big] = _round_exactly(digits[big], scale[big], floats[big])
    if bool(negative.any()):
        np.negative(values, out=values, where=negative)
    return values, ok


def _round_exactly(digits: np.ndarray, scale: np.ndarray, floats: np.ndarray):
    """The double nearest ``digits / 10**scale`` (``0 <= scale <= 25``, digits > 0): (values, ok).

    ``q = float(digits) / 10**scale`` errs by under 4 ulp (three roundings of at most half an ulp
    each, the last two relative to q); with ``q = m * 2**e`` (``m`` its 53-bit significand), the exact
    ``t = x / 2**e = digits * 2**k / 5**scale`` (``k = -(scale + e)``) lies within 4 of ``m``. The
    integer ``R = (t - m) * D`` (``D = 5**scale``, times ``2**-k`` when ``k < 0``) is smaller than 2**62
    in size, so computing it modulo 2**64 gives it exactly; comparing ``2 * (R - j * D)`` with ``D``
    then rounds ``t`` to the nearest integer ``c = m + j``, ties to even. ``c`` is the significand of
    the correctly rounded double when ``2**52 < c <= 2**53`` (``t`` lies in q's binade, or rounds up
    to its top); at ``c = 2**52`` the double just below is the answer when ``t < 2**52 - 1/4`` (the
    ulp halves below a power of two). ``ok`` is False for the rest (q in the binade above ``t``'s).
    """
    q = floats / _POW10[scale]
    bits = q.view(np.uint64)
    m = (bits & _SIGNIFICAND).astype(np.int64) + _HIDDEN
    e = (bits >> _U64(52)).astype(np.int64) - 1075
    shift = -(scale + e)  # k
    ok = (shift >= -12) & (shift <= 63)  # (k < -12 cannot happen: t < 2**53 and digits < 2**64)
    up = np.clip(shift, 0, 63).astype(np.uint64)
    d = _POW5[scale]
    r = digits << up
    r -= m.astype(np.uint64) * d
    inverse = _INV_POW5[scale]
    if bool((shift < 0).any()):  # t = digits / (5**scale * 2**-k): D and m's side take the power of two
        down = np.clip(-shift, 0, 63).astype(np.uint64)
        r = (digits << up) - ((m.astype(np.uint64) * d) << down)
        d = d << down
        inverse = np.ldexp(inverse, -down.astype(np.int64))
    r = r.view(np.int64)
    d = d.view(np.int64)
    # The nearest integer to R / D, from a float estimate (off by at most one), then made exact.
    j = np.rint(r.astype(np.float64) * inverse).astype(np.int64)
    rest = r - j * d  # (t - (m + j)) * D
    twice = rest << 1  # in (-3D, 3D) when the estimate is within one
    odd = ((m + j) & 1) == 1
    j += (twice > d) | ((twice == d) & odd)  # above the midpoint, or on it with m + j odd
    j -= (twice < -d) | ((twice == -d) & odd)
    rest = r - j * d
    c = m + j
    ok &= (np.abs(twice) < 3 * d) & (c >= _HIDDEN) & (c <= 2 * _HIDDEN)
    below = (c == _HIDDEN) & ((rest << 2) < -d)  # t < 2**52 - 1/4: the double below 2**52 (half the ulp)
    bits = bits.view(np.int64) + np.where(ok, j - below, 0)  # the significand moves by j (over c = 2**53 too)
    return bits.view(np.float64), ok


# ---- exponents ---------------------------------------------------------------------------------


def _parse_exponents(u64: np.ndarray, base: np.ndarray, start: np.ndarray, end: np.ndarray):
    """Tokens ``mantissa(e|E)[sign]digits`` with an exponent part of at most 7 characters: (done, values).

    ``done`` marks the tokens parsed (exactly); the others are left to Python.
    """
    n = end.size
    if not n:
        return np.zeros(0, dtype=bool), np.empty(0)
    length = end - start
    last = u64[end - 8]
    before = np.clip(8 - length, 0, 8)  # bytes of the word before the token
    keep = ~_KEEP_LOW[before]
    flags = _bytes_equal((last & keep) | _CASE, _ES) & keep  # an 'e' or 'E' in the last 8 bytes
    done = flags != 0
    if not bool(done.any()):
        return done, np.empty(0)
    rows = np.flatnonzero(done)
    last, start, end, before = last[rows], start[rows], end[rows], before[rows]
    at = _lowest_flagged_byte(flags[rows])  # the 'e' (the token's 'e' is its only one, else it is refused below)
    # The exponent: the bytes after the 'e', a sign taken out, the rest digits.
    sign_byte = (last >> ((at + 1) << 3).astype(np.uint64)) & _U64(0xFF)
    exp_negative = sign_byte == _U64(45)
    exp_signed = exp_negative | (sign_byte == _U64(43))
    prefix = _KEEP_LOW[at + 1 + exp_signed]  # the 'e', its sign and everything before: '0'
    v = ((last & ~prefix) | (_ZEROS & prefix)) ^ _ZEROS
    good = _all_digits(v) & (at + 1 + exp_signed < 8)  # at least one exponent digit
    exponent = _swar8(v).astype(np.int64)
    exponent = np.where(exp_negative, -exponent, exponent)
    mantissa_end = end - 8 + at
    good &= mantissa_end > start
    digits, scale, negative, ok = _mantissas(u64, base, start, np.maximum(mantissa_end, start + 1))
    good &= ok
    scale = scale - exponent
    values, exact = _nearest_doubles(digits, np.clip(scale, -400, 400), negative)
    good &= exact & (np.abs(scale) <= 400)
    done[rows] = good
    return done, values[good]
