"""Render ids and their human form, the trace code (`K7QF-2MXA-9P`): the server draws the ids
and reads typed codes, a worker prints the code in the strip and marks the id in the pixels.

A render id is 45 random bits: nine Crockford base32 symbols, then one check symbol (the value
mod 37, Crockford's own check alphabet), grouped 4-4-2. Crockford's alphabet has no I, L, O or U,
and reading accepts the look-alikes people type instead (I/L -> 1, O -> 0), any case, any dashes.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

ID_BITS = 45
_SYMBOLS = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_CHECK_SYMBOLS = _SYMBOLS + "*~$=U"
_DATA_SYMBOLS = ID_BITS // 5
_READ_ALIASES = {"I": "1", "L": "1", "O": "0"}


class BadTraceCode(ValueError):
    """Not a trace code: wrong length, a symbol outside the alphabet, or a failed check."""


def new_render_id(randbits: Callable[[int], int] = secrets.randbits) -> int:
    """A fresh random render id (45 bits, never 0 so that an all-zero read is never an id);
    `randbits`: a seeded generator's instead, for a benchmark whose runs repeat."""
    while True:
        value = randbits(ID_BITS)
        if value:
            return value


def render_id_hex(render_id: int) -> str:
    """The stored form of a render id: 12 lowercase hex digits."""
    _check_range(render_id)
    return f"{render_id:012x}"


def parse_render_id_hex(text: str) -> int:
    value = int(text, 16)
    _check_range(value)
    return value


def trace_code(render_id: int) -> str:
    """`render_id` as `XXXX-XXXX-XC`: nine data symbols and a check symbol."""
    _check_range(render_id)
    data = "".join(_SYMBOLS[(render_id >> (5 * i)) & 31] for i in reversed(range(_DATA_SYMBOLS)))
    code = data + _CHECK_SYMBOLS[render_id % 37]
    return f"{code[:4]}-{code[4:8]}-{code[8:]}"


def parse_trace_code(text: str) -> int:
    """The render id a typed trace code stands for; BadTraceCode if it is not one."""
    symbols = [_READ_ALIASES.get(c, c) for c in text.upper() if c not in "- "]
    if len(symbols) != _DATA_SYMBOLS + 1:
        raise BadTraceCode("a trace code has ten symbols")
    value = 0
    for symbol in symbols[:-1]:
        if symbol not in _SYMBOLS:
            raise BadTraceCode(f"{symbol!r} is not a trace code symbol")
        value = value << 5 | _SYMBOLS.index(symbol)
    if symbols[-1] not in _CHECK_SYMBOLS or _CHECK_SYMBOLS.index(symbols[-1]) != value % 37:
        raise BadTraceCode("the trace code's check symbol does not match")
    return value


def _check_range(render_id: int) -> None:
    if not 0 < render_id < 1 << ID_BITS:
        raise ValueError("a render id is a positive 45-bit integer")
