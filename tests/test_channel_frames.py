"""The server's parser of what a worker writes (render.wire.channel): whole messages out, a partial
one kept for the next read, and a lying header refused before its payload is waited for."""

from __future__ import annotations

import pytest

from render.wire.channel import (
    HEADER,
    MAX_RESULT_BYTES,
    ChannelViolation,
    Kind,
    frame,
    parse_worker_frames,
)


def test_several_messages_and_a_partial_one_in_one_read() -> None:
    result = frame(Kind.RESULT, b"J" * 300_000, code=1)
    inbox = bytearray(frame(Kind.READY, code=3) + result + frame(Kind.ERROR, b"boom")[:7])
    messages = parse_worker_frames(inbox)
    assert [(m.kind, m.code, len(m.payload)) for m in messages] == [
        (Kind.READY, 3, 0), (Kind.RESULT, 1, 300_000)]
    assert messages[1].payload == b"J" * 300_000
    assert bytes(inbox) == frame(Kind.ERROR, b"boom")[:7]  # kept for the next read
    inbox += frame(Kind.ERROR, b"boom")[7:]
    [error] = parse_worker_frames(inbox)
    assert (error.kind, error.payload, bytes(inbox)) == (Kind.ERROR, b"boom", b"")


@pytest.mark.parametrize(("header", "message"), [
    (HEADER.pack(99, 0, 0, 0), "unknown message kind 99"),
    (HEADER.pack(Kind.RESULT, 0, 0, MAX_RESULT_BYTES + 1), "message kind 2 with length"),
    (HEADER.pack(Kind.TASK, 0, 0, 10), "unknown message kind 10"),  # the server's own kind
])
def test_a_lying_header_is_refused_before_its_payload(header: bytes, message: str) -> None:
    with pytest.raises(ChannelViolation, match=message):
        parse_worker_frames(bytearray(frame(Kind.READY) + header))
