"""Render ids and trace codes (render.forensic_wire.trace_codes): format, round trip, typo
detection."""

from __future__ import annotations

import random
import re

import pytest

from render.forensic_wire import trace_codes

pytestmark = pytest.mark.forensic  # leak tracing: in the whole suite, out of the fast loop


def test_new_ids_are_45_bit_random_and_distinct() -> None:
    ids = [trace_codes.new_render_id() for _ in range(2000)]
    assert all(0 < value < 1 << 45 for value in ids)
    assert len(set(ids)) == len(ids)
    # Random, not a counter: the top bit is set about half the time.
    assert 800 < sum(value >> 44 for value in ids) < 1200


def test_trace_code_format_and_round_trip() -> None:
    rng = random.Random(5)
    for value in [1, (1 << 45) - 1, *(rng.getrandbits(45) or 1 for _ in range(500))]:
        code = trace_codes.trace_code(value)
        assert re.fullmatch(r"[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-"
                            r"[0-9A-HJKMNP-TV-Z][0-9A-HJKMNP-TV-Z*~$=U]", code), code
        assert trace_codes.parse_trace_code(code) == value
        assert trace_codes.parse_trace_code(code.lower().replace("-", "")) == value
        assert trace_codes.parse_render_id_hex(trace_codes.render_id_hex(value)) == value


def test_look_alike_letters_are_read_as_digits() -> None:
    value = int("100000000", 32)  # data symbols 1 0 0 ... in Crockford's digits
    code = trace_codes.trace_code(value)
    assert code.startswith("1000-")
    typed = code.replace("1", "l").replace("0", "O")
    assert trace_codes.parse_trace_code(typed) == value


def test_every_single_symbol_typo_is_caught() -> None:
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    code = trace_codes.trace_code(0x1A2B3C4D5E6).replace("-", "")
    for position in range(9):
        for symbol in alphabet:
            if symbol == code[position]:
                continue
            typo = code[:position] + symbol + code[position + 1:]
            with pytest.raises(trace_codes.BadTraceCode, match="check symbol"):
                trace_codes.parse_trace_code(typo)


def test_adjacent_swaps_are_caught() -> None:
    code = trace_codes.trace_code(0x0F1E2D3C4B5).replace("-", "")
    for position in range(8):
        swapped = code[:position] + code[position + 1] + code[position] + code[position + 2:]
        if swapped != code:
            with pytest.raises(trace_codes.BadTraceCode, match="check symbol"):
                trace_codes.parse_trace_code(swapped)


@pytest.mark.parametrize(("text", "message"), [
    ("K7QF-2MXA", "ten symbols"),
    ("K7QF-2MXA-9PP", "ten symbols"),
    ("K7QF-2MXA-!P", "not a trace code symbol"),
    ("K7QU-2MXA-9P", "not a trace code symbol"),
])
def test_malformed_codes_are_refused(text: str, message: str) -> None:
    with pytest.raises(trace_codes.BadTraceCode, match=message):
        trace_codes.parse_trace_code(text)


@pytest.mark.parametrize("value", [0, -1, 1 << 45])
def test_out_of_range_ids_are_refused(value: int) -> None:
    with pytest.raises(ValueError, match="45-bit"):
        trace_codes.trace_code(value)
