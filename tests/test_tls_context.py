"""The tests' httpx clients share one default TLS context per process (`tests.tls_context`),
built as httpx builds its own, and a client that asks for other verification gets it."""

from __future__ import annotations

import ssl
import time
from pathlib import Path

import httpx
import pytest

from tests.tls_context import default_context


def context_of(client: httpx.Client) -> ssl.SSLContext:
    context: ssl.SSLContext = client._transport._pool._ssl_context  # type: ignore[attr-defined]
    return context


def test_default_clients_share_one_context_that_verifies_as_httpx_s_own() -> None:
    with httpx.Client() as first, httpx.Client(base_url="http://127.0.0.1:1", timeout=5) as second:
        assert context_of(first) is context_of(second) is default_context()
    shared, own = default_context(), httpx.create_ssl_context()
    assert shared.verify_mode == own.verify_mode == ssl.CERT_REQUIRED
    assert shared.check_hostname and own.check_hostname
    assert shared.cert_store_stats() == own.cert_store_stats()
    assert shared.cert_store_stats()["x509_ca"] > 100  # certifi's bundle, loaded


def test_a_client_asking_for_other_verification_gets_it() -> None:
    mine = ssl.create_default_context()
    with httpx.Client(verify=mine) as given, httpx.Client(verify=False) as unverified, \
            httpx.Client(trust_env=False) as untrusting:
        assert context_of(given) is mine
        assert context_of(unverified).verify_mode == ssl.CERT_NONE
        assert context_of(untrusting) is not default_context()


def test_a_client_with_a_certificate_loads_it_into_a_context_of_its_own(
        tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError), pytest.warns(DeprecationWarning, match="cert="):
        httpx.Client(cert=str(tmp_path / "absent.pem"))  # loaded, not ignored
    assert default_context().cert_store_stats() == httpx.create_ssl_context().cert_store_stats()


def test_a_shared_client_costs_a_fraction_of_a_context_built_anew() -> None:
    def cpu_per(make: object, count: int = 5) -> float:
        assert callable(make)
        started = time.process_time()
        for _ in range(count):
            make()
        return (time.process_time() - started) / count

    default_context()  # built before the timing
    shared = cpu_per(lambda: httpx.Client().close())
    fresh = cpu_per(httpx.create_ssl_context)
    assert shared < fresh / 3, (shared, fresh)
