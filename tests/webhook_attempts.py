"""Reading a webhook attempt the two ways it is reported: the tenant's delivery record (a
category) and vaultd's log line (the detail), plus the odd receivers the failure tests need."""

from __future__ import annotations

import datetime
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.vault_process import VaultProcess
from tests.waiting import wait_until


def first_delivery(client: httpx.Client, endpoint_id: str) -> dict[str, Any]:
    deliveries = wait_until(
        lambda: client.get(f"/webhooks/{endpoint_id}/deliveries").json()["deliveries"],
        timeout=20, interval=0.1, what="a delivery attempt recorded")
    return dict(deliveries[-1])


def failure_logged(vault: VaultProcess, delivery: dict[str, Any], endpoint_id: str) -> str:
    """The detail vaultd logged for the delivery's first attempt (the tenant never sees it)."""
    prefix = f"(message {delivery['messageId']}, endpoint {endpoint_id}, attempt 1): "
    line = wait_until(lambda: next((line for line in vault.log_text().splitlines()
                                    if prefix in line), None),
                      timeout=10, interval=0.1, what="the attempt's log line")
    assert "WARNING vaultd.webhooks: webhook delivery " in line
    return line.split(prefix, 1)[1]


@contextmanager
def raw_server(on_connection: Callable[[socket.socket], None],
               tls: ssl.SSLContext | None = None) -> Iterator[int]:
    """A TCP server on 127.0.0.1 (TLS with `tls`) that hands each connection to
    `on_connection`; yields its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = int(listener.getsockname()[1])
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # closed: the test is over
                return
            held.append(conn)
            with suppress(OSError):  # e.g. the client gave up on the handshake, as it should
                on_connection(tls.wrap_socket(conn, server_side=True) if tls else conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        # shutdown wakes the blocked accept (close alone would leave it listening for retries)
        with suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(timeout=5)
        assert not thread.is_alive(), "the test server did not stop"
        for conn in held:
            conn.close()


def self_signed_context(directory: Path) -> ssl.SSLContext:
    """A server context whose certificate (for 127.0.0.1) no public authority signed."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    return context
