"""What the provider publishes: its discovery document and its signing keys, each fetched once
and kept, so a sign-in costs the provider one call (the token exchange)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from vaultd.errors import BadGateway
from vaultd.services.members.oidc_config import plain_http_allowed
from vaultd.services.members.oidc_http import get_json

DISCOVERY_TTL_SECONDS = 3600.0
KEYS_TTL_SECONDS = 3600.0
# An ID token naming a key vaultd has not seen sends it back for the key set (the provider may
# have rotated), at most this often: forged tokens with made-up key ids cannot make vaultd
# hammer the provider.
KEYS_REFETCH_SECONDS = 60.0
AUTH_METHODS = ("client_secret_basic", "client_secret_post")


@dataclass(frozen=True)
class ProviderMetadata:
    """The parts of the discovery document the code flow uses."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    token_auth_method: str  # client_secret_basic or client_secret_post


def parse_metadata(issuer: str, document: dict[str, Any]) -> ProviderMetadata:
    # The issuer must match exactly: a document naming another issuer may be a mix-up (or a
    # provider served from the wrong place), and tokens would then be checked against it.
    if document.get("issuer") != issuer:
        raise BadGateway("the identity provider's discovery document names another issuer "
                         "than auth.oidc.issuer")
    endpoints = {}
    for name in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
        value = document.get(name)
        if not isinstance(value, str) or not plain_http_allowed(value):
            raise BadGateway(f"the identity provider's discovery document has no usable {name}")
        endpoints[name] = value
    supported = document.get("token_endpoint_auth_methods_supported", ["client_secret_basic"])
    method = next((m for m in AUTH_METHODS if isinstance(supported, list) and m in supported),
                  None)
    if method is None:
        raise BadGateway("the identity provider supports neither client_secret_basic nor "
                         "client_secret_post at its token endpoint")
    return ProviderMetadata(issuer, endpoints["authorization_endpoint"],
                            endpoints["token_endpoint"], endpoints["jwks_uri"], method)


class ProviderDirectory:
    """The discovery document and key set of one issuer, kept for an hour."""

    def __init__(self, issuer: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.issuer = issuer
        self._clock = clock
        self._metadata: ProviderMetadata | None = None
        self._metadata_at = 0.0
        self._keys: KeySet | None = None
        self._keys_at = 0.0

    async def metadata(self) -> ProviderMetadata:
        now = self._clock()
        if self._metadata is None or now - self._metadata_at > DISCOVERY_TTL_SECONDS:
            document = await get_json(
                "discovery", f"{self.issuer}/.well-known/openid-configuration")
            self._metadata, self._metadata_at = parse_metadata(self.issuer, document), now
        return self._metadata

    async def key(self, kid: str | None) -> Any:
        """The provider's signing key named `kid` (or its only key, when the token names none);
        None when the provider does not publish it."""
        keys = await self._key_set(refresh=False)
        found = _pick(keys, kid)
        if found is None and self._clock() - self._keys_at >= KEYS_REFETCH_SECONDS:
            found = _pick(await self._key_set(refresh=True), kid)
        return found

    async def _key_set(self, *, refresh: bool) -> KeySet:
        now = self._clock()
        if refresh or self._keys is None or now - self._keys_at > KEYS_TTL_SECONDS:
            metadata = await self.metadata()
            document = await get_json("key set", metadata.jwks_uri)
            try:
                keys = KeySet.import_key_set(document)  # type: ignore[arg-type]
            except (JoseError, ValueError, TypeError, KeyError):
                raise BadGateway("the identity provider's key set is not a valid JWKS") from None
            self._keys, self._keys_at = keys, now
        return self._keys


def _pick(keys: KeySet, kid: str | None) -> Any:
    signing = [key for key in keys.keys if key.get("use", "sig") == "sig"]
    if kid is None:
        return signing[0] if len(signing) == 1 else None
    return next((key for key in signing if key.kid == kid), None)
