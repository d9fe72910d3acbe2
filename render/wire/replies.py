"""A task's outcome as channel messages: encoded in the worker, decoded (as data) in the server.

A result is one of a few plain value types; an error is a code from a fixed table plus a short
message. The server rebuilds a known exception class from the code; it never learns a type name
from the worker.
"""

from __future__ import annotations

from render.wire.channel import (
    INTEGER,
    MAX_RESULT_BYTES,
    VALIDATION,
    ChannelViolation,
    ErrorCode,
    Kind,
    Message,
    ValueTag,
    decode_text,
    encode_text,
    frame,
)
from render.wire.model import (
    CONTENT_TYPES,
    BrokerError,
    PageOutOfRange,
    Unreadable,
    ValidationResult,
)

Value = bytes | int | str | ValidationResult | None

_ERRORS: list[tuple[type[BaseException], ErrorCode]] = [
    (Unreadable, ErrorCode.UNREADABLE),
    (PageOutOfRange, ErrorCode.PAGE_OUT_OF_RANGE),
    (MemoryError, ErrorCode.MEMORY),
    (BrokerError, ErrorCode.BROKER),
    (FileNotFoundError, ErrorCode.FILE_NOT_FOUND),
    (TimeoutError, ErrorCode.TIMEOUT),
    (ValueError, ErrorCode.VALUE),
]
_REBUILT: dict[int, type[Exception]] = {
    ErrorCode.UNREADABLE: Unreadable,
    ErrorCode.PAGE_OUT_OF_RANGE: PageOutOfRange,
    ErrorCode.MEMORY: MemoryError,
    ErrorCode.FILE_NOT_FOUND: FileNotFoundError,
    ErrorCode.TIMEOUT: TimeoutError,
    ErrorCode.VALUE: ValueError,
    ErrorCode.RUNTIME: RuntimeError,
    ErrorCode.BROKER: RuntimeError,
}


# --- in the worker ------------------------------------------------------------------------------


def encode_result(value: object) -> bytes:  # noqa: PLR0911 - one return per value tag
    if value is None:
        return frame(Kind.RESULT, code=ValueTag.NONE)
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        if len(data) > MAX_RESULT_BYTES:
            return encode_error(RuntimeError(f"a result of {len(data)} bytes is too large"))
        return frame(Kind.RESULT, data, code=ValueTag.BYTES)
    if isinstance(value, int) and -(1 << 63) <= value < (1 << 63):
        return frame(Kind.RESULT, INTEGER.pack(value), code=ValueTag.INT)
    if isinstance(value, str):
        return frame(Kind.RESULT, encode_text(value), code=ValueTag.TEXT)
    if isinstance(value, ValidationResult) and value.content_type in CONTENT_TYPES:
        payload = VALIDATION.pack(CONTENT_TYPES.index(value.content_type), value.page_count)
        return frame(Kind.RESULT, payload, code=ValueTag.VALIDATION)
    return encode_error(RuntimeError(f"a result of type {type(value).__name__} cannot be sent"))


def encode_error(error: BaseException) -> bytes:
    code = next((c for kind, c in _ERRORS if isinstance(error, kind)), ErrorCode.RUNTIME)
    text = str(error) if code != ErrorCode.RUNTIME else f"{type(error).__name__}: {error}"
    return frame(Kind.ERROR, encode_text(text), code=code)


# --- in the server ------------------------------------------------------------------------------


def decode_result(message: Message) -> Value:
    """The value a RESULT message carries; ChannelViolation if it is not well formed."""
    tag, payload = message.code, message.payload
    if tag == ValueTag.NONE and not payload:
        return None
    if tag == ValueTag.BYTES:
        return payload
    if tag == ValueTag.INT and len(payload) == INTEGER.size:
        return int(INTEGER.unpack(payload)[0])
    if tag == ValueTag.TEXT:
        return decode_text(payload)
    if tag == ValueTag.VALIDATION and len(payload) == VALIDATION.size:
        index, pages = VALIDATION.unpack(payload)
        if index < len(CONTENT_TYPES):
            return ValidationResult(CONTENT_TYPES[index], pages)
    raise ChannelViolation(f"a malformed result (tag {tag}, {len(payload)} bytes)")


def decode_error(message: Message) -> Exception:
    """The exception an ERROR message stands for (a fixed class per code)."""
    cls = _REBUILT.get(message.code)
    if cls is None:
        raise ChannelViolation(f"unknown error code {message.code}")
    return cls(decode_text(message.payload))
