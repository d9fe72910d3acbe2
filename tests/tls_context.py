"""One TLS context per test process for the synchronous httpx clients the tests make.

`httpx.Client()` builds an `ssl.SSLContext` at every construction, loading certifi's bundle of
about 150 certificates: 20 to 40 ms of CPU, paid for every `api`, `anon` and `vault.client()`
and every `httpx.get`, several times a test, though the tests speak plain HTTP to loopback. It
was an eighth of `test_api_views.py`'s CPU (docs/testing.md, "Where the time goes").
`share_default_context()`, called once by `tests/conftest.py`, makes a client that asks for
httpx's default verification (`verify=True` with the environment trusted, as every test client
does) take one context built the same way, once per process. A client given a context,
`verify=False`, `trust_env=False` or a `cert` gets exactly what it asked for. The in-process
vaultd's own clients (`httpx.AsyncClient`, for OpenID Connect) are not touched: they build
theirs as in production.
"""

from __future__ import annotations

import os
import ssl
from typing import Any

import httpx

_DEFAULTS: dict[tuple[str | None, str | None], ssl.SSLContext] = {}
_ORIGINAL_INIT = httpx.Client.__init__


def default_context() -> ssl.SSLContext:
    """httpx's default context for the current `SSL_CERT_FILE` and `SSL_CERT_DIR`, built once
    for each pair of them (httpx reads both at every construction)."""
    names = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    if names not in _DEFAULTS:
        _DEFAULTS[names] = httpx.create_ssl_context(verify=True, trust_env=True)
    return _DEFAULTS[names]


def _client_init(self: httpx.Client, *, verify: Any = True, trust_env: bool = True,
                 **kwargs: Any) -> None:
    if verify is True and trust_env and kwargs.get("cert") is None:  # `cert` would be loaded
        verify = default_context()                                     # into the shared one
    _ORIGINAL_INIT(self, verify=verify, trust_env=trust_env, **kwargs)


def share_default_context() -> None:
    """Every later `httpx.Client` with the default verification takes `default_context()`."""
    httpx.Client.__init__ = _client_init  # type: ignore[method-assign]
