"""An Office XML part's bytes as UTF-8, whatever of the two encodings XML parsers must accept
it arrives in, so that the DTD and nesting checks (`render.office.formats`) read what LibreOffice
will read. A UTF-16 part (LE or BE, with a byte-order mark or detected by its first '<') is
decoded; any other encoding (UTF-32, EBCDIC, a declared ISO-8859-x, UTF-7, ...) is refused:
Office writes UTF-8 (ECMA-376 allows UTF-16 too; OpenDocument only UTF-8), and a check that
reads one encoding while the parser reads another is no check at all.
"""

from __future__ import annotations

import codecs
import encodings.utf_16_be
import encodings.utf_16_le
import re
from collections.abc import Iterable, Iterator

from render.wire.model import Unreadable

NOT_UTF = "the Office document has an XML part in an encoding other than UTF-8 or UTF-16"
_UTF32_MARKS = (b"\x00\x00\xfe\xff", b"\xff\xfe\x00\x00", b"\x00\x00\x00<", b"<\x00\x00\x00")
# The declaration comes first in the part (after a byte-order mark), or not at all.
_DECLARED = re.compile(rb"""\A(?:\xef\xbb\xbf)?<\?xml\s[^>]*?encoding\s*=\s*["']([^"']*)["']""")
_EIGHT_BIT = {b"utf-8", b"utf8", b"us-ascii", b"ascii"}
_SIXTEEN_BIT = {b"utf-16", b"utf-16le", b"utf-16be"}
_HEAD = 4  # bytes that tell the encoding apart


def as_utf8(pieces: Iterable[bytes]) -> Iterator[bytes]:
    """The part as UTF-8, piece by piece (memory bounded by one piece); Unreadable(NOT_UTF) for
    any encoding but UTF-8 and UTF-16, or bytes that are not the UTF-16 they claim to be."""
    stream = iter(pieces)
    head = b""
    for piece in stream:  # a part's first read is whole unless the part is tiny
        head += piece
        if len(head) >= _HEAD:
            break
    decoder = _decoder(head)
    if decoder is None:
        _check_declared(head, _EIGHT_BIT)
        if head:
            yield head
        yield from stream
        return
    yield from _decoded(decoder, head, stream)


def _decoder(head: bytes) -> codecs.IncrementalDecoder | None:
    """A UTF-16 decoder for a UTF-16 part, None for one read as UTF-8."""
    if head.startswith(_UTF32_MARKS):
        raise Unreadable(NOT_UTF)
    if head.startswith((b"\xfe\xff", b"\x00")):
        return encodings.utf_16_be.IncrementalDecoder("strict")
    if head.startswith(b"\xff\xfe") or head[1:2] == b"\x00":
        return encodings.utf_16_le.IncrementalDecoder("strict")
    return None


def _decoded(decoder: codecs.IncrementalDecoder, head: bytes,
             stream: Iterator[bytes]) -> Iterator[bytes]:
    try:
        first = decoder.decode(head).removeprefix("\ufeff").encode("utf-8")
        _check_declared(first, _SIXTEEN_BIT)
        yield first
        for piece in stream:
            yield decoder.decode(piece).encode("utf-8")
        yield decoder.decode(b"", final=True).encode("utf-8")
    except UnicodeError:  # a lone surrogate, an odd byte at the end
        raise Unreadable(NOT_UTF) from None


def _check_declared(head: bytes, allowed: set[bytes]) -> None:
    declared = _DECLARED.match(head)
    if declared is not None and declared.group(1).strip().lower() not in allowed:
        raise Unreadable(NOT_UTF)
