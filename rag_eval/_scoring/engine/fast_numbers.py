"""Decimal numbers in a byte buffer, parsed with numpy eight bytes at a time, exactly as strtod.

Used by the fast TREC reader (rag_eval._scoring.engine.fast_reader): ``parse_numbers(u64, base, start, end)``
reads the tokens ``base[start[i]:end[i]]``. Plain decimals (``[sign]digits[.digits]``)
are parsed vectorised (SWAR: the digits of a word combined in three multiply-shift
steps); anything else (exponents, ``inf``, more than 15 significant digits) is parsed
one by one with Python's float, after the strict check of :func:`number_or_none`.
A token that is not a number raises :class:`NotANumber`.
"""

from __future__ import annotations

import re

import numpy as np

_U64 = np.uint64
_ONE = _U64(1)
_ALL = _U64(2**64 - 1)
_BYTE_INDEX = _U64(0x0001020304050607)  # (1 << 8k) * this >> 56 == k
_ONES = _U64(0x0101010101010101)
_HIGHS = _U64(0x8080808080808080)
_DOTS = _U64(0x2E2E2E2E2E2E2E2E)
_ZEROS = _U64(0x3030303030303030)
_SEVENS = _U64(0x7676767676767676)
_LANES = (_U64(0x00FF00FF00FF00FF), _U64(0x0000FFFF0000FFFF), _U64(0x00000000FFFFFFFF))
_KEEP_LOW = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [2**64 - 1], dtype=_U64)  # low k bytes
_POW10_INT = np.array([10**k for k in range(17)], dtype=_U64)
_POW10 = np.array([10.0**k for k in range(23)])  # exact in float64
_EXACT = _U64(2**53)  # integers below this are exact in float64

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


def _swar8(v: np.ndarray) -> np.ndarray:
    """Eight digit values, one per byte (first digit in the lowest byte) -> their number."""
    v = v * _U64(10) + (v >> _U64(8))
    v &= _LANES[0]
    v = v * _U64(100) + (v >> _U64(16))
    v &= _LANES[1]
    v = v * _U64(10000) + (v >> _U64(32))
    v &= _LANES[2]
    return v


def _first_flagged_byte(flags: np.ndarray) -> np.ndarray:
    """Index of the lowest byte whose high bit is set (flags != 0)."""
    lowest = flags & (~flags + _U64(1))
    _, exponent = np.frexp(lowest.astype(np.float64))
    return (exponent - 1) >> 3


def parse_numbers(u64: np.ndarray, base: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The numbers in base[start:end], exactly as strtod reads them.

    Raises :class:`NotANumber` (its argument: the token's index) for a token that is not one.
    """
    length = end - start
    if int(length.max()) <= 8:
        values, ok = _parse_short_numbers(u64, end, length)
    else:
        short = np.flatnonzero(length <= 8)
        values, ok = _parse_long_numbers(u64, base, start, end)
        if short.size:
            values[short], ok[short] = _parse_short_numbers(u64, end[short], length[short])
    if not ok.all():
        for i in np.flatnonzero(~ok).tolist():
            value = number_or_none(base[start[i] : end[i]].tobytes())
            if value is None:
                raise NotANumber(int(i))
            values[i] = value
    return values


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
        ok = ((v + _SEVENS | v) & _HIGHS) == 0  # eight digits 0..9 (a second dot is not)
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
        ok = ((v + _SEVENS | v) & _HIGHS) == 0  # eight digits 0..9 (a second dot is not)
        ok &= has_dot | (length < 8)  # eight characters and no dot: the top digit was shifted out
        ok &= length > has_dot.astype(np.int64) + signed  # at least one digit
        values = _swar8(v).astype(np.float64) / _POW10[np.minimum(fraction, 7)]
    if any_sign:
        values = np.where(negative, -values, values)
    return values, ok


def _parse_long_numbers(u64: np.ndarray, base: np.ndarray, start: np.ndarray, end: np.ndarray):
    """Decimal numbers ``[sign]digits[.digits]`` of up to 16 characters, exactly as strtod.

    Returns (values, ok); rows not ok (longer, exponents, inf, garbage) are parsed
    one by one by the caller. A number is at most 15 significant digits here, so its
    digits form an integer M < 2**53 and M / 10**F is one correctly rounded division:
    the same double strtod returns.
    """
    length = end - start
    first = base[start]
    negative = first == 45
    signed = negative | (first == 43)
    any_sign = bool(signed.any())
    if any_sign:
        start = start + signed
        length = length - signed
    ok = (length >= 1) & (length <= 16)
    length = np.clip(length, 0, 16)
    two_words = bool(length.max() > 8)
    w0 = u64[start]
    w0 &= _KEEP_LOW[np.minimum(length, 8)]
    x0 = w0 ^ _DOTS
    z0 = (x0 - _ONES) & ~x0 & _HIGHS  # high bit of the first '.' byte (exact for the lowest)
    has0 = z0 != 0
    dot = np.where(has0, _first_flagged_byte(z0), length)
    if two_words:
        w1 = u64[start + 8]
        w1 &= _KEEP_LOW[np.clip(length - 8, 0, 8)]
        x1 = w1 ^ _DOTS
        z1 = (x1 - _ONES) & ~x1 & _HIGHS
        has1 = (z1 != 0) & ~has0
        dot = np.where(has1, 8 + _first_flagged_byte(z1), dot)
        has_dot = has0 | has1
        # Remove the dot: bytes above it move down one place.
        m0 = _KEEP_LOW[np.minimum(dot, 8)]
        m1 = _KEEP_LOW[np.clip(dot - 8, 0, 8)]
        d0 = (w0 & m0) | (((w0 >> _U64(8)) | (w1 << _U64(56))) & ~m0)
        d1 = (w1 & m1) | ((w1 >> _U64(8)) & ~m1)
    else:
        has_dot = has0
        m0 = _KEEP_LOW[dot]
        d0 = (w0 & m0) | ((w0 >> _U64(8)) & ~m0)
    digits = length - has_dot
    fraction = np.where(has_dot, length - dot - 1, 0)
    ok &= digits >= 1
    v0 = d0 ^ _ZEROS
    v0 &= _KEEP_LOW[np.minimum(digits, 8)]
    ok &= ((v0 + _SEVENS | v0) & _HIGHS) == 0  # every byte a digit 0..9
    first8 = _swar8(v0)  # the first 8 digits, zero padded on the right
    if two_words:
        v1 = d1 ^ _ZEROS
        v1 &= _KEEP_LOW[np.clip(digits - 8, 0, 8)]
        ok &= ((v1 + _SEVENS | v1) & _HIGHS) == 0
        long = digits > 8
        n_long = np.clip(digits, 8, 16)
        # digits 9..16: their value divided by 10**(16 - n), exact (an integer below 2**53).
        rest = (_swar8(v1).astype(np.float64) / _POW10[16 - n_long]).astype(np.uint64)
        mantissa = first8 * _POW10_INT[n_long - 8] + rest
        ok &= ~long | (mantissa < _EXACT)
        values = np.where(
            long,
            mantissa.astype(np.float64) / _POW10[np.minimum(fraction, 22)],
            first8.astype(np.float64) / _POW10[8 - np.minimum(digits, 8) + np.minimum(fraction, 14)],
        )
    else:
        values = first8.astype(np.float64) / _POW10[8 - digits + fraction]
    if any_sign:
        values = np.where(negative, -values, values)
    return values, ok
