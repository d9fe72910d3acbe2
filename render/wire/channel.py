"""The wire format between the server and a render worker: fixed headers, bounded payloads.

Every message is an 8-byte header, `!BBHI` = (kind, status, code, payload length), then the
payload. What a worker sends is untrusted and is only ever parsed as data here: the header's
fields are checked against a table of allowed kinds and per-kind length caps, and the payload is
decoded by fixed rules (raw JPEG bytes, a struct of integers, a short UTF-8 text). Nothing a
worker sends is unpickled, evaluated or imported. Any deviation raises ChannelViolation, on
which the pool kills that worker.

Server to worker, the messages are trusted (TASK carries a pickled call).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from enum import IntEnum

HEADER = struct.Struct("!BBHI")
READ_REQUEST = struct.Struct("!QI")  # offset, length
VALIDATION = struct.Struct("!BI")  # content type index, page count
INTEGER = struct.Struct("!q")

MAX_RESULT_BYTES = 32 << 20  # a JPEG page at the largest budget is a few MB
MAX_TEXT_BYTES = 512  # an error message or a short string result
MAX_READ_BYTES = 512 << 10  # one broker read; the worker caches in 64 KiB blocks


class ChannelViolation(Exception):
    """A worker sent something outside the protocol: it is killed and replaced."""


class Kind(IntEnum):
    # worker -> server
    READY = 1  # code: the sandbox layers active in this worker (a bit mask)
    RESULT = 2  # code: a ValueTag
    ERROR = 3  # code: an ErrorCode; payload: a short UTF-8 message
    READ = 4  # payload: READ_REQUEST, a plaintext range of the task's one document
    # server -> worker
    TASK = 10  # payload: a pickled (function, args)
    DATA = 11  # status 0: payload is the requested plaintext; otherwise the read failed


class ValueTag(IntEnum):
    NONE = 0
    BYTES = 1
    INT = 2
    TEXT = 3
    VALIDATION = 4


class ErrorCode(IntEnum):
    """A worker's task error, rebuilt on the server as a known exception class."""

    RUNTIME = 1
    UNREADABLE = 2
    PAGE_OUT_OF_RANGE = 3
    MEMORY = 4
    FILE_NOT_FOUND = 5
    TIMEOUT = 6
    VALUE = 7
    BROKER = 8  # a read the broker refused or failed: the server knows the real cause


# Per kind: the largest payload a worker may send.
_WORKER_LIMITS = {
    Kind.READY: 0,
    Kind.RESULT: MAX_RESULT_BYTES,
    Kind.ERROR: MAX_TEXT_BYTES,
    Kind.READ: READ_REQUEST.size,
}


@dataclass(frozen=True)
class Message:
    kind: int
    status: int
    code: int
    payload: bytes


def frame(kind: Kind, payload: bytes = b"", code: int = 0, status: int = 0) -> bytes:
    return HEADER.pack(kind, status, code, len(payload)) + payload


def parse_worker_frames(inbox: bytearray) -> list[Message]:
    """Complete messages at the front of `inbox`, removed from it. ChannelViolation as soon as a
    header is unknown or announces more than its kind may carry (before the payload arrives)."""
    messages = []
    at = 0  # parsed up to here; removed from the inbox once, at the end (one copy a payload)
    try:
        while len(inbox) - at >= HEADER.size:
            kind, status, code, length = HEADER.unpack_from(inbox, at)
            limit = _WORKER_LIMITS.get(kind)
            if limit is None:
                raise ChannelViolation(f"unknown message kind {kind}")
            if length > limit or status != 0:
                raise ChannelViolation(
                    f"message kind {kind} with length {length}, status {status}")
            if kind == Kind.READ and length != READ_REQUEST.size:
                raise ChannelViolation("a read request of the wrong size")
            end = at + HEADER.size + length
            if len(inbox) < end:
                break
            with memoryview(inbox) as view:
                payload = bytes(view[at + HEADER.size:end])
            messages.append(Message(kind, status, code, payload))
            at = end
    finally:
        del inbox[:at]
    return messages


def decode_text(payload: bytes) -> str:
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError:
        raise ChannelViolation("text that is not UTF-8") from None


def encode_text(text: str) -> bytes:
    """UTF-8, cut to MAX_TEXT_BYTES on a character boundary."""
    return text.encode("utf-8")[:MAX_TEXT_BYTES].decode("utf-8", "ignore").encode("utf-8")


# --- a worker's blocking end ----------------------------------------------------------------


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_exact(fd: int, size: int) -> bytes:
    """`size` bytes from `fd`; EOFError at end of input."""
    parts = []
    while size:
        part = os.read(fd, min(size, 1 << 20))
        if not part:
            raise EOFError("the channel closed")
        parts.append(part)
        size -= len(part)
    return b"".join(parts)


def read_message(fd: int) -> Message:
    """The next server message (trusted, so only its framing is checked)."""
    kind, status, code, length = HEADER.unpack(read_exact(fd, HEADER.size))
    return Message(kind, status, code, read_exact(fd, length))
