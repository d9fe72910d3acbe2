"""A taken port fails vaultd's start with the address named, and leaves no socket open behind
it: the tests' in-process vaultd tries another port in the same process, where a socket left to
the collector would warn inside whichever test ran next (`vaultd.startup.bind`)."""

from __future__ import annotations

import gc
import socket
import warnings

from vaultd.config import settings_from
from vaultd.startup import StartupError, bind


def refusal(port: int) -> str:
    """`bind`'s message for a taken port, with every reference to its failure dropped."""
    try:
        bind(settings_from(None, {"host": "127.0.0.1", "port": port}))
    except StartupError as refused:
        return str(refused)
    raise AssertionError(f"port {port} was bound although another socket listens on it")


def test_a_taken_port_is_named_and_leaves_no_socket_open() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # Garbage that earlier tests in this worker left (a database client's socket) is
        # finalised before recording starts, so only what `bind` leaves is counted.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            gc.collect()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            message = refusal(port)
            gc.collect()  # a socket still open in the failure's frames is finalised here
    assert message == (f"cannot listen on 127.0.0.1:{port}: Address already in use (set --port "
                       "or VAULTD_PORT, --host or VAULTD_HOST)")
    assert [str(warning.message) for warning in caught
            if issubclass(warning.category, ResourceWarning)] == []
