"""The embedded database is up only when its own process answers a command on its port
(vaultd.embedded_db.answering): a connection alone completes before SecantusDB's accept thread
runs, and a port from `free_port` may be taken by another process before the server binds it.
Real servers; the one stand-in is `free_port` handing out a port already taken, which forces the
race two processes starting side by side run into by chance."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from vaultd import embedded_db

pytestmark = pytest.mark.slow  # starts its own database servers (see docs/testing.md)


def test_a_port_answered_by_another_process_is_not_this_servers(tmp_path: Path) -> None:
    first = embedded_db.start(tmp_path / "a" / "db", record_address=False)
    second = embedded_db.start(tmp_path / "b" / "db", record_address=False)
    try:
        assert embedded_db.answering(first) and embedded_db.answering(second)
        impostor = embedded_db.EmbeddedServer(second.process, first.host, first.port,
                                              second.storage)
        assert embedded_db.serves(first.host, first.port)  # the port itself answers...
        assert not embedded_db.answering(impostor)  # ...but not from the second's process
    finally:
        first.stop()
        second.stop()


def test_a_listener_that_accepts_but_never_replies_is_not_serving() -> None:
    # What SecantusDB is between its listen() and the start of its accept thread.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert embedded_db.serves("127.0.0.1", port, timeout=0.3) is False


def test_a_start_whose_port_was_taken_moves_to_another(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        taken_port = taken.getsockname()[1]
        ports = iter([taken_port])
        real_free_port = embedded_db.free_port
        monkeypatch.setattr(embedded_db, "free_port",
                            lambda host="127.0.0.1": next(ports, None) or real_free_port(host))
        server = embedded_db.start(tmp_path / "db", record_address=False)
        try:
            assert server.port != taken_port
            assert embedded_db.answering(server)
        finally:
            server.stop()
    assert server.process.returncode == 0


def test_a_start_that_never_finds_a_free_port_says_so(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        monkeypatch.setattr(embedded_db, "free_port",
                            lambda host="127.0.0.1": taken.getsockname()[1])
        with pytest.raises(embedded_db.EmbeddedDbError,
                           match="found no free port in 3 tries"):
            embedded_db.start(tmp_path / "db", record_address=False)
