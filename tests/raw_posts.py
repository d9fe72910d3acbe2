"""A POST sent in two parts over a raw socket: the headers and the first bytes of the body now,
the rest later, so a test can hold a request in progress (admission caps, slow clients); and the
whole answer read back from the socket."""

from __future__ import annotations

import json
import socket
from typing import Any


def start_post(port: int, path: str, key: str, content_type: str, data: bytes,
               sent: int, headers: dict[str, str] | None = None) -> socket.socket:
    """A raw POST that declares len(data) and sends only `sent` bytes of it for now."""
    extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
    head = (f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
            f"Content-Type: {content_type}\r\nContent-Length: {len(data)}\r\n{extra}"
            "\r\n").encode()
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(head + data[:sent])
    return sock


def finish_post(sock: socket.socket, data: bytes, sent: int) -> tuple[int, dict[str, Any]]:
    """Send the rest of the body; the status and the JSON body of the answer."""
    with sock:
        sock.sendall(data[sent:])
        head, body = read_response(sock)
    return int(head.split()[1]), body


def read_response(sock: socket.socket) -> tuple[bytes, dict[str, Any]]:
    """One whole response (head, JSON body); fails if the server closes before its end."""
    raw = b""
    while b"\r\n\r\n" not in raw or len(raw.split(b"\r\n\r\n", 1)[1]) < _length(raw):
        chunk = sock.recv(65536)
        assert chunk, f"connection closed after {raw!r}"
        raw += chunk
    head, body = raw.split(b"\r\n\r\n", 1)
    return head, json.loads(body)


def _length(raw: bytes) -> int:
    for line in raw.split(b"\r\n\r\n", 1)[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0
