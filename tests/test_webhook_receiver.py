"""The tests' webhook receiver (`tests.webhook_receiver`) records what an account's server
would take: a request whose sender went away before its body ended (a vaultd killed while
delivering, `tests/test_crash_kill.py`) is not a delivery."""

from __future__ import annotations

import http.client
import json
import socket

from tests.webhook_receiver import running_receiver


def test_a_request_cut_short_is_not_recorded_and_a_whole_one_is() -> None:
    body = json.dumps({"type": "file.viewed", "data": {"page": 1}}).encode()
    with running_receiver() as receiver:
        with socket.create_connection(("127.0.0.1", receiver.port), timeout=10) as cut:
            cut.sendall(b"POST /hooks HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        b"Content-Type: application/json\r\n"
                        + f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:10])
            cut.shutdown(socket.SHUT_WR)  # the sender gone: the rest never comes
            assert cut.recv(1024) == b""  # closed without an answer
        whole = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=10)
        whole.request("POST", "/hooks", body, {"Content-Type": "application/json"})
        assert whole.getresponse().status == 200
        whole.close()
        seen = receiver.wait_for(lambda received: len(received) >= 1, timeout=10)
    assert [request.event for request in seen] == [json.loads(body)]
