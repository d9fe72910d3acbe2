"""WiredTiger's packing as the embedded database vaultd starts packs it
(`vaultd.secantus_packing`): the binding's own bytes and values, to the byte, for every format
SecantusDB's tables declare and any other format of the same codes, the integer encoding's
every boundary, and the binding's odd cases (a NUL inside a key, a value cut short, a `str`
where bytes go), which it leaves to the binding."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wiredtiger import intpacking

from vaultd import secantus_packing

ORIGINAL_PACK, ORIGINAL_UNPACK = secantus_packing.original()
# The formats of SecantusDB's tables (secantus.storage: its `key_format=`/`value_format=`).
DECLARED = ("SSq", "u", "q", "SS", "SSu", "SSS", "SSSu", "S")
# Where the variable-length integer's encoding changes length, and either side of it.
EDGES = [-(2**63), -(2**13) - 65, -(2**13) - 64, -(2**13) - 63, -65, -64, -63, -1, 0, 1, 63,
         64, 65, 2**13 + 63, 2**13 + 64, 2**13 + 65, 2**32, 2**63 - 1, 2**64 - 1]

integers = st.one_of(st.sampled_from(EDGES), st.integers(-(2**63), 2**64 - 1))
formats = st.one_of(st.sampled_from(DECLARED), st.text(alphabet="Squ", min_size=1, max_size=5))


def outcome(call: Any, *args: Any) -> Any:
    """What a call returns, or the type of what it raises."""
    try:
        return ("returned", call(*args))
    except Exception as error:  # noqa: BLE001 - the binding's own errors are compared
        return ("raised", type(error))


@st.composite
def keys(draw: st.DrawFn) -> tuple[str, list[Any]]:
    fmt = draw(formats)
    values = [draw(st.text(max_size=12)) if code == "S" else draw(integers) if code == "q"
              else draw(st.binary(max_size=40)) for code in fmt]
    return fmt, values


@settings(max_examples=400)
@given(keys())
def test_packs_and_unpacks_as_the_binding_does(key: tuple[str, list[Any]]) -> None:
    fmt, values = key
    packed = secantus_packing.pack(fmt, *values)
    assert packed == ORIGINAL_PACK(fmt, *values)
    assert type(packed) is bytes
    assert secantus_packing.unpack(fmt, packed) == ORIGINAL_UNPACK(fmt, packed)


@settings(max_examples=400)
@given(formats, st.binary(max_size=30))
def test_any_bytes_unpack_as_the_binding_unpacks_them(fmt: str, data: bytes) -> None:
    assert outcome(secantus_packing.unpack, fmt, data) == outcome(ORIGINAL_UNPACK, fmt, data)


@settings(max_examples=600)
@given(st.one_of(integers, st.integers(), st.booleans(), st.floats(), st.text(max_size=3)))
def test_an_integer_packs_to_the_bindings_bytes_and_anything_else_fails_as_there(
        value: Any) -> None:
    assert outcome(secantus_packing.pack_int, value) == outcome(intpacking.pack_int, value)


@pytest.mark.parametrize("number", [*EDGES, 8257, 2**16 + 8256, 2**16 + 8257, 2**64 + 8255,
                                    2**64 + 8256, 2**64 + 8257])
def test_every_length_of_integer_packs_alike(number: int) -> None:
    assert outcome(secantus_packing.pack_int, number) == outcome(intpacking.pack_int, number)


@pytest.mark.parametrize("number", EDGES)
def test_every_length_of_integer_round_trips(number: int) -> None:
    packed = secantus_packing.pack("SSq", "vaultd", "access_log", number)
    assert packed == ORIGINAL_PACK("SSq", "vaultd", "access_log", number)
    assert secantus_packing.unpack("SSq", packed) == ["vaultd", "access_log", number]


@pytest.mark.parametrize(("fmt", "values"), [
    ("SSq", ["vault\0d", "access_log", 7]),  # a NUL ends a key's string
    ("u", ["text, not bytes"]),  # the binding encodes it
    ("Su", ["a", bytearray(b"xy")]),  # the binding raises
    ("SS", [b"bytes", "b"]),  # the binding raises
    ("SSq", ["a", "b"]),  # a value missing: the binding raises
    ("SS", ["a", "b", "c"]),  # a value too many: the binding drops it
    ("q", ["7"]),
    ("3s", ["abcdef"]),  # a size digit: not these codes
    ("Q", [7]),
    ("", []),
])
def test_odd_cases_are_the_bindings(fmt: str, values: list[Any]) -> None:
    assert outcome(secantus_packing.pack, fmt, *values) == outcome(ORIGINAL_PACK, fmt, *values)


@pytest.mark.parametrize(("fmt", "data"), [
    ("u", None), ("Su", None), ("S", b"no terminator"), ("q", b""), ("q", b"\xe8\x01"),
    ("uq", b"\x85ab"), ("S", b"\xff\xfe\0"), ("QQ", b"\x81\x82"), ("SS", "a\0b\0")])
def test_odd_bytes_are_the_bindings(fmt: str, data: Any) -> None:
    assert outcome(secantus_packing.unpack, fmt, data) == outcome(ORIGINAL_UNPACK, fmt, data)


def test_the_database_vaultd_starts_packs_with_it() -> None:
    """`vaultd.secantus_server.install` puts these where the binding's cursors find them."""
    check = ("import wiredtiger\n"
             "from vaultd import secantus_packing, secantus_server\n"
             "names = wiredtiger.Cursor.set_key.__globals__\n"
             "assert names['pack'] is not secantus_packing.pack\n"
             "secantus_server.install()\n"
             "assert names['pack'] is secantus_packing.pack\n"
             "assert names['unpack'] is secantus_packing.unpack\n"
             "print('installed')\n")
    ran = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                         timeout=60)
    assert ran.stdout.strip() == "installed", ran.stderr


def test_a_binding_that_looks_its_packing_up_elsewhere_is_left_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A later binding whose cursors do not find `pack` and `unpack` where this one's do: the
    database starts with the binding's own packing rather than failing to start."""
    elsewhere: dict[str, Any] = {"Cursor": object()}
    monkeypatch.setattr(secantus_packing, "_CURSOR_NAMES", elsewhere)
    assert secantus_packing.install() is False
    assert elsewhere == {"Cursor": elsewhere["Cursor"]}
