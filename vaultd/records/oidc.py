"""The records of sign-in with an identity provider (OpenID Connect)."""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict


class OidcPendingDoc(TypedDict):
    """Collection `oidc_pending`: a sign-in sent to the provider and not yet back.

    Only hashes: `_id` is the SHA-256 of the `state` sent to the provider, `browser` the SHA-256
    of the secret in the browser's cookie. The PKCE verifier and the nonce are derived from
    that secret and the state (services.members.oidc), so the database alone holds nothing that
    could finish a sign-in. The database drops a record at `expiresAt` (TTL)."""

    _id: str
    browser: str
    ip: str  # who started it: a cap on the sign-ins one address may leave pending
    createdAt: datetime
    expiresAt: datetime
