"""Threat model, "an OIDC provider misconfigured": vaultd's view of a real provider
(oidc-provider) when the two disagree. A discovery document naming another issuer than the
setting, a provider that went away, a key set asked again and again for key ids it does not
hold: each is refused or bounded, never trusted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.oidc_provider import Client, OidcProvider, require_provider
from tests.vault_process import free_port
from vaultd.errors import BadGateway
from vaultd.services.members.oidc_discovery import KEYS_REFETCH_SECONDS, ProviderDirectory

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OidcProvider]:
    require_provider()
    work: Path = tmp_path_factory.mktemp("oidc-misconfigured")
    port = free_port()
    client = Client("vaultd-console", "not-used-here", "http://127.0.0.1:9/callback")
    started = OidcProvider(f"http://127.0.0.1:{port}", [client], work, port=port).start()
    yield started
    started.stop()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_the_provider_s_own_document_is_read(provider: OidcProvider) -> None:
    metadata = await ProviderDirectory(provider.issuer).metadata()
    assert metadata.token_endpoint == f"{provider.issuer}/token"
    assert metadata.token_auth_method == "client_secret_basic"


@pytest.mark.parametrize(("configured", "message"), [
    ("http://localhost:{port}",
     "the identity provider's discovery document names another issuer than auth.oidc.issuer"),
    ("http://127.0.0.1:{port}/realms/staff", "the identity provider's discovery answered HTTP 404"),
])
async def test_an_issuer_setting_the_document_does_not_name_is_refused(
        provider: OidcProvider, configured: str, message: str) -> None:
    # The same provider reached under another name: its tokens' `iss` would never match, and a
    # document answering for another issuer is how a mix-up starts.
    directory = ProviderDirectory(configured.format(port=provider.port))
    with pytest.raises(BadGateway) as refused:
        await directory.metadata()
    assert refused.value.message == message


async def test_an_unknown_key_id_refetches_the_key_set_at_most_once_a_minute(
        tmp_path: Path) -> None:
    require_provider()
    port = free_port()
    client = Client("vaultd-console", "not-used-here", "http://127.0.0.1:9/callback")
    provider = OidcProvider(f"http://127.0.0.1:{port}", [client], tmp_path, port=port).start()
    clock = Clock()
    directory = ProviderDirectory(provider.issuer, clock=clock)
    try:
        assert await directory.key(provider.kid) is not None
        clock.now += KEYS_REFETCH_SECONDS
        assert await directory.key("made-up") is None  # asked the provider again: not there
    finally:
        provider.stop()
    # The provider is gone: a key id asked for within the minute costs no call at all (a call
    # would fail), and the keys already held still answer.
    clock.now += 1
    assert await directory.key("made-up-too") is None
    assert await directory.key(provider.kid) is not None
    clock.now += KEYS_REFETCH_SECONDS
    with pytest.raises(BadGateway) as refused:
        await directory.key("made-up-again")
    assert refused.value.message == "the identity provider cannot be reached (key set)"
