"""WiredTiger's key and value packing, as SecantusDB's tables use it, without parsing the
format on every call.

The WiredTiger Python binding packs every cursor key (`set_key`) and unpacks every value
(`get_value`) in pure Python, parsing the format string character by character through two
generators each time. SecantusDB's tables use only formats made of `S` (a NUL-terminated
string), `q` (a variable-length integer) and `u` (raw bytes, length-prefixed unless last):
`SSq` for a document's key, `u` for its value, `SSSu` for an index entry... Profiled in the
server's process, a `find` that returns 201 access-log entries spent about 45 % of its time in
`packing.pack` and `packing.unpack` (one key packed and one value unpacked per document
fetched, one key unpacked per index entry walked).

Here a format of those three codes alone is packed and unpacked by a loop over its characters
with offsets into the bytes, and every other format, value or input this code does not model
exactly (a size digit, a prefix, a `str` where bytes are packed, a value the format leaves no
room for, bytes that are cut short) goes to the binding's own functions: the bytes and values
are the binding's, to the byte (`tests/test_secantus_packing.py` compares the two on random
keys, the integer encoding's every boundary, and the binding's odd cases).

Measured and not taken: the binding's `fpacking` (struct-based) encodes fixed-size integers, a
different format on disk; a compiled extension would add a build step to the install.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import wiredtiger
import wiredtiger.packing
from wiredtiger import intpacking

# Where the binding's cursors look their packing functions up (its `swig_wiredtiger` module,
# imported by the package under its own name: `wiredtiger.packing` would be a second copy).
# A binding that looks them up elsewhere is left as it is (`install`), never broken: the
# package's own copy (`wiredtiger.packing`) is then the oracle only so that this module imports.
_CURSOR_NAMES: dict[str, Any] = wiredtiger.Cursor.set_key.__globals__
_ORIGINAL_PACK: Callable[..., Any] = _CURSOR_NAMES.get("pack") or wiredtiger.packing.pack
_ORIGINAL_UNPACK: Callable[[str, Any], Any] = (_CURSOR_NAMES.get("unpack")
                                               or wiredtiger.packing.unpack)
_CODES = frozenset("Squ")
_PLAIN: dict[str, bool] = {}  # a format -> whether it is made of _CODES alone
_S_PACKED: dict[str, bytes] = {}  # short `S` values packed (`_packed_string`)
_S_KEPT, _S_KEPT_LENGTH = 1024, 128
_pack_int = intpacking.pack_int
_NEG_2BYTE_MIN = intpacking.NEG_2BYTE_MIN
_AFTER_2BYTE: int = intpacking.POS_2BYTE_MAX + 1
_POS_MULTI_MARKER: int = intpacking.POS_MULTI_MARKER


class _NotModelled(Exception):
    """Input this module does not decode as the binding does: the binding decodes it."""


def _plain(fmt: Any) -> bool:
    if type(fmt) is not str:
        return False
    known = _PLAIN.get(fmt)
    if known is None:
        known = bool(fmt) and set(fmt) <= _CODES
        if len(_PLAIN) < 256:  # a handful of formats in practice
            _PLAIN[fmt] = known
    return known


def pack(fmt: str, *values: Any) -> Any:
    """`packing.pack(fmt, *values)`."""
    if not _plain(fmt) or len(values) != len(fmt):
        return _ORIGINAL_PACK(fmt, *values)
    parts: list[bytes] = []
    last = len(fmt) - 1
    for place, code in enumerate(fmt):
        value = values[place]
        if code == "q":
            parts.append(pack_int(value))
        elif code == "S":
            if type(value) is not str:
                return _ORIGINAL_PACK(fmt, *values)
            parts.append(_S_PACKED.get(value) or _packed_string(value))
        else:
            if type(value) is not bytes:
                return _ORIGINAL_PACK(fmt, *values)
            if place != last:
                parts.append(pack_int(len(value)))
            parts.append(value)
    return b"".join(parts)


def pack_int(value: int) -> bytes:
    """`intpacking.pack_int(value)`, the same bytes. An integer above the one- and two-byte
    forms (a RecordId past the store's first 8,256 documents) is a marker byte holding the
    length, then the big-endian bytes of `value` less 8,256 without leading zeros: made here
    by one `to_bytes` where the binding packs eight bytes and strips them one by one (0.03 ms
    against 0.14 for the 201 keys a page of the log fetches). Any other value, and any that
    is not exactly an `int`, is the binding's to pack (or to refuse, with its error)."""
    over = value - _AFTER_2BYTE if type(value) is int else 0
    if over <= 0 or over >> 64:
        return _pack_int(value)  # type: ignore[no-any-return]
    length = (over.bit_length() + 7) >> 3
    return (over | (_POS_MULTI_MARKER | length) << (length << 3)).to_bytes(length + 1, "big")


def _packed_string(value: str) -> bytes:
    """An `S` value's bytes: up to its first NUL, then one. The names SecantusDB keys its rows
    by (a database, a collection, an index) are few: kept once packed."""
    end = value.find("\0")
    packed = (value if end < 0 else value[:end]).encode() + b"\0"
    if len(_S_PACKED) < _S_KEPT and len(value) <= _S_KEPT_LENGTH:
        _S_PACKED[value] = packed
    return packed


def unpack(fmt: str, data: Any) -> Any:
    """`packing.unpack(fmt, data)`."""
    if type(data) is not bytes or not _plain(fmt):
        return _ORIGINAL_UNPACK(fmt, data)
    if fmt == "u":  # a document's value, an index entry's: the bytes themselves
        return [data]
    try:
        if fmt == "SSSu":  # an index entry's key, one a document an index scan walks
            return _index_key(data)
        return _unpacked(fmt, data)
    except (_NotModelled, IndexError, UnicodeDecodeError):
        return _ORIGINAL_UNPACK(fmt, data)  # which decodes it, or raises, as it always did


def _unpacked(fmt: str, data: bytes) -> list[Any]:
    out: list[Any] = []
    place, last = 0, len(fmt) - 1
    for index, code in enumerate(fmt):
        if code == "S":
            end = data.find(b"\0", place)
            if end < 0:
                raise _NotModelled
            out.append(data[place:end].decode())
            place = end + 1
        elif code == "q":
            value, place = _int_at(data, place)
            out.append(value)
        elif index == last:
            out.append(data[place:])
            place = len(data)
        else:
            size, place = _int_at(data, place)
            if size < 0 or place + size > len(data):
                raise _NotModelled
            out.append(data[place:place + size])
            place += size
    return out


def _index_key(data: bytes) -> list[Any]:
    """`_unpacked("SSSu", data)`, its three strings found at once."""
    first = data.find(b"\0")
    second = data.find(b"\0", first + 1)
    third = data.find(b"\0", second + 1) if second >= 0 else -1
    if first < 0 or third < 0:
        raise _NotModelled
    return [data[:first].decode(), data[first + 1:second].decode(),
            data[second + 1:third].decode(), data[third + 1:]]


def _int_at(data: bytes, place: int) -> tuple[int, int]:
    """`intpacking.unpack_int` of the bytes from `place`: the value and where it ends."""
    marker = data[place]
    if marker < 0x20:  # negative, 8 - (marker & 0xf) bytes follow
        size = 8 - (marker & 0xF)
        end = place + 1 + size
        if end > len(data):
            raise _NotModelled
        return (-1 << (size << 3)) | int.from_bytes(data[place + 1:end], "big"), end
    if marker < 0x40:
        return _NEG_2BYTE_MIN + (((marker & 0x1F) << 8) | data[place + 1]), place + 2
    if marker < 0x80:
        return -64 + (marker & 0x3F), place + 1
    if marker < 0xC0:
        return marker & 0x3F, place + 1
    if marker < 0xE0:
        return 64 + (((marker & 0x1F) << 8) | data[place + 1]), place + 2
    size = marker & 0xF
    end = place + 1 + size
    if end > len(data):
        raise _NotModelled
    return _AFTER_2BYTE + int.from_bytes(data[place + 1:end], "big"), end


def install() -> bool:
    """The binding's cursors pack and unpack with these; False (nothing changed) where the
    binding does not look its packing functions up where this one does."""
    if not {"pack", "unpack"} <= _CURSOR_NAMES.keys():
        return False
    _CURSOR_NAMES["pack"] = pack
    _CURSOR_NAMES["unpack"] = unpack
    return True


def original() -> tuple[Callable[..., Any], Callable[[str, Any], Any]]:
    """The binding's own (pack, unpack), which these reproduce."""
    return _ORIGINAL_PACK, _ORIGINAL_UNPACK
