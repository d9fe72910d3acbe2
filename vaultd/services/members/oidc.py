"""Sign-in with the company's identity provider: the OpenID Connect authorization code flow
with PKCE (S256), `state` and `nonce`, as a confidential client.

`begin` sends the browser to the provider; `finish` takes the provider's answer back to the
verified email address the member is found by. Everything the provider says is checked
(`oidc_discovery`, `oidc_tokens`); docs/security.md, *Sign-in with an identity provider*."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote_plus, urlencode

import httpx

from vaultd.db import Db
from vaultd.errors import BadGateway, InvalidRequest
from vaultd.services.members import oidc_pending
from vaultd.services.members.oidc_config import OidcClient
from vaultd.services.members.oidc_discovery import ProviderDirectory, ProviderMetadata
from vaultd.services.members.oidc_http import fetch_json
from vaultd.services.members.oidc_pending import PendingSignIn
from vaultd.services.members.oidc_tokens import VerifiedIdentity, verify_id_token

# An error code from the provider is echoed only when it looks like one (RFC 6749 4.1.2.1):
# the query is the browser's, and anything could be put there.
_ERROR_CODE = re.compile(r"^[a-z_]{1,40}$")
_CODE = re.compile(r"^[\x21-\x7e]{1,2048}$")


class RelyingParty:
    """vaultd as the provider's client: one per process, made by the composition root."""

    def __init__(self, db: Db, client: OidcClient,
                 directory: ProviderDirectory | None = None) -> None:
        self.db = db
        self.client = client
        self.directory = directory or ProviderDirectory(client.issuer)

    async def begin(self, browser_secret: str, ip: str) -> str:
        """Record a new sign-in for this browser (at `ip`); the provider's URL to send it to."""
        metadata = await self.directory.metadata()
        sign_in = await oidc_pending.begin(self.db, browser_secret, ip)
        query = urlencode({
            "response_type": "code", "client_id": self.client.client_id,
            "redirect_uri": self.client.redirect_uri, "scope": self.client.scopes,
            "state": sign_in.state, "nonce": sign_in.nonce,
            "code_challenge": sign_in.code_challenge, "code_challenge_method": "S256",
        })
        separator = "&" if "?" in metadata.authorization_endpoint else "?"
        return f"{metadata.authorization_endpoint}{separator}{query}"

    async def finish(self, *, state: str, code: str, error: str,
                     browser_secret: str | None) -> VerifiedIdentity:
        """The provider's answer at the callback, verified down to the member's email."""
        # Taken first: whatever follows, this state has been used.
        sign_in = await oidc_pending.take(self.db, state, browser_secret)
        if error:  # the provider refused (the person cancelled, or is not allowed)
            shown = error if _ERROR_CODE.match(error) else "an invalid error code"
            raise InvalidRequest(f"the identity provider refused the sign-in ({shown})")
        if not _CODE.match(code):
            raise InvalidRequest("the identity provider's answer has no authorization code")
        metadata = await self.directory.metadata()
        id_token = await self._exchange(metadata, sign_in, code)
        return await verify_id_token(id_token, issuer=self.client.issuer,
                                     client_id=self.client.client_id, nonce=sign_in.nonce,
                                     key_for=self.directory.key)

    async def _exchange(self, metadata: ProviderMetadata, sign_in: PendingSignIn,
                        code: str) -> Any:
        form = {"grant_type": "authorization_code", "code": code,
                "redirect_uri": self.client.redirect_uri,
                "code_verifier": sign_in.code_verifier}
        auth: httpx.BasicAuth | None = None
        if metadata.token_auth_method == "client_secret_post":
            form |= {"client_id": self.client.client_id,
                     "client_secret": self.client.client_secret}
        else:  # RFC 6749 2.3.1: both parts form-encoded before Basic
            auth = httpx.BasicAuth(_form_quote(self.client.client_id),
                                   _form_quote(self.client.client_secret))
        request = httpx.Request("POST", metadata.token_endpoint, data=form,
                                headers={"Accept": "application/json"})
        if auth is not None:
            request = next(auth.auth_flow(request))
        status, body = await fetch_json("token", request)
        if status == 400 and body.get("error") == "invalid_grant":
            # Used, expired, or issued for another sign-in: the person starts again.
            raise InvalidRequest("the identity provider refused the authorization code "
                                 "(used, expired or not issued for this sign-in)")
        if status != 200:
            raise BadGateway(f"the identity provider's token endpoint answered HTTP {status}")
        return body.get("id_token")


def _form_quote(value: str) -> str:
    return quote_plus(value)
